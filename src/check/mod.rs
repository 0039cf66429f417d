//! `jobgate check [FILE|DIR|-]...`: the cluster's verdict offline, for CI before `kubectl apply`.
//!
//! Documents are read as kubectl reads them (`yaml`, `input`), one at a time. Every Job and
//! CronJob found (also inside `List`s and AdmissionReviews) goes through the chain the cluster
//! runs (`object`): kube-apiserver's decoding (quantities; unknown fields as `--validate` asks,
//! as kubectl), jobgate's mutating webhook as the deployed configuration calls it (`/mutate`, or
//! `/mutate/recovery` for `--recovery-namespace`s), the apiserver's defaulting, then `/validate`
//! (kube-apiserver's rules and jobgate's policies). A JobSet's or Trainer runtime's Job templates
//! go through it as the Jobs their controllers create (`templates`). Other kinds are counted as
//! skipped. Where findings' fields are written is looked up last (`locate`).
//!
//! Output (`render`): `file:line:column Kind/name: message` lines, or JSON, YAML, GitHub
//! Actions annotations, SARIF 2.1.0. Exit status: 0 when everything passes (warnings allowed
//! unless `--fail-on warning`), 1 when anything is denied, 2 when some input could not be read
//! or nothing was found to check (that wins over 1).

mod decode;
pub(crate) mod document;
pub(crate) mod input;
pub(crate) mod locate;
mod object;
mod recoverer;
mod render;
pub(crate) mod report;
mod templates;
pub(crate) mod yaml;

use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;

use crate::job::Config;
use crate::job::levels::PolicyName;
use crate::rule_flags::RuleArgs;
pub(crate) use document::check_document;
use input::Input;
pub(crate) use object::{Chain, FieldValidation, Place};
use render::OutputFormat;
pub(crate) use report::Report;
use report::Unreadable;

/// When `check` exits non-zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub(crate) enum FailOn {
    /// only when something would be denied
    #[default]
    Error,
    /// also when something would be admitted with a warning
    Warning,
}

/// `jobgate check`.
#[derive(Debug, Clone, clap::Args)]
pub struct CheckArgs {
    /// Files, directories (their *.yaml, *.yml, *.json, recursively) or `-` for stdin.
    /// Without any, stdin is read when it is not a terminal.
    #[arg(value_name = "FILE|DIR|-")]
    pub(crate) paths: Vec<PathBuf>,

    /// Output format.
    #[arg(long, short = 'o', value_enum, default_value_t = OutputFormat::Text, env = "JOBGATE_OUTPUT")]
    pub(crate) output: OutputFormat,

