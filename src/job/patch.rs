//! RFC 6902 operations addressed by field names rather than pointer strings, so that every
//! token is escaped as RFC 6901 requires (`~` -> `~0`, `/` -> `~1`): annotation keys such as
//! `kueue.x-k8s.io/safe-to-forcefully-terminate` contain a `/`.

use json_patch::jsonptr::PointerBuf;
use json_patch::{AddOperation, PatchOperation, ReplaceOperation};
use serde_json::Value;

/// The pointer to `tokens` (unescaped field names), each escaped on the way in.
pub(crate) fn pointer<'t>(tokens: impl IntoIterator<Item = &'t str>) -> PointerBuf {
    PointerBuf::from_tokens(tokens)
}

/// `add`: creates a member, or fills one that holds `null` (RFC 6902 section 4.1).
pub(crate) fn add(path: PointerBuf, value: Value) -> PatchOperation {
    PatchOperation::Add(AddOperation { path, value })
}

/// `replace`: changes a member that exists (RFC 6902 section 4.3).
pub(crate) fn replace(path: PointerBuf, value: Value) -> PatchOperation {
    PatchOperation::Replace(ReplaceOperation { path, value })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rfc_6901_escapes_slash_as_tilde_one_and_tilde_as_tilde_zero() {
        let p = pointer(["spec", "template", "metadata", "annotations", "a~b/c"]);
        assert_eq!(p.as_str(), "/spec/template/metadata/annotations/a~0b~1c");
    }

    #[test]
    fn an_escaped_key_patches_the_member_of_that_name() {
        let mut doc = json!({"metadata": {"annotations": {"x": "1"}}});
        let ops = [add(
            pointer([
                "metadata",
                "annotations",
                "kueue.x-k8s.io/safe-to-forcefully-terminate",
            ]),
            json!("true"),
        )];
        json_patch::patch(&mut doc, &ops).unwrap();
        assert_eq!(
            doc,
            json!({"metadata": {"annotations": {"x": "1", "kueue.x-k8s.io/safe-to-forcefully-terminate": "true"}}})
        );
        // And it serializes as the apiserver reads it.
        assert_eq!(
            serde_json::to_value(&ops[0]).unwrap(),
            json!({"op": "add", "path": "/metadata/annotations/kueue.x-k8s.io~1safe-to-forcefully-terminate", "value": "true"})
        );
    }
}
