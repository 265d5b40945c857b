//! mem-ast's tables: `ast_files` (one row per session and Python file: parsed, or why not),
//! `function_map` (the definitions of that snapshot, with their change against the file's
//! previous session) and `call_graph` (its calls). The cursor over the queue is in `meta`.

use rusqlite::{Connection, OptionalExtension, params};

use super::{json_list, parse_list};
use crate::Result;

const CURSOR: &str = "ast_queue_cursor";

/// One definition of a stored snapshot.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FunctionRow {
    pub qualname: String,
    pub name: String,
    pub kind: String,
    pub parent_class: Option<String>,
    pub signature: String,
    pub decorators: Vec<String>,
    pub docstring: Option<String>,
    pub line_start: u32,
    pub line_end: u32,
    pub body_hash: String,
    /// new, modified, deleted or unchanged against the file's previous session.
    pub change: String,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct EdgeRow {
    pub caller: String,
    pub callee: String,
    pub resolution: String,
    pub target: String,
    pub target_file: Option<String>,
    pub confidence: f64,
    pub line: u32,
}

/// A Write/Edit/MultiEdit tool call of the queue.
#[derive(Debug, Clone)]
pub struct Edit {
    pub queue_id: i64,
    pub session_id: String,
    pub project: Option<String>,
    pub status: String,
    pub payload: String,
}

/// The last queue id mem-ast's database mode has looked at.
pub fn cursor(conn: &Connection) -> Result<i64> {
    Ok(super::meta_get(conn, CURSOR)?
        .and_then(|v| v.parse().ok())
        .unwrap_or(0))
}

pub fn set_cursor(conn: &Connection, id: i64) -> Result<()> {
    super::meta_put(conn, CURSOR, &id.to_string())
}

