use super::*;

fn v(s: &str) -> KubernetesVersion {
    KubernetesVersion::parse(s).unwrap()
}

fn gates(list: &[(FeatureGate, bool)]) -> BTreeMap<FeatureGate, bool> {
    list.iter().copied().collect()
}

#[test]
fn versions_1_33_to_1_37_parse_and_print_as_major_minor() {
    let all: Vec<String> = KubernetesVersion::all().map(|v| v.to_string()).collect();
    assert_eq!(all, ["1.33", "1.34", "1.35", "1.36", "1.37"]);
    assert_eq!(v("v1.36"), KubernetesVersion::V1_36);
    assert_eq!(v(" 1.33 "), KubernetesVersion::V1_33);
    // As `kubectl version` prints a server: patch, and a semver pre-release or build suffix.
    for printed in [
        "1.35.2",
        "v1.35.0",
        "v1.35.2+k3s1",
        "v1.35.2-eks-1d9b4d9",
        "v1.35.10-gke.1200",
    ] {
        assert_eq!(v(printed), KubernetesVersion::V1_35, "{printed}");
    }
    assert_eq!(KubernetesVersion::default(), KubernetesVersion::V1_37);
}

#[test]
fn versions_outside_the_range_or_not_major_minor_are_errors_naming_the_range() {
    for bad in [
        "1.32",
        "1.38",
        "2.35",
        "1.36.x",
        "1.36.",
        "1.36.2.1",
        "1.36+k3s1",
        "1.36.2+",
        "1",
        "1.",
        ".36",
        "1.x",
        "",
        "v",
        "1.036",
        "1.-1",
        "v1.38.0",
    ] {
        let e = KubernetesVersion::parse(bad).unwrap_err();
        assert!(
            e.contains("expected MAJOR.MINOR[.PATCH] from 1.33 to 1.37"),
            "{bad:?}: {e}"
        );
    }
}

/// kube_features.go per release (versioned feature specs): alpha gates default off, beta on,
/// GA locked on; a gate removed after GA stays on.
#[test]
fn default_gates_follow_each_release() {
    use FeatureGate::*;
    let expect = [
        // release, JobPodReplacementPolicy, MutablePodResources, MutableSchedulingDirectives
        ("1.33", true, false, false),
        ("1.34", true, false, false),
        ("1.35", true, false, false),
        ("1.36", true, true, true),
        ("1.37", true, true, true),
    ];
    for (release, prp, res, sched) in expect {
        let c = Cluster::new(v(release));
        assert_eq!(c.enabled(JobPodReplacementPolicy), prp, "{release}");
        assert_eq!(
            c.enabled(MutablePodResourcesForSuspendedJobs),
            res,
            "{release}"
        );
        assert_eq!(
            c.enabled(MutableSchedulingDirectivesForSuspendedJobs),
            sched,
            "{release}"
        );
        for locked in [JobBackoffLimitPerIndex, JobSuccessPolicy, JobManagedBy] {
            assert!(c.enabled(locked), "{release} {locked}");
        }
    }
}

#[test]
fn alpha_and_beta_gates_can_be_overridden() {
    use FeatureGate::*;
    let c = Cluster::with_gates(
        KubernetesVersion::V1_35,
        &gates(&[(MutablePodResourcesForSuspendedJobs, true)]),
    )
    .unwrap();
    assert!(c.enabled(MutablePodResourcesForSuspendedJobs));
    assert!(!c.enabled(MutableSchedulingDirectivesForSuspendedJobs));
    let c = Cluster::with_gates(
        KubernetesVersion::V1_36,
        &gates(&[(MutableSchedulingDirectivesForSuspendedJobs, false)]),
    )
    .unwrap();
    assert!(!c.enabled(MutableSchedulingDirectivesForSuspendedJobs));
    assert!(c.enabled(MutablePodResourcesForSuspendedJobs));
    let c = Cluster::with_gates(
        KubernetesVersion::V1_33,
        &gates(&[(JobPodReplacementPolicy, false)]),
    )
    .unwrap();
    assert!(!c.enabled(JobPodReplacementPolicy));
}

