//! Local embeddings: an ONNX model (loaded through a dynamically found ONNX Runtime), its
//! tokenizer and a small manifest saying how to pool, pad and prefix. Never prints or exits.

pub mod cache;
pub mod cross;
pub mod filter;
pub mod install;
pub mod int8;
pub mod store;
pub mod words;

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use ort::session::{Session, SessionInputValue};
use ort::value::Tensor;
use serde::Deserialize;
use sha2::{Digest, Sha256};

use memkit_core::{Error, Result, config};

// Below `install`, which needs them, so the two stay off each other's path.
use install::FETCH_HINT;
pub use install::{DEFAULT_MODEL, FALLBACK_MODEL, resolve_model};

/// How a model wants its input prepared and its output pooled (`manifest.json`).
#[derive(Debug, Clone, Deserialize)]
pub struct Manifest {
    pub name: String,
    #[serde(default)]
    pub arch: String,
    pub dim: usize,
    #[serde(default = "default_max_tokens")]
    pub max_tokens: usize,
    /// `mean`, `last_token` or `none` (the model outputs pooled vectors).
    pub pooling: String,
    /// `left` or `right`.
    #[serde(default = "default_padding")]
    pub padding: String,
    #[serde(default)]
    pub append_eos: bool,
    #[serde(default)]
    pub eos_token_id: Option<i64>,
    #[serde(default)]
    pub pad_token_id: Option<i64>,
    #[serde(default = "yes")]
    pub normalize: bool,
    /// Role (`input_ids`, `attention_mask`, `position_ids`, `token_type_ids`) → input name.
    pub inputs: BTreeMap<String, String>,
    pub output: String,
    #[serde(default)]
    pub query_prefix: String,
    #[serde(default)]
    pub query_prefixes: BTreeMap<String, String>,
    #[serde(default)]
    pub document_prefix: String,
    #[serde(default)]
    pub matryoshka_dims: Vec<usize>,
    /// The cosine a record found by vectors alone must reach to be a hit: below it, this model
    /// says as much for unrelated text (nonsense queries reach it too). Set from measurements;
    /// none = no floor.
    #[serde(default)]
    pub similarity_floor: Option<f32>,
}

fn default_max_tokens() -> usize {
    512
}
fn default_padding() -> String {
    "right".into()
}
fn yes() -> bool {
    true
}

impl Manifest {
    pub fn load(dir: &Path) -> Result<Manifest> {
        let path = dir.join("manifest.json");
        let text = std::fs::read_to_string(&path).map_err(|e| {
            Error::other(format!(
                "model {}: cannot read manifest.json: {e} ({FETCH_HINT})",
                dir.display()
            ))
        })?;
        let m: Manifest = serde_json::from_str(&text)
            .map_err(|e| Error::input(path.display().to_string(), Some(e.line()), e))?;
        if !matches!(m.pooling.as_str(), "mean" | "last_token" | "none") {
            return Err(Error::input(
                path.display().to_string(),
                None,
                format!("unknown pooling {:?} (mean, last_token or none)", m.pooling),
            ));
        }
        if !m.inputs.contains_key("input_ids") {
            return Err(Error::input(
                path.display().to_string(),
                None,
                "inputs has no input_ids",
            ));
        }
        Ok(m)
    }

    /// The prefix for a query of `kind` (observations, code, learnings); the generic one otherwise.
    pub fn query_prefix(&self, kind: Option<&str>) -> &str {
        kind.and_then(|k| self.query_prefixes.get(k))
            .map(String::as_str)
            .unwrap_or(&self.query_prefix)
    }

    /// The output dimension for a requested one: the model's own when none; otherwise it must
    /// be at most the model's.
    pub fn output_dim(&self, want: Option<usize>) -> Result<usize> {
        match want {
            None => Ok(self.dim),
            Some(0) => Err(Error::Usage("dimension must be positive".into())),
            Some(d) if d > self.dim => Err(Error::Usage(format!(
                "model {} has {} dimensions; cannot give {d}",
                self.name, self.dim
            ))),
            Some(d) => Ok(d),
        }
    }
}

/// The query kind memkit's search embeds (a key of the manifest's `query_prefixes`).
pub const SEARCH_QUERY_KIND: &str = "observations";

/// The exact text embedded for a query of `kind`: the model's prefix for it (from its
/// manifest; Qwen3 models carry `Instruct: …\nQuery: `) and the query trimmed. Without a
/// manifest (the model is not installed) the query alone. The single source of truth for
/// both the `embedding_cache` key and the text the model sees.
pub fn query_text(manifest: Option<&Manifest>, kind: Option<&str>, query: &str) -> String {
    let prefix = manifest.map(|m| m.query_prefix(kind)).unwrap_or("");
    format!("{prefix}{}", query.trim())
}

