//! The proof that the rendered policies do what the webhook does: every AdmissionReview fixture
//! and thousands of generated Jobs and CronJobs (CREATE, and UPDATE with an old object), each in
//! a namespace that opted into recovery or not, under generated settings (the keys `/mutate`
//! sets, every policy's level), go through
//! - `/mutate` or `/mutate/recovery` (`admission::review`, as the MutatingWebhookConfiguration
//!   routes the request) and the MutatingAdmissionPolicy (`engine`): the same JSON Patch, op for
//!   op; the patch applies; each applied to the patched object (reinvocation, either one's
//!   output) patches nothing;
//! - `/validate`'s policy findings (`job::pipeline::validate`, what the ValidatingWebhookConfiguration
//!   is sent: not objects being deleted) and the ValidatingAdmissionPolicies with their bindings:
//!   per policy, the same warnings and the same field errors, in order, so the same verdict;
//!   on the object as written and as mutated, UPDATE ratcheting against `oldObject` included.
//!
//! Both see the object as kube-apiserver hands it to admission (`apiserver_form`). The few
//! expected differences are tests of their own at the end.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};

use base64::Engine as _;
use proptest::prelude::*;
use serde_json::{Value, json};

use super::corpus::{self, Admission, RECOVERY_LABEL, apiserver_form};
use super::engine::{Answer, RenderedPolicies};
use super::strategies::KEYS;
use crate::admission::{Endpoint, review as webhook};
use crate::admission_policy::{Install, render};
use crate::job::finding::Said;
use crate::job::finding::Source;
use crate::job::levels::Level;
use crate::job::levels::PolicyName;
use crate::job::pipeline;
use crate::job::review::Review;
use crate::job::wire::envelope::Operation;
use crate::job::{Config, JobObject, Kind};

/// The rendered objects for `config`, read back from the YAML `jobgate render` prints.
pub(crate) fn rendered(config: &Config) -> Vec<Value> {
    thread_local! {
        static RENDERED: RefCell<HashMap<String, Vec<Value>>> = RefCell::new(HashMap::new());
    }
    let key = format!("{:?}", (&config.recovery_annotation_keys, &config.policies));
    RENDERED.with(|cache| {
        cache
            .borrow_mut()
            .entry(key)
            .or_insert_with(|| {
                let yaml = render(config, &Install::default())
                    .expect("renders for the default release")
                    .to_yaml();
                serde_yaml_ng::Deserializer::from_str(&yaml)
                    .map(|doc| Value::deserialize(doc).expect("the output is YAML"))
                    .collect()
            })
            .clone()
    })
}

use serde::Deserialize as _;

fn resource(kind: &str) -> &'static str {
    if kind == "CronJob" {
        "cronjobs"
    } else {
        "jobs"
    }
}

/// The namespaces no jobgate webhook is sent (deploy/base `namespaceSelector`).
fn excluded(namespace: &str) -> bool {
    matches!(namespace, "kube-system" | "jobgate-system")
}

pub(crate) fn review_body(admission: &Admission) -> Vec<u8> {
    let gvk = json!({"group": "batch", "version": "v1", "kind": admission.kind});
    let gvr = json!({"group": "batch", "version": "v1", "resource": resource(admission.kind)});
    let mut request = json!({
        "uid": "00000000-0000-4000-8000-000000000000",
        "kind": gvk, "requestKind": gvk, "resource": gvr, "requestResource": gvr,
        "name": admission.object["metadata"]["name"],
        "namespace": admission.namespace,
        "operation": admission.operation,
        "userInfo": {"username": "alice"},
        "object": admission.object,
        "dryRun": false,
    });
    if let Some(old) = &admission.old_object {
        request["oldObject"] = old.clone();
    }
    serde_json::to_vec(
        &json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}),
    )
    .expect("JSON")
}

