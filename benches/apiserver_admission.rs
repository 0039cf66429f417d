//! jobgate's webhooks as kube-apiserver measures them: Job creates at a steady rate from many
//! clients against a running test control plane, at each rate of `RATES`, with three things
//! behind the shipped webhook configurations (deploy/base, rendered with kustomize, pointed by
//! `url` at a local server, the rewrite the cluster tests use), one after the other: none (no
//! configuration), `examples/ceiling` (the same TLS and HTTP stack answering every review allowed:
//! the floor of any webhook on this machine), and `jobgate serve`.
//!
//! Each phase reads kube-apiserver's own `/metrics` before and after, and reports:
//! - `apiserver_admission_webhook_admission_duration_seconds` of each webhook: p50 and p99 as
//!   `histogram_quantile` reads them, and the share within 5 ms (the metric's first bucket bound,
//!   so "p99 under 5 ms" is read exactly: at least 99 % within it);
//! - the create's `apiserver_request_duration_seconds` (POST batch/v1 jobs), p50 and p99;
//! - `apiserver_admission_webhook_rejection_count` and `..._fail_open_count` for the webhooks,
//!   and every create the clients saw fail: there must be none;
//! - what the clients measured (each create's round trip; exact percentiles) and the rate they
//!   achieved, the machine's busy CPU share, the server's CPU seconds and peak RSS, and jobgate's
//!   own `jobgate_admission_duration_seconds` (buckets from 50 µs) and rejections.
//!
//! The Jobs are suspended (as Kueue creates them), so the Job controller makes no pods: the bench
//! measures admission, not scheduling. They go into a namespace labelled
//! `jobgate.dev/failure-recovery: enabled`, so the recovery mutation (`/mutate/recovery`) and
//! `/validate` both review every create.
//!
//! ```sh
//! export KUBECONFIG=$(tests/controlplane/start 1.37)
//! cargo build --release --bin jobgate --example ceiling
//! PATH=$PWD/target/tools/bin:$PATH cargo bench --bench apiserver_admission
//! tests/controlplane/stop 1.37
//! ```
//!
//! `RATES` (default 25,50,100,200 creates/s), `SECONDS_PER_RATE` (default 45) and `CLIENTS`
//! (default 32 kube clients, each its own connections) shape the load; `JOBGATE` and `CEILING`
//! pick the binaries. Figures: docs/src/developer/benchmarks.md.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

#[path = "../tests/support/kustomize.rs"]
pub mod kustomize;
#[path = "../tests/support/prometheus.rs"]
pub mod prometheus;
#[path = "../tests/support/shipped_webhooks.rs"]
pub mod shipped_webhooks;

#[path = "common/admin_http.rs"]
mod admin_http;
#[path = "common/apiserver.rs"]
mod apiserver;
#[path = "apiserver_admission/histogram.rs"]
mod histogram;
#[path = "apiserver_admission/load.rs"]
mod load;
#[path = "common/process.rs"]
mod process;

use histogram::Histogram;

const NAMESPACE: &str = "bench-admission";
const SUFFIX: &str = "bench";
const WEBHOOK_PORT: u16 = 18443;
const ADMIN: &str = "127.0.0.1:18091";
const CEILING_PORT: u16 = 18444;
/// The first bound of the apiserver's webhook-latency buckets
/// (k8s.io/apiserver pkg/admission/metrics: 0.005, 0.025, 0.1, ...).
const FIVE_MS: f64 = 0.005;

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_string())
}

fn parse<T: std::str::FromStr>(name: &str, value: &str) -> T
where
    T::Err: std::fmt::Display,
{
    value
        .trim()
        .parse()
        .unwrap_or_else(|e| panic!("{name}={value:?}: {e}"))
}