/// The installed model whose manifest is named `name` (as `embeddings.model` stores it):
/// `hint` first (a configured model name or directory), then `<model cache>/<name>`, then
/// any directory of the model cache whose manifest.json names it. Reads manifests only.
pub fn find_model(name: &str, hint: Option<&str>) -> Option<(PathBuf, Manifest)> {
    let cache = config::models_dir();
    let named = |dir: PathBuf| {
        let m = Manifest::load(&dir).ok()?;
        (m.name == name && dir.join("model.onnx").is_file()).then_some((dir, m))
    };
    let first = hint
        .and_then(|h| resolve_model(h).ok())
        .into_iter()
        .chain([cache.join(name)]);
    for dir in first {
        if let Some(found) = named(dir) {
            return Some(found);
        }
    }
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&cache)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("manifest.json").is_file())
        .collect();
    dirs.sort();
    dirs.into_iter().find_map(named)
}

/// Embeds search queries, for `search` (which depends on this trait, not on a model): [`QueryModel`]
/// implements it with a real model, tests with stand-ins. Search works without one:
/// cached query vectors are read from `embedding_cache` directly.
pub trait QueryEmbedder {
    /// Model name as stored in `embeddings.model`.
    fn model(&self) -> &str;
    /// Output dimension as stored in `embeddings.dim`.
    fn dim(&self) -> usize;
    /// Embeds `text` exactly as given (already shaped by [`query_text`] for
    /// queries); the vector must be L2-normalised. The searcher caches it.
    fn embed(&self, text: &str) -> Result<Vec<f32>>;
    /// Embeds several texts, as [`QueryEmbedder::embed`] does each (an implementation may
    /// batch them: a search with `--tags` embeds every known tag once).
    fn embed_all(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        texts.iter().map(|t| self.embed(t)).collect()
    }
}

/// A model for search queries, loaded on the first query that is not cached (a cached
/// query never pays for loading it).
pub struct QueryModel {
    dir: PathBuf,
    manifest: Manifest,
    dim: usize,
    /// The loaded model, or why it could not be loaded (not retried within a process).
    loaded: RefCell<Option<std::result::Result<Embedder, String>>>,
}

impl QueryModel {
    /// The model in `dir` giving `dim`-dimensional vectors; nothing is loaded yet.
    pub fn new(dir: PathBuf, manifest: Manifest, dim: usize) -> Result<QueryModel> {
        let dim = manifest.output_dim(Some(dim))?;
        Ok(QueryModel {
            dir,
            manifest,
            dim,
            loaded: RefCell::new(None),
        })
    }

    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }
}

impl QueryEmbedder for QueryModel {
    fn model(&self) -> &str {
        &self.manifest.name
    }
    fn dim(&self) -> usize {
        self.dim
    }
    fn embed(&self, text: &str) -> Result<Vec<f32>> {
        Ok(self.embed_all(&[text])?.remove(0))
    }
    fn embed_all(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let mut slot = self.loaded.borrow_mut();
        let loaded = slot.get_or_insert_with(|| {
            Embedder::load_with(&self.dir, Some(self.dim), LoadOptions::for_texts(texts))
                .map_err(|e| e.to_string())
        });
        match loaded {
            Ok(e) => e.embed(texts),
            Err(e) => Err(Error::Other(e.clone())),
        }
    }
}

/// Where libonnxruntime is: ORT_DYLIB_PATH, then $MEM_MODELS/runtime/, then the system.
pub fn runtime_path() -> Result<PathBuf> {
    if let Some(p) = config::ORT_DYLIB_PATH.get() {
        let p = PathBuf::from(p);
        if p.is_file() {
            return Ok(p);
        }
        return Err(Error::other(format!(
            "ORT_DYLIB_PATH={} does not exist ({FETCH_HINT})",
            p.display()
        )));
    }
    let cache = config::models_dir().join("runtime/libonnxruntime.so");
    let mut tried = vec![cache.clone()];
    if cache.is_file() {
        return Ok(cache);
    }
    for dir in [
        "/usr/local/lib",
        "/usr/lib",
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/usr/lib64",
    ] {
        let p = Path::new(dir).join("libonnxruntime.so");
        if p.is_file() {
            return Ok(p);
        }
        tried.push(p);
    }
    Err(Error::other(format!(
        "ONNX Runtime not found (looked at ORT_DYLIB_PATH, {}); {FETCH_HINT}",
        tried
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )))
}

static RUNTIME: OnceLock<std::result::Result<ort::environment::Environment, String>> =
    OnceLock::new();

