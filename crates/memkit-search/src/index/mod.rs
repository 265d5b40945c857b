//! The search indexes kept beside the database (docs/ARCHITECTURE.md, "Storage"): a tantivy BM25 index
//! (`$MEM_HOME/index/bm25/`) and one scanned vector index ([`flat`]) per embedding model and
//! dimension (`$MEM_HOME/index/vectors-<model>-<dim>.vec`), plus `state.json` recording how far each
//! was brought up to date. The database is the source of truth: an index that is missing,
//! unreadable or without its state is rebuilt from it, never trusted.
//!
//! Indexed: observations (key `vector_key("observation", id)`) and session summaries (key
//! `vector_key("session", rowid)`); learnings once their table exists.

pub mod bm25;
pub mod flat;
pub mod report;
pub mod vectors;

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use rusqlite::Connection;
use serde::{Deserialize, Serialize};

use memkit_core::record::Observation;
use memkit_core::store::{observations, sessions, vector_key};
use memkit_core::{Error, Result};

/// What one indexable record holds, whatever its kind.
#[derive(Debug, Clone, Default)]
pub struct Doc {
    pub key: u64,
    /// `observation`, `session` or `learning`.
    pub source: &'static str,
    pub id: i64,
    pub project: Option<String>,
    /// Observation type, `session` or `learning`.
    pub kind: String,
    pub session_id: Option<String>,
    /// Creation time, milliseconds since the epoch (UTC).
    pub created_ms: i64,
    pub title: String,
    pub summary: String,
    pub detail: String,
    pub facts: Vec<String>,
    pub concepts: Vec<String>,
    /// As stored (filters compare them lowercase).
    pub tags: Vec<String>,
    pub files: Vec<String>,
    /// An imported note's own id.
    pub external_id: Option<String>,
    /// Who a memory taken from the sync remote came from (their `sync.name`).
    pub origin: Option<String>,
}

/// How far each index was brought up to date (`index/state.json`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct State {
    pub version: u32,
    /// `store::database_id` of the database indexed: a state of another database (or of none
    /// recorded) is not this database's, whatever its keys say.
    #[serde(default)]
    pub database_id: Option<String>,
    /// Largest `observations.updated_at` indexed into BM25.
    #[serde(default)]
    pub obs_updated_at: Option<String>,
    /// Session rowid → hash of the indexed summary text.
    #[serde(default)]
    pub sessions: BTreeMap<i64, String>,
    /// Documents in the BM25 index.
    #[serde(default)]
    pub docs: u64,
    /// Every distinct tag of the indexed records (lowercase), for fuzzy tag filters.
    #[serde(default)]
    pub tags: Vec<String>,
    /// One entry per vector index.
    #[serde(default)]
    pub vectors: Vec<VectorState>,
    #[serde(default)]
    pub updated_at: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct VectorState {
    pub model: String,
    pub dim: usize,
    /// `f32`, `f16` or `i8`.
    pub quantization: String,
    pub count: u64,
    /// Largest `embeddings.created_at` indexed.
    pub upto: Option<String>,
    /// File name under index/.
    pub file: String,
    /// The vectors added since `file` was written, in a file of their own beside it (its keys
    /// in a `.keys` sidecar, and the keys of `file` they replace or remove in `file`'s `.dead`
    /// sidecar): a run after one session writes this small file, not the whole index. Merged
    /// into `file` once it holds more than [`vectors::DELTA_SHARE`] of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta: Option<String>,
}

pub const STATE_VERSION: u32 = 1;

/// Why an index is not used when its state names another database.
pub const FOREIGN: &str = "index of another database";

/// Paths of the index directory.
#[derive(Debug, Clone)]
pub struct Layout {
    pub dir: PathBuf,
}

impl Layout {
    pub fn new(home: &Path) -> Layout {
        Layout {
            dir: memkit_core::Home::new(home).index(),
        }
    }
    pub fn bm25(&self) -> PathBuf {
        self.dir.join("bm25")
    }
    pub fn state(&self) -> PathBuf {
        self.dir.join("state.json")
    }
    /// `vectors-<model>-<dim>.vec`, the model name made file-safe.
    pub fn vector_file(model: &str, dim: usize) -> String {
        let safe: String = model
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        format!("vectors-{safe}-{dim}.vec")
    }

    /// Reads the state; `None` when missing or unreadable (then nothing is trusted).
    pub fn load_state(&self) -> Option<State> {
        let text = std::fs::read(self.state()).ok()?;
        let s: State = serde_json::from_slice(&text).ok()?;
        (s.version == STATE_VERSION).then_some(s)
    }

