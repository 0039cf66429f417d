//! [`InternedStr`]: a string field whose value is almost always one of the constants upstream
//! defines for it (`restartPolicy`, `completionMode`, a pod failure policy rule's `action`, ...).
//! A known value is read as the constant's `&'static str`, so a review allocates nothing for it;
//! any other value is kept verbatim, as the rules print it (`Unsupported value: "Foo"`).

use std::borrow::Cow;
use std::fmt;
use std::ops::Deref;

use serde::de::{self, Deserialize, Deserializer, Unexpected};

/// A string read from JSON, shared with a `&'static str` when it is a known value. Compares,
/// hashes and prints as the string it holds: whether it was interned is not observable.
#[derive(Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct InternedStr(Cow<'static, str>);

/// The values upstream defines for the fields read as `InternedStr`.
const KNOWN_VALUES: &[&str] = &[
    // k8s.io/api batch/v1: CompletionMode, PodReplacementPolicy, PodFailurePolicyAction,
    // PodFailurePolicyOnExitCodesOperator, JobConditionType, and the kinds jobgate reads.
    "NonIndexed",
    "Indexed",
    "TerminatingOrFailed",
    "Failed",
    "FailJob",
    "FailIndex",
    "Ignore",
    "Count",
    "In",
    "NotIn",
    "Suspended",
    "Complete",
    "FailureTarget",
    "SuccessCriteriaMet",
    "Job",
    "CronJob",
    // `spec.managedBy`: batch/v1 JobControllerName, and Kueue's MultiKueue controller
    // (kueue apis/kueue/v1beta1 MultiKueueControllerName).
    "kubernetes.io/job-controller",
    "kueue.x-k8s.io/multikueue",
    // k8s.io/api core/v1: RestartPolicy, ConditionStatus, PodConditionType.
    "Always",
    "OnFailure",
    "Never",
    "True",
    "False",
    "Unknown",
    "DisruptionTarget",
    "Ready",
    "ContainersReady",
    "Initialized",
    "PodScheduled",
    "PodReadyToStartContainers",
    "PodResizePending",
    "PodResizeInProgress",
];

/// The constant equal to `value`, if it is a known value. A linear scan: string equality
/// compares lengths first, so most entries are passed over at once.
fn known(value: &str) -> Option<&'static str> {
    KNOWN_VALUES.iter().copied().find(|k| *k == value)
}

impl InternedStr {
    /// A value jobgate itself sets (a default), never allocated.
    pub(crate) const fn from_static(value: &'static str) -> InternedStr {
        InternedStr(Cow::Borrowed(value))
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }

    pub(crate) fn from_str(value: &str) -> InternedStr {
        match known(value) {
            Some(k) => InternedStr(Cow::Borrowed(k)),
            None => InternedStr(Cow::Owned(value.to_owned())),
        }
    }

    fn from_string(value: String) -> InternedStr {
        match known(&value) {
            Some(k) => InternedStr(Cow::Borrowed(k)),
            None => InternedStr(Cow::Owned(value)),
        }
    }
}

impl Deref for InternedStr {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl PartialEq<str> for InternedStr {
    fn eq(&self, other: &str) -> bool {
        *self.0 == *other
    }
}

impl PartialEq<&str> for InternedStr {
    fn eq(&self, other: &&str) -> bool {
        *self.0 == **other
    }
}

impl From<&'static str> for InternedStr {
    fn from(value: &'static str) -> InternedStr {
        InternedStr::from_static(value)
    }
}

/// As a `String` prints (`"Never"`), so the model's `Debug` reads as before.
impl fmt::Debug for InternedStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for InternedStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Read as serde reads a `String` (`deserialize_string`, the same visits and the same
/// "expected a string" in errors), so documents that decoded before decode alike.
impl<'de> Deserialize<'de> for InternedStr {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<InternedStr, D::Error> {
        deserializer.deserialize_string(InternedStrVisitor)
    }
}

struct InternedStrVisitor;

impl de::Visitor<'_> for InternedStrVisitor {
    type Value = InternedStr;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<InternedStr, E> {
        Ok(InternedStr::from_str(v))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<InternedStr, E> {
        Ok(InternedStr::from_string(v))
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<InternedStr, E> {
        match std::str::from_utf8(v) {
            Ok(s) => Ok(InternedStr::from_str(s)),
            Err(_) => Err(E::invalid_value(Unexpected::Bytes(v), &self)),
        }
    }

    fn visit_byte_buf<E: de::Error>(self, v: Vec<u8>) -> Result<InternedStr, E> {
        match String::from_utf8(v) {
            Ok(s) => Ok(InternedStr::from_string(s)),
            Err(e) => Err(E::invalid_value(Unexpected::Bytes(&e.into_bytes()), &self)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(json: &str) -> Result<Option<InternedStr>, String> {
        serde_json::from_str(json).map_err(|e| e.to_string())
    }

    #[test]
    fn known_values_are_shared_and_others_kept_verbatim() {
        let never = read(r#""Never""#).unwrap().unwrap();
        assert!(matches!(never.0, Cow::Borrowed(_)));
        assert_eq!(never, "Never");
        // Escaped, the same value: serde_json hands it over unescaped.
        let escaped = read(r#""N\u0065ver""#).unwrap().unwrap();
        assert!(matches!(escaped.0, Cow::Borrowed(_)));
        for other in ["never", "Never ", "", "\u{fffd}", "Foo"] {
            let json = serde_json::to_string(other).unwrap();
            let read = read(&json).unwrap().unwrap();
            assert!(matches!(read.0, Cow::Owned(_)), "{other:?}");
            assert_eq!(read.as_str(), other);
        }
        assert_eq!(read("null").unwrap(), None);
    }

    #[test]
    fn decodes_and_fails_as_a_string_does() {
        for json in [r#""In""#, r#""x""#, "7", "true", "[]", "{}", r#""\ud800""#] {
            let string: Result<Option<String>, String> =
                serde_json::from_str(json).map_err(|e| e.to_string());
            assert_eq!(
                read(json).map(|v| v.map(|v| v.as_str().to_owned())),
                string,
                "{json}"
            );
        }
        let value = serde_json::json!("OnFailure");
        assert_eq!(
            InternedStr::deserialize(&value).unwrap(),
            InternedStr::from_static("OnFailure")
        );
    }

    #[test]
    fn every_known_value_maps_to_itself() {
        for value in KNOWN_VALUES {
            assert_eq!(known(value), Some(*value));
        }
        assert_eq!(known("count"), None);
    }

    #[test]
    fn prints_as_the_string() {
        let v = InternedStr::from_static("Indexed");
        assert_eq!(format!("{v:?} {v}"), r#""Indexed" Indexed"#);
    }
}
