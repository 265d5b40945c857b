//! What mem-index prints of a run or a check: one `index` record per index, and a run's
//! summary counts.

use std::collections::BTreeMap;

use memkit_core::record::IndexReport;
use memkit_core::{ids, store};

use super::run::{Check, Report};

/// Differing records a check's record names at most.
const SAMPLE: usize = 20;

impl Report {
    /// The run's record of this index.
    pub fn record(&self) -> IndexReport {
        IndexReport {
            index: self.name.clone(),
            docs: self.docs,
            added: self.added,
            updated: self.updated,
            removed: self.removed,
            rebuilt: self.rebuilt,
            reason: self.reason.clone(),
            ..IndexReport::default()
        }
    }
}

impl Check {
    /// The check's record of this index: the counts, and the first differing records by id
    /// (`missing o12`, `extra s3`).
    pub fn record(&self) -> IndexReport {
        IndexReport {
            index: self.name.clone(),
            docs: self.expected,
            missing: Some(self.missing.len() as u64),
            extra: Some(self.extra.len() as u64),
            sample: self
                .missing
                .iter()
                .map(|k| ("missing", k))
                .chain(self.extra.iter().map(|k| ("extra", k)))
                .take(SAMPLE)
                .map(|(what, k)| {
                    let id = match store::owner_of_key(*k) {
                        ("session", n) => ids::session(n),
                        ("learning", n) => ids::learning(n),
                        (_, n) => ids::obs(n),
                    };
                    format!("{what} {id}")
                })
                .collect(),
            error: self.error.clone(),
            ..IndexReport::default()
        }
    }
}

/// A run's summary counts: indexes, added, updated, removed and rebuilt, over every index.
pub fn counts(reports: &[Report]) -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    for r in reports {
        *counts.entry("indexes".to_string()).or_default() += 1;
        *counts.entry("added".to_string()).or_default() += r.added;
        *counts.entry("updated".to_string()).or_default() += r.updated;
        *counts.entry("removed".to_string()).or_default() += r.removed;
        *counts.entry("rebuilt".to_string()).or_default() += r.rebuilt as u64;
    }
    counts
}
