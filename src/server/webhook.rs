//! The webhook routes on the TLS port: `POST /mutate`, `/mutate/recovery`, `/validate`.
//! HTTP concerns only: the extractor (`extract`) turns a request into bytes or a rejection, the
//! review itself is `admission::review`, and this file runs it and records the outcome.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::extract::{FromRef, FromRequest, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use tracing::Span;
use tracing::field::{Empty, Field, Value};

use super::extract::{self, BodyLimits, ReviewBody};
use super::metrics::{EndpointSeries, InFlight, RejectionLabels, ServerMetrics, WarningLabels};
use super::rejection::{Budget, Rejected, Rejection, json_response, status_label};
use crate::admission::{Endpoint, Reply, ReviewRecord};
use crate::job;

/// An UPDATE review carries the object twice and kube-apiserver allows ~3 MiB per object.
pub(crate) const MAX_BODY_BYTES: usize = 7 * 1024 * 1024;

/// Bodies larger than this are reviewed on the blocking pool, so a long review never holds up
/// small ones on the runtime's workers.
const REVIEW_INLINE_BYTES: usize = 256 * 1024;

/// What reviews a body: `admission::review`, or in tests one that misbehaves.
pub(crate) type Reviewer = fn(Endpoint, &[u8], &job::Config) -> Reply;

pub(crate) struct WebhookState {
    pub(crate) config: super::release::CurrentRules,
    pub(crate) metrics: ServerMetrics,
    pub(crate) limits: BodyLimits,
    pub(crate) reviewer: Reviewer,
}

/// What every request's handler gets: one shared handle (axum clones a handler's state for each
/// request), with each endpoint's metric series looked up once.
struct Shared {
    state: WebhookState,
    series: [EndpointSeries; Endpoint::ALL.len()],
}

impl FromRef<Arc<Shared>> for BodyLimits {
    fn from_ref(shared: &Arc<Shared>) -> BodyLimits {
        shared.state.limits.clone()
    }
}

pub(crate) fn router(state: WebhookState) -> Router {
    let series = Endpoint::ALL.map(|e| EndpointSeries::of(&state.metrics, e.label()));
    let shared = Arc::new(Shared { state, series });
    let mut router = Router::new();
    for (i, endpoint) in Endpoint::ALL.into_iter().enumerate() {
        router = router.route(
            endpoint.path(),
            any(move |State(shared): State<Arc<Shared>>, request: Request| {
                handle(endpoint, i, shared, request)
            }),
        );
    }
    router.fallback(not_found).with_state(shared)
}

async fn not_found(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let state = &shared.state;
    let paths: Vec<&str> = Endpoint::ALL.iter().map(|e| e.path()).collect();
    let (parts, body) = request.into_parts();
    let rejection = Rejection::NotFound {
        path: parts.uri.path().to_string(),
        served: paths.join(", "),
    };
    extract::early(&parts, body, &state.limits, rejection)
        .await
        .into_response()
}

/// One request at `endpoint` (`series` is its index in `Endpoint::ALL`), in one span opened as
/// its headers arrive, before the body is read: the review's fields start empty and are recorded
/// once it is answered (`record_review`), so a rejection is logged in the same span, as
/// kubewarden's policy-server does (`validate_handler`, `populate_span_with_admission_request_data`).
/// Every answer at an endpoint, rejections included, is timed from here (an unknown path is
/// answered 404 by `not_found`, untimed).
#[tracing::instrument(
    name = "review",
    skip_all,
    fields(
        endpoint = endpoint.label(),
        uid = Empty,
        kind = Empty,
        namespace = Empty,
        name = Empty,
        operation = Empty,
        dry_run = Empty,
        allowed = Empty,
        patched = Empty,
    )
)]
async fn handle(
    endpoint: Endpoint,
    series: usize,
    shared: Arc<Shared>,
    request: Request,
) -> Response {
    let started = Instant::now();
    let reviewed = match ReviewBody::from_request(request, &shared).await {
        Ok(body) => review(endpoint, &shared.state, body).await,
        Err(rejected) => Err(rejected),
    };
    let (metrics, series) = (&shared.state.metrics, &shared.series[series]);
    match reviewed {
        Ok(reply) => answer(endpoint, metrics, series, reply, started),
        Err(rejected) => {
            series.observe_duration(started.elapsed().as_secs_f64());
            reject(endpoint, metrics, rejected)
        }
    }
}

