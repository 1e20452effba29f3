//! The AdminServer's `/commands/configuration` (ZooKeeper's HTTP admin
//! interface, `admin.serverPort`, 8080 by default): `tick_time`,
//! `min_session_timeout`, `max_session_timeout`. ZooKeeper 3.8 leaves
//! `syncLimit` out of it, so it can replace a refused `conf` for the two-tick
//! rule and the negotiation, never for the lag rule.

use lock_zookeeper_client::ServerConf;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// Fetches and parses `http://addr/commands/configuration`.
pub(crate) fn configuration(addr: SocketAddr, timeout: Duration) -> Result<ServerConf, String> {
    let body = get(addr, "/commands/configuration", timeout).map_err(|e| e.to_string())?;
    parse(&body)
}

/// One HTTP/1.0 GET (the server closes the connection after answering): the
/// body of a 200 answer.
fn get(addr: SocketAddr, path: &str, timeout: Duration) -> std::io::Result<String> {
    let mut stream = TcpStream::connect_timeout(&addr, timeout)?;
    stream.set_write_timeout(Some(timeout))?;
    stream.set_read_timeout(Some(timeout))?;
    write!(
        stream,
        "GET {path} HTTP/1.0\r\nHost: {addr}\r\nAccept: application/json\r\n\r\n"
    )?;
    let mut answer = Vec::new();
    stream.take(1 << 20).read_to_end(&mut answer)?;
    let answer = String::from_utf8_lossy(&answer);
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    let status = head.lines().next().unwrap_or_default();
    if status.split_whitespace().nth(1) != Some("200") {
        return Err(std::io::Error::other(format!("HTTP answer {status:?}")));
    }
    Ok(body.to_owned())
}

/// The settings in the JSON object ZooKeeper answers; fields are looked up by
/// name (a flat object of numbers and strings: no JSON library needed).
fn parse(body: &str) -> Result<ServerConf, String> {
    if !body.contains("\"configuration\"") {
        return Err("not a ZooKeeper AdminServer configuration answer".into());
    }
    let millis = |key: &str| {
        number(body, key)
            .map(Duration::from_millis)
            .ok_or_else(|| format!("no {key} in the AdminServer's answer"))
    };
    Ok(ServerConf::new(
        millis("tick_time")?,
        None,
        millis("min_session_timeout")?,
        millis("max_session_timeout")?,
    ))
}

/// The unsigned integer value of `"key" : N` in `body`.
fn number(body: &str, key: &str) -> Option<u64> {
    let at = body.find(&format!("\"{key}\""))? + key.len() + 2;
    let rest = body[at..].trim_start().strip_prefix(':')?.trim_start();
    let digits = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    rest[..digits].parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ZooKeeper 3.8.0's answer.
    const ANSWER: &str = r#"{
  "client_port" : 23181,
  "data_dir" : "/tmp/zkt/data/version-2",
  "data_log_dir" : "/tmp/zkt/data/version-2",
  "tick_time" : 2000,
  "max_client_cnxns" : 60,
  "min_session_timeout" : 4000,
  "max_session_timeout" : 40000,
  "server_id" : 1,
  "client_port_listen_backlog" : -1,
  "command" : "configuration",
  "error" : null
}"#;

    #[test]
    fn parses_the_configuration_command() {
        let conf = parse(ANSWER).unwrap();
        assert_eq!(conf.tick_time, Duration::from_secs(2));
        assert_eq!(conf.sync_limit, None);
        assert_eq!(conf.min_session_timeout, Duration::from_secs(4));
        assert_eq!(conf.max_session_timeout, Duration::from_secs(40));
        assert!(parse("{\"command\" : \"configuration\"}")
            .unwrap_err()
            .contains("tick_time"));
        assert!(parse("<html>").is_err());
    }
}
