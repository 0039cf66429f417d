//! The request extractor of the webhook routes: method, content type, size, memory budget and
//! body timeout, in that order, ending in the body's bytes or a [`Rejected`] answer. Every limit
//! that does not need the body is checked before any of it is read.

use std::time::Duration;

use axum::body::Body;
use axum::extract::{FromRef, FromRequest, Request};
use axum::http::request::Parts;
use axum::http::{HeaderValue, Method, header};
use http_body_util::BodyExt;

use super::budget::{MemoryBudget, OverBudget, Reservation};
use super::rejection::{Budget, Rejected, Rejection};

/// What the extractor enforces; shared by all requests, cheap to clone.
#[derive(Clone, Debug)]
pub(crate) struct BodyLimits {
    /// How long a client may take to send the body once headers arrived.
    pub(crate) body_timeout: Duration,
    pub(crate) max_body_bytes: usize,
    /// Request bytes held and reviewed at once.
    pub(crate) budget: MemoryBudget,
}

/// A request body read whole, with its bytes reserved from the memory budget until dropped.
pub(crate) struct ReviewBody {
    pub(crate) bytes: Vec<u8>,
    pub(crate) reservation: Reservation,
}

impl<S> FromRequest<S> for ReviewBody
where
    BodyLimits: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = Rejected;

    async fn from_request(request: Request, state: &S) -> Result<ReviewBody, Rejected> {
        let limits = BodyLimits::from_ref(state);
        let (parts, body) = request.into_parts();
        let declared = match check_head(&parts, &limits) {
            Ok(declared) => declared,
            Err(rejection) => return Err(early(&parts, body, &limits, rejection).await),
        };
        // Without a Content-Length (HTTP/1.1 chunked, or HTTP/2 without the header) the maximum
        // is reserved: kube-apiserver always declares the length.
        let capacity = declared.map_or(limits.max_body_bytes, |len| len as usize);
        let reservation = match limits.budget.reserve_body(capacity).await {
            Ok(r) => r,
            Err(over) => {
                let rejection = overloaded(&limits.budget, over, Budget::Body, parts.uri.path());
                return Err(early(&parts, body, &limits, rejection).await);
            }
        };
        let read = tokio::time::timeout(limits.body_timeout, read_body(body, capacity));
        let bytes = match read.await {
            Ok(Ok(bytes)) => bytes,
            Ok(Err(rejection)) => {
                let rejection = match (rejection, declared) {
                    (Rejection::TooLarge { .. }, Some(declared)) => {
                        Rejection::LongerThanDeclared { declared }
                    }
                    (Rejection::TooLarge { .. }, None) => Rejection::TooLarge {
                        limit: limits.max_body_bytes,
                    },
                    (other, _) => other,
                };
                return Err(Rejected {
                    rejection,
                    close: true,
                });
            }
            Err(_) => {
                return Err(Rejected {
                    rejection: Rejection::BodyTimeout(limits.body_timeout),
                    close: true,
                });
            }
        };
        Ok(ReviewBody { bytes, reservation })
    }
}

/// What the headers alone decide; returns the declared length.
fn check_head(parts: &Parts, limits: &BodyLimits) -> Result<Option<u64>, Rejection> {
    if parts.method != Method::POST {
        return Err(Rejection::MethodNotAllowed {
            method: parts.method.clone(),
            path: parts.uri.path().to_string(),
        });
    }
    check_content_type(parts.headers.get(header::CONTENT_TYPE))?;
    let declared = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > limits.max_body_bytes as u64) {
        return Err(Rejection::TooLarge {
            limit: limits.max_body_bytes,
        });
    }
    Ok(declared)
}

/// kube-apiserver sends `application/json`; parameters such as `charset=utf-8` are fine.
fn check_content_type(value: Option<&HeaderValue>) -> Result<(), Rejection> {
    let Some(value) = value else {
        return Err(Rejection::MissingContentType);
    };
    let text = value.to_str().unwrap_or("");
    let media = text.split(';').next().unwrap_or("").trim();
    if media.eq_ignore_ascii_case("application/json") {
        Ok(())
    } else {
        Err(Rejection::UnsupportedContentType(text.to_string()))
    }
}

/// The first refusal of a burst is logged once, with the limits that caused it.
pub(crate) fn overloaded(
    budget: &MemoryBudget,
    over: OverBudget,
    which: Budget,
    path: &str,
) -> Rejection {
    if over.first_of_burst {
        let limits = budget.limits();
        tracing::warn!(
            path,
            body_budget = limits.body_bytes,
            review_budget = limits.review_bytes,
            "memory budget exhausted: answering 429 until it frees up ({which})"
        );
    }
    Rejection::Overloaded(which)
}

/// Reads a body into one buffer of `capacity` bytes, allocated up front: no growth, no copy
/// (a buffer this large is its own mapping, and pages are resident only once written).
async fn read_body(body: Body, capacity: usize) -> Result<Vec<u8>, Rejection> {
    let mut body = body;
    let mut out = Vec::with_capacity(capacity);
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| Rejection::BodyUnreadable(e.to_string()))?;
        if let Some(data) = frame.data_ref() {
            if out.len() + data.len() > capacity {
                return Err(Rejection::TooLarge { limit: capacity });
            }
            out.extend_from_slice(data);
        }
    }
    Ok(out)
}

/// Reads and drops what is left of a request body (at most `limit` bytes, within `timeout`)
/// before an early answer. An HTTP/2 stream answered before its body ends is reset, which curl
/// 7.88 reports instead of the answer; on HTTP/1.1 hyper closes a connection whose request body
/// was not read, and `linger` keeps reading after the answer so that unread input does not turn
/// the close into a reset. Go's net/http drains for the same reason (`maxPostHandlerReadBytes`).
/// Nothing is kept: memory use does not depend on the body. Returns whether the body was read to
/// its end.
async fn drain(body: Body, limit: usize, timeout: Duration) -> bool {
    let mut body = body;
    let read = async {
        let mut seen = 0usize;
        while let Some(frame) = body.frame().await {
            let Ok(frame) = frame else { return false };
            if let Some(data) = frame.data_ref() {
                seen = seen.saturating_add(data.len());
                if seen > limit {
                    return false;
                }
            }
        }
        true
    };
    tokio::time::timeout(timeout, read).await.unwrap_or(false)
}

/// An answer decided before the body was read: drain it first; when it could not be read to its
/// end, the connection is closed after the answer rather than left with unread input. A client
/// that asked `Expect: 100-continue` has not sent its body and will not once it gets a final
/// status (RFC 9110 section 10.1.1); hyper sends `100 Continue` only when the body is polled, so
/// that body is left alone.
pub(crate) async fn early(
    parts: &Parts,
    body: Body,
    limits: &BodyLimits,
    rejection: Rejection,
) -> Rejected {
    let expects_continue = parts
        .headers
        .get(header::EXPECT)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
    let drained =
        !expects_continue && drain(body, limits.max_body_bytes, limits.body_timeout).await;
    Rejected {
        rejection,
        close: !drained,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_type_must_be_json_with_optional_parameters() {
        let check = |v: Option<&'static str>| {
            check_content_type(v.map(HeaderValue::from_static).as_ref()).map_err(|r| r.to_string())
        };
        assert!(check(Some("application/json")).is_ok());
        assert!(check(Some("application/json; charset=utf-8")).is_ok());
        assert_eq!(
            check(Some("text/plain")).unwrap_err(),
            r#"unsupported Content-Type "text/plain": send application/json"#
        );
        assert_eq!(
            check(None).unwrap_err(),
            "Content-Type is required: send application/json"
        );
    }
}
