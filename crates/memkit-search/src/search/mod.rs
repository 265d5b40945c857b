//! Hybrid retrieval: BM25 (tantivy) and vector (usearch) candidates fused with reciprocal rank
//! fusion, then re-ranked by relevance, similarity, recency, type, file overlap and project.
//! Degrades in order: no query vector or no vector index → BM25 only; no tantivy index →
//! SQLite FTS5. The mode used is in every hit.
//!
//! Query vectors come from `embedding_cache` (model, dim, sha256 hex of the query text that
//! [`crate::embed::query_text`] makes from the model's manifest) without loading a model; a
//! [`QueryEmbedder`] (`embed::QueryModel`, see [`Searcher::use_installed_model`]) embeds
//! uncached queries, and the vector is cached for the next identical query.

pub mod synth;

pub use memkit_core::record::Explain;
use std::collections::HashMap;
use std::ops::Bound;
use std::path::Path;

use rusqlite::Connection;
use serde::Serialize;
use tantivy::Term;
use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, BoostQuery, Occur, Query, RangeQuery, TermQuery};
use tantivy::schema::IndexRecordOption;

use crate::index::bm25::{Bm25, TEXT_FIELDS};
use crate::index::vectors::{Vectors, decode};
use crate::index::{Doc, Layout, State, VectorState};
use memkit_core::config::Config;
use memkit_core::record::Hit;
use memkit_core::{Error, Result};

/// Most hits one search returns: a larger limit is capped (candidate lists are sized from it).
pub const MAX_LIMIT: usize = 10_000;

/// Embeds query text with a real model (`embed::QueryModel`). Search works without one:
/// cached query vectors are read from `embedding_cache` directly.
pub trait QueryEmbedder {
    /// Model name as stored in `embeddings.model`.
    fn model(&self) -> &str;
    /// Output dimension as stored in `embeddings.dim`.
    fn dim(&self) -> usize;
    /// Embeds `text` exactly as given (already shaped by [`crate::embed::query_text`] for
    /// queries); the vector must be L2-normalised. The searcher caches it.
    fn embed(&self, text: &str) -> Result<Vec<f32>>;
    /// Embeds several texts, as [`QueryEmbedder::embed`] does each (an implementation may
    /// batch them: a search with `--tags` embeds every known tag once).
    fn embed_all(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        texts.iter().map(|t| self.embed(t)).collect()
    }
}

/// The exact text embedded for a search query with `model`: [`crate::embed::query_text`] with
/// the installed model's manifest (the query alone when it is not installed).
pub fn query_text(model: &str, query: &str) -> String {
    let found = crate::embed::find_model(model, None);
    crate::embed::query_text(
        found.as_ref().map(|f| &f.1),
        Some(crate::embed::SEARCH_QUERY_KIND),
        query,
    )
}

/// sha256 hex of `text`: the `embedding_cache.text_hash` key.
pub fn text_hash(text: &str) -> String {
    crate::embed::sha256_hex(text)
}

/// Which retrievers to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Engine {
    /// Hybrid when a query vector and a vector index exist, else BM25, else FTS5.
    #[default]
    Auto,
    /// BM25 only (FTS5 when the tantivy index is missing).
    Bm25,
    /// Vectors only (for evaluation).
    Vector,
    /// SQLite FTS5 only.
    Fts,
}

/// Filters applied to every candidate.
#[derive(Debug, Clone, Default)]
pub struct Filters {
    /// Project roots; `None` = every project.
    pub projects: Option<Vec<String>>,
    /// Observation types (or `session`).
    pub kinds: Vec<String>,
    /// Tags after fuzzy expansion (lowercase); empty = no tag filter.
    pub tags: Vec<String>,
    /// Inclusive bounds, epoch milliseconds.
    pub after_ms: Option<i64>,
    pub before_ms: Option<i64>,
    pub session: Option<String>,
}

