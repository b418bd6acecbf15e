//! Reconnect pacing: waits that double from `first` up to `max`, and a deadline for the whole.

use std::time::{Duration, Instant};

/// How a lost connection is tried again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// The first wait between attempts.
    pub first: Duration,
    /// The longest wait between attempts.
    pub max: Duration,
    /// Give up this long after the connection was lost.
    pub within: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            first: Duration::from_millis(50),
            max: Duration::from_secs(2),
            within: Duration::from_secs(15),
        }
    }
}

impl Backoff {
    /// No reconnects: a lost connection is an error at once.
    pub fn never() -> Backoff {
        Backoff { first: Duration::ZERO, max: Duration::ZERO, within: Duration::ZERO }
    }
}

/// The attempts of one reconnect.
#[derive(Debug)]
pub(crate) struct Attempts {
    backoff: Backoff,
    deadline: Instant,
    wait: Duration,
}

impl Attempts {
    pub(crate) fn start(backoff: Backoff) -> Attempts {
        Attempts { backoff, deadline: Instant::now() + backoff.within, wait: backoff.first }
    }

    /// When the whole reconnect must be done.
    pub(crate) fn deadline(&self) -> Instant {
        self.deadline
    }

    /// How long to wait before the next attempt, or `None` once the deadline has passed. The
    /// wait never runs past the deadline, so the last attempt comes at it.
    pub(crate) fn next_wait(&mut self) -> Option<Duration> {
        let left = self.deadline.checked_duration_since(Instant::now())?;
        if left.is_zero() {
            return None;
        }
        let wait = self.wait.min(left);
        self.wait = (self.wait * 2).min(self.backoff.max);
        Some(wait)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_up_to_the_cap_and_stop_at_the_deadline() {
        let backoff = Backoff {
            first: Duration::from_millis(10),
            max: Duration::from_millis(40),
            within: Duration::from_secs(60),
        };
        let mut a = Attempts::start(backoff);
        let waits: Vec<_> = (0..5).filter_map(|_| a.next_wait()).collect();
        let ms = |n| Duration::from_millis(n);
        assert_eq!(waits, [ms(10), ms(20), ms(40), ms(40), ms(40)]);

        let mut never = Attempts::start(Backoff::never());
        assert_eq!(never.next_wait(), None);

        let short = Backoff { within: Duration::from_millis(30), ..backoff };
        let mut a = Attempts::start(short);
        let mut total = Duration::ZERO;
        while let Some(w) = a.next_wait() {
            assert!(w <= Duration::from_millis(30));
            std::thread::sleep(w);
            total += w;
        }
        assert!(total >= Duration::from_millis(25), "waited {total:?}");
        assert!(Instant::now() >= a.deadline());
    }
}
