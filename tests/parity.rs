//! Parity with upstream's own code, per release: every Job and CronJob write the repository has
//! (`support::cases`) and a few thousand generated ones (`support::generate`) go through
//! kube-apiserver's own create and update path for each supported minor (the judge,
//! `support::judge`, built from the pinned `k8s.io/kubernetes`) and through jobgate for the same
//! release and feature gates, with every jobgate policy off so only what jobgate says for
//! kube-apiserver remains:
//!
//! - CREATE through `jobgate check --kubernetes-version M -o json` on the raw manifests (one
//!   process per configuration, all manifests in one stream); the judge is sent each manifest as
//!   `check` says the cluster's `/mutate` leaves it (its patch applied);
//! - CREATE and UPDATE through a running `jobgate serve`'s `/validate`, sent what a validating
//!   webhook is sent: the judge's `object` (defaulted, prepared) and `oldObject`.
//!
//! The verdicts must agree both ways; where jobgate reports a field, its path and message must be
//! the judge's, and every judge error on a field jobgate validates must be reported. A difference
//! is either fixed or explained: a row of the table in docs/src/versions.md ("Parity with
//! upstream"), and exactly the explained ones may differ. The real kube-apiserver confirms the
//! judge on a sample (`the_real_apiserver_confirms_the_judge`). How it runs, how to add a case or
//! a minor: docs/src/developer/parity.md.

/// The parts of `tests/support/` this binary uses.
pub mod support {
    pub mod cases;
    pub mod controlplane;
    pub mod generate;
    pub mod help;
    pub mod judge;
    pub mod keep_alive;
    pub mod review;
    pub mod serve;
}

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io::Write as _;
use std::process::{Command, Stdio};
use std::time::Instant;

use serde_json::{Value, json};
use support::cases::{Case, Write};
use support::generate;
use support::judge::{JudgeRequest, JudgeVerdict, judge};
use support::keep_alive::KeepAliveClient;
use support::serve::Jobgate;

/// The releases under test: each minor pinned in tests/controlplane/versions, with its default
/// feature gates (`""`) and the overrides of Job gates that jobgate models.
const RELEASES: &[Release] = &[
    Release {
        minor: "1.33",
        gates: &["", "JobPodReplacementPolicy=false", "JobManagedBy=false"],
    },
    Release {
        minor: "1.34",
        gates: &["", "JobManagedBy=false"],
    },
    Release {
        minor: "1.35",
        gates: &[
            "",
            "MutablePodResourcesForSuspendedJobs=true",
            "MutableSchedulingDirectivesForSuspendedJobs=true",
            "MutablePodResourcesForSuspendedJobs=true,MutableSchedulingDirectivesForSuspendedJobs=true",
        ],
    },
    Release {
        minor: "1.36",
        gates: &[
            "",
            "MutablePodResourcesForSuspendedJobs=false",
            "MutableSchedulingDirectivesForSuspendedJobs=false",
        ],
    },
    Release {
        minor: "1.37",
        gates: &[
            "",
            "MutablePodResourcesForSuspendedJobs=false,MutableSchedulingDirectivesForSuspendedJobs=false",
        ],
    },
    Release {
        minor: "1.38",
        gates: &[""],
    },
];

struct Release {
    minor: &'static str,
    /// kube-apiserver `--feature-gates` values, each a configuration under test.
    gates: &'static [&'static str],
}

/// The generator's seed and size: the same cases on every run and machine.
const SEED: u64 = 0x006a_6f62_6761_7465;
const GENERATED_CREATES: usize = 2400;
const GENERATED_UPDATES: usize = 1200;

#[test]
fn parity_1_33() {
    parity("1.33");
}

#[test]
fn parity_1_34() {
    parity("1.34");
}

#[test]
fn parity_1_35() {
    parity("1.35");
}

#[test]
fn parity_1_36() {
    parity("1.36");
}

#[test]
fn parity_1_37() {
    parity("1.37");
}

#[test]
fn parity_1_38() {
    parity("1.38");
}

/// Every minor pinned for the control plane is a release under test, and each has its test.
#[test]
fn every_pinned_minor_is_under_test() {
    let dir = support::controlplane::repo().join("tests/controlplane/versions");
    let mut pinned: Vec<String> = std::fs::read_dir(&dir)
        .expect("tests/controlplane/versions")
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            name.strip_suffix(".mod").map(str::to_string)
        })
        .collect();
    pinned.sort();
    let tested: Vec<String> = RELEASES.iter().map(|r| r.minor.to_string()).collect();
    assert_eq!(pinned, tested, "RELEASES must list every pinned minor");
    let source = std::fs::read_to_string(file!()).expect("this file");
    for r in RELEASES {
        let test = format!("fn parity_{}()", r.minor.replace('.', "_"));
        assert!(
            source.contains(&test),
            "no `{test}` for Kubernetes {}",
            r.minor
        );
    }
}

/// A configuration under test: a minor and its `--feature-gates`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Config {
    minor: String,
    gates: String,
}

impl fmt::Display for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.gates.is_empty() {
            write!(f, "{}", self.minor)
        } else {
            write!(f, "{} {}", self.minor, self.gates)
        }
    }
}

