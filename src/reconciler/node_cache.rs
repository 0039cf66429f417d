//! The node cache: name and taints of every node, and the rising edges of the unreachable
//! taint. Pure: watch events in, edges out.

use std::collections::HashMap;

use k8s_openapi::api::core::v1::Node;
use kube::runtime::watcher::Event;

use crate::recovery::{self, NodeFacts};

/// The node cache: name and taints of every node, and the rising edges of the unreachable
/// taint. During a (re)list the new contents are buffered and compared on `InitDone`, so a
/// node that became unreachable while the watch was down still fires once.
#[derive(Debug, Default)]
pub(crate) struct NodeCache {
    nodes: HashMap<String, NodeFacts>,
    relist: Option<HashMap<String, NodeFacts>>,
    synced: bool,
}

impl NodeCache {
    pub(crate) fn get(&self, name: &str) -> Option<&NodeFacts> {
        self.nodes.get(name)
    }

    /// True once the first full list was applied.
    pub(crate) fn synced(&self) -> bool {
        self.synced
    }

    /// Every node, for the partition brake's zones.
    pub(crate) fn nodes(&self) -> impl Iterator<Item = &NodeFacts> {
        self.nodes.values()
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Applies one event; returns the nodes that just became unreachable.
    pub(crate) fn apply(&mut self, event: Event<NodeFacts>) -> Vec<String> {
        match event {
            Event::Init => {
                self.relist = Some(HashMap::new());
                vec![]
            }
            Event::InitApply(n) => {
                if let Some(buffer) = self.relist.as_mut() {
                    buffer.insert(n.name.clone(), n);
                }
                vec![]
            }
            Event::InitDone => {
                let fresh = self.relist.take().unwrap_or_default();
                let mut edges: Vec<String> = fresh
                    .values()
                    .filter(|n| recovery::became_unreachable(self.nodes.get(&n.name), n))
                    .map(|n| n.name.clone())
                    .collect();
                edges.sort();
                self.nodes = fresh;
                self.synced = true;
                edges
            }
            Event::Apply(n) => {
                let edge = recovery::became_unreachable(self.nodes.get(&n.name), &n);
                let name = n.name.clone();
                self.nodes.insert(name.clone(), n);
                if edge { vec![name] } else { vec![] }
            }
            Event::Delete(n) => {
                self.nodes.remove(&n.name);
                vec![]
            }
        }
    }
}

/// A node watch event reduced to the node's name and taints.
pub(crate) fn node_event_facts(event: Event<Node>) -> Event<NodeFacts> {
    match event {
        Event::Init => Event::Init,
        Event::InitDone => Event::InitDone,
        Event::InitApply(n) => Event::InitApply(recovery::node_facts(&n)),
        Event::Apply(n) => Event::Apply(recovery::node_facts(&n)),
        Event::Delete(n) => Event::Delete(recovery::node_facts(&n)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(name: &str, unreachable: bool) -> NodeFacts {
        NodeFacts::for_test(name, unreachable)
    }

    #[test]
    fn node_cache_reports_rising_edges() {
        let mut cache = NodeCache::default();
        assert!(!cache.synced());
        assert!(cache.apply(Event::Init).is_empty());
        cache.apply(Event::InitApply(facts("a", false)));
        cache.apply(Event::InitApply(facts("b", true)));
        // Initial list: a node already unreachable is a rising edge (restart safety).
        assert_eq!(cache.apply(Event::InitDone), vec!["b".to_string()]);
        assert!(cache.synced());
        assert_eq!(
            cache.apply(Event::Apply(facts("a", true))),
            vec!["a".to_string()]
        );
        assert!(cache.apply(Event::Apply(facts("a", true))).is_empty());
        assert!(cache.apply(Event::Apply(facts("a", false))).is_empty());
        assert_eq!(
            cache.apply(Event::Apply(facts("c", true))),
            vec!["c".to_string()]
        );
        cache.apply(Event::Delete(facts("c", true)));
        assert!(cache.get("c").is_none());
        // Relist after a watch gap: "a" went unreachable meanwhile, "b" stays unreachable.
        cache.apply(Event::Init);
        cache.apply(Event::InitApply(facts("a", true)));
        cache.apply(Event::InitApply(facts("b", true)));
        assert_eq!(cache.apply(Event::InitDone), vec!["a".to_string()]);
        assert_eq!(cache.len(), 2);
    }
}
