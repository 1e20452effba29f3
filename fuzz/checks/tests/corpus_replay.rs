//! Replays the committed corpus of every fuzz target through the targets' own checks
//! on stable Rust, then hand-built `session` cases that reach what the corpus does
//! not. `fuzz/README.md` says how to replay one failing file with a trace.

use lock_fuzz_checks::{names, replay, session, simulation};

#[test]
fn names_corpus_replays_clean() {
    replay::replay("names", 10, names::check_case);
}

#[test]
fn simulation_corpus_replays_clean() {
    replay::replay("simulation", 10, simulation::check_case);
}

#[test]
fn session_corpus_replays_clean() {
    replay::replay("session", 10, session::check_case);
}

/// An exclusive lock on the known directory `dir` for `owner`, deadlock detection
/// on (`Some(true)`) or not.
fn owner_write(dir: u8, owner: u8, detect: Option<bool>) -> session::Step {
    session::Step::Acquire(session::AcquireStep {
        dir: session::DirPick::Known(dir),
        recipe: session::RecipePick::Write,
        scheme: session::SchemePick::Native,
        deadline_ms: None,
        try_only: false,
        data: session::DataPick::Empty,
        revocable: false,
        detect_crashes: false,
        max_hold_ms: None,
        owner: Some(owner),
        detect,
    })
}

/// What the committed corpus never reaches: a holder's own events. A revocable,
/// crash-detecting writer opens a section, writes fenced, closes the section, is
/// cut off and resumed, and is asked to let go; the harness checks each event
/// against the lock's state and the tree (marker, applied write, revocation data).
#[test]
fn session_checks_pass_on_a_holders_sections_fenced_write_resume_and_revocation() {
    use session::*;
    let Step::Acquire(mut acquire) = owner_write(0, 0, None) else {
        unreachable!()
    };
    (acquire.revocable, acquire.detect_crashes) = (true, true);
    let lock = LockPick::Known(0);
    let case = plain_case(
        3,
        vec![
            Step::Acquire(acquire),
            Step::Settle,
            Step::OpenSection(lock),
            Step::Settle,
            Step::FencedWrite {
                lock,
                ops: vec![FencedOpPick::Create(1)],
            },
            Step::Settle,
            Step::CloseSection(lock),
            Step::Settle,
            Step::Disconnect {
                applied: 0,
                report_errors: false,
                since_contact_ms: 0,
            },
            Step::Reconnect { new_session: false },
            Step::Settle,
            Step::Revoke {
                pick: 0,
                curator: true,
            },
            Step::Settle,
        ],
    );
    let outcome = check_case(&case);
    // SectionOpened, FencedWrite, SectionClosed, Resumed, RevocationRequested.
    assert_eq!(outcome.holder_events, 5, "{outcome:?}");
}

/// A case on a connected session of 10 s with nothing else special: `steps` only.
fn plain_case(seed: u64, steps: Vec<session::Step>) -> session::SessionCase {
    session::SessionCase {
        seed,
        session_timeout_s: 10,
        grace_ms: None,
        retry_ms: 100,
        max_parent_retries: 3,
        seq_start: session::SeqStart::Zero,
        stat_on_create: true,
        start_connected: true,
        reverse_listings: false,
        end_with_expiry: false,
        steps,
    }
}

/// Owners `job-a` and `job-b` each hold one lock and wait for the other's (a
/// deadlock through our own owners), then an inspection of one of the locks.
#[test]
fn session_checks_pass_on_an_own_owner_cycle_with_inspection() {
    use session::*;
    let case = plain_case(
        7,
        vec![
            owner_write(0, 0, Some(true)),
            owner_write(3, 1, Some(true)),
            Step::Settle,
            owner_write(3, 0, Some(true)),
            owner_write(0, 1, Some(true)),
            Step::Settle,
            Step::Advance(50),
            Step::Settle,
            Step::Advance(50),
            Step::Settle,
            Step::Inspect(DirPick::Known(0)),
            Step::Settle,
        ],
    );
    let outcome = check_case(&case);
    // One of the two waiters is the victim; the other keeps waiting until the
    // victim's owner lets go.
    assert_eq!(outcome.deadlock_failures, 1, "{outcome:?}");
    assert_eq!(outcome.inspections, 1, "{outcome:?}");
}

/// A scan finds the deadlock of two owners whose waits never time out; scanning
/// the root `/a` covers the lock `/a/b` too.
#[test]
fn session_scan_of_a_root_finds_the_cycle_between_its_locks() {
    use session::*;
    let case = plain_case(
        9,
        vec![
            owner_write(0, 0, None),
            owner_write(1, 1, None),
            Step::Settle,
            owner_write(1, 0, None),
            owner_write(0, 1, None),
            Step::Settle,
            Step::Scan(DirPick::Known(0)),
            Step::Settle,
        ],
    );
    let outcome = check_case(&case);
    assert_eq!((outcome.scans, outcome.scan_cycles), (1, 1), "{outcome:?}");
    assert_eq!(outcome.deadlock_failures, 0, "{outcome:?}");
}

/// A cycle through a peer's published wait: our owner `job-a` holds `/a` and waits
/// at `/x` behind a peer node of `job-b`, whose header says `job-b` waits at its
/// node in `/a`, queued behind ours. Our waiter, the youngest, is the victim.
#[test]
fn session_a_cycle_through_a_peers_published_wait_fails_our_waiter() {
    use session::*;
    let peer = |dir: u8, attempt: u8| Step::PeerJoin {
        dir,
        scheme: SchemePick::Native,
        kind: lock_core::NodeKind::Write,
        attempt,
    };
    let case = plain_case(
        11,
        vec![
            owner_write(0, 0, Some(true)),
            Step::Settle,
            peer(3, 1),
            peer(0, 2),
            // Peer nodes in path order: /a's (index 0), then /x's (index 1); the
            // world's participants: ours in /a, the peer's in /a, the peer's in /x.
            Step::PeerOwner {
                pick: 1,
                owner: 1,
                waits: vec![1],
            },
            Step::PeerOwner {
                pick: 0,
                owner: 1,
                waits: vec![],
            },
            owner_write(3, 0, Some(true)),
            Step::Settle,
            Step::Advance(50),
            Step::Settle,
        ],
    );
    let outcome = check_case(&case);
    assert_eq!(outcome.deadlock_failures, 1, "{outcome:?}");
}
