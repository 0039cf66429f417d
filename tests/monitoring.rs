//! deploy/monitoring as an operator uses it: the PrometheusRule's alerts checked and unit-tested
//! by promtool, every metric the alerts and the dashboard name is one jobgate registers, and a
//! real Prometheus scraping a running `jobgate serve` and `jobgate reconcile` answers every
//! dashboard query. promtool and prometheus come from Debian's `prometheus` package, kubectl
//! (kustomize) from `tests/run`'s tool install; without them those tests fail and say so.

/// The parts of `tests/support/` this binary uses.
pub mod support {
    pub mod kustomize;
    pub mod serve;
}

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use prometheus_client::registry::Registry;
use serde_json::Value;
use support::serve::curl;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn monitoring() -> PathBuf {
    repo().join("deploy/monitoring")
}

fn read_yaml(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The PrometheusRule as `kubectl kustomize deploy/monitoring` renders it (no alert names a
/// namespace).
fn prometheus_rule() -> Value {
    render_monitoring()
        .into_iter()
        .find(|d| d["kind"] == "PrometheusRule")
        .expect("deploy/monitoring renders a PrometheusRule")
}

/// `kubectl kustomize deploy/monitoring`, document by document.
fn render_monitoring() -> Vec<Value> {
    support::kustomize::render(support::kustomize::kubectl(), &monitoring())
}

/// The rules file shipped next to the unit tests, so `promtool test rules alerts.test.yaml`
/// runs from a clean clone in deploy/monitoring/tests.
fn shipped_rules_file() -> PathBuf {
    monitoring().join("tests/rules.yaml")
}

fn dashboard() -> Value {
    let path = monitoring().join("dashboard.json");
    let text = std::fs::read_to_string(&path).expect("dashboard.json");
    serde_json::from_str(&text).expect("dashboard.json is JSON")
}

/// Every alerting rule: (name, expr, annotations).
fn alerts() -> Vec<(String, String, Value)> {
    let rule = prometheus_rule();
    let groups = rule["spec"]["groups"].as_array().expect("spec.groups");
    groups
        .iter()
        .flat_map(|g| g["rules"].as_array().expect("rules").iter())
        .map(|r| {
            (
                r["alert"]
                    .as_str()
                    .expect("alerting rules only")
                    .to_string(),
                r["expr"].as_str().expect("expr").to_string(),
                r["annotations"].clone(),
            )
        })
        .collect()
}

/// Every dashboard panel query: (panel title, expr), rows' nested panels included.
fn panel_queries() -> Vec<(String, String)> {
    fn walk(panels: &[Value], out: &mut Vec<(String, String)>) {
        for p in panels {
            if let Some(nested) = p["panels"].as_array() {
                walk(nested, out);
            }
            for t in p["targets"].as_array().into_iter().flatten() {
                let expr = t["expr"].as_str().expect("every target has an expr");
                out.push((p["title"].as_str().unwrap_or("").to_string(), expr.into()));
            }
        }
    }
    let mut out = Vec::new();
    walk(dashboard()["panels"].as_array().expect("panels"), &mut out);
    out
}

/// The `jobgate_*` identifiers in a PromQL expression.
fn jobgate_names(expr: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = expr;
    while let Some(at) = rest.find("jobgate_") {
        let tail = &rest[at..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        // A label value such as job="jobgate" is not followed by `_`; a metric name is.
        let preceded_by_ident = rest[..at]
            .chars()
            .last()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        if !preceded_by_ident {
            names.insert(tail[..end].to_string());
        }
        rest = &tail[end..];
    }
    names
}

/// The sample names the binaries export: every family `serve` and `reconcile` register (the same
/// `register` functions their `main`s call), each given one series so it is rendered.
fn exported_names() -> BTreeSet<String> {
    use jobgate::reconciler::metrics::{NodeLabels, RecoveryMetrics};
    use jobgate::server::metrics::{
        EndpointLabels, RejectionLabels, RequestLabels, ServerMetrics, WarningLabels,
    };
    use jobgate::server::reload::{ReloadLabels, ReloadMetrics};

    let mut registry = Registry::default();
    let reload = ReloadMetrics::register(&mut registry);
    reload
        .reloads
        .get_or_create(&ReloadLabels { result: "success" })
        .inc();
    let server = ServerMetrics::register(&mut registry);
    server
        .requests
        .get_or_create(&RequestLabels {
            endpoint: "validate",
            kind: "Job",
            operation: "CREATE",
            allowed: "true",
            patched: "false",
        })
        .inc();
    server
        .duration
        .get_or_create(&EndpointLabels {
            endpoint: "validate",
        })
        .observe(0.001);
    server
        .rejected
        .get_or_create(&RejectionLabels {
            endpoint: "validate",
            code: "415",
        })
        .inc();
    server
        .warnings
        .get_or_create(&WarningLabels {
            endpoint: "validate",
            kind: "Job",
        })
        .inc();
    let recovery = RecoveryMetrics::register(&mut registry);
    recovery
        .terminated
        .get_or_create(&NodeLabels {
            node: "node-a".into(),
        })
        .inc();
    recovery.error("reconcile_api");
    sample_names(&jobgate::runtime::encode(&registry))
}

/// Metric names of the samples in a Prometheus text exposition.
fn sample_names(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| l.split(['{', ' ']).next())
        .map(str::to_string)
        .collect()
}

/// GitHub's anchor for a Markdown heading: lower case, punctuation dropped, spaces to `-`.
fn github_anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn readme_anchors() -> BTreeSet<String> {
    let runbook =
        std::fs::read_to_string(repo().join("docs/src/runbook.md")).expect("docs/src/runbook.md");
    runbook
        .lines()
        .filter_map(|l| l.strip_prefix('#'))
        .map(|l| github_anchor(l.trim_start_matches('#')))
        .collect()
}

/// A tool from Debian's `prometheus` package; missing, the test fails and says how to get it.
fn tool(name: &str) -> &str {
    match Command::new(name).arg("--version").output() {
        Ok(out) if out.status.success() => name,
        Ok(out) => panic!(
            "{name} is installed but `{name} --version` failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(e) => {
            panic!(
                "cannot run {name} ({e}): install Debian's `prometheus` package (tests/run does)"
            )
        }
    }
}

/// The PrometheusRule's `spec` as a plain Prometheus rules file, in `dir`.
fn write_rules_file(dir: &Path) -> PathBuf {
    let path = dir.join("rules.yaml");
    let spec = serde_yaml_ng::to_string(&prometheus_rule()["spec"]).expect("rules YAML");
    std::fs::write(&path, spec).expect("write rules.yaml");
    path
}

// ---------------------------------------------------------------------------------------------
// Alerts.

/// deploy/monitoring/tests/rules.yaml is what kustomize renders (the PrometheusRule's spec in
/// jobgate-system), so the unit tests run as shipped test the alerts as installed.
#[test]
fn the_shipped_rules_file_is_the_rendered_prometheus_rule() {
    let shipped = read_yaml(&shipped_rules_file());
    let rendered = &prometheus_rule()["spec"];
    assert!(
        &shipped == rendered,
        "{} is stale; replace its rules with:\n{}",
        shipped_rules_file().display(),
        serde_yaml_ng::to_string(rendered).expect("YAML")
    );
}

#[test]
fn promtool_checks_the_rules_and_every_alert_fires_and_stays_quiet_in_its_unit_tests() {
    let promtool = tool("promtool");
    // As shipped, in place: `cd deploy/monitoring/tests && promtool test rules alerts.test.yaml`.
    for args in [
        vec!["check", "rules", "rules.yaml"],
        vec!["test", "rules", "alerts.test.yaml"],
    ] {
        let out = Command::new(promtool)
            .args(&args)
            .current_dir(monitoring().join("tests"))
            .output()
            .expect("run promtool");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "promtool {args:?}:\n{text}");
        assert!(text.contains("SUCCESS"), "promtool {args:?}:\n{text}");
    }
}

/// promtool passes a test file that never mentions an alert; this checks each alert has a case
/// where it fires and a case where it does not, and that the cases name only real alerts.
#[test]
fn every_alert_has_a_firing_and_a_quiet_unit_test() {
    let names: BTreeSet<String> = alerts().into_iter().map(|(n, _, _)| n).collect();
    let file = read_yaml(&monitoring().join("tests/alerts.test.yaml"));
    let mut fires = BTreeSet::new();
    let mut quiet = BTreeSet::new();
    for test in file["tests"].as_array().expect("tests") {
        for case in test["alert_rule_test"].as_array().into_iter().flatten() {
            let alert = case["alertname"].as_str().expect("alertname").to_string();
            assert!(names.contains(&alert), "unit test of unknown alert {alert}");
            match case["exp_alerts"].as_array() {
                Some(expected) if !expected.is_empty() => fires.insert(alert),
                _ => quiet.insert(alert),
            };
        }
    }
    assert_eq!(fires, names, "alerts with a test where they fire");
    assert_eq!(quiet, names, "alerts with a test where they stay quiet");
}

#[test]
fn every_alert_has_a_severity_a_summary_and_a_runbook_section_in_the_readme() {
    let anchors = readme_anchors();
    let rule = prometheus_rule();
    for group in rule["spec"]["groups"].as_array().expect("groups") {
        for r in group["rules"].as_array().expect("rules") {
            let name = r["alert"].as_str().expect("alert");
            assert!(
                matches!(
                    r["labels"]["severity"].as_str(),
                    Some("critical" | "warning")
                ),
                "{name}: severity"
            );
            assert!(r["annotations"]["summary"].is_string(), "{name}: summary");
            assert!(
                r["annotations"]["description"].is_string(),
                "{name}: description"
            );
            let url = r["annotations"]["runbook_url"]
                .as_str()
                .unwrap_or_else(|| panic!("{name}: runbook_url"));
            let (page, anchor) = url
                .split_once('#')
                .unwrap_or_else(|| panic!("{name}: {url} has no #anchor"));
            assert!(page.ends_with("/docs/src/runbook.md"), "{name}: {url}");
            assert_eq!(anchor, name.to_lowercase(), "{name}: anchor is the alert");
            assert!(
                anchors.contains(anchor),
                "{name}: docs/src/runbook.md has no heading for #{anchor}"
            );
        }
    }
}

#[test]
fn every_jobgate_metric_the_alerts_and_the_dashboard_use_is_one_jobgate_exports() {
    let exported = exported_names();
    // The registries render what the binaries serve; a few known names guard the parser.
    for name in [
        "jobgate_admission_requests_total",
        "jobgate_admission_duration_seconds_bucket",
        "jobgate_tls_certificate_expiration_timestamp_seconds",
        "jobgate_recovery_leader",
    ] {
        assert!(exported.contains(name), "{name} in {exported:?}");
    }
    let mut used = BTreeMap::new();
    for (alert, expr, _) in alerts() {
        for name in jobgate_names(&expr) {
            used.entry(name)
                .or_insert_with(Vec::new)
                .push(alert.clone());
        }
    }
    for (panel, expr) in panel_queries() {
        for name in jobgate_names(&expr) {
            used.entry(name)
                .or_insert_with(Vec::new)
                .push(format!("panel {panel:?}"));
        }
    }
    assert!(used.len() >= 10, "names found: {used:?}");
    let unknown: Vec<_> = used
        .iter()
        .filter(|(name, _)| !exported.contains(*name))
        .collect();
    assert!(
        unknown.is_empty(),
        "metrics used but not exported by jobgate: {unknown:?}\nexported: {exported:?}"
    );
    // The other metrics are kube-apiserver's, kube-state-metrics' and Prometheus' own, listed in
    // docs/src/monitoring.md as external.
    let readme = std::fs::read_to_string(repo().join("docs/src/monitoring.md"))
        .expect("docs/src/monitoring.md");
    for (who, expr) in alerts()
        .into_iter()
        .map(|(n, e, _)| (n, e))
        .chain(panel_queries())
    {
        for word in expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
            let base = word.trim_end_matches("_bucket");
            if word.starts_with("apiserver_admission_webhook_") || word.starts_with("kube_") {
                assert!(
                    EXTERNAL.contains(&base),
                    "{who}: {word} is not a documented external metric"
                );
                assert!(
                    readme.contains(&format!("`{base}")),
                    "docs/src/monitoring.md does not list {base}"
                );
            }
        }
    }
}