/// The file-writing tool calls after queue id `after`, oldest first.
pub fn edits_since(conn: &Connection, after: i64) -> Result<Vec<Edit>> {
    let mut st = conn.prepare(
        "SELECT id, session_id, project, status, payload FROM pending_queue
         WHERE id > ?1 AND event = 'PostToolUse' AND tool_name IN ('Write', 'Edit', 'MultiEdit')
         ORDER BY id",
    )?;
    let rows = st.query_map([after], |r| {
        Ok(Edit {
            queue_id: r.get(0)?,
            session_id: r.get(1)?,
            project: r.get(2)?,
            status: r.get(3)?,
            payload: r.get(4)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The project directory a session worked in.
pub fn session_dir(conn: &Connection, session_id: &str) -> Result<Option<String>> {
    Ok(conn
        .query_row(
            "SELECT COALESCE(project_dir, cwd) FROM sessions WHERE session_id = ?1",
            [session_id],
            |r| r.get(0),
        )
        .optional()?
        .flatten())
}

/// The definitions of the newest snapshot of `file` parsed in another session than `session`.
pub fn previous(conn: &Connection, file: &str, session: &str) -> Result<Option<Vec<FunctionRow>>> {
    let prev: Option<String> = conn
        .query_row(
            "SELECT session_id FROM ast_files
             WHERE file_path = ?1 AND session_id != ?2 AND status = 'ok'
             ORDER BY created_at DESC LIMIT 1",
            params![file, session],
            |r| r.get(0),
        )
        .optional()?;
    let Some(prev) = prev else {
        return Ok(None);
    };
    Ok(Some(
        snapshot(conn, file, &prev)?
            .into_iter()
            .filter(|f| f.change != "deleted")
            .collect(),
    ))
}

/// The stored definitions of `file` in `session`, in source order.
pub fn snapshot(conn: &Connection, file: &str, session: &str) -> Result<Vec<FunctionRow>> {
    let mut st = conn.prepare(
        "SELECT qualname, name, kind, parent_class, signature, decorators, docstring, line_start,
                line_end, body_hash, change
         FROM function_map WHERE file_path = ?1 AND session_id = ?2 ORDER BY id",
    )?;
    let rows = st.query_map(params![file, session], function_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

fn function_row(r: &rusqlite::Row) -> rusqlite::Result<FunctionRow> {
    Ok(FunctionRow {
        qualname: r.get(0)?,
        name: r.get(1)?,
        kind: r.get(2)?,
        parent_class: r.get(3)?,
        signature: r.get(4)?,
        decorators: parse_list(r.get(5)?),
        docstring: r.get(6)?,
        line_start: r.get(7)?,
        line_end: r.get(8)?,
        body_hash: r.get(9)?,
        change: r.get(10)?,
    })
}

/// Where one file of one session stands.
pub struct FileState<'a> {
    pub session_id: &'a str,
    pub file_path: &'a str,
    pub project: Option<&'a str>,
    /// ok, parse_error or skipped.
    pub status: &'a str,
    pub reason: Option<&'a str>,
    pub now: &'a str,
}

/// Replaces the snapshot of (session, file): its state, definitions and calls, in one
/// transaction (DELETE + INSERT, so running again changes nothing).
pub fn replace(
    conn: &mut Connection,
    file: &FileState,
    functions: &[FunctionRow],
    edges: &[EdgeRow],
) -> Result<()> {
    let tx = conn.transaction()?;
    for table in ["ast_files", "function_map", "call_graph"] {
        tx.execute(
            &format!("DELETE FROM {table} WHERE session_id = ?1 AND file_path = ?2"),
            params![file.session_id, file.file_path],
        )?;
    }
    let hashes: Vec<String> = functions.iter().map(|f| f.body_hash.clone()).collect();
    tx.execute(
        "INSERT INTO ast_files (session_id, file_path, project, status, reason, body_hashes, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![
            file.session_id,
            file.file_path,
            file.project,
            file.status,
            file.reason,
            json_list(&hashes),
            file.now
        ],
    )?;
    {
        let mut st = tx.prepare(
            "INSERT INTO function_map (session_id, file_path, project, qualname, name, kind,
                 parent_class, signature, decorators, docstring, line_start, line_end, body_hash,
                 change, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
        )?;
        for f in functions {
            st.execute(params![
                file.session_id,
                file.file_path,
                file.project,
                f.qualname,
                f.name,
                f.kind,
                f.parent_class,
                f.signature,
                json_list(&f.decorators),
                f.docstring,
                f.line_start,
                f.line_end,
                f.body_hash,
                f.change,
                file.now
            ])?;
        }
        let mut st = tx.prepare(
            "INSERT INTO call_graph (session_id, file_path, caller, callee, resolution, target,
                 target_file, confidence, line)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        )?;
        for e in edges {
            st.execute(params![
                file.session_id,
                file.file_path,
                e.caller,
                e.callee,
                e.resolution,
                e.target,
                e.target_file,
                e.confidence,
                e.line
            ])?;
        }
    }
    tx.commit()?;
    Ok(())
}

/// The calls of a stored snapshot.
pub fn edges(conn: &Connection, file: &str, session: &str) -> Result<Vec<EdgeRow>> {
    let mut st = conn.prepare(
        "SELECT caller, callee, resolution, target, target_file, confidence, line
         FROM call_graph WHERE file_path = ?1 AND session_id = ?2 ORDER BY id",
    )?;
    let rows = st.query_map(params![file, session], |r| {
        Ok(EdgeRow {
            caller: r.get(0)?,
            callee: r.get(1)?,
            resolution: r.get(2)?,
            target: r.get(3)?,
            target_file: r.get(4)?,
            confidence: r.get(5)?,
            line: r.get(6)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The observations made from queue rows `queue_ids`, with their files_modified.
pub fn observations_of(conn: &Connection, queue_ids: &[i64]) -> Result<Vec<(i64, Vec<String>)>> {
    let mut st = conn.prepare(
        "SELECT DISTINCT o.id, o.files_modified FROM observation_sources s
         JOIN observations o ON o.id = s.observation_id WHERE s.queue_id = ?1",
    )?;
    let mut out: Vec<(i64, Vec<String>)> = Vec::new();
    for q in queue_ids {
        for row in st.query_map([q], |r| Ok((r.get(0)?, parse_list(r.get(1)?))))? {
            let row = row?;
            if !out.iter().any(|(id, _)| *id == row.0) {
                out.push(row);
            }
        }
    }
    Ok(out)
}

pub fn set_functions_changed(
    conn: &Connection,
    observation_id: i64,
    names: &[String],
) -> Result<()> {
    conn.execute(
        "UPDATE observations SET functions_changed = ?2 WHERE id = ?1",
        params![observation_id, json_list(names)],
    )?;
    Ok(())
}

/// A changed definition as the context block and reports show it.
#[derive(Debug, Clone)]
pub struct Changed {
    pub file_path: String,
    pub session_id: String,
    pub qualname: String,
    pub signature: String,
    pub change: String,
    pub created_at: String,
}

/// The new, modified and deleted definitions of `project`'s latest snapshots, newest first.
pub fn recent_changes(conn: &Connection, project: &str, limit: usize) -> Result<Vec<Changed>> {
    let mut st = conn.prepare(
        "SELECT file_path, session_id, qualname, signature, change, created_at FROM function_map
         WHERE project = ?1 AND change IN ('new', 'modified', 'deleted')
         ORDER BY created_at DESC, id LIMIT ?2",
    )?;
    let rows = st.query_map(params![project, limit as i64], changed_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

fn changed_row(r: &rusqlite::Row) -> rusqlite::Result<Changed> {
    Ok(Changed {
        file_path: r.get(0)?,
        session_id: r.get(1)?,
        qualname: r.get(2)?,
        signature: r.get(3)?,
        change: r.get(4)?,
        created_at: r.get(5)?,
    })
}

/// Every change stored for `file` (a path or its ending), oldest first.
pub fn history(conn: &Connection, file: &str) -> Result<Vec<Changed>> {
    let mut st = conn.prepare(
        "SELECT file_path, session_id, qualname, signature, change, created_at FROM function_map
         WHERE (file_path = ?1 OR file_path LIKE '%/' || ?1) AND change != 'unchanged'
         ORDER BY created_at, id",
    )?;
    let rows = st.query_map([file], changed_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// (session_id, file_path) of the latest snapshots, newest first: of `session` when given.
pub fn snapshots(
    conn: &Connection,
    session: Option<&str>,
    limit: usize,
) -> Result<Vec<(String, String)>> {
    let mut st = conn.prepare(
        "SELECT session_id, file_path FROM ast_files
         WHERE status = 'ok' AND (?1 IS NULL OR session_id = ?1)
         ORDER BY created_at DESC LIMIT ?2",
    )?;
    let rows = st.query_map(params![session, limit as i64], |r| {
        Ok((r.get(0)?, r.get(1)?))
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The sessions with at least one parsed snapshot: those a call graph can be drawn for.
pub fn mapped_sessions(conn: &Connection) -> Result<std::collections::HashSet<String>> {
    let mut st = conn.prepare("SELECT DISTINCT session_id FROM ast_files WHERE status = 'ok'")?;
    let rows = st.query_map([], |r| r.get(0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// An edge as call-graph healing sees it: the current snapshot's parser edges and the edges
/// observations added.
#[derive(Debug, Clone)]
pub struct GraphEdge {
    pub id: i64,
    pub caller: String,
    pub callee: String,
    pub target: String,
    pub source: String,
    pub confidence: f64,
    pub base_confidence: Option<f64>,
    pub confirmed_at: Option<String>,
}

/// The edges of `project`: those of each file's newest snapshot, and those added from
/// observations.
pub fn graph_edges(conn: &Connection, project: &str) -> Result<Vec<GraphEdge>> {
    let mut st = conn.prepare(
        "SELECT c.id, c.caller, c.callee, c.target, c.source, c.confidence, c.base_confidence,
                c.confirmed_at
         FROM call_graph c JOIN ast_files a ON a.session_id = c.session_id AND a.file_path = c.file_path
         WHERE c.source = 'ast' AND a.project = ?1
           AND a.created_at = (SELECT max(b.created_at) FROM ast_files b WHERE b.file_path = a.file_path)
         UNION ALL
         SELECT c.id, c.caller, c.callee, c.target, c.source, c.confidence, c.base_confidence,
                c.confirmed_at
         FROM call_graph c JOIN sessions s ON s.session_id = c.session_id
         WHERE c.source = 'observation' AND s.project = ?1",
    )?;
    let rows = st.query_map([project], |r| {
        Ok(GraphEdge {
            id: r.get(0)?,
            caller: r.get(1)?,
            callee: r.get(2)?,
            target: r.get(3)?,
            source: r.get(4)?,
            confidence: r.get(5)?,
            base_confidence: r.get(6)?,
            confirmed_at: r.get(7)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The file that defines `qualname` in `project`'s newest snapshot that has it (not deleted).
pub fn defining_file(conn: &Connection, project: &str, qualname: &str) -> Result<Option<String>> {
    Ok(conn
        .query_row(
            "SELECT file_path, change FROM function_map WHERE project = ?1 AND qualname = ?2
             ORDER BY created_at DESC, id DESC LIMIT 1",
            params![project, qualname],
            |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)),
        )
        .optional()?
        .filter(|(_, change)| change != "deleted")
        .map(|(f, _)| f))
}

/// Sets an edge's confidence as confirmed now (its base for decay too).
pub fn confirm_edge(conn: &Connection, id: i64, confidence: f64, now: &str) -> Result<()> {
    conn.execute(
        "UPDATE call_graph SET confidence = ?2, base_confidence = ?2,
             times_confirmed = times_confirmed + 1, confirmed_at = ?3 WHERE id = ?1",
        params![id, confidence, now],
    )?;
    Ok(())
}

/// Adds an edge an observation gave evidence of, in `session`'s snapshot of the caller's file.
pub fn add_observed_edge(
    conn: &Connection,
    session: &str,
    file: &str,
    caller: &str,
    callee: &str,
    confidence: f64,
    now: &str,
) -> Result<i64> {
    conn.execute(
        "INSERT INTO call_graph (session_id, file_path, caller, callee, resolution, target,
             confidence, line, source, times_confirmed, confirmed_at, base_confidence)
         VALUES (?1, ?2, ?3, ?4, 'unresolved', ?4, ?5, 0, 'observation', 1, ?6, ?5)",
        params![session, file, caller, callee, confidence, now],
    )?;
    Ok(conn.last_insert_rowid())
}

pub fn set_edge_confidence(conn: &Connection, id: i64, confidence: f64) -> Result<()> {
    conn.execute(
        "UPDATE call_graph SET confidence = ?2 WHERE id = ?1",
        params![id, confidence],
    )?;
    Ok(())
}

/// Sessions of `project` that started after `at`.
pub fn sessions_since(conn: &Connection, project: &str, at: &str) -> Result<i64> {
    Ok(conn.query_row(
        "SELECT count(*) FROM sessions WHERE project = ?1 AND started_at > ?2",
        params![project, at],
        |r| r.get(0),
    )?)
}
