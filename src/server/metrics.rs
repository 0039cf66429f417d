//! Prometheus metrics of the webhook server (`prometheus-client`, names prefixed `jobgate_`).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// Reviews take microseconds; buckets start at 50 µs so a p99 can be read off them.
pub(crate) const DURATION_BUCKETS: [f64; 14] = [
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
];

/// Labels of `jobgate_admission_requests_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    /// `mutate`, `mutate-recovery` or `validate`.
    pub endpoint: &'static str,
    /// `Job`, `CronJob`, `other` (a kind jobgate lets through), or `""` when unreadable.
    pub kind: &'static str,
    /// `CREATE`, `UPDATE`, `DELETE`, `CONNECT`, or `""` when missing or unknown.
    pub operation: &'static str,
    /// `true` or `false`.
    pub allowed: &'static str,
    /// `true` when allowed with a non-empty patch, else `false`.
    pub patched: &'static str,
}

/// Labels of `jobgate_admission_duration_seconds`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct EndpointLabels {
    /// `mutate`, `mutate-recovery` or `validate`.
    pub endpoint: &'static str,
}

/// Labels of `jobgate_admission_warnings_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct WarningLabels {
    /// `mutate`, `mutate-recovery` or `validate`.
    pub endpoint: &'static str,
    /// `Job` or `CronJob`.
    pub kind: &'static str,
}

/// The `code` values of `jobgate_admission_rejected_requests_total` (`rejection::status_label`).
pub(crate) const REJECTION_CODES: [&str; 9] = [
    "400", "404", "405", "408", "413", "415", "429", "500", "other",
];

/// The kinds and operations the webhook rules send (deploy/base): the series a fresh install
/// shows as 0.
const REVIEWED_KINDS: [&str; 2] = ["Job", "CronJob"];
const REVIEWED_OPERATIONS: [&str; 2] = ["CREATE", "UPDATE"];

/// Labels of `jobgate_admission_rejected_requests_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RejectionLabels {
    /// `mutate`, `mutate-recovery` or `validate`.
    pub endpoint: &'static str,
    /// The HTTP status sent without a review (400, 404, 405, 408, 413, 415, 429, 500, or
    /// `other`).
    pub code: &'static str,
}

/// Labels of `jobgate_kubernetes_rules_info`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct RulesLabels {
    /// The cluster's release, e.g. `1.39`: as the cluster reports it, as set
    /// (`--kubernetes-version`), or the default.
    pub kubernetes_version: String,
    /// The release whose kube-apiserver rules judge it: the same, or the newest jobgate knows.
    pub rules_version: String,
    /// `true` when jobgate knows the cluster's release, `false` when it is newer.
    pub known: &'static str,
    /// Where the release came from: `cluster` (its `/version`), `setting`, or `default` (not
    /// found out: the newest released minor).
    pub source: &'static str,
}

/// `jobgate_kubernetes_rules_info{kubernetes_version, rules_version, known, source} 1`: which
/// release's rules `serve` follows now, so that a cluster upgraded past what jobgate knows, or
/// one whose release could not be found out, shows.
#[derive(Clone, Debug)]
pub(crate) struct RulesInfo(Family<RulesLabels, Gauge>);

impl RulesInfo {
    pub(crate) fn register(registry: &mut Registry) -> RulesInfo {
        let family = Family::<RulesLabels, Gauge>::default();
        registry.register(
            "jobgate_kubernetes_rules_info",
            "The cluster's Kubernetes release, where it came from, and the release whose rules judge it",
            family.clone(),
        );
        RulesInfo(family)
    }

    /// One series, for the rules `config` holds.
    pub(crate) fn show(&self, config: &crate::job::Config) {
        let release = config.cluster.release();
        self.0.clear();
        self.0
            .get_or_create(&RulesLabels {
                kubernetes_version: release.to_string(),
                rules_version: release.rules().to_string(),
                known: if release.is_known() { "true" } else { "false" },
                source: config.release_source.as_str(),
            })
            .set(1);
    }
}

/// The webhook server's metrics; cheap to clone (all handles are shared).
#[derive(Clone, Debug)]
pub struct ServerMetrics {
    /// `jobgate_admission_requests_total{endpoint, kind, operation, allowed, patched}`: reviews
    /// answered (HTTP 200).
    pub requests: Family<RequestLabels, Counter>,
    /// `jobgate_admission_duration_seconds{endpoint}`: time from request headers to response
    /// body, in seconds.
    pub duration: Family<EndpointLabels, Histogram>,
    /// `jobgate_admission_in_flight_requests`: reviews being processed now.
    pub(crate) in_flight: Gauge,
    /// `jobgate_admission_rejected_requests_total{endpoint, code}`: requests answered with an
    /// HTTP error instead of a review.
    pub rejected: Family<RejectionLabels, Counter>,
    /// `jobgate_admission_warnings_total{endpoint, kind}`: warnings sent in review responses.
    pub warnings: Family<WarningLabels, Counter>,
    /// `jobgate_admission_body_bytes_reserved`: request-body bytes reserved from the memory
    /// budget now, in bytes.
    pub(crate) body_bytes_reserved: Gauge,
}

