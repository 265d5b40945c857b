//! mem-embed: vectors for observations and session summaries (database mode), or for JSONL
//! records on a pipe (filter mode).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use clap::{CommandFactory, Parser};
use serde_json::Value;

use crate::cli::{Common, Input, Io, Outcome};
use crate::config::{self, Config};
use crate::embed::{self, Embedder};
use crate::record::Summary;
use crate::render;
use crate::{Error, Result, store};

pub const TOOL: crate::cli::Tool = crate::cli::Tool {
    name: "mem-embed",
    command: || Args::command(),
    details: DETAILS,
    examples: &[
        ("mem-embed", "Embed whatever is pending in mem.db."),
        (
            "echo '{\"id\":1,\"text\":\"fix login bug\"}' | mem-embed - --model minilm-l6",
            "Add a vector to a record.",
        ),
        (
            "mem-embed --model qwen3-embedding-0.6b --dim 256",
            "Embed with Matryoshka truncation to 256 dimensions.",
        ),
    ],
};

const DETAILS: &str = r#"
Without FILE, embeds every observation (title, summary, detail, facts, concepts) and session summary
whose vector for the configured model and dimension is missing or was made from another text, into
the embeddings table of mem.db, newest first, and writes a Summary record (counts: pending,
up_to_date, embedded, cache_hits, left: pending texts this run did not reach, removed: vectors whose
observation or session is gone, pruned: cache entries unused for MEM_EMBED_CACHE_DAYS that back no
current vector, looked for once a day). With --budget SECS (what mem pipeline runs it with) no batch
starts after SECS seconds, at least one runs, and the oldest texts are left to the next run; by
hand it embeds everything, with a progress bar and the time left on a terminal. Vectors are cached by
(model, dimension, sha256 of the exact input text) in embedding_cache, so nothing is embedded twice
and a re-run loads no model.

With FILE (- for stdin), reads JSONL records with a "text" field, or observation records
("type":"observation"), and writes each back with a "vector" field; other typed records pass through
unchanged.

Models are directories holding model.onnx, tokenizer.json and manifest.json, given by path or by
name under the model cache ($MEM_MODELS/<name>). A model that can be installed by name
(qwen3-embedding-0.6b, or one listed in $MEM_MODELS/packages.json) is downloaded on its first use,
with a progress bar on a terminal, unless MEM_AUTO_INSTALL=0; a failed download is not tried again
for a day. Without a configured model, minilm-l6 is used when the default cannot be had. ONNX
Runtime is found via ORT_DYLIB_PATH, then $MEM_MODELS/runtime/libonnxruntime.so, then the system
library directories; scripts/fetch-models fetches both.
"#;

/// Compute embeddings with a local ONNX model.
#[derive(Debug, Parser)]
#[command(name = "mem-embed", version, long_about = None)]
pub struct Args {
    /// JSONL records to embed (- for stdin); without it, embed what is pending in the database.
    #[arg(value_name = "FILE")]
    pub input: Option<PathBuf>,
    /// Model name (under $MEM_MODELS) or directory (default: $MEM_EMBED_MODEL, else qwen3-embedding-0.6b, downloaded on first use, else minilm-l6).
    #[arg(long, value_name = "NAME|DIR")]
    pub model: Option<String>,
    /// Output dimension (Matryoshka truncation; default: $MEM_EMBED_DIM, else the model's).
    #[arg(long, value_name = "N")]
    pub dim: Option<usize>,
    /// Embed texts as queries of this kind (observations, code, learnings), with its prefix.
    #[arg(long, value_name = "KIND")]
    pub query: Option<String>,
    /// Download model NAME (qwen3-embedding-0.6b, or one listed in $MEM_MODELS/packages.json) from Hugging Face ($MEM_HF_ENDPOINT) into the model cache: resumable, sha256-verified; then build its model cache.
    #[arg(long, value_name = "NAME", conflicts_with = "input")]
    pub install: Option<String>,
    /// Database mode: start no batch after SECS seconds (one always runs) and leave the rest,
    /// the oldest, to the next run (mem pipeline passes MEM_EMBED_BUDGET_S).
    #[arg(long, value_name = "SECS", conflicts_with = "input", value_parser = crate::cli::finite)]
    pub budget: Option<f64>,
    #[command(flatten)]
    pub common: Common,
}

