//! mem-learn: a project's learnings, with a confidence that grows with evidence. With no
//! subcommand (the pipeline's stage) it learns from every session summarised since the last run
//! and heals the call graph from those sessions' observations.

use clap::{CommandFactory, Parser, Subcommand};
use serde_json::Value;

use crate::cli::{Common, Io, Outcome};
use crate::config::{self, Config};
use crate::store::{self, learnings};
use crate::{Error, Result};
use memkit_learn::manual;
use memkit_learn::session::{self, record};

mod details;
use details::DETAILS;

pub const TOOL: crate::cli::Tool = crate::cli::Tool {
    name: "mem-learn",
    command: || Args::command(),
    details: DETAILS,
    examples: &[
        (
            "mem-learn list",
            "The current project's active learnings, most confident first.",
        ),
        (
            "mem-learn add 'Run the tests with uv run pytest -m \"not browser\"' --category convention",
            "A learning typed by hand: trusted fully, never decays.",
        ),
        (
            "mem-learn list --all --project spotter --format jsonl | jq -r 'select(.is_active | not) | .content'",
            "What was contradicted in a project.",
        ),
        (
            "mem-learn extract --session 3f2a… --backend anthropic",
            "Learn from one session again now, with an LLM.",
        ),
    ],
};

/// Project learnings: extract, list, add, edit, remove, reset.
#[derive(Debug, Parser)]
#[command(name = "mem-learn", version, long_about = None)]
pub struct Args {
    #[command(subcommand)]
    pub cmd: Option<Cmd>,
    /// Backend for extraction (anthropic, openai, claude-cli, heuristic), overriding MEM_LLM.
    #[arg(long, value_name = "NAME", global = true)]
    pub backend: Option<String>,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Debug, Subcommand)]
pub enum Cmd {
    /// List learnings (default: the current project's active ones).
    List {
        /// A project (directory, root path or name).
        #[arg(long, value_name = "PROJECT", conflicts_with = "all_projects")]
        project: Option<String>,
        /// Every project.
        #[arg(long)]
        all_projects: bool,
        /// Inactive (contradicted) ones too.
        #[arg(long)]
        all: bool,
        #[arg(long, value_name = "C")]
        min_confidence: Option<f64>,
    },
    /// Add a learning by hand (confidence 1.0, never decays).
    Add {
        text: String,
        /// convention, gotcha, decision, dependency or pattern.
        #[arg(long, default_value = "convention")]
        category: String,
        #[arg(long, value_name = "PROJECT")]
        project: Option<String>,
    },
    /// Replace a learning's text (it becomes manual: the user vouches for it).
    Edit {
        id: String,
        text: String,
        #[arg(long)]
        category: Option<String>,
    },
    /// Delete a learning.
    Remove { id: String },
    /// Delete a project's learnings (every project's with --all-projects) and learn again from scratch on the next run.
    Reset {
        #[arg(long, value_name = "PROJECT", conflicts_with = "all_projects")]
        project: Option<String>,
        #[arg(long)]
        all_projects: bool,
        /// Do not ask (required when stdin is not a terminal).
        #[arg(long)]
        yes: bool,
    },
    /// Learn now: from the sessions due (or one session, again).
    Extract {
        /// The session (s4 or its session id).
        #[arg(long, value_name = "ID")]
        session: Option<String>,
    },
}

fn extract(
    io: &mut Io,
    cfg: &Config,
    backend: Option<&str>,
    only: Option<&str>,
) -> Result<Outcome> {
    let start = std::time::Instant::now();
    let db = cfg.home.db();
    let Some(conn) = store::open_if_present(&db)? else {
        return Ok(io.no_memories(&db));
    };
    let counts = session::learn(&conn, cfg, backend, only, &mut |said| io.said(said))?;
    io.summary(counts, start)?;
    Ok(Outcome::Ok)
}

const COLUMNS: &[&str] = &["ref", "category", "confidence", "times_seen", "content"];
const LIST_COLUMNS: &[&str] = &[
    "ref",
    "kind",
    "category",
    "confidence",
    "times_seen",
    "content",
    "contradicted_by",
];

pub fn run(args: Args, io: &mut Io) -> Result<Outcome> {
    let home = config::data_home();
    let cfg = Config::load(&home)?;
    // What is typed here is stored and shown at every SessionStart: redacted like a note.
    memkit_capture::redact::configure(&cfg)?;
    let db = cfg.home.db();
    match args.cmd {
        None => extract(io, &cfg, args.backend.as_deref(), None),
        Some(Cmd::Extract { session }) => {
            extract(io, &cfg, args.backend.as_deref(), session.as_deref())
        }
        Some(Cmd::List {
            project,
            all_projects,
            all,
            min_confidence,
        }) => {
            let Some(conn) = store::open_if_present(&db)? else {
                return Ok(io.no_memories(&db));
            };
            let roots = match (all_projects, project) {
                (true, _) => None,
                (false, p) => Some(manual::roots(&conn, p.as_deref())?),
            };
            let rows = manual::list(&conn, roots, all, min_confidence)?;
            // Each row's kind, folded commands and the rule it goes against, beside it.
            let notes = memkit_learn::rules::notes(&rows);
            let recs: Vec<Value> = rows
                .iter()
                .zip(&notes)
                .map(|(l, n)| merged(record(l), n))
                .collect();
            io.listing(&recs, LIST_COLUMNS)?;
            Ok(if recs.is_empty() {
                io.warn("no learnings (mem-pipeline extracts them; mem-learn add TEXT adds one)");
                Outcome::NothingFound
            } else {
                Outcome::Ok
            })
        }
        Some(Cmd::Add {
            text,
            category,
            project,
        }) => {
            let conn = store::open(&db)?;
            let root = manual::roots(&conn, project.as_deref())?.remove(0);
            let l = manual::add(&conn, &root, &text, &category)?;
            io.listing(&[record(&l)], COLUMNS)?;
            Ok(Outcome::Ok)
        }
        Some(Cmd::Edit { id, text, category }) => {
            let conn = store::open(&db)?;
            let l = manual::edit(&conn, &id, &text, category.as_deref())?;
            io.listing(&[record(&l)], COLUMNS)?;
            Ok(Outcome::Ok)
        }
        Some(Cmd::Remove { id }) => {
            let conn = store::open(&db)?;
            let l = manual::found(&conn, &id)?;
            learnings::remove(&conn, l.id)?;
            io.tell(format!("removed learning {}: {}", l.id, l.content));
            Ok(Outcome::Ok)
        }
        Some(Cmd::Reset {
            project,
            all_projects,
            yes,
        }) => {
            let Some(conn) = store::open_if_present(&db)? else {
                return Ok(io.no_memories(&db));
            };
            let roots = if all_projects {
                vec![None]
            } else {
                manual::roots(&conn, project.as_deref())?
                    .into_iter()
                    .map(Some)
                    .collect()
            };
            let what = manual::describe(&roots);
            if !yes && !io.confirm(&format!("delete the learnings of {what}?"))? {
                return Err(Error::Usage(
                    "reset: not confirmed (give --yes when stdin is not a terminal)".into(),
                ));
            }
            let n = manual::reset(&conn, &roots)?;
            io.info(format!(
                "deleted {n} learnings of {what}; mem-learn learns again on the next run"
            ));
            Ok(Outcome::Ok)
        }
    }
}

fn merged(mut v: Value, extra: impl serde::Serialize) -> Value {
    if let (Some(o), Ok(Value::Object(x))) = (v.as_object_mut(), serde_json::to_value(extra)) {
        o.extend(x);
    }
    v
}
