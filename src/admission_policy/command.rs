//! `jobgate render`: the command line around `render`.

use std::io::Write;

use super::install::{FailurePolicy, Install};
use super::{RenderError, render};
use crate::job::Config;
use crate::rule_flags::RuleArgs;

/// `jobgate render`.
#[derive(Debug, Clone, clap::Args)]
pub struct RenderArgs {
    /// jobgate's own namespace, kept out of the policies as the webhook configurations keep it.
    #[arg(long, short = 'n', default_value = "jobgate-system")]
    pub(crate) namespace: String,

    /// The objects' name prefix: <NAME>-mutate, <NAME>-mutate-recovery, <NAME>-<policy>.
    #[arg(long, value_name = "NAME", default_value = "jobgate")]
    pub(crate) name: String,

    /// Another namespace to keep out, besides kube-system and --namespace (repeatable).
    #[arg(
        long = "exclude-namespace",
        value_name = "NAMESPACE",
        value_delimiter = ','
    )]
    pub(crate) excluded_namespaces: Vec<String>,

    /// What a ValidatingAdmissionPolicy that cannot be evaluated does to the request (the
    /// MutatingAdmissionPolicies are always Ignore, as the mutating webhooks).
    #[arg(long, value_enum, ignore_case = true, default_value_t = FailurePolicy::Fail)]
    pub(crate) failure_policy: FailurePolicy,

    /// Render for the release of the cluster your kubeconfig names (`GET /version`), unless
    /// --kubernetes-version or the config file names one; without it, the newest released minor.
    #[arg(long)]
    pub(crate) cluster: bool,

    /// With --cluster: the kubeconfig and context.
    #[command(flatten)]
    pub(crate) kube: crate::runtime::client::ClusterArgs,

    /// Rule settings, as `serve` reads them: --config, --policy, --inject-recovery-annotation-key,
    /// --kubernetes-version.
    #[command(flatten)]
    pub(crate) rules: RuleArgs,
}

impl RenderArgs {
    /// Whether `--cluster` asks for the cluster's release.
    pub fn reads_cluster(&self) -> bool {
        self.cluster
    }
}

/// Why `jobgate render` printed nothing.
#[derive(Debug, thiserror::Error)]
enum RenderFailure {
    #[error("{0}")]
    Settings(#[from] crate::rule_flags::ConfigError),
    #[error("{0}")]
    Render(#[from] RenderError),
    #[error("cannot write the policies: {0}")]
    Write(#[from] std::io::Error),
}

/// Prints the policies on stdout; returns the exit status (0, or 1 with the reason on stderr).
pub fn run(args: &RenderArgs) -> i32 {
    run_over(args, Config::default())
}

/// `jobgate render --cluster`: [`run`] for the release the cluster runs, unless
/// --kubernetes-version names one.
pub async fn run_on_cluster(args: &RenderArgs) -> i32 {
    let who = "jobgate render";
    match crate::runtime::cluster_release::base_for(&args.rules, &args.kube, who).await {
        Ok(base) => run_over(args, base),
        Err(e) => {
            eprintln!("{who}: {e}");
            1
        }
    }
}

fn run_over(args: &RenderArgs, base: Config) -> i32 {
    match write(args, base, &mut std::io::stdout().lock()) {
        Ok(()) => 0,
        // `jobgate render | head` closes the pipe early: not an error.
        Err(RenderFailure::Write(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => 0,
        Err(e) => {
            eprintln!("jobgate render: {e}");
            1
        }
    }
}

fn write(args: &RenderArgs, base: Config, out: &mut impl Write) -> Result<(), RenderFailure> {
    let config = args.rules.load_over(base)?;
    if let Some(note) = config.release_note() {
        eprintln!("jobgate render: {note}");
    }
    let install = Install {
        name: args.name.clone(),
        namespace: args.namespace.clone(),
        excluded_namespaces: args.excluded_namespaces.clone(),
        failure_policy: args.failure_policy,
    };
    let rendered = render(&config, &install)?;
    let flags = rendered.api.apiserver_flags();
    if !flags.is_empty() {
        // Said where a person piping the output to kubectl sees it, as well as in the header.
        eprintln!(
            "jobgate render: Kubernetes {}: MutatingAdmissionPolicy is beta and off by default; \
             every kube-apiserver needs {}",
            config.cluster.version(),
            flags.join(" ")
        );
    }
    out.write_all(rendered.to_yaml().as_bytes())?;
    out.flush()?;
    Ok(())
}
