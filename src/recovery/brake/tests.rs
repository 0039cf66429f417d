use super::*;
use crate::recovery::facts::{Taint, UNREACHABLE_TAINT_KEY};
use std::collections::BTreeSet;

fn ts(s: &str) -> Timestamp {
    s.parse().expect("timestamp")
}

fn node(name: &str, zone: &str, unreachable: bool) -> NodeFacts {
    NodeFacts {
        name: name.into(),
        taints: if unreachable {
            vec![Taint {
                key: UNREACHABLE_TAINT_KEY.into(),
                effect: "NoExecute".into(),
            }]
        } else {
            vec![]
        },
        zone: if zone.is_empty() {
            String::new()
        } else {
            format!(":\0:{zone}")
        },
        excluded_from_disruption: false,
    }
}

/// `zone` with `size` nodes named `{zone}-{i}`, the first `unreachable` unreachable.
fn zone_nodes(zone: &str, size: u32, unreachable: u32) -> Vec<NodeFacts> {
    (0..size)
        .map(|i| node(&format!("{zone}-{i}"), zone, i < unreachable))
        .collect()
}

/// The smallest unreachable count that disrupts a zone of `size` at threshold
/// `percent`/100, by the rule in integers: at least 3, and at least the fraction.
fn first_disrupting(size: u32, percent: u32) -> u32 {
    let fraction = (percent * size).div_ceil(100);
    fraction.max(3)
}

// kube-controller-manager ComputeZoneState, over every zone size 1..=120 and every
// unreachable count, at thresholds around and at the default: fully disrupted iff no healthy
// node; partially iff at least 3 and at least the fraction unreachable.
#[test]
fn compute_zone_state_over_zone_sizes_unreachable_counts_and_thresholds() {
    let mut states = 0;
    for percent in [1u32, 25, 50, 55, 56, 75, 100] {
        let threshold = percent as f32 / 100.0;
        for size in 1..=120u32 {
            for unreachable in 0..=size {
                let state = compute_zone_state(unreachable, size, threshold);
                let expected = if unreachable == size {
                    ZoneState::FullDisruption
                } else if unreachable >= first_disrupting(size, percent) {
                    ZoneState::PartialDisruption
                } else {
                    ZoneState::Normal
                };
                assert_eq!(
                    state, expected,
                    "size {size}, unreachable {unreachable}, threshold {threshold}"
                );
                states += 1;
            }
        }
    }
    // 7 thresholds × (2 + 3 + ... + 121) (size, count) pairs.
    assert_eq!(states, 7 * (2..=121).sum::<u32>());
}

// The cases of docs/src/recovery.md (partition brake), with default flags: one zone of 10 nodes.
#[test]
fn one_zone_of_ten_holds_at_six_unreachable_and_releases_at_three_and_two() {
    let config = BrakeConfig::default();
    let now = ts("2026-11-21T20:00:00Z");
    for (unreachable, held) in [(6, true), (3, false), (2, false), (10, true)] {
        let nodes = zone_nodes("a", 10, unreachable);
        let decision = brake(&nodes[0], &zones(&nodes), None, now, &config);
        assert_eq!(
            matches!(decision, BrakeDecision::Hold(_)),
            held,
            "{unreachable}/10: {decision:?}"
        );
    }
    let nodes = zone_nodes("a", 10, 6);
    let BrakeDecision::Hold(d) = brake(&nodes[0], &zones(&nodes), None, now, &config) else {
        panic!("held");
    };
    assert_eq!(d.message(), "held: zone `a` has 6/10 nodes unreachable");
}

// GetZoneKey gives every node without region or zone labels the key "", and
// ComputeZoneState judges that zone like any other: on-premises clusters without zone labels
// are one zone, held at 6 of 10 as a labelled one is.
#[test]
fn nodes_without_zone_labels_are_one_zone_judged_like_any_other() {
    let config = BrakeConfig::default();
    let now = ts("2026-11-21T20:00:00Z");
    for (unreachable, held) in [(6, true), (3, false), (10, true)] {
        let nodes = zone_nodes("", 10, unreachable);
        assert!(nodes.iter().all(|n| n.zone.is_empty()));
        let decision = brake(&nodes[0], &zones(&nodes), None, now, &config);
        assert_eq!(
            matches!(decision, BrakeDecision::Hold(_)),
            held,
            "{unreachable}/10 unlabelled: {decision:?}"
        );
    }
    // The burst of 6 taints in one pass, replayed as the node stream delivers it.
    let nodes = zone_nodes("", 10, 0);
    let decisions = replay(&nodes, &(0..6).collect::<Vec<_>>(), &BrakeConfig::default());
    assert!(
        decisions
            .iter()
            .all(|d| matches!(d, BrakeDecision::Hold(_))),
        "{decisions:?}"
    );
}