/// What the mutating webhooks do: the patch (empty when none) and the warnings of the endpoint
/// the MutatingWebhookConfiguration calls; nothing when it calls none.
pub(crate) fn webhook_mutation(
    admission: &Admission,
    config: &Config,
) -> (Vec<Value>, Vec<String>) {
    let called = !excluded(&admission.namespace)
        && (admission.operation == "CREATE" || admission.kind == "CronJob");
    if !called {
        return (Vec::new(), Vec::new());
    }
    let endpoint = if admission
        .namespace_labels
        .get(RECOVERY_LABEL)
        .map(String::as_str)
        == Some("enabled")
    {
        Endpoint::MutateRecovery
    } else {
        Endpoint::Mutate
    };
    let outcome = webhook(endpoint, &review_body(admission), config);
    assert_eq!(outcome.http_status, 200);
    let answer: Value = serde_json::from_slice(&outcome.body).expect("JSON answer");
    let ops = match answer["response"]["patch"].as_str() {
        Some(b64) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(b64)
                .expect("base64");
            serde_json::from_slice(&bytes).expect("a JSON array")
        }
        None => Vec::new(),
    };
    let warnings = answer["response"]["warnings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|w| w.as_str().map(String::from))
        .collect();
    (ops, warnings)
}

/// Per policy, the field errors and the warnings it reports.
pub(crate) type Findings = BTreeMap<PolicyName, (Vec<String>, Vec<String>)>;

/// What `/validate`'s policies say, as the ValidatingWebhookConfiguration sends the request
/// (never for an excluded namespace or an object being deleted).
pub(crate) fn webhook_findings(admission: &Admission, config: &Config) -> Findings {
    let mut out = Findings::new();
    if excluded(&admission.namespace)
        || !admission.object["metadata"]["deletionTimestamp"].is_null()
    {
        return out;
    }
    let kind = Kind::from_kind(admission.kind).expect("Job or CronJob");
    let object = JobObject::from_json(kind, &admission.object.to_string()).expect("readable");
    let old = admission
        .old_object
        .as_ref()
        .map(|o| JobObject::from_json(kind, &o.to_string()).expect("readable"));
    let review = Review {
        operation: if admission.operation == "UPDATE" {
            Operation::Update
        } else {
            Operation::Create
        },
        object: &object,
        old_object: old.as_ref(),
    };
    for finding in pipeline::validate(&review, config).findings {
        if let Source::Policy(policy) = finding.source {
            let entry = out.entry(policy).or_default();
            match &finding.said {
                Said::Error(e) => entry.0.push(e.to_string()),
                Said::Warning(w) => entry.1.push(w.clone()),
                Said::Rejected(m) => panic!("rejected: {m}"),
                Said::Note(n) => panic!("a policy's note: {n}"),
            }
        }
    }
    out
}

/// The ValidatingAdmissionPolicies' answer, per jobgate policy.
pub(crate) fn policy_findings(answer: &Answer) -> Findings {
    let policy = |name: &str| {
        PolicyName::parse(name.strip_prefix("jobgate-").expect("jobgate-<policy>"))
            .expect("a policy")
    };
    let mut out = Findings::new();
    for d in &answer.denials {
        out.entry(policy(&d.policy))
            .or_default()
            .0
            .push(d.message.clone());
    }
    for w in &answer.warnings {
        out.entry(policy(&w.policy))
            .or_default()
            .1
            .push(w.message.clone());
    }
    out
}

/// What one request exercised.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Tally {
    pub(crate) requests: usize,
    pub(crate) patched: usize,
    pub(crate) ops: usize,
    pub(crate) validated: usize,
    pub(crate) findings: usize,
    pub(crate) denied: usize,
}

impl std::ops::AddAssign for Tally {
    fn add_assign(&mut self, o: Tally) {
        self.requests += o.requests;
        self.patched += o.patched;
        self.ops += o.ops;
        self.validated += o.validated;
        self.findings += o.findings;
        self.denied += o.denied;
    }
}

