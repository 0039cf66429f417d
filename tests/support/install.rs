//! The shipped install rendered as a user renders it: `kubectl kustomize` of a copy of deploy/
//! (with `jobgate certs` output where the self-signed overlay reads it), or a user's overlay of
//! it in another namespace; every document checked against its k8s-openapi type.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use jobgate::certs::{self, CertsArgs};
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::CronJob;
use k8s_openapi::api::core::v1::{
    ConfigMap, Namespace, ResourceQuota, Secret, Service, ServiceAccount,
};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use serde_json::Value;

use super::kustomize::render;

/// The namespace deploy/ installs into unless a user's overlay moves it.
pub const NAMESPACE: &str = "jobgate-system";
/// The name of jobgate's Service (and Deployment, ServiceAccount, ...) in deploy/.
pub const SERVICE: &str = "jobgate";
/// The Secret holding the serving certificate.
pub const TLS_SECRET: &str = "jobgate-tls";
/// The namespace label that opts a namespace's Jobs into recovery.
pub const RECOVERY_LABEL: &str = "jobgate.dev/failure-recovery";
/// The label kube-apiserver puts on every namespace, its name.
pub const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// The repository's root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A rendered overlay whose every document was checked against its type.
pub struct Rendered {
    /// What was rendered (the overlay, or the chart with its values) and where, for messages.
    pub name: String,
    /// The namespace jobgate was rendered into.
    pub namespace: String,
    /// The name of jobgate's Service, Deployment, ServiceAccount, webhook configurations...:
    /// `jobgate` for kustomize, the release's full name for the chart.
    pub fullname: String,
    /// The rendered documents.
    pub docs: Vec<Value>,
}

/// The string at `pointer` in `v`, or `""`.
pub fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// Deserializes `doc` into `T` and back; the JSON must survive unchanged.
fn round_trip<T>(overlay: &str, doc: &Value)
where
    T: serde::de::DeserializeOwned + serde::Serialize,
{
    let what = format!(
        "{overlay}: {} {}",
        str_at(doc, "/kind"),
        str_at(doc, "/metadata/name")
    );
    let typed: T = serde_path_to_error::deserialize(doc.clone())
        .unwrap_or_else(|e| panic!("{what} does not deserialize: {e}"));
    let back = serde_json::to_value(&typed).expect("serialize");
    assert_eq!(
        &back, doc,
        "{what}: fields lost in a k8s-openapi round trip (unknown or misplaced fields)"
    );
}

impl Rendered {
    /// `docs`, rendered from `overlay` in the default namespace, checked.
    pub fn new(overlay: &str, docs: Vec<Value>) -> Rendered {
        Rendered::in_namespace(overlay, NAMESPACE, docs)
    }

