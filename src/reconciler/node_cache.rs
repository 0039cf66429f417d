//! The node cache: name and taints of every node, and the rising edges of the unreachable
//! taint with the time they were delivered (the partition brake decides on a settled view).
//! Pure: watch events and their arrival time in, edges out.

use std::collections::HashMap;

use k8s_openapi::jiff::Timestamp;
use kube::runtime::watcher::Event;

use super::watched_node::WatchedNode;
use crate::recovery::brake::Edges;
use crate::recovery::{self, NodeFacts};

/// The node cache: name and taints of every node, and the rising edges of the unreachable
/// taint. During a (re)list the new contents are buffered and compared on `InitDone`, so a
/// node that became unreachable while the watch was down still fires once.
#[derive(Debug, Default)]
pub(crate) struct NodeCache {
    nodes: HashMap<String, NodeFacts>,
    relist: Option<HashMap<String, NodeFacts>>,
    /// When the rising edge of each node that is unreachable now was delivered.
    edges: HashMap<String, Timestamp>,
    /// The last rising edge delivered on a node the partition brake counts (not excluded).
    last_edge: Option<Timestamp>,
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

    /// When the last rising edge arrived, anywhere and on `node`.
    pub(crate) fn edges(&self, node: &str) -> Edges {
        Edges {
            last: self.last_edge,
            node: self.edges.get(node).copied(),
        }
    }

    /// Every node, for the partition brake's zones.
    pub(crate) fn nodes(&self) -> impl Iterator<Item = &NodeFacts> {
        self.nodes.values()
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Applies one event delivered at `now`; returns the nodes that just became unreachable.
    pub(crate) fn apply(&mut self, event: Event<NodeFacts>, now: Timestamp) -> Vec<String> {
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
                let rising: Vec<&NodeFacts> = fresh
                    .values()
                    .filter(|n| recovery::became_unreachable(self.nodes.get(&n.name), n))
                    .collect();
                for node in &rising {
                    self.edge(node, now);
                }
                let mut edges: Vec<String> = rising.iter().map(|n| n.name.clone()).collect();
                edges.sort();
                self.edges
                    .retain(|name, _| fresh.get(name).is_some_and(recovery::is_unreachable));
                self.nodes = fresh;
                self.synced = true;
                edges
            }
            Event::Apply(n) => {
                let edge = recovery::became_unreachable(self.nodes.get(&n.name), &n);
                if edge {
                    self.edge(&n, now);
                } else if !recovery::is_unreachable(&n) {
                    self.edges.remove(&n.name);
                }
                let name = n.name.clone();
                self.nodes.insert(name.clone(), n);
                if edge { vec![name] } else { vec![] }
            }
            Event::Delete(n) => {
                self.edges.remove(&n.name);
                self.nodes.remove(&n.name);
                vec![]
            }
        }
    }
}

impl NodeCache {
    fn edge(&mut self, node: &NodeFacts, now: Timestamp) {
        self.edges.insert(node.name.clone(), now);
        if !node.excluded_from_disruption {
            self.last_edge = Some(now);
        }
    }
}

