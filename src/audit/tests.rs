//! `jobgate audit` against scripted API responses (tower-test), on the objects of
//! tests/fixtures/validate: every verdict is the library's (`jobgate check`'s path), attributed
//! to kube-apiserver or to a policy.

use kube::Client;
use serde_json::{Value, json};

use super::evaluate::{AuditFinding, Inventory, PolicyResult};
use super::*;
use crate::job::Config;
use crate::job::levels::Level;
use crate::job::levels::PolicyName;
use crate::runtime::scripted::{Exchange, exchange, serve};

fn fixture_object(name: &str) -> Value {
    let text = match name {
        "denied" => {
            include_str!(
                "../../tests/fixtures/validate/job-create-denied-pod-failure-policy.request.json"
            )
        }
        "warned" => {
            include_str!(
                "../../tests/fixtures/validate/job-create-warned-recovery-incomplete.request.json"
            )
        }
        "allowed" => include_str!("../../tests/fixtures/validate/job-allowed.request.json"),
        "cronjob" => include_str!("../../tests/fixtures/validate/cronjob-allowed.request.json"),
        other => panic!("no fixture {other}"),
    };
    let review: Value = serde_json::from_str(text).unwrap();
    let mut object = review["request"]["object"].clone();
    // As a list item: no apiVersion/kind of its own.
    let map = object.as_object_mut().unwrap();
    map.remove("apiVersion");
    map.remove("kind");
    object
}

/// `pi-training` (job-allowed.request.json) in ml-team: ready for recovery (Failed, an Ignore
/// rule on DisruptionTarget).
const PI_TRAINING_UID: &str = "0b6c4a2e-5f0e-4f4e-9c1e-2f1f7c9d3a10";
/// `pi-plain`: pi-training without podFailurePolicy and podReplacementPolicy, so it runs with
/// TerminatingOrFailed and counts every failed pod toward backoffLimit.
const PI_PLAIN_UID: &str = "0b6c4a2e-5f0e-4f4e-9c1e-00000000a1a1";

fn pi_plain() -> Value {
    let mut job = fixture_object("allowed");
    job["metadata"]["name"] = json!("pi-plain");
    job["metadata"]["uid"] = json!(PI_PLAIN_UID);
    let spec = job["spec"].as_object_mut().unwrap();
    spec.remove("podFailurePolicy");
    spec.remove("podReplacementPolicy");
    job
}
const KEY: &str = crate::kueue::SAFE_TO_FORCEFULLY_TERMINATE;

fn pod(name: &str, annotation: Option<&str>, owner: Option<(&str, &str)>) -> Value {
    let mut meta = json!({"name": name, "namespace": "ml-team"});
    if let Some(v) = annotation {
        meta["annotations"] = json!({KEY: v});
    }
    if let Some((job, uid)) = owner {
        meta["ownerReferences"] = json!([{"apiVersion": "batch/v1", "kind": "Job",
            "name": job, "uid": uid, "controller": true}]);
    }
    json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": meta})
}

fn list(kind: &str, items: Vec<Value>, next: Option<&str>) -> Value {
    json!({"kind": kind, "apiVersion": "v1", "metadata": {"continue": next}, "items": items})
}

fn get(path_and_query: &'static str, response: Value) -> Exchange {
    exchange("GET", path_and_query, 200, response)
}