impl Filters {
    pub fn passes(&self, d: &Doc) -> bool {
        if let Some(ps) = &self.projects
            && !d.project.as_ref().is_some_and(|p| ps.contains(p))
        {
            return false;
        }
        if !self.kinds.is_empty() && !self.kinds.contains(&d.kind) {
            return false;
        }
        if !self.tags.is_empty() && !d.tags.iter().any(|t| self.tags.contains(t)) {
            return false;
        }
        if self.after_ms.is_some_and(|a| d.created_ms < a) {
            return false;
        }
        if self.before_ms.is_some_and(|b| d.created_ms > b) {
            return false;
        }
        if let Some(s) = &self.session
            && d.session_id.as_deref() != Some(s.as_str())
        {
            return false;
        }
        true
    }
}

/// Parses an `--after`/`--before` bound: an ISO date (the whole day, UTC) or datetime
/// (RFC 3339, or without zone = UTC). Returns inclusive epoch milliseconds.
pub fn parse_bound(s: &str, before: bool) -> Result<i64> {
    let s = s.trim();
    let bad = || {
        Error::Usage(format!(
            "invalid date {s:?}: use YYYY-MM-DD or an ISO datetime such as 2026-02-21T14:30:00Z"
        ))
    };
    if let Ok(d) = chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d") {
        let day = if before {
            d.succ_opt().ok_or_else(bad)?
        } else {
            d
        };
        let ms = day
            .and_hms_opt(0, 0, 0)
            .ok_or_else(bad)?
            .and_utc()
            .timestamp_millis();
        return Ok(if before { ms - 1 } else { ms });
    }
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
        return Ok(t.timestamp_millis());
    }
    for f in [
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%d %H:%M",
    ] {
        if let Ok(t) = chrono::NaiveDateTime::parse_from_str(s, f) {
            return Ok(t.and_utc().timestamp_millis());
        }
    }
    Err(bad())
}

/// The weights of the score components (all configurable, see `config::SETTINGS`).
#[derive(Debug, Clone, Serialize)]
pub struct Weights {
    pub relevance: f64,
    pub lexical: f64,
    pub similarity: f64,
    pub recency: f64,
    #[serde(rename = "type")]
    pub kind: f64,
    pub files: f64,
    pub project: f64,
    pub half_life_days: f64,
    pub rrf_k: f64,
    pub tag_similarity: f32,
    #[serde(skip)]
    pub type_weights: HashMap<String, f64>,
}

impl Default for Weights {
    fn default() -> Self {
        Weights {
            relevance: 1.0,
            lexical: 0.5,
            similarity: 0.5,
            recency: 0.2,
            kind: 0.1,
            files: 0.3,
            project: 0.2,
            half_life_days: 2.0,
            rrf_k: 60.0,
            tag_similarity: 0.75,
            type_weights: [
                ("decision", 0.8),
                ("bugfix", 0.7),
                ("discovery", 0.6),
                ("feature", 0.5),
                ("refactor", 0.4),
                ("change", 0.3),
                ("session", 0.5),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
        }
    }
}

impl Weights {
    pub fn from_config(cfg: &Config) -> Result<Weights> {
        let mut w = Weights::default();
        let num = |key: &str, dst: &mut f64| -> Result<()> {
            if let Some(v) = cfg.get_num(key)? {
                *dst = v;
            }
            Ok(())
        };
        num("search_weight_relevance", &mut w.relevance)?;
        num("search_weight_similarity", &mut w.similarity)?;
        num("search_weight_lexical", &mut w.lexical)?;
        num("search_weight_recency", &mut w.recency)?;
        num("search_weight_type", &mut w.kind)?;
        num("search_weight_files", &mut w.files)?;
        num("search_weight_project", &mut w.project)?;
        num("search_half_life_days", &mut w.half_life_days)?;
        num("search_rrf_k", &mut w.rrf_k)?;
        let mut ts = w.tag_similarity as f64;
        num("search_tag_similarity", &mut ts)?;
        w.tag_similarity = ts as f32;
        if let Some(list) = cfg.get_list("search_type_weights") {
            let key = "search_type_weights";
            for item in list {
                match item.split_once('=') {
                    Some((k, v)) => match memkit_core::config::parse_num(key, v) {
                        Ok(v) => {
                            w.type_weights.insert(k.trim().to_string(), v);
                        }
                        Err(e) => cfg.invalid(key, &format!("{}: {e}", k.trim()))?,
                    },
                    None => cfg.invalid(key, &format!("expected type=weight, got {item:?}"))?,
                }
            }
        }
        Ok(w)
    }
}

/// One search.
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub text: String,
    pub filters: Filters,
    pub limit: usize,
    pub min_score: Option<f64>,
    /// Files the user is working on (ranking signal).
    pub files: Vec<String>,
    /// The current project (same-project bonus, `other_project` labels).
    pub current_project: Option<String>,
    pub engine: Engine,
    pub probe: bool,
    pub explain: bool,
}

