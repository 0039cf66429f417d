//! The webhook-less mode against the real kube-apiserver of each release whose control plane the
//! tests build and that serves MutatingAdmissionPolicy v1 (1.37 and 1.36; 1.34 and 1.35 have
//! only the parity harness). kube-apiserver is the judge of what `jobgate render` prints:
//! - it accepts the objects (every expression compiles) and its type checker
//!   (kube-controller-manager's `validatingadmissionpolicy-status-controller`, checking each
//!   expression against the Job and CronJob schemas) finds nothing to warn about;
//! - the requests the in-process differential test compares (src/admission_policy/tests/corpus.rs,
//!   included here as it is: every fixture and generated Jobs and CronJobs, CREATE and UPDATE,
//!   in namespaces opted into recovery or not, or kept out) give the same stored objects and
//!   verdicts through the policies as through `jobgate serve` behind the shipped webhook
//!   configurations on the same apiserver; warnings and denials differ only as
//!   docs/src/admission-policies.md lists;
//! - with both installed, as in the migration's first step, the objects stored are the same
//!   and the webhook finds nothing left to patch;
//! - a large Job stays within CEL's cost limits;
//! - a MutatingAdmissionPolicy that applies changes a Job's labels even with an empty patch,
//!   which is why render's apply only to a request they patch;
//! - the `Object{}` initializer inside a list that render never writes does panic 1.36.3
//!   (kubernetes#142181), even under `failurePolicy: Ignore`: the request goes unanswered;
//! - 1.33 serves MutatingAdmissionPolicy only as v1alpha1 behind a feature gate, as render's
//!   refusal says.
//!
//! Each of 1.37 and 1.36 has one control plane for the binary, with the type checker as its only
//! controller: no Job controller, so an object the test creates stays as it was created. 1.33's
//! two (without and with the gate) have no controller and live for their test only.

/// The parts of `tests/support/` this binary uses.
pub mod support {
    pub mod controlplane;
    pub mod kustomize;
    pub mod prometheus;
    pub mod render;
    pub mod review;
    pub mod serve;
    pub mod shipped_webhooks;
    pub mod webhooks;
}

#[path = "../src/job/mutate/strategies.rs"]
mod strategies;

#[path = "../src/admission_policy/tests/corpus.rs"]
mod corpus;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use serde_json::{Value, json};

use corpus::{Admission, RECOVERY_LABEL};
use support::controlplane::ControlPlane;
use support::serve::Jobgate;

/// kube-controller-manager's ValidatingAdmissionPolicy type checker (cmd/kube-controller-manager
/// `names.ValidatingAdmissionPolicyStatusController`).
const TYPE_CHECKER: &str = "validatingadmissionpolicy-status-controller";

/// The minors whose control planes the tests build (tests/run) that serve MutatingAdmissionPolicy v1.
const MINORS: [&str; 2] = ["1.37", "1.36"];

fn control_plane(minor: &str) -> &'static ControlPlane {
    static PLANES: [OnceLock<ControlPlane>; MINORS.len()] = [OnceLock::new(), OnceLock::new()];
    let i = MINORS
        .iter()
        .position(|m| *m == minor)
        .expect("a minor with MutatingAdmissionPolicy v1");
    PLANES[i].get_or_init(|| ControlPlane::start(minor, &["--controllers", TYPE_CHECKER]))
}

/// A name no other test of the binary uses.
fn unique(prefix: &str) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    format!("{prefix}{}", NEXT.fetch_add(1, Ordering::SeqCst))
}

const POLICIES: [&str; 5] = [
    "recovery-annotation-value",
    "recovery-annotation-on-job",
    "recovery-needs-failed",
    "recovery-counts-toward-backoff",
    "indexed-terminating-or-failed",
];

/// `serve` and `render` settings: every policy at `level`, and the recovery keys `/mutate` sets.
fn every_policy_at(level: &str, keys: &[&str]) -> Vec<String> {
    let levels: Vec<String> = POLICIES.iter().map(|p| format!("{p}={level}")).collect();
    let mut args = vec!["--policy".to_string(), levels.join(",")];
    if !keys.is_empty() {
        args.push("--inject-recovery-annotation-key".to_string());
        args.push(keys.join(","));
    }
    args
}

// ---------------------------------------------------------------------------------------------
// Installing the policies.

/// `jobgate render --kubernetes-version MINOR --name NAME settings...`, each policy limited to
/// `namespaces` (one more `namespaceSelector` expression, so that tests running at once never
/// meet each other's policies; render's own exclusions still apply).
fn rendered_for(minor: &str, name: &str, settings: &[String], namespaces: &[&str]) -> Vec<Value> {
    let mut args = vec!["--kubernetes-version", minor, "--name", name];
    args.extend(settings.iter().map(String::as_str));
    let mut objects = support::render::rendered(&args);
    for object in &mut objects {
        if let Some(selector) = object.pointer_mut("/spec/matchConstraints/namespaceSelector") {
            selector["matchExpressions"]
                .as_array_mut()
                .expect("render's matchExpressions")
                .push(in_namespaces(namespaces));
        }
    }
    objects
}

fn in_namespaces(namespaces: &[&str]) -> Value {
    json!({"key": "kubernetes.io/metadata.name", "operator": "In", "values": namespaces})
}

fn apply(cp: &ControlPlane, objects: &[Value]) -> String {
    let list = json!({"apiVersion": "v1", "kind": "List", "items": objects});
    cp.kubectl_ok(&["apply", "-f", "-"], Some(&list.to_string()))
}

/// The label of a probe: an object sent to learn whether kube-apiserver runs the policies yet.
const PROBE: &str = "jobgate.test/probe";

/// Sentinels, applied after a set of policies: a MutatingAdmissionPolicy that annotates a probe
/// with its name and a ValidatingAdmissionPolicy that warns about it. Once kube-apiserver runs
/// both it has every policy and binding created before them (an informer sees one resource's
/// objects in the order they were written, and kube-apiserver computes its policies from them at
/// once).
fn sentinels(name: &str, api_version: &str, namespaces: &[&str]) -> Vec<Value> {
    let constraints = json!({
        "namespaceSelector": {"matchExpressions": [in_namespaces(namespaces)]},
        "resourceRules": [{"apiGroups": ["batch"], "apiVersions": ["v1"],
            "operations": ["CREATE"], "resources": ["jobs", "cronjobs"]}],
    });
    let probed = format!("'{PROBE}' in object.metadata.?labels.orValue({{}})");
    vec![
        json!({
            "apiVersion": api_version,
            "kind": "MutatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {
                "failurePolicy": "Fail",
                "reinvocationPolicy": "Never",
                "matchConstraints": constraints,
                "matchConditions": [{"name": "probe", "expression": probed}],
                "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": format!(
                    "[JSONPatch{{op: 'add', path: '/metadata/annotations', value: {{'{PROBE}': '{name}'}}}}]"
                )}}],
            },
        }),
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": constraints,
                "validations": [{"expression": format!("!({probed})"), "message": "probe"}],
            },
        }),
        json!({
            "apiVersion": api_version,
            "kind": "MutatingAdmissionPolicyBinding",
            "metadata": {"name": name},
            "spec": {"policyName": name},
        }),
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name},
            "spec": {"policyName": name, "validationActions": ["Warn"]},
        }),
    ]
}

