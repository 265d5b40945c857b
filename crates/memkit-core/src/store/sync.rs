//! `sync_exported`, `sync_imported`, `sync_files` and the `origin` columns: what `mem sync` put
//! on the remote, what it took from there, and how far it read each file
//! (docs/ARCHITECTURE.md, "Sync").
//!
//! A record's global id names the database it was made in and its row there, so a row shared
//! twice is one record and an import never takes a record twice. This machine's own rows have
//! no `origin`; an imported row carries the `sync.name` of the machine it came from.

use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, params, params_from_iter};

use super::learnings::{self, Learning};
use super::observations;
use super::{json_list, marks, parse_list};
use crate::Result;
use crate::record::Observation;

/// The kinds of record that travel.
pub const KINDS: &[&str] = &["observation", "session", "learning"];

/// What the remote holds of one of this machine's rows, as last written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exported {
    pub gid: String,
    pub born: String,
    /// The hash of the body last written (`None`: never written, held back since).
    pub hash: Option<String>,
    /// Why it is held back (what the redactor found), while it is.
    pub held: Option<String>,
}

fn exported_at(r: &rusqlite::Row, at: usize) -> rusqlite::Result<Option<Exported>> {
    let gid: Option<String> = r.get(at)?;
    Ok(match gid {
        Some(gid) => Some(Exported {
            gid,
            born: r.get(at + 1)?,
            hash: r.get(at + 2)?,
            held: r.get(at + 3)?,
        }),
        None => None,
    })
}

/// The roots as SQL parameters, and `IN (…)` marks for them.
fn roots_in(roots: &[String]) -> (Vec<Value>, String) {
    let vals = roots.iter().map(|r| Value::from(r.clone())).collect();
    (vals, marks(roots.len()))
}

/// An observation of this machine to look at: new, changed since it was written (`stamp`, its
/// `updated_at`, differs) or held back.
#[derive(Debug, Clone)]
pub struct ObservationOut {
    pub obs: Observation,
    pub stamp: String,
    pub was: Option<Exported>,
}

