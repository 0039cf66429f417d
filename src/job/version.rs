//! The Kubernetes release whose kube-apiserver jobgate mirrors, and the Job-related feature gates
//! of that release (`pkg/features/kube_features.go` per release branch).
//!
//! kube-apiserver validates an object before validating webhooks see it, so a webhook copy of an
//! apiserver rule that is older or stricter than the cluster's own can only add false denials.
//! Every rule that changed between 1.33 and 1.38 therefore takes the cluster's version and gates
//! as data, the way upstream passes `JobValidationOptions` (`pkg/registry/batch/job/strategy.go`).
//!
//! A release newer than the newest jobgate knows is accepted and judged with the newest known
//! rules ([`KubernetesVersion::rules`]); the commands say so once (`newer_release_note`).
//!
//! What each release's code says, and the tag it was read from, is in docs/src/versions.md. 1.38
//! is read from the newest tag the Go module proxy serves, `k8s.io/kubernetes` v1.38.0-beta.0
//! with its staging modules v0.38.0-beta.0 (the parity judge for 1.38 is built from it).

use std::collections::BTreeMap;
use std::fmt;

use super::field::{ValueStyle, go_quote};

/// A minor release of Kubernetes (major version 1), 1.33 or newer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KubernetesVersion {
    minor: u16,
}

impl KubernetesVersion {
    pub(crate) const OLDEST: KubernetesVersion = KubernetesVersion { minor: 33 };
    /// The newest release whose rules jobgate knows.
    pub(crate) const NEWEST: KubernetesVersion = KubernetesVersion { minor: 38 };
    /// The newest release that upstream has released (a `v1.N.0` tag): the default when the
    /// cluster's own release cannot be found out. Newer known releases are read from a
    /// pre-release tag (1.38 from v1.38.0-beta.0; due 2026-12-16) and judge only when chosen
    /// explicitly or reported by the cluster.
    pub(crate) const NEWEST_RELEASED: KubernetesVersion = KubernetesVersion { minor: 37 };
    /// The tag the rules of the newest known release are read from.
    pub(crate) const NEWEST_TAG: &str = "v1.38.0-beta.0";

    /// Kubernetes 1.33.
    pub const V1_33: KubernetesVersion = KubernetesVersion { minor: 33 };
    /// Kubernetes 1.34.
    pub const V1_34: KubernetesVersion = KubernetesVersion { minor: 34 };
    /// Kubernetes 1.35.
    pub const V1_35: KubernetesVersion = KubernetesVersion { minor: 35 };
    /// Kubernetes 1.36.
    pub const V1_36: KubernetesVersion = KubernetesVersion { minor: 36 };
    /// Kubernetes 1.37.
    pub const V1_37: KubernetesVersion = KubernetesVersion { minor: 37 };
    /// Kubernetes 1.38.
    pub const V1_38: KubernetesVersion = KubernetesVersion { minor: 38 };

    /// Every release jobgate knows the rules of, oldest first.
    pub fn all() -> impl Iterator<Item = KubernetesVersion> {
        (Self::OLDEST.minor..=Self::NEWEST.minor).map(|minor| KubernetesVersion { minor })
    }

    /// The minor version number (`38` for 1.38).
    pub(crate) fn minor(self) -> u16 {
        self.minor
    }

    /// Whether this release's rules are read from a pre-release tag (newer than
    /// [`Self::NEWEST_RELEASED`]): never a default.
    pub(crate) fn is_pre_release(self) -> bool {
        self > Self::NEWEST_RELEASED
    }

    /// Whether jobgate knows this release's rules (it is not newer than [`Self::NEWEST`]).
    pub(crate) fn is_known(self) -> bool {
        self <= Self::NEWEST
    }

    /// The release whose rules judge this one: itself when known, else the newest known (a
    /// newer release is judged with the newest rules, never refused).
    pub fn rules(self) -> KubernetesVersion {
        self.min(Self::NEWEST)
    }

