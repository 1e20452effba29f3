use super::*;
use crate::proto::Reply;

fn config() -> Config {
    let mut c = Config::new(Duration::from_secs(3), 0);
    c.sync_interval = Some(Duration::from_millis(300));
    c
}

fn ms(n: u64) -> Timestamp {
    Timestamp::from_millis(n)
}

const SYNC: Op = Op::Sync {
    path: String::new(),
};

fn read() -> Op {
    Op::read("/a")
}

fn answer(c: &mut Contact, id: u64, op: &Op, sent: u64, answered: u64) -> bool {
    let config = config();
    c.on_sent(&config, RequestId(id), op, ms(sent));
    c.on_reply::<Reply>(&config, RequestId(id), &Ok(Reply::Synced), ms(answered))
}

/// Also on a member whose tick is longer than a third of the timeout: two
/// ticks would be a longer bound, so it changes nothing.
#[test]
fn a_leader_answer_proves_only_requests_answered_a_touch_bound_before_it_was_sent() {
    let config = config(); // touch bound 1 s
    let long_tick = ServerRole::Member {
        tick_time: Duration::from_secs(2),
    };
    for learned in [None, Some(long_tick)] {
        let mut c = Contact::default();
        c.on_connected(ms(0));
        if let Some(role) = learned {
            c.on_server_learned(role, ms(0));
        }
        assert!(!answer(&mut c, 1, &read(), 100, 110));
        assert_eq!(c.touch_bound(&config), config.touch_bound());
        // Sent 890 ms after the read's answer: too soon to prove it.
        assert!(!answer(&mut c, 2, &SYNC, 1000, 1010));
        assert_eq!(c.proven, Some(ms(0)));
        // Sent 1 s after it: the leader heard of the read, sent at 100.
        assert!(answer(&mut c, 3, &SYNC, 1110, 1120));
        assert_eq!(c.proven, Some(ms(100)));
        assert_eq!(c.trusted_until(&config), Some(ms(100 + 3000 - 300)));
        assert_eq!(c.suspend_at(&config), Some(ms(100 + 3000 - 300 - 300)));
    }
}

#[test]
fn connection_errors_are_not_answers() {
    let config = config();
    let mut c = Contact::default();
    c.on_connected(ms(0));
    c.on_sent(&config, RequestId(1), &read(), ms(100));
    let lost: Result<Reply, _> = Err(ZkError::ConnectionLoss);
    assert!(!c.on_reply(&config, RequestId(1), &lost, ms(110)));
    assert!(!answer(&mut c, 2, &SYNC, 1200, 1210));
    assert_eq!(c.proven, Some(ms(0)));
    // A server error is an answer.
    c.on_sent(&config, RequestId(3), &read(), ms(1400));
    assert!(!c.on_reply::<Reply>(&config, RequestId(3), &Err(ZkError::NoNode), ms(1410)));
    assert!(answer(&mut c, 4, &SYNC, 2500, 2510));
    assert_eq!(c.proven, Some(ms(1400)));
}

#[test]
fn answers_of_an_earlier_connection_prove_nothing() {
    let mut c = Contact::default();
    c.on_connected(ms(0));
    assert!(!answer(&mut c, 1, &read(), 100, 110));
    c.forget_connection();
    assert!(!answer(&mut c, 2, &SYNC, 2000, 2010));
    assert_eq!(c.proven, Some(ms(0)));
}

#[test]
fn the_history_stays_small_under_many_answers() {
    let config = config();
    for standalone in [false, true] {
        let mut c = Contact::default();
        c.on_connected(ms(0));
        if standalone {
            c.on_server_learned(ServerRole::Standalone, ms(0));
        }
        for i in 0..10_000u64 {
            answer(&mut c, i, &read(), i, i + 1);
        }
        let kept = c.answered.entries.len();
        assert!(kept < 100, "{kept} answers kept (standalone: {standalone})");
        if standalone {
            // What was dropped was not needed: the long run still makes a grant last.
            assert!(c.lasts_until_renewed(&config, ms(10_001)));
        } else {
            assert!(answer(&mut c, 20_000, &SYNC, 10_000, 10_001));
            let proven = c.proven.unwrap();
            // Within two buckets (touch bound / 8 = 125 ms) of the exact answer,
            // 9000: never later.
            assert!(proven <= ms(9_000) && proven >= ms(8_750), "{proven:?}");
        }
    }
}