/// Loads ONNX Runtime once per process (the file is checked first: ort panics on a missing one).
pub fn init_runtime() -> Result<&'static ort::environment::Environment> {
    init_runtime_with(runtime_path)
}

/// Like [`init_runtime`] with the library at `path` (used when the process environment cannot
/// say where it is, e.g. in tests). The first initialisation of a process wins.
pub fn init_runtime_at(path: &Path) -> Result<&'static ort::environment::Environment> {
    init_runtime_with(|| {
        if path.is_file() {
            Ok(path.to_path_buf())
        } else {
            Err(Error::other(format!(
                "ONNX Runtime not found at {} ({FETCH_HINT})",
                path.display()
            )))
        }
    })
}

fn init_runtime_with(
    find: impl FnOnce() -> Result<PathBuf>,
) -> Result<&'static ort::environment::Environment> {
    let r = RUNTIME.get_or_init(|| {
        let path = find().map_err(|e| e.to_string())?;
        let loaded = std::panic::catch_unwind(|| {
            ort::init_from(&path)
                .map_err(|e| e.to_string())
                .and_then(|b| b.build().map_err(|e| e.to_string()))
        });
        match loaded {
            Ok(Ok(env)) => Ok(env),
            Ok(Err(e)) => Err(format!(
                "cannot load ONNX Runtime {}: {e} ({FETCH_HINT})",
                path.display()
            )),
            Err(_) => Err(format!(
                "cannot load ONNX Runtime {} ({FETCH_HINT})",
                path.display()
            )),
        }
    });
    r.as_ref().map_err(|e| Error::Other(e.clone()))
}

/// sha256 hex of a text.
pub fn sha256_hex(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// Where the time of one [`Embedder::load`] went.
#[derive(Debug, Clone)]
pub struct LoadReport {
    /// Loading libonnxruntime and creating its environment (zero when already done).
    pub runtime: Duration,
    /// Parsing tokenizer.json (on its own thread, alongside the session).
    pub tokenizer: Duration,
    /// Creating the ONNX Runtime session (from the model cache when it hits).
    pub session: Duration,
    /// Wall time of the whole load.
    pub total: Duration,
    pub cache: cache::CacheUse,
    /// Whether the matrix kernels got packed weights (see [`LoadOptions::packed`]).
    pub packed: bool,
    /// What the tokenizer cache did ("off" also when the tokenizer is not BPE).
    pub tokenizer_cache: cache::CacheUse,
    /// Sessions running batches side by side, and the threads of each.
    pub sessions: (usize, usize),
    /// Matrix products of int8 weights that run as int8 ([`int8`]; 0 when none or off).
    pub int8_products: usize,
}

impl std::fmt::Display for LoadReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        write!(
            f,
            "ready in {:.0} ms (runtime {:.0} ms, tokenizer {:.0} ms in parallel, session {:.0} ms; model cache: {}; weights: {}; int8 products: {}; tokenizer cache: {}; {} of {})",
            ms(self.total),
            ms(self.runtime),
            ms(self.tokenizer),
            ms(self.session),
            self.cache,
            if self.packed { "packed" } else { "as stored" },
            self.int8_products,
            self.tokenizer_cache,
            match self.sessions.0 {
                1 => "1 session".to_string(),
                n => format!("{n} sessions"),
            },
            match self.sessions.1 {
                1 => "1 thread".to_string(),
                n => format!("{n} threads"),
            },
        )
    }
}

/// Whether int8 weights are multiplied as int8 (MEM_EMBED_INT8, config.toml's embed_int8).
pub fn int8_enabled() -> bool {
    config::EMBED_INT8.get(config::current())
}

/// How [`Embedder::load_with`] loads a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadOptions {
    /// Use the persistent model cache (MEM_MODEL_CACHE=0 turns it off).
    pub cache: bool,
    /// Take the cache's packed weights: a 0.6B model is ready about 150 ms later and then
    /// embeds 25% more tokens/s, so this pays from roughly [`PACKED_FROM_TOKENS`] tokens on.
    pub packed: bool,
    /// A small model loaded once per core, each session running its own batches
    /// ([`SHARED_UP_TO`]): pays from roughly [`SESSIONS_FROM_TOKENS`] tokens on.
    pub sessions_per_core: bool,
    /// A model whose weights are int8 multiplies them as int8 ([`int8`]; MEM_EMBED_INT8=0
    /// keeps the float products).
    pub int8: bool,
}

/// Tokens to embed from which packed weights pay for their longer load (0.56 ms saved per
/// token against 150 ms, measured on the 0.6B-size model by benches/embed.rs).
pub const PACKED_FROM_TOKENS: usize = 300;

