//! client-go `leaderelection` rounds against a scripted API (create, renew, take over after an
//! unchanged record outlived its duration on our own clock, conflicts, release).

use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::Timestamp;
use prometheus_client::metrics::gauge::Gauge;

use super::*;
use crate::runtime::scripted::{
    Exchange, LEASE_PATH, LEASES_PATH, exchange, lease_json, mock, serve, status_body,
};

const NOW: &str = "2026-11-21T20:00:00Z";

fn ts(s: &str) -> Timestamp {
    s.parse().expect("timestamp")
}

fn lease_config() -> LeaseConfig {
    LeaseConfig::new("jobgate-reconciler".into(), "jobgate".into(), "me".into())
}

async fn lease_round(
    script: Vec<Exchange>,
    observed: &mut Observed,
    instant: Instant,
) -> Result<Round, kube::Error> {
    let (client, handle) = mock();
    let api: kube::Api<Lease> = kube::Api::namespaced(client, "jobgate");
    let server = tokio::spawn(serve(handle, script));
    let result = tokio::time::timeout(
        Duration::from_secs(10),
        try_acquire_or_renew(&api, &lease_config(), observed, ts(NOW), instant),
    )
    .await
    .expect("unscripted lease request");
    server.await.expect("script failed");
    result
}

#[tokio::test]
async fn lease_is_created_when_missing() {
    let script = vec![
        exchange("GET", LEASE_PATH, 404, status_body(404, "NotFound")),
        exchange("POST", LEASES_PATH, 201, lease_json("me", "1", 0)).checking(|_, _, body| {
            assert_eq!(body["metadata"]["name"], "jobgate-reconciler");
            assert_eq!(body["spec"]["holderIdentity"], "me");
            assert_eq!(body["spec"]["leaseDurationSeconds"], 15);
            assert_eq!(body["spec"]["acquireTime"], "2026-11-21T20:00:00.000000Z");
            assert_eq!(body["spec"]["renewTime"], "2026-11-21T20:00:00.000000Z");
            assert_eq!(body["spec"]["leaseTransitions"], 0);
        }),
    ];
    let round = lease_round(script, &mut Observed::default(), Instant::now()).await;
    assert_eq!(round.expect("round"), Round::Leading);
}

#[tokio::test]
async fn lease_create_race_lost_is_following() {
    let script = vec![
        exchange("GET", LEASE_PATH, 404, status_body(404, "NotFound")),
        exchange("POST", LEASES_PATH, 409, status_body(409, "AlreadyExists")),
    ];
    let round = lease_round(script, &mut Observed::default(), Instant::now()).await;
    assert_eq!(round.expect("round"), Round::Following { holder: None });
}

#[tokio::test]
async fn lease_renewal_keeps_acquire_time_and_sends_resource_version() {
    let script = vec![
        exchange("GET", LEASE_PATH, 200, lease_json("me", "7", 3)),
        exchange("PUT", LEASE_PATH, 200, lease_json("me", "8", 3)).checking(|_, _, body| {
            assert_eq!(body["metadata"]["resourceVersion"], "7");
            assert_eq!(body["spec"]["holderIdentity"], "me");
            assert_eq!(body["spec"]["acquireTime"], "2026-11-21T19:00:00.000000Z");
            assert_eq!(body["spec"]["renewTime"], "2026-11-21T20:00:00.000000Z");
            assert_eq!(body["spec"]["leaseTransitions"], 3);
        }),
    ];
    let round = lease_round(script, &mut Observed::default(), Instant::now()).await;
    assert_eq!(round.expect("round"), Round::Leading);
}

