//! `jobgate serve`'s flags, which `serve` reads as they are.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::duration::parse_duration;

/// `jobgate serve`'s flags.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Webhook (HTTPS) listen address. In dev mode the host is always 127.0.0.1.
    #[arg(long, env = "JOBGATE_ADDR", default_value = "0.0.0.0:8443")]
    pub(crate) addr: SocketAddr,
    /// Admin (plain HTTP) listen address for /livez, /readyz, /metrics. In dev mode the host is 127.0.0.1.
    #[arg(long, env = "JOBGATE_ADMIN_ADDR", default_value = "0.0.0.0:8080")]
    pub(crate) admin_addr: SocketAddr,
    /// PEM certificate chain of the serving certificate.
    #[arg(long, env = "JOBGATE_TLS_CERT", requires = "tls_key")]
    pub(crate) tls_cert: Option<PathBuf>,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1) of the serving certificate.
    #[arg(long, env = "JOBGATE_TLS_KEY", requires = "tls_cert")]
    pub(crate) tls_key: Option<PathBuf>,
    /// PEM bundle of CA certificates: the webhook port then requires a client certificate that
    /// chains to one of them (kube-apiserver presents one through its admission kubeConfigFile).
    /// Reloaded like --tls-cert. Off by default; the admin port never asks for one.
    #[arg(long, env = "JOBGATE_CLIENT_CA")]
    pub(crate) client_ca: Option<PathBuf>,
    /// Where dev mode writes ca.crt, tls.crt and tls.key.
    #[arg(long, env = "JOBGATE_DEV_CERTS_DIR", default_value = "certs/dev")]
    pub(crate) dev_certs_dir: PathBuf,
    /// Rule settings: --config, --policy, --inject-recovery-annotation-key.
    #[command(flatten)]
    pub rules: crate::rule_flags::RuleArgs,
    /// Where to read the cluster's release (kube-apiserver's `/version`, asked with no
    /// credential), unless --kubernetes-version sets one. Default in a pod: the in-cluster
    /// Service (`KUBERNETES_SERVICE_HOST`, `KUBERNETES_SERVICE_PORT`); elsewhere none, and the
    /// newest released minor judges.
    #[arg(long, env = "JOBGATE_CLUSTER_URL", value_name = "URL")]
    pub(crate) cluster_url: Option<String>,
    /// The CA bundle (PEM) that --cluster-url's certificate chains to: the cluster's
    /// `kube-root-ca.crt` ConfigMap, which the installs mount here. No token is read.
    #[arg(
        long,
        env = "JOBGATE_CLUSTER_CA",
        value_name = "FILE",
        default_value = "/var/run/jobgate/kube-root-ca/ca.crt"
    )]
    pub(crate) cluster_ca: PathBuf,
    /// How often the cluster's release is read again, so that the rules follow an upgrade of
    /// the control plane; 0 reads it once, at start.
    #[arg(long, env = "JOBGATE_CLUSTER_VERSION_INTERVAL", default_value = "10m", value_parser = parse_duration)]
    pub(crate) cluster_version_interval: Duration,
    /// The host kube-apiserver dials for the webhook Service, `<service>.<namespace>.svc`:
    /// /readyz fails (and says why in the log) while the serving certificate does not name it,
    /// and a rotated certificate that does not name it is not loaded. The installs set it from
    /// the Service's name and the pod's namespace.
    #[arg(long, env = "JOBGATE_TLS_SERVER_NAME", requires = "tls_cert")]
    pub(crate) tls_server_name: Option<String>,
    /// Time allowed for a TLS handshake.
    #[arg(long, env = "JOBGATE_TLS_HANDSHAKE_TIMEOUT", default_value = "10s", value_parser = parse_duration)]
    pub(crate) tls_handshake_timeout: Duration,
    /// How often --tls-cert/--tls-key (and --client-ca) are read again to pick up a rotated
    /// certificate; 0 never.
    #[arg(long, env = "JOBGATE_TLS_RELOAD_INTERVAL", default_value = "10s", value_parser = parse_duration)]
    pub(crate) tls_reload_interval: Duration,
    /// Time allowed for an HTTP/1 request's headers to arrive.
    #[arg(long, env = "JOBGATE_HEADER_READ_TIMEOUT", default_value = "10s", value_parser = parse_duration)]
    pub(crate) header_read_timeout: Duration,
    /// Time allowed for a request body to arrive after its headers.
    #[arg(long, env = "JOBGATE_BODY_TIMEOUT", default_value = "10s", value_parser = parse_duration)]
    pub(crate) body_timeout: Duration,
    /// On SIGTERM, how long to keep serving with /readyz failing before closing the listener.
    #[arg(long, env = "JOBGATE_SHUTDOWN_DELAY", default_value = "0s", value_parser = parse_duration)]
    pub(crate) shutdown_delay: Duration,
    /// On SIGTERM, how long in-flight reviews get to finish once the listener is closed.
    #[arg(long, env = "JOBGATE_SHUTDOWN_TIMEOUT", default_value = "10s", value_parser = parse_duration)]
    pub(crate) shutdown_timeout: Duration,
    /// Request-body bytes held in memory at once, all requests together (a quarter is kept for
    /// bodies up to 1 MiB). Suffixes Ki, Mi, Gi.
    #[arg(long, env = "JOBGATE_BODY_MEMORY_BUDGET", default_value = "32Mi", value_parser = parse_bytes)]
    pub(crate) body_memory_budget: usize,
    /// How long a request waits for memory budget before it is answered 429 with Retry-After.
    #[arg(long, env = "JOBGATE_BODY_BUDGET_WAIT", default_value = "1s", value_parser = parse_duration)]
    pub(crate) body_budget_wait: Duration,
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
