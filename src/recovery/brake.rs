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
//! - every zone fully disrupted: a control-plane partition, evictions stop everywhere.
//!
//! A settled view, as kube-controller-manager decides on a whole pass: its `monitorNodeHealth`
//! lists every node, updates each node's health (in parallel), collects the ready condition of
//! each zone, and only then calls `handleDisruption` once for the pass, which sets the zones'
//! states and eviction rates (v1.37.2 `node_lifecycle_controller.go`, `monitorNodeHealth`:
//! `workqueue.ParallelizeUntil(..., updateNodeFunc)` then `nc.handleDisruption(ctx,
//! zoneToNodeConditions, nodes)`; every `--node-monitor-period`, 5s). jobgate sees the taints
//! of one pass one watch event at a time, so it decides only on a view the node stream has
//! settled on ([`settling`]): no unreachable taint added or lifted for
//! `--partition-settle-period` (10s, two passes), and at most [`MAX_SETTLE_PERIODS`] of them
//! after the pod's own node became unreachable or the current run of changes began. A burst of
//! 6 of 10 nodes tainted in one pass is then judged as 6/10, never as 1/10, 2/10, ... as the
//! events arrive; and the same zone healing in one pass is judged healed, never as 5/10, 4/10,
//! 3/10 with the pods of the last three nodes released and force-failed.
//!
//! Deviations, on purpose:
//! - "not healthy" is the `node.kubernetes.io/unreachable` taint (what the pod decision reads),
//!   not a Ready condition other than `True`: a `NotReady` node whose kubelet still reports is
//!   running its pods, and jobgate never acts on it anyway;
//! - the rate is applied to nodes released per zone (all pods of a released node go), like the
//!   controller's rate of tainted nodes, and it is computed from the last release instead of a
//!   token bucket; jobgate has no normal-rate limit (the pod decision is already slow: its
//!   deadline);
//! - a zone fully disrupted while another is not, and more than 2 of its nodes unreachable, is
//!   held. kube-controller-manager takes it for a dead zone and evicts at the normal rate
//!   (`HealthyQPSFunc`), but its eviction is a graceful delete: a pod whose kubelet is only cut
//!   off keeps running, terminating. jobgate's act is the one that controller never takes, a
//!   forced `Failed` that starts the replacement, and a whole zone cut off in one burst is what
//!   a zone's network partition looks like. The way out of a zone that is really dead is the
//!   one Kubernetes gives: delete its Node objects (the pod garbage collector then deletes
//!   their pods) or taint them `node.kubernetes.io/out-of-service` (non-graceful node shutdown).
//!   A zone of 1 or 2 nodes fully down is recovered, as kube-controller-manager's partial rule
//!   ignores 2 unreachable nodes;
//! - the state is recomputed from the current node set on every decision, so there is no
//!   "Initial" state and no hysteresis: a zone that heals below the threshold releases its held
//!   pods at once, with their deadlines unchanged.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::facts::{NodeFacts, is_unreachable};

/// kube-controller-manager's `--unhealthy-zone-threshold` default.
pub(crate) const DEFAULT_UNHEALTHY_ZONE_THRESHOLD: f32 = 0.55;
/// kube-controller-manager's `--large-cluster-size-threshold` default.
pub(crate) const DEFAULT_LARGE_CLUSTER_SIZE_THRESHOLD: u32 = 50;
/// kube-controller-manager's `--secondary-node-eviction-rate` default (nodes per second).
pub(crate) const DEFAULT_SECONDARY_RATE: f64 = 0.01;
/// `--partition-settle-period` default: two of kube-controller-manager's node monitor passes
/// (`--node-monitor-period`, 5s), so the taints of one pass have all arrived.
pub(crate) const DEFAULT_SETTLE_PERIOD: Duration = Duration::from_secs(10);
/// A pod waits for the node stream to settle at most this many settle periods after its own
/// node became unreachable (60s by default): a stream that keeps delivering new unreachable
/// nodes does not hold it for ever; the brake then decides on the view as it stands.
pub(crate) const MAX_SETTLE_PERIODS: u32 = 6;
/// `labelNodeDisruptionExclusion`.
pub(crate) const EXCLUDE_DISRUPTION_LABEL: &str = "node.kubernetes.io/exclude-disruption";
pub(crate) const ZONE_LABEL: &str = "topology.kubernetes.io/zone";
pub(crate) const REGION_LABEL: &str = "topology.kubernetes.io/region";
pub(crate) const BETA_ZONE_LABEL: &str = "failure-domain.beta.kubernetes.io/zone";
pub(crate) const BETA_REGION_LABEL: &str = "failure-domain.beta.kubernetes.io/region";
/// Every node label the brake reads: a node's zone key and its exclusion.
pub(crate) const NODE_LABELS_READ: [&str; 5] = [
    ZONE_LABEL,
    REGION_LABEL,
    BETA_ZONE_LABEL,
    BETA_REGION_LABEL,
    EXCLUDE_DISRUPTION_LABEL,
];

/// `--partition-brake`, `--unhealthy-zone-threshold`, `--large-cluster-size-threshold`,
/// `--secondary-recovery-rate`, `--partition-settle-period`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct BrakeConfig {
    pub(crate) enabled: bool,
    pub(crate) unhealthy_zone_threshold: f32,
    pub(crate) large_cluster_size_threshold: u32,
    /// Nodes per second and zone released in a partially disrupted large zone.
    pub(crate) secondary_rate: f64,
    /// How long the node stream must deliver no new unreachable node before the zones are
    /// judged; zero judges each node as it arrives.
    pub(crate) settle: Duration,
}