/// A Job with one container, labelled as a probe.
fn probe() -> Value {
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "probe", "labels": {PROBE: "true"}},
        "spec": {"template": {"spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "main", "image": "registry.example/trainer:1"}],
        }}},
    })
}

/// Renders and applies the policies for `settings` as `name`, limited to `namespaces`, and
/// waits until kube-apiserver runs all of them.
async fn install_policies(
    cp: &ControlPlane,
    client: &kube::Client,
    name: &str,
    settings: &[String],
    namespaces: &[&str],
) -> Vec<Value> {
    let objects = rendered_for(&cp.minor, name, settings, namespaces);
    apply_and_wait(cp, client, name, &objects, namespaces).await;
    objects
}

/// Applies `objects` (admission policies whose first names their MutatingAdmissionPolicy
/// version) and the sentinels `<name>-sentinel` for `namespaces`, and waits until
/// kube-apiserver runs the sentinels, and so `objects`.
async fn apply_and_wait(
    cp: &ControlPlane,
    client: &kube::Client,
    name: &str,
    objects: &[Value],
    namespaces: &[&str],
) {
    apply(cp, objects);
    let sentinel = format!("{name}-sentinel");
    let api_version = objects[0]["apiVersion"].as_str().expect("apiVersion");
    apply(cp, &sentinels(&sentinel, api_version, namespaces));
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let out = send(
            client,
            Verb::Create { dry_run: true },
            namespaces[0],
            "Job",
            &probe(),
        )
        .await;
        let mutated = out.body["metadata"]["annotations"][PROBE] == sentinel.as_str();
        let warned = out
            .warnings
            .iter()
            .any(|w| w.contains(&format!("'{sentinel}'")));
        if mutated && warned {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "kube-apiserver did not run the policies {name} within a minute: {out:#?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

// ---------------------------------------------------------------------------------------------
// Requests, as kube-rs sends them: one HTTP request each on kept-alive connections.

#[derive(Debug, Clone, Copy)]
enum Verb {
    Create {
        dry_run: bool,
    },
    /// A dry-run update of the object its body names.
    Replace,
}

/// What kube-apiserver answered.
#[derive(Debug, Clone)]
struct Outcome {
    code: u16,
    /// The stored object (2xx) or the Status.
    body: Value,
    /// The `Warning` headers' texts, in order.
    warnings: Vec<String>,
}

impl Outcome {
    fn allowed(&self) -> bool {
        (200..300).contains(&self.code)
    }
}

fn resource(kind: &str) -> &'static str {
    if kind == "CronJob" {
        "cronjobs"
    } else {
        "jobs"
    }
}

async fn send(
    client: &kube::Client,
    verb: Verb,
    namespace: &str,
    kind: &str,
    object: &Value,
) -> Outcome {
    try_send(client, verb, namespace, kind, object)
        .await
        .unwrap_or_else(|e| panic!("{kind} {verb:?} in {namespace}: {e}\n{object:#}"))
}

/// [`send`], or the error when kube-apiserver gave no answer.
async fn try_send(
    client: &kube::Client,
    verb: Verb,
    namespace: &str,
    kind: &str,
    object: &Value,
) -> Result<Outcome, kube::Error> {
    let url = format!("/apis/batch/v1/namespaces/{namespace}/{}", resource(kind));
    let request = kube::core::Request::new(url);
    let data = serde_json::to_vec(object).expect("JSON");
    let pp = |dry_run| kube::api::PostParams {
        dry_run,
        field_manager: Some("jobgate-test".to_string()),
    };
    let http = match verb {
        Verb::Create { dry_run } => request.create(&pp(dry_run), data),
        Verb::Replace => request.replace(
            object["metadata"]["name"].as_str().expect("a name"),
            &pp(true),
            data,
        ),
    }
    .expect("a request");
    let response = client.send(http.map(kube::client::Body::from)).await?;
    let code = response.status().as_u16();
    let warnings = response
        .headers()
        .get_all("warning")
        .iter()
        .map(|h| warning_text(&String::from_utf8_lossy(h.as_bytes())))
        .collect();
    let bytes = http_body_util::BodyExt::collect(response.into_body())
        .await
        .expect("a response body")
        .to_bytes();
    let body = serde_json::from_slice(&bytes)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&bytes)));
    Ok(Outcome {
        code,
        body,
        warnings,
    })
}

/// The text of a `Warning: 299 - "text"` header (k8s.io/apimachinery `NewWarningHeader`:
/// `"` and `\` escaped with `\`).
fn warning_text(header: &str) -> String {
    let quoted = header
        .strip_prefix("299 - \"")
        .and_then(|r| r.strip_suffix('"'))
        .unwrap_or_else(|| panic!("not a kube-apiserver warning: {header}"));
    let mut out = String::new();
    let mut chars = quoted.chars();
    while let Some(c) = chars.next() {
        out.push(if c == '\\' {
            chars.next().unwrap_or(c)
        } else {
            c
        });
    }
    out
}

// ---------------------------------------------------------------------------------------------
// A mode: the namespaces requests are sent to, and what is installed for them.

/// Where a corpus request goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Place {
    /// A namespace without the recovery label.
    Plain,
    /// `jobgate.dev/failure-recovery=enabled`.
    OptedIn,
    /// `jobgate.dev/failure-recovery=disabled`.
    OptedOut,
    /// A namespace jobgate never admits in (`kube-system`, `jobgate-system`, as named).
    KeptOut(&'static str),
}

impl Place {
    fn of(admission: &Admission) -> Place {
        match admission.namespace.as_str() {
            "kube-system" => Place::KeptOut("kube-system"),
            "jobgate-system" => Place::KeptOut("jobgate-system"),
            _ => match admission
                .namespace_labels
                .get(RECOVERY_LABEL)
                .map(String::as_str)
            {
                None => Place::Plain,
                Some("enabled") => Place::OptedIn,
                Some(_) => Place::OptedOut,
            },
        }
    }
}

/// What admits a mode's requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Via {
    /// `jobgate render`'s policies.
    Policies,
    /// `jobgate serve` behind the shipped webhook configurations.
    Webhook,
    /// Both, as in the first step of the migration from one to the other.
    Both,
}

impl Via {
    fn policies(self) -> bool {
        self != Via::Webhook
    }

    fn webhook(self) -> bool {
        self != Via::Policies
    }

    fn letter(self) -> char {
        match self {
            Via::Policies => 'p',
            Via::Webhook => 'w',
            Via::Both => 'b',
        }
    }
}

/// The namespaces one way of admitting gets requests in.
struct Mode {
    /// Short, unique, in every object's name.
    tag: String,
    via: Via,
    namespaces: BTreeMap<Place, String>,
}

impl Mode {
    /// A mode's three namespaces (created, labelled) and the two kept out.
    fn new(cp: &ControlPlane, tag: &str, via: Via) -> Mode {
        let mut namespaces = BTreeMap::new();
        for (place, label) in [
            (Place::Plain, None),
            (Place::OptedIn, Some("enabled")),
            (Place::OptedOut, Some("disabled")),
        ] {
            let ns = cp.namespace(tag);
            if let Some(value) = label {
                cp.kubectl_ok(
                    &[
                        "label",
                        "namespace",
                        &ns,
                        &format!("{RECOVERY_LABEL}={value}"),
                    ],
                    None,
                );
            }
            namespaces.insert(place, ns);
        }
        let existing = cp.kubectl_output(&["get", "namespace", "jobgate-system"], None);
        if !existing.status.success() {
            let created = cp.kubectl_output(&["create", "namespace", "jobgate-system"], None);
            let said = String::from_utf8_lossy(&created.stderr);
            assert!(
                created.status.success() || said.contains("AlreadyExists"),
                "{said}"
            );
        }
        for ns in ["kube-system", "jobgate-system"] {
            namespaces.insert(Place::KeptOut(ns), ns.to_string());
        }
        Mode {
            tag: tag.to_string(),
            via,
            namespaces,
        }
    }

