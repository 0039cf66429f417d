//! The partition brake: hold forced recoveries in a zone that looks partitioned rather than dead,
//! as kube-controller-manager's node lifecycle controller slows or stops taint-based evictions
//! (`pkg/controller/nodelifecycle/node_lifecycle_controller.go`: `ComputeZoneState`,
//! `handleDisruption`, `setLimiterInZone`, `ReducedQPSFunc`, `HealthyQPSFunc`). Pure: the node
//! set, the time and the last release of the zone in, a decision out.
//!
//! Mirrored exactly:
//! - zones are `GetZoneKey`: region and zone (`failure-domain.beta.kubernetes.io/*` first, then
//!   `topology.kubernetes.io/*`), `""` when a node has neither; nodes labelled
//!   `node.kubernetes.io/exclude-disruption` are left out (`isNodeExcludedFromDisruptionChecks`);
//! - a zone is fully disrupted when none of its nodes is healthy, partially disrupted when more
//!   than 2 are not and they are at least `--unhealthy-zone-threshold` of it (float32 division,
//!   `>=`), else normal;
//! - partial disruption: evictions stop (rate 0) when the *zone's* size is at most
//!   `--large-cluster-size-threshold`, else they go on at the secondary rate (`ReducedQPSFunc` is
//!   called with the zone size by `setLimiterInZone`, despite its name);
//! - full disruption of a zone while another zone is not fully disrupted: evictions go on at the
//!   normal rate (`HealthyQPSFunc`: a whole zone down is taken for a dead zone); every zone fully
//!   disrupted: a control-plane partition, evictions stop everywhere.
//!
//! Deviations, on purpose:
//! - "not healthy" is the `node.kubernetes.io/unreachable` taint (what the pod decision reads),
//!   not a Ready condition other than `True`: a `NotReady` node whose kubelet still reports is
//!   running its pods, and jobgate never acts on it anyway;
//! - the rate is applied to nodes released per zone (all pods of a released node go), like the
//!   controller's rate of tainted nodes, and it is computed from the last release instead of a
//!   token bucket; jobgate has no normal-rate limit (the pod decision is already slow: its
//!   deadline);
//! - the state is recomputed from the current node set on every decision, so there is no
//!   "Initial" state and no hysteresis: a zone that heals below the threshold releases its held
//!   pods at once, with their deadlines unchanged.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::{NodeFacts, is_unreachable};

/// kube-controller-manager's `--unhealthy-zone-threshold` default.
pub const DEFAULT_UNHEALTHY_ZONE_THRESHOLD: f32 = 0.55;
/// kube-controller-manager's `--large-cluster-size-threshold` default.
pub const DEFAULT_LARGE_CLUSTER_SIZE_THRESHOLD: u32 = 50;
/// kube-controller-manager's `--secondary-node-eviction-rate` default (nodes per second).
pub const DEFAULT_SECONDARY_RATE: f64 = 0.01;
/// `labelNodeDisruptionExclusion`.
pub const EXCLUDE_DISRUPTION_LABEL: &str = "node.kubernetes.io/exclude-disruption";
pub const ZONE_LABEL: &str = "topology.kubernetes.io/zone";
pub const REGION_LABEL: &str = "topology.kubernetes.io/region";
pub const BETA_ZONE_LABEL: &str = "failure-domain.beta.kubernetes.io/zone";
pub const BETA_REGION_LABEL: &str = "failure-domain.beta.kubernetes.io/region";

/// `--partition-brake`, `--unhealthy-zone-threshold`, `--large-cluster-size-threshold`,
/// `--secondary-recovery-rate`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BrakeConfig {
    pub enabled: bool,
    pub unhealthy_zone_threshold: f32,
    pub large_cluster_size_threshold: u32,
    /// Nodes per second and zone released in a partially disrupted large zone.
    pub secondary_rate: f64,
}

