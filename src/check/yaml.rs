//! YAML read as kubectl reads it: `kubectl apply -f` (cli-runtime's `StreamVisitor`) splits the
//! stream into documents and converts each to JSON with `sigs.k8s.io/yaml` (v1.6.0, under
//! go-yaml v2.4 `go.yaml.in/yaml/v2`, non-strict), so what kube-apiserver receives is that JSON:
//! - plain scalars resolve as YAML 1.1 does in go-yaml v2 (`resolve.go`): `yes`/`no`/`on`/`off`
//!   are booleans, `0644` is octal, `1_000` is 1000, `1.0` a float that Go's JSON encoder writes
//!   as `1`; quoted and block scalars are strings;
//! - merge keys (`<<: *base`, `<<: [*a, *b]`) are applied in the order written (go-yaml v2's
//!   `decoder.mapping`): a merge overwrites the keys set before it, keys after it overwrite the
//!   merge, and among a list of merged maps the first one wins;
//! - aliases are expanded, within go-yaml v2's "excessive aliasing" ratio (`allowedAliasRatio`);
//! - a key written twice keeps its last value, silently (only `UnmarshalStrict` refuses it; the
//!   duplicates are reported to the caller, which says so);
//! - keys that are not strings become strings (`1` -> `"1"`, `true` -> `"true"`), a null or
//!   collection key is an error (`convertToJSONableObject`);
//! - NaN and infinities cannot be written as JSON (`json: unsupported value`).
//!
//! One pass over the events of `granit-parser` builds each document's JSON value directly: no
//! event buffer, no position table (where a field is written is found afterwards, for the few
//! fields a finding names, by `locate`). Only anchors that some alias uses are kept (a first pass
//! over the events finds them), so memory stays near the size of the JSON value itself.

use std::collections::{HashMap, HashSet};

use granit_parser::{Event, Parser, ScalarStyle, Span, Tag};
use serde_json::{Map, Number, Value};

use crate::schema::Step;

/// Nesting deeper than this is refused (serde_json's own limit for JSON input; no manifest comes
/// near it), so nothing downstream recurses without bound.
pub(crate) const MAX_DEPTH: usize = 128;

/// A line (from 1) and column (from 1), as editors and CI annotations count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Position {
    pub(crate) line: usize,
    pub(crate) column: usize,
}

impl Position {
    /// This position in a text that starts at `base` of a larger one.
    pub(crate) fn within(self, base: Position) -> Position {
        Position {
            line: base.line + self.line - 1,
            column: if self.line == 1 {
                base.column + self.column - 1
            } else {
                self.column
            },
        }
    }
}

/// One YAML document, converted.
#[derive(Debug)]
pub(crate) struct YamlDocument {
    pub(crate) value: Value,
    /// Where its root node starts.
    pub(crate) root: Option<Position>,
    /// Keys written twice in one mapping (not through a merge key), by path.
    pub(crate) duplicates: Vec<Vec<Step>>,
}

/// Why the stream cannot be read past some point.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct YamlFailure {
    pub(crate) at: Option<Position>,
    pub(crate) reason: String,
}

/// The documents of `text`, in order; the first failure ends them.
pub(crate) fn documents(text: &str) -> Documents<'_> {
    Documents {
        parser: Parser::new_from_str(text),
        aliased: aliased_anchors(text),
        done: false,
    }
}

/// The anchors some alias refers to (the parser numbers anchors across the stream).
fn aliased_anchors(text: &str) -> HashSet<usize> {
    let mut aliased = HashSet::new();
    if !text.contains('*') {
        return aliased;
    }
    let mut parser = Parser::new_from_str(text);
    while let Some(Ok((event, _))) = parser.next_event() {
        if let Event::Alias(id) = event {
            aliased.insert(id);
        }
    }
    aliased
}

pub(crate) struct Documents<'a> {
    parser: Parser<'a, granit_parser::StrInput<'a>>,
    aliased: HashSet<usize>,
    done: bool,
}

impl Iterator for Documents<'_> {
    type Item = Result<YamlDocument, YamlFailure>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let result = self.next_document();
        match &result {
            Some(Ok(_)) => {}
            _ => self.done = true,
        }
        result
    }
}

fn position(span: &Span) -> Position {
    Position {
        line: span.start.line(),
        column: span.start.col() + 1,
    }
}

