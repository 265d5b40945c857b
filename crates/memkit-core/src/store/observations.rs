//! `observations` and `observation_sources`: compressed memories and the captures they came from.

use std::sync::LazyLock;

use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, params, params_from_iter};
use sha2::{Digest, Sha256};

use super::filters::Filters;
use super::{by_chunks, json_list, parse_list};
use crate::Result;
use crate::record::Observation;

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

/// The columns both [`insert`] and [`update`] write (what an observation says), in the order
/// of [`content_values`].
const CONTENT: [&str; 11] = [
    "summary",
    "detail",
    "facts",
    "concepts",
    "tags",
    "files_read",
    "files_modified",
    "functions_changed",
    "tokens_raw",
    "tokens_compressed",
    "content_hash",
];

fn content_values(o: &Observation) -> [Value; 11] {
    [
        o.summary.clone().into(),
        o.detail.clone().into(),
        json_list(&o.facts).into(),
        json_list(&o.concepts).into(),
        json_list(&o.tags).into(),
        json_list(&o.files_read).into(),
        json_list(&o.files_modified).into(),
        json_list(&o.functions_changed).into(),
        (o.tokens_raw as i64).into(),
        (o.tokens_compressed as i64).into(),
        content_hash(o).into(),
    ]
}

static INSERT: LazyLock<String> = LazyLock::new(|| {
    let cols = CONTENT.join(", ");
    let marks: Vec<String> = (9..9 + CONTENT.len()).map(|i| format!("?{i}")).collect();
    format!(
        "INSERT INTO observations (session_id, project, type, title, is_manual, created_at,
            updated_at, external_id, {cols}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, {})",
        marks.join(", ")
    )
});

static UPDATE: LazyLock<String> = LazyLock::new(|| {
    let sets: Vec<String> = CONTENT
        .iter()
        .enumerate()
        .map(|(i, c)| format!("{c} = ?{}", i + 3))
        .collect();
    format!(
        "UPDATE observations SET updated_at = ?2, {} WHERE id = ?1",
        sets.join(", ")
    )
});

