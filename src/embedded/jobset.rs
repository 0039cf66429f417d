//! The Jobs a JobSet's controller creates (kubernetes-sigs/jobset, `api/jobset/v1alpha2`,
//! `pkg/webhooks/jobset_webhook.go`, `pkg/controllers/jobset_controller.go`):
//! - JobSet's defaulting webhook runs at creation: each template's `completionMode` defaults to
//!   `Indexed` and its pod `restartPolicy` to `OnFailure`; `network.enableDNSHostnames` to
//!   true. Its CRD defaults `replicas` to 1 and `groupName` to `default`.
//! - `constructJob`: for replica `i` of replicated job `r`, a Job named `<jobset>-<r>-<i>` in the
//!   JobSet's namespace, controlled by the JobSet, with the template's labels, annotations and
//!   spec; `labelAndAnnotateObject` adds the `jobset.sigs.k8s.io/*` labels and annotations to the
//!   Job and to its pod template; `spec.suspend` is the JobSet's; the pod's `subdomain` is the
//!   network's subdomain (else the JobSet's name) when DNS hostnames are enabled; the
//!   exclusive-placement node-selector strategy adds a node selector and a toleration;
//!   `volumeClaimPolicies` add a PVC volume for each claim template a container mounts.
//!
//! Behind alpha feature gates of the JobSet controller (off by default) it does more
//! (`RestartJob` adds `jobset.sigs.k8s.io/job-restart-attempt`); that is not modelled.

use serde_json::{Map, Value, json};

use super::controller_job::{ControllerJob, prune_unknown_fields};
use super::owner::JOBSET_API_VERSION;
use crate::job::version::KubernetesVersion;
use crate::json_str::str_at;

const JOBSET_NAME: &str = "jobset.sigs.k8s.io/jobset-name";
const JOBSET_UID: &str = "jobset.sigs.k8s.io/jobset-uid";
const REPLICATED_JOB_NAME: &str = "jobset.sigs.k8s.io/replicatedjob-name";
const RESTARTS: &str = "jobset.sigs.k8s.io/restart-attempt";
const REPLICATED_JOB_REPLICAS: &str = "jobset.sigs.k8s.io/replicatedjob-replicas";
const GLOBAL_REPLICAS: &str = "jobset.sigs.k8s.io/global-replicas";
const JOB_INDEX: &str = "jobset.sigs.k8s.io/job-index";
const JOB_KEY: &str = "jobset.sigs.k8s.io/job-key";
const JOB_GLOBAL_INDEX: &str = "jobset.sigs.k8s.io/job-global-index";
const GROUP_NAME: &str = "jobset.sigs.k8s.io/group-name";
const GROUP_REPLICAS: &str = "jobset.sigs.k8s.io/group-replicas";
const JOB_GROUP_INDEX: &str = "jobset.sigs.k8s.io/job-group-index";
const COORDINATOR: &str = "jobset.sigs.k8s.io/coordinator";
const EXCLUSIVE: &str = "alpha.jobset.sigs.k8s.io/exclusive-topology";
const NODE_SELECTOR_STRATEGY: &str = "alpha.jobset.sigs.k8s.io/node-selector";
const NAMESPACED_JOB: &str = "alpha.jobset.sigs.k8s.io/namespaced-job";
const NO_SCHEDULE: &str = "alpha.jobset.sigs.k8s.io/no-schedule";

/// The uid kube-apiserver gives the JobSet, which a manifest does not have: the Jobs' owner
/// reference and `jobset-uid` label carry this stand-in.
pub(super) const UID_STAND_IN: &str = "00000000-0000-0000-0000-000000000000";

/// One replicated job's facts (after defaulting).
struct Replicated {
    name: String,
    group: String,
    replicas: u32,
}

/// What every Job of the JobSet takes from it.
struct JobSetFacts {
    name: String,
    namespace: String,
    uid: String,
    restarts: i64,
    suspend: bool,
    subdomain: Option<String>,
    coordinator: Option<String>,
    annotations: Map<String, Value>,
    claim_templates: Vec<String>,
    replicated: Vec<Replicated>,
}

