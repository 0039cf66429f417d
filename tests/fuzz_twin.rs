//! The proptest twin of the fuzz targets in `fuzz/` (which need cargo-fuzz and a nightly
//! toolchain): the same invariants (`jobgate::fuzz`), on mutations of the fixtures in
//! `tests/fixtures`, so `cargo test` runs a short bounded smoke of every target on stable.
//! `PROPTEST_CASES=100000 cargo test --release --test fuzz_twin` runs longer.

use std::path::PathBuf;

use jobgate::admission::Endpoint;
use jobgate::job::Config;
use proptest::prelude::*;
use serde_json::Value;

fn fixtures() -> Vec<(Endpoint, Vec<u8>)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut out = Vec::new();
    for (dir, endpoint) in [
        ("mutate", Endpoint::Mutate),
        ("mutate-recovery", Endpoint::MutateRecovery),
        ("validate", Endpoint::Validate),
    ] {
        let mut names: Vec<PathBuf> = std::fs::read_dir(root.join(dir))
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.to_string_lossy().ends_with(".request.json"))
            .collect();
        names.sort();
        for path in names {
            out.push((endpoint, std::fs::read(path).unwrap()));
        }
    }
    out
}

/// JSON values a hostile client would try: wrong shapes, edge numbers, bad strings, depth.
fn hostile_value() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("null".to_string()),
        Just("[]".to_string()),
        Just("{}".to_string()),
        Just(r#"["a"]"#.to_string()),
        Just("-0".to_string()),
        Just("1e2".to_string()),
        Just("1e400".to_string()),
        Just("-1".to_string()),
        Just("2147483648".to_string()),
        Just("0.5".to_string()),
        Just(r#""\ud800""#.to_string()),
        Just(r#""""#.to_string()),
        Just("true".to_string()),
        Just(r#"{"a":1,"a":2}"#.to_string()),
        (1usize..140).prop_map(|n| format!("{}1{}", "[".repeat(n), "]".repeat(n))),
        "[a-zA-Z0-9]{0,12}".prop_map(|s| format!("{s:?}")),
        (0i64..300).prop_map(|n| n.to_string()),
    ]
}

/// Every position in a JSON tree, as a pointer, in document order.
fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
    out.push(at.clone());
    match v {
        Value::Object(m) => {
            for (k, c) in m {
                let k = k.replace('~', "~0").replace('/', "~1");
                pointers(c, format!("{at}/{k}"), out);
            }
        }
        Value::Array(a) => {
            for (i, c) in a.iter().enumerate() {
                pointers(c, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// A fixture with one value replaced by a hostile one (as text, so invalid JSON values such as
/// `1e400` and repeated keys go through), or with bytes flipped or cut.
fn mutated() -> impl Strategy<Value = (Endpoint, Vec<u8>)> {
    let all = fixtures();
    let n = all.len();
    (
        0..n,
        any::<prop::sample::Index>(),
        hostile_value(),
        0u8..4,
        any::<Vec<(prop::sample::Index, u8)>>(),
    )
        .prop_map(move |(i, at, replacement, how, flips)| {
            let (endpoint, body) = all[i].clone();
            let mut bytes = match how {
                0 | 1 => {
                    let mut tree: Value = serde_json::from_slice(&body).unwrap();
                    let mut ps = Vec::new();
                    pointers(&tree, String::new(), &mut ps);
                    let p = &ps[at.index(ps.len())];
                    const MARK: &str = "\u{1}jobgate-fuzz\u{1}";
                    if let Some(slot) = tree.pointer_mut(p) {
                        *slot = Value::String(MARK.into());
                    }
                    serde_json::to_string(&tree)
                        .unwrap()
                        .replacen(
                            &format!("{:?}", MARK).replace("\\u{1}", "\\u0001"),
                            &replacement,
                            1,
                        )
                        .into_bytes()
                }
                2 => {
                    let mut b = body.clone();
                    for (idx, byte) in &flips {
                        let k = idx.index(b.len());
                        b[k] = *byte;
                    }
                    b
                }
                _ => body[..at.index(body.len() + 1)].to_vec(),
            };
            if bytes.is_empty() {
                bytes.push(b'{');
            }
            (endpoint, bytes)
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn every_endpoint_answers_hostile_reviews_within_the_invariants((endpoint, body) in mutated()) {
        let config = Config::default();
        // The same bytes at every endpoint: a fixture is a valid review for each.
        for e in [endpoint, Endpoint::Mutate, Endpoint::MutateRecovery, Endpoint::Validate] {
            jobgate::fuzz::check_review(e, &body, &config);
        }
    }

    #[test]
    fn check_reads_any_text_without_panicking((_, body) in mutated(), yaml in "[-\\[\\]{}:,&*!|>'\" a-z0-9\n#]{0,200}") {
        let config = Config::default();
        jobgate::fuzz::check_reader(&String::from_utf8_lossy(&body), &config);
        jobgate::fuzz::check_reader(&yaml, &config);
        jobgate::fuzz::config_file(&yaml);
    }
}
