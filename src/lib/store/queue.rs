//! `pending_queue`: every capture waits here until compression turns it into observations.

use rusqlite::{Connection, OptionalExtension, params};

use crate::Result;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Priority {
    High,
    Normal,
    Low,
}

impl Priority {
    pub fn as_str(self) -> &'static str {
        match self {
            Priority::High => "high",
            Priority::Normal => "normal",
            Priority::Low => "low",
        }
    }
}

/// One row to queue. `dedup_key` makes re-imports idempotent: a second insert with the same key
/// is ignored.
#[derive(Debug, Clone)]
pub struct NewCapture {
    pub session_id: String,
    pub project: Option<String>,
    pub event: String,
    pub tool_name: Option<String>,
    pub tool_use_id: Option<String>,
    pub agent_id: Option<String>,
    pub payload: String,
    pub files: Vec<String>,
    pub priority: Priority,
    pub origin: &'static str,
    pub dedup_key: Option<String>,
    pub created_at: String,
}

/// Inserts the capture; returns its id, or None when its dedup key was already stored.
pub fn insert(conn: &Connection, c: &NewCapture) -> Result<Option<i64>> {
    let n = conn.execute(
        "INSERT OR IGNORE INTO pending_queue
           (session_id, project, event, tool_name, tool_use_id, agent_id, payload, files, priority,
            origin, dedup_key, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
        params![
            c.session_id,
            c.project,
            c.event,
            c.tool_name,
            c.tool_use_id,
            c.agent_id,
            c.payload,
            serde_json::to_string(&c.files)?,
            c.priority.as_str(),
            c.origin,
            c.dedup_key,
            c.created_at,
        ],
    )?;
    Ok((n == 1).then(|| conn.last_insert_rowid()))
}

/// Captures of a session not yet compressed (raw or being processed).
pub fn pending_count(conn: &Connection, session_id: &str) -> Result<i64> {
    Ok(conn.query_row(
        "SELECT count(*) FROM pending_queue WHERE session_id = ?1 AND status IN ('raw','processing')",
        [session_id],
        |r| r.get(0),
    )?)
}

/// Whether a row with this dedup key exists (used to report re-import skips).
pub fn has_key(conn: &Connection, key: &str) -> Result<bool> {
    Ok(conn
        .query_row(
            "SELECT 1 FROM pending_queue WHERE dedup_key = ?1",
            [key],
            |_| Ok(()),
        )
        .optional()?
        .is_some())
}
