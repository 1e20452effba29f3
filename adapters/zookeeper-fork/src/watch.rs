use consts::{KeeperState, WatchedEventType};
use proto::ReadFrom;
use std::io;
use std::sync::mpsc::{self, Receiver, Sender};
use zookeeper::RawResponse;

/// Represents a change on the ZooKeeper that a `Watcher` is able to respond to.
///
/// The `WatchedEvent` includes exactly what happened, the current state of the ZooKeeper, and the
/// path of the znode that was involved in the event.
#[derive(Clone, Debug)]
pub struct WatchedEvent {
    /// The trigger that caused the watch to hit.
    pub event_type: WatchedEventType,
    /// The current state of ZooKeeper (and the client's connection to it).
    pub keeper_state: KeeperState,
    /// The path of the znode that was involved. This will be `None` for session-related triggers.
    pub path: Option<String>,
}

/// The interface for handling the events of the watches a client sets.
pub trait Watcher: Send {
    /// Receive the triggered event.
    fn handle(&self, event: WatchedEvent);
}

impl<F> Watcher for F
where
    F: Fn(WatchedEvent) + Send,
{
    fn handle(&self, event: WatchedEvent) {
        self(event)
    }
}

/// Delivers the server's watch events to the client's `Watcher`, on a thread of
/// its own.
pub struct ZkWatch<W: Watcher> {
    watcher: W,
    chroot: Option<String>,
    rx: Receiver<RawResponse>,
}

impl<W: Watcher> ZkWatch<W> {
    pub fn new(watcher: W, chroot: Option<String>) -> (Self, Sender<RawResponse>) {
        trace!("ZkWatch::new");
        let (tx, rx) = mpsc::channel();

        let watch = ZkWatch {
            watcher: watcher,
            chroot: chroot,
            rx,
        };
        (watch, tx)
    }

    pub fn run(self) -> io::Result<()> {
        while let Ok(response) = self.rx.recv() {
            self.process_message(response);
        }

        Ok(())
    }

    fn process_message(&self, response: RawResponse) {
        info!("Event thread got response {:?}", response.header);
        let mut data = response.data;
        match response.header.err {
            0 => match WatchedEvent::read_from(&mut data) {
                Ok(mut event) => {
                    self.cut_chroot(&mut event);
                    debug!("{:?}", event);
                    self.watcher.handle(event)
                }
                Err(e) => error!("Failed to parse WatchedEvent {:?}", e),
            },
            e => error!("WatchedEvent.error {:?}", e),
        }
    }

    fn cut_chroot(&self, event: &mut WatchedEvent) {
        if let Some(ref chroot) = self.chroot {
            if event.path.is_some() {
                event.path = Some(event.path.as_ref().unwrap()[chroot.len()..].to_owned());
            }
        }
    }
}
