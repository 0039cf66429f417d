//! `jobgate audit`: what `/validate` and jobgate's policies would say about the Jobs and CronJobs
//! already in a cluster, and which pods opted into recovery belong to Jobs that cannot benefit,
//! before any policy is moved to `deny` (the way Gatekeeper's audit and Kubewarden's
//! audit-scanner report on pre-existing objects).
//!
//! [`fetch`] reads (list only, paged), [`evaluate`] decides through `jobgate check`'s path,
//! [`policyreport`] and [`write_text`] render. Exit status as `jobgate check`: 0 when nothing
//! would be denied (warnings allowed), 1 when something would be, 2 when the cluster or an object
//! could not be read.

pub(crate) mod apply;
pub(crate) mod evaluate;
pub(crate) mod fetch;
pub(crate) mod policyreport;

#[cfg(test)]
mod tests;

use std::io::Write;

use crate::check::EXIT_UNREADABLE;
use crate::job::Config;
use crate::rule_flags::{ConfigError, RuleArgs};
use crate::runtime::client::{ClusterArgs, Prefer};
use crate::runtime::cluster_release::{ReleaseError, defaults_for};
pub(crate) use evaluate::{Audit, audit};

/// Every API call `jobgate audit` makes, as (API group, resource, verbs): list only, in pages.
/// deploy/audit's ClusterRole grants exactly this (tests/audit.rs); the built-in `view`
/// ClusterRole covers it too.
pub const RBAC: &[(&str, &str, &[&str])] = &[
    ("batch", "jobs", &["list"]),
    ("batch", "cronjobs", &["list"]),
    // metadata only (PartialObjectMetadataList): opt-in annotations and the controlling Job
    ("", "pods", &["list"]),
];

/// What `--apply --prune` adds to [`RBAC`]: server-side apply of the reports (`create` for a new
/// one, `patch`), and listing and deleting stale ones. deploy/audit/cronjob grants exactly this.
pub const APPLY_RBAC: &[(&str, &str, &[&str])] = &[(
    "wgpolicyk8s.io",
    "policyreports",
    &["list", "create", "patch", "delete"],
)];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub(crate) enum AuditOutput {
    /// kubectl-style lines, as `jobgate check`
    #[default]
    Text,
    /// one JSON document, as `jobgate check --output json`, plus `recovery`
    Json,
    /// wg-policy PolicyReport YAML (wgpolicyk8s.io/v1alpha2), one per namespace
    Policyreport,
}

/// `jobgate audit`.
#[derive(Debug, Clone, clap::Args)]
pub struct AuditArgs {
    #[command(flatten)]
    pub(crate) cluster: ClusterArgs,
    /// Only this namespace (default: every namespace).
    #[arg(long, short = 'n')]
    pub(crate) namespace: Option<String>,
    /// Output format: text, json, or policyreport (PolicyReport YAML, one per namespace, for
    /// `kubectl apply -f -`).
    #[arg(long, short = 'o', value_enum, default_value_t = AuditOutput::Text, env = "JOBGATE_OUTPUT")]
    pub(crate) output: AuditOutput,
    /// Write the PolicyReports to the cluster (server-side apply, field manager
    /// `jobgate-audit`) instead of leaving that to `kubectl apply`; findings then do not change
    /// the exit status (they are in the reports): 0, or 2 when the cluster cannot be read or
    /// written.
    #[arg(long)]
    pub(crate) apply: bool,
    /// With --apply: delete jobgate's PolicyReports in namespaces that no longer have a Job or
    /// CronJob.
    #[arg(long, requires = "apply")]
    pub(crate) prune: bool,
    /// The reconciler's --kueue-recovers: the audit says which controller recovers each Job's
    /// opted-in pods.
    #[command(flatten)]
    pub(crate) kueue: crate::rule_flags::KueueRecoversArg,
    /// Rule settings, as for `serve` and `check`: --config, --policy, --inject-recovery-annotation-key.
    #[command(flatten)]
    pub(crate) rules: RuleArgs,
}

impl AuditArgs {
    /// Records where clap took the rule flags' values from ([`RuleArgs::note_value_sources`]).
    pub fn note_value_sources(&mut self, matches: &clap::ArgMatches) {
        self.rules.note_value_sources(matches);
    }
}

