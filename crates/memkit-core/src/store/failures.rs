//! `failures`: the error signature of each failed shell call (`errsig`), with the observation
//! made from it and the one made from the edit that fixed it. The pipeline writes them
//! ([`index`]); error recall reads them ([`fixed`]).

use rusqlite::{Connection, params};

use crate::Result;
use crate::errsig;

/// The queue row after which failed calls are still to be read.
const CURSOR: &str = "failures_cursor";

/// Signs the failed shell calls queued since the last run that compression is done with, then
/// looks for the fix of every failure that has none yet: the first successful edit in its
/// session after the last failure there with the same signature (an edit followed by the same
/// error again fixed nothing). Returns how many failures were added.
pub fn index(conn: &Connection) -> Result<usize> {
    let cursor: i64 = super::meta_get(conn, CURSOR)?
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let mut st = conn.prepare(
        "SELECT id, session_id, project, payload, status, created_at FROM pending_queue
          WHERE id > ?1 AND event IN ('PostToolUseFailure', 'PostToolUse')
            AND tool_name IN ('Bash', 'PowerShell')
          ORDER BY id",
    )?;
    let rows = st.query_map([cursor], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, Option<String>>(2)?,
            r.get::<_, String>(3)?,
            r.get::<_, String>(4)?,
            r.get::<_, String>(5)?,
        ))
    })?;
    let mut added = 0;
    let mut next = cursor;
    let mut waiting = false;
    for row in rows {
        let (id, session, project, payload, status, at) = row?;
        // The cursor stops before the first call compression has not finished with.
        if !matches!(status.as_str(), "done" | "error") {
            waiting = true;
            continue;
        }
        if !waiting {
            next = id;
        }
        let Ok(v) = serde_json::from_str::<serde_json::Value>(&payload) else {
            continue;
        };
        let Some(sig) = v
            .as_object()
            .and_then(errsig::failure_text)
            .and_then(|t| errsig::signature(&t))
        else {
            continue;
        };
        added += conn.execute(
            "INSERT OR IGNORE INTO failures (queue_id, session_id, project, signature, line, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![id, session, project, sig.key, sig.line, at],
        )?;
    }
    super::meta_put(conn, CURSOR, &next.to_string())?;
    conn.execute_batch(&format!(
        "UPDATE failures SET
            failed_obs = coalesce(failed_obs,
                (SELECT min(observation_id) FROM observation_sources WHERE queue_id = failures.queue_id)),
            fix_queue = (SELECT q.id FROM pending_queue q
                WHERE q.session_id = failures.session_id AND q.event = 'PostToolUse'
                  AND q.tool_name IN ({tools})
                  AND q.created_at >= (SELECT max(f.created_at) FROM failures f
                        WHERE f.session_id = failures.session_id AND f.signature = failures.signature)
                ORDER BY q.created_at, q.id LIMIT 1)
          WHERE fix_obs IS NULL;
         UPDATE failures SET fix_obs =
                (SELECT min(observation_id) FROM observation_sources WHERE queue_id = failures.fix_queue)
          WHERE fix_obs IS NULL AND fix_queue IS NOT NULL;",
        tools = super::queue::edit_tools_sql()
    ))?;
    Ok(added)
}

/// An earlier failure with the same signature, and what fixed it.
#[derive(Debug, Clone)]
pub struct Fixed {
    pub queue_id: i64,
    pub session_id: String,
    pub line: String,
    pub at: String,
    pub failed_obs: Option<i64>,
    pub fix_obs: i64,
    pub fix_kind: String,
    pub fix_title: String,
}

/// The failures of `project` (any, with `None`) with signature `key` that were fixed, before
/// `before` (an ISO time; `None` = all), newest first, one per fix, at most `limit`.
pub fn fixed(
    conn: &Connection,
    project: Option<&str>,
    key: &str,
    before: Option<&str>,
    limit: usize,
) -> Result<Vec<Fixed>> {
    let mut st = conn.prepare_cached(
        "SELECT f.queue_id, f.session_id, f.line, f.created_at, f.failed_obs, o.id, o.type, o.title
           FROM failures f JOIN observations o ON o.id = f.fix_obs
          WHERE f.signature = ?1 AND (?2 IS NULL OR f.project = ?2)
            AND (?3 IS NULL OR f.created_at < ?3)
          ORDER BY f.created_at DESC, f.queue_id DESC",
    )?;
    let rows = st.query_map(params![key, project, before], |r| {
        Ok(Fixed {
            queue_id: r.get(0)?,
            session_id: r.get(1)?,
            line: r.get(2)?,
            at: r.get(3)?,
            failed_obs: r.get(4)?,
            fix_obs: r.get(5)?,
            fix_kind: r.get(6)?,
            fix_title: r.get(7)?,
        })
    })?;
    super::first_per_key(rows, |f| f.fix_obs, limit)
}