/// Where jobgate said something different from the judge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Aspect {
    /// `jobgate check` allowed what the judge denied, or the reverse.
    CheckVerdict,
    /// Both denied, but `check`'s paths or messages are not the judge's.
    CheckMessage,
    /// `/validate` allowed what the judge denied, or the reverse.
    ValidateVerdict,
    /// Both denied, but `/validate`'s paths or messages are not the judge's.
    ValidateMessage,
    /// `--feature-gates CASE` is taken by one and refused by the other.
    FeatureGates,
}

impl Aspect {
    const ALL: [Aspect; 5] = [
        Aspect::CheckVerdict,
        Aspect::CheckMessage,
        Aspect::ValidateVerdict,
        Aspect::ValidateMessage,
        Aspect::FeatureGates,
    ];

    fn as_str(self) -> &'static str {
        match self {
            Aspect::CheckVerdict => "check verdict",
            Aspect::CheckMessage => "check message",
            Aspect::ValidateVerdict => "validate verdict",
            Aspect::ValidateMessage => "validate message",
            Aspect::FeatureGates => "feature gates",
        }
    }
}

#[derive(Debug, Clone)]
struct Difference {
    config: Config,
    case: String,
    aspect: Aspect,
    detail: String,
}

impl Difference {
    /// Configuration, case, aspect and detail, joined by `separator`.
    fn row(&self, separator: &str) -> String {
        [
            self.config.to_string(),
            self.case.clone(),
            self.aspect.as_str().to_string(),
            self.detail.clone(),
        ]
        .join(separator)
    }
}

/// What jobgate said about one write.
#[derive(Debug, Clone, PartialEq)]
enum Said {
    Allowed,
    /// Refused before admission: kube-apiserver's strict decoding, as `check` reproduces it.
    Rejected(Vec<String>),
    /// Denied, with each kube-apiserver error as `field: message`.
    Denied(Vec<String>),
    /// jobgate could not read the object.
    Unreadable(String),
}

impl Said {
    fn allowed(&self) -> bool {
        matches!(self, Said::Allowed)
    }
}

/// Counts for the summary.
#[derive(Debug, Default)]
struct Tally {
    creates: usize,
    updates: usize,
    /// UPDATEs whose stored object the release refuses to create: no such update exists.
    not_applicable: usize,
    checked: usize,
    validated: usize,
    /// `case\tmessage` of each not applicable UPDATE.
    refused_old: Vec<String>,
    denied_by_judge: usize,
}

fn parity(minor: &str) {
    let release = RELEASES
        .iter()
        .find(|r| r.minor == minor)
        .unwrap_or_else(|| panic!("Kubernetes {minor} is not in RELEASES"));
    jobgate_knows(minor);
    let started = Instant::now();
    let mut cases = support::cases::repository_cases();
    let repository = cases.len();
    cases.extend(generate::generated(
        SEED,
        GENERATED_CREATES,
        GENERATED_UPDATES,
    ));
    let policies = policies_off();
    let explained = explanations();
    let mut differences = gate_disagreements(minor);
    let mut refused_old = Vec::new();
    let mut lines = Vec::new();
    for gates in release.gates {
        let config = Config {
            minor: minor.to_string(),
            gates: gates.to_string(),
        };
        let t = Instant::now();
        let (tally, found) = differential(&config, &cases, &policies);
        let explained_here = found
            .iter()
            .filter(|d| explained.iter().any(|e| e.covers(d)))
            .count();
        lines.push(format!(
            "  {config}: {} cases ({} CREATE, {} UPDATE; {} repository, {} generated), {} UPDATEs \
             not applicable (stored object refused); judge denied {}; compared {} with check, {} \
             with /validate; {} agree, {} explained differences, {} unexplained ({:.1} s)",
            tally.creates + tally.updates,
            tally.creates,
            tally.updates,
            repository,
            cases.len() - repository,
            tally.not_applicable,
            tally.denied_by_judge,
            tally.checked,
            tally.validated,
            tally.creates + tally.updates - tally.not_applicable - distinct_cases(&found),
            explained_here,
            found.len() - explained_here,
            t.elapsed().as_secs_f64()
        ));
        differences.extend(found);
        refused_old.extend(tally.refused_old.iter().map(|r| format!("{config}\t{r}")));
    }
    println!(
        "parity with upstream, Kubernetes {minor} ({:.1} s):\n{}",
        started.elapsed().as_secs_f64(),
        lines.join("\n")
    );
    if let Some(path) = std::env::var_os("JOBGATE_PARITY_REPORT") {
        // Every difference, explained or not, one a line: for a closer look.
        let text: String = differences.iter().map(|d| d.row("\t") + "\n").collect();
        let dir = std::path::PathBuf::from(path);
        std::fs::write(dir.join(format!("parity-{minor}.tsv")), text)
            .expect("write the parity report");
        std::fs::write(
            dir.join(format!("not-applicable-{minor}.tsv")),
            refused_old.join("\n") + "\n",
        )
        .expect("write the not applicable updates");
        let ids: Vec<&str> = cases.iter().map(|c| c.id.as_str()).collect();
        std::fs::write(dir.join("cases.txt"), ids.join("\n") + "\n").expect("write the case ids");
    }
    let unexplained: Vec<&Difference> = differences
        .iter()
        .filter(|d| !explained.iter().any(|e| e.covers(d)))
        .collect();
    let stale: Vec<&Explanation> = explained
        .iter()
        .filter(|e| e.applies_to(minor) && !differences.iter().any(|d| e.covers(d)))
        .collect();
    for e in &stale {
        println!("  explained but not different on {minor}: {e:?}");
    }
    let report: String = unexplained
        .iter()
        .map(|d| format!("\n- {}", d.row(" | ")))
        .collect();
    assert!(
        unexplained.is_empty() && stale.is_empty(),
        "Kubernetes {minor}: {} unexplained differences between jobgate and kube-apiserver's own \
         code, {} explained rows that no longer differ (fix jobgate, or explain each in \
         docs/src/versions.md, \"Parity with upstream\"):{report}",
        unexplained.len(),
        stale.len()
    );
}

