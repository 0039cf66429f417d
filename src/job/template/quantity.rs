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
//! What apimachinery v0.38.0-alpha.2 (Kubernetes 1.38) changed, diffed against v0.37.2:
//! - `ParseQuantity` refuses (`ErrSuffix`) a decimal exponent that narrows to `math.MinInt32`
//!   on the `inf.Dec` path, whose scale cannot be negated ([`Quantity::parse_in`]). Other
//!   exponents beyond int32 are still narrowed ("stored objects keep the spelling they were
//!   given"): the bounds check kubernetes#141203 describes is not in that code.
//! - `String()` writes a `DecimalSI` value above the `E` suffix (10^18) in exponent form (`1e21`)
//!   where 1.33-1.37 dropped the exponent (`1000E` was written `1`, kubernetes#140459); `Cmp`
//!   settles by magnitude before aligning scales; `Value()`, `MilliValue()` and `ScaledValue()`
//!   saturate at the int64 bounds instead of wrapping. None of these changes a value: `Cmp` was
//!   and is exact, which is what this module mirrors, and no rule jobgate mirrors reads `Value()`.

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

/// `maxInt64Factors`: the decimal digits an int64 always holds.
const MAX_INT64_FACTORS: i64 = 18;

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

    /// `ParseQuantity(s)`'s value in `release`, or `None` where it returns an error there: from
    /// 1.38 also a decimal exponent that narrows to `math.MinInt32` on the `inf.Dec` path
    /// (apimachinery v0.38.0-alpha.2; in 1.33-1.37 that scale's negation wraps and the value is
    /// `10^(2^31)` times the number, as [`Quantity::parse`] reads it).
    pub(crate) fn parse_in(s: &str, release: KubernetesVersion) -> Option<Quantity> {
        let refuses_min_int32_exponent = release.rules() >= KubernetesVersion::V1_38;
        Quantity::parse_with(s, refuses_min_int32_exponent)
    }

    /// `ParseQuantity(s)`'s value as 1.33-1.37 read it, or `None` where it returns an error. Every
    /// quantity a later release reads has the same value here.
    pub(crate) fn parse(s: &str) -> Option<Quantity> {
        Quantity::parse_with(s, false)
    }

    fn parse_with(s: &str, refuses_min_int32_exponent: bool) -> Option<Quantity> {
        let Parts {
            negative,
            num,
            denom,
            has_digit,
            suffix,
        } = match Parts::of(s)? {
            Lexed::Zero => return Some(Quantity::ZERO),
            Lexed::Parts(parts) => parts,
        };
        let suffix = interpret(suffix)?; // ErrSuffix

        // Go's int64 fast path cannot fail; the `inf.Dec` path fails on a value without digits.
        // Both give the same value where they succeed (the fast path needs no rounding or cap).
        let num_len = num.len().max(1) as i64; // an empty numerator is "0"
        let denom_len = denom.len() as i64;
        let fast = if suffix.binary {
            // `int32(float32(exponent)*3/10)` is exact for the binary exponents 10..60.
            let precision = 15 - num_len - i64::from(suffix.exponent) * 3 / 10 - 1;
            denom.is_empty() && precision >= 0
        } else {
            let precision = MAX_INT64_FACTORS - (num_len + denom_len);
            let scale = suffix.exponent.wrapping_sub(denom_len as i32);
            precision >= 0 && scale >= -9
        };
        if !fast && !has_digit {
            return None; // ErrNumeric
        }
        if refuses_min_int32_exponent && !fast && !suffix.binary && suffix.exponent == i32::MIN {
            return None; // ErrSuffix: "the quantity has no representation here"
        }

        let mut digits: Vec<u8> = num.iter().chain(denom).map(|d| d - b'0').collect();
        let mut exponent = if suffix.binary {
            -denom_len
        } else {
            // `amount.SetScale(amount.Scale() + Scale(exponent).infScale())`, in int32.
            -i64::from((denom_len as i32).wrapping_add(suffix.exponent.wrapping_neg()))
        };
        if suffix.binary {
            digits = times_power_of_two(&digits, suffix.exponent);
        }
        strip_leading_zeros(&mut digits);
        if digits.is_empty() {
            return Some(Quantity::ZERO);
        }
        if exponent < -9 {
            round_up_to_nano(&mut digits, &mut exponent);
        }
        let mut q = Quantity {
            negative,
            digits,
            exponent,
        };
        q.normalize();
        if suffix.binary && q.magnitude_exceeds_max() {
            q.digits = MAX_ALLOWED.iter().map(|d| d - b'0').collect();
            q.exponent = 0;
        }
        Some(q)
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
/// when `s` parses there ([`Quantity::parse_in`] decides; this only names which of its checks
/// failed).
pub(crate) fn parse_error(s: &str, release: KubernetesVersion) -> Option<&'static str> {
    if Quantity::parse_in(s, release).is_some() {
        return None;
    }
    if Quantity::parse(s).is_some() {
        // Only 1.38's refusal of an exponent narrowing to math.MinInt32 (`ErrSuffix`).
        return Some(ERR_SUFFIX);
    }
    Some(match quantity_suffix(s) {
        None => ERR_FORMAT_WRONG,
        Some(suffix) if interpret(suffix).is_none() => ERR_SUFFIX,
        Some(_) => ERR_NUMERIC,
    })
}

