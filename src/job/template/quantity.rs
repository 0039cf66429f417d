//! `resource.Quantity` values as kube-apiserver compares them: `apiequality.Semantic` compares
//! quantities with `a.Cmp(b) == 0` ("ignore formatting, only care that numeric value stayed the
//! same", k8s.io/apimachinery `pkg/api/equality/semantic.go`), so `1Gi`, `1073741824` and
//! `1024Mi` are one value and `1G` another.
//!
//! [`Quantity::parse`] follows `ParseQuantity` and `parseQuantityString`
//! (k8s.io/apimachinery `pkg/api/resource/quantity.go`, the same parser, value for value, in
//! v0.33.13, v0.34.4, v0.35.4, v0.36.3 and v0.37.2) with exact decimal arithmetic, no floating
//! point:
//! - the value is the number times its suffix (`m` 10^-3 … `E` 10^18, `Ki` 2^10 … `Ei` 2^60, or
//!   `e<int>` / `E<int>`, whose exponent Go truncates to `int32`);
//! - a value finer than 10^-9 is rounded up, away from zero, to the next 10^-9 (`inf.RoundUp`);
//! - a binary-suffixed (`Ki`…`Ei`) value above 2^63-1 is capped there (`format == BinarySI`);
//! - `"0"`, and a sign or zeros alone (`-`, `+`, `000`, `.`), are zero; an empty string, an
//!   unknown suffix, or trailing characters are errors, as is a value without any digit that
//!   misses Go's int64 fast path (`-.e-10`: `inf.Dec.SetString` reads no digit).
//!
//! The canonical form (sign, significant digits, power of ten) is equal exactly when the values
//! are, so hashing it keeps the streaming template digest exact.
//!
//! What apimachinery v0.38.0-beta.0 (Kubernetes 1.38) changed, diffed against v0.37.2:
//! - the int64 fast path takes 19 digits (`maxInt64Factors`, `math.go`), parsed with
//!   `strconv.ParseUint` and kept only within int64 (or exactly `-2^63`); it still applies a
//!   decimal exponent with a wrapping int32 `scale -= int32(len(denom))`, so `1.25e-2147483647`
//!   is `125e2147483647`, as its own `TestParseQuantity` records;
//! - the `inf.Dec` path (`decFromDigits`) keeps 29 significant digits (`maxSignificantDigits`;
//!   70 before a binary suffix, which changes no binary value) and rounds the rest away from
//!   zero, so `123456789012345678901234567891` is `1234567890123456789012345679e2`;
//! - on that path a decimal exponent that narrows to `math.MinInt32` is `ErrSuffix`; any other
//!   exponent is widened: the scale saturates at `math.MaxInt32` (the same 29 digits at
//!   `e2147483641` and `e2147483642` are one value) and a value below 10^`math.MinInt32` is
//!   rounded up to 10^-9 like any value finer than that, where v0.37.2 wrapped (and then spent
//!   minutes, or panicked, rounding it). Other exponents beyond int32 are still narrowed ("stored
//!   objects keep the spelling they were given");
//! - a number without digits is `ErrNumeric` by an explicit check, not `inf.Dec.SetString`:
//!   the same strings.
//!
//! [`parse_error`] and the template digest (`digest.rs`, through [`Quantity::parse_by`] with the
//! cluster's [`Parser`]) take 1.38 and later releases so: two quantities 1.38 reads as one value
//! (they differ past the 29th significant digit, in an exponent saturated at `math.MaxInt32`, or
//! below 10^`math.MinInt32`) are one value to the immutability comparison on 1.38, two on 1.37.
//!
//! Only in code paths jobgate does not mirror: `String()` writes a `DecimalSI` value above the `E`
//! suffix in exponent form (`1e21`, where 1.33-1.37 dropped the exponent) and stops a canonical
//! exponent at the largest multiple of 3 in int32; `Value()`, `MilliValue()` and `ScaledValue()`
//! saturate at the int64 bounds; `Add` and `Sub` round the finer operand when the two are more than
//! 29 orders of magnitude apart (`maxScaleGap`, `boundScaleGap`); `infScale`, `narrowScale` and
//! `infDecAmount.AsScale` saturate or short-circuit instead of wrapping (`canAlignInfScale` is
//! gone); the cached string records its `Format`. `Cmp` is exact as before, by magnitude first,
//! which is what this module compares.

use crate::job::version::KubernetesVersion;

/// A quantity's value in canonical form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Quantity {
    negative: bool,
    /// Significant decimal digits (0-9), without leading or trailing zeros; empty for zero.
    digits: Vec<u8>,
    /// The value is `digits × 10^exponent`.
    exponent: i64,
}

/// `maxAllowed` (`pkg/api/resource/math.go`): the largest int64.
const MAX_ALLOWED: &[u8] = b"9223372036854775807";

/// `maxInt64Factors` (`pkg/api/resource/math.go`) as v0.33.13-v0.37.2 set it: how many digits
/// the int64 fast path of `ParseQuantity` takes.
const MAX_INT64_FACTORS_UP_TO_1_37: i64 = 18;

/// `maxInt64Factors` in v0.38.0-beta.0: 19 digits, which the fast path parses with
/// `strconv.ParseUint` and takes only within int64 (or exactly `-2^63`).
const MAX_INT64_FACTORS_FROM_1_38: i64 = 19;

/// `maxSignificantDigits` (v0.38.0-beta.0 `quantity.go`): the significant digits
/// `decFromDigits` keeps for a decimal quantity, rounding the rest away from zero.
const MAX_SIGNIFICANT_DIGITS: usize = 29;

/// `maxBinarySISignificantDigits` (v0.38.0-beta.0): the same bound before a binary suffix.
const MAX_BINARY_SI_SIGNIFICANT_DIGITS: usize = 70;