impl Default for BrakeConfig {
    fn default() -> Self {
        BrakeConfig {
            enabled: true,
            unhealthy_zone_threshold: DEFAULT_UNHEALTHY_ZONE_THRESHOLD,
            large_cluster_size_threshold: DEFAULT_LARGE_CLUSTER_SIZE_THRESHOLD,
            secondary_rate: DEFAULT_SECONDARY_RATE,
            settle: DEFAULT_SETTLE_PERIOD,
        }
    }
}

/// `ZoneState` (without `Initial`, see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ZoneState {
    Normal,
    PartialDisruption,
    FullDisruption,
}

/// `GetZoneKey` from a node's labels: `region + ":\0:" + zone`, `""` without either.
pub(crate) fn zone_key(labels: &BTreeMap<String, String>) -> String {
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
pub(crate) fn zone_name(key: &str) -> String {
    match key.split_once(":\0:") {
        Some(("", zone)) => zone.to_string(),
        Some((region, zone)) => format!("{region}/{zone}"),
        None => key.to_string(),
    }
}

/// kube-controller-manager's `ComputeZoneState` takes a zone for partially disrupted only with
/// more than this many unhealthy nodes; the brake holds no whole zone of this many either.
const MAX_UNREACHABLE_IGNORED: u32 = 2;

/// `ComputeZoneState` over `total` nodes of which `unreachable` are not healthy.
pub(crate) fn compute_zone_state(unreachable: u32, total: u32, threshold: f32) -> ZoneState {
    let healthy = total.saturating_sub(unreachable);
    if healthy == 0 && unreachable > 0 {
        ZoneState::FullDisruption
    } else if unreachable > MAX_UNREACHABLE_IGNORED
        && (unreachable as f32) / (total as f32) >= threshold
    {
        ZoneState::PartialDisruption
    } else {
        ZoneState::Normal
    }
}

/// One zone of the node set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Zone {
    pub(crate) size: u32,
    pub(crate) unreachable: u32,
}

/// Nodes per zone key, without the excluded ones.
pub(crate) fn zones<'a>(nodes: impl IntoIterator<Item = &'a NodeFacts>) -> BTreeMap<String, Zone> {
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
pub(crate) struct Disruption {
    /// The zone key (see [`zone_name`]).
    pub(crate) zone: String,
    pub(crate) unreachable: u32,
    pub(crate) size: u32,
    /// Every zone is fully disrupted: a control-plane partition.
    pub(crate) everywhere: bool,
}

impl Disruption {
    /// The held pod's event note and `jobgate status` text.
    pub(crate) fn message(&self) -> String {
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
pub(crate) enum BrakeDecision {
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

/// The last node released in a throttled zone (key), and when.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LastRelease {
    pub(crate) zone: String,
    pub(crate) node: String,
    pub(crate) at: Timestamp,
}

/// The brake for a pod on `node` (its zone and the whole node set as the cache holds them).
/// `last_release` is the zone's last throttled release.
pub(crate) fn brake(
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
        ZoneState::Normal => BrakeDecision::Release,
        ZoneState::FullDisruption if zone.unreachable <= MAX_UNREACHABLE_IGNORED => {
            BrakeDecision::Release
        }
        ZoneState::FullDisruption => BrakeDecision::Hold(disruption(false)),
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

/// When the node stream changed the zones the brake counts (the reconciler's node cache
/// remembers it; `jobgate status` has no such memory: none).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Edges {
    /// The last change on any node the brake counts: the unreachable taint rising or falling,
    /// or an unreachable node deleted.
    pub(crate) last: Option<Timestamp>,
    /// When the run of changes that `last` ends began (changes less than a settle period apart
    /// are one run).
    pub(crate) run: Option<Timestamp>,
    /// The rising edge of the pod's node.
    pub(crate) node: Option<Timestamp>,
}

/// The time until which the brake waits for a settled view before it judges the zones for a
/// pod on `node`: the last change plus the settle period, but no later than the settle period
/// times [`MAX_SETTLE_PERIODS`] after the later of the node's own edge and the start of the
/// current run of changes. A zone healing is a run of falling edges as a partition is a run of
/// rising ones: judged as each taint is lifted, a zone of 6/10 drops to 3/10 with three nodes
/// still to come back, and their pods, released, would be force-failed beside nodes coming back
/// in the same pass. `None`: settled now (or the brake would not hold the pod anyway: off, or
/// the node is excluded).
pub(crate) fn settling(
    node: &NodeFacts,
    edges: Edges,
    now: Timestamp,
    config: &BrakeConfig,
) -> Option<Timestamp> {
    if !config.enabled || node.excluded_from_disruption || config.settle.is_zero() {
        return None;
    }
    let after = |t: Timestamp, periods: u32| {
        SignedDuration::try_from(config.settle.saturating_mul(periods))
            .ok()
            .and_then(|d| t.checked_add(d).ok())
            .unwrap_or(Timestamp::MAX)
    };
    let quiet = after(edges.last?, 1);
    let began = match (edges.node, edges.run) {
        (Some(node), Some(run)) => Some(node.max(run)),
        (node, run) => node.or(run),
    };
    let at = match began {
        Some(began) => quiet.min(after(began, MAX_SETTLE_PERIODS)),
        None => quiet,
    };
    (now < at).then_some(at)
}

/// The zones whose recoveries the brake holds or slows now: every zone when all are fully
/// disrupted, else the partially disrupted ones and those fully disrupted with more than 2
/// nodes. Empty when the brake is off.
pub(crate) fn disrupted_zones(
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
        .filter(|(_, z)| {
            everywhere
                || match state(z) {
                    ZoneState::Normal => false,
                    ZoneState::PartialDisruption => true,
                    ZoneState::FullDisruption => z.unreachable > MAX_UNREACHABLE_IGNORED,
                }
        })
        .map(|(k, _)| k.clone())
        .collect()
}

#[cfg(test)]
mod tests;
