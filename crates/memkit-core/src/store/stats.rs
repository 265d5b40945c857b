//! Read-only figures about a memory, for `mem-eval compression` and `mem-eval health`.

use rusqlite::{Connection, OptionalExtension, params};

use super::observations::{COLS, from_row};
use super::parse_list;
use crate::Result;
use crate::record::Observation;

/// Which observations `mem-eval compression` scores.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// Stored form (see `store::parse_time`): created at or after.
    pub since: Option<String>,
    /// A project's root path or its name (the last part of the path).
    pub project: Option<String>,
    /// The newest this many.
    pub limit: Option<usize>,
}

/// Compressed observations (not manual notes) with at least one source capture, oldest first.
pub fn compressed(conn: &Connection, s: &Selection) -> Result<Vec<Observation>> {
    let mut st = conn.prepare(&format!(
        "SELECT {COLS} FROM observations o
         WHERE is_manual = 0
           AND EXISTS (SELECT 1 FROM observation_sources s WHERE s.observation_id = o.id)
           AND (?1 IS NULL OR created_at >= ?1)
           AND (?2 IS NULL OR project = ?2 OR project LIKE '%/' || ?2 OR project LIKE '%\\' || ?2)
         ORDER BY id DESC LIMIT ?3"
    ))?;
    let limit = s.limit.map_or(-1, |n| n as i64);
    let rows = st.query_map(params![s.since, s.project, limit], from_row)?;
    let mut out: Vec<Observation> = rows.collect::<rusqlite::Result<_>>()?;
    out.reverse();
    Ok(out)
}

/// A capture an observation was made from.
#[derive(Debug, Clone)]
pub struct Source {
    pub id: i64,
    pub event: String,
    pub tool_name: Option<String>,
    pub files: Vec<String>,
    /// The payload as stored (JSON text).
    pub payload: String,
}

