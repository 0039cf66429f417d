//! `jobgate check`'s output formats: one report, rendered as lines, JSON, YAML, GitHub Actions
//! workflow commands or SARIF 2.1.0.

use std::io::Write;

use serde_json::{Value, json};

use super::OutputFormat;
use super::report::{Location, Report};
use crate::job::PolicyName;
use crate::job::review::Severity;

/// Writes `report` in `format`: findings on `out`; in text, notes and the summary on `err`.
pub(crate) fn write(
    report: &Report,
    format: OutputFormat,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> std::io::Result<()> {
    match format {
        OutputFormat::Text => write_text(report, out, err),
        OutputFormat::Json => {
            serde_json::to_writer_pretty(&mut *out, report)?;
            writeln!(out)
        }
        OutputFormat::Yaml => {
            let yaml = serde_yaml_ng::to_string(report).map_err(std::io::Error::other)?;
            out.write_all(yaml.as_bytes())
        }
        OutputFormat::Github => write_github(report, out, err),
        OutputFormat::Sarif => {
            serde_json::to_writer_pretty(&mut *out, &sarif(report))?;
            writeln!(out)
        }
    }
}

/// `<file>:<line>:<column> <Kind>/<name>: <message>` per finding (warnings as kubectl prints them,
/// `Warning: ...`); then, on `err`, what the mutation changed, unreadable inputs and the summary
/// (skipped documents counted by kind). `out` is flushed first, so that a terminal showing both
/// shows the findings before the summary.
pub(crate) fn write_text(
    report: &Report,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> std::io::Result<()> {
    for o in &report.objects {
        o.write_lines(out, |f| format!("{} {}/{}", f.at, o.kind, o.name))?;
    }
    out.flush()?;
    for o in &report.objects {
        let on = match &o.built {
            Some(b) => format!(" on Job {}", b.job),
            None => String::new(),
        };
        for op in o.patch.0.iter().filter(|_| o.mutation_changes) {
            writeln!(
                err,
                "{}: note: jobgate's mutating webhook would {}{on}",
                o.who(),
                describe(op)
            )?;
        }
    }
    report.write_unreadable(err)?;
    writeln!(err, "jobgate check: {}", report.summary_line())
}

/// `add /spec/podReplacementPolicy "Failed"`.
fn describe(op: &json_patch::PatchOperation) -> String {
    match serde_json::to_value(op) {
        Ok(v) => {
            let verb = v["op"].as_str().unwrap_or("");
            let path = v["path"].as_str().unwrap_or("");
            match v.get("value") {
                Some(value) => format!("{verb} {path} {value}"),
                None => format!("{verb} {path}"),
            }
        }
        Err(_) => String::from("change the object"),
    }
}

/// GitHub Actions' escaping of a workflow command's message (`%`, CR, LF).
fn escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// ... and of a property value (also `:` and `,`).
fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// `::error file=...,line=...,col=...,title=...::message` per finding and unreadable input
/// (GitHub shows them on the pull request's diff), the summary on `err`.
fn write_github(report: &Report, out: &mut dyn Write, err: &mut dyn Write) -> std::io::Result<()> {
    for o in &report.objects {
        for f in &o.findings {
            let level = match f.finding.severity() {
                Severity::Error => "error",
                Severity::Warning => "warning",
            };
            let title = format!("jobgate ({}) {}/{}", f.finding.source, o.kind, o.name);
            writeln!(
                out,
                "::{level} {}title={}::{}",
                github_position(&f.at),
                escape_property(&title),
                escape_data(&f.finding.message())
            )?;
        }
    }
    for u in &report.unreadable {
        writeln!(
            out,
            "::error {}title=jobgate::{}",
            github_position(&u.location),
            escape_data(&u.reason)
        )?;
    }
    out.flush()?;
    writeln!(err, "jobgate check: {}", report.summary_line())
}

fn github_position(l: &Location) -> String {
    let file = format!("file={},", escape_property(&l.file));
    match l.at {
        Some(p) => format!("{file}line={},col={},", p.line, p.column),
        None => file,
    }
}

/// SARIF 2.1.0 (OASIS): one run of the `jobgate` driver, one rule per source (kube-apiserver,
/// each policy, the mutating webhook), one result per finding and unreadable input.
fn sarif(report: &Report) -> Value {
    let mut rules = vec![
        json!({"id": "kube-apiserver", "shortDescription": {"text": "kube-apiserver's decoding and validation of Jobs and CronJobs"}}),
        json!({"id": "jobgate-mutation", "shortDescription": {"text": "what jobgate's mutating webhook changes or leaves"}}),
        json!({"id": "jobgate-input", "shortDescription": {"text": "an input jobgate check cannot read"}}),
    ];
    rules.extend(
        PolicyName::ALL
            .iter()
            .map(|p| json!({"id": p.as_str(), "shortDescription": {"text": p.description()}})),
    );
    let mut results = Vec::new();
    for o in &report.objects {
        for f in &o.findings {
            let mut region = json!({});
            if let Some(p) = f.at.at {
                region = json!({"startLine": p.line, "startColumn": p.column});
            }
            results.push(json!({
                "ruleId": f.finding.source.as_str(),
                "level": match f.finding.severity() {
                    Severity::Error => "error",
                    Severity::Warning => "warning",
                },
                "message": {"text": format!("{}/{}: {}", o.kind, o.name, f.finding.message())},
                "locations": [{"physicalLocation": {
                    "artifactLocation": {"uri": f.at.file},
                    "region": region,
                }}],
            }));
        }
    }
    for u in &report.unreadable {
        let file = &u.location.file;
        results.push(json!({
            "ruleId": "jobgate-input",
            "level": "error",
            "message": {"text": u.reason},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": file}}}],
        }));
    }
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "jobgate",
                "version": env!("CARGO_PKG_VERSION"),
                "rules": rules,
            }},
            "results": results,
        }],
    })
}
