//! The conformance suite on lock-sim's in-process server (`lock_sim::Server`), in
//! both API styles: every test but the ensemble's (one server has no leader to
//! lose).

use lock_conformance::{SimEnv, Style};

mod blocking {
    use super::*;
    lock_conformance::conformance_tests!(
        SimEnv::new(Style::Blocking),
        [hold_replies, watchers, request_count, multi]
    );
}

mod r#async {
    use super::*;
    lock_conformance::conformance_tests!(
        SimEnv::new(Style::Async),
        [hold_replies, watchers, request_count, multi]
    );
}
