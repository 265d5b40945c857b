//! The persistent model cache: ONNX Runtime's optimised form of a model, saved on the first
//! load so that every later process skips what dominates a plain load of a large model —
//! parsing the whole protobuf (weights included), graph optimisation, and packing the int8
//! weights for the matrix kernels.
//!
//! The cache is `<model dir>/.ort-cache/<key>/`: `model.onnx` (the optimised graph, small),
//! `model.onnx.data` (its initializers, and the same weights packed for the matrix kernels,
//! all memory-mapped by ONNX Runtime at load) and `ready.json` (sizes of both, written last).
//! The key hashes the model file's identity (path, size, mtime, inode), the ONNX Runtime
//! build and the CPU, so a changed model, runtime or machine gets a new entry; older entries
//! are removed when one is built.
//! It is built in a temporary directory renamed into place, so readers never see half of one;
//! one that fails to load (or whose files have the wrong sizes) is deleted and rebuilt from
//! the model, never an error of its own.

use std::path::{Path, PathBuf};

use ort::session::Session;
use ort::session::builder::{GraphOptimizationLevel, SessionBuilder};
use sha2::{Digest, Sha256};

use memkit_core::{Error, Result, config};

/// Bumped when the layout or the session options of cached entries change.
const FORMAT: u32 = 4;
const DIR: &str = ".ort-cache";
const GRAPH: &str = "model.onnx";
const DATA: &str = "model.onnx.data";
const READY: &str = "ready.json";

/// What the model cache did for one load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheUse {
    /// MEM_MODEL_CACHE=0: the model was loaded and optimised from model.onnx.
    Off,
    /// The optimised model was loaded from the cache.
    Hit,
    /// No entry yet: loaded from model.onnx and the entry was written.
    Built,
    /// The entry was unusable (the reason); it was deleted and built again.
    Rebuilt(String),
    /// Loaded from model.onnx; the entry could not be written (the reason).
    Unwritable(String),
}

impl std::fmt::Display for CacheUse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CacheUse::Off => f.write_str("off"),
            CacheUse::Hit => f.write_str("hit"),
            CacheUse::Built => f.write_str("built"),
            CacheUse::Rebuilt(why) => write!(f, "rebuilt ({why})"),
            CacheUse::Unwritable(why) => write!(f, "not written ({why})"),
        }
    }
}

/// Whether the cache is used (MEM_MODEL_CACHE or config.toml's model_cache = 0 turns it off).
pub fn enabled() -> bool {
    config::MODEL_CACHE.get(config::current())
}

/// A short key naming one version of a file (path, size, mtime, inode) plus `extra`: a
/// replaced or edited file gets a new key without hashing its content.
fn file_key(path: &Path, what: &str, extra: &[&[u8]]) -> Result<String> {
    let md = std::fs::metadata(path).map_err(|e| {
        Error::other(format!(
            "cannot read {what} {}: {e} (run scripts/fetch-models again)",
            path.display()
        ))
    })?;
    let mut h = Sha256::new();
    h.update(FORMAT.to_le_bytes());
    let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    h.update(canonical.as_os_str().as_encoded_bytes());
    h.update(md.len().to_le_bytes());
    if let Ok(t) = md.modified()
        && let Ok(d) = t.duration_since(std::time::UNIX_EPOCH)
    {
        h.update(d.as_nanos().to_le_bytes());
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        h.update(md.ino().to_le_bytes());
    }
    for e in extra {
        h.update(e);
    }
    Ok(hex::encode(&h.finalize()[..8]))
}

/// The cache entry directory of `model` (a model.onnx file): also keyed by the ONNX Runtime
/// build and the CPU.
pub fn entry_dir(model: &Path, int8: bool) -> Result<PathBuf> {
    let cpu = cpu_signature();
    let products: &[u8] = if int8 { b"int8" } else { b"float" };
    let key = file_key(
        model,
        "model",
        &[ort::info().as_bytes(), cpu.as_bytes(), products],
    )?;
    let parent = model.parent().unwrap_or(Path::new("."));
    Ok(parent.join(DIR).join(key))
}

/// The optimised graph uses kernels and weight layouts chosen for this CPU's features.
fn cpu_signature() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |name: &str| {
        info.lines()
            .find(|l| l.split(':').next().is_some_and(|k| k.trim() == name))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
            .unwrap_or_default()
    };
    format!(
        "{}|{}|{}|{}",
        std::env::consts::ARCH,
        field("model name"),
        field("flags"),
        field("Features")
    )
}