fn fail(at: Option<Position>, reason: impl Into<String>) -> YamlFailure {
    YamlFailure {
        at,
        reason: reason.into(),
    }
}

impl Documents<'_> {
    fn next_document(&mut self) -> Option<Result<YamlDocument, YamlFailure>> {
        let mut builder: Option<TreeBuilder> = None;
        loop {
            let (event, span) = match self.parser.next_event()? {
                Ok(e) => e,
                Err(e) => {
                    let m = e.marker();
                    let at = Position {
                        line: m.line(),
                        column: m.col() + 1,
                    };
                    return Some(Err(fail(Some(at), format!("invalid YAML: {}", e.info()))));
                }
            };
            match event {
                Event::StreamStart | Event::StreamEnd => {}
                Event::DocumentStart(..) => builder = Some(TreeBuilder::new(&self.aliased)),
                Event::DocumentEnd => {
                    let b = builder.take()?;
                    return Some(Ok(b.finish()));
                }
                event => {
                    let Some(b) = builder.as_mut() else { continue };
                    if let Err(f) = b.event(event, &span) {
                        return Some(Err(f));
                    }
                }
            }
        }
    }
}

/// A mapping key awaiting its value.
enum PendingKey {
    Name(String),
    /// `<<`: the value is merged.
    Merge,
}

enum Container {
    Seq(Vec<Value>),
    Map {
        map: Map<String, Value>,
        key: Option<PendingKey>,
        /// Keys set by a merge (an explicit key over one is not a duplicate).
        merged: HashSet<String>,
    },
}

struct OpenCollection {
    container: Container,
    /// How this collection hangs from its parent (for the paths of duplicates).
    step: Option<Step>,
    /// Its anchor, when an alias uses it.
    anchor: Option<usize>,
    /// `decodes` when it started: go-yaml counts every node it decodes, the alias count against it.
    decodes_at_start: usize,
}

struct TreeBuilder<'a> {
    aliased: &'a HashSet<usize>,
    stack: Vec<OpenCollection>,
    root: Option<Value>,
    root_at: Option<Position>,
    /// Anchored values some alias uses, with how many nodes decoding them took.
    anchors: HashMap<usize, (Value, usize)>,
    duplicates: Vec<Vec<Step>>,
    /// go-yaml v2's `decodeCount` and `aliasCount`.
    decodes: usize,
    alias_decodes: usize,
}

/// A scalar as go-yaml v2 resolves it.
enum Scalar {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    Str(String),
}

