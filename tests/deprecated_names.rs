//! Deprecated names: kept as hidden aliases that warn at every start; nothing shipped sets them.
//! The scan of src/ for them finds what clap knows, and no kustomize directory, component or
//! chart rendering sets one.
//!
//! Needs kubectl >= 1.35 and helm 4 (`tests/run tools` installs them).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use jobgate::certs::CertsArgs;
use serde_json::Value;
use support::chart::helm_template;
use support::install::{NAMESPACE, Workspace, repo, str_at};
use support::kustomize::{kubectl, render};

/// The parts of `tests/support/` this binary uses.
pub mod support {
    pub mod chart;
    pub mod install;
    pub mod kustomize;
    pub mod render;
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read_dir") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

/// The text of the attribute starting at `text` (`#[arg(` ...) up to its closing parenthesis,
/// strings skipped.
fn attribute(text: &str) -> &str {
    let (mut depth, mut in_string, mut escaped) = (0, false, false);
    for (i, c) in text.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if in_string => escaped = true,
            '"' => in_string = !in_string,
            '(' if !in_string => depth += 1,
            ')' if !in_string => {
                depth -= 1;
                if depth == 0 {
                    return &text[..=i];
                }
            }
            _ => {}
        }
    }
    text
}

/// `key = "value"` in an attribute.
fn attribute_value<'a>(attribute: &'a str, key: &str) -> Option<&'a str> {
    let start = attribute.find(&format!("{key} = \""))? + key.len() + 4;
    let len = attribute[start..].find('"')?;
    Some(&attribute[start..start + len])
}

/// The deprecated flags of src/ as (`--long`, environment variable): each `#[arg(...)]` with
/// `hide = true` whose doc comment calls it deprecated.
fn deprecated_flags() -> BTreeSet<(String, Option<String>)> {
    let mut files = Vec::new();
    rust_files(&repo().join("src"), &mut files);
    let mut found = BTreeSet::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("read source");
        for (at, _) in text.match_indices("#[arg(") {
            let arg = attribute(&text[at..]);
            if !arg.contains("hide = true") {
                continue;
            }
            let doc: String = text[..at]
                .lines()
                .rev()
                .map(str::trim)
                .skip_while(|l| l.is_empty())
                .take_while(|l| l.starts_with("///") || l.starts_with("#["))
                .collect();
            if doc.to_lowercase().contains("deprecated") {
                let long = attribute_value(arg, "long").unwrap_or_else(|| {
                    panic!(
                        "{}: a deprecated flag without `long = \"...\"`",
                        file.display()
                    )
                });
                found.insert((
                    format!("--{long}"),
                    attribute_value(arg, "env").map(str::to_string),
                ));
            }
        }
    }
    found
}

/// The scan above finds every deprecated flag clap knows of in the library's subcommands (the
/// hidden ones whose help says "deprecated"), so it cannot pass by finding nothing.
#[test]
fn the_deprecated_flags_are_the_hidden_aliases_clap_knows() {
    use clap::Args as _;
    let found = deprecated_flags();
    let commands = [
        jobgate::rule_flags::RuleArgs::augment_args(clap::Command::new("serve")),
        jobgate::check::CheckArgs::augment_args(clap::Command::new("check")),
        jobgate::audit::AuditArgs::augment_args(clap::Command::new("audit")),
        jobgate::reconciler::ReconcileArgs::augment_args(clap::Command::new("reconcile")),
        jobgate::status::StatusArgs::augment_args(clap::Command::new("status")),
        CertsArgs::augment_args(clap::Command::new("certs")),
    ];
    let mut known = BTreeSet::new();
    for command in &commands {
        for arg in command.get_arguments() {
            let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
            if arg.is_hide_set() && help.to_lowercase().contains("deprecated") {
                known.insert((
                    format!("--{}", arg.get_long().unwrap_or_default()),
                    arg.get_env().and_then(|e| e.to_str()).map(str::to_string),
                ));
            }
        }
    }
    assert!(
        known.is_subset(&found),
        "clap knows {known:?}, the scan of src/ found {found:?}"
    );
}