/// Tokens to embed from which a session per core pays for loading the others (about 40 ms
/// each for MiniLM from the cache, against 15% more tokens/s at some 6,000 tokens/s).
pub const SESSIONS_FROM_TOKENS: usize = 4000;

impl LoadOptions {
    /// For batches of texts (mem-embed): packed weights.
    pub fn batch() -> LoadOptions {
        LoadOptions {
            cache: cache::enabled(),
            packed: true,
            sessions_per_core: true,
            int8: int8_enabled(),
        }
    }

    /// For a query or two: ready soonest.
    pub fn query() -> LoadOptions {
        LoadOptions {
            packed: false,
            sessions_per_core: false,
            ..LoadOptions::batch()
        }
    }

    /// Packed weights, and a session per core, as the estimated tokens of `texts` pay for them.
    pub fn for_texts(texts: &[&str]) -> LoadOptions {
        let tokens: usize = texts.iter().map(|t| memkit_core::tokens::estimate(t)).sum();
        LoadOptions {
            packed: tokens >= PACKED_FROM_TOKENS,
            sessions_per_core: tokens >= SESSIONS_FROM_TOKENS,
            ..LoadOptions::batch()
        }
    }
}

/// A loaded model: session, tokenizer, manifest and the output dimension.
pub struct Embedder {
    pub manifest: Manifest,
    pub dim: usize,
    session: Session,
    /// Sessions of one thread each beside `session` (then of one thread too), each running
    /// its own batches: see [`SHARED_UP_TO`].
    more: Vec<Session>,
    tokenizer: tokenizers::Tokenizer,
    batch_tokens: usize,
    /// Texts tokenized and sorted by length together ([`WINDOW`] by default).
    window: usize,
    report: LoadReport,
    tokens: usize,
    past: Vec<PastInput>,
}

/// A KV-cache input of a model exported for generation (`past_key_values.N.key`, shape
/// [batch, heads, past, head_dim]): fed empty, as an embedding is one pass.
#[derive(Debug, Clone)]
struct PastInput {
    name: String,
    heads: i64,
    head_dim: i64,
}

fn past_inputs(session: &Session, m: &Manifest) -> std::result::Result<Vec<PastInput>, String> {
    let mut past = Vec::new();
    for i in session.inputs() {
        if m.inputs.values().any(|n| n == i.name()) {
            continue;
        }
        let shape = i.dtype().tensor_shape();
        match shape {
            Some(s)
                if s.len() == 4
                    && i.dtype().tensor_type() == Some(ort::value::TensorElementType::Float32) =>
            {
                past.push(PastInput {
                    name: i.name().to_string(),
                    heads: s[1].max(1),
                    head_dim: s[3].max(1),
                })
            }
            _ => {
                return Err(format!(
                    "input {:?} is neither named in manifest.json nor a KV cache",
                    i.name()
                ));
            }
        }
    }
    Ok(past)
}

/// That every input a manifest names (role → name) and its output are the model's; `what`
/// ("model", "reranker") starts the error.
pub(crate) fn check_io(
    session: &Session,
    inputs: &BTreeMap<String, String>,
    output: &str,
    what: &str,
    model_path: &Path,
) -> Result<()> {
    let has_input = |name: &str| session.inputs().iter().any(|i| i.name() == name);
    for (role, name) in inputs {
        if !has_input(name) {
            return Err(Error::other(format!(
                "{what} {}: manifest input {role}={name:?} is not an input of the model",
                model_path.display()
            )));
        }
    }
    if !session.outputs().iter().any(|o| o.name() == output) {
        let names: Vec<&str> = session.outputs().iter().map(|o| o.name()).collect();
        return Err(Error::other(format!(
            "{what} {}: manifest output {output:?} is not an output of the model (it has {})",
            model_path.display(),
            names.join(", ")
        )));
    }
    Ok(())
}

/// The tokenizer of model directory `dir` (whose tokenizer.json [`Embedder::load_with`] has
/// checked), with padding and truncation off.
pub(crate) fn load_tokenizer(
    dir: &Path,
    use_cache: bool,
) -> Result<(tokenizers::Tokenizer, cache::CacheUse)> {
    let (mut tokenizer, how) = cache::tokenizer(dir, use_cache)?;
    // Padding and truncation are ours (per the manifest), not the tokenizer file's.
    tokenizer.with_padding(None);
    tokenizer
        .with_truncation(None)
        .map_err(|e| Error::other(format!("tokenizer: {e}")))?;
    Ok((tokenizer, how))
}

impl Embedder {
    /// Loads the model in `dir` giving vectors of `dim` (the model's own when None). The
    /// session comes from the persistent model cache when it can ([`cache`]); the tokenizer is
    /// parsed on another thread meanwhile.
    pub fn load(dir: &Path, dim: Option<usize>) -> Result<Embedder> {
        Self::load_with(dir, dim, LoadOptions::batch())
    }

