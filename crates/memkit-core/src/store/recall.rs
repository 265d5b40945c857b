//! A file's history, as file recall (the PreToolUse hook) and mem-mcp's file_history read it:
//! the observations made from the edits of that file, and the functions mem-ast saw change
//! in it. Both read an index (`pending_edited_files`, `function_map_file`).

use rusqlite::{Connection, params};

use crate::Result;

/// An observation made from edits of one file.
#[derive(Debug, Clone)]
pub struct Change {
    pub id: i64,
    pub kind: String,
    pub title: String,
    pub session_id: Option<String>,
    /// The newest of its edits of the file.
    pub at: String,
    /// How many of its calls edited the file.
    pub edits: usize,
    pub is_manual: bool,
}

/// The observations of `project` (any, with `None`) made from edits of `file` (an absolute
/// path, as capture stores it), newest edit first, at most `limit`.
///
/// The edits are walked newest first down the file's index and stop once `limit` observations
/// are found: a file edited thousands of times is not grouped whole (at a million observations
/// that grouping was most of the PreToolUse hook). Only the observations kept then count their
/// edits of the file, each through its own sources.
pub fn file_changes(
    conn: &Connection,
    project: Option<&str>,
    file: &str,
    limit: usize,
) -> Result<Vec<Change>> {
    // The tool list is the partial index's own text, so SQLite can use the index.
    let tools = super::queue::edit_tools_sql();
    let mut st = conn.prepare_cached(&format!(
        "SELECT o.id, o.type, o.title, o.session_id, q.created_at, o.is_manual
           FROM pending_queue q
           JOIN observation_sources s ON s.queue_id = q.id
           JOIN observations o ON o.id = s.observation_id
          WHERE q.files = ?1 AND q.event = 'PostToolUse' AND q.tool_name IN ({tools})
            AND (?2 IS NULL OR o.project = ?2)
          ORDER BY q.created_at DESC, q.id DESC"
    ))?;
    let key = super::json_list(&[file.to_string()]);
    let rows = st.query_map(params![key, project], |r| {
        Ok(Change {
            id: r.get(0)?,
            kind: r.get(1)?,
            title: r.get(2)?,
            session_id: r.get(3)?,
            at: r.get(4)?,
            edits: 0,
            is_manual: r.get::<_, i64>(5)? != 0,
        })
    })?;
    let mut seen = std::collections::HashSet::new();
    let mut out: Vec<Change> = Vec::new();
    for row in rows {
        if out.len() >= limit {
            break;
        }
        let c = row?;
        if seen.insert(c.id) {
            out.push(c);
        }
    }
    // Equal newest edits: the newer observation first.
    out.sort_by(|a, b| b.at.cmp(&a.at).then(b.id.cmp(&a.id)));
    // CROSS JOIN keeps SQLite to this order: an observation's own few sources, then each
    // queue row by id. Left free, it walked every edit of the file for each observation.
    let mut count = conn.prepare_cached(&format!(
        "SELECT count(*) FROM observation_sources s CROSS JOIN pending_queue q ON q.id = s.queue_id
          WHERE s.observation_id = ?1 AND q.files = ?2 AND q.event = 'PostToolUse'
            AND q.tool_name IN ({tools})"
    ))?;
    for c in &mut out {
        c.edits = count.query_row(params![c.id, key], |r| r.get::<_, i64>(0))? as usize;
    }
    Ok(out)
}

/// A function mem-ast saw change in a file: its newest change.
#[derive(Debug, Clone)]
pub struct FunctionChange {
    pub qualname: String,
    pub change: String,
    pub at: String,
}

/// The functions of `file` that sessions of `project` added, modified or deleted, newest
/// first, at most `limit`.
pub fn file_functions(
    conn: &Connection,
    project: Option<&str>,
    file: &str,
    limit: usize,
) -> Result<Vec<FunctionChange>> {
    let mut st = conn.prepare_cached(
        "SELECT qualname, change, created_at FROM function_map
          WHERE file_path = ?1 AND (?2 IS NULL OR project = ?2)
            AND change IN ('new', 'modified', 'deleted')
          ORDER BY created_at DESC, id DESC",
    )?;
    let rows = st.query_map(params![file, project], |r| {
        Ok(FunctionChange {
            qualname: r.get(0)?,
            change: r.get(1)?,
            at: r.get(2)?,
        })
    })?;
    super::first_per_key(rows, |f| f.qualname.clone(), limit)
}
