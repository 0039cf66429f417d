//! Reading JSON into jobgate's typed objects the way kube-apiserver's decoder
//! (`sigs.k8s.io/json`, Go's `encoding/json`) reads it into Go structs, where serde differs:
//! - a struct is read from a JSON object only (serde's derived structs also read arrays, so
//!   `"metadata": ["a"]` would be a metadata whose first field is "a"; Go answers "cannot
//!   unmarshal array into Go struct field");
//! - `-0` is the integer 0 (serde_json reads it as the float `-0.0`, which no integer field
//!   accepts; Go's `strconv.ParseInt("-0")` is 0).
//!
//! - an unpaired UTF-16 surrogate escape (`"\ud800"`) is U+FFFD (Go's `unquote` replaces it;
//!   serde_json refuses the whole document): `go_surrogates` rewrites such escapes first.
//!
//! `Strict` wraps any serde `Deserializer` and applies the first two rules at every depth.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// A deserializer reading structs from objects only, `-0` as 0.
pub(crate) struct Strict<D>(pub(crate) D);

macro_rules! forward {
    ($($method:ident),* $(,)?) => {
        $(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
                self.0.$method(StrictVisitor(visitor))
            }
        )*
    };
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Strict<D> {
    type Error = D::Error;

    forward!(
        deserialize_any,
        deserialize_bool,
        deserialize_i8,
        deserialize_i16,
        deserialize_i32,
        deserialize_i64,
        deserialize_i128,
        deserialize_u8,
        deserialize_u16,
        deserialize_u32,
        deserialize_u64,
        deserialize_u128,
        deserialize_f32,
        deserialize_f64,
        deserialize_char,
        deserialize_str,
        deserialize_string,
        deserialize_bytes,
        deserialize_byte_buf,
        deserialize_option,
        deserialize_unit,
        deserialize_seq,
        deserialize_map,
        deserialize_identifier,
        deserialize_ignored_any,
    );

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.deserialize_unit_struct(name, StrictVisitor(visitor))
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0
            .deserialize_newtype_struct(name, StrictVisitor(visitor))
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.deserialize_tuple(len, StrictVisitor(visitor))
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0
            .deserialize_tuple_struct(name, len, StrictVisitor(visitor))
    }

    /// The one change: a struct is read as a map, so an array is an error.
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.deserialize_map(StrictVisitor(visitor))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.deserialize_enum(name, variants, visitor)
    }

    fn is_human_readable(&self) -> bool {
        self.0.is_human_readable()
    }
}

/// serde_json's message without " at line 1 column 112": the position inside an embedded object
/// means nothing to the reader; the field path says where.
pub(crate) fn without_position(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(i) if e.line() > 0 => text[..i].to_string(),
        _ => text,
    }
}

/// `json` with every unpaired surrogate escape inside a string (`\ud800`, or a low surrogate
/// without a high one before it) replaced by `\ufffd`, as Go's encoding/json decodes it
/// (`unquoteBytes`: "Invalid surrogate; fall back to replacement rune"). Both escapes are six
/// bytes, so offsets in error messages stay right. Borrowed when there is nothing to replace.
pub(crate) fn go_surrogates(json: &[u8]) -> Cow<'_, [u8]> {
    // Most bodies hold no surrogate escape; a vectorised search says so far faster than the scan
    // below, which follows string boundaries byte by byte (under callgrind that scan was a fifth
    // of the instructions of a 4 KB review served over TLS).
    if !may_hold_surrogate_escape(json) {
        return Cow::Borrowed(json);
    }
    replace_unpaired_surrogates(json)
}

/// Whether `json` holds `\u` followed by `d` or `D`, as every UTF-16 surrogate escape
/// (`\uD800`-`\uDFFF`) is written. Also true for text that only looks so (`\\ud`): a
/// pre-check, not a parse.
pub(crate) fn may_hold_surrogate_escape(json: &[u8]) -> bool {
    static FINDER: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(br"\u"));
    FINDER
        .find_iter(json)
        .any(|i| matches!(json.get(i + 2), Some(b'd' | b'D')))
}