    /// What to do with unknown fields, as `kubectl apply --validate=...`: strict (or true, or
    /// `--validate` alone) refuses them as kube-apiserver does by default, warn reports them as
    /// warnings, ignore (or false) says nothing (also of keys written twice, otherwise a
    /// warning: kubectl sends only the last).
    #[arg(
        long,
        value_name = "strict|warn|ignore",
        default_value = "strict",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "strict",
        value_parser = FieldValidation::parse,
    )]
    pub(crate) validate: FieldValidation,

    /// Namespaces that opted into failure recovery (labelled
    /// `jobgate.dev/failure-recovery=enabled`, so their Jobs go to `/mutate/recovery`).
    #[arg(
        long = "recovery-namespace",
        value_name = "NAMESPACE",
        value_delimiter = ',',
        env = "JOBGATE_RECOVERY_NAMESPACES"
    )]
    pub(crate) recovery_namespaces: Vec<String>,

    /// The namespace of objects that name none (kubectl's current namespace).
    #[arg(long, short = 'n', default_value = "default")]
    pub(crate) namespace: String,

    /// Exit 1 on errors only, or on warnings too. Notes (what jobgate's mutation changed, an
    /// opt-out it honoured) never fail.
    #[arg(long, value_enum, default_value_t = FailOn::Error)]
    pub(crate) fail_on: FailOn,

    /// The path stdin's documents are reported under, as you would name the file (`-` without
    /// it): `-o github` and `-o sarif` then point at the file the pipe was made from.
    #[arg(long, value_name = "PATH")]
    pub(crate) stdin_filename: Option<String>,

    /// Skip files whose path matches this glob (`*` within a path segment, `**` across
    /// segments, `?` one character); repeatable.
    #[arg(long, value_name = "GLOB")]
    pub(crate) exclude: Vec<String>,

    /// The reconciler's --kueue-recovers: each opted-in Job gets a note naming the controller
    /// that recovers its pods.
    #[command(flatten)]
    pub(crate) kueue: crate::rule_flags::KueueRecoversArg,

    /// Judge by the release of the cluster your kubeconfig names (`GET /version`), as `serve` and
    /// `audit` do, unless --kubernetes-version or the config file names one. Without it the
    /// default is the newest released minor jobgate knows: CI has no cluster.
    #[arg(long)]
    pub(crate) cluster: bool,

    /// With --cluster: the kubeconfig and context.
    #[command(flatten)]
    pub(crate) kube: crate::runtime::client::ClusterArgs,

    /// List jobgate's policies with their default level, and exit.
    #[arg(long)]
    pub(crate) list_policies: bool,

    #[command(flatten)]
    pub(crate) rules: RuleArgs,
}

impl CheckArgs {
    /// Whether `--cluster` asks for the cluster's release.
    pub fn reads_cluster(&self) -> bool {
        self.cluster
    }

    /// Records where clap took the rule flags' values from ([`RuleArgs::note_value_sources`]).
    pub fn note_value_sources(&mut self, matches: &clap::ArgMatches) {
        self.rules.note_value_sources(matches);
    }
}

/// Exit status of `jobgate check`.
pub(crate) const EXIT_OK: i32 = 0;
pub(crate) const EXIT_DENIED: i32 = 1;
/// Exit status when an input, the rule settings or the output could not be read or written, or
/// when nothing was found to check (wins over `EXIT_DENIED`); `jobgate audit` uses it too, also
/// for a cluster it cannot read.
pub const EXIT_UNREADABLE: i32 = 2;

/// Runs `jobgate check` on the process's stdin, stdout and stderr; returns the exit status.
pub fn run(args: &CheckArgs) -> i32 {
    run_over(args, Config::default())
}

/// `jobgate check --cluster`: [`run`] with the rules of the release the cluster runs, unless
/// --kubernetes-version names one (the config file's `kubernetesVersion` still wins over it).
pub async fn run_on_cluster(args: &CheckArgs) -> i32 {
    let who = "jobgate check";
    match crate::runtime::cluster_release::base_for(&args.rules, &args.kube, who).await {
        Ok(base) => run_over(args, base),
        Err(e) => {
            eprintln!("{who}: {e}");
            EXIT_UNREADABLE
        }
    }
}

/// [`run`] over `base`: the defaults, or those of the cluster's release.
fn run_over(args: &CheckArgs, base: Config) -> i32 {
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    let stdin_is_terminal = stdin.is_terminal();
    run_with_base(
        args,
        base,
        &mut stdin.lock(),
        stdin_is_terminal,
        &mut std::io::BufWriter::new(stdout.lock()),
        &mut stderr.lock(),
    )
}