/// The first Job of each replicated job of `jobset` (a JobSet as written).
pub(super) fn jobs(
    mut jobset: Value,
    default_namespace: &str,
    release: KubernetesVersion,
) -> Result<Vec<ControllerJob>, String> {
    if !jobset.is_object() {
        return Err("a JobSet must be an object".into());
    }
    apply_defaults(&mut jobset)?;
    let facts = facts(&jobset, default_namespace);
    let Some(Value::Array(replicated)) = jobset.pointer_mut("/spec/replicatedJobs") else {
        return Ok(Vec::new());
    };
    let mut jobs = Vec::new();
    for (i, rjob) in replicated.iter_mut().enumerate() {
        let r = &facts.replicated[i];
        if r.replicas == 0 {
            continue; // no Job is created from it
        }
        let Some(template) = rjob.get_mut("template") else {
            continue;
        };
        // The template is moved into the Job: a copy of a large one costs as much again.
        let mut template = std::mem::take(template);
        prune_unknown_fields(&mut template, release);
        jobs.push(ControllerJob {
            template: format!("spec.replicatedJobs[{i}].template"),
            replicas: r.replicas,
            job: construct_job(&facts, i, 0, template),
        });
    }
    Ok(jobs)
}

/// JobSet's defaulting webhook (`jobSetWebhook.Default`) and its CRD's defaults, where they
/// reach the Jobs.
fn apply_defaults(jobset: &mut Value) -> Result<(), String> {
    let spec = object_at(jobset, "spec")?;
    if let Some(Value::Array(replicated)) = spec.get_mut("replicatedJobs") {
        for (i, rjob) in replicated.iter_mut().enumerate() {
            let Value::Object(rjob) = rjob else {
                return Err(format!("spec.replicatedJobs[{i}]: must be an object"));
            };
            rjob.entry("replicas").or_insert(json!(1));
            rjob.entry("groupName").or_insert(json!("default"));
            let Some(template) = rjob.get_mut("template") else {
                continue;
            };
            let job_spec = object_at(template, "spec")?;
            if job_spec.get("completionMode").is_none_or(Value::is_null) {
                job_spec.insert("completionMode".into(), json!("Indexed"));
            }
            let pod_spec = object_at_value(object_at_value(job_spec, "template")?, "spec")?;
            if pod_spec
                .get("restartPolicy")
                .is_none_or(|p| p.is_null() || p == "")
            {
                pod_spec.insert("restartPolicy".into(), json!("OnFailure"));
            }
        }
    }
    let network = object_at_value(spec, "network")?;
    if network.get("enableDNSHostnames").is_none_or(Value::is_null) {
        network.insert("enableDNSHostnames".into(), json!(true));
    }
    Ok(())
}

/// The object at `key` of `parent`, created when absent or null.
fn object_at<'v>(parent: &'v mut Value, key: &str) -> Result<&'v mut Map<String, Value>, String> {
    match parent {
        Value::Object(m) => object_at_value(m, key),
        _ => Err(format!("{key}: the parent must be an object")),
    }
}

fn object_at_value<'v>(
    parent: &'v mut Map<String, Value>,
    key: &str,
) -> Result<&'v mut Map<String, Value>, String> {
    let v = parent.entry(key).or_insert_with(|| json!({}));
    if v.is_null() {
        *v = json!({});
    }
    match v {
        Value::Object(m) => Ok(m),
        _ => Err(format!("{key}: must be an object")),
    }
}

