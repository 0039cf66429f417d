//! Why a request is answered with an HTTP error instead of a review: one variant per cause, each
//! with its status, its `metav1.Status` reason and its message, so every client gets the reason
//! in one shape.

use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::admission;

/// Which memory budget was exhausted (`budget`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Budget {
    /// Bytes of request bodies held at once.
    Body,
    /// Bytes of bodies under review at once.
    Review,
}

impl std::fmt::Display for Budget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Budget::Body => "request body",
            Budget::Review => "review",
        })
    }
}

/// An HTTP error the webhook port answers instead of a review.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Rejection {
    #[error("no webhook at {path}: jobgate serves {served}")]
    NotFound { path: String, served: String },
    #[error("method {method} is not allowed at {path}: use POST")]
    MethodNotAllowed { method: Method, path: String },
    #[error("Content-Type is required: send application/json")]
    MissingContentType,
    #[error("unsupported Content-Type {0:?}: send application/json")]
    UnsupportedContentType(String),
    /// The body (declared or read) is larger than the webhook reads.
    #[error("request body exceeds {limit} bytes")]
    TooLarge { limit: usize },
    /// More bytes arrived than the `Content-Length` said.
    #[error("request body exceeds its Content-Length of {declared} bytes")]
    LongerThanDeclared { declared: u64 },
    #[error("request body not received within {0:?}")]
    BodyTimeout(Duration),
    #[error("cannot read the request body: {0}")]
    BodyUnreadable(String),
    #[error("too many large requests in flight: {0} budget exhausted, retry later")]
    Overloaded(Budget),
    /// The review itself panicked or its task was lost: an outage of one request, not of the
    /// connection.
    #[error("the review failed: {0}")]
    ReviewFailed(String),
}

impl Rejection {
    /// The HTTP status and the `metav1.Status` reason of each cause (the `StatusReason`
    /// constants of k8s.io/apimachinery/pkg/apis/meta/v1/types.go, as kube-apiserver answers
    /// the same statuses).
    pub(crate) fn status_and_reason(&self) -> (StatusCode, &'static str) {
        match self {
            Rejection::NotFound { .. } => (StatusCode::NOT_FOUND, "NotFound"),
            Rejection::MethodNotAllowed { .. } => {
                (StatusCode::METHOD_NOT_ALLOWED, "MethodNotAllowed")
            }
            Rejection::MissingContentType | Rejection::UnsupportedContentType(_) => {
                (StatusCode::UNSUPPORTED_MEDIA_TYPE, "UnsupportedMediaType")
            }
            Rejection::TooLarge { .. } => (StatusCode::PAYLOAD_TOO_LARGE, "RequestEntityTooLarge"),
            Rejection::LongerThanDeclared { .. } | Rejection::BodyUnreadable(_) => {
                (StatusCode::BAD_REQUEST, "BadRequest")
            }
            Rejection::BodyTimeout(_) => (StatusCode::REQUEST_TIMEOUT, "Timeout"),
            Rejection::Overloaded(_) => (StatusCode::TOO_MANY_REQUESTS, "TooManyRequests"),
            Rejection::ReviewFailed(_) => (StatusCode::INTERNAL_SERVER_ERROR, "InternalError"),
        }
    }

    pub(crate) fn status(&self) -> StatusCode {
        self.status_and_reason().0
    }
}

/// The `code` label of `jobgate_admission_rejected_requests_total`.
pub(crate) fn status_label(status: StatusCode) -> &'static str {
    match status.as_u16() {
        400 => "400",
        404 => "404",
        405 => "405",
        408 => "408",
        413 => "413",
        415 => "415",
        429 => "429",
        500 => "500",
        _ => "other",
    }
}

/// A rejection as sent: `close` when the request body was not read to its end, so the
/// connection cannot carry another request (`Connection: close`).
#[derive(Debug)]
pub(crate) struct Rejected {
    pub(crate) rejection: Rejection,
    pub(crate) close: bool,
}

impl IntoResponse for Rejected {
    fn into_response(self) -> Response {
        let (status, reason) = self.rejection.status_and_reason();
        let mut response = error_response(status, reason, &self.rejection.to_string());
        let headers = response.headers_mut();
        match self.rejection {
            Rejection::MethodNotAllowed { .. } => {
                headers.insert(header::ALLOW, HeaderValue::from_static("POST"));
            }
            Rejection::Overloaded(_) => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            }
            _ => {}
        }
        if self.close {
            headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        response
    }
}

pub(crate) fn json_response(status: StatusCode, body: Vec<u8>) -> Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// An HTTP error with a `metav1.Status` body.
fn error_response(status: StatusCode, reason: &'static str, message: &str) -> Response {
    match admission::render_status(status, reason, message) {
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

    /// Each cause's status and reason are a pair kube-apiserver answers too, and its body says
    /// both with the message.
    #[test]
    fn every_rejection_says_its_status_reason_and_message_in_one_status_body() {
        let cases = [
            (
                Rejection::NotFound {
                    path: "/x".into(),
                    served: "/validate".into(),
                },
                404,
                "NotFound",
            ),
            (
                Rejection::MethodNotAllowed {
                    method: Method::GET,
                    path: "/validate".into(),
                },
                405,
                "MethodNotAllowed",
            ),
            (Rejection::MissingContentType, 415, "UnsupportedMediaType"),
            (
                Rejection::UnsupportedContentType("text/plain".into()),
                415,
                "UnsupportedMediaType",
            ),
            (
                Rejection::TooLarge { limit: 1 },
                413,
                "RequestEntityTooLarge",
            ),
            (
                Rejection::LongerThanDeclared { declared: 1 },
                400,
                "BadRequest",
            ),
            (
                Rejection::BodyTimeout(Duration::from_secs(1)),
                408,
                "Timeout",
            ),
            (Rejection::BodyUnreadable("eof".into()), 400, "BadRequest"),
            (Rejection::Overloaded(Budget::Body), 429, "TooManyRequests"),
            (
                Rejection::ReviewFailed("panic".into()),
                500,
                "InternalError",
            ),
        ];
        for (rejection, code, reason) in cases {
            let message = rejection.to_string();
            let (status, said) = rejection.status_and_reason();
            assert_eq!((status.as_u16(), said), (code, reason), "{message}");
            let body = admission::render_status(status, said, &message).unwrap();
            let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(body["code"], code, "{message}");
            assert_eq!(body["reason"], reason, "{message}");
            assert_eq!(body["message"], message.as_str());
        }
    }
}