// handleDisruption: a disrupted zone does not hold another zone; every zone fully down is a
// control-plane partition: hold everywhere. A zone fully down while another is healthy is held
// too (kube-controller-manager evicts it gracefully at the normal rate, HealthyQPSFunc; a
// forced Failed is not graceful), unless it is as few nodes as ComputeZoneState ignores (2).
#[test]
fn zones_are_judged_apart_a_whole_zone_down_is_held_and_all_fully_disrupted_holds_everywhere() {
    let config = BrakeConfig::default();
    let now = ts("2026-11-21T20:00:00Z");
    let mut nodes = zone_nodes("a", 10, 6);
    nodes.extend(zone_nodes("b", 10, 1));
    let z = zones(&nodes);
    assert!(matches!(
        brake(&nodes[0], &z, None, now, &config),
        BrakeDecision::Hold(_)
    ));
    assert_eq!(
        brake(&nodes[10], &z, None, now, &config),
        BrakeDecision::Release
    );

    let mut nodes = zone_nodes("a", 4, 4);
    nodes.extend(zone_nodes("b", 10, 0));
    let BrakeDecision::Hold(d) = brake(&nodes[0], &zones(&nodes), None, now, &config) else {
        panic!("a whole zone of 4 is held");
    };
    assert!(!d.everywhere);
    assert_eq!(d.message(), "held: zone `a` has 4/4 nodes unreachable");
    assert_eq!(
        brake(&nodes[4], &zones(&nodes), None, now, &config),
        BrakeDecision::Release
    );
    assert_eq!(
        disrupted_zones(&zones(&nodes), &config),
        BTreeSet::from([":\0:a".to_string()])
    );

    // A zone of two nodes, both down, beside a healthy one: two nodes dying, not a partition.
    for (size, down) in [(1, 1), (2, 2)] {
        let mut nodes = zone_nodes("a", size, down);
        nodes.extend(zone_nodes("b", 10, 0));
        assert_eq!(
            brake(&nodes[0], &zones(&nodes), None, now, &config),
            BrakeDecision::Release
        );
        assert!(disrupted_zones(&zones(&nodes), &config).is_empty());
    }

    let mut nodes = zone_nodes("a", 4, 4);
    nodes.extend(zone_nodes("b", 2, 2));
    let BrakeDecision::Hold(d) = brake(&nodes[4], &zones(&nodes), None, now, &config) else {
        panic!("held everywhere");
    };
    assert!(d.everywhere);
    assert!(
        d.message().contains("control-plane partition"),
        "{}",
        d.message()
    );

    // One zone (no labels) of one node, unreachable: every zone is fully disrupted.
    let nodes = zone_nodes("", 1, 1);
    assert!(matches!(
        brake(&nodes[0], &zones(&nodes), None, now, &config),
        BrakeDecision::Hold(Disruption {
            everywhere: true,
            ..
        })
    ));
}

// setLimiterInZone(zone, zoneSize, PartialDisruption) -> ReducedQPSFunc(zoneSize): the large
// cluster threshold is compared with the zone's size. At most 50 nodes: hold; more: one node
// per 1/rate seconds.
#[test]
fn large_cluster_threshold_is_compared_with_the_zone_size() {
    let config = BrakeConfig::default();
    let now = ts("2026-11-21T20:00:00Z");
    // Zone of 50 in a cluster of 150: held.
    let mut nodes = zone_nodes("a", 50, 30);
    nodes.extend(zone_nodes("b", 100, 0));
    assert!(matches!(
        brake(&nodes[0], &zones(&nodes), None, now, &config),
        BrakeDecision::Hold(_)
    ));
    // Zone of 51: the first node is released, another one 100 s later.
    let nodes = zone_nodes("a", 51, 30);
    let z = zones(&nodes);
    assert_eq!(
        brake(&nodes[0], &z, None, now, &config),
        BrakeDecision::ReleaseThrottled
    );
    let last = LastRelease {
        zone: nodes[0].zone.clone(),
        node: nodes[0].name.clone(),
        at: now,
    };
    assert_eq!(
        brake(&nodes[0], &z, Some(&last), now, &config),
        BrakeDecision::ReleaseThrottled,
        "the released node's other pods go too"
    );
    let later = ts("2026-11-21T20:01:39Z");
    assert!(matches!(
        brake(&nodes[1], &z, Some(&last), later, &config),
        BrakeDecision::Throttled(_, at) if at == ts("2026-11-21T20:01:40Z")
    ));
    assert_eq!(
        brake(
            &nodes[1],
            &z,
            Some(&last),
            ts("2026-11-21T20:01:40Z"),
            &config
        ),
        BrakeDecision::ReleaseThrottled
    );
    // Rate 0: hold.
    let zero = BrakeConfig {
        secondary_rate: 0.0,
        ..config
    };
    assert!(matches!(
        brake(&nodes[1], &z, None, now, &zero),
        BrakeDecision::Hold(_)
    ));
}

