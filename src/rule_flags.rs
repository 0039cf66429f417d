//! Where the rule settings come from: the defaults, then a YAML file (`--config`), then the
//! flags, each with its environment variable. Shared by `jobgate serve` and `jobgate check`; the
//! settings themselves and the YAML document are `job::Config` (pure).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::job::Config;
use crate::job::config::{ConfigDocumentError, ReleaseSource};
use crate::job::levels::{Level, PolicyName};
use crate::job::version::{Cluster, FeatureGate, KubernetesVersion, parse_feature_gates};

/// Why the rule settings could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The `--config` file cannot be read.
    #[error("cannot read config file {path}: {source}")]
    Read {
        /// The `--config` file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The `--config` file is not a valid config document.
    #[error("config file {path}: {source}")]
    Parse {
        /// The `--config` file.
        path: PathBuf,
        /// What is wrong with it.
        source: ConfigDocumentError,
    },
    /// The flags' Kubernetes version and feature gates (each falling back to the file's) do not
    /// go together: a gate the release does not have, or a locked gate turned off.
    #[error("{0}")]
    Cluster(String),
    /// `--kubernetes-version` or `JOBGATE_KUBERNETES_VERSION` names no release jobgate can judge
    /// (malformed, or older than the oldest known).
    #[error("{given_by}: {message}")]
    KubernetesVersion {
        /// `--kubernetes-version`, or `JOBGATE_KUBERNETES_VERSION` when the value came from
        /// the environment.
        given_by: &'static str,
        /// What is wrong with it.
        message: String,
    },
}

/// The environment variable of `--kubernetes-version`.
const KUBERNETES_VERSION_ENV: &str = "JOBGATE_KUBERNETES_VERSION";

/// Reads a config file on top of `base`.
pub(crate) fn config_from_file(path: &Path, base: Config) -> Result<Config, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let mut config = base;
    config
        .merge_yaml(&text)
        .map_err(|source| ConfigError::Parse {
            path: path.to_path_buf(),
            source,
        })?;
    Ok(config)
}

/// `NAME=off|warn|deny`.
pub(crate) fn parse_policy_setting(s: &str) -> Result<(PolicyName, Level), String> {
    let (name, level) = s
        .split_once('=')
        .ok_or_else(|| format!("expected NAME=off|warn|deny, got {s:?}"))?;
    let policy = PolicyName::parse(name.trim())
        .ok_or_else(|| ConfigDocumentError::UnknownPolicy(name.into()).to_string())?;
    let level = Level::parse(level.trim())
        .ok_or_else(|| format!("policy {name}: level must be off, warn or deny, got {level:?}"))?;
    Ok((policy, level))
}

/// `--kueue-recovers`, one flag: the reconciler acts on it; `status`, `check` and `audit` say
/// what it does with it (which controller recovers a Job's pods), so they take the same value.
#[derive(Debug, Clone, clap::Args)]
pub struct KueueRecoversArg {
    /// Whether Kueue's own failure-recovery controller runs (Kueue 0.15.6+ with the
    /// FailureRecoveryPolicy gate) and recovers the pods annotated
    /// kueue.x-k8s.io/safe-to-forcefully-delete: "true": jobgate's reconciler then leaves those
    /// pods to it, so no pod is recovered twice. false: jobgate recovers them too (Kueue's
    /// recovery is off). status, check and audit take the reconciler's value
    #[arg(
        long,
        env = "JOBGATE_KUEUE_RECOVERS",
        default_value_t = true,
        action = clap::ArgAction::Set,
        value_name = "BOOL"
    )]
    pub(crate) kueue_recovers: bool,
}

impl Default for KueueRecoversArg {
    fn default() -> Self {
        KueueRecoversArg {
            kueue_recovers: true,
        }
    }
}