/// Metrics the alerts and the dashboard read from kube-apiserver and kube-state-metrics.
const EXTERNAL: &[&str] = &[
    "apiserver_admission_webhook_admission_duration_seconds",
    "apiserver_admission_webhook_fail_open_count",
    "apiserver_admission_webhook_rejection_count",
    "kube_endpoint_address",
    "kube_endpoint_info",
];

/// The PrometheusRule of the chart as release `release` in `namespace`, as `helm template`
/// renders it with the PrometheusRule enabled.
fn chart_prometheus_rule(release: &str, namespace: &str) -> Value {
    let helm = "helm";
    let out = Command::new(helm)
        .args(["template", release])
        .arg(repo().join("charts/jobgate"))
        .args([
            "--namespace",
            namespace,
            "--set",
            "monitoring.prometheusRule.enabled=true",
        ])
        .output()
        .unwrap_or_else(|e| panic!("cannot run helm ({e}): run tests/run (it installs helm 4)"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    serde_yaml_ng::Deserializer::from_str(&text)
        .map(|d| serde::Deserialize::deserialize(d).expect("YAML"))
        .find(|d: &Value| d["kind"] == "PrometheusRule")
        .expect("a PrometheusRule")
}

/// A promtool test file: the webhook alerts of an install whose Service is `service` in
/// `namespace` fire on its series (no ready endpoint, no serve container up, no leader), and a
/// Service of the same name in another namespace without jobgate's pods stays quiet.
fn install_alert_tests(service: &str, namespace: &str) -> String {
    format!(
        r#"rule_files: [rules.yaml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'up{{job="jobgate", namespace="{namespace}", container="serve", pod="{service}-a"}}'
        values: '1x10'
      - series: 'kube_endpoint_info{{namespace="{namespace}", endpoint="{service}"}}'
        values: '1x10'
      - series: 'kube_endpoint_address{{namespace="{namespace}", endpoint="{service}", ip="10.0.0.1", ready="false"}}'
        values: '1x10'
      - series: 'kube_endpoint_info{{namespace="elsewhere", endpoint="{service}"}}'
        values: '1x10'
      - series: 'jobgate_recovery_leader{{job="jobgate", namespace="{namespace}", pod="{service}-a", container="reconcile"}}'
        values: '0x10'
    alert_rule_test:
      - eval_time: 5m
        alertname: JobgateWebhookNoReadyEndpoints
        exp_alerts:
          - exp_labels: {{severity: critical, namespace: "{namespace}", endpoint: "{service}"}}
            exp_annotations:
              description: "Service {namespace}/{service} has had no ready address for 2 minutes; kube-apiserver cannot call the webhooks."
              runbook_url: "https://github.com/jobgate/jobgate/blob/main/docs/src/runbook.md#jobgatewebhooknoreadyendpoints"
              summary: "The jobgate Service has no ready endpoint."
      - eval_time: 7m
        alertname: JobgateReconcilerNoLeader
        exp_alerts:
          - exp_labels: {{severity: warning, namespace: "{namespace}"}}
            exp_annotations:
              description: "For 5 minutes no jobgate reconcile container has been leader: pods stuck on unreachable nodes are not recovered."
              runbook_url: "https://github.com/jobgate/jobgate/blob/main/docs/src/runbook.md#jobgatereconcilernoleader"
              summary: "No jobgate reconciler holds the leader Lease."
  - interval: 1m
    input_series:
      - series: 'up{{job="jobgate", namespace="{namespace}", container="serve", pod="{service}-a"}}'
        values: '0x10'
    alert_rule_test:
      - eval_time: 5m
        alertname: JobgateWebhookDown
        exp_alerts:
          - exp_labels: {{severity: critical, namespace: "{namespace}"}}
            exp_annotations:
              description: "Prometheus has scraped no jobgate serve container for 2 minutes. The validating webhook fails closed: creating or updating Jobs and CronJobs is refused."
              runbook_url: "https://github.com/jobgate/jobgate/blob/main/docs/src/runbook.md#jobgatewebhookdown"
              summary: "No jobgate webhook server is up."
"#
    )
}

/// The alerts of the two installs the docs use, run by promtool on their own series: the chart as
/// release `jg` in `platform-jobs` (Service jg-jobgate) and kustomize moved to `team-a` (Service
/// jobgate). A critical alert that selects another Service or namespace would never fire.
#[test]
fn the_alerts_fire_for_the_installs_own_names() {
    let promtool = tool("promtool");
    let kustomize_rule = prometheus_rule();
    for (what, rule, service, namespace) in [
        (
            "chart jg in platform-jobs",
            chart_prometheus_rule("jg", "platform-jobs"),
            "jg-jobgate",
            "platform-jobs",
        ),
        ("kustomize in team-a", kustomize_rule, "jobgate", "team-a"),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            dir.path().join("rules.yaml"),
            serde_yaml_ng::to_string(&rule["spec"]).expect("YAML"),
        )
        .expect("write rules");
        std::fs::write(
            dir.path().join("tests.yaml"),
            install_alert_tests(service, namespace),
        )
        .expect("write tests");
        let out = Command::new(promtool)
            .args(["test", "rules", "tests.yaml"])
            .current_dir(dir.path())
            .output()
            .expect("run promtool");
        assert!(
            out.status.success(),
            "{what}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn the_name_scanner_finds_metric_names_not_label_values() {
    assert_eq!(
        jobgate_names(r#"sum(rate(jobgate_recovery_errors_total{job="jobgate"}[5m])) > 0"#),
        BTreeSet::from(["jobgate_recovery_errors_total".to_string()])
    );
    assert!(jobgate_names(r#"myjobgate_metric + up"#).is_empty());
}

#[test]
fn kustomize_renders_the_monitoring_component() {
    let docs = render_monitoring();
    let kinds: BTreeSet<(&str, &str)> = docs
        .iter()
        .map(|d| {
            (
                d["kind"].as_str().unwrap_or(""),
                d["metadata"]["name"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        BTreeSet::from([
            ("ConfigMap", "jobgate-dashboard"),
            ("PodMonitor", "jobgate"),
            ("PrometheusRule", "jobgate"),
        ])
    );
    for d in &docs {
        assert_eq!(d["metadata"]["namespace"], "jobgate-system", "{d}");
    }
    let cm = docs
        .iter()
        .find(|d| d["kind"] == "ConfigMap")
        .expect("ConfigMap");
    assert_eq!(cm["metadata"]["labels"]["grafana_dashboard"], "1");
    let json: Value =
        serde_json::from_str(cm["data"]["jobgate.json"].as_str().expect("dashboard data"))
            .expect("dashboard JSON");
    assert_eq!(json, dashboard());
    // The PodMonitor selects the Deployment's pods and scrapes both admin ports.
    let deployment = read_yaml(&repo().join("deploy/base/deployment.yaml"));
    let pod_labels = &deployment["spec"]["template"]["metadata"]["labels"];
    let pm = docs
        .iter()
        .find(|d| d["kind"] == "PodMonitor")
        .expect("PodMonitor");
    for (k, v) in pm["spec"]["selector"]["matchLabels"]
        .as_object()
        .expect("matchLabels")
    {
        assert_eq!(&pod_labels[k], v, "pod label {k}");
    }
    let ports: BTreeSet<&str> = deployment["spec"]["template"]["spec"]["containers"]
        .as_array()
        .expect("containers")
        .iter()
        .flat_map(|c| c["ports"].as_array().into_iter().flatten())
        .filter_map(|p| p["name"].as_str())
        .collect();
    let scraped: BTreeSet<&str> = pm["spec"]["podMetricsEndpoints"]
        .as_array()
        .expect("endpoints")
        .iter()
        .map(|e| e["port"].as_str().expect("port"))
        .collect();
    assert_eq!(scraped, BTreeSet::from(["admin", "admin-reconcile"]));
    assert!(scraped.is_subset(&ports), "{scraped:?} not in {ports:?}");
}

// ---------------------------------------------------------------------------------------------
// A real Prometheus scraping the real binaries.

/// Panels with no data in this test, and why: documented in each panel's description too.
const EMPTY_HERE: &[(&str, &str)] = &[
    (
        "Calls rejected by kube-apiserver",
        "kube-apiserver metrics are external",
    ),
    ("Calls failing open", "kube-apiserver metrics are external"),
    (
        "kube-apiserver call latency",
        "kube-apiserver metrics are external",
    ),
    (
        "Pods recovered",
        "no node becomes unreachable without a cluster",
    ),
];

/// A child process killed and reaped when dropped.
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

fn write_pair(dir: &Path, ca: &str) {
    let bundle = jobgate::pki::generate(
        ca,
        &["localhost".into()],
        Duration::from_secs(30 * 86_400),
        std::time::SystemTime::now(),
    )
    .expect("certificates");
    std::fs::write(dir.join("ca.crt"), &bundle.ca_cert_pem).expect("ca.crt");
    std::fs::write(dir.join("tls.key"), &bundle.key_pem).expect("tls.key");
    std::fs::write(dir.join("tls.crt"), &bundle.cert_pem).expect("tls.crt");
}

/// `jobgate serve` with certificate files (so reloads happen), on free loopback ports.
fn start_serve(dir: &Path) -> (Process, u16, u16) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_jobgate"))
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--admin-addr",
            "127.0.0.1:0",
        ])
        .args(["--tls-reload-interval", "200ms"])
        .arg("--tls-cert")
        .arg(dir.join("tls.crt"))
        .arg("--tls-key")
        .arg(dir.join("tls.key"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn jobgate serve");
    let stdout = child.stdout.take().expect("stdout");
    let process = Process(child);
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("banner line");
    let rest = line
        .strip_prefix("jobgate: serving webhooks on https://127.0.0.1:")
        .unwrap_or_else(|| panic!("banner: {line:?}"));
    let (port, admin) = rest.split_once(" (admin http://127.0.0.1:").expect("admin");
    let port = port.parse().expect("port");
    let admin = admin
        .trim()
        .trim_end_matches(')')
        .parse()
        .expect("admin port");
    (process, port, admin)
}

/// `jobgate reconcile` against an API server that refuses connections: it serves its admin port
/// and counts the failed calls, as it would in a cluster whose API is down.
fn start_reconcile(dir: &Path) -> (Process, u16) {
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: down\n  cluster:\n    server: http://127.0.0.1:{}\n\
             contexts:\n- name: down\n  context:\n    cluster: down\n    user: nobody\n    namespace: jobgate-system\n\
             current-context: down\nusers:\n- name: nobody\n  user: {{}}\n",
            free_port()
        ),
    )
    .expect("kubeconfig");
    let mut child = Command::new(env!("CARGO_BIN_EXE_jobgate"))
        .args([
            "reconcile",
            "--admin-addr",
            "127.0.0.1:0",
            "--log-format",
            "json",
        ])
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn jobgate reconcile");
    let stderr = child.stderr.take().expect("stderr");
    let process = Process(child);
    let mut reader = BufReader::new(stderr);
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut admin = None;
    while admin.is_none() && Instant::now() < deadline {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            break;
        }
        let Ok(log) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if log["message"] == "jobgate reconcile starting" {
            admin = log["admin"]
                .as_str()
                .and_then(|a| a.rsplit_once(':'))
                .and_then(|(_, p)| p.parse::<u16>().ok());
        }
    }
    // Keep draining the log so the child never blocks on a full pipe.
    std::thread::spawn(move || {
        let mut sink = Vec::new();
        let _ = reader.read_to_end(&mut sink);
    });
    (process, admin.expect("reconcile logged its admin address"))
}

fn start_prometheus(
    prometheus: &str,
    dir: &Path,
    serve_admin: u16,
    reconcile_admin: u16,
) -> (Process, u16) {
    write_rules_file(dir);
    let config = format!(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files: [rules.yaml]\n\
         scrape_configs:\n  - job_name: jobgate\n    static_configs:\n\
         \x20     - targets: ['127.0.0.1:{serve_admin}']\n\
         \x20       labels: {{container: serve, namespace: jobgate-system, pod: jobgate-test}}\n\
         \x20     - targets: ['127.0.0.1:{reconcile_admin}']\n\
         \x20       labels: {{container: reconcile, namespace: jobgate-system, pod: jobgate-test}}\n"
    );
    std::fs::write(dir.join("prometheus.yml"), config).expect("prometheus.yml");
    let port = free_port();
    let child = Command::new(prometheus)
        .arg("--config.file=prometheus.yml")
        .arg("--storage.tsdb.path=data")
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .arg("--log.level=warn")
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn prometheus");
    (Process(child), port)
}

/// An instant query; the `data.result` array, or the error Prometheus gave.
fn query(port: u16, promql: &str) -> Result<Vec<Value>, String> {
    let q = format!("query={promql}");
    let reply = curl(&[
        "-G",
        "--data-urlencode",
        &q,
        &format!("http://127.0.0.1:{port}/api/v1/query"),
    ]);
    let body: Value = serde_json::from_str(&reply.body)
        .map_err(|e| format!("HTTP {}: {e}: {}{}", reply.status, reply.body, reply.stderr))?;
    if body["status"] != "success" {
        return Err(format!("{promql}: {body}"));
    }
    Ok(body["data"]["result"]
        .as_array()
        .cloned()
        .unwrap_or_default())
}

fn wait_for(what: &str, within: Duration, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    panic!("timed out waiting for {what}");
}

/// One round of the load: allowed, denied and warned reviews, a mutation, and a request with the
/// wrong content type (HTTP 415).
fn load_round(port: u16, ca: &Path) {
    let fixtures = repo().join("tests/fixtures");
    let ca = ca.to_str().expect("UTF-8 path");
    for (path, file) in [
        ("/validate", "validate/job-allowed.request.json"),
        (
            "/validate",
            "validate/job-create-denied-pod-failure-policy.request.json",
        ),
        (
            "/validate",
            "validate/job-create-warned-recovery-incomplete.request.json",
        ),
        (
            "/mutate",
            "mutate/job-annotation-opt-in-patched.request.json",
        ),
    ] {
        let data = format!("@{}", fixtures.join(file).display());
        let reply = curl(&[
            "--cacert",
            ca,
            "-H",
            "Content-Type: application/json",
            "--data-binary",
            &data,
            &format!("https://localhost:{port}{path}"),
        ]);
        assert_eq!(reply.status, 200, "{file}: {}{}", reply.body, reply.stderr);
    }
    let reply = curl(&[
        "--cacert",
        ca,
        "-H",
        "Content-Type: text/plain",
        "--data",
        "{}",
        &format!("https://localhost:{port}/validate"),
    ]);
    assert_eq!(reply.status, 415, "{}", reply.stderr);
}

#[test]
fn a_real_prometheus_scraping_jobgate_answers_every_dashboard_query_and_loads_the_alerts() {
    let prometheus = tool("prometheus");
    let dir = tempfile::tempdir().expect("tempdir");
    let certs = dir.path().join("certs");
    std::fs::create_dir(&certs).expect("certs dir");
    write_pair(&certs, "first-ca");
    let (_serve, port, serve_admin) = start_serve(&certs);
    let (_reconcile, reconcile_admin) = start_reconcile(dir.path());
    let (_prometheus, prom) =
        start_prometheus(prometheus, dir.path(), serve_admin, reconcile_admin);

    wait_for(
        "Prometheus to scrape both admin ports",
        Duration::from_secs(60),
        || {
            query(prom, r#"sum(up{job="jobgate"})"#)
                .ok()
                .and_then(|r| {
                    r.first()
                        .and_then(|s| s["value"][1].as_str().map(str::to_string))
                })
                .as_deref()
                == Some("2")
        },
    );

    // A short, bounded load over several scrapes: 8 rounds of 5 requests, 300 ms apart.
    let ca = certs.join("ca.crt");
    for _ in 0..8 {
        load_round(port, &ca);
        std::thread::sleep(Duration::from_millis(300));
    }
    // A rotation of the mounted files: one successful reload.
    write_pair(&certs, "second-ca");
    wait_for("the certificate reload", Duration::from_secs(20), || {
        curl(&[&format!("http://127.0.0.1:{serve_admin}/metrics")])
            .body
            .contains(r#"jobgate_tls_reloads_total{result="success"} 1"#)
    });
    let metrics = curl(&[&format!("http://127.0.0.1:{serve_admin}/metrics")]).body;
    assert!(
        metrics.contains(r#"jobgate_admission_warnings_total{endpoint="validate",kind="Job"} 16"#),
        "two warnings per warned review, 8 reviews:\n{metrics}"
    );
    // Let Prometheus see the last increases.
    wait_for(
        "Prometheus to scrape the reload",
        Duration::from_secs(30),
        || {
            query(
                prom,
                r#"jobgate_tls_reloads_total{job="jobgate", result="success"}"#,
            )
            .is_ok_and(|r| !r.is_empty())
        },
    );
    std::thread::sleep(Duration::from_secs(2));

    let empty_here: BTreeMap<&str, &str> = EMPTY_HERE.iter().copied().collect();
    let mut report = Vec::new();
    for (panel, expr) in panel_queries() {
        let promql = expr.replace("$__rate_interval", "1m");
        let result = query(prom, &promql).unwrap_or_else(|e| panic!("panel {panel:?}: {e}"));
        match empty_here.get(panel.as_str()) {
            Some(why) => assert!(
                result.is_empty(),
                "panel {panel:?} is documented empty here ({why}) but returned {result:?}"
            ),
            None => assert!(!result.is_empty(), "panel {panel:?}: no data for {promql}"),
        }
        report.push(format!("{panel}: {} series", result.len()));
    }
    eprintln!("{}", report.join("\n"));

    // Every alert expression parses and evaluates in a real Prometheus, and the rule file loaded
    // with every rule healthy.
    for (alert, expr, _) in alerts() {
        query(prom, &expr).unwrap_or_else(|e| panic!("{alert}: {e}"));
    }
    let rules = curl(&[&format!("http://127.0.0.1:{prom}/api/v1/rules")]).json();
    let loaded: Vec<(String, String)> = rules["data"]["groups"]
        .as_array()
        .expect("rule groups")
        .iter()
        .flat_map(|g| g["rules"].as_array().cloned().unwrap_or_default())
        .map(|r| {
            (
                r["name"].as_str().unwrap_or("").to_string(),
                r["health"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert_eq!(loaded.len(), alerts().len(), "{loaded:?}");
    for (name, health) in &loaded {
        assert!(
            matches!(health.as_str(), "ok" | "unknown"),
            "{name}: {health}"
        );
    }

    // What the running binaries export covers what the dashboard and the alerts use, except the
    // families no event of this test fills (checked against the registries above).
    let scraped: BTreeSet<String> = query(prom, r#"count by (__name__) ({job="jobgate"})"#)
        .expect("names")
        .iter()
        .filter_map(|s| s["metric"]["__name__"].as_str().map(str::to_string))
        .collect();
    let never_filled_here = BTreeSet::from(["jobgate_recovery_pods_terminated_total".to_string()]);
    for (who, expr) in alerts()
        .into_iter()
        .map(|(n, e, _)| (n, e))
        .chain(panel_queries())
    {
        for name in jobgate_names(&expr) {
            assert!(
                scraped.contains(&name) || never_filled_here.contains(&name),
                "{who}: {name} not scraped from the running jobgate; scraped: {scraped:?}"
            );
        }
    }
}
