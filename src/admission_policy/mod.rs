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
pub mod command;
mod header;
mod install;
mod mutating;
mod object;
mod validating;
mod yaml;

use crate::job::Config;
use crate::job::version::KubernetesVersion;
use api::MutatingApi;
use install::Install;
use object::Object;

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
