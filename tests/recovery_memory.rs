//! How the reconciler's memory scales with pods: the real pod watch pipeline
//! (`jobgate::reconciler::drive_pod_watch`: metadata-only watcher, filter, stripped store) is fed
//! a paged list of N pods of which E are eligible, served by a mocked apiserver that generates
//! each page on demand. A counting global allocator measures the heap retained once the list is
//! done, and the peak while listing; the same list is then kept by an unfiltered metadata
//! reflector (what `Controller::new(Api<PartialObjectMeta<Pod>>)` would keep) for comparison.
//!
//! Not run by default (it lists 100k pods):
//!   cargo test --locked --test recovery_memory -- --ignored --nocapture

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::StreamExt;
use hyper::{Request, Response};
use jobgate::reconciler::filter::PodMetadata;
use jobgate::reconciler::metrics::RecoveryMetrics;
use jobgate::reconciler::{Context, Options, drive_pod_watch};
use jobgate::runtime::{Leadership, Readiness};
use k8s_openapi::api::core::v1::Pod;
use kube::client::Body;
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::store::Writer;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use tower_test::mock::Handle;

/// A counting global allocator (`jobgate-alloc`, where the project's unsafe code lives) measures
/// the heap.
#[global_allocator]
static ALLOCATOR: jobgate_alloc::Counting = jobgate_alloc::Counting::new();

const PAGE: usize = 500;