    /// Every namespace, the opted-out-of-nothing one first.
    fn all(&self) -> Vec<&str> {
        self.namespaces.values().map(String::as_str).collect()
    }

    fn namespace(&self, place: Place) -> &str {
        &self.namespaces[&place]
    }

    fn name(&self, case: usize) -> String {
        format!("{}-{case:05}", self.tag)
    }
}

/// The labels kube-apiserver gives a Job and its pod template, and selects the pods by, when it
/// generates the selector (k8s.io/kubernetes `pkg/registry/batch/job` `generateSelector`).
const GENERATED_LABELS: [&str; 4] = [
    "controller-uid",
    "batch.kubernetes.io/controller-uid",
    "job-name",
    "batch.kubernetes.io/job-name",
];

/// The object of request `case` as this mode sends it: its own name, no namespace, none of the
/// fields kube-apiserver sets. Some fixtures are Jobs as a cluster stored them: their generated
/// selector and labels name another Job's uid, which a client's manifest never carries.
fn prepared(object: &Value, name: &str) -> Value {
    let mut object = object.clone();
    if !object["metadata"].is_object() {
        object["metadata"] = json!({});
    }
    let meta = object["metadata"].as_object_mut().expect("metadata");
    for field in [
        "generateName",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "managedFields",
        "selfLink",
    ] {
        meta.remove(field);
    }
    meta.insert("name".into(), json!(name));
    let spec = if object["kind"] == "CronJob" {
        object.pointer_mut("/spec/jobTemplate/spec")
    } else {
        object.get_mut("spec")
    };
    if let Some(spec) = spec.and_then(Value::as_object_mut)
        && spec.get("manualSelector") != Some(&json!(true))
    {
        spec.remove("selector");
        if let Some(labels) = spec
            .get_mut("template")
            .and_then(|t| t.pointer_mut("/metadata/labels"))
            .and_then(Value::as_object_mut)
        {
            labels.retain(|k, _| !GENERATED_LABELS.contains(&k.as_str()));
        }
    }
    if object["kind"] == "Job"
        && let Some(labels) = object
            .pointer_mut("/metadata/labels")
            .and_then(Value::as_object_mut)
    {
        labels.retain(|k, _| !GENERATED_LABELS.contains(&k.as_str()));
    }
    object
}

/// The stored object, with what differs between two namespaces and two creations taken out:
/// uid, name and namespace wherever they appear as a value (the selector and template labels
/// carry them), the creation time and resourceVersion, managedFields' times.
fn comparable(object: &Value) -> Value {
    let meta = &object["metadata"];
    let replace: Vec<(String, &str)> = [
        ("uid", "<uid>"),
        ("name", "<name>"),
        ("namespace", "<namespace>"),
    ]
    .into_iter()
    .filter_map(|(field, to)| meta[field].as_str().map(|v| (v.to_string(), to)))
    .collect();
    fn walk(v: &mut Value, replace: &[(String, &str)]) {
        match v {
            Value::String(s) => {
                if let Some((_, to)) = replace.iter().find(|(from, _)| from == s) {
                    *s = to.to_string();
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|i| walk(i, replace)),
            Value::Object(map) => map.values_mut().for_each(|i| walk(i, replace)),
            _ => {}
        }
    }
    let mut out = object.clone();
    if let Some(meta) = out["metadata"].as_object_mut() {
        meta.remove("creationTimestamp");
        meta.remove("resourceVersion");
        if let Some(fields) = meta.get_mut("managedFields").and_then(Value::as_array_mut) {
            for f in fields {
                if let Some(f) = f.as_object_mut() {
                    f.remove("time");
                }
            }
        }
    }
    walk(&mut out, &replace);
    out
}

// ---------------------------------------------------------------------------------------------
// Requests through several modes.

/// A request of the corpus as each mode sends it.
struct Case {
    admission: Admission,
    place: Place,
    /// The old object's edit, as a JSON Patch from the old object to the new one (UPDATE).
    edit: Option<json_patch::Patch>,
}

impl Case {
    fn new(admission: Admission) -> Case {
        let place = Place::of(&admission);
        let edit = admission.old_object.as_ref().map(|old| {
            let old = corpus::apiserver_form(&prepared(old, "x"));
            let new = corpus::apiserver_form(&prepared(&admission.object, "x"));
            json_patch::diff(&old, &new)
        });
        Case {
            admission,
            place,
            edit,
        }
    }

    fn describe(&self) -> String {
        let a = &self.admission;
        format!(
            "{} {} in {:?}\nobject: {}\nold: {}",
            a.operation,
            a.kind,
            self.place,
            a.object,
            a.old_object
                .as_ref()
                .map_or("-".to_string(), Value::to_string)
        )
    }
}

/// Why a case was not sent; alike in every mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Skip {
    /// kube-apiserver refused the UPDATE's old object (nothing was installed for the modes yet).
    OldRefused,
    /// The UPDATE's edit, made on the old object as written, does not apply to it as stored
    /// (with the apiserver's defaults).
    EditDoesNotApply,
}

/// The old object of an UPDATE, created for real before anything is installed for the mode:
/// the stored object the update's edit applies to.
async fn create_old(
    client: &kube::Client,
    mode: &Mode,
    case: &Case,
    index: usize,
) -> Option<Value> {
    let old = case.admission.old_object.as_ref().expect("an UPDATE");
    let out = send(
        client,
        Verb::Create { dry_run: false },
        mode.namespace(case.place),
        case.admission.kind,
        &prepared(old, &mode.name(index)),
    )
    .await;
    out.allowed().then_some(out.body)
}

/// Sends `case` in `mode`, an UPDATE's old object already stored as `old`.
async fn run(
    client: &kube::Client,
    mode: &Mode,
    case: &Case,
    index: usize,
    old: Option<&Value>,
) -> Result<Outcome, Skip> {
    let namespace = mode.namespace(case.place);
    let kind = case.admission.kind;
    let Some(edit) = &case.edit else {
        let object = prepared(&case.admission.object, &mode.name(index));
        return Ok(send(
            client,
            Verb::Create { dry_run: true },
            namespace,
            kind,
            &object,
        )
        .await);
    };
    let mut new = old.expect("an UPDATE's old object").clone();
    new["metadata"]
        .as_object_mut()
        .expect("metadata")
        .remove("managedFields");
    json_patch::patch(&mut new, edit).map_err(|_| Skip::EditDoesNotApply)?;
    Ok(send(client, Verb::Replace, namespace, kind, &new).await)
}

/// The modes of one test, with what admits each installed, and every case through each.
struct Run {
    modes: Vec<Mode>,
    /// Per case, each mode's outcome, in the order of `modes`.
    sent: Vec<Result<Vec<Outcome>, Skip>>,
    elapsed: Duration,
    /// The webhook the modes with one call; it stops when the run is dropped.
    _webhook: Option<Jobgate>,
}