#[test]
fn disabled_or_excluded_nodes_are_never_held() {
    let now = ts("2026-11-21T20:00:00Z");
    let mut nodes = zone_nodes("a", 10, 10);
    let z = zones(&nodes);
    let off = BrakeConfig {
        enabled: false,
        ..BrakeConfig::default()
    };
    assert_eq!(
        brake(&nodes[0], &z, None, now, &off),
        BrakeDecision::Release
    );
    // Excluded nodes do not count and are not held (isNodeExcludedFromDisruptionChecks).
    for n in nodes.iter_mut().take(7) {
        n.excluded_from_disruption = true;
    }
    let z = zones(&nodes);
    assert_eq!(z.get(":\0:a").map(|z| z.size), Some(3));
    assert_eq!(
        brake(&nodes[0], &z, None, now, &BrakeConfig::default()),
        BrakeDecision::Release
    );
}

#[test]
fn disrupted_zones_are_the_held_or_slowed_ones() {
    let config = BrakeConfig::default();
    let mut nodes = zone_nodes("a", 10, 6);
    nodes.extend(zone_nodes("b", 10, 10));
    nodes.extend(zone_nodes("c", 10, 0));
    let d = disrupted_zones(&zones(&nodes), &config);
    assert_eq!(
        d.into_iter().collect::<Vec<_>>(),
        vec![":\0:a".to_string(), ":\0:b".to_string()]
    );
    let nodes = zone_nodes("a", 3, 3);
    assert_eq!(disrupted_zones(&zones(&nodes), &config).len(), 1);
    let off = BrakeConfig {
        enabled: false,
        ..config
    };
    assert!(disrupted_zones(&zones(&nodes), &off).is_empty());
}

#[test]
fn zone_key_is_get_zone_key() {
    let labels = |pairs: &[(&str, &str)]| {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<BTreeMap<_, _>>()
    };
    assert_eq!(zone_key(&labels(&[])), "");
    assert_eq!(zone_key(&labels(&[(ZONE_LABEL, "a")])), ":\0:a");
    assert_eq!(
        zone_key(&labels(&[(ZONE_LABEL, "a"), (REGION_LABEL, "r")])),
        "r:\0:a"
    );
    // The beta labels win when present, even empty.
    assert_eq!(
        zone_key(&labels(&[(ZONE_LABEL, "a"), (BETA_ZONE_LABEL, "b")])),
        ":\0:b"
    );
    assert_eq!(zone_name("r:\0:a"), "r/a");
    assert_eq!(zone_name(":\0:a"), "a");
    assert_eq!(zone_name(""), "");
}

// ---- a settled view ----

fn at_ms(ms: i64) -> Timestamp {
    ts("2026-11-21T20:00:00Z")
        .checked_add(SignedDuration::from_millis(ms))
        .expect("timestamp")
}

/// `--partition-settle-period` (10 s by default): the brake judges the zones once no node
/// became unreachable for that long, and at the latest 6 settle periods after the pod's own
/// node did; off, on an excluded node or with 0s it never waits.
#[test]
fn the_brake_waits_for_the_node_stream_to_settle() {
    let config = BrakeConfig::default();
    let node = node("a-0", "a", true);
    let edges = |last: i64, own: i64| Edges {
        last: Some(at_ms(last)),
        run: None,
        node: Some(at_ms(own)),
    };
    // Its own edge 2 s ago, the last one (elsewhere) 1 s ago: 9 s to go.
    assert_eq!(
        settling(&node, edges(-1000, -2000), at_ms(0), &config),
        Some(at_ms(9000))
    );
    // Quiet for 10 s: settled.
    assert_eq!(
        settling(&node, edges(-10_000, -20_000), at_ms(0), &config),
        None
    );
    // A stream that never settles: no longer than 60 s after the pod's own node.
    assert_eq!(
        settling(&node, edges(-1000, -55_000), at_ms(0), &config),
        Some(at_ms(5000))
    );
    assert_eq!(
        settling(&node, edges(-1000, -60_000), at_ms(0), &config),
        None
    );
    // Nothing delivered: nothing to wait for.
    assert_eq!(settling(&node, Edges::default(), at_ms(0), &config), None);
    let fresh = edges(-1000, -1000);
    let off = BrakeConfig {
        enabled: false,
        ..config
    };
    let at_once = BrakeConfig {
        settle: Duration::ZERO,
        ..config
    };
    let excluded = NodeFacts {
        excluded_from_disruption: true,
        ..node.clone()
    };
    assert_eq!(settling(&node, fresh, at_ms(0), &off), None);
    assert_eq!(settling(&node, fresh, at_ms(0), &at_once), None);
    assert_eq!(settling(&excluded, fresh, at_ms(0), &config), None);
}

