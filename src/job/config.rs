//! The rule settings as a YAML document (`--config`), applied on top of a `Config`. Pure: the
//! file is read, and flags are applied, by `crate::rule_flags`.
//!
//! ```yaml
//! kubernetesVersion: "1.36"          # the cluster's minor release (default: the cluster's own)
//! featureGates:                      # the cluster's overrides of Job-related gates
//!   MutablePodResourcesForSuspendedJobs: false
//! recoveryAnnotationKeys:            # what /mutate sets; replaces the default list
//!   - kueue.x-k8s.io/safe-to-forcefully-delete
//! policies:                          # each off | warn | deny; omitted ones keep their default
//!   recovery-annotation-value: deny
//!   indexed-terminating-or-failed: warn
//! ```

use std::collections::BTreeMap;

use serde::Deserialize;

use super::levels::Policies;
use super::levels::{Level, PolicyName};
use super::version;
use super::version::{Cluster, KubernetesVersion, parse_gate_name};
use crate::kueue::RECOVERY_ANNOTATION_KEYS;

/// The key the mutating webhook sets by default: the one KEP-6757 names. The reconciler reads
/// both keys, so the pods are recovered whichever Kueue version runs beside it.
pub(crate) const DEFAULT_INJECTED_RECOVERY_ANNOTATION_KEYS: [&str; 1] =
    [crate::kueue::SAFE_TO_FORCEFULLY_TERMINATE];

/// Settings of the rules, shared by `serve` and `check`.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Pod-template annotation keys the mutating webhook sets to `"true"` for an opted-in Job
    /// (`--inject-recovery-annotation-key`; default: Kueue's `safe-to-forcefully-terminate`).
    pub(crate) recovery_annotation_keys: Vec<String>,
    /// The level of each jobgate policy (`--policy NAME=off|warn|deny`, `policies:` in `--config`).
    pub(crate) policies: Policies,
    /// The Kubernetes release and feature gates whose kube-apiserver rules `/validate` and
    /// `check` mirror (`--kubernetes-version`, `--feature-gates`; default the newest released).
    pub(crate) cluster: version::Cluster,
    /// Where `cluster`'s release came from.
    pub(crate) release_source: ReleaseSource,
}

/// Where the release a command judges by came from: what `serve`'s metrics and the commands'
/// notes name, and whether `serve` may replace it with what the cluster reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum ReleaseSource {
    /// Neither given nor found out: the newest released minor.
    #[default]
    Default,
    /// `--kubernetes-version`, `JOBGATE_KUBERNETES_VERSION` or `kubernetesVersion:` in
    /// `--config`: an override, never replaced by what the cluster reports.
    Setting,
    /// The cluster's own `/version`.
    Cluster,
}

impl ReleaseSource {
    /// `default`, `setting` or `cluster`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ReleaseSource::Default => "default",
            ReleaseSource::Setting => "setting",
            ReleaseSource::Cluster => "cluster",
        }
    }
}

impl Config {
    /// The default settings for a cluster of `release` with its default feature gates.
    pub fn for_release(release: KubernetesVersion) -> Config {
        Config {
            cluster: Cluster::new(release),
            ..Config::default()
        }
    }

    /// What `serve`, `check` and `audit` say once about the release they judge by: newer than
    /// jobgate knows (judged with the newest known rules), or known only from a pre-release
    /// tag; `None` otherwise.
    pub(crate) fn release_note(&self) -> Option<String> {
        let release = self.cluster.release();
        release
            .newer_release_note()
            .or_else(|| release.pre_release_note())
    }

    /// The keys `/mutate` sets: the configured ones, once each, in order.
    pub(crate) fn injected_recovery_keys(&self) -> Vec<&str> {
        distinct_keys(self.recovery_annotation_keys.iter().map(String::as_str))
    }

    /// The keys whose pod-template values mean something: the configured ones, then both of
    /// Kueue's, once each, in that order.
    pub(crate) fn recognized_recovery_keys(&self) -> Vec<&str> {
        let configured = self.recovery_annotation_keys.iter().map(String::as_str);
        distinct_keys(configured.chain(RECOVERY_ANNOTATION_KEYS))
    }
}

