//! mem-eval: measurement built in. `retrieval` scores memkit's search on a retrieval set beside
//! a textbook BM25 over the same text, in the same run; `context` replays transcripts;
//! `compression` scores stored observations against their captures; `health` reports the state
//! of the memory and exits 1 naming what needs doing.

use std::io::Write;
use std::path::PathBuf;

use clap::{CommandFactory, Parser, Subcommand};

use crate::cli::{Common, Format, Io, Outcome};
use crate::config::{self, Config};
use crate::store;
use crate::{Error, Result};
use memkit_eval::retrieval::{self, Set};

pub const TOOL: super::Tool = super::Tool {
    name: "mem-eval",
    command: || Args::command(),
    details: DETAILS,
    examples: &[
        (
            "mem-eval compression --since 2026-11-01 --project spotter",
            "Score the observations of a project made since a day against their captures.",
        ),
        (
            "mem-eval compression | jq -r 'select(.faults | length > 0) | \"#\\(.id) \\(.faults)\"'",
            "The observations that fail a check, and why.",
        ),
        (
            "mem-eval benchmark --a heuristic --b anthropic --format table",
            "What the Anthropic backend would make of the same captures, beside the heuristic.",
        ),
        (
            "mem-eval health --days 14 || echo 'memkit needs attention'",
            "The state of the memory over two weeks; exit 1 names each problem.",
        ),
        (
            "mem-eval retrieval tests/fixtures/retrieval/musique-mini",
            "Every retriever on a set (corpus.jsonl, queries.jsonl, qrels.tsv in one directory).",
        ),
        (
            "mem-eval retrieval --corpus c.jsonl --queries q.jsonl --qrels q.tsv --mode bm25,textbook --run run.tsv",
            "Two retrievers on a BEIR-layout set; their rankings written as a TREC run file.",
        ),
    ],
};

const DETAILS: &str = r#"
compression: each stored observation (manual notes left out) is scored against the captures it was
made from (observation_sources, pending_queue), with deterministic checks only. valid: title,
summary and session present and the type one of decision, bugfix, feature, refactor, discovery,
change. grounded: the share of the files it names (files_modified and files_read) that its captures
touched (1 when it names none). ratio: the estimated tokens of the captures' payloads over those of
the observation's text (title, summary, detail, facts); once the captures' raw responses were dropped
(MEM_RAW_RESPONSE_DAYS) the raw count is the one the compressor made (raw_dropped). title_score: the share of the title rubric's
checks passed: 3-15 words, nothing cut, no trailing period, an action first, no raw prompt behind a
"Verb:" label, a file, command or component named. Printed: one eval_compression record per
observation (id, obs_type, title, captures, valid, grounded, raw_tokens, compressed_tokens, ratio,
title_score, faults), then an eval record (set compression) with the means; ratio there is the
total raw over the total compressed, ratio_mean the mean of the observations' ratios. Exit 1 when no
observation matches. --qag adds an LLM judge (the MEM_LLM backend, one call per observation with
the observation and up to ~6,000 tokens of its captures): it writes yes/no questions the captures
answer and says which the observation answers (qag_coverage), and lists the observation's claims
with whether the captures support them (qag_alignment); qag_error says why an observation has no
verdict. Judge calls are logged in event_log (llm_call, purpose judge) and count against
MEM_LLM_DAILY_TOKENS: once it is spent the judge stops and says so; the summary gives qag_judged
and the means.

