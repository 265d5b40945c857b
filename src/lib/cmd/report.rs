//! mem-report: what happened, for people and for Claude: the last days of a project, a session,
//! a file, the projects and sessions known, and any memory in full by its id (`o17`, `s4`, `l3`:
//! what the context block, mem-search and mem-learn print).

use std::collections::BTreeMap;
use std::io::Write;

use clap::{CommandFactory, Parser};

use crate::cli::{Common, Format, Io, Outcome};
use crate::config::{self, Config};
use crate::ids::{self, Id};
use crate::record::Observation;
use crate::store::report::{self as rep, Scope, SessionRow};
use crate::store::{self, learnings, observations, projects};
use crate::{Error, Result};

pub const TOOL: super::Tool = super::Tool {
    name: "mem-report",
    command: || Args::command(),
    details: DETAILS,
    examples: &[
        (
            "mem-report",
            "What happened in this project over the last 7 days.",
        ),
        (
            "mem-report o12 s4",
            "Observation o12 and session s4 in full.",
        ),
        (
            "mem-report --days 30 --all-projects --format md > month.md",
            "A month of every project as a Markdown file.",
        ),
        (
            "mem-report --projects",
            "Every project with its sessions, observations and last activity.",
        ),
        (
            "mem-report --obs 12,15 --format jsonl | jq -r .summary",
            "Read two observations as records.",
        ),
        (
            "mem-report --file app/auth.py",
            "What sessions did to a file, and the functions they changed (mem-ast's map).",
        ),
        (
            "mem-report --mermaid > change.mmd",
            "The last session's changed functions and their calls as a Mermaid flowchart.",
        ),
    ],
};

