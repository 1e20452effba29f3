//! The Go peer: go-zookeeper's `Lock` behind the line protocol the interop tests
//! speak (`peers/go_peer.go`), built with Debian's Go toolchain and Debian's
//! go-zookeeper snapshot, once per source text.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{Error, Result};
use crate::util::build_once;

/// The peer's source: usage and protocol at its top.
const GO_PEER_SOURCE: &str = include_str!("../peers/go_peer.go");

/// Where Debian's Go packages (`golang-github-samuel-go-zookeeper-dev`) live: a GOPATH.
const DEBIAN_GOCODE: &str = "/usr/share/gocode";

const INSTALL_HINT: &str = "install Debian's golang-go and golang-github-samuel-go-zookeeper-dev \
                            (scripts/test.sh does)";

fn peer_error(what: String) -> Error {
    Error::GoPeer { what }
}

/// The Go peer (`peers/go_peer.go`) built under `build_dir` (reused while the
/// source is unchanged), or [`Error::GoPeer`] saying what is missing and the fix.
///
/// GOPATH mode: the peer is package `zklockgopeer` in a GOPATH of its own, with
/// go-zookeeper from Debian's `/usr/share/gocode`, so nothing is fetched. Built in a
/// directory of its own and renamed into place, so concurrent test binaries never
/// run half a build.
pub fn go_peer(build_dir: &Path) -> Result<PathBuf> {
    let go = ["/usr/bin/go", "/usr/lib/go-1.19/bin/go"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .ok_or_else(|| peer_error(format!("no `go` (/usr/bin/go); {INSTALL_HINT}")))?;
    let lock_go = Path::new(DEBIAN_GOCODE).join("src/github.com/samuel/go-zookeeper/zk/lock.go");
    if !lock_go.is_file() {
        return Err(peer_error(format!(
            "no go-zookeeper at {}; {INSTALL_HINT}",
            lock_go.display()
        )));
    }
    let done = |dir: &Path| dir.join("go_peer").is_file();
    let dir = build_once(build_dir, "go-peer", GO_PEER_SOURCE, done, |work| {
        let src = work.join("src/zklockgopeer");
        std::fs::create_dir_all(&src)
            .map_err(|e| Error::io(format!("creating {}", src.display()), e))?;
        std::fs::write(src.join("main.go"), GO_PEER_SOURCE)
            .map_err(|e| Error::io(format!("writing {}", src.display()), e))?;
        let output = Command::new(&go)
            .args(["build", "-o", "go_peer", "zklockgopeer"])
            .current_dir(work)
            .env("GOPATH", format!("{}:{DEBIAN_GOCODE}", work.display()))
            .env("GO111MODULE", "off")
            .env("GOFLAGS", "")
            .env("GOCACHE", work.join("cache"))
            .output()
            .map_err(|e| peer_error(format!("running {}: {e}; {INSTALL_HINT}", go.display())))?;
        if !output.status.success() {
            return Err(peer_error(format!(
                "go build of the Go peer failed ({}):\n{}; {INSTALL_HINT}",
                output.status,
                String::from_utf8_lossy(&output.stderr)
            )));
        }
        // Only the binary is kept.
        let _ = std::fs::remove_dir_all(work.join("src"));
        let _ = std::fs::remove_dir_all(work.join("cache"));
        Ok(())
    })?;
    Ok(dir.join("go_peer"))
}
