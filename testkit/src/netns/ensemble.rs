//! A ZooKeeper ensemble whose members each run on a node of a [`NetLab`].

use std::net::Ipv4Addr;

use super::{NetLab, NodeId};
use crate::ensemble::ZkEnsemble;
use crate::error::{Error, Result};
use crate::server::{Netns, Prepare, Role, ZkServer, ZkServerBuilder};
use crate::util::TempDir;

/// ZooKeeper's usual ports: each member has a namespace of its own, so they are free.
const CLIENT_PORT: u16 = 2181;
const QUORUM_PORT: u16 = 2888;
const ELECTION_PORT: u16 = 3888;

/// A [`ZkEnsemble`] started by [`NetLab::start_ensemble`]: member `i` runs on
/// [`node(i)`](Self::node), serving clients at `<node's address>:2181`, and
/// everything of [`ZkEnsemble`] (leader, members, four-letter words, asked
/// from inside the member's namespace) works as usual.
#[derive(Debug)]
pub struct NetEnsemble {
    ensemble: ZkEnsemble,
    nodes: Vec<NodeId>,
}

impl NetEnsemble {
    /// The ensemble.
    pub fn ensemble(&self) -> &ZkEnsemble {
        &self.ensemble
    }

    /// The node member `index` runs on (panics if there is no such member).
    pub fn node(&self, index: usize) -> NodeId {
        self.nodes[index]
    }
}

impl NetLab {
    /// Starts an ensemble of `size` members (settings from `builder`, e.g.
    /// `ZkEnsemble::builder().tick_time(..).sync_limit(..)`), each on a new node
    /// labelled `zk<myid>`, and waits until it is ready. Its connect strings name
    /// lab addresses: use them from the lab's nodes. A `size` of 1 is a
    /// standalone server (`srvr` says `Mode: standalone`), as ZooKeeper runs
    /// one configured without peers, not a one-member quorum (which would say
    /// `Mode: leader`).
    pub fn start_ensemble(&mut self, builder: ZkServerBuilder, size: usize) -> Result<NetEnsemble> {
        let (install, timeout) = ZkEnsemble::checked(&builder, size, "tls: not in a NetLab")?;
        let nodes = (1..=size)
            .map(|id| self.add_node(&format!("zk{id}")))
            .collect::<Result<Vec<NodeId>>>()?;
        let servers: Vec<(Ipv4Addr, u16, u16)> = nodes
            .iter()
            .map(|&node| (self.ip(node), QUORUM_PORT, ELECTION_PORT))
            .collect();
        let root = TempDir::new("zk-testkit-netlab")
            .map_err(|e| Error::io("creating a temporary directory", e))?;
        let mut members = Vec::with_capacity(size);
        for (i, &node) in nodes.iter().enumerate() {
            members.push(ZkServer::prepare(Prepare {
                builder: &builder,
                install: &install,
                role: if size == 1 {
                    Role::Standalone
                } else {
                    Role::Member {
                        id: i + 1,
                        servers: servers.clone(),
                    }
                },
                dir: root.path().join(format!("member-{}", i + 1)),
                host: self.ip(node),
                client_port: CLIENT_PORT,
                netns: Some(Netns {
                    name: self.netns(node).to_string(),
                    ip_program: self.tools.ip.clone(),
                }),
                secure_port: None,
                cleanup: root.path().to_path_buf(),
                startup_timeout: timeout,
            })?);
        }
        let ensemble = ZkEnsemble::launch(members, root, timeout, false)
            .map_err(|e| e.expect("no retry was allowed"))?;
        Ok(NetEnsemble { ensemble, nodes })
    }
}