/// component-base/featuregate: `unrecognized feature gate` and `cannot set feature gate X to
/// false, feature is locked to true`.
#[test]
fn gates_a_release_does_not_have_or_has_locked_are_rejected() {
    use FeatureGate::*;
    let e = Cluster::with_gates(
        KubernetesVersion::V1_34,
        &gates(&[(MutablePodResourcesForSuspendedJobs, true)]),
    )
    .unwrap_err();
    assert_eq!(
        e,
        "unrecognized feature gate: MutablePodResourcesForSuspendedJobs (not a gate of Kubernetes 1.34)"
    );
    let e = Cluster::with_gates(
        KubernetesVersion::V1_34,
        &gates(&[(JobPodReplacementPolicy, false)]),
    )
    .unwrap_err();
    assert_eq!(
        e,
        "cannot set feature gate JobPodReplacementPolicy to false, feature is locked to true (Kubernetes 1.34)"
    );
    // Gates removed in 1.37 (kubernetes#138759; JobSuccessPolicy too, k8s.io/kubernetes
    // v1.37.2) are unknown to a 1.37 apiserver, which refuses them (`unrecognized feature gate:
    // %s`, component-base `featuregate`), whatever the value.
    for removed in [
        JobPodReplacementPolicy,
        JobBackoffLimitPerIndex,
        JobSuccessPolicy,
    ] {
        for value in [true, false] {
            let e = Cluster::with_gates(KubernetesVersion::V1_37, &gates(&[(removed, value)]))
                .unwrap_err();
            assert_eq!(
                e,
                format!("unrecognized feature gate: {removed} (not a gate of Kubernetes 1.37)")
            );
        }
    }
    // Setting a GA gate to true is allowed, as kube-apiserver allows it.
    assert!(
        Cluster::with_gates(
            KubernetesVersion::V1_36,
            &gates(&[(JobSuccessPolicy, true)])
        )
        .is_ok()
    );
}

#[test]
fn feature_gate_lists_parse_like_kube_apiserver_flags() {
    use FeatureGate::*;
    assert_eq!(
        parse_feature_gates("MutablePodResourcesForSuspendedJobs=false, JobManagedBy=true")
            .unwrap(),
        gates(&[
            (MutablePodResourcesForSuspendedJobs, false),
            (JobManagedBy, true)
        ])
    );
    assert_eq!(parse_feature_gates("").unwrap(), gates(&[]));
    let e = parse_feature_gates("JobSuccesPolicy=true").unwrap_err();
    assert!(
        e.starts_with("unrecognized feature gate: JobSuccesPolicy"),
        "{e}"
    );
    assert_eq!(
        parse_feature_gates("JobManagedBy").unwrap_err(),
        "missing bool value for JobManagedBy"
    );
    assert_eq!(
        parse_feature_gates("JobManagedBy=yes").unwrap_err(),
        r#"invalid value of JobManagedBy=yes, err: strconv.ParseBool: parsing "yes": invalid syntax"#
    );
    // `strconv.ParseBool`'s spellings.
    assert_eq!(
        parse_feature_gates("JobManagedBy=T,MutablePodResourcesForSuspendedJobs=0").unwrap(),
        gates(&[
            (JobManagedBy, true),
            (MutablePodResourcesForSuspendedJobs, false)
        ])
    );
}

#[test]
fn values_print_as_go_syntax_before_1_34_and_as_json_from_1_34() {
    let styles: Vec<ValueStyle> = KubernetesVersion::all()
        .map(|v| Cluster::new(v).value_style())
        .collect();
    use ValueStyle::*;
    assert_eq!(styles, [GoSyntax, Json, Json, Json, Json]);
}

#[test]
fn cron_job_templates_get_the_condition_status_default_from_1_34() {
    let on: Vec<bool> = KubernetesVersion::all()
        .map(|v| Cluster::new(v).defaults_cron_job_pod_condition_status())
        .collect();
    assert_eq!(on, [false, true, true, true, true]);
}

/// The oracle: `validationOptionsForJob` (pkg/registry/batch/job/strategy.go), release by
/// release, as k8s.io/kubernetes v1.35.4, v1.36.3 and v1.37.2 have it (the parity test runs that
/// code itself: tests/parity.rs).
fn expected(cluster: &Cluster, old: &OldJobState) -> TemplateUpdateOptions {
    use FeatureGate::*;
    let (s, ns) = (old.suspended, !old.started);
    let (c, a0) = (old.suspended_condition, old.active == 0);
    // 1.27-1.34; with MutableSchedulingDirectivesForSuspendedJobs off in 1.35+.
    let classic = s && ns;
    let relaxed = if cluster.version() >= KubernetesVersion::V1_36 {
        // `shouldAllowMutablePodTemplate` (kubernetes#139287, in 1.36.2+ and 1.37).
        s && a0 && (ns || c)
    } else {
        // 1.35: kubernetes#132441, #135104 (the JobSuspended condition, no active pods).
        s && c && a0
    };
    TemplateUpdateOptions {
        allow_mutable_scheduling_directives: if cluster
            .enabled(MutableSchedulingDirectivesForSuspendedJobs)
        {
            relaxed
        } else {
            classic
        },
        allow_mutable_pod_resources: cluster.enabled(MutablePodResourcesForSuspendedJobs)
            && relaxed,
    }
}

