use super::*;

fn v(s: &str) -> KubernetesVersion {
    KubernetesVersion::parse(s).unwrap()
}

fn gates(list: &[(FeatureGate, bool)]) -> BTreeMap<FeatureGate, bool> {
    list.iter().copied().collect()
}

#[test]
fn versions_1_33_to_1_38_parse_and_print_as_major_minor() {
    let all: Vec<String> = KubernetesVersion::all().map(|v| v.to_string()).collect();
    assert_eq!(all, ["1.33", "1.34", "1.35", "1.36", "1.37", "1.38"]);
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
    assert_eq!(v("v1.38.0"), KubernetesVersion::V1_38);
}

/// "A pre-release rule set is never a default": 1.38 is read from v1.38.0-beta.0, and its
/// `validateDelegationAnnotations` refuses Jobs that every released kube-apiserver accepts.
#[test]
fn the_default_is_the_newest_released_minor_never_a_pre_release() {
    assert_eq!(KubernetesVersion::default(), KubernetesVersion::V1_37);
    assert!(!KubernetesVersion::default().is_pre_release());
    assert!(KubernetesVersion::V1_38.is_pre_release());
    assert_eq!(
        KubernetesVersion::V1_38.pre_release_note().as_deref(),
        Some(
            "Kubernetes 1.38's rules are read from v1.38.0-beta.0, a pre-release: they may be \
             stricter than the released 1.38"
        )
    );
    for released in KubernetesVersion::all().filter(|v| *v <= KubernetesVersion::V1_37) {
        assert_eq!(released.pre_release_note(), None, "{released}");
    }
    // A newer cluster is judged with the newest rules, whose note is the newer-release one.
    assert_eq!(v("1.39").pre_release_note(), None);
}

#[test]
fn versions_older_than_1_33_or_not_major_minor_are_errors_naming_the_range() {
    for bad in [
        "1.32",
        "1.0",
        "2.35",
        "0.38",
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
        "1.1000",
        "v1.039.0",
    ] {
        let e = KubernetesVersion::parse(bad).unwrap_err();
        assert!(
            e.contains(
                "expected MAJOR.MINOR[.PATCH], 1.33 or newer (jobgate knows the rules of 1.33 to \
                 1.38; a newer release is judged with 1.38's)"
            ),
            "{bad:?}: {e}"
        );
    }
}

/// A cluster upgraded past what jobgate knows is never refused: its release is kept for what
/// jobgate says about it, and the newest known rules judge it.
#[test]
fn a_release_newer_than_known_is_accepted_and_judged_with_the_newest_rules() {
    for printed in ["1.39", "v1.39.0", "v1.39.2-eks-1d9b4d9", "1.40", "1.999"] {
        let newer = v(printed);
        assert!(!newer.is_known(), "{printed}");
        assert_eq!(newer.rules(), KubernetesVersion::V1_38, "{printed}");
        let cluster = Cluster::new(newer);
        assert_eq!(cluster.release(), newer);
        assert_eq!(cluster.version(), KubernetesVersion::V1_38);
    }
    assert_eq!(
        v("1.39").newer_release_note().as_deref(),
        Some(
            "Kubernetes 1.39 is newer than the releases jobgate knows (1.33 to 1.38): judging \
             with 1.38's rules"
        )
    );
    for known in KubernetesVersion::all() {
        assert!(known.is_known());
        assert_eq!(known.rules(), known);
        assert_eq!(known.newer_release_note(), None);
    }
    // The gates of the newest known release, and what it forbids.
    let newer = Cluster::new(v("1.39"));
    assert!(newer.enabled(FeatureGate::MutablePodResourcesForSuspendedJobs));
    assert_eq!(
        Cluster::with_gates(v("1.39"), &gates(&[(FeatureGate::JobManagedBy, true)])).unwrap_err(),
        "unrecognized feature gate: JobManagedBy (not a gate of Kubernetes 1.38, the newest \
         release jobgate knows)"
    );
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
        ("1.38", true, true, true),
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
        // GA, then removed: on either way.
        for locked in [JobBackoffLimitPerIndex, JobSuccessPolicy, JobManagedBy] {
            assert!(c.enabled(locked), "{release} {locked}");
        }
        assert!(!c.enabled(WorkloadWithJob), "{release}");
    }
}