fn compare_validation(
    admission: &Admission,
    config: &Config,
    cluster: &RenderedPolicies,
) -> Result<Tally, String> {
    let webhook = webhook_findings(admission, config);
    let answer = cluster.validate(admission)?;
    let policies = policy_findings(&answer);
    if webhook != policies {
        return Err(format!(
            "validation differs\n  webhook:  {webhook:?}\n  policies: {policies:?}"
        ));
    }
    Ok(Tally {
        validated: 1,
        findings: webhook.values().map(|(e, w)| e.len() + w.len()).sum(),
        denied: usize::from(!answer.denials.is_empty()),
        ..Tally::default()
    })
}

/// One request through both, as described at the top. `raw` objects are first put in the
/// apiserver's form.
pub(crate) fn compare(raw: &Admission, config: &Config) -> Result<Tally, String> {
    export(raw);
    let mut admission = raw.clone();
    admission.object = apiserver_form(&raw.object);
    admission.old_object = raw.old_object.as_ref().map(apiserver_form);
    let cluster = RenderedPolicies::new(&rendered(config));
    let mut tally = Tally {
        requests: 1,
        ..Tally::default()
    };

    let (webhook_ops, _) = webhook_mutation(&admission, config);
    let policy_ops = match cluster.mutate(&admission)? {
        // kube-apiserver decodes an object a MutatingAdmissionPolicy applied to anew, patch or
        // none, which a Job's labels show (`mutating`): a policy applies only to what it patches.
        Some(ops) if ops.is_empty() => {
            return Err("a mutating policy applied with nothing to patch".to_string());
        }
        ops => ops.unwrap_or_default(),
    };
    if webhook_ops != policy_ops {
        return Err(format!(
            "patches differ\n  webhook: {}\n  policy:  {}",
            Value::from(webhook_ops),
            Value::from(policy_ops)
        ));
    }
    tally += compare_validation(&admission, config, &cluster)?;
    if policy_ops.is_empty() {
        return Ok(tally);
    }
    tally.patched += 1;
    tally.ops += policy_ops.len();
    let patch: json_patch::Patch =
        serde_json::from_value(Value::from(policy_ops)).map_err(|e| e.to_string())?;
    let mut patched = admission.object.clone();
    json_patch::patch(&mut patched, &patch)
        .map_err(|e| format!("the patch does not apply: {e}"))?;
    let mut again = admission.clone();
    again.object = patched;
    // Reinvocation (`reinvocationPolicy: IfNeeded`): each on the patched object, which is the
    // other's output as well, patches nothing; the policy does not even apply.
    let policy_again = cluster.mutate(&again)?;
    let (webhook_again, _) = webhook_mutation(&again, config);
    if policy_again.is_some() || !webhook_again.is_empty() {
        return Err(format!(
            "reinvocation applied again\n  webhook: {}\n  policy:  {:?}",
            Value::from(webhook_again),
            policy_again.map(Value::from)
        ));
    }
    // Validation sees the mutated object.
    tally += compare_validation(&again, config, &cluster)?;
    Ok(tally)
}

/// With `JOBGATE_ADMISSION_CORPUS=<file>`, every request compared is also appended to the file,
/// one JSON object a line (`operation`, `kind`, `namespace`, `namespaceLabels`, `object`,
/// `oldObject`, as written, before `apiserver_form`): the same objects, for a real kube-apiserver
/// with the rendered policies and one with the webhook to be compared on.
fn export(admission: &Admission) {
    use std::io::Write as _;
    use std::sync::Mutex;
    static CORPUS: Mutex<Option<std::fs::File>> = Mutex::new(None);
    let Some(path) = std::env::var_os("JOBGATE_ADMISSION_CORPUS") else {
        return;
    };
    let mut file = CORPUS.lock().unwrap_or_else(|e| e.into_inner());
    let file = file.get_or_insert_with(|| {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .expect("JOBGATE_ADMISSION_CORPUS names a writable file")
    });
    let line = json!({
        "operation": admission.operation,
        "kind": admission.kind,
        "namespace": admission.namespace,
        "namespaceLabels": admission.namespace_labels,
        "object": admission.object,
        "oldObject": admission.old_object,
    });
    writeln!(file, "{line}").expect("write the corpus");
}

// ---------------------------------------------------------------------------------------------
// Every fixture.

