//! A JSON cursor for the common case: a document as kube-apiserver writes it, read in a few
//! small loops instead of a tree of serde visitors (whose code, not their instruction count, is
//! what a served review spends its time on: see docs/src/developer/benchmarks.md).
//!
//! Every method returns `None` for anything it does not read exactly as `serde_json` would (an
//! escape in a string it returns, `-0`, a float where an integer goes, nesting deeper than
//! [`MAX_DEPTH`]) and for anything `serde_json` refuses. `None` is not a verdict: the caller
//! reads the document again with serde, which decides and says why. What a method accepts, it
//! reads as `serde_json` 1.0 does (`de.rs`: `parse_whitespace`, `ignore_value`,
//! `ignore_integer`; `read.rs`: `ignore_str`, `ignore_escape`, `skip_to_escape`).
//!
//! The value readers are kept out of line (`#[inline(never)]`): one copy of each, however many
//! fields read it. Inlined, they made the reader larger and a review slower when served.

/// Nesting this deep is left to serde (its own limit is 128 for what it reads into types).
const MAX_DEPTH: usize = 100;

pub(crate) struct Scan<'a> {
    text: &'a str,
    at: usize,
    depth: usize,
}

impl<'a> Scan<'a> {
    pub(crate) fn new(text: &'a str) -> Scan<'a> {
        Scan {
            text,
            at: 0,
            depth: 0,
        }
    }

    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    /// The next byte after JSON whitespace (`serde_json`'s `parse_whitespace`), not consumed.
    fn peek(&mut self) -> Option<u8> {
        match self.bytes().get(self.at) {
            Some(b' ' | b'\n' | b'\t' | b'\r') => self.peek_after_whitespace(),
            next => next.copied(),
        }
    }

    #[inline(never)]
    fn peek_after_whitespace(&mut self) -> Option<u8> {
        let bytes = self.bytes();
        while let Some(b) = bytes.get(self.at) {
            match b {
                b' ' | b'\n' | b'\t' | b'\r' => self.at += 1,
                _ => return Some(*b),
            }
        }
        None
    }

    /// Consumes `byte` if it comes next.
    fn eat(&mut self, byte: u8) -> bool {
        let next = self.peek() == Some(byte);
        self.at += usize::from(next);
        next
    }

    /// Nothing but whitespace is left (`Deserializer::end`).
    pub(crate) fn end(&mut self) -> Option<()> {
        (self.peek().is_none()).then_some(())
    }

    /// Consumes a `null` if one comes next.
    #[inline(never)]
    pub(crate) fn null(&mut self) -> bool {
        let next = self.peek() == Some(b'n') && self.bytes()[self.at..].starts_with(b"null");
        self.at += 4 * usize::from(next);
        next
    }

    /// Reads an object, handing each key to `field` with the cursor at its value; `field`
    /// reads or skips the value. A key with an escape is not read: serde matches it decoded.
    pub(crate) fn object(
        &mut self,
        mut field: impl FnMut(&mut Scan<'a>, &'a str) -> Option<()>,
    ) -> Option<()> {
        self.members(|scan, key| field(scan, key?))
    }

    /// An object whose keys may hold escapes (`None` for such a key).
    fn members(
        &mut self,
        mut field: impl FnMut(&mut Scan<'a>, Option<&'a str>) -> Option<()>,
    ) -> Option<()> {
        self.sequence(b'{', b'}', |scan| {
            let (key, escaped) = scan.literal()?;
            let key = (!escaped).then(|| &key[1..key.len() - 1]);
            if !scan.eat(b':') {
                return None;
            }
            field(scan, key)
        })
    }

    /// Reads an array, calling `item` with the cursor at each element.
    pub(crate) fn array(&mut self, item: impl FnMut(&mut Scan<'a>) -> Option<()>) -> Option<()> {
        self.sequence(b'[', b']', item)
    }

    /// `open`, then `item`s separated by commas (none is fine, a trailing comma is not), then
    /// `close`.
    fn sequence(
        &mut self,
        open: u8,
        close: u8,
        mut item: impl FnMut(&mut Scan<'a>) -> Option<()>,
    ) -> Option<()> {
        if !self.eat(open) {
            return None;
        }
        self.enter()?;
        if !self.eat(close) {
            loop {
                item(self)?;
                if self.eat(close) {
                    break;
                }
                if !self.eat(b',') {
                    return None;
                }
            }
        }
        self.depth -= 1;
        Some(())
    }

    fn enter(&mut self) -> Option<()> {
        self.depth += 1;
        (self.depth <= MAX_DEPTH).then_some(())
    }

    /// A string without escapes, borrowed; `None` for any other value.
    #[inline(never)]
    pub(crate) fn plain_str(&mut self) -> Option<&'a str> {
        if !self.eat(b'"') {
            return None;
        }
        let start = self.at;
        self.at = special_at(self.bytes(), start);
        if self.bytes().get(self.at) != Some(&b'"') {
            return None;
        }
        self.at += 1;
        self.text.get(start..self.at - 1)
    }

    /// A string literal with its quotes, escapes checked as `serde_json`'s `ignore_str` checks
    /// them (a `\u` escape is four hex digits; whether it names half a surrogate pair is the
    /// caller's to check).
    pub(crate) fn str_literal(&mut self) -> Option<&'a str> {
        self.literal().map(|(literal, _)| literal)
    }

    /// A string literal with its quotes, and whether it holds an escape.
    #[inline(never)]
    fn literal(&mut self) -> Option<(&'a str, bool)> {
        if self.peek() != Some(b'"') {
            return None;
        }
        let bytes = self.bytes();
        let start = self.at;
        let mut escaped = false;
        self.at += 1;
        loop {
            self.at = special_at(bytes, self.at);
            match bytes.get(self.at)? {
                b'"' => {
                    self.at += 1;
                    return Some((self.text.get(start..self.at)?, escaped));
                }
                b'\\' => {
                    escaped = true;
                    let escape = *bytes.get(self.at + 1)?;
                    self.at += 2;
                    match escape {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                        b'u' => {
                            let hex = bytes.get(self.at..self.at + 4)?;
                            if !hex.iter().all(u8::is_ascii_hexdigit) {
                                return None;
                            }
                            self.at += 4;
                        }
                        _ => return None,
                    }
                }
                // A control character: serde_json refuses it.
                _ => return None,
            }
        }
    }

    /// A `true` or `false`.
    #[inline(never)]
    pub(crate) fn bool(&mut self) -> Option<bool> {
        let first = self.peek()?;
        let rest = &self.bytes()[self.at..];
        let (value, word): (bool, &[u8]) = match first {
            b't' => (true, b"true"),
            b'f' => (false, b"false"),
            _ => return None,
        };
        if !rest.starts_with(word) {
            return None;
        }
        self.at += word.len();
        Some(value)
    }

    /// An integer written without fraction or exponent, of at most 18 digits; not `-0`, which
    /// serde_json reads as a float.
    #[inline(never)]
    pub(crate) fn int(&mut self) -> Option<i64> {
        let negative = self.eat(b'-');
        let bytes = self.bytes();
        let start = self.at;
        while bytes.get(self.at).is_some_and(u8::is_ascii_digit) {
            self.at += 1;
        }
        let digits = &bytes[start..self.at];
        let follows_number = matches!(bytes.get(self.at), Some(b'.' | b'e' | b'E'));
        if digits.is_empty()
            || digits.len() > 18
            || (digits[0] == b'0' && (digits.len() > 1 || negative))
            || follows_number
        {
            return None;
        }
        let value = digits
            .iter()
            .fold(0i64, |n, d| n * 10 + i64::from(d - b'0'));
        Some(if negative { -value } else { value })
    }

    /// An integer that fits `i32` (serde refuses others for an `i32` field).
    pub(crate) fn i32(&mut self) -> Option<i32> {
        i32::try_from(self.int()?).ok()
    }

    /// Skips any value, checking it as `serde_json`'s `ignore_value` does.
    #[inline(never)]
    pub(crate) fn skip(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.str_literal().map(drop),
            b'{' => self.members(|scan, _| scan.skip()),
            b'[' => self.array(Scan::skip),
            b'n' => self.null().then_some(()),
            b't' | b'f' => self.bool().map(drop),
            _ => self.number(),
        }
    }

