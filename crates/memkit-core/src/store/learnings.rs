//! `learnings`: what mem-learn distilled from a project's sessions, with its confidence, and
//! the sessions due for extraction.

use rusqlite::{Connection, OptionalExtension, params};

use super::{json_list, parse_list};
use crate::Result;

/// The categories a learning can have.
pub const CATEGORIES: &[&str] = &["convention", "gotcha", "decision", "dependency", "pattern"];

/// A stored learning.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Learning {
    pub id: i64,
    /// The visible id (`l3`).
    #[serde(rename = "ref")]
    pub handle: String,
    pub project: Option<String>,
    pub content: String,
    pub category: String,
    pub confidence: f64,
    pub times_seen: i64,
    pub source_sessions: Vec<String>,
    /// What it came from: the user's words (heuristic) or the model's reason.
    pub evidence: Option<String>,
    pub is_manual: bool,
    pub is_active: bool,
    /// The learning that contradicted this one.
    pub replaced_by: Option<i64>,
    pub created_at: String,
    pub updated_at: String,
    /// Who a learning taken from the sync remote came from (their `sync.name`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
}

const COLUMNS: &str = "id, project, content, category, confidence, times_seen, source_sessions, \
    evidence, is_manual, is_active, replaced_by, created_at, updated_at, origin";

fn row(r: &rusqlite::Row) -> rusqlite::Result<Learning> {
    let id: i64 = r.get(0)?;
    Ok(Learning {
        id,
        handle: crate::ids::learning(id),
        project: r.get(1)?,
        content: r.get(2)?,
        category: r.get(3)?,
        confidence: r.get(4)?,
        times_seen: r.get(5)?,
        source_sessions: parse_list(r.get(6)?),
        evidence: r.get(7)?,
        is_manual: r.get(8)?,
        is_active: r.get(9)?,
        replaced_by: r.get(10)?,
        created_at: r.get(11)?,
        updated_at: r.get(12)?,
        origin: r.get(13)?,
    })
}

/// Which learnings [`list`] returns.
#[derive(Debug, Clone, Default)]
pub struct Filter<'a> {
    /// One project (None: every project).
    pub project: Option<&'a str>,
    /// Inactive ones too.
    pub all: bool,
    pub min_confidence: Option<f64>,
}

/// Learnings, manual first, then by confidence and how often seen.
pub fn list(conn: &Connection, f: &Filter) -> Result<Vec<Learning>> {
    // Only the clauses asked, each a plain comparison: `(?1 IS NULL OR project = ?1)` kept
    // SQLite off learnings_project, and SessionStart read every project's learnings.
    let min = f.min_confidence.unwrap_or(0.0);
    let mut params: Vec<&dyn rusqlite::ToSql> = vec![&min];
    let mut sql = format!("SELECT {COLUMNS} FROM learnings WHERE confidence >= ?");
    if let Some(p) = &f.project {
        params.push(p);
        sql.push_str(" AND project = ?");
    }
    if !f.all {
        sql.push_str(" AND is_active = 1");
    }
    sql.push_str(" ORDER BY is_manual DESC, confidence DESC, times_seen DESC, id");
    let mut st = conn.prepare(&sql)?;
    let rows = st.query_map(params.as_slice(), row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

pub fn get(conn: &Connection, id: i64) -> Result<Option<Learning>> {
    Ok(conn
        .query_row(
            &format!("SELECT {COLUMNS} FROM learnings WHERE id = ?1"),
            [id],
            row,
        )
        .optional()?)
}

/// A new learning to store.
#[derive(Debug, Clone)]
pub struct New<'a> {
    pub project: Option<&'a str>,
    pub content: &'a str,
    pub category: &'a str,
    pub confidence: f64,
    pub source_session: Option<&'a str>,
    pub evidence: Option<&'a str>,
    pub is_manual: bool,
}

pub fn insert(conn: &Connection, n: &New, now: &str) -> Result<i64> {
    let sources: Vec<String> = n.source_session.map(str::to_string).into_iter().collect();
    conn.execute(
        "INSERT INTO learnings (project, content, category, confidence, times_seen,
             source_sessions, evidence, is_manual, is_active, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, 1, ?5, ?6, ?7, 1, ?8, ?8)",
        params![
            n.project,
            n.content,
            n.category,
            n.confidence,
            json_list(&sources),
            n.evidence,
            n.is_manual,
            now
        ],
    )?;
    Ok(conn.last_insert_rowid())
}