    /// `docs`, rendered from `overlay` into `namespace`, each checked against its type (a
    /// document of a kind the installs do not ship fails the test).
    pub fn in_namespace(overlay: &str, namespace: &str, docs: Vec<Value>) -> Rendered {
        assert!(!docs.is_empty(), "{overlay} renders nothing");
        for doc in &docs {
            let api_version = str_at(doc, "/apiVersion");
            let kind = str_at(doc, "/kind");
            match (api_version, kind) {
                ("v1", "Namespace") => round_trip::<Namespace>(overlay, doc),
                ("v1", "ServiceAccount") => round_trip::<ServiceAccount>(overlay, doc),
                ("v1", "Service") => round_trip::<Service>(overlay, doc),
                ("v1", "Secret") => round_trip::<Secret>(overlay, doc),
                ("v1", "ResourceQuota") => round_trip::<ResourceQuota>(overlay, doc),
                ("apps/v1", "Deployment") => round_trip::<Deployment>(overlay, doc),
                ("v1", "ConfigMap") => round_trip::<ConfigMap>(overlay, doc),
                // The chart's networkPolicy.enabled.
                ("networking.k8s.io/v1", "NetworkPolicy") => {
                    round_trip::<k8s_openapi::api::networking::v1::NetworkPolicy>(overlay, doc)
                }
                // deploy/audit/cronjob and the chart's audit.enabled.
                ("batch/v1", "CronJob") => round_trip::<CronJob>(overlay, doc),
                // deploy/monitoring: prometheus-operator CRs, checked in tests/monitoring.rs.
                ("monitoring.coreos.com/v1", "PodMonitor" | "PrometheusRule") => {
                    assert!(
                        doc.pointer("/spec").is_some_and(Value::is_object),
                        "{overlay}: {kind} without a spec"
                    );
                }
                ("policy/v1", "PodDisruptionBudget") => {
                    round_trip::<PodDisruptionBudget>(overlay, doc)
                }
                ("rbac.authorization.k8s.io/v1", "ClusterRole") => {
                    round_trip::<ClusterRole>(overlay, doc)
                }
                ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding") => {
                    round_trip::<ClusterRoleBinding>(overlay, doc)
                }
                ("rbac.authorization.k8s.io/v1", "Role") => round_trip::<Role>(overlay, doc),
                ("rbac.authorization.k8s.io/v1", "RoleBinding") => {
                    round_trip::<RoleBinding>(overlay, doc)
                }
                ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration") => {
                    round_trip::<MutatingWebhookConfiguration>(overlay, doc)
                }
                ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration") => {
                    round_trip::<ValidatingWebhookConfiguration>(overlay, doc)
                }
                // cert-manager CRs: no Rust types; checked field by field below.
                ("cert-manager.io/v1", "Issuer" | "Certificate") => {
                    assert!(
                        doc.pointer("/spec").is_some_and(Value::is_object),
                        "{overlay}: {kind} without a spec"
                    );
                }
                other => panic!("{overlay}: unexpected document {other:?}"),
            }
        }
        Rendered {
            name: format!("{overlay} in {namespace}"),
            namespace: namespace.to_string(),
            fullname: SERVICE.to_string(),
            docs,
        }
    }

    /// The same, for an install whose objects are named `fullname` (a Helm release).
    pub fn named(mut self, fullname: &str) -> Rendered {
        self.fullname = fullname.to_string();
        self
    }

    /// `<fullname><suffix>`: the install's name for one of its objects.
    pub fn object(&self, suffix: &str) -> String {
        format!("{}{suffix}", self.fullname)
    }

    /// Every object of type `T`.
    pub fn all<T>(&self) -> Vec<T>
    where
        T: k8s_openapi::Resource + serde::de::DeserializeOwned,
    {
        self.docs
            .iter()
            .filter(|d| str_at(d, "/apiVersion") == T::API_VERSION && str_at(d, "/kind") == T::KIND)
            .map(|d| serde_json::from_value(d.clone()).expect("checked in new()"))
            .collect()
    }

    /// The one object of type `T` named `name`.
    pub fn one<T>(&self, name: &str) -> T
    where
        T: k8s_openapi::Resource
            + k8s_openapi::Metadata<Ty = k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta>
            + serde::de::DeserializeOwned,
    {
        let mut found: Vec<T> = self
            .all::<T>()
            .into_iter()
            .filter(|o| o.metadata().name.as_deref() == Some(name))
            .collect();
        assert_eq!(found.len(), 1, "{}: one {} {name}", self.name, T::KIND);
        found.remove(0)
    }

    /// The pod template's spec of the Deployment `jobgate`.
    pub fn pod_spec(&self) -> k8s_openapi::api::core::v1::PodSpec {
        self.one::<Deployment>(&self.fullname)
            .spec
            .template
            .spec
            .expect("pod spec")
    }

    /// The one ConfigMap kustomize generated from `name` (its name is `name-<content hash>`).
    pub fn generated_config_map(&self, name: &str) -> ConfigMap {
        let prefix = format!("{name}-");
        let mut maps: Vec<ConfigMap> = self
            .all::<ConfigMap>()
            .into_iter()
            .filter(|m| {
                m.metadata
                    .name
                    .as_deref()
                    .is_some_and(|n| n.starts_with(&prefix))
            })
            .collect();
        assert_eq!(
            maps.len(),
            1,
            "{}: one generated {name} ConfigMap",
            self.name
        );
        maps.remove(0)
    }

    /// The cert-manager object of `kind` named `name`.
    pub fn cert_manager(&self, kind: &str, name: &str) -> &Value {
        let found: Vec<&Value> = self
            .docs
            .iter()
            .filter(|d| {
                str_at(d, "/apiVersion") == "cert-manager.io/v1"
                    && str_at(d, "/kind") == kind
                    && str_at(d, "/metadata/name") == name
            })
            .collect();
        assert_eq!(found.len(), 1, "{}: one {kind} {name}", self.name);
        found[0]
    }
}

/// A copy of `deploy/` in a temporary directory, with `jobgate certs` output for `namespace`
/// where the self-signed overlay reads it (kustomize reads files only from under the overlay).
pub struct Workspace {
    /// The directory holding `deploy/` and the users' overlays.
    pub dir: tempfile::TempDir,
    /// The namespace its users' overlays move the install to.
    pub namespace: String,
}

impl Workspace {
    /// A copy of deploy/ for the default namespace.
    // Files written to a temporary directory are no `Default` value.
    #[allow(clippy::new_without_default)]
    pub fn new() -> Workspace {
        Workspace::in_namespace(NAMESPACE)
    }

    /// A copy of deploy/, with `jobgate certs` output for the Service in `namespace`.
    pub fn in_namespace(namespace: &str) -> Workspace {
        let dir = tempfile::tempdir().expect("tempdir");
        copy_dir(&repo().join("deploy"), &dir.path().join("deploy"));
        let args = CertsArgs {
            service: Some(SERVICE.into()),
            namespace: Some(namespace.into()),
            out: dir.path().join("deploy/overlays/self-signed/certs"),
            validity_days: 30,
            keep_previous_ca: false,
            allow_rename: false,
        };
        certs::write(&args, SystemTime::now()).expect("jobgate certs");
        Workspace {
            dir,
            namespace: namespace.to_string(),
        }
    }

