//! The command line: clap subcommands that wire the library's pieces together.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "jobgate",
    version,
    long_version = crate::version::LONG_VERSION,
    about = "Admission webhook and failure-recovery reconciler for Kubernetes batch Jobs"
)]
pub(crate) struct Cli {
    /// Log output format.
    #[arg(long, global = true, env = "JOBGATE_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Log filter: a level (error, warn, info, debug, trace) or tracing directives (`jobgate=debug,info`).
    #[arg(long, global = true, env = "JOBGATE_LOG_LEVEL", default_value = "info")]
    pub log_level: String,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Subcommand)]
#[allow(
    clippy::large_enum_variant,
    reason = "parsed once at start; boxing a variant buys nothing"
)]
pub(crate) enum Command {
    /// Serve the admission webhooks over TLS (dev mode with a throw-away certificate when no
    /// --tls-cert/--tls-key are given).
    Serve(jobgate::server::ServeArgs),
    /// Write a CA, a serving certificate and key for the webhook Service, and the kustomize
    /// caBundle patch, for deploy/overlays/self-signed.
    Certs(jobgate::certs::CertsArgs),
    /// Check Job and CronJob manifests (files, directories, `-` for stdin) as the cluster would:
    /// kube-apiserver's strict decoding, jobgate's /mutate, the apiserver's defaulting, then
    /// /validate; exit 1 when any is denied, 2 on unreadable input or nothing to check.
    Check(jobgate::check::CheckArgs),
    /// Recover pods stuck terminating on unreachable nodes (Kueue KEP-6757): the sidecar
    /// reconciler, leader-elected, with its own admin port.
    Reconcile(jobgate::reconciler::ReconcileArgs),
    /// Show per-Job recovery state, pods waiting for recovery, and the reconciler's leader
    /// (reads the cluster only).
    Status(jobgate::status::StatusArgs),
    /// List every Job and CronJob (or those of -n NAMESPACE) and report what `POST /validate`
    /// and the policies would say about each, and which pods opted into recovery belong to Jobs
    /// that cannot benefit (reads the cluster only). Output: text or json as `jobgate check`, or
    /// policyreport (wgpolicyk8s.io/v1alpha2 PolicyReport YAML, one per namespace). Exit 1 when
    /// something would be denied, 2 when the cluster or an object could not be read.
    Audit(jobgate::audit::AuditArgs),
    /// Print jobgate's admission as MutatingAdmissionPolicies and ValidatingAdmissionPolicies
    /// with their bindings (YAML for `kubectl apply -f -`), for --kubernetes-version and the
    /// settings `serve` reads: the webhook-less install. Exit 1 when the release has no beta or
    /// GA MutatingAdmissionPolicy (before 1.34) or the settings cannot be read.
    Render(jobgate::admission_policy::command::RenderArgs),
    /// Print the version, the git commit and build date of this binary, and the Kubernetes
    /// releases whose kube-apiserver rules it follows (--kubernetes-version).
    Version(VersionArgs),
    /// Print a shell completion script to stdout, e.g. `source <(jobgate completion bash)`.
    Completion(CompletionArgs),
    /// Print jobgate's man page (roff) to stdout, or write one page per command into --out.
    Man(ManArgs),
}

#[derive(Debug, Args)]
pub(crate) struct VersionArgs {
    /// Output format.
    #[arg(long, short = 'o', value_enum, default_value_t = crate::version::VersionFormat::Text)]
    pub output: crate::version::VersionFormat,
}

#[derive(Debug, Args)]
pub(crate) struct CompletionArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub(crate) struct ManArgs {
    /// Write jobgate.1 and one page per command (jobgate-serve.1, ...) into this directory
    /// instead of printing jobgate.1.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}