/// An open store + indexes, ready for many searches.
pub struct Searcher {
    pub conn: Connection,
    pub layout: Layout,
    pub state: Option<State>,
    pub bm25: Option<Bm25>,
    pub bm25_error: Option<String>,
    /// The vector index chosen for queries (opened on first use).
    pub vector_state: Option<VectorState>,
    vectors: std::cell::OnceCell<Option<Vectors>>,
    pub weights: Weights,
    pub embedder: Option<Box<dyn QueryEmbedder>>,
    /// Why the embedder failed (the search went on without a query vector).
    pub embed_error: std::cell::RefCell<Option<String>>,
    /// The configured embedding model (name or directory), looked at first for manifests.
    model_hint: Option<String>,
    /// The installed model of the vector index, when there is one.
    index_model: std::cell::OnceCell<Option<(std::path::PathBuf, crate::embed::Manifest)>>,
}

impl Searcher {
    /// Opens the indexes under `home` for the database `conn`. Missing or unreadable indexes
    /// are not errors: search degrades (see the module doc).
    pub fn open(home: &Path, conn: Connection, cfg: &Config) -> Result<Searcher> {
        let layout = Layout::new(home);
        // Keys of another database's index would name unrelated rows of this one.
        let (state, bm25, bm25_error) = match layout.state_for(&conn)? {
            Err(why) => (None, None, Some(why)),
            Ok(s) => match Bm25::open(&layout.bm25()) {
                Ok(b) => (Some(s), Some(b), None),
                Err(e) => (Some(s), None, Some(e.to_string())),
            },
        };
        let weights = Weights::from_config(cfg)?;
        let want_dim: Option<usize> = cfg.get_num("search_dim")?;
        let vector_state = state.as_ref().and_then(|s| {
            let want_model = cfg.get("search_model");
            let v = s
                .vectors
                .iter()
                .filter(|v| want_model.as_ref().is_none_or(|m| m == &v.model))
                .filter(|v| want_dim.is_none_or(|d| d == v.dim))
                .max_by_key(|v| v.count)?;
            Some(v.clone())
        });
        Ok(Searcher {
            conn,
            layout,
            state,
            bm25,
            bm25_error,
            vector_state,
            vectors: std::cell::OnceCell::new(),
            weights,
            embedder: None,
            embed_error: std::cell::RefCell::new(None),
            model_hint: cfg.get("embed_model"),
            index_model: std::cell::OnceCell::new(),
        })
    }

    /// The vector index, memory-mapped on first use; `None` when missing or unreadable.
    pub fn vectors(&self) -> Option<&Vectors> {
        self.vectors
            .get_or_init(|| {
                let v = self.vector_state.as_ref()?;
                Vectors::view(&self.layout.dir.join(&v.file), &v.model, v.dim).ok()
            })
            .as_ref()
    }

    /// The installed model (directory, manifest) of the vector index; manifests only are read.
    fn index_model(&self) -> Option<&(std::path::PathBuf, crate::embed::Manifest)> {
        self.index_model
            .get_or_init(|| {
                let v = self.vector_state.as_ref()?;
                crate::embed::find_model(&v.model, self.model_hint.as_deref())
            })
            .as_ref()
    }

    /// Lets queries missing from the cache be embedded by the vector index's model, loaded on
    /// first need. False (and BM25 for such queries) when that model is not installed.
    pub fn use_installed_model(&mut self) -> Result<bool> {
        let Some(dim) = self.vector_state.as_ref().map(|v| v.dim) else {
            return Ok(false);
        };
        let Some((dir, m)) = self.index_model().cloned() else {
            return Ok(false);
        };
        self.embedder = Some(Box::new(crate::embed::QueryModel::new(dir, m, dim)?));
        Ok(true)
    }

