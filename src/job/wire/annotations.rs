//! `metadata.annotations` as the rules read it: every key, and each value kept as its JSON text
//! until a rule asks for it.
//!
//! The rules read a handful of keys, while kube-apiserver sends every annotation, among them
//! kubectl's `last-applied-configuration`: a copy of the whole object as one JSON string, with an
//! escape every few bytes. Decoding that string into a `String` was a third of a 4 KB review's
//! instructions (callgrind); keeping its text costs half as much. What is accepted, and the
//! message for what is not, stay those of a `map[string]string` read into `BTreeMap<String,
//! String>`: a value that is not a string is refused with serde's own "invalid type" message, and
//! an escape that cannot be decoded is refused when read, not when asked for.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, Unexpected};
use serde_json::value::RawValue;

/// The annotations map: keys decoded, values kept as JSON string literals.
pub(crate) type Annotations = BTreeMap<String, AnnotationValue>;

/// One annotation value: a JSON string literal, quotes included, checked when read.
#[derive(Clone)]
pub(crate) struct AnnotationValue(Box<str>);

impl AnnotationValue {
    /// The decoded string. Borrowed when the literal has no escape (almost every value a rule
    /// reads: `"true"`, `"enabled"`).
    pub(crate) fn text(&self) -> Cow<'_, str> {
        let literal = &*self.0;
        // Checked when read: a JSON string literal, quoted at both ends.
        let inner = literal
            .strip_prefix('"')
            .and_then(|l| l.strip_suffix('"'))
            .unwrap_or(literal);
        if inner.contains('\\') {
            // Every escape was checked when read (surrogate escapes by decoding them), so
            // decoding cannot fail here.
            Cow::Owned(serde_json::from_str(literal).unwrap_or_default())
        } else {
            Cow::Borrowed(inner)
        }
    }
}

impl fmt::Debug for AnnotationValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.text(), f)
    }
}

/// Equal when the decoded strings are (`"a"` and `"\u0061"` are the same annotation).
impl PartialEq for AnnotationValue {
    fn eq(&self, other: &AnnotationValue) -> bool {
        self.text() == other.text()
    }
}

impl<'de> Deserialize<'de> for AnnotationValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<AnnotationValue, D::Error> {
        let raw = Box::<RawValue>::deserialize(deserializer)?;
        let literal = raw.get();
        if !literal.starts_with('"') {
            return Err(not_a_string(literal));
        }
        if super::strict::may_hold_surrogate_escape(literal.as_bytes()) {
            // serde_json checks every escape of a skipped string but one: `\uXXXX` naming half of a
            // surrogate pair, which a `String` refuses when unpaired (where the caller did not
            // rewrite it first). Refused here too, with the same message.
            serde_json::from_str::<String>(literal)
                .map_err(|e| de::Error::custom(super::strict::without_position(&e)))?;
        }
        Ok(AnnotationValue(raw.into()))
    }
}

/// The error a `String` gets for this (non-string) JSON value: serde's "invalid type: ...,
/// expected a string".
fn not_a_string<E: de::Error>(literal: &str) -> E {
    const EXPECTED: &str = "a string";
    let value: serde_json::Value = match serde_json::from_str(literal) {
        Ok(value) => value,
        Err(e) => return E::custom(super::strict::without_position(&e)),
    };
    let unexpected = match &value {
        serde_json::Value::Null => Unexpected::Unit,
        serde_json::Value::Bool(b) => Unexpected::Bool(*b),
        serde_json::Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
            (Some(u), _, _) => Unexpected::Unsigned(u),
            (None, Some(i), _) => Unexpected::Signed(i),
            (None, None, Some(f)) => Unexpected::Float(f),
            (None, None, None) => Unexpected::Other("number"),
        },
        serde_json::Value::String(_) => Unexpected::Other("string"),
        serde_json::Value::Array(_) => Unexpected::Seq,
        serde_json::Value::Object(_) => Unexpected::Map,
    };
    E::invalid_type(unexpected, &EXPECTED)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::wire::strict::Strict;

    /// `{"a": value}` read both ways through `job::wire::strict` and serde_path_to_error, as
    /// `JobObject::from_json` reads objects: the decoded map, or the error's path and message.
    fn both(
        value: &str,
    ) -> (
        Result<BTreeMap<String, String>, String>,
        Result<Annotations, String>,
    ) {
        let json = format!(r#"{{"a":{value}}}"#);
        fn read<T: for<'de> Deserialize<'de>>(json: &str) -> Result<T, String> {
            let mut de = serde_json::Deserializer::from_str(json);
            serde_path_to_error::deserialize::<_, T>(Strict(&mut de)).map_err(|e| {
                format!(
                    "{}: {}",
                    e.path(),
                    super::super::strict::without_position(e.inner())
                )
            })
        }
        (read(&json), read(&json))
    }

    #[test]
    fn values_read_and_refuse_exactly_as_strings_do() {
        let values = [
            r#""true""#,
            r#""""#,
            r#""with \"quotes\" and \\ and \n and \/""#,
            r#""\u0061\u00e9\u4e2d""#,
            r#""\ud83d\ude00""#,
            r#""\uD83D\uDE00""#,
            r#""\ud800""#,
            r#""\udc00x""#,
            r#""\ud800\u0041""#,
            r#""é中😀""#,
            r#""{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\"}""#,
            "1",
            "-1",
            "-0",
            "1.5",
            "1e2",
            "18446744073709551616",
            "true",
            "false",
            "null",
            "[]",
            r#"["a"]"#,
            "{}",
            r#"{"b":"c"}"#,
            r#""\x""#,
            r#""\u12""#,
        ];
        for value in values {
            let (strings, annotations) = both(value);
            match (&strings, &annotations) {
                (Ok(strings), Ok(annotations)) => {
                    let decoded: BTreeMap<String, String> = annotations
                        .iter()
                        .map(|(k, v)| (k.clone(), v.text().into_owned()))
                        .collect();
                    assert_eq!(strings, &decoded, "{value}");
                }
                (Err(s), Err(a)) => assert_eq!(s, a, "{value}"),
                _ => panic!("{value}: as strings {strings:?}, as annotations {annotations:?}"),
            }
        }
    }

    #[test]
    fn values_without_escapes_are_borrowed() {
        let (_, annotations) = both(r#""enabled""#);
        let annotations = annotations.unwrap();
        assert!(matches!(annotations["a"].text(), Cow::Borrowed("enabled")));
        let (_, annotations) = both(r#""en\u0061bled""#);
        let annotations = annotations.unwrap();
        assert!(matches!(annotations["a"].text(), Cow::Owned(ref s) if s == "enabled"));
        assert_eq!(annotations["a"], both(r#""enabled""#).1.unwrap()["a"]);
    }

    #[test]
    fn values_read_from_a_decoded_document_too() {
        // `jobgate check` reads YAML into values, then the model from them.
        let value = serde_json::json!({"a": "x\"y", "b": "true"});
        let annotations = Annotations::deserialize(Strict(value)).unwrap();
        assert_eq!(annotations["a"].text(), "x\"y");
        assert_eq!(annotations["b"].text(), "true");
        let err = Annotations::deserialize(Strict(serde_json::json!({"a": 1}))).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid type: integer `1`, expected a string"
        );
    }
}