health: one health record: captures per UTC day and LLM calls, failed calls and tokens per day over
--days (today included), queue rows per status and the errors per class of their last error, the
tokens spent today against MEM_LLM_DAILY_TOKENS, the compression ratio (raw over compressed tokens,
all observations), the dedup rate (observations merged into an earlier one by the compression runs
of the period), the embedding model in use (the newest vectors', else MEM_EMBED_MODEL) and the
observations without its vector, each index as mem-index --check sees it and whether the database
changed after the indexes were last updated, the sizes of the database and the indexes, when the last
pipeline run started and what it logged, and the overall figures the last mem-eval retrieval and
mem-eval context runs recorded (last_figures, with when; kept in $MEM_HOME/eval). problems names what needs doing: captures in error, an
index that differs from or is older than the database, observations without a vector. Exit 0 when
there is none, 1 otherwise (each problem also on stderr).

benchmark: the captures of the memory are compressed again by --a, then by --b, each in a scratch
copy of the database (made with the consistency of mem backup, its queue reset, observations and
summaries deleted; the user's config.toml applies), and each result is scored as compression scores
it. Printed: one eval record (set benchmark) per side with the compression means, the backend and
model, llm_calls, tokens_in, tokens_out, fallbacks (chunks the heuristic took over), merged and
elapsed_ms. The LLM calls are booked in the user's event_log, so MEM_LLM_DAILY_TOKENS holds across
both sides and the pipeline. Captures whose raw responses were dropped (MEM_RAW_RESPONSE_DAYS) are
replayed without them. The scratch copies are deleted unless --keep is given.

retrieval: the corpus ({id, scope, text, title?, date?, tags?} per line) is imported into a scratch
memory as notes (what mem-capture --notes does: id kept, scope as the project, date as created_at),
compressed, embedded with --model (vectors are cached in WORK/embedding-cache.db, so a corpus is
embedded once) and indexed; each query ({qid, scope, text, category?}) searches only its own scope,
--depth hits deep, with each --mode: textbook (BM25 k1 1.2, b 0.75 over lower-cased letter/digit
runs, title prepended, statistics per scope: the baseline every figure stands beside), fts, bm25,
vector, hybrid (memkit's default search). qrels: qid doc_id rel per line (tab or space separated,
header optional). Printed per mode: nDCG@10, recall@k and recall_any@k (at least one relevant in
the top k) for each --k, MRR, the median search time, overall and (in the record) per category;
averaged over the queries with at least one relevant document. The scratch memory is deleted
afterwards unless --keep is given.

context: each project's sessions are replayed in time order in a scratch memory: before each session
that follows another and edits a file, the store holds what the hooks would have captured until its
start, compressed as the Stop hook would have, and the SessionStart block is built as of its start.
Printed per method and project (and "all"): sessions scored, hit_rate (sessions where a named file
was then edited), recall (mean share of the session's edited files named), files_named and
recall_in_project (edits outside the project left out). Methods: memkit (the block), recent (the
files last edited), frequent (the files edited most often) and merged (the two interleaved), each
baseline allowed as many files as the block names; and seen, no method but the ceiling of the data:
the edited files that some earlier session touched (edited, read, searched), so the most any ranking
of the history could name (a plan can name more). --sessions writes each session scored: the files
it edited, the files each method named, and the block.

recall: the projects' sessions replayed the same way; before session i the store holds the sessions
before it, compressed, and each Read, Edit, Write, MultiEdit and NotebookEdit call of session i is
sent as a PreToolUse payload to the hook command (mem-context --hook, a process per call, as of the
call's time), each failed Bash call as a PostToolUseFailure payload. Printed per project and "all":
file_calls and the share answered; edits_with_history (edits of files that earlier observations
changed) and named_earlier, the share whose answer names one of them; answered_without_history and
repeats (a file answered twice in one session with nothing new stored), both 0 when recall keeps
quiet as it should; failures, failures_with_earlier_fix (an earlier failure of the same signature
was fixed), error_answers, error_hits (the answer names that fix) and error_false_positives (it
names none), beside the baseline that names the last observation that edited a file the failed call
names (baseline_answers, baseline_hits, baseline_false_positives).
"#;

/// Measure memkit: retrieval quality against a textbook baseline.
#[derive(Debug, Parser)]
#[command(name = "mem-eval", version, long_about = None)]
pub struct Args {
    #[command(subcommand)]
    pub what: What,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Debug, Subcommand)]
pub enum What {
    /// Score stored observations against the captures they came from.
    Compression(CompressionArgs),
    /// Report the state of the memory; exit 1 naming each problem.
    Health(HealthArgs),
    /// Compress the memory's captures again with two backends, in scratch copies, and score both.
    Benchmark(BenchmarkArgs),
    /// Score search on a retrieval set (corpus, queries, relevance judgements).
    Retrieval(RetrievalArgs),
    /// Replay transcripts: does the SessionStart block name the files each session then edits?
    Context(ContextArgs),
    /// Replay transcripts through the recall hooks: file recall before each Read and edit,
    /// error recall after each failed shell call.
    Recall(RecallArgs),
}

#[derive(Debug, clap::Args)]
pub struct RecallArgs {
    /// Transcript files or folders of them (e.g. ~/.claude/projects/<project>).
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<PathBuf>,
    /// The hook command the payloads go to [default: mem-context --hook, beside mem-eval].
    #[arg(long, value_name = "CMD")]
    pub hook: Option<String>,
    /// Name of the set in the figures [default: the first PATH's name].
    #[arg(long)]
    pub set: Option<String>,
    /// Scratch memories [default: ~/.cache/memkit/eval].
    #[arg(long, value_name = "DIR")]
    pub work: Option<PathBuf>,
    /// Keep the scratch memories and print their paths.
    #[arg(long)]
    pub keep: bool,
}

#[derive(Debug, clap::Args)]
pub struct CompressionArgs {
    /// Score the newest N observations only.
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Observations made on or after DATE (YYYY-MM-DD or an ISO datetime).
    #[arg(long, value_name = "DATE")]
    pub since: Option<String>,
    /// Observations of one project (its name or root path).
    #[arg(long, value_name = "P")]
    pub project: Option<String>,
    /// Also have the LLM backend (MEM_LLM) judge each observation by question-answer
    /// generation; its calls count against MEM_LLM_DAILY_TOKENS.
    #[arg(long)]
    pub qag: bool,
}

#[derive(Debug, clap::Args)]
pub struct BenchmarkArgs {
    /// The first backend (heuristic, anthropic, openai, claude-cli).
    #[arg(long = "a", value_name = "BACKEND")]
    pub a: String,
    /// The second backend.
    #[arg(long = "b", value_name = "BACKEND")]
    pub b: String,
    /// Scratch copies [default: ~/.cache/memkit/eval].
    #[arg(long, value_name = "DIR")]
    pub work: Option<PathBuf>,
    /// Keep the scratch copies and print their paths.
    #[arg(long)]
    pub keep: bool,
}

#[derive(Debug, clap::Args)]
pub struct HealthArgs {
    /// Days the per-day figures cover, today included.
    #[arg(long, value_name = "N", default_value_t = 7)]
    pub days: u32,
}

#[derive(Debug, clap::Args)]
pub struct ContextArgs {
    /// Transcript files or folders of them (e.g. ~/.claude/projects/<project>).
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<PathBuf>,
    /// Token budget of the block.
    #[arg(long, default_value_t = memkit_context::DEFAULT_BUDGET)]
    pub budget: usize,
    /// Name of the set in the figures [default: the first PATH's name].
    #[arg(long)]
    pub set: Option<String>,
    /// Write each replayed session (files edited, files each method named, the block) as JSONL.
    #[arg(long, value_name = "FILE")]
    pub sessions: Option<PathBuf>,
    /// Scratch memories [default: ~/.cache/memkit/eval].
    #[arg(long, value_name = "DIR")]
    pub work: Option<PathBuf>,
    /// Keep the scratch memories and print their paths.
    #[arg(long)]
    pub keep: bool,
}

#[derive(Debug, clap::Args)]
pub struct RetrievalArgs {
    /// A directory holding corpus.jsonl, queries.jsonl and qrels.tsv.
    #[arg(value_name = "DIR", required_unless_present_all = ["corpus", "queries", "qrels"])]
    pub dir: Option<PathBuf>,
    #[arg(long, value_name = "FILE")]
    pub corpus: Option<PathBuf>,
    #[arg(long, value_name = "FILE")]
    pub queries: Option<PathBuf>,
    #[arg(long, value_name = "FILE")]
    pub qrels: Option<PathBuf>,
    /// Retrievers, comma-separated: textbook, fts, bm25, vector, hybrid.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "textbook,fts,bm25,vector,hybrid"
    )]
    pub mode: Vec<String>,
    /// Embedding model (name under the model cache, or a directory).
    #[arg(long, default_value = "minilm-l6")]
    pub model: String,
    /// Cut-offs for recall@k and recall_any@k.
    #[arg(long, value_delimiter = ',', default_value = "5,10")]
    pub k: Vec<usize>,
    /// Hits asked for per query.
    #[arg(long, default_value_t = 100)]
    pub depth: usize,
    /// Write every ranking as a TREC run file (qid Q0 doc rank score mode).
    #[arg(long, value_name = "FILE")]
    pub run: Option<PathBuf>,
    /// Scratch memories and the shared embedding cache [default: ~/.cache/memkit/eval].
    #[arg(long, value_name = "DIR")]
    pub work: Option<PathBuf>,
    /// Keep the scratch memory and print its path (MEM_HOME=PATH mem-search … then works on it).
    #[arg(long)]
    pub keep: bool,
}

pub fn run(args: Args, io: &mut Io) -> Result<Outcome> {
    match args.what {
        What::Compression(a) => compression_run(a, io),
        What::Health(a) => health_run(a, io),
        What::Benchmark(a) => benchmark_run(a, io),
        What::Retrieval(a) => retrieval_run(a, io),
        What::Context(a) => context_run(a, io),
        What::Recall(a) => recall_run(a, io),
    }
}

/// Keeps a run's overall figures for `mem-eval health`; a failure is said, not fatal.
fn record_figures<T: serde::Serialize>(io: &mut Io, mode: &str, figures: &[T]) {
    if let Err(e) = memkit_eval::record_figures(&config::data_home(), mode, figures) {
        io.warn(format!(
            "the figures were not kept for mem-eval health: {e}"
        ));
    }
}

/// The database of the data home, or `None` (said on stderr) when nothing is stored yet.
fn open_store(io: &Io) -> Result<Option<(std::path::PathBuf, Config, rusqlite::Connection)>> {
    let home = config::data_home();
    let cfg = Config::load(&home)?;
    match store::open_if_present(&cfg.db_path())? {
        Some(conn) => Ok(Some((home, cfg, conn))),
        None => {
            io.no_memories(&cfg.db_path());
            Ok(None)
        }
    }
}

fn compression_run(a: CompressionArgs, io: &mut Io) -> Result<Outcome> {
    let since = match &a.since {
        Some(s) => Some(
            store::parse_time(s)
                .ok_or_else(|| Error::Usage(format!("--since {s:?}: {}", store::DATE_HINT)))?,
        ),
        None => None,
    };
    if a.limit == Some(0) {
        return Err(Error::Usage("--limit takes a number above 0".into()));
    }
    let Some((_, cfg, conn)) = open_store(io)? else {
        return Ok(Outcome::NothingFound);
    };
    let sel = memkit_core::store::stats::Selection {
        since,
        project: a.project.clone(),
        limit: a.limit,
    };
    let mut judge = None;
    if a.qag {
        let (b, warning) = crate::llm::Backend::from_config(&cfg, None)?;
        if b.kind == crate::llm::Kind::Heuristic {
            return Err(Error::Usage(format!(
                "--qag needs an LLM backend: set MEM_LLM to anthropic, openai or claude-cli{}",
                warning.map(|w| format!(" ({w})")).unwrap_or_default()
            )));
        }
        let cap = cfg.get_num("llm_daily_tokens")?;
        judge = Some(memkit_eval::qag::Judge::new(b, cap, &conn)?);
    }
    let (scores, report) = memkit_eval::compression::run(&conn, &sel, judge.as_mut())?;
    if let Some(j) = &judge {
        if let Some(why) = &j.stopped {
            io.warn(format!("the judge stopped: {why}"));
        }
        io.info(format!(
            "judge: {} calls, {} tokens spent today",
            j.calls, j.spent
        ));
    }
    if scores.is_empty() {
        io.warn("no compressed observation matches");
        return Ok(Outcome::NothingFound);
    }
    // The judge's columns only when it judged.
    let qag: &[&str] = if a.qag {
        &["qag_coverage", "qag_alignment"]
    } else {
        &[]
    };
    let mut columns = vec![
        "id",
        "obs_type",
        "title",
        "captures",
        "valid",
        "grounded",
        "ratio",
        "title_score",
    ];
    columns.extend(qag);
    columns.push("faults");
    io.listing(&scores, &columns)?;
    let mut columns = vec![
        "set",
        "observations",
        "valid",
        "grounded",
        "ratio",
        "ratio_mean",
        "title_score",
        "title_pass",
        "clean",
    ];
    if a.qag {
        columns.push("qag_judged");
    }
    columns.extend(qag);
    io.listing(&[report], &columns)?;
    Ok(Outcome::Ok)
}

fn benchmark_run(a: BenchmarkArgs, io: &mut Io) -> Result<Outcome> {
    let Some((home, cfg, conn)) = open_store(io)? else {
        return Ok(Outcome::NothingFound);
    };
    drop(conn);
    let opts = memkit_eval::benchmark::Options {
        work: a.work.clone().unwrap_or_else(retrieval::default_work),
        keep: a.keep,
    };
    let (sides, kept) = memkit_eval::benchmark::run(&home, &cfg, &a.a, &a.b, &opts)?;
    for d in &kept {
        io.warn(format!("scratch copy kept: MEM_HOME={}", d.display()));
    }
    io.listing(
        &sides,
        &[
            "side",
            "backend",
            "observations",
            "valid",
            "grounded",
            "ratio",
            "title_score",
            "title_pass",
            "clean",
            "llm_calls",
            "tokens_in",
            "tokens_out",
            "fallbacks",
            "elapsed_ms",
        ],
    )?;
    Ok(Outcome::Ok)
}

fn health_run(a: HealthArgs, io: &mut Io) -> Result<Outcome> {
    if a.days == 0 {
        return Err(Error::Usage("--days takes a number above 0".into()));
    }
    let Some((home, cfg, conn)) = open_store(io)? else {
        return Ok(Outcome::NothingFound);
    };
    let h = memkit_eval::health::check(&home, &cfg, &conn, a.days)?;
    match io.format() {
        Format::Jsonl | Format::Json => io.record(&h)?,
        fmt => {
            // One row per figure: the record's fields, nested ones as compact JSON.
            let v = serde_json::to_value(&h)?;
            let rows: Vec<Vec<String>> = v
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(k, _)| !matches!(k.as_str(), "type" | "v"))
                .map(|(k, v)| {
                    let text = match v {
                        serde_json::Value::String(s) => s.clone(),
                        serde_json::Value::Null => "-".into(),
                        serde_json::Value::Array(a) if k == "problems" || k == "pipeline_log" => a
                            .iter()
                            .filter_map(|x| x.as_str())
                            .collect::<Vec<_>>()
                            .join("\n"),
                        v => v.to_string(),
                    };
                    vec![k.clone(), text]
                })
                .collect();
            io.out
                .write_all(crate::cli::render_table(&["figure", "value"], &rows, fmt).as_bytes())?;
        }
    }
    if h.problems.is_empty() {
        return Ok(Outcome::Ok);
    }
    if !io.quiet {
        for p in &h.problems {
            eprintln!("{}: problem: {p}", io.prog);
        }
    }
    Ok(Outcome::NothingFound)
}