    /// The state when it belongs to the database `conn`; otherwise why not (the indexes are
    /// then another database's, or their state is missing or unreadable, and none is trusted).
    pub fn state_for(&self, conn: &Connection) -> Result<std::result::Result<State, String>> {
        let Some(s) = self.load_state() else {
            return Ok(Err("no index state".into()));
        };
        let id = memkit_core::store::database_id(conn)?;
        Ok(if id.is_some() && s.database_id == id {
            Ok(s)
        } else {
            Err(FOREIGN.into())
        })
    }

    pub fn save_state(&self, s: &State) -> Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let tmp = self.dir.join("state.json.tmp");
        std::fs::write(&tmp, serde_json::to_vec_pretty(s)?)?;
        std::fs::rename(&tmp, self.state())?;
        Ok(())
    }
}

/// Parses a stored timestamp into epoch milliseconds (0 when unparseable).
pub fn time_ms(ts: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(ts)
        .map(|t| t.timestamp_millis())
        .unwrap_or(0)
}

impl Doc {
    /// What BM25 indexes of the record ([`crate::text::searchable_text`]).
    pub fn search_text(&self) -> String {
        let mut body: Vec<&str> = vec![&self.summary, &self.detail];
        body.extend(self.facts.iter().map(String::as_str));
        let extras: Vec<&str> = self
            .concepts
            .iter()
            .chain(&self.tags)
            .chain(&self.files)
            .map(String::as_str)
            .collect();
        crate::text::searchable_text(&self.title, &body, &extras, false)
    }

    /// An observation as the indexes hold it (read and modified files as one list).
    pub fn of_observation(o: Observation) -> Doc {
        let id = o.id.unwrap_or(0);
        let mut files = o.files_read;
        for f in o.files_modified {
            if !files.contains(&f) {
                files.push(f);
            }
        }
        Doc {
            key: vector_key("observation", id),
            source: "observation",
            id,
            session_id: o.session_id,
            project: o.project,
            kind: o.kind,
            title: o.title,
            summary: o.summary,
            detail: o.detail.unwrap_or_default(),
            facts: o.facts,
            concepts: o.concepts,
            tags: o.tags,
            files,
            created_ms: time_ms(o.created_at.as_deref().unwrap_or("")),
            external_id: o.external_id,
            origin: o.origin,
        }
    }

    /// A session summary as the indexes hold it (untitled: its first line, cut to 80 chars).
    pub fn of_session(s: sessions::Summary) -> Doc {
        let title = s.title.unwrap_or_else(|| {
            s.summary
                .lines()
                .next()
                .unwrap_or("")
                .chars()
                .take(80)
                .collect()
        });
        Doc {
            key: vector_key("session", s.rowid),
            source: "session",
            id: s.rowid,
            session_id: Some(s.session_id),
            project: s.project,
            kind: "session".into(),
            title,
            summary: s.summary,
            detail: String::new(),
            facts: s.key_decisions,
            concepts: vec![],
            tags: vec![],
            files: s.key_files,
            created_ms: time_ms(&s.at),
            external_id: None,
            origin: s.origin,
        }
    }
}

impl Doc {
    /// A learning: its content is its title; its category and confidence its summary.
    pub fn of_learning(l: memkit_core::store::learnings::Learning) -> Doc {
        Doc {
            key: vector_key("learning", l.id),
            source: "learning",
            id: l.id,
            session_id: None,
            project: l.project,
            kind: "learning".into(),
            summary: format!(
                "{} (confidence {:.2}, seen {}×)",
                l.category, l.confidence, l.times_seen
            ),
            title: l.content,
            detail: String::new(),
            facts: vec![],
            concepts: vec![l.category],
            tags: vec![],
            files: vec![],
            created_ms: time_ms(&l.updated_at),
            external_id: None,
            origin: l.origin,
        }
    }
}

/// A stable hash of what a session contributes to the index.
pub fn session_hash(d: &Doc) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for part in [&d.title, &d.summary] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    for part in d.facts.iter().chain(d.files.iter()) {
        h.update(part.as_bytes());
        h.update([0]);
    }
    h.update(d.project.as_deref().unwrap_or("").as_bytes());
    hex::encode(&h.finalize()[..12])
}

/// Every session with a summary.
pub fn load_sessions(conn: &Connection) -> Result<Vec<Doc>> {
    Ok(sessions::summaries(conn)?
        .into_iter()
        .map(Doc::of_session)
        .collect())
}