/// Metadata of a Job pod as the apiserver returns it with `as=PartialObjectMetadata`
/// (labels, owner, finalizer, two managedFields entries): about 2.3 KB of JSON. Written as text
/// so the mock apiserver itself allocates little more than the page it sends.
fn pod_item(i: usize, eligible: bool) -> String {
    let (opt_in, deletion) = if eligible {
        (
            r#","kueue.x-k8s.io/safe-to-forcefully-terminate":"true""#,
            r#","deletionTimestamp":"2026-11-21T19:57:00Z","deletionGracePeriodSeconds":30"#,
        )
    } else {
        ("", "")
    };
    let fields: Vec<String> = (0..25)
        .map(|k| format!(r#""f:field-{k:02}":{{".":{{}},"f:value":{{}}}}"#))
        .collect();
    format!(
        r#"{{"apiVersion":"meta.k8s.io/v1","kind":"PartialObjectMetadata","metadata":{{"name":"train-job-{job:06}-worker-{i}-x7k2p","namespace":"team-a","uid":"6b1c0a6e-0000-4000-8000-{i:012}","resourceVersion":"{rv}","creationTimestamp":"2026-11-21T18:00:00Z","generateName":"train-job-","labels":{{"batch.kubernetes.io/controller-uid":"0d3c7c1e-1111-4000-8000-000000000001","batch.kubernetes.io/job-name":"train-job","controller-uid":"0d3c7c1e-1111-4000-8000-000000000001","job-name":"train-job","batch.kubernetes.io/job-completion-index":"{i}"}},"annotations":{{"example.com/build":"abcdef0123456789"{opt_in}}},"ownerReferences":[{{"apiVersion":"batch/v1","kind":"Job","name":"train-job","uid":"0d3c7c1e-1111-4000-8000-000000000001","controller":true,"blockOwnerDeletion":true}}],"finalizers":["batch.kubernetes.io/job-tracking"]{deletion},"managedFields":[{{"manager":"kube-controller-manager","operation":"Update","apiVersion":"v1","time":"2026-11-21T18:00:00Z","fieldsType":"FieldsV1","fieldsV1":{{"f:metadata":{{{fields}}}}}}},{{"manager":"kubelet","operation":"Update","apiVersion":"v1","time":"2026-11-21T18:00:05Z","fieldsType":"FieldsV1","subresource":"status","fieldsV1":{{"f:status":{{"f:conditions":{{}},"f:containerStatuses":{{}},"f:phase":{{}},"f:podIP":{{}}}}}}}}]}}}}"#,
        job = i / 8,
        rv = 100000 + i,
        fields = fields.join(","),
    )
}

/// Serves a paged list of `total` pods (every `total/eligible`-th one eligible), generating
/// each page when asked, then holds the watch open.
async fn serve_pods(
    mut handle: Handle<Request<Body>, Response<Body>>,
    total: usize,
    eligible: usize,
) {
    let every = total.checked_div(eligible).unwrap_or(usize::MAX);
    let mut held = vec![];
    while let Some((request, send)) = handle.next_request().await {
        let query = request.uri().query().unwrap_or("").to_string();
        if query.contains("watch=true") {
            held.push(send);
            continue;
        }
        let start: usize = query
            .split('&')
            .find_map(|kv| kv.strip_prefix("continue="))
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let end = (start + PAGE).min(total);
        let items: Vec<String> = (start..end)
            .map(|i| pod_item(i, every != usize::MAX && i % every == 0))
            .collect();
        let cont = if end < total {
            end.to_string()
        } else {
            String::new()
        };
        let page = format!(
            r#"{{"apiVersion":"v1","kind":"PartialObjectMetadataList","metadata":{{"resourceVersion":"200000","continue":"{cont}"}},"items":[{}]}}"#,
            items.join(",")
        );
        drop(items);
        send.send_response(
            Response::builder()
                .status(200)
                .header("content-type", "application/json")
                .body(Body::from(page.into_bytes()))
                .expect("response"),
        );
    }
}

fn mock() -> (Client, Handle<Request<Body>, Response<Body>>) {
    let (service, handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    (Client::new(service, "default"), handle)
}

struct Measure {
    retained: usize,
    peak: usize,
    stored: usize,
}

async fn measure_filtered(total: usize, eligible: usize) -> Measure {
    let (client, handle) = mock();
    let server = tokio::spawn(serve_pods(handle, total, eligible));
    let ctx = Arc::new(Context::new(
        client.clone(),
        jobgate::recovery::RecoveryConfig::default(),
        Options::default(),
        Leadership::default(),
        RecoveryMetrics::default(),
    ));
    let mut writer: Writer<PodMetadata> = Writer::default();
    let store = writer.as_reader();
    let (tx, mut rx) = futures::channel::mpsc::unbounded();
    let synced = Arc::new(AtomicBool::new(false));
    tokio::time::sleep(Duration::from_millis(10)).await;
    let base = ALLOCATOR.current();
    ALLOCATOR.reset_peak();
    let driver = tokio::spawn({
        let synced = synced.clone();
        async move {
            drive_pod_watch(
                Api::<PodMetadata>::all(client),
                watcher::Config::default(),
                &mut writer,
                ctx,
                tx,
                synced,
                Readiness::default(),
            )
            .await
        }
    });
    while !synced.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Drain the triggers (the applier would consume them).
    let mut triggered = 0;
    while let Ok(_key) = rx.try_recv() {
        triggered += 1;
    }
    assert_eq!(triggered, eligible);
    let retained = ALLOCATOR.current().saturating_sub(base);
    let peak = ALLOCATOR.peak().saturating_sub(base);
    let stored = store.len();
    driver.abort();
    server.abort();
    Measure {
        retained,
        peak,
        stored,
    }
}

async fn measure_unfiltered(total: usize) -> Measure {
    let (client, handle) = mock();
    let server = tokio::spawn(serve_pods(handle, total, 0));
    let writer: Writer<PartialObjectMeta<Pod>> = Writer::default();
    let store = writer.as_reader();
    tokio::time::sleep(Duration::from_millis(10)).await;
    let base = ALLOCATOR.current();
    ALLOCATOR.reset_peak();
    let synced = Arc::new(AtomicBool::new(false));
    let flag = synced.clone();
    let driver = tokio::spawn(async move {
        let stream = watcher(
            Api::<PartialObjectMeta<Pod>>::all(client),
            watcher::Config::default(),
        )
        .reflect(writer);
        let mut stream = std::pin::pin!(stream);
        while let Some(e) = stream.next().await {
            if matches!(e, Ok(watcher::Event::InitDone)) {
                flag.store(true, Ordering::SeqCst);
            }
        }
    });
    while !synced.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let retained = ALLOCATOR.current().saturating_sub(base);
    let peak = ALLOCATOR.peak().saturating_sub(base);
    let stored = store.len();
    driver.abort();
    server.abort();
    Measure {
        retained,
        peak,
        stored,
    }
}

fn kib(bytes: usize) -> f64 {
    bytes as f64 / 1024.0
}

#[tokio::test(flavor = "current_thread")]
#[ignore = "lists 100k pods; run with --ignored --nocapture to measure"]
async fn pod_watch_memory_grows_with_eligible_pods_only() {
    println!("| pods listed | eligible | stored | retained KiB | peak while listing KiB |");
    println!("|---|---|---|---|---|");
    let mut retained = vec![];
    for (total, eligible) in [
        (10_000, 0),
        (100_000, 0),
        (100_000, 100),
        (100_000, 1_000),
        (100_000, 10_000),
    ] {
        let m = measure_filtered(total, eligible).await;
        assert_eq!(m.stored, eligible);
        println!(
            "| {total} | {eligible} | {} | {:.0} | {:.0} |",
            m.stored,
            kib(m.retained),
            kib(m.peak)
        );
        retained.push(m.retained);
    }
    for total in [1_000, 10_000] {
        let m = measure_unfiltered(total).await;
        println!(
            "| {total} (unfiltered metadata reflector) | - | {} | {:.0} | {:.0} |",
            m.stored,
            kib(m.retained),
            kib(m.peak)
        );
    }
    // 10x the pods, none eligible: retained memory does not grow with the cluster.
    assert!(retained[1] < retained[0] + 256 * 1024, "{retained:?}");
    // Per eligible pod, well under 2 KiB retained.
    assert!(retained[3] < retained[1] + 1_000 * 2048, "{retained:?}");
}
