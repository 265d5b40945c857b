//! What mem-report lists: sessions and projects with their counts, observations by time or by
//! the file they touched.

use rusqlite::{Connection, params_from_iter, types::Value};
use serde::Serialize;

use super::observations::{COLS, from_row};
use super::parse_list;
use crate::Result;
use crate::record::Observation;

/// Which rows: of these project roots (all when None), active between `since` and `until`.
#[derive(Debug, Clone, Default)]
pub struct Scope<'a> {
    pub projects: Option<&'a [String]>,
    pub since: Option<&'a str>,
    pub until: Option<&'a str>,
}

impl<'a> Scope<'a> {
    /// These projects' rows (every project's when None), at any time.
    pub fn of(projects: Option<&'a [String]>) -> Scope<'a> {
        Scope {
            projects,
            ..Scope::default()
        }
    }

    /// ` AND …` conditions on `project_col` and `time_col`, and their parameters.
    fn clause(&self, project_col: &str, time_col: &str) -> (String, Vec<Value>) {
        let mut sql = String::new();
        let mut args = Vec::new();
        if let Some(ps) = self.projects {
            sql.push_str(&format!(
                " AND {project_col} IN ({})",
                super::marks(ps.len().max(1))
            ));
            if ps.is_empty() {
                args.push(Value::Null);
            }
            args.extend(ps.iter().map(|p| Value::Text(p.clone())));
        }
        if let Some(t) = self.since {
            sql.push_str(&format!(" AND {time_col} >= ?"));
            args.push(Value::Text(t.to_string()));
        }
        if let Some(t) = self.until {
            // Inclusive of the whole millisecond: stored times carry milliseconds.
            sql.push_str(&format!(" AND {time_col} <= ?"));
            args.push(Value::Text(t.to_string()));
        }
        (sql, args)
    }
}

/// One session as listed (`"type":"session"`).
#[derive(Debug, Clone, Serialize)]
#[serde(remote = "Self")]
pub struct SessionRow {
    /// The visible id (`s12`).
    #[serde(rename = "ref")]
    pub handle: String,
    pub session_id: String,
    pub project: Option<String>,
    pub project_name: Option<String>,
    /// Where Claude Code was started, when it differs from the project root.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Its title, else the goal its summary states.
    pub title: Option<String>,
    pub started_at: Option<String>,
    pub last_activity_at: Option<String>,
    pub status: String,
    pub summary: Option<String>,
    pub observations: i64,
    /// Files its observations modified, in the order first seen.
    pub files_modified: Vec<String>,
    /// Who a session taken from the sync remote came from (their `sync.name`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
}
crate::record!(SessionRow = "session");

/// The last moment a session was seen.
const SESSION_TIME: &str = "coalesce(s.last_activity_at, s.ended_at, s.started_at, '')";

/// Sessions in scope, most recent first (at most `limit`).
pub fn sessions(conn: &Connection, scope: &Scope, limit: usize) -> Result<Vec<SessionRow>> {
    let (cond, args) = scope.clause("s.project", SESSION_TIME);
    session_rows(conn, &cond, args, limit)
}

/// One session by its session id.
pub fn session(conn: &Connection, session_id: &str) -> Result<Option<SessionRow>> {
    let args = vec![Value::Text(session_id.to_string())];
    Ok(session_rows(conn, " AND s.session_id = ?", args, 1)?
        .into_iter()
        .next())
}

fn session_rows(
    conn: &Connection,
    cond: &str,
    mut args: Vec<Value>,
    limit: usize,
) -> Result<Vec<SessionRow>> {
    args.push(Value::Integer(limit.min(i64::MAX as usize) as i64));
    let mut st = conn.prepare(&format!(
        "SELECT s.rowid, s.session_id, s.project, s.cwd, s.title, s.started_at,
                {SESSION_TIME}, s.status, s.summary,
                (SELECT count(*) FROM observations o WHERE o.session_id = s.session_id),
                (SELECT json_group_array(files_modified) FROM
                   (SELECT files_modified FROM observations o
                    WHERE o.session_id = s.session_id AND files_modified != '[]' ORDER BY id)),
                s.origin
         FROM sessions s WHERE 1{cond}
         ORDER BY {SESSION_TIME} DESC, s.rowid DESC LIMIT ?"
    ))?;
    let rows = st.query_map(params_from_iter(args), |r| {
        let project: Option<String> = r.get(2)?;
        let cwd: Option<String> = r.get(3)?;
        let mut files: Vec<String> = Vec::new();
        for list in parse_list(r.get(10)?) {
            for f in parse_list(Some(list)) {
                if !files.contains(&f) {
                    files.push(f);
                }
            }
        }
        Ok(SessionRow {
            handle: crate::ids::session(r.get(0)?),
            session_id: r.get(1)?,
            project_name: project.as_deref().map(crate::project::name_of),
            cwd: cwd.filter(|c| Some(c) != project.as_ref()),
            project,
            title: {
                let summary: Option<String> = r.get(8)?;
                r.get::<_, Option<String>>(4)?
                    .filter(|t| !t.trim().is_empty())
                    .or_else(|| summary.as_deref().and_then(goal))
            },
            started_at: r.get(5)?,
            last_activity_at: Some(r.get::<_, String>(6)?).filter(|t| !t.is_empty()),
            status: r.get(7)?,
            summary: r.get(8)?,
            observations: r.get(9)?,
            files_modified: files,
            origin: r.get(11)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The first sentence of a summary's `Goal: …`, clipped to a title's length.
fn goal(summary: &str) -> Option<String> {
    let g = summary.trim().strip_prefix("Goal:")?.trim();
    let end = g.find(". ").or_else(|| g.find('\n')).unwrap_or(g.len());
    let g = g[..end].trim_end_matches('.').trim();
    (!g.is_empty()).then(|| crate::clip(g, 80))
}

/// Whether any session or observation is stored under the project `root`.
pub fn known(conn: &Connection, root: &str) -> Result<bool> {
    Ok(conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM sessions WHERE project = ?1)
             OR EXISTS (SELECT 1 FROM observations WHERE project = ?1)",
        [root],
        |r| r.get(0),
    )?)
}

/// Observations in scope (by `created_at`), oldest first.
pub fn observations(conn: &Connection, scope: &Scope) -> Result<Vec<Observation>> {
    let (cond, args) = scope.clause("project", "created_at");
    let mut st = conn.prepare(&format!(
        "SELECT {COLS} FROM observations WHERE 1{cond} ORDER BY created_at, id"
    ))?;
    let rows = st.query_map(params_from_iter(args), from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The `before` observations made before `at` and the `after` made at or after it (newest
/// last), of these project roots (all when None): a timeline around a moment.
pub fn around(
    conn: &Connection,
    projects: Option<&[String]>,
    at: &str,
    before: usize,
    after: usize,
) -> Result<Vec<Observation>> {
    let scope = Scope {
        projects,
        ..Scope::default()
    };
    let (cond, args) = scope.clause("project", "created_at");
    let side = |op: &str, order: &str, n: usize| -> Result<Vec<Observation>> {
        let mut a = args.clone();
        a.push(Value::Text(at.to_string()));
        a.push(Value::Integer(n.min(i64::MAX as usize) as i64));
        let mut st = conn.prepare(&format!(
            "SELECT {COLS} FROM observations WHERE 1{cond} AND created_at {op} ?
             ORDER BY created_at {order}, id {order} LIMIT ?"
        ))?;
        let rows = st.query_map(params_from_iter(a), from_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    };
    let mut out = side("<", "DESC", before)?;
    out.reverse();
    out.extend(side(">=", "ASC", after)?);
    Ok(out)
}

/// Observations that modified or read a file: its path as stored, or a path ending in
/// `/path` (`app/auth.py` finds `/repo/app/auth.py`), oldest first.
pub fn touching(conn: &Connection, path: &str, scope: &Scope) -> Result<Vec<Observation>> {
    let path = path.trim().trim_start_matches("./");
    let (cond, mut args) = scope.clause("project", "created_at");
    // A cheap prefilter on the JSON text; the exact test is on the parsed lists.
    args.insert(0, Value::Text(path.to_string()));
    let mut st = conn.prepare(&format!(
        "SELECT {COLS} FROM observations
         WHERE (instr(files_modified, ?1) > 0 OR instr(files_read, ?1) > 0){cond}
         ORDER BY created_at, id"
    ))?;
    let rows = st.query_map(params_from_iter(args), from_row)?;
    let names = |list: &[String]| list.iter().any(|f| same_file(f, path));
    Ok(rows
        .collect::<rusqlite::Result<Vec<_>>>()?
        .into_iter()
        .filter(|o| names(&o.files_modified) || names(&o.files_read))
        .collect())
}

/// `stored` is the file `given` names: equal, or ending in it after a separator.
pub fn same_file(stored: &str, given: &str) -> bool {
    stored == given
        || stored
            .strip_suffix(given)
            .is_some_and(|head| head.ends_with(['/', '\\']))
}

/// One project as listed (`"type":"project"`).
#[derive(Debug, Clone, Serialize)]
#[serde(remote = "Self")]
pub struct ProjectRow {
    pub name: String,
    pub project: String,
    pub description: Option<String>,
    pub sessions: i64,
    pub observations: i64,
    pub last_activity_at: Option<String>,
}
crate::record!(ProjectRow = "project");

/// Every project with sessions or observations, the most recently active first.
pub fn projects(conn: &Connection) -> Result<Vec<ProjectRow>> {
    let mut st = conn.prepare(&format!(
        "WITH roots AS (
             SELECT project FROM sessions WHERE project IS NOT NULL
             UNION SELECT project FROM observations WHERE project IS NOT NULL)
         SELECT r.project, p.name, p.description,
                (SELECT count(*) FROM sessions s WHERE s.project = r.project),
                (SELECT count(*) FROM observations o WHERE o.project = r.project),
                max((SELECT max({SESSION_TIME}) FROM sessions s WHERE s.project = r.project),
                    coalesce((SELECT max(created_at) FROM observations o
                              WHERE o.project = r.project), ''))
         FROM roots r LEFT JOIN projects p ON p.full_path = r.project
         ORDER BY 6 DESC, r.project"
    ))?;
    let rows = st.query_map([], |r| {
        let root: String = r.get(0)?;
        let last: Option<String> = r.get(5)?;
        Ok(ProjectRow {
            name: r
                .get::<_, Option<String>>(1)?
                .unwrap_or_else(|| crate::project::name_of(&root)),
            project: root,
            description: r.get(2)?,
            sessions: r.get(3)?,
            observations: r.get(4)?,
            last_activity_at: last.filter(|t| !t.is_empty()),
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_untitled_session_is_called_by_its_goal() {
        assert_eq!(
            goal("Goal: Fix the login race. Work (2 observations): …").as_deref(),
            Some("Fix the login race")
        );
        assert_eq!(goal("Work (2 observations): …"), None);
        assert_eq!(goal("Goal: . Outcome: x"), None);
        assert_eq!(
            goal(&format!("Goal: {}", "a".repeat(200)))
                .unwrap()
                .chars()
                .count(),
            80
        );
    }

    #[test]
    fn a_file_is_named_by_its_path_or_an_ending_after_a_separator() {
        assert!(same_file("/r/app/auth.py", "app/auth.py"));
        assert!(same_file("/r/app/auth.py", "/r/app/auth.py"));
        assert!(same_file("C:\\r\\auth.py", "auth.py"));
        assert!(!same_file("/r/app/oauth.py", "auth.py"));
        assert!(!same_file("/r/app/auth.py.bak", "auth.py"));
    }
}
