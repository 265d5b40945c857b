//! Filter mode (`mem-embed FILE`): JSONL records read a chunk at a time, the text of each
//! (its "text", or an observation's) embedded, and each written back with a "vector" field;
//! other typed records pass through. The model is loaded for the first chunk with a text, never
//! when no record has one; the reading, the telling and the writing are the caller's
//! ([`Stream`]).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

use memkit_core::Result;

use super::{Embedder, LoadOptions, Manifest, observation_text};

/// Records embedded per model call: enough to batch well, few enough that a long input is never
/// held whole.
pub const CHUNK: usize = 256;

/// The caller's side of a filter run.
pub trait Stream {
    /// The next record and its line number; `None` at the end.
    fn next(&mut self) -> Result<Option<(usize, Value)>>;
    /// Line `line` holds a record that cannot be embedded, for this reason; it is skipped.
    fn bad(&mut self, line: usize, why: &str);
    /// The model's directory: asked once, when the first text is to be embedded.
    fn model_dir(&mut self) -> Result<PathBuf>;
    /// The model was loaded.
    fn loaded(&mut self, model: &Embedder);
    /// A record to write, with its vector when it had a text, in the order read.
    fn write(&mut self, record: &Value) -> Result<()>;
}

/// What a run embedded.
#[derive(Debug, Clone, Copy)]
pub struct Embedded {
    pub texts: usize,
    pub tokens: usize,
    /// The time the model took, loading aside.
    pub took: Duration,
}

/// Embeds what `s` reads, a [`CHUNK`] at a time, with a query's prefix of kind `query`, else a
/// document's. `None` when no record had a text (and no model was loaded).
pub fn run(
    s: &mut impl Stream,
    dim: Option<usize>,
    query: Option<&str>,
) -> Result<Option<Embedded>> {
    let mut model: Option<(Embedder, String)> = None;
    let mut chunk: Vec<(Value, Option<String>)> = Vec::new();
    let (mut texts, mut took) = (0usize, Duration::ZERO);
    loop {
        let next = s.next()?;
        let end = next.is_none();
        if let Some((no, v)) = next {
            let text = record_text(&v);
            match &text {
                Some(t) if t.trim().is_empty() => s.bad(no, "empty text"),
                None if v.get("type").is_none() => {
                    s.bad(no, "no \"text\" field (and not an observation record)")
                }
                _ => chunk.push((v, text)),
            }
            if chunk.len() < CHUNK {
                continue;
            }
        }
        if chunk.iter().any(|(_, t)| t.is_some()) {
            if model.is_none() {
                let dir = s.model_dir()?;
                // A full chunk means more may follow: load for a batch.
                let last = end.then_some(chunk.as_slice());
                let (e, prefix) = load_for_filter(&dir, dim, query, last)?;
                s.loaded(&e);
                model = Some((e, prefix));
            }
            let (e, prefix) = model.as_mut().expect("loaded above");
            let batch = texts_of(&chunk, prefix);
            let refs: Vec<&str> = batch.iter().map(String::as_str).collect();
            let started = Instant::now();
            let mut vecs = e.embed(&refs)?.into_iter();
            took += started.elapsed();
            texts += refs.len();
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
            s.write(&v)?;
        }
        if end {
            break;
        }
    }
    Ok(model.map(|(e, _)| Embedded {
        texts,
        tokens: e.tokens_embedded(),
        took,
    }))
}

/// The model of a filter run (`mem-embed FILE`) and the prefix its texts take: a query's of kind
/// `query`, else a document's. `last`: the records when they are all there is (loaded for
/// exactly their texts); None: more may follow (loaded for batches).
fn load_for_filter(
    dir: &Path,
    dim: Option<usize>,
    query: Option<&str>,
    last: Option<&[(Value, Option<String>)]>,
) -> Result<(Embedder, String)> {
    let manifest = Manifest::load(dir)?;
    let prefix = match query {
        Some(k) => manifest.query_prefix(Some(k)).to_string(),
        None => manifest.document_prefix.clone(),
    };
    let opts = match last {
        Some(chunk) => LoadOptions::for_texts(
            &texts_of(chunk, &prefix)
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>(),
        ),
        None => LoadOptions::batch(),
    };
    Ok((Embedder::load_with(dir, dim, opts)?, prefix))
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
        return Some(observation_text(
            &s("title"),
            &s("summary"),
            Some(&detail),
            &list("facts"),
            &list("concepts"),
        ));
    }
    None
}
