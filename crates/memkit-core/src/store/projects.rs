//! `projects`: one row per project root, keyed by its full path.

use rusqlite::{Connection, params};

use crate::Result;

/// A project named on the command line (a directory, a stored root or a stored name) → its
/// root path(s); an unknown name is taken as a root as given.
pub fn resolve(conn: &Connection, p: &str) -> Result<Vec<String>> {
    let p = p.trim();
    let path = std::path::Path::new(p);
    if path.is_dir() {
        let abs = std::path::absolute(path)?;
        return Ok(vec![
            crate::project::identify(&abs.display().to_string()).root,
        ]);
    }
    let mut st =
        conn.prepare("SELECT full_path FROM projects WHERE full_path = ?1 OR name = ?1")?;
    let mut roots: Vec<String> = st
        .query_map([p], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    if roots.is_empty() {
        roots.push(p.trim_end_matches('/').to_string());
    }
    Ok(roots)
}

pub fn upsert(conn: &Connection, full_path: &str, name: &str, source: &str) -> Result<()> {
    let now = super::now();
    conn.execute(
        "INSERT INTO projects (full_path, name, source, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?4)
         ON CONFLICT(full_path) DO UPDATE SET updated_at = excluded.updated_at",
        params![full_path, name, source, now],
    )?;
    Ok(())
}

/// (root, name) of the project stored under `name` or root `name`, the most recently seen
/// first.
pub fn find(conn: &Connection, name: &str) -> Result<Option<(String, String)>> {
    use rusqlite::OptionalExtension;
    Ok(conn
        .query_row(
            "SELECT full_path, name FROM projects WHERE name = ?1 OR full_path = ?1 ORDER BY updated_at DESC LIMIT 1",
            [name],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?)
}
