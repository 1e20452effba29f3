//! `zklock exec` and `zklock ls` with a real go-zookeeper client (its `Lock`
//! recipe, in a Go process built by lock-testkit's `go_peer` with Debian's
//! golang-go and go-zookeeper) on one path, against a real ZooKeeper.

mod common;

use common::*;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// How long any one line from the Go peer may take (its lock waits are in the test).
const REPLY: Duration = Duration::from_secs(60);

/// One go-zookeeper session in a process of its own, driven by the peer's line
/// protocol (`<slot> <op> [args]` in, `<slot> <WORD> [args]` out; see the top of
/// lock-testkit's `peers/go_peer.go`).
struct GoPeer {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
}

impl GoPeer {
    /// Starts a peer named `name` and waits for its session.
    fn start(zk: &str, name: &str) -> GoPeer {
        let scratch = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
        let binary = lock_testkit::go_peer(scratch).unwrap_or_else(|e| panic!("{e}"));
        let mut child = Command::new(binary)
            .args([zk, name])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("starting the Go peer");
        let stdin = child.stdin.take();
        let stdout: ChildStdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut peer = GoPeer {
            child,
            stdin,
            lines,
        };
        assert_eq!(peer.line(), "_ READY");
        peer
    }

    fn line(&mut self) -> String {
        self.lines
            .recv_timeout(REPLY)
            .unwrap_or_else(|e| panic!("no line from the Go peer in {REPLY:?}: {e}"))
    }

    /// Sends `slot op args` and returns the reply's words after the slot.
    fn ask(&mut self, command: &str) -> String {
        let stdin = self.stdin.as_mut().expect("peer open");
        writeln!(stdin, "1 {command}").unwrap();
        stdin.flush().unwrap();
        let reply = self.line();
        reply
            .strip_prefix("1 ")
            .unwrap_or_else(|| panic!("Go peer answered {reply:?} to {command:?}"))
            .to_owned()
    }

    /// go-zookeeper's `Lock` on `lock`, waited for; the node it holds with.
    fn acquire(&mut self, lock: &str) -> String {
        let reply = self.ask(&format!("acquire mutex {lock}"));
        reply
            .strip_prefix("HELD ")
            .unwrap_or_else(|| panic!("Go peer: {reply:?}"))
            .to_owned()
    }

    /// Ends the session (deleting its nodes) and the process.
    fn close(mut self) {
        drop(self.stdin.take());
        assert!(self.child.wait().unwrap().success());
    }
}

impl Drop for GoPeer {
    fn drop(&mut self) {
        if self.stdin.is_some() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A Go holder: `zklock exec -n` is busy (75), CMD never runs, and `ls` shows
/// the Go holder. (That a Go node keeps out every zklock scheme, and the
/// hand-over both ways, is the binding's: lock-zookeeper-client's
/// tests/interop_go.rs.)
///
/// Meanwhile a kazoo holder joins on the same path: two holders, each in its own
/// library's eyes (kazoo counts only kazoo's nodes). `ls` says the schemes are
/// mixed and names each library's holder (Go's view counts every node, so its
/// holder is the Go node), as text and as JSON.
///
/// Once Go releases, `exec --scheme go` holds in Go's layout (`ls`: scheme go, a
/// `_c_` node), and go-zookeeper's `Lock` finds it busy.
#[test]
fn a_go_holder_and_a_go_scheme_holder_as_ls_and_go_see_them() {
    let (zk, lock, dir) = setup("go-holds");
    let ran = dir.join("ran");
    let mut go = GoPeer::start(&zk, "go-holder");
    let node = go.acquire(&lock);
    assert!(node.starts_with("_c_") && node.contains("-lock-"), "{node}");

    let touch = format!("exec -n {lock} -- touch");
    let out = run(zklock(&zk).args(words(&touch)).arg(&ran));
    assert_eq!(code(&out), BUSY, "{out:?}");
    assert!(!ran.exists(), "CMD ran beside a Go holder");

    let rows = ls_rows(&zk, &lock);
    assert_eq!(rows.len(), 1, "{rows:?}");
    // # STATE KIND OWNER SESSION AGE TOKEN SCHEME WAITS-FOR NODE
    assert_eq!(
        [
            rows[0][1].as_str(),
            rows[0][7].as_str(),
            rows[0][9].as_str()
        ],
        ["holds", "go", node.as_str()],
        "{rows:?}"
    );

    let (mut kazoo, kazoo_node) = kazoo_holder(&zk, &lock, "kazoo-holder", &["hold"]);
    assert_ls_names_each_librarys_holder(
        &zk,
        &lock,
        &[
            "zklock takes for the holder: #1",
            "kazoo takes for the holder: #2",
            "go-zookeeper takes for the holder: #1",
        ],
    );
    let json = stdout(&exits(&zk, &["ls", "--json", &lock], 0));
    assert!(json.contains(r#""mixed_schemes":true"#), "{json}");
    for (library, node) in [("go-zookeeper", &node), ("kazoo", &kazoo_node)] {
        assert!(
            json.contains(&format!(r#""{library}":["{node}"]"#)),
            "{library}: {json}"
        );
    }
    drop(kazoo.stdin.take()); // kazoo releases and exits
    assert!(kazoo.wait().unwrap().success());
    go.close();

    let mut holder = holding(&zk, &["--scheme", "go"], &lock, &dir.join("ready"));
    let rows = ls_rows(&zk, &lock);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0][7], "go", "{rows:?}");
    assert!(rows[0][9].starts_with("_c_"), "{rows:?}");
    let mut go = GoPeer::start(&zk, "go-contender");
    assert_eq!(go.ask(&format!("try mutex {lock}")), "BUSY");
    go.close();
    assert_eq!(terminate(&mut holder).code(), Some(128 + 15));
}