fn facts(jobset: &Value, default_namespace: &str) -> JobSetFacts {
    let name = jobset_name(jobset);
    let replicated = replicated_jobs(jobset);
    let dns_hostnames = jobset
        .pointer("/spec/network/enableDNSHostnames")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let subdomain = subdomain(jobset, &name);
    let coordinator = coordinator_endpoint(jobset, &name, &subdomain);
    let claim_templates = claim_template_names(jobset);
    JobSetFacts {
        namespace: str_at(jobset, "/metadata/namespace")
            .filter(|n| !n.is_empty())
            .unwrap_or(default_namespace)
            .to_string(),
        uid: str_at(jobset, "/metadata/uid")
            .filter(|u| !u.is_empty())
            .unwrap_or(UID_STAND_IN)
            .to_string(),
        restarts: jobset
            .pointer("/status/restarts")
            .and_then(Value::as_i64)
            .unwrap_or(0),
        suspend: jobset
            .pointer("/spec/suspend")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        subdomain: dns_hostnames.then_some(subdomain),
        coordinator,
        annotations: jobset
            .pointer("/metadata/annotations")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default(),
        claim_templates,
        replicated,
        name,
    }
}

/// The JobSet's name: `metadata.name`, else what kube-apiserver makes of `generateName`.
fn jobset_name(jobset: &Value) -> String {
    match (
        str_at(jobset, "/metadata/name").filter(|n| !n.is_empty()),
        str_at(jobset, "/metadata/generateName"),
    ) {
        (Some(n), _) => n.to_string(),
        // kube-apiserver appends five random characters.
        (None, Some(g)) => format!("{g}xxxxx"),
        (None, None) => "jobset".into(),
    }
}

/// `GetSubdomain`: `network.subdomain`, else the JobSet's name.
fn subdomain(jobset: &Value, name: &str) -> String {
    jobset
        .pointer("/spec/network/subdomain")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .unwrap_or(name)
        .to_string()
}

/// `CoordinatorEndpoint`: `<jobset>-<replicatedJob>-<jobIndex>-<podIndex>.<subdomain>`, when
/// `spec.coordinator` is set.
fn coordinator_endpoint(jobset: &Value, name: &str, subdomain: &str) -> Option<String> {
    jobset.pointer("/spec/coordinator").map(|c| {
        format!(
            "{name}-{}-{}-{}.{subdomain}",
            str_at(c, "/replicatedJob").unwrap_or_default(),
            c.get("jobIndex").and_then(Value::as_i64).unwrap_or(0),
            c.get("podIndex").and_then(Value::as_i64).unwrap_or(0),
        )
    })
}

