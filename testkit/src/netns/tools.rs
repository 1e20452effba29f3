//! The programs a [`NetLab`](super::NetLab) drives (`ip`, `nft`), found once, and
//! the privileges it needs, checked before anything is made.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::error::{Error, Result};

/// Where root's tools live even when `PATH` lacks them (a non-login shell).
const SBIN_DIRS: &[&str] = &["/usr/sbin", "/sbin", "/usr/bin", "/bin"];
/// `CAP_NET_ADMIN`: links, addresses, packet filters.
const CAP_NET_ADMIN: u32 = 12;
/// `CAP_SYS_ADMIN`: `ip netns add` bind-mounts the namespace.
const CAP_SYS_ADMIN: u32 = 21;

/// The full paths of `ip` and `nft`.
#[derive(Debug, Clone)]
pub(crate) struct Tools {
    pub(crate) ip: PathBuf,
    pub(crate) nft: PathBuf,
}

impl Tools {
    /// Finds both programs and checks the capabilities, or says what is missing.
    pub(crate) fn locate() -> Result<Tools> {
        let ip =
            find("ip").ok_or_else(|| missing("`ip` (Debian package iproute2) is not installed"))?;
        let nft = find("nft")
            .ok_or_else(|| missing("`nft` (Debian package nftables) is not installed"))?;
        let caps = effective_capabilities().map_err(|why| missing(&why))?;
        for (bit, name) in [
            (CAP_NET_ADMIN, "CAP_NET_ADMIN"),
            (CAP_SYS_ADMIN, "CAP_SYS_ADMIN"),
        ] {
            if caps & (1 << bit) == 0 {
                return Err(missing(&format!(
                    "this process lacks {name} (run the tests as root)"
                )));
            }
        }
        Ok(Tools { ip, nft })
    }

    /// Runs `ip args...`.
    pub(crate) fn ip(&self, args: &[&str]) -> Result<String> {
        run(Command::new(&self.ip).args(args), None)
    }

    /// Runs `nft -f -` inside `netns` with `script` on stdin.
    pub(crate) fn nft_script(&self, netns: &str, script: &str) -> Result<()> {
        let mut command = Command::new(&self.ip);
        command
            .args(["netns", "exec", netns])
            .arg(&self.nft)
            .args(["-f", "-"]);
        run(&mut command, Some(script)).map(drop)
    }
}

fn missing(what: &str) -> Error {
    Error::NamespacesUnavailable {
        missing: what.to_string(),
    }
}

fn find(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(SBIN_DIRS.iter().map(PathBuf::from))
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// `CapEff` of this process, from `/proc/self/status`.
fn effective_capabilities() -> std::result::Result<u64, String> {
    let status = std::fs::read_to_string("/proc/self/status")
        .map_err(|e| format!("cannot read /proc/self/status ({e}): not Linux?"))?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("CapEff:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .ok_or_else(|| "no CapEff line in /proc/self/status".to_string())
}

/// Runs a command to completion; its stdout, or [`Error::NetworkCommand`].
pub(crate) fn run(command: &mut Command, stdin: Option<&str>) -> Result<String> {
    let line = describe(command);
    let mut child = command
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Error::io(format!("running `{line}`"), e))?;
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(text.as_bytes())
            .map_err(|e| Error::io(format!("writing to `{line}`"), e))?;
    }
    let output = child
        .wait_with_output()
        .map_err(|e| Error::io(format!("waiting for `{line}`"), e))?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(Error::NetworkCommand {
            command: line,
            status: output.status.to_string(),
            stderr: String::from_utf8_lossy(&output.stderr).trim().to_string(),
        })
    }
}

fn describe(command: &Command) -> String {
    std::iter::once(command.get_program())
        .chain(command.get_args())
        .map(|s| s.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ")
}