/// Which `ParseQuantity` a release runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Parser {
    /// k8s.io/apimachinery v0.33.13 to v0.37.2, value for value.
    UpTo1_37,
    /// k8s.io/apimachinery v0.38.0-beta.0.
    From1_38,
}

impl Parser {
    pub(crate) fn of(release: KubernetesVersion) -> Parser {
        if release.rules() >= KubernetesVersion::V1_38 {
            Parser::From1_38
        } else {
            Parser::UpTo1_37
        }
    }
}

/// Which error `ParseQuantity` returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ParseFailure {
    FormatWrong,
    Suffix,
    Numeric,
}

impl ParseFailure {
    fn message(self) -> &'static str {
        match self {
            ParseFailure::FormatWrong => ERR_FORMAT_WRONG,
            ParseFailure::Suffix => ERR_SUFFIX,
            ParseFailure::Numeric => ERR_NUMERIC,
        }
    }
}

/// The suffix's base and exponent, and whether it is binary (`BinarySI`).
#[derive(Debug, Clone, Copy)]
struct Suffix {
    binary: bool,
    exponent: i32,
}

/// `fastLookup.interpret` and `suffixHandler.interpret` (`pkg/api/resource/suffix.go`).
fn interpret(suffix: &str) -> Option<Suffix> {
    let decimal = |exponent| {
        Some(Suffix {
            binary: false,
            exponent,
        })
    };
    let binary = |exponent| {
        Some(Suffix {
            binary: true,
            exponent,
        })
    };
    match suffix {
        "" => decimal(0),
        "n" => decimal(-9),
        "u" => decimal(-6),
        "m" => decimal(-3),
        "k" => decimal(3),
        "M" => decimal(6),
        "G" => decimal(9),
        "T" => decimal(12),
        "P" => decimal(15),
        "E" => decimal(18),
        "Ki" => binary(10),
        "Mi" => binary(20),
        "Gi" => binary(30),
        "Ti" => binary(40),
        "Pi" => binary(50),
        "Ei" => binary(60),
        _ if suffix.len() > 1 && suffix.starts_with(['e', 'E']) => {
            // `strconv.ParseInt(suffix[1:], 10, 64)` then `int32(parsed)`: Go truncates.
            let parsed: i64 = go_parse_int(&suffix[1..])?;
            decimal(parsed as i32)
        }
        _ => None,
    }
}

/// `strconv.ParseInt(s, 10, 64)`: an optional sign and ASCII digits, within int64.
fn go_parse_int(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

impl Quantity {
    pub(crate) const ZERO: Quantity = Quantity {
        negative: false,
        digits: Vec::new(),
        exponent: 0,
    };

    /// `ParseQuantity(s)`'s value in `release`, or `None` where it returns an error there (see
    /// the module doc for what 1.38 reads differently). Production reads the error alone
    /// ([`parse_error`]); the template digest reads [`Quantity::parse_by`].
    #[cfg(test)]
    pub(crate) fn parse_in(s: &str, release: KubernetesVersion) -> Option<Quantity> {
        Quantity::parse_with(s, Parser::of(release)).ok()
    }

    /// `ParseQuantity(s)`'s value as `parser`'s releases read it, or `None` where it returns an
    /// error: what the template digest hashes.
    pub(crate) fn parse_by(s: &str, parser: Parser) -> Option<Quantity> {
        Quantity::parse_with(s, parser).ok()
    }

    /// `ParseQuantity(s)`'s value as 1.33-1.37 read it.
    #[cfg(test)]
    pub(crate) fn parse(s: &str) -> Option<Quantity> {
        Quantity::parse_with(s, Parser::UpTo1_37).ok()
    }

    fn parse_with(s: &str, parser: Parser) -> Result<Quantity, ParseFailure> {
        let parts = match Parts::of(s).ok_or(ParseFailure::FormatWrong)? {
            Lexed::Zero => return Ok(Quantity::ZERO),
            Lexed::Parts(parts) => parts,
        };
        let suffix = interpret(parts.suffix).ok_or(ParseFailure::Suffix)?;
        let fast = parts.takes_int64_fast_path(suffix, parser);
        if !fast && !parts.has_digit {
            // v0.37.2: `inf.Dec.SetString` reads no digit; v0.38.0-beta.0: "Handle a number
            // with no digits, such as "-.Pi", as an error".
            return Err(ParseFailure::Numeric);
        }
        let q = match parser {
            Parser::UpTo1_37 => parts.value_up_to_1_37(suffix),
            Parser::From1_38 if fast && !suffix.binary => parts.int64_fast_path_value(suffix),
            Parser::From1_38 => parts.dec_value_from_1_38(suffix)?,
        };
        Ok(q.rounded_up_to_nano_and_capped(suffix.binary))
    }

    /// The end of `ParseQuantity`'s `inf.Dec` path: a non-zero value finer than 10^-9 rounds up,
    /// away from zero (`inf.RoundUp` in v0.37.2, `infDecAmount.AsScale(Nano)` in
    /// v0.38.0-beta.0: the same value), and a binary-suffixed magnitude above 2^63-1 is capped.
    fn rounded_up_to_nano_and_capped(mut self, binary: bool) -> Quantity {
        strip_leading_zeros(&mut self.digits);
        if self.digits.is_empty() {
            return Quantity::ZERO;
        }
        if self.exponent < -9 {
            round_up_to_nano(&mut self.digits, &mut self.exponent);
        }
        self.normalize();
        if binary && self.magnitude_exceeds_max() {
            self.digits = MAX_ALLOWED.iter().map(|d| d - b'0').collect();
            self.exponent = 0;
        }
        self
    }

    pub(crate) fn is_zero(&self) -> bool {
        self.digits.is_empty()
    }

    /// The canonical form, for hashing: sign, power of ten, significant digits.
    pub(crate) fn canonical(&self) -> (bool, i64, &[u8]) {
        (self.negative, self.exponent, &self.digits)
    }

    fn normalize(&mut self) {
        let trailing = self.digits.iter().rev().take_while(|d| **d == 0).count();
        self.digits.truncate(self.digits.len() - trailing);
        self.exponent += trailing as i64;
        if self.digits.is_empty() {
            *self = Quantity::ZERO;
        }
    }

    /// Whether `|self| > 2^63-1` (`amount.Cmp(maxAllowed.Dec) > 0`).
    fn magnitude_exceeds_max(&self) -> bool {
        let int_digits = self.digits.len() as i64 + self.exponent;
        let max_len = MAX_ALLOWED.len() as i64;
        if int_digits != max_len {
            return int_digits > max_len;
        }
        let mut int_part: Vec<u8> = self.digits.iter().map(|d| d + b'0').collect();
        let fraction = if self.exponent >= 0 {
            int_part.extend(std::iter::repeat_n(b'0', self.exponent as usize));
            false
        } else {
            int_part.truncate(MAX_ALLOWED.len());
            true // digits end in a non-zero digit below the units
        };
        match int_part.as_slice().cmp(MAX_ALLOWED) {
            std::cmp::Ordering::Greater => true,
            std::cmp::Ordering::Equal => fraction,
            std::cmp::Ordering::Less => false,
        }
    }
}

/// `ErrFormatWrong` (k8s.io/apimachinery `pkg/api/resource/quantity.go`).
pub(crate) const ERR_FORMAT_WRONG: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
/// `ErrSuffix`.
pub(crate) const ERR_SUFFIX: &str = "unable to parse quantity's suffix";
/// `ErrNumeric`.
pub(crate) const ERR_NUMERIC: &str = "unable to parse numeric part of quantity";

/// The error `ParseQuantity(s)` returns in `release`, as kube-apiserver prints it, or `None`
/// when `s` parses there.
pub(crate) fn parse_error(s: &str, release: KubernetesVersion) -> Option<&'static str> {
    Quantity::parse_with(s, Parser::of(release))
        .err()
        .map(ParseFailure::message)
}

