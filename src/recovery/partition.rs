//! The partition brake: whether the state of the cluster's nodes says "dead nodes" (recover)
//! or "partition" (hold), the way kube-controller-manager's node lifecycle controller decides
//! whether taint-based evictions run, are slowed or stop
//! (`pkg/controller/nodelifecycle/node_lifecycle_controller.go`: `ComputeZoneState`,
//! `handleDisruption`, `setLimiterInZone`, `ReducedQPSFunc`, `HealthyQPSFunc`).
//!
//! Pods that look stuck on an unreachable node are most likely still running when many nodes
//! become unreachable at once (KEP-6757 "Replacing Pods Which Are Still Running"): forcing them
//! to `Failed` would start replacements beside live pods. So, per zone:
//!
//! - **Normal** (fewer than 3 unhealthy nodes, or less than `--unhealthy-zone-threshold` of
//!   them): recover.
//! - **PartialDisruption** (at least 3 and at least the threshold): hold; in a zone larger than
//!   `--large-cluster-size-threshold`, recover at most one node's pods per
//!   `1 / --secondary-node-eviction-rate` seconds (`ReducedQPSFunc`).
//! - **FullDisruption** (no healthy node in the zone) while another zone has a healthy node: the
//!   zone is gone, not cut off; recover as normal (`HealthyQPSFunc`, the normal rate).
//! - Every zone fully disrupted: a control-plane partition ("master disruption mode"); hold
//!   everywhere.
//!
//! Differences from the node lifecycle controller, on purpose:
//! - A node is unhealthy when it carries the `node.kubernetes.io/unreachable` or
//!   `node.kubernetes.io/not-ready` taint, which the controller sets from the `Ready` condition
//!   (`Unknown`, `False`); jobgate already reads the taints and acts only on them.
//! - The state is computed from the current node set on every decision; the controller keeps the
//!   previous state only to log transitions and reset limiters, which changes no decision.
//! - The normal eviction rate (`--node-eviction-rate`) is not applied: outside a disruption,
//!   jobgate recovers as soon as a pod is due, as Kueue does.
//! - The large-cluster threshold is compared with the size of the zone (`len(zoneToNodeConditions[k])`),
//!   as upstream does despite the flag's name.

use std::collections::BTreeMap;
use std::fmt;

/// `node.kubernetes.io/not-ready`: the node's `Ready` condition is `False`.
pub const NOT_READY_TAINT: &str = "node.kubernetes.io/not-ready";

/// The node labels a zone is read from (`nodetopology.GetZoneKey`): the deprecated beta labels
/// first, then the GA ones.
const ZONE_LABELS: [&str; 2] = [
    "failure-domain.beta.kubernetes.io/zone",
    "topology.kubernetes.io/zone",
];
const REGION_LABELS: [&str; 2] = [
    "failure-domain.beta.kubernetes.io/region",
    "topology.kubernetes.io/region",
];

/// A failure zone: `nodetopology.GetZoneKey`'s region and zone; both empty for nodes without
/// the labels, which form one zone.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Zone {
    pub region: String,
    pub zone: String,
}

impl Zone {
    /// `GetZoneKey`: a beta label wins over the GA one when both are present.
    pub fn of_labels<'a>(label: impl Fn(&str) -> Option<&'a str>) -> Zone {
        let first = |keys: [&str; 2]| {
            keys.iter()
                .find_map(|k| label(k))
                .unwrap_or_default()
                .to_string()
        };
        Zone {
            region: first(REGION_LABELS),
            zone: first(ZONE_LABELS),
        }
    }
}

impl fmt::Display for Zone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.region.is_empty(), self.zone.is_empty()) {
            (true, true) => f.write_str("\"\""),
            (true, false) => f.write_str(&self.zone),
            (false, _) => write!(f, "{}/{}", self.region, self.zone),
        }
    }
}

/// The brake's settings: kube-controller-manager's flags and defaults.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BrakeConfig {
    /// `--unhealthy-zone-threshold` (0.55): the fraction of unhealthy nodes (at least 3) that
    /// makes a zone partially disrupted. Compared in `float32`, as upstream.
    pub unhealthy_zone_threshold: f32,
    /// `--large-cluster-size-threshold` (50): a disrupted zone with more nodes is recovered at
    /// the secondary rate instead of held.
    pub large_cluster_size_threshold: u32,
    /// `--secondary-node-eviction-rate` (0.01 nodes per second): the rate in such a zone; 0
    /// holds it too.
    pub secondary_node_eviction_rate: f64,
}

impl Default for BrakeConfig {
    fn default() -> Self {
        BrakeConfig {
            unhealthy_zone_threshold: 0.55,
            large_cluster_size_threshold: 50,
            secondary_node_eviction_rate: 0.01,
        }
    }
}

/// `ZoneState` (without `Initial`, which only exists between two passes upstream).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZoneState {
    Normal,
    PartialDisruption,
    FullDisruption,
}

