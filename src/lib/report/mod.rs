//! mem-report's views, built from the store and written as markdown (for people and for Claude)
//! or as records (in a pipe): memories in full by id, a session, the last days of a project,
//! what was done to a file. `model` is what they show; `html` writes the same as one page.

pub mod chart;
pub mod html;
pub mod model;
pub mod records;

use std::io::Write;

use crate::Result;
use crate::cli::Io;
use crate::ids::{self, Id};
use crate::record::Observation;
use crate::store::report::{self as rep, Scope, SessionRow};

use crate::store::{self, learnings, observations};
use model::{minute, plural, relative};

/// Each id in full; false when none exists.
pub fn show_ids(conn: &rusqlite::Connection, wanted: &[Id], io: &mut Io, md: bool) -> Result<bool> {
    let mut found = false;
    for id in wanted {
        let shown = match *id {
            Id::Obs(n) => match observations::get(conn, n)? {
                Some(o) => {
                    write_obs(&o, io, md)?;
                    true
                }
                None => false,
            },
            Id::Session(n) => match store::sessions::id_at(conn, n)? {
                Some(sid) => show_session(conn, &sid, io, md)?,
                None => false,
            },
            Id::Learning(n) => match learnings::get(conn, n)? {
                Some(l) if md => {
                    io.out.write_all(learning_markdown(&l).as_bytes())?;
                    true
                }
                Some(l) => {
                    io.record(&l)?;
                    true
                }
                None => false,
            },
        };
        if !shown {
            io.warn(format!("no {} {id}", kind_of(id)));
        }
        found |= shown;
    }
    Ok(found)
}

fn kind_of(id: &Id) -> &'static str {
    match id {
        Id::Obs(_) => "observation",
        Id::Session(_) => "session",
        Id::Learning(_) => "learning",
    }
}

fn write_obs(o: &Observation, io: &mut Io, md: bool) -> Result<()> {
    if md {
        io.out.write_all(markdown(o).as_bytes())?;
        Ok(())
    } else {
        io.record(o)
    }
}

/// A session and its observations; false when it is not stored.
pub fn show_session(conn: &rusqlite::Connection, id: &str, io: &mut Io, md: bool) -> Result<bool> {
    let Some(t) = model::session(conn, id)? else {
        return Ok(false);
    };
    for (s, obs) in &t.sessions {
        if md {
            let mut text = session_heading(s, "##");
            for o in obs {
                text.push_str(&obs_line(o, s.project.as_deref()));
            }
            text.push('\n');
            io.out.write_all(text.as_bytes())?;
        } else {
            io.record(s)?;
            for o in obs {
                io.record(o)?;
            }
        }
    }
    Ok(true)
}

/// `### s4 Title · project · 2026-11-25 14:02–15:30`, the summary, and the files it changed.
fn session_heading(s: &SessionRow, level: &str) -> String {
    let title = model::title(s);
    let span = model::span(s);
    let mut meta = vec![
        s.project_name
            .clone()
            .unwrap_or_else(|| "no project".into()),
    ];
    if !span.is_empty() {
        meta.push(span);
    }
    if let Some(cwd) = &s.cwd {
        meta.push(format!("started in {cwd}"));
    }
    let mut text = format!(
        "{level} {} {} · {}\n\n",
        s.handle,
        crate::context::flatten(title),
        meta.join(" · ")
    );
    if let Some(sum) = s.summary.as_deref().filter(|x| !x.trim().is_empty()) {
        text.push_str(&format!("{}\n\n", sum.trim()));
    }
    if !s.files_modified.is_empty() {
        let files: Vec<String> = s
            .files_modified
            .iter()
            .map(|f| relative(f, s.project.as_deref()))
            .collect();
        text.push_str(&format!("Files modified: {}\n\n", files.join(", ")));
    }
    text
}

/// `- o17 bugfix Title · 2026-11-25 14:05 (files)`.
fn obs_line(o: &Observation, root: Option<&str>) -> String {
    let files: Vec<String> = o
        .files_modified
        .iter()
        .map(|f| relative(f, root.or(o.project.as_deref())))
        .collect();
    let files = if files.is_empty() {
        String::new()
    } else {
        format!(" ({})", files.join(", "))
    };
    format!(
        "- {} {} {}{files} · {}\n",
        ids::obs(o.id.unwrap_or_default()),
        o.kind,
        crate::context::flatten(&model::from(&o.title, o.origin.as_deref())),
        o.created_at.as_deref().map(minute).unwrap_or_default()
    )
}

