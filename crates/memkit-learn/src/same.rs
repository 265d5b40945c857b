//! Whether a candidate says what a stored learning says: by their words, or by the cosine of
//! their vectors with the model of the stored embeddings when it is installed.

use rusqlite::Connection;

use memkit_core::config::Config;
use memkit_core::{Result, store};

/// Says whether two learnings are the same: lexically, or by the cosine of their vectors with the
/// model of the stored embeddings when it is installed (loaded on first need, vectors cached).
pub struct Sameness<'a> {
    conn: &'a Connection,
    model: Option<(String, usize, std::path::PathBuf)>,
    embedder: Option<std::result::Result<memkit_search::embed::Embedder, String>>,
    /// Vectors of this run's texts: every candidate is compared with every active learning.
    seen: std::collections::HashMap<String, Option<Vec<f32>>>,
}

impl<'a> Sameness<'a> {
    pub fn new(conn: &'a Connection, cfg: &Config) -> Result<Sameness<'a>> {
        let model = store::stats::latest_model(conn)?.and_then(|(name, dim)| {
            let hint = memkit_core::config::EMBED_MODEL.get(cfg);
            memkit_search::embed::find_model(&name, hint.as_deref())
                .map(|(dir, _)| (name, dim, dir))
        });
        Ok(Sameness {
            conn,
            model,
            embedder: None,
            seen: Default::default(),
        })
    }

    fn vector(&mut self, text: &str) -> Option<Vec<f32>> {
        if let Some(v) = self.seen.get(text) {
            return v.clone();
        }
        let v = self.embed(text);
        self.seen.insert(text.to_string(), v.clone());
        v
    }

    fn embed(&mut self, text: &str) -> Option<Vec<f32>> {
        use memkit_search::embed::{Embedder, LoadOptions, store as es};
        let (name, dim, dir) = self.model.as_ref()?;
        if let Ok(Some(v)) = es::cache_get(self.conn, name, *dim, text) {
            return Some(v);
        }
        let e = self.embedder.get_or_insert_with(|| {
            Embedder::load_with(dir, Some(*dim), LoadOptions::query()).map_err(|e| e.to_string())
        });
        let v = e.as_mut().ok()?.embed(&[text]).ok()?.remove(0);
        let _ = es::cache_put(self.conn, name, *dim, text, &v);
        Some(v)
    }

    pub fn same(&mut self, a: &str, b: &str) -> bool {
        if crate::lexically_same(a, b) {
            return true;
        }
        match (self.vector(a), self.vector(b)) {
            (Some(x), Some(y)) => {
                memkit_search::embed::cosine(&x, &y) as f64 >= crate::DUPLICATE_COSINE
            }
            _ => false,
        }
    }

    /// Why vectors were not used, when a model was expected.
    pub fn trouble(&self) -> Option<String> {
        match &self.embedder {
            Some(Err(e)) => Some(format!("learnings compared by their words only: {e}")),
            _ => None,
        }
    }
}
