//! [`NetLab`]: network namespaces on one bridge, with partitions made by packet
//! filters, for ZooKeeper servers and clients that must be cut apart for real.

mod ensemble;
mod enter;
mod filter;
mod sweep;
mod tools;

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::net::Ipv4Addr;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub use ensemble::NetEnsemble;
pub(crate) use enter::run_in;

use crate::error::{Error, Result};
use crate::util::lock;
use sweep::Watchdog;
use tools::Tools;

/// The bridge inside the lab's switch namespace.
const BRIDGE: &str = "br0";
/// Each node's end of its veth pair, inside the node's namespace.
const NODE_LINK: &str = "eth0";
/// The lab's subnet (private; it exists only inside the lab's namespaces, so
/// labs of parallel tests do not see each other).
const SUBNET: [u8; 3] = [10, 231, 0];
/// Addresses `.1` to `.250` of the subnet.
const MAX_NODES: usize = 250;

/// A node of a [`NetLab`]: one network namespace with one address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(usize);

#[derive(Debug)]
struct Node {
    label: String,
    netns: String,
    ip: Ipv4Addr,
}

/// Network namespaces on one bridge, and the partitions between them.
///
/// Each node ([`add_node`](Self::add_node), or the members of an ensemble
/// started with [`start_ensemble`](Self::start_ensemble)) is a network namespace
/// with one address in `10.231.0.0/24`, plugged into a bridge that lives in a
/// namespace of its own. Run programs on a node with [`command`](Self::command)
/// (`ip netns exec`), or run code on a thread inside it with
/// [`run_in`](Self::run_in). Partitions are packet filters (an nftables table
/// per node dropping, silently and in both directions, what comes from or goes
/// to the blocked addresses): [`partition`](Self::partition),
/// [`isolate`](Self::isolate), [`bridge`](Self::bridge); [`heal`](Self::heal)
/// lifts them all. A node always reaches itself.
///
/// ```no_run
/// use lock_testkit::{NetLab, ZkEnsemble};
/// # fn main() -> lock_testkit::Result<()> {
/// let mut lab = NetLab::new()?;
/// let zk = lab.start_ensemble(ZkEnsemble::builder(), 3)?;
/// let client = lab.add_node("c1")?;
/// let mut contender = lab.command(client, "my-contender");
/// contender.arg(zk.ensemble().member(0)?.connect_string());
/// lab.isolate(&[zk.node(0), client])?;  // member 0 and its client, alone
/// lab.heal()?;
/// lab.bridge(zk.node(0), zk.node(1))?;  // 0 and 1 apart, 2 sees both
/// # Ok(()) }
/// ```
///
/// Everything is made inside namespaces named `zkt-<pid>-<lab>-...`, nothing in
/// the host's own. Dropping the lab (also while a panic unwinds) kills what runs
/// in its namespaces and deletes them, which takes their links, bridge and
/// filters with them. If the test process dies without dropping it, a watchdog
/// process does the same, and any lab still left by a dead process is removed
/// when the next lab is made.
///
/// Needs root (or `CAP_NET_ADMIN` and `CAP_SYS_ADMIN`), `ip` (iproute2) and `nft`
/// (nftables); without them [`new`](Self::new) fails with
/// [`Error::NamespacesUnavailable`] saying what is missing.
#[derive(Debug)]
pub struct NetLab {
    tools: Tools,
    prefix: String,
    switch: String,
    nodes: Vec<Node>,
    /// Pairs `(a, b)`, `a < b`, that cannot reach each other.
    blocked: Mutex<BTreeSet<(usize, usize)>>,
    watchdog: Watchdog,
}