/// Reviews a body read whole, holding its reservations and the in-flight count for exactly as
/// long as the review runs (on the blocking pool, they move with it, and so does the span).
async fn review(
    endpoint: Endpoint,
    state: &WebhookState,
    body: ReviewBody,
) -> Result<Reply, Rejected> {
    let ReviewBody { bytes, reservation } = body;
    let review_reservation = match state.limits.budget.reserve_review(bytes.len()).await {
        Ok(r) => r,
        Err(over) => {
            let rejection =
                extract::overloaded(&state.limits.budget, over, Budget::Review, endpoint.path());
            return Err(Rejected {
                rejection,
                close: false,
            });
        }
    };
    let in_flight = InFlight::enter(&state.metrics.in_flight);
    let reviewer = state.reviewer;
    let config = state.config.get();
    let outcome = if bytes.len() <= REVIEW_INLINE_BYTES {
        let outcome =
            std::panic::catch_unwind(AssertUnwindSafe(|| reviewer(endpoint, &bytes, &config)));
        drop((in_flight, review_reservation, reservation));
        outcome.map_err(|panic| panic_message(panic.as_ref()))
    } else {
        let span = Span::current();
        tokio::task::spawn_blocking(move || {
            let _held = (in_flight, review_reservation, reservation);
            let _entered = span.enter();
            reviewer(endpoint, &bytes, &config)
        })
        .await
        .map_err(|e| match e.try_into_panic() {
            Ok(panic) => panic_message(panic.as_ref()),
            Err(e) => e.to_string(),
        })
    };
    outcome.map_err(|message| Rejected {
        rejection: Rejection::ReviewFailed(message),
        close: false,
    })
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    let text = panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str));
    match text {
        Some(text) => format!("the review panicked: {text}"),
        None => "the review panicked".to_string(),
    }
}

fn count_rejection(metrics: &ServerMetrics, endpoint: Endpoint, status: StatusCode) {
    metrics
        .rejected
        .get_or_create(&RejectionLabels {
            endpoint: endpoint.label(),
            code: status_label(status),
        })
        .inc();
}

/// Counts and logs a request answered with an HTTP error instead of a review, and renders it.
fn reject(endpoint: Endpoint, metrics: &ServerMetrics, rejected: Rejected) -> Response {
    let status = rejected.rejection.status();
    count_rejection(metrics, endpoint, status);
    tracing::debug!(
        endpoint = endpoint.label(),
        status = status.as_u16(),
        message = %rejected.rejection,
        "request rejected"
    );
    rejected.into_response()
}

/// The review's fields on the request's span (`handle`), once it is answered: all eight in one
/// record, because a JSON log layer re-reads and rewrites a span's fields on every record
/// (tracing-subscriber's `JsonFields`), and the deployments log JSON.
fn record_review(span: &Span, review: &ReviewRecord) {
    let Some(fields) = span.metadata().map(|m| m.fields()) else {
        return; // a disabled span records nothing
    };
    let field = |name: &str| fields.field(name);
    let (
        Some(uid),
        Some(kind),
        Some(namespace),
        Some(name),
        Some(operation),
        Some(dry_run),
        Some(allowed),
        Some(patched),
    ) = (
        field("uid"),
        field("kind"),
        field("namespace"),
        field("name"),
        field("operation"),
        field("dry_run"),
        field("allowed"),
        field("patched"),
    )
    else {
        return;
    };
    let uid_value = tracing::field::display(&review.uid);
    let namespace_value = tracing::field::display(&review.namespace);
    let name_value = tracing::field::display(&review.name);
    let values: [(&Field, Option<&dyn Value>); 8] = [
        (&uid, Some(&uid_value)),
        (&kind, Some(&review.kind)),
        (&namespace, Some(&namespace_value)),
        (&name, Some(&name_value)),
        (&operation, Some(&review.operation)),
        (&dry_run, Some(&review.dry_run)),
        (&allowed, Some(&review.allowed)),
        (&patched, Some(&review.patched)),
    ];
    span.record_all(&fields.value_set(&values));
}

