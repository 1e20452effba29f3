//! Interop with kazoo (Python): a kazoo `Lock` and a zklock mutex created with the
//! kazoo naming scheme exclude each other on one lock path, in FIFO order.
//!
//! Needs Debian's `python3-kazoo` (kazoo 2.8) for `/usr/bin/python3`;
//! `scripts/test.sh` installs it when missing. Runs under tokio only: what is tested
//! is the protocol on the wire, not the runtime.

mod common;

use lock_core::names::parse_name;
use lock_core::{NameScheme, NodeKind};
use lock_zookeeper_client::{LockClient, Runtime};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// The kazoo side, driven line by line over stdin/stdout.
const KAZOO: &str = r#"
import sys
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1], timeout=5.0)
zk.start(timeout=15)
lock = zk.Lock(sys.argv[2], "kazoo")
def say(*words):
    print(*words, flush=True)
def expect(word):
    line = sys.stdin.readline().strip()
    assert line == word, (line, word)
lock.acquire(timeout=15)
say("HELD", lock.node)
expect("release")
lock.release()
say("RELEASED")
expect("try")
say("GOT" if lock.acquire(blocking=False) else "BUSY")
expect("wait")
lock.acquire(timeout=15)
say("HELD", lock.node)
lock.release()
zk.stop()
say("DONE")
"#;

struct Kazoo {
    child: std::process::Child,
    lines: mpsc::Receiver<String>,
}

impl Kazoo {
    fn start(connect: &str, path: &str) -> Kazoo {
        let mut child = Command::new("/usr/bin/python3")
            .args(["-c", KAZOO, connect, path])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("/usr/bin/python3 (with python3-kazoo: scripts/test.sh installs it)");
        let out = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        Kazoo { child, lines }
    }

    fn next(&self) -> String {
        self.lines
            .recv_timeout(Duration::from_secs(30))
            .expect("kazoo said nothing for 30 s (is python3-kazoo installed?)")
    }

    fn send(&mut self, word: &str) {
        let stdin = self.child.stdin.as_mut().expect("stdin");
        writeln!(stdin, "{word}").expect("write to kazoo");
        stdin.flush().expect("flush");
    }
}

impl Drop for Kazoo {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn kazoo_locks_and_zklock_kazoo_scheme_exclude_each_other() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio");
    let server = common::server();
    let path = common::unique_path("kazoo-interop", &Runtime::Tokio(rt.handle().clone()));
    let mut kazoo = Kazoo::start(&server.connect_string(), &path);

    // kazoo holds first; its node name is one zklock parses as a kazoo write lock.
    let held = kazoo.next();
    let name = held.strip_prefix("HELD ").expect(&held).to_owned();
    let parsed = parse_name(&name).unwrap_or_else(|| panic!("unparsed kazoo name {name}"));
    assert_eq!(
        (parsed.scheme, parsed.kind),
        (NameScheme::Kazoo, NodeKind::Write)
    );

    rt.block_on(async {
        let locks = LockClient::builder(&server.connect_string())
            .session_timeout(Duration::from_secs(5))
            .runtime(Runtime::Tokio(tokio::runtime::Handle::current()))
            .connect()
            .await
            .expect("connect");
        let mutex = locks.mutex(&path).with_scheme(NameScheme::Kazoo);
        // Busy while kazoo holds.
        assert!(mutex.try_lock().await.expect("try_lock").is_none());
        // Queue behind kazoo, then let kazoo go: we get it.
        let waiting = tokio::spawn({
            let mutex = mutex.clone();
            async move { mutex.lock_timeout(Duration::from_secs(20)).await }
        });
        // Our node is queued behind kazoo's before kazoo releases.
        let observer = common::Observer::connect(&server.connect_string()).await;
        observer.wait_children(&path, 2).await;
        kazoo.send("release");
        assert_eq!(kazoo.next(), "RELEASED");
        let guard = waiting
            .await
            .expect("task")
            .expect("zklock acquires after kazoo");
        let ours = guard.path().rsplit('/').next().unwrap().to_owned();
        assert!(ours.contains("__lock__"), "{ours}");

        // While we hold, kazoo cannot take it.
        kazoo.send("try");
        assert_eq!(kazoo.next(), "BUSY");
        // kazoo waits; our release lets it in.
        kazoo.send("wait");
        observer.wait_children(&path, 2).await; // kazoo queued behind us
        guard.release().await.expect("release");
        let held = kazoo.next();
        assert!(held.starts_with("HELD "), "{held}");
        assert_eq!(kazoo.next(), "DONE");
        locks.close().await;
    });
}