/// Writes a learning's confidence, count, sources and state as computed by the caller.
pub fn update(conn: &Connection, l: &Learning, now: &str) -> Result<()> {
    conn.execute(
        "UPDATE learnings SET content = ?2, category = ?3, confidence = ?4, times_seen = ?5,
             source_sessions = ?6, is_active = ?7, replaced_by = ?8, updated_at = ?9
         WHERE id = ?1",
        params![
            l.id,
            l.content,
            l.category,
            l.confidence,
            l.times_seen,
            json_list(&l.source_sessions),
            l.is_active,
            l.replaced_by,
            now
        ],
    )?;
    Ok(())
}

/// Writes a learning the user typed over: `update`, and manual from now on (never merged into,
/// decayed or contradicted), in one transaction.
pub fn update_manual(conn: &Connection, l: &Learning, now: &str) -> Result<()> {
    let tx = conn.unchecked_transaction()?;
    update(&tx, l, now)?;
    tx.execute("UPDATE learnings SET is_manual = 1 WHERE id = ?1", [l.id])?;
    tx.commit()?;
    Ok(())
}

/// Deletes one learning; false when there was none.
pub fn remove(conn: &Connection, id: i64) -> Result<bool> {
    let n = conn.execute("DELETE FROM learnings WHERE id = ?1", [id])?;
    conn.execute(
        "DELETE FROM embeddings WHERE owner_kind = 'learning' AND owner_id = ?1",
        [id],
    )?;
    Ok(n > 0)
}

/// Deletes the learnings of `project` (every project's when None) and lets every summarised
/// session of it be learned from again. Returns how many went.
pub fn reset(conn: &Connection, project: Option<&str>) -> Result<usize> {
    conn.execute(
        "DELETE FROM embeddings WHERE owner_kind = 'learning' AND owner_id IN
             (SELECT id FROM learnings WHERE ?1 IS NULL OR project = ?1)",
        [project],
    )?;
    let n = conn.execute(
        "DELETE FROM learnings WHERE ?1 IS NULL OR project = ?1",
        [project],
    )?;
    conn.execute(
        "UPDATE sessions SET learned_obs_id = NULL, learned_at = NULL
         WHERE ?1 IS NULL OR project = ?1",
        [project],
    )?;
    Ok(n)
}

/// A session whose summary has not been learned from yet.
#[derive(Debug, Clone)]
pub struct DueSession {
    pub session_id: String,
    pub project: Option<String>,
    pub summary: String,
    /// The newest observation the summary covers (recorded once learned).
    pub summary_obs_id: i64,
}