#[test]
fn off_without_a_sync_interval() {
    let config = Config::new(Duration::from_secs(3), 0);
    let mut c = Contact::default();
    c.on_connected(ms(0));
    assert_eq!(c.trusted_until(&config), None);
    assert!(c.is_fresh(&config, ms(1_000_000)));
    assert_eq!(c.next_sync(&config), None);
}

#[test]
fn syncs_are_due_an_interval_after_the_last_leader_request() {
    let config = config();
    let mut c = Contact::default();
    c.on_connected(ms(0));
    c.set_wanted(LockId(1), true);
    assert_eq!(c.next_sync(&config), Some(ms(300)));
    c.on_sent(&config, RequestId(1), &read(), ms(200));
    assert_eq!(c.next_sync(&config), Some(ms(300)));
    c.on_sync_sent(&config, RequestId(2), &SYNC, ms(300));
    assert_eq!(c.next_sync(&config), None);
    c.on_reply::<Reply>(&config, RequestId(2), &Ok(Reply::Synced), ms(310));
    assert_eq!(c.next_sync(&config), Some(ms(600)));
}

#[test]
fn a_standalone_server_proves_every_answer_at_its_send_time_once_confirmed() {
    let config = config(); // T 3 s, margin 300 ms
    let mut c = Contact::default();
    c.on_connected(ms(0));
    // Learned at 500: a read sent before that confirms nothing, proves nothing.
    c.on_server_learned(ServerRole::Standalone, ms(500));
    assert!(!answer(&mut c, 1, &read(), 400, 600));
    assert_eq!(c.proven, Some(ms(0)));
    assert_eq!(c.confirmed_role(), None);
    // A read sent after it confirms and proves its own send time.
    assert!(answer(&mut c, 2, &read(), 700, 710));
    assert_eq!(c.confirmed_role(), Some(ServerRole::Standalone));
    assert_eq!(c.proven, Some(ms(700)));
    assert_eq!(c.trusted_until(&config), Some(ms(700 + 3000 - 300)));
    // Any answer from the server, errors included; never a connection error.
    c.on_sent(&config, RequestId(3), &read(), ms(900));
    assert!(c.on_reply::<Reply>(&config, RequestId(3), &Err(ZkError::NoNode), ms(905)));
    assert_eq!(c.proven, Some(ms(900)));
    c.on_sent(&config, RequestId(4), &read(), ms(1000));
    let lost: Result<Reply, _> = Err(ZkError::ConnectionLoss);
    assert!(!c.on_reply(&config, RequestId(4), &lost, ms(1005)));
    // Reads count as activity for the sync schedule there.
    c.set_wanted(LockId(1), true);
    assert_eq!(c.next_sync(&config), Some(ms(1300)));
}

#[test]
fn what_was_learned_is_forgotten_with_the_connection() {
    let mut c = Contact::default();
    c.on_connected(ms(0));
    c.on_server_learned(ServerRole::Standalone, ms(10));
    assert!(answer(&mut c, 1, &read(), 20, 30));
    c.forget_connection();
    c.on_connected(ms(100));
    // The next connection's answers are judged as on an unknown server.
    assert!(!answer(&mut c, 2, &read(), 200, 210));
    assert_eq!(c.proven, Some(ms(100)));
    // A report from before this connection's probe would come through the
    // binding only for this connection; a pending one needs a later request.
    c.on_server_learned(ServerRole::Standalone, ms(300));
    assert!(!answer(&mut c, 3, &read(), 250, 310));
    assert!(answer(&mut c, 4, &read(), 320, 330));
    assert_eq!(c.proven, Some(ms(320)));
}

#[test]
fn a_known_tick_shortens_the_touch_bound_of_an_ensemble_member() {
    let config = config(); // touch bound 1 s
    let mut c = Contact::default();
    c.on_connected(ms(0));
    let tick = Duration::from_millis(100);
    c.on_server_learned(ServerRole::Member { tick_time: tick }, ms(50));
    assert!(!answer(&mut c, 1, &read(), 100, 110));
    assert_eq!(c.touch_bound(&config), 2 * tick);
    // Reads alone still prove nothing on a member (a follower answers them).
    assert!(!answer(&mut c, 2, &read(), 400, 410));
    // A sync sent 190 ms after the read at 400 was answered: too soon for
    // it (two ticks), the read at 100 (two ticks and more before) is proven.
    assert!(answer(&mut c, 3, &SYNC, 600, 610));
    assert_eq!(c.proven, Some(ms(100)));
    // Two ticks after the sync at 600 was answered: proves its send time.
    assert!(answer(&mut c, 4, &SYNC, 810, 820));
    assert_eq!(c.proven, Some(ms(600)));
}