fn context_run(a: ContextArgs, io: &mut Io) -> Result<Outcome> {
    use memkit_eval::context;
    let set = a.set.clone().unwrap_or_else(|| {
        a.paths[0]
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    });
    let opts = context::Options {
        budget: a.budget,
        work: a.work.clone().unwrap_or_else(retrieval::default_work),
        keep: a.keep,
    };
    let bar = progress_bar(io);
    let out = context::run(&set, &a.paths, &opts, &mut |step, done, total| {
        if let Some(b) = &bar {
            b.set_message(step.to_string());
            b.set_length(total as u64);
            b.set_position(done as u64);
        }
    })?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    if let Some(path) = &a.sessions {
        let name = path.display().to_string();
        let f = std::fs::File::create(path).map_err(|e| Error::input(&name, None, e))?;
        let mut w = std::io::BufWriter::new(f);
        for s in &out.sessions {
            serde_json::to_writer(&mut w, s)?;
            writeln!(w)?;
        }
        w.flush()?;
    }
    for home in &out.homes {
        io.warn(format!("scratch memory kept: MEM_HOME={}", home.display()));
    }
    if out.sessions.is_empty() {
        io.warn("no session to score: a project needs a second session that edits files");
        return Ok(Outcome::NothingFound);
    }
    let overall: Vec<_> = out.reports.iter().filter(|r| r.project == "all").collect();
    record_figures(io, "context", &overall);
    io.listing(
        &out.reports,
        &[
            "set",
            "project",
            "method",
            "sessions",
            "hit_rate",
            "recall",
            "files_named",
            "recall_in_project",
        ],
    )?;
    Ok(Outcome::Ok)
}