/// Stores a new observation; returns its id.
pub fn insert(conn: &Connection, o: &Observation, is_manual: bool, now: &str) -> Result<i64> {
    let head: [Value; 8] = [
        o.session_id.clone().into(),
        o.project.clone().into(),
        o.kind.clone().into(),
        o.title.clone().into(),
        (is_manual as i64).into(),
        // When the work happened (the captures' time), so recency and date filters see
        // imported sessions where they belong; updated_at is when it was stored.
        o.created_at.as_deref().unwrap_or(now).to_string().into(),
        now.to_string().into(),
        o.external_id.clone().into(),
    ];
    conn.prepare_cached(&INSERT)?
        .execute(params_from_iter(head.into_iter().chain(content_values(o))))?;
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

/// (id, title) of the automatic observations of one session of `project` created since `since`.
pub fn recent_titles(
    conn: &Connection,
    project: Option<&str>,
    session_id: Option<&str>,
    since: &str,
) -> Result<Vec<(i64, String)>> {
    let mut stmt = conn.prepare(
        "SELECT id, title FROM observations
         WHERE session_id IS ?2 AND project IS ?1 AND created_at >= ?3 AND is_manual = 0
         ORDER BY id DESC LIMIT 500",
    )?;
    let rows = stmt
        .query_map(params![project, session_id, since], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?
        .collect::<rusqlite::Result<_>>()?;
    Ok(rows)
}

/// The columns [`from_row`] reads.
pub const COLS: &str = "id, session_id, project, type, title, summary, detail, facts, concepts,
    tags, files_read, files_modified, functions_changed, tokens_raw, tokens_compressed,
    is_manual, created_at, external_id, origin";

/// [`COLS`] with the long columns (detail, facts, concepts, functions changed) read as empty:
/// what ranking and filtering a search's candidates needs, without copying and parsing what
/// only the hits shown print.
pub const BRIEF_COLS: &str = "id, session_id, project, type, title, summary, NULL, '[]', '[]',
    tags, files_read, files_modified, '[]', tokens_raw, tokens_compressed,
    is_manual, created_at, external_id, origin";

/// An observation row selected with [`COLS`] (or [`BRIEF_COLS`]) as its record.
pub fn from_row(r: &rusqlite::Row) -> rusqlite::Result<Observation> {
    Ok(Observation {
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
        is_manual: r.get::<_, i64>(15)? != 0,
        created_at: r.get(16)?,
        external_id: r.get(17)?,
        origin: r.get(18)?,
        ..Default::default()
    })
}

/// Observations selected by `filter` (SQL after `WHERE`) with `params`.
fn select(
    conn: &Connection,
    filter: &str,
    params: impl rusqlite::Params,
) -> Result<Vec<Observation>> {
    select_cols(conn, COLS, filter, params)
}

fn select_cols(
    conn: &Connection,
    cols: &str,
    filter: &str,
    params: impl rusqlite::Params,
) -> Result<Vec<Observation>> {
    let mut st = conn.prepare(&format!("SELECT {cols} FROM observations WHERE {filter}"))?;
    let rows = st.query_map(params, from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The observation of `project` imported with `external_id`, if any.
pub fn by_external_id(
    conn: &Connection,
    project: Option<&str>,
    external_id: &str,
) -> Result<Option<i64>> {
    Ok(conn
        .query_row(
            "SELECT id FROM observations WHERE project IS ?1 AND external_id = ?2",
            params![project, external_id],
            |r| r.get(0),
        )
        .optional()?)
}

/// Reads one observation back as its record.
pub fn get(conn: &Connection, id: i64) -> Result<Option<Observation>> {
    Ok(conn
        .query_row(
            &format!("SELECT {COLS} FROM observations WHERE id = ?1"),
            [id],
            from_row,
        )
        .optional()?)
}

/// Observations of a session, oldest first.
pub fn of_session(conn: &Connection, session_id: &str) -> Result<Vec<Observation>> {
    select(conn, "session_id = ?1 ORDER BY id", [session_id])
}

/// The observations of `ids` that exist, in no particular order.
pub fn by_ids(conn: &Connection, ids: &[i64]) -> Result<Vec<Observation>> {
    by_chunks(ids, 500, |list| {
        select(conn, &format!("id IN ({list})"), [])
    })
}

/// [`by_ids`] with [`BRIEF_COLS`].
pub fn briefs_by_ids(conn: &Connection, ids: &[i64]) -> Result<Vec<Observation>> {
    by_chunks(ids, 500, |list| {
        select_cols(conn, BRIEF_COLS, &format!("id IN ({list})"), [])
    })
}

/// The latest `limit` observations of a project (only its manual notes with `notes_only`),
/// newest first, read brief ([`BRIEF_COLS`]: SessionStart lists titles, not details).
pub fn latest_of_project(
    conn: &Connection,
    project: &str,
    notes_only: bool,
    limit: usize,
) -> Result<Vec<Observation>> {
    let notes = if notes_only { " AND is_manual = 1" } else { "" };
    select_cols(
        conn,
        BRIEF_COLS,
        &format!("project = ?1{notes} ORDER BY created_at DESC LIMIT ?2"),
        params![project, limit as i64],
    )
}

/// What an observation's embedding is made from.
#[derive(Debug, Clone)]
pub struct Text {
    pub id: i64,
    pub title: String,
    pub summary: String,
    pub detail: Option<String>,
    pub facts: Vec<String>,
    pub concepts: Vec<String>,
    /// When the work it records was done (what newest-first orders by).
    pub created_at: String,
}

/// The embedding text parts of every observation, by id.
pub fn texts(conn: &Connection) -> Result<Vec<Text>> {
    let mut st = conn.prepare(
        "SELECT id, title, summary, detail, facts, concepts, created_at FROM observations ORDER BY id",
    )?;
    let rows = st.query_map([], |r| {
        Ok(Text {
            id: r.get(0)?,
            title: r.get(1)?,
            summary: r.get(2)?,
            detail: r.get(3)?,
            facts: parse_list(r.get(4)?),
            concepts: parse_list(r.get(5)?),
            created_at: r.get(6)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// (id, title, summary, facts, concepts as stored) of the observations without a vector of
/// (model, dim): what the stand-in vectors of tests and benches are made from.
pub fn without_vector(conn: &Connection, model: &str, dim: usize) -> Result<Vec<(i64, String)>> {
    let mut st = conn.prepare(
        "SELECT o.id, o.title || char(10) || o.summary || char(10) || o.facts || char(10) || o.concepts
         FROM observations o
         WHERE NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.owner_kind = 'observation'
                           AND e.owner_id = o.id AND e.model = ?1 AND e.dim = ?2)",
    )?;
    let rows = st.query_map(params![model, dim as i64], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Every observation id.
pub fn ids(conn: &Connection) -> Result<Vec<i64>> {
    let mut st = conn.prepare("SELECT id FROM observations")?;
    let rows = st.query_map([], |r| r.get(0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// (id, updated_at) of every observation.
pub fn ids_updated(conn: &Connection) -> Result<Vec<(i64, String)>> {
    let mut st = conn.prepare("SELECT id, updated_at FROM observations")?;
    let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// (id, updated_at) of the observations changed after `since` (by the updated_at index).
pub fn ids_updated_since(conn: &Connection, since: &str) -> Result<Vec<(i64, String)>> {
    let mut st = conn.prepare("SELECT id, updated_at FROM observations WHERE updated_at > ?1")?;
    let rows = st.query_map([since], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Every distinct tag, lowercase.
pub fn distinct_tags(conn: &Connection) -> Result<Vec<String>> {
    let mut st = conn.prepare(
        "SELECT DISTINCT lower(j.value) FROM observations, json_each(observations.tags) j",
    )?;
    let rows = st.query_map([], |r| r.get::<_, String>(0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// How many observations a project has (`None`: all projects).
pub fn count(conn: &Connection, project: Option<&str>) -> Result<i64> {
    Ok(match project {
        Some(p) => conn.query_row(
            "SELECT count(*) FROM observations WHERE project = ?1",
            [p],
            |r| r.get(0),
        )?,
        None => conn.query_row("SELECT count(*) FROM observations", [], |r| r.get(0))?,
    })
}

/// The `AND …` clauses of `f` over the observation alias `o`, their parameters appended to
/// `params`; `None` when `f` matches nothing (an empty project list). Tags only `with_tags`
/// ([`matching_ids`]; FTS5 results are checked by the caller).
fn filter_sql(f: &Filters, params: &mut Vec<Value>, with_tags: bool) -> Option<String> {
    let mut sql = String::new();
    let mut push = |sql: &mut String, clause: &str, vals: Vec<String>| {
        let mut marks = Vec::new();
        for v in vals {
            params.push(v.into());
            marks.push(format!("?{}", params.len()));
        }
        sql.push_str(&clause.replace("{}", &marks.join(",")));
    };
    if let Some(ps) = &f.projects {
        if ps.is_empty() {
            return None;
        }
        push(&mut sql, " AND o.project IN ({})", ps.clone());
    }
    if !f.kinds.is_empty() {
        push(&mut sql, " AND o.type IN ({})", f.kinds.clone());
    }
    if let Some(s) = &f.session {
        push(&mut sql, " AND o.session_id = {}", vec![s.clone()]);
    }
    if let Some(a) = f.after() {
        push(&mut sql, " AND o.created_at >= {}", vec![a]);
    }
    if let Some(b) = f.before() {
        push(&mut sql, " AND o.created_at <= {}", vec![b]);
    }
    if with_tags && !f.tags.is_empty() {
        push(
            &mut sql,
            " AND EXISTS (SELECT 1 FROM json_each(o.tags) j WHERE lower(j.value) IN ({}))",
            f.tags.clone(),
        );
    }
    Some(sql)
}

/// Ids of the observations that pass `f` (tags included): what a filtered vector search may
/// return.
pub fn matching_ids(conn: &Connection, f: &Filters) -> Result<Vec<i64>> {
    let mut params: Vec<Value> = Vec::new();
    let Some(clauses) = filter_sql(f, &mut params, true) else {
        return Ok(vec![]);
    };
    let mut st = conn.prepare(&format!("SELECT o.id FROM observations o WHERE 1{clauses}"))?;
    let rows = st.query_map(params_from_iter(params), |r| r.get(0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// (id, score) of the best `limit` observations matching the FTS5 expression `expr` (higher is
/// better), within `f`.
pub fn fts(conn: &Connection, expr: &str, f: &Filters, limit: usize) -> Result<Vec<(i64, f64)>> {
    let mut sql = String::from(
        "SELECT o.id, -bm25(observations_fts) FROM observations_fts JOIN observations o ON o.id = observations_fts.rowid WHERE observations_fts MATCH ?1",
    );
    let mut params: Vec<Value> = vec![expr.to_string().into()];
    let Some(clauses) = filter_sql(f, &mut params, false) else {
        return Ok(vec![]);
    };
    sql.push_str(&clauses);
    sql.push_str(&format!(
        " ORDER BY bm25(observations_fts), o.id LIMIT {limit}"
    ));
    let mut st = conn.prepare(&sql)?;
    let rows = st.query_map(params_from_iter(params), |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Overwrites an observation's content (a dedup merge).
pub fn update(conn: &Connection, o: &Observation, now: &str) -> Result<()> {
    let head: [Value; 2] = [o.id.unwrap_or(0).into(), now.to_string().into()];
    conn.prepare_cached(&UPDATE)?
        .execute(params_from_iter(head.into_iter().chain(content_values(o))))?;
    Ok(())
}

/// A re-imported note over the observation it was before (`o.id`): what it says, and also its
/// title, type and date, which an import may change.
pub fn replace_imported(conn: &Connection, o: &Observation, now: &str) -> Result<()> {
    conn.execute(
        "UPDATE observations SET title = ?2, type = ?3, created_at = coalesce(?4, created_at)
         WHERE id = ?1",
        params![o.id, o.title, o.kind, o.created_at],
    )?;
    update(conn, o, now)
}

/// (id, external id) of every imported note that has one.
pub fn external_ids(conn: &Connection) -> Result<Vec<(i64, String)>> {
    let mut st =
        conn.prepare("SELECT id, external_id FROM observations WHERE external_id IS NOT NULL")?;
    let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}