/// Summarised sessions not learned from since their last summary, the least recently active
/// first, whatever order their summaries were written in (the latest first, see
/// `sessions::due_for_summary`): a later session confirms or contradicts an earlier one
/// (`only`: that session alone, learned or not). Sessions taken from the sync remote are left
/// out: their learnings come with them from the machine that learned them.
pub fn due(conn: &Connection, only: Option<&str>) -> Result<Vec<DueSession>> {
    let mut st = conn.prepare(
        "SELECT session_id, project, summary, coalesce(summary_obs_id, 0) FROM sessions
         WHERE summary IS NOT NULL AND origin IS NULL
           AND (CASE WHEN ?1 IS NULL
                     THEN learned_at IS NULL OR coalesce(summary_obs_id, 0) > coalesce(learned_obs_id, 0)
                     ELSE session_id = ?1 END)
         ORDER BY coalesce(last_activity_at, summarized_at), session_id",
    )?;
    let rows = st.query_map([only], |r| {
        Ok(DueSession {
            session_id: r.get(0)?,
            project: r.get(1)?,
            summary: r.get(2)?,
            summary_obs_id: r.get(3)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Records that `s` was learned from (in the transaction that stores its outcomes, so a run
/// killed in between redoes the session and duplicates nothing).
pub fn mark_learned(conn: &Connection, s: &DueSession, now: &str) -> Result<()> {
    conn.execute(
        "UPDATE sessions SET learned_obs_id = ?2, learned_at = ?3 WHERE session_id = ?1",
        params![s.session_id, s.summary_obs_id, now],
    )?;
    Ok(())
}

/// (learning id, content, created_at) of every learning, for mem-embed.
pub fn texts(conn: &Connection) -> Result<Vec<(i64, String, String)>> {
    let mut st = conn.prepare("SELECT id, content, created_at FROM learnings ORDER BY id")?;
    let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The learnings of `ids` (any state), in no particular order.
pub fn by_ids(conn: &Connection, ids: &[i64]) -> Result<Vec<Learning>> {
    super::by_chunks(ids, 500, |list| {
        let mut st = conn.prepare(&format!(
            "SELECT {COLUMNS} FROM learnings WHERE id IN ({list})"
        ))?;
        let rows = st.query_map([], row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    })
}

/// The active learnings of `projects` (every project's when None; none for an empty list)
/// updated within the bounds: what mem-search may find.
pub fn searchable(
    conn: &Connection,
    projects: Option<&[String]>,
    after: Option<&str>,
    before: Option<&str>,
) -> Result<Vec<Learning>> {
    // The projects in SQL, so that learnings_project is used: a prompt hook in one project of
    // a million-record store read every project's 50,000 learnings to keep a twelfth of them.
    let in_projects = projects.map_or(String::new(), |ps| {
        format!(" AND project IN ({})", vec!["?"; ps.len()].join(", "))
    });
    let mut st = conn.prepare(&format!(
        "SELECT {COLUMNS} FROM learnings WHERE is_active = 1
           AND updated_at >= coalesce(?1, '') AND (?2 IS NULL OR updated_at <= ?2){in_projects}
         ORDER BY id"
    ))?;
    let mut args: Vec<&dyn rusqlite::ToSql> = vec![&after, &before];
    args.extend(
        projects
            .unwrap_or_default()
            .iter()
            .map(|p| p as &dyn rusqlite::ToSql),
    );
    let rows = st
        .query_map(args.as_slice(), row)?
        .collect::<rusqlite::Result<Vec<Learning>>>()?;
    Ok(rows)
}

/// The commands a session ran that succeeded (Bash, as typed), oldest first.
pub fn commands(conn: &Connection, session_id: &str) -> Result<Vec<String>> {
    let mut st = conn.prepare(
        "SELECT json_extract(payload, '$.tool_input.command') FROM pending_queue
         WHERE session_id = ?1 AND event = 'PostToolUse' AND tool_name = 'Bash'
           AND agent_id IS NULL ORDER BY created_at, id",
    )?;
    let rows = st.query_map([session_id], |r| r.get::<_, Option<String>>(0))?;
    Ok(rows
        .collect::<rusqlite::Result<Vec<_>>>()?
        .into_iter()
        .flatten()
        .collect())
}

/// (session, command) of the successful commands of `project`'s sessions that started before
/// `session` did.
pub fn earlier_commands(
    conn: &Connection,
    project: &str,
    session_id: &str,
) -> Result<Vec<(String, String)>> {
    let mut st = conn.prepare(
        "SELECT q.session_id, json_extract(q.payload, '$.tool_input.command') FROM pending_queue q
           JOIN sessions s ON s.session_id = q.session_id
         WHERE s.project = ?1 AND q.session_id != ?2 AND q.event = 'PostToolUse'
           AND q.tool_name = 'Bash' AND q.agent_id IS NULL
           AND s.started_at < (SELECT started_at FROM sessions WHERE session_id = ?2)",
    )?;
    let rows = st.query_map(params![project, session_id], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?))
    })?;
    Ok(rows
        .collect::<rusqlite::Result<Vec<_>>>()?
        .into_iter()
        .filter_map(|(s, c)| Some((s, c?)))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What mem-search may find is the asked projects' active learnings within the bounds, and
    /// only theirs: never another project's, nor one without a project when projects are asked.
    #[test]
    fn searchable_learnings_are_the_asked_projects_own() {
        let dir = tempfile::tempdir().unwrap();
        let conn = super::super::open(&dir.path().join("mem.db")).unwrap();
        let add = |project: Option<&str>, content: &str, at: &str| {
            let n = New {
                project,
                content,
                category: "convention",
                confidence: 0.8,
                source_session: None,
                evidence: None,
                is_manual: true,
            };
            insert(&conn, &n, at).unwrap()
        };
        let a = add(Some("/p/a"), "a one", "2026-01-01T00:00:00Z");
        let b = add(Some("/p/b"), "b one", "2026-01-02T00:00:00Z");
        let none = add(None, "no project", "2026-01-03T00:00:00Z");
        let a2 = add(Some("/p/a"), "a two", "2026-02-01T00:00:00Z");
        let ids = |ps: Option<&[String]>, after: Option<&str>| -> Vec<i64> {
            searchable(&conn, ps, after, None)
                .unwrap()
                .iter()
                .map(|l| l.id)
                .collect()
        };
        let (pa, both) = (
            ["/p/a".to_string()],
            ["/p/a".to_string(), "/p/b".to_string()],
        );
        assert_eq!(ids(None, None), [a, b, none, a2]);
        assert_eq!(ids(Some(&pa), None), [a, a2]);
        assert_eq!(ids(Some(&both), None), [a, b, a2]);
        assert_eq!(ids(Some(&[]), None), Vec::<i64>::new());
        assert_eq!(ids(Some(&pa), Some("2026-01-15")), [a2]);
    }
}