    /// The directory to render for `deploy/<name>`: itself in the default namespace, else a
    /// user's overlay of it whose only setting is `namespace:` (what the install docs tell a
    /// platform team to write).
    pub fn overlay(&self, name: &str) -> PathBuf {
        let install = self.dir.path().join("deploy").join(name);
        if self.namespace == NAMESPACE {
            return install;
        }
        let transformers = if needs_namespace_transformer(&[name]) {
            "transformers:\n  - ../../deploy/namespace\n"
        } else {
            ""
        };
        let user = self
            .dir
            .path()
            .join("user-overlays")
            .join(name.replace('/', "-"));
        std::fs::create_dir_all(&user).expect("mkdir user overlay");
        std::fs::write(
            user.join("kustomization.yaml"),
            format!(
                "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n\
                 namespace: {}\nresources:\n  - ../../deploy/{name}\n{transformers}",
                self.namespace
            ),
        )
        .expect("write user overlay");
        user
    }

    /// A user's overlay of `deploy/<name>` in this namespace that also takes `components`
    /// (directories under deploy/components).
    pub fn overlay_with(&self, name: &str, components: &[&str]) -> PathBuf {
        self.overlay_of(&[name], components)
    }

    /// A user's overlay in this namespace built from several directories of deploy/ (e.g. the
    /// install and deploy/audit/cronjob, in one kustomization) and `components`.
    pub fn overlay_of(&self, resources: &[&str], components: &[&str]) -> PathBuf {
        let name = resources
            .iter()
            .chain(components)
            .map(|r| r.replace('/', "-"))
            .collect::<Vec<_>>()
            .join("+");
        let user = self.dir.path().join("user-overlays").join(name);
        std::fs::create_dir_all(&user).expect("mkdir user overlay");
        let list = |prefix: &str, dirs: &[&str]| -> String {
            dirs.iter()
                .map(|d| format!("  - ../../deploy/{prefix}{d}\n"))
                .collect()
        };
        let mut kustomization = format!(
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n\
             namespace: {}\nresources:\n{}",
            self.namespace,
            list("", resources)
        );
        if !components.is_empty() {
            kustomization.push_str("components:\n");
            kustomization.push_str(&list("components/", components));
        }
        if needs_namespace_transformer(resources) {
            kustomization.push_str("transformers:\n  - ../../deploy/namespace\n");
        }
        std::fs::write(user.join("kustomization.yaml"), kustomization).expect("write user overlay");
        user
    }

    /// A file `jobgate certs` wrote for the self-signed overlay.
    pub fn certs_file(&self, name: &str) -> Vec<u8> {
        let certs = self.dir.path().join("deploy/overlays/self-signed/certs");
        std::fs::read(certs.join(name)).expect("certs file")
    }
}

/// Whether a user's overlay of these deploy/ directories takes the deploy/namespace transformer
/// next to `namespace:`, as docs/src/install.md says: with an install (base or an overlay); the
/// monitoring and audit directories name no namespace in a string.
fn needs_namespace_transformer(resources: &[&str]) -> bool {
    resources
        .iter()
        .any(|r| *r == "base" || r.starts_with("overlays/"))
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("dir entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            // A developer's own generated certificates are not part of what is tested.
            if entry.file_name() == "certs" {
                continue;
            }
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// The installs under deploy/: the base and its two certificate overlays.
const OVERLAYS: [&str; 3] = ["base", "overlays/cert-manager", "overlays/self-signed"];

/// Every overlay of [`OVERLAYS`] rendered in the default namespace, each document checked.
pub fn render_all(kubectl: &str) -> (Workspace, Vec<Rendered>) {
    render_all_in(kubectl, NAMESPACE)
}

/// Every overlay of [`OVERLAYS`] rendered in `namespace` by a user's overlay of it, each
/// document checked.
pub fn render_all_in(kubectl: &str, namespace: &str) -> (Workspace, Vec<Rendered>) {
    let ws = Workspace::in_namespace(namespace);
    let rendered = OVERLAYS
        .iter()
        .map(|o| Rendered::in_namespace(o, namespace, render(kubectl, &ws.overlay(o))))
        .collect();
    (ws, rendered)
}

/// Namespaces a platform team might choose instead of the default.
pub const OTHER_NAMESPACES: [&str; 2] = ["platform-jobs", "team-batch-system"];

/// [`assert_no_default_namespace`] when `namespace` is not the default.
pub fn assert_no_default_namespace_unless(r: &Rendered, namespace: &str) {
    if namespace != NAMESPACE {
        assert_no_default_namespace(r);
    }
}

/// What an install must never carry once moved: the default namespace, anywhere.
pub fn assert_no_default_namespace(r: &Rendered) {
    for doc in &r.docs {
        assert!(
            !doc.to_string().contains(NAMESPACE),
            "{}: {} {} still names {NAMESPACE}: {doc}",
            r.name,
            str_at(doc, "/kind"),
            str_at(doc, "/metadata/name")
        );
        let namespace = str_at(doc, "/metadata/namespace");
        assert!(
            namespace.is_empty() || namespace == r.namespace,
            "{}: {} {} in {namespace}",
            r.name,
            str_at(doc, "/kind"),
            str_at(doc, "/metadata/name")
        );
    }
}
