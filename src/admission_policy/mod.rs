//! `jobgate render`: jobgate's admission as objects kube-apiserver runs itself, two
//! MutatingAdmissionPolicies (`/mutate` and `/mutate/recovery`) and one ValidatingAdmissionPolicy
//! per jobgate policy at `warn` or `deny` (`/validate`'s policies), with their bindings. No TLS,
//! no webhook pods, no network hop; the reconciler is still what recovers pods.
//!
//! Pure: a `Config` (the settings `serve` reads) and where jobgate is installed (`Install`) in,
//! objects out. On live traffic kube-apiserver has validated a Job before any admission policy
//! sees it, so `/validate`'s copy of the apiserver's rules has nothing to add here: only
//! jobgate's own policies are rendered.
//!
//! The CEL is written for the objects kube-apiserver hands to admission: decoded into Go types,
//! so an explicit `null` is unset and an empty map is none (`omitempty`). Tests evaluate it with
//! the `cel` crate against `/mutate` and `/validate` on every fixture and on generated Jobs and
//! CronJobs (`tests::differential`); whether kube-apiserver itself accepts, compiles and runs
//! them the same is for a real kube-apiserver to say.

mod api;
mod cel;
mod command;
mod header;
mod mutating;
mod validating;
mod yaml;

pub use command::{RenderArgs, run, run_on_cluster};

use serde_json::{Value, json};

use crate::job::Config;
use crate::job::version::KubernetesVersion;
pub(crate) use api::MutatingApi;

/// A Kubernetes object, as JSON.
pub(crate) type Object = Value;

/// The ValidatingAdmissionPolicies' `failurePolicy`: what a policy that cannot be evaluated
/// does to the request. The MutatingAdmissionPolicies are always `Ignore`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub(crate) enum FailurePolicy {
    /// refuse the request, as the validating webhook's default `Fail`
    #[default]
    #[value(name = "Fail")]
    Fail,
    /// admit the request
    #[value(name = "Ignore")]
    Ignore,
}

impl FailurePolicy {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            FailurePolicy::Fail => "Fail",
            FailurePolicy::Ignore => "Ignore",
        }
    }
}

/// Where and under which name jobgate is installed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Install {
    /// Every object's name starts with it: `<name>-mutate`, `<name>-mutate-recovery`,
    /// `<name>-<policy>`.
    pub(crate) name: String,
    /// jobgate's own namespace: kept out, as the webhook configurations keep it out.
    pub(crate) namespace: String,
    /// Other namespaces kept out, besides `kube-system` and `namespace`.
    pub(crate) excluded_namespaces: Vec<String>,
    pub(crate) failure_policy: FailurePolicy,
}

impl Default for Install {
    fn default() -> Self {
        Install {
            name: "jobgate".to_string(),
            namespace: "jobgate-system".to_string(),
            excluded_namespaces: Vec::new(),
            failure_policy: FailurePolicy::Fail,
        }
    }
}

impl Install {
    pub(crate) fn object_name(&self, suffix: &str) -> String {
        format!("{}-{suffix}", self.name)
    }

    /// Never `kube-system`, jobgate's own namespace or the other excluded ones, as every
    /// webhook's `namespaceSelector` (deploy/base, the chart's `jobgate.excludedNamespaces`).
    pub(crate) fn namespace_selector(&self) -> Value {
        let mut values = vec!["kube-system".to_string(), self.namespace.clone()];
        values.extend(self.excluded_namespaces.iter().cloned());
        json!({"matchExpressions": [{
            "key": "kubernetes.io/metadata.name",
            "operator": "NotIn",
            "values": values,
        }]})
    }
}

/// `metadata` with `name` and the labels of every jobgate object.
pub(crate) fn named_metadata(name: &str) -> Value {
    json!({
        "name": name,
        "labels": {
            "app.kubernetes.io/name": "jobgate",
            "app.kubernetes.io/part-of": "jobgate",
            "app.kubernetes.io/component": "admission-policy",
        },
    })
}

/// `resourceRules` for batch/v1 resources, each with its operations.
pub(crate) fn resource_rules(rules: &[(&str, &[&str])]) -> Value {
    rules
        .iter()
        .map(|(resource, operations)| {
            json!({
                "apiGroups": ["batch"],
                "apiVersions": ["v1"],
                "operations": operations,
                "resources": [resource],
                "scope": "Namespaced",
            })
        })
        .collect()
}

/// Why nothing was rendered.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RenderError {
    /// A release without a beta or GA MutatingAdmissionPolicy.
    #[error(
        "Kubernetes {0} serves MutatingAdmissionPolicy only as admissionregistration.k8s.io/v1alpha1 \
         (alpha, removed in 1.38), which jobgate does not render: use the webhook (deploy/overlays, \
         the Helm chart), or render for 1.34 or later (v1beta1 in 1.34 and 1.35, v1 from 1.36)"
    )]
    NoMutatingAdmissionPolicy(KubernetesVersion),
}

/// What `jobgate render` prints.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Rendered {
    /// The header comment, without `# ` prefixes.
    pub(crate) header: Vec<String>,
    pub(crate) api: MutatingApi,
    /// The MutatingAdmissionPolicies and their bindings, then each ValidatingAdmissionPolicy and
    /// its binding.
    pub(crate) objects: Vec<Object>,
}

/// The policies and bindings for `config`'s release and settings, installed as `install`.
pub(crate) fn render(config: &Config, install: &Install) -> Result<Rendered, RenderError> {
    let release = config.cluster.version();
    let api =
        MutatingApi::for_release(release).ok_or(RenderError::NoMutatingAdmissionPolicy(release))?;
    let mut objects: Vec<Object> = mutating::objects(config, install, api.api_version());
    objects.extend(validating::objects(config, install));
    Ok(Rendered {
        header: header::lines(config, install, api),
        api,
        objects,
    })
}

impl Rendered {
    /// A multi-document YAML stream: the header comment, then the objects, `kubectl
    /// apply -f`-ready.
    pub(crate) fn to_yaml(&self) -> String {
        let mut out = String::new();
        for line in &self.header {
            if line.is_empty() {
                out.push_str("#\n");
            } else {
                out.push_str("# ");
                out.push_str(line);
                out.push('\n');
            }
        }
        for object in &self.objects {
            out.push_str("---\n");
            out.push_str(&yaml::document(object));
        }
        out
    }
}

#[cfg(test)]
mod tests;