fn distinct_cases(found: &[Difference]) -> usize {
    found.iter().map(|d| &d.case).collect::<BTreeSet<_>>().len()
}

/// Fails, saying so, when jobgate does not know the release (yet).
fn jobgate_knows(minor: &str) {
    let out = jobgate_check(&["--kubernetes-version", minor, "--list-policies"]);
    assert!(
        out.status.success(),
        "jobgate does not know Kubernetes {minor} yet: `jobgate check --kubernetes-version \
         {minor}` says: {}\nThe parity test for {minor} passes once jobgate supports it.",
        String::from_utf8_lossy(&out.stderr).trim()
    );
}

/// The Job gates jobgate knows, as `jobgate check --help` lists them.
fn known_gates() -> Vec<String> {
    let help = support::help::help(&["check"]);
    let list = help
        .split("--feature-gates takes them: Name=true|false,... (")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .expect("check --help lists the gates jobgate knows");
    list.split(", ").map(str::to_string).collect()
}

/// Every gate jobgate knows, set to true and to false: does kube-apiserver of `minor` (the
/// judge's `featureGate.Set`) take it, and does `jobgate check --kubernetes-version minor`?
/// Every gate jobgate knows, set to true and to false: taken or refused by `jobgate check` as
/// kube-apiserver (the judge) takes or refuses it. A difference's case is the setting.
fn gate_disagreements(minor: &str) -> Vec<Difference> {
    const JOB: &str = "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"g\"},\
        \"spec\":{\"template\":{\"spec\":{\"restartPolicy\":\"Never\",\
        \"containers\":[{\"name\":\"m\",\"image\":\"i\"}]}}}}";
    let mut out = Vec::new();
    for gate in known_gates() {
        for value in [true, false] {
            let setting = format!("{gate}={value}");
            let cluster = support::judge::accepts_gates(minor, &setting);
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_jobgate"));
            for (key, _) in std::env::vars() {
                if key.starts_with("JOBGATE_") {
                    cmd.env_remove(key);
                }
            }
            let mut child = cmd
                .args([
                    "check",
                    "--kubernetes-version",
                    minor,
                    "--feature-gates",
                    &setting,
                    "-",
                ])
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("run jobgate check");
            let _ = child.stdin.take().expect("stdin").write_all(JOB.as_bytes());
            let done = child.wait_with_output().expect("jobgate check");
            let jobgate = match done.status.code() {
                Some(0) => Ok(()),
                _ => Err(String::from_utf8_lossy(&done.stderr).trim().to_string()),
            };
            if cluster.is_ok() != jobgate.is_ok() {
                out.push(Difference {
                    config: Config {
                        minor: minor.to_string(),
                        gates: String::new(),
                    },
                    case: setting.clone(),
                    aspect: Aspect::FeatureGates,
                    detail: format!(
                        "kube-apiserver {}, jobgate {}",
                        cluster
                            .map_or_else(|e| format!("refuses it ({e})"), |()| "takes it".into()),
                        jobgate
                            .map_or_else(|e| format!("refuses it ({e})"), |()| "takes it".into()),
                    ),
                });
            }
        }
    }
    out
}

fn jobgate_check(args: &[&str]) -> std::process::Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_jobgate"));
    cmd.arg("check").args(args);
    for (key, _) in std::env::vars() {
        if key.starts_with("JOBGATE_") {
            cmd.env_remove(key);
        }
    }
    cmd.output().expect("run jobgate check")
}

/// `--policy NAME=off` for each of jobgate's policies (as `check --list-policies` names them).
fn policies_off() -> Vec<String> {
    let out = jobgate_check(&["--list-policies"]);
    assert!(out.status.success(), "jobgate check --list-policies failed");
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    let names: Vec<String> = text
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .map(|n| format!("{n}=off"))
        .collect();
    assert!(names.len() >= 5, "policies: {text}");
    names
        .into_iter()
        .flat_map(|p| ["--policy".to_string(), p])
        .collect()
}

/// `--kubernetes-version` and `--feature-gates` for `config`.
fn release_flags(config: &Config) -> Vec<String> {
    let mut flags = vec!["--kubernetes-version".to_string(), config.minor.clone()];
    if !config.gates.is_empty() {
        flags.extend(["--feature-gates".to_string(), config.gates.clone()]);
    }
    flags
}

