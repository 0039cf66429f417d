//! The requeue backoff between two recovery episodes of one Job (KEP-1282 semantics).
//!
//! Kueue computes the delay after the n-th requeue in `workload.UpdateRequeueState`
//! (`pkg/workload/workload.go`) as
//!
//! ```go
//! backoff := &wait.Backoff{Duration: base, Factor: 2, Jitter: 0.0001, Steps: n}
//! for backoff.Steps > 0 { waitDuration = min(backoff.Step(), max) }
//! ```
//!
//! `wait.Backoff.Step` returns the current duration plus `wait.Jitter(d, 0.0001)` =
//! `d + rand.Float64()*0.0001*d` and then doubles the duration, so the value of the last step is
//! `base * 2^(n-1) * (1 + r * 0.0001)` with `r` in [0, 1), and it is capped by `max` *after* the
//! jitter: at the cap the delay is exactly `max`. This module reproduces that with `r` passed in by
//! the caller, so it is a pure function.
//!
//! Two deliberate departures, both from the jobgate issue: `max = 0` means "no cap" (Kueue would
//! compute `min(step, 0) = 0`), and large `n` saturates instead of overflowing (Go converts the
//! float product back to an `int64` of nanoseconds, which overflows near n = 28 with base 60s).

use k8s_openapi::jiff::{SignedDuration, Timestamp};

/// `wait.Backoff.Jitter` in Kueue's requeue backoff: at most 0.01 % on top of the step.
pub const JITTER_FACTOR: f64 = 0.0001;

/// Defaults of Kueue's `waitForPodsReady.requeuingStrategy`, and of our flags.
pub const DEFAULT_BASE_SECONDS: u64 = 60;
pub const DEFAULT_MAX_SECONDS: u64 = 3600;

const NANOS_PER_SECOND: u128 = 1_000_000_000;
const NANOS_PER_MILLI: i128 = 1_000_000;

/// `--recovery-backoff-base-seconds` and `--recovery-backoff-max-seconds`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// Delay after the first episode. 0: no wait at all.
    pub base_seconds: u64,
    /// Cap of the delay. 0: no cap.
    pub max_seconds: u64,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            base_seconds: DEFAULT_BASE_SECONDS,
            max_seconds: DEFAULT_MAX_SECONDS,
        }
    }
}

impl Backoff {
    /// The delay after episode `n` (n >= 1): `min(base * 2^(n-1) * (1 + jitter * 0.0001), max)`.
    ///
    /// `jitter` is a random number in [0, 1) drawn by the caller (`rand::random::<f64>()`); values
    /// outside that range (or NaN) are clamped into it. `n = 0` (no episode yet) gives no delay,
    /// like `wait.Backoff{Steps: 0}` in Kueue's loop.
    pub fn delay(&self, n: u32, jitter: f64) -> SignedDuration {
        let nanos = self.delay_nanos(n, jitter);
        let seconds = i64::try_from(nanos / NANOS_PER_SECOND).unwrap_or(i64::MAX);
        // < 1e9, so it fits an i32.
        let subsec = (nanos % NANOS_PER_SECOND) as i32;
        SignedDuration::new(seconds, subsec)
    }

    fn delay_nanos(&self, n: u32, jitter: f64) -> u128 {
        if n == 0 || self.base_seconds == 0 {
            return 0;
        }
        let base = u128::from(self.base_seconds) * NANOS_PER_SECOND;
        // base * 2^(n-1), saturating: any step past u128 is far beyond every cap.
        let step = 1u128
            .checked_shl(n - 1)
            .and_then(|factor| base.checked_mul(factor))
            .unwrap_or(u128::MAX);
        let jitter = clamp_unit(jitter);
        // `as u128` saturates on large floats; the product is at most 0.0001 * step.
        let extra = (jitter * JITTER_FACTOR * step as f64) as u128;
        let jittered = step.saturating_add(extra);
        if self.max_seconds == 0 {
            jittered
        } else {
            jittered.min(u128::from(self.max_seconds) * NANOS_PER_SECOND)
        }
    }