/// A zone healing is a run of changes too: a pod whose node went unreachable long ago, released
/// as the taints of its zone are lifted, waits until the lifting is over (quiet for a settle
/// period), and at the latest 6 settle periods after the lifting began.
#[test]
fn the_brake_waits_for_a_zone_healing_to_settle() {
    let config = BrakeConfig::default();
    let node = node("a-5", "a", true);
    let healing = |last: i64, run: i64| Edges {
        last: Some(at_ms(last)),
        run: Some(at_ms(run)),
        node: Some(at_ms(-600_000)),
    };
    // Its node went unreachable 10 minutes ago; taints lifted since 2 s ago, the last 0.5 s ago.
    assert_eq!(
        settling(&node, healing(-500, -2000), at_ms(0), &config),
        Some(at_ms(9500))
    );
    // Lifting for 55 s without a pause: 5 s to go; for 60 s: judged now.
    assert_eq!(
        settling(&node, healing(-500, -55_000), at_ms(0), &config),
        Some(at_ms(5000))
    );
    assert_eq!(
        settling(&node, healing(-500, -60_000), at_ms(0), &config),
        None
    );
    // Quiet for a settle period: settled.
    assert_eq!(
        settling(&node, healing(-10_000, -12_000), at_ms(0), &config),
        None
    );
}

/// The taints of one kube-controller-manager pass arrive one watch event at a time. Replayed
/// for the issue's case (6 of 10 nodes of zone a, 100 ms apart) and for a control-plane
/// partition of three zones (interleaved): every pod, reconciled as its node's taint arrives
/// and again whenever `settling` says, is judged only on the whole pass; at once
/// (`--partition-settle-period=0s`) the first pods are judged on 1/10, 2/10, ... and released.
#[test]
fn a_burst_of_taints_is_judged_on_the_settled_view() {
    let one_zone: Vec<NodeFacts> = zone_nodes("a", 10, 0);
    let three_zones: Vec<NodeFacts> = ["a", "b", "c"]
        .iter()
        .flat_map(|z| zone_nodes(z, 3, 0))
        .collect();
    let interleaved: Vec<usize> = (0..3).flat_map(|i| [i, 3 + i, 6 + i]).collect();
    for (nodes, order) in [
        (one_zone, (0..6).collect::<Vec<_>>()),
        (three_zones, interleaved),
    ] {
        for (config, all_held) in [
            (BrakeConfig::default(), true),
            (
                BrakeConfig {
                    settle: Duration::ZERO,
                    ..BrakeConfig::default()
                },
                false,
            ),
        ] {
            let decisions = replay(&nodes, &order, &config);
            let held = decisions
                .iter()
                .filter(|d| matches!(d, BrakeDecision::Hold(_)))
                .count();
            assert_eq!(held == order.len(), all_held, "{decisions:?}");
        }
    }
}

/// Taints `order` (indexes of `nodes`) 100 ms apart and reconciles the pod on each node when its
/// taint arrives and whenever `settling` asks; returns the brake's decision for each pod.
fn replay(nodes: &[NodeFacts], order: &[usize], config: &BrakeConfig) -> Vec<BrakeDecision> {
    let taint_at = |k: usize| at_ms(100 * k as i64);
    // (time, pod's node index) of the reconciles to run, earliest first.
    let mut due: Vec<(Timestamp, usize)> = order
        .iter()
        .enumerate()
        .map(|(k, &i)| (taint_at(k), i))
        .collect();
    let mut decisions = BTreeMap::new();
    while let Some(pos) = (0..due.len()).min_by_key(|&p| due[p].0) {
        let (now, i) = due.swap_remove(pos);
        // What the node stream has delivered by `now`.
        let delivered: Vec<usize> = order
            .iter()
            .enumerate()
            .filter(|(k, _)| taint_at(*k) <= now)
            .map(|(_, &i)| i)
            .collect();
        let view: Vec<NodeFacts> = nodes
            .iter()
            .enumerate()
            .map(|(j, n)| node(&n.name, zone_name(&n.zone).as_str(), delivered.contains(&j)))
            .collect();
        let last = order.iter().position(|&j| !delivered.contains(&j));
        let edges = Edges {
            last: Some(taint_at(last.unwrap_or(order.len()) - 1)),
            run: Some(taint_at(0)),
            node: order.iter().position(|&j| j == i).map(taint_at),
        };
        match settling(&view[i], edges, now, config) {
            Some(at) => due.push((at, i)),
            None => {
                decisions.insert(i, brake(&view[i], &zones(&view), None, now, config));
            }
        }
    }
    decisions.into_values().collect()
}