#[tokio::main]
async fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` does not, and there is no cluster.
    if !std::env::args().any(|a| a == "--bench") {
        println!(
            "apiserver_admission: a benchmark, run by `cargo bench --bench apiserver_admission` against a test control plane"
        );
        return;
    }
    let rates: Vec<f64> = env_or("RATES", "25,50,100,200")
        .split(',')
        .map(|r| parse("RATES", r))
        .collect();
    let seconds: u64 = parse("SECONDS_PER_RATE", &env_or("SECONDS_PER_RATE", "45"));
    let clients: usize = parse("CLIENTS", &env_or("CLIENTS", "32"));
    let jobgate = env_or("JOBGATE", "target/release/jobgate");
    let client = kube::Client::try_default()
        .await
        .expect("a cluster: export KUBECONFIG=$(tests/controlplane/start 1.37)");
    let minor = {
        let v = client.apiserver_version().await.expect("/version");
        format!("{}.{}", v.major, v.minor.trim_end_matches('+'))
    };
    prepare_namespace(&client).await;
    remove_webhooks();
    let load = load::Load::new(clients, NAMESPACE).await;
    let duration = Duration::from_secs(seconds);

    println!("kube-apiserver {minor}; {clients} clients; {seconds}s per rate");
    for &rate in &rates {
        phase(&client, &load, None, rate, duration).await;
    }
    let dir = tempfile::tempdir().expect("a working directory for jobgate");
    let serve = start_jobgate(&jobgate, dir.path(), &minor).await;
    let certs = dir.path().join("certs/dev");
    let ceiling = start_ceiling(
        &env_or("CEILING", "target/release/examples/ceiling"),
        &certs,
    );
    let ceiling_pid = ceiling.0.id();
    install_webhooks(&client, CEILING_PORT, &certs.join("ca.crt")).await;
    for &rate in &rates {
        let server = Server {
            name: "the ceiling",
            pid: ceiling_pid,
            admin: None,
        };
        phase(&client, &load, Some(server), rate, duration).await;
    }
    remove_webhooks();
    install_webhooks(&client, WEBHOOK_PORT, &certs.join("ca.crt")).await;
    wait_for_jobgate(&client).await;
    for &rate in &rates {
        let server = Server {
            name: "jobgate",
            pid: serve.0.id(),
            admin: Some(ADMIN),
        };
        phase(&client, &load, Some(server), rate, duration).await;
    }
    remove_webhooks();
    drop((serve, ceiling));
    // The Jobs stay until the control plane stops; a second run adds its own.
}

/// The webhook server of a phase.
struct Server<'a> {
    name: &'a str,
    pid: u32,
    /// jobgate's admin port, for its own metrics.
    admin: Option<&'a str>,
}

/// examples/ceiling (`cargo build --release --example ceiling`) on [`CEILING_PORT`], with
/// jobgate's dev serving certificate: the same TLS and HTTP stack, answering every review allowed
/// after reading it as JSON. What the apiserver measures for it is the floor of any webhook on
/// this machine.
fn start_ceiling(bin: &str, certs: &Path) -> process::Started {
    process::Started(
        std::process::Command::new(bin)
            .arg(format!("127.0.0.1:{CEILING_PORT}"))
            .arg(certs.join("tls.crt"))
            .arg(certs.join("tls.key"))
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{bin}: {e} (cargo build --release --example ceiling)")),
    )
}

async fn prepare_namespace(client: &kube::Client) {
    let api: Api<Namespace> = Api::all(client.clone());
    let ns = json!({"metadata": {"name": NAMESPACE,
        "labels": {"jobgate.dev/failure-recovery": "enabled"}}});
    api.patch(
        NAMESPACE,
        &PatchParams::apply("bench-apiserver-admission"),
        &Patch::Apply(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": ns["metadata"]})),
    )
    .await
    .unwrap_or_else(|e| panic!("namespace {NAMESPACE}: {e}"));
}

/// `jobgate serve` in dev mode (its throw-away CA in `dir/certs/dev`), judging by `minor`.
async fn start_jobgate(jobgate: &str, dir: &Path, minor: &str) -> process::Started {
    let child = process::Started(
        std::process::Command::new(
            std::fs::canonicalize(jobgate)
                .unwrap_or_else(|e| panic!("{jobgate}: {e} (cargo build --release --bin jobgate)")),
        )
        .args([
            "serve",
            "--addr",
            &format!("127.0.0.1:{WEBHOOK_PORT}"),
            "--admin-addr",
            ADMIN,
            "--log-level",
            "warn",
            "--kubernetes-version",
            minor,
        ])
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{jobgate}: {e}")),
    );
    let started = Instant::now();
    while admin_http::admin_get(ADMIN, "/readyz")
        .await
        .map(|(s, _)| s)
        != Some(200)
    {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "jobgate serve was not ready within 30 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    child
}

/// deploy/base's configurations pointed at `port` on loopback and limited to the bench's
/// namespace, applied with kubectl; returns once the apiserver calls them.
async fn install_webhooks(client: &kube::Client, port: u16, ca: &Path) {
    let kubectl = kustomize::kubectl();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let docs = kustomize::render(kubectl, &root.join("deploy/base"));
    let ca = std::fs::read(ca).expect("jobgate's dev CA");
    let configs = shipped_webhooks::pointed_at(docs, port, &ca, SUFFIX, &[NAMESPACE], &[]);
    let list = json!({"apiVersion": "v1", "kind": "List", "items": configs});
    kubectl_stdin(&["apply", "-f", "-"], &list.to_string());
    // The apiserver's webhook informers take a moment: wait until a dry-run create is timed
    // by both webhooks.
    let started = Instant::now();
    loop {
        let before = webhook_calls(&apiserver::metrics(client).await);
        dry_run_create(client).await;
        let after = webhook_calls(&apiserver::metrics(client).await);
        if after.0 > before.0 && after.1 > before.1 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the apiserver did not call the webhooks on port {port} within 30 s"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The apiserver's count of calls to jobgate's mutating and validating webhooks.
fn webhook_calls(text: &str) -> (f64, f64) {
    let mut calls = (0.0, 0.0);
    for (labels, n) in prometheus::samples(
        text,
        "apiserver_admission_webhook_admission_duration_seconds_count",
    ) {
        match prometheus::label(labels, "name").as_str() {
            "mutate-recovery.jobgate.dev" => calls.0 += n,
            "validate.jobgate.dev" => calls.1 += n,
            _ => {}
        }
    }
    calls
}

/// A dry-run create of the bench's Job; the stored object, if it was admitted.
async fn dry_run_create(client: &kube::Client) -> Option<Job> {
    let jobs: Api<Job> = Api::namespaced(client.clone(), NAMESPACE);
    let job: Job = serde_json::from_value(load::job("probe")).expect("a Job");
    let dry = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    jobs.create(&dry, &job).await.ok()
}

/// Once the configurations point at jobgate: wait until a create comes back with the
/// recovery annotation jobgate's mutation sets (the ceiling sets none), and a little more for
/// the validating configuration, applied in the same breath.
async fn wait_for_jobgate(client: &kube::Client) {
    let started = Instant::now();
    loop {
        let annotated = dry_run_create(client)
            .await
            .and_then(|j| j.spec?.template.metadata?.annotations)
            .is_some_and(|a| a.contains_key("kueue.x-k8s.io/safe-to-forcefully-terminate"));
        if annotated {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the apiserver did not call jobgate's webhooks within 30 s"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
}

fn remove_webhooks() {
    for kind in [
        "mutatingwebhookconfiguration",
        "validatingwebhookconfiguration",
    ] {
        kubectl_stdin(
            &[
                "delete",
                "--ignore-not-found",
                kind,
                &format!("jobgate-{SUFFIX}"),
            ],
            "",
        );
    }
}

fn kubectl_stdin(args: &[&str], stdin: &str) {
    use std::io::Write;
    let mut child = std::process::Command::new("kubectl")
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("kubectl on PATH (PATH=$PWD/target/tools/bin:$PATH)");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("write to kubectl");
    let status = child.wait().expect("kubectl");
    assert!(status.success(), "kubectl {args:?} failed");
}

/// One rate for `duration` with `server` behind the webhooks (none: no webhook), with its
/// figures printed.
async fn phase(
    client: &kube::Client,
    load: &load::Load,
    server: Option<Server<'_>>,
    rate: f64,
    duration: Duration,
) {
    let jobgate_admin = server.as_ref().and_then(|s| s.admin);
    let name = server.as_ref().map_or("no webhook", |s| s.name);
    let before = apiserver::metrics(client).await;
    let jobgate_before = match jobgate_admin {
        Some(admin) => Some(jobgate_metrics(admin).await),
        None => None,
    };
    let server_cpu = server.as_ref().map(|s| process::usage(s.pid).2);
    let machine = process::machine_ticks();
    let outcome = load.run(rate, duration).await;
    // The last requests' observations are made before their responses reach the clients.
    let after = apiserver::metrics(client).await;
    let (busy, total) = process::machine_ticks();
    println!(
        "\n{name}, {rate}/s for {}s: {} creates sent, {} created, achieved {:.1}/s; clients saw p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms; {} sent late (more than 100 ms behind the schedule)",
        duration.as_secs(),
        outcome.sent,
        outcome.created,
        outcome.created as f64 / outcome.elapsed.as_secs_f64(),
        outcome.latency_ms(0.5),
        outcome.latency_ms(0.99),
        outcome.latency_ms(1.0),
        outcome.late,
    );
    println!(
        "  machine CPU busy {:.0} % of its cores{}",
        (busy - machine.0) as f64 * 100.0 / (total - machine.1).max(1) as f64,
        match (&server, server_cpu) {
            (Some(s), Some(cpu)) => {
                let (peak, _, cpu_after) = process::usage(s.pid);
                format!(
                    "; {} used {:.2} s of CPU, peak RSS {peak:.1} MiB",
                    s.name,
                    cpu_after - cpu
                )
            }
            _ => String::new(),
        }
    );
    for (error, n) in &outcome.errors {
        println!("  FAILED create: {n} × {error}");
    }
    report_creates(&before, &after);
    report_webhooks(&before, &after);
    report_refusals(&before, &after);
    if let (Some(admin), Some(before)) = (jobgate_admin, jobgate_before) {
        report_jobgate(&before, &jobgate_metrics(admin).await);
    }
}

/// The create's `apiserver_request_duration_seconds` between two pages.
fn report_creates(before: &str, after: &str) {
    let creates = |text: &str| {
        Histogram::read(text, "apiserver_request_duration_seconds", |l| {
            prometheus::label(l, "verb") == "POST"
                && prometheus::label(l, "resource") == "jobs"
                && prometheus::label(l, "subresource").is_empty()
                && prometheus::label(l, "dry_run").is_empty()
        })
    };
    let created = creates(after).since(&creates(before));
    println!(
        "  apiserver_request_duration_seconds, POST jobs: {} observed, p50 {:.1} ms, p99 {:.1} ms (histogram_quantile)",
        created.count(),
        created.quantile(0.5) * 1e3,
        created.quantile(0.99) * 1e3,
    );
}

/// Each jobgate webhook's `apiserver_admission_webhook_admission_duration_seconds` between two
/// pages.
fn report_webhooks(before: &str, after: &str) {
    for (webhook, type_) in webhooks(after) {
        let read = |text: &str| {
            Histogram::read(
                text,
                "apiserver_admission_webhook_admission_duration_seconds",
                |l| {
                    prometheus::label(l, "name") == webhook
                        && prometheus::label(l, "type") == type_
                        && prometheus::label(l, "operation") == "CREATE"
                },
            )
        };
        let calls = read(after).since(&read(before));
        if calls.count() == 0.0 {
            continue;
        }
        println!(
            "  apiserver_admission_webhook_admission_duration_seconds{{name={webhook:?},type={type_:?}}}: {} calls, p50 {:.2} ms, p99 {:.2} ms (histogram_quantile over bounds {:?} s), {:.2} % within 5 ms",
            calls.count(),
            calls.quantile(0.5) * 1e3,
            calls.quantile(0.99) * 1e3,
            calls.bounds(),
            calls.share_within(FIVE_MS) * 100.0,
        );
    }
}

/// The apiserver's rejections and fail-opens of jobgate's webhooks between two pages.
fn report_refusals(before: &str, after: &str) {
    let counted = |metric: &str| -> BTreeMap<String, f64> {
        let sum = |text: &str| {
            let mut out = BTreeMap::new();
            for (labels, n) in prometheus::samples(text, metric) {
                if prometheus::label(labels, "name").ends_with("jobgate.dev") {
                    *out.entry(labels.to_string()).or_insert(0.0) += n;
                }
            }
            out
        };
        let (b, a) = (sum(before), sum(after));
        a.into_iter()
            .map(|(k, n)| (k.clone(), n - b.get(&k).copied().unwrap_or(0.0)))
            .filter(|(_, n)| *n > 0.0)
            .collect()
    };
    for metric in [
        "apiserver_admission_webhook_rejection_count",
        "apiserver_admission_webhook_fail_open_count",
    ] {
        let counts = counted(metric);
        if counts.is_empty() {
            println!("  {metric}: none");
        }
        for (labels, n) in counts {
            println!("  {metric}{{{labels}}}: {n}");
        }
    }
}

/// jobgate's own rejections and review times between two pages of its `/metrics`.
fn report_jobgate(before: &str, after: &str) {
    let shed = |text: &str| -> f64 {
        prometheus::samples(text, "jobgate_admission_rejected_requests_total")
            .into_iter()
            .map(|(_, n)| n)
            .sum()
    };
    println!(
        "  jobgate_admission_rejected_requests_total (429 over budget, 4xx, 500): {}",
        shed(after) - shed(before)
    );
    for endpoint in ["mutate-recovery", "validate"] {
        let read = |text: &str| {
            Histogram::read(text, "jobgate_admission_duration_seconds", |l| {
                prometheus::label(l, "endpoint") == endpoint
            })
        };
        let served = read(after).since(&read(before));
        println!(
            "  jobgate_admission_duration_seconds{{endpoint={endpoint:?}}}: {} reviews, p50 {:.3} ms, p99 {:.3} ms",
            served.count(),
            served.quantile(0.5) * 1e3,
            served.quantile(0.99) * 1e3,
        );
    }
}

async fn jobgate_metrics(admin: &str) -> String {
    admin_http::admin_get(admin, "/metrics")
        .await
        .map(|(_, body)| body)
        .unwrap_or_default()
}

/// The (webhook name, type) pairs of jobgate's webhooks the apiserver has timed.
fn webhooks(text: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = prometheus::samples(
        text,
        "apiserver_admission_webhook_admission_duration_seconds_count",
    )
    .into_iter()
    .map(|(labels, _)| {
        (
            prometheus::label(labels, "name"),
            prometheus::label(labels, "type"),
        )
    })
    .filter(|(name, _)| name.ends_with("jobgate.dev"))
    .collect();
    out.sort();
    out.dedup();
    out
}