impl Run {
    /// Each case's object names, one per mode.
    fn names(&self, case: usize) -> Vec<String> {
        self.modes.iter().map(|m| m.name(case)).collect()
    }
}

/// Requests in flight at once: kube-apiserver, etcd and `jobgate serve` share the machine's
/// cores with the test.
const CONCURRENCY: usize = 8;

/// `cases` through a mode for each of `vias`, each in namespaces of its own, on `minor`'s
/// control plane, with `settings` for both `render` and `serve`. Every UPDATE's old object is
/// stored first, then the webhooks are installed and then the policies (each waited for), then
/// every case is sent in every mode.
async fn run_modes(minor: &str, settings: &[String], vias: &[Via], cases: &[Case]) -> Run {
    let cp = control_plane(minor);
    let client = cp.client().await;
    let tag = unique(&format!("c{}-", minor.replace('.', "")));
    let modes: Vec<Mode> = vias
        .iter()
        .map(|via| Mode::new(cp, &format!("{tag}{}", via.letter()), *via))
        .collect();
    let started = Instant::now();
    let olds: Vec<Result<Option<Vec<Value>>, Skip>> =
        futures::stream::iter(cases.iter().enumerate())
            .map(|(i, case)| {
                let (client, modes) = (&client, &modes);
                async move {
                    if case.edit.is_none() {
                        return Ok(None);
                    }
                    let stored = futures::future::join_all(
                        modes.iter().map(|m| create_old(client, m, case, i)),
                    )
                    .await;
                    if stored.iter().all(Option::is_some) {
                        Ok(Some(stored.into_iter().flatten().collect()))
                    } else {
                        assert!(
                            stored.iter().all(Option::is_none),
                            "the old object was stored in some modes only\n{}",
                            case.describe()
                        );
                        Err(Skip::OldRefused)
                    }
                }
            })
            .buffered(CONCURRENCY)
            .collect()
            .await;
    let webhook = vias.iter().any(|v| v.webhook()).then(|| {
        let mut args = vec!["--kubernetes-version", minor];
        args.extend(settings.iter().map(String::as_str));
        Jobgate::start(&args)
    });
    for mode in modes.iter().filter(|m| m.via.webhook()) {
        let jg = webhook.as_ref().expect("jobgate serve");
        support::webhooks::install(cp, jg, &mode.tag, &mode.all(), &injected_keys(settings));
    }
    for mode in modes.iter().filter(|m| m.via.policies()) {
        install_policies(cp, &client, &mode.tag, settings, &mode.all()).await;
    }
    let sent = futures::stream::iter(cases.iter().zip(&olds).enumerate())
        .map(|(i, (case, old))| {
            let (client, modes) = (&client, &modes);
            async move {
                let olds = match old {
                    Err(skip) => return Err(*skip),
                    Ok(olds) => olds.as_ref(),
                };
                let sent = futures::future::join_all(
                    modes
                        .iter()
                        .enumerate()
                        .map(|(m, mode)| run(client, mode, case, i, olds.map(|o| &o[m]))),
                )
                .await;
                let skipped = sent.iter().filter(|s| s.is_err()).count();
                assert!(
                    skipped == 0 || skipped == sent.len(),
                    "the edit applies in some modes only\n{}",
                    case.describe()
                );
                sent.into_iter().collect::<Result<Vec<_>, _>>()
            }
        })
        .buffered(CONCURRENCY)
        .collect()
        .await;
    Run {
        modes,
        sent,
        elapsed: started.elapsed(),
        _webhook: webhook,
    }
}

/// The keys `settings` name with `--inject-recovery-annotation-key`.
fn injected_keys(settings: &[String]) -> Vec<&str> {
    settings
        .windows(2)
        .filter(|w| w[0] == "--inject-recovery-annotation-key")
        .flat_map(|w| w[1].split(','))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Comparing the modes.

/// The prefix kube-apiserver puts before a ValidatingAdmissionPolicy's warning
/// (k8s.io/apiserver `admission/plugin/policy/validating/dispatcher.go`).
fn policy_warning(warning: &str) -> Option<&str> {
    let rest = warning.strip_prefix("Validation failed for ValidatingAdmissionPolicy '")?;
    let (policy, rest) = rest.split_once("' with binding '")?;
    let (binding, text) = rest.split_once("': ")?;
    (policy == binding).then_some(text)
}

/// A warning of `/mutate` (`job::mutate`: what it set, left or ignored, and why).
fn mutation_warning(warning: &str) -> bool {
    ["jobgate: set ", "jobgate: left ", "jobgate: ignored "]
        .iter()
        .any(|p| warning.starts_with(p))
}

/// A response's warnings, by who gave them.
#[derive(Debug, Default, PartialEq)]
struct Warnings {
    /// A ValidatingAdmissionPolicy's, without kube-apiserver's prefix, sorted: kube-apiserver
    /// runs the policies in no defined order (a map of them: `generic/policy_source.go`).
    policies: Vec<String>,
    /// The validating webhook's, sorted.
    webhook: Vec<String>,
    /// The mutating webhook's, in order.
    mutation: Vec<String>,
    /// kube-apiserver's own, in order.
    apiserver: Vec<String>,
}

impl Warnings {
    fn of(outcome: &Outcome) -> Warnings {
        let mut out = Warnings::default();
        for warning in &outcome.warnings {
            if let Some(text) = policy_warning(warning) {
                out.policies.push(text.to_string());
            } else if mutation_warning(warning) {
                out.mutation.push(warning.clone());
            } else if warning.starts_with("jobgate: ") {
                out.webhook.push(warning.clone());
            } else {
                out.apiserver.push(warning.clone());
            }
        }
        out.policies.sort();
        out.webhook.sort();
        out
    }
}

/// A denial by a ValidatingAdmissionPolicy: the policy and the message after kube-apiserver's
/// prefix.
fn policy_denial(status: &Value) -> Option<(String, String)> {
    let message = status["message"].as_str()?;
    let (_, rest) = message.split_once("ValidatingAdmissionPolicy '")?;
    let (policy, rest) = rest.split_once("' with binding '")?;
    let (binding, text) = rest.split_once("' denied request: ")?;
    (policy == binding).then(|| (policy.to_string(), text.to_string()))
}

/// A denial by jobgate's validating webhook: its causes, each `<field>: <message>` as
/// kube-apiserver prints a field error.
fn webhook_denial(status: &Value) -> Option<Vec<String>> {
    let message = status["message"].as_str()?;
    if !message.starts_with("admission webhook \"validate.jobgate.dev\" denied the request: ") {
        return None;
    }
    Some(support::review::denial_causes(&json!({ "status": status })))
}

/// The jobgate policy a cause or a policy object's name is of.
fn jobgate_policy(text: &str) -> Option<&'static str> {
    POLICIES
        .iter()
        .find(|p| {
            text.ends_with(&format!("-{p}")) || text.ends_with(&format!("(jobgate policy {p})"))
        })
        .copied()
}

