//! `observations` and `observation_sources`: compressed memories and the captures they came from.

use rusqlite::{Connection, OptionalExtension, params};
use sha2::{Digest, Sha256};

use crate::Result;
use crate::record::Observation;

fn json_list(v: &[String]) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "[]".into())
}

fn parse_list(s: Option<String>) -> Vec<String> {
    s.and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or_default()
}

/// Hash of what an observation says (type, title, summary).
pub fn content_hash(o: &Observation) -> String {
    let mut h = Sha256::new();
    h.update(o.kind.as_bytes());
    h.update([0]);
    h.update(o.title.as_bytes());
    h.update([0]);
    h.update(o.summary.as_bytes());
    hex::encode(h.finalize())
}

/// Stores a new observation; returns its id.
pub fn insert(conn: &Connection, o: &Observation, is_manual: bool, now: &str) -> Result<i64> {
    conn.execute(
        "INSERT INTO observations (session_id, project, type, tool_name, title, summary, detail, facts,
            concepts, tags, files_read, files_modified, functions_changed, tokens_raw, tokens_compressed,
            is_manual, content_hash, created_at, updated_at)
         VALUES (?1, ?2, ?3, NULL, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)",
        params![
            o.session_id,
            o.project,
            o.kind,
            o.title,
            o.summary,
            o.detail,
            json_list(&o.facts),
            json_list(&o.concepts),
            json_list(&o.tags),
            json_list(&o.files_read),
            json_list(&o.files_modified),
            json_list(&o.functions_changed),
            o.tokens_raw as i64,
            o.tokens_compressed as i64,
            is_manual as i64,
            content_hash(o),
            // When the work happened (the captures' time), so recency and date filters see
            // imported sessions where they belong; updated_at is when it was stored.
            o.created_at.as_deref().unwrap_or(now),
            now,
        ],
    )?;
    Ok(conn.last_insert_rowid())
}

/// Links an observation to the queue rows it was made from.
pub fn link(conn: &Connection, observation_id: i64, queue_ids: &[i64]) -> Result<()> {
    let mut stmt = conn.prepare(
        "INSERT OR IGNORE INTO observation_sources (observation_id, queue_id) VALUES (?1, ?2)",
    )?;
    for q in queue_ids {
        stmt.execute(params![observation_id, q])?;
    }
    Ok(())
}

/// (id, title) of the automatic observations of `project` created since `since`.
pub fn recent_titles(
    conn: &Connection,
    project: Option<&str>,
    since: &str,
) -> Result<Vec<(i64, String)>> {
    let mut stmt = conn.prepare(
        "SELECT id, title FROM observations WHERE project IS ?1 AND created_at >= ?2 AND is_manual = 0
         ORDER BY id DESC LIMIT 500",
    )?;
    let rows = stmt
        .query_map(params![project, since], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(rows)
}

/// Reads one observation back as its record.
pub fn get(conn: &Connection, id: i64) -> Result<Option<Observation>> {
    Ok(conn
        .query_row(
            "SELECT id, session_id, project, type, title, summary, detail, facts, concepts, tags,
                    files_read, files_modified, functions_changed, tokens_raw, tokens_compressed, created_at
             FROM observations WHERE id = ?1",
            [id],
            |r| {
                Ok(Observation {
                    v: crate::record::VERSION,
                    id: Some(r.get(0)?),
                    session_id: r.get(1)?,
                    project: r.get(2)?,
                    kind: r.get(3)?,
                    title: r.get(4)?,
                    summary: r.get(5)?,
                    detail: r.get(6)?,
                    facts: parse_list(r.get(7)?),
                    concepts: parse_list(r.get(8)?),
                    tags: parse_list(r.get(9)?),
                    files_read: parse_list(r.get(10)?),
                    files_modified: parse_list(r.get(11)?),
                    functions_changed: parse_list(r.get(12)?),
                    tokens_raw: r.get::<_, i64>(13)? as u64,
                    tokens_compressed: r.get::<_, i64>(14)? as u64,
                    created_at: r.get(15)?,
                    ..Default::default()
                })
            },
        )
        .optional()?)
}

/// Observations of a session, oldest first.
pub fn of_session(conn: &Connection, session_id: &str) -> Result<Vec<Observation>> {
    let ids: Vec<i64> = conn
        .prepare("SELECT id FROM observations WHERE session_id = ?1 ORDER BY id")?
        .query_map([session_id], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        if let Some(o) = get(conn, id)? {
            out.push(o);
        }
    }
    Ok(out)
}

/// Overwrites an observation's content (a dedup merge).
pub fn update(conn: &Connection, o: &Observation, now: &str) -> Result<()> {
    let id = o.id.unwrap_or(0);
    conn.execute(
        "UPDATE observations SET summary = ?2, detail = ?3, facts = ?4, concepts = ?5, tags = ?6,
            files_read = ?7, files_modified = ?8, functions_changed = ?9, tokens_raw = ?10,
            tokens_compressed = ?11, content_hash = ?12, updated_at = ?13 WHERE id = ?1",
        params![
            id,
            o.summary,
            o.detail,
            json_list(&o.facts),
            json_list(&o.concepts),
            json_list(&o.tags),
            json_list(&o.files_read),
            json_list(&o.files_modified),
            json_list(&o.functions_changed),
            o.tokens_raw as i64,
            o.tokens_compressed as i64,
            content_hash(o),
            now,
        ],
    )?;
    Ok(())
}