/// Runs every case through the judge and jobgate for `config`; the counts and the differences.
fn differential(config: &Config, cases: &[Case], policies: &[String]) -> (Tally, Vec<Difference>) {
    let mut tally = Tally::default();
    let mut differences = Vec::new();
    let mut differ = |case: &Case, aspect: Aspect, detail: String| {
        differences.push(Difference {
            config: config.clone(),
            case: case.id.clone(),
            aspect,
            detail,
        })
    };
    // CREATE through `check`, all manifests in one stream.
    let creates: Vec<(usize, &Value)> = cases
        .iter()
        .enumerate()
        .filter_map(|(i, c)| match &c.write {
            Write::Create(doc) => Some((i, doc)),
            Write::Update { .. } => None,
        })
        .collect();
    let checked = check_all(config, policies, &creates);
    // The judge: each CREATE as `/mutate` leaves it, each UPDATE as written.
    let patched: Vec<Option<Value>> = cases
        .iter()
        .enumerate()
        .map(|(i, c)| match (&c.write, checked.get(&i)) {
            (Write::Create(doc), Some((_, patch))) => {
                let mut doc = doc.clone();
                let ops: json_patch::Patch =
                    serde_json::from_value(patch.clone()).expect("check's patch is RFC 6902");
                json_patch::patch(&mut doc, &ops.0).expect("check's patch applies");
                Some(doc)
            }
            _ => None,
        })
        .collect();
    let requests: Vec<JudgeRequest<'_>> = cases
        .iter()
        .zip(&patched)
        .map(|(c, p)| match &c.write {
            Write::Create(doc) => JudgeRequest::Create {
                object: p.as_ref().unwrap_or(doc),
            },
            Write::Update { old, patch } => JudgeRequest::Update {
                old_object: old,
                merge_patch: patch,
            },
        })
        .collect();
    let verdicts = judge(&config.minor, &config.gates, &requests);
    // `/validate`, sent what a validating webhook is sent.
    let mut serve_args: Vec<String> = release_flags(config);
    serve_args.extend(policies.iter().cloned());
    let serve_args: Vec<&str> = serve_args.iter().map(String::as_str).collect();
    let jg = Jobgate::start(&serve_args);
    let mut client = KeepAliveClient::new(&jg);
    for (i, (case, verdict)) in cases.iter().zip(&verdicts).enumerate() {
        if case.is_update() {
            tally.updates += 1;
            if verdict.old_object_refused() {
                tally.not_applicable += 1;
                tally
                    .refused_old
                    .push(format!("{}\t{}", case.id, verdict.message));
                continue;
            }
        } else {
            tally.creates += 1;
        }
        if !verdict.allowed {
            tally.denied_by_judge += 1;
        }
        if let Some((said, _)) = checked.get(&i) {
            tally.checked += 1;
            for (aspect, detail) in
                compare(said, verdict, (Aspect::CheckVerdict, Aspect::CheckMessage))
            {
                differ(case, aspect, detail);
            }
        } else if !case.is_update() {
            differ(
                case,
                Aspect::CheckVerdict,
                "check did not report this document".into(),
            );
        }
        let Some(object) = &verdict.object else {
            continue; // refused before admission: no webhook sees it
        };
        tally.validated += 1;
        let said = validate(&mut client, i, object, verdict.old_object.as_ref());
        for (aspect, detail) in compare(
            &said,
            verdict,
            (Aspect::ValidateVerdict, Aspect::ValidateMessage),
        ) {
            differ(case, aspect, detail);
        }
    }
    (tally, differences)
}

/// `jobgate check -o json` over every CREATE manifest (a JSON stream, one a line): what it says
/// about each, by case index, with the patch of `/mutate`.
fn check_all(
    config: &Config,
    policies: &[String],
    creates: &[(usize, &Value)],
) -> BTreeMap<usize, (Said, Value)> {
    let mut stream = Vec::new();
    for (_, doc) in creates {
        serde_json::to_writer(&mut stream, doc).expect("a manifest");
        stream.push(b'\n');
    }
    let mut args = vec!["check".to_string(), "-o".into(), "json".into()];
    args.extend(release_flags(config));
    args.extend(policies.iter().cloned());
    args.push("-".into());
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_jobgate"));
    for (key, _) in std::env::vars() {
        if key.starts_with("JOBGATE_") {
            cmd.env_remove(key);
        }
    }
    let mut child = cmd
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run jobgate check");
    let mut stdin = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&stream);
    });
    let out = child.wait_with_output().expect("jobgate check output");
    let _ = writer.join();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "jobgate check {} gave no JSON report ({e}): {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    // Document n (from 1) starts on line n.
    let case_at = |line: u64| creates.get(line as usize - 1).map(|(i, _)| *i);
    let mut said = BTreeMap::new();
    for object in report["objects"].as_array().expect("objects") {
        let i = case_at(object["line"].as_u64().expect("line")).expect("a document's line");
        let findings = object["findings"].as_array().expect("findings");
        let apiserver = |f: &&Value| f["source"] == "kube-apiserver" && f["severity"] == "error";
        // A body the apiserver cannot decode is refused before admission, in
        // `transformDecodeError`'s words.
        let undecodable = |f: &&Value| {
            f["message"]
                .as_str()
                .is_some_and(|m| m.contains(" cannot be handled as a "))
        };
        let rejected: Vec<String> = findings
            .iter()
            .filter(apiserver)
            .filter(|f| f["field"].is_null() || undecodable(f))
            .map(|f| f["message"].as_str().unwrap_or_default().to_string())
            .collect();
        let errors: Vec<String> = findings
            .iter()
            .filter(apiserver)
            .filter(|f| !f["field"].is_null() && !undecodable(f))
            .map(|f| f["message"].as_str().unwrap_or_default().to_string())
            .collect();
        let others: Vec<&Value> = findings
            .iter()
            .filter(|f| f["severity"] == "error" && f["source"] != "kube-apiserver")
            .collect();
        assert!(
            others.is_empty(),
            "a policy spoke with all policies off: {others:?}"
        );
        let verdict = match (rejected.is_empty(), errors.is_empty()) {
            (false, _) => Said::Rejected(rejected),
            (true, false) => Said::Denied(errors),
            (true, true) => Said::Allowed,
        };
        assert_eq!(
            object["allowed"] == true,
            verdict.allowed(),
            "check's allowed and findings disagree: {object}"
        );
        said.insert(i, (verdict, object["patch"].clone()));
    }
    for u in report["unreadable"].as_array().expect("unreadable") {
        let location = u["location"].as_str().unwrap_or_default();
        let line: u64 = location
            .split(':')
            .nth(1)
            .and_then(|l| l.parse().ok())
            .unwrap_or_else(|| panic!("an unreadable document without a line: {u}"));
        let i = case_at(line).expect("an unreadable document's line");
        let reason = u["reason"].as_str().unwrap_or_default().to_string();
        said.insert(i, (Said::Unreadable(reason), json!([])));
    }
    said
}

