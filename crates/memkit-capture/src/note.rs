//! A note saved by hand (`mem-capture --note` and `--notes`, the MCP `save` tool): a notes
//! file's line read, the project it belongs to, the exclusion check, redaction and the queue
//! row, in one place.

use std::path::Path;

use rusqlite::Connection;
use serde_json::Value;

use crate::{Note, Policy, store_note};
use memkit_core::project::{self, Project};
use memkit_core::store;
use memkit_core::{Error, Result};

/// The project a note names: a stored project's name first, then a directory, else a new
/// project of that name; `None` for none named and no current project. With the excluded
/// directory to check, when the project is the current directory's.
pub fn project(
    conn: &Connection,
    named: Option<&str>,
) -> Result<(Option<Project>, Option<String>)> {
    let Some(name) = named else {
        let cwd = std::env::current_dir()?.display().to_string();
        return Ok(match project::dir(Some(&cwd)) {
            // The directory counts too: it may lie under an excluded path inside the repo.
            Some(dir) => (Some(project::identify(&dir)), Some(dir)),
            None => (None, None),
        });
    };
    // A lookup that fails counts as an unknown name.
    if let Some((root, name)) = store::projects::find(conn, name).ok().flatten() {
        return Ok((
            Some(Project {
                root,
                name,
                branch: None,
                source: "path",
            }),
            None,
        ));
    }
    if Path::new(name).is_dir() {
        let dir = std::path::absolute(name)?.display().to_string();
        return Ok((Some(project::identify(&dir)), None));
    }
    Ok((
        Some(Project {
            root: name.to_string(),
            name: project::name_of(name),
            branch: None,
            source: "path",
        }),
        None,
    ))
}

/// Queues `note` (redacted like every capture) for the project `named` or the current
/// directory's; returns its queue id and project. A note for an excluded project is a usage
/// error and stores nothing.
pub fn save(
    conn: &Connection,
    policy: &Policy,
    note: &Note,
    named: Option<&str>,
) -> Result<(i64, Option<Project>)> {
    let (pr, excluded_dir) = project(conn, named)?;
    if let Some(p) = &pr
        && policy.excluded(p, excluded_dir.as_deref())
    {
        return Err(Error::Usage(format!(
            "nothing stored: project {} is excluded (MEM_EXCLUDE)",
            p.root
        )));
    }
    let id = store::write_tx(conn, |tx| store_note(tx, note, pr.as_ref()))?
        .ok_or_else(|| Error::Store("note was not stored".into()))?;
    Ok((id, pr))
}

/// One line of a notes file (`mem-capture --notes`) as a note and the project it names, or why
/// it cannot be one.
pub fn parse_line(v: &Value) -> std::result::Result<(Note, Option<String>), String> {
    let text_of = |k: &str| -> std::result::Result<Option<String>, String> {
        match &v[k] {
            Value::Null => Ok(None),
            Value::String(s) => Ok(Some(s.clone())),
            // Ids are often numbers; kept as written.
            Value::Number(n) if k == "id" => Ok(Some(n.to_string())),
            other => Err(format!("{k:?} must be a string, not {other}")),
        }
    };
    let text = match (text_of("text")?, text_of("note")?) {
        (Some(t), _) | (None, Some(t)) if !t.trim().is_empty() => t,
        _ => return Err("no \"text\": a note needs some text".into()),
    };
    let tags = match &v["tags"] {
        Value::Null => Vec::new(),
        Value::String(s) => s.split(',').map(|t| t.trim().to_string()).collect(),
        Value::Array(a) => a
            .iter()
            .map(|t| t.as_str().map(|t| t.trim().to_string()))
            .collect::<Option<Vec<_>>>()
            .ok_or("\"tags\" must be strings")?,
        other => return Err(format!("\"tags\" must be a list of strings, not {other}")),
    };
    let date = match text_of("date")? {
        Some(d) => {
            Some(store::parse_time(&d).ok_or_else(|| format!("date {d:?}: {}", store::DATE_HINT))?)
        }
        None => None,
    };
    let external_id = match text_of("id")? {
        Some(id) => Some(id),
        None => text_of("key")?,
    };
    Ok((
        Note {
            text,
            tags: tags.into_iter().filter(|t| !t.is_empty()).collect(),
            title: text_of("title")?,
            external_id,
            date,
        },
        text_of("project")?,
    ))
}
