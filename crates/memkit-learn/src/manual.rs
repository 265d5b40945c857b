//! What the user does to learnings by hand (mem-learn list, add, edit, remove, reset): a learning
//! typed or edited is manual (confidence 1.0, never merged into, decayed or contradicted) and
//! redacted like a note, since it is shown at every SessionStart.

use rusqlite::Connection;
use serde_json::json;

use memkit_core::store::learnings::{self, Learning};
use memkit_core::store::{self, events, projects};
use memkit_core::{Error, Result, project};

/// A category as typed (`--category`): one of `learnings::CATEGORIES`, else a usage error.
pub fn category_arg(c: &str) -> Result<&'static str> {
    learnings::CATEGORIES
        .iter()
        .find(|k| **k == c.trim().to_lowercase())
        .copied()
        .ok_or_else(|| {
            Error::Usage(format!(
                "--category {c:?}: use one of {}",
                learnings::CATEGORIES.join(", ")
            ))
        })
}

/// The project roots a command means: the one named (directory, root path or name), else the
/// current directory's.
pub fn roots(conn: &Connection, p: Option<&str>) -> Result<Vec<String>> {
    match p {
        Some(p) => projects::resolve(conn, p),
        None => project::current_dir()
            .map(|d| vec![project::identify(&d).root])
            .ok_or_else(|| {
                Error::Usage("no project here: give --project (or --all-projects)".into())
            }),
    }
}

/// The learning an id names (`12` or `l12`).
pub fn found(conn: &Connection, id: &str) -> Result<Learning> {
    let n: i64 = id
        .trim()
        .trim_start_matches(['l', 'L', '#'])
        .parse()
        .map_err(|_| Error::Usage(format!("{id:?} is not a learning id (a number such as 12)")))?;
    learnings::get(conn, n)?
        .ok_or_else(|| Error::Usage(format!("no learning {n} (mem-learn list --all shows them)")))
}

/// The learnings of `roots` (every project's when None), most confident first per project.
pub fn list(
    conn: &Connection,
    roots: Option<Vec<String>>,
    all: bool,
    min_confidence: Option<f64>,
) -> Result<Vec<Learning>> {
    let mut rows = Vec::new();
    for root in roots.map_or(vec![None], |r| r.into_iter().map(Some).collect()) {
        rows.extend(learnings::list(
            conn,
            &learnings::Filter {
                project: root.as_deref(),
                all,
                min_confidence,
            },
        )?);
    }
    Ok(rows)
}

/// Stores a learning the user typed for the project at `root`, redacted; logs it.
pub fn add(conn: &Connection, root: &str, text: &str, category: &str) -> Result<Learning> {
    let text = memkit_capture::redact::redact_str(text.trim()).into_owned();
    if text.is_empty() {
        return Err(Error::Usage("add: the learning's text is empty".into()));
    }
    let category = category_arg(category)?;
    let id = learnings::insert(
        conn,
        &learnings::New {
            project: Some(root),
            content: &text,
            category,
            confidence: crate::MANUAL,
            source_session: None,
            evidence: None,
            is_manual: true,
        },
        &store::now(),
    )?;
    events::log(
        conn,
        None,
        "learning",
        None,
        "info",
        Some(&json!({"outcome": "added", "id": id, "project": root})),
    )?;
    Ok(learnings::get(conn, id)?.expect("just inserted"))
}

/// Replaces a learning's text (and category): what the user wrote is theirs, so it becomes
/// manual, fully trusted and active again.
pub fn edit(conn: &Connection, id: &str, text: &str, category: Option<&str>) -> Result<Learning> {
    let mut l = found(conn, id)?;
    if text.trim().is_empty() {
        return Err(Error::Usage("edit: the new text is empty".into()));
    }
    l.content = memkit_capture::redact::redact_str(text.trim()).into_owned();
    if let Some(c) = category {
        l.category = category_arg(c)?.to_string();
    }
    l.confidence = crate::MANUAL;
    l.is_active = true;
    l.replaced_by = None;
    learnings::update_manual(conn, &l, &store::now())?;
    Ok(learnings::get(conn, l.id)?.expect("just updated"))
}

/// The roots as a user reads them: "every project" for None.
pub fn describe(roots: &[Option<String>]) -> String {
    match roots {
        [None] => "every project".to_string(),
        r => r.iter().flatten().cloned().collect::<Vec<_>>().join(", "),
    }
}

/// Deletes the learnings of each root (every project's for None); returns how many.
pub fn reset(conn: &Connection, roots: &[Option<String>]) -> Result<usize> {
    let mut n = 0;
    for r in roots {
        n += learnings::reset(conn, r.as_deref())?;
    }
    Ok(n)
}
