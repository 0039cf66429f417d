//! The command line: clap subcommands that wire the library's pieces together.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use jobgate::duration::parse_duration;

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
pub(crate) enum Command {
    /// Serve the admission webhooks over TLS (dev mode with a throw-away certificate when no
    /// --tls-cert/--tls-key are given).
    Serve(ServeArgs),
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
    Render(jobgate::admission_policy::RenderArgs),
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

#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Webhook (HTTPS) listen address. In dev mode the host is always 127.0.0.1.
    #[arg(long, env = "JOBGATE_ADDR", default_value = "0.0.0.0:8443")]
    pub addr: SocketAddr,
    /// Admin (plain HTTP) listen address for /livez, /readyz, /metrics. In dev mode the host is 127.0.0.1.
    #[arg(long, env = "JOBGATE_ADMIN_ADDR", default_value = "0.0.0.0:8080")]
    pub admin_addr: SocketAddr,
    /// PEM certificate chain of the serving certificate.
    #[arg(long, env = "JOBGATE_TLS_CERT", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1) of the serving certificate.
    #[arg(long, env = "JOBGATE_TLS_KEY", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// PEM bundle of CA certificates: the webhook port then requires a client certificate that
    /// chains to one of them (kube-apiserver presents one through its admission kubeConfigFile).
    /// Reloaded like --tls-cert. Off by default; the admin port never asks for one.
    #[arg(long, env = "JOBGATE_CLIENT_CA")]
    pub client_ca: Option<PathBuf>,
    /// Where dev mode writes ca.crt, tls.crt and tls.key.
    #[arg(long, env = "JOBGATE_DEV_CERTS_DIR", default_value = "certs/dev")]
    pub dev_certs_dir: PathBuf,
    /// Rule settings: --config, --policy, --inject-recovery-annotation-key.
    #[command(flatten)]
    pub rules: jobgate::rule_flags::RuleArgs,
    /// The host kube-apiserver dials for the webhook Service, `<service>.<namespace>.svc`:
    /// /readyz fails (and says why in the log) while the serving certificate does not name it,
    /// and a rotated certificate that does not name it is not loaded. The installs set it from
    /// the Service's name and the pod's namespace.
    #[arg(long, env = "JOBGATE_TLS_SERVER_NAME", requires = "tls_cert")]
    pub tls_server_name: Option<String>,
    /// Time allowed for a TLS handshake.
    #[arg(long, env = "JOBGATE_TLS_HANDSHAKE_TIMEOUT", default_value = "10s", value_parser = parse_duration)]
    pub tls_handshake_timeout: Duration,
    /// How often --tls-cert/--tls-key (and --client-ca) are read again to pick up a rotated
    /// certificate; 0 never.
    #[arg(long, env = "JOBGATE_TLS_RELOAD_INTERVAL", default_value = "10s", value_parser = parse_duration)]
    pub tls_reload_interval: Duration,
    /// Time allowed for an HTTP/1 request's headers to arrive.
    #[arg(long, env = "JOBGATE_HEADER_READ_TIMEOUT", default_value = "10s", value_parser = parse_duration)]
    pub header_read_timeout: Duration,
    /// Time allowed for a request body to arrive after its headers.
    #[arg(long, env = "JOBGATE_BODY_TIMEOUT", default_value = "10s", value_parser = parse_duration)]
    pub body_timeout: Duration,
    /// On SIGTERM, how long to keep serving with /readyz failing before closing the listener.
    #[arg(long, env = "JOBGATE_SHUTDOWN_DELAY", default_value = "0s", value_parser = parse_duration)]
    pub shutdown_delay: Duration,
    /// On SIGTERM, how long in-flight reviews get to finish once the listener is closed.
    #[arg(long, env = "JOBGATE_SHUTDOWN_TIMEOUT", default_value = "10s", value_parser = parse_duration)]
    pub shutdown_timeout: Duration,
    /// Request-body bytes held in memory at once, all requests together (a quarter is kept for
    /// bodies up to 1 MiB). Suffixes Ki, Mi, Gi.
    #[arg(long, env = "JOBGATE_BODY_MEMORY_BUDGET", default_value = "32Mi", value_parser = parse_bytes)]
    pub body_memory_budget: usize,
    /// How long a request waits for memory budget before it is answered 429 with Retry-After.
    #[arg(long, env = "JOBGATE_BODY_BUDGET_WAIT", default_value = "1s", value_parser = parse_duration)]
    pub body_budget_wait: Duration,
}

/// `32Mi`, `512Ki`, `1Gi` or plain bytes (Kubernetes quantity suffixes, binary only).
fn parse_bytes(text: &str) -> Result<usize, String> {
    let (digits, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => text.split_at(i),
        None => (text, ""),
    };
    let shift = match unit {
        "" => 0,
        "Ki" => 10,
        "Mi" => 20,
        "Gi" => 30,
        _ => return Err(format!("unknown unit {unit:?}: use Ki, Mi or Gi")),
    };
    let n: usize = digits
        .parse()
        .map_err(|_| format!("{text:?} is not a size such as 32Mi"))?;
    n.checked_mul(1 << shift)
        .ok_or_else(|| format!("{text:?} is too large"))
}
