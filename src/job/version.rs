//! The Kubernetes release whose kube-apiserver jobgate mirrors, and the Job-related feature gates
//! of that release (`pkg/features/kube_features.go` per release branch).
//!
//! kube-apiserver validates an object before validating webhooks see it, so a webhook copy of an
//! apiserver rule that is older or stricter than the cluster's own can only add false denials.
//! Every rule that changed between 1.33 and 1.37 therefore takes the cluster's version and gates
//! as data, the way upstream passes `JobValidationOptions` (`pkg/registry/batch/job/strategy.go`).

use std::collections::BTreeMap;
use std::fmt;

/// A supported minor release of Kubernetes (major version 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KubernetesVersion {
    minor: u8,
}

impl KubernetesVersion {
    pub(crate) const OLDEST: KubernetesVersion = KubernetesVersion { minor: 33 };
    pub(crate) const NEWEST: KubernetesVersion = KubernetesVersion { minor: 37 };

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

    /// Every supported release, oldest first.
    pub fn all() -> impl Iterator<Item = KubernetesVersion> {
        (Self::OLDEST.minor..=Self::NEWEST.minor).map(|minor| KubernetesVersion { minor })
    }

    /// `MAJOR.MINOR` (a leading `v` is allowed: `v1.36`), within the supported range.
    pub fn parse(s: &str) -> Result<KubernetesVersion, String> {
        let unsupported = || {
            format!(
                "unsupported Kubernetes version {s:?}: expected MAJOR.MINOR[.PATCH] from {} to {}",
                Self::OLDEST,
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
        let minor: u8 = minor.parse().map_err(|_| unsupported())?;
        let v = KubernetesVersion { minor };
        if v < Self::OLDEST || v > Self::NEWEST {
            return Err(unsupported());
        }
        Ok(v)
    }
}

impl Default for KubernetesVersion {
    /// The newest supported release: what upstream supports now.
    fn default() -> Self {
        Self::NEWEST
    }
}

impl fmt::Display for KubernetesVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "1.{}", self.minor)
    }
}

/// The Job-related feature gates whose state can change a rule jobgate mirrors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum FeatureGate {
    /// KEP-3939. Beta (on) in 1.33, GA and locked in 1.34-1.36, removed in 1.37
    /// (kubernetes#138759). Off: the apiserver drops `spec.podReplacementPolicy`
    /// (`dropDisabledFields`), so it is neither defaulted nor validated.
    JobPodReplacementPolicy,
    /// KEP-4368 `spec.managedBy`. Beta (on) in 1.33-1.34, GA and locked from 1.35
    /// (kubernetes#135080). Off: the apiserver drops a new Job's `spec.managedBy`
    /// (`PrepareForCreate`), so it is not validated.
    JobManagedBy,
    /// KEP-3850. GA and locked in 1.33-1.36; removed in 1.37 (kubernetes#138759).
    JobBackoffLimitPerIndex,
    /// KEP-3998. GA and locked in 1.33-1.36; removed in 1.37 (k8s.io/kubernetes v1.37.2
    /// `pkg/features/kube_features.go` no longer has it).
    JobSuccessPolicy,
    /// KEP-5440: container resources of a suspended Job's template may change. Alpha (off) in
    /// 1.35 (kubernetes#132441), beta (on) from 1.36 (kubernetes#135965).
    MutablePodResourcesForSuspendedJobs,
    /// KEP-5440: scheduling directives of a suspended Job's template may change even after it
    /// started. Alpha (off) in 1.35 (kubernetes#135104), beta (on) from 1.36 (kubernetes#135965).
    MutableSchedulingDirectivesForSuspendedJobs,
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