    /// The exact text embedded for `query` with the vector index's model.
    pub fn query_text(&self, query: &str) -> String {
        crate::embed::query_text(
            self.index_model().map(|m| &m.1),
            Some(crate::embed::SEARCH_QUERY_KIND),
            query,
        )
    }

    /// A vector for `text`: the cache, else the embedder (whose vector is then cached). An
    /// embedder failure is kept in `embed_error` and the search goes on without a vector.
    fn doc_vector(&self, model: &str, dim: usize, text: &str) -> Result<Option<Vec<f32>>> {
        Ok(self.doc_vectors(model, dim, &[text])?.remove(0))
    }

    /// Vectors of `texts` from the embedding cache, the missing ones embedded in one call
    /// (and cached) when the query model is the index's; None where neither can give one.
    fn doc_vectors(
        &self,
        model: &str,
        dim: usize,
        texts: &[&str],
    ) -> Result<Vec<Option<Vec<f32>>>> {
        let mut out = Vec::with_capacity(texts.len());
        let mut missing = Vec::new();
        for (i, t) in texts.iter().enumerate() {
            let v = crate::embed::store::cache_lookup(&self.conn, model, dim, t)?;
            if v.is_none() {
                missing.push(i);
            }
            out.push(v);
        }
        let Some(e) = self
            .embedder
            .as_ref()
            .filter(|e| e.model() == model && e.dim() == dim && !missing.is_empty())
        else {
            return Ok(out);
        };
        let batch: Vec<&str> = missing.iter().map(|&i| texts[i]).collect();
        match e.embed_all(&batch) {
            Ok(vecs) => {
                // The cache only saves time: a database that cannot be written costs a
                // model load next time, not this search.
                let tx = self.conn.unchecked_transaction().ok();
                for (&i, v) in missing.iter().zip(vecs) {
                    let _ = crate::embed::store::cache_put(&self.conn, model, dim, texts[i], &v);
                    out[i] = Some(v);
                }
                if let Some(tx) = tx {
                    let _ = tx.commit();
                }
            }
            Err(err) => *self.embed_error.borrow_mut() = Some(err.to_string()),
        }
        Ok(out)
    }

    /// The query vector for the open vector index, when cached or embeddable.
    pub fn query_vector(&self, query: &str) -> Result<Option<Vec<f32>>> {
        let Some(v) = &self.vector_state else {
            return Ok(None);
        };
        self.doc_vector(&v.model, v.dim, &self.query_text(query))
    }

