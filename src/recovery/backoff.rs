//! The requeue backoff between two recovery episodes of one Job (KEP-1282 semantics).
//!
//! Kueue computes the delay after the n-th requeue in `workload.UpdateRequeueState`
//! (`pkg/workload/workload.go`) as
//!
//! ```go
//! backoff := wait.NewBackoff(base, max, 2, 0.0001) // pkg/util/wait
//! waitDuration := backoff.WaitTime(n)
//! ```
//!
//! `NewBackoff` is apimachinery's `wait.Backoff{Duration: base, Factor: 2, Jitter: 0.0001,
//! Cap: cmp.Or(max, MaxInt64/2)}` and `WaitTime(n)` returns its n-th `Step()`. `Step` returns
//! `wait.Jitter(d, 0.0001)` = `d + rand.Float64()*0.0001*d` of the current duration `d` and then
//! sets the next duration to `min(2d, Cap)`: the cap applies *before* the jitter ("the actual
//! maximum cap is `cap * (1.0 + jitter)`", apimachinery's `Backoff.Cap`). So the delay is
//! `min(base * 2^(n-1), max) * (1 + r * 0.0001)` with `r` in [0, 1): at the cap it is `max` plus
//! at most 0.01 %. `max = 0` means no cap (`cmp.Or` falls back to `MaxInt64/2`). This module
//! reproduces that with `r` passed in by the caller, so it is a pure function.
//!
//! (Kueue before `pkg/util/wait.Backoff` looped `min(backoff.Step(), max)` over a `wait.Backoff`
//! without `Cap`, which capped after the jitter and read `max = 0` as "no wait".)
//!
//! Two deliberate departures: with `base > max` the first delay is already `max` (docs/src/recovery-backoff.md's
//! `min(base * 2^(n-1), max)`; apimachinery never caps the initial duration, so Kueue would wait
//! `base` once), and large `n` saturates instead of stopping at `MaxInt64/2` nanoseconds.

#[cfg(test)]
use k8s_openapi::jiff::SignedDuration;
use k8s_openapi::jiff::Timestamp;

/// `wait.Backoff.Jitter` in Kueue's requeue backoff: at most 0.01 % on top of the step.
pub(crate) const JITTER_FACTOR: f64 = 0.0001;

/// Defaults of Kueue's `waitForPodsReady.requeuingStrategy`, and of our flags.
pub(crate) const DEFAULT_BASE_SECONDS: u64 = 60;
pub(crate) const DEFAULT_MAX_SECONDS: u64 = 3600;

const NANOS_PER_SECOND: u128 = 1_000_000_000;
const NANOS_PER_MILLI: i128 = 1_000_000;

/// `--recovery-backoff-base-seconds` and `--recovery-backoff-max-seconds`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Backoff {
    /// Delay after the first episode. 0: no wait at all.
    pub(crate) base_seconds: u64,
    /// Cap of the delay. 0: no cap.
    pub(crate) max_seconds: u64,
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
    /// The delay after episode `n` (n >= 1): `min(base * 2^(n-1), max) * (1 + jitter * 0.0001)`.
    ///
    /// `jitter` is a random number in [0, 1) drawn by the caller (`rand::random::<f64>()`); values
    /// outside that range (or NaN) are clamped into it. `n = 0` (no episode yet) gives no delay,
    /// like `wait.Backoff{Steps: 0}` in Kueue's loop.
    #[cfg(test)]
    pub(crate) fn delay(&self, n: u32, jitter: f64) -> SignedDuration {
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
        // The cap applies to the step, before the jitter (apimachinery `wait.Backoff.Cap`).
        let capped = if self.max_seconds == 0 {
            step
        } else {
            step.min(u128::from(self.max_seconds) * NANOS_PER_SECOND)
        };
        // `wait.Jitter`: `d + time.Duration(rand.Float64()*maxFactor*float64(d))`, the same
        // float operations in the same order, truncated to whole nanoseconds. `as u128`
        // saturates on large floats; the product is at most 0.0001 * capped.
        let jitter = clamp_unit(jitter);
        let extra = (jitter * JITTER_FACTOR * capped as f64) as u128;
        capped.saturating_add(extra)
    }

    /// `requeueAt` after episode `n` recorded at `episode_time`: `episode_time + delay(n)`,
    /// rounded up to the millisecond (so it is never earlier than the exact sum, and the ~6 ms of
    /// jitter at base 60s stays visible), saturating at the largest RFC 3339 time
    /// (9999-12-31T23:59:59.999999999Z).
    pub(crate) fn requeue_at(&self, episode_time: Timestamp, n: u32, jitter: f64) -> Timestamp {
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
mod tests;
