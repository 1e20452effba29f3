//! [`Queued`]'s lock-delay countdown, on the client's clock.

use super::*;
use crate::status::Queued;

#[test]
fn the_lock_delay_countdown_reads_the_clients_clock() {
    let clock = ManualClock::new();
    let ends = clock.zero + Duration::from_secs(3);
    let queued = Queued::lock_delay("/l/n".into(), ends, clock.clone());
    let shown = |queued: &Queued| queued.to_string();
    assert_eq!(
        shown(&queued),
        "lock-delay after an unclean end of the previous holder, 3.0 s left"
    );
    // Only the client's clock moves the countdown, whatever the OS's does.
    clock.set(clock.zero + Duration::from_millis(2_500));
    assert!(shown(&queued).ends_with(", 0.5 s left"), "{queued}");
    clock.set(ends + Duration::from_secs(1));
    assert!(shown(&queued).ends_with(", 0.0 s left"), "{queued}");
}
