//! The checker's own tests: each property caught on a hand-made history.

use super::*;
use lock_core::{CreateMode, FailReason, FencingToken, Grant, LostReason};

struct Fixture {
    model: ZkModel,
    checker: Checker,
    sessions: Vec<i64>,
}

impl Fixture {
    fn new(clients: usize) -> Self {
        let mut model = ZkModel::new();
        model.create(0, "/l", b"", CreateMode::Persistent).unwrap();
        let sessions = (0..clients).map(|_| model.create_session()).collect();
        Fixture {
            model,
            checker: Checker::default(),
            sessions,
        }
    }

    fn start(&mut self, c: usize, recipe: Recipe) -> Key {
        let key = (ClientId(c), LockId(c as u64 + 1));
        self.checker
            .on_start(key, "/l", Some(recipe), Options::default())
            .unwrap();
        key
    }

    /// Creates `key`'s node: the grant that names it.
    fn create(&mut self, key: Key) -> Grant {
        let s = self.sessions[key.0 .0];
        let (path, stat) = self
            .model
            .create(
                s,
                "/l/zkl-0123456789abcdef0123456789abcdef-write-",
                b"",
                CreateMode::EphemeralSequential,
            )
            .unwrap();
        Grant {
            sequence: parse_name(path.rsplit('/').next().unwrap()).unwrap().seq,
            path: path.into(),
            token: FencingToken(stat.czxid),
            session_id: s,
            previous_holder_crashed: false,
        }
    }

    /// Creates the node and reports `Acquired` for it.
    fn acquire(&mut self, key: Key) -> Result<(), Failure> {
        let grant = self.create(key);
        self.event(key, LockEvent::Acquired(grant))
    }

    fn event(&mut self, key: Key, e: LockEvent) -> Result<(), Failure> {
        let s = Some(self.sessions[key.0 .0]);
        self.checker.on_event(key, &e, s, &self.model)
    }
}

fn kind(r: Result<(), Failure>) -> ViolationKind {
    r.unwrap_err().0
}

#[test]
fn suspended_holders_must_be_lost_and_released_ones_are_not_trusted() {
    let mut f = Fixture::new(2);
    let (a, b) = (f.start(0, Recipe::Write), f.start(1, Recipe::Write));
    f.acquire(a).unwrap();
    f.event(a, LockEvent::Suspended).unwrap();
    // Suspended is not enough: a must hear `Lost` before another session holds.
    assert_eq!(kind(f.acquire(b)), ViolationKind::LostTooLate);
    let mut f1 = Fixture::new(2);
    let (a, b) = (f1.start(0, Recipe::Write), f1.start(1, Recipe::Write));
    f1.acquire(a).unwrap();
    f1.event(a, LockEvent::Suspended).unwrap();
    f1.event(a, LockEvent::Lost(LostReason::SuspendedTooLong))
        .unwrap();
    f1.acquire(b).unwrap();
    let mut f2 = Fixture::new(2);
    let (a, b) = (f2.start(0, Recipe::Write), f2.start(1, Recipe::Write));
    f2.acquire(a).unwrap();
    f2.checker.on_release_call(a);
    f2.acquire(b).unwrap();
    f2.event(a, LockEvent::Released).unwrap();
}

#[test]
fn each_recipes_exclusion_is_checked() {
    let mut f = Fixture::new(2);
    let (a, b) = (f.start(0, Recipe::Write), f.start(1, Recipe::Leader));
    f.acquire(a).unwrap();
    assert_eq!(kind(f.acquire(b)), ViolationKind::TwoExclusiveHolders);
    let mut f = Fixture::new(3);
    let (r1, r2, w) = (
        f.start(0, Recipe::Read),
        f.start(1, Recipe::Read),
        f.start(2, Recipe::Write),
    );
    f.acquire(r1).unwrap();
    f.acquire(r2).unwrap();
    assert_eq!(kind(f.acquire(w)), ViolationKind::WriterBesideHolder);
    let mut f = Fixture::new(3);
    let sem = Recipe::Semaphore { permits: 2 };
    let (a, b, c) = (f.start(0, sem), f.start(1, sem), f.start(2, sem));
    f.acquire(a).unwrap();
    f.acquire(b).unwrap();
    assert_eq!(kind(f.acquire(c)), ViolationKind::TooManySemaphoreHolders);
}

#[test]
fn tokens_must_increase() {
    let mut f = Fixture::new(2);
    let (a, b) = (f.start(0, Recipe::Write), f.start(1, Recipe::Write));
    // b's node is created first (lower czxid) but granted after a's.
    let grant = f.create(b);
    f.acquire(a).unwrap();
    f.checker.on_release_call(a);
    f.event(a, LockEvent::Released).unwrap();
    assert_eq!(
        kind(f.event(b, LockEvent::Acquired(grant))),
        ViolationKind::TokenNotIncreasing
    );
}

#[test]
fn grants_must_match_the_tree_and_holders_keep_their_nodes() {
    let mut f = Fixture::new(2);
    let a = f.start(0, Recipe::Write);
    let grant = Grant {
        sequence: 7,
        path: "/l/zkl-0123456789abcdef0123456789abcdef-write-0000000007".into(),
        token: FencingToken(1),
        session_id: f.sessions[0],
        previous_holder_crashed: false,
    };
    assert_eq!(
        kind(f.event(a, LockEvent::Acquired(grant))),
        ViolationKind::BadGrant
    );
    let mut f = Fixture::new(1);
    let a = f.start(0, Recipe::Write);
    f.acquire(a).unwrap();
    f.model.expire_session(f.sessions[0]);
    assert_eq!(
        kind(f.checker.after_step(&f.model)),
        ViolationKind::HolderWithoutNode
    );
}

#[test]
fn event_order_and_terminal_rules() {
    let mut f = Fixture::new(1);
    let a = f.start(0, Recipe::Write);
    assert_eq!(
        kind(f.event(a, LockEvent::Suspended)),
        ViolationKind::IllegalEvent
    );
    assert_eq!(
        kind(f.event(a, LockEvent::Lost(LostReason::NodeDeleted))),
        ViolationKind::IllegalEvent
    );
    assert_eq!(
        kind(f.event(a, LockEvent::Released)),
        ViolationKind::IllegalEvent
    );
    f.event(a, LockEvent::Failed(FailReason::Timeout)).unwrap();
    assert_eq!(
        kind(f.event(a, LockEvent::Failed(FailReason::Timeout))),
        ViolationKind::IllegalEvent
    );
    let b = (ClientId(0), LockId(99));
    assert_eq!(
        kind(f.event(b, LockEvent::Released)),
        ViolationKind::IllegalEvent
    );
    assert_eq!(f.checker.unfinished(), vec![]);
}
