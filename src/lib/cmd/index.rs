//! mem-index: keep the BM25 and vector indexes in step with the database.

use std::time::Instant;

use clap::{CommandFactory, Parser};

use crate::cli::{self, Common, Io, Outcome};
use crate::config::{self, Config};
use crate::index::{self, Layout, Options};
use crate::record::{IndexReport, Summary};
use crate::store;
use crate::{Context, Error, Result};

pub const TOOL: crate::cli::Tool = crate::cli::Tool {
    name: "mem-index",
    command: || Args::command(),
    details: DETAILS,
    examples: &[
        (
            "mem-index",
            "Index what changed since the last run (what mem-pipeline runs after mem-embed).",
        ),
        (
            "mem-index --rebuild",
            "Rebuild every index from the database.",
        ),
        (
            "mem-index --check || mem-index --rebuild",
            "Verify the indexes and rebuild them when they differ from the database.",
        ),
    ],
};

const DETAILS: &str = r#"
Indexes live in $MEM_HOME/index/: bm25/ (tantivy, English stemming over title, summary, detail,
facts, concepts, tags and file paths; project, type, session, tags and time as filter fields),
vectors-<model>-<dim>.vec (cosine, one per model and dimension found in the embeddings table,
keyed by store::vector_key: each vector's key, scale and sign bits after a fixed rotation,
scanned whole by a search, with the vectors themselves in a .vec.data file beside it; a .delta.vec
holds what later runs added until it is merged) and state.json (how far
each index got: the largest observations.updated_at and embeddings.created_at indexed, the session
summaries' hashes, the known tags).

Indexed records: observations, session summaries (sessions with a summary; id = the session's rowid)
and, once they exist, learnings.

The database is the source of truth. A run compares the keys of each index with the database:
records missing from the index or changed since the last run are (re)indexed, records gone from the
database are removed. An index that is missing, unreadable, of another storage type, or without
state.json is rebuilt from scratch and its record says why.

On a terminal, a progress bar says how far each index being built got, with the time left.

Output: one index record per index (index, docs, added, updated, removed, rebuilt, reason), then a
summary record. --check writes one index record per index with missing, extra and up to 20 sample
keys, and exits 1 when any index differs from the database.
"#;

/// Keep the BM25 (tantivy) and vector indexes in step with the memkit database.
#[derive(Debug, Parser)]
#[command(name = "mem-index", version, long_about = None)]
pub struct Args {
    /// Rebuild every index from scratch.
    #[arg(long, conflicts_with = "check")]
    pub rebuild: bool,
    /// Report records missing from or extra in each index; exit 1 when any differ.
    #[arg(long)]
    pub check: bool,
    /// Vector storage: f32, f16 or i8 (default: MEM_INDEX_QUANTIZATION, else f16).
    #[arg(long, value_name = "KIND", value_parser = ["f32", "f16", "i8"])]
    pub quantization: Option<String>,
    /// Indexing threads (default: up to 4; at most the cores available).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    #[command(flatten)]
    pub common: Common,
}

pub fn run(args: Args, io: &mut Io) -> Result<Outcome> {
    let start = Instant::now();
    let home = config::data_home();
    let cfg = Config::load(&home)?;
    let conn = store::open(&cfg.home.db())?;
    let layout = Layout::new(&home);
    let columns = [
        "index", "docs", "added", "updated", "removed", "rebuilt", "reason",
    ];
    if args.check {
        let checks = index::check(&conn, &layout)
            .map_err_context(|| format!("checking the indexes in {}", layout.dir.display()))?;
        let differs = checks.iter().any(|c| c.differs());
        let recs: Vec<IndexReport> = checks.iter().map(|c| c.record()).collect();
        io.listing(&recs, &["index", "docs", "missing", "extra", "error"])?;
        return Ok(if differs {
            Outcome::NothingFound
        } else {
            Outcome::Ok
        });
    }
    let quantization = args
        .quantization
        .clone()
        .unwrap_or_else(|| config::INDEX_QUANTIZATION.get(&cfg));
    if crate::index::vectors::scalar_kind(&quantization).is_none() {
        return Err(Error::Usage(format!(
            "MEM_INDEX_QUANTIZATION: unknown vector storage {quantization:?} (f32, f16 or i8)"
        )));
    }
    let mut opts = Options {
        rebuild: args.rebuild,
        quantization,
        ..Options::default()
    };
    if let Some(t) = args.threads {
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .min(index::MAX_THREADS);
        if t > cores {
            io.warn(format!("--threads {t}: using {cores}, the cores available"));
        }
        opts.threads = t.clamp(1, cores);
    }
    // A first index of a long history takes minutes: say how far each index got.
    let bar = crate::render::progress_bar(io, "mem-index {msg} {bar:30} {pos}/{len}, {eta} left");
    if let Some(b) = bar.clone() {
        opts.progress = Some(index::Progress(std::sync::Arc::new(
            move |stage, done, total| {
                b.set_message(stage.to_string());
                b.set_length(total);
                b.set_position(done);
            },
        )));
    }
    let reports = index::update(&conn, &layout, &opts)
        .map_err_context(|| format!("updating the indexes in {}", layout.dir.display()));
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let reports = reports?;
    let recs: Vec<IndexReport> = reports.iter().map(|r| r.record()).collect();
    for r in &recs {
        if r.rebuilt && r.reason.as_deref() != Some("asked") {
            io.info(format!(
                "{} rebuilt: {}",
                r.index,
                r.reason.as_deref().unwrap_or("?")
            ));
        }
    }
    io.listing(&recs, &columns)?;
    let summary = Summary {
        tool: "mem-index".into(),
        counts: index::report::counts(&reports),
        elapsed_ms: start.elapsed().as_millis() as u64,
    };
    if matches!(io.format(), cli::Format::Jsonl | cli::Format::Json) {
        io.record(&summary)?;
    }
    Ok(Outcome::Ok)
}
