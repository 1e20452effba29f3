//! The options and values the subcommands share. A leaf: the subcommands' own
//! arguments import it, and `args` (the whole command line) imports them.

use clap::{Args, ValueEnum};
use lock_zookeeper_client::{Error, NameScheme, NodeAcl, Tls};
use std::time::Duration;

/// How to reach ZooKeeper (every command that connects).
#[derive(Args, Clone, Debug)]
pub(crate) struct ConnArgs {
    /// ZooKeeper connect string: host:port[,host:port...][/chroot].
    #[arg(
        long,
        env = "ZKLOCK_ZK",
        default_value = "127.0.0.1:2181",
        value_name = "HOSTS",
        global = true
    )]
    pub(crate) zk: String,
    /// Session timeout to ask the server for, in seconds (the server may clamp it).
    #[arg(long, value_name = "SECS", global = true, value_parser = parse_secs)]
    pub(crate) session_timeout: Option<Duration>,
    /// Authenticate with ZooKeeper's digest scheme (zkCli's `addauth digest
    /// USER:PASSWORD`), on every connection of the session.
    #[arg(long, env = "ZKLOCK_AUTH", value_name = "USER:PASSWORD", global = true,
          hide_env_values = true, value_parser = parse_auth)]
    pub(crate) auth: Option<(String, String)>,
    /// TLS: the CA certificate(s) to trust, a PEM file (connect to the servers'
    /// secure client port, `secureClientPort`).
    #[arg(long, value_name = "FILE", global = true)]
    pub(crate) tls_ca: Option<std::path::PathBuf>,
    /// TLS client certificate, a PEM file (with --tls-key), for servers that
    /// require one.
    #[arg(long, value_name = "FILE", global = true)]
    pub(crate) tls_cert: Option<std::path::PathBuf>,
    /// The client certificate's private key, a PEM file (PKCS#8).
    #[arg(long, value_name = "FILE", global = true)]
    pub(crate) tls_key: Option<std::path::PathBuf>,
}

impl ConnArgs {
    /// The TLS option from the --tls-* flags, if any.
    pub(crate) fn tls(&self) -> Result<Option<Tls>, Error> {
        // The io error names no file: the path goes into its message.
        let read = |option: &'static str, path: &std::path::Path| {
            std::fs::read_to_string(path).map_err(|e| {
                let named = std::io::Error::new(e.kind(), format!("{}: {e}", path.display()));
                Error::bad_option_caused_by(option, "the file cannot be read", named)
            })
        };
        let tls = match &self.tls_ca {
            Some(ca) => Tls::new(read("--tls-ca", ca)?),
            None if self.tls_cert.is_some() || self.tls_key.is_some() => {
                return Err(Error::bad_option(
                    "--tls-cert/--tls-key",
                    "they need --tls-ca",
                ))
            }
            None => return Ok(None),
        };
        match (&self.tls_cert, &self.tls_key) {
            (Some(cert), Some(key)) => Ok(Some(
                tls.identity(read("--tls-cert", cert)?, read("--tls-key", key)?),
            )),
            (None, None) => Ok(Some(tls)),
            _ => Err(Error::bad_option(
                "--tls-cert/--tls-key",
                "they go together",
            )),
        }
    }
}

/// How zklock creates nodes: only for the subcommands that create any (`exec`,
/// `elect`); the others only read, or write into nodes that exist (`revoke`), so
/// their help does not offer it and their command line refuses it.
#[derive(Args, Debug)]
pub(crate) struct NodeArgs {
    /// The ACL of the nodes zklock creates: `open` (anyone), `creator` (only the
    /// --auth identity) or `creator-read` (the creator, and anyone may read: `ls`
    /// works for everyone).
    #[arg(long, value_name = "ACL", default_value = "open", value_parser = parse_acl)]
    pub(crate) acl: NodeAcl,
}

fn parse_auth(text: &str) -> Result<(String, String), String> {
    match text.split_once(':') {
        Some((user, password)) if !user.is_empty() => Ok((user.to_owned(), password.to_owned())),
        _ => Err("expected USER:PASSWORD".to_owned()),
    }
}

fn parse_acl(text: &str) -> Result<NodeAcl, String> {
    match text {
        "open" => Ok(NodeAcl::Open),
        "creator" => Ok(NodeAcl::CreatorAll),
        "creator-read" => Ok(NodeAcl::CreatorAllWorldRead),
        _ => Err("expected open, creator or creator-read".to_owned()),
    }
}

/// Node naming scheme of the lock (shared with Curator or kazoo clients on the same path).
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scheme {
    /// zklock's own names.
    Native,
    /// Apache Curator's (InterProcessMutex, InterProcessReadWriteLock).
    Curator,
    /// kazoo's (Lock, ReadLock, WriteLock).
    Kazoo,
    /// go-zookeeper's (Lock): the mutex only.
    Go,
}

impl From<Scheme> for NameScheme {
    fn from(s: Scheme) -> NameScheme {
        match s {
            Scheme::Native => NameScheme::Native,
            Scheme::Curator => NameScheme::Curator,
            Scheme::Kazoo => NameScheme::Kazoo,
            Scheme::Go => NameScheme::Go,
        }
    }
}

/// Parses a non-negative number of seconds (fractions allowed).
pub(crate) fn parse_secs(s: &str) -> Result<Duration, String> {
    let secs: f64 = s
        .parse()
        .map_err(|_| format!("`{s}` is not a number of seconds"))?;
    Duration::try_from_secs_f64(secs).map_err(|_| format!("`{s}` is not a valid duration"))
}