/// The rule flags `serve` and `check` share. Every flag can also come from its environment
/// variable (lists comma-separated).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct RuleArgs {
    /// YAML file with `policies:` and `recoveryAnnotationKeys:`; flags override it.
    #[arg(long, env = "JOBGATE_CONFIG", value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,

    /// Set a policy's level, e.g. `--policy recovery-needs-failed=deny` (repeatable).
    #[arg(
        long = "policy",
        env = "JOBGATE_POLICY",
        value_name = "NAME=off|warn|deny",
        value_delimiter = ',',
        value_parser = parse_policy_setting
    )]
    pub(crate) policies: Vec<(PolicyName, Level)>,

    /// Pod-template annotation key that the mutating webhook sets to "true" to opt pods into
    /// forced recovery (repeatable; replaces the default kueue.x-k8s.io/safe-to-forcefully-terminate;
    /// Kueue >= 0.15.6 reads kueue.x-k8s.io/safe-to-forcefully-delete). Both Kueue keys are
    /// always checked by the policies and respected as an opt-out when "false".
    #[arg(
        long = "inject-recovery-annotation-key",
        env = "JOBGATE_INJECT_RECOVERY_ANNOTATION_KEY",
        value_name = "KEY",
        value_delimiter = ','
    )]
    pub(crate) recovery_annotation_keys: Vec<String>,

    /// The deprecated name of --inject-recovery-annotation-key (`reconcile` has a flag of the
    /// same old name meaning the keys it reads).
    #[arg(
        long = "recovery-annotation-key",
        env = "JOBGATE_RECOVERY_ANNOTATION_KEY",
        value_name = "KEY",
        value_delimiter = ',',
        hide = true
    )]
    pub(crate) deprecated_recovery_annotation_keys: Vec<String>,

    /// The cluster's Kubernetes minor version, MAJOR.MINOR (1.33 to 1.38): the kube-apiserver
    /// rules that changed between releases follow it. An override: by default `serve` and
    /// `audit` judge by the release the cluster reports, and otherwise by 1.37, the newest
    /// released (1.38's rules are read from a pre-release and judge only when chosen). A newer
    /// release is judged with 1.38's rules, with a warning.
    #[arg(
        long = "kubernetes-version",
        env = KUBERNETES_VERSION_ENV,
        value_name = "MAJOR.MINOR"
    )]
    kubernetes_version: Option<String>,

    /// Whether the version came from the environment: clap knows, the parsed value does not
    /// (`note_value_sources`).
    #[arg(skip)]
    kubernetes_version_from_env: bool,

    /// The cluster's overrides of Job-related feature gates, as kube-apiserver's
    /// --feature-gates takes them: Name=true|false,... (JobPodReplacementPolicy, JobManagedBy,
    /// JobBackoffLimitPerIndex, JobSuccessPolicy, MutablePodResourcesForSuspendedJobs,
    /// MutableSchedulingDirectivesForSuspendedJobs, WorkloadWithJob, GenericWorkload,
    /// DeclarativeValidationBeta).
    #[arg(
        long = "feature-gates",
        env = "JOBGATE_FEATURE_GATES",
        value_name = "NAME=true|false,...",
        value_parser = parse_feature_gates
    )]
    pub(crate) feature_gates: Option<BTreeMap<FeatureGate, bool>>,
}

impl RuleArgs {
    /// Records where clap took each value from (`matches` are the command's own), so that an
    /// error names the environment variable when that is where a bad value came from.
    pub fn note_value_sources(&mut self, matches: &clap::ArgMatches) {
        const ID: &str = "kubernetes_version";
        self.kubernetes_version_from_env = matches.ids().any(|id| id.as_str() == ID)
            && matches.value_source(ID) == Some(clap::parser::ValueSource::EnvVariable);
    }

    /// The release `--kubernetes-version` (or its variable) names, if given.
    pub(crate) fn kubernetes_version(&self) -> Result<Option<KubernetesVersion>, ConfigError> {
        let Some(text) = &self.kubernetes_version else {
            return Ok(None);
        };
        KubernetesVersion::parse(text)
            .map(Some)
            .map_err(|message| ConfigError::KubernetesVersion {
                given_by: match self.kubernetes_version_from_env {
                    true => KUBERNETES_VERSION_ENV,
                    false => "--kubernetes-version",
                },
                message,
            })
    }

    /// Defaults, then `--config`, then the flags.
    pub fn load(&self) -> Result<Config, ConfigError> {
        self.load_over(Config::default())
    }

    /// `base` (`audit`: the defaults for the cluster's own release), then `--config`, then the
    /// flags.
    pub(crate) fn load_over(&self, base: Config) -> Result<Config, ConfigError> {
        let mut config = match &self.config {
            Some(path) => config_from_file(path, base)?,
            None => base,
        };
        for (policy, level) in &self.policies {
            config.policies.set(*policy, *level);
        }
        if !self.recovery_annotation_keys.is_empty() {
            config.recovery_annotation_keys = self.recovery_annotation_keys.clone();
        } else if !self.deprecated_recovery_annotation_keys.is_empty() {
            tracing::warn!(
                "--recovery-annotation-key (JOBGATE_RECOVERY_ANNOTATION_KEY) is deprecated: use \
                 --inject-recovery-annotation-key (JOBGATE_INJECT_RECOVERY_ANNOTATION_KEY)"
            );
            config.recovery_annotation_keys = self.deprecated_recovery_annotation_keys.clone();
        }
        let flag_version = self.kubernetes_version()?;
        if flag_version.is_some() || self.feature_gates.is_some() {
            // A version on the command line starts from that release's defaults; gates on the
            // command line replace the file's.
            if flag_version.is_some() {
                config.release_source = ReleaseSource::Setting;
            }
            let version = flag_version.unwrap_or_else(|| config.cluster.release());
            let gates = match &self.feature_gates {
                Some(gates) => gates.clone(),
                None => config.cluster.overrides().clone(),
            };
            config.cluster = Cluster::with_gates(version, &gates).map_err(ConfigError::Cluster)?;
        }
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        rules: RuleArgs,
    }