/// Session options shared by every load: all cores for one inference at a time, and threads
/// that sleep between operators instead of spinning. On a machine busy with other work (the
/// usual case beside Claude Code and a build), spinning threads take the cores from the ones
/// with work: onnxruntime running MiniLM one text at a time on 2 busy cores made 1,278
/// tokens/s without spinning against 758 with it (benches/embed.rs, 128 fixture texts, same run).
pub fn builder(env: &ort::environment::Environment, threads: usize) -> Result<SessionBuilder> {
    Session::builder(env)
        .and_then(|b| b.with_intra_threads(threads).map_err(Into::into))
        .and_then(|b| b.with_inter_threads(1).map_err(Into::into))
        .and_then(|b| b.with_intra_op_spinning(false).map_err(Into::into))
        .map_err(ort_err)
}

/// A loaded session, what the model cache did for it, and how many of the model's matrix
/// products run in int8 ([`super::int8`]).
pub struct Loaded {
    pub session: Session,
    pub cache: CacheUse,
    pub int8_products: usize,
}

/// A session for `model`: from the cache entry when there is a good one, else from the model
/// (writing the entry). Errors are those of loading the model itself. `packed`: take the
/// entry's packed weights (faster inference, slower load; see [`super::LoadOptions`]).
/// `int8`: a model whose weights are int8 multiplies them as int8 ([`super::int8`]).
pub fn session(
    env: &ort::environment::Environment,
    model: &Path,
    threads: usize,
    use_cache: bool,
    packed: bool,
    int8: bool,
) -> Result<Loaded> {
    if !use_cache {
        let (session, int8_products) = commit(builder(env, threads)?, model, int8)?;
        return Ok(Loaded {
            session,
            cache: CacheUse::Off,
            int8_products,
        });
    }
    let dir = entry_dir(model, int8)?;
    let mut stale = None;
    if dir.join(READY).is_file() {
        match load_entry(env, &dir, threads, packed) {
            Ok((session, int8_products)) => {
                return Ok(Loaded {
                    session,
                    cache: CacheUse::Hit,
                    int8_products,
                });
            }
            Err(why) => {
                let _ = std::fs::remove_dir_all(&dir);
                stale = Some(why);
            }
        }
    }
    let (session, int8_products, written) = build_entry(env, model, &dir, threads, int8)?;
    let cache = match (written, stale) {
        (Err(why), _) => CacheUse::Unwritable(why),
        (Ok(()), Some(why)) => CacheUse::Rebuilt(why),
        (Ok(()), None) => CacheUse::Built,
    };
    Ok(Loaded {
        session,
        cache,
        int8_products,
    })
}

fn ort_err(e: impl std::fmt::Display) -> Error {
    Error::other(format!("onnx runtime: {e}"))
}

