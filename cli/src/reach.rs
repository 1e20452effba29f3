//! Why ZooKeeper cannot be reached: zklock probes the servers' TCP ports beside
//! the client's connect, to give up early when every server refuses (nothing
//! listens: waiting the whole connect timeout would not help) and to say, when
//! the connect fails, what each server did.

use crate::usage::Server;
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
pub(crate) async fn every_server_refuses(servers: &[Server]) -> String {
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
            return describe(servers, &reaches);
        }
        tokio::time::sleep(ROUND_PAUSE).await;
    }
}

/// What each server does now, after the client failed with `why`.
pub(crate) async fn explain(servers: &[Server], why: &str) -> String {
    let reaches = probe_all(servers).await;
    format!("{} (the client said: {why})", describe(servers, &reaches))
}

fn describe(servers: &[Server], reaches: &[Reach]) -> String {
    servers
        .iter()
        .zip(reaches)
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
            format!("{}: {what}", server.text)
        })
        .collect::<Vec<_>>()
        .join("; ")
}