/// kubernetes#138759 removed the GA gates of KEP-3850, KEP-3998 and KEP-3939 from 1.37: v1.37.2's
/// `kube_features.go` lists none of them and its `strategy.go` no longer drops
/// `spec.successPolicy`. A 1.37 kube-apiserver refuses `--feature-gates=JobSuccessPolicy=...`
/// as unrecognized, whatever the value; 1.33-1.36 have it locked to true.
#[test]
fn kubernetes_138759_job_success_policy_removed_in_1_37() {
    use FeatureGate::*;
    for release in [KubernetesVersion::V1_37, KubernetesVersion::V1_38] {
        for removed in [
            JobSuccessPolicy,
            JobBackoffLimitPerIndex,
            JobPodReplacementPolicy,
        ] {
            for value in [true, false] {
                assert_eq!(
                    Cluster::with_gates(release, &gates(&[(removed, value)])).unwrap_err(),
                    format!(
                        "unrecognized feature gate: {removed} (not a gate of Kubernetes {release})"
                    )
                );
            }
            // The feature stays: removed after GA.
            assert!(
                Cluster::new(release).enabled(removed),
                "{release} {removed}"
            );
        }
    }
    for release in ["1.33", "1.34", "1.35", "1.36"] {
        let r = v(release);
        assert!(Cluster::with_gates(r, &gates(&[(JobSuccessPolicy, true)])).is_ok());
        assert_eq!(
            Cluster::with_gates(r, &gates(&[(JobSuccessPolicy, false)])).unwrap_err(),
            format!(
                "cannot set feature gate JobSuccessPolicy to false, feature is locked to true (Kubernetes {release})"
            )
        );
    }
}

/// kubernetes#141717 (merged 2026-08-31) drops the `JobManagedBy` gate, GA and locked since 1.35,
/// from 1.38: v1.38.0-beta.0's kube_features.go no longer lists it (the parity judge built from it
/// refuses the gate too). On 1.38 the gate is unrecognized and `managedBy` always on.
#[test]
fn kubernetes_141717_job_managed_by_removed_in_1_38() {
    use FeatureGate::*;
    for value in [true, false] {
        assert_eq!(
            Cluster::with_gates(KubernetesVersion::V1_38, &gates(&[(JobManagedBy, value)]))
                .unwrap_err(),
            "unrecognized feature gate: JobManagedBy (not a gate of Kubernetes 1.38)"
        );
    }
    assert!(Cluster::new(KubernetesVersion::V1_38).enabled(JobManagedBy));
    // 1.35-1.37: GA and locked; 1.33-1.34: beta, on.
    for release in ["1.35", "1.36", "1.37"] {
        assert!(Cluster::with_gates(v(release), &gates(&[(JobManagedBy, true)])).is_ok());
        assert!(Cluster::with_gates(v(release), &gates(&[(JobManagedBy, false)])).is_err());
    }
    let off = Cluster::with_gates(KubernetesVersion::V1_34, &gates(&[(JobManagedBy, false)]));
    assert!(!off.unwrap().enabled(JobManagedBy));
}

/// KEP-5440's gates were proposed for GA (locked) in 1.38 (kubernetes#141784, held in
/// September). v1.38.0-beta.0 has both still
/// beta and on by default, so a 1.38 cluster may turn either off, as in 1.36 and 1.37. Were they
/// locked, jobgate would accept a `=false` the apiserver refuses at start-up: a configuration
/// jobgate takes that the cluster cannot run, never a stricter verdict.
#[test]
fn kubernetes_141784_kep_5440_gates_are_still_beta_in_1_38() {
    use FeatureGate::*;
    for gate in [
        MutablePodResourcesForSuspendedJobs,
        MutableSchedulingDirectivesForSuspendedJobs,
    ] {
        assert!(Cluster::new(KubernetesVersion::V1_38).enabled(gate));
        let off = Cluster::with_gates(KubernetesVersion::V1_38, &gates(&[(gate, false)])).unwrap();
        assert!(!off.enabled(gate), "{gate}");
    }
}

