//! Why ZooKeeper cannot be reached: zklock probes the servers' TCP ports beside
//! the client's connect, to give up early when every server refuses (nothing
//! listens: waiting the whole connect timeout would not help) and to say, when
//! the connect fails, what each server did.

use crate::usage::Server;
use lock_zookeeper_client::Cause;
use std::time::Duration;
use tokio::net::TcpStream;

/// How long one probe waits for a TCP connection.
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// Rounds of refusals by every server before zklock gives up, and the pause
/// between rounds: a server being restarted gets about half a second.
const REFUSED_ROUNDS: u32 = 3;
const ROUND_PAUSE: Duration = Duration::from_millis(200);

/// How long the client's own connect runs alone before the first probe: a
/// connect that succeeds at once (the usual case) costs the servers no second
/// TCP connection.
const FIRST_PROBE_AFTER: Duration = Duration::from_millis(100);

/// What one server's port did.
#[derive(Debug)]
enum Reach {
    /// A TCP connection was made.
    Accepted,
    /// Refused (nothing listens there).
    Refused,
    /// No answer within [`PROBE_TIMEOUT`] (a firewall, a host down).
    Silent,
    /// The host name does not resolve.
    Unknown(String),
    /// Another network error.
    Failed(String),
}

impl Reach {
    /// Whether retrying is pointless for now.
    fn is_definite(&self) -> bool {
        matches!(self, Reach::Refused | Reach::Unknown(_))
    }
}

async fn probe(server: &Server) -> Reach {
    let addresses = match tokio::net::lookup_host((server.host.as_str(), server.port)).await {
        Ok(addresses) => addresses.collect::<Vec<_>>(),
        Err(e) => return Reach::Unknown(e.to_string()),
    };
    if addresses.is_empty() {
        return Reach::Unknown("no address".to_owned());
    }
    let mut outcome = Reach::Refused;
    for address in addresses {
        match tokio::time::timeout(PROBE_TIMEOUT, TcpStream::connect(address)).await {
            Ok(Ok(_)) => return Reach::Accepted,
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {}
            Ok(Err(e)) => outcome = Reach::Failed(e.to_string()),
            Err(_) => outcome = Reach::Silent,
        }
    }
    outcome
}

async fn probe_all(servers: &[Server]) -> Vec<Reach> {
    let mut probes = tokio::task::JoinSet::new();
    for (i, server) in servers.iter().cloned().enumerate() {
        probes.spawn(async move { (i, probe(&server).await) });
    }
    let mut reaches: Vec<Option<Reach>> = servers.iter().map(|_| None).collect();
    while let Some(Ok((i, reach))) = probes.join_next().await {
        reaches[i] = Some(reach);
    }
    reaches
        .into_iter()
        .map(|r| r.unwrap_or(Reach::Failed("probe lost".to_owned())))
        .collect()
}

/// Resolves, with a description, once every server has refused (or failed to
/// resolve) [`REFUSED_ROUNDS`] times in a row, the first round after
/// [`FIRST_PROBE_AFTER`]; never if one accepts.
pub(crate) async fn every_server_refuses(servers: &[Server]) -> Reachability {
    tokio::time::sleep(FIRST_PROBE_AFTER).await;
    let mut rounds = 0;
    loop {
        let reaches = probe_all(servers).await;
        if reaches.iter().any(|r| matches!(r, Reach::Accepted)) {
            return std::future::pending().await;
        }
        rounds = if reaches.iter().all(Reach::is_definite) {
            rounds + 1
        } else {
            0
        };
        if rounds >= REFUSED_ROUNDS {
            return Reachability::new(servers, reaches, None);
        }
        tokio::time::sleep(ROUND_PAUSE).await;
    }
}

/// What each server does now, after the client failed (with `client`, the
/// error underneath its failure, if any).
pub(crate) async fn explain(servers: &[Server], client: Option<Cause>) -> Reachability {
    let reaches = probe_all(servers).await;
    Reachability::new(servers, reaches, client)
}

/// What each server's port did, as an error: the source of a failed connect
/// (whose own source is the client's error, if any).
#[derive(Debug)]
pub(crate) struct Reachability {
    /// Each server (as given) and what its port did.
    servers: Vec<(String, Reach)>,
    /// The error underneath the client's failure.
    client: Option<Cause>,
}

impl Reachability {
    fn new(servers: &[Server], reaches: Vec<Reach>, client: Option<Cause>) -> Reachability {
        let servers = servers
            .iter()
            .map(|s| s.text.clone())
            .zip(reaches)
            .collect();
        Reachability { servers, client }
    }
}

impl std::fmt::Display for Reachability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&describe(&self.servers))
    }
}

impl std::error::Error for Reachability {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        let client: &(dyn std::error::Error + Send + Sync + 'static) = self.client.as_deref()?;
        Some(client)
    }
}

fn describe(servers: &[(String, Reach)]) -> String {
    servers
        .iter()
        .map(|(server, reach)| {
            let what = match reach {
                Reach::Accepted => "accepts TCP connections but gave no ZooKeeper session \
                                    (not a ZooKeeper server? TLS expected? overloaded?)"
                    .to_owned(),
                Reach::Refused => "connection refused (nothing listens there)".to_owned(),
                Reach::Silent => format!("no answer within {PROBE_TIMEOUT:?}"),
                Reach::Unknown(e) => format!("cannot resolve the host: {e}"),
                Reach::Failed(e) => e.clone(),
            };
            format!("{server}: {what}")
        })
        .collect::<Vec<_>>()
        .join("; ")
}
