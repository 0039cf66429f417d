//! The webhook routes on the TLS port: `POST /mutate`, `/mutate/recovery`, `/validate`.
//! HTTP concerns only (method, content type, size and time limits, metrics, logs); the review
//! itself is `admission::review`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::Response;
use axum::routing::any;
use http_body_util::BodyExt;

use super::budget::{MemoryBudget, OverBudget};
use super::metrics::{
    EndpointLabels, RejectionLabels, RequestLabels, ServerMetrics, WarningLabels,
};
use crate::admission::{self, Endpoint};
use crate::job;

/// An UPDATE review carries the object twice and kube-apiserver allows ~3 MiB per object.
pub(crate) const MAX_BODY_BYTES: usize = 7 * 1024 * 1024;

#[derive(Clone)]
pub(crate) struct WebhookState {
    pub(crate) config: Arc<job::Config>,
    pub(crate) metrics: ServerMetrics,
    /// How long a client may take to send the body once headers arrived.
    pub(crate) body_timeout: Duration,
    pub(crate) max_body_bytes: usize,
    /// Request bytes held and reviewed at once.
    pub(crate) budget: MemoryBudget,
}

pub(crate) fn router(state: WebhookState) -> Router {
    let mut router = Router::new();
    for endpoint in Endpoint::ALL {
        router = router.route(
            endpoint.path(),
            any(move |s: State<WebhookState>, r: Request| handle(endpoint, s, r)),
        );
    }
    router.fallback(not_found).with_state(state)
}

/// Reads and drops what is left of a request body (at most `limit` bytes, within `timeout`)
/// before an early answer. hyper closes an HTTP/1.1 connection whose request body was not read,
/// and closing a socket with unread input makes the kernel send a reset that can destroy the
/// answer before the client reads it (`Broken pipe` for a client still sending); an HTTP/2
/// stream answered early is reset too, which curl 7.88 reports instead of the answer. Go's
/// net/http drains for the same reason (`maxPostHandlerReadBytes`). Nothing is kept: memory use
/// does not depend on the body. Returns whether the body was read to its end.
async fn drain(body: Body, limit: usize, timeout: Duration) -> bool {
    let mut body = body;
    let read = async {
        let mut seen = 0usize;
        while let Some(frame) = body.frame().await {
            match frame {
                Ok(frame) => {
                    if let Some(data) = frame.data_ref() {
                        seen = seen.saturating_add(data.len());
                        if seen > limit {
                            return false;
                        }
                    }
                }
                Err(_) => return false,
            }
        }
        true
    };
    tokio::time::timeout(timeout, read).await.unwrap_or(false)
}

/// An early answer after `drain`: when the body could not be read to its end, the connection is
/// closed after the answer rather than left with unread input.
async fn early(body: Body, state: &WebhookState, mut response: Response) -> Response {
    if !drain(body, state.max_body_bytes, state.body_timeout).await {
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

async fn not_found(State(state): State<WebhookState>, request: Request) -> Response {
    let paths: Vec<&str> = Endpoint::ALL.iter().map(|e| e.path()).collect();
    let (parts, body) = request.into_parts();
    let message = format!(
        "no webhook at {}: jobgate serves {}",
        parts.uri.path(),
        paths.join(", ")
    );
    early(
        body,
        &state,
        error_response(StatusCode::NOT_FOUND, &message),
    )
    .await
}

/// Why a body could not be read.
enum ReadError {
    TooLarge,
    Broken(String),
}

/// Reads a body into one buffer of `capacity` bytes, allocated up front: no growth, no copy
/// (a buffer this large is its own mapping, and pages are resident only once written).
async fn read_body(body: Body, capacity: usize) -> Result<Vec<u8>, ReadError> {
    let mut body = body;
    let mut out = Vec::with_capacity(capacity);
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| ReadError::Broken(e.to_string()))?;
        if let Some(data) = frame.data_ref() {
            if out.len() + data.len() > capacity {
                return Err(ReadError::TooLarge);
            }
            out.extend_from_slice(data);
        }
    }
    Ok(out)
}

/// Bodies larger than this are reviewed on the blocking pool, so a long review never holds up
/// small ones on the runtime's workers.
const REVIEW_INLINE_BYTES: usize = 256 * 1024;

