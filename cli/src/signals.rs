//! The signals whose default action would end zklock, caught and merged into one
//! stream of signal numbers: zklock handles each of them (gives up a wait with
//! 128+N, forwards it to CMD's process group) instead of dying and orphaning CMD
//! or leaving its queue node behind.

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
    delivered: mpsc::UnboundedReceiver<i32>,
}

impl Signals {
    /// Catches `kinds` from now on (inside the runtime). Fails if one cannot be
    /// caught, which would leave its default action (death) in place.
    pub(crate) fn catch(kinds: &[SignalKind]) -> std::io::Result<Signals> {
        let (deliver, delivered) = mpsc::unbounded_channel();
        for &kind in kinds {
            let mut stream = signal(kind)?;
            let deliver = deliver.clone();
            tokio::spawn(async move {
                while stream.recv().await.is_some() {
                    if deliver.send(kind.as_raw_value()).is_err() {
                        break;
                    }
                }
            });
        }
        Ok(Signals { delivered })
    }

    /// The next signal's number (never returns if none can come any more).
    pub(crate) async fn next(&mut self) -> i32 {
        match self.delivered.recv().await {
            Some(number) => number,
            None => std::future::pending().await,
        }
    }
}
