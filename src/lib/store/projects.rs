//! `projects`: one row per project root, keyed by its full path.

use rusqlite::{Connection, params};

use crate::Result;

pub fn upsert(conn: &Connection, full_path: &str, name: &str, source: &str) -> Result<()> {
    let now = super::now();
    conn.execute(
        "INSERT INTO projects (full_path, name, source, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?4)
         ON CONFLICT(full_path) DO UPDATE SET updated_at = excluded.updated_at",
        params![full_path, name, source, now],
    )?;
    Ok(())
}