    /// [`Embedder::load`] with explicit [`LoadOptions`].
    pub fn load_with(dir: &Path, dim: Option<usize>, opts: LoadOptions) -> Result<Embedder> {
        let started = Instant::now();
        let mut manifest = Manifest::load(dir)?;
        let dim = manifest.output_dim(dim)?;
        let model_path = dir.join("model.onnx");
        if !dir.join("tokenizer.json").is_file() {
            return Err(Error::other(format!(
                "model {}: no tokenizer.json ({FETCH_HINT})",
                dir.display()
            )));
        }
        let env = init_runtime()?;
        let runtime = started.elapsed();
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        let small = std::fs::metadata(&model_path).is_ok_and(|m| m.len() <= SHARED_UP_TO);
        let (sessions, threads) = match opts.sessions_per_core && small && cores > 1 {
            true => (cores, 1),
            false => (1, cores),
        };
        let open = || {
            cache::session(
                env,
                &model_path,
                threads,
                opts.cache,
                opts.packed,
                opts.int8,
            )
        };
        let (tok, sess) = std::thread::scope(|s| {
            let tok = s.spawn(|| {
                let t = Instant::now();
                load_tokenizer(dir, opts.cache).map(|(tk, how)| (tk, how, t.elapsed()))
            });
            let t = Instant::now();
            let sess = open().map(|r| (r, t.elapsed()));
            let tok = tok
                .join()
                .unwrap_or_else(|_| Err(Error::other("tokenizer: loader thread panicked")));
            (tok, sess)
        });
        let (
            cache::Loaded {
                session,
                cache: how,
                int8_products,
            },
            session_time,
        ) = sess?;
        let (tokenizer, tokenizer_cache, tokenizer_time) = tok?;
        let has_input = |name: &str| session.inputs().iter().any(|i| i.name() == name);
        // Exports differ in whether they take position or token type ids; the model decides.
        manifest.inputs.retain(|role, name| {
            has_input(name) || !matches!(role.as_str(), "position_ids" | "token_type_ids")
        });
        check_io(
            &session,
            &manifest.inputs,
            &manifest.output,
            "model",
            &model_path,
        )?;
        let past = past_inputs(&session, &manifest)
            .map_err(|e| Error::other(format!("model {}: {e}", model_path.display())))?;
        let more = (1..sessions)
            .map(|_| open().map(|l| l.session))
            .collect::<Result<Vec<_>>>()?;
        // Building the tokenizer's maps and the sessions' graphs freed more than they keep, in
        // glibc's arenas (the tokenizer's on its own thread): hand it back before the model
        // runs. The 0.6B-size graph's peak RSS, 48 texts: 548 → 539 MB.
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        // SAFETY: malloc_trim only returns free memory of the allocator to the system.
        unsafe {
            libc::malloc_trim(0);
        }
        Ok(Embedder {
            manifest,
            dim,
            session,
            more,
            tokenizer,
            batch_tokens: BATCH_TOKENS,
            window: WINDOW,
            report: LoadReport {
                runtime,
                tokenizer: tokenizer_time,
                session: session_time,
                total: started.elapsed(),
                // Only a cache hit can skip packing; every other load packs as it optimises.
                packed: opts.packed || how != cache::CacheUse::Hit,
                cache: how,
                tokenizer_cache,
                sessions: (sessions, threads),
                int8_products,
            },
            tokens: 0,
            past,
        })
    }

    /// Where the time of the load went, and what the model cache did.
    pub fn load_report(&self) -> &LoadReport {
        &self.report
    }

    /// Sets the padded tokens per batch ([`BATCH_TOKENS`] by default; benches try others).
    pub fn set_batch_tokens(&mut self, tokens: usize) {
        self.batch_tokens = tokens.max(1);
    }

    /// Sets how many texts are sorted by length together ([`WINDOW`] by default): texts run in
    /// the order given, a window at a time, so a smaller one keeps closer to that order.
    pub fn set_window(&mut self, texts: usize) {
        self.window = texts.max(1);
    }

    /// Tokens embedded so far (padding not counted).
    pub fn tokens_embedded(&self) -> usize {
        self.tokens
    }

    /// Token ids of one text, truncated to max_tokens, with EOS appended when the model wants it.
    pub fn token_ids(&self, text: &str) -> Result<Vec<i64>> {
        let enc = self
            .tokenizer
            .encode(text, !self.manifest.append_eos)
            .map_err(|e| Error::other(format!("tokenizer: {e}")))?;
        Ok(fit(&self.manifest, enc.get_ids()))
    }