/// The cluster-wide script: Jobs in two pages, CronJobs, pod metadata.
fn script() -> Vec<Exchange> {
    vec![
        get(
            "/apis/batch/v1/jobs?&limit=500",
            list(
                "JobList",
                vec![fixture_object("denied"), fixture_object("warned")],
                Some("tok-1"),
            ),
        ),
        get(
            "/apis/batch/v1/jobs?&limit=500&continue=tok-1",
            list("JobList", vec![fixture_object("allowed"), pi_plain()], None),
        ),
        get(
            "/apis/batch/v1/cronjobs?&limit=500",
            list("CronJobList", vec![fixture_object("cronjob")], None),
        ),
        get(
            "/api/v1/pods?&limit=500",
            list(
                "PartialObjectMetadataList",
                vec![
                    pod("plain-0", Some("true"), Some(("pi-plain", PI_PLAIN_UID))),
                    pod("pi-0", Some("true"), Some(("pi-training", PI_TRAINING_UID))),
                    pod("plain-1", Some("true"), Some(("pi-plain", PI_PLAIN_UID))),
                    // Not opted in ("True" is not "true"), a bare pod, an older Job's pod.
                    pod("plain-2", Some("True"), Some(("pi-plain", PI_PLAIN_UID))),
                    pod("bare", Some("true"), None),
                    pod("old", Some("true"), Some(("pi-plain", "another-uid"))),
                ],
                None,
            ),
        ),
    ]
}

async fn fetched(namespace: Option<&str>, script: Vec<Exchange>) -> Inventory {
    let (service, handle) = tower_test::mock::pair();
    let server = tokio::spawn(serve(handle, script));
    let client = Client::new(service, "default");
    let inventory = fetch::fetch(&client, namespace).await.unwrap();
    server.await.unwrap();
    inventory
}

fn findings(audit: &Audit, name: &str) -> Vec<AuditFinding> {
    audit
        .audited
        .iter()
        .find(|a| a.name == name)
        .unwrap_or_else(|| panic!("{name} audited"))
        .findings
        .clone()
}

fn policies(f: &[AuditFinding]) -> Vec<(&'static str, PolicyResult)> {
    f.iter().map(|f| (f.policy, f.result)).collect()
}