/// `message` with `names` (the modes' object names) and every uid replaced, for comparing
/// kube-apiserver's own messages about objects of different names and uids.
fn without_names(message: &str, names: &[String]) -> String {
    let named = names
        .iter()
        .fold(message.to_string(), |m, n| m.replace(n.as_str(), "<name>"));
    // A uid: 8-4-4-4-12 hexadecimal digits.
    let shape = [8, 4, 4, 4, 12];
    let is_uid = |s: &str| {
        let parts: Vec<&str> = s.split('-').collect();
        parts.len() == 5
            && parts
                .iter()
                .zip(shape)
                .all(|(p, n)| p.len() == n && p.chars().all(|c| c.is_ascii_hexdigit()))
    };
    let mut out = String::new();
    let mut rest = named.as_str();
    while let Some(c) = rest.chars().next() {
        if rest.len() >= 36 && rest.is_char_boundary(36) && is_uid(&rest[..36]) {
            out.push_str("<uid>");
            rest = &rest[36..];
        } else {
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

/// What a comparison saw.
#[derive(Debug, Default)]
struct Tally {
    requests: usize,
    creates: usize,
    updates: usize,
    /// UPDATEs whose old object kube-apiserver refused.
    old_refused: usize,
    /// UPDATEs whose edit does not apply to the old object as stored.
    edit_does_not_apply: usize,
    allowed: usize,
    /// Refused by kube-apiserver's own validation, alike in every mode.
    refused_by_the_apiserver: usize,
    denied_by_a_policy: usize,
    /// Policy denials where the webhook gave more than one cause, kube-apiserver one.
    denials_with_more_causes: usize,
    /// Policy denials where more than one policy denied.
    denials_by_several_policies: usize,
    /// ... and kube-apiserver named another policy than that of the webhook's first cause.
    denials_naming_another_policy: usize,
    /// Requests the webhook says it changed (`jobgate: set ...`): the policy changed them alike
    /// when the stored objects are the same.
    mutated: usize,
    policy_warnings: usize,
    /// The webhook's `/mutate` warnings, which have no counterpart.
    mutation_warnings: usize,
}

impl Tally {
    fn count(&mut self, case: &Case, sent: &Result<Vec<Outcome>, Skip>) -> bool {
        self.requests += 1;
        match sent {
            Err(Skip::OldRefused) => self.old_refused += 1,
            Err(Skip::EditDoesNotApply) => self.edit_does_not_apply += 1,
            Ok(_) if case.edit.is_some() => self.updates += 1,
            Ok(_) => self.creates += 1,
        }
        sent.is_ok()
    }
}

/// How a denial through the policies (`p`) compares with the webhook's (`w`): kube-apiserver
/// names one policy (the first that denied, in no defined order) and that policy's first failed
/// validation, which is the webhook's first cause of that policy behind kube-apiserver's
/// prefix; a refusal by kube-apiserver's own validation is the same.
fn denial_differences(
    p: &Outcome,
    w: &Outcome,
    names: &[String],
    tally: &mut Tally,
) -> Option<String> {
    match (policy_denial(&p.body), webhook_denial(&w.body)) {
        (Some((policy, message)), Some(causes)) => {
            tally.denied_by_a_policy += 1;
            if causes.len() > 1 {
                tally.denials_with_more_causes += 1;
            }
            let mut denying: Vec<_> = causes.iter().filter_map(|c| jobgate_policy(c)).collect();
            denying.dedup();
            if denying.len() > 1 {
                tally.denials_by_several_policies += 1;
            }
            let named = jobgate_policy(&policy);
            let first_of_policy = causes
                .iter()
                .find(|c| named.is_some() && jobgate_policy(c) == named);
            match first_of_policy {
                Some(cause) if *cause == message => {
                    if causes.first() != Some(cause) {
                        tally.denials_naming_another_policy += 1;
                    }
                    None
                }
                _ => Some(format!(
                    "{policy} denied with {message:?}, not its first cause in the webhook's denial {causes:#?}"
                )),
            }
        }
        (None, None) => {
            tally.refused_by_the_apiserver += 1;
            let message =
                |o: &Outcome| without_names(o.body["message"].as_str().unwrap_or(""), names);
            let (pm, wm) = (message(p), message(w));
            (pm != wm).then(|| {
                format!("kube-apiserver's own refusals differ\n  policies: {pm}\n  webhook:  {wm}")
            })
        }
        _ => Some(format!(
            "refused otherwise\n  policies: {}\n  webhook:  {}",
            p.body["message"], w.body["message"]
        )),
    }
}

/// Compares a request's outcome through the policies (`p`) and the webhook (`w`); `None` when
/// they agree as docs/src/admission-policies.md says they do: the same status, the same stored
/// object, each policy warning the webhook's behind kube-apiserver's prefix, the webhook's
/// mutation warnings without counterpart, denials as `denial_differences` says.
fn differences(p: &Outcome, w: &Outcome, names: &[String], tally: &mut Tally) -> Option<String> {
    let mut problems = Vec::new();
    if p.code != w.code {
        problems.push(format!(
            "HTTP {} through the policies, {} through the webhook",
            p.code, w.code
        ));
    }
    let (pw, ww) = (Warnings::of(p), Warnings::of(w));
    tally.policy_warnings += pw.policies.len();
    tally.mutation_warnings += ww.mutation.len();
    if ww.mutation.iter().any(|m| m.starts_with("jobgate: set ")) {
        tally.mutated += 1;
    }
    if !pw.webhook.is_empty() || !pw.mutation.is_empty() || !ww.policies.is_empty() {
        problems.push(format!(
            "warnings from the other mode\n  policies: {pw:?}\n  webhook:  {ww:?}"
        ));
    }
    if pw.policies != ww.webhook {
        problems.push(format!(
            "policy warnings differ\n  policies: {:?}\n  webhook:  {:?}",
            pw.policies, ww.webhook
        ));
    }
    if pw.apiserver != ww.apiserver {
        problems.push(format!(
            "kube-apiserver's own warnings differ\n  policies: {:?}\n  webhook:  {:?}",
            pw.apiserver, ww.apiserver
        ));
    }
    if p.allowed() && w.allowed() {
        tally.allowed += 1;
        let (pc, wc) = (comparable(&p.body), comparable(&w.body));
        if pc != wc {
            problems.push(format!(
                "stored objects differ\n  policies: {pc}\n  webhook:  {wc}"
            ));
        }
    } else if !p.allowed() && !w.allowed() {
        problems.extend(denial_differences(p, w, names, tally));
    }
    (!problems.is_empty()).then(|| problems.join("\n"))
}

/// Fails the test with the first few problems, if any.
fn assert_no_differences(what: &str, found: &[String]) {
    let mut report = String::new();
    for problem in found.iter().take(5) {
        let _ = writeln!(report, "{problem}\n");
    }
    assert!(
        found.is_empty(),
        "{} requests gave other results {what}; the first:\n{report}",
        found.len()
    );
}

/// The cases through the policies and the webhook for `settings`, compared: the tally, after
/// any difference failed the test.
async fn through_policies_and_webhook(minor: &str, settings: &[String], cases: &[Case]) -> Tally {
    let run = run_modes(minor, settings, &[Via::Policies, Via::Webhook], cases).await;
    let mut tally = Tally::default();
    let mut found = Vec::new();
    for (i, (case, sent)) in cases.iter().zip(&run.sent).enumerate() {
        if !tally.count(case, sent) {
            continue;
        }
        let sent = sent.as_ref().expect("sent");
        if let Some(problem) = differences(&sent[0], &sent[1], &run.names(i), &mut tally) {
            found.push(format!("{problem}\n{}", case.describe()));
        }
    }
    eprintln!(
        "Kubernetes {minor}, {settings:?}: {} requests through the policies and the webhook in {:.1?}; {tally:#?}",
        cases.len(),
        run.elapsed
    );
    assert_no_differences("through the policies than through the webhook", &found);
    tally
}

/// Generated requests per run (with the fixtures' about a hundred).
const GENERATED: usize = 1500;

/// The corpus: every fixture in a namespace without the recovery label and in one opted in,
/// then `generated` requests from the in-process test's generator, with a fixed seed.
fn corpus_cases(generated: usize) -> Vec<Case> {
    use proptest::strategy::{Strategy as _, ValueTree as _};
    use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
    let mut out = Vec::new();
    for (_, fixture) in corpus::fixtures() {
        for labels in [
            BTreeMap::new(),
            BTreeMap::from([(RECOVERY_LABEL.to_string(), "enabled".to_string())]),
        ] {
            out.push(Case::new(Admission {
                namespace_labels: labels,
                ..fixture.clone()
            }));
        }
    }
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::deterministic_rng(RngAlgorithm::ChaCha),
    );
    let strategy = corpus::request();
    for _ in 0..generated {
        let request = strategy.new_tree(&mut runner).expect("a request").current();
        out.push(Case::new(request));
    }
    out
}

/// Runs `test` on a runtime whose threads have 64 MiB stacks: the comparison's futures, nested
/// in an unoptimized build, overflow a test thread's 2 MiB.
fn on_a_large_stack<F: std::future::Future<Output = ()>>(
    test: impl FnOnce() -> F + Send + 'static,
) {
    const STACK: usize = 64 << 20;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_stack_size(STACK)
        .enable_all()
        .build()
        .expect("a runtime");
    let handle = std::thread::Builder::new()
        .stack_size(STACK)
        .spawn(move || runtime.block_on(test()))
        .expect("a thread");
    if let Err(panic) = handle.join() {
        std::panic::resume_unwind(panic);
    }
}

// ---------------------------------------------------------------------------------------------
// The corpus.

const KEYS: [&str; 3] = strategies::KEYS;

/// Every policy at `warn`, with three recovery keys to set: every finding is a warning, so every
/// request kube-apiserver's own rules accept is stored and compared.
async fn the_corpus_at_warn(minor: &str) {
    let tally = through_policies_and_webhook(
        minor,
        &every_policy_at("warn", &KEYS),
        &corpus_cases(GENERATED),
    )
    .await;
    // The fixed seed gives 727 allowed, 249 mutated, 539 policy warnings and 291 UPDATEs sent.
    assert!(
        tally.allowed > 650
            && tally.mutated > 200
            && tally.policy_warnings > 450
            && tally.updates > 250,
        "the corpus exercised too little: {tally:#?}"
    );
}

/// Every policy at `deny`, with the default recovery key.
async fn the_corpus_at_deny(minor: &str) {
    let tally = through_policies_and_webhook(
        minor,
        &every_policy_at("deny", &[]),
        &corpus_cases(GENERATED),
    )
    .await;
    assert!(
        tally.allowed > 400
            && tally.denied_by_a_policy > 300
            && tally.denials_with_more_causes > 50,
        "the corpus exercised too little: {tally:#?}"
    );
}

#[test]
fn on_1_37_the_corpus_gives_the_webhooks_stored_objects_and_verdicts_with_every_policy_at_warn() {
    on_a_large_stack(|| the_corpus_at_warn("1.37"));
}

#[test]
fn on_1_36_the_corpus_gives_the_webhooks_stored_objects_and_verdicts_with_every_policy_at_warn() {
    on_a_large_stack(|| the_corpus_at_warn("1.36"));
}

#[test]
fn on_1_37_the_corpus_gives_the_webhooks_stored_objects_and_verdicts_with_every_policy_at_deny() {
    on_a_large_stack(|| the_corpus_at_deny("1.37"));
}

#[test]
fn on_1_36_the_corpus_gives_the_webhooks_stored_objects_and_verdicts_with_every_policy_at_deny() {
    on_a_large_stack(|| the_corpus_at_deny("1.36"));
}

// ---------------------------------------------------------------------------------------------
// Both at once: the first step of the migration (docs/src/admission-policies.md).

/// The requests through the policies and the webhook installed together, and through the
/// webhook alone: the same status and the same stored objects. kube-apiserver runs the
/// MutatingAdmissionPolicy plugin before the MutatingAdmissionWebhook plugin
/// (k8s.io/kubernetes `pkg/kubeapiserver/options/plugins.go`, `AllOrderedPlugins`), so the
/// webhook finds nothing left to patch: it says it set nothing.
async fn both_installed_store_what_the_webhook_stores(minor: &str) {
    let settings = every_policy_at("warn", &KEYS);
    let cases = corpus_cases(300);
    let run = run_modes(minor, &settings, &[Via::Both, Via::Webhook], &cases).await;
    let mut tally = Tally::default();
    let mut found = Vec::new();
    for (case, sent) in cases.iter().zip(&run.sent) {
        if !tally.count(case, sent) {
            continue;
        }
        let [both, webhook] = sent.as_ref().expect("sent").as_slice() else {
            unreachable!("two modes")
        };
        let mut problems = Vec::new();
        if both.code != webhook.code {
            problems.push(format!(
                "HTTP {} with both, {} through the webhook",
                both.code, webhook.code
            ));
        }
        let set: Vec<String> = Warnings::of(both)
            .mutation
            .into_iter()
            .filter(|w| w.starts_with("jobgate: set "))
            .collect();
        if !set.is_empty() {
            problems.push(format!("the webhook patched after the policy: {set:?}"));
        }
        if Warnings::of(webhook)
            .mutation
            .iter()
            .any(|m| m.starts_with("jobgate: set "))
        {
            tally.mutated += 1;
        }
        if both.allowed() && webhook.allowed() {
            tally.allowed += 1;
            let (b, w) = (comparable(&both.body), comparable(&webhook.body));
            if b != w {
                problems.push(format!(
                    "stored objects differ\n  both:    {b}\n  webhook: {w}"
                ));
            }
        }
        if !problems.is_empty() {
            found.push(format!("{}\n{}", problems.join("\n"), case.describe()));
        }
    }
    eprintln!(
        "Kubernetes {minor}: {} requests through both and the webhook in {:.1?}; {tally:#?}",
        cases.len(),
        run.elapsed
    );
    assert_no_differences("with both installed than through the webhook", &found);
    assert!(
        tally.allowed > 100 && tally.mutated > 30,
        "the corpus exercised too little: {tally:#?}"
    );
}

#[test]
fn on_1_37_with_both_installed_the_objects_stored_are_the_webhooks() {
    on_a_large_stack(|| both_installed_store_what_the_webhook_stores("1.37"));
}

#[test]
fn on_1_36_with_both_installed_the_objects_stored_are_the_webhooks() {
    on_a_large_stack(|| both_installed_store_what_the_webhook_stores("1.36"));
}

// ---------------------------------------------------------------------------------------------
// What kube-apiserver checks of the policies themselves.

/// The `status.typeChecking` of the ValidatingAdmissionPolicy `policy` once
/// kube-controller-manager's type checker has seen its generation (k8s.io/kubernetes
/// `pkg/controller/validatingadmissionpolicystatus`: `status.observedGeneration`).
fn type_checking(cp: &ControlPlane, policy: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let object: Value = serde_json::from_str(&cp.kubectl_ok(
            &["get", "validatingadmissionpolicy", policy, "-o", "json"],
            None,
        ))
        .expect("JSON");
        let status = &object["status"];
        if status["observedGeneration"] == object["metadata"]["generation"]
            && status["typeChecking"].is_object()
        {
            return status["typeChecking"].clone();
        }
        assert!(
            Instant::now() < deadline,
            "the type checker did not check {policy} within a minute: {object:#}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Every ValidatingAdmissionPolicy render prints, type-checked against the Job and CronJob
/// schemas, with no expression warning; a policy reading a field Jobs do not have, next to them,
/// with one (the checker does check Jobs). kube-apiserver accepting every object is the proof
/// that each expression compiles and that its estimated cost is within the limit (it refuses
/// either: k8s.io/kubernetes `pkg/apis/admissionregistration/validation`).
fn the_type_checker_warns_about_nothing(minor: &str) {
    let cp = control_plane(minor);
    let name = unique("typed-");
    let mut objects = rendered_for(minor, &name, &every_policy_at("warn", &KEYS), &[&name]);
    let control = format!("{name}-control");
    objects.push(json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": control},
        "spec": {
            "matchConstraints": {"resourceRules": [{"apiGroups": ["batch"], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["jobs"]}]},
            "validations": [{"expression": "object.spec.noSuchField == 1"}],
        },
    }));
    apply(cp, &objects);
    let warned = type_checking(cp, &control)["expressionWarnings"].clone();
    assert!(
        warned.to_string().contains("noSuchField"),
        "the type checker let a field Jobs do not have pass: {warned:#}"
    );
    let policies: Vec<&str> = objects
        .iter()
        .filter(|o| o["kind"] == "ValidatingAdmissionPolicy" && o["metadata"]["name"] != *control)
        .map(|o| o["metadata"]["name"].as_str().expect("a name"))
        .collect();
    assert_eq!(
        policies.len(),
        POLICIES.len(),
        "a policy per jobgate policy"
    );
    for policy in policies {
        let warnings = &type_checking(cp, policy)["expressionWarnings"];
        assert!(
            warnings.as_array().is_none_or(Vec::is_empty),
            "Kubernetes {minor}'s type checker on {policy}: {warnings:#}"
        );
    }
}

#[test]
fn on_1_37_the_type_checker_warns_about_no_expression() {
    the_type_checker_warns_about_nothing("1.37");
}

#[test]
fn on_1_36_the_type_checker_warns_about_no_expression() {
    the_type_checker_warns_about_nothing("1.36");
}

/// A Job as large as kube-apiserver's validation lets the expressions' lists be: 20
/// `podFailurePolicy` rules of 20 pod conditions each (k8s.io/kubernetes `pkg/apis/batch/
/// validation`: `maxPodFailurePolicyRules`, `maxPodFailurePolicyOnPodConditionsPatterns`), the
/// rule `recovery-counts-toward-backoff` looks for last, 20 containers and 200 template
/// annotations, opted into recovery.
fn large_job() -> Value {
    let mut rules: Vec<Value> = (0..20)
        .map(|r| {
            let conditions: Vec<Value> = (0..20)
                .map(|c| json!({"type": format!("example.com/Condition{r}x{c}"), "status": "True"}))
                .collect();
            json!({"action": "Count", "onPodConditions": conditions})
        })
        .collect();
    rules[19]["action"] = json!("Ignore");
    rules[19]["onPodConditions"][19] = json!({"type": "DisruptionTarget", "status": "True"});
    let containers: Vec<Value> = (0..20)
        .map(|c| json!({"name": format!("c{c}"), "image": "registry.example/trainer:1"}))
        .collect();
    let annotations: serde_json::Map<String, Value> = (0..200)
        .map(|a| (format!("example.com/a{a}"), json!("x".repeat(100))))
        .collect();
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "large", "annotations": {RECOVERY_LABEL: "enabled"}},
        "spec": {
            "podFailurePolicy": {"rules": rules},
            "template": {
                "metadata": {"annotations": annotations},
                "spec": {"restartPolicy": "Never", "containers": containers},
            },
        },
    })
}

