//! The answers to a handle's section calls
//! ([`open_section`](crate::LockGuard::open_section),
//! [`close_section`](crate::LockGuard::close_section)). Calls on one guard can
//! overlap (tasks sharing the guard); the core lets a later call supersede one
//! still in flight and reports the outcome of the latest only, so that outcome
//! answers every call made until then.

use crate::error::Error;

/// The section calls of one slot: how many were made, and the latest outcome
/// with the calls it answers.
///
/// Boxed, and made at the first call: every held lock and waiting acquisition
/// has a slot, few make section calls, and the state is 88 bytes inline.
#[derive(Default)]
pub(crate) struct SectionCalls(Option<Box<Calls>>);

#[derive(Default)]
struct Calls {
    made: u64,
    answer: Option<(u64, Result<(), Error>)>,
}

impl SectionCalls {
    /// A call was handed to the core: its number, to await its answer with.
    pub(crate) fn call(&mut self) -> u64 {
        let calls = self.0.get_or_insert_with(Box::default);
        calls.made += 1;
        calls.made
    }

    /// The core's outcome (or the lock's end) answers every call awaiting one.
    pub(crate) fn answer(&mut self, result: Result<(), Error>) {
        // No call made, none awaits.
        let Some(calls) = &mut self.0 else {
            return;
        };
        let answered = calls.answer.as_ref().map_or(0, |(upto, _)| *upto);
        if answered < calls.made {
            calls.answer = Some((calls.made, result));
        }
    }

    /// The answer to call `call`, once known.
    pub(crate) fn answer_to(&self, call: u64) -> Option<Result<(), Error>> {
        match &self.0.as_ref()?.answer {
            Some((upto, result)) if *upto >= call => Some(result.clone()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_latest_outcome_answers_every_call_in_flight_and_no_later_one() {
        let mut calls = SectionCalls::default();
        let (open, close) = (calls.call(), calls.call());
        assert_eq!(calls.answer_to(open), None);
        calls.answer(Ok(()));
        assert_eq!(calls.answer_to(open), Some(Ok(())));
        assert_eq!(calls.answer_to(close), Some(Ok(())));
        // Nothing awaits: a late end of the lock changes no answer given.
        calls.answer(Err(Error::Closed));
        assert_eq!(calls.answer_to(close), Some(Ok(())));
        let next = calls.call();
        assert_eq!(calls.answer_to(next), None);
        calls.answer(Err(Error::Closed));
        assert_eq!(calls.answer_to(next), Some(Err(Error::Closed)));
    }
}