async fn handle(
    endpoint: Endpoint,
    State(state): State<WebhookState>,
    request: Request,
) -> Response {
    let started = Instant::now();
    let reject = |status: StatusCode, message: &str| {
        state
            .metrics
            .rejected
            .get_or_create(&RejectionLabels {
                endpoint: endpoint.label(),
                code: status_label(status),
            })
            .inc();
        tracing::debug!(
            endpoint = endpoint.label(),
            status = status.as_u16(),
            message,
            "request rejected"
        );
        error_response(status, message)
    };
    if request.method() != Method::POST {
        let method = request.method().clone();
        let mut response = reject(
            StatusCode::METHOD_NOT_ALLOWED,
            &format!(
                "method {method} is not allowed at {}: use POST",
                endpoint.path()
            ),
        );
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("POST"));
        return early(request.into_body(), &state, response).await;
    }
    if let Err(message) = check_content_type(request.headers().get(header::CONTENT_TYPE)) {
        let response = reject(StatusCode::UNSUPPORTED_MEDIA_TYPE, &message);
        return early(request.into_body(), &state, response).await;
    }
    let too_large = || format!("request body exceeds {} bytes", state.max_body_bytes);
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > state.max_body_bytes as u64) {
        let response = reject(StatusCode::PAYLOAD_TOO_LARGE, &too_large());
        return early(request.into_body(), &state, response).await;
    }
    // Without a Content-Length (HTTP/1.1 chunked, or HTTP/2 without the header) the maximum is
    // reserved: kube-apiserver always declares the length.
    let capacity = declared.map_or(state.max_body_bytes, |len| len as usize);
    let overloaded = |over: OverBudget, what: &str| {
        if over.first_of_burst {
            let limits = state.budget.limits();
            tracing::warn!(
                endpoint = endpoint.label(),
                body_budget = limits.body_bytes,
                review_budget = limits.review_bytes,
                "memory budget exhausted: answering 429 until it frees up ({what})"
            );
        }
        let mut response = reject(
            StatusCode::TOO_MANY_REQUESTS,
            &format!("too many large requests in flight: {what} budget exhausted, retry later"),
        );
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        response
    };
    let body_reservation = match state.budget.reserve_body(capacity).await {
        Ok(r) => r,
        Err(over) => {
            let response = overloaded(over, "request body");
            return early(request.into_body(), &state, response).await;
        }
    };
    state
        .metrics
        .body_bytes_reserved
        .set(state.budget.reserved_bytes() as i64);
    let read = tokio::time::timeout(state.body_timeout, read_body(request.into_body(), capacity));
    let bytes = match read.await {
        Err(_) => {
            let message = format!("request body not received within {:?}", state.body_timeout);
            return reject(StatusCode::REQUEST_TIMEOUT, &message);
        }
        Ok(Err(ReadError::TooLarge)) => {
            let message = match declared {
                Some(len) => format!("request body exceeds its Content-Length of {len} bytes"),
                None => too_large(),
            };
            let status = if declared.is_some() {
                StatusCode::BAD_REQUEST
            } else {
                StatusCode::PAYLOAD_TOO_LARGE
            };
            return reject(status, &message);
        }
        Ok(Err(ReadError::Broken(e))) => {
            return reject(
                StatusCode::BAD_REQUEST,
                &format!("cannot read the request body: {e}"),
            );
        }
        Ok(Ok(bytes)) => bytes,
    };

    let outcome = {
        let _review_reservation = match state.budget.reserve_review(bytes.len()).await {
            Ok(r) => r,
            Err(over) => return overloaded(over, "review"),
        };
        state.metrics.in_flight.inc();
        let outcome = if bytes.len() <= REVIEW_INLINE_BYTES {
            admission::review(endpoint, &bytes, &state.config)
        } else {
            let config = state.config.clone();
            match tokio::task::spawn_blocking(move || admission::review(endpoint, &bytes, &config))
                .await
            {
                Ok(outcome) => outcome,
                Err(e) => {
                    state.metrics.in_flight.dec();
                    let message = format!("the review failed: {e}");
                    return reject(StatusCode::INTERNAL_SERVER_ERROR, &message);
                }
            }
        };
        state.metrics.in_flight.dec();
        outcome
    };
    drop(body_reservation);
    state
        .metrics
        .body_bytes_reserved
        .set(state.budget.reserved_bytes() as i64);

    let s = &outcome.summary;
    if outcome.http_status == 200 {
        state
            .metrics
            .requests
            .get_or_create(&RequestLabels::new(endpoint.label(), s))
            .inc();
        if s.warnings > 0 {
            state
                .metrics
                .warnings
                .get_or_create(&WarningLabels {
                    endpoint: endpoint.label(),
                    kind: s.kind,
                })
                .inc_by(s.warnings as u64);
        }
    } else {
        state
            .metrics
            .rejected
            .get_or_create(&RejectionLabels {
                endpoint: endpoint.label(),
                // 400 for an unreadable review, 500 for an answer that could not be encoded.
                code: status_label(
                    StatusCode::from_u16(outcome.http_status)
                        .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
                ),
            })
            .inc();
    }
    let elapsed = started.elapsed();
    state
        .metrics
        .duration
        .get_or_create(&EndpointLabels {
            endpoint: endpoint.label(),
        })
        .observe(elapsed.as_secs_f64());
    let span = tracing::info_span!(
        "review",
        endpoint = endpoint.label(),
        uid = %s.uid,
        kind = s.kind,
        namespace = %s.namespace,
        name = %s.name,
        operation = s.operation,
        dry_run = s.dry_run,
        allowed = s.allowed,
        patched = s.patched,
    );
    let _entered = span.enter();
    if outcome.http_status != 200 {
        tracing::debug!(status = outcome.http_status, "unreadable review");
    } else if !s.allowed {
        tracing::info!(micros = elapsed.as_micros() as u64, "denied");
    } else {
        tracing::debug!(
            micros = elapsed.as_micros() as u64,
            warnings = s.warnings,
            "reviewed"
        );
    }
    let status =
        StatusCode::from_u16(outcome.http_status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    json_response(status, outcome.body)
}