/// `digits × 2^power` (power at most 60), digits most significant first.
fn times_power_of_two(digits: &[u8], power: i32) -> Vec<u8> {
    let factor = 1u128 << power.clamp(0, 64);
    let mut out = Vec::with_capacity(digits.len() + 20);
    let mut carry = 0u128;
    for &d in digits.iter().rev() {
        let t = u128::from(d) * factor + carry;
        out.push((t % 10) as u8);
        carry = t / 10;
    }
    while carry > 0 {
        out.push((carry % 10) as u8);
        carry /= 10;
    }
    out.reverse();
    out
}

fn strip_leading_zeros(digits: &mut Vec<u8>) {
    let zeros = digits.iter().take_while(|d| **d == 0).count();
    digits.drain(..zeros);
}

/// `amount.Round(amount, Nano.infScale(), inf.RoundUp)` on a non-zero magnitude: drop the digits
/// below 10^-9 and, if any was not zero, add one 10^-9.
fn round_up_to_nano(digits: &mut Vec<u8>, exponent: &mut i64) {
    let drop = -9 - *exponent; // > 0
    *exponent = -9;
    if drop >= digits.len() as i64 {
        // Non-zero and below 10^-9.
        digits.clear();
        digits.push(1);
        return;
    }
    let keep = digits.len() - drop as usize;
    let inexact = digits[keep..].iter().any(|d| *d != 0);
    digits.truncate(keep);
    if inexact {
        let mut i = digits.len();
        loop {
            if i == 0 {
                digits.insert(0, 1);
                break;
            }
            i -= 1;
            if digits[i] == 9 {
                digits[i] = 0;
            } else {
                digits[i] += 1;
                break;
            }
        }
    }
    strip_leading_zeros(digits);
}

/// A quantity's text split as `parseQuantityString` splits it.
enum Lexed<'a> {
    /// `0`, or a sign and zeros only: zero, whatever follows.
    Zero,
    Parts(Parts<'a>),
}

/// The sign, the numerator's digits (leading zeros removed), the denominator's digits, whether
/// there was any digit, and the suffix (unread).
struct Parts<'a> {
    negative: bool,
    num: &'a [u8],
    denom: &'a [u8],
    has_digit: bool,
    suffix: &'a str,
}

