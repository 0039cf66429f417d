//! Prometheus's text exposition format, read as far as the tests and the cluster bench need: the
//! samples of one metric and the labels of a sample. Label values holding `,` or `\"` are not
//! read (none of the labels read here has them).

/// Each sample of `metric` in `text`, as `(labels, value)`: `labels` is what stands between the
/// braces (`endpoint="validate",operation="CREATE"`), `value` the sample's value.
pub fn samples<'a>(text: &'a str, metric: &str) -> Vec<(&'a str, f64)> {
    let prefix = format!("{metric}{{");
    text.lines()
        .filter_map(|line| line.strip_prefix(prefix.as_str()))
        .map(|rest| {
            let (labels, value) = rest
                .rsplit_once("} ")
                .unwrap_or_else(|| panic!("a sample of {metric}: {rest}"));
            let value = value
                .trim()
                .parse()
                .unwrap_or_else(|e| panic!("a number in {metric}{{{rest}: {e}"));
            (labels, value)
        })
        .collect()
}

/// The value of label `name` in a sample's `labels`, `""` when the sample has none.
pub fn label(labels: &str, name: &str) -> String {
    labels
        .split(',')
        .find_map(|l| l.strip_prefix(&format!("{name}=\"")))
        .map(|v| v.trim_end_matches('"').to_string())
        .unwrap_or_default()
}
