//! The servers' side of safety: each server's settings as read
//! ([`ServerConf`]), what they mean for a session's locks ([`Hazard`]), one
//! server's verdict ([`ServerCheck`]). The handle a binding reports verdicts
//! through, [`ServerChecker`](crate::ServerChecker), is with the
//! [`Link`](crate::Link): it writes into the shared state.

pub(crate) mod check;
pub(crate) mod conf;
pub(crate) mod hazard;

pub use check::{ServerCheck, ServerProbe};
pub use conf::{four_letter_word_refused, ConfError, ServerConf};
pub use hazard::{Hazard, HazardKind};
