//! A throwaway PostgreSQL server on loopback: the resource a lock's fencing
//! token protects, in tests that take it end to end.
//!
//! Each [`Postgres`] is its own cluster: `initdb` into a temporary directory,
//! `postgres` listening on 127.0.0.1 at a free port (and on a Unix socket in
//! that directory, nowhere else), superuser `postgres` with `trust`
//! authentication. PostgreSQL refuses to run as root, so when the tests do
//! (CI containers), the cluster belongs to the unprivileged `postgres` user
//! that Debian's package creates, and its programs run through `setpriv`.
//! The server runs behind the same watchdog as ZooKeeper's JVMs: it dies with
//! the test process, however that ends.

use std::ffi::OsString;
use std::net::{Ipv4Addr, SocketAddr};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use crate::error::{Error, Result};
use crate::process::Jvm;
use crate::server::{POLL, START_ATTEMPTS};
use crate::util::{self, reserve_port, PortGuard, TempDir};

/// Where Debian's packages put each major version: `<dir>/<version>/bin`.
const DEBIAN_POSTGRES_DIR: &str = "/usr/lib/postgresql";
/// Names a directory with `postgres`, `initdb`, `pg_isready` and `psql`,
/// used instead of the newest version under [`DEBIAN_POSTGRES_DIR`].
const POSTGRES_BINDIR_ENV: &str = "PG_BINDIR";
/// The superuser (and database) the cluster is created with.
const SUPERUSER: &str = "postgres";
/// The unprivileged account that runs the cluster when the tests run as root.
const SERVICE_USER: &str = "postgres";
const PROGRAMS: [&str; 4] = ["postgres", "initdb", "pg_isready", "psql"];
const STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a dropped server has to shut down before it is SIGKILLed.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);
const LOG_TAIL_LINES: usize = 30;

/// A running PostgreSQL server, stopped and its directory removed on drop.
///
/// ```no_run
/// let db = lock_testkit::Postgres::start()?;           // 127.0.0.1:<free port>
/// let _url = db.url();                                 // postgresql://postgres@127.0.0.1:40123/postgres
/// db.psql("CREATE TABLE t (id int PRIMARY KEY, v text)")?;
/// assert_eq!(db.psql("INSERT INTO t VALUES (1, 'a') RETURNING v")?, "a");
/// # Ok::<(), lock_testkit::Error>(())
/// ```
#[derive(Debug)]
pub struct Postgres {
    // Field order is drop order: the server dies, then its port is released
    // and its directory removed.
    server: Jvm,
    port: PortGuard,
    dir: TempDir,
    bin: PathBuf,
}

impl Postgres {
    /// Creates a cluster in a temporary directory and starts its server; returns
    /// once it accepts connections (about a second here, most of it `initdb`).
    ///
    /// # Errors
    /// [`Error::PostgresNotInstalled`] without the programs (or, as root, without
    /// the `postgres` account to run them as); [`Error::Postgres`] if `initdb`
    /// fails or the server exits while starting, with the tail of its log;
    /// [`Error::StartTimeout`] if it never accepts connections.
    pub fn start() -> Result<Postgres> {
        let bin = locate_in(
            std::env::var_os(POSTGRES_BINDIR_ENV),
            Path::new(DEBIAN_POSTGRES_DIR),
        )?;
        let mut dir = TempDir::new("pg-testkit")
            .map_err(|e| Error::io("creating a temporary directory", e))?;
        let account = run_as(dir.path())?;
        let log = dir.path().join("postgres.log");
        let initdb = account
            .command(&bin.join("initdb"), dir.path())
            .arg("--pgdata")
            .arg(dir.path().join("data"))
            .args(["--username", SUPERUSER, "--auth=trust", "--encoding=UTF8"])
            .args(["--no-locale", "--no-sync"])
            .output()
            .map_err(|e| Error::io("running initdb", e))?;
        if !initdb.status.success() {
            dir.keep();
            return Err(Error::Postgres {
                context: format!(
                    "initdb in {} failed ({})",
                    dir.path().display(),
                    initdb.status
                ),
                detail: output_text(&initdb),
            });
        }
        let mut attempt = 0;
        loop {
            attempt += 1;
            let port = reserve_port()?;
            let (program, args) =
                account.argv(&bin.join("postgres"), server_args(dir.path(), port.port()));
            let cleanup = (!util::keep_dirs()).then_some(dir.path());
            let mut server = Jvm::spawn(&program, &args, dir.path(), &log, cleanup)?;
            match wait_accepting(&mut server, &bin, port.port(), &log) {
                Ok(()) => {
                    return Ok(Postgres {
                        server,
                        port,
                        dir,
                        bin,
                    })
                }
                Err(_) if attempt < START_ATTEMPTS && util::log_shows_bind_failure(&log) => {
                    continue
                }
                Err(e) => {
                    server.kill();
                    dir.keep();
                    return Err(e);
                }
            }
        }
    }