impl Default for BrakeConfig {
    fn default() -> Self {
        BrakeConfig {
            enabled: true,
            unhealthy_zone_threshold: DEFAULT_UNHEALTHY_ZONE_THRESHOLD,
            large_cluster_size_threshold: DEFAULT_LARGE_CLUSTER_SIZE_THRESHOLD,
            secondary_rate: DEFAULT_SECONDARY_RATE,
        }
    }
}

/// `ZoneState` (without `Initial`, see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZoneState {
    Normal,
    PartialDisruption,
    FullDisruption,
}

/// `GetZoneKey` from a node's labels: `region + ":\0:" + zone`, `""` without either.
pub fn zone_key(labels: &BTreeMap<String, String>) -> String {
    let get = |beta: &str, stable: &str| {
        labels
            .get(beta)
            .or_else(|| labels.get(stable))
            .cloned()
            .unwrap_or_default()
    };
    let zone = get(BETA_ZONE_LABEL, ZONE_LABEL);
    let region = get(BETA_REGION_LABEL, REGION_LABEL);
    if region.is_empty() && zone.is_empty() {
        return String::new();
    }
    format!("{region}:\0:{zone}")
}

/// The zone key as people read it: the zone, or `region/zone`, or `""`.
pub fn zone_name(key: &str) -> String {
    match key.split_once(":\0:") {
        Some(("", zone)) => zone.to_string(),
        Some((region, zone)) => format!("{region}/{zone}"),
        None => key.to_string(),
    }
}

/// `ComputeZoneState` over `total` nodes of which `unreachable` are not healthy.
pub fn compute_zone_state(unreachable: u32, total: u32, threshold: f32) -> ZoneState {
    let healthy = total.saturating_sub(unreachable);
    if healthy == 0 && unreachable > 0 {
        ZoneState::FullDisruption
    } else if unreachable > 2 && (unreachable as f32) / (total as f32) >= threshold {
        ZoneState::PartialDisruption
    } else {
        ZoneState::Normal
    }
}

/// One zone of the node set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Zone {
    pub size: u32,
    pub unreachable: u32,
}

/// Nodes per zone key, without the excluded ones.
pub fn zones<'a>(nodes: impl IntoIterator<Item = &'a NodeFacts>) -> BTreeMap<String, Zone> {
    let mut zones: BTreeMap<String, Zone> = BTreeMap::new();
    for node in nodes.into_iter().filter(|n| !n.excluded_from_disruption) {
        let zone = zones.entry(node.zone.clone()).or_insert(Zone {
            size: 0,
            unreachable: 0,
        });
        zone.size = zone.size.saturating_add(1);
        if is_unreachable(node) {
            zone.unreachable = zone.unreachable.saturating_add(1);
        }
    }
    zones
}

/// Why recoveries in a zone are held or slowed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Disruption {
    /// The zone key (see [`zone_name`]).
    pub zone: String,
    pub unreachable: u32,
    pub size: u32,
    /// Every zone is fully disrupted: a control-plane partition.
    pub everywhere: bool,
}

impl Disruption {
    /// The held pod's event note and `jobgate status` text.
    pub fn message(&self) -> String {
        if self.everywhere {
            format!(
                "held: every node is unreachable (zone `{}` has {}/{} nodes unreachable): \
                 a control-plane partition, not dead nodes",
                zone_name(&self.zone),
                self.unreachable,
                self.size
            )
        } else {
            format!(
                "held: zone `{}` has {}/{} nodes unreachable",
                zone_name(&self.zone),
                self.unreachable,
                self.size
            )
        }
    }
}

/// The brake's word on recovering a pod on an unreachable node.
#[derive(Clone, Debug, PartialEq)]
pub enum BrakeDecision {
    /// Recover as the pod's own decision says.
    Release,
    /// Partially disrupted large zone: release this node now (and remember it as the zone's
    /// last release at `now`).
    ReleaseThrottled,
    /// Partially disrupted large zone: another node was released too recently; look again at
    /// this time.
    Throttled(Disruption, Timestamp),
    /// Hold: do not recover while the zone (or every zone) stays disrupted.
    Hold(Disruption),
}

