//! A template's values reduced to 128-bit digests: where a value sits (what each comparison
//! leaves out there, which Go type holds it) and how each JSON value is hashed, so that equal
//! digests mean `apiequality.Semantic.DeepEqual` templates (see `template.rs`).

use std::collections::HashSet;
use std::fmt;
use std::hash::{BuildHasher, Hasher, RandomState};
use std::sync::OnceLock;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use super::quantity::{Parser, Quantity};
use super::schema::{Shape, Ty};

/// Where in the template a value sits, for what a comparison leaves out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    Plain,
    /// The template itself, with its scheduling directives removed.
    Template,
    /// The template, of which only `spec` counts, without the containers' `resources`; with
    /// its scheduling directives when `scheduling`.
    PodSpecOnly {
        scheduling: bool,
    },
    /// `metadata` of the template: without labels and annotations; dropped when empty.
    Meta,
    /// `spec` of the template: without nodeSelector, tolerations, schedulingGates unless
    /// `scheduling`, and without the containers' `resources` when `resources` is false.
    Spec {
        scheduling: bool,
        resources: bool,
    },
    /// `spec.affinity`: without nodeAffinity; dropped when empty.
    Affinity,
    /// `spec.containers` / `spec.initContainers` whose items lose `resources`.
    Containers,
    /// One of those items.
    Container,
}

impl Mode {
    pub(super) fn child(self, key: &str) -> Option<Mode> {
        match (self, key) {
            (Mode::Template, "metadata") => Some(Mode::Meta),
            (Mode::Template, "spec") => Some(Mode::Spec {
                scheduling: false,
                resources: true,
            }),
            (Mode::PodSpecOnly { scheduling }, "spec") => Some(Mode::Spec {
                scheduling,
                resources: false,
            }),
            (Mode::PodSpecOnly { .. }, _) => None,
            (Mode::Meta, "labels" | "annotations") => None,
            (
                Mode::Spec {
                    scheduling: false, ..
                },
                "nodeSelector" | "tolerations" | "schedulingGates",
            ) => None,
            (
                Mode::Spec {
                    scheduling: false, ..
                },
                "affinity",
            ) => Some(Mode::Affinity),
            (
                Mode::Spec {
                    resources: false, ..
                },
                "containers" | "initContainers",
            ) => Some(Mode::Containers),
            (Mode::Container, "resources") => None,
            (Mode::Affinity, "nodeAffinity") => None,
            _ => Some(Mode::Plain),
        }
    }

    /// The mode of an array's items.
    pub(super) fn item(self) -> Mode {
        match self {
            Mode::Containers => Mode::Container,
            _ => Mode::Plain,
        }
    }

    pub(super) fn dropped_when_empty(self) -> bool {
        matches!(self, Mode::Meta | Mode::Affinity)
    }
}

/// Where a value sits: what the comparison leaves out there, and which Go type it has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Pos {
    pub(super) mode: Mode,
    pub(super) ty: Ty,
    /// How the cluster's release reads a quantity (1.38 rounds past 29 significant digits).
    pub(super) quantities: Parser,
}

impl Pos {
    #[cfg(test)]
    pub(super) fn root(mode: Mode, quantities: Parser) -> Pos {
        Pos {
            mode,
            ty: Ty::PodTemplateSpec,
            quantities,
        }
    }

    /// Member `key`, or `None` when the comparison leaves it out.
    pub(super) fn child(self, key: &str) -> Option<Pos> {
        Some(Pos {
            mode: self.mode.child(key)?,
            ty: self.ty.child(key),
            ..self
        })
    }

    pub(super) fn item(self) -> Pos {
        Pos {
            mode: self.mode.item(),
            ty: self.ty.item(),
            ..self
        }
    }

    /// Whether an object here whose members are all absent is itself absent.
    pub(super) fn absent_when_empty(self) -> bool {
        self.mode.dropped_when_empty() || self.ty.shape() == Shape::ZeroWhenEmpty
    }
}

/// A value's digest, and whether a member holding it counts as absent (`null`, `[]`, or an
/// object that stripping emptied).
#[derive(Debug, Clone, Copy)]
pub(super) struct Digest {
    pub(super) hash: u128,
    pub(super) absent: bool,
}

pub(super) fn keys() -> &'static (RandomState, RandomState) {
    static KEYS: OnceLock<(RandomState, RandomState)> = OnceLock::new();
    KEYS.get_or_init(|| (RandomState::new(), RandomState::new()))
}

/// Two independently keyed SipHashes: a 128-bit digest.
pub(super) struct Hasher128(std::hash::DefaultHasher, std::hash::DefaultHasher);

impl Hasher128 {
    pub(super) fn new(tag: u8) -> Hasher128 {
        let (a, b) = keys();
        let mut h = Hasher128(a.build_hasher(), b.build_hasher());
        h.write(&[tag]);
        h
    }

    pub(super) fn write(&mut self, bytes: &[u8]) {
        self.0.write(bytes);
        self.1.write(bytes);
    }

    pub(super) fn write_u128(&mut self, n: u128) {
        self.write(&n.to_le_bytes());
    }

    pub(super) fn finish(&self) -> u128 {
        (u128::from(self.0.finish()) << 64) | u128::from(self.1.finish())
    }
}

/// `null`, and whatever Go holds as nil or a zero struct value.
pub(super) fn absent() -> Digest {
    Digest {
        hash: Hasher128::new(b'n').finish(),
        absent: true,
    }
}

