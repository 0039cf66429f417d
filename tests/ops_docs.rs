//! The 3 a.m. commands hold for any install: every `sh` block of the runbook, troubleshooting,
//! upgrade and uninstall pages parses as bash and names jobgate's objects by label or by the
//! runbook's `$JOBGATE_NAME` / `$JOBGATE_NS`, never by the defaults (`jobgate-system`, objects
//! named `jobgate`), which are wrong for a Helm release `jg` or a namespace of one's own.
//! Running them against a real kube-apiserver is the control-plane suite's part.

use std::path::{Path, PathBuf};
use std::process::Command;

const PAGES: [&str; 4] = [
    "docs/src/runbook.md",
    "docs/src/troubleshooting.md",
    "docs/src/upgrade.md",
    "docs/src/uninstall.md",
];

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The fenced ```sh blocks of a Markdown page: (line of the fence, text).
fn sh_blocks(path: &Path) -> Vec<(usize, String)> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut blocks = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (n, line) in text.lines().enumerate() {
        let fence = line.trim_start();
        match &mut current {
            None if fence == "```sh" => current = Some((n + 1, String::new())),
            Some(_) if fence == "```" => blocks.extend(current.take()),
            Some((_, body)) => {
                body.push_str(line);
                body.push('\n');
            }
            None => {}
        }
    }
    assert!(
        current.is_none(),
        "{}: an unclosed ```sh block",
        path.display()
    );
    blocks
}

/// What a command must not name: the default namespace, or an object by the default name.
fn hard_coded_default(line: &str) -> Option<&'static str> {
    let code = line.split(" # ").next().unwrap_or(line);
    if code.trim_start().starts_with('#') {
        return None;
    }
    let words: Vec<&str> = code.split_whitespace().collect();
    if code.contains("jobgate-system") {
        return Some("the namespace jobgate-system");
    }
    for (i, w) in words.iter().enumerate() {
        let w = w.trim_matches('"');
        if [
            "deploy/jobgate",
            "deployment/jobgate",
            "svc/jobgate",
            "service/jobgate",
        ]
        .contains(&w)
        {
            return Some("an object named jobgate");
        }
        let kind = w.trim_end_matches('s');
        if [
            "validatingwebhookconfiguration",
            "mutatingwebhookconfiguration",
            "deployment",
            "service",
            "lease",
        ]
        .iter()
        .any(|k| kind.split(',').any(|part| part.trim_end_matches('s') == *k))
            && words.get(i + 1) == Some(&"jobgate")
        {
            return Some("an object named jobgate");
        }
    }
    None
}

#[test]
fn the_operations_commands_parse_and_name_no_default_install() {
    let mut found = 0;
    for page in PAGES {
        let path = repo().join(page);
        for (line, block) in sh_blocks(&path) {
            found += 1;
            let out = Command::new("bash")
                .args(["-n", "-c", &block])
                .output()
                .expect("run bash -n");
            assert!(
                out.status.success(),
                "{page}:{line}: not valid bash: {}\n{block}",
                String::from_utf8_lossy(&out.stderr)
            );
            for (i, text) in block.lines().enumerate() {
                if let Some(what) = hard_coded_default(text) {
                    panic!(
                        "{page}:{}: names {what}; use $JOBGATE_NS / $JOBGATE_NAME (runbook.md) or a label:\n{text}",
                        line + 1 + i
                    );
                }
            }
        }
    }
    assert!(found >= 10, "only {found} sh blocks found");
}

/// The runbook sets both variables once, from the webhook configuration that exists as long as
/// it can block writes, and every later block uses them.
#[test]
fn the_runbook_finds_the_install_before_anything_else() {
    let blocks = sh_blocks(&repo().join("docs/src/runbook.md"));
    let (_, first) = &blocks[0];
    assert!(
        first.contains("JOBGATE_NAME=$(kubectl get mutatingwebhookconfigurations -l app.kubernetes.io/name=jobgate"),
        "{first}"
    );
    assert!(
        first.contains("JOBGATE_NS=$(kubectl get mutatingwebhookconfiguration \"$JOBGATE_NAME\""),
        "{first}"
    );
    assert!(
        first.contains("{.webhooks[0].clientConfig.service.namespace}"),
        "{first}"
    );
    let uses = blocks[1..]
        .iter()
        .filter(|(_, b)| b.contains("$JOBGATE_NS") || b.contains("$JOBGATE_NAME"))
        .count();
    assert!(uses >= 5, "{uses} blocks use the variables");
}

#[test]
fn the_scanner_catches_defaults_and_allows_variables() {
    for bad in [
        "kubectl -n jobgate-system get pods",
        "kubectl delete validatingwebhookconfiguration jobgate",
        "kubectl delete validatingwebhookconfiguration,mutatingwebhookconfiguration jobgate",
        "kubectl logs deploy/jobgate -c serve",
    ] {
        assert!(hard_coded_default(bad).is_some(), "{bad}");
    }
    for good in [
        "kubectl -n \"$JOBGATE_NS\" get pods -l app.kubernetes.io/name=jobgate",
        "kubectl delete validatingwebhookconfiguration \"$JOBGATE_NAME\"",
        "echo \"jobgate: $JOBGATE_NAME in $JOBGATE_NS\"   # e.g. jobgate in jobgate-system",
        "# kubectl delete namespace jobgate-system",
    ] {
        assert!(hard_coded_default(good).is_none(), "{good}");
    }
}
