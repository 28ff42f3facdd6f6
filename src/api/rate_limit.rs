//! Rate limiting per API key (GCRA, the `governor` crate).
//!
//! The limit is applied by the [`Caller`](super::auth::Caller) extractor
//! right after the key is authenticated, so it is keyed by the key's id
//! (one bucket per key, however many clients share it) and covers every
//! authenticated route. Requests without a valid key are not limited here:
//! they cost one SHA-256 and one indexed lookup before their 401, and the
//! ops routes (`/healthz`, `/readyz`, `/metrics`, `/openapi.yaml`) are for
//! probes and scrapers; limiting by client address belongs to the reverse
//! proxy in front of the service, which knows the real address.
//!
//! The number of buckets is bounded by the number of keys the admin created
//! (a bucket exists only for an authenticated key id), so no pruning is
//! needed for memory.

use std::num::NonZeroU32;
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

/// Requests per second and burst of one key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    /// Sustained requests per second.
    pub per_second: NonZeroU32,
    /// Requests that may arrive at once after a quiet period.
    pub burst: NonZeroU32,
}

/// One GCRA bucket per key id.
pub(crate) struct KeyLimiter {
    limiter: DefaultKeyedRateLimiter<String>,
    clock: DefaultClock,
}

impl KeyLimiter {
    pub(crate) fn new(limit: RateLimit) -> KeyLimiter {
        let quota = Quota::per_second(limit.per_second).allow_burst(limit.burst);
        KeyLimiter {
            limiter: RateLimiter::keyed(quota),
            clock: DefaultClock::default(),
        }
    }

    /// `Ok` if the key may make a request now, else how long to wait.
    pub(crate) fn check(&self, key_id: &str) -> Result<(), Duration> {
        self.limiter
            .check_key(&key_id.to_owned())
            .map_err(|not_until| not_until.wait_time_from(self.clock.now()))
    }
}

/// Whole seconds for `Retry-After`: rounded up and at least 1, so that a
/// client that waits that long is served.
pub(crate) fn retry_after_secs(wait: Duration) -> u64 {
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    secs.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_rounds_up_to_a_whole_second() {
        assert_eq!(retry_after_secs(Duration::ZERO), 1);
        assert_eq!(retry_after_secs(Duration::from_millis(1)), 1);
        assert_eq!(retry_after_secs(Duration::from_secs(1)), 1);
        assert_eq!(retry_after_secs(Duration::from_millis(1001)), 2);
        assert_eq!(retry_after_secs(Duration::from_secs(3)), 3);
    }

    #[test]
    fn burst_then_refused_per_key() {
        let l = KeyLimiter::new(RateLimit {
            per_second: NonZeroU32::new(1).unwrap(),
            burst: NonZeroU32::new(3).unwrap(),
        });
        for _ in 0..3 {
            assert!(l.check("a").is_ok());
        }
        let wait = l.check("a").unwrap_err();
        assert!(wait > Duration::ZERO && wait <= Duration::from_secs(1));
        // Another key has its own bucket.
        assert!(l.check("b").is_ok());
    }
}