const DETAILS: &str = r#"
Without options, mem-report tells what happened over the last 7 days (--days N): the sessions,
newest first, each with its title, summary and observations, then the notes. Ids are the ones
memkit prints everywhere: o17 an observation (17 and #17 work too), s4 a session, l3 a learning;
given as arguments they are shown in full (an observation's summary, detail, facts, concepts,
tags, files and functions; a session's summary and its observations; a learning with its
evidence).

--session ID shows one session (s4 or a Claude Code session id); --sessions lists sessions,
--projects lists projects with their session and observation counts, last activity and
description. --file PATH (the path as stored or its ending, such as app/auth.py) shows what was
done to a file: the observations that modified or read it, and for Python the function changes
mem-ast recorded (function_change records in a pipe). --mermaid prints a Mermaid flowchart of the
changed definitions of a session (--session, default the latest one mem-ast mapped) and their
calls; --all adds the unchanged ones.

Scope: the current directory's project, or --project P, or --all-projects; when the current
directory is no project memkit knows, every project. On a terminal (or with --format md or text)
reports are markdown and lists are tables; in a pipe they are records: a session record
("type":"session") followed by its observation records, project records ("type":"project"),
function_change records. Exit status 1 when nothing matches (an id that does not exist is
reported on stderr).
"#;

/// Show what happened: reports by day, session, file and project, and memories in full.
#[derive(Debug, Parser)]
#[command(name = "mem-report", version, long_about = None)]
pub struct Args {
    /// Memories to show in full: o17 (or 17), s4, l3.
    #[arg(value_name = "ID", conflicts_with_all = ["file", "mermaid", "projects", "sessions", "session", "days"])]
    pub ids: Vec<String>,
    /// Observations to show in full (o17, 17 or #17; comma-separated or repeated).
    #[arg(long, value_name = "ID", value_delimiter = ',', num_args = 1.., conflicts_with_all = ["file", "mermaid", "projects", "sessions", "session", "days"])]
    pub obs: Vec<String>,
    /// One session: its summary and observations (s4 or a session id); with --mermaid, the
    /// session drawn.
    #[arg(long, value_name = "ID", conflicts_with_all = ["file", "projects", "sessions"])]
    pub session: Option<String>,
    /// What happened over the last N days (the default view, N = 7).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub days: Option<u32>,
    /// List the sessions (of the last --days N when given).
    #[arg(long, conflicts_with_all = ["file", "mermaid", "projects"])]
    pub sessions: bool,
    /// List the projects with their counts, last activity and description.
    #[arg(long, conflicts_with_all = ["file", "mermaid", "days"])]
    pub projects: bool,
    /// What was done to a file, and the functions changed in it.
    #[arg(long, value_name = "PATH", conflicts_with = "mermaid")]
    pub file: Option<String>,
    /// A session's changed functions and their calls as a Mermaid flowchart.
    #[arg(long)]
    pub mermaid: bool,
    /// With --mermaid: unchanged definitions too.
    #[arg(long, requires = "mermaid")]
    pub all: bool,
    /// Only this project (its directory, root or name).
    #[arg(long, value_name = "P", conflicts_with = "all_projects")]
    pub project: Option<String>,
    /// Every project.
    #[arg(long)]
    pub all_projects: bool,
    /// Report as of this moment (ISO date or datetime) instead of now.
    #[arg(long, env = "MEM_NOW", value_name = "TIME")]
    pub now: Option<String>,
    #[command(flatten)]
    pub common: Common,
}

pub fn run(args: Args, io: &mut Io) -> Result<Outcome> {
    let wanted: Vec<Id> = args
        .ids
        .iter()
        .map(|s| {
            ids::parse(s).ok_or_else(|| {
                Error::Usage(format!(
                    "not an id: {s:?} (o17 an observation, s4 a session, l3 a learning)"
                ))
            })
        })
        .chain(
            args.obs
                .iter()
                .map(|s| ids::parse_obs(s, "--obs").map(Id::Obs)),
        )
        .collect::<Result<_>>()?;
    let now = match args.now.as_deref() {
        Some(t) => store::parse_instant(t).map(|(t, _)| t).ok_or_else(|| {
            Error::Usage(format!("--now: {t:?} is not a date; {}", store::DATE_HINT))
        })?,
        None => chrono::Utc::now(),
    };
    let stamp =
        |t: chrono::DateTime<chrono::Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let cfg = Config::load(&config::data_home())?;
    let path = cfg.db_path();
    let Some(conn) = store::open_if_present(&path)? else {
        return Ok(io.no_memories(&path));
    };
    let md = !matches!(io.format(), Format::Jsonl | Format::Json);
    let found = if !wanted.is_empty() {
        show_ids(&conn, &wanted, io, md)?
    } else if args.mermaid {
        return diagram(&conn, &args, io);
    } else if let Some(file) = &args.file {
        file_report(&conn, file, &scope_roots(&conn, &args)?, io, md)?
    } else if let Some(s) = &args.session {
        let id = store::sessions::id_of(&conn, s)?;
        let shown = show_session(&conn, &id, io, md)?;
        if !shown {
            io.warn(format!("no session {s}"));
        }
        shown
    } else if args.projects {
        let rows = rep::projects(&conn)?;
        io.listing(
            &rows,
            &[
                "name",
                "sessions",
                "observations",
                "last_activity_at",
                "description",
            ],
        )?;
        !rows.is_empty()
    } else {
        let roots = scope_roots(&conn, &args)?;
        let since = args
            .days
            .or((!args.sessions).then_some(7))
            .map(|d| stamp(now - chrono::Duration::days(d.into())));
        // A report as of a past moment leaves out what came after it.
        let until = args.now.is_some().then(|| stamp(now));
        let scope = Scope {
            projects: roots.as_deref(),
            since: since.as_deref(),
            until: until.as_deref(),
        };
        if args.sessions {
            let rows = rep::sessions(&conn, &scope, usize::MAX >> 1)?;
            io.listing(
                &rows,
                &[
                    "ref",
                    "project_name",
                    "last_activity_at",
                    "observations",
                    "title",
                ],
            )?;
            !rows.is_empty()
        } else {
            days_report(&conn, &scope, args.days.unwrap_or(7), &roots, io, md)?
        }
    };
    Ok(if found {
        Outcome::Ok
    } else {
        Outcome::NothingFound
    })
}

/// The project roots a report covers; None = every project.
fn scope_roots(conn: &rusqlite::Connection, args: &Args) -> Result<Option<Vec<String>>> {
    if args.all_projects {
        return Ok(None);
    }
    if let Some(p) = &args.project {
        return projects::resolve(conn, p).map(Some);
    }
    let Some(dir) = crate::project::current_dir() else {
        return Ok(None);
    };
    let root = crate::project::identify(&dir).root;
    Ok(rep::known(conn, &root)?.then(|| vec![root]))
}

/// Each id in full; false when none exists.
fn show_ids(conn: &rusqlite::Connection, wanted: &[Id], io: &mut Io, md: bool) -> Result<bool> {
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
fn show_session(conn: &rusqlite::Connection, id: &str, io: &mut Io, md: bool) -> Result<bool> {
    let Some(s) = rep::session(conn, id)? else {
        return Ok(false);
    };
    let obs = observations::of_session(conn, id)?;
    if md {
        let mut text = session_heading(&s, "##");
        for o in &obs {
            text.push_str(&obs_line(o, s.project.as_deref()));
        }
        text.push('\n');
        io.out.write_all(text.as_bytes())?;
    } else {
        io.record(&s)?;
        for o in &obs {
            io.record(o)?;
        }
    }
    Ok(true)
}

/// `### s4 Title · project · 2026-11-25 14:02–15:30`, the summary, and the files it changed.
fn session_heading(s: &SessionRow, level: &str) -> String {
    let title = s
        .title
        .as_deref()
        .filter(|t| !t.trim().is_empty())
        .unwrap_or("(untitled session)");
    let span = match (s.started_at.as_deref(), s.last_activity_at.as_deref()) {
        (Some(a), Some(b)) if a.get(..10) == b.get(..10) => {
            format!("{} {}–{}", &a[..10], clock(a), clock(b))
        }
        (Some(a), Some(b)) => format!("{} – {}", minute(a), minute(b)),
        (a, b) => a.or(b).map(minute).unwrap_or_default(),
    };
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
        crate::context::flatten(&o.title),
        o.created_at.as_deref().map(minute).unwrap_or_default()
    )
}

/// A path relative to its project root when inside it.
fn relative(path: &str, root: Option<&str>) -> String {
    root.map_or(path, |r| crate::project::relative(path, r))
        .to_string()
}

/// `2026-11-25 14:05` of a stored timestamp.
fn minute(t: &str) -> String {
    match (t.get(..10), t.get(11..16)) {
        (Some(d), Some(h)) => format!("{d} {h}"),
        _ => t.to_string(),
    }
}

fn clock(t: &str) -> &str {
    t.get(11..16).unwrap_or("")
}

/// The last days: sessions newest first with their observations, then the notes made
/// outside any session.
fn days_report(
    conn: &rusqlite::Connection,
    scope: &Scope,
    days: u32,
    roots: &Option<Vec<String>>,
    io: &mut Io,
    md: bool,
) -> Result<bool> {
    let sessions = rep::sessions(conn, scope, usize::MAX >> 1)?;
    let obs = rep::observations(conn, scope)?;
    let mut by_session: BTreeMap<&str, Vec<&Observation>> = sessions
        .iter()
        .map(|s| (s.session_id.as_str(), Vec::new()))
        .collect();
    let mut loose: Vec<&Observation> = Vec::new();
    for o in &obs {
        match o.session_id.as_deref().and_then(|s| by_session.get_mut(s)) {
            Some(list) => list.push(o),
            None => loose.push(o),
        }
    }
    if sessions.is_empty() && loose.is_empty() {
        return Ok(false);
    }
    if !md {
        for s in &sessions {
            io.record(s)?;
            for o in by_session.get(s.session_id.as_str()).into_iter().flatten() {
                io.record(*o)?;
            }
        }
        for o in &loose {
            io.record(*o)?;
        }
        return Ok(true);
    }
    let whom = match roots.as_deref() {
        None => "every project".to_string(),
        Some(rs) => rs
            .iter()
            .map(|r| crate::project::name_of(r))
            .collect::<Vec<_>>()
            .join(", "),
    };
    let files: std::collections::BTreeSet<&String> =
        obs.iter().flat_map(|o| &o.files_modified).collect();
    let mut text = format!(
        "# {whom}: the last {days} day{}\n\n{} session{}, {} observation{}, {} file{} modified.\n\n",
        if days == 1 { "" } else { "s" },
        sessions.len(),
        plural(sessions.len()),
        obs.len(),
        plural(obs.len()),
        files.len(),
        plural(files.len()),
    );
    let mut day = "";
    for s in &sessions {
        let d = s
            .last_activity_at
            .as_deref()
            .or(s.started_at.as_deref())
            .and_then(|t| t.get(..10))
            .unwrap_or("undated");
        if d != day {
            text.push_str(&format!("## {d}\n\n"));
            day = d;
        }
        text.push_str(&session_heading(s, "###"));
        for o in by_session.get(s.session_id.as_str()).into_iter().flatten() {
            text.push_str(&obs_line(o, s.project.as_deref()));
        }
        text.push('\n');
    }
    if !loose.is_empty() {
        text.push_str("## Notes and observations outside these sessions\n\n");
        for o in loose.iter().rev() {
            text.push_str(&obs_line(o, None));
        }
        text.push('\n');
    }
    io.out.write_all(text.as_bytes())?;
    Ok(true)
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn learning_markdown(l: &learnings::Learning) -> String {
    let mut s = format!(
        "## {} {}: {}\n{} · confidence {:.2} · seen {} time{} · {}\n\n",
        ids::learning(l.id),
        l.category,
        crate::context::flatten(&l.content),
        l.project
            .as_deref()
            .map_or_else(|| "every project".into(), crate::project::name_of),
        l.confidence,
        l.times_seen,
        plural(l.times_seen as usize),
        if l.is_manual {
            "typed by hand"
        } else {
            "learned"
        },
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
    for (label, list) in [
        ("Facts", &o.facts),
        ("Concepts", &o.concepts),
        ("Tags", &o.tags),
        ("Files modified", &o.files_modified),
        ("Files read", &o.files_read),
        ("Functions changed", &o.functions_changed),
    ] {
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
struct FunctionChange<'a> {
    r#type: &'static str,
    v: u32,
    file_path: &'a str,
    session_id: &'a str,
    created_at: &'a str,
    qualname: &'a str,
    signature: &'a str,
    change: &'a str,
}

/// --file: the observations that touched a file, then mem-ast's function changes in it.
fn file_report(
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
            r#type: "function_change",
            v: 1,
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

/// --mermaid: mem-ast's function map of a session as a flowchart.
fn diagram(conn: &rusqlite::Connection, args: &Args, io: &mut Io) -> Result<Outcome> {
    let session = args
        .session
        .as_deref()
        .map(|s| store::sessions::id_of(conn, s))
        .transpose()?;
    match crate::codemap::diagram(conn, session.as_deref(), args.all)? {
        Some(m) => {
            io.out.write_all(m.as_bytes())?;
            Ok(Outcome::Ok)
        }
        None => Ok(Outcome::NothingFound),
    }
}