#[tokio::test]
async fn live_lease_of_another_holder_is_not_taken_until_it_expires() {
    let start = Instant::now();
    let mut observed = Observed::default();
    // First sight of the record: it counts as renewed now, whatever its renewTime says.
    let script = vec![exchange(
        "GET",
        LEASE_PATH,
        200,
        lease_json("other", "7", 3),
    )];
    let round = lease_round(script, &mut observed, start).await;
    assert_eq!(
        round.expect("round"),
        Round::Following {
            holder: Some("other".into())
        }
    );
    // 14 s later, unchanged: still live.
    let script = vec![exchange(
        "GET",
        LEASE_PATH,
        200,
        lease_json("other", "7", 3),
    )];
    let round = lease_round(script, &mut observed, start + Duration::from_secs(14)).await;
    assert!(matches!(round.expect("round"), Round::Following { .. }));
    // 15 s after we first saw it unchanged: expired; take it with a transition.
    let script = vec![
        exchange("GET", LEASE_PATH, 200, lease_json("other", "7", 3)),
        exchange("PUT", LEASE_PATH, 200, lease_json("me", "8", 4)).checking(|_, _, body| {
            assert_eq!(body["metadata"]["resourceVersion"], "7");
            assert_eq!(body["spec"]["holderIdentity"], "me");
            assert_eq!(body["spec"]["acquireTime"], "2026-11-21T20:00:00.000000Z");
            assert_eq!(body["spec"]["leaseTransitions"], 4);
        }),
    ];
    let round = lease_round(script, &mut observed, start + Duration::from_secs(15)).await;
    assert_eq!(round.expect("round"), Round::Leading);
}

#[tokio::test]
async fn renewed_lease_of_another_holder_restarts_the_wait() {
    let start = Instant::now();
    let mut observed = Observed::default();
    let script = vec![exchange(
        "GET",
        LEASE_PATH,
        200,
        lease_json("other", "7", 3),
    )];
    lease_round(script, &mut observed, start)
        .await
        .expect("round");
    // The holder renewed (new resourceVersion) at 14 s: at 20 s it is still live.
    let script = vec![exchange(
        "GET",
        LEASE_PATH,
        200,
        lease_json("other", "9", 3),
    )];
    lease_round(script, &mut observed, start + Duration::from_secs(14))
        .await
        .expect("round");
    let script = vec![exchange(
        "GET",
        LEASE_PATH,
        200,
        lease_json("other", "9", 3),
    )];
    let round = lease_round(script, &mut observed, start + Duration::from_secs(20)).await;
    assert!(matches!(round.expect("round"), Round::Following { .. }));
}

#[tokio::test]
async fn lease_update_conflict_is_following() {
    let script = vec![
        exchange("GET", LEASE_PATH, 200, lease_json("me", "7", 3)),
        exchange("PUT", LEASE_PATH, 409, status_body(409, "Conflict")),
    ];
    let round = lease_round(script, &mut Observed::default(), Instant::now()).await;
    assert_eq!(
        round.expect("round"),
        Round::Following {
            holder: Some("me".into())
        }
    );
}

#[tokio::test]
async fn lease_is_released_on_shutdown() {
    let (client, handle) = mock();
    let api: kube::Api<Lease> = kube::Api::namespaced(client, "jobgate");
    let script = vec![
        exchange("GET", LEASE_PATH, 200, lease_json("me", "7", 3)),
        exchange("PUT", LEASE_PATH, 200, lease_json("", "8", 3)).checking(|_, _, body| {
            assert_eq!(body["metadata"]["resourceVersion"], "7");
            assert!(body["spec"].get("holderIdentity").is_none(), "{body}");
            assert_eq!(body["spec"]["leaseDurationSeconds"], 1);
        }),
    ];
    let server = tokio::spawn(serve(handle, script));
    release(&api, &lease_config(), ts(NOW))
        .await
        .expect("release");
    server.await.expect("script failed");
}

#[test]
fn leadership_expires_and_clears() {
    let leader = Gauge::default();
    let l = Leadership::new(leader.clone());
    assert!(!l.is_leader());
    assert_eq!(leader.get(), 0);
    l.set_until(Instant::now() + Duration::from_secs(60));
    assert!(l.is_leader());
    assert_eq!(*l.role().borrow(), Role::Leading);
    assert_eq!(leader.get(), 1);
    // Past the renew deadline the replica stops acting at once, before any round notices.
    l.set_until(Instant::now());
    assert!(!l.is_leader());
    l.clear();
    assert_eq!(*l.role().borrow(), Role::Following);
    assert_eq!(leader.get(), 0);
    assert!(Leadership::always().is_leader());
}
