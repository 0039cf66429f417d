//! Field errors shaped like k8s.io/apimachinery/pkg/util/validation/field: the same paths, type
//! strings, cause reasons and message bodies, so a jobgate denial reads like kube-apiserver's own.

use std::fmt;

/// `field.Error.ErrorBody()`'s rendering of composite values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ValueStyle {
    /// 1.33 and before: pointers dereferenced (nil is the string `"null"`), named strings,
    /// slices and structs printed with `%#v`.
    GoSyntax,
    /// 1.34 and later (kubernetes#132314): `json.Marshal`.
    Json,
}

/// `field.Path`: where in an object an error is, built the way upstream passes `fldPath` down
/// (`NewPath("spec").Child("podFailurePolicy").Child("rules").Index(0)`) and printed as
/// `Path.String()` does: children joined with `.`, indexes and keys in brackets
/// (`spec.podFailurePolicy.rules[0]`, `metadata.annotations[example.com/key]`).
///
/// Like upstream's linked `*Path`, a path only points at its parent: building one allocates
/// nothing. Every rule builds its paths whether or not it finds an error (a dozen or more per
/// allowed review), and printing them eagerly, one allocation each, was ~3 % of a review's CPU
/// under load; a path is printed, into its [`FieldError`], only when there is an error.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FieldPath<'a> {
    parent: Option<&'a FieldPath<'a>>,
    element: Element<'a>,
}

#[derive(Debug, Clone, Copy)]
enum Element<'a> {
    Root(&'a str),
    Child(&'a str),
    Index(usize),
    Key(&'a str),
}

impl<'a> FieldPath<'a> {
    /// `field.NewPath(name)`; `name` may hold dots (`spec.jobTemplate.spec`), as
    /// `NewPath("spec", "jobTemplate", "spec")` prints.
    pub(crate) const fn new(name: &'a str) -> FieldPath<'a> {
        FieldPath {
            parent: None,
            element: Element::Root(name),
        }
    }

    /// `Path.Child(name)`.
    pub(crate) fn child<'b>(&'b self, name: &'b str) -> FieldPath<'b> {
        self.then(Element::Child(name))
    }

    /// `Path.Index(i)`.
    pub(crate) fn index(&self, i: usize) -> FieldPath<'_> {
        self.then(Element::Index(i))
    }

    /// `Path.Key(key)`.
    pub(crate) fn key<'b>(&'b self, key: &'b str) -> FieldPath<'b> {
        self.then(Element::Key(key))
    }

    fn then<'b>(&'b self, element: Element<'b>) -> FieldPath<'b> {
        FieldPath {
            parent: Some(self),
            element,
        }
    }
}

impl fmt::Display for FieldPath<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(parent) = self.parent {
            parent.fmt(f)?;
        }
        match self.element {
            Element::Root(name) => f.write_str(name),
            Element::Child(name) => {
                f.write_str(".")?;
                f.write_str(name)
            }
            Element::Index(i) => write!(f, "[{i}]"),
            Element::Key(key) => write!(f, "[{key}]"),
        }
    }
}

/// `field.ErrorType`: the printed type and the `StatusCause.reason` kube-apiserver sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ErrorType {
    Required,
    Invalid,
    NotSupported,
    Duplicate,
    TooMany,
    TooLong,
}

impl ErrorType {
    /// `ErrorType.String()`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ErrorType::Required => "Required value",
            ErrorType::Invalid => "Invalid value",
            ErrorType::NotSupported => "Unsupported value",
            ErrorType::Duplicate => "Duplicate value",
            ErrorType::TooMany => "Too many",
            ErrorType::TooLong => "Too long",
        }
    }

    /// The `metav1.CauseType` (`details.causes[].reason`).
    pub(crate) fn cause(self) -> &'static str {
        match self {
            ErrorType::Required => "FieldValueRequired",
            ErrorType::Invalid => "FieldValueInvalid",
            ErrorType::NotSupported => "FieldValueNotSupported",
            ErrorType::Duplicate => "FieldValueDuplicate",
            ErrorType::TooMany => "FieldValueTooMany",
            ErrorType::TooLong => "FieldValueTooLong",
        }
    }
}

