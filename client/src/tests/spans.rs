//! Tracing: an acquisition in its own span, with its events inside it.

use super::recorder::Recorder;
use super::{connected, poll_once, queue_at, ready, requests, DISCONNECTED, SID};
use crate::*;
use lock_core::{Op, Reply, Stat};
use std::pin::pin;
use std::time::Instant;

#[test]
fn an_acquisition_is_traced_in_its_own_span() {
    let recorder = std::sync::Arc::new(Recorder::default());
    tracing::subscriber::with_default(recorder.clone(), || {
        let (locks, mut link) = connected();
        let worker = locks.with_owner("worker-7");
        // Queued behind a participant of another session, then granted.
        let mutex = worker.mutex("/locks/traced");
        let mut lock = pin!(mutex.lock());
        assert!(poll_once(lock.as_mut()).is_pending());
        let sent = requests(&mut link);
        let now = Instant::now();
        let other = "zkl-00000000000000000000000000000001-write-0000000001";
        let node = queue_at(&mut link, &sent, 42, vec![other.to_owned()], now);
        let peer = format!("/locks/traced/{other}");
        let answer = |link: &mut Link, peer_gone: bool| {
            for r in requests(link) {
                let reply = match &r.op {
                    Op::GetData { path, .. } if *path == peer && peer_gone => {
                        Err(lock_core::ZkError::NoNode)
                    }
                    Op::GetData { path, .. } => {
                        let owner = if *path == node { SID } else { 0x99 };
                        Ok(Reply::Data {
                            data: Vec::new(),
                            stat: Stat {
                                czxid: 42,
                                ephemeral_owner: owner,
                                ..Stat::default()
                            },
                        })
                    }
                    Op::GetChildren { .. } => Ok(Reply::Children(vec![node
                        .rsplit('/')
                        .next()
                        .unwrap()
                        .to_owned()])),
                    Op::RemoveWatch { .. } => Ok(Reply::WatchRemoved),
                    Op::Sync { .. } => Ok(Reply::Synced),
                    other => panic!("unexpected {other:?}"),
                };
                link.handle_reply(r.id, reply, now);
            }
        };
        answer(&mut link, false);
        link.handle_watch(peer.clone(), lock_core::WatchKind::NodeDeleted, now);
        answer(&mut link, true);
        let guard = ready(lock.as_mut());
        link.handle_session(DISCONNECTED, now);
        assert_eq!(guard.status(), LockStatus::Suspended);
    });
    let lines = recorder.lines.lock().unwrap().clone();
    let text = lines.join("\n");
    let span = lines
        .iter()
        .find(|l| l.contains("zklock.lock"))
        .unwrap_or_else(|| panic!("no acquisition span:\n{text}"));
    assert!(span.contains("path=/locks/traced"), "{span}");
    assert!(span.contains("recipe=Write"), "{span}");
    assert!(span.contains("owner=worker-7"), "{span}");
    let id: u64 = span["span#".len()..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with(&format!("record#{id} lock="))),
        "{text}"
    );
    let mine = |what: &str| {
        lines
            .iter()
            .any(|l| l.starts_with(&format!("event#{id} ")) && l.contains(what))
    };
    for what in [
        "message=created node=/locks/traced/",
        "message=queued behind=/locks/traced/zkl-00000000000000000000000000000001-write-0000000001",
        "message=acquired",
        "token=42",
        "message=suspended",
    ] {
        assert!(mine(what), "no {what:?} in the span's events:\n{text}");
    }
    assert!(
        lines
            .iter()
            .any(|l| l.contains("Suspended") && l.starts_with("event#0")),
        "the connection change is logged too:\n{text}"
    );
}
