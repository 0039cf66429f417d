//! A page's shell blocks run as a reader would type them, against a control plane: `kubectl` on
//! PATH, a kubeconfig whose current namespace is the test's. A block's `# ` lines are what it
//! prints; the others are the commands.

use std::path::Path;
use std::process::Command;

use super::controlplane::{ControlPlane, kubectl_shim, repo};

/// The fenced ```sh blocks of `text`.
pub fn sh_blocks(text: &str) -> Vec<String> {
    text.split("```sh\n")
        .skip(1)
        .filter_map(|b| b.split("\n```").next())
        .map(str::to_string)
        .collect()
}

/// A block's commands (its lines that are not comments).
pub fn commands(block: &str) -> String {
    block
        .lines()
        .filter(|l| !l.starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n")
}

/// What a block says it prints: its `# ` lines, joined by spaces.
pub fn said(block: &str) -> String {
    block
        .lines()
        .filter_map(|l| l.strip_prefix("# "))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `text` with every run of white space made one space, to compare output with what a page says.
pub fn squash(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Runs `command` with bash from the repository's root, as a reader in `namespace` would (a
/// kubeconfig of its own under `dir`); returns whether it succeeded and its standard error then
/// standard output.
pub fn run_in(cp: &ControlPlane, dir: &Path, namespace: &str, command: &str) -> (bool, String) {
    let kubeconfig = dir.join(format!("{namespace}.kubeconfig"));
    std::fs::copy(&cp.kubeconfig, &kubeconfig).expect("copy kubeconfig");
    let bin = kubectl_shim();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let set_ns = Command::new(bin.join("kubectl"))
        .args([
            "config",
            "set-context",
            "--current",
            "--namespace",
            namespace,
        ])
        .env("KUBECONFIG", &kubeconfig)
        .output()
        .expect("kubectl config");
    assert!(set_ns.status.success());
    let out = Command::new("bash")
        .args(["-c", command])
        .current_dir(repo())
        .env("KUBECONFIG", &kubeconfig)
        .env("PATH", path)
        .output()
        .expect("bash");
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        ),
    )
}