fn status_label(status: StatusCode) -> &'static str {
    match status.as_u16() {
        400 => "400",
        404 => "404",
        429 => "429",
        500 => "500",
        405 => "405",
        408 => "408",
        413 => "413",
        415 => "415",
        _ => "other",
    }
}

/// kube-apiserver sends `application/json`; parameters such as `charset=utf-8` are fine.
fn check_content_type(value: Option<&HeaderValue>) -> Result<(), String> {
    let Some(value) = value else {
        return Err("Content-Type is required: send application/json".into());
    };
    let text = value.to_str().unwrap_or("");
    let media = text.split(';').next().unwrap_or("").trim();
    if media.eq_ignore_ascii_case("application/json") {
        Ok(())
    } else {
        Err(format!(
            "unsupported Content-Type {text:?}: send application/json"
        ))
    }
}

fn json_response(status: StatusCode, body: Vec<u8>) -> Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// An HTTP error with a `metav1.Status` body, so every client gets the reason in one shape.
pub(crate) fn error_response(status: StatusCode, message: &str) -> Response {
    let reason = match status {
        StatusCode::NOT_FOUND => "NotFound",
        StatusCode::METHOD_NOT_ALLOWED => "MethodNotAllowed",
        StatusCode::UNSUPPORTED_MEDIA_TYPE => "UnsupportedMediaType",
        StatusCode::PAYLOAD_TOO_LARGE => "RequestEntityTooLarge",
        StatusCode::REQUEST_TIMEOUT => "Timeout",
        StatusCode::TOO_MANY_REQUESTS => "TooManyRequests",
        StatusCode::INTERNAL_SERVER_ERROR => "InternalError",
        _ => "BadRequest",
    };
    match admission::render_status(status.as_u16(), reason, message) {
        Ok(body) => json_response(status, body),
        Err(_) => json_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            admission::ENCODE_FAILED.to_vec(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_type_must_be_json_with_optional_parameters() {
        assert!(check_content_type(Some(&HeaderValue::from_static("application/json"))).is_ok());
        assert!(
            check_content_type(Some(&HeaderValue::from_static(
                "application/json; charset=utf-8"
            )))
            .is_ok()
        );
        assert_eq!(
            check_content_type(Some(&HeaderValue::from_static("text/plain"))).unwrap_err(),
            r#"unsupported Content-Type "text/plain": send application/json"#
        );
        assert_eq!(
            check_content_type(None).unwrap_err(),
            "Content-Type is required: send application/json"
        );
    }
}