#[tokio::test]
async fn fetch_pages_through_jobs_cronjobs_and_pod_metadata_of_every_namespace() {
    let inventory = fetched(None, script()).await;
    let kinds: Vec<(&str, &str, &str)> = inventory
        .objects
        .iter()
        .map(|o| {
            (
                o["apiVersion"].as_str().unwrap(),
                o["kind"].as_str().unwrap(),
                o["metadata"]["name"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("batch/v1", "Job", "train-bad-policy"),
            ("batch/v1", "Job", "train-warned"),
            ("batch/v1", "Job", "pi-training"),
            ("batch/v1", "Job", "pi-plain"),
            ("batch/v1", "CronJob", "nightly-eval"),
        ]
    );
    assert_eq!(inventory.pods.len(), 6);
    assert_eq!(
        inventory.pods[1]
            .job
            .as_ref()
            .map(|j| (j.name.as_str(), j.uid.as_str())),
        Some(("pi-training", PI_TRAINING_UID))
    );
    assert_eq!(
        inventory.pods[1].annotations.get(KEY).map(String::as_str),
        Some("true")
    );
    assert_eq!(inventory.pods[4].job, None);
}

#[tokio::test]
async fn fetch_of_one_namespace_lists_only_there() {
    let script = vec![
        get(
            "/apis/batch/v1/namespaces/ml/jobs?&limit=500",
            list("JobList", vec![], None),
        ),
        get(
            "/apis/batch/v1/namespaces/ml/cronjobs?&limit=500",
            list("CronJobList", vec![], None),
        ),
        get(
            "/api/v1/namespaces/ml/pods?&limit=500",
            list("PartialObjectMetadataList", vec![], None),
        ),
    ];
    let inventory = fetched(Some("ml"), script).await;
    assert!(inventory.objects.is_empty() && inventory.pods.is_empty());
}

// The verdicts are /validate's: the denied fixture is denied for kube-apiserver's rules, the
// warned one warned by the two recovery policies, the others pass.
#[tokio::test]
async fn each_object_gets_validates_verdict_attributed_to_kube_apiserver_or_a_policy() {
    let audit = audit(&fetched(None, script()).await, &Config::default());
    let allowed: Vec<(&str, bool)> = audit
        .report
        .objects
        .iter()
        .map(|o| (o.name.as_str(), o.allowed()))
        .collect();
    assert_eq!(
        allowed,
        [
            ("train-bad-policy", false),
            ("train-warned", true),
            ("pi-training", true),
            ("pi-plain", true),
            ("nightly-eval", true),
        ]
    );
    let denied = findings(&audit, "train-bad-policy");
    assert!(!denied.is_empty());
    assert!(
        denied
            .iter()
            .all(|f| (f.policy, f.result) == ("kube-apiserver", PolicyResult::Fail)),
        "{denied:?}"
    );
    assert_eq!(
        denied.len(),
        audit.report.objects[0]
            .with_severity(crate::job::finding::Severity::Error)
            .count(),
        "one finding per field error"
    );
    assert_eq!(
        policies(&findings(&audit, "train-warned")),
        [
            ("recovery-needs-failed", PolicyResult::Warn),
            ("recovery-counts-toward-backoff", PolicyResult::Warn),
        ]
    );
    // The messages are the response's warnings, word for word.
    let warned: Vec<String> = audit.report.objects[1]
        .with_severity(crate::job::finding::Severity::Warning)
        .map(|f| f.finding.message())
        .collect();
    for f in findings(&audit, "train-warned") {
        assert!(warned.contains(&f.message), "{f:?} not in {warned:?}");
    }
    assert!(findings(&audit, "pi-training").is_empty());
    assert!(
        findings(&audit, "pi-plain").is_empty(),
        "its template is not opted in"
    );
    assert!(findings(&audit, "nightly-eval").is_empty());
    assert_eq!(exit_code(&audit), crate::check::EXIT_DENIED);
}

// A policy at deny is a `fail` of that policy; a policy turned off says nothing.
#[tokio::test]
async fn policy_levels_decide_fail_warn_or_nothing() {
    let mut config = Config::default();
    config
        .policies
        .set(PolicyName::RecoveryNeedsFailed, Level::Deny);
    config
        .policies
        .set(PolicyName::RecoveryCountsTowardBackoff, Level::Off);
    let audit = audit(&fetched(None, script()).await, &config);
    assert_eq!(
        policies(&findings(&audit, "train-warned")),
        [("recovery-needs-failed", PolicyResult::Fail)]
    );
    assert!(!audit.report.objects[1].allowed());
}

// "pods opted into recovery whose Job cannot benefit": pi-plain's pods are opted in (its template
// is not) but it runs with TerminatingOrFailed and no Ignore rule on DisruptionTarget.
// pi-training's opted-in pod can benefit; plain-2 ("True"), the bare pod and the pod of an older
// Job with the same name are not counted.
#[tokio::test]
async fn opted_in_pods_of_a_job_that_cannot_benefit_are_reported_with_the_reason() {
    let audit = audit(&fetched(None, script()).await, &Config::default());
    assert_eq!(audit.recovery.len(), 1, "{:?}", audit.recovery);
    let r = &audit.recovery[0];
    assert_eq!(
        (r.namespace.as_str(), r.job.as_str()),
        ("ml-team", "pi-plain")
    );
    assert_eq!(r.pods, ["plain-0", "plain-1"]);
    assert_eq!(
        policies(&r.findings),
        [
            ("recovery-needs-failed", PolicyResult::Warn),
            ("recovery-counts-toward-backoff", PolicyResult::Warn),
        ]
    );
    // Whatever the policies' admission levels: this is about the pods.
    let off = Config {
        policies: crate::job::levels::Policies::all(Level::Off),
        ..Config::default()
    };
    let quiet = super::audit(&fetched(None, script()).await, &off);
    assert_eq!(quiet.recovery, audit.recovery);
    assert!(quiet.audited.iter().all(|a| a.policy_free()));
}

impl evaluate::Audited {
    fn policy_free(&self) -> bool {
        self.findings.iter().all(|f| f.policy == "kube-apiserver")
    }
}

#[tokio::test]
async fn text_output_is_checks_lines_plus_the_recovery_findings() {
    let audit = audit(&fetched(None, script()).await, &Config::default());
    let (mut out, mut err) = (Vec::new(), Vec::new());
    write(&audit, AuditOutput::Text, 0, &mut out, &mut err).unwrap();
    let out = String::from_utf8(out).unwrap();
    let err = String::from_utf8(err).unwrap();
    assert!(
        out.lines().any(|l| l.starts_with(
            "ml Job/train-bad-policy: spec.podFailurePolicy.rules[0].onExitCodes.containerName: Invalid value: \"trainer-sidecar\""
        )),
        "{out}"
    );
    assert!(
        out.contains("ml Job/train-warned: Warning: jobgate: spec.podReplacementPolicy: \"TerminatingOrFailed\": recovery needs \"Failed\", else replacements start early\n"),
        "{out}"
    );
    assert!(
        out.contains("ml-team Job/pi-plain: pod(s) plain-0, plain-1 opted into recovery cannot benefit: jobgate: spec.podFailurePolicy: no Ignore rule on DisruptionTarget; each recovered pod counts toward backoffLimit\n"),
        "{out}"
    );
    assert_eq!(
        err,
        "jobgate audit: 5 checked, 1 would be denied, 1 with warnings, 0 unreadable; 1 Job(s) with opted-in pods that cannot benefit from recovery\n"
    );
}

#[tokio::test]
async fn json_output_is_checks_report_plus_recovery() {
    let audit = audit(&fetched(None, script()).await, &Config::default());
    let (mut out, mut err) = (Vec::new(), Vec::new());
    write(&audit, AuditOutput::Json, 0, &mut out, &mut err).unwrap();
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["objects"].as_array().unwrap().len(), 5);
    assert_eq!(v["objects"][0]["location"], "ml");
    assert_eq!(v["objects"][0]["allowed"], false);
    assert_eq!(v["objects"][0]["namespace"], "ml");
    assert_eq!(
        v["objects"][0]["findings"][0]["reason"],
        "FieldValueInvalid"
    );
    assert_eq!(v["objects"][0]["findings"][0]["severity"], "error");
    assert_eq!(v["summary"]["checked"], 5);
    assert_eq!(v["unreadable"], json!([]));
    assert_eq!(v["recovery"][0]["job"], "pi-plain");
    assert_eq!(v["recovery"][0]["pods"], json!(["plain-0", "plain-1"]));
    assert_eq!(
        v["recovery"][0]["findings"][1]["policy"],
        "recovery-counts-toward-backoff"
    );
    assert!(err.is_empty());
}

// wg-policy PolicyReport (wgpolicyk8s.io/v1alpha2): one per namespace, results per policy, a
// summary that adds up, each result naming the object.
#[tokio::test]
async fn policyreport_output_is_one_report_per_namespace() {
    let audit = audit(&fetched(None, script()).await, &Config::default());
    let (mut out, mut err) = (Vec::new(), Vec::new());
    write(
        &audit,
        AuditOutput::Policyreport,
        1_800_000_000,
        &mut out,
        &mut err,
    )
    .unwrap();
    let text = String::from_utf8(out).unwrap();
    let reports: Vec<Value> = serde_yaml_ng::Deserializer::from_str(&text)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .collect();
    let names: Vec<(&str, &str, &str)> = reports
        .iter()
        .map(|r| {
            (
                r["kind"].as_str().unwrap(),
                r["metadata"]["namespace"].as_str().unwrap(),
                r["metadata"]["name"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            ("PolicyReport", "ml", "jobgate-audit"),
            ("PolicyReport", "ml-team", "jobgate-audit"),
        ]
    );
    for r in &reports {
        assert_eq!(r["apiVersion"], "wgpolicyk8s.io/v1alpha2");
        let results = r["results"].as_array().unwrap();
        for outcome in ["pass", "fail", "warn"] {
            let n = results.iter().filter(|x| x["result"] == outcome).count();
            assert_eq!(r["summary"][outcome], n, "{outcome} in {r}");
        }
        for x in results {
            assert_eq!(x["source"], "jobgate");
            assert_eq!(
                x["timestamp"],
                json!({"seconds": 1_800_000_000i64, "nanos": 0})
            );
            assert_eq!(x["resources"][0]["namespace"], r["metadata"]["namespace"]);
        }
    }
    let ml = &reports[0];
    let denied = audit.report.objects[0]
        .with_severity(crate::job::finding::Severity::Error)
        .count();
    assert_eq!(ml["summary"]["fail"], denied);
    assert_eq!(ml["summary"]["warn"], 2);
    assert_eq!(ml["summary"]["pass"], 0);
    let ml_team = &reports[1];
    // pi-training, pi-plain and nightly-eval pass; pi-plain's pods cannot benefit.
    assert_eq!(ml_team["summary"]["pass"], 3);
    assert_eq!(ml_team["summary"]["warn"], 2);
    let warns: Vec<&Value> = ml_team["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["result"] == "warn")
        .collect();
    assert_eq!(warns[0]["policy"], "recovery-needs-failed");
    assert_eq!(warns[1]["policy"], "recovery-counts-toward-backoff");
    for warn in warns {
        assert_eq!(warn["resources"][0]["name"], "pi-plain");
        assert_eq!(warn["resources"][0]["uid"], PI_PLAIN_UID);
        assert!(
            warn["message"].as_str().unwrap().starts_with(
                "pod(s) plain-0, plain-1 opted into recovery cannot benefit: jobgate: "
            ),
            "{warn}"
        );
    }
}

// An object the API returns but the rules cannot read is reported, not a panic.
#[test]
fn an_unreadable_object_is_reported_and_exits_2() {
    let inventory = Inventory {
        objects: vec![json!({"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "odd", "namespace": "ml"}, "spec": "not an object"})],
        pods: vec![],
    };
    let audit = audit(&inventory, &Config::default());
    assert_eq!(audit.report.unreadable.len(), 1);
    assert!(audit.audited.is_empty());
    assert_eq!(exit_code(&audit), crate::check::EXIT_UNREADABLE);
}

// Which controller recovers each Job's opted-in pods, as the reconciler reads them: Kueue's key
// is Kueue's (with --kueue-recovers, the default), jobgate's key is jobgate's, and
// --kueue-recovers=false takes Kueue's back.
#[test]
fn the_audit_says_which_controller_recovers_each_jobs_opted_in_pods() {
    use crate::kueue::{SAFE_TO_FORCEFULLY_DELETE, SAFE_TO_FORCEFULLY_TERMINATE};
    let pod = |name: &str, job: &str, key: &str| super::evaluate::AuditedPod {
        namespace: "ml".into(),
        name: name.into(),
        annotations: [(key.to_string(), "true".to_string())].into(),
        job: Some(super::evaluate::OwnerJob {
            name: job.into(),
            uid: format!("{job}-uid"),
        }),
    };
    let inventory = Inventory {
        objects: vec![],
        pods: vec![
            pod("sweep-0", "sweep", SAFE_TO_FORCEFULLY_DELETE),
            pod("train-0", "train", SAFE_TO_FORCEFULLY_TERMINATE),
            pod("sweep-1", "sweep", SAFE_TO_FORCEFULLY_DELETE),
        ],
    };
    let by = |kueue_recovers| {
        super::evaluate::recovered_by(&inventory, &Config::default(), kueue_recovers)
            .into_iter()
            .map(|r| format!("{} {} {}", r.job, r.pods.join(","), r.controller))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        by(true),
        ["sweep sweep-0,sweep-1 kueue", "train train-0 jobgate"]
    );
    assert_eq!(
        by(false),
        ["sweep sweep-0,sweep-1 jobgate", "train train-0 jobgate"]
    );
}