/// Settings the fixtures run under: the defaults, every policy at each level, other keys.
fn fixture_configs() -> Vec<Config> {
    let mut configs = vec![Config::default()];
    for level in [Level::Warn, Level::Deny] {
        configs.push(Config {
            policies: crate::job::levels::Policies::all(level),
            ..Config::default()
        });
    }
    configs.push(Config {
        recovery_annotation_keys: KEYS.iter().map(|k| k.to_string()).collect(),
        policies: crate::job::levels::Policies::all(Level::Warn),
        ..Config::default()
    });
    configs.push(Config {
        recovery_annotation_keys: Vec::new(),
        ..Config::default()
    });
    configs
}

#[test]
fn every_fixture_gets_the_webhooks_patch_and_verdict_from_the_policies() {
    on_a_large_stack(every_fixture);
}

fn every_fixture() {
    let mut tally = Tally::default();
    let mut fixtures = 0;
    for (path, fixture) in corpus::fixtures() {
        fixtures += 1;
        for config in fixture_configs() {
            for opted_in in [false, true] {
                let mut labels = BTreeMap::new();
                if opted_in {
                    labels.insert(RECOVERY_LABEL.to_string(), "enabled".to_string());
                }
                let admission = Admission {
                    namespace_labels: labels,
                    ..fixture.clone()
                };
                match compare(&admission, &config) {
                    Ok(t) => tally += t,
                    Err(e) => panic!("{path} (namespace opted in: {opted_in}, {config:?}):\n{e}"),
                }
            }
        }
    }
    eprintln!("fixtures: {fixtures} Job and CronJob requests; {tally:?}");
    assert!(fixtures >= 40, "{fixtures}");
    assert!(
        tally.patched > 50 && tally.findings > 50 && tally.denied > 10,
        "{tally:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Generated Jobs and CronJobs.

/// Settings: the keys `/mutate` sets (none to all three, with repeats), each policy's level.
fn config() -> impl Strategy<Value = Config> {
    let level = prop_oneof![Just(Level::Off), Just(Level::Warn), Just(Level::Deny)];
    (
        prop::collection::vec(prop::sample::select(KEYS.to_vec()), 0..4),
        prop::array::uniform5(level),
    )
        .prop_map(|(keys, levels)| {
            let mut config = Config {
                recovery_annotation_keys: keys.into_iter().map(String::from).collect(),
                ..Config::default()
            };
            for (policy, level) in PolicyName::ALL.into_iter().zip(levels) {
                config.policies.set(policy, level);
            }
            config
        })
}

/// Runs `f` on a thread with a 256 MiB stack: the `cel` crate's parser recurses deeply on the
/// policies' longer expressions (an unoptimized build overflows a test thread's 2 MiB).
pub(crate) fn on_a_large_stack(f: impl FnOnce() + Send + 'static) {
    let handle = std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(f)
        .expect("a thread");
    if let Err(panic) = handle.join() {
        std::panic::resume_unwind(panic);
    }
}

#[test]
fn generated_jobs_and_cron_jobs_get_the_webhooks_patch_and_verdict_from_the_policies() {
    on_a_large_stack(|| {
        let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
            cases: GENERATED_CASES,
            failure_persistence: None,
            ..ProptestConfig::default()
        });
        let tally = RefCell::new(Tally::default());
        let result = runner.run(&(corpus::request(), config()), |(admission, config)| {
            match compare(&admission, &config) {
                Ok(t) => *tally.borrow_mut() += t,
                Err(e) => prop_assert!(false, "{e}\n{admission:#?}\n{config:?}"),
            }
            Ok(())
        });
        if let Err(e) = result {
            panic!("{e}");
        }
        let tally = tally.into_inner();
        eprintln!("generated: {GENERATED_CASES} requests; {tally:?}");
        assert_eq!(tally.requests, GENERATED_CASES as usize);
        assert!(
            tally.patched > 500 && tally.findings > 1000 && tally.denied > 300,
            "{tally:?}"
        );
    });
}

/// Generated requests (each under its own generated settings).
const GENERATED_CASES: u32 = 4096;
