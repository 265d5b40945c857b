//! `learnings`: project knowledge kept by mem-learn (the table exists once it has run).

use rusqlite::{Connection, OptionalExtension};

use crate::Result;

/// A learning as shown.
#[derive(Debug, Clone)]
pub struct Learning {
    pub category: Option<String>,
    pub content: String,
}

/// The `limit` learnings most worth showing: active and fairly
/// confident, manual first, then by confidence and how often seen. `None` when the table does
/// not exist yet (mem-learn has not run).
pub fn top(conn: &Connection, limit: usize) -> Result<Option<Vec<Learning>>> {
    let exists: Option<String> = conn
        .query_row(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'learnings'",
            [],
            |r| r.get(0),
        )
        .optional()?;
    if exists.is_none() {
        return Ok(None);
    }
    let mut st = conn.prepare(
        "SELECT category, content FROM learnings
         WHERE is_active = 1 AND confidence >= 0.5
         ORDER BY is_manual DESC, confidence DESC, times_seen DESC LIMIT ?1",
    )?;
    let rows = st.query_map([limit as i64], |r| {
        Ok(Learning {
            category: r.get(0)?,
            content: r.get(1)?,
        })
    })?;
    Ok(Some(rows.collect::<rusqlite::Result<_>>()?))
}
