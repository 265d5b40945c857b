//! `event_log`: every hook event and every problem, one row each.

use rusqlite::{Connection, params};

use crate::Result;

pub fn log(
    conn: &Connection,
    session_id: Option<&str>,
    event: &str,
    tool_name: Option<&str>,
    level: &str,
    detail: Option<&serde_json::Value>,
) -> Result<()> {
    conn.execute(
        "INSERT INTO event_log (ts, session_id, event, tool_name, level, detail) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![
            super::now(),
            session_id,
            event,
            tool_name,
            level,
            detail.map(|d| d.to_string()),
        ],
    )?;
    Ok(())
}

/// Whether an `event` row with `detail.key` = `key` exists (a spool claim that was committed).
pub fn has_key(conn: &Connection, event: &str, key: &str) -> Result<bool> {
    use rusqlite::OptionalExtension;
    Ok(conn
        .query_row(
            "SELECT 1 FROM event_log WHERE event = ?1 AND json_extract(detail, '$.key') = ?2 LIMIT 1",
            params![event, key],
            |_| Ok(()),
        )
        .optional()?
        .is_some())
}

/// Tokens (in + out) the logged LLM calls spent since `since`.
pub fn llm_tokens_since(conn: &Connection, since: &str) -> Result<u64> {
    let n: i64 = conn.query_row(
        "SELECT coalesce(sum(coalesce(json_extract(detail, '$.tokens_in'), 0)
                          + coalesce(json_extract(detail, '$.tokens_out'), 0)), 0)
         FROM event_log WHERE event = 'llm_call' AND ts >= ?1",
        [since],
        |r| r.get(0),
    )?;
    Ok(n.max(0) as u64)
}
