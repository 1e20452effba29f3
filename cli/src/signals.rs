//! The signals whose default action would end zklock, caught and merged into one
//! stream of signal numbers: zklock handles each of them (gives up a wait with
//! 128+N, forwards it to CMD's process group) instead of dying and orphaning CMD
//! or leaving its queue node behind.
//!
//! A signal zklock was started with ignored (`nohup` ignores SIGHUP, a shell's
//! background job SIGINT and SIGQUIT) stays ignored, as shells leave it: zklock
//! does not catch it, so CMD inherits it ignored too.

use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::mpsc;

/// Hang-up (a closed terminal, an ssh drop), Ctrl-C, Ctrl-\, `kill`, the two
/// user signals and the alarm: every catchable signal that terminates a process by
/// default and is sent by people or their tools (the rest, SIGKILL and the
/// crash signals, end zklock; CMD's guard then kills CMD's group).
pub(crate) const ENDING: [SignalKind; 7] = [
    SignalKind::hangup(),
    SignalKind::interrupt(),
    SignalKind::quit(),
    SignalKind::terminate(),
    SignalKind::user_defined1(),
    SignalKind::user_defined2(),
    SignalKind::alarm(),
];

/// Deliveries of a set of signals, in arrival order.
pub(crate) struct Signals {
    deliver: mpsc::UnboundedSender<i32>,
    delivered: mpsc::UnboundedReceiver<i32>,
}

impl Signals {
    /// Catches those of `kinds` not ignored since zklock started, from now on
    /// (inside the runtime). Fails if one cannot be caught, which would leave
    /// its default action (death) in place.
    pub(crate) fn catch(kinds: &[SignalKind]) -> std::io::Result<Signals> {
        let (deliver, delivered) = mpsc::unbounded_channel();
        let mut signals = Signals { deliver, delivered };
        for &kind in kinds {
            if !ignored_at_start(kind) {
                signals.also(kind)?;
            }
        }
        Ok(signals)
    }

    /// Catches `kind` too, ignored or not.
    pub(crate) fn also(&mut self, kind: SignalKind) -> std::io::Result<()> {
        let mut stream = signal(kind)?;
        let deliver = self.deliver.clone();
        tokio::spawn(async move {
            while stream.recv().await.is_some() {
                if deliver.send(kind.as_raw_value()).is_err() {
                    break;
                }
            }
        });
        Ok(())
    }

    /// The next signal's number (never returns if none can come any more).
    pub(crate) async fn next(&mut self) -> i32 {
        match self.delivered.recv().await {
            Some(number) => number,
            None => std::future::pending().await,
        }
    }
}

/// Whether `kind` was ignored (SIG_IGN) when the process started: read, on the
/// first call, from Linux's /proc/self/status, before zklock installs anything
/// (a disposition exec left is either ignored or the default); elsewhere taken
/// as not ignored.
pub(crate) fn ignored_at_start(kind: SignalKind) -> bool {
    use std::sync::OnceLock;
    static IGNORED: OnceLock<u64> = OnceLock::new();
    let ignored = *IGNORED.get_or_init(|| {
        std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|status| {
                let mask = status.lines().find_map(|l| l.strip_prefix("SigIgn:"))?;
                u64::from_str_radix(mask.trim(), 16).ok()
            })
            .unwrap_or(0)
    });
    let number = kind.as_raw_value();
    (1..=64).contains(&number) && ignored & (1 << (number - 1)) != 0
}
