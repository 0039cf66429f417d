use super::*;

fn zone(name: &str) -> Zone {
    Zone {
        region: String::new(),
        zone: name.into(),
    }
}

/// `(zone, unhealthy)` for `nodes` nodes of which the first `unhealthy` are unhealthy.
fn nodes(z: &Zone, nodes: u32, unhealthy: u32) -> Vec<(Zone, bool)> {
    (0..nodes).map(|i| (z.clone(), i < unhealthy)).collect()
}

fn zones(parts: &[(&Zone, u32, u32)], config: &BrakeConfig) -> Zones {
    let all: Vec<(Zone, bool)> = parts
        .iter()
        .flat_map(|(z, n, u)| nodes(z, *n, *u))
        .collect();
    Zones::compute(all.iter().map(|(z, u)| (z, *u)), config)
}

fn held(b: &Brake) -> bool {
    matches!(b, Brake::Hold(_))
}

/// The scenarios the brake exists for: 6 of 10 nodes of one zone unreachable at once is a
/// partition (hold); healed to 3 of 10 it is not (recover the pods still on unreachable nodes);
/// another zone is not affected; 2 of 10 never was.
#[test]
fn six_of_ten_holds_three_of_ten_recovers_and_other_zones_are_unaffected() {
    let c = BrakeConfig::default();
    let (a, b) = (zone("a"), zone("b"));
    let six = zones(&[(&a, 10, 6), (&b, 10, 0)], &c);
    assert_eq!(
        six.brake(&a, &c),
        Brake::Hold(HoldReason::ZoneDisrupted {
            zone: a.clone(),
            unhealthy: 6,
            nodes: 10
        })
    );
    assert_eq!(
        HoldReason::ZoneDisrupted {
            zone: a.clone(),
            unhealthy: 6,
            nodes: 10
        }
        .to_string(),
        "zone `a` has 6/10 nodes unreachable or not ready"
    );
    assert_eq!(six.brake(&b, &c), Brake::Release);
    let healed = zones(&[(&a, 10, 3), (&b, 10, 0)], &c);
    assert_eq!(healed.brake(&a, &c), Brake::Release);
    let two = zones(&[(&a, 10, 2)], &c);
    assert_eq!(two.brake(&a, &c), Brake::Release);
    // One zone, no labels: the zone `""`.
    let unlabelled = Zone::default();
    let one_zone = zones(&[(&unlabelled, 10, 6)], &c);
    assert!(held(&one_zone.brake(&unlabelled, &c)));
}

/// `ComputeZoneState`: at least 3 unhealthy (`notReadyNodes > 2`) and the fraction at or above
/// the threshold, compared in float32; no ready node is FullDisruption.
#[test]
fn compute_zone_state_edges() {
    let c = BrakeConfig::default();
    use ZoneState::*;
    assert_eq!(zone_state(0, 0, &c), Normal);
    assert_eq!(zone_state(4, 2, &c), Normal); // 50 %, and only 2
    assert_eq!(zone_state(3, 2, &c), Normal); // 67 %, but only 2
    assert_eq!(zone_state(5, 3, &c), PartialDisruption); // 60 %
    assert_eq!(zone_state(6, 3, &c), Normal); // 50 %
    assert_eq!(zone_state(20, 11, &c), PartialDisruption); // exactly 0.55 in float32
    assert_eq!(zone_state(20, 10, &c), Normal);
    assert_eq!(zone_state(1, 1, &c), FullDisruption);
    assert_eq!(zone_state(2, 2, &c), FullDisruption);
    assert_eq!(zone_state(10, 10, &c), FullDisruption);
}

/// `handleDisruption`: a fully disrupted zone beside a healthy one is a dead zone, recovered
/// normally; every zone fully disrupted is a control-plane partition, held everywhere.
#[test]
fn a_dead_zone_recovers_but_a_cluster_with_no_healthy_node_holds() {
    let c = BrakeConfig::default();
    let (a, b) = (zone("a"), zone("b"));
    let dead_a = zones(&[(&a, 4, 4), (&b, 4, 0)], &c);
    assert_eq!(dead_a.brake(&a, &c), Brake::Release);
    let all_dead = zones(&[(&a, 4, 4), (&b, 3, 3)], &c);
    assert_eq!(
        all_dead.brake(&b, &c),
        Brake::Hold(HoldReason::AllZonesDisrupted { nodes: 7 })
    );
    assert_eq!(
        HoldReason::AllZonesDisrupted { nodes: 7 }.to_string(),
        "all 7 nodes in every zone are unreachable or not ready (control-plane partition)"
    );
    // A single node cluster whose node is unreachable: also no healthy node anywhere.
    let single = zones(&[(&a, 1, 1)], &c);
    assert!(held(&single.brake(&a, &c)));
}

