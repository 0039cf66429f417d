//! One Job a controller builds from a template, and the pruning of the fields a Job of the
//! cluster's release does not have.

use serde_json::Value;

use crate::job::Kind;
use crate::job::version::KubernetesVersion;
use crate::schema;

/// One Job template of an object, and the Job its controller creates from it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ControllerJob {
    /// Where the template is in the object, as `field.Path` prints it
    /// (`spec.replicatedJobs[0].template`).
    pub template: String,
    /// How many Jobs the controller creates from the template (a replicated job's
    /// `replicas`); `job` is the first of them (index 0).
    pub replicas: u32,
    /// The Job as the controller sends it to kube-apiserver.
    pub job: Value,
}

/// Removes from a Job template (`{metadata, spec}`) the fields a Job of `release` does not have.
pub(super) fn prune_unknown_fields(template: &mut Value, release: KubernetesVersion) {
    let unknown = schema::unknown_fields(Kind::Job, template, release);
    for field in unknown {
        remove(template, &field.0);
    }
    if let Value::Object(t) = template {
        t.retain(|k, _| matches!(k.as_str(), "metadata" | "spec"));
    }
}

fn remove(value: &mut Value, path: &[schema::Step]) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut at = value;
    for step in parents {
        at = match (step, at) {
            (schema::Step::Key(k), Value::Object(m)) => match m.get_mut(k) {
                Some(v) => v,
                None => return,
            },
            (schema::Step::Index(i), Value::Array(a)) => match a.get_mut(*i) {
                Some(v) => v,
                None => return,
            },
            _ => return,
        };
    }
    if let (schema::Step::Key(k), Value::Object(m)) = (last, at) {
        m.remove(k);
    }
}
