//! Real Apache ZooKeeper for zklock's tests: standalone servers and ensembles
//! on loopback, plus a TCP proxy that injects connection loss, network
//! partitions and latency, and [`NetLab`]: servers and clients in network
//! namespaces, cut apart by packet filters; and a throwaway PostgreSQL
//! ([`Postgres`]), the resource that fencing tests protect. For benches:
//! [`measure`] (medians, `/proc` readings, knobs, report splicing, peers
//! driven line by line), [`exclusion`] (the one-holder-at-once check over
//! recorded spans) and, with feature `floor`, `floor` (the bare
//! zookeeper-client lock that zklock is measured beside).
//!
//! Dev-only; the API is synchronous (plain `std`, no async runtime), so it
//! works in blocking tests and in `#[tokio::test]`, async-std or smol tests
//! alike. (Calls that wait, such as `start`, `restart` or
//! `wait_for_leader`, block the calling thread for up to a few seconds; in
//! async tests that is usually fine, or use your runtime's `spawn_blocking`.)
//!
//! ```no_run
//! use std::time::Duration;
//! use lock_testkit::{Direction, FaultProxy, Mode, ZkEnsemble, ZkServer};
//!
//! # fn main() -> lock_testkit::Result<()> {
//! let server = ZkServer::start()?;                    // 127.0.0.1:<free port>, temp dir
//! let _connect = server.connect_string();             // "127.0.0.1:40123"
//! assert_eq!(server.srvr()?, Mode::Standalone);
//! let _packets = server.mntr()?.get_u64("zk_packets_received");
//!
//! let proxy = FaultProxy::start(server.addr())?;      // clients use proxy.connect_string()
//! proxy.cut();                                        // connection loss
//! proxy.blackhole();                                  // partition (session expiry if long)
//! proxy.heal();
//! proxy.set_delays(Duration::from_millis(50), Duration::from_millis(50)); // latency each way
//! proxy.hold(Direction::Downstream);                  // requests pass, replies wait
//! proxy.cut();                                        // the held replies are lost
//!
//! server.kill();                                      // crash; restart() keeps port and data
//! server.restart()?;
//!
//! let ensemble = ZkEnsemble::start(3)?;
//! let leader = ensemble.wait_for_leader(Duration::from_secs(10))?;
//! ensemble.member(leader)?.kill();
//! let _new_leader = ensemble.wait_for_leader(Duration::from_secs(10))?;
//! # Ok(())
//! # }
//! ```
//!
//! # Finding ZooKeeper
//!
//! In this order: `ZOOKEEPER_CLASSPATH` (used verbatim), `ZOOKEEPER_HOME` (its
//! `conf/`, `*.jar` and `lib/*.jar`), Debian's `zookeeper` package
//! (`/usr/share/java`); the variables come first, so that another version can be
//! tested beside the package, and one set to nothing usable is an error, not a
//! fallback. `java` is `$JAVA_HOME/bin/java`, else the first on `PATH`. If
//! nothing is there, every start fails with [`Error::NotInstalled`], whose
//! message names the fix (`scripts/install-zookeeper.sh`). Tests fail; they are
//! never skipped.
//!
//! # No stray JVMs
//!
//! Dropping a [`ZkServer`] or [`ZkEnsemble`] kills its JVMs and removes their
//! directories. Beyond that, each JVM is started through a small `/bin/sh`
//! watchdog that holds the read end of a pipe whose write end only the test
//! process has. When the test process dies in any way (SIGKILL, abort, exit
//! without destructors, e.g. with a server in a `static`), the pipe reports
//! end-of-file and the watchdog SIGKILLs the JVM and removes its temporary
//! directory. This is tied to the process, not to a thread (unlike
//! `PR_SET_PDEATHSIG`), and needs no `unsafe`.
//!
//! Set `ZK_TESTKIT_KEEP_DIRS=1` to keep all server directories (with their
//! `zoo.cfg` and `zookeeper.log`) for inspection. The directory of a server
//! that failed to start is always kept, and its log tail is in the error.

#![deny(missing_docs)]
#![warn(rust_2018_idioms)]

mod ensemble;
mod error;
pub mod exclusion;
#[cfg(feature = "floor")]
pub mod floor;
mod fourlw;
mod go;
mod install;
mod java;
pub mod measure;
mod netns;
mod pki;
mod postgres;
mod process;
mod proxy;
mod recorded;
mod server;
mod util;

pub use ensemble::ZkEnsemble;
pub use error::{Error, Result};
pub use fourlw::{Metrics, Mode};
pub use go::go_peer;
pub use java::curator_peer;
pub use netns::{NetEnsemble, NetLab, NodeId};
pub use pki::Pki;
pub use postgres::Postgres;
pub use proxy::{Direction, FaultProxy};
pub use recorded::RecordedMetrics;
pub use server::{ServerTls, ZkServer, ZkServerBuilder};

#[cfg(test)]
mod tests {
    fn send_sync<T: Send + Sync>() {}

    #[test]
    fn handles_can_be_shared_across_threads() {
        send_sync::<crate::ZkServer>();
        send_sync::<crate::ZkEnsemble>();
        send_sync::<crate::FaultProxy>();
        send_sync::<crate::Error>();
    }
}