/// `ReducedQPSFunc(zoneSize)`: `zoneSize > largeClusterThreshold` gets the secondary rate.
#[test]
fn a_disrupted_zone_above_the_large_cluster_threshold_is_throttled() {
    let c = BrakeConfig::default();
    let a = zone("a");
    let at = zones(&[(&a, 50, 30)], &c);
    assert!(held(&at.brake(&a, &c)));
    let above = zones(&[(&a, 51, 30)], &c);
    assert_eq!(
        above.brake(&a, &c),
        Brake::Throttle {
            reason: HoldReason::ZoneDisrupted {
                zone: a.clone(),
                unhealthy: 30,
                nodes: 51
            },
            interval_seconds: 100.0
        }
    );
    let no_rate = BrakeConfig {
        secondary_node_eviction_rate: 0.0,
        ..c
    };
    assert!(held(&above.brake(&a, &no_rate)));
}

#[test]
fn zones_are_read_like_get_zone_key() {
    let labels = |pairs: &'static [(&'static str, &'static str)]| {
        move |k: &str| pairs.iter().find(|(key, _)| *key == k).map(|(_, v)| *v)
    };
    assert_eq!(Zone::of_labels(labels(&[])), Zone::default());
    assert_eq!(
        Zone::of_labels(labels(&[("topology.kubernetes.io/zone", "us-a")])),
        zone("us-a")
    );
    assert_eq!(
        Zone::of_labels(labels(&[
            ("topology.kubernetes.io/zone", "new"),
            ("failure-domain.beta.kubernetes.io/zone", "old"),
            ("topology.kubernetes.io/region", "us"),
        ])),
        Zone {
            region: "us".into(),
            zone: "old".into()
        }
    );
    assert_eq!(
        Zone {
            region: "us".into(),
            zone: "a".into()
        }
        .to_string(),
        "us/a"
    );
}

/// The independent oracle, from the node lifecycle controller's comments: "fullyDisrupted if
/// there're no Ready Nodes, partiallyDisrupted if at least [threshold] of Nodes are not Ready
/// [and more than 2]"; partial disruption stops evictions in small zones and slows them in
/// large ones; full disruption of every zone stops them all; otherwise a fully disrupted zone
/// evicts at the normal rate.
fn oracle(parts: &[(u32, u32)], which: usize, c: &BrakeConfig) -> &'static str {
    let full = |(n, u): (u32, u32)| u > 0 && u == n;
    if parts.iter().all(|p| full(*p)) {
        return "hold";
    }
    let (n, u) = parts[which];
    if full((n, u)) {
        return "release";
    }
    // float32, as `float32(notReadyNodes)/float32(notReadyNodes+readyNodes)`.
    if u >= 3 && (u as f32 / n as f32) >= c.unhealthy_zone_threshold {
        if n > c.large_cluster_size_threshold && c.secondary_node_eviction_rate > 0.0 {
            "throttle"
        } else {
            "hold"
        }
    } else {
        "release"
    }
}

fn kind(b: &Brake) -> &'static str {
    match b {
        Brake::Release => "release",
        Brake::Hold(_) => "hold",
        Brake::Throttle { .. } => "throttle",
    }
}

/// Every zone size up to 60 × every unhealthy count × thresholds around and at the defaults
/// × large-cluster thresholds, alone and beside a second zone of every size and health up to
/// 12: the brake of each zone equals the oracle's.
#[test]
fn brake_over_zone_sizes_unhealthy_counts_and_threshold_edges() {
    let (a, b) = (zone("a"), zone("b"));
    let mut states = 0u64;
    for threshold in [0.3f32, 0.5, 0.55, 0.6, 1.0] {
        for large in [0u32, 10, 50] {
            let c = BrakeConfig {
                unhealthy_zone_threshold: threshold,
                large_cluster_size_threshold: large,
                secondary_node_eviction_rate: 0.01,
            };
            for n in 1..=60u32 {
                for u in 0..=n {
                    let alone = zones(&[(&a, n, u)], &c);
                    assert_eq!(
                        kind(&alone.brake(&a, &c)),
                        oracle(&[(n, u)], 0, &c),
                        "{n}/{u} {c:?}"
                    );
                    states += 1;
                    if n > 12 {
                        continue;
                    }
                    for m in 1..=12u32 {
                        for v in 0..=m {
                            let two = zones(&[(&a, n, u), (&b, m, v)], &c);
                            let parts = [(n, u), (m, v)];
                            assert_eq!(
                                kind(&two.brake(&a, &c)),
                                oracle(&parts, 0, &c),
                                "a {n}/{u} b {m}/{v} {c:?}"
                            );
                            assert_eq!(
                                kind(&two.brake(&b, &c)),
                                oracle(&parts, 1, &c),
                                "a {n}/{u} b {m}/{v} {c:?}"
                            );
                            states += 1;
                        }
                    }
                }
            }
        }
    }
    // 15 configs × (1,890 single zones + 90 × 90 two-zone pairs).
    assert_eq!(states, 15 * (1_890 + 90 * 90));
}
