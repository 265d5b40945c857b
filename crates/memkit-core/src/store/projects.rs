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

/// Every stored project root.
pub fn roots(conn: &Connection) -> Result<Vec<String>> {
    let mut st = conn.prepare("SELECT full_path FROM projects")?;
    let rows = st.query_map([], |r| r.get(0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Whether project `root` is stored without a description.
pub fn description_missing(conn: &Connection, root: &str) -> Result<bool> {
    Ok(conn.query_row(
        "SELECT count(*) FROM projects WHERE full_path = ?1 AND coalesce(description, '') = ''",
        [root],
        |r| r.get::<_, i64>(0),
    )? > 0)
}

pub fn set_description(conn: &Connection, root: &str, description: &str) -> Result<()> {
    conn.execute(
        "UPDATE projects SET description = ?2, updated_at = ?3 WHERE full_path = ?1",
        params![root, description, super::now()],
    )?;
    Ok(())
}

/// Moves session `sid` from project `from` to `to` (discovered from its work) with what is
/// keyed by its project: its captures, observations (their `updated_at` bumped so the index
/// re-reads them), function map, and the learnings drawn from it alone. The session keeps its
/// cwd; `from` is dropped when nothing refers to it any more. Run it in a write transaction.
pub fn rescope(conn: &Connection, sid: &str, from: Option<&str>, to: &str) -> Result<()> {
    let now = super::now();
    conn.execute(
        "INSERT INTO projects (full_path, name, source, created_at, updated_at) VALUES (?1, ?2, 'discovered', ?3, ?3)
         ON CONFLICT(full_path) DO UPDATE SET updated_at = excluded.updated_at",
        params![to, crate::project::name_of(to), now],
    )?;
    conn.execute(
        "UPDATE sessions SET project = ?2, project_dir = ?2 WHERE session_id = ?1",
        params![sid, to],
    )?;
    conn.execute(
        "UPDATE pending_queue SET project = ?2 WHERE session_id = ?1",
        params![sid, to],
    )?;
    conn.execute(
        "UPDATE observations SET project = ?2, updated_at = ?3
         WHERE session_id = ?1 AND project IS NOT ?2",
        params![sid, to, now],
    )?;
    for table in ["ast_files", "function_map"] {
        conn.execute(
            &format!("UPDATE {table} SET project = ?2 WHERE session_id = ?1"),
            params![sid, to],
        )?;
    }
    conn.execute(
        "UPDATE learnings SET project = ?3, updated_at = ?4
         WHERE project IS ?2 AND is_manual = 0 AND source_sessions = json_array(?1)",
        params![sid, from, to, now],
    )?;
    if let Some(from) = from {
        conn.execute(
            "DELETE FROM projects WHERE full_path = ?1
             AND NOT EXISTS (SELECT 1 FROM sessions WHERE project = ?1)
             AND NOT EXISTS (SELECT 1 FROM observations WHERE project = ?1)
             AND NOT EXISTS (SELECT 1 FROM learnings WHERE project = ?1)
             AND NOT EXISTS (SELECT 1 FROM pending_queue WHERE project = ?1)",
            [from],
        )?;
    }
    super::events::log(
        conn,
        Some(sid),
        "project_discovered",
        None,
        "info",
        Some(&serde_json::json!({"from": from, "to": to})),
    )?;
    Ok(())
}

/// Moves the captures of session `sid` still stored under `from` (its cwd's project) to `to`,
/// the project its work was discovered in.
pub fn follow_session(conn: &Connection, sid: &str, from: &str, to: &str) -> Result<()> {
    conn.execute(
        "UPDATE pending_queue SET project = ?3 WHERE session_id = ?1 AND project = ?2",
        params![sid, from, to],
    )?;
    Ok(())
}