/// What `/validate` says about the object the judge prepared (and its stored old object).
fn validate(client: &mut KeepAliveClient, i: usize, object: &Value, old: Option<&Value>) -> Said {
    let kind = object["kind"].as_str().unwrap_or_default();
    let resource = if kind == "CronJob" {
        "cronjobs"
    } else {
        "jobs"
    };
    let mut request = json!({
        "uid": format!("parity-{i}"),
        "kind": {"group": "batch", "version": "v1", "kind": kind},
        "resource": {"group": "batch", "version": "v1", "resource": resource},
        "namespace": object["metadata"]["namespace"],
        "name": object["metadata"]["name"],
        "operation": if old.is_some() { "UPDATE" } else { "CREATE" },
        "object": object,
    });
    if let Some(old) = old {
        request["oldObject"] = old.clone();
    }
    let review = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": request});
    let (status, body) = client
        .post("/validate", review.to_string().as_bytes())
        .unwrap_or_else(|e| panic!("{e}: {review}"));
    let answer: Value = serde_json::from_slice(&body).unwrap_or_else(|e| {
        panic!(
            "/validate answered {status} with no JSON ({e}): {}",
            String::from_utf8_lossy(&body)
        )
    });
    if status != 200 {
        return Said::Unreadable(answer.to_string());
    }
    let response = &answer["response"];
    if response["allowed"] == true {
        return Said::Allowed;
    }
    if response["status"]["code"] == 400 {
        return Said::Unreadable(response["status"]["message"].to_string());
    }
    Said::Denied(support::review::denial_causes(response))
}

/// The Job spec fields whose kube-apiserver errors jobgate reproduces (`src/job/validate.rs`),
/// relative to the Job spec (`spec.` or `spec.jobTemplate.spec.`): exact names, or prefixes
/// ending in `.`.
const CLAIMED: [&str; 15] = [
    "parallelism",
    "completions",
    "activeDeadlineSeconds",
    "backoffLimit",
    "ttlSecondsAfterFinished",
    "backoffLimitPerIndex",
    "maxFailedIndexes",
    "managedBy",
    "completionMode",
    "podFailurePolicy",
    "podFailurePolicy.",
    "successPolicy",
    "successPolicy.",
    "podReplacementPolicy",
    "template.spec.restartPolicy",
];

/// Whether jobgate claims the judge's error on `field`. `spec.template` and `spec.template.spec`
/// count only as the template's immutability (KEP-5440 reports it on the pod spec).
fn claimed(field: &str, message: &str) -> bool {
    // `validateNameAllowsCompletions` and, from 1.38, `validateDelegationAnnotations`: the
    // metadata rules jobgate validates.
    if field == "metadata.name" {
        return message.contains(": will not able to create pod with invalid DNS label: ");
    }
    let annotations = field
        .strip_prefix("spec.jobTemplate.")
        .unwrap_or(field)
        .strip_prefix("metadata.annotations[scheduling.k8s.io/");
    if annotations.is_some_and(|key| key == "workload-name]" || key == "group-template-name]") {
        return true;
    }
    let rest = field
        .strip_prefix("spec.jobTemplate.spec.")
        .or_else(|| field.strip_prefix("spec."));
    let Some(rest) = rest else { return false };
    let rest = rest.split('[').next().unwrap_or(rest);
    let rest_full = field
        .strip_prefix("spec.jobTemplate.spec.")
        .or_else(|| field.strip_prefix("spec."))
        .unwrap_or_default();
    if matches!(rest_full, "template" | "template.spec") {
        return message.ends_with("field is immutable");
    }
    CLAIMED.iter().any(|c| match c.strip_suffix('.') {
        Some(prefix) => rest_full.starts_with(prefix) && rest_full.len() > prefix.len(),
        None => rest == *c,
    })
}

