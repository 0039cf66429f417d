//! Every manifest under examples/manifests/ checked by the real `jobgate check`, against what its
//! header comment promises the reader:
//!
//! ```text
//! #   jobgate check examples/manifests/bad/x.yaml    # exit 1
//! #   ... Job/x: spec.podFailurePolicy...: Invalid value: [3,1]: must be ordered
//! ```
//!
//! The exit code must match, and every `... ` line must be printed (as the end of a line of the
//! output, whatever location prefix the output format puts first). A file that promises no finding
//! must get no denial and no warning.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_jobgate");

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/manifests")
}

fn manifests(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read examples/manifests") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            manifests(&path, found);
        } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            found.push(path);
        }
    }
}

/// The promise in a manifest's header: the exit code and the findings, in order.
struct Promise {
    exit: i32,
    findings: Vec<String>,
}

fn promise(path: &Path, text: &str) -> Promise {
    let relative = path
        .strip_prefix(env!("CARGO_MANIFEST_DIR"))
        .expect("inside the repository")
        .to_str()
        .expect("UTF-8 path");
    let command = format!("jobgate check {relative}");
    let exit = text
        .lines()
        .filter_map(|l| l.strip_prefix('#'))
        .find(|l| l.trim_start().starts_with(&command))
        .and_then(|l| l.split("# exit ").nth(1))
        .and_then(|n| n.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{relative}: no `#   {command}    # exit N` line"));
    let findings = text
        .lines()
        .filter_map(|l| l.strip_prefix("#   ... "))
        .map(str::to_string)
        .collect();
    Promise { exit, findings }
}

fn check(args: &[&Path]) -> Output {
    let mut cmd = Command::new(BIN);
    cmd.arg("check").args(args);
    for (key, _) in std::env::vars() {
        if key.starts_with("JOBGATE_") {
            cmd.env_remove(key);
        }
    }
    cmd.output().expect("run jobgate check")
}

#[test]
fn every_example_gets_the_verdict_its_comment_promises() {
    let mut files = Vec::new();
    manifests(&examples_dir(), &mut files);
    files.sort();
    assert!(files.len() >= 9, "{files:?}");
    let mut denied = 0;
    for path in &files {
        let text = std::fs::read_to_string(path).expect("read example");
        let promise = promise(path, &text);
        let out = check(&[path]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(promise.exit),
            "{}:\n{stdout}{stderr}",
            path.display()
        );
        for finding in &promise.findings {
            assert!(
                stdout
                    .lines()
                    .any(|l| l.trim_end().ends_with(finding.as_str())),
                "{}: expected `{finding}` in\n{stdout}{stderr}",
                path.display()
            );
        }
        if promise.findings.is_empty() {
            assert!(
                !stdout.contains("Invalid value") && !stdout.contains("Warning:"),
                "{}: promises no finding, got\n{stdout}",
                path.display()
            );
        }
        if promise.exit == 1 {
            denied += 1;
            assert!(!promise.findings.is_empty(), "{}: say why", path.display());
        }
    }
    assert!(denied >= 5, "the bad examples are denied");
}

#[test]
fn the_good_directory_passes_and_the_whole_tree_is_denied() {
    let dir = examples_dir();
    let good = check(&[&dir.join("good"), &dir.join("warn")]);
    assert_eq!(
        good.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&good.stdout)
    );
    let all = check(&[&dir]);
    assert_eq!(all.status.code(), Some(1));
}

/// The GitHub Actions recipe of docs/src/check.md, as the page prints it (its `jobgate check`
/// command and the flags on the line after it), run on every example: a good one passes, even
/// when jobgate's mutation changes it (a note, not a warning), and a bad or warned one fails.
#[test]
fn the_ci_recipe_of_the_check_page_passes_every_good_example() {
    let page =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/src/check.md"))
            .expect("docs/src/check.md");
    let lines: Vec<&str> = page.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.trim_start().starts_with("jobgate check -o github"))
        .expect("check.md has a GitHub Actions recipe");
    let recipe = format!("{} {}", lines[at].trim(), lines[at + 1].trim());
    let args: Vec<&str> = recipe
        .strip_prefix("jobgate check ")
        .expect("the recipe runs jobgate check")
        .split_whitespace()
        .collect();
    assert_eq!(args.last(), Some(&"-"), "the recipe reads stdin: {recipe}");
    assert!(args.contains(&"--fail-on"), "{recipe}");
    let mut files = Vec::new();
    manifests(&examples_dir(), &mut files);
    files.sort();
    let mut passed = 0;
    for path in &files {
        let text = std::fs::read_to_string(path).expect("read example");
        let good = path.parent().is_some_and(|d| d.ends_with("good"));
        let mut cmd = Command::new(BIN);
        cmd.arg("check").args(&args[..args.len() - 1]);
        cmd.arg("--stdin-filename").arg(path).arg("-");
        for (key, _) in std::env::vars() {
            if key.starts_with("JOBGATE_") {
                cmd.env_remove(key);
            }
        }
        let mut child = cmd
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("run jobgate check");
        std::io::Write::write_all(&mut child.stdin.take().expect("stdin"), text.as_bytes())
            .expect("write stdin");
        let out = child.wait_with_output().expect("jobgate check");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let expected = if good {
            0
        } else {
            promise(path, &text).exit.max(1)
        };
        assert_eq!(
            out.status.code(),
            Some(expected),
            "{}: {recipe}\n{stdout}{}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        if good {
            passed += 1;
            assert!(
                !stdout.contains("::warning"),
                "{}: {stdout}",
                path.display()
            );
        }
    }
    assert!(passed >= 4, "the good examples: {passed}");
}

#[test]
fn the_book_shows_every_example() {
    let page =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/src/examples.md"))
            .expect("docs/src/examples.md");
    let mut files = Vec::new();
    manifests(&examples_dir(), &mut files);
    for path in files {
        let relative = path
            .strip_prefix(env!("CARGO_MANIFEST_DIR"))
            .expect("inside the repository")
            .display()
            .to_string();
        assert!(
            page.contains(&format!("{{{{#include ../../{relative}}}}}")),
            "docs/src/examples.md does not include {relative}"
        );
    }
}