    /// `MAJOR.MINOR` (a leading `v` is allowed: `v1.36`), 1.33 or newer; a release newer than
    /// jobgate knows is accepted (see [`Self::rules`]).
    pub fn parse(s: &str) -> Result<KubernetesVersion, String> {
        let unsupported = || {
            format!(
                "unsupported Kubernetes version {s:?}: expected MAJOR.MINOR[.PATCH], {} or newer \
                 (jobgate knows the rules of {} to {}; a newer release is judged with {}'s)",
                Self::OLDEST,
                Self::OLDEST,
                Self::NEWEST,
                Self::NEWEST
            )
        };
        let t = s.trim();
        let t = t.strip_prefix('v').unwrap_or(t);
        // What `kubectl version` prints for the server: `v1.35.2`, `v1.35.2+k3s1`,
        // `v1.35.2-eks-1d9b4d9`, `v1.35.2-gke.1200`: the release is MAJOR.MINOR; the patch and a
        // pre-release or build suffix (semver) say nothing about the rules.
        let (t, suffix) = match t.find(['-', '+']) {
            Some(i) => (&t[..i], Some(&t[i + 1..])),
            None => (t, None),
        };
        if suffix.is_some_and(str::is_empty) {
            return Err(unsupported());
        }
        let (major, rest) = t.split_once('.').ok_or_else(unsupported)?;
        let (minor, patch) = match rest.split_once('.') {
            Some((minor, patch)) => (minor, Some(patch)),
            None => (rest, None),
        };
        let digits = |p: &str| {
            !p.is_empty()
                && p.len() <= 3
                && !p.starts_with('0')
                && p.bytes().all(|b| b.is_ascii_digit())
        };
        let patch_digits = |p: &str| p == "0" || digits(p);
        if patch.is_some_and(|p| !patch_digits(p)) || (suffix.is_some() && patch.is_none()) {
            return Err(unsupported());
        }
        if major != "1" || !digits(minor) {
            return Err(unsupported());
        }
        let minor: u16 = minor.parse().map_err(|_| unsupported())?;
        let v = KubernetesVersion { minor };
        if v < Self::OLDEST {
            return Err(unsupported());
        }
        Ok(v)
    }

    /// The release of a cluster whose `/version` says `git_version`: that release (one newer
    /// than jobgate knows is kept, and judged with the newest rules: `newer_release_note` says
    /// so); one older than jobgate knows is judged as the oldest, and one that names no release
    /// as the default, each with a note saying so.
    pub(crate) fn of_server(git_version: &str) -> (KubernetesVersion, Option<String>) {
        if let Ok(v) = KubernetesVersion::parse(git_version) {
            return (v, None);
        }
        let minor = git_version
            .trim_start_matches('v')
            .split('.')
            .nth(1)
            .and_then(|m| m.parse::<u32>().ok());
        let nearest = match minor {
            Some(m) if m < u32::from(Self::OLDEST.minor) => Self::OLDEST,
            _ => Self::default(),
        };
        let note = format!(
            "the cluster reports version {git_version:?}, which jobgate has no rules for; \
             judging with {nearest}'s (set --kubernetes-version to choose)"
        );
        (nearest, Some(note))
    }

    /// What `serve`, `check`, `audit` and `render` say once when judging a release newer than
    /// jobgate knows; `None` for a known release.
    pub(crate) fn newer_release_note(self) -> Option<String> {
        (!self.is_known()).then(|| {
            format!(
                "Kubernetes {self} is newer than the releases jobgate knows ({} to {}): judging \
                 with {}'s rules",
                Self::OLDEST,
                Self::NEWEST,
                self.rules()
            )
        })
    }

    /// What the commands say once when judging by a known release whose rules are read from a
    /// pre-release tag; `None` otherwise (a newer release has [`Self::newer_release_note`]).
    pub(crate) fn pre_release_note(self) -> Option<String> {
        (self.is_known() && self.is_pre_release()).then(|| {
            format!(
                "Kubernetes {self}'s rules are read from {}, a pre-release: they may be stricter \
                 than the released {self}",
                Self::NEWEST_TAG
            )
        })
    }

    /// Whether kube-apiserver serves `admissionregistration.k8s.io/v1` MutatingAdmissionPolicy
    /// (and its binding) by default: the `MutatingAdmissionPolicy` gate is GA and on from 1.36
    /// (k8s.io/apiserver `pkg/features/kube_features.go` v0.36.3, v0.37.2, v0.38.0-alpha.2;
    /// alpha off in 1.32-1.33, beta off in 1.34-1.35, when only `v1alpha1`/`v1beta1` exist and
    /// must be enabled with `--runtime-config`). A newer release answers as the newest known.
    #[allow(
        dead_code,
        reason = "for `jobgate render`, which picks the admissionregistration version per release"
    )]
    pub(crate) fn serves_mutating_admission_policy_v1(self) -> bool {
        self.rules() >= Self::V1_36
    }
}

