//! mem-search: hybrid search over observations and session summaries.

use std::path::PathBuf;

use clap::{CommandFactory, Parser, ValueEnum};

use crate::cli::{self, Common, Io, Outcome};
use crate::config::{self, Config};
use crate::search::{self, Engine, Here, Query, Searcher};
use crate::store;
use crate::{Error, Result};

mod batch;

mod details;
use details::DETAILS;

pub const TOOL: crate::cli::Tool = crate::cli::Tool {
    name: "mem-search",
    command: || Args::command(),
    details: DETAILS,
    examples: &[
        (
            "mem-search 'token refresh race'",
            "The best memories of the current project for these words or their meaning.",
        ),
        (
            "mem-search --all-projects --type decision,bugfix --after 2026-02-01 auth | jq -r .title",
            "Decisions and fixes about auth in every project since February.",
        ),
        (
            "mem-search --mode probe --limit 30 migration",
            "Scan many hits cheaply: id, score, title and one line each.",
        ),
        (
            "mem-search --explain 'flaky test'",
            "Show every score component of each hit.",
        ),
        (
            "mem-search --batch - < queries.jsonl",
            "Run many queries in one process; hits carry their query's id.",
        ),
    ],
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum Mode {
    /// id, score, title and one line.
    Probe,
    /// Every field.
    #[default]
    Full,
}

/// Hybrid search (BM25 + vectors) over memkit's memories, with relevance ranking and filters.
#[derive(Debug, Parser)]
#[command(name = "mem-search", version, long_about = None)]
pub struct Args {
    /// What to look for (words or a question).
    #[arg(value_name = "QUERY")]
    pub query: Vec<String>,
    /// Read queries as JSON lines from FILE (- for stdin).
    #[arg(long, value_name = "FILE", conflicts_with = "query")]
    pub batch: Option<PathBuf>,
    /// Only this project (a directory, a root path or a project name).
    #[arg(long, value_name = "PROJECT", conflicts_with_all = ["projects", "all_projects"])]
    pub project: Option<String>,
    /// Only these projects, comma-separated.
    #[arg(
        long,
        value_name = "A,B",
        value_delimiter = ',',
        conflicts_with = "all_projects"
    )]
    pub projects: Vec<String>,
    /// Every project.
    #[arg(long)]
    pub all_projects: bool,
    /// Only these types (decision, bugfix, feature, refactor, discovery, change, session, learning).
    #[arg(long = "type", value_name = "T,U", value_delimiter = ',')]
    pub kinds: Vec<String>,
    /// Only records with one of these tags (fuzzy).
    #[arg(long, value_name = "A,B", value_delimiter = ',')]
    pub tags: Vec<String>,
    /// Only records made at or after this date (whole day) or datetime.
    #[arg(long, value_name = "DATE")]
    pub after: Option<String>,
    /// Only records made at or before this date (whole day) or datetime.
    #[arg(long, value_name = "DATE")]
    pub before: Option<String>,
    /// Only this session (s4 or its session id).
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Files being worked on, comma-separated (ranking; default: git's changed files).
    #[arg(long, value_name = "F,G", value_delimiter = ',')]
    pub files: Option<Vec<String>>,
    /// How many hits (at most 10000).
    #[arg(long, short = 'n', default_value_t = 10)]
    pub limit: usize,
    /// Drop hits scoring below this.
    #[arg(long, value_name = "SCORE", value_parser = cli::finite)]
    pub min_score: Option<f64>,
    /// probe: id, score, title and one line; full: everything.
    #[arg(long, value_enum, default_value_t = Mode::Full)]
    pub mode: Mode,
    /// Show each score component.
    #[arg(long)]
    pub explain: bool,
    /// Retrievers: auto (hybrid when possible), bm25, vector or fts.
    #[arg(long, value_enum, default_value_t = Engine::Auto)]
    pub engine: Engine,
    /// Rank as of this moment (ISO date or datetime) instead of now: recency and so the whole
    /// ranking are then reproducible (replays, tests, benchmarks).
    #[arg(long, env = "MEM_NOW", value_name = "TIME")]
    pub now: Option<String>,
    /// Never load an embedding model: only cached query vectors make a search hybrid.
    #[arg(long)]
    pub no_model: bool,
    /// Reorder the best fused candidates with a cross-encoder (MEM_SEARCH_RERANK_MODEL).
    #[arg(long)]
    pub rerank: bool,
    #[command(flatten)]
    pub common: Common,
}

const COLUMNS_FULL: &[&str] = &[
    "rank",
    "ref",
    "score",
    "kind",
    "project_name",
    "origin",
    "title",
    "created_at",
    "mode",
];
const COLUMNS_PROBE: &[&str] = &["rank", "ref", "score", "title", "line"];

pub fn run(args: Args, io: &mut Io) -> Result<Outcome> {
    let home = config::data_home();
    let cfg = Config::load(&home)?;
    let query = args.query.join(" ");
    if args.batch.is_none() && query.trim().is_empty() {
        return Err(Error::Usage(
            "empty query: give some words to look for (or --batch FILE)".into(),
        ));
    }
    for (flag, v) in [("--after", &args.after), ("--before", &args.before)] {
        if let Some(v) = v {
            search::parse_bound(v, flag == "--before")
                .map_err(|e| Error::Usage(format!("{flag}: {e}")))?;
        }
    }
    let limit = batch::capped_limit(io, "--limit", args.limit);
    // Bad settings are reported even before there is a database to search.
    search::Weights::from_config(&cfg)?;
    let Some(conn) = store::open_current(&cfg.home.db())? else {
        return Ok(io.no_memories(&cfg.home.db()));
    };
    let now = args.now.as_deref();
    let mut searcher = Searcher::open_for(&home, conn, &cfg, now, !args.no_model, args.engine)?;
    if args.rerank || config::SEARCH_RERANK.get(&cfg) {
        match search::rerank::Stage::from_config(&cfg) {
            Ok(stage) => searcher.use_reranker(stage),
            Err(e) if args.rerank => return Err(e),
            Err(e) => io.warn(format!(
                "MEM_SEARCH_RERANK is on but {e}: hits in fused order"
            )),
        }
    }
    let mut here = Here::new(&cfg);
    let base = Query {
        text: query,
        project: args.project.clone(),
        projects: args.projects.clone(),
        all_projects: args.all_projects,
        kinds: args.kinds.clone(),
        tags: args.tags.clone(),
        after: args.after.clone(),
        before: args.before.clone(),
        session: args.session.clone(),
        files: args.files.clone(),
        limit,
        min_score: args.min_score,
        probe: args.mode == Mode::Probe,
        explain: args.explain,
        engine: args.engine,
    };
    if let Some(path) = &args.batch {
        return batch::run(io, &searcher, &mut here, path, &base);
    }
    let req = searcher.request(base, here.project.clone(), || here.files())?;
    let hits = searcher.search(&req)?;
    io.notices(&searcher.degraded(&hits));
    if req.explain
        && let Some(n) = searcher.coverage()
    {
        io.notice(&n);
    }
    let cols = if req.probe {
        COLUMNS_PROBE
    } else {
        COLUMNS_FULL
    };
    io.listing(&hits, cols)?;
    if hits.is_empty() {
        io.notice(&searcher.why_nothing(&req)?);
        return Ok(Outcome::NothingFound);
    }
    Ok(Outcome::Ok)
}