/// Loads `model`, with its int8-weight products rewritten into int8 ones when `int8` and
/// there are any; returns the session and how many products were rewritten.
fn commit(mut b: SessionBuilder, model: &Path, int8: bool) -> Result<(Session, usize)> {
    let failed = |e: ort::Error| {
        Error::other(format!(
            "cannot load model {}: {e} (corrupt or not an ONNX model? run scripts/fetch-models again)",
            model.display()
        ))
    };
    // Mapped, not read: deciding touches only the graph's nodes and tensor headers, so a large
    // model with nothing to rewrite costs no copy of its weights.
    let rewritten = match int8 {
        // SAFETY: the model file is only read, and fetch-models and installs replace it by
        // renaming a new file into place, which leaves this mapping on the old one.
        true => std::fs::File::open(model)
            .and_then(|f| unsafe { memmap2::Mmap::map(&f) })
            .ok()
            .and_then(|bytes| super::int8::rewrite(&bytes)),
        false => None,
    };
    match rewritten {
        Some((bytes, n)) => Ok((b.commit_from_memory(&bytes).map_err(failed)?, n)),
        None => Ok((b.commit_from_file(model).map_err(failed)?, 0)),
    }
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Ready {
    format: u32,
    graph_bytes: u64,
    data_bytes: u64,
    #[serde(default)]
    int8_products: usize,
}

fn load_entry(
    env: &ort::environment::Environment,
    dir: &Path,
    threads: usize,
    packed: bool,
) -> std::result::Result<(Session, usize), String> {
    let ready: Ready = std::fs::read(dir.join(READY))
        .map_err(|e| e.to_string())
        .and_then(|b| serde_json::from_slice(&b).map_err(|e| format!("{READY}: {e}")))?;
    let size = |f: &str| std::fs::metadata(dir.join(f)).map(|m| m.len()).unwrap_or(0);
    if ready.format != FORMAT || size(GRAPH) != ready.graph_bytes || size(DATA) != ready.data_bytes
    {
        return Err("files do not match ready.json".into());
    }
    // Already optimised: running the optimisers again would only cost time. With `packed`
    // the kernels take their packed weights from the mapped file; without it they use the
    // plain ones from the same file and pack per call, which loads a 0.6B model about 150 ms
    // sooner but runs 25% slower (benches/embed.rs).
    builder(env, threads)
        .map_err(|e| e.to_string())?
        .with_optimization_level(GraphOptimizationLevel::Disable)
        .map_err(|e| e.to_string())?
        .with_prepacking(packed)
        .map_err(|e| e.to_string())?
        .commit_from_file(dir.join(GRAPH))
        .map(|s| (s, ready.int8_products))
        .map_err(|e| e.to_string())
}

/// Loads `model` with full optimisation while ONNX Runtime writes the optimised graph (and
/// the packed weights) into a temporary directory, renamed to `dir` when complete.
fn build_entry(
    env: &ort::environment::Environment,
    model: &Path,
    dir: &Path,
    threads: usize,
    int8: bool,
) -> Result<(Session, usize, std::result::Result<(), String>)> {
    let parent = dir.parent().unwrap_or(Path::new("."));
    let tmp = parent.join(format!(
        ".tmp-{}-{}",
        dir.file_name().and_then(|n| n.to_str()).unwrap_or("entry"),
        std::process::id()
    ));
    if let Err(e) = std::fs::create_dir_all(&tmp) {
        let (session, n) = commit(builder(env, threads)?, model, int8)?;
        return Ok((session, n, Err(format!("{}: {e}", parent.display()))));
    }
    let mut b = builder(env, threads)?
        .with_optimized_model_path(tmp.join(GRAPH))
        .map_err(ort_err)?;
    for (k, v) in [
        (
            "session.optimized_model_external_initializers_file_name",
            DATA,
        ),
        (
            "session.optimized_model_external_initializers_min_size_in_bytes",
            "1024",
        ),
        // Packing the int8 weights is most of a plain load; kept, it is mapped like the rest.
        ("session.save_external_prepacked_constant_initializers", "1"),
    ] {
        b = b.with_config_entry(k, v).map_err(ort_err)?;
    }
    let (session, n) = match commit(b, model, int8) {
        Ok(s) => s,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&tmp);
            return Err(e);
        }
    };
    let written = publish(&tmp, dir, n);
    if written.is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    Ok((session, n, written))
}

