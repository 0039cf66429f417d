//! Every `tests/fixtures/validate/<name>.request.json` reviewed in-process at `/validate` with
//! the default config must produce `<name>.response.json` exactly (the curl test runs the same
//! fixtures over TLS). Every `tests/fixtures/validate-by-version/<name>.request.json` is
//! reviewed once per supported Kubernetes release and must produce
//! `<name>.<release>.response.json`. `JOBGATE_BLESS_FIXTURES=1` writes the responses instead,
//! for review.

use std::path::Path;

use base64::Engine;
use jobgate::admission::{Endpoint, review};
use jobgate::job::Config;
use jobgate::job::version::KubernetesVersion;
use serde_json::Value;

fn decoded(mut response: Value) -> Value {
    if let Some(patch) = response
        .pointer_mut("/response/patch")
        .and_then(|p| p.as_str().map(str::to_string))
    {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(patch)
            .expect("patch is base64");
        response["response"]["patch"] = serde_json::from_slice(&bytes).expect("patch is JSON");
    }
    response
}

#[test]
fn validate_fixtures_match_the_in_process_review() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/validate");
    let bless = std::env::var_os("JOBGATE_BLESS_FIXTURES").is_some();
    let names = request_names(&dir);
    assert!(
        names.len() >= 10,
        "expected the validate fixtures, found {names:?}"
    );
    // The fixtures were written for Kubernetes 1.34; they hold on 1.34 and on the default (1.37).
    let on_1_34 = Config::for_release(KubernetesVersion::V1_34);
    for name in names {
        let request = std::fs::read(dir.join(format!("{name}.request.json"))).unwrap();
        let outcome = review(Endpoint::Validate, &request, &Config::default());
        assert_eq!(outcome.http_status, 200, "{name}");
        let actual = decoded(serde_json::from_slice(&outcome.body).unwrap());
        let at_1_34 = review(Endpoint::Validate, &request, &on_1_34);
        assert_eq!(
            decoded(serde_json::from_slice(&at_1_34.body).unwrap()),
            actual,
            "fixture {name} on 1.34"
        );
        let response_path = dir.join(format!("{name}.response.json"));
        if bless {
            let text = serde_json::to_string_pretty(&actual).unwrap() + "\n";
            std::fs::write(&response_path, text).unwrap();
            continue;
        }
        let expected: Value =
            serde_json::from_slice(&std::fs::read(&response_path).unwrap()).unwrap();
        assert_eq!(actual, expected, "fixture {name}");
    }
}

fn request_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("fixtures dir")
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            name.strip_suffix(".request.json").map(str::to_string)
        })
        .collect();
    names.sort();
    names
}

/// The rules that changed between releases (KEP-5440 template updates, value printing, the
/// CronJob onPodConditions status default) give each release's verdict.
#[test]
fn versioned_fixtures_match_each_release() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/validate-by-version");
    let bless = std::env::var_os("JOBGATE_BLESS_FIXTURES").is_some();
    let names = request_names(&dir);
    assert!(
        names.len() >= 5,
        "expected the versioned fixtures, found {names:?}"
    );
    for name in names {
        let request = std::fs::read(dir.join(format!("{name}.request.json"))).unwrap();
        for version in KubernetesVersion::all() {
            let config = Config::for_release(version);
            let outcome = review(Endpoint::Validate, &request, &config);
            assert_eq!(outcome.http_status, 200, "{name} {version}");
            let actual = decoded(serde_json::from_slice(&outcome.body).unwrap());
            let response_path = dir.join(format!("{name}.{version}.response.json"));
            if bless {
                let text = serde_json::to_string_pretty(&actual).unwrap() + "\n";
                std::fs::write(&response_path, text).unwrap();
                continue;
            }
            let expected: Value =
                serde_json::from_slice(&std::fs::read(&response_path).unwrap()).unwrap();
            assert_eq!(actual, expected, "fixture {name} on {version}");
        }
    }
}