    /// Embeds texts (already prefixed); vectors are pooled, normalised and truncated to `dim`.
    pub fn embed(&mut self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let mut out = vec![Vec::new(); texts.len()];
        self.embed_each(texts, |i, v| {
            out[i] = v;
            Ok(())
        })?;
        Ok(out)
    }

    /// Like [`Embedder::embed`], handing each vector to `sink(index, vector)` as soon as its
    /// batch is done. A second thread tokenizes the texts a [`WINDOW`] at a time, sorts each
    /// window by token count and queues its batches while the model runs the previous ones.
    pub fn embed_each(
        &mut self,
        texts: &[&str],
        sink: impl FnMut(usize, Vec<f32>) -> Result<()>,
    ) -> Result<()> {
        self.embed_each_until(texts, sink, &AtomicBool::new(false))
    }

    /// [`Embedder::embed_each`] until `stop` is set: no batch starts after that, and the
    /// batches already running finish and reach `sink` (so a caller that sets it from `sink`
    /// gets at least one batch, and waits at most one more per session). Texts not reached
    /// get no vector.
    pub fn embed_each_until(
        &mut self,
        texts: &[&str],
        mut sink: impl FnMut(usize, Vec<f32>) -> Result<()>,
        stop: &AtomicBool,
    ) -> Result<()> {
        if texts.iter().any(|t| t.trim().is_empty()) {
            return Err(Error::other("cannot embed an empty text"));
        }
        let Embedder {
            manifest,
            dim,
            session,
            more,
            tokenizer,
            batch_tokens,
            window,
            tokens,
            past,
            ..
        } = self;
        let (manifest, tokenizer, dim, budget, past, window) = (
            &*manifest,
            &*tokenizer,
            *dim,
            *batch_tokens,
            &*past,
            *window,
        );
        let stopped = || stop.load(Ordering::Relaxed);
        std::thread::scope(|s| {
            let (tx, rx) = crossbeam_channel::bounded::<Result<Vec<(usize, Vec<i64>)>>>(4);
            s.spawn(move || {
                for (w, chunk) in texts.chunks(window).enumerate() {
                    if stopped() {
                        return;
                    }
                    // One text after another on this thread: encode_batch's thread pool would
                    // take the cores from the model's threads, which have the larger share.
                    let encs: std::result::Result<Vec<_>, _> = chunk
                        .iter()
                        .map(|t| tokenizer.encode(*t, !manifest.append_eos))
                        .collect();
                    let encs = match encs {
                        Ok(e) => e,
                        Err(e) => {
                            let _ = tx.send(Err(Error::other(format!("tokenizer: {e}"))));
                            return;
                        }
                    };
                    let toks: Vec<Vec<i64>> =
                        encs.iter().map(|e| fit(manifest, e.get_ids())).collect();
                    let lens: Vec<usize> = toks.iter().map(Vec::len).collect();
                    let mut toks: Vec<Option<Vec<i64>>> = toks.into_iter().map(Some).collect();
                    for b in batches(&lens, budget) {
                        let items = b
                            .iter()
                            .map(|&i| (w * window + i, toks[i].take().unwrap_or_default()))
                            .collect();
                        if stopped() || tx.send(Ok(items)).is_err() {
                            return; // the consumer failed and left
                        }
                    }
                }
            });
            let run = |session: &mut Session, items: &[(usize, Vec<i64>)]| {
                let refs: Vec<&[i64]> = items.iter().map(|(_, t)| t.as_slice()).collect();
                run_batch(session, manifest, past, dim, &refs)
            };
            let mut done = |items: Vec<(usize, Vec<i64>)>, vecs: Vec<Vec<f32>>| -> Result<()> {
                *tokens += items.iter().map(|(_, t)| t.len()).sum::<usize>();
                for ((i, _), v) in items.iter().zip(vecs) {
                    sink(*i, v)?;
                }
                Ok(())
            };
            if more.is_empty() {
                for items in rx {
                    if stopped() {
                        break;
                    }
                    let items = items?;
                    let vecs = run(session, &items)?;
                    done(items, vecs)?;
                }
                return Ok(());
            }
            // Each session takes the next batch when it is free; the vectors come back here.
            let (vtx, vrx) = crossbeam_channel::unbounded();
            for session in std::iter::once(session).chain(more.iter_mut()) {
                let (rx, vtx) = (rx.clone(), vtx.clone());
                s.spawn(move || {
                    for items in rx {
                        if stopped() {
                            return;
                        }
                        let out = items.and_then(|items| run(session, &items).map(|v| (items, v)));
                        let failed = out.is_err();
                        if vtx.send(out).is_err() || failed {
                            return;
                        }
                    }
                });
            }
            drop((rx, vtx));
            for out in vrx {
                let (items, vecs) = out?;
                done(items, vecs)?;
            }
            Ok(())
        })
    }
}