impl<'a> TreeBuilder<'a> {
    fn new(aliased: &'a HashSet<usize>) -> TreeBuilder<'a> {
        TreeBuilder {
            aliased,
            stack: Vec::new(),
            root: None,
            root_at: None,
            anchors: HashMap::new(),
            duplicates: Vec::new(),
            decodes: 0,
            alias_decodes: 0,
        }
    }

    fn finish(self) -> YamlDocument {
        YamlDocument {
            value: self.root.unwrap_or(Value::Null),
            root: self.root_at,
            duplicates: self.duplicates,
        }
    }

    fn expecting_key(&self) -> bool {
        matches!(
            self.stack.last(),
            Some(OpenCollection {
                container: Container::Map { key: None, .. },
                ..
            })
        )
    }

    /// The step under which the next node hangs.
    fn next_step(&self) -> Option<Step> {
        match self.stack.last().map(|f| &f.container) {
            Some(Container::Seq(items)) => Some(Step::Index(items.len())),
            Some(Container::Map {
                key: Some(PendingKey::Name(k)),
                ..
            }) => Some(Step::Key(k.clone())),
            _ => None,
        }
    }

    fn event(&mut self, event: Event<'_>, span: &Span) -> Result<(), YamlFailure> {
        let at = position(span);
        if self.stack.is_empty() && self.root.is_none() {
            self.root_at.get_or_insert(at);
        }
        match event {
            Event::Scalar(text, style, anchor, tag) => {
                self.decodes += 1;
                let plain = style == ScalarStyle::Plain;
                self.scalar(&text, plain, anchor, tag.as_deref(), at)
            }
            Event::Alias(id) => self.alias(id, at),
            Event::SequenceStart(_, anchor, _) => self.start(true, anchor, at),
            Event::MappingStart(_, anchor, _) => self.start(false, anchor, at),
            Event::SequenceEnd | Event::MappingEnd => self.end(at),
            _ => Ok(()),
        }
    }

    /// A scalar: a mapping's key, or a value.
    fn scalar(
        &mut self,
        text: &str,
        plain: bool,
        anchor: usize,
        tag: Option<&Tag>,
        at: Position,
    ) -> Result<(), YamlFailure> {
        if self.expecting_key() {
            if is_merge(text, plain, tag) {
                self.set_key(PendingKey::Merge);
                return Ok(());
            }
            let scalar = resolve(text, plain, tag).map_err(|r| fail(Some(at), r))?;
            let key = scalar_key(&scalar).map_err(|r| fail(Some(at), r))?;
            if anchor != 0 && self.aliased.contains(&anchor) {
                let value = scalar_value(&scalar, text).map_err(|r| fail(Some(at), r))?;
                self.keep_anchor(anchor, &value, 1);
            }
            self.set_key(PendingKey::Name(key));
            return Ok(());
        }
        let scalar = resolve(text, plain, tag).map_err(|r| fail(Some(at), r))?;
        let value = scalar_value(&scalar, text).map_err(|r| fail(Some(at), r))?;
        self.keep_anchor(anchor, &value, 1);
        self.complete(value, at)
    }

    /// An alias: its anchor's value again, counted as go-yaml v2 counts it.
    fn alias(&mut self, id: usize, at: Position) -> Result<(), YamlFailure> {
        self.decodes += 1;
        let Some((value, size)) = self.anchors.get(&id) else {
            // An anchor whose node is still open: the value would contain itself.
            return Err(fail(
                Some(at),
                "invalid YAML: an anchor's value contains itself",
            ));
        };
        let size = *size;
        // What go-yaml v2 counts while it decodes the alias, checked before the copy.
        let decodes = self.decodes + size;
        let alias_decodes = self.alias_decodes + size;
        if alias_decodes > 100
            && decodes > 1000
            && alias_decodes as f64 / decodes as f64 > allowed_alias_ratio(decodes)
        {
            return Err(fail(
                Some(at),
                "invalid YAML: document contains excessive aliasing",
            ));
        }
        self.decodes = decodes;
        self.alias_decodes = alias_decodes;
        let value = value.clone();
        if self.expecting_key() {
            let key = key_string(&value).map_err(|r| fail(Some(at), r))?;
            self.set_key(PendingKey::Name(key));
            return Ok(());
        }
        self.complete(value, at)
    }

    /// A sequence (`sequence`) or a mapping begins.
    fn start(&mut self, sequence: bool, anchor: usize, at: Position) -> Result<(), YamlFailure> {
        if self.expecting_key() {
            return Err(fail(
                Some(at),
                "invalid YAML: a mapping or sequence as a mapping key cannot be converted to JSON",
            ));
        }
        if self.stack.len() >= MAX_DEPTH {
            return Err(fail(
                Some(at),
                format!("invalid YAML: nested deeper than {MAX_DEPTH} levels"),
            ));
        }
        self.decodes += 1;
        let container = if sequence {
            Container::Seq(Vec::new())
        } else {
            Container::Map {
                map: Map::new(),
                key: None,
                merged: HashSet::new(),
            }
        };
        let step = self.next_step();
        self.stack.push(OpenCollection {
            container,
            step,
            anchor: (anchor != 0 && self.aliased.contains(&anchor)).then_some(anchor),
            decodes_at_start: self.decodes - 1,
        });
        Ok(())
    }

    /// The innermost sequence or mapping ends.
    fn end(&mut self, at: Position) -> Result<(), YamlFailure> {
        let Some(frame) = self.stack.pop() else {
            return Ok(());
        };
        let value = match frame.container {
            Container::Seq(mut items) => {
                items.shrink_to_fit();
                Value::Array(items)
            }
            Container::Map { map, .. } => Value::Object(map),
        };
        if let Some(id) = frame.anchor {
            let size = self.decodes - frame.decodes_at_start;
            self.anchors.insert(id, (value.clone(), size));
        }
        self.complete(value, at)
    }

    fn keep_anchor(&mut self, anchor: usize, value: &Value, size: usize) {
        if anchor != 0 && self.aliased.contains(&anchor) {
            self.anchors.insert(anchor, (value.clone(), size));
        }
    }

    fn set_key(&mut self, k: PendingKey) {
        if let Some(OpenCollection {
            container: Container::Map { key, .. },
            ..
        }) = self.stack.last_mut()
        {
            *key = Some(k);
        }
    }

    /// A node is complete: it becomes the root, an item, or a mapping's value.
    fn complete(&mut self, value: Value, at: Position) -> Result<(), YamlFailure> {
        let duplicate_path = |stack: &[OpenCollection], key: &str| {
            let mut steps: Vec<Step> = stack.iter().filter_map(|f| f.step.clone()).collect();
            steps.push(Step::Key(key.to_string()));
            steps
        };
        let Some(frame) = self.stack.last_mut() else {
            self.root = Some(value);
            return Ok(());
        };
        match &mut frame.container {
            Container::Seq(items) => items.push(value),
            Container::Map { map, key, merged } => match key.take() {
                Some(PendingKey::Name(k)) => {
                    let was_merged = merged.remove(&k);
                    if map.insert(k.clone(), value).is_some() && !was_merged {
                        let steps = duplicate_path(&self.stack, &k);
                        self.duplicates.push(steps);
                    }
                }
                Some(PendingKey::Merge) => {
                    merge(map, merged, value).map_err(|r| fail(Some(at), r))?
                }
                None => {}
            },
        }
        Ok(())
    }
}

/// go-yaml v2's `decoder.merge`: a map, or a list of maps of which the first wins; every merged
/// key overwrites what the mapping already holds.
fn merge(
    map: &mut Map<String, Value>,
    merged: &mut HashSet<String>,
    value: Value,
) -> Result<(), String> {
    const WANT_MAP: &str = "invalid YAML: map merge requires map or sequence of maps as the value";
    let maps = match value {
        Value::Object(m) => vec![m],
        Value::Array(items) => {
            let mut maps = Vec::with_capacity(items.len());
            for item in items {
                match item {
                    Value::Object(m) => maps.push(m),
                    _ => return Err(WANT_MAP.into()),
                }
            }
            maps.reverse();
            maps
        }
        _ => return Err(WANT_MAP.into()),
    };
    for m in maps {
        for (k, v) in m {
            merged.insert(k.clone());
            map.insert(k, v);
        }
    }
    Ok(())
}

/// `allowedAliasRatio` (go-yaml v2 `decode.go`): up to 99 % of a document's decoded nodes may
/// come from aliases below 400,000 nodes, scaling down to 10 % at 4,000,000.
fn allowed_alias_ratio(decodes: usize) -> f64 {
    const LOW: usize = 400_000;
    const HIGH: usize = 4_000_000;
    if decodes <= LOW {
        0.99
    } else if decodes >= HIGH {
        0.10
    } else {
        0.99 - 0.89 * ((decodes - LOW) as f64 / (HIGH - LOW) as f64)
    }
}

/// The core-schema name of a tag (`str`, `int`, `merge`, ...), or `None` for another tag.
fn core_name(tag: &Tag) -> Option<String> {
    tag.suffix_in_namespace("tag:yaml.org,2002:")
        .map(|c| c.into_owned())
}

/// `isMerge`: a plain `<<` without a tag, or one tagged `!!merge`.
fn is_merge(text: &str, plain: bool, tag: Option<&Tag>) -> bool {
    text == "<<"
        && match tag {
            None => plain,
            Some(t) => core_name(t).as_deref() == Some("merge"),
        }
}

/// The JSON key a scalar written as a mapping key becomes (`None` when it cannot be one, or
/// for a merge key), as `documents` reads it.
pub(crate) fn key_text(text: &str, style: ScalarStyle, tag: Option<&Tag>) -> Option<String> {
    let plain = style == ScalarStyle::Plain;
    if is_merge(text, plain, tag) {
        return None;
    }
    resolve(text, plain, tag)
        .ok()
        .and_then(|s| scalar_key(&s).ok())
}

/// Whether a scalar written as a mapping key is a merge key (`<<`).
pub(crate) fn is_merge_key(text: &str, style: ScalarStyle, tag: Option<&Tag>) -> bool {
    is_merge(text, style == ScalarStyle::Plain, tag)
}

/// go-yaml v2's `decoder.scalar` then `resolve`: quoted and block scalars are strings; a plain
/// one resolves to null, a bool, an int or a float when it reads as one (YAML 1.1), else a
/// string; a core-schema tag asks for its type.
fn resolve(text: &str, plain: bool, tag: Option<&Tag>) -> Result<Scalar, String> {
    let wanted = match tag {
        None if !plain => return Ok(Scalar::Str(text.to_string())),
        None => None,
        Some(t) => match core_name(t) {
            Some(name) => Some(name),
            // A tag go-yaml does not resolve (`!foo`, `!`): the text as a string.
            None => return Ok(Scalar::Str(text.to_string())),
        },
    };
    match wanted.as_deref() {
        Some("str") => return Ok(Scalar::Str(text.to_string())),
        Some("binary") => {
            use base64::Engine;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(text.trim())
                .map_err(|_| {
                    "invalid YAML: !!binary value contains invalid base64 data".to_string()
                })?;
            return Ok(Scalar::Str(String::from_utf8_lossy(&bytes).into_owned()));
        }
        Some("null" | "bool" | "int" | "float" | "timestamp") | None => {}
        // Other core tags (`!!map` on a scalar, `!!seq`, `!!merge` as a value): as written.
        Some(_) => return Ok(Scalar::Str(text.to_string())),
    }
    let resolved = resolve_plain(text);
    let Some(wanted) = wanted else {
        return Ok(resolved);
    };
    let got = match &resolved {
        Scalar::Null => "null",
        Scalar::Bool(_) => "bool",
        Scalar::Int(_) | Scalar::Uint(_) => "int",
        Scalar::Float(_) => "float",
        Scalar::Str(_) => "str",
    };
    match (wanted.as_str(), resolved) {
        (w, r) if w == got => Ok(r),
        // An int asked to be a float is one.
        ("float", Scalar::Int(i)) => Ok(Scalar::Float(i as f64)),
        ("float", Scalar::Uint(u)) => Ok(Scalar::Float(u as f64)),
        ("timestamp", Scalar::Str(s)) => Ok(Scalar::Str(s)),
        (w, _) => Err(format!(
            "invalid YAML: cannot decode !!{got} `{text}` as a !!{w}"
        )),
    }
}

/// `resolve("", in)` of go-yaml v2 for a plain scalar.
fn resolve_plain(s: &str) -> Scalar {
    match s {
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            return Scalar::Bool(true);
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            return Scalar::Bool(false);
        }
        "" | "~" | "null" | "Null" | "NULL" => return Scalar::Null,
        ".nan" | ".NaN" | ".NAN" => return Scalar::Float(f64::NAN),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return Scalar::Float(f64::INFINITY);
        }
        "-.inf" | "-.Inf" | "-.INF" => return Scalar::Float(f64::NEG_INFINITY),
        _ => {}
    }
    match s.as_bytes()[0] {
        b'.' => {
            if let Some(f) = go_parse_float(s) {
                return Scalar::Float(f);
            }
        }
        b'+' | b'-' | b'0'..=b'9' => {
            let plain: String = s.chars().filter(|&c| c != '_').collect();
            if let Some(i) = go_parse_int(&plain) {
                return Scalar::Int(i);
            }
            if let Some(u) = go_parse_uint(&plain) {
                return Scalar::Uint(u);
            }
            if yaml_style_float(&plain)
                && let Some(f) = go_parse_float(&plain)
            {
                return Scalar::Float(f);
            }
            if let Some(rest) = plain.strip_prefix("0b") {
                if let Ok(i) = i64::from_str_radix(rest, 2)
                    && !rest.starts_with(['+', '-'])
                {
                    return Scalar::Int(i);
                }
                if let Ok(u) = u64::from_str_radix(rest, 2)
                    && !rest.starts_with('+')
                {
                    return Scalar::Uint(u);
                }
            } else if let Some(rest) = plain.strip_prefix("-0b")
                && !rest.starts_with(['+', '-'])
                && let Ok(i) = i64::from_str_radix(&format!("-{rest}"), 2)
            {
                return Scalar::Int(i);
            }
        }
        _ => {}
    }
    Scalar::Str(s.to_string())
}

