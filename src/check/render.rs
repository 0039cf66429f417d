//! `jobgate check`'s output formats: one report, rendered as lines, JSON, YAML, GitHub Actions
//! workflow commands or SARIF 2.1.0.

use std::io::Write;

use serde_json::{Value, json};

use super::report::{Location, Report};
use crate::job::finding::Severity;
use crate::job::levels::PolicyName;

/// How `jobgate check` writes what it found (`--output`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub(crate) enum OutputFormat {
    /// `file:line:column Kind/name: message` lines
    #[default]
    Text,
    /// one JSON document for tools
    Json,
    /// the same document as YAML
    Yaml,
    /// GitHub Actions workflow commands (`::error file=...,line=...::message`)
    Github,
    /// SARIF 2.1.0 (GitHub code scanning, GitLab, IDEs)
    Sarif,
}

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
                Severity::Note => "notice",
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

/// `file=...,line=...,col=...,` with the path relative to the repository (`repository_path`);
/// nothing for stdin without `--stdin-filename` (GitHub can attach it to no file).
fn github_position(l: &Location) -> String {
    let Some(path) = repository_path(&l.file) else {
        return String::new();
    };
    let file = format!("file={},", escape_property(&path));
    match l.at {
        Some(p) => format!("{file}line={},col={},", p.line, p.column),
        None => file,
    }
}

/// A path as GitHub (annotations, code scanning) and SARIF consumers want it: relative to the
/// repository's root, `/`-separated, without `./`. The root is `$GITHUB_WORKSPACE` when set
/// (a relative path is taken from the working directory, which may be a subdirectory of it),
/// else the working directory; a path outside it stays absolute. `None` for stdin (`-`).
pub(crate) fn repository_path(file: &str) -> Option<String> {
    use std::path::{Component, Path, PathBuf};
    if file == "-" {
        return None;
    }
    let cwd = std::env::current_dir().unwrap_or_default();
    let root = std::env::var_os("GITHUB_WORKSPACE")
        .map(PathBuf::from)
        .unwrap_or_else(|| cwd.clone());
    let path = Path::new(file);
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd.join(path)
    };
    // `.` and `..` resolved by their names, not by the filesystem.
    let mut clean = PathBuf::new();
    for c in absolute.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                clean.pop();
            }
            other => clean.push(other),
        }
    }
    let shown = match clean.strip_prefix(&root) {
        Ok(relative) => relative.to_path_buf(),
        Err(_) => clean,
    };
    let shown: Vec<String> = shown
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    Some(if shown.first().is_some_and(|c| c == "/") {
        format!("/{}", shown[1..].join("/"))
    } else {
        shown.join("/")
    })
}

/// The docs of this release, where SARIF rules link.
fn help_uri(page: &str) -> String {
    format!(
        "https://github.com/jobgate/jobgate/blob/v{}/docs/src/{page}",
        env!("CARGO_PKG_VERSION")
    )
}

/// A SARIF `reportingDescriptor`: id, short description, help (text and markdown) and link.
fn rule(id: &str, short: &str, help: &str, page: &str) -> Value {
    let uri = help_uri(page);
    json!({
        "id": id,
        "name": id,
        "shortDescription": {"text": short},
        "fullDescription": {"text": help},
        "help": {"text": format!("{help} See {uri}"), "markdown": format!("{help} See [the documentation]({uri}).")},
        "helpUri": uri,
    })
}

/// A SARIF `artifactLocation`: the path relative to the repository (`%SRCROOT%`), or stdin's
/// name as given.
fn artifact(file: &str) -> Value {
    match repository_path(file) {
        Some(path) if !path.starts_with('/') => json!({"uri": path, "uriBaseId": "%SRCROOT%"}),
        Some(path) => json!({"uri": format!("file://{path}")}),
        None => json!({"uri": file}),
    }
}

/// SARIF 2.1.0 (OASIS): one run of the `jobgate` driver, one rule per source (kube-apiserver,
/// each policy, the mutating webhook), one result per finding and unreadable input.
fn sarif(report: &Report) -> Value {
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "jobgate",
                "version": env!("CARGO_PKG_VERSION"),
                "rules": sarif_rules(),
            }},
            "results": sarif_results(report),
        }],
    })
}

/// One SARIF rule per source of findings: kube-apiserver, the mutating webhook, kubectl, an
/// unreadable input, each policy.
fn sarif_rules() -> Vec<Value> {
    [
        rule(
            "kube-apiserver",
            "kube-apiserver's decoding and validation of Jobs and CronJobs, and of the Jobs built from a JobSet's or Trainer runtime's templates",
            "kube-apiserver refuses this object (or the Job a controller builds from it) when it is applied: fix the field named in the message. The rules are upstream's for the --kubernetes-version checked.",
            "validation.md#kube-apiservers-rules",
        ),
        rule(
            "jobgate-mutation",
            "what jobgate's mutating webhook changes or leaves",
            "jobgate's mutating webhook changes the object (or leaves a value it would have set) as the message says; the object is admitted.",
            "mutation.md#warnings",
        ),
        rule(
            "kubectl",
            "how kubectl reads the manifest before anything reaches kube-apiserver",
            "kubectl reads a manifest into a map before it sends it: of a key written twice only the last value is sent, silently. Remove the other.",
            "check.md",
        ),
        rule(
            "jobgate-input",
            "an input jobgate check cannot read",
            "The file (or stdin) could not be read as YAML or JSON, holds no document, or holds an object that cannot be read as its kind: nothing in it was checked.",
            "check.md#exit-status",
        ),
    ]
    .into_iter()
    .chain(PolicyName::ALL.iter().map(|p| {
        rule(
            p.as_str(),
            p.description(),
            &format!(
                "jobgate policy {}: {}. Its level (off, warn, deny) is set with --policy {}=LEVEL or the configuration file.",
                p.as_str(),
                p.description(),
                p.as_str()
            ),
            "validation.md#jobgates-policies",
        )
    }))
    .collect()
}

/// One SARIF result per finding and unreadable input.
fn sarif_results(report: &Report) -> Vec<Value> {
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
                    Severity::Note => "note",
                },
                "message": {"text": format!("{}/{}: {}", o.kind, o.name, f.finding.message())},
                "locations": [{"physicalLocation": {
                    "artifactLocation": artifact(&f.at.file),
                    "region": region,
                }}],
            }));
        }
    }
    for u in &report.unreadable {
        let mut location = json!({"artifactLocation": artifact(&u.location.file)});
        if let Some(p) = u.location.at {
            location["region"] = json!({"startLine": p.line, "startColumn": p.column});
        }
        results.push(json!({
            "ruleId": "jobgate-input",
            "level": "error",
            "message": {"text": u.reason},
            "locations": [{"physicalLocation": location}],
        }));
    }
    results
}
