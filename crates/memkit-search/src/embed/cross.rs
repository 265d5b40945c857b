//! Cross-encoders (rerankers): an ONNX model that reads a query and a passage together and gives
//! one relevance logit per pair, as a Hugging Face sequence-classification export of
//! ms-marco-MiniLM-L-6-v2 or bge-reranker does. Loaded like the embedding models (the ONNX
//! Runtime found by [`super::runtime_path`], the persistent session cache, tokenizer.json) with a
//! manifest of its own kind:
//!
//! ```json
//! {"name": "ms-marco-minilm-l6", "kind": "cross-encoder", "max_tokens": 256,
//!  "inputs": {"input_ids": "input_ids", "attention_mask": "attention_mask",
//!             "token_type_ids": "token_type_ids"},
//!  "output": "logits", "pad_token_id": 0}
//! ```
//!
//! The output is `[batch]`, `[batch, 1]` or `[batch, classes]` (the last class is taken as
//! "relevant"). Never prints or exits.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ort::session::{Session, SessionInputValue};
use ort::value::Tensor;
use serde::Deserialize;

use memkit_core::{Error, Result, config};

/// The kind a reranker's manifest.json must say.
pub const KIND: &str = "cross-encoder";

/// How a cross-encoder wants its input (`manifest.json` beside `model.onnx`).
#[derive(Debug, Clone, Deserialize)]
pub struct CrossManifest {
    pub name: String,
    /// Must be [`KIND`]; an embedding model's manifest has none.
    #[serde(default)]
    pub kind: String,
    /// Query and passage together are cut to this many tokens (the passage first).
    #[serde(default = "default_max_tokens")]
    pub max_tokens: usize,
    /// Role (`input_ids`, `attention_mask`, `token_type_ids`) → input name.
    pub inputs: BTreeMap<String, String>,
    pub output: String,
    #[serde(default)]
    pub pad_token_id: Option<i64>,
}

fn default_max_tokens() -> usize {
    512
}

impl CrossManifest {
    pub fn load(dir: &Path) -> Result<CrossManifest> {
        let path = dir.join("manifest.json");
        let text = std::fs::read_to_string(&path).map_err(|e| {
            Error::other(format!(
                "reranker {}: cannot read manifest.json: {e}",
                dir.display()
            ))
        })?;
        let m: CrossManifest = serde_json::from_str(&text)
            .map_err(|e| Error::input(path.display().to_string(), Some(e.line()), e))?;
        let bad = |why: String| Error::input(path.display().to_string(), None, why);
        if m.kind != KIND {
            return Err(bad(format!(
                "kind {:?} is not a reranker (want \"{KIND}\")",
                m.kind
            )));
        }
        if !m.inputs.contains_key("input_ids") {
            return Err(bad("inputs has no input_ids".into()));
        }
        if let Some(role) = m.inputs.keys().find(|r| {
            !matches!(
                r.as_str(),
                "input_ids" | "attention_mask" | "token_type_ids"
            )
        }) {
            return Err(bad(format!(
                "unknown input role {role:?} (input_ids, attention_mask, token_type_ids)"
            )));
        }
        if m.max_tokens < 4 {
            return Err(bad(format!("max_tokens {} is too small", m.max_tokens)));
        }
        Ok(m)
    }
}

/// The directory of a reranker given by name (under the model cache) or by path, checked to hold
/// model.onnx, tokenizer.json and a cross-encoder manifest.
pub fn resolve(spec: &str) -> Result<(PathBuf, CrossManifest)> {
    let p = Path::new(spec);
    let dir = if spec.contains('/') || p.is_dir() {
        p.to_path_buf()
    } else {
        config::models_dir().join(spec)
    };
    for file in ["model.onnx", "tokenizer.json"] {
        if !dir.join(file).is_file() {
            return Err(Error::other(format!(
                "reranker {spec:?} not found: {} holds no {file} (export a cross-encoder to ONNX \
                 there with its tokenizer.json and a manifest.json of kind \"{KIND}\", or set \
                 MEM_SEARCH_RERANK_MODEL to such a directory; see mem-search(1))",
                dir.display()
            )));
        }
    }
    let m = CrossManifest::load(&dir)?;
    Ok((dir, m))
}

/// Scores (query, passage) pairs, for `search`'s rerank stage (which depends on this trait, not
/// on a model): [`RerankModel`] implements it with a real model, tests with stand-ins.
pub trait PairScorer {
    /// The model's name, for messages.
    fn name(&self) -> &str;
    /// One score per passage, higher = more relevant to `query`; only their order matters.
    fn score(&self, query: &str, passages: &[&str]) -> Result<Vec<f32>>;
}

/// A loaded cross-encoder.
pub struct CrossEncoder {
    pub manifest: CrossManifest,
    session: Session,
    tokenizer: tokenizers::Tokenizer,
}