/// The last days: sessions newest first with their observations, then the notes made
/// outside any session.
pub fn days_report(
    conn: &rusqlite::Connection,
    scope: &Scope,
    days: u32,
    roots: &Option<Vec<String>>,
    io: &mut Io,
    md: bool,
) -> Result<bool> {
    let t = model::days(conn, scope)?;
    if t.is_empty() {
        return Ok(false);
    }
    if !md {
        for (s, obs) in &t.sessions {
            io.record(s)?;
            for o in obs {
                io.record(o)?;
            }
        }
        for o in &t.loose {
            io.record(o)?;
        }
        return Ok(true);
    }
    let whom = model::whom(roots.as_deref());
    let files: std::collections::BTreeSet<&String> =
        t.observations().flat_map(|o| &o.files_modified).collect();
    let mut text = format!(
        "# {whom}: the last {days} day{}\n\n{}.\n\n",
        plural(days as usize),
        model::counts(&t, files.len()),
    );
    let mut day = "";
    for (s, obs) in &t.sessions {
        let d = model::day(s);
        if d != day {
            text.push_str(&format!("## {d}\n\n"));
            day = d;
        }
        text.push_str(&session_heading(s, "###"));
        for o in obs {
            text.push_str(&obs_line(o, s.project.as_deref()));
        }
        text.push('\n');
    }
    if !t.loose.is_empty() {
        text.push_str("## Notes and observations outside these sessions\n\n");
        for o in t.loose.iter().rev() {
            text.push_str(&obs_line(o, None));
        }
        text.push('\n');
    }
    io.out.write_all(text.as_bytes())?;
    Ok(true)
}

fn learning_markdown(l: &learnings::Learning) -> String {
    let (project, seen, how) = model::learning_facts(l);
    let mut s = format!(
        "## {} {}: {}\n{project} · confidence {:.2} · {seen} · {how}\n\n",
        ids::learning(l.id),
        l.category,
        crate::context::flatten(&l.content),
        l.confidence,
    );
    if let Some(e) = l.evidence.as_deref().filter(|e| !e.trim().is_empty()) {
        s.push_str(&format!("Evidence: {}\n\n", e.trim()));
    }
    if !l.source_sessions.is_empty() {
        s.push_str(&format!(
            "From sessions: {}\n\n",
            l.source_sessions.join(", ")
        ));
    }
    s
}

/// One observation as markdown.
pub fn markdown(o: &Observation) -> String {
    let mut s = format!(
        "## {} {}: {}\n",
        ids::obs(o.id.unwrap_or_default()),
        o.kind,
        o.title
    );
    let meta: Vec<String> = [
        o.project.as_deref().map(crate::project::name_of),
        o.session_id.as_ref().map(|x| format!("session {x}")),
        o.created_at.clone(),
        o.origin.as_ref().map(|x| format!("from {x}")),
    ]
    .into_iter()
    .flatten()
    .collect();
    s.push_str(&format!("{}\n\n", meta.join(" · ")));
    if !o.summary.trim().is_empty() {
        s.push_str(&format!("{}\n\n", o.summary.trim()));
    }
    if let Some(d) = o.detail.as_deref().filter(|d| !d.trim().is_empty()) {
        s.push_str(&format!("{}\n\n", d.trim()));
    }
    for (label, list) in model::lists(o) {
        if !list.is_empty() {
            s.push_str(&format!("{label}:\n"));
            for x in list {
                s.push_str(&format!("- {x}\n"));
            }
        }
    }
    s.push('\n');
    s
}

#[derive(serde::Serialize)]
#[serde(remote = "FunctionChange")]
struct FunctionChange<'a> {
    file_path: &'a str,
    session_id: &'a str,
    created_at: &'a str,
    qualname: &'a str,
    signature: &'a str,
    change: &'a str,
}
memkit_core::record!(FunctionChange<'a> = "function_change");

/// --file: the observations that touched a file, then mem-ast's function changes in it.
pub fn file_report(
    conn: &rusqlite::Connection,
    file: &str,
    roots: &Option<Vec<String>>,
    io: &mut Io,
    md: bool,
) -> Result<bool> {
    let scope = Scope {
        projects: roots.as_deref(),
        ..Scope::default()
    };
    let obs = rep::touching(conn, file, &scope)?;
    let rows = store::functions::history(conn, file)?;
    let recs: Vec<FunctionChange> = rows
        .iter()
        .map(|r| FunctionChange {
            file_path: &r.file_path,
            session_id: &r.session_id,
            created_at: &r.created_at,
            qualname: &r.qualname,
            signature: &r.signature,
            change: &r.change,
        })
        .collect();
    if obs.is_empty() && recs.is_empty() {
        return Ok(false);
    }
    if !md {
        for o in &obs {
            io.record(o)?;
        }
        for r in &recs {
            io.record(r)?;
        }
        return Ok(true);
    }
    let mut text = format!("# {file}\n\n");
    let (changed, read): (Vec<&Observation>, Vec<&Observation>) = obs
        .iter()
        .partition(|o| o.files_modified.iter().any(|f| rep::same_file(f, file)));
    for (label, list) in [("Changed by", &changed), ("Read by", &read)] {
        if !list.is_empty() {
            text.push_str(&format!("## {label}\n\n"));
            for o in list {
                text.push_str(&obs_line(o, None));
            }
            text.push('\n');
        }
    }
    if !recs.is_empty() {
        text.push_str("## Functions changed\n\n");
        for r in &recs {
            text.push_str(&format!(
                "- {} {} {} ({}) · session {}\n",
                minute(r.created_at),
                r.change,
                r.qualname,
                r.signature,
                r.session_id
            ));
        }
        text.push('\n');
    }
    io.out.write_all(text.as_bytes())?;
    Ok(true)
}