/// A model file up to this size is loaded once per core for a batch, each session of one
/// thread running its own batches: one session's threads wait on each other at every operator
/// of a short text. benches/embed.rs, MiniLM on 2 cores: 6,900 tokens/s against 5,937 with one
/// session of two threads (the naive one-text loop 5,892), peak RSS 291 MB against 178. A
/// larger model (a 0.6B one) would take its memory once per core, and its operators are wide
/// enough to share: one session, every thread.
pub const SHARED_UP_TO: u64 = 200 << 20;

/// Texts tokenized per step of [`Embedder::embed_each`]'s pipeline: enough for batches of
/// similar lengths, few enough that the model starts while the rest is tokenized.
pub const WINDOW: usize = 256;

/// Padded tokens (texts × longest text) per batch. Small batches are faster here, not slower:
/// with the int8 models on 2 busy cores a big batch's working set leaves the caches, and a
/// whole text is already a matrix wide enough for the kernels. benches/embed.rs on 128 fixture
/// texts, MiniLM, same run against the naive loop without spinning: 256 padded tokens 1.14×,
/// 1024 0.90×, 4096 0.64× (1,363, 1,148 and 699 tokens/s). Short texts still share a batch.
pub const BATCH_TOKENS: usize = 256;
/// Texts per batch at most, however short.
pub const MAX_BATCH: usize = 64;

/// The batches of one window: indexes sorted (stably) by token count so each batch pads
/// little, cut so that no batch holds more than `budget` padded tokens (a text longer than
/// that goes alone) or more than [`MAX_BATCH`] texts. The batches come in the order of the
/// first text each holds: texts given newest first are embedded so, a batch at a time, and a
/// run stopped after one batch has the newest text.
pub fn batches(lens: &[usize], budget: usize) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..lens.len()).collect();
    order.sort_by_key(|&i| lens[i]);
    let mut out = Vec::new();
    let mut cur: Vec<usize> = Vec::new();
    for i in order {
        // Sorted ascending: the text joining a batch is its longest and sets its width.
        if !cur.is_empty() && ((cur.len() + 1) * lens[i] > budget || cur.len() == MAX_BATCH) {
            out.push(std::mem::take(&mut cur));
        }
        cur.push(i);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out.sort_by_key(|b| b.iter().min().copied());
    out
}

/// Truncation to max_tokens and the EOS rule applied to raw token ids.
fn fit(m: &Manifest, raw: &[u32]) -> Vec<i64> {
    let mut ids: Vec<i64> = raw.iter().map(|&i| i as i64).collect();
    let max = m.max_tokens.max(2);
    if m.append_eos {
        let eos = m.eos_token_id.unwrap_or(151643);
        ids.truncate(max - 1);
        ids.push(eos);
    } else if ids.len() > max {
        // keep the final special token (e.g. [SEP]) when truncating
        let last = *ids.last().unwrap_or(&0);
        ids.truncate(max - 1);
        ids.push(last);
    }
    ids
}