/// Each key once, in order; an empty key is no annotation.
fn distinct_keys<'a>(keys: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for key in keys {
        if !key.is_empty() && !out.contains(&key) {
            out.push(key);
        }
    }
    out
}

impl Default for Config {
    fn default() -> Self {
        Config {
            recovery_annotation_keys: DEFAULT_INJECTED_RECOVERY_ANNOTATION_KEYS
                .iter()
                .map(|k| k.to_string())
                .collect(),
            policies: Policies::default(),
            cluster: version::Cluster::default(),
            release_source: ReleaseSource::Default,
        }
    }
}

/// Why a config document was refused.
#[derive(Debug, thiserror::Error)]
pub enum ConfigDocumentError {
    /// Not YAML, or not the shape above (unknown keys included).
    #[error("{0}")]
    Yaml(String),
    /// A `policies` key that is not a policy's name; holds the key.
    #[error("unknown policy {0:?}: expected one of {names}", names = policy_names())]
    UnknownPolicy(String),
    /// A version or feature gate the release does not have.
    #[error("{0}")]
    Cluster(String),
}

fn policy_names() -> String {
    PolicyName::ALL.map(PolicyName::as_str).join(", ")
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ConfigFile {
    #[serde(default)]
    recovery_annotation_keys: Option<Vec<String>>,
    #[serde(default)]
    policies: BTreeMap<String, Level>,
    #[serde(default)]
    kubernetes_version: Option<String>,
    #[serde(default)]
    feature_gates: BTreeMap<String, bool>,
}

impl Config {
    /// Applies a YAML config document on top of `self`.
    pub(crate) fn merge_yaml(&mut self, yaml: &str) -> Result<(), ConfigDocumentError> {
        let file: ConfigFile = if yaml.trim().is_empty() {
            ConfigFile {
                recovery_annotation_keys: None,
                policies: BTreeMap::new(),
                kubernetes_version: None,
                feature_gates: BTreeMap::new(),
            }
        } else {
            serde_yaml_ng::from_str(yaml).map_err(|e| ConfigDocumentError::Yaml(e.to_string()))?
        };
        if let Some(keys) = file.recovery_annotation_keys {
            self.recovery_annotation_keys = keys;
        }
        for (name, level) in file.policies {
            let policy = PolicyName::parse(&name)
                .ok_or_else(|| ConfigDocumentError::UnknownPolicy(name.clone()))?;
            self.policies.set(policy, level);
        }
        if file.kubernetes_version.is_some() || !file.feature_gates.is_empty() {
            let version = match &file.kubernetes_version {
                Some(v) => {
                    self.release_source = ReleaseSource::Setting;
                    KubernetesVersion::parse(v).map_err(ConfigDocumentError::Cluster)?
                }
                None => self.cluster.release(),
            };
            let mut gates = BTreeMap::new();
            for (name, value) in file.feature_gates {
                let gate = parse_gate_name(&name).map_err(ConfigDocumentError::Cluster)?;
                gates.insert(gate, value);
            }
            self.cluster =
                Cluster::with_gates(version, &gates).map_err(ConfigDocumentError::Cluster)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_sets_policies_and_keys_and_keeps_other_defaults() {
        let mut c = Config::default();
        c.merge_yaml("recoveryAnnotationKeys: [example.com/recover]\npolicies:\n  indexed-terminating-or-failed: deny\n")
            .unwrap();
        assert_eq!(c.recovery_annotation_keys, vec!["example.com/recover"]);
        assert_eq!(
            c.policies.level(PolicyName::IndexedTerminatingOrFailed),
            Level::Deny
        );
        assert_eq!(
            c.policies.level(PolicyName::RecoveryAnnotationValue),
            Level::Deny
        );
    }

    #[test]
    fn yaml_typos_are_errors() {
        let mut c = Config::default();
        let e = c
            .merge_yaml("policies:\n  recovery-needs-faild: warn\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("unknown policy \"recovery-needs-faild\""),
            "{e}"
        );
        let e = c.merge_yaml("polices: {}\n").unwrap_err().to_string();
        assert!(e.contains("unknown field `polices`"), "{e}");
        let e = c
            .merge_yaml("policies:\n  recovery-needs-failed: loud\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown variant `loud`"), "{e}");
    }
}
