//! `jobgate check [FILE|DIR|-]...`: the `/validate` rules offline, for CI before `kubectl apply`.
//!
//! Every Job and CronJob found (also inside `List`s and AdmissionReviews) gets the apiserver's
//! defaulting (`job::defaults::apply_apiserver_defaults`), then kube-apiserver's validation and
//! jobgate's policies, exactly as `POST /validate` would. Other kinds are skipped with a note.
//!
//! Output is one kubectl-style line per finding, `file:doc Job/name: spec.x: Invalid value: ...`
//! (or `--output json`). Exit status: 0 when everything passes (warnings allowed), 1 when
//! anything is denied, 2 when some input could not be read (that wins over 1).

pub(crate) mod input;

use std::io::{Read, Write};
use std::path::PathBuf;

use serde::Serialize;
use serde_json::Value;

use crate::job::{self, Config, FieldError, JobObject, Kind, Operation, defaults};
use crate::rule_flags::RuleArgs;
use input::{Source, Unreadable};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub(crate) enum OutputFormat {
    /// kubectl-style lines
    #[default]
    Text,
    /// one JSON document for tools
    Json,
}

/// `jobgate check`.
#[derive(Debug, Clone, clap::Args)]
pub struct CheckArgs {
    /// Files, directories (their *.yaml, *.yml, *.json, recursively) or `-` for stdin.
    /// Without any, stdin is read.
    #[arg(value_name = "FILE|DIR|-")]
    pub(crate) paths: Vec<PathBuf>,

    /// Output format.
    #[arg(long, short = 'o', value_enum, default_value_t = OutputFormat::Text, env = "JOBGATE_OUTPUT")]
    pub(crate) output: OutputFormat,

    #[command(flatten)]
    pub(crate) rules: RuleArgs,
}

/// Exit status of `jobgate check`.
pub(crate) const EXIT_OK: i32 = 0;
pub(crate) const EXIT_DENIED: i32 = 1;
/// Exit status when an input, the rule settings or the output could not be read or written (wins
/// over `EXIT_DENIED`); `jobgate audit` uses it too, also for a cluster it cannot read.
pub const EXIT_UNREADABLE: i32 = 2;

/// Runs `jobgate check` on the process's stdin, stdout and stderr; returns the exit status.
pub fn run(args: &CheckArgs) -> i32 {
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    run_with(
        args,
        &mut stdin.lock(),
        &mut std::io::BufWriter::new(stdout.lock()),
        &mut stderr.lock(),
    )
}

/// `run` with the streams given (tests).
pub(crate) fn run_with(
    args: &CheckArgs,
    stdin: &mut dyn Read,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> i32 {
    let config = match args.rules.load() {
        Ok(c) => c,
        Err(e) => {
            let _ = writeln!(err, "jobgate check: {e}");
            return EXIT_UNREADABLE;
        }
    };
    let mut report = Report::default();
    let stdin_only = args.paths.is_empty();
    let mut read_stdin = stdin_only;
    let mut files = Vec::new();
    for path in &args.paths {
        if path.as_os_str() == "-" {
            read_stdin = true;
        } else {
            files.push(path.clone());
        }
    }
    if read_stdin {
        let mut text = String::new();
        match stdin.read_to_string(&mut text) {
            Ok(_) => check_source(
                &Source {
                    name: "-".into(),
                    text,
                },
                &config,
                &mut report,
            ),
            Err(e) => report.unreadable.push(Unreadable {
                location: "-".into(),
                reason: format!("cannot read stdin: {e}"),
            }),
        }
    }
    for file in input::expand(&files) {
        match file.and_then(|path| {
            std::fs::read_to_string(&path)
                .map(|text| Source {
                    name: path.display().to_string(),
                    text,
                })
                .map_err(|e| Unreadable {
                    location: path.display().to_string(),
                    reason: e.to_string(),
                })
        }) {
            Ok(source) => check_source(&source, &config, &mut report),
            Err(u) => report.unreadable.push(u),
        }
    }
    let written = match args.output {
        OutputFormat::Text => report.write_text(out, err),
        OutputFormat::Json => report.write_json(out),
    };
    if let Err(e) = written.and_then(|_| out.flush()) {
        let _ = writeln!(err, "jobgate check: cannot write output: {e}");
        return EXIT_UNREADABLE;
    }
    report.exit_code()
}

/// Everything `check` found, in input order.
#[derive(Debug, Default, Serialize)]
pub(crate) struct Report {
    pub(crate) objects: Vec<Checked>,
    pub(crate) ignored: Vec<Ignored>,
    pub(crate) unreadable: Vec<Unreadable>,
}

/// One Job or CronJob and its verdict.
#[derive(Debug, Serialize)]
pub(crate) struct Checked {
    pub(crate) location: String,
    pub(crate) kind: &'static str,
    pub(crate) name: String,
    pub(crate) operation: &'static str,
    pub(crate) allowed: bool,
    #[serde(serialize_with = "causes")]
    pub(crate) errors: Vec<FieldError>,
    pub(crate) warnings: Vec<String>,
}

/// A document skipped: not a batch/v1 Job or CronJob.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Ignored {
    pub(crate) location: String,
    pub(crate) api_version: String,
    pub(crate) kind: String,
    pub(crate) name: String,
}