    /// Every known tag (from the index state, else the database).
    pub fn known_tags(&self) -> Result<Vec<String>> {
        if let Some(s) = &self.state {
            return Ok(s.tags.clone());
        }
        let mut st = self.conn.prepare(
            "SELECT DISTINCT lower(j.value) FROM observations, json_each(observations.tags) j",
        )?;
        let rows = st.query_map([], |r| r.get::<_, String>(0))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Expands tags fuzzily: a tag matches itself, known tags it is a prefix of (3+ chars),
    /// and known tags whose embedding cosine with it is at least the tag threshold.
    pub fn expand_tags(&self, tags: &[String]) -> Result<Vec<String>> {
        if tags.is_empty() {
            return Ok(vec![]);
        }
        let known = self.known_tags()?;
        let asked: Vec<String> = tags
            .iter()
            .map(|t| t.trim().to_lowercase())
            .filter(|t| !t.is_empty())
            .collect();
        // Known and asked tags embedded together: one model call, not one per tag.
        let vecs: HashMap<&str, Vec<f32>> = match &self.vector_state {
            Some(v) => {
                let mut texts: Vec<&str> = known
                    .iter()
                    .chain(&asked)
                    .map(String::as_str)
                    .filter(|t| !t.trim().is_empty())
                    .collect();
                texts.sort_unstable();
                texts.dedup();
                let got = self.doc_vectors(&v.model, v.dim, &texts)?;
                texts
                    .into_iter()
                    .zip(got)
                    .filter_map(|(t, v)| Some((t, v?)))
                    .collect()
            }
            None => HashMap::new(),
        };
        let mut out: Vec<String> = Vec::new();
        let add = |s: &str, out: &mut Vec<String>| {
            if !out.iter().any(|o| o == s) {
                out.push(s.to_string());
            }
        };
        for t in &asked {
            add(t, &mut out);
            for k in &known {
                if t.chars().count() >= 3 && k.starts_with(t.as_str()) {
                    add(k, &mut out);
                }
            }
            if let Some(tv) = vecs.get(t.as_str()) {
                for k in &known {
                    if vecs
                        .get(k.as_str())
                        .is_some_and(|vk| cosine(tv, vk) >= self.weights.tag_similarity)
                    {
                        add(k, &mut out);
                    }
                }
            }
        }
        Ok(out)
    }

    /// Runs one search; hits best first, each carrying the mode used.
    pub fn search(&self, req: &Request) -> Result<Vec<Hit>> {
        if req.text.trim().is_empty() {
            return Err(Error::Usage("empty query".into()));
        }
        let limit = req.limit.clamp(1, MAX_LIMIT);
        let k = (limit * 5).max(50);
        let qvec = match req.engine {
            Engine::Auto | Engine::Vector => self.query_vector(&req.text)?,
            _ => None,
        };
        // Lexical candidates.
        let (lexical, lex_name): (Vec<(u64, f64)>, Option<&str>) = match req.engine {
            Engine::Vector => (vec![], None),
            Engine::Fts => (self.fts(&req.text, &req.filters, k)?, Some("fts")),
            _ => match &self.bm25 {
                Some(b) => (bm25_search(b, &req.text, &req.filters, k)?, Some("bm25")),
                None => (self.fts(&req.text, &req.filters, k)?, Some("fts")),
            },
        };
        // Vector candidates (over-fetched: filters apply afterwards).
        let vectors = if qvec.is_some() { self.vectors() } else { None };
        let vector: Vec<(u64, f64)> = match (&qvec, vectors) {
            (Some(q), Some(v)) => v
                .search(q, (k * 4).min(1000))?
                .into_iter()
                .map(|(k, s)| (k, s as f64))
                .collect(),
            _ => vec![],
        };
        if req.engine == Engine::Vector && vectors.is_none() {
            return Err(Error::Other(
                "no query vector: the vector index or the cached query embedding is missing".into(),
            ));
        }
        let mode = match (lex_name, qvec.is_some() && vectors.is_some()) {
            (Some("bm25"), true) => "hybrid",
            (Some("fts"), true) => "hybrid",
            (Some(m), false) => m,
            (None, _) => "vector",
            _ => "bm25",
        };
        // The database decides what exists and what passes the filters.
        let mut keys: Vec<u64> = lexical.iter().chain(vector.iter()).map(|x| x.0).collect();
        keys.sort_unstable();
        keys.dedup();
        let docs: HashMap<u64, Doc> = crate::index::load_docs(&self.conn, &keys)?
            .into_iter()
            .filter(|d| req.filters.passes(d))
            .map(|d| (d.key, d))
            .collect();
        let lexical: Vec<(u64, f64)> = lexical
            .into_iter()
            .filter(|x| docs.contains_key(&x.0))
            .collect();
        let vector: Vec<(u64, f64)> = vector
            .into_iter()
            .filter(|x| docs.contains_key(&x.0))
            .take(k)
            .collect();
        let lists = [&lexical, &vector]
            .iter()
            .filter(|l| !l.is_empty())
            .count()
            .max(1) as f64;
        let rk = self.weights.rrf_k;
        // key → (rrf sum, lexical rank, lexical score, vector rank)
        type Fused = (f64, Option<usize>, Option<f64>, Option<usize>);
        let mut fused: HashMap<u64, Fused> = HashMap::new();
        for (rank, (key, s)) in lexical.iter().enumerate() {
            let e = fused.entry(*key).or_default();
            e.0 += 1.0 / (rk + rank as f64 + 1.0);
            e.1 = Some(rank + 1);
            e.2 = Some(*s);
        }
        for (rank, (key, _)) in vector.iter().enumerate() {
            let e = fused.entry(*key).or_default();
            e.0 += 1.0 / (rk + rank as f64 + 1.0);
            e.3 = Some(rank + 1);
        }
        let sims: HashMap<u64, f64> = match (&qvec, vectors) {
            (Some(q), Some(v)) => self.similarities(q, &v.model, v.dim, fused.keys())?,
            _ => HashMap::new(),
        };
        let lex_max = lexical.iter().map(|x| x.1).fold(0.0f64, f64::max);
        let now = chrono::Utc::now().timestamp_millis();
        let w = &self.weights;
        let files: Vec<String> = req.files.iter().map(|f| f.trim().to_string()).collect();
        let mut scored: Vec<(f64, u64, Explain)> = fused
            .into_iter()
            .map(|(key, (rrf, lr, ls, vr))| {
                let d = &docs[&key];
                let age_days = ((now - d.created_ms).max(0) as f64) / 86_400_000.0;
                let mut e = Explain {
                    lexical: lr.and(lex_name.map(str::to_string)),
                    lexical_rank: lr,
                    lexical_score: ls,
                    vector_rank: vr,
                    rrf,
                    relevance: rrf * (rk + 1.0) / lists,
                    lexical_match: match ls {
                        Some(s) if lex_max > 0.0 => (s / lex_max).clamp(0.0, 1.0),
                        _ => 0.0,
                    },
                    similarity: sims.get(&key).copied().unwrap_or(0.0).clamp(0.0, 1.0),
                    recency: if w.half_life_days > 0.0 {
                        0.5f64.powf(age_days / w.half_life_days)
                    } else {
                        0.0
                    },
                    type_weight: w.type_weights.get(&d.kind).copied().unwrap_or(0.3),
                    files: file_overlap(&files, &d.files),
                    same_project: match (&req.current_project, &d.project) {
                        (Some(c), Some(p)) if c == p => 1.0,
                        _ => 0.0,
                    },
                    score: 0.0,
                };
                e.score = w.relevance * e.relevance
                    + w.lexical * e.lexical_match
                    + w.similarity * e.similarity
                    + w.recency * e.recency
                    + w.kind * e.type_weight
                    + w.files * e.files
                    + w.project * e.same_project;
                (e.score, key, e)
            })
            .collect();
        for s in &mut scored {
            s.0 = (s.0 * 10_000.0).round() / 10_000.0;
        }
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        if let Some(m) = req.min_score {
            scored.retain(|s| s.0 >= m);
        }
        scored.truncate(limit);
        Ok(scored
            .into_iter()
            .enumerate()
            .map(|(i, (score, key, e))| make_hit(&docs[&key], i + 1, score, mode, req, e))
            .collect())
    }

    fn similarities<'a>(
        &self,
        q: &[f32],
        model: &str,
        dim: usize,
        keys: impl Iterator<Item = &'a u64>,
    ) -> Result<HashMap<u64, f64>> {
        let (obs, ses) = crate::index::split_keys(keys);
        let mut out = HashMap::new();
        for (kind, ids) in [("observation", obs), ("session", ses)] {
            if ids.is_empty() {
                continue;
            }
            let mut st = self.conn.prepare(&format!(
                "SELECT owner_id, vector FROM embeddings WHERE owner_kind = ?1 AND model = ?2 AND dim = ?3 AND owner_id IN ({})",
                crate::index::join_ids(&ids)
            ))?;
            let mut rows = st.query(rusqlite::params![kind, model, dim as i64])?;
            while let Some(r) = rows.next()? {
                let id: i64 = r.get(0)?;
                let v = decode(&r.get::<_, Vec<u8>>(1)?);
                out.insert(
                    memkit_core::store::vector_key(kind, id),
                    cosine(q, &v) as f64,
                );
            }
        }
        Ok(out)
    }