/// Splits vector keys into observation ids and session rowids (other kinds are not indexed yet).
pub fn split_keys<'a>(keys: impl IntoIterator<Item = &'a u64>) -> (Vec<i64>, Vec<i64>) {
    let mut obs = Vec::new();
    let mut ses = Vec::new();
    for k in keys {
        match memkit_core::store::owner_of_key(*k) {
            ("observation", id) => obs.push(id),
            ("session", id) => ses.push(id),
            _ => {}
        }
    }
    (obs, ses)
}

/// The learning ids among `keys`.
pub fn learning_ids<'a>(keys: impl IntoIterator<Item = &'a u64>) -> Vec<i64> {
    keys.into_iter()
        .filter_map(|k| match memkit_core::store::owner_of_key(*k) {
            ("learning", id) => Some(id),
            _ => None,
        })
        .collect()
}

/// The records of `keys` (observations, sessions and active learnings), in no particular
/// order; keys whose record is gone are skipped.
pub fn load_docs(conn: &Connection, keys: &[u64]) -> Result<Vec<Doc>> {
    docs_of(conn, keys, false)
}

/// [`load_docs`] with each observation's detail, facts and concepts left empty (a search
/// reads them for the hits it shows only).
pub fn load_briefs(conn: &Connection, keys: &[u64]) -> Result<Vec<Doc>> {
    docs_of(conn, keys, true)
}

fn docs_of(conn: &Connection, keys: &[u64], brief: bool) -> Result<Vec<Doc>> {
    let (obs, ses) = split_keys(keys);
    let mut out = Vec::with_capacity(keys.len());
    out.extend(
        memkit_core::store::learnings::by_ids(conn, &learning_ids(keys))?
            .into_iter()
            .filter(|l| l.is_active)
            .map(Doc::of_learning),
    );
    let rows = if brief {
        observations::briefs_by_ids(conn, &obs)?
    } else {
        observations::by_ids(conn, &obs)?
    };
    out.extend(rows.into_iter().map(Doc::of_observation));
    out.extend(
        sessions::summaries_by_rowids(conn, &ses)?
            .into_iter()
            .map(Doc::of_session),
    );
    Ok(out)
}

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
    fn report(&self, stage: &str, done: u64, total: u64) {
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

/// Brings every index up to date with the database.
pub fn update(conn: &Connection, layout: &Layout, opts: &Options) -> Result<Vec<Report>> {
    std::fs::create_dir_all(&layout.dir)?;
    let (prev, why) = match layout.state_for(conn)? {
        _ if opts.rebuild => (None, None),
        Ok(s) => (Some(s), None),
        Err(why) => (None, Some(why)),
    };
    let mut state = prev.clone().unwrap_or(State {
        version: STATE_VERSION,
        database_id: memkit_core::store::database_id(conn)?,
        ..State::default()
    });
    let mut reports = Vec::new();
    let (rep, tags) = bm25::update(conn, layout, &mut state, prev.is_none(), opts)?;
    state.tags = tags;
    reports.push(rep);
    reports.extend(vectors::update(conn, layout, &mut state, opts)?);
    if why.as_deref() == Some(FOREIGN) {
        for r in reports.iter_mut().filter(|r| r.rebuilt) {
            r.reason = Some(FOREIGN.into());
        }
    }
    state.updated_at = Some(memkit_core::store::now());
    layout.save_state(&state)?;
    // Indexes made by an older memkit (or before the process umask was set) were 0755/0644.
    memkit_core::store::tighten(&layout.dir);
    Ok(reports)
}

/// Compares every index with the database.
pub fn check(conn: &Connection, layout: &Layout) -> Result<Vec<Check>> {
    let mut out = vec![bm25::check(conn, layout)?];
    out.extend(vectors::check(conn, layout)?);
    // Matching keys prove nothing when the index was built for another database.
    if let Err(why) = layout.state_for(conn)?
        && why == FOREIGN
    {
        for c in &mut out {
            c.error.get_or_insert_with(|| FOREIGN.into());
        }
    }
    Ok(out)
}

/// Every key that should be in the BM25 index.
pub fn expected_keys(conn: &Connection) -> Result<Vec<u64>> {
    let mut keys: Vec<u64> = observations::ids(conn)?
        .into_iter()
        .map(|id| vector_key("observation", id))
        .collect();
    keys.extend(
        sessions::summarized_rowids(conn)?
            .into_iter()
            .map(|id| vector_key("session", id)),
    );
    Ok(keys)
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