/// This machine's observations of `roots` that are new to the remote, changed, or held back.
pub fn observations_to_export(conn: &Connection, roots: &[String]) -> Result<Vec<ObservationOut>> {
    if roots.is_empty() {
        return Ok(vec![]);
    }
    let cols: Vec<String> = observations::COLS
        .split(',')
        .map(|c| format!("o.{}", c.trim()))
        .collect();
    let (vals, list) = roots_in(roots);
    let mut st = conn.prepare(&format!(
        "SELECT {}, o.updated_at, e.gid, e.born, e.hash, e.held
         FROM observations o
         LEFT JOIN sync_exported e ON e.kind = 'observation' AND e.local = CAST(o.id AS TEXT)
         WHERE o.origin IS NULL AND o.project IN ({list})
           AND (e.gid IS NULL OR e.stamp IS NOT o.updated_at OR e.held IS NOT NULL)
         ORDER BY o.id",
        cols.join(", ")
    ))?;
    let rows = st.query_map(params_from_iter(vals), |r| {
        Ok(ObservationOut {
            obs: observations::from_row(r)?,
            stamp: r.get(19)?,
            was: exported_at(r, 20)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// A session summary of this machine to look at.
#[derive(Debug, Clone, Default)]
pub struct SessionOut {
    pub session_id: String,
    pub project: String,
    pub branch: Option<String>,
    pub title: Option<String>,
    pub summary: String,
    pub key_files: Vec<String>,
    pub key_decisions: Vec<String>,
    pub started_at: Option<String>,
    pub ended_at: Option<String>,
    /// When it was summarised: what a change of the summary changes.
    pub stamp: String,
    pub was: Option<Exported>,
}

/// This machine's summarised sessions of `roots` that are new to the remote, changed, or held
/// back.
pub fn sessions_to_export(conn: &Connection, roots: &[String]) -> Result<Vec<SessionOut>> {
    if roots.is_empty() {
        return Ok(vec![]);
    }
    let (vals, list) = roots_in(roots);
    let mut st = conn.prepare(&format!(
        "SELECT s.session_id, s.project, s.branch, s.title, s.summary, s.key_files,
                s.key_decisions, s.started_at, coalesce(s.ended_at, s.last_activity_at),
                coalesce(s.summarized_at, ''), e.gid, e.born, e.hash, e.held
         FROM sessions s
         LEFT JOIN sync_exported e ON e.kind = 'session' AND e.local = s.session_id
         WHERE s.origin IS NULL AND coalesce(s.summary, '') != '' AND s.project IN ({list})
           AND (e.gid IS NULL OR e.stamp IS NOT coalesce(s.summarized_at, '') OR e.held IS NOT NULL)
         ORDER BY s.rowid"
    ))?;
    let rows = st.query_map(params_from_iter(vals), |r| {
        Ok(SessionOut {
            session_id: r.get(0)?,
            project: r.get(1)?,
            branch: r.get(2)?,
            title: r.get(3)?,
            summary: r.get(4)?,
            key_files: parse_list(r.get(5)?),
            key_decisions: parse_list(r.get(6)?),
            started_at: r.get(7)?,
            ended_at: r.get(8)?,
            stamp: r.get(9)?,
            was: exported_at(r, 10)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// A learning of this machine to look at (its `updated_at` is the stamp).
#[derive(Debug, Clone)]
pub struct LearningOut {
    pub learning: Learning,
    pub was: Option<Exported>,
}

/// This machine's learnings of `roots` that are new to the remote (active ones only), changed,
/// or held back.
pub fn learnings_to_export(conn: &Connection, roots: &[String]) -> Result<Vec<LearningOut>> {
    if roots.is_empty() {
        return Ok(vec![]);
    }
    let (vals, list) = roots_in(roots);
    let ids: Vec<(i64, Option<Exported>)> = {
        let mut st = conn.prepare(&format!(
            "SELECT l.id, e.gid, e.born, e.hash, e.held
             FROM learnings l
             LEFT JOIN sync_exported e ON e.kind = 'learning' AND e.local = CAST(l.id AS TEXT)
             WHERE l.origin IS NULL AND l.project IN ({list})
               AND (l.is_active = 1 OR e.gid IS NOT NULL)
               AND (e.gid IS NULL OR e.stamp IS NOT l.updated_at OR e.held IS NOT NULL)
             ORDER BY l.id"
        ))?;
        let rows = st.query_map(params_from_iter(vals), |r| {
            Ok((r.get(0)?, exported_at(r, 1)?))
        })?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    let mut out = Vec::with_capacity(ids.len());
    for (id, was) in ids {
        if let Some(learning) = learnings::get(conn, id)? {
            out.push(LearningOut { learning, was });
        }
    }
    Ok(out)
}

/// One of this machine's records on the remote whose row is gone here (forgotten, or its
/// session summary emptied): what a tombstone is written for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gone {
    pub gid: String,
    pub kind: String,
    pub local: String,
    /// The project key it was shared under.
    pub project: String,
    /// Whether it was ever written (a record held back from the start leaves no tombstone).
    pub written: bool,
}

/// The exported records whose row is gone (an id used again by a newer row is another row).
pub fn gone(conn: &Connection) -> Result<Vec<Gone>> {
    let mut st = conn.prepare(
        "SELECT gid, kind, local, project, hash IS NOT NULL FROM sync_exported e
         WHERE CASE kind
           WHEN 'observation' THEN NOT EXISTS (SELECT 1 FROM observations o
                WHERE o.id = CAST(e.local AS INTEGER) AND o.created_at = e.born AND o.origin IS NULL)
           WHEN 'session' THEN NOT EXISTS (SELECT 1 FROM sessions s
                WHERE s.session_id = e.local AND coalesce(s.summary, '') != '' AND s.origin IS NULL)
           ELSE NOT EXISTS (SELECT 1 FROM learnings l
                WHERE l.id = CAST(e.local AS INTEGER) AND l.created_at = e.born AND l.origin IS NULL)
         END
         ORDER BY rowid",
    )?;
    let rows = st.query_map([], |r| {
        Ok(Gone {
            gid: r.get(0)?,
            kind: r.get(1)?,
            local: r.get(2)?,
            project: r.get(3)?,
            written: r.get(4)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// One of this machine's records as the remote now holds it.
#[derive(Debug, Clone)]
pub struct Put<'a> {
    pub gid: &'a str,
    pub kind: &'a str,
    pub local: &'a str,
    pub born: &'a str,
    pub project: &'a str,
    /// The row's stamp when it was written (`None`: read back from the remote, unknown).
    pub stamp: Option<&'a str>,
    pub hash: &'a str,
}

/// Records that `p` was written to the remote.
pub fn put(conn: &Connection, p: &Put) -> Result<()> {
    conn.prepare_cached(
        "INSERT OR REPLACE INTO sync_exported (gid, kind, local, born, project, stamp, hash, held)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, NULL)",
    )?
    .execute(params![
        p.gid, p.kind, p.local, p.born, p.project, p.stamp, p.hash
    ])?;
    Ok(())
}

/// Records that a row's content was looked at and is what the remote holds already.
pub fn restamp(conn: &Connection, gid: &str, stamp: &str) -> Result<()> {
    conn.prepare_cached("UPDATE sync_exported SET stamp = ?2, held = NULL WHERE gid = ?1")?
        .execute(params![gid, stamp])?;
    Ok(())
}

/// Records that a row is held back (`why`: what the redactor found), keeping what the remote
/// holds of it, if anything.
pub fn hold(conn: &Connection, p: &Put, why: &str) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO sync_exported (gid, kind, local, born, project, stamp, hash, held)
         VALUES (?1, ?2, ?3, ?4, ?5, NULL, NULL, ?6)
         ON CONFLICT(gid) DO UPDATE SET held = excluded.held",
    )?
    .execute(params![p.gid, p.kind, p.local, p.born, p.project, why])?;
    Ok(())
}

/// Forgets what the remote held of `gid` (its tombstone is written).
pub fn unexport(conn: &Connection, gid: &str) -> Result<()> {
    conn.prepare_cached("DELETE FROM sync_exported WHERE gid = ?1")?
        .execute([gid])?;
    Ok(())
}

/// What became of a record taken from the remote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Imported {
    pub kind: String,
    /// Its row here: an observation or learning id, or a session id.
    pub local: Option<String>,
    pub hash: Option<String>,
    /// `live`, `hidden` (forgotten here only) or `forgotten` (at its origin).
    pub state: String,
}

pub fn imported(conn: &Connection, gid: &str) -> Result<Option<Imported>> {
    Ok(conn
        .prepare_cached("SELECT kind, local, hash, state FROM sync_imported WHERE gid = ?1")?
        .query_row([gid], |r| {
            Ok(Imported {
                kind: r.get(0)?,
                local: r.get(1)?,
                hash: r.get(2)?,
                state: r.get(3)?,
            })
        })
        .optional()?)
}

/// What to record of a record taken from the remote.
#[derive(Debug, Clone)]
pub struct Taken<'a> {
    pub gid: &'a str,
    pub kind: &'a str,
    pub local: Option<&'a str>,
    pub origin: &'a str,
    pub name: &'a str,
    pub hash: Option<&'a str>,
    pub state: &'a str,
}

pub fn record_import(conn: &Connection, t: &Taken) -> Result<()> {
    conn.prepare_cached(
        "INSERT OR REPLACE INTO sync_imported (gid, kind, local, origin, name, hash, state)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        t.gid, t.kind, t.local, t.origin, t.name, t.hash, t.state
    ])?;
    Ok(())
}

/// Marks the imported records whose row was deleted here (`mem forget`, `mem-learn reset`) as
/// hidden, so that a later version from their origin does not bring them back. Returns how
/// many per origin name.
pub fn hide_missing(conn: &Connection) -> Result<Vec<(String, u64)>> {
    let missing = "state = 'live' AND CASE kind
           WHEN 'observation' THEN NOT EXISTS (SELECT 1 FROM observations o
                WHERE o.id = CAST(sync_imported.local AS INTEGER) AND o.origin IS NOT NULL)
           WHEN 'session' THEN NOT EXISTS (SELECT 1 FROM sessions s
                WHERE s.session_id = sync_imported.local AND s.origin IS NOT NULL)
           ELSE NOT EXISTS (SELECT 1 FROM learnings l
                WHERE l.id = CAST(sync_imported.local AS INTEGER) AND l.origin IS NOT NULL)
         END";
    let mut st = conn.prepare(&format!(
        "SELECT name, count(*) FROM sync_imported WHERE {missing} GROUP BY name ORDER BY name"
    ))?;
    let rows: Vec<(String, u64)> = st
        .query_map([], |r| Ok((r.get(0)?, r.get::<_, i64>(1)? as u64)))?
        .collect::<rusqlite::Result<_>>()?;
    if !rows.is_empty() {
        conn.execute(
            &format!("UPDATE sync_imported SET state = 'hidden' WHERE {missing}"),
            [],
        )?;
    }
    Ok(rows)
}

/// (kind, local row) of the records their origin forgot whose row is still here: what an
/// import deletes next (in its own step, so a run killed before finishes it the next time).
pub fn forgotten_here(conn: &Connection) -> Result<Vec<(String, String)>> {
    let mut st = conn.prepare(
        "SELECT kind, local FROM sync_imported
         WHERE state = 'forgotten' AND local IS NOT NULL AND CASE kind
           WHEN 'observation' THEN EXISTS (SELECT 1 FROM observations o
                WHERE o.id = CAST(sync_imported.local AS INTEGER) AND o.origin IS NOT NULL)
           WHEN 'session' THEN EXISTS (SELECT 1 FROM sessions s
                WHERE s.session_id = sync_imported.local AND s.origin IS NOT NULL)
           ELSE EXISTS (SELECT 1 FROM learnings l
                WHERE l.id = CAST(sync_imported.local AS INTEGER) AND l.origin IS NOT NULL)
         END",
    )?;
    let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Marks an observation, session or learning as taken from `name`'s memory.
pub fn set_origin(conn: &Connection, kind: &str, local: &str, name: &str) -> Result<()> {
    let sql = match kind {
        "observation" => "UPDATE observations SET origin = ?2 WHERE id = CAST(?1 AS INTEGER)",
        "session" => "UPDATE sessions SET origin = ?2 WHERE session_id = ?1",
        _ => "UPDATE learnings SET origin = ?2 WHERE id = CAST(?1 AS INTEGER)",
    };
    conn.prepare_cached(sql)?.execute(params![local, name])?;
    Ok(())
}

/// A session summary taken from the remote.
#[derive(Debug, Clone, Default)]
pub struct SessionIn<'a> {
    pub session_id: &'a str,
    pub project: &'a str,
    pub branch: Option<&'a str>,
    pub title: Option<&'a str>,
    pub summary: &'a str,
    pub key_files: &'a [String],
    pub key_decisions: &'a [String],
    pub started_at: Option<&'a str>,
    pub ended_at: Option<&'a str>,
    pub origin: &'a str,
    pub now: &'a str,
}

/// Stores or updates an imported session; false when a session of this machine has its id
/// (which then stays as it is).
pub fn upsert_session(conn: &Connection, s: &SessionIn) -> Result<bool> {
    let n = conn
        .prepare_cached(
            "INSERT INTO sessions (session_id, project, project_dir, branch, title, summary,
                 key_files, key_decisions, started_at, ended_at, last_activity_at, status,
                 imported, origin, summarized_at)
             VALUES (?1, ?2, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9, 'ended', 1, ?10, ?11)
             ON CONFLICT(session_id) DO UPDATE SET title = excluded.title,
                 summary = excluded.summary, key_files = excluded.key_files,
                 key_decisions = excluded.key_decisions, ended_at = excluded.ended_at,
                 last_activity_at = excluded.last_activity_at, origin = excluded.origin,
                 summarized_at = excluded.summarized_at
             WHERE sessions.origin IS NOT NULL",
        )?
        .execute(params![
            s.session_id,
            s.project,
            s.branch,
            s.title,
            s.summary,
            json_list(s.key_files),
            json_list(s.key_decisions),
            s.started_at,
            s.ended_at,
            s.origin,
            s.now,
        ])?;
    Ok(n > 0)
}

/// A learning taken from the remote, as its origin has it now.
#[derive(Debug, Clone)]
pub struct LearningIn<'a> {
    pub project: &'a str,
    pub content: &'a str,
    pub category: &'a str,
    pub confidence: f64,
    pub evidence: Option<&'a str>,
    pub is_manual: bool,
    pub is_active: bool,
    pub created_at: &'a str,
    pub origin: &'a str,
}

/// Stores an imported learning; returns its id.
pub fn insert_learning(conn: &Connection, l: &LearningIn, now: &str) -> Result<i64> {
    conn.prepare_cached(
        "INSERT INTO learnings (project, content, category, confidence, times_seen,
             source_sessions, evidence, is_manual, is_active, created_at, updated_at, origin)
         VALUES (?1, ?2, ?3, ?4, 1, '[]', ?5, ?6, ?7, ?8, ?9, ?10)",
    )?
    .execute(params![
        l.project,
        l.content,
        l.category,
        l.confidence,
        l.evidence,
        l.is_manual,
        l.is_active,
        l.created_at,
        now,
        l.origin
    ])?;
    Ok(conn.last_insert_rowid())
}

/// Writes a newer version of an imported learning over it.
pub fn update_learning(conn: &Connection, id: i64, l: &LearningIn, now: &str) -> Result<()> {
    conn.prepare_cached(
        "UPDATE learnings SET content = ?2, category = ?3, confidence = ?4, evidence = ?5,
             is_manual = ?6, is_active = ?7, updated_at = ?8
         WHERE id = ?1 AND origin IS NOT NULL",
    )?
    .execute(params![
        id,
        l.content,
        l.category,
        l.confidence,
        l.evidence,
        l.is_manual,
        l.is_active,
        now
    ])?;
    Ok(())
}

/// How far the remote's file `path` was read: (bytes, lines).
pub fn offset(conn: &Connection, path: &str) -> Result<(u64, u64)> {
    Ok(conn
        .prepare_cached("SELECT bytes, lines FROM sync_files WHERE path = ?1")?
        .query_row([path], |r| {
            Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64))
        })
        .optional()?
        .unwrap_or((0, 0)))
}

pub fn set_offset(conn: &Connection, path: &str, bytes: u64, lines: u64) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO sync_files (path, bytes, lines) VALUES (?1, ?2, ?3)
         ON CONFLICT(path) DO UPDATE SET bytes = excluded.bytes, lines = excluded.lines",
    )?
    .execute(params![path, bytes as i64, lines as i64])?;
    Ok(())
}

/// Starts over from a new working clone: every file is read again from its start, and what
/// the remote holds of this machine's records is learned again from its own lines there.
pub fn forget_remote_state(conn: &Connection) -> Result<()> {
    conn.execute_batch("DELETE FROM sync_files; DELETE FROM sync_exported;")?;
    Ok(())
}

/// What the sync tables hold.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Counts {
    /// This machine's records the remote holds.
    pub exported: u64,
    /// This machine's records held back (the redactor found something in them).
    pub held_back: u64,
    /// Records of others, by who they came from.
    pub imported: Vec<From>,
    /// Records others forgot that had been imported here.
    pub forgotten_at_origin: u64,
}

/// The records taken from one machine.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct From {
    pub name: String,
    /// Here and shown.
    pub live: u64,
    /// Forgotten here only.
    pub hidden: u64,
}