    /// `requeueAt` after episode `n` recorded at `episode_time`: `episode_time + delay(n)`,
    /// rounded up to the millisecond (so it is never earlier than the exact sum, and the ~6 ms of
    /// jitter at base 60s stays visible), saturating at the largest RFC 3339 time
    /// (9999-12-31T23:59:59.999999999Z).
    pub fn requeue_at(&self, episode_time: Timestamp, n: u32, jitter: f64) -> Timestamp {
        let delay = i128::try_from(self.delay_nanos(n, jitter)).unwrap_or(i128::MAX);
        let exact = episode_time.as_nanosecond().saturating_add(delay);
        let rounded = exact
            .checked_add(NANOS_PER_MILLI - 1)
            .map(|v| v.div_euclid(NANOS_PER_MILLI) * NANOS_PER_MILLI)
            .unwrap_or(i128::MAX);
        Timestamp::from_nanosecond(rounded).unwrap_or(Timestamp::MAX)
    }
}

fn clamp_unit(x: f64) -> f64 {
    if x.is_nan() || x < 0.0 {
        0.0
    } else if x >= 1.0 {
        // The largest f64 below 1, what rand's [0, 1) can return at most.
        1.0 - f64::EPSILON / 2.0
    } else {
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: i64) -> SignedDuration {
        SignedDuration::from_secs(s)
    }

    fn kueue_defaults() -> Backoff {
        Backoff {
            base_seconds: 60,
            max_seconds: 3600,
        }
    }

    /// KEP-1282 / Kueue `UpdateRequeueState`: "Every backoff duration is about 60s*2^(n-1)+Rand";
    /// with backoffMaxSeconds 3600 the series is 60, 120, 240, 480, 960, 1920, then 3600 for ever.
    #[test]
    fn kep_1282_series_60_120_240_doubling_until_the_3600_cap() {
        let b = kueue_defaults();
        let series: Vec<i64> = (1..=10).map(|n| b.delay(n, 0.0).as_secs()).collect();
        assert_eq!(
            series,
            vec![60, 120, 240, 480, 960, 1920, 3600, 3600, 3600, 3600]
        );
        for n in 1..=10 {
            assert_eq!(b.delay(n, 0.0).subsec_nanos(), 0, "n={n}");
        }
    }

    /// `wait.Jitter(d, 0.0001)` adds less than 0.01 % of the step; the cap applies after the jitter.
    #[test]
    fn jitter_adds_at_most_one_hundredth_of_a_percent_and_never_exceeds_the_cap() {
        let b = kueue_defaults();
        let almost_one = 1.0 - f64::EPSILON / 2.0;
        for n in 1..=6u32 {
            let step = 60i64 << (n - 1);
            let lo = b.delay(n, 0.0);
            let hi = b.delay(n, almost_one);
            assert_eq!(lo, secs(step));
            assert!(hi > lo, "n={n}: jitter must add something");
            // step * 0.0001 seconds = step * 100_000 nanoseconds.
            assert!(
                hi - lo < SignedDuration::from_nanos(step * 100_000),
                "n={n}: {hi:?}"
            );
            assert!(hi < secs(3600) || n >= 7);
        }
        // 60s: the jitter is below 6 ms.
        assert_eq!(b.delay(1, 0.5), SignedDuration::new(60, 3_000_000));
        // At the cap the delay is exactly max: min(step + jitter, max).
        assert_eq!(b.delay(7, almost_one), secs(3600));
        assert_eq!(b.delay(40, 0.99), secs(3600));
    }

    #[test]
    fn jitter_outside_zero_one_is_clamped() {
        let b = kueue_defaults();
        assert_eq!(b.delay(1, -3.0), secs(60));
        assert_eq!(b.delay(1, f64::NAN), secs(60));
        assert!(b.delay(1, 7.0) < SignedDuration::new(60, 6_000_000));
        assert!(b.delay(1, f64::INFINITY) < SignedDuration::new(60, 6_000_000));
    }

    /// Issue 6: "`base = 0` means no wait".
    #[test]
    fn base_zero_means_no_wait() {
        let b = Backoff {
            base_seconds: 0,
            max_seconds: 3600,
        };
        for n in [1, 2, 10, u32::MAX] {
            assert_eq!(b.delay(n, 0.9), SignedDuration::ZERO);
        }
    }

    /// Issue 6: "`max = 0` means no cap".
    #[test]
    fn max_zero_means_no_cap() {
        let b = Backoff {
            base_seconds: 60,
            max_seconds: 0,
        };
        assert_eq!(b.delay(7, 0.0), secs(3840));
        assert_eq!(b.delay(11, 0.0), secs(61_440));
        assert_eq!(b.delay(21, 0.0), secs(60 << 20));
    }

    /// With base > max the very first delay is already the cap.
    #[test]
    fn base_greater_than_max_is_capped_from_the_first_episode() {
        let b = Backoff {
            base_seconds: 7200,
            max_seconds: 3600,
        };
        assert_eq!(b.delay(1, 0.0), secs(3600));
        assert_eq!(b.delay(1, 0.999), secs(3600));
        assert_eq!(b.delay(5, 0.5), secs(3600));
    }

    /// Go's `time.Duration(float64(d) * 2)` overflows int64 near n = 28 at base 60s; we saturate.
    #[test]
    fn large_episode_counts_saturate_instead_of_overflowing() {
        let capped = kueue_defaults();
        for n in [27, 28, 29, 63, 64, 127, 128, 129, u32::MAX] {
            assert_eq!(capped.delay(n, 0.5), secs(3600), "n={n}");
        }
        let uncapped = Backoff {
            base_seconds: u64::MAX,
            max_seconds: 0,
        };
        for n in [1, 2, 64, 200, u32::MAX] {
            let d = uncapped.delay(n, 0.999);
            assert!(d >= secs(i64::MAX / 2), "n={n}: {d:?}");
        }
        let t = Timestamp::from_second(1_800_000_000).unwrap();
        assert_eq!(uncapped.requeue_at(t, u32::MAX, 0.5), Timestamp::MAX);
    }

    #[test]
    fn zero_episodes_mean_no_delay() {
        assert_eq!(kueue_defaults().delay(0, 0.5), SignedDuration::ZERO);
    }

    /// "after episode n, the next episode may not start before requeueAt = now + d(n)".
    #[test]
    fn requeue_at_is_episode_time_plus_delay_rounded_up_to_the_millisecond() {
        let b = kueue_defaults();
        let t: Timestamp = "2026-11-21T19:40:00Z".parse().unwrap();
        assert_eq!(b.requeue_at(t, 1, 0.0).to_string(), "2026-11-21T19:41:00Z");
        assert_eq!(b.requeue_at(t, 3, 0.0).to_string(), "2026-11-21T19:44:00Z");
        assert_eq!(b.requeue_at(t, 9, 0.0).to_string(), "2026-11-21T20:40:00Z");
        // 60s * 0.0001 * 0.5 = 3 ms; 0.4 -> 2.4 ms, rounded up to 3 ms.
        assert_eq!(
            b.requeue_at(t, 1, 0.5).to_string(),
            "2026-11-21T19:41:00.003Z"
        );
        assert_eq!(
            b.requeue_at(t, 1, 0.4).to_string(),
            "2026-11-21T19:41:00.003Z"
        );
        for (n, r) in [(1, 0.0), (1, 0.4), (4, 0.77), (12, 0.99)] {
            let at = b.requeue_at(t, n, r);
            assert!(at >= t + b.delay(n, r), "never earlier than now + d(n)");
            assert!(at < t + b.delay(n, r) + SignedDuration::from_millis(1));
        }
    }

    proptest::proptest! {
        /// Over the whole input space: `min(step, max) <= d(n) <= min(step * 1.0001, max)`,
        /// `d` never decreases with `n`, and nothing panics or overflows.
        #[test]
        fn delay_stays_within_the_jitter_bound_and_never_decreases(
            base in 0u64..100_000,
            max in 0u64..1_000_000,
            n in 1u32..200,
            jitter in 0.0f64..1.0,
        ) {
            let b = Backoff { base_seconds: base, max_seconds: max };
            let nanos = |d: SignedDuration| d.as_nanos();
            let step = (i128::from(base) * 1_000_000_000)
                .checked_mul(1i128.checked_shl(n - 1).unwrap_or(i128::MAX))
                .unwrap_or(i128::MAX);
            let cap = if max == 0 { i128::MAX } else { i128::from(max) * 1_000_000_000 };
            let lower = step.min(cap);
            let upper = (step.saturating_add(step / 10_000)).min(cap);
            let d = nanos(b.delay(n, jitter));
            proptest::prop_assert!(lower.min(i128::from(i64::MAX) * 1_000_000_000) <= d);
            proptest::prop_assert!(d <= upper, "d={} upper={}", d, upper);
            proptest::prop_assert!(nanos(b.delay(n + 1, 0.0)) >= nanos(b.delay(n, 0.0)));
        }
    }
}