/// The scan behind [`go_surrogates`], for bodies that hold a `\uD...` escape.
fn replace_unpaired_surrogates(json: &[u8]) -> Cow<'_, [u8]> {
    fn hex4(b: &[u8]) -> Option<u16> {
        let s = std::str::from_utf8(b.get(..4)?).ok()?;
        u16::from_str_radix(s, 16).ok()
    }
    let is_high = |u: u16| (0xD800..0xDC00).contains(&u);
    let is_low = |u: u16| (0xDC00..0xE000).contains(&u);
    let mut out: Option<Vec<u8>> = None;
    let mut in_string = false;
    let mut i = 0;
    while i < json.len() {
        match json[i] {
            b'"' => in_string = !in_string,
            b'\\' if in_string => {
                if json.get(i + 1) != Some(&b'u') {
                    i += 2;
                    continue;
                }
                let Some(u) = hex4(&json[i + 2..]) else {
                    i += 2;
                    continue;
                };
                let paired_low = json.get(i + 6) == Some(&b'\\')
                    && json.get(i + 7) == Some(&b'u')
                    && json.get(i + 8..).and_then(hex4).is_some_and(is_low);
                if is_high(u) && paired_low {
                    i += 12; // a valid pair
                    continue;
                }
                if is_high(u) || is_low(u) {
                    let buf = out.get_or_insert_with(|| json.to_vec());
                    buf[i + 2..i + 6].copy_from_slice(b"fffd");
                }
                i += 6;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    match out {
        Some(v) => Cow::Owned(v),
        None => Cow::Borrowed(json),
    }
}

struct StrictVisitor<V>(V);

impl<'de, V: Visitor<'de>> Visitor<'de> for StrictVisitor<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.expecting(f)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        self.0.visit_bool(v)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        self.0.visit_i64(v)
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Self::Value, E> {
        self.0.visit_i128(v)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        self.0.visit_u64(v)
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Self::Value, E> {
        self.0.visit_u128(v)
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        if v == 0.0 && v.is_sign_negative() {
            // serde_json's reading of `-0`; float fields take the integer 0 as 0.0 too.
            return self.0.visit_u64(0);
        }
        self.0.visit_f64(v)
    }

    fn visit_char<E: de::Error>(self, v: char) -> Result<Self::Value, E> {
        self.0.visit_char(v)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        self.0.visit_str(v)
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        self.0.visit_borrowed_str(v)
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        self.0.visit_string(v)
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Self::Value, E> {
        self.0.visit_bytes(v)
    }

    fn visit_borrowed_bytes<E: de::Error>(self, v: &'de [u8]) -> Result<Self::Value, E> {
        self.0.visit_borrowed_bytes(v)
    }

    fn visit_byte_buf<E: de::Error>(self, v: Vec<u8>) -> Result<Self::Value, E> {
        self.0.visit_byte_buf(v)
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        self.0.visit_none()
    }

    fn visit_some<D2: Deserializer<'de>>(self, d: D2) -> Result<Self::Value, D2::Error> {
        self.0.visit_some(Strict(d))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        self.0.visit_unit()
    }

    fn visit_newtype_struct<D2: Deserializer<'de>>(self, d: D2) -> Result<Self::Value, D2::Error> {
        self.0.visit_newtype_struct(Strict(d))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        self.0.visit_seq(StrictSeq(seq))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        self.0.visit_map(StrictMap(map))
    }

    fn visit_enum<A: de::EnumAccess<'de>>(self, data: A) -> Result<Self::Value, A::Error> {
        self.0.visit_enum(data)
    }
}

struct StrictSeed<S>(S);

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for StrictSeed<S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.0.deserialize(Strict(d))
    }
}

