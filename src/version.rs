//! `jobgate version`: what this binary is, from build.rs (commit, date, target) and from
//! `job::version` (the Kubernetes releases whose apiserver rules it mirrors).

use std::io::{self, Write};

use jobgate::job::version::KubernetesVersion;
use serde::Serialize;

/// `0.1.0 (commit 6640c30…, built 2026-11-25T03:00:00Z)`: `jobgate --version`.
pub(crate) const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("JOBGATE_GIT_COMMIT"),
    ", built ",
    env!("JOBGATE_BUILD_DATE"),
    ")"
);

/// The fields of `jobgate version --output json`, named as `kubectl version -o json` names its
/// own (`gitCommit`, `buildDate`, `platform`).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct BuildInfo {
    version: &'static str,
    git_commit: &'static str,
    build_date: &'static str,
    platform: &'static str,
    kubernetes_versions: Vec<String>,
    default_kubernetes_version: String,
    /// The release whose rules judge a cluster newer than every known one.
    newer_kubernetes_versions_judged_as: String,
}

impl BuildInfo {
    fn of_this_binary() -> BuildInfo {
        BuildInfo {
            version: env!("CARGO_PKG_VERSION"),
            git_commit: env!("JOBGATE_GIT_COMMIT"),
            build_date: env!("JOBGATE_BUILD_DATE"),
            platform: env!("JOBGATE_BUILD_TARGET"),
            kubernetes_versions: KubernetesVersion::all().map(|v| v.to_string()).collect(),
            default_kubernetes_version: KubernetesVersion::default().to_string(),
            newer_kubernetes_versions_judged_as: KubernetesVersion::all()
                .last()
                .unwrap_or_default()
                .to_string(),
        }
    }
}

/// The output format of `jobgate version`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub(crate) enum VersionFormat {
    /// One field a line, for people.
    #[default]
    Text,
    /// One JSON object, for scripts.
    Json,
}

/// Writes `jobgate version`'s answer.
pub(crate) fn write(format: VersionFormat, out: &mut impl Write) -> io::Result<()> {
    let info = BuildInfo::of_this_binary();
    match format {
        VersionFormat::Text => {
            writeln!(out, "jobgate {}", info.version)?;
            writeln!(out, "git commit:  {}", info.git_commit)?;
            writeln!(out, "build date:  {}", info.build_date)?;
            writeln!(out, "platform:    {}", info.platform)?;
            writeln!(
                out,
                "kubernetes:  {} (default {}; --kubernetes-version)",
                info.kubernetes_versions.join(", "),
                info.default_kubernetes_version
            )?;
            writeln!(
                out,
                "newer:       judged with {}'s rules, with a warning",
                info.newer_kubernetes_versions_judged_as
            )
        }
        VersionFormat::Json => {
            serde_json::to_writer_pretty(&mut *out, &info)?;
            writeln!(out)
        }
    }
}