/// `/validate`'s bounds on a denial: causes listed, and bytes of one cause's message.
const MAX_CAUSES: usize = 100;

/// Whether jobgate's `field: message` is the judge's, or the judge's cut where `/validate` cuts
/// a cause's message (`<first 1024 bytes>... (N bytes truncated)`).
fn within_bound(jobgate: &str, judge: &str) -> bool {
    if jobgate == judge {
        return true;
    }
    let Some((kept, cut)) = jobgate
        .strip_suffix(" bytes truncated)")
        .and_then(|s| s.rsplit_once("... ("))
    else {
        return false;
    };
    cut.parse::<usize>()
        .is_ok_and(|n| judge.starts_with(kept) && judge.len() == kept.len() + n)
}

/// The template immutability error without the template: upstream prints the whole internal
/// `PodTemplateSpec` (or `PodSpec`) as the bad value (`%#v` in 1.33, `json.Marshal` of the
/// internal type, Go field names and all, from 1.34); jobgate omits it.
fn without_template_value<'a>(field: &str, message: &'a str) -> std::borrow::Cow<'a, str> {
    let template = field.ends_with("template") || field.ends_with("template.spec");
    match message.strip_prefix("Invalid value: ") {
        Some(rest) if template && rest.ends_with(": field is immutable") => {
            "Invalid value: field is immutable".into()
        }
        _ => message.into(),
    }
}

/// How jobgate's answer differs from the judge's: its `verdict` and `message` aspects (check's
/// or `/validate`'s).
fn compare(
    said: &Said,
    judge: &JudgeVerdict,
    (verdict, message): (Aspect, Aspect),
) -> Vec<(Aspect, String)> {
    let judged = if judge.allowed {
        "the judge allows".to_string()
    } else {
        format!("the judge denies ({}): {}", judge.code, judge.message)
    };
    match said {
        Said::Allowed if judge.allowed => vec![],
        Said::Allowed => vec![(verdict, format!("jobgate allows, {judged}"))],
        _ if judge.allowed => vec![(verdict, format!("jobgate denies: {said:?}; {judged}"))],
        Said::Unreadable(reason) if judge.code == 400 => {
            let _ = reason; // both refuse the body; the reasons are worded by different decoders
            vec![]
        }
        Said::Unreadable(reason) => vec![(
            message,
            format!("jobgate cannot read it ({reason}); {judged}"),
        )],
        Said::Rejected(parts) => {
            // `runtime.NewStrictDecodingError` joins every unknown or duplicate field behind one
            // prefix (behind `transformDecodeError`'s); `check` reports each. Any other decoding
            // error (a quantity) is the first the decoder met; `check` names each.
            const STRICT: &str = "strict decoding error: ";
            let strict: Vec<(&str, &str)> =
                parts.iter().filter_map(|p| p.split_once(STRICT)).collect();
            let joined = match strict.first() {
                Some((head, _))
                    if strict.len() == parts.len() && strict.iter().all(|(h, _)| h == head) =>
                {
                    let fields: Vec<&str> = strict.iter().map(|(_, field)| *field).collect();
                    format!("{head}{STRICT}{}", fields.join(", "))
                }
                _ => parts.join(", "),
            };
            let first_of_them = strict.is_empty() && parts.contains(&judge.message);
            if judge.code == 400 && (judge.message == joined || first_of_them) {
                vec![]
            } else {
                vec![(message, format!("jobgate: {joined}; {judged}"))]
            }
        }
        Said::Denied(errors) => {
            if judge.code != 422 {
                return vec![(message, format!("jobgate: {errors:?}; {judged}"))];
            }
            let line = |(f, m): &(String, String)| {
                format!(
                    "{f}: {}",
                    support::controlplane::without_addresses(&without_template_value(f, m))
                )
            };
            let causes: Vec<String> = judge.causes.iter().map(line).collect();
            let expected: Vec<String> = judge
                .causes
                .iter()
                .filter(|(f, m)| claimed(f, m))
                .map(line)
                .collect();
            let bounded = verdict == Aspect::ValidateVerdict;
            let same = if bounded {
                // `/validate` answers with at most 100 causes of at most 1 KiB each
                // (src/admission/response.rs: MAX_CAUSES, MAX_CAUSE_BYTES).
                errors.len() == expected.len().min(MAX_CAUSES)
                    && errors
                        .iter()
                        .zip(&expected)
                        .all(|(e, x)| within_bound(e, x))
            } else {
                *errors == expected
            };
            let foreign: Vec<&String> = errors
                .iter()
                .filter(|e| !causes.iter().any(|c| within_bound(e, c)))
                .collect();
            if same {
                vec![]
            } else {
                vec![(
                    message,
                    format!(
                        "jobgate: {errors:?}; the judge's errors on fields jobgate validates: \
                         {expected:?}{}",
                        if foreign.is_empty() {
                            String::new()
                        } else {
                            format!("; not among the judge's: {foreign:?}")
                        }
                    ),
                )]
            }
        }
    }
}

/// A row of docs/src/versions.md's "Parity with upstream" table.
#[derive(Debug)]
struct Explanation {
    /// `all`, `1.33`, `1.33–1.37`, or one configuration `1.35 Gate=true`.
    releases: String,
    /// A case id, or a prefix ending in `*`.
    case: String,
    aspects: Vec<Aspect>,
}