impl Default for KubernetesVersion {
    /// The newest released minor: what a command judges by when the cluster's own release is
    /// neither given nor found out. A pre-release rule set is never a default: it may be
    /// stricter than every released kube-apiserver (1.38's `validateDelegationAnnotations`).
    fn default() -> Self {
        Self::NEWEST_RELEASED
    }
}

impl fmt::Display for KubernetesVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "1.{}", self.minor)
    }
}

/// The Job-related feature gates whose state can change a rule jobgate mirrors, or that a
/// cluster's `--feature-gates` list may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum FeatureGate {
    /// KEP-3939. Off: the apiserver drops `spec.podReplacementPolicy` (`dropDisabledFields`), so
    /// it is neither defaulted nor validated.
    JobPodReplacementPolicy,
    /// KEP-4368 `spec.managedBy`. Off: the apiserver drops a new Job's `spec.managedBy`
    /// (`PrepareForCreate`), so it is not validated.
    JobManagedBy,
    /// KEP-3850.
    JobBackoffLimitPerIndex,
    /// KEP-3998.
    JobSuccessPolicy,
    /// KEP-5440: container resources of a suspended Job's template may change.
    MutablePodResourcesForSuspendedJobs,
    /// KEP-5440: scheduling directives of a suspended Job's template may change even after it
    /// started.
    MutableSchedulingDirectivesForSuspendedJobs,
    /// KEP-5547 `spec.scheduling` (the field exists from 1.37; the gate, for the Job controller,
    /// from 1.36). Off: the apiserver drops `spec.scheduling` on create (`job.DropDisabledFields`,
    /// pkg/api/job/util.go 1.37). jobgate does not mirror its validation (gang `minCount`,
    /// immutability): known so that a cluster's gate list can be passed as is.
    WorkloadWithJob,
    /// KEP-4671 Workload API. Known because `WorkloadWithJob` depends on it (`defaultKubernetes
    /// FeatureGateDependencies`): a cluster that enables the one enables the other.
    GenericWorkload,
    /// KEP-5073 (k8s.io/apiserver `features`): declarative validation rules at beta replace the
    /// handwritten ones they cover. From 1.38 the Job's `backoffLimitPerIndex` required with
    /// `maxFailedIndexes` is such a rule (`validate::declarative`).
    DeclarativeValidationBeta,
}

/// A gate's state in one release.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GateState {
    /// Not a gate of this release: `unrecognized feature gate`.
    Absent,
    /// GA: always on, setting it to false is an error.
    Locked,
    /// Alpha or beta with this default; the cluster may override it.
    Default(bool),
}

/// Each gate's stages as `kube_features.go` lists them (`featuregate.VersionedSpecs`: the stage
/// from a release on), then the release that no longer has it. Read per release from
/// `k8s.io/kubernetes` v1.33.13, v1.34.4, v1.35.4, v1.36.3, v1.37.2 and v1.38.0-beta.0, except
/// where a comment says otherwise.
const GATE_STAGES: &[(FeatureGate, &[(u16, GateState)])] = {
    use FeatureGate::*;
    use GateState::*;
    &[
        // GA and locked in 1.34; removed in 1.37 (kubernetes#138759: not in v1.37.2's
        // kube_features.go).
        (
            JobPodReplacementPolicy,
            &[
                (28, Default(false)),
                (29, Default(true)),
                (34, Locked),
                (37, Absent),
            ],
        ),
        // GA and locked in 1.35 (kubernetes#135080). Removed in 1.38 by kubernetes#141717
        // (merged 2026-08-31): v1.38.0-beta.0's kube_features.go no longer lists it.
        (
            JobManagedBy,
            &[
                (30, Default(false)),
                (32, Default(true)),
                (35, Locked),
                (38, Absent),
            ],
        ),
        // GA and locked in 1.33; removed in 1.37 (kubernetes#138759).
        (
            JobBackoffLimitPerIndex,
            &[
                (28, Default(false)),
                (29, Default(true)),
                (33, Locked),
                (37, Absent),
            ],
        ),
        // GA and locked in 1.33; removed in 1.37 (kubernetes#138759: v1.37.2's kube_features.go
        // and strategy.go no longer name it).
        (
            JobSuccessPolicy,
            &[
                (30, Default(false)),
                (31, Default(true)),
                (33, Locked),
                (37, Absent),
            ],
        ),
        // Alpha in 1.35 (kubernetes#132441), beta from 1.36 (kubernetes#135965). Still beta in
        // v1.38.0-beta.0 (the GA proposal for 1.38, kubernetes#141784, is not in it).
        (
            MutablePodResourcesForSuspendedJobs,
            &[(35, Default(false)), (36, Default(true))],
        ),
        // Alpha in 1.35 (kubernetes#135104), beta from 1.36 (kubernetes#135965); as above.
        (
            MutableSchedulingDirectivesForSuspendedJobs,
            &[(35, Default(false)), (36, Default(true))],
        ),
        // Alpha (off) from 1.36, still alpha in v1.37.2 and v1.38.0-beta.0.
        (WorkloadWithJob, &[(36, Default(false))]),
        // Alpha (off) from 1.35, beta (off) from 1.37; the same in v1.38.0-beta.0.
        (GenericWorkload, &[(35, Default(false))]),
        // Beta (on) from 1.36 (k8s.io/apiserver; kube_features.go v1.36.3 to v1.38.0-beta.0).
        (DeclarativeValidationBeta, &[(36, Default(true))]),
    ]
};

