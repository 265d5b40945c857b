//! `sessions`: one row per Claude Code session, created by whichever event arrives first.

use rusqlite::{Connection, OptionalExtension, params};

use crate::Result;

/// What an event knows about its session; `None` fields leave the stored value alone.
#[derive(Debug, Clone, Default)]
pub struct SessionInfo {
    pub session_id: String,
    pub project: Option<String>,
    pub project_dir: Option<String>,
    pub cwd: Option<String>,
    pub branch: Option<String>,
    pub transcript_path: Option<String>,
    pub source: Option<String>,
    pub model: Option<String>,
    /// Time of the event: widens started_at/last_activity_at.
    pub at: String,
    pub imported: bool,
}

/// The session id an id given by a user names: `s17` (a session's row number, as printed) or a
/// session id as stored (returned as given when no row has that number).
pub fn id_of(conn: &Connection, given: &str) -> Result<String> {
    let given = given.trim();
    if let Some(crate::ids::Id::Session(n)) = crate::ids::parse(given)
        && let Some(id) = id_at(conn, n)?
    {
        return Ok(id);
    }
    Ok(given.to_string())
}

/// The session id of the session with row number `rowid` (what `s17` names).
pub fn id_at(conn: &Connection, rowid: i64) -> Result<Option<String>> {
    Ok(conn
        .query_row(
            "SELECT session_id FROM sessions WHERE rowid = ?1",
            [rowid],
            |r| r.get(0),
        )
        .optional()?)
}

/// Creates the session or fills in what it lacks; idempotent. started_at keeps the earliest
/// time seen and last_activity_at the latest. A SessionStart on an ended session reopens it
/// (a resume).
pub fn upsert(conn: &Connection, s: &SessionInfo, reopen: bool) -> Result<()> {
    conn.execute(
        "INSERT INTO sessions (session_id, project, project_dir, cwd, branch, transcript_path, source,
                               model, started_at, last_activity_at, imported)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9, ?10)
         ON CONFLICT(session_id) DO UPDATE SET
            project = coalesce(sessions.project, excluded.project),
            project_dir = coalesce(sessions.project_dir, excluded.project_dir),
            cwd = coalesce(excluded.cwd, sessions.cwd),
            branch = coalesce(excluded.branch, sessions.branch),
            transcript_path = coalesce(sessions.transcript_path, excluded.transcript_path),
            source = coalesce(excluded.source, sessions.source),
            model = coalesce(excluded.model, sessions.model),
            started_at = min(coalesce(sessions.started_at, excluded.started_at), excluded.started_at),
            last_activity_at = max(coalesce(sessions.last_activity_at, excluded.last_activity_at), excluded.last_activity_at),
            status = CASE WHEN ?11 THEN 'active' ELSE sessions.status END,
            ended_at = CASE WHEN ?11 THEN NULL ELSE sessions.ended_at END",
        params![
            s.session_id,
            s.project,
            s.project_dir,
            s.cwd,
            s.branch,
            s.transcript_path,
            s.source,
            s.model,
            s.at,
            s.imported as i64,
            reopen,
        ],
    )?;
    Ok(())
}

pub fn record_stop(
    conn: &Connection,
    id: &str,
    last_message: Option<&str>,
    at: &str,
) -> Result<()> {
    conn.execute(
        "UPDATE sessions SET last_assistant_message = coalesce(?2, last_assistant_message),
                last_activity_at = max(coalesce(last_activity_at, ?3), ?3)
         WHERE session_id = ?1",
        params![id, last_message, at],
    )?;
    Ok(())
}

pub fn end(conn: &Connection, id: &str, reason: Option<&str>, at: &str) -> Result<()> {
    conn.execute(
        "UPDATE sessions SET status = 'ended', ended_at = ?3, end_reason = ?2,
                last_activity_at = max(coalesce(last_activity_at, ?3), ?3)
         WHERE session_id = ?1",
        params![id, reason, at],
    )?;
    Ok(())
}

/// Titles a session that has no title yet; whether it did.
pub fn set_title(conn: &Connection, id: &str, title: &str) -> Result<bool> {
    let n = conn.execute(
        "UPDATE sessions SET title = ?2 WHERE session_id = ?1 AND title IS NULL",
        params![id, title],
    )?;
    Ok(n == 1)
}

/// A session's summary as the indexes and embeddings read it.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    pub rowid: i64,
    pub session_id: String,
    pub project: Option<String>,
    pub title: Option<String>,
    pub summary: String,
    pub key_files: Vec<String>,
    pub key_decisions: Vec<String>,
    /// When it ended, else its last activity, else its start ('' when none is known).
    pub at: String,
    /// Who a session taken from the sync remote came from (their `sync.name`).
    pub origin: Option<String>,
}

