//! How `jobgate check`'s memory scales with its input, whatever the YAML shape: a CI job checking
//! a hostile pull request must not be what runs out of memory. `jobgate::fuzz::check_reader`
//! (the reader and the whole chain of `jobgate check`) runs over dense documents of each shape a
//! YAML parser holds differently (flow and block sequences, flow mappings, under an unknown field
//! or a known one, JSON, anchors with aliases), and a counting global allocator measures the heap
//! at its peak.
//!
//! Each document's JSON value is the floor: kubectl sends it, and serde_json holds a one-digit
//! number in 32 bytes, so a flow list of them (2 bytes each) costs 16 times its text. The bound
//! asserted is 20 times the JSON kubectl would send (the input, or more where aliases repeat
//! it, and an anchor some alias uses is held once more while its document is read) plus 2 MiB. Before `check` read YAML into values in one pass and located only the fields
//! findings name, the first shape peaked at about 270 times its input.

use jobgate::job::Config;

/// A counting global allocator (`jobgate-alloc`, where the project's unsafe code lives) measures
/// the heap.
#[global_allocator]
static ALLOCATOR: jobgate_alloc::Counting = jobgate_alloc::Counting::new();

/// Items in each dense list or map: about half a megabyte of text per shape.
const N: usize = 250_000;

const TEMPLATE: &str = "  template:\n    spec:\n      restartPolicy: Never\n      containers:\n      - name: main\n        image: busybox\n";

fn job(spec_extra: &str) -> String {
    format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: hostile\nspec:\n{spec_extra}{TEMPLATE}"
    )
}

fn ones(n: usize) -> String {
    let mut s = "1,".repeat(n);
    s.pop();
    s
}

/// (what it is, the text, the size of the JSON kubectl would send for it)
fn shapes() -> Vec<(&'static str, String, usize)> {
    let flow = job(&format!("  junk: [{}]\n", ones(N)));
    let block = job(&format!("  junk:\n{}", "  - 1\n".repeat(N)));
    let map = job(&format!(
        "  junk: {{{}}}\n",
        (0..N / 2)
            .map(|i| format!("k{i}: 1"))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    let known = format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: hostile\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n      - name: main\n        image: busybox\n        args: [{}]\n",
        ones(N)
    );
    let json = format!(
        r#"{{"apiVersion":"batch/v1","kind":"Job","metadata":{{"name":"hostile"}},"spec":{{"junk":[{}],"template":{{"spec":{{"restartPolicy":"Never","containers":[{{"name":"main","image":"busybox"}}]}}}}}}}}"#,
        ones(N)
    );
    let aliased = job(&format!("  junk: &a [{}]\n  more: *a\n", ones(N / 2)));
    let config_map = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n  list: \"x\"\nbinaryData: {{}}\nextra: [{}]\n",
        ones(N)
    );
    let jobset = format!(
        "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata:\n  name: hostile\nspec:\n  replicatedJobs:\n  - name: workers\n    template:\n      spec:\n        junk: [{}]\n        template:\n          spec:\n            restartPolicy: Never\n            containers: [{{name: main, image: busybox}}]\n",
        ones(N)
    );
    vec![
        (
            "a flow list of one-digit numbers under an unknown field",
            flow.clone(),
            flow.len(),
        ),
        (
            "a block list under an unknown field",
            block.clone(),
            block.len(),
        ),
        (
            "a flow mapping under an unknown field",
            map.clone(),
            map.len(),
        ),
        (
            "a flow list in a known field (args)",
            known.clone(),
            known.len(),
        ),
        ("the first shape as JSON", json.clone(), json.len()),
        // The anchored list is sent twice, and kept once more for the alias.
        (
            "an anchored list and one alias",
            aliased.clone(),
            aliased.len() + 2 * N,
        ),
        ("a kind check skips", config_map.clone(), config_map.len()),
        ("a JobSet's Job template", jobset.clone(), jobset.len()),
    ]
}

#[test]
fn peak_heap_is_a_small_multiple_of_the_input_whatever_the_yaml_shape() {
    let config = Config::default();
    let mut report = Vec::new();
    let mut worst = Vec::new();
    for (what, text, json_len) in shapes() {
        let before = ALLOCATOR.current();
        ALLOCATOR.reset_peak();
        jobgate::fuzz::check_reader(&text, &config);
        let peak = ALLOCATOR.peak() - before;
        let bound = 20 * json_len + (2 << 20);
        report.push(format!(
            "{what}: {} KiB of text, peak {} KiB ({:.1}x the text), bound {} KiB",
            text.len() / 1024,
            peak / 1024,
            peak as f64 / text.len() as f64,
            bound / 1024
        ));
        if peak > bound {
            worst.push(what);
        }
    }
    let report = report.join("\n");
    println!("{report}");
    assert!(worst.is_empty(), "over the bound: {worst:?}\n{report}");
}