/// `defaultKubernetesFeatureGateDependencies` (pkg/features/kube_features.go, v1.36.3 to
/// v1.38.0-beta.0) of the gates jobgate knows: an enabled gate whose dependency is disabled is
/// refused (component-base `featuregate`: "%s is enabled, but depends on features that are
/// disabled: %v").
const GATE_DEPENDENCIES: &[(FeatureGate, FeatureGate)] =
    &[(FeatureGate::WorkloadWithJob, FeatureGate::GenericWorkload)];

impl FeatureGate {
    pub(crate) const ALL: [FeatureGate; 9] = [
        FeatureGate::JobPodReplacementPolicy,
        FeatureGate::JobManagedBy,
        FeatureGate::JobBackoffLimitPerIndex,
        FeatureGate::JobSuccessPolicy,
        FeatureGate::MutablePodResourcesForSuspendedJobs,
        FeatureGate::MutableSchedulingDirectivesForSuspendedJobs,
        FeatureGate::WorkloadWithJob,
        FeatureGate::GenericWorkload,
        FeatureGate::DeclarativeValidationBeta,
    ];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            FeatureGate::JobPodReplacementPolicy => "JobPodReplacementPolicy",
            FeatureGate::JobManagedBy => "JobManagedBy",
            FeatureGate::JobBackoffLimitPerIndex => "JobBackoffLimitPerIndex",
            FeatureGate::JobSuccessPolicy => "JobSuccessPolicy",
            FeatureGate::MutablePodResourcesForSuspendedJobs => {
                "MutablePodResourcesForSuspendedJobs"
            }
            FeatureGate::MutableSchedulingDirectivesForSuspendedJobs => {
                "MutableSchedulingDirectivesForSuspendedJobs"
            }
            FeatureGate::WorkloadWithJob => "WorkloadWithJob",
            FeatureGate::GenericWorkload => "GenericWorkload",
            FeatureGate::DeclarativeValidationBeta => "DeclarativeValidationBeta",
        }
    }

    pub(crate) fn parse(name: &str) -> Option<FeatureGate> {
        Self::ALL.into_iter().find(|g| g.as_str() == name)
    }

    fn stages(self) -> &'static [(u16, GateState)] {
        GATE_STAGES
            .iter()
            .find(|(gate, _)| *gate == self)
            .map_or(&[], |(_, stages)| stages)
    }

    /// The gate's stage in `version` (a newer release: in the newest known).
    fn state(self, version: KubernetesVersion) -> GateState {
        let minor = version.rules().minor;
        self.stages()
            .iter()
            .rev()
            .find(|(from, _)| *from <= minor)
            .map_or(GateState::Absent, |(_, state)| *state)
    }

    /// Whether the release is past the gate's last stage: the gate was removed after GA, so
    /// its feature is always on.
    fn removed_in(self, version: KubernetesVersion) -> bool {
        let minor = version.rules().minor;
        self.stages()
            .last()
            .is_some_and(|(from, state)| *state == GateState::Absent && *from <= minor)
    }
}

