//! # lock-conformance: one suite for every zklock binding
//!
//! Dev-only (`publish = false`). The behaviour a zklock binding promises, written
//! once against lock-client's [`LockClient`](lock_client::LockClient) and run
//! against each binding on real ZooKeeper servers and against lock-sim's
//! in-process server: the recipes' semantics, faults (a lost create reply, cuts,
//! partitions past the session timeout, an administrator deleting nodes, an
//! ensemble losing its leader, a paused holder process), elections, deadlocks,
//! guarded writes, typed errors, connection options, and what a lock costs in
//! requests and round trips. One test each, listed in [`conformance_tests!`]'s
//! source.
//!
//! # How a binding plugs in
//!
//! A binding's `tests/conformance.rs` only says how to connect: a closure
//! `(connect_string, session_timeout)` given to [`ZkEnv::new`] (or
//! `(connect_string, ConnectOptions)` given to [`ZkEnv::with_options`], which adds
//! the tests of the options), with the API [`Style`] the suite calls and the
//! requests one uncontended lock costs on that binding. [`conformance_tests!`]
//! then expands to one `#[test]` per conformance test:
//!
//! ```text
//! // adapters/zookeeper/tests/conformance.rs
//! lock_conformance::conformance_tests!(
//!     lock_conformance::ZkEnv::with_options("lock-zookeeper", Style::Blocking, 4, |cluster, options| {
//!         lock_zookeeper::builder(cluster).options(options).connect()
//!     }),
//!     [hold_replies, watchers, request_count, ensemble, connect_options]
//! );
//! ```
//!
//! # Which tests run where
//!
//! A test that needs more than the base contract names a [`Capability`]; where
//! the environment lacks it ([`Env::capabilities`]), the test checks nothing and
//! says so on stderr (`not applicable: Multi (lock-zookeeper-async)`), never a
//! silent pass. Given a list of capabilities, the macro also generates
//! `declared_capabilities_match`, which fails if the list differs from what the
//! environment says it has.
//!
//! # Environment
//!
//! On real ZooKeeper, tests that need no special server share one standalone
//! server per test binary ([`shared_server`]), each on its own lock paths; tests
//! that count the server's requests or need an ensemble start their own. Faults
//! go through `lock_testkit::FaultProxy`; directories are inspected with an
//! independent client ([`ZkAdmin`]). On lock-sim each test has a server of its
//! own, whose fault knobs stand in for the proxies. No test sleeps to
//! synchronise: each waits for an event or a condition on the server, with a
//! generous upper bound that turns a hang into a failure.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod admin;
mod env;
mod harness;
mod sim;
pub mod suite;
mod zk;

pub use admin::ZkAdmin;
pub use env::{
    unique_path, wait_until, Admin, Capability, Deployment, Ensemble, Env, Faults, Style, LONG,
    SESSION_TIMEOUT, SHORT,
};
pub use harness::{Pending, Suite, Wait};
pub use lock_core::{LockEvent, LostReason};
pub use sim::SimEnv;
pub use zk::{fresh_server, shared_server, watchers_of, Connect, ZkEnv};

/// Which lock to take.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    /// An exclusive lock (the binding's mutex).
    Mutex,
    /// An exclusive lock that watches its node while held (`watch_node()`), so an
    /// administrator deleting it is heard of at once.
    WatchedMutex,
    /// The shared half of a read/write lock.
    Read,
    /// The exclusive half of a read/write lock (compatible with `Mutex` on the same
    /// path: both are write nodes).
    Write,
    /// A semaphore with this many permits.
    Semaphore(u32),
}

