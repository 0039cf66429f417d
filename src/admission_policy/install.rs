//! Where and under which name jobgate is installed, and the failure policy it is installed with:
//! what every rendered policy and binding is named after and keeps out.

use serde_json::{Value, json};

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
