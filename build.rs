//! Records what `jobgate version` prints about the build: the git commit and the build date.
//!
//! Sources, first found wins:
//! - commit: `JOBGATE_GIT_COMMIT` (the Docker build context has no `.git`: the Dockerfile's
//!   build argument of that name, set by the release workflow), else `git rev-parse HEAD`, else
//!   `unknown`;
//! - date: `SOURCE_DATE_EPOCH` (reproducible-builds.org), else the commit's committer date, else
//!   `unknown`. The commit's date rather than the wall clock makes two builds of one commit
//!   identical, and keeps this script from rerunning (and the crate from rebuilding) on every build.
//!
//! The script reruns only when one of those variables changes or HEAD moves (a commit, a checkout),
//! never on a source edit: it watches HEAD, the branch it points at and packed-refs, those of them
//! that exist.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=JOBGATE_GIT_COMMIT");
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");

    let from_env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let git_commit = from_env("JOBGATE_GIT_COMMIT");
    let source_date = from_env("SOURCE_DATE_EPOCH");
    if git_commit.is_none() || source_date.is_none() {
        watch_head();
    }

    let commit = git_commit
        .map(|c| c.trim().to_string())
        .or_else(|| git(&["rev-parse", "HEAD"]))
        .unwrap_or_else(|| "unknown".to_string());
    let date = match source_date {
        Some(epoch) => match epoch.trim().parse::<i64>() {
            Ok(secs) => rfc3339(secs),
            Err(_) => panic!("SOURCE_DATE_EPOCH={epoch:?} is not a number of seconds"),
        },
        None => git(&["log", "-1", "--format=%ct", "HEAD"])
            .and_then(|s| s.parse::<i64>().ok())
            .map(rfc3339)
            .unwrap_or_else(|| "unknown".to_string()),
    };
    println!("cargo:rustc-env=JOBGATE_GIT_COMMIT={commit}");
    println!("cargo:rustc-env=JOBGATE_BUILD_DATE={date}");
    let target = std::env::var("TARGET").unwrap_or_default();
    println!("cargo:rustc-env=JOBGATE_BUILD_TARGET={target}");
}

/// `git` in the package's directory; `None` when git or the repository is missing.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let text = text.trim();
    (out.status.success() && !text.is_empty()).then(|| text.to_string())
}

/// Reruns this script when HEAD moves. `git rev-parse --git-path` resolves worktrees (`.git` is
/// then a file naming the real directory) and the common directory holding branches. Only paths
/// that exist are watched: cargo reruns a script on every build while a watched path is missing
/// (a clone without packed-refs, a branch whose ref is packed), which recompiles the crate each
/// time. A packed branch gets a loose ref at its next commit, in the directory watched instead.
fn watch_head() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let watch = |path: PathBuf| {
        if path.exists() {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    };
    let Some(head) = git(&["rev-parse", "--git-path", "HEAD"]) else {
        return;
    };
    watch(root.join(head));
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"])
        && let Some(path) = git(&["rev-parse", "--git-path", &branch])
    {
        let loose = root.join(path);
        if loose.exists() {
            watch(loose);
        } else if let Some(dir) = loose.parent() {
            watch(dir.to_path_buf());
        }
    }
    if let Some(packed) = git(&["rev-parse", "--git-path", "packed-refs"]) {
        watch(root.join(packed));
    }
}

/// Seconds since the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ`: Howard Hinnant's `civil_from_days`
/// (the proleptic Gregorian calendar, as Go's and chrono's), so that build.rs needs no crate.
fn rfc3339(secs: i64) -> String {
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}