impl Explanation {
    fn applies_to(&self, minor: &str) -> bool {
        let r = self.releases.as_str();
        if r == "all" {
            return true;
        }
        let m = |s: &str| {
            s.trim()
                .strip_prefix("1.")
                .and_then(|n| n.parse::<u32>().ok())
        };
        if let Some((a, b)) = r.split_once('–').or_else(|| r.split_once(".."))
            && let (Some(a), Some(b), Some(x)) = (m(a), m(b), m(minor))
        {
            return a <= x && x <= b;
        }
        r.split_whitespace().next() == Some(minor)
    }

    fn covers(&self, d: &Difference) -> bool {
        let release_ok = if self.releases.contains(' ') {
            self.releases == d.config.to_string()
        } else {
            self.applies_to(&d.config.minor)
        };
        let case_ok = match self.case.strip_suffix('*') {
            Some(prefix) => d.case.starts_with(prefix),
            None => d.case == self.case,
        };
        release_ok && case_ok && self.aspects.contains(&d.aspect)
    }
}

/// The rows of the table under "## Parity with upstream" in docs/src/versions.md:
/// `| release | case | differs | why |`, the case and each difference in backticks.
fn explanations() -> Vec<Explanation> {
    let path = support::controlplane::repo().join("docs/src/versions.md");
    let text = std::fs::read_to_string(&path).expect("docs/src/versions.md");
    let section = text
        .split("\n## Parity with upstream")
        .nth(1)
        .expect("docs/src/versions.md has a \"Parity with upstream\" section");
    let section = section.split("\n## ").next().unwrap_or(section);
    let mut rows = Vec::new();
    let mut in_table = false;
    for line in section.lines() {
        let line = line.trim();
        if !line.starts_with('|') {
            if in_table {
                break; // one table
            }
            continue;
        }
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        if !in_table {
            assert_eq!(
                cells,
                ["release", "case", "differs", "why"],
                "the parity table's header"
            );
            in_table = true;
            continue;
        }
        if cells
            .iter()
            .all(|c| c.chars().all(|ch| ch == '-' || ch == ' '))
        {
            continue;
        }
        assert_eq!(cells.len(), 4, "a parity table row: {line}");
        let ticked = |cell: &str| -> Vec<String> {
            cell.split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_string)
                .collect()
        };
        let case = ticked(cells[1]);
        assert_eq!(case.len(), 1, "one case in backticks: {line}");
        let aspects: Vec<Aspect> = ticked(cells[2])
            .iter()
            .map(|a| {
                *Aspect::ALL
                    .iter()
                    .find(|x| x.as_str() == a)
                    .unwrap_or_else(|| panic!("unknown difference `{a}`: {line}"))
            })
            .collect();
        assert!(!aspects.is_empty(), "a row names what differs: {line}");
        assert!(!cells[3].is_empty(), "a row says why: {line}");
        rows.push(Explanation {
            releases: cells[0].to_string(),
            case: case[0].clone(),
            aspects,
        });
    }
    rows
}

/// Every how many generated cases one goes to the real apiserver too.
const REAL_APISERVER_SAMPLE: usize = 30;

/// The harness itself is checked against the real thing: a sample (every repository case and
/// every 30th generated one) goes through a real kube-apiserver of each minor whose control plane
/// is built, with its default feature gates and no controller manager (so a stored Job keeps the
/// status the test writes): `kubectl create --dry-run=server` for a CREATE; for an UPDATE the
/// stored object is created, its status written through the status subresource, and the merge
/// patch sent with `kubectl patch --dry-run=server`. The judge must give the same verdict, with
/// the same status reason (`Invalid` or `BadRequest`).
#[test]
fn the_real_apiserver_confirms_the_judge() {
    let mut cases = support::cases::repository_cases();
    cases.extend(
        generate::generated(SEED, GENERATED_CREATES, GENERATED_UPDATES)
            .into_iter()
            .step_by(REAL_APISERVER_SAMPLE),
    );
    let mut failures = Vec::new();
    for minor in support::controlplane::control_plane_minors() {
        let started = Instant::now();
        let cp = support::controlplane::ControlPlane::start(&minor, &["--controllers="]);
        let ns = cp.namespace("parity");
        // Each case under its own name in the test's namespace, for the judge as for the cluster.
        let named: Vec<Case> = cases
            .iter()
            .enumerate()
            .map(|(i, c)| rename(c, &format!("p{i}"), &ns))
            .collect();
        let requests: Vec<JudgeRequest<'_>> = named
            .iter()
            .map(|c| match &c.write {
                Write::Create(doc) => JudgeRequest::Create { object: doc },
                Write::Update { old, patch } => JudgeRequest::Update {
                    old_object: old,
                    merge_patch: patch,
                },
            })
            .collect();
        let verdicts = judge(&minor, "", &requests);
        let next = std::sync::atomic::AtomicUsize::new(0);
        let found = std::sync::Mutex::new(Vec::new());
        let (mut creates, mut updates) = (0, 0);
        for c in &named {
            if c.is_update() {
                updates += 1;
            } else {
                creates += 1;
            }
        }
        std::thread::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| {
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        let Some(case) = named.get(i) else { break };
                        if let Some(failure) = confirm(&cp, &ns, case, &verdicts[i]) {
                            found
                                .lock()
                                .expect("failures")
                                .push(format!("{minor} {}: {failure}", cases[i].id));
                        }
                    }
                });
            }
        });
        let found = found.into_inner().expect("failures");
        println!(
            "real kube-apiserver {minor}: {} cases ({creates} CREATE, {updates} UPDATE), {} \
             disagree with the judge ({:.1} s)",
            named.len(),
            found.len(),
            started.elapsed().as_secs_f64()
        );
        failures.extend(found);
    }
    assert!(
        failures.is_empty(),
        "the judge and the real kube-apiserver disagree:\n{}",
        failures.join("\n")
    );
}