fn recall_run(a: RecallArgs, io: &mut Io) -> Result<Outcome> {
    let set = a.set.clone().unwrap_or_else(|| {
        a.paths[0]
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    });
    let hook = match &a.hook {
        Some(h) => h.split_whitespace().map(str::to_string).collect(),
        None => {
            let beside = std::env::current_exe()?.with_file_name("mem-context");
            let prog = if beside.is_file() {
                beside.display().to_string()
            } else {
                "mem-context".into()
            };
            vec![prog, "--hook".into()]
        }
    };
    let opts = memkit_eval::recall::Options {
        hook,
        work: a.work.clone().unwrap_or_else(retrieval::default_work),
        keep: a.keep,
    };
    let out = memkit_eval::recall::run(&set, &a.paths, &opts)?;
    for home in &out.homes {
        io.warn(format!("scratch memory kept: MEM_HOME={}", home.display()));
    }
    let overall: Vec<_> = out.reports.iter().filter(|r| r.project == "all").collect();
    record_figures(io, "recall", &overall);
    io.listing(
        &out.reports,
        &[
            "project",
            "file_calls",
            "answered",
            "edits_with_history",
            "named_earlier",
            "answered_without_history",
            "repeats",
            "failures",
            "failures_with_earlier_fix",
            "error_answers",
            "error_hits",
            "error_false_positives",
            "baseline_answers",
            "baseline_hits",
            "baseline_false_positives",
        ],
    )?;
    Ok(Outcome::Ok)
}

