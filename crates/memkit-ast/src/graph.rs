//! The call graph of a change, one model for every drawing of it (Mermaid, SVG): the changed
//! definitions (every one with `all`) in file order, and the calls among them; with `outside`,
//! the targets of their calls that are not among them too.

use std::collections::HashMap;

use crate::{Change, FunctionDiff, Resolution, Snapshot};

#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// The file it is defined in; empty for an outside target nobody resolved.
    pub path: String,
    pub qualname: String,
    pub signature: String,
    /// None for an outside target.
    pub change: Option<Change>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Edge {
    pub from: usize,
    pub to: usize,
    pub resolved: bool,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Graph {
    /// The definitions, grouped by file in the order files first appear, then outside targets.
    pub nodes: Vec<Node>,
    pub edges: Vec<Edge>,
}

impl Graph {
    /// The files of the definitions, in order, with the indices of their nodes.
    pub fn files(&self) -> Vec<(&str, Vec<usize>)> {
        let mut out: Vec<(&str, Vec<usize>)> = Vec::new();
        for (i, n) in self.nodes.iter().enumerate() {
            if n.change.is_none() {
                continue;
            }
            match out.iter_mut().find(|(p, _)| *p == n.path) {
                Some((_, v)) => v.push(i),
                None => out.push((&n.path, vec![i])),
            }
        }
        out
    }
}

/// `diffs` of the files in `snapshots` (the newer versions, whose calls are drawn).
pub fn build(diffs: &[FunctionDiff], snapshots: &[&Snapshot], all: bool, outside: bool) -> Graph {
    let mut g = Graph::default();
    let mut by_file: Vec<(&str, Vec<&FunctionDiff>)> = Vec::new();
    for d in diffs
        .iter()
        .filter(|d| all || d.change != Change::Unchanged)
    {
        match by_file.iter_mut().find(|(p, _)| *p == d.path) {
            Some((_, v)) => v.push(d),
            None => by_file.push((&d.path, vec![d])),
        }
    }
    let mut ids: HashMap<(String, String), usize> = HashMap::new();
    for d in by_file.into_iter().flat_map(|(_, v)| v) {
        ids.insert((d.path.clone(), d.qualname.clone()), g.nodes.len());
        g.nodes.push(Node {
            path: d.path.clone(),
            qualname: d.qualname.clone(),
            signature: d.signature.clone(),
            change: Some(d.change),
        });
    }
    let mut targets: HashMap<(String, String), usize> = HashMap::new();
    for s in snapshots {
        for c in &s.calls {
            let Some(&from) = ids.get(&(s.path.clone(), c.caller.clone())) else {
                continue;
            };
            let key = match (&c.target_file, c.resolution) {
                (Some(f), _) => (f.clone(), c.target.clone()),
                (None, Resolution::Direct | Resolution::SelfMethod) => {
                    (s.path.clone(), c.target.clone())
                }
                _ => (String::new(), c.target.clone()),
            };
            let to = match ids.get(&key) {
                Some(&id) => id,
                None if outside => *targets.entry(key).or_insert_with_key(|(path, target)| {
                    g.nodes.push(Node {
                        path: path.clone(),
                        qualname: target.clone(),
                        signature: String::new(),
                        change: None,
                    });
                    g.nodes.len() - 1
                }),
                None => continue,
            };
            let e = Edge {
                from,
                to,
                resolved: c.resolution != Resolution::Unresolved,
            };
            if !g.edges.contains(&e) {
                g.edges.push(e);
            }
        }
    }
    g
}