/// `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`
fn yaml_style_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'+' | b'-')) {
        i += 1;
    }
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            digits(&mut i);
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// `strconv.ParseFloat(s, 64)` for the decimal forms go-yaml hands it: an out-of-range value is
/// an error in Go (Rust reads it as infinity).
fn go_parse_float(s: &str) -> Option<f64> {
    if s.bytes()
        .any(|c| !(c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'E' | b'+' | b'-')))
    {
        return None;
    }
    s.parse::<f64>().ok().filter(|f| f.is_finite())
}

/// `strconv.ParseInt(s, 0, 64)`: a sign, then `0x`/`0o`/`0b` or a leading `0` (octal) prefix,
/// or decimal digits.
fn go_parse_int(s: &str) -> Option<i64> {
    let (negative, body) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let magnitude = go_parse_uint(body)?;
    if negative {
        if magnitude <= i64::MAX as u64 + 1 {
            Some((magnitude as i64).wrapping_neg())
        } else {
            None
        }
    } else {
        i64::try_from(magnitude).ok()
    }
}

/// `strconv.ParseUint(s, 0, 64)`.
fn go_parse_uint(s: &str) -> Option<u64> {
    let (radix, digits) = if let Some(d) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        (16, d)
    } else if let Some(d) = s.strip_prefix("0o").or_else(|| s.strip_prefix("0O")) {
        (8, d)
    } else if let Some(d) = s.strip_prefix("0b").or_else(|| s.strip_prefix("0B")) {
        (2, d)
    } else if s.len() > 1 && s.starts_with('0') {
        (8, &s[1..])
    } else {
        (10, s)
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

/// The JSON value of a resolved scalar, as `json.Marshal` writes Go's value.
fn scalar_value(scalar: &Scalar, text: &str) -> Result<Value, String> {
    Ok(match scalar {
        Scalar::Null => Value::Null,
        Scalar::Bool(b) => Value::Bool(*b),
        Scalar::Int(i) => Value::from(*i),
        Scalar::Uint(u) => Value::from(*u),
        Scalar::Float(f) => go_json_float(*f).ok_or_else(|| {
            let printed = if f.is_nan() {
                "NaN"
            } else if *f > 0.0 {
                "+Inf"
            } else {
                "-Inf"
            };
            format!("cannot convert YAML to JSON: json: unsupported value: {printed} (`{text}`)")
        })?,
        Scalar::Str(s) => Value::String(s.clone()),
    })
}

/// A float64 as `encoding/json` writes it: integral values below 1e21 without a fraction, so
/// an int field reads `1.0` as 1 (kube-apiserver sees `1`).
fn go_json_float(f: f64) -> Option<Value> {
    if !f.is_finite() {
        return None;
    }
    if f.fract() == 0.0 && f.abs() < 1e21 {
        if f >= i64::MIN as f64 && f < i64::MAX as f64 {
            return Some(Value::from(f as i64));
        }
        if f >= 0.0 && f < u64::MAX as f64 {
            return Some(Value::from(f as u64));
        }
    }
    Number::from_f64(f).map(Value::Number)
}

/// A scalar mapping key as go-yaml resolves it and `convertToJSONableObject` turns it into a
/// JSON key: ints in decimal, floats as `strconv.FormatFloat(f, 'g', -1, 32)`, booleans as
/// `true`/`false`; null and uint64 keys are errors.
fn scalar_key(scalar: &Scalar) -> Result<String, String> {
    match scalar {
        Scalar::Str(s) => Ok(s.clone()),
        Scalar::Bool(b) => Ok(b.to_string()),
        Scalar::Int(i) => Ok(i.to_string()),
        Scalar::Uint(_) => {
            Err("cannot convert YAML to JSON: unsupported map key of type: uint64".into())
        }
        Scalar::Float(f) if f.is_nan() => Ok(".nan".into()),
        Scalar::Float(f) if f.is_infinite() => Ok(if *f > 0.0 { ".inf" } else { "-.inf" }.into()),
        Scalar::Float(f) => Ok(go_format_float32_g(*f)),
        Scalar::Null => {
            Err("cannot convert YAML to JSON: unsupported map key of type: <nil>".into())
        }
    }
}

/// An aliased mapping key (its anchored value already converted).
fn key_string(value: &Value) -> Result<String, String> {
    match value {
        Value::String(s) => Ok(s.clone()),
        Value::Bool(b) => Ok(b.to_string()),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Ok(i.to_string())
            } else if n.is_u64() {
                Err("cannot convert YAML to JSON: unsupported map key of type: uint64".into())
            } else {
                Ok(go_format_float32_g(n.as_f64().unwrap_or(0.0)))
            }
        }
        Value::Null => {
            Err("cannot convert YAML to JSON: unsupported map key of type: <nil>".into())
        }
        Value::Array(_) | Value::Object(_) => Err(
            "invalid YAML: a mapping or sequence as a mapping key cannot be converted to JSON"
                .into(),
        ),
    }
}