/// KEP-5547's gate: alpha (off) from 1.36 (the Job controller's workload scheduling), the
/// `spec.scheduling` field it guards from 1.37; still alpha in v1.37.2 and v1.38.0-beta.0.
#[test]
fn kep_5547_workload_with_job_is_an_alpha_gate_from_1_36() {
    use FeatureGate::*;
    for release in ["1.33", "1.34", "1.35"] {
        assert_eq!(
            Cluster::with_gates(v(release), &gates(&[(WorkloadWithJob, true)])).unwrap_err(),
            format!(
                "unrecognized feature gate: WorkloadWithJob (not a gate of Kubernetes {release})"
            )
        );
        assert!(!Cluster::new(v(release)).enabled(WorkloadWithJob));
    }
    for release in ["1.36", "1.37", "1.38"] {
        assert!(!Cluster::new(v(release)).enabled(WorkloadWithJob));
        let on = Cluster::with_gates(
            v(release),
            &gates(&[(WorkloadWithJob, true), (GenericWorkload, true)]),
        )
        .unwrap();
        assert!(on.enabled(WorkloadWithJob), "{release}");
    }
}

/// `WorkloadWithJob` depends on `GenericWorkload` (`defaultKubernetesFeatureGateDependencies`,
/// v1.36.3 to v1.38.0-beta.0): kube-apiserver refuses the one on without the other, in
/// component-base's words (the parity test found jobgate taking it).
#[test]
fn workload_with_job_needs_generic_workload_as_kube_apiserver_says() {
    use FeatureGate::*;
    for release in ["1.36", "1.37", "1.38"] {
        assert_eq!(
            Cluster::with_gates(v(release), &gates(&[(WorkloadWithJob, true)])).unwrap_err(),
            format!(
                "WorkloadWithJob is enabled, but depends on features that are disabled: \
                 [GenericWorkload] (Kubernetes {release})"
            )
        );
    }
    assert!(Cluster::with_gates(v("1.35"), &gates(&[(GenericWorkload, true)])).is_ok());
    assert!(Cluster::with_gates(v("1.34"), &gates(&[(GenericWorkload, true)])).is_err());
}

/// `admissionregistration.k8s.io/v1` MutatingAdmissionPolicy is served by default from 1.36,
/// when its gate went GA (k8s.io/apiserver `kube_features.go`).
#[test]
fn mutating_admission_policy_v1_is_served_from_1_36() {
    let served: Vec<bool> = KubernetesVersion::all()
        .map(KubernetesVersion::serves_mutating_admission_policy_v1)
        .collect();
    assert_eq!(served, [false, false, false, true, true, true]);
    assert!(v("1.39").serves_mutating_admission_policy_v1());
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
    assert_eq!(styles, [GoSyntax, Json, Json, Json, Json, Json]);
}

#[test]
fn cron_job_templates_get_the_condition_status_default_from_1_34() {
    let on: Vec<bool> = KubernetesVersion::all()
        .map(|v| Cluster::new(v).defaults_cron_job_pod_condition_status())
        .collect();
    assert_eq!(on, [false, true, true, true, true, true]);
}

/// The oracle: `validationOptionsForJob` (pkg/registry/batch/job/strategy.go), release by
/// release, written from the served code rather than from `template_update_options`.
fn expected(cluster: &Cluster, old: &OldJobState) -> TemplateUpdateOptions {
    use FeatureGate::*;
    let (s, ns) = (old.suspended, !old.started);
    let (c, a0) = (old.suspended_condition, old.active == 0);
    // v1.33.13-v1.37.2 with MutableSchedulingDirectivesForSuspendedJobs off.
    let classic = s && ns;
    let (scheduling, resources) = match cluster.version().minor() {
        // v1.35.4: `suspended && cond && active == 0`, and `cond && active == 0`.
        35 => (s && c && a0, c && a0),
        // v1.36.3, v1.37.2 `shouldAllowMutablePodTemplate`.
        _ => (s && (ns || c) && a0, s && (ns || c) && a0),
    };
    TemplateUpdateOptions {
        allow_mutable_scheduling_directives: if cluster
            .enabled(MutableSchedulingDirectivesForSuspendedJobs)
        {
            scheduling
        } else {
            classic
        },
        allow_mutable_pod_resources: cluster.enabled(MutablePodResourcesForSuspendedJobs)
            && resources,
    }
}