fn run_batch(
    session: &mut Session,
    m: &Manifest,
    past: &[PastInput],
    dim: usize,
    batch: &[&[i64]],
) -> Result<Vec<Vec<f32>>> {
    let b = batch.len();
    let len = batch.iter().map(|t| t.len()).max().unwrap_or(0);
    let pad = m.pad_token_id.unwrap_or(0);
    let left = m.padding == "left";
    let mut ids = vec![pad; b * len];
    let mut mask = vec![0i64; b * len];
    for (r, t) in batch.iter().enumerate() {
        let off = if left { len - t.len() } else { 0 };
        for (j, &id) in t.iter().enumerate() {
            ids[r * len + off + j] = id;
            mask[r * len + off + j] = 1;
        }
    }
    let mut pos = vec![0i64; b * len];
    for r in 0..b {
        let mut c = 0i64;
        for j in 0..len {
            c += mask[r * len + j];
            pos[r * len + j] = (c - 1).max(0);
        }
    }
    let shape = [b as i64, len as i64];
    let tensor = |data: Vec<i64>| -> Result<SessionInputValue<'static>> {
        Tensor::from_array((shape, data))
            .map(Into::into)
            .map_err(|e| Error::other(format!("onnx input: {e}")))
    };
    let mut inputs: Vec<(Cow<'static, str>, SessionInputValue<'static>)> = Vec::new();
    for (role, name) in &m.inputs {
        let data = match role.as_str() {
            "input_ids" => ids.clone(),
            "attention_mask" => mask.clone(),
            "position_ids" => pos.clone(),
            "token_type_ids" => vec![0i64; b * len],
            other => {
                return Err(Error::other(format!(
                    "model {}: unknown input role {other:?}",
                    m.name
                )));
            }
        };
        inputs.push((Cow::Owned(name.clone()), tensor(data)?));
    }
    for p in past {
        let empty = Tensor::<f32>::from_array(([b as i64, p.heads, 0, p.head_dim], Vec::new()))
            .map_err(|e| Error::other(format!("onnx input {}: {e}", p.name)))?;
        inputs.push((Cow::Owned(p.name.clone()), empty.into()));
    }
    let output_name = m.output.clone();
    let pooling = m.pooling.clone();
    let normalize = m.normalize;
    let name = m.name.clone();
    let outputs = session
        .run(inputs)
        .map_err(|e| Error::other(format!("model {name}: inference failed: {e}")))?;
    let value = outputs
        .get(output_name.as_str())
        .ok_or_else(|| Error::other(format!("model {name}: no output named {output_name:?}")))?;
    let (oshape, data) = value
        .try_extract_tensor::<f32>()
        .map_err(|e| Error::other(format!("model {name}: output: {e}")))?;
    let dims: Vec<usize> = oshape.iter().map(|&d| d as usize).collect();
    let mut res = Vec::with_capacity(b);
    for r in 0..b {
        let v: Vec<f32> = match (pooling.as_str(), dims.as_slice()) {
            ("none", [_, h]) => data[r * h..(r + 1) * h].to_vec(),
            ("mean", [_, s, h]) => {
                let mut acc = vec![0f32; *h];
                let mut n = 0f32;
                for j in 0..*s {
                    if mask[r * len + j] == 1 {
                        n += 1.0;
                        let row = &data[(r * s + j) * h..(r * s + j + 1) * h];
                        for (a, x) in acc.iter_mut().zip(row) {
                            *a += x;
                        }
                    }
                }
                acc.iter().map(|a| a / n.max(1.0)).collect()
            }
            ("last_token", [_, s, h]) => {
                let last = (0..*s).rev().find(|&j| mask[r * len + j] == 1).unwrap_or(0);
                data[(r * s + last) * h..(r * s + last + 1) * h].to_vec()
            }
            (p, d) => {
                return Err(Error::other(format!(
                    "model {name}: output shape {d:?} does not fit pooling {p}"
                )));
            }
        };
        res.push(finish(v, dim, normalize));
    }
    Ok(res)
}

/// L2-normalises, truncates to `dim` (Matryoshka) and renormalises.
pub fn finish(mut v: Vec<f32>, dim: usize, normalize: bool) -> Vec<f32> {
    if normalize {
        l2(&mut v);
    }
    if dim < v.len() {
        v.truncate(dim);
        l2(&mut v);
    }
    v
}

fn l2(v: &mut [f32]) {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 0.0 {
        for x in v.iter_mut() {
            *x /= n;
        }
    }
}

pub use crate::text::cosine;

/// The `vector` blob layout is the store's.
pub use memkit_core::store::embeddings::{from_blob, to_blob};

/// The text embedded for an observation: [`crate::text::searchable_text`] of its title, summary,
/// detail, facts and concepts, each kept even when the body says it already: a note's title (its
/// first words) and topic words said again weigh its subject in a mean-pooled vector. Dropping
/// them (aeebcfe) took MiniLM on locomo-dev's short chat turns from R@5 .460 to .418, and changed
/// musique-100 by less than .01 nDCG@10.
pub fn observation_text(
    title: &str,
    summary: &str,
    detail: Option<&str>,
    facts: &[String],
    concepts: &[String],
) -> String {
    let mut body: Vec<&str> = vec![summary, detail.unwrap_or("")];
    body.extend(facts.iter().map(String::as_str));
    let extras: Vec<&str> = concepts.iter().map(String::as_str).collect();
    crate::text::searchable_text(title, &body, &extras, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_cover_every_text_once_within_the_padded_token_budget() {
        let lens: Vec<usize> = (0..200).map(|i| (i * 37) % 300 + 1).chain([2000]).collect();
        let budget = 1024;
        let got = batches(&lens, budget);
        let mut seen: Vec<usize> = got.iter().flatten().copied().collect();
        seen.sort();
        assert_eq!(seen, (0..lens.len()).collect::<Vec<_>>());
        for b in &got {
            let width = b.iter().map(|&i| lens[i]).max().unwrap();
            assert!(b.len() <= MAX_BATCH);
            assert!(b.len() == 1 || b.len() * width <= budget, "{b:?}");
        }
        // The text over the budget goes alone; short texts share batches.
        assert!(got.contains(&vec![200]));
        assert!(got.iter().any(|b| b.len() > 16));
    }
}
