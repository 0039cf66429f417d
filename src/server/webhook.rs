//! The webhook routes on the TLS port: `POST /mutate`, `/mutate/recovery`, `/validate`.
//! HTTP concerns only (method, content type, size and time limits, metrics, logs); the review
//! itself is `admission::review`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use http_body_util::{BodyExt, LengthLimitError, Limited};

use super::metrics::{
    EndpointLabels, RejectionLabels, RequestLabels, ServerMetrics, WarningLabels,
};
use crate::admission::{self, Endpoint};
use crate::job;

/// An UPDATE review carries the object twice and kube-apiserver allows ~3 MiB per object.
pub const MAX_BODY_BYTES: usize = 7 * 1024 * 1024;

#[derive(Clone)]
pub struct WebhookState {
    pub config: Arc<job::Config>,
    pub metrics: ServerMetrics,
    /// How long a client may take to send the body once headers arrived.
    pub body_timeout: Duration,
    pub max_body_bytes: usize,
}

pub fn router(state: WebhookState) -> Router {
    let mut router = Router::new();
    for endpoint in Endpoint::ALL {
        router = router.route(
            endpoint.path(),
            any(move |s: State<WebhookState>, r: Request| handle(endpoint, s, r)),
        );
    }
    router.fallback(not_found).with_state(state)
}

/// Reads and drops a small request body before an early error answer: an HTTP/2 stream answered
/// before its body was read is reset, which some clients (curl 7.88) report instead of the answer.
async fn discard_small_body(body: Body) {
    const SMALL: usize = 64 * 1024;
    let _ = tokio::time::timeout(Duration::from_secs(1), Limited::new(body, SMALL).collect()).await;
}

async fn not_found(request: Request) -> Response {
    let paths: Vec<&str> = Endpoint::ALL.iter().map(|e| e.path()).collect();
    let (parts, body) = request.into_parts();
    discard_small_body(body).await;
    let message = format!(
        "no webhook at {}: jobgate serves {}",
        parts.uri.path(),
        paths.join(", ")
    );
    error_response(StatusCode::NOT_FOUND, &message)
}

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
        discard_small_body(request.into_body()).await;
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
        return response;
    }
    if let Err(message) = check_content_type(request.headers().get(header::CONTENT_TYPE)) {
        discard_small_body(request.into_body()).await;
        return reject(StatusCode::UNSUPPORTED_MEDIA_TYPE, &message);
    }
    let too_large = format!("request body exceeds {} bytes", state.max_body_bytes);
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > state.max_body_bytes as u64) {
        return reject(StatusCode::PAYLOAD_TOO_LARGE, &too_large);
    }
    let body = Limited::new(request.into_body(), state.max_body_bytes);
    let bytes = match tokio::time::timeout(state.body_timeout, body.collect()).await {
        Err(_) => {
            let message = format!("request body not received within {:?}", state.body_timeout);
            return reject(StatusCode::REQUEST_TIMEOUT, &message);
        }
        Ok(Err(e)) if e.downcast_ref::<LengthLimitError>().is_some() => {
            return reject(StatusCode::PAYLOAD_TOO_LARGE, &too_large);
        }
        Ok(Err(e)) => {
            return reject(
                StatusCode::BAD_REQUEST,
                &format!("cannot read the request body: {e}"),
            );
        }
        Ok(Ok(collected)) => collected.to_bytes(),
    };

    state.metrics.in_flight.inc();
    let outcome = admission::review(endpoint, &bytes, &state.config);
    state.metrics.in_flight.dec();

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
                code: "400",
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
pub fn error_response(status: StatusCode, message: &str) -> Response {
    let reason = match status {
        StatusCode::NOT_FOUND => "NotFound",
        StatusCode::METHOD_NOT_ALLOWED => "MethodNotAllowed",
        StatusCode::UNSUPPORTED_MEDIA_TYPE => "UnsupportedMediaType",
        StatusCode::PAYLOAD_TOO_LARGE => "RequestEntityTooLarge",
        StatusCode::REQUEST_TIMEOUT => "Timeout",
        _ => "BadRequest",
    };
    let body = serde_json::json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason, "code": status.as_u16(),
    });
    json_response(status, serde_json::to_vec(&body).unwrap_or_default()).into_response()
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