/// Records a review's outcome (metrics, the span's fields) and renders it.
fn answer(
    endpoint: Endpoint,
    metrics: &ServerMetrics,
    series: &EndpointSeries,
    outcome: Reply,
    started: Instant,
) -> Response {
    // 400 for an unreadable review, 500 for an answer that could not be encoded.
    let status = outcome.http_status;
    let s = &outcome.summary;
    if status == StatusCode::OK {
        series.count(metrics, s);
        if s.warnings > 0 {
            metrics
                .warnings
                .get_or_create(&WarningLabels {
                    endpoint: endpoint.label(),
                    kind: s.kind,
                })
                .inc_by(s.warnings as u64);
        }
    } else {
        count_rejection(metrics, endpoint, status);
    }
    let elapsed = started.elapsed();
    series.observe_duration(elapsed.as_secs_f64());
    record_review(&Span::current(), s);
    if status != StatusCode::OK {
        tracing::debug!(status = status.as_u16(), "unreadable review");
    } else if !s.allowed {
        tracing::info!(micros = elapsed.as_micros() as u64, "denied");
    } else {
        tracing::debug!(
            micros = elapsed.as_micros() as u64,
            warnings = s.warnings,
            "reviewed"
        );
    }
    json_response(status, outcome.body)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use http_body_util::{BodyExt, Full};
    use hyper::body::Bytes;
    use prometheus_client::registry::Registry;

    use super::*;
    use crate::server::budget::{BudgetLimits, MemoryBudget};

    fn panicking(_: Endpoint, _: &[u8], _: &job::Config) -> Reply {
        panic!("a rule that panics")
    }

    /// Serves the webhook router with `reviewer` over plain HTTP/1.1 on a loopback port.
    async fn serve(reviewer: Reviewer) -> (std::net::SocketAddr, ServerMetrics) {
        let metrics = ServerMetrics::register(&mut Registry::default());
        let state = WebhookState {
            config: crate::server::release::CurrentRules::new(job::Config::default()),
            limits: BodyLimits {
                body_timeout: Duration::from_secs(5),
                max_body_bytes: MAX_BODY_BYTES,
                budget: MemoryBudget::new(
                    BudgetLimits::new(
                        32 << 20,
                        MAX_BODY_BYTES,
                        Duration::from_secs(1),
                        Duration::from_secs(1),
                    ),
                    metrics.body_bytes_reserved.clone(),
                ),
            },
            metrics: metrics.clone(),
            reviewer,
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, router(state)).await });
        (addr, metrics)
    }

    async fn post(addr: std::net::SocketAddr, body: Vec<u8>) -> (u16, String) {
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (mut sender, conn) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tcp))
                .await
                .unwrap();
        tokio::spawn(conn);
        let request = hyper::Request::post("/validate")
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(body)))
            .unwrap();
        let response = sender.send_request(request).await.unwrap();
        let status = response.status().as_u16();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8_lossy(&body).into_owned())
    }

    /// A panic in a review (inline, or on the blocking pool for a large body) is that request's
    /// 500, not the connection's; the in-flight and reserved-bytes gauges come back to 0.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_review_that_panics_is_a_500_and_every_gauge_returns_to_zero() {
        let (addr, metrics) = serve(panicking).await;
        for len in [100, REVIEW_INLINE_BYTES + 1] {
            let (status, body) = post(addr, vec![b' '; len]).await;
            assert_eq!(status, 500, "{len} bytes: {body}");
            let message =
                serde_json::from_str::<serde_json::Value>(&body).unwrap()["message"].clone();
            assert_eq!(
                message, "the review failed: the review panicked: a rule that panics",
                "{len} bytes"
            );
            assert_eq!(metrics.in_flight.get(), 0, "{len} bytes");
            assert_eq!(metrics.body_bytes_reserved.get(), 0, "{len} bytes");
        }
        let rejected = metrics
            .rejected
            .get_or_create(&RejectionLabels {
                endpoint: "validate",
                code: "500",
            })
            .get();
        assert_eq!(rejected, 2);
        // Both rejections are timed as answers are.
        let mut registry = Registry::default();
        registry.register("duration", "", metrics.duration.clone());
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        assert!(
            text.contains(r#"duration_count{endpoint="validate"} 2"#),
            "{text}"
        );
    }
}
