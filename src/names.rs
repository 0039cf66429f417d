//! apimachinery's name validators (`k8s.io/apimachinery/pkg/util/validation`), message for
//! message: the qualified names of pod condition types, the domain-prefixed path of a Job's
//! `managedBy`, and the RFC 1123 names of Services and Namespaces that `jobgate certs` puts in a
//! certificate.

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_LABEL_MAX_LENGTH: usize = 63;

/// `dns1123LabelRegexp`: `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`.
fn matches_dns1123_label(label: &str) -> bool {
    let b = label.as_bytes();
    matches!((b.first(), b.last()), (Some(f), Some(z)) if is_lower_alnum(*f) && is_lower_alnum(*z))
        && b.iter().all(|c| is_lower_alnum(*c) || *c == b'-')
}

/// `validation.IsDNS1123Label`.
pub(crate) fn is_dns1123_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(format!(
            "must be no more than {DNS1123_LABEL_MAX_LENGTH} characters"
        ));
    }
    if !matches_dns1123_label(value) {
        if is_dns1123_subdomain(value).is_empty() {
            // A valid subdomain but not a label: the length was checked, so it has dots.
            errs.push("must not contain dots".to_string());
        } else {
            errs.push(regex_error(
                DNS1123_LABEL_MSG,
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

/// Which apimachinery wording a message takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NameMessages {
    /// Up to v0.34 (Kubernetes 1.34): `validation.IsQualifiedName`, `MaxLenError` "must be no
    /// more than N characters".
    Characters,
    /// From v0.35 (Kubernetes 1.35): `IsQualifiedName` is `content.IsLabelKey`
    /// (`pkg/api/validate/content/kube.go`): "a valid label key ..." and `MaxLenError` "must be
    /// no more than N bytes" (`content/errors.go`).
    LabelKeyBytes,
}

impl NameMessages {
    /// `MaxLenError(length)`.
    fn max_len(self, length: usize) -> String {
        match self {
            NameMessages::Characters => format!("must be no more than {length} characters"),
            NameMessages::LabelKeyBytes => format!("must be no more than {length} bytes"),
        }
    }
}

/// `validation.IsQualifiedName` (`content.IsLabelKey` from 1.35), message for message.
pub(crate) fn is_qualified_name(value: &str, messages: NameMessages) -> Vec<String> {
    const QNAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
    const QNAME_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
    let qname_regex_error = || regex_error(QNAME_MSG, QNAME_FMT, &["MyName", "my.name", "123-abc"]);
    let what = match messages {
        NameMessages::Characters => "a qualified name",
        NameMessages::LabelKeyBytes => "a valid label key",
    };
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                errs.extend(
                    dns1123_subdomain_errors(prefix, messages)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            *name
        }
        _ => {
            errs.push(format!(
                "{what} {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                qname_regex_error()
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errs.push(format!("name part {}", messages.max_len(63)));
    }
    if !is_qualified_name_part(name) {
        errs.push(format!("name part {}", qname_regex_error()));
    }
    errs
}

fn is_qualified_name_part(name: &str) -> bool {
    let b = name.as_bytes();
    let (Some(first), Some(last)) = (b.first(), b.last()) else {
        return false;
    };
    first.is_ascii_alphanumeric()
        && last.is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// `validation.IsDNS1123Subdomain`.
pub(crate) fn is_dns1123_subdomain(value: &str) -> Vec<String> {
    dns1123_subdomain_errors(value, NameMessages::Characters)
}

/// `IsDNS1123Subdomain` in `messages`' wording (the regex message did not change in 1.35).
fn dns1123_subdomain_errors(value: &str, messages: NameMessages) -> Vec<String> {
    const FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
    const MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
    let mut errs = Vec::new();
    if value.len() > 253 {
        errs.push(messages.max_len(253));
    }
    if !value.split('.').all(matches_dns1123_label) {
        errs.push(regex_error(MSG, FMT, &["example.com"]));
    }
    errs
}

/// `httpPathFmt`: the path part of `IsDomainPrefixedPath` (`spec.managedBy`).
const HTTP_PATH_FMT: &str = r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+";

/// `IsDomainPrefixedPath`'s complaint about the part after the first `/`, when it does not
/// match `httpPathFmt`.
pub(crate) fn http_path_error(path: &str) -> Option<String> {
    let ok = !path.is_empty()
        && path
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/-._~%!$&'()*+,;=:".contains(&b));
    (!ok).then(|| regex_error("Invalid path", HTTP_PATH_FMT, &[]))
}

fn is_lower_alnum(c: u8) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

/// `validation.RegexError`.
fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let mut out = format!("{msg} (e.g. ");
    for (i, e) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push_str(&format!("'{e}', "));
    }
    out.push_str(&format!("regex used for validation is '{fmt}')"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_paths_as_is_domain_prefixed_path_reads_them() {
        for ok in ["foo", "a/b", "job-controller", "x~%!$&'()*+,;=:._-"] {
            assert_eq!(http_path_error(ok), None, "{ok}");
        }
        for bad in ["", "a b", "a?b", "é"] {
            assert_eq!(
                http_path_error(bad).as_deref(),
                Some(
                    r"Invalid path (regex used for validation is '[A-Za-z0-9/\-._~%!$&'()*+,;=:]+')"
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn dns1123_labels_as_is_dns1123_label() {
        for ok in ["jobgate", "jobgate-system", "a", "0x", &"a".repeat(63)] {
            assert_eq!(is_dns1123_label(ok), Vec::<String>::new(), "{ok}");
        }
        for bad in ["", "-a", "a-", "Jobgate", "a_b"] {
            assert_eq!(
                is_dns1123_label(bad),
                vec![
                    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
                ],
                "{bad}"
            );
        }
        assert_eq!(is_dns1123_label("a.b"), vec!["must not contain dots"]);
        assert_eq!(
            is_dns1123_label(&"a".repeat(64)),
            vec!["must be no more than 63 characters"]
        );
    }

    #[test]
    fn dns1123_subdomains_as_is_dns1123_subdomain() {
        assert_eq!(is_dns1123_subdomain("example.com"), Vec::<String>::new());
        assert_eq!(is_dns1123_subdomain("Example.com").len(), 1);
        assert_eq!(is_dns1123_subdomain(&"a".repeat(254)).len(), 1);
    }
}