/// Why `jobgate audit` could not finish.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// The rule settings (--config, --policy, --inject-recovery-annotation-key) cannot be loaded.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The Kubernetes client cannot be set up (kubeconfig or in-cluster configuration).
    #[error("cannot set up the Kubernetes client: {0}")]
    Client(String),
    /// The API server's version (`GET /version`) cannot be read.
    #[error(transparent)]
    Version(#[from] ReleaseError),
    /// A list call to the Kubernetes API failed.
    #[error("cannot list from the Kubernetes API at {server}: {source}")]
    Api {
        /// The API server's URL.
        server: String,
        /// What the client said.
        #[source]
        source: kube::Error,
    },
    /// The PolicyReports cannot be written (`--apply`) or stale ones deleted (`--prune`).
    #[error("cannot write the PolicyReports at {server}: {source}")]
    Apply {
        /// The API server's URL.
        server: String,
        /// What the client said.
        #[source]
        source: kube::Error,
    },
    /// The PolicyReports cannot be serialized as YAML.
    #[error("cannot render the PolicyReports: {0}")]
    Render(#[from] serde_yaml_ng::Error),
    /// Writing to stdout or stderr failed.
    #[error("cannot write the output: {0}")]
    Write(#[from] std::io::Error),
}

/// What a 403 from the API server is answered with: the ClusterRole that grants the calls.
pub const RBAC_HINT: &str = "the ClusterRole jobgate-audit (kubectl apply -k deploy/audit) grants \
     exactly the calls jobgate audit makes (--apply --prune: also jobgate-audit-reports, \
     deploy/audit/cronjob); bind it to this user, e.g. kubectl create \
     clusterrolebinding jobgate-audit-$USER --clusterrole=jobgate-audit --user=<user>";

/// Runs the audit against the cluster; returns the exit status.
pub async fn run(args: &AuditArgs) -> Result<i32, AuditError> {
    let (client, server) = connect(&args.cluster).await?;
    let config = rules(args, &client, &server).await?;
    let inventory = fetch::fetch(&client, args.namespace.as_deref())
        .await
        .map_err(|source| AuditError::Api {
            server: server.clone(),
            source,
        })?;
    let mut found = audit(&inventory, &config);
    found.recovered_by = evaluate::recovered_by(&inventory, &config, args.kueue.kueue_recovers);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let stdout = std::io::stdout();
    write(
        &found,
        args.output,
        now,
        &mut std::io::BufWriter::new(stdout.lock()),
        &mut std::io::stderr().lock(),
    )?;
    if !args.apply {
        return Ok(exit_code(&found));
    }
    apply_reports(args, &client, server, &found, now).await
}

/// The Kubernetes client, and the API server's URL for messages.
async fn connect(cluster: &ClusterArgs) -> Result<(kube::Client, String), AuditError> {
    let kube_config = cluster
        .kube_config(Prefer::Kubeconfig)
        .await
        .map_err(|e| AuditError::Client(format!("{e:#}")))?;
    let server = kube_config.cluster_url.to_string();
    let client =
        kube::Client::try_from(kube_config).map_err(|e| AuditError::Client(format!("{e:#}")))?;
    Ok((client, server))
}

/// The rule settings: the flags over the defaults of the cluster's own release, unless
/// --kubernetes-version (or the config file) says otherwise.
async fn rules(
    args: &AuditArgs,
    client: &kube::Client,
    server: &str,
) -> Result<Config, AuditError> {
    let base = match args.rules.kubernetes_version()? {
        Some(_) => Config::default(),
        None => {
            let (base, note) = defaults_for(client, server).await?;
            if let Some(note) = note {
                eprintln!("jobgate audit: {note}");
            }
            base
        }
    };
    let config = args.rules.load_over(base)?;
    if let Some(note) = config.release_note() {
        eprintln!("jobgate audit: {note}");
    }
    Ok(config)
}

/// `--apply` (and `--prune`): writes the PolicyReports and says what changed; returns the exit
/// status.
async fn apply_reports(
    args: &AuditArgs,
    client: &kube::Client,
    server: String,
    found: &Audit,
    now: i64,
) -> Result<i32, AuditError> {
    let reports = policyreport::reports(found, now);
    let applied = apply::apply(client, &reports, args.namespace.as_deref(), args.prune)
        .await
        .map_err(|source| AuditError::Apply { server, source })?;
    writeln!(
        std::io::stderr().lock(),
        "jobgate audit: applied {} PolicyReport(s) ({}), pruned {} ({})",
        applied.written.len(),
        applied.written.join(", "),
        applied.pruned.len(),
        applied.pruned.join(", ")
    )?;
    // The findings are in the reports; a CronJob's Job fails only when the audit could not run.
    match exit_code(found) {
        EXIT_UNREADABLE => Ok(EXIT_UNREADABLE),
        _ => Ok(crate::check::EXIT_OK),
    }
}

/// Renders `audit` in `format`; `now` is the PolicyReports' timestamp (Unix seconds).
pub(crate) fn write(
    audit: &Audit,
    format: AuditOutput,
    now: i64,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<(), AuditError> {
    match format {
        AuditOutput::Text => write_text(audit, out, err)?,
        AuditOutput::Json => {
            serde_json::to_writer_pretty(&mut *out, audit).map_err(std::io::Error::from)?;
            writeln!(out)?;
        }
        AuditOutput::Policyreport => out.write_all(policyreport::render(audit, now)?.as_bytes())?,
    }
    out.flush()?;
    Ok(())
}

pub(crate) fn exit_code(audit: &Audit) -> i32 {
    crate::check::exit_code(&audit.report, crate::check::FailOn::Error)
}

/// `jobgate check`'s lines (`<namespace> Job/name: ...`) and the recovery findings on `out`;
/// unreadable objects and the summary on `err`.
pub(crate) fn write_text(
    audit: &Audit,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> std::io::Result<()> {
    let report = &audit.report;
    for o in &report.objects {
        let who = o.who();
        o.write_lines(out, |_| who.clone())?;
    }
    for r in &audit.recovery {
        for f in &r.findings {
            writeln!(
                out,
                "{} Job/{}: pod(s) {} opted into recovery cannot benefit: {}",
                r.namespace,
                r.job,
                r.pods.join(", "),
                f.message
            )?;
        }
    }
    for r in &audit.recovered_by {
        let by = match r.controller {
            "kueue" => "Kueue's failure-recovery controller",
            _ => "jobgate's reconciler",
        };
        writeln!(
            out,
            "{} Job/{}: pod(s) {} recovered by {by} ({}=\"true\")",
            r.namespace,
            r.job,
            r.pods.join(", "),
            r.key
        )?;
    }
    report.write_unreadable(err)?;
    let s = report.summary();
    writeln!(
        err,
        "jobgate audit: {} checked, {} would be denied, {} with warnings, {} unreadable; {} Job(s) with opted-in pods that cannot benefit from recovery",
        s.checked,
        s.denied,
        s.warned,
        s.unreadable,
        audit.recovery.len()
    )
}