impl<'a> Parts<'a> {
    /// `parseQuantityString`: sign, leading zeros, numerator, denominator, suffix. `None`:
    /// `ErrFormatWrong`.
    fn of(s: &'a str) -> Option<Lexed<'a>> {
        let b = s.as_bytes();
        if b.is_empty() {
            return None; // ErrFormatWrong
        }
        if s == "0" {
            return Some(Lexed::Zero);
        }
        let end = b.len();
        let mut pos = 0;
        let negative = b[0] == b'-';
        if matches!(b[0], b'-' | b'+') {
            pos += 1;
        }
        while pos < end && b[pos] == b'0' {
            pos += 1;
        }
        if pos >= end {
            return Some(Lexed::Zero); // num = "0", no suffix
        }
        let num_start = pos;
        while pos < end && b[pos].is_ascii_digit() {
            pos += 1;
        }
        let num = &b[num_start..pos];
        let mut denom: &[u8] = &[];
        if pos < end && b[pos] == b'.' {
            pos += 1;
            let start = pos;
            while pos < end && b[pos].is_ascii_digit() {
                pos += 1;
            }
            denom = &b[start..pos];
        }
        let has_digit = b[..pos].iter().any(u8::is_ascii_digit);
        let suffix_start = pos;
        while pos < end && b"eEinumkKMGTP".contains(&b[pos]) {
            pos += 1;
        }
        if pos < end && matches!(b[pos], b'-' | b'+') {
            pos += 1;
        }
        while pos < end && b[pos].is_ascii_digit() {
            pos += 1;
        }
        if pos < end {
            return None; // ErrFormatWrong
        }
        Some(Lexed::Parts(Parts {
            negative,
            num,
            denom,
            has_digit,
            suffix: &s[suffix_start..],
        }))
    }
}

impl Parts<'_> {
    /// Whether `ParseQuantity` takes its int64 fast path, which has no rounding, cap or
    /// `ErrNumeric` and, for a decimal suffix, keeps `scale -= int32(len(denom))` wrapped.
    fn takes_int64_fast_path(&self, suffix: Suffix, parser: Parser) -> bool {
        let num_len = self.num.len().max(1) as i64; // an empty integer part is "0"
        let denom_len = self.denom.len() as i64;
        if suffix.binary {
            // `int32(float32(exponent)*3/10)` is exact for the binary exponents 10..60.
            let precision = 15 - num_len - i64::from(suffix.exponent) * 3 / 10 - 1;
            return self.denom.is_empty() && precision >= 0;
        }
        let (factors, parse_uint) = match parser {
            Parser::UpTo1_37 => (MAX_INT64_FACTORS_UP_TO_1_37, false),
            Parser::From1_38 => (MAX_INT64_FACTORS_FROM_1_38, true),
        };
        let precision = factors - (num_len + denom_len);
        let scale = suffix.exponent.wrapping_sub(denom_len as i32);
        precision >= 0 && scale >= -9 && (!parse_uint || self.fits_int64())
    }

    /// v0.38.0-beta.0 `ParseQuantity`: `strconv.ParseUint(num+denom)` within int64, or exactly
    /// 2^63 when negative (`math.MinInt64`); anything else leaves the fast path.
    fn fits_int64(&self) -> bool {
        let shifted: String = self
            .num
            .iter()
            .chain(self.denom)
            .map(|&b| char::from(b))
            .collect();
        let shifted = if shifted.is_empty() { "0" } else { &shifted };
        match shifted.parse::<u64>() {
            Ok(u) => u <= i64::MAX as u64 || (self.negative && u == 1 << 63),
            Err(_) => false,
        }
    }

    fn digits(&self) -> Vec<u8> {
        self.num
            .iter()
            .chain(self.denom)
            .map(|d| d - b'0')
            .collect()
    }

    /// The value in v0.33.13-v0.37.2, where the fast path and the `inf.Dec` path agree: the
    /// decimal exponent is applied with int32 arithmetic
    /// (`amount.SetScale(amount.Scale() + Scale(exponent).infScale())`), wrapping as Go does.
    fn value_up_to_1_37(&self, suffix: Suffix) -> Quantity {
        let denom_len = self.denom.len() as i64;
        let mut digits = self.digits();
        let exponent = if suffix.binary {
            digits = times_power_of_two(&digits, suffix.exponent);
            -denom_len
        } else {
            -i64::from((denom_len as i32).wrapping_add(suffix.exponent.wrapping_neg()))
        };
        Quantity {
            negative: self.negative,
            digits,
            exponent,
        }
    }

    /// v0.38.0-beta.0's int64 fast path for a decimal suffix: `num+denom` at
    /// `scale = exponent - len(denom)` in int32, which wraps past `math.MinInt32` (its own test
    /// table keeps `1.25e-2147483647` as `125e2147483647`, "TODO: edge case that wraps").
    fn int64_fast_path_value(&self, suffix: Suffix) -> Quantity {
        let scale = suffix.exponent.wrapping_sub(self.denom.len() as i32);
        Quantity {
            negative: self.negative,
            digits: self.digits(),
            exponent: i64::from(scale),
        }
    }

    /// v0.38.0-beta.0's `inf.Dec` path (`ParseQuantity`, `decFromDigits`): the significant
    /// digits are bounded (29, or 70 before a binary suffix) and rounded away from zero; then a
    /// decimal exponent of `math.MinInt32` is `ErrSuffix`, and the scale is widened, so it
    /// saturates at `math.MaxInt32` instead of wrapping, and one below `math.MinInt32` rounds
    /// to 10^-9 as any other value finer than that.
    fn dec_value_from_1_38(&self, suffix: Suffix) -> Result<Quantity, ParseFailure> {
        let max_digits = if suffix.binary {
            MAX_BINARY_SI_SIGNIFICANT_DIGITS
        } else {
            MAX_SIGNIFICANT_DIGITS
        };
        let mut digits = self.digits();
        strip_leading_zeros(&mut digits);
        let dropped = digits.len().saturating_sub(max_digits);
        if dropped > 0 {
            let rounds_up = digits[max_digits..].iter().any(|d| *d != 0);
            digits.truncate(max_digits);
            if rounds_up {
                increment(&mut digits);
            }
        }
        // `decFromDigits`: a decimal point scale outside a Scale (some 2^31 digits) is not
        // `fits`, nor is `math.MinInt32` (`canInfScale`); `ParseQuantity` returns `ErrNumeric`.
        let point = dropped as i64 - self.denom.len() as i64;
        if point <= i64::from(i32::MIN) || point > i64::from(i32::MAX) {
            return Err(ParseFailure::Numeric);
        }
        let exponent = if suffix.binary {
            digits = times_power_of_two(&digits, suffix.exponent);
            point
        } else if suffix.exponent == i32::MIN {
            // "Return an error if the exponent is math.MinInt32 rather than rounding it to 1n."
            return Err(ParseFailure::Suffix);
        } else {
            // `narrowScale` saturates; below `math.MinInt32` the value is rounded to 10^-9
            // early, which is what rounding the exact value gives.
            (point + i64::from(suffix.exponent)).min(i64::from(i32::MAX))
        };
        Ok(Quantity {
            negative: self.negative,
            digits,
            exponent,
        })
    }
}