/// The last node released in a throttled zone, and when.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LastRelease {
    pub node: String,
    pub at: Timestamp,
}

/// The brake for a pod on `node` (its zone and the whole node set as the cache holds them).
/// `last_release` is the zone's last throttled release.
pub fn brake(
    node: &NodeFacts,
    nodes: &BTreeMap<String, Zone>,
    last_release: Option<&LastRelease>,
    now: Timestamp,
    config: &BrakeConfig,
) -> BrakeDecision {
    if !config.enabled || node.excluded_from_disruption {
        return BrakeDecision::Release;
    }
    let Some(zone) = nodes.get(&node.zone) else {
        return BrakeDecision::Release;
    };
    let threshold = config.unhealthy_zone_threshold;
    let disruption = |everywhere| Disruption {
        zone: node.zone.clone(),
        unreachable: zone.unreachable,
        size: zone.size,
        everywhere,
    };
    let all_fully_disrupted = nodes
        .values()
        .all(|z| compute_zone_state(z.unreachable, z.size, threshold) == ZoneState::FullDisruption);
    if all_fully_disrupted {
        return BrakeDecision::Hold(disruption(true));
    }
    match compute_zone_state(zone.unreachable, zone.size, threshold) {
        ZoneState::Normal | ZoneState::FullDisruption => BrakeDecision::Release,
        ZoneState::PartialDisruption => {
            let rate = config.secondary_rate;
            if zone.size <= config.large_cluster_size_threshold || rate.is_nan() || rate <= 0.0 {
                return BrakeDecision::Hold(disruption(false));
            }
            let Some(last) = last_release else {
                return BrakeDecision::ReleaseThrottled;
            };
            if last.node == node.name {
                return BrakeDecision::ReleaseThrottled;
            }
            let interval = Duration::try_from_secs_f64(1.0 / rate).unwrap_or(Duration::MAX);
            let next = SignedDuration::try_from(interval)
                .ok()
                .and_then(|d| last.at.checked_add(d).ok())
                .unwrap_or(Timestamp::MAX);
            if now >= next {
                BrakeDecision::ReleaseThrottled
            } else {
                BrakeDecision::Throttled(disruption(false), next)
            }
        }
    }
}

/// The zones whose recoveries the brake holds or slows now: every zone when all are fully
/// disrupted, else the partially disrupted ones. Empty when the brake is off.
pub fn disrupted_zones(
    zones: &BTreeMap<String, Zone>,
    config: &BrakeConfig,
) -> std::collections::BTreeSet<String> {
    if !config.enabled {
        return Default::default();
    }
    let threshold = config.unhealthy_zone_threshold;
    let state = |z: &Zone| compute_zone_state(z.unreachable, z.size, threshold);
    let everywhere = zones
        .values()
        .all(|z| state(z) == ZoneState::FullDisruption);
    zones
        .iter()
        .filter(|(_, z)| everywhere || state(z) == ZoneState::PartialDisruption)
        .map(|(k, _)| k.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recovery::{Taint, UNREACHABLE_TAINT_KEY};

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

    // The README's cases, with default flags: one zone of 10 nodes.
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

    // handleDisruption: a disrupted zone does not hold another zone; a zone fully down while
    // another is healthy is recovered at the normal rate (HealthyQPSFunc); every zone fully down
    // is a control-plane partition: hold everywhere.
    #[test]
    fn zones_are_judged_apart_and_all_fully_disrupted_holds_everywhere() {
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
        assert_eq!(
            brake(&nodes[0], &zones(&nodes), None, now, &config),
            BrakeDecision::Release
        );

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
        assert_eq!(d.into_iter().collect::<Vec<_>>(), vec![":\0:a".to_string()]);
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
}