/// `spec.replicatedJobs`: name, group and replicas of each.
fn replicated_jobs(jobset: &Value) -> Vec<Replicated> {
    jobset
        .pointer("/spec/replicatedJobs")
        .and_then(Value::as_array)
        .map(|jobs| {
            jobs.iter()
                .map(|r| Replicated {
                    name: str_at(r, "/name").unwrap_or_default().to_string(),
                    group: str_at(r, "/groupName").unwrap_or("default").to_string(),
                    replicas: r
                        .get("replicas")
                        .and_then(Value::as_u64)
                        .and_then(|n| u32::try_from(n).ok())
                        .unwrap_or(0),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The names of the claim templates of `spec.volumeClaimPolicies`.
fn claim_template_names(jobset: &Value) -> Vec<String> {
    jobset
        .pointer("/spec/volumeClaimPolicies")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| p.get("templates").and_then(Value::as_array))
        .flatten()
        .filter_map(|t| str_at(t, "/metadata/name").map(str::to_string))
        .collect()
}

/// `constructJob(js, rjob, jobIdx)`.
fn construct_job(facts: &JobSetFacts, r: usize, index: u32, template: Value) -> Value {
    let rjob = &facts.replicated[r];
    let job_name = format!("{}-{}-{index}", facts.name, rjob.name);
    let (mut metadata, mut spec) = match template {
        Value::Object(mut t) => (
            t.remove("metadata").unwrap_or(Value::Null),
            t.remove("spec").unwrap_or(Value::Null),
        ),
        _ => (Value::Null, Value::Null),
    };
    let template_annotations = metadata.get("annotations").cloned().unwrap_or(Value::Null);
    let mut job_meta = Map::new();
    for key in ["labels", "annotations"] {
        if let Some(v) = metadata.get_mut(key).filter(|v| v.is_object()) {
            job_meta.insert(key.into(), std::mem::take(v));
        }
    }
    job_meta.insert("name".into(), json!(job_name));
    job_meta.insert("namespace".into(), json!(facts.namespace));
    job_meta.insert(
        "ownerReferences".into(),
        json!([{
            "apiVersion": JOBSET_API_VERSION, "kind": "JobSet", "name": facts.name, "uid": facts.uid,
            "controller": true, "blockOwnerDeletion": true,
        }]),
    );
    let (labels, annotations) =
        label_and_annotate(facts, r, index, &job_name, &template_annotations);
    add_all(&mut job_meta, "labels", &labels);
    add_all(&mut job_meta, "annotations", &annotations);

    if !spec.is_object() {
        spec = json!({});
    }
    let Value::Object(spec_map) = &mut spec else {
        unreachable!("made an object above")
    };
    let pod = spec_map.entry("template").or_insert_with(|| json!({}));
    if !pod.is_object() {
        *pod = json!({});
    }
    if let Value::Object(pod) = pod {
        complete_pod_template(pod, facts, &job_name, &labels, &annotations);
    }
    spec_map.insert("suspend".into(), json!(facts.suspend));
    json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": job_meta, "spec": spec})
}

/// The Job's pod template: the Job's labels and annotations on its metadata, then the pod spec
/// completed (`complete_pod_spec`).
fn complete_pod_template(
    pod: &mut Map<String, Value>,
    facts: &JobSetFacts,
    job_name: &str,
    labels: &Map<String, Value>,
    annotations: &Map<String, Value>,
) {
    let pod_meta = pod.entry("metadata").or_insert_with(|| json!({}));
    if !pod_meta.is_object() {
        *pod_meta = json!({});
    }
    if let Value::Object(pod_meta) = pod_meta {
        add_all(pod_meta, "labels", labels);
        add_all(pod_meta, "annotations", annotations);
    }
    let pod_spec = pod.entry("spec").or_insert_with(|| json!({}));
    if !pod_spec.is_object() {
        *pod_spec = json!({});
    }
    if let Value::Object(pod_spec) = pod_spec {
        complete_pod_spec(pod_spec, facts, job_name, annotations);
    }
}

/// What the JobSet controller sets in the pod spec: the subdomain, exclusive placement's node
/// selector and toleration, the volumes of the claim templates the containers mount.
fn complete_pod_spec(
    pod_spec: &mut Map<String, Value>,
    facts: &JobSetFacts,
    job_name: &str,
    annotations: &Map<String, Value>,
) {
    if let Some(subdomain) = &facts.subdomain {
        pod_spec.insert("subdomain".into(), json!(subdomain));
    }
    let exclusive =
        annotations.contains_key(EXCLUSIVE) && annotations.contains_key(NODE_SELECTOR_STRATEGY);
    if exclusive {
        add_all(
            pod_spec,
            "nodeSelector",
            &Map::from_iter([(
                NAMESPACED_JOB.to_string(),
                json!(format!("{}_{job_name}", facts.namespace)),
            )]),
        );
        let toleration = json!({"key": NO_SCHEDULE, "operator": "Exists", "effect": "NoSchedule"});
        push(pod_spec, "tolerations", toleration);
    }
    for claim in &facts.claim_templates {
        if mounts(pod_spec, claim) {
            let volume = json!({"name": claim, "persistentVolumeClaim": {"claimName": format!("{claim}-{}", facts.name)}});
            push(pod_spec, "volumes", volume);
        }
    }
}

/// `labelAndAnnotateObject`: the labels and annotations added to the Job and its pod template
/// (`template_annotations`: the replicated job template's, for exclusive placement).
fn label_and_annotate(
    facts: &JobSetFacts,
    r: usize,
    index: u32,
    job_name: &str,
    template_annotations: &Value,
) -> (Map<String, Value>, Map<String, Value>) {
    let rjob = &facts.replicated[r];
    let global_replicas: u64 = facts.replicated.iter().map(|j| u64::from(j.replicas)).sum();
    let global_index: u64 = facts.replicated[..r]
        .iter()
        .map(|j| u64::from(j.replicas))
        .sum::<u64>()
        + u64::from(index);
    let group = facts.replicated.iter().filter(|j| j.group == rjob.group);
    let group_replicas: u64 = group.clone().map(|j| u64::from(j.replicas)).sum();
    let group_index: u64 = facts.replicated[..r]
        .iter()
        .filter(|j| j.group == rjob.group)
        .map(|j| u64::from(j.replicas))
        .sum::<u64>()
        + u64::from(index);
    let mut common = Map::new();
    for (k, v) in [
        (JOBSET_NAME, facts.name.clone()),
        (JOBSET_UID, facts.uid.clone()),
        (REPLICATED_JOB_NAME, rjob.name.clone()),
        (RESTARTS, facts.restarts.to_string()),
        (REPLICATED_JOB_REPLICAS, rjob.replicas.to_string()),
        (GLOBAL_REPLICAS, global_replicas.to_string()),
        (JOB_INDEX, index.to_string()),
        (
            JOB_KEY,
            sha1_hex(&format!("{}/{job_name}", facts.namespace)),
        ),
        (JOB_GLOBAL_INDEX, global_index.to_string()),
        (GROUP_NAME, rjob.group.clone()),
        (GROUP_REPLICAS, group_replicas.to_string()),
        (JOB_GROUP_INDEX, group_index.to_string()),
    ] {
        common.insert(k.into(), json!(v));
    }
    if let Some(endpoint) = &facts.coordinator {
        common.insert(COORDINATOR.into(), json!(endpoint));
    }
    let labels = common.clone();
    let mut annotations = common;
    add_exclusive_placement(&mut annotations, facts, template_annotations);
    (labels, annotations)
}

/// Exclusive placement: the JobSet's annotation, then the replicated job template's, each with
/// its node-selector strategy.
fn add_exclusive_placement(
    annotations: &mut Map<String, Value>,
    facts: &JobSetFacts,
    template_annotations: &Value,
) {
    for source in [
        &Value::Object(facts.annotations.clone()),
        template_annotations,
    ] {
        if let Some(domain) = source.get(EXCLUSIVE) {
            annotations.insert(EXCLUSIVE.into(), domain.clone());
            if let Some(strategy) = source.get(NODE_SELECTOR_STRATEGY) {
                annotations.insert(NODE_SELECTOR_STRATEGY.into(), strategy.clone());
            }
        }
    }
}

/// Sets every entry of `add` in the map at `key` (created when absent).
fn add_all(parent: &mut Map<String, Value>, key: &str, add: &Map<String, Value>) {
    let map = parent.entry(key).or_insert_with(|| json!({}));
    if !map.is_object() {
        *map = json!({});
    }
    if let Value::Object(map) = map {
        for (k, v) in add {
            map.insert(k.clone(), v.clone());
        }
    }
}

/// Appends `item` to the list at `key` (created when absent).
fn push(parent: &mut Map<String, Value>, key: &str, item: Value) {
    let list = parent.entry(key).or_insert_with(|| json!([]));
    if !list.is_array() {
        *list = json!([]);
    }
    if let Value::Array(list) = list {
        list.push(item);
    }
}

/// `hasVolumeMount`: a container or init container mounts a volume named `name`.
fn mounts(pod_spec: &Map<String, Value>, name: &str) -> bool {
    ["containers", "initContainers"].iter().any(|list| {
        pod_spec
            .get(*list)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|c| c.get("volumeMounts").and_then(Value::as_array))
            .flatten()
            .any(|m| m.get("name").and_then(Value::as_str) == Some(name))
    })
}

/// `sha1Hash`: the hex SHA-1 of `s` (the `job-key` label).
fn sha1_hex(s: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, s.as_bytes());
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}
