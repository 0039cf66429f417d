//! The JobSet a Kubeflow Trainer TrainJob becomes from its runtime (kubeflow/trainer,
//! `pkg/apis/trainer/v1alpha1` `TrainingRuntimeSpec.Template` is a JobSet template;
//! `pkg/runtime/core/trainingruntime.go` and `pkg/runtime/framework/plugins/jobset`):
//! - the JobSet is named after the TrainJob, in its namespace, with the template's metadata and
//!   spec;
//! - every replicated job gets `parallelism` and `completions` equal to its pod count: its
//!   template's `parallelism` (default 1), or `mlPolicy.numNodes` (default 1) for the one
//!   labelled `trainer.kubeflow.org/trainjob-ancestor-step: trainer` (`syncParallelCount`);
//! - the initializer and trainer steps run one replica (`Builder.Initializer`, `.Trainer`).
//!
//! A runtime alone does not say which TrainJob will use it: the JobSet is named after the
//! runtime, and what a TrainJob adds (image, command, env, `runtimePatches`, resources per node)
//! is not there.

use serde_json::{Map, Value, json};

use super::owner::{JOBSET_API_VERSION, Owner};

const ANCESTOR: &str = "trainer.kubeflow.org/trainjob-ancestor-step";
const ANCESTOR_TRAINER: &str = "trainer";
const ONE_REPLICA: [&str; 3] = ["dataset-initializer", "model-initializer", ANCESTOR_TRAINER];

/// The JobSet a TrainJob using `runtime` becomes.
pub(super) fn jobset(owner: Owner, mut runtime: Value, namespace: &str) -> Result<Value, String> {
    let name = runtime
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .unwrap_or("trainjob")
        .to_string();
    let namespace = match owner {
        Owner::TrainingRuntime => runtime
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .unwrap_or(namespace),
        _ => namespace,
    }
    .to_string();
    let num_nodes = runtime
        .pointer("/spec/mlPolicy")
        .filter(|p| !p.is_null())
        .map(|p| p.get("numNodes").and_then(Value::as_i64).unwrap_or(1));
    let template = runtime
        .pointer_mut("/spec/template")
        .map(std::mem::take)
        .unwrap_or(Value::Null);
    let (metadata, mut spec) = match template {
        Value::Object(mut t) => (
            t.remove("metadata").unwrap_or(Value::Null),
            t.remove("spec").unwrap_or_else(|| json!({})),
        ),
        Value::Null => (Value::Null, json!({})),
        _ => return Err("spec.template: must be an object".into()),
    };
    if let Some(Value::Array(replicated)) = spec.get_mut("replicatedJobs") {
        for rjob in replicated.iter_mut().filter(|r| r.is_object()) {
            size_replicated_job(rjob, num_nodes);
        }
    }
    let mut meta = Map::new();
    meta.insert("name".into(), json!(name));
    meta.insert("namespace".into(), json!(namespace));
    for key in ["labels", "annotations"] {
        if let Some(v) = metadata.get(key).filter(|v| v.is_object()) {
            meta.insert(key.into(), v.clone());
        }
    }
    Ok(json!({"apiVersion": JOBSET_API_VERSION, "kind": "JobSet", "metadata": meta, "spec": spec}))
}

/// One replicated job: one replica for the initializer and trainer steps, and `parallelism`
/// and `completions` equal to its pod count (`syncParallelCount`).
fn size_replicated_job(rjob: &mut Value, num_nodes: Option<i64>) {
    let ancestor = rjob
        .pointer(&format!(
            "/template/metadata/labels/{}",
            ANCESTOR.replace('/', "~1")
        ))
        .and_then(Value::as_str)
        .map(str::to_string);
    if ancestor
        .as_deref()
        .is_some_and(|a| ONE_REPLICA.contains(&a))
    {
        rjob["replicas"] = json!(1);
    }
    let Some(job_spec) = rjob.pointer_mut("/template/spec").filter(|s| s.is_object()) else {
        return;
    };
    let count = match (ancestor.as_deref(), num_nodes) {
        (Some(ANCESTOR_TRAINER), Some(n)) => json!(n),
        _ => job_spec
            .get("parallelism")
            .filter(|p| !p.is_null())
            .cloned()
            .unwrap_or(json!(1)),
    };
    job_spec["parallelism"] = count.clone();
    job_spec["completions"] = count;
}