struct StrictSeq<A>(A);

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for StrictSeq<A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Self::Error> {
        self.0.next_element_seed(StrictSeed(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

struct StrictMap<A>(A);

impl<'de, A: MapAccess<'de>> MapAccess<'de> for StrictMap<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Self::Error> {
        self.0.next_key_seed(StrictSeed(seed))
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.next_value_seed(StrictSeed(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::Strategy;
    use serde::Deserialize;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Meta {
        name: Option<String>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Doc {
        metadata: Option<Meta>,
        #[serde(rename = "backoffLimit")]
        backoff_limit: Option<i32>,
    }

    fn read(json: &str) -> Result<Doc, String> {
        let mut de = serde_json::Deserializer::from_str(json);
        Doc::deserialize(Strict(&mut de)).map_err(|e| e.to_string())
    }

    #[test]
    fn structs_are_read_from_objects_only_at_any_depth() {
        assert_eq!(
            read(r#"{"metadata":{"name":"a"}}"#).unwrap().metadata,
            Some(Meta {
                name: Some("a".into())
            })
        );
        // Without `Strict`, serde reads the array as the struct's fields in order.
        let lax: Doc = serde_json::from_str(r#"{"metadata":["a"]}"#).unwrap();
        assert_eq!(lax.metadata.unwrap().name.as_deref(), Some("a"));
        let e = read(r#"{"metadata":["a"]}"#).unwrap_err();
        assert!(e.starts_with("invalid type: sequence, expected "), "{e}");
        assert!(read(r#"["a"]"#).is_err());
    }

    proptest::proptest! {
        /// The substring pre-check never skips a body the full scan would change.
        #[test]
        fn the_pre_check_agrees_with_the_scan(
            body in proptest::collection::vec(
                proptest::sample::select(vec![
                    "\"", "\\", r"\ud800", r"\uD800", r"\udbff", r"\uDC00", r"\udfff",
                    r"\uDfFf", r"\u0041", r"\u", "d8", "u", "a", " ",
                ]),
                0..12,
            )
            .prop_map(|tokens| tokens.concat())
        ) {
            proptest::prop_assert_eq!(
                go_surrogates(body.as_bytes()),
                replace_unpaired_surrogates(body.as_bytes())
            );
        }
    }

    #[test]
    fn unpaired_surrogates_are_the_replacement_character_as_in_go() {
        let fixed = |s: &str| String::from_utf8(go_surrogates(s.as_bytes()).into_owned()).unwrap();
        assert_eq!(fixed(r#"{"a":"x\ud800y"}"#), r#"{"a":"x\ufffdy"}"#);
        assert_eq!(fixed(r#"{"a":"\udc00"}"#), r#"{"a":"\ufffd"}"#);
        assert_eq!(
            fixed(r#"["\ud800\ud800\udc00"]"#),
            r#"["\ufffd\ud800\udc00"]"#
        );
        // A pair, an escaped backslash before `u`, and text outside strings are left alone.
        for same in [r#"["\ud83d\ude00"]"#, r#"["\\ud800"]"#, r#"{"\u0041":1}"#] {
            assert!(
                matches!(go_surrogates(same.as_bytes()), Cow::Borrowed(_)),
                "{same}"
            );
        }
        let v: serde_json::Value =
            serde_json::from_slice(&go_surrogates(br#"["\ud800"]"#)).unwrap();
        assert_eq!(v[0], "\u{fffd}");
    }

    #[test]
    fn minus_zero_is_the_integer_zero() {
        assert!(serde_json::from_str::<Doc>(r#"{"backoffLimit":-0}"#).is_err());
        assert_eq!(
            read(r#"{"backoffLimit":-0}"#).unwrap().backoff_limit,
            Some(0)
        );
        assert_eq!(
            read(r#"{"backoffLimit":0}"#).unwrap().backoff_limit,
            Some(0)
        );
    }
}
