//! kube-apiserver's strict decoding in its own words, shared by a document's decoding
//! (`document`) and a CRD's decoding of the Job templates an object holds (`templates`): the
//! prefix of a body it cannot decode, unknown fields as `--validate` asks, and keys written twice.

use super::object::{FieldValidation, Place};
use super::report::{Located, Location};
use crate::job::field::go_quote;
use crate::job::finding::{self, Finding, Source};
use crate::schema;

/// How kube-apiserver answers a write whose body it cannot decode, strict decoding errors
/// included: `transformDecodeError` (k8s.io/apiserver `pkg/endpoints/handlers/rest.go`) puts
/// `Job in version "v1" cannot be handled as a Job: ` before the decoder's error.
pub(super) fn cannot_be_handled(kind: &str, version: &str) -> String {
    format!(
        "{kind} in version {} cannot be handled as a {kind}: ",
        go_quote(version)
    )
}

/// A field the release's schema does not have, as `--validate` asks: refused under `strict`
/// (`runtime.NewStrictDecodingError`'s prefix behind `handled_as`, [`cannot_be_handled`]'s
/// words), else a warning. Where the release may have
/// fields jobgate did not read (newer than any it read), a warning too: never stricter than the
/// cluster.
pub(super) fn unknown_field(
    printed: String,
    at: Location,
    validation: FieldValidation,
    handled_as: &str,
    incomplete: Option<&str>,
) -> Located {
    let message = format!("unknown field {}", go_quote(&printed));
    let finding = match (validation, incomplete) {
        (FieldValidation::Strict, None) => Finding {
            source: Source::KubeApiserver,
            path: Some(printed),
            said: finding::Said::Rejected(format!("{handled_as}strict decoding error: {message}")),
        },
        (FieldValidation::Strict, Some(why)) => Finding::warning(
            Source::KubeApiserver,
            Some(printed),
            format!("{message} ({why}; the cluster may know it)"),
        ),
        _ => Finding::warning(Source::KubeApiserver, Some(printed), message),
    };
    Located { finding, at }
}

/// Keys written twice in one object under `prefix` (segments from the document's root). kubectl
/// reads a manifest into a map (`sigs.k8s.io/yaml` for YAML, `encoding/json` for JSON: the last
/// value wins) and sends that map re-encoded, so kube-apiserver's strict decoding never sees a
/// duplicate from `kubectl apply`, `create` or `--server-side`: a warning, not a refusal, that
/// the first value is lost.
pub(super) fn duplicates(place: &Place<'_>, prefix: &[String]) -> Vec<Located> {
    place
        .duplicates
        .iter()
        .filter(|steps| schema::segments(steps).starts_with(prefix))
        .map(|steps| {
            let path = schema::printed(&steps[place.prefix.len()..]);
            let message = format!(
                "duplicate field {}: kubectl sends only the last value",
                go_quote(&path)
            );
            Located {
                finding: Finding::warning(Source::Kubectl, Some(path), message),
                at: place.at(&schema::segments(&steps[place.prefix.len()..])),
            }
        })
        .collect()
}
