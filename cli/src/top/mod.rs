//! `zklock top ROOT`: every lock directory under ROOT (ROOT and its children) with
//! its holders (owner, age, token), queue depth, longest wait, naming scheme, and
//! whether it is on a deadlock cycle: a live full-screen view (`screen`), or the
//! same table printed once (`--once`).

mod listing;
mod rows;
mod screen;
mod table;

use crate::chroot::Chroot;
use crate::render::now_ms;
use lock_zookeeper_client::LockClient;
use std::process::ExitCode;

pub(crate) use table::SortBy;

/// `zklock top`'s arguments.
#[derive(clap::Args, Debug)]
pub(crate) struct TopArgs {
    /// The directory whose children are lock directories, e.g. /locks.
    pub(crate) root: String,
    /// Print the table once and exit (no terminal needed); without it, a live
    /// full-screen view (q quits; w, h, p sort by wait, hold, path; arrows or
    /// j/k select a lock, Enter follows it into its `ls` view, Esc goes back).
    #[arg(long)]
    once: bool,
    /// Sort by the longest wait, the longest hold, or the path (deadlocked
    /// locks always come first).
    #[arg(long, value_enum, default_value = "wait")]
    sort: SortBy,
}

/// Runs `zklock top`. It lists the root and watches it on the lock client's own
/// session (one session, not one more beside it for the listing).
pub(crate) async fn run(locks: &LockClient, args: TopArgs, chroot: &Chroot<'_>) -> ExitCode {
    let Some(raw) = lock_zookeeper_client::session_client(locks) else {
        // Closed under us (the session expired between the connect and now).
        return crate::fail(&lock_zookeeper_client::Error::Closed);
    };
    if !args.once {
        return match screen::run(&raw, locks, &args.root, args.sort).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(screen::Failure::Zk(e)) => crate::fail_at(&args.root, &e),
            Err(screen::Failure::Terminal(e)) => {
                crate::say(format_args!(
                    "cannot drive the terminal: {e} (--once needs none)"
                ));
                ExitCode::from(crate::exit::FAILURE)
            }
        };
    }
    let mut listing = match listing::Listing::read(&raw, locks, &args.root).await {
        Ok(listing) => listing,
        Err(e) => return crate::fail_at(&args.root, &e),
    };
    if let Err(e) = listing.confirm_deadlocks(locks).await {
        return crate::fail_at(&args.root, &e);
    }
    let mut rows = listing.rows();
    // Nothing listed: say so if ROOT itself is missing (a typo, most likely).
    let absent = if rows.is_empty() {
        chroot.nothing_at_in(&raw, &args.root).await
    } else {
        None
    };
    table::sort(&mut rows, args.sort);
    print!("{}", table::text(&args.root, &rows, now_ms()));
    if let Some(hint) = absent {
        crate::say(hint);
    }
    ExitCode::SUCCESS
}