impl fmt::Display for FeatureGate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `Name=true|false,...` as kube-apiserver's `--feature-gates` takes it (`featureGate.Set`,
/// k8s.io/component-base `featuregate/feature_gate.go`): values as `strconv.ParseBool` reads
/// them, and the same error messages.
pub(crate) fn parse_feature_gates(s: &str) -> Result<BTreeMap<FeatureGate, bool>, String> {
    let mut gates = BTreeMap::new();
    for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let (name, value) = item
            .split_once('=')
            .ok_or_else(|| format!("missing bool value for {item}"))?;
        let name = name.trim();
        // `strconv.ParseBool`, as `featureGate.Set` reads each value.
        let value = match value.trim() {
            "1" | "t" | "T" | "TRUE" | "true" | "True" => true,
            "0" | "f" | "F" | "FALSE" | "false" | "False" => false,
            other => {
                return Err(format!(
                    "invalid value of {name}={other}, err: strconv.ParseBool: parsing {}: invalid syntax",
                    go_quote(other)
                ));
            }
        };
        let gate = parse_gate_name(name)?;
        gates.insert(gate, value);
    }
    Ok(gates)
}

/// A gate name jobgate knows; anything else is rejected, so that a typo never silently keeps a
/// rule the cluster turned off.
pub(crate) fn parse_gate_name(name: &str) -> Result<FeatureGate, String> {
    FeatureGate::parse(name).ok_or_else(|| {
        let known: Vec<&str> = FeatureGate::ALL.iter().map(|g| g.as_str()).collect();
        format!(
            "unrecognized feature gate: {name} (jobgate knows the Job gates {})",
            known.join(", ")
        )
    })
}

/// The cluster jobgate answers for: its release and the gates it overrides.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cluster {
    version: KubernetesVersion,
    overrides: BTreeMap<FeatureGate, bool>,
}

impl Cluster {
    /// A release with its default gates.
    pub fn new(version: KubernetesVersion) -> Cluster {
        Cluster {
            version,
            overrides: BTreeMap::new(),
        }
    }

    /// A release with some gates overridden, checked the way kube-apiserver checks
    /// `--feature-gates` (`component-base/featuregate`): a gate the release does not have is
    /// `unrecognized`, a GA gate may not be turned off.
    pub(crate) fn with_gates(
        version: KubernetesVersion,
        overrides: &BTreeMap<FeatureGate, bool>,
    ) -> Result<Cluster, String> {
        // A newer release is checked against the newest known one's gates.
        let judged = match version.is_known() {
            true => format!("Kubernetes {version}"),
            false => format!(
                "Kubernetes {}, the newest release jobgate knows",
                version.rules()
            ),
        };
        for (&gate, &value) in overrides {
            match gate.state(version) {
                GateState::Absent => {
                    return Err(format!(
                        "unrecognized feature gate: {gate} (not a gate of {judged})"
                    ));
                }
                GateState::Locked if !value => {
                    return Err(format!(
                        "cannot set feature gate {gate} to {value}, feature is locked to true ({judged})"
                    ));
                }
                _ => {}
            }
        }
        let cluster = Cluster {
            version,
            overrides: overrides.clone(),
        };
        for &(gate, dependency) in GATE_DEPENDENCIES {
            if cluster.enabled(gate) && !cluster.enabled(dependency) {
                return Err(format!(
                    "{gate} is enabled, but depends on features that are disabled: [{dependency}] \
                     ({judged})"
                ));
            }
        }
        Ok(cluster)
    }

    /// The release whose rules apply: the cluster's, or the newest known for a newer one.
    pub(crate) fn version(&self) -> KubernetesVersion {
        self.version.rules()
    }

    /// The cluster's release as configured (possibly newer than jobgate knows).
    pub(crate) fn release(&self) -> KubernetesVersion {
        self.version
    }

    /// The gates set explicitly.
    pub(crate) fn overrides(&self) -> &BTreeMap<FeatureGate, bool> {
        &self.overrides
    }

    /// Is the gate on in this cluster? A gate the release does not have is on when it was
    /// removed after GA and off when its feature is newer than the release.
    pub(crate) fn enabled(&self, gate: FeatureGate) -> bool {
        match gate.state(self.version) {
            GateState::Locked => true,
            GateState::Default(default) => self.overrides.get(&gate).copied().unwrap_or(default),
            // Removed after GA (on), or not introduced yet (off).
            GateState::Absent => gate.removed_in(self.version),
        }
    }

    /// How field errors print their values: kubernetes#132314 (1.34) replaced Go's `%#v` with
    /// `json.Marshal`.
    pub(crate) fn value_style(&self) -> ValueStyle {
        if self.version() < KubernetesVersion::V1_34 {
            ValueStyle::GoSyntax
        } else {
            ValueStyle::Json
        }
    }