/// Errors as kube-apiserver's `details.causes` (`reason`, `message`, `field`).
fn causes<S: serde::Serializer>(errors: &[FieldError], s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeSeq;
    let mut seq = s.serialize_seq(Some(errors.len()))?;
    for e in errors {
        seq.serialize_element(&serde_json::json!({
            "reason": e.kind.cause(),
            "message": e.body(),
            "field": e.path.as_str(),
        }))?;
    }
    seq.end()
}

impl serde::Serialize for Unreadable {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        serde_json::json!({"location": self.location, "reason": self.reason}).serialize(s)
    }
}

impl Report {
    pub(crate) fn exit_code(&self) -> i32 {
        if !self.unreadable.is_empty() {
            EXIT_UNREADABLE
        } else if self.objects.iter().any(|o| !o.allowed) {
            EXIT_DENIED
        } else {
            EXIT_OK
        }
    }

    /// Findings on `out`; notes, unreadable inputs and the summary on `err`.
    pub(crate) fn write_text(
        &self,
        out: &mut dyn Write,
        err: &mut dyn Write,
    ) -> std::io::Result<()> {
        for o in &self.objects {
            let who = format!("{} {}/{}", o.location, o.kind, o.name);
            for e in &o.errors {
                writeln!(out, "{who}: {e}")?;
            }
            for w in &o.warnings {
                writeln!(out, "{who}: Warning: {w}")?;
            }
        }
        for i in &self.ignored {
            let what = match (i.kind.as_str(), i.name.as_str()) {
                ("", _) => "a document without kind".to_string(),
                (k, "") => k.to_string(),
                (k, n) => format!("{k}/{n}"),
            };
            let api = if i.api_version.is_empty() {
                String::new()
            } else {
                format!(" ({})", i.api_version)
            };
            writeln!(
                err,
                "{}: note: skipped {what}{api}: jobgate checks batch/v1 Jobs and CronJobs",
                i.location
            )?;
        }
        self.write_unreadable(err)?;
        let (denied, warned) = self.denied_and_warned();
        writeln!(
            err,
            "jobgate check: {} checked, {denied} denied, {warned} with warnings, {} skipped, {} unreadable",
            self.objects.len(),
            self.ignored.len(),
            self.unreadable.len()
        )
    }

    /// One `<location>: error: <reason>` line per unreadable input.
    pub(crate) fn write_unreadable(&self, err: &mut dyn Write) -> std::io::Result<()> {
        for u in &self.unreadable {
            writeln!(err, "{}: error: {}", u.location, u.reason)?;
        }
        Ok(())
    }

    /// How many objects would be denied, and how many get warnings.
    pub(crate) fn denied_and_warned(&self) -> (usize, usize) {
        let denied = self.objects.iter().filter(|o| !o.allowed).count();
        let warned = self
            .objects
            .iter()
            .filter(|o| !o.warnings.is_empty())
            .count();
        (denied, warned)
    }

    pub(crate) fn write_json(&self, out: &mut dyn Write) -> std::io::Result<()> {
        serde_json::to_writer_pretty(&mut *out, self)?;
        writeln!(out)
    }
}

/// Checks every document of one source into `report`.
pub(crate) fn check_source(source: &Source, config: &Config, report: &mut Report) {
    let (docs, failure) = input::documents(source);
    for (n, doc) in docs {
        check_document(&format!("{}:{n}", source.name), doc, config, report);
    }
    report.unreadable.extend(failure);
}

fn str_at<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