/// A progress bar on a terminal, none in a pipe or with --quiet.
fn progress_bar(io: &Io) -> Option<indicatif::ProgressBar> {
    (io.stderr_tty && !io.quiet).then(|| {
        let b = indicatif::ProgressBar::new(0);
        b.set_style(
            indicatif::ProgressStyle::with_template("mem-eval {msg} {bar:30} {pos}/{len} {eta}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b
    })
}

fn retrieval_run(a: RetrievalArgs, io: &mut Io) -> Result<Outcome> {
    let file = |given: &Option<PathBuf>, name: &str| -> Result<PathBuf> {
        match (given, &a.dir) {
            (Some(p), _) => Ok(p.clone()),
            (None, Some(d)) => Ok(d.join(name)),
            (None, None) => Err(Error::Usage(format!(
                "give DIR or --{}",
                &name[..name.find('.').unwrap_or(name.len())]
            ))),
        }
    };
    let (corpus, queries, qrels) = (
        file(&a.corpus, "corpus.jsonl")?,
        file(&a.queries, "queries.jsonl")?,
        file(&a.qrels, "qrels.tsv")?,
    );
    if a.k.is_empty() || a.k.contains(&0) || a.depth == 0 {
        return Err(Error::Usage("--k and --depth take numbers above 0".into()));
    }
    let name = a
        .dir
        .as_ref()
        .unwrap_or(&corpus)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let set = Set::load(&name, &corpus, &queries, &qrels)?;
    let opts = retrieval::Options {
        modes: a.mode.iter().map(|m| m.trim().to_lowercase()).collect(),
        model: a.model.clone(),
        ks: a.k.clone(),
        work: a.work.clone().unwrap_or_else(retrieval::default_work),
        keep: a.keep,
        depth: a.depth,
    };
    let bar = progress_bar(io);
    let mut progress = |step: &str, done: usize, total: usize| {
        if let Some(b) = &bar {
            b.set_message(step.to_string());
            b.set_length(total as u64);
            b.set_position(done as u64);
        }
    };
    let out = retrieval::run(&set, &opts, &mut progress)?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    if let Some(path) = &a.run {
        write_run(path, &out.runs)?;
    }
    if let Some(home) = &out.home {
        io.warn(format!("scratch memory kept: MEM_HOME={}", home.display()));
    }
    record_figures(io, "retrieval", &out.reports);
    let mut columns = vec!["set", "mode", "queries", "ndcg@10"];
    let names: Vec<String> =
        a.k.iter()
            .flat_map(|k| [format!("recall@{k}"), format!("recall_any@{k}")])
            .collect();
    columns.extend(names.iter().map(String::as_str));
    columns.extend(["mrr", "p50_ms"]);
    io.listing(&out.reports, &columns)?;
    Ok(Outcome::Ok)
}

fn write_run(
    path: &std::path::Path,
    runs: &[(String, Vec<(String, retrieval::Ranking)>)],
) -> Result<()> {
    let name = path.display().to_string();
    let f = std::fs::File::create(path).map_err(|e| Error::input(&name, None, e))?;
    let mut w = std::io::BufWriter::new(f);
    for (mode, rankings) in runs {
        for (qid, r) in rankings {
            for (i, (doc, score)) in r.iter().enumerate() {
                writeln!(w, "{qid} Q0 {doc} {} {score:.6} {mode}", i + 1)?;
            }
        }
    }
    w.flush()?;
    Ok(())
}
