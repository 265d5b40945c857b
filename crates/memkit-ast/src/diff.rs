//! Two snapshots of one file compared by qualified name.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::{Function, Kind, Snapshot};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    New,
    Modified,
    Deleted,
    Unchanged,
}

impl Change {
    pub fn as_str(self) -> &'static str {
        match self {
            Change::New => "new",
            Change::Modified => "modified",
            Change::Deleted => "deleted",
            Change::Unchanged => "unchanged",
        }
    }
}

/// One definition's fate between two snapshots.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionDiff {
    pub path: String,
    pub qualname: String,
    pub change: Change,
    pub kind: Kind,
    /// The newer signature (the old one for a deleted definition).
    pub signature: String,
    /// The old signature when it differs.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub old_signature: Option<String>,
    pub line_start: u32,
    pub line_end: u32,
    pub body_hash: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub old_body_hash: Option<String>,
}

/// The definitions a name ends up bound to: the last `def` of a name wins, as in Python.
fn last_wins(s: &Snapshot) -> (Vec<&str>, HashMap<&str, &Function>) {
    let mut order = Vec::new();
    let mut map = HashMap::new();
    for f in &s.functions {
        if map.insert(f.qualname.as_str(), f).is_none() {
            order.push(f.qualname.as_str());
        }
    }
    (order, map)
}

/// `old` None: the file is new, everything in it is new. Definitions come in the new file's
/// order, then the deleted ones in the old file's. A snapshot with a parse error has no
/// definitions to compare: the result is empty rather than "everything deleted".
pub fn diff(old: Option<&Snapshot>, new: &Snapshot) -> Vec<FunctionDiff> {
    if new.parse_error.is_some() || old.is_some_and(|o| o.parse_error.is_some()) {
        return Vec::new();
    }
    let (new_order, new_map) = last_wins(new);
    let (old_order, old_map) = old.map(last_wins).unwrap_or_default();
    let mut out = Vec::new();
    for q in new_order {
        let f = new_map[q];
        let (change, old_f) = match old_map.get(q) {
            None => (Change::New, None),
            Some(o) if o.body_hash == f.body_hash && o.signature == f.signature => {
                (Change::Unchanged, Some(*o))
            }
            Some(o) => (Change::Modified, Some(*o)),
        };
        out.push(FunctionDiff {
            path: new.path.clone(),
            qualname: q.to_string(),
            change,
            kind: f.kind,
            signature: f.signature.clone(),
            old_signature: old_f
                .filter(|o| o.signature != f.signature)
                .map(|o| o.signature.clone()),
            line_start: f.line_start,
            line_end: f.line_end,
            body_hash: f.body_hash.clone(),
            old_body_hash: old_f
                .filter(|o| o.body_hash != f.body_hash)
                .map(|o| o.body_hash.clone()),
        });
    }
    for q in old_order {
        if new_map.contains_key(q) {
            continue;
        }
        let o = old_map[q];
        out.push(FunctionDiff {
            path: new.path.clone(),
            qualname: q.to_string(),
            change: Change::Deleted,
            kind: o.kind,
            signature: o.signature.clone(),
            old_signature: None,
            line_start: o.line_start,
            line_end: o.line_end,
            body_hash: o.body_hash.clone(),
            old_body_hash: None,
        });
    }
    out
}
