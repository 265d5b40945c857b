//! mem-report: what happened, for people and for Claude: the last days of a project, a session,
//! a file, the projects and sessions known, and any memory in full by its id (`o17`, `s4`, `l3`:
//! what the context block, mem-search and mem-learn print).

use std::io::Write;

use clap::{CommandFactory, Parser};

use crate::cli::{Common, Format, Io, Outcome};
use crate::config::{self, Config};
use crate::ids::{self, Id};
use crate::report::html::Of;
use crate::store::report::{self as rep, Scope};
use crate::store::{self, projects};
use crate::{Error, Result, report};

mod details;
use details::DETAILS;

pub const TOOL: crate::cli::Tool = crate::cli::Tool {
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
            "mem-report --html --days 30 -o memory.html",
            "The last month of this project as one page to open in a browser.",
        ),
        (
            "mem-report --mermaid > change.mmd",
            "The last session's changed functions and their calls as a Mermaid flowchart.",
        ),
    ],
};

const PROJECT_COLUMNS: &[&str] = &[
    "name",
    "sessions",
    "observations",
    "last_activity_at",
    "description",
];
const SESSION_COLUMNS: &[&str] = &[
    "ref",
    "project_name",
    "last_activity_at",
    "observations",
    "title",
];

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
    /// The report as one self-contained HTML page (days, --session or --file).
    #[arg(long, conflicts_with_all = ["mermaid", "projects", "sessions", "ids", "obs"])]
    pub html: bool,
    /// Write the page to FILE instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE", requires = "html")]
    pub output: Option<std::path::PathBuf>,
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
    let path = cfg.home.db();
    let Some(conn) = store::open_if_present(&path)? else {
        return Ok(io.no_memories(&path));
    };
    let md = !matches!(io.format(), Format::Jsonl | Format::Json);
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
    let found = if args.html {
        let id = (args.session.as_deref())
            .map(|s| store::sessions::id_of(&conn, s))
            .transpose()?;
        let of = match (&id, &args.file) {
            (Some(id), _) => Of::Session(id),
            (None, Some(f)) => Of::File(f, Scope::of(roots.as_deref())),
            (None, None) => Of::Days(scope, args.days.unwrap_or(7)),
        };
        report::html::write(&conn, &of, &stamp(now), args.output.as_deref(), io)?
    } else if !wanted.is_empty() {
        report::show_ids(&conn, &wanted, io, md)?
    } else if args.mermaid {
        return diagram(&conn, &args, io);
    } else if let Some(file) = &args.file {
        report::file_report(&conn, file, &roots, io, md)?
    } else if let Some(s) = &args.session {
        let id = store::sessions::id_of(&conn, s)?;
        let shown = report::show_session(&conn, &id, io, md)?;
        if !shown {
            io.warn(format!("no session {s}"));
        }
        shown
    } else if args.projects {
        let rows = rep::projects(&conn)?;
        io.listing(&rows, PROJECT_COLUMNS)?;
        !rows.is_empty()
    } else if args.sessions {
        let rows = rep::sessions(&conn, &scope, usize::MAX >> 1)?;
        io.listing(&rows, SESSION_COLUMNS)?;
        !rows.is_empty()
    } else {
        report::days_report(&conn, &scope, args.days.unwrap_or(7), &roots, io, md)?
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

/// --mermaid: mem-ast's function map of a session as a flowchart.
fn diagram(conn: &rusqlite::Connection, args: &Args, io: &mut Io) -> Result<Outcome> {
    let session = args
        .session
        .as_deref()
        .map(|s| store::sessions::id_of(conn, s))
        .transpose()?;
    match memkit_codemap::database::diagram(conn, session.as_deref(), args.all)? {
        Some(m) => {
            io.out.write_all(m.as_bytes())?;
            Ok(Outcome::Ok)
        }
        None => Ok(Outcome::NothingFound),
    }
}