impl CrossEncoder {
    /// Loads the reranker in `dir` (session from the persistent model cache when it can).
    pub fn load(dir: &Path) -> Result<CrossEncoder> {
        let manifest = CrossManifest::load(dir)?;
        let model_path = dir.join("model.onnx");
        let env = super::init_runtime()?;
        let threads = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        let session = super::cache::session(
            env,
            &model_path,
            threads,
            super::cache::enabled(),
            false,
            super::int8_enabled(),
        )?
        .session;
        let (mut tokenizer, _) = super::load_tokenizer(dir, super::cache::enabled())?;
        tokenizer
            .with_truncation(Some(tokenizers::TruncationParams {
                max_length: manifest.max_tokens,
                strategy: tokenizers::TruncationStrategy::LongestFirst,
                ..Default::default()
            }))
            .map_err(|e| Error::other(format!("tokenizer: {e}")))?;
        super::check_io(
            &session,
            &manifest.inputs,
            &manifest.output,
            "reranker",
            &model_path,
        )?;
        Ok(CrossEncoder {
            manifest,
            session,
            tokenizer,
        })
    }

    /// One logit per passage for `query`, in the passages' order. Pairs are batched by length
    /// (as embeddings are) so that short passages are not padded to the longest.
    pub fn score(&mut self, query: &str, passages: &[&str]) -> Result<Vec<f32>> {
        if passages.is_empty() {
            return Ok(vec![]);
        }
        let inputs: Vec<tokenizers::EncodeInput> =
            passages.iter().map(|p| (query, *p).into()).collect();
        let encs = self
            .tokenizer
            .encode_batch(inputs, true)
            .map_err(|e| Error::other(format!("tokenizer: {e}")))?;
        let lens: Vec<usize> = encs.iter().map(|e| e.get_ids().len()).collect();
        let mut out = vec![0f32; passages.len()];
        for batch in super::batches(&lens, super::BATCH_TOKENS) {
            let rows: Vec<&tokenizers::Encoding> = batch.iter().map(|&i| &encs[i]).collect();
            let got = self.run(&rows)?;
            for (&i, s) in batch.iter().zip(got) {
                out[i] = s;
            }
        }
        Ok(out)
    }

    fn run(&mut self, rows: &[&tokenizers::Encoding]) -> Result<Vec<f32>> {
        let m = &self.manifest;
        let b = rows.len();
        let len = rows.iter().map(|e| e.get_ids().len()).max().unwrap_or(0);
        let pad = m.pad_token_id.unwrap_or(0);
        let mut ids = vec![pad; b * len];
        let mut mask = vec![0i64; b * len];
        let mut types = vec![0i64; b * len];
        for (r, e) in rows.iter().enumerate() {
            for (j, (&id, &t)) in e.get_ids().iter().zip(e.get_type_ids()).enumerate() {
                ids[r * len + j] = id as i64;
                mask[r * len + j] = 1;
                types[r * len + j] = t as i64;
            }
        }
        let shape = [b as i64, len as i64];
        let mut inputs: Vec<(Cow<'static, str>, SessionInputValue<'static>)> = Vec::new();
        for (role, name) in &m.inputs {
            let data = match role.as_str() {
                "input_ids" => ids.clone(),
                "attention_mask" => mask.clone(),
                _ => types.clone(),
            };
            let t = Tensor::from_array((shape, data))
                .map_err(|e| Error::other(format!("onnx input: {e}")))?;
            inputs.push((Cow::Owned(name.clone()), t.into()));
        }
        let name = m.name.clone();
        let output = m.output.clone();
        let outputs = self
            .session
            .run(inputs)
            .map_err(|e| Error::other(format!("reranker {name}: inference failed: {e}")))?;
        let value = outputs
            .get(output.as_str())
            .ok_or_else(|| Error::other(format!("reranker {name}: no output named {output:?}")))?;
        let (oshape, data) = value
            .try_extract_tensor::<f32>()
            .map_err(|e| Error::other(format!("reranker {name}: output: {e}")))?;
        let classes = match oshape.iter().map(|&d| d as usize).collect::<Vec<_>>()[..] {
            [n] if n == b => 1,
            [n, c] if n == b && c >= 1 => c,
            ref d => {
                return Err(Error::other(format!(
                    "reranker {name}: output shape {d:?} is not [batch] or [batch, classes]"
                )));
            }
        };
        Ok((0..b).map(|r| data[r * classes + classes - 1]).collect())
    }
}

/// A reranker loaded on the first search that needs it (a process that never reranks never
/// pays for loading it).
pub struct RerankModel {
    dir: PathBuf,
    manifest: CrossManifest,
    /// The loaded model, or why it could not be loaded (not retried within a process).
    loaded: RefCell<Option<std::result::Result<CrossEncoder, String>>>,
}

impl RerankModel {
    /// The reranker `spec` (a name under the model cache or a directory); nothing loaded yet.
    pub fn new(spec: &str) -> Result<RerankModel> {
        let (dir, manifest) = resolve(spec)?;
        Ok(RerankModel {
            dir,
            manifest,
            loaded: RefCell::new(None),
        })
    }
}

impl PairScorer for RerankModel {
    fn name(&self) -> &str {
        &self.manifest.name
    }
    fn score(&self, query: &str, passages: &[&str]) -> Result<Vec<f32>> {
        let mut slot = self.loaded.borrow_mut();
        let loaded =
            slot.get_or_insert_with(|| CrossEncoder::load(&self.dir).map_err(|e| e.to_string()));
        match loaded {
            Ok(m) => m.score(query, passages),
            Err(e) => Err(Error::Other(e.clone())),
        }
    }
}