impl ServerMetrics {
    /// Creates the metrics and registers them in `registry`.
    pub fn register(registry: &mut Registry) -> ServerMetrics {
        let metrics = ServerMetrics {
            requests: Family::default(),
            duration: Family::new_with_constructor(|| Histogram::new(DURATION_BUCKETS)),
            in_flight: Gauge::default(),
            rejected: Family::default(),
            warnings: Family::default(),
            body_bytes_reserved: Gauge::default(),
        };
        registry.register(
            "jobgate_admission_requests",
            "AdmissionReview requests answered, by endpoint, kind, operation and outcome",
            metrics.requests.clone(),
        );
        registry.register(
            "jobgate_admission_duration_seconds",
            "Time from request headers to response body, by endpoint",
            metrics.duration.clone(),
        );
        registry.register(
            "jobgate_admission_in_flight_requests",
            "Reviews being processed now",
            metrics.in_flight.clone(),
        );
        registry.register(
            "jobgate_admission_rejected_requests",
            "Requests answered with an HTTP error instead of a review, by endpoint and status code",
            metrics.rejected.clone(),
        );
        registry.register(
            "jobgate_admission_warnings",
            "Warnings sent in review responses (policies at warn, mutation notes), by endpoint and kind",
            metrics.warnings.clone(),
        );
        registry.register(
            "jobgate_admission_body_bytes_reserved",
            "Request-body bytes reserved from the memory budget now (--body-memory-budget)",
            metrics.body_bytes_reserved.clone(),
        );
        metrics.start_at_zero();
        metrics
    }

    /// Creates every series the shipped alerts and dashboard read, at 0, for the label values
    /// known up front: a fresh install shows 0 (and rates of 0), not "No data", and an alert
    /// on `rate(...) > 0` sees its first increase.
    fn start_at_zero(&self) {
        for endpoint in crate::admission::Endpoint::ALL.map(crate::admission::Endpoint::label) {
            // The duration and the answered-review series: the ones the webhook looks up.
            EndpointSeries::of(self, endpoint);
            for code in REJECTION_CODES {
                self.rejected
                    .get_or_create_owned(&RejectionLabels { endpoint, code });
            }
            for kind in REVIEWED_KINDS {
                self.warnings
                    .get_or_create_owned(&WarningLabels { endpoint, kind });
            }
        }
    }
}

/// Whether `endpoint` can answer a review so: only the mutating endpoints patch, and only what
/// they allow.
fn can_answer(endpoint: &str, allowed: bool, patched: bool) -> bool {
    !patched || (allowed && endpoint != "validate")
}

fn bool_label(b: bool) -> &'static str {
    if b { "true" } else { "false" }
}

impl RequestLabels {
    pub(crate) fn new(
        endpoint: &'static str,
        summary: &crate::admission::ReviewRecord,
    ) -> RequestLabels {
        RequestLabels {
            endpoint,
            kind: summary.kind,
            operation: summary.operation,
            allowed: bool_label(summary.allowed),
            patched: bool_label(summary.patched),
        }
    }
}

/// The series one endpoint's answered reviews update, looked up once when the server starts: a
/// `Family` lookup hashes the label set and takes the family's lock on every request, a lock
/// both runtime workers contend for.
#[derive(Clone, Debug)]
pub(crate) struct EndpointSeries {
    endpoint: &'static str,
    duration: Histogram,
    /// `requests` by kind, operation (as `REVIEWED_KINDS`, `REVIEWED_OPERATIONS`), allowed and
    /// patched, for the answers the endpoint can give (`start_at_zero` creates them through
    /// here); any other is looked up in the family.
    requests: [[[[Option<Counter>; 2]; 2]; REVIEWED_OPERATIONS.len()]; REVIEWED_KINDS.len()],
}

impl EndpointSeries {
    pub(crate) fn of(metrics: &ServerMetrics, endpoint: &'static str) -> EndpointSeries {
        let counter = |kind, operation, allowed, patched| {
            can_answer(endpoint, allowed, patched).then(|| {
                metrics.requests.get_or_create_owned(&RequestLabels {
                    endpoint,
                    kind,
                    operation,
                    allowed: bool_label(allowed),
                    patched: bool_label(patched),
                })
            })
        };
        EndpointSeries {
            endpoint,
            duration: metrics
                .duration
                .get_or_create_owned(&EndpointLabels { endpoint }),
            requests: REVIEWED_KINDS.map(|kind| {
                REVIEWED_OPERATIONS.map(|operation| {
                    [false, true].map(|allowed| {
                        [false, true].map(|patched| counter(kind, operation, allowed, patched))
                    })
                })
            }),
        }
    }