/// `case` with its object named `name` in namespace `ns`.
fn rename(case: &Case, name: &str, ns: &str) -> Case {
    let named = |doc: &Value| {
        let mut doc = doc.clone();
        if let Some(meta) = doc.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("generateName");
            meta.insert("name".into(), json!(name));
            meta.insert("namespace".into(), json!(ns));
        }
        doc
    };
    let write = match &case.write {
        Write::Create(doc) => Write::Create(named(doc)),
        Write::Update { old, patch } => {
            let mut patch = patch.clone();
            if let Some(meta) = patch.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.remove("name");
                meta.remove("namespace");
                meta.remove("generateName");
            }
            Write::Update {
                old: named(old),
                patch,
            }
        }
    };
    Case {
        id: case.id.clone(),
        write,
    }
}

/// kubectl's verdict: `None` when allowed, else the status reason of the refusal and kubectl's
/// message.
fn kubectl_verdict(out: &std::process::Output) -> Option<(String, String)> {
    if out.status.success() {
        return None;
    }
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    // kubectl prints a 422 as `The Job "x" is invalid: ...`, anything else as
    // `Error from server (Reason): ...`.
    let reason = match stderr.split("Error from server (").nth(1) {
        Some(rest) => rest.split(')').next().unwrap_or("").to_string(),
        None if stderr.contains(" is invalid: ") => "Invalid".to_string(),
        None => String::new(),
    };
    Some((reason, stderr))
}

/// The status reason the judge's refusal carries.
fn judge_reason(v: &JudgeVerdict) -> &'static str {
    match v.code {
        400 => "BadRequest",
        422 => "Invalid",
        500 => "InternalError",
        _ => "?",
    }
}

/// Runs `case` against the real apiserver; a description of how it differs from `verdict`.
fn confirm(
    cp: &support::controlplane::ControlPlane,
    ns: &str,
    case: &Case,
    verdict: &JudgeVerdict,
) -> Option<String> {
    let compare = |out: &std::process::Output, what: &str| -> Option<String> {
        let real = kubectl_verdict(out);
        match (&real, verdict.allowed) {
            (None, true) => None,
            (Some((reason, _)), false) if reason == judge_reason(verdict) => None,
            (None, false) => Some(format!(
                "{what}: the apiserver allows it, the judge denies it ({}): {}",
                verdict.code, verdict.message
            )),
            (Some((_, message)), _) => Some(format!(
                "{what}: the apiserver says {}; the judge {}",
                message.trim(),
                if verdict.allowed {
                    "allows it".to_string()
                } else {
                    format!("denies it ({}): {}", verdict.code, verdict.message)
                }
            )),
        }
    };
    match &case.write {
        Write::Create(doc) => {
            let out = cp.kubectl_output(
                &["create", "--dry-run=server", "-f", "-"],
                Some(&doc.to_string()),
            );
            compare(&out, "create --dry-run=server")
        }
        Write::Update { old, patch } => {
            let mut manifest = old.clone();
            let status = manifest
                .as_object_mut()
                .and_then(|m| m.remove("status"))
                .filter(|s| s.as_object().is_some_and(|m| !m.is_empty()));
            let out = cp.kubectl_output(&["create", "-f", "-"], Some(&manifest.to_string()));
            if verdict.old_object_refused() {
                // The judge could not store the old object; neither may the apiserver.
                return out.status.success().then(|| {
                    format!(
                        "the apiserver stores the old object, the judge refuses it: {}",
                        verdict.message
                    )
                });
            }
            if !out.status.success() {
                return Some(format!(
                    "the apiserver refuses the old object the judge stores: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                ));
            }
            let resource = if case.kind() == "CronJob" {
                "cronjobs"
            } else {
                "jobs"
            };
            let name = old["metadata"]["name"].as_str().unwrap_or_default();
            // `kubectl patch RESOURCE NAME --type=merge -p PATCH` with `extra` flags.
            let merge_patch = |extra: &str, body: &str| {
                cp.kubectl_output(
                    &[
                        "patch",
                        resource,
                        name,
                        "-n",
                        ns,
                        "--type=merge",
                        extra,
                        "-p",
                        body,
                    ],
                    None,
                )
            };
            if let Some(status) = status {
                let out = merge_patch(
                    "--subresource=status",
                    &json!({ "status": status }).to_string(),
                );
                if !out.status.success() {
                    return Some(format!(
                        "the apiserver refuses the old object's status: {}",
                        String::from_utf8_lossy(&out.stderr).trim()
                    ));
                }
            }
            let out = merge_patch("--dry-run=server", &patch.to_string());
            compare(&out, "patch --dry-run=server")
        }
    }
}
