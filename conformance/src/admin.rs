//! An independent ZooKeeper client for inspecting and tampering with lock
//! directories on a real server, whatever binding is under test.

use crate::env::Admin;
use std::time::{Duration, Instant};
use zookeeper::{WatchedEvent, ZkError, ZooKeeper};

/// An administrator's session (over the `zookeeper` crate, session timeout 30 s).
///
/// ```no_run
/// use lock_conformance::Admin;
/// let admin = lock_conformance::ZkAdmin::connect(&lock_conformance::shared_server().connect_string());
/// assert!(admin.children("/no/such/dir").is_empty());
/// ```
pub struct ZkAdmin {
    zk: ZooKeeper,
}

impl ZkAdmin {
    /// Connects; panics if no session can be established.
    pub fn connect(connect_string: &str) -> ZkAdmin {
        ZkAdmin::connect_as(connect_string, None)
    }

    /// Connects with digest credentials (`user:password`) if given; panics if no
    /// session can be established.
    pub fn connect_as(connect_string: &str, digest: Option<&str>) -> ZkAdmin {
        let zk = ZooKeeper::connect(
            connect_string,
            Duration::from_secs(30),
            |_: WatchedEvent| {},
        )
        .expect("admin client");
        // The constructor returns before the session exists; the first call waits.
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            match zk.exists("/", false) {
                Ok(_) => break,
                Err(e) => assert!(Instant::now() < deadline, "admin cannot connect: {e:?}"),
            }
        }
        if let Some(digest) = digest {
            zk.add_auth("digest", digest.as_bytes().to_vec())
                .expect("digest auth");
        }
        ZkAdmin { zk }
    }

    /// The `zookeeper` crate's client, for what the methods here do not cover
    /// (ACLs, errors a test expects).
    pub fn zk(&self) -> &ZooKeeper {
        &self.zk
    }

    /// Creates `path` and its missing parents, persistent and open to anyone.
    pub fn create_dirs(&self, path: &str) {
        for end in path
            .match_indices('/')
            .skip(1)
            .map(|(i, _)| i)
            .chain([path.len()])
        {
            let dir = &path[..end];
            let open = zookeeper::Acl::open_unsafe().clone();
            match self
                .zk
                .create(dir, Vec::new(), open, zookeeper::CreateMode::Persistent)
            {
                Ok(_) | Err(ZkError::NodeExists) => {}
                Err(e) => panic!("creating {dir}: {e:?}"),
            }
        }
    }

    /// `(czxid, ephemeralOwner)` of `path`, if it exists.
    pub fn stat(&self, path: &str) -> Option<(i64, i64)> {
        self.zk
            .exists(path, false)
            .expect("exists")
            .map(|s| (s.czxid, s.ephemeral_owner))
    }
}

impl Admin for ZkAdmin {
    fn children(&self, path: &str) -> Vec<String> {
        match self.zk.get_children(path, false) {
            Ok(mut children) => {
                children.sort();
                children
            }
            Err(ZkError::NoNode) => Vec::new(),
            Err(e) => panic!("listing {path}: {e:?}"),
        }
    }

    fn delete(&self, path: &str) -> bool {
        match self.zk.delete(path, None) {
            Ok(()) => true,
            Err(ZkError::NoNode) => false,
            Err(e) => panic!("deleting {path}: {e:?}"),
        }
    }

    fn czxid(&self, path: &str) -> Option<i64> {
        self.stat(path).map(|(czxid, _)| czxid)
    }

    fn data(&self, path: &str) -> Option<(Vec<u8>, i32)> {
        match self.zk.get_data(path, false) {
            Ok((data, stat)) => Some((data, stat.version)),
            Err(ZkError::NoNode) => None,
            Err(e) => panic!("reading {path}: {e:?}"),
        }
    }
}
