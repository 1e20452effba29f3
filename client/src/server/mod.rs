//! The servers' side of safety: each server's settings as read
//! ([`ServerConf`]), what they mean for a session's locks ([`Hazard`]), one
//! server's verdict ([`ServerCheck`]), and the handle a binding reports
//! verdicts through ([`ServerChecker`]).

pub(crate) mod check;
pub(crate) mod checker;
pub(crate) mod conf;
pub(crate) mod hazard;

pub use check::{ServerCheck, ServerProbe};
pub use checker::ServerChecker;
pub use conf::{four_letter_word_refused, ConfError, ServerConf};
pub use hazard::{Hazard, HazardKind};