/// v1.35.4 reads neither `spec.suspend` for resources nor `notStarted` for scheduling directives
/// once a gate is on: a Job being resumed whose `Suspended` condition is still true gets
/// `AllowMutablePodResources` (kubernetes#136077 added `suspended` in 1.36;
/// `validatePodTemplateUpdate` still compares a Job that is not suspended whole), and a suspended
/// Job that never started may not change its scheduling directives.
#[test]
fn on_1_35_the_alpha_gates_read_the_suspended_condition_alone() {
    use FeatureGate::*;
    let both = Cluster::with_gates(
        KubernetesVersion::V1_35,
        &gates(&[
            (MutablePodResourcesForSuspendedJobs, true),
            (MutableSchedulingDirectivesForSuspendedJobs, true),
        ]),
    )
    .unwrap();
    let resuming = OldJobState {
        suspended: false,
        started: true,
        suspended_condition: true,
        active: 0,
    };
    assert!(
        both.template_update_options(&resuming)
            .allow_mutable_pod_resources
    );
    assert!(
        !Cluster::new(KubernetesVersion::V1_36)
            .template_update_options(&resuming)
            .allow_mutable_pod_resources
    );
    let never_started = OldJobState {
        suspended: true,
        ..OldJobState::default()
    };
    assert!(
        !both
            .template_update_options(&never_started)
            .allow_mutable_scheduling_directives
    );
    assert!(
        Cluster::new(KubernetesVersion::V1_35)
            .template_update_options(&never_started)
            .allow_mutable_scheduling_directives
    );
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
    // 1.33/1.34: defaults only; 1.35-1.38: 9 gate settings each; 24 old-Job states.
    assert_eq!(states, (2 + 4 * 9) * 24);
}

/// 1.35 (alpha, off) reads the `JobSuspended` condition for resources (kubernetes#132441), which
/// a Job that never started does not have; from 1.36 (v1.36.3, v1.37.2, v1.38.0-beta.0) a
/// suspended Job that never started may change them once no pod is active.
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
    assert_eq!(allowed, [false, false, false, true, true, true]);
    // 1.35 with the alpha gate on: not without the condition.
    let alpha = Cluster::with_gates(
        KubernetesVersion::V1_35,
        &gates(&[(FeatureGate::MutablePodResourcesForSuspendedJobs, true)]),
    )
    .unwrap();
    assert!(
        !alpha
            .template_update_options(&old)
            .allow_mutable_pod_resources
    );
}

/// With its gates on by default (1.36 on), both KEP-5440 relaxations require `status.active ==
/// 0`, also before the Job started; on 1.33-1.35's defaults a suspended Job that never started
/// could change its scheduling directives whatever `status.active` said.
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
    assert_eq!(allowed, [false, false, false, true, true, true]);
    // Pods still running: not yet.
    let running = OldJobState { active: 2, ..old };
    assert!(
        !Cluster::new(KubernetesVersion::V1_37)
            .template_update_options(&running)
            .allow_mutable_scheduling_directives
    );
}

/// The release `/version` reports: a known one as is, a newer one kept (judged with the newest
/// rules, and `newer_release_note` says so), an older one as the oldest known, and one that
/// names no release as the default (never a pre-release), each with a note.
#[test]
fn the_release_of_a_cluster_is_kept_when_newer_and_the_nearest_known_otherwise() {
    let of = KubernetesVersion::of_server;
    assert_eq!(of("v1.36.3+k3s1"), (KubernetesVersion::V1_36, None));
    assert_eq!(of("v1.38.0-rc.1"), (KubernetesVersion::V1_38, None));
    let (newer, note) = of("v1.39.0-gke.100");
    assert_eq!((newer.to_string(), note), ("1.39".to_string(), None));
    assert_eq!(newer.rules(), KubernetesVersion::NEWEST);
    let (old, note) = of("v1.31.5");
    assert_eq!(old, KubernetesVersion::OLDEST);
    assert!(
        note.is_some_and(|n| n.contains("\"v1.31.5\", which jobgate has no rules for")),
        "a note names the reported version"
    );
    let (odd, note) = of("v1.x");
    assert_eq!(odd, KubernetesVersion::NEWEST_RELEASED);
    assert!(note.is_some());
}
