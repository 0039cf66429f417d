//! In-process cost of one review (parse + decide + render), the number the ≤ 10 µs target is about.
//! Run: `cargo bench --bench review`. Inputs: a minimal Job, a realistic ~4 KB ML training Job as
//! kube-apiserver sends it (managedFields, last-applied-configuration), and a ~100 KB Job; and
//! an UPDATE of each of the last two (both templates read for the immutability check).

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use jobgate::admission::{Endpoint, review};
use jobgate::job::Config;
use serde_json::{Value, json};

const FIXTURE: &str = include_str!("../tests/fixtures/validate/job-allowed.request.json");

fn wrap(object: Value) -> Vec<u8> {
    let mut review: Value = serde_json::from_str(FIXTURE).expect("fixture");
    review["request"]["object"] = object;
    serde_json::to_vec(&review).expect("serialize")
}

/// A Job with little more than a container.
fn small_job() -> Vec<u8> {
    wrap(json!({
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "pi", "namespace": "default"},
        "spec": {"template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "pi", "image": "perl:5.34", "command": ["perl", "-Mbignum=bpi", "-wle", "print bpi(2000)"]}]}}}
    }))
}

/// The fixture's Indexed training Job plus kubectl's last-applied-configuration: ~4 KB.
fn ml_job() -> Vec<u8> {
    let review: Value = serde_json::from_str(FIXTURE).expect("fixture");
    let mut object = review["request"]["object"].clone();
    let mut applied = object.clone();
    applied["metadata"]
        .as_object_mut()
        .map(|m| m.remove("managedFields"));
    object["metadata"]["annotations"] = json!({"kubectl.kubernetes.io/last-applied-configuration": serde_json::to_string(&applied).unwrap()});
    wrap(object)
}

/// The ML Job with 1,000 environment variables: ~100 KB.
fn large_job() -> Vec<u8> {
    let review: Value = serde_json::from_str(FIXTURE).expect("fixture");
    let mut object = review["request"]["object"].clone();
    let env: Vec<Value> = (0..1000)
        .map(|i| json!({"name": format!("TRAINING_HYPERPARAMETER_{i:04}"), "value": format!("value-{i:06}-{}", "x".repeat(40))}))
        .collect();
    object["spec"]["template"]["spec"]["containers"][0]["env"] = Value::Array(env);
    wrap(object)
}

fn bench_reviews(c: &mut Criterion) {
    let config = Config::default();
    let inputs = [
        ("small", small_job()),
        ("ml-4k", ml_job()),
        ("large-100k", large_job()),
    ];
    let mut group = c.benchmark_group("review");
    for (name, body) in &inputs {
        eprintln!("{name}: {} bytes", body.len());
        group.throughput(Throughput::Bytes(body.len() as u64));
        for endpoint in [
            Endpoint::Validate,
            Endpoint::Mutate,
            Endpoint::MutateRecovery,
        ] {
            group.bench_function(format!("{}/{name}", endpoint.label()), |b| {
                b.iter(|| review(black_box(endpoint), black_box(body), &config))
            });
        }
    }
    group.finish();

    // Where the time goes: the envelope alone, and the Job model alone.
    let mut parts = c.benchmark_group("parts");
    for (name, body) in &inputs {
        parts.bench_function(format!("envelope/{name}"), |b| {
            b.iter(|| jobgate::admission::parse(black_box(body)).is_ok())
        });
        let review: Value = serde_json::from_slice(body).expect("json");
        let object = review["request"]["object"].to_string();
        parts.bench_function(format!("job-model/{name}"), |b| {
            b.iter(|| {
                jobgate::job::JobObject::from_json(jobgate::job::Kind::Job, black_box(&object))
                    .is_ok()
            })
        });
    }
    parts.finish();
    bench_updates(c, &config);
}

/// An UPDATE of a started Job: `oldObject` as stored, `object` with one mutable change
/// (parallelism) and, when `respelled`, the memory and CPU limits spelled in other formats of
/// the same values (what kube-apiserver sends after a re-apply). The template immutability check
/// reads both templates.
fn update(mut object: Value, respelled: bool) -> Vec<u8> {
    let limits = &mut object["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"];
    limits["memory"] = json!("1Gi");
    limits["cpu"] = json!("500m");
    let mut old = object.clone();
    old["status"] = json!({"startTime": "2026-11-21T10:00:00Z", "active": 4});
    let mut new = object;
    new["spec"]["parallelism"] = json!(2);
    if respelled {
        let limits = &mut new["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"];
        limits["memory"] = json!("1073741824");
        limits["cpu"] = json!("0.5");
    }
    let mut review: Value = serde_json::from_str(FIXTURE).expect("fixture");
    review["request"]["operation"] = json!("UPDATE");
    review["request"]["object"] = new;
    review["request"]["oldObject"] = old;
    serde_json::to_vec(&review).expect("serialize")
}

fn bench_updates(c: &mut Criterion, config: &Config) {
    let object = |body: &[u8]| {
        let review: Value = serde_json::from_slice(body).expect("json");
        review["request"]["object"].clone()
    };
    let inputs = [
        ("ml-4k", update(object(&ml_job()), false)),
        ("ml-4k-respelled", update(object(&ml_job()), true)),
        ("large-100k-respelled", update(object(&large_job()), true)),
    ];
    let mut group = c.benchmark_group("update");
    for (name, body) in &inputs {
        eprintln!("update {name}: {} bytes", body.len());
        group.throughput(Throughput::Bytes(body.len() as u64));
        group.bench_function(format!("{}/{name}", Endpoint::Validate.label()), |b| {
            b.iter(|| review(black_box(Endpoint::Validate), black_box(body), config))
        });
    }
    group.finish();
}

criterion_group!(benches, bench_reviews);
criterion_main!(benches);