    /// Any number (`ignore_integer`, `ignore_decimal`, `ignore_exponent`).
    #[inline(never)]
    fn number(&mut self) -> Option<()> {
        let bytes = self.bytes();
        let digits = |at: &mut usize| {
            let start = *at;
            while bytes.get(*at).is_some_and(u8::is_ascii_digit) {
                *at += 1;
            }
            *at - start
        };
        let mut at = self.at;
        at += usize::from(bytes.get(at) == Some(&b'-'));
        let first = *bytes.get(at)?;
        let integer = digits(&mut at);
        if integer == 0 || (first == b'0' && integer > 1) {
            return None;
        }
        if bytes.get(at) == Some(&b'.') {
            at += 1;
            if digits(&mut at) == 0 {
                return None;
            }
        }
        if matches!(bytes.get(at), Some(b'e' | b'E')) {
            at += 1;
            at += usize::from(matches!(bytes.get(at), Some(b'+' | b'-')));
            if digits(&mut at) == 0 {
                return None;
            }
        }
        self.at = at;
        Some(())
    }
}

/// The index of the first `"`, `\` or control character at or after `from` (the length when
/// there is none): `serde_json`'s `skip_to_escape`, eight bytes at a time by Mycroft's test
/// for a zero byte.
#[inline(always)]
fn special_at(bytes: &[u8], from: usize) -> usize {
    const ONES: u64 = u64::MAX / 255;
    const HIGHS: u64 = ONES << 7;
    let mut at = from;
    while let Some(chunk) = bytes.get(at..at + 8) {
        let mut word = [0; 8];
        word.copy_from_slice(chunk);
        let chars = u64::from_le_bytes(word);
        let control = chars.wrapping_sub(ONES * 0x20) & !chars;
        let quote = chars ^ (ONES * u64::from(b'"'));
        let quote = quote.wrapping_sub(ONES) & !quote;
        let backslash = chars ^ (ONES * u64::from(b'\\'));
        let backslash = backslash.wrapping_sub(ONES) & !backslash;
        // Exact for the lowest byte found, which is the one taken.
        let found = (control | quote | backslash) & HIGHS;
        if found != 0 {
            return at + found.trailing_zeros() as usize / 8;
        }
        at += 8;
    }
    let Some(tail) = bytes.get(at..) else {
        return bytes.len();
    };
    at + tail
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
        .unwrap_or(tail.len())
}

