//! Prometheus histograms read off a `/metrics` page twice: the observations made in between, and
//! their quantiles as Prometheus's `histogram_quantile` reads them (linear within a bucket), which
//! is what a user's dashboard shows.

use std::collections::BTreeMap;

use super::prometheus;

/// Cumulative counts by upper bound (`le`, `+Inf` as infinity), of the series `metric` whose
/// labels `keep` accepts, summed.
#[derive(Clone, Default, Debug)]
pub(crate) struct Histogram {
    buckets: BTreeMap<OrderedBound, f64>,
}

/// A bucket bound, ordered by `f64::total_cmp` (`+Inf` last).
#[derive(Clone, Copy, Debug)]
struct OrderedBound(f64);
impl PartialEq for OrderedBound {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}
impl Eq for OrderedBound {}
impl PartialOrd for OrderedBound {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for OrderedBound {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

impl Histogram {
    pub(crate) fn read(text: &str, metric: &str, keep: impl Fn(&str) -> bool) -> Histogram {
        let mut buckets = BTreeMap::new();
        for (labels, count) in prometheus::samples(text, &format!("{metric}_bucket")) {
            if !keep(labels) {
                continue;
            }
            let le = prometheus::label(labels, "le");
            let bound = if le == "+Inf" {
                f64::INFINITY
            } else {
                le.parse()
                    .unwrap_or_else(|e| panic!("le={le:?} of {metric}: {e}"))
            };
            *buckets.entry(OrderedBound(bound)).or_insert(0.0) += count;
        }
        Histogram { buckets }
    }

    /// The observations made since `before`.
    pub(crate) fn since(&self, before: &Histogram) -> Histogram {
        let buckets = self
            .buckets
            .iter()
            .map(|(le, n)| (*le, n - before.buckets.get(le).copied().unwrap_or(0.0)))
            .collect();
        Histogram { buckets }
    }

    pub(crate) fn count(&self) -> f64 {
        self.buckets.values().copied().fold(0.0, f64::max)
    }

    /// The share of observations at most `bound` seconds (`bound` one of the bucket bounds).
    pub(crate) fn share_within(&self, bound: f64) -> f64 {
        let total = self.count();
        if total == 0.0 {
            return f64::NAN;
        }
        self.buckets
            .get(&OrderedBound(bound))
            .map_or(f64::NAN, |n| n / total)
    }

    /// `histogram_quantile(q, ...)`: the bucket holding rank `q * count`, interpolated linearly
    /// from its lower bound (0 for the first); in the `+Inf` bucket, the highest finite bound.
    pub(crate) fn quantile(&self, q: f64) -> f64 {
        let total = self.count();
        if total == 0.0 {
            return f64::NAN;
        }
        let rank = q * total;
        let (mut lower, mut below) = (0.0, 0.0);
        for (OrderedBound(upper), n) in &self.buckets {
            if *n >= rank {
                if upper.is_infinite() {
                    return lower;
                }
                let within = n - below;
                return lower
                    + (upper - lower)
                        * if within > 0.0 {
                            (rank - below) / within
                        } else {
                            1.0
                        };
            }
            (lower, below) = (*upper, *n);
        }
        lower
    }

    /// The finite upper bounds, for saying how coarse a quantile is.
    pub(crate) fn bounds(&self) -> Vec<f64> {
        self.buckets
            .keys()
            .map(|b| b.0)
            .filter(|b| b.is_finite())
            .collect()
    }
}
