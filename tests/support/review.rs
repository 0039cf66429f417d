//! AdmissionReviews: the fixtures under `tests/fixtures/`, and the causes of a denial.

use std::path::{Path, PathBuf};

/// `field: message` of each cause of a denial in an AdmissionReview `response`, in order.
pub fn denial_causes(response: &serde_json::Value) -> Vec<String> {
    response["status"]["details"]["causes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            format!(
                "{}: {}",
                c["field"].as_str().unwrap_or(""),
                c["message"].as_str().unwrap_or("")
            )
        })
        .collect()
}

/// The `*.request.json` AdmissionReviews under `tests/fixtures/<dir>`, in name order.
pub fn fixture_requests(dir: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(dir);
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".request.json"))
        .collect();
    paths.sort();
    paths
}
