//! The objects as YAML a person can read: keys in the order Kubernetes documents them
//! (`apiVersion`, `kind`, `metadata`, `spec`; a policy's constraints before its expressions)
//! rather than alphabetically, and every CEL expression as a literal block (`|-`), as written,
//! instead of a quoted string with doubled quotes.

use serde_json::Value;

/// Keys in the order they are written; other keys follow, alphabetically.
const KEY_ORDER: [&str; 24] = [
    "apiVersion",
    "kind",
    "metadata",
    "name",
    "labels",
    "spec",
    "policyName",
    "validationActions",
    "failurePolicy",
    "reinvocationPolicy",
    "matchConstraints",
    "matchPolicy",
    "namespaceSelector",
    "resourceRules",
    "matchConditions",
    "variables",
    "mutations",
    "patchType",
    "jsonPatch",
    "validations",
    "expression",
    "messageExpression",
    "message",
    "reason",
];

/// `value` (an object) as one YAML document, without the `---`.
pub(crate) fn document(value: &Value) -> String {
    let mut out = String::new();
    match value {
        Value::Object(_) => write_map(value, 0, &mut out),
        other => {
            out.push_str(&scalar(other, 0));
            out.push('\n');
        }
    }
    out
}

fn sorted_keys(map: &serde_json::Map<String, Value>) -> Vec<&String> {
    let mut keys: Vec<&String> = map.keys().collect();
    let rank = |k: &str| {
        KEY_ORDER
            .iter()
            .position(|o| *o == k)
            .unwrap_or(KEY_ORDER.len())
    };
    keys.sort_by(|a, b| rank(a).cmp(&rank(b)).then_with(|| a.cmp(b)));
    keys
}

/// A map's entries at `indent`, the first one on the current line (after `- ` in a list).
fn write_map(value: &Value, indent: usize, out: &mut String) {
    let Value::Object(map) = value else { return };
    for (i, key) in sorted_keys(map).into_iter().enumerate() {
        if i > 0 {
            out.push_str(&" ".repeat(indent));
        }
        out.push_str(&plain_or_quoted(key));
        out.push(':');
        write_value(&map[key], indent, out);
    }
}

/// A value after `key:`.
fn write_value(value: &Value, indent: usize, out: &mut String) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            out.push('\n');
            out.push_str(&" ".repeat(indent + 2));
            write_map(value, indent + 2, out);
        }
        Value::Array(items) if !items.is_empty() => {
            out.push('\n');
            for item in items {
                out.push_str(&" ".repeat(indent));
                out.push_str("- ");
                match item {
                    Value::Object(map) if !map.is_empty() => write_map(item, indent + 2, out),
                    other => {
                        out.push_str(&scalar(other, indent + 2));
                        out.push('\n');
                    }
                }
            }
        }
        other => {
            out.push(' ');
            out.push_str(&scalar(other, indent + 2));
            out.push('\n');
        }
    }
}

/// A scalar (or an empty map or list) at `indent`.
fn scalar(value: &Value, indent: usize) -> String {
    match value {
        Value::Null => "null".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::Object(_) => "{}".to_string(),
        Value::Array(_) => "[]".to_string(),
        Value::String(s) if is_block(s) => {
            let pad = " ".repeat(indent);
            let mut out = String::from("|-");
            for line in s.lines() {
                out.push('\n');
                if !line.is_empty() {
                    out.push_str(&pad);
                    out.push_str(line);
                }
            }
            out
        }
        Value::String(s) => plain_or_quoted(s),
    }
}

/// A CEL expression: a literal block keeps it as written, when the block can (no leading or
/// trailing blank, no tab, no line ending in a space, no carriage return).
fn is_block(s: &str) -> bool {
    let cel_like = s.contains(['(', '?', '!', '=', '\'', '"', '\n', '+']);
    cel_like
        && !s.starts_with([' ', '\n'])
        && !s.ends_with([' ', '\n'])
        && !s.contains(['\t', '\r'])
        && s.lines().all(|l| !l.ends_with(' '))
}

/// A plain scalar where YAML reads it back as this string, else a JSON (double-quoted) string.
fn plain_or_quoted(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars().all(|c| {
            c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/' | ' ' | ':' | ',')
        })
        && s.starts_with(|c: char| c.is_ascii_alphabetic())
        && !s.ends_with([' ', ':'])
        && !s.contains(": ")
        && !s.contains(" #")
        && !matches!(
            s.to_ascii_lowercase().as_str(),
            "true" | "false" | "null" | "yes" | "no" | "on" | "off" | "y" | "n"
        );
    if plain {
        s.to_string()
    } else {
        Value::String(s.to_string()).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_back_as_the_same_object() {
        let object = json!({
            "spec": {"validations": [{"expression": "a == 'b' ||\n  c", "reason": "Invalid"}],
                     "empty": [], "none": {}, "yes": "no", "n": 3, "flag": true,
                     "colon": "a: b", "hash": "a #b", "quote": "say \"x\"", "trailing": "x == 'y' "},
            "apiVersion": "v1",
            "kind": "Thing",
            "metadata": {"name": "x", "labels": {"a.b/c": "on"}},
        });
        let text = document(&object);
        assert!(
            text.starts_with("apiVersion: v1\nkind: Thing\nmetadata:\n"),
            "{text}"
        );
        assert!(
            text.contains("expression: |-\n      a == 'b' ||\n        c\n"),
            "{text}"
        );
        let back: Value = serde_yaml_ng::from_str(&text).unwrap();
        assert_eq!(back, object, "{text}");
    }
}