    #[test]
    fn flags_override_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("jobgate.yaml");
        std::fs::write(
            &file,
            "policies:\n  recovery-needs-failed: off\n  recovery-annotation-on-job: off\n",
        )
        .unwrap();
        let cli = Cli::try_parse_from([
            "x",
            "--config",
            file.to_str().unwrap(),
            "--policy",
            "recovery-needs-failed=deny",
            "--inject-recovery-annotation-key",
            "a/b,c/d",
        ])
        .unwrap();
        let c = cli.rules.load().unwrap();
        assert_eq!(
            c.policies.level(PolicyName::RecoveryNeedsFailed),
            Level::Deny
        );
        assert_eq!(
            c.policies.level(PolicyName::RecoveryAnnotationOnJob),
            Level::Off
        );
        assert_eq!(c.recovery_annotation_keys, vec!["a/b", "c/d"]);
    }

    /// The old name still works (hidden from --help); the new one wins when both are given.
    #[test]
    fn the_deprecated_flag_name_still_sets_the_keys_injected() {
        let old = Cli::try_parse_from(["x", "--recovery-annotation-key", "a/old"]).unwrap();
        assert_eq!(
            old.rules.load().unwrap().recovery_annotation_keys,
            vec!["a/old"]
        );
        let both = Cli::try_parse_from([
            "x",
            "--recovery-annotation-key",
            "a/old",
            "--inject-recovery-annotation-key",
            "a/new",
        ])
        .unwrap();
        assert_eq!(
            both.rules.load().unwrap().recovery_annotation_keys,
            vec!["a/new"]
        );
    }

    #[test]
    fn bad_policy_flags_are_rejected_by_clap() {
        assert!(Cli::try_parse_from(["x", "--policy", "nope=warn"]).is_err());
        assert!(Cli::try_parse_from(["x", "--policy", "recovery-needs-failed"]).is_err());
        assert!(Cli::try_parse_from(["x", "--policy", "recovery-needs-failed=loud"]).is_err());
    }

    /// A bad version names where it came from: the flag, or the environment variable that
    /// `serve` in a Deployment is usually given.
    #[test]
    fn a_bad_kubernetes_version_names_its_source() {
        let mut cli = Cli::try_parse_from(["x", "--kubernetes-version", "1.x"]).unwrap();
        let e = cli.rules.load().unwrap_err().to_string();
        assert!(
            e.starts_with("--kubernetes-version: unsupported Kubernetes version \"1.x\""),
            "{e}"
        );
        cli.rules.kubernetes_version_from_env = true;
        let e = cli.rules.load().unwrap_err().to_string();
        assert!(
            e.starts_with("JOBGATE_KUBERNETES_VERSION: unsupported Kubernetes version \"1.x\""),
            "{e}"
        );
        // The sources as clap records them.
        let matches = <Cli as clap::CommandFactory>::command()
            .try_get_matches_from(["x", "--kubernetes-version", "1.32"])
            .unwrap();
        cli.rules.note_value_sources(&matches);
        assert!(!cli.rules.kubernetes_version_from_env);
    }

    /// A release newer than jobgate knows is taken, kept as the cluster's, and judged with the
    /// newest known rules.
    #[test]
    fn a_newer_release_is_accepted() {
        let cli = Cli::try_parse_from(["x", "--kubernetes-version", "v1.39.1"]).unwrap();
        let config = cli.rules.load().unwrap();
        assert_eq!(config.cluster.release().to_string(), "1.39");
        assert_eq!(config.cluster.version(), KubernetesVersion::NEWEST);
    }

    #[test]
    fn a_missing_config_file_says_which() {
        let e = config_from_file(Path::new("/nonexistent/jobgate.yaml"), Config::default())
            .unwrap_err();
        assert!(
            e.to_string()
                .starts_with("cannot read config file /nonexistent/jobgate.yaml")
        );
    }
}