    /// Counts an answered review in `jobgate_admission_requests_total`.
    pub(crate) fn count(&self, metrics: &ServerMetrics, summary: &crate::admission::ReviewRecord) {
        let kind = REVIEWED_KINDS.iter().position(|k| *k == summary.kind);
        let operation = REVIEWED_OPERATIONS
            .iter()
            .position(|o| *o == summary.operation);
        let series = kind.zip(operation).and_then(|(k, o)| {
            self.requests[k][o][usize::from(summary.allowed)][usize::from(summary.patched)].as_ref()
        });
        match series {
            Some(counter) => {
                counter.inc();
            }
            None => {
                metrics
                    .requests
                    .get_or_create(&RequestLabels::new(self.endpoint, summary))
                    .inc();
            }
        }
    }

    /// Records a request's time in `jobgate_admission_duration_seconds`.
    pub(crate) fn observe_duration(&self, seconds: f64) {
        self.duration.observe(seconds);
    }
}

/// One review counted in `jobgate_admission_in_flight_requests` for as long as it lives: the
/// gauge goes down on every path, a cancelled request or a panic included.
pub(crate) struct InFlight(Gauge);

impl InFlight {
    pub(crate) fn enter(gauge: &Gauge) -> InFlight {
        gauge.inc();
        InFlight(gauge.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.dec();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(registry: &Registry) -> String {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, registry).expect("encode");
        text
    }

    #[test]
    fn a_fresh_server_exports_zero_for_every_series_an_alert_or_panel_reads() {
        let mut registry = Registry::default();
        ServerMetrics::register(&mut registry);
        let text = encoded(&registry);
        for line in [
            r#"jobgate_admission_rejected_requests_total{endpoint="validate",code="429"} 0"#,
            r#"jobgate_admission_rejected_requests_total{endpoint="mutate",code="500"} 0"#,
            r#"jobgate_admission_requests_total{endpoint="validate",kind="Job",operation="CREATE",allowed="false",patched="false"} 0"#,
            r#"jobgate_admission_requests_total{endpoint="mutate-recovery",kind="CronJob",operation="UPDATE",allowed="true",patched="true"} 0"#,
            r#"jobgate_admission_warnings_total{endpoint="validate",kind="CronJob"} 0"#,
            r#"jobgate_admission_duration_seconds_count{endpoint="mutate"} 0"#,
        ] {
            assert!(text.contains(line), "{line} missing from\n{text}");
        }
        // The validating endpoint never patches: no series that could only mislead.
        assert!(!text.contains(
            r#"endpoint="validate",kind="Job",operation="CREATE",allowed="true",patched="true""#
        ));
        // 3 endpoints x 9 codes.
        assert_eq!(
            text.matches("jobgate_admission_rejected_requests_total{")
                .count(),
            27
        );
    }

    /// The series the webhook looks up at start-up are the ones a fresh server exports, no more,
    /// and a review counted through them is counted in the family's series.
    #[test]
    fn endpoint_series_count_into_the_exported_series_and_add_none() {
        let mut registry = Registry::default();
        let metrics = ServerMetrics::register(&mut registry);
        let fresh = encoded(&registry);
        let series = crate::admission::Endpoint::ALL
            .map(|e| EndpointSeries::of(&metrics, crate::admission::Endpoint::label(e)));
        assert_eq!(encoded(&registry), fresh);
        let review = |kind, allowed, patched| crate::admission::ReviewRecord {
            kind,
            operation: "CREATE",
            allowed,
            patched,
            ..Default::default()
        };
        let [mutate, _, validate] = &series;
        validate.count(&metrics, &review("Job", false, false));
        mutate.count(&metrics, &review("CronJob", true, true));
        mutate.count(&metrics, &review("CronJob", true, true));
        // A kind jobgate lets through has no series up front: it is looked up and created.
        validate.count(&metrics, &review("other", true, false));
        validate.observe_duration(0.001);
        let text = encoded(&registry);
        for line in [
            r#"jobgate_admission_requests_total{endpoint="validate",kind="Job",operation="CREATE",allowed="false",patched="false"} 1"#,
            r#"jobgate_admission_requests_total{endpoint="mutate",kind="CronJob",operation="CREATE",allowed="true",patched="true"} 2"#,
            r#"jobgate_admission_requests_total{endpoint="validate",kind="other",operation="CREATE",allowed="true",patched="false"} 1"#,
            r#"jobgate_admission_duration_seconds_count{endpoint="validate"} 1"#,
        ] {
            assert!(text.contains(line), "{line} missing from\n{text}");
        }
    }

    #[test]
    fn every_rejection_code_is_one_status_label_gives() {
        for code in REJECTION_CODES.iter().filter(|c| **c != "other") {
            let status = code
                .parse()
                .ok()
                .and_then(|n| axum::http::StatusCode::from_u16(n).ok());
            assert_eq!(
                status.map(super::super::rejection::status_label),
                Some(*code)
            );
        }
    }
}
