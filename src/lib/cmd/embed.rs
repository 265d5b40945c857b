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
use crate::{Error, Result, store};

pub const TOOL: super::Tool = super::Tool {
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
the embeddings table of mem.db, and writes a Summary record (counts: pending, up_to_date, embedded,
cache_hits, removed: vectors whose observation or session is gone, pruned: cache entries unused for
MEM_EMBED_CACHE_DAYS that back no current vector, looked for once a day). Vectors are cached by
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
    #[command(flatten)]
    pub common: Common,
}

pub fn run(args: Args, io: &mut Io) -> Result<Outcome> {
    if let Some(name) = &args.install {
        return install(io, name);
    }
    let home = config::data_home();
    let cfg = Config::load(&home)?;
    let model = args.model.clone().or_else(|| cfg.get("embed_model"));
    let dim = match args.dim {
        Some(d) => Some(config::check_flag("--dim", "embed_dim", d)?),
        None => cfg.get_num("embed_dim")?,
    };
    // Read after the model is loaded: checked before that wait.
    cfg.get_num::<u32>("embed_cache_days")?;
    let resolve = |io: &Io| model_dir(io, &cfg, model.as_deref());
    match &args.input {
        Some(p) => filter(io, p, resolve, dim, args.query.as_deref()),
        None => {
            let dir = resolve(io)?;
            database(io, &cfg, &dir, dim)
        }
    }
}

/// The directory of model `spec` (None: the default model). A model that can be installed by
/// name but is not is installed on this first use (MEM_AUTO_INSTALL=0: not). Without a
/// configured model, a default model that cannot be had gives way to minilm-l6 when that is
/// installed.
fn model_dir(io: &Io, cfg: &Config, spec: Option<&str>) -> Result<PathBuf> {
    let name = spec.unwrap_or(embed::DEFAULT_MODEL);
    let mut err = match embed::resolve_model(name) {
        Ok(dir) => return Ok(dir),
        Err(e) => e,
    };
    let auto = cfg.get_on("auto_install");
    let models = config::models_dir();
    if auto && let Some(pkg) = embed::install::find(&models, name)? {
        io.info(format!(
            "installing {name} on its first use (MEM_AUTO_INSTALL=0 turns this off)"
        ));
        let endpoint = embed::install::endpoint();
        match with_progress(io, |p| {
            embed::install::first_use(&pkg, &endpoint, &models, p)
        }) {
            Ok(dir) => {
                io.info(format!("installed {name} in {}", dir.display()));
                return Ok(dir);
            }
            Err(e) => err = e,
        }
    }
    if spec.is_none()
        && let Ok(dir) = embed::resolve_model(embed::FALLBACK_MODEL)
    {
        // An install's error names the model already.
        let why = if auto {
            err.to_string()
        } else {
            format!("{name} is not installed")
        };
        io.warn(format!("{why}; using {}", embed::FALLBACK_MODEL));
        return Ok(dir);
    }
    Err(err)
}

