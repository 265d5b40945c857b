//! What a report shows, one model for its two renderers (markdown in `report`, the page in
//! `report::html`): sessions with their observations, the notes outside them, and how times
//! and paths are written.

use std::collections::HashMap;

use crate::Result;
use crate::record::Observation;
use crate::store::observations;
use crate::store::report::{self as rep, Scope, SessionRow};

/// Sessions, newest first, each with its observations (oldest first), then the observations
/// that belong to none of them.
#[derive(Debug, Default)]
pub struct Timeline {
    pub sessions: Vec<(SessionRow, Vec<Observation>)>,
    pub loose: Vec<Observation>,
}

impl Timeline {
    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty() && self.loose.is_empty()
    }

    /// Every observation, the sessions' first.
    pub fn observations(&self) -> impl Iterator<Item = &Observation> {
        self.sessions.iter().flat_map(|(_, o)| o).chain(&self.loose)
    }

    /// Observations under the session they were made in, when it is one of `sessions`.
    fn group(sessions: Vec<SessionRow>, obs: Vec<Observation>) -> Timeline {
        let at: HashMap<String, usize> = sessions
            .iter()
            .enumerate()
            .map(|(i, s)| (s.session_id.clone(), i))
            .collect();
        let mut t = Timeline {
            sessions: sessions.into_iter().map(|s| (s, Vec::new())).collect(),
            loose: Vec::new(),
        };
        for o in obs {
            match o.session_id.as_deref().and_then(|s| at.get(s)) {
                Some(&i) => t.sessions[i].1.push(o),
                None => t.loose.push(o),
            }
        }
        t
    }
}

/// The sessions active in `scope` and the observations made in it.
pub fn days(conn: &rusqlite::Connection, scope: &Scope) -> Result<Timeline> {
    let sessions = rep::sessions(conn, scope, usize::MAX >> 1)?;
    let obs = rep::observations(conn, scope)?;
    Ok(Timeline::group(sessions, obs))
}

/// One session and its observations; None when it is not stored.
pub fn session(conn: &rusqlite::Connection, id: &str) -> Result<Option<Timeline>> {
    let Some(s) = rep::session(conn, id)? else {
        return Ok(None);
    };
    let obs = observations::of_session(conn, id)?;
    Ok(Some(Timeline::group(vec![s], obs)))
}

/// The observations that modified or read `file`, under their sessions.
pub fn file(conn: &rusqlite::Connection, file: &str, scope: &Scope) -> Result<Timeline> {
    let obs = rep::touching(conn, file, scope)?;
    let mut sessions: Vec<SessionRow> = Vec::new();
    for id in obs.iter().filter_map(|o| o.session_id.as_deref()) {
        if !sessions.iter().any(|s| s.session_id == id)
            && let Some(s) = rep::session(conn, id)?
        {
            sessions.push(s);
        }
    }
    sessions.sort_by(|a, b| b.last_activity_at.cmp(&a.last_activity_at));
    Ok(Timeline::group(sessions, obs))
}

/// The labels of an observation's lists, in the order shown.
pub const LABELS: [&str; 6] = [
    "Facts",
    "Concepts",
    "Tags",
    "Files modified",
    "Files read",
    "Functions changed",
];

/// Where "Files modified" and "Functions changed" are among the labels.
pub const FILES_MODIFIED: usize = 3;
pub const FUNCTIONS_CHANGED: usize = 5;

/// An observation's lists with the label each is shown under, in the order shown.
pub fn lists(o: &Observation) -> [(&'static str, &[String]); 6] {
    let l = [
        &o.facts,
        &o.concepts,
        &o.tags,
        &o.files_modified,
        &o.files_read,
        &o.functions_changed,
    ];
    std::array::from_fn(|i| (LABELS[i], l[i].as_slice()))
}

/// An observation's meta line, in parts: its session, when, and whether saved by hand.
pub fn meta(o: &Observation) -> Vec<String> {
    [
        o.session_id.as_ref().map(|x| format!("session {x}")),
        o.created_at.clone(),
        o.is_manual.then(|| "saved by hand".to_string()),
        o.origin.as_ref().map(|x| format!("from {x}")),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// A path relative to its project root when inside it.
pub fn relative(path: &str, root: Option<&str>) -> String {
    root.map_or(path, |r| crate::project::relative(path, r))
        .to_string()
}

/// `2026-11-25 14:05` of a stored timestamp.
pub fn minute(t: &str) -> String {
    match (t.get(..10), t.get(11..16)) {
        (Some(d), Some(h)) => format!("{d} {h}"),
        _ => t.to_string(),
    }
}

/// `14:05` of a stored timestamp.
pub fn clock(t: &str) -> &str {
    t.get(11..16).unwrap_or("")
}

/// A session's span: `2026-11-25 14:02–15:30`, or both ends in full across days.
pub fn span(s: &SessionRow) -> String {
    match (s.started_at.as_deref(), s.last_activity_at.as_deref()) {
        (Some(a), Some(b)) if a.get(..10) == b.get(..10) => {
            format!("{} {}–{}", &a[..10], clock(a), clock(b))
        }
        (Some(a), Some(b)) => format!("{} – {}", minute(a), minute(b)),
        (a, b) => a.or(b).map(minute).unwrap_or_default(),
    }
}

/// The day a session is filed under: its last activity's.
pub fn day(s: &SessionRow) -> &str {
    s.last_activity_at
        .as_deref()
        .or(s.started_at.as_deref())
        .and_then(|t| t.get(..10))
        .unwrap_or("undated")
}

/// Its title, else a placeholder.
pub fn title(s: &SessionRow) -> &str {
    s.title
        .as_deref()
        .filter(|t| !t.trim().is_empty())
        .unwrap_or("(untitled session)")
}

/// A title with who it came from, for a record taken from the sync remote (`[from: desktop]`).
pub fn from(title: &str, origin: Option<&str>) -> String {
    match origin {
        Some(o) => format!("[from: {o}] {title}"),
        None => title.to_string(),
    }
}

/// A learning's line of facts, as both renderers show it: where it holds, how often it was seen
/// and whether a person typed it.
pub fn learning_facts(l: &crate::store::learnings::Learning) -> (String, String, &'static str) {
    (
        l.project
            .as_deref()
            .map_or_else(|| "every project".into(), crate::project::name_of),
        format!(
            "seen {} time{}",
            l.times_seen,
            plural(l.times_seen as usize)
        ),
        if l.is_manual {
            "typed by hand"
        } else {
            "learned"
        },
    )
}

/// "N sessions, M observations, K files modified": the scope's size, as both renderers head it.
pub fn counts(t: &Timeline, files: usize) -> String {
    let (sessions, obs) = (t.sessions.len(), t.observations().count());
    format!(
        "{sessions} session{}, {obs} observation{}, {files} file{} modified",
        plural(sessions),
        plural(obs),
        plural(files)
    )
}

pub fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Who a report is about: the projects' names, or every project.
pub fn whom(roots: Option<&[String]>) -> String {
    match roots {
        None => "every project".to_string(),
        Some(rs) => rs
            .iter()
            .map(|r| crate::project::name_of(r))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// Text safe in HTML and SVG, in an element or a quoted attribute.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}
