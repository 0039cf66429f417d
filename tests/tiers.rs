//! Every integration test binary is in exactly one tier of `tests/tiers` (what `tests/run TIER`
//! provisions and runs), and the rust tier, which `tests/run rust` runs on a machine with no Go,
//! kubectl or helm, declares none of the support that runs them and spawns none of them itself.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const TIERS: [&str; 3] = ["rust", "tools", "cluster"];

/// Support modules (`tests/support/`) that run kubectl or helm, or start a control plane or a
/// judge (those that build on them, `install`, `promises`, `settings`, declare them too).
const NOT_RUST_SUPPORT: [&str; 8] = [
    "chart",
    "controlplane",
    "doc_shell",
    "judge",
    "kubelet",
    "kustomize",
    "reconciler",
    "webhooks",
];

/// What a rust-tier binary never spawns itself.
const NOT_RUST_COMMANDS: [&str; 5] = [
    "Command::new(\"kubectl",
    "Command::new(\"helm",
    "Command::new(\"go\")",
    "\"promtool\"",
    "\"prometheus\"",
];

fn tests_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests")
}

/// `tests/tiers`: binary name -> tier. Fails on an unknown tier or a name listed twice.
fn tiers() -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(tests_dir().join("tiers")).expect("tests/tiers");
    let mut tiers = BTreeMap::new();
    for line in text
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [tier, name] = fields[..] else {
            panic!("tests/tiers: `{line}` is not `TIER NAME`");
        };
        assert!(
            TIERS.contains(&tier),
            "tests/tiers: unknown tier in `{line}`"
        );
        let before = tiers.insert(name.to_string(), tier.to_string());
        assert!(before.is_none(), "tests/tiers: {name} is listed twice");
    }
    tiers
}

/// The integration test binaries: `tests/*.rs`, by name.
fn binaries() -> BTreeSet<String> {
    std::fs::read_dir(tests_dir())
        .expect("tests/")
        .map(|entry| entry.expect("tests/ entry").path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "rs"))
        .map(|p| {
            p.file_stem()
                .expect("a name")
                .to_string_lossy()
                .into_owned()
        })
        .collect()
}

/// The support modules a binary declares in its `pub mod support { ... }`.
fn declared_support(source: &str) -> Vec<String> {
    let Some(start) = source.find("pub mod support {") else {
        return Vec::new();
    };
    let block = &source[start..];
    let block = &block[..block.find('}').expect("the support block closes")];
    block
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub mod "))
        .filter_map(|m| m.strip_suffix(';'))
        .map(str::to_string)
        .collect()
}

#[test]
fn every_test_binary_is_in_exactly_one_tier() {
    let listed: BTreeSet<String> = tiers().into_keys().collect();
    let found = binaries();
    let unlisted: Vec<&String> = found.difference(&listed).collect();
    assert!(
        unlisted.is_empty(),
        "tests/*.rs in no tier: {unlisted:?}; add each to tests/tiers (rust, tools or cluster)"
    );
    let gone: Vec<&String> = listed.difference(&found).collect();
    assert!(gone.is_empty(), "tests/tiers lists no tests/*.rs: {gone:?}");
}

#[test]
fn the_rust_tier_needs_no_tool_and_no_control_plane() {
    let found = binaries();
    for (name, tier) in tiers() {
        if tier != "rust" || !found.contains(&name) {
            continue;
        }
        let path = tests_dir().join(format!("{name}.rs"));
        let source = std::fs::read_to_string(&path).expect("a test binary");
        for module in declared_support(&source) {
            assert!(
                !NOT_RUST_SUPPORT.contains(&module.as_str()),
                "tests/{name}.rs is in the rust tier but uses tests/support/{module}.rs, which \
                 needs tools or a control plane: move it to its tier in tests/tiers"
            );
        }
        for command in NOT_RUST_COMMANDS {
            assert!(
                !source.contains(command),
                "tests/{name}.rs is in the rust tier but runs {command}: move it to its tier in \
                 tests/tiers"
            );
        }
    }
}

/// The check above reads the support blocks it judges: a binary's declared modules are found.
#[test]
fn declared_support_reads_a_support_block() {
    let source = "/// doc\npub mod support {\n    pub mod serve;\n    pub mod kustomize;\n}\n";
    assert_eq!(declared_support(source), ["serve", "kustomize"]);
    assert!(declared_support("use std::path::Path;\n").is_empty());
}
