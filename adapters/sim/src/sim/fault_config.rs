//! The settings of the random faults ([`FaultConfig`]) and of what a reset does to
//! the requests in flight ([`InFlight`]); the faults themselves are in `faults.rs`.

use std::time::Duration;

/// Random faults, by weight, at random intervals.
///
/// ```
/// use zklock::sim::FaultConfig;
/// use std::time::Duration;
/// let f = FaultConfig::chaos(Duration::from_millis(300));
/// assert!(f.mean_interval.is_some());
/// assert!(FaultConfig::none().mean_interval.is_none());
/// ```
#[derive(Clone, PartialEq, Debug)]
#[non_exhaustive]
pub struct FaultConfig {
    /// Mean virtual time between two random faults (`None`: no random faults).
    pub mean_interval: Option<Duration>,
    /// Weight of a connection reset (in-flight requests applied or not, seeded;
    /// replies and notifications in flight lost; the client notices at once).
    pub disconnect: u32,
    /// Weight of a partition shorter than the session timeout (packets vanish; the
    /// client notices within 2/3 of the session timeout).
    pub partition: u32,
    /// Weight of a partition longer than the session timeout: the session expires on
    /// the server.
    pub long_partition: u32,
    /// Weight of a session expiry while connected.
    pub expire: u32,
    /// Weight of an administrator deleting a lock node.
    pub admin_delete: u32,
    /// Weight of an administrator asking a holder to let go (`__REVOKE__` data).
    pub revoke: u32,
    /// Weight of a connection reset while a watch notification is in flight.
    pub lose_notification: u32,
    /// Shortest and longest delay before a reconnect attempt.
    pub reconnect_delay: (Duration, Duration),
    /// Length of a short partition, as a fraction range of the session timeout.
    pub partition_len: (f64, f64),
    /// Length of a long partition, as a fraction range of the session timeout.
    pub long_partition_len: (f64, f64),
    /// Probability that, when a client notices a disconnect, the requests in flight
    /// also fail with `ConnectionLoss` (half the time before the `Disconnected` event,
    /// half after), as some client libraries do.
    pub connection_loss_errors: f64,
}

impl FaultConfig {
    /// No random faults (explicit ones still work).
    pub fn none() -> Self {
        FaultConfig {
            mean_interval: None,
            disconnect: 0,
            partition: 0,
            long_partition: 0,
            expire: 0,
            admin_delete: 0,
            revoke: 0,
            lose_notification: 0,
            reconnect_delay: (Duration::from_millis(5), Duration::from_millis(50)),
            partition_len: (0.1, 0.9),
            long_partition_len: (1.1, 2.5),
            connection_loss_errors: 0.5,
        }
    }

    /// Every kind of fault, one every `mean_interval` on average.
    pub fn chaos(mean_interval: Duration) -> Self {
        FaultConfig {
            mean_interval: Some(mean_interval),
            disconnect: 6,
            partition: 3,
            long_partition: 2,
            expire: 2,
            admin_delete: 1,
            revoke: 1,
            lose_notification: 3,
            ..FaultConfig::none()
        }
    }

    /// Only faults that cannot take a lock away from a holder that behaves
    /// correctly: no admin deletes, no expiry.
    pub fn connection_only(mean_interval: Duration) -> Self {
        FaultConfig {
            mean_interval: Some(mean_interval),
            disconnect: 6,
            partition: 3,
            lose_notification: 3,
            ..FaultConfig::none()
        }
    }
}

impl Default for FaultConfig {
    fn default() -> Self {
        FaultConfig::none()
    }
}

/// What happens to the requests in flight when a connection is reset.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum InFlight {
    /// All reached the server (their replies are lost).
    Applied,
    /// None reached the server.
    Lost,
    /// The first `n` reached the server.
    First(usize),
    /// A seeded number of them (a prefix: the stream is ordered).
    Seeded,
}