/// The deprecated flags' names in a rendered document: ConfigMap data keys, and every
/// container's `env` names and `args`.
fn deprecated_names_in(doc: &Value, flags: &BTreeSet<(String, Option<String>)>) -> Vec<String> {
    let variables: BTreeSet<&str> = flags.iter().filter_map(|(_, e)| e.as_deref()).collect();
    let mut found = Vec::new();
    if str_at(doc, "/kind") == "ConfigMap" {
        for key in doc["data"].as_object().into_iter().flat_map(|d| d.keys()) {
            if variables.contains(key.as_str()) {
                found.push(format!("data {key}"));
            }
        }
    }
    fn containers<'a>(v: &'a Value, out: &mut Vec<&'a Value>) {
        match v {
            Value::Object(map) => {
                for (key, value) in map {
                    match (key.as_str(), value) {
                        ("containers" | "initContainers", Value::Array(list)) => {
                            out.extend(list.iter())
                        }
                        _ => containers(value, out),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|i| containers(i, out)),
            _ => {}
        }
    }
    let mut list = Vec::new();
    containers(doc, &mut list);
    for c in list {
        let name = str_at(c, "/name");
        for var in c["env"].as_array().into_iter().flatten() {
            if variables.contains(str_at(var, "/name")) {
                found.push(format!("{name} env {}", str_at(var, "/name")));
            }
        }
        for arg in c["args"].as_array().into_iter().flatten() {
            let flag = arg.as_str().unwrap_or("").split('=').next().unwrap_or("");
            if flags.iter().any(|(long, _)| long == flag) {
                found.push(format!("{name} arg {flag}"));
            }
        }
    }
    found
}

/// No shipped manifest and no chart rendering sets a deprecated name: each would log a
/// deprecation warning at every start of the container reading it.
#[test]
fn no_shipped_manifest_or_chart_rendering_sets_a_deprecated_name() {
    let kubectl = kubectl();
    let flags = deprecated_flags();
    let ws = Workspace::new();
    let mut renderings: Vec<(String, Vec<Value>)> = Vec::new();
    for dir in [
        "base",
        "overlays/cert-manager",
        "overlays/self-signed",
        "monitoring",
        "audit",
        "audit/cronjob",
    ] {
        renderings.push((dir.to_string(), render(kubectl, &ws.overlay(dir))));
    }
    for component in ["rollout-warn", "policies-off"] {
        let dir = ws.overlay_of(&["overlays/cert-manager", "audit/cronjob"], &[component]);
        renderings.push((component.to_string(), render(kubectl, &dir)));
    }
    for sets in [
        vec![],
        vec![
            "audit.enabled=true",
            "recoveryAnnotationKeys={example.com/recover}",
            "rollout.warnOnly=true",
            "reconciler.partitionBrake=false",
            "reconciler.kueueRecovers=false",
            "reconciler.recoveryLimit=3",
            "reconciler.onRecoveryLimit=suspend",
            "kubernetes.featureGates.JobManagedBy=false",
            "monitoring.podMonitor.enabled=true",
            "monitoring.prometheusRule.enabled=true",
            "monitoring.dashboard.enabled=true",
        ],
        vec![
            "certificates.source=generated",
            "policies.recovery-needs-failed=deny",
            "recoveryAnnotationKeys={kueue.x-k8s.io/safe-to-forcefully-delete}",
            "reconciler.dryRun=true",
        ],
    ] {
        renderings.push((format!("chart {sets:?}"), helm_template(NAMESPACE, &sets)));
    }
    for (what, docs) in &renderings {
        for doc in docs {
            let found = deprecated_names_in(doc, &flags);
            assert!(
                found.is_empty(),
                "{what}: {} {} sets deprecated names {found:?}",
                str_at(doc, "/kind"),
                str_at(doc, "/metadata/name")
            );
        }
    }
}
