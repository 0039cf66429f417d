//! The comment at the top of `jobgate render`'s output: what was rendered for which release and
//! settings, what the kube-apiserver needs, and what the policies cannot do that the webhook does.

use super::api::MutatingApi;
use super::install::Install;
use crate::job::Config;
use crate::job::levels::PolicyName;
use crate::job::mutate::FAILURE_RECOVERY;
use crate::job::mutate::FAILURE_RECOVERY_ENABLED;
use crate::job::version::KubernetesVersion;

/// The header's lines (without the `# ` the YAML writes before each).
pub(crate) fn lines(config: &Config, install: &Install, api: MutatingApi) -> Vec<String> {
    let release = config.cluster.version();
    let mut out = rendered(release, api);
    out.extend(settings(config, install));
    out.extend(apiserver_flags(release, api));
    out.push(String::new());
    out.extend(LIMITS.map(str::to_string));
    out
}

/// What was rendered, for which release.
fn rendered(release: KubernetesVersion, api: MutatingApi) -> Vec<String> {
    vec![
        format!(
            "jobgate {}: admission for Kubernetes {release} without the webhook (`jobgate render`).",
            env!("CARGO_PKG_VERSION")
        ),
        format!(
            "Two MutatingAdmissionPolicies ({}) do what /mutate and",
            api.api_version()
        ),
        "/mutate/recovery do (namespaces without and with the opt-in label), each only for a Job it"
            .to_string(),
        "changes; a ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1) for each policy at"
            .to_string(),
        "warn or deny does what /validate's policies do; each with its binding.".to_string(),
    ]
}

/// The settings the policies were rendered with: levels, injected annotations, opt-in,
/// excluded namespaces.
fn settings(config: &Config, install: &Install) -> Vec<String> {
    let injected = config.injected_recovery_keys();
    let mut excluded = vec!["kube-system", install.namespace.as_str()];
    excluded.extend(install.excluded_namespaces.iter().map(String::as_str));
    let mut out = vec!["Policies:".to_string()];
    out.extend(
        PolicyName::ALL
            .iter()
            .map(|p| format!("  {p}={}", config.policies.level(*p))),
    );
    out.push("Pod-template annotations set to \"true\" for an opted-in Job:".to_string());
    if injected.is_empty() {
        out.push("  none".to_string());
    }
    out.extend(injected.iter().map(|k| format!("  {k}")));
    out.push(format!(
        "Opt-in: the Job's (a CronJob's job template's) annotation {FAILURE_RECOVERY}: \"{FAILURE_RECOVERY_ENABLED}\","
    ));
    out.push(format!(
        "or its namespace's label {FAILURE_RECOVERY}={FAILURE_RECOVERY_ENABLED}."
    ));
    out.push(format!("Never in: {}.", excluded.join(", ")));
    out.push(
        "These settings are fixed here: after changing them, render and apply again.".to_string(),
    );
    out
}

/// The kube-apiserver flags a beta MutatingAdmissionPolicy API needs; none for v1.
fn apiserver_flags(release: KubernetesVersion, api: MutatingApi) -> Vec<String> {
    let flags = api.apiserver_flags();
    if flags.is_empty() {
        return Vec::new();
    }
    let mut out = vec![
        String::new(),
        format!(
            "Kubernetes {release}: MutatingAdmissionPolicy is beta and off by default. Every kube-apiserver"
        ),
        "must run with".to_string(),
    ];
    out.extend(flags.iter().map(|flag| format!("  {flag}")));
    out.push(
        "or the MutatingAdmissionPolicy objects are refused (no such kind) and nothing is mutated."
            .to_string(),
    );
    out
}

/// What the policies cannot do that the webhook does.
const LIMITS: [&str; 15] = [
    "What these policies cannot do that jobgate's webhook does:",
    "- Warn about a mutation. /mutate says what it set or left and why (\"set",
    "  spec.podReplacementPolicy=Failed because failure recovery is enabled\", an ignored or",
    "  misspelt opt-in); a MutatingAdmissionPolicy cannot warn: users see the changed object,",
    "  not the reason.",
    "- Word messages exactly. kube-apiserver prefixes each with \"ValidatingAdmissionPolicy",
    "  '<name>' with binding '<name>' denied request: \" or \"Validation failed for",
    "  ValidatingAdmissionPolicy '<name>' with binding '<name>': \"; the rest is the webhook's",
    "  text (values quoted by CEL's strings.quote, Go's %q but for non-printable characters).",
    "- Give every cause of a denial. A denied request names the first failed validation only;",
    "  the webhook lists every finding in one 422. A user who fixes one may be refused again",
    "  for the next.",
    "- Report as jobgate does: no jobgate_* admission metrics or review logs; kube-apiserver's",
    "  apiserver_admission_* metrics count the policies' evaluations instead.",
    "jobgate reconcile (failure recovery), check and audit work as they do with the webhook.",
];