impl NetLab {
    /// Makes an empty lab: the switch namespace with its bridge. Removes first
    /// what labs of dead processes left behind.
    pub fn new() -> Result<NetLab> {
        static LABS: AtomicU64 = AtomicU64::new(0);
        let tools = Tools::locate()?;
        sweep::sweep_dead(&tools)?;
        let pid = std::process::id();
        loop {
            let prefix = sweep::lab_prefix(pid, LABS.fetch_add(1, Ordering::Relaxed));
            let switch = format!("{prefix}switch");
            match tools.ip(&["netns", "add", &switch]) {
                Ok(_) => {}
                // Left by an earlier process with our pid: take the next number.
                Err(Error::NetworkCommand { stderr, .. }) if stderr.contains("exists") => continue,
                Err(Error::NetworkCommand { stderr, .. }) => {
                    return Err(Error::NamespacesUnavailable {
                        missing: format!("`ip netns add` was refused: {stderr}"),
                    })
                }
                Err(e) => return Err(e),
            }
            let watchdog = Watchdog::start(&tools, &prefix).inspect_err(|_| {
                let _ = sweep::remove(&tools, &prefix);
            })?;
            let lab = NetLab {
                watchdog,
                tools,
                prefix,
                switch,
                nodes: Vec::new(),
                blocked: Mutex::new(BTreeSet::new()),
            };
            lab.ip_in(&lab.switch, &["link", "add", BRIDGE, "type", "bridge"])?;
            lab.ip_in(&lab.switch, &["link", "set", BRIDGE, "up"])?;
            return Ok(lab);
        }
    }

    /// Adds a node: a namespace `zkt-<pid>-<lab>-node-<label>` plugged into the
    /// bridge, with the next address and an empty packet filter. `label` (letters,
    /// digits, `-`; unique in the lab) names it in messages and in `ip netns list`.
    pub fn add_node(&mut self, label: &str) -> Result<NodeId> {
        let plain = |c: char| c.is_ascii_alphanumeric() || c == '-';
        if label.is_empty() || label.len() > 32 || !label.chars().all(plain) {
            return Err(Error::InvalidConfig(format!(
                "node label {label:?}: 1 to 32 letters, digits or -"
            )));
        }
        if self.nodes.iter().any(|n| n.label == label) {
            return Err(Error::InvalidConfig(format!(
                "node label {label:?} is taken"
            )));
        }
        if self.nodes.len() == MAX_NODES {
            return Err(Error::InvalidConfig(format!(
                "a lab has at most {MAX_NODES} nodes"
            )));
        }
        let index = self.nodes.len();
        let [a, b, c] = SUBNET;
        let ip = Ipv4Addr::new(a, b, c, index as u8 + 1);
        let netns = format!("{}node-{label}", self.prefix);
        let port = format!("v{index}");
        self.tools.ip(&["netns", "add", &netns])?;
        let link = [
            "link", "add", &port, "type", "veth", "peer", "name", NODE_LINK, "netns", &netns,
        ];
        self.ip_in(&self.switch, &link)?;
        self.ip_in(
            &self.switch,
            &["link", "set", &port, "master", BRIDGE, "up"],
        )?;
        self.ip_in(
            &netns,
            &["addr", "add", &format!("{ip}/24"), "dev", NODE_LINK],
        )?;
        self.ip_in(&netns, &["link", "set", NODE_LINK, "up"])?;
        self.ip_in(&netns, &["link", "set", "lo", "up"])?;
        self.tools.nft_script(&netns, &filter::setup_script())?;
        // A veth end carries nothing until the kernel's link watch has seen its
        // carrier (and only then does the bridge forward on its port): a SYN sent
        // before is dropped and sent again only after 1 s, which a loaded machine
        // made a node look cut off. The node is returned once both ends are up.
        let switch = self.switch.clone();
        self.wait_until_up(&switch, &port)?;
        self.wait_until_up(&netns, NODE_LINK)?;
        self.nodes.push(Node {
            label: label.to_string(),
            netns,
            ip,
        });
        Ok(NodeId(index))
    }