    /// The connection URL: `postgresql://postgres@127.0.0.1:<port>/postgres`
    /// (libpq, psql, tokio-postgres and most drivers take it).
    pub fn url(&self) -> String {
        format!(
            "postgresql://{SUPERUSER}@127.0.0.1:{}/{SUPERUSER}",
            self.port()
        )
    }

    /// The server's port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port.port()
    }

    /// The server's address, `127.0.0.1:<port>`.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.port()))
    }

    /// The `psql` of the same installation, for scripts:
    /// `"$PSQL" "$URL" -c '...'`.
    pub fn psql_path(&self) -> PathBuf {
        self.bin.join("psql")
    }

    /// Runs `sql` (one or more statements) with `psql`, stopping at the first
    /// error, and returns what it printed: unaligned rows without headers, one
    /// per line (`|` between columns), trailing newline removed.
    ///
    /// # Errors
    /// [`Error::Postgres`] with psql's messages if a statement fails.
    pub fn psql(&self, sql: &str) -> Result<String> {
        let out = Command::new(self.psql_path())
            .args(["--no-psqlrc", "--quiet", "--no-align", "--tuples-only"])
            .args(["--set", "ON_ERROR_STOP=1", "--dbname"])
            .arg(self.url())
            .arg("--command")
            .arg(sql)
            .output()
            .map_err(|e| Error::io("running psql", e))?;
        if !out.status.success() {
            return Err(Error::Postgres {
                context: format!("psql -c {sql:?} ({})", out.status),
                detail: output_text(&out),
            });
        }
        let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.truncate(text.trim_end_matches('\n').len());
        Ok(text)
    }

    /// The cluster's directory (data in `data/`, the server log in
    /// `postgres.log`); removed on drop unless `ZK_TESTKIT_KEEP_DIRS` is set.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        // Immediate shutdown: the postmaster stops its backends and exits after
        // them, so none still writes into the directory being removed.
        if let Some(pid) = self.server.pid() {
            // The shell's builtin `kill`: procps may not be installed.
            let _ = Command::new("/bin/sh")
                .args(["-c", "kill -QUIT \"$1\"", "sh", &pid.to_string()])
                .status();
            util::poll(SHUTDOWN_GRACE, POLL, || self.server.exit_status());
        }
        self.server.kill();
    }
}

/// The server's command line: loopback only, a socket in `dir`, no durability.
fn server_args(dir: &Path, port: u16) -> Vec<OsString> {
    let settings = [
        "listen_addresses=127.0.0.1".to_owned(),
        format!("unix_socket_directories={}", dir.display()),
        "fsync=off".to_owned(),
        "synchronous_commit=off".to_owned(),
        "full_page_writes=off".to_owned(),
        "shared_buffers=16MB".to_owned(),
    ];
    let mut args: Vec<OsString> = vec!["-D".into(), dir.join("data").into()];
    args.extend(["-p".into(), port.to_string().into()]);
    for setting in settings {
        args.extend(["-c".into(), setting.into()]);
    }
    args
}

/// Waits until the server accepts connections, or fails with its log.
fn wait_accepting(server: &mut Jvm, bin: &Path, port: u16, log: &Path) -> Result<()> {
    let log_tail = || {
        format!(
            "log {}:\n{}",
            log.display(),
            util::tail(log, LOG_TAIL_LINES)
        )
    };
    let port_arg = port.to_string();
    let isready = ["--quiet", "--host", "127.0.0.1", "--port", &port_arg];
    let accepting = util::poll(STARTUP_TIMEOUT, POLL, || {
        if let Some(status) = server.exit_status() {
            return Some(Err(Error::Postgres {
                context: format!("the server on port {port} exited while starting ({status})"),
                detail: log_tail(),
            }));
        }
        let ready = Command::new(bin.join("pg_isready"))
            .args(isready)
            .args(["--username", SUPERUSER, "--dbname", SUPERUSER])
            .status();
        match ready {
            Ok(ready) => ready.success().then_some(Ok(())),
            Err(e) => Some(Err(Error::io("running pg_isready", e))),
        }
    });
    accepting.unwrap_or_else(|| {
        Err(Error::StartTimeout {
            what: format!("PostgreSQL on port {port}"),
            timeout: STARTUP_TIMEOUT,
            detail: log_tail(),
        })
    })
}