/// Adds one unit in the last place of a digit string, carrying (`999` becomes `1000`).
fn increment(digits: &mut Vec<u8>) {
    for d in digits.iter_mut().rev() {
        if *d == 9 {
            *d = 0;
        } else {
            *d += 1;
            return;
        }
    }
    digits.insert(0, 1);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap_or_else(|| panic!("{s:?} should parse"))
    }

    fn same(a: &str, b: &str) -> bool {
        q(a) == q(b)
    }

    /// `TestQuantityParse`-style spellings of one value in each format (quantity_test.go).
    #[test]
    fn one_value_in_every_format_is_one_quantity() {
        for (a, b) in [
            ("1Gi", "1073741824"),
            ("1Gi", "1024Mi"),
            ("1Gi", "1048576Ki"),
            ("1Gi", "1.073741824e9"),
            ("1Gi", "1.073741824G"),
            ("1G", "1e9"),
            ("1G", "1E9"),
            ("1G", "1000M"),
            ("1G", "1000000000"),
            ("1G", "0.001T"),
            ("500m", "0.5"),
            ("500m", ".5"),
            ("500m", "5e-1"),
            ("500m", "500000u"),
            ("500m", "500000000n"),
            ("1", "1.0"),
            ("1", "1.000"),
            ("1", "+1"),
            ("1", "001"),
            ("1", "1000m"),
            ("1.5Gi", "1536Mi"),
            ("0.5Ki", "512"),
            ("1e3", "1E+3"),
            ("1k", "1e3"),
            ("-1", "-1000m"),
            ("100E18", "1e20"),
            ("100000000000000000000", "1e20"),
        ] {
            assert!(same(a, b), "{a} == {b}");
        }
    }

    #[test]
    fn different_values_differ() {
        for (a, b) in [
            ("1Gi", "1G"),
            ("1Gi", "1073741823"),
            ("500m", "0.501"),
            ("1", "-1"),
            ("1Ki", "1k"),
            ("1m", "1u"),
            ("2", "1"),
        ] {
            assert!(!same(a, b), "{a} != {b}");
        }
    }

    #[test]
    fn zero_in_all_its_spellings() {
        for z in [
            "0", "-0", "+0", "000", "0.0", "0Gi", "0m", "0e5", "-", "+", ".", "0.", "-.", "0Ki",
        ] {
            assert!(q(z).is_zero(), "{z}");
            assert_eq!(q(z), q("0"), "{z}");
        }
    }

    /// `inf.RoundUp` to 10^-9, away from zero.
    #[test]
    fn values_finer_than_a_nano_round_up_away_from_zero() {
        assert!(same("0.1n", "1n"));
        assert!(same("1.0000000001", "1.000000001"));
        assert!(same("1.0000000000", "1"));
        assert!(same("-0.1n", "-1n"));
        assert!(same("1e-20", "1n"));
        assert!(same(".5n", "1n"));
        assert!(same("0.9999999999", "1"));
        assert!(same("9.9999999999", "10"));
        assert!(!same("1.0000000001", "1"));
    }

    /// `format == BinarySI && amount.Cmp(maxAllowed.Dec) > 0`: only binary suffixes are capped.
    #[test]
    fn binary_values_cap_at_the_largest_int64_and_decimal_ones_do_not() {
        assert!(same("8Ei", "9223372036854775807"));
        assert!(same("100Ei", "9223372036854775807"));
        assert!(same("7.99999999999999999999Ei", "9223372036854775807"));
        assert!(same("1Ei", "1152921504606846976"));
        assert!(!same("8E", "9223372036854775807"));
        assert!(same("8E", "8000000000000000000"));
        assert!(!same("10000000000000000000", "9223372036854775807"));
    }

    #[test]
    fn what_parse_quantity_refuses() {
        for bad in [
            "",
            "1x",
            "x",
            "1Gi5",
            "1 ",
            " 1",
            "1e",
            "1e+",
            "1ee3",
            "1KI",
            "1.5.5",
            "1e3k",
            "1e99999999999999999999",
            "-.e-10",
            "--1",
            "1-",
        ] {
            assert_eq!(Quantity::parse(bad), None, "{bad:?}");
        }
    }

    /// What kube-apiserver answers a Job whose quantity it cannot decode, per error.
    #[test]
    fn parse_errors_name_the_check_that_failed() {
        for (s, e) in [
            ("1 Gi", Some(ERR_FORMAT_WRONG)),
            ("1Gb", Some(ERR_FORMAT_WRONG)),
            ("", Some(ERR_FORMAT_WRONG)),
            ("1.2.3", Some(ERR_FORMAT_WRONG)),
            ("1mi", Some(ERR_SUFFIX)),
            ("1ee", Some(ERR_SUFFIX)),
            ("-.e-10", Some(ERR_NUMERIC)),
            ("1Gi", None),
            ("0.5", None),
            ("-", None),
        ] {
            assert_eq!(parse_error(s, KubernetesVersion::V1_37), e, "{s:?}");
        }
        // 1.38 refuses the one exponent 1.37 wraps, as a suffix it cannot use.
        assert_eq!(parse_error("1e-2147483648", KubernetesVersion::V1_37), None);
        assert_eq!(
            parse_error("1e-2147483648", KubernetesVersion::V1_38),
            Some(ERR_SUFFIX)
        );
    }

    #[test]
    fn exponents_go_truncates_to_int32_are_truncated() {
        // 4294967296 = 2^32: int32(2^32) == 0.
        assert!(same("1e4294967296", "1"));
        assert!(same("1e4294967299", "1e3"));
    }

    /// `ParseQuantity(s)` in `release` as `OK <digits>e<exponent>` or `ERR <message>`, the form
    /// the expectations below were written in.
    fn read_in(s: &str, release: KubernetesVersion) -> String {
        match Quantity::parse_with(s, Parser::of(release)) {
            Ok(q) if q.is_zero() => "OK 0".to_string(),
            Ok(q) => {
                let digits: String = q.digits.iter().map(|d| char::from(b'0' + d)).collect();
                let sign = if q.negative { "-" } else { "" };
                format!("OK {sign}{digits}e{}", q.exponent)
            }
            Err(failure) => format!("ERR {}", failure.message()),
        }
    }

    fn zeros(n: usize) -> String {
        "0".repeat(n)
    }

    /// `TestParseQuantity` (apimachinery v0.38.0-beta.0 `quantity_test.go`): the rows whose value
    /// is not the plain decimal value of an int64, read by 1.38 (its `want` and `wantAsDec`, as
    /// digits and a power of ten).
    #[test]
    fn test_parse_quantity_from_1_38() {
        let rows: Vec<(String, &str)> = vec![
            ("999999999999999999.1".into(), "OK 9999999999999999991e-1"),
            ("-9999999999999999999".into(), "OK -9999999999999999999e0"),
            ("-9223372036854775808".into(), "OK -9223372036854775808e0"),
            ("9223372036854775808".into(), "OK 9223372036854775808e0"),
            ("922337203685477580.8".into(), "OK 9223372036854775808e-1"),
            ("9223372036854775808E".into(), "OK 9223372036854775808e18"),
            ("10000000000000000000E".into(), "OK 1e37"),
            ("1000E".into(), "OK 1e21"),
            ("1.5n".into(), "OK 2e-9"),
            ("1.0000000000001Ki".into(), "OK 1024000000001e-9"),
            ("1e-10".into(), "OK 1e-9"),
            // 29 or more significant digits
            (
                format!("1{}1", zeros(27)),
                "OK 10000000000000000000000000001e0",
            ),
            (
                format!("1{}1", zeros(28)),
                "OK 10000000000000000000000000001e1",
            ),
            (
                format!("1{}10", zeros(27)),
                "OK 10000000000000000000000000001e1",
            ),
            (
                format!("1{}01", zeros(28)),
                "OK 10000000000000000000000000001e2",
            ),
            (
                format!("-1{}1", zeros(28)),
                "OK -10000000000000000000000000001e1",
            ),
            ("9".repeat(29), "OK 99999999999999999999999999999e0"),
            ("9".repeat(30), "OK 1e30"),
            (format!("-{}", "9".repeat(30)), "OK -1e30"),
            (
                format!("1{}1", zeros(10000)),
                "OK 10000000000000000000000000001e9973",
            ),
            (
                format!("0.01{}1e21", zeros(28)),
                "OK 10000000000000000000000000001e-9",
            ),
            (format!("{}Ki", "9".repeat(100)), "OK 9223372036854775807e0"),
            (
                "3.999999999999999999999999999132638262011596452794037759304046630859375Ei".into(),
                "OK 4611686018427387903999999999e-9",
            ),
            // large exponents
            (
                "1.7976931348623157000000000001e308".into(),
                "OK 17976931348623157000000000001e280",
            ),
            (
                "1.79769313486231569999999999999e308".into(),
                "OK 17976931348623157e292",
            ),
            (format!("1{}", zeros(10000)), "OK 1e10000"),
            (format!("1{}Ki", zeros(10000)), "OK 9223372036854775807e0"),
            ("1e-10000".into(), "OK 1e-9"),
            (format!("0.{}1", zeros(9999)), "OK 1e-9"),
            // DecimalExponent at the int32 exponent limit
            ("10e2147483647".into(), "OK 1e2147483648"),
            (
                "9223372036854775808e2147483647".into(),
                "OK 9223372036854775808e2147483647",
            ),
            ("1.0000000000000000000e2147483647".into(), "OK 1e2147483647"),
            ("00000000000000000001e2147483647".into(), "OK 1e2147483647"),
            // more than 29 significant digits near the int32 exponent limit: the scale saturates
            (
                "98765432109876543210987654321098765e2147483645".into(),
                "OK 98765432109876543210987654322e2147483647",
            ),
            (
                "-98765432109876543210987654321098765e2147483645".into(),
                "OK -98765432109876543210987654322e2147483647",
            ),
            (
                "98765432109876543210987654321098765e2147483641".into(),
                "OK 98765432109876543210987654322e2147483647",
            ),
            (
                "98765432109876543210987654321098765e2147483642".into(),
                "OK 98765432109876543210987654322e2147483647",
            ),
            (
                "987654321098765432109876543210.5e2147483647".into(),
                "OK 98765432109876543210987654322e2147483647",
            ),
            (format!("1{}e2147483647", zeros(29)), "OK 1e2147483675"),
            ("1e-2147483647".into(), "OK 1e-9"),
            ("1000000000.0000000001e-2147483647".into(), "OK 1e-9"),
            // zero with fractional digits; signs, leading zeros, a trailing dot
            ("0.0000000000000000000".into(), "OK 0"),
            ("0.0e-2147483647".into(), "OK 0"),
            ("+.5Pi".into(), "OK 562949953421312e0"),
            ("1.Pi".into(), "OK 1125899906842624e0"),
            ("007.50e-10".into(), "OK 1e-9"),
            ("-0.0Pi".into(), "OK 0"),
            // "TODO: edge case that wraps": the int64 fast path keeps its int32 scale wrapped
            ("1.25e-2147483647".into(), "OK 125e2147483647"),
            (".1e-2147483648".into(), "OK 1e2147483647"),
        ];
        for (input, want) in rows {
            assert_eq!(
                read_in(&input, KubernetesVersion::V1_38),
                want,
                "{input:.60}"
            );
        }
    }

    /// `TestQuantityParse` (v0.38.0-beta.0): the rows `quantityTestcases` and the `invalid`
    /// list gained, read by 1.38.
    #[test]
    fn test_quantity_parse_from_1_38() {
        let suffix = format!("ERR {ERR_SUFFIX}");
        let numeric = format!("ERR {ERR_NUMERIC}");
        for (input, want) in [
            // "a number with no digits is 0 when the int64 fast path parses it"
            (".", "OK 0"),
            (".Ki", "OK 0"),
            (".1G", "OK 1e8"),
            // "parseQuantityString leaves the invalid part of these in suffix"
            ("--1", &suffix),
            (".-1", &suffix),
            ("1-", &suffix),
            ("1-1", &suffix),
            ("1.-1", &suffix),
            ("1e", &suffix),
            ("1e-", &suffix),
            ("1KiKi", &suffix),
            ("1ee3", &suffix),
            ("1iK", &suffix),
            ("1Kie3", &suffix),
            ("1K", &suffix),
            ("1ki", &suffix),
            ("1Ki1", &suffix),
            ("1Ki-", &suffix),
            ("Ki1", &suffix),
            // "a number with no digits is rejected when it skips the int64 fast path"
            (".e-10", &numeric),
            ("-.Pi", &numeric),
            ("Ei", &numeric),
            // "an exponent that narrows to a scale of math.MinInt32 is rejected"
            ("1e2147483648", &suffix),
        ] {
            assert_eq!(read_in(input, KubernetesVersion::V1_38), want, "{input}");
        }
    }

    /// What 1.38's int64 fast path takes (`maxInt64Factors` 19 and `strconv.ParseUint`,
    /// v0.38.0-beta.0 `ParseQuantity`) decides where a scale wraps and where `math.MinInt32` is
    /// refused: the fast path wraps, the `inf.Dec` path refuses that exponent and rounds the
    /// others.
    #[test]
    fn the_19_digit_fast_path_decides_wrapping_and_refusal_from_1_38() {
        let suffix = format!("ERR {ERR_SUFFIX}");
        for (input, want) in [
            (
                "1.234567890123456789e-2147483648",
                "OK 1234567890123456789e2147483630",
            ),
            (
                "-9.223372036854775808e-2147483648",
                "OK -9223372036854775808e2147483630",
            ),
            ("9.223372036854775808e-2147483648", &suffix),
            (
                "9.223372036854775807e-2147483647",
                "OK 9223372036854775807e2147483631",
            ),
            ("9.223372036854775808e-2147483647", "OK 1e-9"),
            ("0.1e-2147483647", "OK 1e-9"),
            ("0.01e-2147483647", "OK 1e2147483647"),
            ("1.5e-2147483648", "OK 15e2147483647"),
            ("0.0e-2147483648", "OK 0"),
            ("0e-2147483648", &suffix),
            ("-2e-2147483648", &suffix),
            ("1.234567890123456789", "OK 1234567891e-9"),
        ] {
            assert_eq!(read_in(input, KubernetesVersion::V1_38), want, "{input}");
        }
    }

    /// `maxSignificantDigits` (v0.38.0-beta.0): 1.38 rounds a decimal quantity away from zero
    /// after 29 significant digits, so values 1.33-1.37 tell apart are one there; 1.37 reads
    /// them exactly as before.
    #[test]
    fn decimal_quantities_keep_29_significant_digits_from_1_38_only() {
        let (v1_37, v1_38) = (KubernetesVersion::V1_37, KubernetesVersion::V1_38);
        for (input, in_1_37, in_1_38) in [
            (
                "123456789012345678901234567891",
                "OK 123456789012345678901234567891e0",
                "OK 1234567890123456789012345679e2",
            ),
            (
                "123456789012345678901234567900",
                "OK 1234567890123456789012345679e2",
                "OK 1234567890123456789012345679e2",
            ),
            (
                "-123456789012345678901234567891",
                "OK -123456789012345678901234567891e0",
                "OK -1234567890123456789012345679e2",
            ),
            (
                "99999999999999999999999999999.5",
                "OK 999999999999999999999999999995e-1",
                "OK 1e29",
            ),
            (
                "0e-2147483648",
                "OK 0",
                "ERR unable to parse quantity's suffix",
            ),
        ] {
            assert_eq!(read_in(input, v1_37), in_1_37, "{input}");
            assert_eq!(read_in(input, v1_38), in_1_38, "{input}");
        }
        // Past the nano digits, 29 digits change nothing: both round up to 10^-9.
        for input in [
            "0.000000000123456789012345678901234567891",
            "-0.00000000000000000000000000001",
        ] {
            assert_eq!(read_in(input, v1_37), read_in(input, v1_38), "{input}");
        }
    }

    mod properties {
        use super::super::Quantity;
        use proptest::prelude::*;

        proptest! {
            /// Anything shaped like a quantity parses or is refused, never panics; what parses
            /// is in canonical form.
            #[test]
            fn parse_never_panics_and_is_canonical(
                s in "[-+]?[0-9]{0,25}(\\.[0-9]{0,25})?([eEinumkKMGTP]{0,2}[-+]?[0-9]{0,12})?",
            ) {
                let v1_38 = crate::job::version::KubernetesVersion::V1_38;
                let read = [Quantity::parse(&s), Quantity::parse_in(&s, v1_38)];
                for q in read.into_iter().flatten() {
                    let (negative, _, digits) = q.canonical();
                    prop_assert!(digits.first() != Some(&0), "{s}: leading zero");
                    prop_assert!(digits.last() != Some(&0), "{s}: trailing zero");
                    prop_assert!(!(negative && digits.is_empty()), "{s}: negative zero");
                }
            }

            /// A binary suffix is its power of two: `nKi` is `n × 1024` written out.
            #[test]
            fn binary_suffixes_equal_their_decimal_expansion(
                n in 0u64..1_000_000_000_000,
                k in 1u32..=5,
            ) {
                let suffix = ["Ki", "Mi", "Gi", "Ti", "Pi"][k as usize - 1];
                let expanded = u128::from(n) << (10 * k);
                let capped = expanded.min(u128::from(i64::MAX as u64));
                prop_assert_eq!(
                    Quantity::parse(&format!("{n}{suffix}")),
                    Quantity::parse(&capped.to_string())
                );
            }

            /// A decimal suffix moves the point: `nm` is `n / 1000`.
            #[test]
            fn decimal_suffixes_move_the_point(n in 0u64..1_000_000_000_000_000) {
                let milli = format!("{}.{:03}", n / 1000, n % 1000);
                prop_assert_eq!(Quantity::parse(&format!("{n}m")), Quantity::parse(&milli));
                prop_assert_eq!(
                    Quantity::parse(&format!("{n}k")),
                    Quantity::parse(&format!("{n}e3"))
                );
            }
        }
    }

    /// `TestQuantityParse` (v0.38.0-beta.0): "an exponent that narrows to a scale of
    /// math.MinInt32 is rejected" on the `inf.Dec` path, however it was written (`e-2147483648`,
    /// or `e2147483648` and `e6442450944`, which narrow to it). 1.33-1.37 read it as 10^(2^31).
    /// The int64 fast path still takes `1.5e-2147483648` (its scale wraps), and every other
    /// exponent beyond int32 is still narrowed in 1.38 (`suffixHandler.interpret`, `suffix.go`).
    #[test]
    fn test_quantity_parse_only_an_exponent_narrowing_to_min_int32_is_refused_from_1_38() {
        use crate::job::version::KubernetesVersion as V;
        let (v1_37, v1_38) = (V::V1_37, V::V1_38);
        for min in [
            "1e-2147483648",
            "1e2147483648",
            "1E6442450944",
            "-2e-2147483648",
        ] {
            assert!(Quantity::parse_in(min, v1_37).is_some(), "{min}");
            assert_eq!(Quantity::parse_in(min, v1_38), None, "{min}");
            assert_eq!(
                Quantity::parse_in(min, V::parse("1.39").unwrap()),
                None,
                "{min}"
            );
        }
        assert!(same("1e-2147483648", "10e-2147483649"));
        for kept in [
            "1.5e-2147483648",
            "1e-2147483647",
            "1e2147483647",
            "1e4294967297",
            "1Ei",
        ] {
            assert_eq!(
                Quantity::parse_in(kept, v1_38),
                Quantity::parse_in(kept, v1_37),
                "{kept}"
            );
            assert!(Quantity::parse_in(kept, v1_38).is_some(), "{kept}");
        }
        // Narrowed, not refused: 2^32 + 1 is 1.
        assert_eq!(Quantity::parse_in("1e4294967297", v1_38), Some(q("1e1")));
    }

    /// 1.38 writes a `DecimalSI` value above 10^18 in exponent form (`1e21`; v0.38.0-beta.0
    /// `CanonicalizeBytes`, `TestParseQuantity`'s `1000E` row); 1.33-1.37 dropped the exponent
    /// (`1000E` was written `1`). The comparison is by value, so every spelling of 10^21 is one
    /// quantity and a value that differs by that lost exponent is another.
    #[test]
    fn decimal_si_above_1e18_compares_by_value_at_any_spelling() {
        for (a, b) in [
            ("1000E", "1e21"),
            ("1000E", "1000000000000000000000"),
            ("1000E", "1E21"),
            ("1000E", "0.001e24"),
            ("1500E", "1.5e21"),
            ("5000000E", "5e24"),
            ("-1000E", "-1e21"),
        ] {
            assert!(same(a, b), "{a} == {b}");
        }
        for (a, b) in [
            ("1000E", "1"),
            ("1e21", "1e24"),
            ("1000E", "999999999999999999999"),
        ] {
            assert!(!same(a, b), "{a} != {b}");
        }
    }

    /// 1.38's `Value()` saturates at the int64 bounds (apimachinery v0.38.0-beta.0
    /// `Quantity.AsScaledInt64`, `scaledValue` in `scale_int.go`). The comparison never goes
    /// through an int64: values past it stay distinct and exact.
    #[test]
    fn values_beyond_int64_compare_exactly_not_saturated() {
        for (a, b) in [
            ("9223372036854775808", "9223372036854775807"),
            ("18446744073709551616", "18446744073709551617"),
            ("-9223372036854775809", "-9223372036854775808"),
            ("9223372036854775807001m", "9223372036854775807"),
        ] {
            assert!(!same(a, b), "{a} != {b}");
        }
        assert!(same("18446744073709551616", "18.446744073709551616E"));
        assert!(same("-9223372036854775808", "-9.223372036854775808e18"));
    }

    #[test]
    fn huge_and_tiny_exponents_stay_bounded() {
        assert!(same("1e2000000000", "10e1999999999"));
        assert!(!same("1e2000000000", "1e1999999999"));
        assert!(same("1e-2000000000", "1n"));
    }
}