/// `field.Error.BadValue`, in the form `ErrorBody()` prints it.
///
/// Kubernetes 1.34 (apimachinery kubernetes#132314) prints int32/int64/bool bare, strings with
/// `%q`, and everything else (slices, structs, pointers, named string types) as `json.Marshal`
/// output: nil is `null`, `[]int32{3, 1}` is `[3,1]`, internal structs (no json tags) use Go
/// field names (`{"Rules":[...]}`). 1.33 dereferences pointers (nil is the string `"null"`) and
/// prints the rest with `%#v` (`[]int32{3, 1}`). Values whose rendering differs keep both forms
/// until `in_style` picks one; `body()` prints the 1.34+ form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BadValue {
    /// Not printed (`Required`, `Forbidden`, or `omitValue`).
    Omit,
    /// A string, printed quoted (`%q`).
    Str(String),
    /// A number or bool, printed bare (`%v`).
    Plain(String),
    /// Printed as given.
    Raw(String),
    /// A value of a named string type (`PodFailurePolicyAction`, `RestartPolicy`, ...): 1.34's
    /// type switch prints only the exact type `string` with `%q`, so named types go through
    /// `json.Marshal` (`"\u003c"` for `<`); 1.33's `%#v` quotes them as Go does (`"<"`).
    Named(String),
    /// A nil pointer: `null` (1.34+), the string `"null"` (1.33).
    NilPointer,
    /// A slice or a dereferenced struct: its `json.Marshal` and its `%#v` renderings.
    Composite { json: String, go: String },
}

impl BadValue {
    pub(crate) fn str(s: impl Into<String>) -> BadValue {
        BadValue::Str(s.into())
    }

    pub(crate) fn int(n: impl Into<i64>) -> BadValue {
        BadValue::Plain(n.into().to_string())
    }

    /// A nil pointer.
    pub(crate) fn null() -> BadValue {
        BadValue::NilPointer
    }

    /// A value of a named string type.
    pub(crate) fn named_str(s: &str) -> BadValue {
        BadValue::Named(s.to_string())
    }

    /// The printed value as a release with `style` prints it; `None` when omitted.
    pub(crate) fn render(&self, style: ValueStyle) -> Option<String> {
        let by_style = |json: &str, go: &str| match style {
            ValueStyle::Json => json.to_string(),
            ValueStyle::GoSyntax => go.to_string(),
        };
        match self {
            BadValue::Omit => None,
            BadValue::Str(s) => Some(go_quote(s)),
            BadValue::Plain(v) | BadValue::Raw(v) => Some(v.clone()),
            BadValue::Named(s) => Some(by_style(&go_json_string(s), &go_quote(s))),
            BadValue::NilPointer => Some(by_style("null", "\"null\"")),
            BadValue::Composite { json, go } => Some(by_style(json, go)),
        }
    }

    /// Resolves the renderings that differ by release to the one `style` prints.
    pub(crate) fn in_style(self, style: ValueStyle) -> BadValue {
        match self {
            BadValue::Named(_) | BadValue::NilPointer | BadValue::Composite { .. } => {
                self.render(style).map_or(BadValue::Omit, BadValue::Raw)
            }
            other => other,
        }
    }
}

/// Validation stops looking at the items of a list once this many errors were found, so that the
/// work and the answer of one review are bounded (a 3 MB review listing 1.5 million duplicate
/// exit codes would otherwise produce 3 million errors). kube-apiserver has no such cap (its
/// `field.ErrorList` grows with the input), but its 3 MiB request limit bounds the input and
/// jobgate answers reviews of objects up to that size twice over.
pub(crate) const MAX_ERRORS: usize = 1000;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FieldError {
    /// The [`FieldPath`], printed.
    pub(crate) path: String,
    pub(crate) kind: ErrorType,
    pub(crate) value: BadValue,
    pub(crate) detail: String,
}

impl FieldError {
    pub(crate) fn required(path: FieldPath<'_>, detail: impl Into<String>) -> FieldError {
        FieldError {
            path: path.to_string(),
            kind: ErrorType::Required,
            value: BadValue::Omit,
            detail: detail.into(),
        }
    }

    pub(crate) fn invalid(
        path: FieldPath<'_>,
        value: BadValue,
        detail: impl Into<String>,
    ) -> FieldError {
        FieldError {
            path: path.to_string(),
            kind: ErrorType::Invalid,
            value,
            detail: detail.into(),
        }
    }