pub fn counts(conn: &Connection) -> Result<Counts> {
    let one =
        |sql: &str| -> Result<u64> { Ok(conn.query_row(sql, [], |r| r.get::<_, i64>(0))? as u64) };
    let mut st = conn.prepare(
        "SELECT name, sum(state = 'live'), sum(state = 'hidden') FROM sync_imported
         GROUP BY name ORDER BY name",
    )?;
    let imported = st
        .query_map([], |r| {
            Ok(From {
                name: r.get(0)?,
                live: r.get::<_, i64>(1)? as u64,
                hidden: r.get::<_, i64>(2)? as u64,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    Ok(Counts {
        exported: one("SELECT count(*) FROM sync_exported WHERE hash IS NOT NULL")?,
        held_back: one("SELECT count(*) FROM sync_exported WHERE held IS NOT NULL")?,
        imported,
        forgotten_at_origin: one("SELECT count(*) FROM sync_imported WHERE state = 'forgotten'")?,
    })
}

/// The origin names of the observations of `ids` taken from the remote, with how many each.
pub fn origins_of(conn: &Connection, ids: &[i64]) -> Result<Vec<(String, u64)>> {
    let mut by: std::collections::BTreeMap<String, u64> = Default::default();
    for o in observations::by_ids(conn, ids)? {
        if let Some(name) = o.origin {
            *by.entry(name).or_default() += 1;
        }
    }
    Ok(by.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db() -> (tempfile::TempDir, Connection) {
        let dir = tempfile::tempdir().unwrap();
        let conn = crate::store::open(&dir.path().join("mem.db")).unwrap();
        (dir, conn)
    }

    fn note(conn: &Connection, project: &str, title: &str) -> i64 {
        let o = Observation {
            project: Some(project.into()),
            kind: "discovery".into(),
            title: title.into(),
            summary: title.into(),
            created_at: Some("2026-03-01T10:00:00.000Z".into()),
            ..Default::default()
        };
        observations::insert(conn, &o, true, "2026-03-01T10:00:00.000Z").unwrap()
    }

    #[test]
    fn a_row_is_looked_at_until_written_and_again_once_changed() {
        let (_d, conn) = db();
        let roots = vec!["/w/app".to_string()];
        let id = note(&conn, "/w/app", "uses pnpm");
        note(&conn, "/w/other", "not shared");
        let out = observations_to_export(&conn, &roots).unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].obs.id, Some(id));
        assert!(out[0].was.is_none());
        let local = id.to_string();
        let p = Put {
            gid: "g1",
            kind: "observation",
            local: &local,
            born: out[0].obs.created_at.as_deref().unwrap(),
            project: "k",
            stamp: Some(&out[0].stamp),
            hash: "h1",
        };
        put(&conn, &p).unwrap();
        assert!(observations_to_export(&conn, &roots).unwrap().is_empty());
        conn.execute(
            "UPDATE observations SET updated_at = 'later' WHERE id = ?1",
            [id],
        )
        .unwrap();
        let again = observations_to_export(&conn, &roots).unwrap();
        assert_eq!(again[0].was.as_ref().unwrap().hash.as_deref(), Some("h1"));
        assert!(gone(&conn).unwrap().is_empty());
        conn.execute("DELETE FROM observations WHERE id = ?1", [id])
            .unwrap();
        let g = gone(&conn).unwrap();
        assert_eq!((g[0].gid.as_str(), g[0].written), ("g1", true));
    }

    #[test]
    fn imported_rows_deleted_here_are_hidden_once() {
        let (_d, conn) = db();
        let id = note(&conn, "/w/app", "from elsewhere");
        let local = id.to_string();
        set_origin(&conn, "observation", &local, "desktop").unwrap();
        let t = Taken {
            gid: "d:o1",
            kind: "observation",
            local: Some(&local),
            origin: "d",
            name: "desktop",
            hash: Some("h"),
            state: "live",
        };
        record_import(&conn, &t).unwrap();
        assert!(hide_missing(&conn).unwrap().is_empty());
        assert!(
            observations_to_export(&conn, &["/w/app".into()])
                .unwrap()
                .is_empty()
        );
        conn.execute("DELETE FROM observations WHERE id = ?1", [id])
            .unwrap();
        assert_eq!(hide_missing(&conn).unwrap(), [("desktop".to_string(), 1)]);
        assert!(hide_missing(&conn).unwrap().is_empty());
        assert_eq!(imported(&conn, "d:o1").unwrap().unwrap().state, "hidden");
    }
}