/// A quantity by value. A struct-valued quantity (`divisor`) that is zero is Go's zero value.
pub(super) fn quantity(q: &Quantity, ty: Ty) -> Digest {
    if ty == Ty::QuantityValue && q.is_zero() {
        return absent();
    }
    let (negative, exponent, digits) = q.canonical();
    let mut h = Hasher128::new(b'q');
    h.write(&[u8::from(negative)]);
    h.write(&exponent.to_le_bytes());
    h.write(&(digits.len() as u64).to_le_bytes());
    h.write(digits);
    Digest {
        hash: h.finish(),
        absent: false,
    }
}

pub(super) fn leaf(tag: u8, bytes: &[u8]) -> Digest {
    let mut h = Hasher128::new(tag);
    h.write(&(bytes.len() as u64).to_le_bytes());
    h.write(bytes);
    Digest {
        hash: h.finish(),
        absent: false,
    }
}

pub(super) struct Seed(pub(super) Pos);

impl<'de> DeserializeSeed<'de> for Seed {
    type Value = Digest;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Digest, D::Error> {
        deserializer.deserialize_any(DigestVisitor(self.0))
    }
}

pub(super) struct DigestVisitor(pub(super) Pos);

impl DigestVisitor {
    /// A plain `matches!`, not a call: it runs for every scalar of a template.
    fn is_quantity(&self) -> bool {
        matches!(
            self.0.ty,
            Ty::QuantityInMap | Ty::QuantityPointer | Ty::QuantityValue
        )
    }

    /// A JSON number where Go holds a quantity: `UnmarshalJSON` parses the number's text.
    /// serde_json has already read it; an integer's text is exact, and a float's shortest
    /// round-trip text is the text it came from whenever that had at most 15 significant digits
    /// (beyond, two texts of one float compare equal: more permissive than the apiserver, never
    /// stricter).
    fn number_as_quantity(&self, text: &str, otherwise: impl FnOnce() -> Digest) -> Digest {
        match Quantity::parse_by(text, self.0.quantities) {
            Some(q) => quantity(&q, self.0.ty),
            None => otherwise(),
        }
    }
}

impl<'de> Visitor<'de> for DigestVisitor {
    type Value = Digest;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Digest, E> {
        Ok(match self.0.ty {
            // Go decodes `null` into a map's value and keeps the key: the zero quantity, `""`.
            Ty::QuantityInMap => quantity(&Quantity::ZERO, self.0.ty),
            Ty::StringInMap => leaf(b's', b""),
            _ => absent(),
        })
    }

    fn visit_none<E: de::Error>(self) -> Result<Digest, E> {
        self.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Digest, D::Error> {
        Seed(self.0).deserialize(deserializer)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Digest, E> {
        Ok(leaf(b'b', &[u8::from(v)]))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Digest, E> {
        if self.is_quantity() {
            return Ok(self.number_as_quantity(&v.to_string(), || leaf(b'u', &v.to_le_bytes())));
        }
        Ok(leaf(b'u', &v.to_le_bytes()))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Digest, E> {
        match u64::try_from(v) {
            Ok(u) => self.visit_u64(u),
            Err(_) if self.is_quantity() => {
                Ok(self.number_as_quantity(&v.to_string(), || leaf(b'i', &v.to_le_bytes())))
            }
            Err(_) => Ok(leaf(b'i', &v.to_le_bytes())),
        }
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Digest, E> {
        if !v.is_finite() {
            return Err(E::custom("number out of range"));
        }
        if v == 0.0 {
            return self.visit_u64(0); // `-0` and `0.0`: Go's zero
        }
        let plain = || leaf(b'f', &v.to_bits().to_le_bytes());
        if self.is_quantity() {
            // Rust prints a float's shortest round-trip digits, never in exponent form.
            return Ok(self.number_as_quantity(&v.to_string(), plain));
        }
        Ok(plain())
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Digest, E> {
        if self.is_quantity() {
            // `Quantity.UnmarshalJSON`: `ParseQuantity(strings.TrimSpace(...))`.
            if let Some(q) = Quantity::parse_by(v.trim(), self.0.quantities) {
                return Ok(quantity(&q, self.0.ty));
            }
        }
        Ok(leaf(b's', v.as_bytes()))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Digest, A::Error> {
        let mut h = Hasher128::new(b'a');
        let mut n = 0u64;
        let item_pos = self.0.item();
        while let Some(item) = seq.next_element_seed(Seed(item_pos))? {
            h.write_u128(item.hash);
            n += 1;
        }
        h.write(&n.to_le_bytes());
        Ok(Digest {
            hash: h.finish(),
            absent: n == 0,
        })
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Digest, A::Error> {
        let mut sum = 0u128;
        let mut kept = 0u64;
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            let key_hash = keys().0.hash_one(&key);
            if !seen.insert(key_hash) {
                return Err(de::Error::custom(format_args!("duplicate key {key:?}")));
            }
            let Some(pos) = self.0.child(&key) else {
                map.next_value::<de::IgnoredAny>()?;
                continue;
            };
            let value = map.next_value_seed(Seed(pos))?;
            if value.absent {
                continue;
            }
            let mut h = Hasher128::new(b'm');
            h.write(&(key.len() as u64).to_le_bytes());
            h.write(key.as_bytes());
            h.write_u128(value.hash);
            sum = sum.wrapping_add(h.finish());
            kept += 1;
        }
        if kept == 0 && self.0.absent_when_empty() {
            return Ok(absent());
        }
        let mut h = Hasher128::new(b'o');
        h.write_u128(sum);
        h.write(&kept.to_le_bytes());
        Ok(Digest {
            hash: h.finish(),
            absent: false,
        })
    }
}