    pub(crate) fn duplicate(path: FieldPath<'_>, value: BadValue) -> FieldError {
        FieldError {
            path: path.to_string(),
            kind: ErrorType::Duplicate,
            value,
            detail: String::new(),
        }
    }

    /// `field.NotSupported(path, value, supported)`.
    pub(crate) fn not_supported(
        path: FieldPath<'_>,
        value: BadValue,
        supported: &[&str],
    ) -> FieldError {
        let quoted: Vec<String> = supported.iter().map(|s| go_quote(s)).collect();
        FieldError {
            path: path.to_string(),
            kind: ErrorType::NotSupported,
            value,
            detail: format!("supported values: {}", quoted.join(", ")),
        }
    }

    /// `field.TooMany(path, actual, max)`.
    pub(crate) fn too_many(path: FieldPath<'_>, actual: usize, max: usize) -> FieldError {
        FieldError {
            path: path.to_string(),
            kind: ErrorType::TooMany,
            value: BadValue::Plain(actual.to_string()),
            detail: format!("must have at most {max} items"),
        }
    }

    /// `field.TooLong(path, _, max)` (1.32+ wording; the value is never printed).
    pub(crate) fn too_long(path: FieldPath<'_>, max: usize) -> FieldError {
        FieldError {
            path: path.to_string(),
            kind: ErrorType::TooLong,
            value: BadValue::Omit,
            detail: format!("may not be more than {max} bytes"),
        }
    }

    /// `field.Error.ErrorBody()`: the message without the path (what a `StatusCause` carries).
    pub(crate) fn body(&self) -> String {
        let mut s = String::from(self.kind.as_str());
        let shown = !matches!(self.kind, ErrorType::Required | ErrorType::TooLong);
        if let Some(value) = self.value.render(ValueStyle::Json).filter(|_| shown) {
            s.push_str(": ");
            s.push_str(&value);
        }
        if !self.detail.is_empty() {
            s.push_str(": ");
            s.push_str(&self.detail);
        }
        s
    }
}

impl fmt::Display for FieldError {
    /// `field.Error.Error()`: `<path>: <body>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.body())
    }
}

