//! The packet filter of one node: an nftables table with a set of addresses the
//! node can neither send to nor receive from. Drops are silent (no reset, no ICMP),
//! as in a real partition: connections hang until their own timeouts.

use std::net::Ipv4Addr;

/// The table each node's namespace gets (a namespace has its own nftables).
const TABLE: &str = "inet zk_testkit_partition";

/// Creates the table with an empty set, filtering both directions.
pub(crate) fn setup_script() -> String {
    format!(
        "table {TABLE} {{\n\
         \x20 set blocked {{ type ipv4_addr; }}\n\
         \x20 chain input {{ type filter hook input priority -10; policy accept; ip saddr @blocked drop; }}\n\
         \x20 chain output {{ type filter hook output priority -10; policy accept; ip daddr @blocked drop; }}\n\
         }}\n"
    )
}

/// Replaces the set with `blocked`, in one transaction.
pub(crate) fn blocked_script(blocked: &[Ipv4Addr]) -> String {
    let mut script = format!("flush set {TABLE} blocked\n");
    if !blocked.is_empty() {
        let list: Vec<String> = blocked.iter().map(Ipv4Addr::to_string).collect();
        script += &format!("add element {TABLE} blocked {{ {} }}\n", list.join(", "));
    }
    script
}
