//! A string inside a JSON document held as a `serde_json::Value` (a manifest, a listed object),
//! by JSON Pointer (RFC 6901).

use serde_json::Value;

/// The string at `pointer`; `None` when it is absent or not a string.
pub(crate) fn str_at<'v>(v: &'v Value, pointer: &str) -> Option<&'v str> {
    v.pointer(pointer).and_then(Value::as_str)
}

/// The string at `pointer`, empty when it is absent or not a string: Go's zero value, which is
/// how the API's `omitempty` strings read.
pub(crate) fn str_or_empty<'v>(v: &'v Value, pointer: &str) -> &'v str {
    str_at(v, pointer).unwrap_or("")
}