/// The large Job, and a CronJob with it as its job template, in a namespace opted in and one
/// not, through the policies at `deny` and the webhook: kube-apiserver evaluates every
/// expression within its runtime cost limit (a policy over it fails, and `failurePolicy: Fail`
/// refuses the request), and stores what the webhook stores.
async fn a_large_job_within_cel_cost_limits(minor: &str) {
    let job = large_job();
    let cron_job = json!({
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "large"},
        "spec": {"schedule": "0 * * * *", "jobTemplate": {
            "metadata": {"annotations": job["metadata"]["annotations"].clone()},
            "spec": job["spec"].clone(),
        }},
    });
    let mut cases = Vec::new();
    for (kind, object) in [("Job", &job), ("CronJob", &cron_job)] {
        for labels in [
            BTreeMap::new(),
            BTreeMap::from([(RECOVERY_LABEL.to_string(), "enabled".to_string())]),
        ] {
            cases.push(Case::new(Admission {
                operation: "CREATE",
                kind,
                namespace: "default".to_string(),
                namespace_labels: labels,
                object: object.clone(),
                old_object: None,
            }));
        }
    }
    let tally = through_policies_and_webhook(minor, &every_policy_at("deny", &[]), &cases).await;
    assert_eq!(
        (tally.allowed, tally.mutated),
        (cases.len(), cases.len()),
        "{tally:#?}"
    );
}

