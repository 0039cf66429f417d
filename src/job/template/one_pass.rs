//! The four digests of a template in one pass over its text.
//!
//! The comparisons differ only near the top of the template (its `metadata`, its `spec`, the
//! containers of a pod spec); below, every comparison sees the same value the same way. So a
//! position carries the mode of each comparison, and where all comparisons that keep it agree,
//! its value is digested once (`Seed`) and the digest is shared. The dense arrays and large
//! strings an input can hold are thus read once, not four times.

use std::collections::HashSet;
use std::fmt;
use std::hash::BuildHasher;

use serde::Deserialize as _;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::digest::{Digest, DigestVisitor, Hasher128, Mode, Pos, Seed, absent, keys};
use super::quantity::Parser;
use super::schema::Ty;

/// A digest per comparison, `None` where the comparison leaves the value out.
pub(super) type Digests = [Option<Digest>; 4];

/// One position, as each comparison sees it (`None`: left out).
#[derive(Debug, Clone, Copy)]
pub(super) struct Multi {
    modes: [Option<Mode>; 4],
    ty: Ty,
    quantities: Parser,
}

/// Whether the comparisons that keep a position see it alike.
enum Agreement {
    AllLeftOut,
    Same(Mode),
    Differ,
}

impl Multi {
    /// The template's root in the four comparisons, in `WholeTemplate::Read`'s order.
    pub(super) fn root(quantities: Parser) -> Multi {
        Multi {
            quantities,
            modes: [
                Some(Mode::Plain),
                Some(Mode::Template),
                Some(Mode::PodSpecOnly { scheduling: true }),
                Some(Mode::PodSpecOnly { scheduling: false }),
            ],
            ty: Ty::PodTemplateSpec,
        }
    }

    fn agreement(&self) -> Agreement {
        let mut kept = self.modes.iter().flatten();
        match kept.next() {
            None => Agreement::AllLeftOut,
            Some(first) if kept.all(|m| m == first) => Agreement::Same(*first),
            Some(_) => Agreement::Differ,
        }
    }

    fn child(self, key: &str) -> Multi {
        Multi {
            modes: self.modes.map(|m| m.and_then(|m| m.child(key))),
            ty: self.ty.child(key),
            ..self
        }
    }

    fn item(self) -> Multi {
        Multi {
            modes: self.modes.map(|m| m.map(Mode::item)),
            ty: self.ty.item(),
            ..self
        }
    }

    /// `digest` for every comparison that keeps this position.
    fn shared(&self, digest: Digest) -> Digests {
        self.modes.map(|m| m.map(|_| digest))
    }

    /// Any kept comparison's position: scalars digest alike in every mode.
    fn any_pos(&self) -> Pos {
        Pos {
            mode: self
                .modes
                .iter()
                .flatten()
                .next()
                .copied()
                .unwrap_or(Mode::Plain),
            ty: self.ty,
            quantities: self.quantities,
        }
    }
}

pub(super) struct MultiSeed(pub(super) Multi);

impl<'de> DeserializeSeed<'de> for MultiSeed {
    type Value = Digests;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Digests, D::Error> {
        match self.0.agreement() {
            Agreement::AllLeftOut => {
                IgnoredAny::deserialize(deserializer)?;
                Ok([None; 4])
            }
            Agreement::Same(mode) => {
                let digest = Seed(Pos {
                    mode,
                    ty: self.0.ty,
                    quantities: self.0.quantities,
                })
                .deserialize(deserializer)?;
                Ok(self.0.shared(digest))
            }
            Agreement::Differ => deserializer.deserialize_any(MultiVisitor(self.0)),
        }
    }
}

struct MultiVisitor(Multi);

impl MultiVisitor {
    fn scalar<E>(
        &self,
        visit: impl FnOnce(DigestVisitor) -> Result<Digest, E>,
    ) -> Result<Digests, E> {
        Ok(self.0.shared(visit(DigestVisitor(self.0.any_pos()))?))
    }
}

impl<'de> Visitor<'de> for MultiVisitor {
    type Value = Digests;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Digests, E> {
        self.scalar(|v| v.visit_unit())
    }

    fn visit_none<E: de::Error>(self) -> Result<Digests, E> {
        self.scalar(|v| v.visit_none())
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Digests, D::Error> {
        MultiSeed(self.0).deserialize(deserializer)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Digests, E> {
        self.scalar(|d| d.visit_bool(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Digests, E> {
        self.scalar(|d| d.visit_u64(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Digests, E> {
        self.scalar(|d| d.visit_i64(v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Digests, E> {
        self.scalar(|d| d.visit_f64(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Digests, E> {
        self.scalar(|d| d.visit_str(v))
    }

    /// `DigestVisitor::visit_seq`, once per comparison.
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Digests, A::Error> {
        let mut hashers = self.0.modes.map(|m| m.map(|_| Hasher128::new(b'a')));
        let mut n = 0u64;
        let item = self.0.item();
        while let Some(digests) = seq.next_element_seed(MultiSeed(item))? {
            for (h, d) in hashers.iter_mut().zip(digests) {
                if let (Some(h), Some(d)) = (h, d) {
                    h.write_u128(d.hash);
                }
            }
            n += 1;
        }
        Ok(hashers.map(|h| {
            h.map(|mut h| {
                h.write(&n.to_le_bytes());
                Digest {
                    hash: h.finish(),
                    absent: n == 0,
                }
            })
        }))
    }

    /// `DigestVisitor::visit_map`, once per comparison.
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Digests, A::Error> {
        let mut sums = [0u128; 4];
        let mut kept = [0u64; 4];
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            let key_hash = keys().0.hash_one(&key);
            if !seen.insert(key_hash) {
                return Err(de::Error::custom(format_args!("duplicate key {key:?}")));
            }
            let values = map.next_value_seed(MultiSeed(self.0.child(&key)))?;
            for i in 0..4 {
                let Some(value) = values[i].filter(|v| !v.absent) else {
                    continue;
                };
                let mut h = Hasher128::new(b'm');
                h.write(&(key.len() as u64).to_le_bytes());
                h.write(key.as_bytes());
                h.write_u128(value.hash);
                sums[i] = sums[i].wrapping_add(h.finish());
                kept[i] += 1;
            }
        }
        let mut out = [None; 4];
        for (i, mode) in self.0.modes.iter().enumerate() {
            let Some(mode) = *mode else { continue };
            let pos = Pos {
                mode,
                ty: self.0.ty,
                quantities: self.0.quantities,
            };
            out[i] = Some(if kept[i] == 0 && pos.absent_when_empty() {
                absent()
            } else {
                let mut h = Hasher128::new(b'o');
                h.write_u128(sums[i]);
                h.write(&kept[i].to_le_bytes());
                Digest {
                    hash: h.finish(),
                    absent: false,
                }
            });
        }
        Ok(out)
    }
}