    fn wait_until_up(&self, netns: &str, link: &str) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let shown = self.ip_in(netns, &["-o", "link", "show", "dev", link])?;
            if shown.contains("state UP") {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(Error::NetworkCommand {
                    command: format!("ip -n {netns} -o link show dev {link}"),
                    status: "not up 10 s after `link set up`".to_string(),
                    stderr: shown,
                });
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn ip_in(&self, netns: &str, args: &[&str]) -> Result<String> {
        let mut all = vec!["-n", netns];
        all.extend_from_slice(args);
        self.tools.ip(&all)
    }

    fn node(&self, node: NodeId) -> &Node {
        &self.nodes[node.0]
    }

    /// The node's address (`10.231.0.<n>`), valid inside the lab only.
    pub fn ip(&self, node: NodeId) -> Ipv4Addr {
        self.node(node).ip
    }

    /// The node's label.
    pub fn label(&self, node: NodeId) -> &str {
        &self.node(node).label
    }

    fn netns(&self, node: NodeId) -> &str {
        &self.node(node).netns
    }

    /// The prefix of every namespace name of this lab, `zkt-<pid>-<lab>-`.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// A command that runs `program` on the node: `ip netns exec <netns>
    /// <program>`; add arguments, then spawn it. (`ip` execs the program, so the
    /// child's pid is the program's.)
    pub fn command(&self, node: NodeId, program: impl AsRef<OsStr>) -> Command {
        let mut command = Command::new(&self.tools.ip);
        command
            .args(["netns", "exec", self.netns(node)])
            .arg(program);
        command
    }

    /// Runs `f` on a thread inside the node's namespace (sockets it opens belong
    /// to the node) and returns its result.
    pub fn run_in<T: Send>(&self, node: NodeId, f: impl FnOnce() -> T + Send) -> Result<T> {
        run_in(self.netns(node), f)
    }

    /// Cuts every node of `a` from every node of `b`, both ways, in addition to
    /// the cuts already made. Nodes in neither group are not affected.
    pub fn partition(&self, a: &[NodeId], b: &[NodeId]) -> Result<()> {
        let mut blocked = lock(&self.blocked);
        for &x in a {
            for &y in b {
                if x != y {
                    blocked.insert((x.0.min(y.0), x.0.max(y.0)));
                }
            }
        }
        let touched: BTreeSet<NodeId> = a.iter().chain(b).copied().collect();
        self.apply(&blocked, touched)
    }

    /// Cuts `group` from every other node of the lab: its members still reach
    /// one another.
    pub fn isolate(&self, group: &[NodeId]) -> Result<()> {
        let rest: Vec<NodeId> = (0..self.nodes.len())
            .map(NodeId)
            .filter(|n| !group.contains(n))
            .collect();
        self.partition(group, &rest)
    }

    /// Cuts `a` from `b` only: a third node still sees both (the "bridge"
    /// shape, e.g. two ZooKeeper servers that cannot talk while the third talks
    /// to both).
    pub fn bridge(&self, a: NodeId, b: NodeId) -> Result<()> {
        self.partition(&[a], &[b])
    }

    /// Lifts every cut.
    pub fn heal(&self) -> Result<()> {
        let mut blocked = lock(&self.blocked);
        let touched: BTreeSet<NodeId> = blocked
            .iter()
            .flat_map(|&(a, b)| [NodeId(a), NodeId(b)])
            .collect();
        blocked.clear();
        self.apply(&blocked, touched)
    }

    /// Rewrites the filters of `touched` from `blocked`.
    fn apply(&self, blocked: &BTreeSet<(usize, usize)>, touched: BTreeSet<NodeId>) -> Result<()> {
        for node in touched {
            let peers: Vec<Ipv4Addr> = blocked
                .iter()
                .filter_map(|&(a, b)| match node.0 {
                    n if n == a => Some(b),
                    n if n == b => Some(a),
                    _ => None,
                })
                .map(|peer| self.nodes[peer].ip)
                .collect();
            self.tools
                .nft_script(self.netns(node), &filter::blocked_script(&peers))?;
        }
        Ok(())
    }
}

impl Drop for NetLab {
    fn drop(&mut self) {
        if let Err(e) = sweep::remove(&self.tools, &self.prefix) {
            eprintln!(
                "lock-testkit: removing the namespaces {}*: {e}",
                self.prefix
            );
        }
        self.watchdog.dismiss();
    }
}