/// The suffix `parseQuantityString` splits off `s`, or `None` where it returns
/// `ErrFormatWrong` (an empty string, or characters after the suffix's digits).
fn quantity_suffix(s: &str) -> Option<&str> {
    let b = s.as_bytes();
    if b.is_empty() {
        return None;
    }
    let mut pos = usize::from(matches!(b[0], b'-' | b'+'));
    while pos < b.len() && b[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos < b.len() && b[pos] == b'.' {
        pos += 1;
        while pos < b.len() && b[pos].is_ascii_digit() {
            pos += 1;
        }
    }
    let start = pos;
    while pos < b.len() && b"eEinumkKMGTP".contains(&b[pos]) {
        pos += 1;
    }
    if pos < b.len() && matches!(b[pos], b'-' | b'+') {
        pos += 1;
    }
    while pos < b.len() && b[pos].is_ascii_digit() {
        pos += 1;
    }
    (pos == b.len()).then(|| &s[start..])
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
                if let Some(q) = Quantity::parse(&s) {
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

    /// apimachinery v0.38.0-alpha.2 refuses, on the `inf.Dec` path, the one decimal exponent
    /// whose scale cannot be negated: `math.MinInt32`, however it was written (`e-2147483648`,
    /// or `e2147483648` and `e6442450944`, which narrow to it). 1.33-1.37 read it as 10^(2^31).
    /// The int64 fast path still takes `1.5e-2147483648` (its scale wraps), and every other
    /// exponent beyond int32 is still narrowed in 1.38: the range check kubernetes#141203
    /// proposes is not in the served code.
    #[test]
    fn kubernetes_141203_only_an_exponent_narrowing_to_min_int32_is_refused_from_1_38() {
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

    /// kubernetes#140459: 1.38 writes a `DecimalSI` value above 10^18 in exponent form (`1e21`);
    /// 1.33-1.37 dropped the exponent (`1000E` was written `1`). The comparison is by value, so
    /// every spelling of 10^21 is one quantity and a value that differs by that lost exponent is
    /// another.
    #[test]
    fn kubernetes_140459_decimal_si_above_1e18_compares_by_value_at_any_spelling() {
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

    /// 1.38's `Value()` saturates at the int64 bounds (the change the changelog gives as
    /// kubernetes#141305; apimachinery v0.38.0-alpha.2 `AsScaledInt64`, `scaledValue`). The
    /// comparison never goes through an int64: values past it stay distinct and exact.
    #[test]
    fn kubernetes_141305_values_beyond_int64_compare_exactly_not_saturated() {
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