pub(crate) fn check_document(location: &str, doc: Value, config: &Config, report: &mut Report) {
    if doc.is_null() {
        return; // an empty YAML document (`---` alone)
    }
    if let Value::Array(items) = doc {
        for (i, item) in items.into_iter().enumerate() {
            check_document(&format!("{location}[{i}]"), item, config, report);
        }
        return;
    }
    let api_version = str_at(&doc, "apiVersion");
    let kind = str_at(&doc, "kind");
    let batch_v1 = matches!(api_version, "" | "batch/v1");
    match (kind, Kind::from_kind(kind)) {
        (_, Some(k)) if batch_v1 => check_object(
            location,
            Operation::Create,
            k,
            doc,
            None,
            "",
            config,
            report,
        ),
        ("AdmissionReview", _) if api_version.starts_with("admission.k8s.io/") => {
            check_review(location, doc, config, report)
        }
        (k, _) if k.ends_with("List") && doc.get("items").is_some_and(Value::is_array) => {
            if let Some(Value::Array(items)) = doc.get("items").cloned() {
                for (i, item) in items.into_iter().enumerate() {
                    check_document(&format!("{location}/items[{i}]"), item, config, report);
                }
            }
        }
        _ => report.ignored.push(Ignored {
            location: location.to_string(),
            api_version: api_version.to_string(),
            kind: kind.to_string(),
            name: doc
                .get("metadata")
                .map(|m| str_at(m, "name").to_string())
                .unwrap_or_default(),
        }),
    }
}

fn check_review(location: &str, doc: Value, config: &Config, report: &mut Report) {
    // The envelope is read by the webhook's own reader, so `check` and `/validate` agree on
    // which reviews can be answered at all (a v1 AdmissionReview, a request object, a uid).
    let bytes = serde_json::to_vec(&doc).unwrap_or_default();
    let parsed = match crate::admission::parse(&bytes) {
        Ok(p) => p,
        Err(e) => {
            report.unreadable.push(Unreadable {
                location: location.to_string(),
                reason: e.to_string(),
            });
            return;
        }
    };
    let request = &doc["request"];
    let gvk = request.get("kind").cloned().unwrap_or(Value::Null);
    let kind = str_at(&gvk, "kind");
    let name = parsed.name.clone().unwrap_or_default();
    let (Some(k), Some(op @ (Operation::Create | Operation::Update))) =
        (parsed.job_kind, parsed.operation)
    else {
        report.ignored.push(Ignored {
            location: location.to_string(),
            api_version: str_at(&doc, "apiVersion").to_string(),
            kind: format!(
                "AdmissionReview ({} {}/{} {kind})",
                str_at(request, "operation"),
                str_at(&gvk, "group"),
                str_at(&gvk, "version")
            ),
            name,
        });
        return;
    };
    let object = request.get("object").cloned().unwrap_or(Value::Null);
    let old = request.get("oldObject").cloned().filter(|v| !v.is_null());
    if op == Operation::Update && old.is_none() {
        report.unreadable.push(Unreadable {
            location: location.to_string(),
            reason: "request.oldObject is required for UPDATE".into(),
        });
        return;
    }
    check_object(location, op, k, object, old, &name, config, report);
}

#[allow(clippy::too_many_arguments)]
fn check_object(
    location: &str,
    operation: Operation,
    kind: Kind,
    doc: Value,
    old_doc: Option<Value>,
    fallback_name: &str,
    config: &Config,
    report: &mut Report,
) {
    let read = |doc: Value, at: &str| -> Result<JobObject, Unreadable> {
        let keep = (operation == Operation::Update && kind == Kind::Job).then(|| doc.clone());
        let mut object = JobObject::from_value(kind, doc).map_err(|e| Unreadable {
            location: location.to_string(),
            reason: format!("{at}not a valid {}: {e}", kind.as_str()),
        })?;
        if let Some(whole) = keep {
            object.keep_whole_template(&whole);
            // The immutability rule must not pass silently on a template it cannot read.
            if let Some(job::template::WholeTemplate::Unreadable(e)) = &object.spec.template.whole {
                return Err(Unreadable {
                    location: location.to_string(),
                    reason: format!("{at}spec.template cannot be read: {e}"),
                });
            }
        }
        defaults::apply_apiserver_defaults(&mut object, &config.cluster);
        Ok(object)
    };
    let object = match read(doc, "") {
        Ok(o) => o,
        Err(u) => return report.unreadable.push(u),
    };
    let old = match old_doc.map(|d| read(d, "oldObject: ")).transpose() {
        Ok(o) => o,
        Err(u) => return report.unreadable.push(u),
    };
    let review = job::Review {
        operation,
        object: &object,
        old_object: old.as_ref(),
    };
    let verdict = job::validate(&review, config);
    let name = match object.display_name() {
        "" => fallback_name,
        n => n,
    };
    report.objects.push(Checked {
        location: location.to_string(),
        kind: kind.as_str(),
        name: if name.is_empty() {
            "<unnamed>".into()
        } else {
            name.to_string()
        },
        operation: operation.as_str(),
        allowed: verdict.allowed(),
        errors: verdict.errors,
        warnings: verdict.warnings,
    });
}

#[cfg(test)]
mod tests;