/// The captures observation `id` was made from, in queue order.
pub fn sources(conn: &Connection, id: i64) -> Result<Vec<Source>> {
    let mut st = conn.prepare(
        "SELECT q.id, q.event, q.tool_name, q.files, q.payload
         FROM observation_sources s JOIN pending_queue q ON q.id = s.queue_id
         WHERE s.observation_id = ?1 ORDER BY q.id",
    )?;
    let rows = st.query_map([id], |r| {
        Ok(Source {
            id: r.get(0)?,
            event: r.get(1)?,
            tool_name: r.get(2)?,
            files: parse_list(r.get(3)?),
            payload: r.get(4)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Rows of a query whose columns are a text key and a count.
fn counted(conn: &Connection, sql: &str, p: impl rusqlite::Params) -> Result<Vec<(String, u64)>> {
    let mut st = conn.prepare(sql)?;
    let rows = st.query_map(p, |r| {
        Ok((
            r.get::<_, Option<String>>(0)?.unwrap_or_default(),
            r.get::<_, i64>(1)?.max(0) as u64,
        ))
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Captures queued per UTC day since `since`, by day.
pub fn captures_per_day(conn: &Connection, since: &str) -> Result<Vec<(String, u64)>> {
    counted(
        conn,
        "SELECT substr(created_at, 1, 10) d, count(*) FROM pending_queue
         WHERE created_at >= ?1 GROUP BY d ORDER BY d",
        [since],
    )
}

/// What a memory holds, as `mem status` shows it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub sessions: i64,
    pub observations: i64,
    /// Active ones.
    pub learnings: i64,
    /// Queue rows, whatever their status.
    pub captures: i64,
}

pub fn counts(conn: &Connection) -> Result<Counts> {
    Ok(conn.query_row(
        "SELECT (SELECT count(*) FROM sessions), (SELECT count(*) FROM observations),
                (SELECT count(*) FROM learnings WHERE is_active = 1),
                (SELECT count(*) FROM pending_queue)",
        [],
        |r| {
            Ok(Counts {
                sessions: r.get(0)?,
                observations: r.get(1)?,
                learnings: r.get(2)?,
                captures: r.get(3)?,
            })
        },
    )?)
}

/// Queue rows per status.
pub fn queue_by_status(conn: &Connection) -> Result<Vec<(String, u64)>> {
    counted(
        conn,
        "SELECT status, count(*) FROM pending_queue GROUP BY status ORDER BY status",
        [],
    )
}

/// Queue rows in status 'error', per last error text.
pub fn queue_errors(conn: &Connection) -> Result<Vec<(String, u64)>> {
    counted(
        conn,
        "SELECT coalesce(last_error, ''), count(*) FROM pending_queue WHERE status = 'error'
         GROUP BY 1 ORDER BY 2 DESC",
        [],
    )
}

/// One UTC day's logged LLM calls.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LlmDay {
    pub day: String,
    pub calls: u64,
    pub failed: u64,
    /// In + out, cache tokens included (what the daily cap counts).
    pub tokens: u64,
}

/// LLM calls (event_log `llm_call`) per UTC day since `since`.
pub fn llm_per_day(conn: &Connection, since: &str) -> Result<Vec<LlmDay>> {
    let mut st = conn.prepare(
        "SELECT substr(ts, 1, 10) d, count(*),
                sum(json_extract(detail, '$.status') = 'error'),
                coalesce(sum(coalesce(json_extract(detail, '$.tokens_in'), 0)
                           + coalesce(json_extract(detail, '$.tokens_out'), 0)), 0)
         FROM event_log WHERE event = 'llm_call' AND ts >= ?1 GROUP BY d ORDER BY d",
    )?;
    let rows = st.query_map([since], |r| {
        Ok(LlmDay {
            day: r.get(0)?,
            calls: r.get::<_, i64>(1)? as u64,
            failed: r.get::<_, Option<i64>>(2)?.unwrap_or(0) as u64,
            tokens: r.get::<_, i64>(3)?.max(0) as u64,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// (observations, their raw tokens, their compressed tokens), manual notes left out.
pub fn compression_totals(conn: &Connection) -> Result<(u64, u64, u64)> {
    Ok(conn.query_row(
        "SELECT count(*), coalesce(sum(tokens_raw), 0), coalesce(sum(tokens_compressed), 0)
         FROM observations WHERE is_manual = 0",
        [],
        |r| {
            Ok((
                r.get::<_, i64>(0)? as u64,
                r.get::<_, i64>(1)?.max(0) as u64,
                r.get::<_, i64>(2)?.max(0) as u64,
            ))
        },
    )?)
}

/// (observations stored, observations merged into an earlier one) by the compression runs
/// logged since `since` (event_log `compress_run`).
pub fn dedup_since(conn: &Connection, since: &str) -> Result<(u64, u64)> {
    Ok(conn.query_row(
        "SELECT coalesce(sum(json_extract(detail, '$.observations')), 0),
                coalesce(sum(json_extract(detail, '$.merged')), 0)
         FROM event_log WHERE event = 'compress_run' AND ts >= ?1",
        [since],
        |r| {
            Ok((
                r.get::<_, i64>(0)?.max(0) as u64,
                r.get::<_, i64>(1)?.max(0) as u64,
            ))
        },
    )?)
}

/// The (model, dim) of the newest vector, if any.
pub fn latest_model(conn: &Connection) -> Result<Option<(String, usize)>> {
    Ok(conn
        .query_row(
            "SELECT model, dim FROM embeddings ORDER BY created_at DESC LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get::<_, i64>(1)? as usize)),
        )
        .optional()?)
}

/// What mem-embed has left for `model` (of `dim`, or of any dimension): the observations
/// without such a vector, and about how many characters of text that is with the summarised
/// sessions and learnings without one (the fields their texts are made of), in one pass.
pub fn embedding_backlog(conn: &Connection, model: &str, dim: Option<usize>) -> Result<(u64, u64)> {
    let none = |kind: &str, id: &str| {
        format!(
            "NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.owner_kind = '{kind}' AND e.owner_id = {id}
                AND e.model = ?1 AND (?2 IS NULL OR e.dim = ?2))"
        )
    };
    let (n, chars): (i64, i64) = conn.query_row(
        &format!(
            "SELECT count(*), coalesce(sum(length(title) + length(summary)
                        + coalesce(length(detail), 0) + coalesce(length(facts), 0)
                        + coalesce(length(concepts), 0)), 0)
                  + (SELECT coalesce(sum(coalesce(length(title), 0) + length(summary)), 0)
                     FROM sessions s WHERE coalesce(summary, '') != '' AND {})
                  + (SELECT coalesce(sum(length(content)), 0) FROM learnings l WHERE {})
             FROM observations o WHERE {}",
            none("session", "s.rowid"),
            none("learning", "l.id"),
            none("observation", "o.id")
        ),
        params![model, dim.map(|d| d as i64)],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    Ok((n.max(0) as u64, chars.max(0) as u64))
}

/// The latest `observations.updated_at` and `embeddings.created_at`: the database's last
/// change of what the indexes hold.
pub fn last_changes(conn: &Connection) -> Result<(Option<String>, Option<String>)> {
    Ok(conn.query_row(
        "SELECT (SELECT max(updated_at) FROM observations), (SELECT max(created_at) FROM embeddings)",
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?)
}

/// Puts every capture back in the queue as if never compressed, and forgets what compression
/// made from them (observations, their links and vectors, session summaries): for a replay in a
/// scratch copy (`mem-eval benchmark`), never the user's database.
pub fn reset_for_replay(conn: &Connection) -> Result<()> {
    conn.execute_batch(
        "DELETE FROM observation_sources;
         DELETE FROM embeddings WHERE owner_kind IN ('observation', 'session');
         DELETE FROM observations;
         UPDATE sessions SET summary = NULL, key_files = NULL, key_decisions = NULL,
                summary_obs_id = NULL, summarized_at = NULL;
         UPDATE pending_queue SET status = 'raw', attempts = 0, next_attempt_at = NULL,
                last_error = NULL, skip_reason = NULL, claimed_by = NULL, claimed_at = NULL;",
    )?;
    Ok(())
}

/// The largest event_log id (0 when empty).
pub fn last_event_id(conn: &Connection) -> Result<i64> {
    Ok(
        conn.query_row("SELECT coalesce(max(id), 0) FROM event_log", [], |r| {
            r.get(0)
        })?,
    )
}

/// The `llm_call` rows after event id `after`: (ts, session_id, tool_name, level, detail).
pub type EventRow = (
    String,
    Option<String>,
    Option<String>,
    String,
    Option<String>,
);

pub fn llm_calls_after(conn: &Connection, after: i64) -> Result<Vec<EventRow>> {
    let mut st = conn.prepare(
        "SELECT ts, session_id, tool_name, level, detail FROM event_log
         WHERE event = 'llm_call' AND id > ?1 ORDER BY id",
    )?;
    let rows = st.query_map([after], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Books `llm_call` rows made elsewhere (a scratch copy) with their own times, so they count
/// against this database's daily cap.
pub fn book_llm_calls(conn: &Connection, rows: &[EventRow]) -> Result<()> {
    let mut st = conn.prepare(
        "INSERT INTO event_log (ts, session_id, event, tool_name, level, detail)
         VALUES (?1, ?2, 'llm_call', ?3, ?4, ?5)",
    )?;
    for (ts, session, tool, level, detail) in rows {
        st.execute(params![ts, session, tool, level, detail])?;
    }
    Ok(())
}
