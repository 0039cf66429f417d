//! The node cache: name and taints of every node, the rising edges of the unreachable taint with
//! the time they were delivered, and when the node set last changed its mind about a counted
//! node, either way (the partition brake decides on a settled view). Pure: watch events and
//! their arrival time in, edges out.

use std::time::Duration;

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
    /// The last change delivered on a node the partition brake counts (not excluded): a rising
    /// edge, a falling one (the taint lifted) or an unreachable node deleted.
    last_change: Option<Timestamp>,
    /// When the current run of changes began: the first change after a quiet settle period.
    run_began: Option<Timestamp>,
    /// `--partition-settle-period`: changes closer together than this are one run.
    settle: Duration,
    synced: bool,
}

impl NodeCache {
    /// An empty cache whose runs of changes are `settle` apart.
    pub(crate) fn new(settle: Duration) -> Self {
        NodeCache {
            settle,
            ..NodeCache::default()
        }
    }

    /// Runs of changes are `settle` apart from now on.
    pub(crate) fn set_settle(&mut self, settle: Duration) {
        self.settle = settle;
    }

    pub(crate) fn get(&self, name: &str) -> Option<&NodeFacts> {
        self.nodes.get(name)
    }

    /// True once the first full list was applied.
    pub(crate) fn synced(&self) -> bool {
        self.synced
    }

    /// When the last change arrived and its run began, anywhere, and when `node`'s rising edge
    /// did.
    pub(crate) fn edges(&self, node: &str) -> Edges {
        Edges {
            last: self.last_change,
            run: self.run_began,
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
            Event::InitDone => self.relisted(now),
            Event::Apply(n) => self.applied(n, now),
            Event::Delete(n) => {
                self.edges.remove(&n.name);
                if let Some(old) = self.nodes.remove(&n.name)
                    && recovery::is_unreachable(&old)
                    && !old.excluded_from_disruption
                {
                    self.change(now);
                }
                vec![]
            }
        }
    }
}

impl NodeCache {
    /// The relist is complete: it replaces the cache, and what changed while the watch was down
    /// counts as delivered `now`.
    fn relisted(&mut self, now: Timestamp) -> Vec<String> {
        let fresh = self.relist.take().unwrap_or_default();
        let fell = self.nodes.values().any(|old| {
            recovery::is_unreachable(old)
                && !old.excluded_from_disruption
                && !fresh.get(&old.name).is_some_and(recovery::is_unreachable)
        });
        if fell {
            self.change(now);
        }
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

    /// One node added or updated.
    fn applied(&mut self, n: NodeFacts, now: Timestamp) -> Vec<String> {
        let old = self.nodes.get(&n.name);
        let edge = recovery::became_unreachable(old, &n);
        let fell = old.is_some_and(recovery::is_unreachable) && !recovery::is_unreachable(&n);
        if edge {
            self.edge(&n, now);
        } else if !recovery::is_unreachable(&n) {
            self.edges.remove(&n.name);
        }
        if fell && !n.excluded_from_disruption {
            self.change(now);
        }
        let name = n.name.clone();
        self.nodes.insert(name.clone(), n);
        if edge { vec![name] } else { vec![] }
    }

    fn edge(&mut self, node: &NodeFacts, now: Timestamp) {
        self.edges.insert(node.name.clone(), now);
        if !node.excluded_from_disruption {
            self.change(now);
        }
    }

    fn change(&mut self, now: Timestamp) {
        let quiet = self
            .last_change
            .is_none_or(|last| now.duration_since(last).unsigned_abs() > self.settle);
        if quiet {
            self.run_began = Some(now);
        }
        self.last_change = Some(now);
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
                run: Some(at(0)),
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
                run: Some(at(3)),
                node: Some(at(3))
            }
        );
        // Healed: its edge is forgotten (a new one counts from its next taint); the heal is a
        // change of the zones, the last one anywhere.
        cache.apply(Event::Apply(facts("a", false)), at(5));
        assert_eq!(edges(&cache, "a").node, None);
        assert_eq!(edges(&cache, "a").last, Some(at(5)));
        // A node left out of the brake's zones does not unsettle the view.
        let excluded = NodeFacts {
            excluded_from_disruption: true,
            ..facts("x", true)
        };
        cache.apply(Event::Apply(excluded), at(9));
        assert_eq!(edges(&cache, "x").node, Some(at(9)));
        assert_eq!(edges(&cache, "x").last, Some(at(5)));
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
                run: Some(at(11)),
                node: Some(at(11))
            }
        );
        assert_eq!(edges(&cache, "x").node, None, "gone from the list");
    }

    /// Changes closer together than the settle period are one run, whichever way they go: a
    /// taint lifted, a taint added, an unreachable node deleted. An excluded node's do not count.
    #[test]
    fn node_cache_groups_changes_into_runs_both_ways() {
        let mut cache = NodeCache::new(Duration::from_secs(10));
        cache.apply(Event::Init, at(0));
        for name in ["a", "b", "c"] {
            cache.apply(Event::InitApply(facts(name, true)), at(0));
        }
        cache.apply(Event::InitApply(facts("d", false)), at(0));
        cache.apply(Event::InitDone, at(0));
        let run = |cache: &NodeCache| (cache.edges("d").run, cache.edges("d").last);
        assert_eq!(run(&cache), (Some(at(0)), Some(at(0))));
        // Quiet for more than 10 s, then a heal: a new run.
        cache.apply(Event::Apply(facts("a", false)), at(100));
        assert_eq!(run(&cache), (Some(at(100)), Some(at(100))));
        // Within 10 s: the same run, whichever the change.
        cache.apply(Event::Delete(facts("b", true)), at(105));
        cache.apply(Event::Apply(facts("d", true)), at(112));
        assert_eq!(run(&cache), (Some(at(100)), Some(at(112))));
        // Updates that change nothing, and an excluded node's heal, are no change.
        cache.apply(Event::Apply(facts("c", true)), at(130));
        let excluded = NodeFacts {
            excluded_from_disruption: true,
            ..facts("x", true)
        };
        cache.apply(Event::Apply(excluded.clone()), at(131));
        cache.apply(
            Event::Apply(NodeFacts {
                taints: vec![],
                ..excluded
            }),
            at(132),
        );
        assert_eq!(run(&cache), (Some(at(100)), Some(at(112))));
        // A relist that finds an unreachable node reachable is a heal delivered late.
        cache.apply(Event::Init, at(200));
        for (name, unreachable) in [("c", false), ("d", true)] {
            cache.apply(Event::InitApply(facts(name, unreachable)), at(200));
        }
        cache.apply(Event::InitDone, at(201));
        assert_eq!(run(&cache), (Some(at(201)), Some(at(201))));
    }
}
