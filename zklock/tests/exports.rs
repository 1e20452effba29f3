//! The three entry points (this facade, the async binding `lock-zookeeper-client`
//! and the blocking binding `lock-zookeeper`) export lock-client's user API whole:
//! each name lock-client exports is imported here through each of them (a missing
//! one fails to compile), and the list imported is compared with lock-client's own
//! (a name added there and not here fails the test, saying which).

use std::collections::BTreeSet;

/// Imports `names` (and the blocking twins' helpers) through each entry point.
macro_rules! imported_through_each {
    ($($name:ident),* $(,)?) => {
        #[allow(unused_imports)]
        mod facade {
            pub use zklock::{$($name),*};
            pub use zklock::blocking::{block_on, block_on_until};
        }
        #[allow(unused_imports)]
        mod async_binding {
            pub use lock_zookeeper_client::{$($name),*};
            pub use lock_zookeeper_client::blocking::{block_on, block_on_until};
        }
        #[allow(unused_imports)]
        mod blocking_binding {
            pub use lock_zookeeper::{$($name),*};
            pub use lock_zookeeper::blocking::{block_on, block_on_until};
        }
        /// The names imported above.
        const IMPORTED: &[&str] = &[$(stringify!($name)),*];
    };
}

imported_through_each!(
    pair,
    pair_with_clock,
    Clock,
    SystemClock,
    describe_metrics,
    HISTOGRAM_BUCKETS,
    LockClient,
    BreakError,
    BreakLock,
    Broken,
    ConnectionEvent,
    ConnectionEvents,
    ConnectionState,
    Election,
    ElectionEvent,
    ElectionObserver,
    Leadership,
    Cause,
    ConnectFailure,
    Cycle,
    Error,
    LockGuard,
    LockStatus,
    Hazard,
    HazardKind,
    Link,
    Notifier,
    Polled,
    Mutex,
    ReadLock,
    RwLock,
    Semaphore,
    WriteLock,
    MultiGuard,
    MultiLock,
    MultiPart,
    random_seed,
    AclEntry,
    Auth,
    ConnectOptions,
    NodeAcl,
    Perms,
    SaslDigest,
    Tls,
    Canceller,
    PendingLock,
    QueueWatch,
    Queued,
    ServerCheck,
    ServerChecker,
    ServerProbe,
    ServerRole,
    four_letter_word_refused,
    ConfError,
    ServerConf,
    Writes,
    BreakOutcome,
    CreateMode,
    CycleNode,
    FailReason,
    FencedError,
    FencingToken,
    Grant,
    Leader,
    LockEvent,
    LastBreak,
    LockSpec,
    LostReason,
    MultiOp,
    MultiResult,
    NameScheme,
    NodeKind,
    Participant,
    Participants,
    Stats,
    UsageError,
    WaitFor,
    ZkError,
    Reach,
    Config,
    Op,
    Reply,
    Request,
    RequestId,
    SessionEvent,
    Stat,
    WatchKind,
);

/// The names a crate root's `pub use` items export (the last segment, or the
/// `as` name), from its source; globs and `pub mod` excluded.
fn exported_names(source: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = source;
    while let Some(at) = rest.find("\npub use ") {
        rest = &rest[at + "\npub use ".len()..];
        let end = rest.find(';').expect("a `pub use` ends with `;`");
        let item = &rest[..end];
        let list = match (item.find('{'), item.rfind('}')) {
            (Some(open), Some(close)) => &item[open + 1..close],
            _ => item.rsplit("::").next().unwrap_or(item),
        };
        for part in list.split(',') {
            let name = part.split(" as ").last().unwrap_or(part).trim();
            if !name.is_empty() && name != "*" {
                names.insert(name.to_owned());
            }
        }
        rest = &rest[end..];
    }
    names
}

#[test]
fn every_entry_point_exports_lock_clients_names() {
    let lock_client = exported_names(include_str!("../../client/src/lib.rs"));
    let imported: BTreeSet<String> = IMPORTED.iter().map(|n| n.to_string()).collect();
    let missing: Vec<_> = lock_client.difference(&imported).collect();
    let unknown: Vec<_> = imported.difference(&lock_client).collect();
    assert!(
        missing.is_empty() && unknown.is_empty(),
        "lock-client's exports changed: add {missing:?} to and remove {unknown:?} from \
         `imported_through_each!` in zklock/tests/exports.rs"
    );
    assert!(lock_client.contains("LockClient") && lock_client.len() > 50);
}

/// A binding's own items must not shadow a lock-client name: the glob would then
/// silently export the binding's item under the user API's name.
#[test]
fn no_entry_point_shadows_a_lock_client_name() {
    let lock_client = exported_names(include_str!("../../client/src/lib.rs"));
    for (crate_name, source) in [
        ("zklock", include_str!("../src/lib.rs")),
        (
            "lock-zookeeper-client",
            include_str!("../../adapters/zookeeper-client/src/lib.rs"),
        ),
        (
            "lock-zookeeper",
            include_str!("../../adapters/zookeeper/src/lib.rs"),
        ),
    ] {
        let own = exported_names(source);
        assert!(!own.is_empty(), "{crate_name}: no `pub use` found");
        let shadowing: Vec<_> = own.intersection(&lock_client).collect();
        assert!(
            shadowing.is_empty(),
            "{crate_name} exports its own {shadowing:?}, shadowing lock-client's"
        );
        assert!(
            source.contains("\npub use lock_client::*;"),
            "{crate_name} must re-export lock-client whole"
        );
    }
}