/// Go's `%q` for a string: double quotes with Go escapes (`strconv.Quote`).
pub(crate) fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c if !go_is_print(c) => {
                if (c as u32) < 0x10000 {
                    out.push_str(&format!("\\u{:04x}", c as u32))
                } else {
                    out.push_str(&format!("\\U{:08x}", c as u32))
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Go's `json.Marshal` of a string (encoding/json, Go >= 1.22): `\b \f \n \r \t` and other
/// control bytes as `\u00XX`, HTML-escaped `<`, `>`, `&`, and U+2028/U+2029; everything else,
/// DEL and invisible characters included, as is.
pub(crate) fn go_json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || matches!(c, '<' | '>' | '&' | '\u{2028}' | '\u{2029}') => {
                out.push_str(&format!("\\u{:04x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Go's `strconv.IsPrint`, approximately: ASCII space is printable, other spaces, controls,
/// format characters (zero-width, bidi controls, BOM), separators and private use are not.
/// (Unassigned code points, which Go also escapes, are printed as is.)
fn go_is_print(c: char) -> bool {
    let u = c as u32;
    if c == ' ' {
        return true;
    }
    !(c.is_control()
        || c.is_whitespace()
        || matches!(u, 0xAD | 0x600..=0x605 | 0x61C | 0x6DD | 0x70F | 0x180E)
        || matches!(u, 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x2064 | 0x2066..=0x206F)
        || matches!(u, 0xFEFF | 0xFFF9..=0xFFFB | 0xE000..=0xF8FF | 0xD800..=0xDFFF)
        || u >= 0xF0000)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A path as it prints (a root may hold dots, as `NewPath("spec", "template")` prints).
    fn p(printed: &str) -> FieldPath<'_> {
        FieldPath::new(printed)
    }

    #[test]
    fn paths_print_like_field_path_string() {
        let spec = FieldPath::new("spec");
        let policy = spec.child("podFailurePolicy");
        let rules = policy.child("rules");
        assert_eq!(
            rules
                .index(0)
                .child("onExitCodes")
                .child("values")
                .index(1)
                .to_string(),
            "spec.podFailurePolicy.rules[0].onExitCodes.values[1]"
        );
        assert_eq!(
            FieldPath::new("metadata")
                .child("annotations")
                .key("example.com/k")
                .to_string(),
            "metadata.annotations[example.com/k]"
        );
    }

    #[test]
    fn required_prints_type_and_detail_only() {
        let e = FieldError::required(
            p("spec.template.spec.restartPolicy"),
            r#"valid values: "OnFailure", "Never""#,
        );
        assert_eq!(
            e.to_string(),
            r#"spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never""#
        );
    }

    #[test]
    fn not_supported_quotes_value_and_choices() {
        let e = FieldError::not_supported(
            p("spec.podReplacementPolicy"),
            BadValue::str(""),
            &["Failed"],
        );
        assert_eq!(
            e.body(),
            r#"Unsupported value: "": supported values: "Failed""#
        );
        assert_eq!(e.kind.cause(), "FieldValueNotSupported");
    }

    #[test]
    fn too_many_prints_count_and_max() {
        let e = FieldError::too_many(p("spec.podFailurePolicy.rules"), 21, 20);
        assert_eq!(e.body(), "Too many: 21: must have at most 20 items");
    }

    #[test]
    fn bad_values_print_like_kubernetes_1_34_error_body() {
        let ordered = FieldError::invalid(
            p("spec.podFailurePolicy.rules[0].onExitCodes.values"),
            BadValue::Composite {
                json: "[3,1]".into(),
                go: "[]int32{3, 1}".into(),
            },
            "must be ordered",
        );
        assert_eq!(ordered.body(), "Invalid value: [3,1]: must be ordered");
        let nil = FieldError::invalid(
            p("spec.backoffLimitPerIndex"),
            BadValue::null(),
            "field is immutable",
        );
        assert_eq!(nil.body(), "Invalid value: null: field is immutable");
        let int = FieldError::invalid(
            p("spec.completions"),
            BadValue::int(-1),
            "must be greater than or equal to 0",
        );
        assert_eq!(
            int.body(),
            "Invalid value: -1: must be greater than or equal to 0"
        );
        let rule = FieldError::invalid(
            p("spec.podFailurePolicy.rules[0]"),
            BadValue::Omit,
            "specifying one of OnExitCodes and OnPodConditions is required",
        );
        assert_eq!(
            rule.body(),
            "Invalid value: specifying one of OnExitCodes and OnPodConditions is required"
        );
        let long = FieldError::too_long(p("spec.successPolicy.rules[0].succeededIndexes"), 65536);
        assert_eq!(long.body(), "Too long: may not be more than 65536 bytes");
        assert_eq!(long.kind.cause(), "FieldValueTooLong");
    }

    #[test]
    fn go_json_string_escapes_like_encoding_json_marshal() {
        assert_eq!(
            go_json_string("Fail<Job>&"),
            r#""Fail\u003cJob\u003e\u0026""#
        );
        assert_eq!(
            go_json_string("a\"b\\c\u{8}\u{c}\n\r\t\u{1}\u{1f}"),
            r#""a\"b\\c\b\f\n\r\t\u0001\u001f""#
        );
        // DEL, zero-width space and non-ASCII stay raw; the line separators do not.
        assert_eq!(
            go_json_string("\u{7f}\u{200b}é\u{2028}\u{2029}"),
            "\"\u{7f}\u{200b}é\\u2028\\u2029\""
        );
    }

    #[test]
    fn named_string_values_print_as_json_not_go_quoted() {
        let e = FieldError::not_supported(
            p("spec.podFailurePolicy.rules[0].action"),
            BadValue::named_str("<\u{1}\u{200b}"),
            &["Count"],
        );
        assert_eq!(
            e.body(),
            "Unsupported value: \"\\u003c\\u0001\u{200b}\": supported values: \"Count\""
        );
        let plain = FieldError::not_supported(p("x"), BadValue::str("<\u{1}\u{200b}"), &["Count"]);
        assert_eq!(
            plain.body(),
            r#"Unsupported value: "<\x01\u200b": supported values: "Count""#
        );
    }

    #[test]
    fn go_quote_escapes_like_strconv_quote() {
        assert_eq!(go_quote("a\"b\\c\n"), r#""a\"b\\c\n""#);
        assert_eq!(
            go_quote("zero\u{200b}width\u{a0}nbsp é"),
            r#""zero\u200bwidth\u00a0nbsp é""#
        );
    }
}
