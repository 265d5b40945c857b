//! The persistent model cache: ONNX Runtime's optimised form of a model, saved on the first
//! load so that every later process skips what dominates a plain load of a large model —
//! parsing the whole protobuf (weights included), graph optimisation, and packing the int8
//! weights for the matrix kernels.
//!
//! The cache is `<model dir>/.ort-cache/<key>/`: `model.onnx` (the optimised graph, small),
//! `model.onnx.data` (its initializers, memory-mapped by ONNX Runtime at load, plus the
//! prepacked weights) and `ready.json` (sizes of both, written last). The key hashes the model
//! file's identity (path, size, mtime, inode), the ONNX Runtime build and the CPU, so a changed
//! model, runtime or machine gets a new entry; older entries are removed when one is built.
//! It is built in a temporary directory renamed into place, so readers never see half of one;
//! one that fails to load (or whose files have the wrong sizes) is deleted and rebuilt from
//! the model, never an error of its own.

use std::path::{Path, PathBuf};

use ort::session::Session;
use ort::session::builder::{GraphOptimizationLevel, SessionBuilder};
use sha2::{Digest, Sha256};

use crate::{Error, Result, config};

/// Bumped when the layout or the session options of cached entries change.
const FORMAT: u32 = 1;
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

/// Whether the cache is used (MEM_MODEL_CACHE=0 turns it off).
pub fn enabled() -> bool {
    config::env_nonempty("MEM_MODEL_CACHE").is_none_or(|v| v.trim() != "0")
}

/// The cache entry directory of `model` (a model.onnx file).
pub fn entry_dir(model: &Path) -> Result<PathBuf> {
    let md = std::fs::metadata(model).map_err(|e| {
        Error::other(format!(
            "cannot read model {}: {e} (run scripts/fetch-models again)",
            model.display()
        ))
    })?;
    let mut h = Sha256::new();
    h.update(FORMAT.to_le_bytes());
    h.update(
        std::fs::canonicalize(model)
            .unwrap_or_else(|_| model.to_path_buf())
            .as_os_str()
            .as_encoded_bytes(),
    );
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
    h.update(ort::info().as_bytes());
    h.update(cpu_signature().as_bytes());
    let key = hex::encode(&h.finalize()[..8]);
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

/// Session options shared by every load: all cores for one inference at a time.
pub fn builder(env: &ort::environment::Environment, threads: usize) -> Result<SessionBuilder> {
    Session::builder(env)
        .and_then(|b| b.with_intra_threads(threads).map_err(Into::into))
        .and_then(|b| b.with_inter_threads(1).map_err(Into::into))
        .map_err(ort_err)
}

/// A session for `model`: from the cache entry when there is a good one, else from the model
/// (writing the entry). Errors are those of loading the model itself.
pub fn session(
    env: &ort::environment::Environment,
    model: &Path,
    threads: usize,
) -> Result<(Session, CacheUse)> {
    let plain = |b: SessionBuilder| commit(b, model);
    if !enabled() {
        return Ok((plain(builder(env, threads)?)?, CacheUse::Off));
    }
    let dir = entry_dir(model)?;
    let mut stale = None;
    if dir.join(READY).is_file() {
        match load_entry(env, &dir, threads) {
            Ok(s) => return Ok((s, CacheUse::Hit)),
            Err(why) => {
                let _ = std::fs::remove_dir_all(&dir);
                stale = Some(why);
            }
        }
    }
    let (session, written) = build_entry(env, model, &dir, threads)?;
    let how = match (written, stale) {
        (Err(why), _) => CacheUse::Unwritable(why),
        (Ok(()), Some(why)) => CacheUse::Rebuilt(why),
        (Ok(()), None) => CacheUse::Built,
    };
    Ok((session, how))
}

fn ort_err(e: impl std::fmt::Display) -> Error {
    Error::other(format!("onnx runtime: {e}"))
}

fn commit(mut b: SessionBuilder, model: &Path) -> Result<Session> {
    b.commit_from_file(model).map_err(|e| {
        Error::other(format!(
            "cannot load model {}: {e} (corrupt or not an ONNX model? run scripts/fetch-models again)",
            model.display()
        ))
    })
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Ready {
    format: u32,
    graph_bytes: u64,
    data_bytes: u64,
}

fn load_entry(
    env: &ort::environment::Environment,
    dir: &Path,
    threads: usize,
) -> std::result::Result<Session, String> {
    let ready: Ready = std::fs::read(dir.join(READY))
        .map_err(|e| e.to_string())
        .and_then(|b| serde_json::from_slice(&b).map_err(|e| format!("{READY}: {e}")))?;
    let size = |f: &str| std::fs::metadata(dir.join(f)).map(|m| m.len()).unwrap_or(0);
    if ready.format != FORMAT || size(GRAPH) != ready.graph_bytes || size(DATA) != ready.data_bytes
    {
        return Err("files do not match ready.json".into());
    }
    // Already optimised: running the optimisers again would only cost time.
    builder(env, threads)
        .map_err(|e| e.to_string())?
        .with_optimization_level(GraphOptimizationLevel::Disable)
        .map_err(|e| e.to_string())?
        .commit_from_file(dir.join(GRAPH))
        .map_err(|e| e.to_string())
}

/// Loads `model` with full optimisation while ONNX Runtime writes the optimised graph (and
/// the packed weights) into a temporary directory, renamed to `dir` when complete.
fn build_entry(
    env: &ort::environment::Environment,
    model: &Path,
    dir: &Path,
    threads: usize,
) -> Result<(Session, std::result::Result<(), String>)> {
    let parent = dir.parent().unwrap_or(Path::new("."));
    let tmp = parent.join(format!(
        ".tmp-{}-{}",
        dir.file_name().and_then(|n| n.to_str()).unwrap_or("entry"),
        std::process::id()
    ));
    if let Err(e) = std::fs::create_dir_all(&tmp) {
        let session = commit(builder(env, threads)?, model)?;
        return Ok((session, Err(format!("{}: {e}", parent.display()))));
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
        // The packed weights go to the data file too, so a hit does not pack them again.
        ("session.save_external_prepacked_constant_initializers", "1"),
    ] {
        b = b.with_config_entry(k, v).map_err(ort_err)?;
    }
    let session = match commit(b, model) {
        Ok(s) => s,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&tmp);
            return Err(e);
        }
    };
    let written = publish(&tmp, dir);
    if written.is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    Ok((session, written))
}

fn publish(tmp: &Path, dir: &Path) -> std::result::Result<(), String> {
    let size = |f: &str| {
        std::fs::metadata(tmp.join(f))
            .map(|m| m.len())
            .map_err(|e| format!("{f}: {e}"))
    };
    let ready = Ready {
        format: FORMAT,
        graph_bytes: size(GRAPH)?,
        data_bytes: size(DATA).unwrap_or(0),
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