#[test]
fn on_1_37_a_large_job_stays_within_cel_cost_limits() {
    on_a_large_stack(|| a_large_job_within_cel_cost_limits("1.37"));
}

#[test]
fn on_1_36_a_large_job_stays_within_cel_cost_limits() {
    on_a_large_stack(|| a_large_job_within_cel_cost_limits("1.36"));
}

// ---------------------------------------------------------------------------------------------
// 1.33.

/// The versions of `admissionregistration.k8s.io` whose discovery lists `resource`.
fn versions_serving(cp: &ControlPlane, resource: &str) -> Vec<String> {
    let group: Value = serde_json::from_str(&cp.kubectl_ok(
        &["get", "--raw", "/apis/admissionregistration.k8s.io"],
        None,
    ))
    .expect("JSON");
    group["versions"]
        .as_array()
        .expect("versions")
        .iter()
        .map(|v| v["version"].as_str().expect("a version").to_string())
        .filter(|version| {
            let list: Value = serde_json::from_str(&cp.kubectl_ok(
                &[
                    "get",
                    "--raw",
                    &format!("/apis/admissionregistration.k8s.io/{version}"),
                ],
                None,
            ))
            .expect("JSON");
            list["resources"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|r| r["name"] == resource)
        })
        .collect()
}

/// Kubernetes 1.33 serves MutatingAdmissionPolicy as `v1alpha1` only, and only with the feature
/// gate and the API version turned on: no `v1beta1` or `v1` to render for, as render's refusal
/// says (k8s.io/api 0.33 `admissionregistration` has no `v1beta1` MutatingAdmissionPolicy).
#[test]
fn kubernetes_1_33_serves_mutating_admission_policy_only_as_v1alpha1() {
    let (code, _, stderr) = support::render::jobgate_render(&["--kubernetes-version", "1.33"], &[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("only as admissionregistration.k8s.io/v1alpha1"),
        "{stderr}"
    );
    let off = ControlPlane::start("1.33", &["--controllers", ""]);
    assert_eq!(
        versions_serving(&off, "mutatingadmissionpolicies"),
        Vec::<String>::new()
    );
    assert_eq!(
        versions_serving(&off, "validatingadmissionpolicies"),
        ["v1"],
        "ValidatingAdmissionPolicy v1 (GA in 1.30)"
    );
    drop(off);
    let on = ControlPlane::start(
        "1.33",
        &[
            "--controllers",
            "",
            "--feature-gates",
            "MutatingAdmissionPolicy=true",
            "--runtime-config",
            "admissionregistration.k8s.io/v1alpha1=true",
        ],
    );
    assert_eq!(
        versions_serving(&on, "mutatingadmissionpolicies"),
        ["v1alpha1"]
    );
}

// ---------------------------------------------------------------------------------------------
// Why render writes no `Object{...}` initializer into a patch.

/// A MutatingAdmissionPolicy (v1) `name` with its binding, for Job CREATEs in `namespace`:
/// `failurePolicy` and the JSON Patch `expression`.
fn job_patch_policy(
    name: &str,
    namespace: &str,
    failure_policy: &str,
    expression: &str,
) -> Vec<Value> {
    vec![
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {
                "failurePolicy": failure_policy,
                "reinvocationPolicy": "Never",
                "matchConstraints": {
                    "namespaceSelector": {"matchExpressions": [in_namespaces(&[namespace])]},
                    "resourceRules": [{"apiGroups": ["batch"], "apiVersions": ["v1"],
                        "operations": ["CREATE"], "resources": ["jobs"]}],
                },
                "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": expression}}],
            },
        }),
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingAdmissionPolicyBinding",
            "metadata": {"name": name},
            "spec": {"policyName": name},
        }),
    ]
}