/// A progress bar with `template`, on a terminal only.
fn progress_bar(io: &Io, template: &str) -> Option<indicatif::ProgressBar> {
    (io.stderr_tty && !io.quiet).then(|| {
        let b = indicatif::ProgressBar::new(0);
        b.set_style(
            indicatif::ProgressStyle::with_template(template)
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b
    })
}

/// Runs a download with a progress bar on a terminal.
fn with_progress<T>(io: &Io, f: impl FnOnce(embed::install::Progress) -> Result<T>) -> Result<T> {
    let bar = progress_bar(
        io,
        "mem-embed {msg} {bar:30} {bytes}/{total_bytes} {bytes_per_sec} {eta}",
    );
    let r = f(&mut |file, done, total| {
        if let Some(b) = &bar {
            b.set_message(file.to_string());
            b.set_length(total.unwrap_or(done));
            b.set_position(done);
        }
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    r
}

/// Records embedded per model call in filter mode: enough to batch well, few enough that a
/// long input is never held whole.
const FILTER_CHUNK: usize = 256;

fn filter(
    io: &mut Io,
    path: &std::path::Path,
    model_dir: impl FnOnce(&Io) -> Result<PathBuf>,
    dim: Option<usize>,
    query: Option<&str>,
) -> Result<Outcome> {
    let mut input = Input::open(path)?;
    let mut model_dir = Some(model_dir);
    // Loaded for the first chunk with a text (never when no record has one).
    let mut model: Option<(Embedder, String)> = None;
    let mut chunk: Vec<(Value, Option<String>)> = Vec::new();
    let (mut embedded, mut embedding) = (0usize, std::time::Duration::ZERO);
    loop {
        let next = input.next(io)?;
        let end = next.is_none();
        if let Some((no, v)) = next {
            let text = record_text(&v);
            match &text {
                Some(t) if t.trim().is_empty() => input.bad(io, no, "empty text"),
                None if v.get("type").is_none() => {
                    input.bad(io, no, "no \"text\" field (and not an observation record)")
                }
                _ => chunk.push((v, text)),
            }
            if chunk.len() < FILTER_CHUNK {
                continue;
            }
        }
        if chunk.iter().any(|(_, t)| t.is_some()) {
            if model.is_none() {
                let dir = model_dir.take().expect("the model is loaded once")(io)?;
                let manifest = embed::Manifest::load(&dir)?;
                let prefix = match query {
                    Some(k) => manifest.query_prefix(Some(k)).to_string(),
                    None => manifest.document_prefix.clone(),
                };
                // A full chunk means more may follow: load for a batch.
                let opts = if end {
                    embed::LoadOptions::for_texts(
                        &texts_of(&chunk, &prefix)
                            .iter()
                            .map(String::as_str)
                            .collect::<Vec<_>>(),
                    )
                } else {
                    embed::LoadOptions::batch()
                };
                let e = Embedder::load_with(&dir, dim, opts)?;
                io.info(format!("model {}: {}", e.manifest.name, e.load_report()));
                model = Some((e, prefix));
            }
            let (e, prefix) = model.as_mut().expect("loaded above");
            let texts = texts_of(&chunk, prefix);
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            let started = Instant::now();
            let mut vecs = e.embed(&refs)?.into_iter();
            embedding += started.elapsed();
            embedded += refs.len();
            for (v, t) in &mut chunk {
                if t.is_some()
                    && let Some(o) = v.as_object_mut()
                {
                    let vec = vecs.next().unwrap_or_default();
                    o.insert("vector".into(), serde_json::to_value(vec)?);
                }
            }
        }
        for (v, _) in chunk.drain(..) {
            io.record(&v)?;
        }
        if end {
            break;
        }
    }
    if let Some((e, _)) = &model {
        io.info(throughput(embedded, e.tokens_embedded(), embedding));
    }
    input.finish()?;
    Ok(Outcome::Ok)
}

/// The texts of a chunk's records that have one, with the model's prefix.
fn texts_of(chunk: &[(Value, Option<String>)], prefix: &str) -> Vec<String> {
    chunk
        .iter()
        .filter_map(|(_, t)| t.as_ref().map(|t| format!("{prefix}{t}")))
        .collect()
}

/// The text of a filter record: its "text", or an observation's title, summary, detail, facts
/// and concepts; None for other typed records.
fn record_text(v: &Value) -> Option<String> {
    if let Some(t) = v.get("text") {
        return Some(t.as_str().map(str::to_string).unwrap_or_default());
    }
    if v.get("type").and_then(Value::as_str) == Some("observation") {
        let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let list = |k: &str| -> Vec<String> {
            v.get(k)
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|x| x.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default()
        };
        let detail = s("detail");
        return Some(embed::observation_text(
            &s("title"),
            &s("summary"),
            Some(&detail),
            &list("facts"),
            &list("concepts"),
        ));
    }
    None
}

fn database(
    io: &mut Io,
    cfg: &Config,
    dir: &std::path::Path,
    dim: Option<usize>,
) -> Result<Outcome> {
    let started = Instant::now();
    let mut conn = store::open(&cfg.db_path())?;
    let bar = progress_bar(io, "mem-embed {bar:30} {pos}/{len} {eta}");
    let cache_days = cfg
        .get_num("embed_cache_days")?
        .unwrap_or(embed::store::CACHE_DAYS);
    // Pruning reads the whole cache: once a day (every run when the days are 0).
    let marker = cfg.db_path().with_file_name(".embed-cache-pruned");
    let prune = store::daily_due(&marker, cache_days == 0).then_some(cache_days);
    let run = embed::store::embed_database(&mut conn, dir, dim, prune, |done, total| {
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
        let embedding = started.elapsed().saturating_sub(load.total);
        io.info(throughput(run.embedded, run.tokens, embedding));
    }
    let mut counts = BTreeMap::new();
    counts.insert("pending".into(), run.pending as u64);
    counts.insert("up_to_date".into(), run.up_to_date as u64);
    counts.insert("embedded".into(), run.embedded as u64);
    counts.insert("cache_hits".into(), run.cache_hits as u64);
    counts.insert("removed".into(), run.removed as u64);
    counts.insert("pruned".into(), run.pruned as u64);
    io.record(&Summary {
        v: 1,
        tool: "mem-embed".into(),
        counts,
        elapsed_ms: started.elapsed().as_millis() as u64,
    })?;
    Ok(Outcome::Ok)
}

fn throughput(texts: usize, tokens: usize, took: std::time::Duration) -> String {
    let s = took.as_secs_f64().max(1e-9);
    format!(
        "embedded {texts} texts ({tokens} tokens) in {:.0} ms: {:.0} tokens/s",
        s * 1000.0,
        tokens as f64 / s
    )
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
    let dir = with_progress(io, |p| embed::install::install(&pkg, &endpoint, &models, p))?;
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
