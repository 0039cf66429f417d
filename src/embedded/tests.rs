//! The Jobs built here are the ones JobSet's `TestConstructJobsFromTemplate` expects
//! (`pkg/controllers/jobset_controller_test.go`: names, the `jobset.sigs.k8s.io/*` labels and
//! annotations on the Job and its pod template, suspend, subdomain), after the defaulting
//! webhook (`TestJobSetDefaulting`), and Trainer's runtime-to-JobSet steps.

use serde_json::{Value, json};

use super::*;

const NEWEST: KubernetesVersion = KubernetesVersion::V1_38;

fn jobset() -> Value {
    json!({
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {"name": "train", "namespace": "ml"},
        "spec": {
            "replicatedJobs": [
                {"name": "driver", "template": {"spec": {"template": {"spec": {
                    "containers": [{"name": "d", "image": "x"}]}}}}},
                {"name": "workers", "replicas": 4, "template": {
                    "metadata": {"labels": {"team": "a"}, "annotations": {"note": "n"}},
                    "spec": {"parallelism": 2, "completions": 2, "completionMode": "NonIndexed",
                        "backofLimit": 3,
                        "template": {"metadata": {"labels": {"pod": "p"}},
                            "spec": {"restartPolicy": "Never", "containers": [{"name": "w", "image": "x"}]}}}}}
            ]
        }
    })
}

fn labels(rjob: &str, index: u32, replicas: u32, global: u32, key: &str) -> Value {
    json!({
        "jobset.sigs.k8s.io/jobset-name": "train",
        "jobset.sigs.k8s.io/jobset-uid": jobset::UID_STAND_IN,
        "jobset.sigs.k8s.io/replicatedjob-name": rjob,
        "jobset.sigs.k8s.io/restart-attempt": "0",
        "jobset.sigs.k8s.io/replicatedjob-replicas": replicas.to_string(),
        "jobset.sigs.k8s.io/global-replicas": "5",
        "jobset.sigs.k8s.io/job-index": index.to_string(),
        "jobset.sigs.k8s.io/job-key": key,
        "jobset.sigs.k8s.io/job-global-index": global.to_string(),
        "jobset.sigs.k8s.io/group-name": "default",
        "jobset.sigs.k8s.io/group-replicas": "5",
        "jobset.sigs.k8s.io/job-group-index": global.to_string(),
    })
}

#[test]
fn a_jobset_makes_one_job_per_replicated_job_named_and_labelled_as_its_controller_does() {
    let jobs = controller_jobs(Owner::JobSet, jobset(), "default", NEWEST).unwrap();
    assert_eq!(jobs.len(), 2);
    assert_eq!(jobs[0].template, "spec.replicatedJobs[0].template");
    assert_eq!(jobs[0].replicas, 1);
    // `sha1("ml/train-driver-0")`.
    let driver_labels = labels(
        "driver",
        0,
        1,
        0,
        "e7672ee296fd560b6c31ecddd7bc0db38e6cd765",
    );
    assert_eq!(
        jobs[0].job,
        json!({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {
                "name": "train-driver-0", "namespace": "ml",
                "labels": driver_labels, "annotations": driver_labels,
                "ownerReferences": [{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                    "name": "train", "uid": jobset::UID_STAND_IN, "controller": true,
                    "blockOwnerDeletion": true}],
            },
            "spec": {
                // JobSet's defaulting webhook.
                "completionMode": "Indexed",
                "suspend": false,
                "template": {
                    "metadata": {"labels": driver_labels, "annotations": driver_labels},
                    // restartPolicy defaulted; DNS hostnames on by default: the JobSet's name.
                    "spec": {"restartPolicy": "OnFailure", "subdomain": "train",
                        "containers": [{"name": "d", "image": "x"}]}
                }
            }
        })
    );
    let workers = &jobs[1];
    assert_eq!(workers.template, "spec.replicatedJobs[1].template");
    assert_eq!(workers.replicas, 4);
    let job = &workers.job;
    assert_eq!(job["metadata"]["name"], "train-workers-0");
    assert_eq!(job["metadata"]["labels"]["team"], "a");
    assert_eq!(job["metadata"]["annotations"]["note"], "n");
    assert_eq!(
        job["metadata"]["labels"]["jobset.sigs.k8s.io/job-key"],
        "a93a97066ed58aa4f7a71b097176246f07ab144e"
    );
    assert_eq!(
        job["metadata"]["labels"]["jobset.sigs.k8s.io/job-global-index"],
        "1"
    );
    assert_eq!(job["spec"]["template"]["metadata"]["labels"]["pod"], "p");
    assert_eq!(
        job["spec"]["template"]["metadata"]["labels"]["jobset.sigs.k8s.io/replicatedjob-replicas"],
        "4"
    );
    // What the template sets stays; a field a Job does not have is pruned as the CRD prunes it.
    assert_eq!(job["spec"]["completionMode"], "NonIndexed");
    assert_eq!(job["spec"]["template"]["spec"]["restartPolicy"], "Never");
    assert_eq!(job["spec"]["parallelism"], 2);
    assert!(job["spec"].get("backofLimit").is_none());
}