pub fn run(args: Args, io: &mut Io) -> Result<Outcome> {
    if let Some(name) = &args.install {
        return install(io, name);
    }
    let home = config::data_home();
    let cfg = Config::load(&home)?;
    let model = args.model.clone().or_else(|| config::EMBED_MODEL.get(&cfg));
    let dim = config::EMBED_DIM.or_flag("--dim", args.dim, &cfg)?;
    // Read after the model is loaded: checked before that wait.
    config::EMBED_CACHE_DAYS.get(&cfg)?;
    let resolve = |io: &Io| {
        render::with_download_progress(io, |p| {
            embed::install::model_dir(&cfg, model.as_deref(), &mut |n| io.notice(&n), p)
        })
    };
    match &args.input {
        Some(p) => filter(io, p, resolve, dim, args.query.as_deref()),
        None => {
            let until = args
                .budget
                .map(|s| Instant::now() + std::time::Duration::from_secs_f64(s.max(0.0)));
            let dir = resolve(io)?;
            database(io, &cfg, &dir, dim, until)
        }
    }
}

/// The reading, telling and writing of a filter run.
struct Filter<'a, F> {
    io: &'a mut Io,
    input: Input,
    model_dir: Option<F>,
}

impl<F: FnOnce(&Io) -> Result<PathBuf>> embed::filter::Stream for Filter<'_, F> {
    fn next(&mut self) -> Result<Option<(usize, Value)>> {
        self.input.next(self.io)
    }

    fn bad(&mut self, line: usize, why: &str) {
        self.input.bad(self.io, line, why);
    }

    fn model_dir(&mut self) -> Result<PathBuf> {
        self.model_dir.take().expect("the model is loaded once")(self.io)
    }

    fn loaded(&mut self, e: &Embedder) {
        self.io
            .info(format!("model {}: {}", e.manifest.name, e.load_report()));
    }

    fn write(&mut self, record: &Value) -> Result<()> {
        self.io.record(record)
    }
}

fn filter(
    io: &mut Io,
    path: &std::path::Path,
    model_dir: impl FnOnce(&Io) -> Result<PathBuf>,
    dim: Option<usize>,
    query: Option<&str>,
) -> Result<Outcome> {
    let mut s = Filter {
        io,
        input: Input::open(path)?,
        model_dir: Some(model_dir),
    };
    if let Some(done) = embed::filter::run(&mut s, dim, query)? {
        s.io.info(render::throughput(done.texts, done.tokens, done.took));
    }
    s.input.finish()?;
    Ok(Outcome::Ok)
}

fn database(
    io: &mut Io,
    cfg: &Config,
    dir: &std::path::Path,
    dim: Option<usize>,
    until: Option<Instant>,
) -> Result<Outcome> {
    let started = Instant::now();
    let mut conn = store::open(&cfg.home.db())?;
    let bar = render::progress_bar(io, "mem-embed {bar:30} {pos}/{len}, {eta} left");
    let cache_days = config::EMBED_CACHE_DAYS.get(cfg)?;
    // Pruning reads the whole cache: once a day (every run when the days are 0).
    let marker = cfg.home.embed_prune_marker();
    let prune = store::daily_due(&marker, cache_days == 0).then_some(cache_days);
    let limits = embed::store::Limits {
        until,
        owners: None,
    };
    let run = embed::store::embed_database(&mut conn, dir, dim, prune, limits, |done, total| {
        if let Some(b) = &bar {
            b.set_length(total as u64);
            b.set_position(done as u64);
        }
    })?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    if prune.is_some() {
        store::mark_done(&marker);
    }
    if let Some(load) = &run.load {
        io.info(format!("model {}: {load}", dir.display()));
        io.info(render::throughput(run.embedded, run.tokens, run.embedding));
    }
    if run.left > 0 {
        io.info(format!(
            "stopped at the budget: {} left for the next run, the oldest",
            run.left
        ));
    }
    io.record(&Summary {
        tool: "mem-embed".into(),
        counts: run.counts(),
        elapsed_ms: started.elapsed().as_millis() as u64,
    })?;
    Ok(Outcome::Ok)
}

fn install(io: &mut Io, name: &str) -> Result<Outcome> {
    let started = Instant::now();
    let models = config::models_dir();
    let pkg = embed::install::find(&models, name)?.ok_or_else(|| {
        Error::Usage(format!(
            "no model named {name:?} to install (known: {}; minilm-l6 comes from scripts/fetch-models)",
            embed::install::names(&models).join(", ")
        ))
    })?;
    let endpoint = embed::install::endpoint();
    let dir = render::with_download_progress(io, |p| {
        embed::install::install(&pkg, &endpoint, &models, p)
    })?;
    io.info(format!("installed {name} in {}", dir.display()));
    // The first load builds the persistent model cache, so the next process starts fast.
    match Embedder::load(&dir, None) {
        Ok(e) => io.info(format!("model {name}: {}", e.load_report())),
        Err(e) => io.warn(format!("{name} is installed but does not load yet: {e}")),
    }
    let mut counts = BTreeMap::new();
    counts.insert("files".into(), pkg.files.len() as u64);
    io.summary(counts, started)?;
    Ok(Outcome::Ok)
}
