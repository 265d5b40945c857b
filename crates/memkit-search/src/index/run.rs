//! What an index run is given and gives back, and how it plans its work: the same for BM25
//! and the vector indexes, below `index` so that neither takes from their parent.

use std::collections::HashSet;

use memkit_core::Error;

/// One row an index must (re)index.
#[derive(Debug, Clone)]
pub struct Change<T> {
    pub key: u64,
    pub row: T,
    /// Whether the index holds a copy already (an update rather than an addition).
    pub indexed: bool,
}

/// How an index catches up with a table, compared by change time (both indexes follow the
/// database this way: BM25 by `observations.updated_at`, the vector indexes by
/// `embeddings.created_at`).
#[derive(Debug, Clone)]
pub struct Plan<T> {
    /// Rows the index lacks, or that changed after `since`.
    pub todo: Vec<Change<T>>,
    /// Every key of the table (what the index may keep).
    pub keys: HashSet<u64>,
    /// The latest change time seen: the next run's `since`.
    pub upto: Option<String>,
}

/// Plans an index update from `rows` of (key, change time, row), `indexed` telling which
/// keys the index holds, and the change time it was last brought up to (`None`: never).
pub fn plan<T>(
    rows: impl IntoIterator<Item = (u64, String, T)>,
    indexed: impl Fn(u64) -> bool,
    since: Option<String>,
) -> Plan<T> {
    let since = since.filter(|s| !s.is_empty());
    let mut p = Plan {
        todo: Vec::new(),
        keys: HashSet::new(),
        upto: since.clone(),
    };
    let since = since.unwrap_or_default();
    for (key, at, row) in rows {
        p.keys.insert(key);
        let indexed = indexed(key);
        if !indexed || at > since {
            p.todo.push(Change { key, row, indexed });
        }
        if p.upto.as_ref().is_none_or(|m| &at > m) {
            p.upto = Some(at);
        }
    }
    p
}

/// What one index run did to one index.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// `bm25` or `vectors-<model>-<dim>`.
    pub name: String,
    pub docs: u64,
    pub added: u64,
    pub updated: u64,
    pub removed: u64,
    pub rebuilt: bool,
    /// Why it was rebuilt (asked, missing, unreadable…).
    pub reason: Option<String>,
}

/// What `--check` found in one index.
#[derive(Debug, Clone, Default)]
pub struct Check {
    pub name: String,
    pub expected: u64,
    pub indexed: u64,
    pub missing: Vec<u64>,
    pub extra: Vec<u64>,
    pub error: Option<String>,
}

impl Check {
    pub fn differs(&self) -> bool {
        !self.missing.is_empty() || !self.extra.is_empty() || self.error.is_some()
    }
}

/// Most indexing threads (tantivy's own limit); more only cost memory.
pub const MAX_THREADS: usize = 8;

/// Options of an index run.
#[derive(Debug, Clone)]
pub struct Options {
    pub rebuild: bool,
    /// How the vector index stores its vectors: `f32`, `f16` or `i8`.
    pub quantization: String,
    /// Writer heap for tantivy, bytes.
    pub heap: usize,
    pub threads: usize,
    /// Told how far a long stage got (mem-index draws it as a bar on a terminal).
    pub progress: Option<Progress>,
    /// Leave BM25's segments as written, never merged (for tests of indexes of several
    /// segments, which a small store otherwise never keeps).
    pub keep_segments: bool,
}

/// `(stage, done, total)`: the stage is the index's name (`bm25`, `vectors-<model>-<dim>`),
/// done and total in records.
#[derive(Clone)]
pub struct Progress(pub std::sync::Arc<ProgressFn>);

pub type ProgressFn = dyn Fn(&str, u64, u64) + Send + Sync;

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Progress")
    }
}

impl Options {
    pub(super) fn report(&self, stage: &str, done: u64, total: u64) {
        if let Some(p) = &self.progress {
            (p.0)(stage, done, total);
        }
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            rebuild: false,
            quantization: memkit_core::config::INDEX_QUANTIZATION.default.into(),
            heap: 96 << 20,
            threads: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
                .min(4),
            progress: None,
            keep_segments: false,
        }
    }
}

pub fn index_err(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Other(format!("{what}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_takes_what_the_index_lacks_or_what_changed_since_and_the_latest_time() {
        let rows = vec![
            (1, "2026-01-01".to_string(), 'a'),
            (2, "2026-01-03".to_string(), 'b'),
            (3, "2026-01-02".to_string(), 'c'),
        ];
        let p = plan(rows, |k| k != 3, Some("2026-01-02".into()));
        let todo: Vec<(u64, char, bool)> =
            p.todo.iter().map(|c| (c.key, c.row, c.indexed)).collect();
        assert_eq!(todo, vec![(2, 'b', true), (3, 'c', false)]);
        assert_eq!(p.keys, HashSet::from([1, 2, 3]));
        assert_eq!(p.upto.as_deref(), Some("2026-01-03"));
        // Never brought up to date: everything is to do; an empty table keeps no time.
        let p = plan(vec![(1, "t".to_string(), ())], |_| true, None);
        assert_eq!(p.todo.len(), 1);
        let p = plan(
            Vec::<(u64, String, ())>::new(),
            |_| true,
            Some(String::new()),
        );
        assert_eq!(p.upto, None);
    }
}
