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
    pub(crate) fn status(&self) -> StatusCode {
        match self {
            Rejection::NotFound { .. } => StatusCode::NOT_FOUND,
            Rejection::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            Rejection::MissingContentType | Rejection::UnsupportedContentType(_) => {
                StatusCode::UNSUPPORTED_MEDIA_TYPE
            }
            Rejection::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            Rejection::LongerThanDeclared { .. } | Rejection::BodyUnreadable(_) => {
                StatusCode::BAD_REQUEST
            }
            Rejection::BodyTimeout(_) => StatusCode::REQUEST_TIMEOUT,
            Rejection::Overloaded(_) => StatusCode::TOO_MANY_REQUESTS,
            Rejection::ReviewFailed(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
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
        let status = self.rejection.status();
        let mut response = error_response(status, &self.rejection.to_string());
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
fn error_response(status: StatusCode, message: &str) -> Response {
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