impl FeatureGate {
    pub(crate) const ALL: [FeatureGate; 6] = [
        FeatureGate::JobPodReplacementPolicy,
        FeatureGate::JobManagedBy,
        FeatureGate::JobBackoffLimitPerIndex,
        FeatureGate::JobSuccessPolicy,
        FeatureGate::MutablePodResourcesForSuspendedJobs,
        FeatureGate::MutableSchedulingDirectivesForSuspendedJobs,
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
        }
    }

    pub(crate) fn parse(name: &str) -> Option<FeatureGate> {
        Self::ALL.into_iter().find(|g| g.as_str() == name)
    }

    /// The gate's stage in `version`, from each release's `kube_features.go`.
    fn state(self, version: KubernetesVersion) -> GateState {
        use FeatureGate::*;
        use GateState::*;
        let minor = version.minor;
        match self {
            JobPodReplacementPolicy => match minor {
                33 => Default(true),
                34..=36 => Locked,
                _ => Absent,
            },
            JobManagedBy => match minor {
                ..=34 => Default(true),
                _ => Locked,
            },
            JobBackoffLimitPerIndex => match minor {
                ..=36 => Locked,
                _ => Absent,
            },
            JobSuccessPolicy => match minor {
                ..=36 => Locked,
                _ => Absent,
            },
            MutablePodResourcesForSuspendedJobs | MutableSchedulingDirectivesForSuspendedJobs => {
                match minor {
                    ..=34 => Absent,
                    35 => Default(false),
                    _ => Default(true),
                }
            }
        }
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
                    super::field::go_quote(other)
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
        for (&gate, &value) in overrides {
            match gate.state(version) {
                GateState::Absent => {
                    return Err(format!(
                        "unrecognized feature gate: {gate} (not a gate of Kubernetes {version})"
                    ));
                }
                GateState::Locked if !value => {
                    return Err(format!(
                        "cannot set feature gate {gate} to {value}, feature is locked to true (Kubernetes {version})"
                    ));
                }
                _ => {}
            }
        }
        Ok(Cluster {
            version,
            overrides: overrides.clone(),
        })
    }

    pub(crate) fn version(&self) -> KubernetesVersion {
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
            GateState::Absent => !introduced_by_kep_5440(gate),
        }
    }

    /// How field errors print their values: kubernetes#132314 (1.34) replaced Go's `%#v` with
    /// `json.Marshal`.
    pub(crate) fn value_style(&self) -> ValueStyle {
        if self.version < KubernetesVersion::V1_34 {
            ValueStyle::GoSyntax
        } else {
            ValueStyle::Json
        }
    }

    /// kubernetes#131525 (1.34): `onPodConditions[].status` defaults to `True` in a CronJob's
    /// job template too; before it only a Job's own spec was defaulted.
    pub(crate) fn defaults_cron_job_pod_condition_status(&self) -> bool {
        self.version >= KubernetesVersion::V1_34
    }
}

fn introduced_by_kep_5440(gate: FeatureGate) -> bool {
    matches!(
        gate,
        FeatureGate::MutablePodResourcesForSuspendedJobs
            | FeatureGate::MutableSchedulingDirectivesForSuspendedJobs
    )
}

/// `field.Error.ErrorBody()`'s rendering of composite values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ValueStyle {
    /// 1.33 and before: pointers dereferenced (nil is the string `"null"`), named strings,
    /// slices and structs printed with `%#v`.
    GoSyntax,
    /// 1.34 and later (kubernetes#132314): `json.Marshal`.
    Json,
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
    /// `validationOptionsForJob` per release, with this cluster's gates:
    ///
    /// - 1.27-1.34, and with the KEP-5440 gates off: scheduling directives while
    ///   `suspended && notStarted`; container resources never.
    /// - 1.35, with a KEP-5440 gate on (alpha, kubernetes#132441, #135104): that relaxation once
    ///   the Job is fully suspended, `suspended && JobSuspended condition && active == 0`. For
    ///   scheduling directives this replaces the 1.34 rule, so a suspended Job that never started
    ///   (no condition yet) may not change them (the regression kubernetes#139281; its fix was
    ///   cherry-picked to 1.36 only).
    /// - 1.36 and 1.37 (`shouldAllowMutablePodTemplate`, both relaxations): `suspended && active
    ///   == 0 && (notStarted || JobSuspended condition)`. That is the patch-release form
    ///   (kubernetes#139287, cherry-picked as #139329 into 1.36.2): 1.36.0 and 1.36.1 dropped
    ///   `notStarted ||` (kubernetes#136077). jobgate cannot tell patch releases apart and takes
    ///   the permissive form, at `/validate` and in `check` alike: an apiserver at 1.36.0/1.36.1
    ///   refuses such updates itself.
    pub(crate) fn template_update_options(&self, old: &OldJobState) -> TemplateUpdateOptions {
        let no_active = old.active == 0;
        let relaxed = if self.version >= KubernetesVersion::V1_36 {
            old.suspended && no_active && (!old.started || old.suspended_condition)
        } else {
            old.suspended && old.suspended_condition && no_active
        };
        let scheduling = if self.enabled(FeatureGate::MutableSchedulingDirectivesForSuspendedJobs) {
            relaxed
        } else {
            old.suspended && !old.started
        };
        TemplateUpdateOptions {
            allow_mutable_scheduling_directives: scheduling,
            allow_mutable_pod_resources: self
                .enabled(FeatureGate::MutablePodResourcesForSuspendedJobs)
                && relaxed,
        }
    }

    /// How apimachinery words the qualified-name errors of `onPodConditions[].type`: from
    /// v0.35 (Kubernetes 1.35) `IsQualifiedName` is `content.IsLabelKey` ("a valid label key",
    /// lengths in bytes).
    pub(crate) fn name_messages(&self) -> crate::names::NameMessages {
        if self.version < KubernetesVersion::V1_35 {
            crate::names::NameMessages::Characters
        } else {
            crate::names::NameMessages::LabelKeyBytes
        }
    }
}

#[cfg(test)]
mod tests;
