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

/// `wait.Jitter(d, 0.0001)` adds less than 0.01 % of the step.
#[test]
fn jitter_adds_at_most_one_hundredth_of_a_percent() {
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
    }
    // 60s: the jitter is below 6 ms.
    assert_eq!(b.delay(1, 0.5), SignedDuration::new(60, 3_000_000));
}

/// Kueue's `wait.NewBackoff(base, max, 2, 0.0001)` is apimachinery's `wait.Backoff` with
/// `Cap: max`, which caps the duration before `Step` adds the jitter ("The actual maximum cap
/// is `cap * (1.0 + jitter)`"): at the cap the wait is `max` plus up to 0.01 %, not exactly
/// `max`.
#[test]
fn at_the_cap_the_jitter_is_added_to_max() {
    let b = kueue_defaults();
    let almost_one = 1.0 - f64::EPSILON / 2.0;
    assert_eq!(b.delay(7, 0.0), secs(3600));
    // 3600s * 0.0001 * 0.5 = 180 ms.
    assert_eq!(b.delay(7, 0.5), SignedDuration::new(3600, 180_000_000));
    assert_eq!(b.delay(40, 0.5), SignedDuration::new(3600, 180_000_000));
    let hi = b.delay(7, almost_one);
    assert!(hi > secs(3600), "{hi:?}");
    assert!(hi < SignedDuration::new(3600, 360_000_000), "{hi:?}");
}

/// Kueue `pkg/util/wait` `TestBackoff_WaitTime` (factor 2, jitter 0), in seconds.
#[test]
fn kueue_test_backoff_wait_time_cases() {
    let b = |base, max| Backoff {
        base_seconds: base,
        max_seconds: max,
    };
    // "iteration zero returns zero"
    assert_eq!(b(1, 1000).delay(0, 0.0), secs(0));
    // "simple exponential (factor=2)": steps 1, 2, 4, 8
    assert_eq!(b(1, 1000).delay(4, 0.0), secs(8));
    // "caps at limit": steps 1, 2, 4, 8 -> cap 5
    assert_eq!(b(1, 5).delay(4, 0.0), secs(5));
    // "very large iteration still returns cap"
    assert_eq!(b(1, 1000).delay(1000, 0.0), secs(1000));
    // "very large iteration, no cap": Kueue stops at MaxInt64/2 ns (~146 years); we
    // saturate further, which is as much "never" for a requeue time.
    assert!(b(1, 0).delay(1000, 0.0) >= SignedDuration::from_nanos(1 << 62));
}

/// apimachinery `wait.Backoff.Step` driven the way Kueue's `pkg/util/wait.Backoff.WaitTime(n)`
/// drives it (`NewBackoff(base, max, 2, 0.0001)`: `Steps: MaxInt`, `Cap: cmp.Or(max,
/// MaxInt64/2)`, stop early when a step returns exactly `Cap`), in Go's int64 nanoseconds
/// and float64 arithmetic, with `rand.Float64()` replaced by `r`.
fn kueue_wait_time(base_ns: i64, max_ns: i64, n: u32, r: f64) -> i64 {
    let cap = if max_ns == 0 { 1i64 << 62 } else { max_ns };
    let jitter = |d: i64| d + (r * 0.0001 * d as f64) as i64;
    let (mut duration, mut steps, mut out) = (base_ns, i64::MAX, 0);
    for _ in 0..n {
        if steps < 1 {
            out = jitter(duration);
        } else {
            steps -= 1;
            let mut next = (duration as f64 * 2.0) as i64;
            if next > cap {
                next = cap;
                steps = 0;
            }
            out = jitter(duration);
            duration = next;
        }
        if out == cap {
            break;
        }
    }
    out
}

/// Every step of Kueue's `UpdateRequeueState` wait, to the nanosecond, for the same random
/// draw: the doubling, the cap (before the jitter) and the truncated jitter.
#[test]
fn delay_equals_kueue_update_requeue_state_wait_time() {
    const NS: i64 = 1_000_000_000;
    for (base, max) in [
        (60, 3600),
        (1, 5),
        (10, 3600),
        (3600, 3600),
        (60, 0),
        (7, 100_000),
    ] {
        let b = Backoff {
            base_seconds: base as u64,
            max_seconds: max as u64,
        };
        for n in 1..=40u32 {
            // Kueue's implicit cap when max = 0 is MaxInt64/2 ns; compare below it.
            if max == 0 && i128::from(base * NS) << (n - 1) >= 1 << 62 {
                continue;
            }
            for r in [0.0, 1e-9, 0.25, 0.5, 0.7, 1.0 - f64::EPSILON / 2.0] {
                let kueue = kueue_wait_time(base * NS, max * NS, n, r);
                assert_eq!(
                    b.delay(n, r).as_nanos(),
                    i128::from(kueue),
                    "base={base} max={max} n={n} r={r}"
                );
            }
        }
    }
}

#[test]
fn jitter_outside_zero_one_is_clamped() {
    let b = kueue_defaults();
    assert_eq!(b.delay(1, -3.0), secs(60));
    assert_eq!(b.delay(1, f64::NAN), secs(60));
    assert!(b.delay(1, 7.0) < SignedDuration::new(60, 6_000_000));
    assert!(b.delay(1, f64::INFINITY) < SignedDuration::new(60, 6_000_000));
}

/// docs/src/recovery-backoff.md: "`base = 0` means no wait".
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

/// docs/src/recovery-backoff.md: "`max = 0` means no cap" (Kueue: `Cap: cmp.Or(max, MaxInt64/2)`).
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

/// With base > max the very first delay is already the cap (docs/src/recovery-backoff.md's `min(base * 2^(n-1),
/// max)`; apimachinery does not cap the initial duration, so Kueue would wait `base` once).
#[test]
fn base_greater_than_max_is_capped_from_the_first_episode() {
    let b = Backoff {
        base_seconds: 7200,
        max_seconds: 3600,
    };
    assert_eq!(b.delay(1, 0.0), secs(3600));
    assert_eq!(b.delay(5, 0.5), SignedDuration::new(3600, 180_000_000));
    let first = b.delay(1, 0.999);
    assert!(first > secs(3600) && first < SignedDuration::new(3600, 360_000_000));
}

/// The doubling saturates instead of overflowing (Go's `time.Duration` is an int64 of
/// nanoseconds; Kueue's cap defaults to `MaxInt64/2` for that reason).
#[test]
fn large_episode_counts_saturate_instead_of_overflowing() {
    let capped = kueue_defaults();
    for n in [27, 28, 29, 63, 64, 127, 128, 129, u32::MAX] {
        assert_eq!(
            capped.delay(n, 0.5),
            SignedDuration::new(3600, 180_000_000),
            "n={n}"
        );
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
    /// Over the whole input space: `c <= d(n) <= c * 1.0001` with `c = min(step, max)`,
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
        let upper = lower.saturating_add(lower / 10_000);
        let d = nanos(b.delay(n, jitter));
        proptest::prop_assert!(lower.min(i128::from(i64::MAX) * 1_000_000_000) <= d);
        proptest::prop_assert!(d <= upper, "d={} upper={}", d, upper);
        proptest::prop_assert!(nanos(b.delay(n + 1, 0.0)) >= nanos(b.delay(n, 0.0)));
    }
}