/// Every release × every override of the two KEP-5440 gates × every old-Job state that the
/// options read (suspend, startTime, the Suspended condition, active 0/1/many).
#[test]
fn template_update_options_over_every_release_gate_and_old_job_state() {
    use FeatureGate::*;
    let mut states = 0;
    for version in KubernetesVersion::all() {
        for res in [None, Some(false), Some(true)] {
            for sched in [None, Some(false), Some(true)] {
                let mut overrides = BTreeMap::new();
                if let Some(r) = res {
                    overrides.insert(MutablePodResourcesForSuspendedJobs, r);
                }
                if let Some(s) = sched {
                    overrides.insert(MutableSchedulingDirectivesForSuspendedJobs, s);
                }
                let Ok(cluster) = Cluster::with_gates(version, &overrides) else {
                    assert!(version < KubernetesVersion::V1_35 && !overrides.is_empty());
                    continue;
                };
                for suspended in [false, true] {
                    for started in [false, true] {
                        for suspended_condition in [false, true] {
                            for active in [0, 1, 7] {
                                let old = OldJobState {
                                    suspended,
                                    started,
                                    suspended_condition,
                                    active,
                                };
                                assert_eq!(
                                    cluster.template_update_options(&old),
                                    expected(&cluster, &old),
                                    "{version} {overrides:?} {old:?}"
                                );
                                states += 1;
                            }
                        }
                    }
                }
            }
        }
    }
    // 1.33/1.34: defaults only; 1.35-1.37: 9 gate settings each; 24 old-Job states.
    assert_eq!(states, (2 + 3 * 9) * 24);
}

/// 1.35 reads the `JobSuspended` condition (kubernetes#132441), which a Job that never started
/// does not have; from 1.36 (`shouldAllowMutablePodTemplate`) it is admitted once no pod is
/// active.
#[test]
fn a_never_started_suspended_job_may_change_resources_from_1_36() {
    let old = OldJobState {
        suspended: true,
        ..OldJobState::default()
    };
    let allowed: Vec<bool> = KubernetesVersion::all()
        .map(|v| {
            Cluster::new(v)
                .template_update_options(&old)
                .allow_mutable_pod_resources
        })
        .collect();
    assert_eq!(allowed, [false, false, false, true, true]);
}

/// From 1.36 both KEP-5440 relaxations require `status.active == 0`, also before the Job
/// started; before, a suspended Job that never started could change its scheduling directives
/// whatever `status.active` said (the 1.35 gates are off by default).
#[test]
fn from_1_36_both_relaxations_require_no_active_pods_even_before_the_job_started() {
    let old = OldJobState {
        suspended: true,
        active: 1,
        ..OldJobState::default()
    };
    let options: Vec<(bool, bool)> = KubernetesVersion::all()
        .map(|v| {
            let o = Cluster::new(v).template_update_options(&old);
            (
                o.allow_mutable_scheduling_directives,
                o.allow_mutable_pod_resources,
            )
        })
        .collect();
    assert_eq!(
        options,
        [
            (true, false),
            (true, false),
            (true, false),
            (false, false),
            (false, false)
        ]
    );
}

/// With 1.35's alpha gate on, scheduling directives need the `JobSuspended` condition: a
/// suspended Job that never started may no longer change them (kubernetes#139281, fixed in 1.36
/// only).
#[test]
fn on_1_35_the_scheduling_gate_requires_the_suspended_condition_even_before_the_job_started() {
    let gates = BTreeMap::from([(
        FeatureGate::MutableSchedulingDirectivesForSuspendedJobs,
        true,
    )]);
    let cluster = Cluster::with_gates(KubernetesVersion::V1_35, &gates).unwrap();
    let never_started = OldJobState {
        suspended: true,
        ..OldJobState::default()
    };
    assert!(
        !cluster
            .template_update_options(&never_started)
            .allow_mutable_scheduling_directives
    );
    assert!(
        Cluster::new(KubernetesVersion::V1_35)
            .template_update_options(&never_started)
            .allow_mutable_scheduling_directives
    );
}

#[test]
fn a_started_job_suspended_with_no_active_pods_may_change_scheduling_from_1_36() {
    let old = OldJobState {
        suspended: true,
        started: true,
        suspended_condition: true,
        active: 0,
    };
    let allowed: Vec<bool> = KubernetesVersion::all()
        .map(|v| {
            Cluster::new(v)
                .template_update_options(&old)
                .allow_mutable_scheduling_directives
        })
        .collect();
    assert_eq!(allowed, [false, false, false, true, true]);
    // Pods still running: not yet.
    let running = OldJobState { active: 2, ..old };
    assert!(
        !Cluster::new(KubernetesVersion::V1_37)
            .template_update_options(&running)
            .allow_mutable_scheduling_directives
    );
}
