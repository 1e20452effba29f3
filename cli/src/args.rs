//! The command line: what `zklock` accepts (clap's derive).

use crate::exit::{EXIT_CODES, SEE_EXIT_CODES};
use crate::format::{AnyFormat, TextOrJson};
use crate::options::ConnArgs;
use crate::{doctor, exec, top};
use clap::{Parser, Subcommand};

/// Distributed locks on Apache ZooKeeper from the shell.
#[derive(Parser, Debug)]
#[command(name = "zklock", version, after_help = EXIT_CODES)]
pub(crate) struct Cli {
    #[command(flatten)]
    pub(crate) conn: ConnArgs,
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// The command line's definition: [`Cli`]'s, with the connection options kept
/// off the subcommands that do not connect (`completions`, `man`). They are
/// global (accepted before the subcommand or after it), and clap gives a global
/// option to every subcommand that has none of that name: these get one of
/// their own, hidden, that refuses any value (exit 2), and no environment
/// variable, so `ZKLOCK_ZK` set in the shell does not disturb them.
pub(crate) fn command() -> clap::Command {
    use clap::CommandFactory;
    let mut cli = Cli::command();
    for name in ["completions", "man"] {
        cli = cli.mut_subcommand(name, |sub| {
            let refused = |(id, long): (&'static str, &'static str)| {
                clap::Arg::new(id).long(long).hide(true).value_parser(
                    move |_: &str| -> Result<String, String> {
                        Err(format!("`zklock {name}` does not connect to ZooKeeper"))
                    },
                )
            };
            // The ids of [`ConnArgs`]' fields, and their flags.
            let options = [
                ("zk", "zk"),
                ("session_timeout", "session-timeout"),
                ("auth", "auth"),
                ("tls_ca", "tls-ca"),
                ("tls_cert", "tls-cert"),
                ("tls_key", "tls-key"),
            ];
            options
                .into_iter()
                .fold(sub, |sub, option| sub.arg(refused(option)))
        });
    }
    cli
}

#[derive(Subcommand, Debug)]
pub(crate) enum Command {
    /// Run CMD while holding the lock at PATH (exports ZKLOCK_NODE and ZKLOCK_TOKEN).
    ///
    /// CMD runs in a process group of its own (the terminal's foreground while it
    /// runs, so Ctrl-C and Ctrl-Z reach it directly). SIGHUP, SIGINT, SIGQUIT,
    /// SIGTERM, SIGUSR1, SIGUSR2 and SIGALRM sent to zklock are forwarded to that
    /// group; while waiting they give up (the node is deleted, exit 128+N). One
    /// ignored when zklock started (nohup) stays ignored, for CMD too. If
    /// zklock dies anyhow (kill -9, a crash, the OOM killer), CMD's group is killed
    /// at once, long before the session (and the lock) expires. Processes CMD
    /// leaves behind in its group are stopped (SIGTERM, then SIGKILL) before the
    /// lock is let go. If the connection to ZooKeeper goes down while CMD runs and
    /// does not come back quickly, CMD's group is stopped (SIGTERM, then SIGKILL)
    /// before the server could give the lock to another session, and zklock exits
    /// with 74; likewise at once if someone deletes the lock node.
    /// While it waits for the lock, on a terminal, zklock shows its position in
    /// the queue and the time waited on stderr, updated in place; elsewhere
    /// nothing, unless asked with --progress (a line per change).
    /// --owner ID records who the lock is taken for (`zklock ls` shows it, and
    /// `zklock deadlocks` follows it).
    // Written out: clap's usage on a missing argument names every option
    // given, ZKLOCK_ZK's value included, as if --zk were required.
    #[command(after_help = SEE_EXIT_CODES, override_usage = "zklock exec [OPTIONS] <PATH> -- <CMD>...")]
    Exec(exec::ExecArgs),
    /// Run CMD while leader of the election at PATH, as participant ID.
    ///
    /// Waits to be elected (on a terminal, showing its place among the candidates,
    /// as `exec` does in a lock's queue), then behaves as `exec` (ZKLOCK_NODE,
    /// ZKLOCK_TOKEN, signals, CMD stopped when the leadership is lost; same exit
    /// codes).
    #[command(after_help = SEE_EXIT_CODES, override_usage = "zklock elect [OPTIONS] <PATH> <ID> -- <CMD>...")]
    Elect(exec::ElectArgs),
    /// Ask the holders of the lock at PATH (or the owner of participant NODE) to let go.
    ///
    /// Writes Curator's revocation request into their nodes; holders that made
    /// their lock revocable (zklock's API, Curator) release. Prints the nodes asked.
    #[command(after_help = SEE_EXIT_CODES)]
    Revoke {
        /// A lock directory, or one participant node in it.
        target: String,
    },
    /// Break a stuck lock: delete its holder's node (or NODE's), without its release.
    ///
    /// For a holder that is wedged while its session lives. Prints who held it
    /// since when with which token (one line on stdout), then, with --force,
    /// deletes that node (exactly the one inspected) so that the next in line
    /// is granted. Without --force it refuses (exit 7): a node that exists
    /// means its owner's session is alive, and nothing records whether it would
    /// let go if asked: try `zklock revoke` first. Several holders (readers, a
    /// semaphore's permits) need --node; --node may also name a waiter.
    ///
    /// The broken holder hears it at once if it watches its node (`zklock exec`
    /// does: CMD is stopped, exit 74); others at their next fenced write (which
    /// fails), release or reconnect. Writes fenced by the token are safe across
    /// a break; unfenced ones of the broken holder may still land after it.
    ///
    /// --format json prints one object: {"path", "node", "held", "owner",
    /// "session", "ctime", "since", "age_ms", "token", "outcome" (deleted,
    /// already-gone, gone-uncertain, refused)}.
    #[command(after_help = SEE_EXIT_CODES)]
    Break {
        /// The lock's directory, e.g. /locks/backup.
        path: String,
        /// The participant to break: its node name (as `zklock ls` shows it) or
        /// full path; a holder or a waiter.
        #[arg(long, value_name = "NAME")]
        node: Option<String>,
        /// Delete the node (without it, only print what would be broken).
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        output: TextOrJson,
    },
    /// List the holders and waiters of the lock at PATH, in queue order.
    ///
    /// Columns: queue position, holds/waits, kind (write, read, semaphore,
    /// leader), owner, session, age, fencing token, naming scheme, the positions a
    /// waiter waits for, node name. Works on locks of Curator and kazoo clients too.
    /// A lock nobody holds, or a PATH that does not exist, lists nobody (exit 0):
    /// ZooKeeper keeps no record of a lock beyond its participants. A PATH that
    /// does not exist is said to, with its first missing ancestor (a typo?).
    ///
    /// --json prints one object: {"path", "foreign", "holders": [P...],
    /// "waiters": [P...]}, each P {"position", "node", "path", "kind", "scheme",
    /// "sequence", "owner" (or null), "session" (hex string), "ctime" (ms since
    /// the epoch), "age_ms" (or null), "token", "waits_for" (node names),
    /// "owner_waits_at" (full paths), "data"}.
    #[command(after_help = SEE_EXIT_CODES)]
    Ls {
        /// The lock's directory, e.g. /locks/backup.
        path: String,
        #[command(flatten)]
        output: TextOrJson,
    },
    /// Find deadlocks among the locks under ROOT (ROOT and its direct children).
    ///
    /// A deadlock is a cycle of owners (`exec --owner`, or the API's owners) each
    /// holding a lock and waiting for one another's. Every cycle is confirmed by
    /// reading it twice. Exit 0 when none is found, 4 when some are.
    ///
    /// Text: one table per cycle, nodes in wait order (each waits for the next,
    /// the last for the first). --json: {"root", "cycles": [{"owners": [...],
    /// "nodes": [{"node", "lock", "owner", "holds", "session", "token", "ctime",
    /// "age_ms"}...]}...]}. --dot: a Graphviz digraph, one cluster per cycle
    /// (`zklock deadlocks /locks --dot | dot -Tsvg > deadlocks.svg`).
    #[command(after_help = SEE_EXIT_CODES)]
    Deadlocks {
        /// The directory whose children are lock directories, e.g. /locks.
        root: String,
        #[command(flatten)]
        output: AnyFormat,
    },
    /// Show every lock under ROOT (ROOT and its direct children): holders, queues, deadlocks.
    ///
    /// One row per lock directory with holders or waiters: path, recipe (the
    /// kinds of its nodes), holders (owner, age, fencing token), number of
    /// waiters, the longest wait, naming scheme, and DEADLOCK when one of its
    /// nodes is on a deadlock cycle (`zklock deadlocks` tells which). Deadlocked
    /// locks come first, then the longest wait (--sort hold: the longest hold).
    /// --once prints the table once (for scripts and CI logs); a deadlock it
    /// shows was seen in two readings, as `zklock deadlocks` confirms them.
    ///
    /// The live view reads every lock once, then only the locks a watch on ROOT
    /// says changed (a burst of changes is one refresh, at most ten a second);
    /// ages tick without reading. j/k or the arrows select a lock, Enter follows
    /// it into its `zklock ls` view (kept current), Esc or Backspace goes back.
    #[command(after_help = SEE_EXIT_CODES)]
    Top(top::TopArgs),
    /// Check every server of --zk for settings that make locks unsafe, and say how to fix them.
    ///
    /// For each server: reachable, mode and version (`srvr`), which four-letter
    /// words it allows, its settings (`conf`: tickTime, syncLimit, min/max
    /// session timeout; also the AdminServer's with --admin-port), the session
    /// timeout it grants for --session-timeout, TCP_NODELAY on our connection,
    /// and the lag rule: a server cut off from the ensemble answers its
    /// clients for up to syncLimit × tickTime, so the session timeout must
    /// exceed 1.5 × (syncLimit × tickTime + tickTime/2), and span two ticks.
    /// Nothing is guessed: a refused `conf` leaves the rule unchecked. Exit 0
    /// when every check passed, 5 when something is unsafe, 6 when something
    /// could not be checked, 69 when no server answered, 2 when the connect
    /// string's chroot does not exist on the servers (the report still shown).
    ///
    /// --json prints one object: {"connect", "session_timeout_ms", "verdict"
    /// (safe, unsafe, unchecked, unreachable, no-chroot), "exit_code", "probed_words",
    /// "servers": [{"server", "address", "reachable", "mode", "version",
    /// "allowed_words", "refused_words", "conf" ({"tick_time_ms", "sync_limit",
    /// "min_session_timeout_ms", "max_session_timeout_ms"} or null),
    /// "conf_error", "admin", "negotiated_session_timeout_ms", "tcp_nodelay",
    /// "lag_bound_ms", "hazards": [{"kind", "session_timeout_ms",
    /// "safe_session_timeout_ms", "message"}], "findings": [{"severity"
    /// (unsafe, unchecked, note), "message"}]}]}.
    #[command(after_help = SEE_EXIT_CODES)]
    Doctor(doctor::DoctorArgs),
    /// Print a shell completion script for zklock to stdout.
    ///
    /// bash: `zklock completions bash > ~/.local/share/bash-completion/completions/zklock`;
    /// zsh: `zklock completions zsh > "${fpath[1]}/_zklock"`; fish:
    /// `zklock completions fish > ~/.config/fish/completions/zklock.fish`.
    #[command(after_help = SEE_EXIT_CODES)]
    Completions {
        /// The shell to complete for.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print zklock's manual page (roff) to stdout.
    ///
    /// `zklock man > ~/.local/share/man/man1/zklock.1`, or read it at once with
    /// `zklock man | man -l -`.
    #[command(after_help = SEE_EXIT_CODES)]
    Man,
    /// Print the current leader of the election at PATH: ID, node and token, tab-separated.
    #[command(after_help = SEE_EXIT_CODES)]
    Leader {
        /// The election's directory.
        path: String,
        /// Keep running and print a line at every change ("-" when nobody leads).
        #[arg(long)]
        watch: bool,
    },
}