/// A JSON Patch whose value is a list holding an `Object{...}` initializer: what render never
/// writes (src/admission_policy/mutating.rs).
const INITIALIZER_IN_A_LIST: &str = "[JSONPatch{op: 'add', path: '/spec/template/spec/tolerations', \
    value: [Object.spec.template.spec.tolerations{key: 'example.com/initializer', operator: 'Exists'}]}]";

/// The answer to a dry-run Job create in a namespace of its own once the policy has been
/// applied: the first that is not a Job without tolerations (the policy not yet running).
async fn with_initializer_in_a_list(minor: &str) -> Result<Outcome, kube::Error> {
    let cp = control_plane(minor);
    let client = cp.client().await;
    let name = unique("initializer-");
    let namespace = cp.namespace(&name);
    apply(
        cp,
        &job_patch_policy(&name, &namespace, "Ignore", INITIALIZER_IN_A_LIST),
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let out = try_send(
            &client,
            Verb::Create { dry_run: true },
            &namespace,
            "Job",
            &probe(),
        )
        .await;
        match &out {
            Ok(o)
                if o.allowed() && !o.body["spec"]["template"]["spec"]["tolerations"].is_array() =>
            {
                assert!(
                    Instant::now() < deadline,
                    "kube-apiserver did not run {name} within a minute: {o:#?}"
                );
            }
            _ => return out,
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// kube-apiserver 1.36.3 panics converting the initializer inside a list (k8s.io/apiserver
/// `pkg/cel/mutation/dynamic/objects.go`: `ConvertToNative` to `*structpb.Value` returns a
/// `*structpb.Struct`, which cel-go's list conversion cannot set), although the policy's
/// `failurePolicy` is `Ignore`: the panic is not the policy's failure but the request handler's,
/// and kube-apiserver's panic recovery drops the request unanswered.
#[test]
fn on_1_36_an_object_initializer_inside_a_patch_list_panics_the_request_despite_ignore() {
    on_a_large_stack(|| async {
        let out = with_initializer_in_a_list("1.36").await;
        assert!(out.is_err(), "kube-apiserver answered: {out:#?}");
        let log = control_plane("1.36").log_tail("kube-apiserver", 5000);
        assert!(
            log.contains("reflect.Set: value of type *structpb.Struct is not assignable to type *structpb.Value"),
            "no such panic in kube-apiserver's log"
        );
    });
}

/// kubernetes#142181's fix in 1.37.2: the same policy adds the toleration.
#[test]
fn on_1_37_an_object_initializer_inside_a_patch_list_is_patched() {
    on_a_large_stack(|| async {
        let out = with_initializer_in_a_list("1.37").await.expect("an answer");
        assert!(out.allowed(), "{out:#?}");
        assert_eq!(
            out.body["spec"]["template"]["spec"]["tolerations"],
            json!([{"key": "example.com/initializer", "operator": "Exists"}])
        );
    });
}

// ---------------------------------------------------------------------------------------------
// Why each mutating policy applies only to a request it patches.

/// A Job without labels of its own, whose template has one: defaulting gives the Job its
/// template's label map itself (k8s.io/kubernetes `pkg/apis/batch/v1/defaults.go`), so the
/// `job-name` and `controller-uid` labels kube-apiserver generates later
/// (`pkg/registry/batch/job/strategy.go`, `generateSelector`) land on both.
fn unlabelled_job() -> Value {
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "unlabelled"},
        "spec": {"template": {
            "metadata": {"labels": {"app": "trainer"}},
            "spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "main", "image": "registry.example/trainer:1"}],
            },
        }},
    })
}

/// A JSON Patch with no operation (a typed empty list: `[]` is refused as `list(dyn)`).
const EMPTY_PATCH: &str =
    "[JSONPatch{op: 'add', path: '/metadata/annotations', value: {}}].filter(p, false)";

/// A MutatingAdmissionPolicy that applies changes a Job even with an empty patch: kube-apiserver
/// encodes the object and decodes it anew (k8s.io/apiserver `admission/plugin/policy/mutating/
/// patch/json_patch.go`), the Job's labels and its template's become two maps, and the generated
/// labels go on the template only. A Job stored without the policy has them on both. This is why
/// render's mutating policies have the `patches` match condition.
async fn an_applied_empty_patch_changes_a_jobs_labels(minor: &str) {
    let cp = control_plane(minor);
    let client = cp.client().await;
    let name = unique("empty-patch-");
    let (with, without) = (cp.namespace(&name), cp.namespace(&name));
    apply_and_wait(
        cp,
        &client,
        &name,
        &job_patch_policy(&name, &with, "Fail", EMPTY_PATCH),
        &[&with],
    )
    .await;
    let labels = |out: &Outcome| {
        assert!(out.allowed(), "{out:#?}");
        let has = |pointer: &str| {
            out.body
                .pointer(pointer)
                .and_then(Value::as_object)
                .is_some_and(|l| l.contains_key("job-name"))
        };
        (
            has("/metadata/labels"),
            has("/spec/template/metadata/labels"),
        )
    };
    let create = |namespace: String| {
        let client = &client;
        async move {
            send(
                client,
                Verb::Create { dry_run: true },
                &namespace,
                "Job",
                &unlabelled_job(),
            )
            .await
        }
    };
    assert_eq!(
        labels(&create(without).await),
        (true, true),
        "without the policy"
    );
    assert_eq!(
        labels(&create(with).await),
        (false, true),
        "with the empty patch"
    );
}

#[test]
fn on_1_37_a_mutating_policy_that_applies_with_an_empty_patch_changes_a_jobs_labels() {
    on_a_large_stack(|| an_applied_empty_patch_changes_a_jobs_labels("1.37"));
}

#[test]
fn on_1_36_a_mutating_policy_that_applies_with_an_empty_patch_changes_a_jobs_labels() {
    on_a_large_stack(|| an_applied_empty_patch_changes_a_jobs_labels("1.36"));
}