#[test]
fn suspend_network_exclusive_placement_coordinator_and_claims_reach_the_jobs() {
    let mut js = jobset();
    js["metadata"]["annotations"] = json!({
        "alpha.jobset.sigs.k8s.io/exclusive-topology": "rack",
        "alpha.jobset.sigs.k8s.io/node-selector": "true"
    });
    js["spec"]["suspend"] = json!(true);
    js["spec"]["network"] = json!({"subdomain": "net"});
    js["spec"]["coordinator"] = json!({"replicatedJob": "driver"});
    js["spec"]["volumeClaimPolicies"] = json!([{"templates": [{"metadata": {"name": "data"}}]}]);
    js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]["volumeMounts"] =
        json!([{"name": "data", "mountPath": "/d"}]);
    let jobs = controller_jobs(Owner::JobSet, js, "default", NEWEST).unwrap();
    let job = &jobs[0].job;
    assert_eq!(job["spec"]["suspend"], true);
    let pod = &job["spec"]["template"]["spec"];
    assert_eq!(pod["subdomain"], "net");
    assert_eq!(
        pod["nodeSelector"],
        json!({"alpha.jobset.sigs.k8s.io/namespaced-job": "ml_train-driver-0"})
    );
    assert_eq!(
        pod["tolerations"],
        json!([{"key": "alpha.jobset.sigs.k8s.io/no-schedule", "operator": "Exists", "effect": "NoSchedule"}])
    );
    assert_eq!(
        pod["volumes"],
        json!([{"name": "data", "persistentVolumeClaim": {"claimName": "data-train"}}])
    );
    // Only the workers do not mount the claim.
    assert!(
        jobs[1].job["spec"]["template"]["spec"]
            .get("volumes")
            .is_none()
    );
    assert_eq!(
        job["metadata"]["labels"]["jobset.sigs.k8s.io/coordinator"],
        "train-driver-0-0.net"
    );
    assert_eq!(
        job["metadata"]["annotations"]["alpha.jobset.sigs.k8s.io/exclusive-topology"],
        "rack"
    );
    // DNS hostnames turned off: no subdomain.
    let mut js = jobset();
    js["spec"]["network"] = json!({"enableDNSHostnames": false});
    let jobs = controller_jobs(Owner::JobSet, js, "default", NEWEST).unwrap();
    assert!(
        jobs[0].job["spec"]["template"]["spec"]
            .get("subdomain")
            .is_none()
    );
}

#[test]
fn replicated_jobs_without_replicas_create_no_job_and_generate_name_stands_in_for_the_name() {
    let mut js = jobset();
    js["spec"]["replicatedJobs"][1]["replicas"] = json!(0);
    js["metadata"] = json!({"generateName": "train-"});
    let jobs = controller_jobs(Owner::JobSet, js, "team", NEWEST).unwrap();
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].job["metadata"]["name"], "train-xxxxx-driver-0");
    assert_eq!(jobs[0].job["metadata"]["namespace"], "team");
}

#[test]
fn a_training_runtime_becomes_the_jobset_a_train_job_creates() {
    let runtime = json!({
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "ClusterTrainingRuntime",
        "metadata": {"name": "torch-distributed"},
        "spec": {
            "mlPolicy": {"numNodes": 3, "torch": {}},
            "template": {"spec": {"replicatedJobs": [
                {"name": "dataset-initializer", "replicas": 2, "template": {
                    "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "dataset-initializer"}},
                    "spec": {"template": {"spec": {"containers": [{"name": "dataset-initializer", "image": "i"}]}}}}},
                {"name": "node", "template": {
                    "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                    "spec": {"template": {"spec": {"containers": [{"name": "node", "image": "t"}]}}}}}
            ]}}
        }
    });
    let jobs = controller_jobs(Owner::ClusterTrainingRuntime, runtime, "ml", NEWEST).unwrap();
    assert_eq!(jobs.len(), 2);
    assert_eq!(
        jobs[1].template,
        "spec.template.spec.replicatedJobs[1].template"
    );
    // numNodes for the trainer step; the template's parallelism (1) for the others; one
    // replica each.
    assert_eq!(jobs[1].job["spec"]["parallelism"], 3);
    assert_eq!(jobs[1].job["spec"]["completions"], 3);
    assert_eq!(jobs[0].job["spec"]["parallelism"], 1);
    assert_eq!(jobs[0].replicas, 1);
    assert_eq!(jobs[1].job["metadata"]["name"], "torch-distributed-node-0");
    assert_eq!(jobs[1].job["metadata"]["namespace"], "ml");
}

#[test]
fn template_paths_are_found_without_building_jobs() {
    assert_eq!(
        template_paths(Owner::JobSet, &jobset()),
        [
            (
                "spec.replicatedJobs[0].template".to_string(),
                vec![
                    "spec".to_string(),
                    "replicatedJobs".into(),
                    "0".into(),
                    "template".into()
                ]
            ),
            (
                "spec.replicatedJobs[1].template".to_string(),
                vec![
                    "spec".to_string(),
                    "replicatedJobs".into(),
                    "1".into(),
                    "template".into()
                ]
            ),
        ]
    );
    assert_eq!(
        Owner::of("jobset.x-k8s.io/v1alpha2", "JobSet"),
        Some(Owner::JobSet)
    );
    assert_eq!(Owner::of("jobset.x-k8s.io/v1alpha1", "JobSet"), None);
}