/// The directory with PostgreSQL's programs: `bindir_env` (`PG_BINDIR`), else the
/// newest major version under `debian_dir`.
fn locate_in(bindir_env: Option<OsString>, debian_dir: &Path) -> Result<PathBuf> {
    let complete = |dir: &Path| PROGRAMS.iter().all(|p| dir.join(p).is_file());
    if let Some(dir) = bindir_env.filter(|d| !d.is_empty()) {
        let dir = PathBuf::from(dir);
        return if complete(&dir) {
            Ok(dir)
        } else {
            Err(Error::PostgresNotInstalled {
                searched: format!(
                    "{POSTGRES_BINDIR_ENV}={} lacks one of {PROGRAMS:?}",
                    dir.display()
                ),
            })
        };
    }
    let newest = std::fs::read_dir(debian_dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            let major: f64 = name.parse().ok()?; // "15", or "9.6" before 10
            let bin = entry.path().join("bin");
            complete(&bin).then_some((major, bin))
        })
        .max_by(|a, b| a.0.total_cmp(&b.0));
    newest
        .map(|(_, bin)| bin)
        .ok_or_else(|| Error::PostgresNotInstalled {
            searched: format!(
                "no {}/<version>/bin with {PROGRAMS:?}, and {POSTGRES_BINDIR_ENV} is not set",
                debian_dir.display()
            ),
        })
}

/// Who runs the cluster: this process's user, or (as root, which PostgreSQL
/// refuses) the `postgres` account, given `dir` first.
enum Account {
    Current,
    Service { uid: u32, gid: u32 },
}

/// Decides the [`Account`] from the owner of the just-created `dir` (our
/// effective user: std has no `geteuid`).
fn run_as(dir: &Path) -> Result<Account> {
    let owner = std::fs::metadata(dir)
        .map_err(|e| Error::io(format!("reading {}", dir.display()), e))?
        .uid();
    if owner != 0 {
        return Ok(Account::Current);
    }
    let id = |flag: &str| -> Option<u32> {
        let out = Command::new("id")
            .args([flag, SERVICE_USER])
            .output()
            .ok()?;
        String::from_utf8(out.stdout).ok()?.trim().parse().ok()
    };
    let (Some(uid), Some(gid)) = (id("-u"), id("-g")) else {
        return Err(Error::PostgresNotInstalled {
            searched: format!(
                "the tests run as root, which PostgreSQL refuses, and there is no \
                 `{SERVICE_USER}` user to run it as (the package creates it)"
            ),
        });
    };
    std::os::unix::fs::chown(dir, Some(uid), Some(gid))
        .map_err(|e| Error::io(format!("giving {} to {SERVICE_USER}", dir.display()), e))?;
    Ok(Account::Service { uid, gid })
}

impl Account {
    /// `program args...` as this account: through `setpriv` for the service account.
    fn argv(&self, program: &Path, args: Vec<OsString>) -> (PathBuf, Vec<OsString>) {
        match self {
            Account::Current => (program.to_path_buf(), args),
            Account::Service { uid, gid } => {
                let mut all: Vec<OsString> = vec![
                    format!("--reuid={uid}").into(),
                    format!("--regid={gid}").into(),
                    "--clear-groups".into(),
                    "--".into(),
                    program.into(),
                ];
                all.extend(args);
                (PathBuf::from("setpriv"), all)
            }
        }
    }

    /// A `Command` running `program` as this account, in `dir`.
    fn command(&self, program: &Path, dir: &Path) -> Command {
        let (program, args) = self.argv(program, Vec::new());
        let mut command = Command::new(program);
        command.args(args).current_dir(dir);
        command
    }
}

/// A failed command's stderr and stdout, for an error message.
fn output_text(out: &Output) -> String {
    let mut text = String::from_utf8_lossy(&out.stderr).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stdout));
    text.trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_programs(dir: &Path) {
        std::fs::create_dir_all(dir).unwrap();
        for program in PROGRAMS {
            std::fs::write(dir.join(program), "").unwrap();
        }
    }

    #[test]
    fn finds_the_newest_complete_version() {
        let root = TempDir::new("pg-locate").unwrap();
        for version in ["9.6", "13", "16"] {
            with_programs(&root.path().join(version).join("bin"));
        }
        // An incomplete newer install does not count.
        std::fs::create_dir_all(root.path().join("17/bin")).unwrap();
        std::fs::write(root.path().join("17/bin/psql"), "").unwrap();
        assert_eq!(
            locate_in(None, root.path()).unwrap(),
            root.path().join("16/bin")
        );
    }

    #[test]
    fn a_missing_install_names_the_fix() {
        let root = TempDir::new("pg-locate").unwrap();
        let err = locate_in(None, root.path()).unwrap_err();
        assert!(matches!(err, Error::PostgresNotInstalled { .. }), "{err}");
        let message = err.to_string();
        assert!(
            message.contains("apt-get install -y --no-install-recommends postgresql"),
            "{message}"
        );
        assert!(message.contains("scripts/test.sh"), "{message}");

        let err = locate_in(Some(root.path().into()), Path::new("/nonexistent")).unwrap_err();
        assert!(err.to_string().contains("PG_BINDIR="), "{err}");
        with_programs(root.path());
        assert_eq!(
            locate_in(Some(root.path().into()), Path::new("/nonexistent")).unwrap(),
            root.path()
        );
    }
}
