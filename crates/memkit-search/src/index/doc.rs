//! A record as the indexes hold it, and its reading from the database: what BM25 and the
//! vector indexes both read, below `index` so that neither takes from their parent.

use rusqlite::Connection;

use memkit_core::Result;
use memkit_core::record::Observation;
use memkit_core::store::{observations, sessions, vector_key};

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
