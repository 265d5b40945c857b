//! `sessions`: one row per Claude Code session, created by whichever event arrives first.

use rusqlite::{Connection, params};

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

pub fn set_title(conn: &Connection, id: &str, title: &str) -> Result<()> {
    conn.execute(
        "UPDATE sessions SET title = ?2 WHERE session_id = ?1 AND title IS NULL",
        params![id, title],
    )?;
    Ok(())
}
