//! The commands that describe jobgate itself, run as a user runs them: `jobgate version`,
//! `jobgate completion <shell>` and `jobgate man`.

use std::process::{Command, Output};

use support::help::subcommands;

use jobgate::job::version::KubernetesVersion;

/// The parts of `tests/support/` this binary uses.
pub mod support {
    pub mod help;
}

const BIN: &str = env!("CARGO_BIN_EXE_jobgate");

fn jobgate(args: &[&str]) -> Output {
    let out = Command::new(BIN).args(args).output().expect("run jobgate");
    assert!(
        out.status.success(),
        "jobgate {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).expect("UTF-8 output")
}

/// What git says about the checkout the binary was built from, unless build.rs was told
/// otherwise (JOBGATE_GIT_COMMIT, SOURCE_DATE_EPOCH) or there is no repository.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn is_rfc3339_utc(date: &str) -> bool {
    let b = date.as_bytes();
    b.len() == 20
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            10 => *c == b'T',
            13 | 16 => *c == b':',
            19 => *c == b'Z',
            _ => c.is_ascii_digit(),
        })
}

fn supported() -> Vec<String> {
    KubernetesVersion::all().map(|v| v.to_string()).collect()
}

#[test]
fn version_json_names_the_build_and_the_supported_kubernetes_releases() {
    let out = jobgate(&["version", "--output", "json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("one JSON object");
    assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));
    let kubernetes: Vec<String> = v["kubernetesVersions"]
        .as_array()
        .expect("kubernetesVersions")
        .iter()
        .map(|k| k.as_str().expect("a string").to_string())
        .collect();
    assert_eq!(kubernetes, supported());
    assert_eq!(kubernetes.first().map(String::as_str), Some("1.33"));
    assert_eq!(
        v["defaultKubernetesVersion"],
        KubernetesVersion::default().to_string()
    );
    // A newer release is judged with the newest known one's rules.
    assert_eq!(
        v["newerKubernetesVersionsJudgedAs"].as_str(),
        kubernetes.last().map(String::as_str)
    );

    let commit = v["gitCommit"].as_str().expect("gitCommit");
    let date = v["buildDate"].as_str().expect("buildDate");
    assert!(
        is_rfc3339_utc(date),
        "buildDate {date:?} is not YYYY-MM-DDTHH:MM:SSZ"
    );
    assert!(!v["platform"].as_str().expect("platform").is_empty());
    if option_env!("JOBGATE_GIT_COMMIT").is_none()
        && let Some(head) = git(&["rev-parse", "HEAD"])
    {
        // build.rs reran when HEAD moved, so the binary names the checkout under test.
        assert_eq!(commit, head);
        if option_env!("SOURCE_DATE_EPOCH").is_none() {
            // git formats the commit's time in UTC itself: an independent date conversion.
            let committed = Command::new("git")
                .args([
                    "log",
                    "-1",
                    "--date=format-local:%Y-%m-%dT%H:%M:%SZ",
                    "--format=%cd",
                    "HEAD",
                ])
                .env("TZ", "UTC")
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .output()
                .expect("git log");
            let committed = String::from_utf8_lossy(&committed.stdout);
            assert_eq!(date, committed.trim(), "buildDate is the commit's date");
        }
    } else {
        assert!(!commit.is_empty());
    }
}

#[test]
fn version_text_is_one_field_a_line_and_agrees_with_json() {
    let text = stdout(&jobgate(&["version"]));
    let json: serde_json::Value =
        serde_json::from_str(&stdout(&jobgate(&["version", "-o", "json"]))).expect("JSON");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        format!("jobgate {}", env!("CARGO_PKG_VERSION")),
        "{text}"
    );
    let field = |name: &str| {
        lines
            .iter()
            .find_map(|l| l.strip_prefix(name))
            .map(str::trim)
            .unwrap_or_else(|| panic!("no {name:?} line in\n{text}"))
    };
    assert_eq!(field("git commit:"), json["gitCommit"]);
    assert_eq!(field("build date:"), json["buildDate"]);
    assert_eq!(field("platform:"), json["platform"]);
    assert_eq!(
        field("kubernetes:"),
        format!(
            "{} (default {}; --kubernetes-version)",
            supported().join(", "),
            KubernetesVersion::default()
        )
    );
    assert_eq!(
        field("newer:"),
        format!(
            "judged with {}'s rules, with a warning",
            json["newerKubernetesVersionsJudgedAs"].as_str().unwrap()
        )
    );

    // `--version` carries the commit and date too; `-V` is the short form.
    let long = stdout(&jobgate(&["--version"]));
    assert_eq!(
        long.trim(),
        format!(
            "jobgate {} (commit {}, built {})",
            env!("CARGO_PKG_VERSION"),
            json["gitCommit"].as_str().expect("commit"),
            json["buildDate"].as_str().expect("date")
        )
    );
    let short = stdout(&jobgate(&["-V"]));
    assert_eq!(
        short.trim(),
        format!("jobgate {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn version_rejects_an_unknown_output_format() {
    let out = Command::new(BIN)
        .args(["version", "-o", "yaml"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("invalid value 'yaml'"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn bash_completion_is_valid_bash_and_completes_every_subcommand() {
    let script = stdout(&jobgate(&["completion", "bash"]));
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("jobgate.bash");
    std::fs::write(&path, &script).expect("write");
    let syntax = Command::new("bash")
        .arg("-n")
        .arg(&path)
        .output()
        .expect("bash is needed to check the completion script");
    assert!(
        syntax.status.success(),
        "{}",
        String::from_utf8_lossy(&syntax.stderr)
    );
    // Sourced, the completion function offers every subcommand after `jobgate `.
    let complete = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "source {}; COMP_WORDS=(jobgate ''); COMP_CWORD=1; COMP_LINE='jobgate '; COMP_POINT=8; _jobgate jobgate '' jobgate; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            path.display()
        ))
        .output()
        .expect("bash");
    let offered = String::from_utf8_lossy(&complete.stdout);
    let names = subcommands();
    assert!(names.len() >= 9, "{names:?}");
    for name in &names {
        assert!(
            offered.lines().any(|l| l == name),
            "{name} not offered: {offered}"
        );
    }
}

#[test]
fn completion_scripts_for_every_shell_name_jobgate() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let script = stdout(&jobgate(&["completion", shell]));
        assert!(script.contains("jobgate"), "{shell}: {script}");
        assert!(script.contains("reconcile"), "{shell}");
    }
    let out = Command::new(BIN)
        .args(["completion", "tcsh"])
        .output()
        .expect("run");
    assert_eq!(
        out.status.code(),
        Some(2),
        "an unknown shell is a usage error"
    );
}

#[test]
fn man_page_documents_every_subcommand() {
    let page = stdout(&jobgate(&["man"]));
    assert!(page.contains(".TH jobgate 1"), "{page}");
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("man1");
    jobgate(&["man", "--out", out.to_str().expect("path")]);
    let written = std::fs::read_to_string(out.join("jobgate.1")).expect("jobgate.1");
    assert_eq!(written, page, "--out writes the same top-level page");
    for name in subcommands() {
        assert!(page.contains(&name), "jobgate.1 names {name}");
        let sub = std::fs::read_to_string(out.join(format!("jobgate-{name}.1")))
            .unwrap_or_else(|e| panic!("jobgate-{name}.1: {e}"));
        assert!(sub.contains(&format!(".TH jobgate-{name} 1")), "{sub}");
    }
    let serve = std::fs::read_to_string(out.join("jobgate-serve.1")).expect("serve page");
    assert!(
        serve.contains("JOBGATE_ADDR"),
        "flags with their environment variables"
    );
}