/// `strconv.FormatFloat(f, 'g', -1, 32)`: the shortest float32 digits, in `%e` form when the
/// exponent is below -4 or at least 6.
fn go_format_float32_g(f: f64) -> String {
    let f = f as f32;
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    // `{:e}` gives the shortest round-trip digits: `d.ddde<exp>`.
    let e = format!("{f:e}");
    let (mantissa, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let negative = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let sign = if negative { "-" } else { "" };
    // Go: with the shortest digits, `%e` when the exponent is below -4 or at least 6.
    let nd = digits.len() as i32;
    if !(-4..6).contains(&exp) {
        let (first, rest) = digits.split_at(1);
        let dot = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let esign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{first}{dot}e{esign}{:02}", exp.abs());
    }
    if exp < 0 {
        let zeros = "0".repeat((-exp - 1) as usize);
        format!("{sign}0.{zeros}{digits}")
    } else if nd > exp + 1 {
        let (int, frac) = digits.split_at((exp + 1) as usize);
        format!("{sign}{int}.{frac}")
    } else {
        format!("{sign}{digits}{}", "0".repeat((exp + 1 - nd) as usize))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn one(text: &str) -> Value {
        let mut docs = documents(text);
        let doc = docs.next().expect("a document").expect("readable");
        doc.value
    }

    fn failure(text: &str) -> YamlFailure {
        documents(text).find_map(Result::err).expect("a failure")
    }

    /// go-yaml v2 `resolve_test.go`'s table, where it decides what kubectl sends.
    #[test]
    fn plain_scalars_resolve_as_yaml_1_1_in_go_yaml_v2() {
        let doc = one(
            "a: yes\nb: No\nc: on\nd: OFF\ne: y\nf: ~\ng: 0644\nh: 0x1F\ni: 1_000\nj: 1.0\nk: 1e3\n\
             l: .5\nm: -0\nn1: 08\no: 0b101\np: 9223372036854775808\nq: 1e400\nr: \"yes\"\ns: '0644'\n\
             t: 2001-12-14\nu: +12\nv: 0o17\nw: 1.5\nx: true\ny1: Yes please\nz: ''\nn: key\n",
        );
        assert_eq!(
            doc,
            json!({
                "a": true, "b": false, "c": true, "d": false, "e": true, "f": null,
                "g": 420, "h": 31, "i": 1000, "j": 1, "k": 1000, "l": 0.5, "m": 0,
                // `08` is no octal int, but matches the float pattern.
                "n1": 8, "o": 5, "p": 9223372036854775808u64,
                // Out of float64's range: Go's ParseFloat fails, so it stays a string.
                "q": "1e400", "r": "yes", "s": "0644", "t": "2001-12-14", "u": 12, "v": 15,
                "w": 1.5, "x": true, "y1": "Yes please", "z": "",
                // A key is resolved too: `n` is false.
                "false": "key"
            })
        );
    }

    #[test]
    fn tags_ask_for_their_type() {
        assert_eq!(
            one("a: !!str 12\nb: !!float 1\nc: !custom yes\nd: !!binary aGk=\n"),
            json!({"a": "12", "b": 1, "c": "yes", "d": "hi"})
        );
        assert_eq!(
            failure("a: !!int abc\n").reason,
            "invalid YAML: cannot decode !!str `abc` as a !!int"
        );
    }

    #[test]
    fn keys_become_json_strings_as_sigs_k8s_io_yaml_converts_them() {
        assert_eq!(
            one("1: a\ntrue: b\n1.5: c\n100000000: d\n1e8: e\nyes: f\n"),
            // `yes` is the key `true` again: the last value wins.
            json!({"1": "a", "true": "f", "1.5": "c", "100000000": "d", "1e+08": "e"})
        );
        assert!(
            failure("~: a\n")
                .reason
                .contains("unsupported map key of type: <nil>")
        );
        assert!(failure("? [a]\n: b\n").reason.contains("as a mapping key"));
    }

    #[test]
    fn merge_keys_apply_in_the_order_go_yaml_v2_applies_them() {
        let doc = one("base: &base {a: 1, b: 1}\nother: &other {b: 2, c: 2}\n\
             after: {<<: *base, a: 9}\nbefore: {a: 9, <<: *base}\n\
             list: {<<: [*base, *other]}\ninline: {<<: {x: 1}, z: 2}\n");
        // Keys after `<<` overwrite it; a merge overwrites keys before it; the first map listed
        // wins.
        assert_eq!(doc["after"], json!({"a": 9, "b": 1}));
        assert_eq!(doc["before"], json!({"a": 1, "b": 1}));
        assert_eq!(doc["list"], json!({"a": 1, "b": 1, "c": 2}));
        assert_eq!(doc["inline"], json!({"x": 1, "z": 2}));
        // A quoted `<<` is an ordinary key.
        assert_eq!(one("'<<': {a: 1}\n"), json!({"<<": {"a": 1}}));
        assert_eq!(
            failure("a: &a 1\nb: {<<: *a}\n").reason,
            "invalid YAML: map merge requires map or sequence of maps as the value"
        );
    }

    #[test]
    fn a_hand_written_job_with_merge_keys_reads_like_kubectl() {
        let text = "x-pod: &pod\n  restartPolicy: Never\n  containers:\n  - name: main\n    image: busybox\n\
                    ---\napiVersion: batch/v1\nkind: Job\nmetadata: {name: pi}\nspec:\n  template:\n    spec:\n      <<: *pod\n";
        // Anchors belong to their document, as in go-yaml: the second document cannot use them.
        let mut docs = documents(text);
        assert!(docs.next().unwrap().is_ok());
        assert!(docs.next().unwrap().is_err());
        let text = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: pi}\nx-pod: &pod\n  restartPolicy: Never\n\
                    spec:\n  template:\n    spec:\n      <<: *pod\n      containers: [{name: main, image: busybox}]\n";
        assert_eq!(
            one(text)["spec"]["template"]["spec"],
            json!({"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]})
        );
    }

    #[test]
    fn duplicates_keep_the_last_value_and_are_reported_but_merged_keys_are_not_duplicates() {
        let mut docs = documents("a: 1\nb: {<<: {c: 1}, c: 2}\na: 2\n");
        let doc = docs.next().unwrap().unwrap();
        assert_eq!(doc.value, json!({"a": 2, "b": {"c": 2}}));
        assert_eq!(doc.duplicates, [vec![Step::Key("a".into())]]);
    }

    #[test]
    fn excessive_aliasing_is_refused_as_go_yaml_refuses_it() {
        let mut laughs = String::from(
            "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
        );
        for (i, c) in ('b'..='i').enumerate() {
            let p = (b'a' + i as u8) as char;
            laughs.push_str(&format!(
                "{c}: &{c} [*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p}]\n"
            ));
        }
        assert_eq!(
            failure(&laughs).reason,
            "invalid YAML: document contains excessive aliasing"
        );
        // A few aliases are fine.
        assert_eq!(one("a: &a [1, 2]\nb: *a\nc: *a\n")["c"], json!([1, 2]));
    }

    #[test]
    fn nan_and_infinities_cannot_be_sent() {
        assert!(
            failure("a: .nan\n")
                .reason
                .contains("unsupported value: NaN")
        );
        assert!(
            failure("a: -.inf\n")
                .reason
                .contains("unsupported value: -Inf")
        );
    }

    #[test]
    fn nesting_is_bounded() {
        let deep = format!("a: {}1{}\n", "[".repeat(200), "]".repeat(200));
        assert_eq!(
            failure(&deep).reason,
            "invalid YAML: nested deeper than 128 levels"
        );
    }

    #[test]
    fn go_formats_float32_keys() {
        for (f, s) in [
            (1.5, "1.5"),
            (0.1, "0.1"),
            (1e8, "1e+08"),
            (123456.0, "123456"),
            (1e-5, "1e-05"),
            (-2.25, "-2.25"),
        ] {
            assert_eq!(go_format_float32_g(f), s, "{f}");
        }
    }
}