/// One zone's counts and state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZoneHealth {
    pub nodes: u32,
    pub unhealthy: u32,
    pub state: ZoneState,
}

/// `ComputeZoneState`.
pub fn zone_state(nodes: u32, unhealthy: u32, config: &BrakeConfig) -> ZoneState {
    let ready = nodes.saturating_sub(unhealthy);
    if ready == 0 && unhealthy > 0 {
        ZoneState::FullDisruption
    } else if unhealthy > 2
        && (unhealthy as f32) / ((unhealthy + ready) as f32) >= config.unhealthy_zone_threshold
    {
        ZoneState::PartialDisruption
    } else {
        ZoneState::Normal
    }
}

/// The state of every zone of a node set, given as `(zone, unhealthy)` per node.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Zones {
    zones: BTreeMap<Zone, ZoneHealth>,
}

impl Zones {
    pub fn compute<'a>(
        nodes: impl IntoIterator<Item = (&'a Zone, bool)>,
        config: &BrakeConfig,
    ) -> Zones {
        let mut counts: BTreeMap<Zone, (u32, u32)> = BTreeMap::new();
        for (zone, unhealthy) in nodes {
            let c = counts.entry(zone.clone()).or_default();
            c.0 += 1;
            c.1 += u32::from(unhealthy);
        }
        let zones = counts
            .into_iter()
            .map(|(zone, (nodes, unhealthy))| {
                let state = zone_state(nodes, unhealthy, config);
                (
                    zone,
                    ZoneHealth {
                        nodes,
                        unhealthy,
                        state,
                    },
                )
            })
            .collect();
        Zones { zones }
    }

    pub fn get(&self, zone: &Zone) -> Option<&ZoneHealth> {
        self.zones.get(zone)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&Zone, &ZoneHealth)> {
        self.zones.iter()
    }

    /// `allAreFullyDisrupted`: no zone has a healthy node (and there is a zone).
    pub fn all_fully_disrupted(&self) -> bool {
        !self.zones.is_empty()
            && self
                .zones
                .values()
                .all(|z| z.state == ZoneState::FullDisruption)
    }

    /// The zones whose recoveries are held or slowed.
    pub fn disrupted(&self) -> impl Iterator<Item = (&Zone, &ZoneHealth)> {
        let all = self.all_fully_disrupted();
        self.zones
            .iter()
            .filter(move |(_, z)| all || z.state == ZoneState::PartialDisruption)
    }

    /// What the brake says for a pod on a node of `zone`.
    pub fn brake(&self, zone: &Zone, config: &BrakeConfig) -> Brake {
        let Some(health) = self.zones.get(zone).copied() else {
            // The node is not in the node set (deleted meanwhile): nothing says partition.
            return Brake::Release;
        };
        if self.all_fully_disrupted() {
            return Brake::Hold(HoldReason::AllZonesDisrupted {
                nodes: self.zones.values().map(|z| z.nodes).sum(),
            });
        }
        match health.state {
            ZoneState::Normal | ZoneState::FullDisruption => Brake::Release,
            ZoneState::PartialDisruption => {
                let reason = HoldReason::ZoneDisrupted {
                    zone: zone.clone(),
                    unhealthy: health.unhealthy,
                    nodes: health.nodes,
                };
                // `ReducedQPSFunc(zoneSize)`: `int32(nodeNum) > largeClusterThreshold`.
                if health.nodes > config.large_cluster_size_threshold
                    && config.secondary_node_eviction_rate > 0.0
                {
                    Brake::Throttle {
                        reason,
                        interval_seconds: 1.0 / config.secondary_node_eviction_rate,
                    }
                } else {
                    Brake::Hold(reason)
                }
            }
        }
    }
}

/// Why recoveries are held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HoldReason {
    /// Partial disruption of one zone.
    ZoneDisrupted {
        zone: Zone,
        unhealthy: u32,
        nodes: u32,
    },
    /// No zone has a healthy node: the control plane is cut off from the nodes.
    AllZonesDisrupted { nodes: u32 },
}

impl fmt::Display for HoldReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HoldReason::ZoneDisrupted {
                zone,
                unhealthy,
                nodes,
            } => write!(
                f,
                "zone `{zone}` has {unhealthy}/{nodes} nodes unreachable or not ready"
            ),
            HoldReason::AllZonesDisrupted { nodes } => write!(
                f,
                "all {nodes} nodes in every zone are unreachable or not ready (control-plane partition)"
            ),
        }
    }
}

/// The brake's answer for one pod.
#[derive(Debug, Clone, PartialEq)]
pub enum Brake {
    /// Nothing says partition: recover as usual.
    Release,
    /// Hold the recovery until the zone heals (deadlines unchanged).
    Hold(HoldReason),
    /// A disrupted zone larger than the large-cluster threshold: recover one node's pods per
    /// `interval_seconds` in the zone.
    Throttle {
        reason: HoldReason,
        interval_seconds: f64,
    },
}

#[cfg(test)]
#[path = "partition_tests.rs"]
mod tests;
