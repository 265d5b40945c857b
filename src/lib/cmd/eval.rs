//! mem-eval: measurement built in. `retrieval` scores memkit's search on a retrieval set beside
//! a textbook BM25 over the same text, in the same run.

use std::io::Write;
use std::path::PathBuf;

use clap::{CommandFactory, Parser, Subcommand};

use crate::cli::{Common, Io, Outcome};
use crate::{Error, Result};
use memkit_eval::retrieval::{self, Set};

pub const TOOL: super::Tool = super::Tool {
    name: "mem-eval",
    command: || Args::command(),
    details: DETAILS,
    examples: &[
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
    /// Score search on a retrieval set (corpus, queries, relevance judgements).
    Retrieval(RetrievalArgs),
    /// Replay transcripts: does the SessionStart block name the files each session then edits?
    Context(ContextArgs),
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
        What::Retrieval(a) => retrieval_run(a, io),
        What::Context(a) => context_run(a, io),
    }
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
