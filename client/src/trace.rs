//! `tracing` for every binding, in one place (the crate docs say what is traced).
//! Levels: `info` for what a holder must know (acquired, resumed, released),
//! `warn` for trouble (suspended, lost), `debug` for the steps of waiting.

use lock_core::{LockEvent, LockSpec, Progress};
use tracing::field::Empty;

/// The span of one acquisition; `lock` (the core's id) is recorded once known.
pub(crate) fn acquisition_span(spec: &LockSpec) -> tracing::Span {
    tracing::info_span!(
        "zklock.lock",
        path = spec.path(),
        recipe = ?spec.recipe(),
        owner = spec.owner_id().unwrap_or(""),
        lock = Empty,
    )
}

/// A step on the way to the lock.
pub(crate) fn progress(span: &tracing::Span, progress: &Progress) {
    match progress {
        Progress::Created { node } => tracing::debug!(parent: span, node = %node, "created"),
        Progress::QueuedBehind { node } => {
            tracing::debug!(parent: span, behind = %node, "queued")
        }
        other => tracing::debug!(parent: span, progress = ?other, "progress"),
    }
}

/// An event of the acquisition.
pub(crate) fn event(span: &tracing::Span, event: &LockEvent) {
    match event {
        LockEvent::Acquired(grant) => tracing::info!(
            parent: span,
            node = %grant.path,
            token = grant.token.0,
            session = grant.session_id,
            "acquired"
        ),
        LockEvent::Suspended => tracing::warn!(parent: span, "suspended"),
        LockEvent::Resumed => tracing::info!(parent: span, "resumed"),
        LockEvent::Lost(reason) => tracing::warn!(parent: span, ?reason, "lost"),
        LockEvent::Released => tracing::info!(parent: span, "released"),
        LockEvent::Failed(reason) => tracing::debug!(parent: span, ?reason, "failed"),
        LockEvent::RevocationRequested => tracing::info!(parent: span, "revocation requested"),
        other => tracing::trace!(parent: span, event = ?other, "event"),
    }
}