/// Expands to one `#[test]` per conformance test, each running it on a fresh
/// `$env` (an expression of a type implementing [`Env`]), for the tests of the
/// base contract and those of each [`Capability`] (listed here, in this macro's
/// source, and nowhere else; a run lacking one says `not applicable`), plus
/// `declared_capabilities_match` against the listed capabilities (`multi`,
/// `hold_replies`, ... in snake case; `[all]` lists every one).
///
/// ```text
/// lock_conformance::conformance_tests!(lock_conformance::SimEnv::new(Style::Blocking),
///     [hold_replies, watchers, request_count]);
/// ```
#[macro_export]
macro_rules! conformance_tests {
    ($env:expr $(,)?) => {
        $crate::conformance_tests!(@all $env);
    };
    ($env:expr, [all] $(,)?) => {
        $crate::conformance_tests!($env, [
            multi, hold_replies, watchers, request_count, ensemble, full_tolerance, load,
            processes, connect_failures, nodelay, connect_options, server_checks,
        ]);
    };
    ($env:expr, [$($capability:ident),* $(,)?] $(,)?) => {
        $crate::conformance_tests!(@all $env);

        #[test]
        fn declared_capabilities_match() {
            let env = $env;
            let mut has = $crate::Env::capabilities(&env);
            let mut declared = vec![$($crate::conformance_tests!(@name $capability)),*];
            let key = |c: &$crate::Capability| format!("{c:?}");
            has.sort_by_key(key);
            declared.sort_by_key(key);
            assert_eq!(
                declared, has,
                "{}: the capabilities given to conformance_tests! differ from the environment's",
                $crate::Env::name(&env)
            );
        }
    };
    (@all $env:expr) => {
        $crate::conformance_tests!(@tests $env; [];
            mutual_exclusion,
            fifo_order,
            readers_share_writers_exclude,
            writer_not_starved_by_later_readers,
            semaphore_never_exceeds_permits,
            timeout_leaves_no_node,
            cancel_leaves_no_node,
            short_cut_resumes_every_recipe,
            connection_state_through_faults,
            blackhole_loses_before_another_session_holds,
            admin_delete_gives_lost,
            election_rejoins_after_the_leader_is_cut_off,
            election_hands_over_at_once_on_close,
            election_hands_over_on_resign_with_an_observer_following,
            invalid_paths_give_typed_errors,
            closed_client_gives_typed_errors,
            revocation_round_trip,
            revoking_a_waiter_fails_it_and_leaves_no_node,
            lease_expires_and_next_waiter_acquires,
            a_cycle_across_sessions_is_broken_by_one_victim,
            a_cycle_across_recipes_is_broken_by_one_victim,
            participants_in_queue_order_and_self_deadlock,
        );
        $crate::conformance_tests!(@tests $env; [Multi];
            fenced_write_only_while_held,
            crash_in_section_detected_uncontended,
            crash_in_section_detected_contended,
            lock_delay_follows_an_unclean_end_only,
            forced_break_leaves_its_record,
        );
        $crate::conformance_tests!(@tests $env; [HoldReplies];
            connection_loss_during_create_adopts_node,
        );
        $crate::conformance_tests!(@tests $env; [Watchers];
            waiter_rewatches_after_reconnect,
            admin_delete_of_a_plain_lock_is_heard_within_two_sync_intervals,
        );
        $crate::conformance_tests!(@tests $env; [RequestCount];
            requests_per_uncontended_cycle,
        );
        $crate::conformance_tests!(@tests $env; [Ensemble];
            ensemble_leader_loss_keeps_exclusion,
            standalone_restart_keeps_the_lock,
            idle_session_sends_no_sync,
        );
        $crate::conformance_tests!(@tests $env; [Ensemble, ServerChecks];
            server_check_reports_an_unsafe_session_and_passes_a_safe_one,
        );
        $crate::conformance_tests!(@tests $env; [Ensemble, FullTolerance];
            standalone_pause_of_0_75_t_keeps_the_lock,
            leader_restart_keeps_the_lock,
            follower_restart_keeps_the_lock,
        );
        $crate::conformance_tests!(@tests $env; [ConnectOptions];
            creator_acl_admits_its_user_and_refuses_others_with_a_typed_error,
            credentials_survive_a_reconnect,
            chroot_puts_every_node_under_it,
            bad_options_are_typed_errors,
        );
        $crate::conformance_tests!(@tests $env; [Load];
            contended_grants_under_load_raise_no_false_alarm,
        );
        $crate::conformance_tests!(@tests $env; [ConnectFailures];
            connect_refused_is_prompt_and_named,
            connect_unresolvable_is_prompt_and_named,
            connect_not_zookeeper_is_prompt_and_named,
            connect_missing_chroot_is_named,
            round_trips_through_50ms,
        );
        // lock-nodelay lists a process's sockets on Linux only; Nagle's
        // algorithm costs a round trip through the proxy only below the
        // delayed-ACK timer, which Linux has at 40 ms.
        #[cfg(target_os = "linux")]
        mod nodelay {
            #[allow(unused_imports)]
            use super::*;
            $crate::conformance_tests!(@tests $env; [ConnectFailures, Nodelay];
                set_after_connect_and_after_reconnect,
                set_after_moving_to_another_server,
                round_trips_through_10ms_despite_nagle,
            );
        }
        #[test]
        fn a_paused_holder_distrusts_its_lock_at_the_first_check() {
            let suite = $crate::Suite::new($env);
            if suite.lacks($crate::Capability::Processes) {
                return;
            }
            // The module path names the test in its binary: it runs again as
            // the child.
            $crate::suite::a_paused_holder_distrusts_its_lock_at_the_first_check(
                &suite,
                module_path!(),
            );
        }
    };
    (@name hold_replies) => { $crate::Capability::HoldReplies };
    (@name watchers) => { $crate::Capability::Watchers };
    (@name request_count) => { $crate::Capability::RequestCount };
    (@name ensemble) => { $crate::Capability::Ensemble };
    (@name load) => { $crate::Capability::Load };
    (@name processes) => { $crate::Capability::Processes };
    (@name connect_failures) => { $crate::Capability::ConnectFailures };
    (@name multi) => { $crate::Capability::Multi };
    (@name nodelay) => { $crate::Capability::Nodelay };
    (@name full_tolerance) => { $crate::Capability::FullTolerance };
    (@name connect_options) => { $crate::Capability::ConnectOptions };
    (@name server_checks) => { $crate::Capability::ServerChecks };
    (@needs [$($need:ident),*]) => { &[$($crate::Capability::$need),*] };
    (@tests $env:expr; $needs:tt; $($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                let suite = $crate::Suite::new($env);
                let needs: &[$crate::Capability] = $crate::conformance_tests!(@needs $needs);
                if needs.iter().any(|&needs| suite.lacks(needs)) {
                    return;
                }
                $crate::suite::$name(&suite);
            }
        )*
    };
}