    /// kubernetes#131525 (1.34): `onPodConditions[].status` defaults to `True` in a CronJob's
    /// job template too; before it only a Job's own spec was defaulted.
    pub(crate) fn defaults_cron_job_pod_condition_status(&self) -> bool {
        self.version() >= KubernetesVersion::V1_34
    }
}

/// What the old Job's state allows to change in `spec.template` on UPDATE: upstream's
/// `JobValidationOptions.AllowMutableSchedulingDirectives` / `AllowMutablePodResources` as
/// `validationOptionsForJob` (`pkg/registry/batch/job/strategy.go`) computes them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct TemplateUpdateOptions {
    /// Node affinity, node selector, tolerations, template labels and annotations, scheduling
    /// gates.
    pub(crate) allow_mutable_scheduling_directives: bool,
    /// `containers[*].resources` and `initContainers[*].resources` (KEP-5440).
    pub(crate) allow_mutable_pod_resources: bool,
}

/// The old Job's facts the template-mutability options depend on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct OldJobState {
    /// `spec.suspend == true`.
    pub(crate) suspended: bool,
    /// `status.startTime` is set.
    pub(crate) started: bool,
    /// `status.conditions` has `type: Suspended, status: "True"` (`batch.JobSuspended`).
    pub(crate) suspended_condition: bool,
    /// `status.active` (absent is 0).
    pub(crate) active: i64,
}

impl Cluster {
    /// `validationOptionsForJob` (`pkg/registry/batch/job/strategy.go`) as each release's code
    /// has it, with this cluster's gates:
    ///
    /// - Gates off, and 1.33-1.34 (v1.33.13, v1.34.4): scheduling directives while
    ///   `suspended && notStarted`; resources immutable.
    /// - 1.35 (v1.35.4), each gate on (alpha, off by default) replaces its rule: scheduling
    ///   directives when `suspended && JobSuspended condition && active == 0` (so a suspended Job
    ///   that never started, which has no condition, may not change them), resources when
    ///   `JobSuspended condition && active == 0` (`spec.suspend` is not read here, but
    ///   `validatePodTemplateUpdate` reads it; kubernetes#136077 added it here in 1.36).
    /// - 1.36 (beta, on), 1.37 and 1.38: both when `suspended && (notStarted || JobSuspended
    ///   condition) && active == 0` (`shouldAllowMutablePodTemplate`, v1.36.3, v1.37.2;
    ///   v1.38.0-beta.0's is the same). v1.36.1 had `suspended && JobSuspended condition && active
    ///   == 0` for both (kubernetes#136077; the never-started case came back in 1.36.2,
    ///   kubernetes#139287, cherry-pick #139329): jobgate cannot tell patch releases apart and
    ///   takes the later, more permissive form, at `/validate` and in `check` alike; an apiserver
    ///   at 1.36.0/1.36.1 refuses such updates itself.
    pub(crate) fn template_update_options(&self, old: &OldJobState) -> TemplateUpdateOptions {
        let suspended = old.suspended;
        let not_started = !old.started;
        let condition = old.suspended_condition;
        let no_active = old.active == 0;
        let (scheduling_relaxed, resources_relaxed) = if self.version() >= KubernetesVersion::V1_36
        {
            let relaxed = suspended && (not_started || condition) && no_active;
            (relaxed, relaxed)
        } else {
            (suspended && condition && no_active, condition && no_active)
        };
        let scheduling = if self.enabled(FeatureGate::MutableSchedulingDirectivesForSuspendedJobs) {
            scheduling_relaxed
        } else {
            suspended && not_started
        };
        TemplateUpdateOptions {
            allow_mutable_scheduling_directives: scheduling,
            allow_mutable_pod_resources: self
                .enabled(FeatureGate::MutablePodResourcesForSuspendedJobs)
                && resources_relaxed,
        }
    }

    /// How apimachinery words the qualified-name errors of `onPodConditions[].type`: from
    /// v0.35 (Kubernetes 1.35) `IsQualifiedName` is `content.IsLabelKey` ("a valid label key",
    /// lengths in bytes).
    pub(crate) fn name_messages(&self) -> crate::names::NameMessages {
        if self.version() < KubernetesVersion::V1_35 {
            crate::names::NameMessages::Characters
        } else {
            crate::names::NameMessages::LabelKeyBytes
        }
    }
}

#[cfg(test)]
mod tests;
