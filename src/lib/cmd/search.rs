//! mem-search: hybrid search over observations and session summaries.

use std::path::PathBuf;

use clap::{CommandFactory, Parser, ValueEnum};

use crate::cli::{self, Common, Io, Outcome};
use crate::config::{self, Config};
use crate::search::{self, Engine, Here, Query, Searcher};
use crate::store;
use crate::{Error, Result};

mod batch;

pub const TOOL: super::Tool = super::Tool {
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

const DETAILS: &str = r#"
Retrieval: the best 100 BM25 candidates and the best 100 vector candidates (as many as --limit when
it asks for more; so the first hits do not depend on the limit) are fused with reciprocal rank
fusion (k = 60) and re-ranked by score = relevance × w_relevance + lexical match × w_lexical +
similarity × w_similarity + recency × w_recency + type weight × w_type + file overlap × w_files +
same project × w_project + time × w_time. The vector list's votes and the similarity are weighted
per query by how far its best cosine clears the similarity floor (below): weight 0 within 0.03 of
it, 1 from 0.08 above it, so a query the model places no better than made-up words (or a model that
means nothing) cannot pull the lexical hits down (--explain shows vector_weight when below 1).
relevance is the fused score scaled to 0..1 (1 = first in every list); lexical match the BM25 (or
FTS5) score scaled by the best candidate's; similarity the cosine of the query's and the record's
vectors; time 1 for a record that answers the time the query asks or names: made within the span it
names ("yesterday", "last week", "last Tuesday", "3 days ago", "in March 2024", "in June", "in
2023"), or, for a question asking when ("when", "what date", "how long"), saying a time itself;
recency 0.5^(age/half-life), half-life 2 days; type weights decision 0.8, bugfix 0.7, discovery 0.6,
learning 0.8, feature 0.5, session 0.5, refactor 0.4, change 0.3; file overlap the share of --files
(default: the files changed in the current git working tree) the record touched. Every weight is
configurable (MEM_SEARCH_WEIGHT_* (w_time 0.3), MEM_SEARCH_HALF_LIFE_DAYS, MEM_SEARCH_TYPE_WEIGHTS,
MEM_SEARCH_RRF_K). --now TIME (MEM_NOW) ranks as of that moment, so a ranking can be reproduced.
Learnings (mem-learn) are searched too, the active ones of the projects asked for: by their vectors
and by a textbook BM25 over their content, merged into the lexical list (--type learning for them
alone).

BM25 (tantivy) scores one searchable text per record (title, summary, detail, facts, concepts, tags,
files), its words folded to ASCII, both English-stemmed and as written (a word matched as written
counts in both), with k1 1.2 and b 0.75 (MEM_SEARCH_BM25_K1, MEM_SEARCH_BM25_B) and the idf of
SQLite FTS5 (a word in half the records or more weighs next to nothing); the query's distinct words
are OR-ed. Vectors: a record is embedded as its title, body and topic words (said again where the
body says them: they weigh its subject), a long one in windows of the model's length (up to 8), and
scored by its best window; filters apply inside the vector search (every allowed record compared
when they are at most 8,192, usearch's filtered search beyond), never to a global top-N. In hybrid
search a hit found by vectors alone must reach a similarity floor: the higher of the model's
(manifest similarity_floor) and the one mem-embed measures on this database from what made-up words
reach (MEM_SEARCH_SIMILARITY_FLOOR overrides both), so nonsense finds nothing. Equal scores go to
the older record (smaller id): the same query gives the same output.

Degradation: without a vector index or a query vector, BM25 alone; without a readable tantivy index,
SQLite FTS5 (a warning says so; mem-index rebuilds it). Each hit says which: mode hybrid, bm25, fts
or vector. The query vector is read from embedding_cache (sha256 of the query text as the model's
manifest shapes it, e.g. with the Qwen3 instruction). A query not in the cache is embedded by the
vector index's model when it is installed in the model cache (MEM_MODELS) or configured
(MEM_EMBED_MODEL), and cached, so the next identical query loads no model; --no-model (or
MEM_SEARCH_MODEL_LOAD=0) never loads one: uncached queries then use BM25 alone.

Reranking (--rerank, MEM_SEARCH_RERANK=1; off by default): the first 20 fused hits
(MEM_SEARCH_RERANK_DEPTH) are reordered by a cross-encoder that reads the query beside each record;
the scores stay in place, so hits still read best first. The model (MEM_SEARCH_RERANK_MODEL, default
$MEM_MODELS/reranker) is a directory with an ONNX sequence-classification export (inputs input_ids,
attention_mask, token_type_ids; output logits [batch, 1]), its tokenizer.json and a manifest.json
{"name": "ms-marco-minilm-l6", "kind": "cross-encoder", "max_tokens": 256, "inputs": {"input_ids":
"input_ids", "attention_mask": "attention_mask", "token_type_ids": "token_type_ids"}, "output":
"logits"}: e.g. cross-encoder/ms-marco-MiniLM-L-6-v2 exported with `optimum-cli export onnx --model
cross-encoder/ms-marco-MiniLM-L-6-v2 DIR`. A model that cannot run leaves the fused order, with a
warning; --rerank without a usable model is an error.

Filters: --project (default: the project of the current directory, as capture resolves it:
CLAUDE_PROJECT_DIR, else the cwd's git root), --projects, --all-projects (hits from another project
than the current one carry other_project: true and their project); --type; --tags (a tag also
matches the known tags it is a prefix of and those whose embedding cosine with it is at least 0.75,
MEM_SEARCH_TAG_SIMILARITY); --after/--before (an ISO date covers the whole UTC day, so a memory of
2026-02-21T14:30 is found by both --after 2026-02-21 and --before 2026-02-21; a datetime is exact;
anything else is a usage error); --session.

Query text is never parsed as query syntax: quotes, operators, wildcards and unicode are just words.
An empty query is a usage error (exit 2). No hit exits 1, with the reason on stderr: no project
here (try --all-projects), nothing stored or indexed yet (run mem-pipeline), captures waiting in the
queue, or no match among the memories searched.

--batch FILE (- for stdin) reads JSON lines {"id": …, "query": …} with optional filters named like
the flags (project, projects, all_projects, type, tags, after, before, session, files, limit,
min_score, mode, explain) and writes every query's hits tagged with query_id.
"#;

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

/// The limit actually used, with a warning when the asked one is past the cap.
pub(super) fn capped_limit(io: &Io, what: &str, limit: usize) -> usize {
    if limit > search::MAX_LIMIT {
        io.warn(format!(
            "{what} {limit}: at most {} hits are returned",
            search::MAX_LIMIT
        ));
    }
    limit.min(search::MAX_LIMIT)
}

const COLUMNS_FULL: &[&str] = &[
    "rank",
    "ref",
    "score",
    "kind",
    "project_name",
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
    let limit = capped_limit(io, "--limit", args.limit);
    // Bad settings are reported even before there is a database to search.
    search::Weights::from_config(&cfg)?;
    let Some(conn) = store::open_current(&cfg.db_path())? else {
        return Ok(io.no_memories(&cfg.db_path()));
    };
    let now = args.now.as_deref();
    let mut searcher = Searcher::open_for(&home, conn, &cfg, now, !args.no_model, args.engine)?;
    if args.rerank || cfg.get_bool("search_rerank") {
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
    for w in searcher.degraded(&hits) {
        io.warn(w);
    }
    let cols = if req.probe {
        COLUMNS_PROBE
    } else {
        COLUMNS_FULL
    };
    io.listing(&hits, cols)?;
    if hits.is_empty() {
        io.warn(searcher.why_nothing(&req)?);
        return Ok(Outcome::NothingFound);
    }
    Ok(Outcome::Ok)
}
