//! Which `admissionregistration.k8s.io` versions a release serves the policies in, and what its
//! kube-apiserver needs to serve them.
//!
//! MutatingAdmissionPolicy, per release (k8s.io/api `admissionregistration/*/types.go` and
//! `zz_generated.prerelease-lifecycle.go`; k8s.io/kubernetes `pkg/features/kube_features.go`,
//! `pkg/controlplane/instance.go` `DefaultAPIResourceConfigSource`):
//! - 1.32-1.33: `v1alpha1` only (alpha; `v1alpha1` is removed in 1.38). Not rendered.
//! - 1.34-1.35: `v1beta1`, beta, feature gate `MutatingAdmissionPolicy` off by default, and
//!   `admissionregistration.k8s.io/v1beta1` is among the beta versions disabled by default: the
//!   kube-apiserver needs `--feature-gates=MutatingAdmissionPolicy=true` and
//!   `--runtime-config=admissionregistration.k8s.io/v1beta1=true`.
//! - 1.36 on: `v1`, GA, on by default (`v1beta1` deprecated in 1.37, removed in 1.40).
//!
//! ValidatingAdmissionPolicy is `v1` and on by default since 1.30, in every release jobgate knows.

use crate::job::version::KubernetesVersion;

/// The API version of the MutatingAdmissionPolicy objects for a release, and what the
/// kube-apiserver must be started with to serve them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MutatingApi {
    /// `admissionregistration.k8s.io/v1beta1` (1.34, 1.35): off unless enabled.
    V1Beta1,
    /// `admissionregistration.k8s.io/v1` (1.36 and later).
    V1,
}

/// The kube-apiserver flags 1.34 and 1.35 need for `v1beta1` MutatingAdmissionPolicies.
pub(crate) const V1BETA1_FLAGS: [&str; 2] = [
    "--feature-gates=MutatingAdmissionPolicy=true",
    "--runtime-config=admissionregistration.k8s.io/v1beta1=true",
];

impl MutatingApi {
    /// The version for `release`; `None` before 1.34 (alpha only).
    pub(crate) fn for_release(release: KubernetesVersion) -> Option<MutatingApi> {
        if release >= KubernetesVersion::V1_36 {
            Some(MutatingApi::V1)
        } else if release >= KubernetesVersion::V1_34 {
            Some(MutatingApi::V1Beta1)
        } else {
            None
        }
    }

    /// The objects' `apiVersion`.
    pub(crate) fn api_version(self) -> &'static str {
        match self {
            MutatingApi::V1Beta1 => "admissionregistration.k8s.io/v1beta1",
            MutatingApi::V1 => "admissionregistration.k8s.io/v1",
        }
    }

    /// The kube-apiserver flags without which this version is not served.
    pub(crate) fn apiserver_flags(self) -> &'static [&'static str] {
        match self {
            MutatingApi::V1Beta1 => &V1BETA1_FLAGS,
            MutatingApi::V1 => &[],
        }
    }
}

/// The ValidatingAdmissionPolicy `apiVersion`: GA since 1.30.
pub(crate) const VALIDATING_API_VERSION: &str = "admissionregistration.k8s.io/v1";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1beta1_for_1_34_and_1_35_v1_from_1_36_never_v1alpha1() {
        for release in KubernetesVersion::all() {
            let api = MutatingApi::for_release(release);
            let expected = if release >= KubernetesVersion::V1_36 {
                Some(MutatingApi::V1)
            } else if release >= KubernetesVersion::V1_34 {
                Some(MutatingApi::V1Beta1)
            } else {
                None
            };
            assert_eq!(api, expected, "{release}");
            assert!(
                !api.is_some_and(|a| a.api_version().ends_with("v1alpha1")),
                "{release}"
            );
        }
        assert_eq!(MutatingApi::for_release(KubernetesVersion::V1_33), None);
        assert_eq!(
            MutatingApi::for_release(KubernetesVersion::V1_35).map(MutatingApi::apiserver_flags),
            Some(&V1BETA1_FLAGS[..])
        );
        assert!(MutatingApi::V1.apiserver_flags().is_empty());
    }
}