fn publish(tmp: &Path, dir: &Path, int8_products: usize) -> std::result::Result<(), String> {
    let size = |f: &str| {
        std::fs::metadata(tmp.join(f))
            .map(|m| m.len())
            .map_err(|e| format!("{f}: {e}"))
    };
    let ready = Ready {
        format: FORMAT,
        graph_bytes: size(GRAPH)?,
        data_bytes: size(DATA).unwrap_or(0),
        int8_products,
    };
    for f in [GRAPH, DATA] {
        if let Ok(file) = std::fs::File::open(tmp.join(f)) {
            file.sync_all().map_err(|e| format!("{f}: {e}"))?;
        }
    }
    let text = serde_json::to_vec(&ready).map_err(|e| e.to_string())?;
    std::fs::write(tmp.join(READY), text).map_err(|e| format!("{READY}: {e}"))?;
    // Entries of older model files, runtimes or formats are of no further use.
    if let Some(parent) = dir.parent()
        && let Ok(rd) = std::fs::read_dir(parent)
    {
        for e in rd.flatten() {
            let name = e.file_name();
            let name = name.to_string_lossy();
            if e.path() != dir && !name.starts_with(".tmp-") {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
    match std::fs::rename(tmp, dir) {
        Ok(()) => Ok(()),
        // Another process published the same entry first: theirs is as good as ours.
        Err(_) if dir.join(READY).is_file() => {
            let _ = std::fs::remove_dir_all(tmp);
            Ok(())
        }
        Err(e) => Err(format!("{}: {e}", dir.display())),
    }
}

/// The tokenizer of model directory `dir`. A BPE tokenizer.json (Qwen3's is 11 MB) is cached
/// as its small parts in JSON plus the vocabulary and merges in a length-prefixed binary form,
/// so a load builds the BPE model directly instead of parsing it all through serde's buffers.
/// The entry (`<dir>/.tokenizer-cache/<key>.bin`) is keyed like the model's.
pub fn tokenizer(dir: &Path, use_cache: bool) -> Result<(tokenizers::Tokenizer, CacheUse)> {
    let path = dir.join("tokenizer.json");
    let plain = || {
        tokenizers::Tokenizer::from_file(&path)
            .map_err(|e| Error::other(format!("cannot read tokenizer {}: {e}", path.display())))
    };
    if !use_cache {
        return Ok((plain()?, CacheUse::Off));
    }
    let entry = tokenizer_entry(&path)?;
    let mut stale = None;
    if let Ok(bytes) = std::fs::read(&entry) {
        match from_split(&bytes) {
            Ok(t) => return Ok((t, CacheUse::Hit)),
            Err(why) => {
                let _ = std::fs::remove_file(&entry);
                stale = Some(why);
            }
        }
    }
    let tok = plain()?;
    if !matches!(tok.get_model(), tokenizers::ModelWrapper::BPE(_)) {
        return Ok((tok, CacheUse::Off)); // small enough as it is
    }
    let how = match write_split(&path, &entry) {
        Ok(false) => CacheUse::Off, // not BPE: nothing worth caching
        Ok(true) => stale.map_or(CacheUse::Built, CacheUse::Rebuilt),
        Err(why) => CacheUse::Unwritable(why),
    };
    Ok((tok, how))
}

fn tokenizer_entry(path: &Path) -> Result<PathBuf> {
    let key = file_key(path, "tokenizer", &[env!("CARGO_PKG_VERSION").as_bytes()])?;
    Ok(path
        .parent()
        .unwrap_or(Path::new("."))
        .join(".tokenizer-cache")
        .join(format!("{key}.bin")))
}

/// Splits tokenizer.json into the entry; false when its model is not BPE.
fn write_split(path: &Path, entry: &Path) -> std::result::Result<bool, String> {
    let text = std::fs::read(path).map_err(|e| e.to_string())?;
    let mut v: serde_json::Value = serde_json::from_slice(&text).map_err(|e| e.to_string())?;
    let Some(model) = v.get_mut("model").and_then(|m| m.as_object_mut()) else {
        return Ok(false);
    };
    if model.get("type").and_then(|t| t.as_str()) != Some("BPE") {
        return Ok(false);
    }
    let vocab = model.remove("vocab").unwrap_or_default();
    let merges = model.remove("merges").unwrap_or_default();
    let mut vocab: Vec<(&str, u64)> = vocab
        .as_object()
        .ok_or("vocab is not an object")?
        .iter()
        .map(|(k, id)| (k.as_str(), id.as_u64().unwrap_or(u64::MAX)))
        .collect();
    vocab.sort_by_key(|&(_, id)| id);
    let mut out = Vec::with_capacity(text.len() / 2);
    let put = |out: &mut Vec<u8>, b: &[u8]| {
        out.extend_from_slice(&(b.len() as u32).to_le_bytes());
        out.extend_from_slice(b);
    };
    put(
        &mut out,
        &serde_json::to_vec(&v).map_err(|e| e.to_string())?,
    );
    out.extend_from_slice(&(vocab.len() as u32).to_le_bytes());
    for (k, id) in &vocab {
        put(&mut out, k.as_bytes());
        out.extend_from_slice(&(u32::try_from(*id).map_err(|_| "bad vocab id")?).to_le_bytes());
    }
    let merges = merges.as_array().ok_or("merges is not a list")?;
    out.extend_from_slice(&(merges.len() as u32).to_le_bytes());
    for m in merges {
        // Either ["a", "b"] or "a b".
        let (a, b) = match m {
            serde_json::Value::Array(p) if p.len() == 2 => (
                p[0].as_str().ok_or("bad merge")?,
                p[1].as_str().ok_or("bad merge")?,
            ),
            serde_json::Value::String(s) => s.split_once(' ').ok_or("bad merge")?,
            _ => return Err("bad merge".into()),
        };
        put(&mut out, a.as_bytes());
        put(&mut out, b.as_bytes());
    }
    let parent = entry.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    // Entries of older tokenizer files go.
    if let Ok(rd) = std::fs::read_dir(parent) {
        for e in rd.flatten() {
            if !e.file_name().to_string_lossy().starts_with(".tmp-") {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    let tmp = parent.join(format!(".tmp-{}", std::process::id()));
    std::fs::write(&tmp, &out).map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, entry).map_err(|e| format!("{}: {e}", entry.display()))?;
    Ok(true)
}

/// Rebuilds the tokenizer from an entry; any inconsistency is an error (the caller rebuilds).
fn from_split(bytes: &[u8]) -> std::result::Result<tokenizers::Tokenizer, String> {
    use tokenizers::models::bpe::BPE;
    use tokenizers::{AddedToken, DecoderWrapper, NormalizerWrapper};
    use tokenizers::{PostProcessorWrapper, PreTokenizerWrapper};
    let mut at = 0usize;
    let mut take = |n: usize| -> std::result::Result<&[u8], String> {
        let s = bytes.get(at..at + n).ok_or("truncated")?;
        at += n;
        Ok(s)
    };
    fn u32_of(b: &[u8]) -> usize {
        u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize
    }
    let n = u32_of(take(4)?);
    let rest: serde_json::Value = serde_json::from_slice(take(n)?).map_err(|e| e.to_string())?;
    let count = u32_of(take(4)?);
    let mut vocab = tokenizers::models::bpe::Vocab::with_capacity(count);
    for _ in 0..count {
        let n = u32_of(take(4)?);
        let k = std::str::from_utf8(take(n)?)
            .map_err(|e| e.to_string())?
            .to_string();
        let id = u32_of(take(4)?) as u32;
        vocab.insert(k, id);
    }
    let count = u32_of(take(4)?);
    let mut merges = Vec::with_capacity(count);
    for _ in 0..count {
        let n = u32_of(take(4)?);
        let a = std::str::from_utf8(take(n)?)
            .map_err(|e| e.to_string())?
            .to_string();
        let n = u32_of(take(4)?);
        let b = std::str::from_utf8(take(n)?)
            .map_err(|e| e.to_string())?
            .to_string();
        merges.push((a, b));
    }
    let m = &rest["model"];
    let s = |k: &str| m[k].as_str().map(str::to_string);
    let mut bpe = BPE::builder()
        .vocab_and_merges(vocab, merges)
        .fuse_unk(m["fuse_unk"].as_bool().unwrap_or(false))
        .byte_fallback(m["byte_fallback"].as_bool().unwrap_or(false))
        .ignore_merges(m["ignore_merges"].as_bool().unwrap_or(false));
    if let Some(d) = m["dropout"].as_f64() {
        bpe = bpe.dropout(d as f32);
    }
    if let Some(u) = s("unk_token") {
        bpe = bpe.unk_token(u);
    }
    if let Some(p) = s("continuing_subword_prefix") {
        bpe = bpe.continuing_subword_prefix(p);
    }
    if let Some(p) = s("end_of_word_suffix") {
        bpe = bpe.end_of_word_suffix(p);
    }
    let mut tok = tokenizers::Tokenizer::new(bpe.build().map_err(|e| e.to_string())?);
    fn part<T: serde::de::DeserializeOwned>(
        v: &serde_json::Value,
    ) -> std::result::Result<Option<T>, String> {
        if v.is_null() {
            return Ok(None);
        }
        serde_json::from_value(v.clone()).map_err(|e| e.to_string())
    }
    tok.with_normalizer(part::<NormalizerWrapper>(&rest["normalizer"])?)
        .map_err(|e| e.to_string())?;
    tok.with_pre_tokenizer(part::<PreTokenizerWrapper>(&rest["pre_tokenizer"])?);
    tok.with_post_processor(part::<PostProcessorWrapper>(&rest["post_processor"])?);
    tok.with_decoder(part::<DecoderWrapper>(&rest["decoder"])?);
    let added = rest["added_tokens"].as_array().cloned().unwrap_or_default();
    let flag = |t: &serde_json::Value, k: &str| t[k].as_bool().unwrap_or(false);
    let tokens: Vec<AddedToken> = added
        .iter()
        .map(|t| {
            AddedToken::from(t["content"].as_str().unwrap_or(""), flag(t, "special"))
                .single_word(flag(t, "single_word"))
                .lstrip(flag(t, "lstrip"))
                .rstrip(flag(t, "rstrip"))
                .normalized(flag(t, "normalized"))
        })
        .collect();
    tok.add_tokens(tokens).map_err(|e| e.to_string())?;
    // Added tokens take ids in order after the vocabulary: they must come out as recorded.
    for t in &added {
        let content = t["content"].as_str().unwrap_or("");
        if tok.token_to_id(content).map(u64::from) != t["id"].as_u64() {
            return Err(format!("added token {content:?} does not keep its id"));
        }
    }
    Ok(tok)
}
