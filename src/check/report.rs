//! What `jobgate check` (and `jobgate audit`) found: each object with its located findings and
//! the mutation's patch, the documents skipped and the inputs that could not be read.

use serde::Serialize;
use serde::ser::SerializeStruct;

use super::yaml::Position;
use crate::job::finding::Finding;
use crate::job::finding::Said;
use crate::job::finding::Severity;

/// The version of the `-o json` / `-o yaml` document's shape: a field removed, renamed or
/// changed in meaning raises it; a field added does not.
pub(crate) const SCHEMA_VERSION: u32 = 1;

/// Everything `check` found, in input order.
#[derive(Debug, Default)]
pub(crate) struct Report {
    pub(crate) objects: Vec<Checked>,
    pub(crate) ignored: Vec<IgnoredDocument>,
    pub(crate) unreadable: Vec<Unreadable>,
}

/// Where something is: the file (or, for `audit`, the namespace) and, when known, the line and
/// column.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Location {
    pub(crate) file: String,
    pub(crate) at: Option<Position>,
    /// A field still to be looked for in the file's text (`input::Reader::locate`, once the
    /// source's documents are checked); `at` is where its document starts meanwhile.
    pub(crate) field: Option<Field>,
}

/// A field of a document, by the document's number in its source and the path's segments.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Field {
    pub(crate) doc: usize,
    pub(crate) path: Vec<String>,
}

impl Location {
    /// A whole file (or namespace).
    pub(crate) fn file(file: &str) -> Location {
        Location {
            file: file.to_string(),
            at: None,
            field: None,
        }
    }

    /// `path` of document `doc` of `file`, to be located.
    pub(crate) fn field(file: &str, doc: usize, path: Vec<String>) -> Location {
        Location {
            file: file.to_string(),
            at: None,
            field: Some(Field { doc, path }),
        }
    }
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.at {
            Some(p) => write!(f, "{}:{}:{}", self.file, p.line, p.column),
            None => f.write_str(&self.file),
        }
    }
}

/// Why an input could not be read.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Unreadable {
    pub(crate) location: Location,
    pub(crate) reason: String,
}

impl Unreadable {
    /// `reason` about the whole of `name` (a file, a directory, stdin).
    pub(crate) fn input(name: &str, reason: impl Into<String>) -> Unreadable {
        Unreadable {
            location: Location::file(name),
            reason: reason.into(),
        }
    }
}

/// A finding and where its field is written.
#[derive(Debug, Clone)]
pub(crate) struct Located {
    pub(crate) finding: Finding,
    pub(crate) at: Location,
}

/// One Job or CronJob and what the chain said about it.
#[derive(Debug)]
pub(crate) struct Checked {
    pub(crate) location: Location,
    pub(crate) namespace: String,
    pub(crate) kind: &'static str,
    pub(crate) name: String,
    pub(crate) operation: &'static str,
    pub(crate) findings: Vec<Located>,
    /// The mutating webhook's patch (RFC 6902), empty when none.
    pub(crate) patch: json_patch::Patch,
    /// Whether the patch changes the object as stored (not only writing the apiserver's
    /// defaults).
    pub(crate) mutation_changes: bool,
    /// For a Job a controller builds from a template in this object: which.
    pub(crate) built: Option<Built>,
}

/// The Job template of an object (a JobSet, a Trainer runtime) a Job was built from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Built {
    /// Where the template is (`spec.replicatedJobs[0].template`).
    pub(crate) template: String,
    /// The name of the (first) Job built from it.
    pub(crate) job: String,
    /// How many Jobs are built from it.
    pub(crate) replicas: u32,
}

impl Checked {
    /// Every location in this object's report (to locate them).
    pub(crate) fn locations_mut(&mut self) -> impl Iterator<Item = &mut Location> {
        std::iter::once(&mut self.location).chain(self.findings.iter_mut().map(|f| &mut f.at))
    }

    pub(crate) fn allowed(&self) -> bool {
        self.findings
            .iter()
            .all(|f| f.finding.severity() < Severity::Error)
    }

    pub(crate) fn has_warnings(&self) -> bool {
        self.findings
            .iter()
            .any(|f| f.finding.severity() == Severity::Warning)
    }

    /// The findings of `severity`, in order.
    pub(crate) fn with_severity(&self, severity: Severity) -> impl Iterator<Item = &Located> {
        self.findings
            .iter()
            .filter(move |f| f.finding.severity() == severity)
    }

    /// `<location> <Kind>/<name>`: what every line about this object starts with.
    pub(crate) fn who(&self) -> String {
        format!("{} {}/{}", self.location, self.kind, self.name)
    }

    /// One line per finding, as kubectl prints errors and warnings: `<who>: <message>`,
    /// `<who>: Warning: <message>`; `who` says where each finding is.
    pub(crate) fn write_lines(
        &self,
        out: &mut dyn std::io::Write,
        who: impl Fn(&Located) -> String,
    ) -> std::io::Result<()> {
        for f in &self.findings {
            let warning = match f.finding.severity() {
                Severity::Error => "",
                Severity::Warning => "Warning: ",
                Severity::Note => "Note: ",
            };
            writeln!(out, "{}: {warning}{}", who(f), f.finding.message())?;
        }
        Ok(())
    }
}

/// A document skipped: not a batch/v1 Job or CronJob.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct IgnoredDocument {
    #[serde(serialize_with = "location_string")]
    pub(crate) location: Location,
    pub(crate) api_version: String,
    pub(crate) kind: String,
    pub(crate) name: String,
}