    /// SQLite FTS5 over observations, the user's words quoted (no query syntax reaches FTS5).
    fn fts(&self, text: &str, f: &Filters, k: usize) -> Result<Vec<(u64, f64)>> {
        let words = words(text, 32);
        if words.is_empty() {
            return Ok(vec![]);
        }
        let expr = words
            .iter()
            .map(|w| format!("\"{}\"", w.replace('"', "\"\"")))
            .collect::<Vec<_>>()
            .join(" OR ");
        let mut sql = String::from(
            "SELECT o.id, -bm25(observations_fts) FROM observations_fts JOIN observations o ON o.id = observations_fts.rowid WHERE observations_fts MATCH ?1",
        );
        let mut params: Vec<rusqlite::types::Value> = vec![expr.into()];
        let mut push = |sql: &mut String, clause: &str, vals: Vec<String>| {
            let mut marks = Vec::new();
            for v in vals {
                params.push(v.into());
                marks.push(format!("?{}", params.len()));
            }
            sql.push_str(&clause.replace("{}", &marks.join(",")));
        };
        if let Some(ps) = &f.projects {
            if ps.is_empty() {
                return Ok(vec![]);
            }
            push(&mut sql, " AND o.project IN ({})", ps.clone());
        }
        if !f.kinds.is_empty() {
            push(&mut sql, " AND o.type IN ({})", f.kinds.clone());
        }
        if let Some(s) = &f.session {
            push(&mut sql, " AND o.session_id = {}", vec![s.clone()]);
        }
        if let Some(a) = f.after_ms {
            push(&mut sql, " AND o.created_at >= {}", vec![ms_text(a)]);
        }
        if let Some(b) = f.before_ms {
            push(&mut sql, " AND o.created_at <= {}", vec![ms_text(b)]);
        }
        let k = if f.tags.is_empty() { k } else { k * 20 };
        sql.push_str(&format!(" ORDER BY bm25(observations_fts) LIMIT {k}"));
        let mut st = self.conn.prepare(&sql)?;
        let rows = st.query_map(rusqlite::params_from_iter(params), |r| {
            Ok((
                memkit_core::store::vector_key("observation", r.get(0)?),
                r.get::<_, f64>(1)?,
            ))
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}

fn ms_text(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// The distinct words of a query (letters and digits), at most `max`.
pub fn words(text: &str, max: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in text.split(|c: char| !c.is_alphanumeric()) {
        if w.is_empty() || w.chars().count() > 64 {
            continue;
        }
        let w = w.to_lowercase();
        if !out.contains(&w) {
            out.push(w);
            if out.len() == max {
                break;
            }
        }
    }
    out
}

pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() {
        return 0.0;
    }
    let (mut d, mut na, mut nb) = (0f32, 0f32, 0f32);
    for (x, y) in a.iter().zip(b) {
        d += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        d / (na.sqrt() * nb.sqrt())
    }
}

/// Fraction of `working` files that `touched` mentions (suffix match, so relative and
/// absolute paths meet).
pub fn file_overlap(working: &[String], touched: &[String]) -> f64 {
    if working.is_empty() || touched.is_empty() {
        return 0.0;
    }
    let same = |a: &str, b: &str| {
        a == b
            || (a.len() > b.len() && a.ends_with(b) && a[..a.len() - b.len()].ends_with('/'))
            || (b.len() > a.len() && b.ends_with(a) && b[..b.len() - a.len()].ends_with('/'))
    };
    let n = working
        .iter()
        .filter(|w| !w.is_empty() && touched.iter().any(|t| same(t, w)))
        .count();
    n as f64 / working.len() as f64
}

/// BM25 candidates from tantivy: the query's analysed terms over every text field (no query
/// syntax: user text never reaches a parser), with the filters as required clauses.
fn bm25_search(b: &Bm25, text: &str, f: &Filters, k: usize) -> Result<Vec<(u64, f64)>> {
    let fields = &b.fields;
    let mut analyzer = b.analyzer()?;
    let mut terms: Vec<String> = Vec::new();
    let mut stream = analyzer.token_stream(text);
    while let Some(t) = stream.next() {
        if !terms.contains(&t.text) {
            terms.push(t.text.clone());
            if terms.len() == 32 {
                break;
            }
        }
    }
    if terms.is_empty() {
        return Ok(vec![]);
    }
    let mut should: Vec<(Occur, Box<dyn Query>)> = Vec::new();
    for (field, (_, boost)) in fields.text.iter().zip(TEXT_FIELDS) {
        for t in &terms {
            let q = TermQuery::new(
                Term::from_field_text(*field, t),
                IndexRecordOption::WithFreqs,
            );
            should.push((
                Occur::Should,
                Box::new(BoostQuery::new(Box::new(q), *boost)),
            ));
        }
    }
    let mut must: Vec<(Occur, Box<dyn Query>)> =
        vec![(Occur::Must, Box::new(BooleanQuery::new(should)))];
    let any_of = |field, vals: &[String]| -> Box<dyn Query> {
        Box::new(BooleanQuery::new(
            vals.iter()
                .map(|v| {
                    (
                        Occur::Should,
                        Box::new(TermQuery::new(
                            Term::from_field_text(field, v),
                            IndexRecordOption::Basic,
                        )) as Box<dyn Query>,
                    )
                })
                .collect(),
        ))
    };
    if let Some(ps) = &f.projects {
        if ps.is_empty() {
            return Ok(vec![]);
        }
        must.push((Occur::Must, any_of(fields.project, ps)));
    }
    if !f.kinds.is_empty() {
        must.push((Occur::Must, any_of(fields.kind, &f.kinds)));
    }
    if !f.tags.is_empty() {
        must.push((Occur::Must, any_of(fields.tag, &f.tags)));
    }
    if let Some(s) = &f.session {
        must.push((Occur::Must, any_of(fields.session, std::slice::from_ref(s))));
    }
    if f.after_ms.is_some() || f.before_ms.is_some() {
        let lo = f
            .after_ms
            .map(|a| Bound::Included(Term::from_field_i64(fields.created, a)))
            .unwrap_or(Bound::Unbounded);
        let hi = f
            .before_ms
            .map(|a| Bound::Included(Term::from_field_i64(fields.created, a)))
            .unwrap_or(Bound::Unbounded);
        must.push((Occur::Must, Box::new(RangeQuery::new(lo, hi))));
    }
    let query = BooleanQuery::new(must);
    let searcher = b.reader.searcher();
    let top = searcher
        .search(&query, &TopDocs::with_limit(k).order_by_score())
        .map_err(|e| crate::index::index_err("bm25 search", e))?;
    let mut out = Vec::with_capacity(top.len());
    for (score, addr) in top {
        let col = searcher
            .segment_reader(addr.segment_ord)
            .fast_fields()
            .u64("key")
            .map_err(|e| crate::index::index_err("bm25 key", e))?;
        if let Some(key) = col.first(addr.doc_id) {
            out.push((key, score as f64));
        }
    }
    Ok(out)
}

fn one_line(s: &str, max: usize) -> String {
    let line = s
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    if line.chars().count() > max {
        let mut t: String = line.chars().take(max - 1).collect();
        t.push('…');
        t
    } else {
        line.to_string()
    }
}

fn make_hit(d: &Doc, rank: usize, score: f64, mode: &str, req: &Request, e: Explain) -> Hit {
    let other = match (&req.current_project, &d.project) {
        (Some(c), Some(p)) => c != p,
        (Some(_), None) => true,
        _ => false,
    };
    let full = !req.probe;
    Hit {
        v: memkit_core::record::VERSION,
        query_id: None,
        rank,
        id: d.id,
        source: d.source.to_string(),
        score,
        mode: mode.to_string(),
        project: d.project.clone(),
        project_name: d.project.as_deref().map(memkit_core::project::name_of),
        other_project: other,
        kind: d.kind.clone(),
        title: d.title.clone(),
        line: req.probe.then(|| one_line(&d.summary, 120)),
        session_id: if full { d.session_id.clone() } else { None },
        summary: full.then(|| d.summary.clone()),
        detail: if full && !d.detail.is_empty() {
            Some(d.detail.clone())
        } else {
            None
        },
        facts: full.then(|| d.facts.clone()),
        concepts: full.then(|| d.concepts.clone()),
        tags: full.then(|| d.tags.clone()),
        files: full.then(|| d.files.clone()),
        created_at: ms_text(d.created_ms),
        explain: req.explain.then_some(e),
    }
}