/// A node watch event reduced to the node's name and taints.
pub(crate) fn node_event_facts(event: Event<WatchedNode>) -> Event<NodeFacts> {
    match event {
        Event::Init => Event::Init,
        Event::InitDone => Event::InitDone,
        Event::InitApply(n) => Event::InitApply(n.facts()),
        Event::Apply(n) => Event::Apply(n.facts()),
        Event::Delete(n) => Event::Delete(n.facts()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(name: &str, unreachable: bool) -> NodeFacts {
        NodeFacts::for_test(name, unreachable)
    }

    fn at(second: i64) -> Timestamp {
        Timestamp::from_second(1_795_000_000 + second).expect("timestamp")
    }

    #[test]
    fn node_cache_reports_rising_edges() {
        let mut cache = NodeCache::default();
        assert!(!cache.synced());
        assert!(cache.apply(Event::Init, at(0)).is_empty());
        cache.apply(Event::InitApply(facts("a", false)), at(0));
        cache.apply(Event::InitApply(facts("b", true)), at(0));
        // Initial list: a node already unreachable is a rising edge (restart safety).
        assert_eq!(cache.apply(Event::InitDone, at(0)), vec!["b".to_string()]);
        assert!(cache.synced());
        assert_eq!(
            cache.apply(Event::Apply(facts("a", true)), at(1)),
            vec!["a".to_string()]
        );
        assert!(
            cache
                .apply(Event::Apply(facts("a", true)), at(2))
                .is_empty()
        );
        assert!(
            cache
                .apply(Event::Apply(facts("a", false)), at(3))
                .is_empty()
        );
        assert_eq!(
            cache.apply(Event::Apply(facts("c", true)), at(4)),
            vec!["c".to_string()]
        );
        cache.apply(Event::Delete(facts("c", true)), at(5));
        assert!(cache.get("c").is_none());
        // Relist after a watch gap: "a" went unreachable meanwhile, "b" stays unreachable.
        cache.apply(Event::Init, at(6));
        cache.apply(Event::InitApply(facts("a", true)), at(6));
        cache.apply(Event::InitApply(facts("b", true)), at(6));
        assert_eq!(cache.apply(Event::InitDone, at(7)), vec!["a".to_string()]);
        assert_eq!(cache.len(), 2);
    }

    /// The times the brake's settled view is judged by: each unreachable node's rising edge as
    /// delivered (kept while it stays unreachable, forgotten when it heals or goes), and the
    /// last edge on any node the brake counts.
    #[test]
    fn node_cache_remembers_when_each_edge_arrived() {
        let mut cache = NodeCache::default();
        cache.apply(Event::Init, at(0));
        cache.apply(Event::InitApply(facts("a", false)), at(0));
        cache.apply(Event::InitApply(facts("b", true)), at(0));
        cache.apply(Event::InitDone, at(0));
        let edges = |cache: &NodeCache, node| cache.edges(node);
        assert_eq!(
            edges(&cache, "b"),
            Edges {
                last: Some(at(0)),
                node: Some(at(0))
            }
        );
        assert_eq!(edges(&cache, "a").node, None);
        cache.apply(Event::Apply(facts("a", true)), at(3));
        // An update of a node that stays unreachable keeps its edge.
        cache.apply(Event::Apply(facts("b", true)), at(4));
        assert_eq!(edges(&cache, "b").node, Some(at(0)));
        assert_eq!(
            edges(&cache, "a"),
            Edges {
                last: Some(at(3)),
                node: Some(at(3))
            }
        );
        // Healed: its edge is forgotten (a new one counts from its next taint); the last edge
        // anywhere stays.
        cache.apply(Event::Apply(facts("a", false)), at(5));
        assert_eq!(edges(&cache, "a").node, None);
        assert_eq!(edges(&cache, "a").last, Some(at(3)));
        // A node left out of the brake's zones does not unsettle the view.
        let excluded = NodeFacts {
            excluded_from_disruption: true,
            ..facts("x", true)
        };
        cache.apply(Event::Apply(excluded), at(9));
        assert_eq!(edges(&cache, "x").node, Some(at(9)));
        assert_eq!(edges(&cache, "x").last, Some(at(3)));
        // A relist keeps the edges of nodes still unreachable, adds the new ones.
        cache.apply(Event::Init, at(10));
        cache.apply(Event::InitApply(facts("a", true)), at(10));
        cache.apply(Event::InitApply(facts("b", true)), at(10));
        cache.apply(Event::InitDone, at(11));
        assert_eq!(edges(&cache, "b").node, Some(at(0)));
        assert_eq!(
            edges(&cache, "a"),
            Edges {
                last: Some(at(11)),
                node: Some(at(11))
            }
        );
        assert_eq!(edges(&cache, "x").node, None, "gone from the list");
    }
}