impl<'a> Scan<'a> {
    /// `null` as `None`, else what `read` reads: an `Option` field.
    pub(crate) fn opt<T>(
        &mut self,
        read: impl FnOnce(&mut Scan<'a>) -> Option<T>,
    ) -> Option<Option<T>> {
        if self.null() {
            Some(None)
        } else {
            read(self).map(Some)
        }
    }
}

/// The fields of one object read so far: serde's derived structs refuse a field given twice
/// ("duplicate field"), so a second sighting gives up.
#[derive(Default)]
pub(crate) struct Seen(u32);

impl Seen {
    /// Marks field number `field` (below 32) read, or gives up if it was.
    pub(crate) fn first(&mut self, field: u32) -> Option<()> {
        let bit = 1 << field;
        let first = self.0 & bit == 0;
        self.0 |= bit;
        first.then_some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skips(text: &str) -> bool {
        let mut scan = Scan::new(text);
        scan.skip().and_then(|()| scan.end()).is_some()
    }

    fn serde_reads(text: &str) -> bool {
        serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()
    }

    /// `ignore_value`'s grammar: what `skip` reads, serde_json reads; what it refuses, so does
    /// serde_json, but for nesting deeper than `MAX_DEPTH`, which is left to serde.
    #[test]
    fn skip_reads_what_serde_json_reads_and_refuses_what_it_refuses() {
        let read = [
            "null",
            "true",
            " false ",
            "0",
            "-1",
            "1.5",
            "-0.0e-5",
            "1E+2",
            "1e400",
            r#""""#,
            r#""a\"b\\\/\b\f\n\r\t\u00e9\uD800""#,
            "\"é中😀\"",
            "[]",
            r#"[1, "a", {"b": null}, [[]]]"#,
            "{}",
            " { \"a\" : [ 1 , 2 ] }\n",
            r#"{"k:{\"name\":\"x\"}":{},"f:spec":{".":{}}}"#,
        ];
        for text in read {
            assert!(serde_reads(text), "{text}");
            assert!(skips(text), "{text}");
        }
        let refused = [
            "",
            "nul",
            "tru",
            "nulll",
            "01",
            "-",
            "-01",
            "1.",
            ".5",
            "1e",
            "1e+",
            "+1",
            "[1,]",
            r#"{"a":1,}"#,
            "{,}",
            "{1:2}",
            r#"{"a" 1}"#,
            r#""\x""#,
            r#""\u12G4""#,
            r#""\u12"#,
            r#""a"#,
            "\"\u{1}\"",
            "\"\t\"",
            "[1 2]",
            r#"{"a":1}}"#,
            r#""""x"#,
            "[",
            "{",
            r#"{"a""#,
            "]",
            "}",
            "'a'",
            "NaN",
        ];
        for text in refused {
            assert!(!serde_reads(text), "{text}");
            assert!(!skips(text), "{text}");
        }
        let deep = format!(
            "{}1{}",
            "[".repeat(MAX_DEPTH + 1),
            "]".repeat(MAX_DEPTH + 1)
        );
        assert!(serde_reads(&deep) && !skips(&deep));
        let deep_enough = format!("{}1{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(skips(&deep_enough));
    }

    /// An `i32` field: serde_json reads integers as `u64`/`i64` and `-0`, fractions and
    /// exponents as floats, which an `i32` refuses (`Strict` reads `-0` as 0: left to serde).
    #[test]
    fn integers_are_read_as_serde_reads_an_i32_or_left_to_it() {
        for (text, want) in [
            ("0", Some(0)),
            ("7", Some(7)),
            (" -12", Some(-12)),
            ("2147483647", Some(i32::MAX)),
            ("-2147483648", Some(i32::MIN)),
            ("2147483648", None),
            ("-2147483649", None),
            ("-0", None),
            ("1.0", None),
            ("1e2", None),
            ("00", None),
            ("- 1", None),
            ("\"1\"", None),
            ("99999999999999999999", None),
        ] {
            assert_eq!(Scan::new(text).i32(), want, "{text}");
            if let Some(n) = want {
                assert_eq!(serde_json::from_str::<i32>(text).ok(), Some(n), "{text}");
            }
        }
        assert_eq!(
            Scan::new("123456789012345678").int(),
            Some(123456789012345678)
        );
        assert_eq!(Scan::new("1234567890123456789").int(), None);
    }

    #[test]
    fn strings_with_an_escape_are_left_to_serde_and_literals_keep_their_escapes() {
        assert_eq!(Scan::new(r#" "Indexed""#).plain_str(), Some("Indexed"));
        assert_eq!(Scan::new(r#""In\u0064exed""#).plain_str(), None);
        assert_eq!(Scan::new("\"a\nb\"").plain_str(), None);
        assert_eq!(Scan::new(r#" "a\"b" "#).str_literal(), Some(r#""a\"b""#));
        let mut scan = Scan::new(r#"{"n\u0061me":1}"#);
        assert!(scan.object(|scan, _| scan.skip()).is_none());
    }

    /// Eight bytes at a time finds the first `"`, `\` or control byte, as one at a time does.
    #[test]
    fn special_bytes_are_found_where_a_byte_loop_finds_them() {
        for special in (0u8..=255).filter(|b| *b < 0x20 || *b == b'"' || *b == b'\\') {
            for len in 0..20 {
                for at in 0..=len {
                    let mut bytes = vec![b'a'; len];
                    if at < len {
                        bytes[at] = special;
                    }
                    bytes.extend_from_slice("é\"".as_bytes());
                    let naive = bytes
                        .iter()
                        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
                        .unwrap();
                    assert_eq!(special_at(&bytes, 0), naive, "{bytes:?}");
                }
            }
        }
        assert_eq!(special_at(b"abc", 5), 3);
    }
}