/// The counts every output format ends with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct Summary {
    pub(crate) checked: usize,
    pub(crate) denied: usize,
    pub(crate) warned: usize,
    pub(crate) errors: usize,
    pub(crate) warnings: usize,
    /// What jobgate's mutation changed: never a reason to fail.
    pub(crate) notes: usize,
    pub(crate) skipped: usize,
    pub(crate) unreadable: usize,
}

impl IgnoredDocument {
    /// `apiVersion/kind`, what skipped documents are counted by (`<no kind>` without one).
    pub(crate) fn what(&self) -> String {
        match (self.api_version.as_str(), self.kind.as_str()) {
            (_, "") => "<no kind>".to_string(),
            ("", kind) => kind.to_string(),
            (api, kind) => format!("{api}/{kind}"),
        }
    }
}

impl Report {
    /// How many documents of each `apiVersion/kind` were skipped.
    pub(crate) fn skipped_kinds(&self) -> std::collections::BTreeMap<String, usize> {
        let mut counts = std::collections::BTreeMap::new();
        for i in &self.ignored {
            *counts.entry(i.what()).or_insert(0) += 1;
        }
        counts
    }

    /// The summary line: `3 checked, 1 denied, 1 with warnings, 2 skipped (v1/ConfigMap: 2),
    /// 0 unreadable`.
    pub(crate) fn summary_line(&self) -> String {
        let s = self.summary();
        let kinds = self
            .skipped_kinds()
            .into_iter()
            .map(|(k, n)| format!("{k}: {n}"))
            .collect::<Vec<_>>();
        let skipped = if kinds.is_empty() {
            String::new()
        } else {
            format!(" ({})", kinds.join(", "))
        };
        format!(
            "{} checked, {} denied, {} with warnings, {} skipped{skipped}, {} unreadable",
            s.checked, s.denied, s.warned, s.skipped, s.unreadable
        )
    }

    pub(crate) fn summary(&self) -> Summary {
        let count = |s: Severity| {
            self.objects
                .iter()
                .map(|o| o.with_severity(s).count())
                .sum()
        };
        Summary {
            checked: self.objects.len(),
            denied: self.objects.iter().filter(|o| !o.allowed()).count(),
            warned: self.objects.iter().filter(|o| o.has_warnings()).count(),
            errors: count(Severity::Error),
            warnings: count(Severity::Warning),
            notes: count(Severity::Note),
            skipped: self.ignored.len(),
            unreadable: self.unreadable.len(),
        }
    }

    /// One `<location>: error: <reason>` line per unreadable input.
    pub(crate) fn write_unreadable(&self, err: &mut dyn std::io::Write) -> std::io::Result<()> {
        for u in &self.unreadable {
            writeln!(err, "{}: error: {}", u.location, u.reason)?;
        }
        Ok(())
    }
}

impl Serialize for Located {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let f = &self.finding;
        let mut st = s.serialize_struct("Finding", 8)?;
        st.serialize_field("source", f.source.as_str())?;
        st.serialize_field("severity", &f.severity())?;
        st.serialize_field("field", &f.field())?;
        if let Said::Error(e) = &f.said {
            st.serialize_field("reason", e.kind.cause())?;
        }
        st.serialize_field("message", &f.message())?;
        st.serialize_field("file", &self.at.file)?;
        st.serialize_field("line", &self.at.at.map(|p| p.line))?;
        st.serialize_field("column", &self.at.at.map(|p| p.column))?;
        st.end()
    }
}

impl Serialize for Checked {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Checked", 15)?;
        st.serialize_field("location", &self.location.to_string())?;
        st.serialize_field("file", &self.location.file)?;
        st.serialize_field("line", &self.location.at.map(|p| p.line))?;
        st.serialize_field("column", &self.location.at.map(|p| p.column))?;
        st.serialize_field("namespace", &self.namespace)?;
        st.serialize_field("kind", self.kind)?;
        st.serialize_field("name", &self.name)?;
        st.serialize_field("operation", self.operation)?;
        st.serialize_field("allowed", &self.allowed())?;
        st.serialize_field("findings", &self.findings)?;
        st.serialize_field("patch", &self.patch)?;
        st.serialize_field("mutated", &self.mutation_changes)?;
        if let Some(b) = &self.built {
            st.serialize_field("template", &b.template)?;
            st.serialize_field("job", &b.job)?;
            st.serialize_field("replicas", &b.replicas)?;
        }
        st.end()
    }
}

fn location_string<S: serde::Serializer>(l: &Location, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&l.to_string())
}

impl Serialize for Unreadable {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        serde_json::json!({"location": self.location.to_string(), "reason": self.reason})
            .serialize(s)
    }
}

impl Serialize for Report {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Report", 5)?;
        st.serialize_field("schemaVersion", &SCHEMA_VERSION)?;
        st.serialize_field("objects", &self.objects)?;
        st.serialize_field("ignored", &self.ignored)?;
        st.serialize_field("unreadable", &self.unreadable)?;
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct SummaryOut {
            #[serde(flatten)]
            counts: Summary,
            skipped_kinds: std::collections::BTreeMap<String, usize>,
        }
        st.serialize_field(
            "summary",
            &SummaryOut {
                counts: self.summary(),
                skipped_kinds: self.skipped_kinds(),
            },
        )?;
        st.end()
    }
}