const SUMMARY_COLS: &str = "rowid, session_id, project, title, summary, key_files, key_decisions,
    coalesce(ended_at, last_activity_at, started_at, ''), origin";

fn summary_row(r: &rusqlite::Row) -> rusqlite::Result<Summary> {
    Ok(Summary {
        rowid: r.get(0)?,
        session_id: r.get(1)?,
        project: r.get(2)?,
        title: r.get(3)?,
        summary: r.get::<_, Option<String>>(4)?.unwrap_or_default(),
        key_files: super::parse_list(r.get(5)?),
        key_decisions: super::parse_list(r.get(6)?),
        at: r.get(7)?,
        origin: r.get(8)?,
    })
}

/// Rowids of the summarised sessions of `projects` (`None`: all) in the time bounds (stored
/// time text, inclusive), of `session` when given: what a filtered vector search may return.
pub fn matching_rowids(
    conn: &Connection,
    projects: Option<&[String]>,
    session: Option<&str>,
    after: Option<&str>,
    before: Option<&str>,
) -> Result<Vec<i64>> {
    // Only the clauses asked, the projects among them: with `(?1 IS NULL OR …)` and the
    // projects compared here, a one-project search read every session's summary (25,000 at a
    // million observations).
    let mut sql =
        String::from("SELECT rowid FROM sessions WHERE summary IS NOT NULL AND summary != ''");
    let asked = [
        ("session_id =", session),
        (
            "coalesce(ended_at, last_activity_at, started_at, '') >=",
            after,
        ),
        (
            "coalesce(ended_at, last_activity_at, started_at, '') <=",
            before,
        ),
    ];
    let mut params: Vec<&str> = Vec::new();
    for (c, v) in asked {
        if let Some(v) = v {
            params.push(v);
            sql.push_str(&format!(" AND {c} ?"));
        }
    }
    if let Some(ps) = projects {
        if ps.is_empty() {
            return Ok(vec![]);
        }
        params.extend(ps.iter().map(String::as_str));
        sql.push_str(&format!(" AND project IN ({})", super::marks(ps.len())));
    }
    let mut st = conn.prepare(&sql)?;
    let rows = st.query_map(rusqlite::params_from_iter(params), |r| r.get(0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Every session with a summary, by rowid.
pub fn summaries(conn: &Connection) -> Result<Vec<Summary>> {
    let mut st = conn.prepare(&format!(
        "SELECT {SUMMARY_COLS} FROM sessions WHERE summary IS NOT NULL AND summary != '' ORDER BY rowid"
    ))?;
    let rows = st.query_map([], summary_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The sessions of `rowids` that exist, with or without a summary, in no particular order.
pub fn summaries_by_rowids(conn: &Connection, rowids: &[i64]) -> Result<Vec<Summary>> {
    super::by_chunks(rowids, 500, |list| {
        let mut st = conn.prepare(&format!(
            "SELECT {SUMMARY_COLS} FROM sessions WHERE rowid IN ({list})"
        ))?;
        let rows = st.query_map([], summary_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    })
}

/// Rowids of the sessions with a summary.
pub fn summarized_rowids(conn: &Connection) -> Result<Vec<i64>> {
    let mut st =
        conn.prepare("SELECT rowid FROM sessions WHERE summary IS NOT NULL AND summary != ''")?;
    let rows = st.query_map([], |r| r.get(0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// How many sessions of a project have a summary.
pub fn summarized_count(conn: &Connection, project: &str) -> Result<i64> {
    Ok(conn.query_row(
        "SELECT count(*) FROM sessions WHERE project = ?1 AND coalesce(summary,'') != ''",
        [project],
        |r| r.get(0),
    )?)
}

/// A past session as a context block lists it.
#[derive(Debug, Clone)]
pub struct Recent {
    pub title: Option<String>,
    pub summary: Option<String>,
    /// When it ended, else its last activity, else its start.
    pub at: Option<String>,
    /// Who a session taken from the sync remote came from.
    pub origin: Option<String>,
}

/// The latest `limit` sessions of a project other than `except`
/// that have a summary or a title, newest first.
pub fn latest_of_project(
    conn: &Connection,
    project: &str,
    except: &str,
    limit: usize,
) -> Result<Vec<Recent>> {
    let mut st = conn.prepare(
        "SELECT title, summary, coalesce(ended_at, last_activity_at, started_at) AS t, origin
         FROM sessions
         WHERE project = ?1 AND session_id != ?2
           AND (coalesce(summary, '') != '' OR coalesce(title, '') != '')
           -- A session that did nothing (a question, a /clear) is no part of the work.
           AND EXISTS (SELECT 1 FROM observations o WHERE o.session_id = sessions.session_id)
         ORDER BY t DESC LIMIT ?3",
    )?;
    let rows = st.query_map(params![project, except, limit as i64], |r| {
        Ok(Recent {
            title: r.get(0)?,
            summary: r.get(1)?,
            at: r.get(2)?,
            origin: r.get(3)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Ids of the latest `limit` sessions of a project, newest first.
pub fn latest_ids(conn: &Connection, project: &str, limit: usize) -> Result<Vec<String>> {
    let mut st = conn.prepare(
        "SELECT session_id FROM sessions WHERE project = ?1
         ORDER BY coalesce(ended_at, last_activity_at, started_at) DESC LIMIT ?2",
    )?;
    let rows = st.query_map(params![project, limit as i64], |r| r.get(0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Sessions that need a (new) summary: stopped or ended, nothing of theirs pending, and no
/// summary yet or observations newer than it. Most recently active first. A session taken
/// from the sync remote came with its summary and is never summarised here.
pub fn due_for_summary(conn: &Connection) -> Result<Vec<String>> {
    let mut stmt = conn.prepare(
        "SELECT s.session_id FROM sessions s
         WHERE s.origin IS NULL AND (s.status = 'ended'
                OR EXISTS (SELECT 1 FROM pending_queue q WHERE q.session_id = s.session_id AND q.event = 'Stop'))
           AND NOT EXISTS (SELECT 1 FROM pending_queue q WHERE q.session_id = s.session_id
                           AND q.status IN ('raw', 'processing'))
           AND (s.summary IS NULL
                OR coalesce((SELECT max(o.id) FROM observations o WHERE o.session_id = s.session_id), 0)
                   > coalesce(s.summary_obs_id, 0))
         ORDER BY s.last_activity_at DESC",
    )?;
    let ids = stmt
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(ids)
}

/// (transcript path, last assistant message) of a session; `None` when it is unknown.
pub fn transcript_and_last_message(
    conn: &Connection,
    id: &str,
) -> Result<Option<(Option<String>, Option<String>)>> {
    use rusqlite::OptionalExtension;
    Ok(conn
        .query_row(
            "SELECT transcript_path, last_assistant_message FROM sessions WHERE session_id = ?1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?)
}

/// Stores a session's summary, and the newest observation it covers.
pub fn set_summary(
    conn: &Connection,
    id: &str,
    summary: &str,
    key_files: &[String],
    key_decisions: &[String],
    upto_obs_id: i64,
    now: &str,
) -> Result<()> {
    conn.execute(
        "UPDATE sessions SET summary = ?2, key_files = ?3, key_decisions = ?4, summary_obs_id = ?5,
                summarized_at = ?6 WHERE session_id = ?1",
        params![
            id,
            summary,
            super::json_list(key_files),
            super::json_list(key_decisions),
            upto_obs_id,
            now
        ],
    )?;
    Ok(())
}

/// A session's id, cwd and project.
pub type Place = (String, Option<String>, Option<String>);

/// (session, cwd, project) of the sessions with captures waiting for compression.
pub fn with_raw_captures(conn: &Connection) -> Result<Vec<Place>> {
    let mut st = conn.prepare(
        "SELECT s.session_id, s.cwd, s.project FROM sessions s
         WHERE EXISTS (SELECT 1 FROM pending_queue q WHERE q.session_id = s.session_id AND q.status = 'raw')",
    )?;
    let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The distinct files a session touched: those its captures name and its observations read
/// or modified (captures may be gone after retention).
pub fn touched_files(conn: &Connection, sid: &str) -> Result<Vec<String>> {
    let mut st = conn.prepare(
        "SELECT j.value FROM pending_queue q, json_each(q.files) j
           WHERE q.session_id = ?1 AND json_valid(q.files) AND j.type = 'text'
         UNION SELECT j.value FROM observations o, json_each(o.files_read) j
           WHERE o.session_id = ?1 AND json_valid(o.files_read) AND j.type = 'text'
         UNION SELECT j.value FROM observations o, json_each(o.files_modified) j
           WHERE o.session_id = ?1 AND json_valid(o.files_modified) AND j.type = 'text'",
    )?;
    let rows = st.query_map([sid], |r| r.get::<_, String>(0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}