/// `run` with the streams given (tests).
#[cfg(test)]
pub(crate) fn run_with(
    args: &CheckArgs,
    stdin: &mut dyn Read,
    stdin_is_terminal: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> i32 {
    run_with_base(args, Config::default(), stdin, stdin_is_terminal, out, err)
}

fn run_with_base(
    args: &CheckArgs,
    base: Config,
    stdin: &mut dyn Read,
    stdin_is_terminal: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> i32 {
    if args.list_policies {
        return write_policy_list(out, err);
    }
    if args.paths.is_empty() && stdin_is_terminal {
        let _ = writeln!(
            err,
            "jobgate check: no input: give files or directories to check, or `-` to read stdin\n\
             usage: jobgate check [OPTIONS] [FILE|DIR|-]..."
        );
        return EXIT_UNREADABLE;
    }
    let config = match args.rules.load_over(base) {
        Ok(c) => c,
        Err(e) => {
            let _ = writeln!(err, "jobgate check: {e}");
            return EXIT_UNREADABLE;
        }
    };
    if let Some(note) = config.release_note() {
        let _ = writeln!(err, "jobgate check: {note}");
    }
    check_and_write(args, &config, stdin, out, err)
}

/// `--list-policies`: the list on `out`; the exit status.
fn write_policy_list(out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    match list_policies(out).and_then(|()| out.flush()) {
        Ok(()) => EXIT_OK,
        Err(e) => {
            let _ = writeln!(err, "jobgate check: cannot write output: {e}");
            EXIT_UNREADABLE
        }
    }
}

/// Checks every input `args` names by `config`'s rules and writes the report; the exit status.
fn check_and_write(
    args: &CheckArgs,
    config: &Config,
    stdin: &mut dyn Read,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> i32 {
    let chain = Chain {
        config,
        mutate: true,
        recovery_namespaces: &args.recovery_namespaces,
        default_namespace: &args.namespace,
        field_validation: args.validate,
        kueue_recovers: Some(args.kueue.kueue_recovers),
    };
    let mut report = Report::default();
    let documents = check_inputs(args, stdin, &chain, &mut report);
    let nothing = documents == 0 && report.unreadable.is_empty();
    let written = render::write(&report, args.output, out, err);
    if let Err(e) = written.and_then(|_| out.flush()) {
        let _ = writeln!(err, "jobgate check: cannot write output: {e}");
        return EXIT_UNREADABLE;
    }
    if nothing {
        let _ = writeln!(
            err,
            "jobgate check: error: nothing to check: no document was found in the input"
        );
        return EXIT_UNREADABLE;
    }
    exit_code(&report, args.fail_on)
}

/// Checks stdin (when asked, or when no path is given) and then every file the paths name, into
/// `report`; returns how many documents were found.
fn check_inputs(
    args: &CheckArgs,
    stdin: &mut dyn Read,
    chain: &Chain<'_>,
    report: &mut Report,
) -> usize {
    let mut read_stdin = args.paths.is_empty();
    let mut files = Vec::new();
    for path in &args.paths {
        if path.as_os_str() == "-" {
            read_stdin = true;
        } else {
            files.push(path.clone());
        }
    }
    let mut documents = 0;
    if read_stdin {
        let name = args.stdin_filename.as_deref().unwrap_or("-");
        let mut text = String::new();
        match stdin.read_to_string(&mut text) {
            Ok(_) => documents += check_named(&Input::named(name, text), true, chain, report),
            Err(e) => report
                .unreadable
                .push(Unreadable::input(name, format!("cannot read stdin: {e}"))),
        }
    }
    for file in input::expand(&files) {
        let (path, named) = match file {
            Ok(file) => file,
            Err(u) => {
                report.unreadable.push(u);
                continue;
            }
        };
        if args.exclude.iter().any(|g| input::glob_matches(g, &path)) {
            continue;
        }
        let name = path.display().to_string();
        match std::fs::read_to_string(&path) {
            Ok(text) if named => {
                documents += check_named(&Input::named(&name, text), false, chain, report)
            }
            Ok(text) => documents += check_source(&Input::named(&name, text), chain, report),
            Err(e) => report
                .unreadable
                .push(Unreadable::input(&name, e.to_string())),
        }
    }
    documents
}

/// The documents of a YAML stream as kubectl sends them to kube-apiserver (empty ones left out),
/// or why it cannot be read: what `check` judges. Test support: the comparison with kubectl itself
/// (`tests/check_kubectl_yaml.rs`).
#[cfg(any(test, feature = "test-support"))]
pub fn yaml_as_kubectl_sends_it(text: &str) -> Result<Vec<serde_json::Value>, String> {
    let mut out = Vec::new();
    for doc in yaml::documents(text) {
        match doc {
            Ok(d) if d.value.is_null() => {}
            Ok(d) => out.push(d.value),
            Err(f) => return Err(f.reason),
        }
    }
    Ok(out)
}

/// The exit status for `report`.
pub(crate) fn exit_code(report: &Report, fail_on: FailOn) -> i32 {
    let summary = report.summary();
    if summary.unreadable > 0 {
        EXIT_UNREADABLE
    } else if summary.denied > 0 || (fail_on == FailOn::Warning && summary.warnings > 0) {
        EXIT_DENIED
    } else {
        EXIT_OK
    }
}

/// `NAME  DEFAULT  DESCRIPTION` for every policy.
fn list_policies(out: &mut dyn Write) -> std::io::Result<()> {
    let width = PolicyName::ALL
        .iter()
        .map(|p| p.as_str().len())
        .max()
        .unwrap_or(0);
    writeln!(out, "{:width$}  DEFAULT  DESCRIPTION", "POLICY")?;
    for p in PolicyName::ALL {
        writeln!(
            out,
            "{:width$}  {:7}  {}",
            p.as_str(),
            p.default_level().as_str(),
            p.description()
        )?;
    }
    Ok(())
}

/// `check_source` for an input named on the command line (a file, or stdin): one that holds no
/// document (nothing, blanks, comments, `---` alone) is unreadable, not a pass. An upstream
/// command that failed (`kubectl kustomize overlays/prod | jobgate check -`, without pipefail)
/// leaves exactly that.
fn check_named(source: &Input, stdin: bool, chain: &Chain<'_>, report: &mut Report) -> usize {
    let failures = report.unreadable.len();
    let documents = check_source(source, chain, report);
    if documents == 0 && report.unreadable.len() == failures {
        let what = if source.text.trim().is_empty() {
            "nothing was read"
        } else {
            "no document in it"
        };
        let hint = if stdin {
            "did the command before the pipe fail?"
        } else {
            "did the command that wrote it fail?"
        };
        report.unreadable.push(Unreadable::input(
            &source.name,
            format!("{what}: an empty input is not a pass ({hint})"),
        ));
    }
    documents
}

/// Checks every document of one source into `report`, one at a time; returns how many
/// documents it held (empty ones, `---` alone, not counted). The fields the findings name are located afterwards, in one pass.
pub(crate) fn check_source(source: &Input, chain: &Chain<'_>, report: &mut Report) -> usize {
    let (first_object, first_ignored, first_unreadable) = (
        report.objects.len(),
        report.ignored.len(),
        report.unreadable.len(),
    );
    let mut reader = input::Reader::new(source);
    let mut count = 0;
    while let Some(doc) = reader.next_document() {
        if doc.value.is_null() {
            continue; // an empty YAML document (`---` alone)
        }
        count += 1;
        let place = Place {
            name: &source.name,
            doc: Some(doc.index),
            root: doc.root,
            duplicates: &doc.duplicates,
            prefix: Vec::new(),
        };
        check_document(&place, doc.value, chain, report);
    }
    report.unreadable.extend(reader.failure.take());
    reader.locate(
        report.objects[first_object..]
            .iter_mut()
            .flat_map(report::Checked::locations_mut)
            .chain(
                report.ignored[first_ignored..]
                    .iter_mut()
                    .map(|i| &mut i.location),
            )
            .chain(
                report.unreadable[first_unreadable..]
                    .iter_mut()
                    .map(|u| &mut u.location),
            ),
    );
    count
}

#[cfg(test)]
mod tests;
