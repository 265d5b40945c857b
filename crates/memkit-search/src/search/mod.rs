//! Hybrid retrieval: BM25 (tantivy) and vector (index::flat) candidates fused with reciprocal rank
//! fusion, then re-ranked by relevance, similarity, recency, type, file overlap and project.
//! Degrades in order: no query vector or no vector index → BM25 only; no tantivy index →
//! SQLite FTS5. The mode used is in every hit.
//!
//! Query vectors come from `embedding_cache` (model, dim, sha256 hex of the query text that
//! [`crate::embed::query_text`] makes from the model's manifest) without loading a model; a
//! [`crate::embed::QueryEmbedder`] (`embed::QueryModel`, see [`Searcher::use_installed_model`]) embeds
//! uncached queries, and the vector is cached for the next identical query.

pub mod batch;
pub mod bm25;
pub mod filters;
pub mod fusion;
pub mod rerank;
pub mod time;

pub use fusion::{Weights, file_overlap};
pub use memkit_core::record::Explain;
pub use memkit_core::store::filters::Filters;
use std::collections::{HashMap, HashSet};
use std::path::Path;

use rusqlite::Connection;
use tantivy::Term;

use crate::index::bm25::Bm25;
use crate::index::vectors::{EXACT_MAX, Vectors};
use crate::index::{Doc, Layout, State, VectorState};
use memkit_core::config::{self, Config};
use memkit_core::record::Hit;
use memkit_core::{Error, Result};

/// Most hits one search returns: a larger limit is capped.
pub const MAX_LIMIT: usize = 10_000;

/// How many candidates each retriever hands to fusion, whatever the limit (a larger limit
/// asks for that many): a fusion fed shorter lists ranks its top worse, and the first hits
/// must not depend on how many were asked for. 100 keeps hybrid well inside its latency budget.
pub const FUSION_DEPTH: usize = 100;

/// Record keys with an arm's score, best first.
type Scored = Vec<(u64, f64)>;

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

/// Parses an `--after`/`--before` bound: an ISO date (the whole day, UTC) or datetime
/// (RFC 3339, or without zone = UTC). Returns inclusive epoch milliseconds.
pub fn parse_bound(s: &str, before: bool) -> Result<i64> {
    use memkit_core::store::{DATE_HINT, parse_instant};
    let bad = || Error::Usage(format!("invalid date {:?}: {DATE_HINT}", s.trim()));
    let (t, day) = parse_instant(s).ok_or_else(bad)?;
    Ok(if day && before {
        // The whole day: up to its last millisecond.
        (t + chrono::Duration::days(1)).timestamp_millis() - 1
    } else {
        t.timestamp_millis()
    })
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
    /// Reorder the best fused candidates with the searcher's reranker (when it has one).
    pub rerank: bool,
}

/// A search as the user asks for it (flags, or a line of `--batch`): names and bounds as typed,
/// turned into a [`Request`] by [`Searcher::request`].
#[derive(Debug, Clone, Default)]
pub struct Query {
    pub text: String,
    /// A project by path or name (the current one when no project option is given).
    pub project: Option<String>,
    pub projects: Vec<String>,
    pub all_projects: bool,
    pub kinds: Vec<String>,
    pub tags: Vec<String>,
    /// Date bounds as typed (`2026-11-01`, `3d`, …).
    pub after: Option<String>,
    pub before: Option<String>,
    pub session: Option<String>,
    /// Working files; `None`: ask the caller's `working_files`.
    pub files: Option<Vec<String>>,
    /// 0 = the default (10).
    pub limit: usize,
    pub min_score: Option<f64>,
    pub probe: bool,
    pub explain: bool,
    pub engine: Engine,
}

/// Where a search is made from: the current directory's project, and the files changed in its
/// git working tree (asked once, and only when a query needs them; none when
/// `search_git_files` is 0).
#[derive(Debug, Clone)]
pub struct Here {
    pub project: Option<String>,
    git_files: Option<Vec<String>>,
    use_git: bool,
}

impl Here {
    pub fn new(cfg: &Config) -> Here {
        use memkit_core::project;
        Here {
            project: project::current_dir().map(|d| project::identify(&d).root),
            git_files: None,
            use_git: config::SEARCH_GIT_FILES.get(cfg),
        }
    }

    pub fn files(&mut self) -> Vec<String> {
        if !self.use_git {
            return vec![];
        }
        self.git_files
            .get_or_insert_with(|| {
                std::env::current_dir()
                    .map(|d| memkit_core::project::changed_files(&d))
                    .unwrap_or_default()
            })
            .clone()
    }
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
    pub embedder: Option<Box<dyn crate::embed::QueryEmbedder>>,
    /// Why the embedder failed (the search went on without a query vector).
    pub embed_error: std::cell::RefCell<Option<String>>,
    /// The configured embedding model (name or directory), looked at first for manifests.
    model_hint: Option<String>,
    /// The installed model of the vector index, when there is one.
    index_model: std::cell::OnceCell<Option<(std::path::PathBuf, crate::embed::Manifest)>>,
    /// `search_similarity_floor`, over the model's own.
    floor_setting: Option<f64>,
    /// The moment ranked as of (epoch ms; `None` = the clock's now).
    pub now_ms: Option<i64>,
    /// The second stage, when asked for ([`Searcher::use_reranker`]).
    reranker: Option<rerank::Stage>,
    /// The last query's vector came from its words' vectors ([`crate::embed::words`]), whose
    /// cosines have a floor of their own.
    from_words: std::cell::Cell<bool>,
}

impl Searcher {
    /// Checks `q` and resolves what it names (projects, tags, date bounds) into a request:
    /// a usage error for an empty query, an unknown type or a bad bound. `current` is the
    /// project searched when `q` names none; `working_files` is asked only when `q` has no files.
    pub fn request(
        &self,
        q: Query,
        current: Option<String>,
        working_files: impl FnOnce() -> Vec<String>,
    ) -> Result<Request> {
        let Query {
            text,
            project,
            projects,
            all_projects,
            kinds,
            tags,
            after,
            before,
            session,
            files,
            limit,
            min_score,
            probe,
            explain,
            engine,
        } = q;
        if text.trim().is_empty() {
            return Err(Error::Usage(
                "empty query: give some words to look for".into(),
            ));
        }
        if min_score.is_some_and(|m| !m.is_finite()) {
            return Err(Error::Usage("min_score: not a finite number".into()));
        }
        let kinds: Vec<String> = kinds.into_iter().map(|k| k.trim().to_lowercase()).collect();
        for k in &kinds {
            if !memkit_core::record::OBSERVATION_TYPES.contains(&k.as_str())
                && k != "session"
                && k != "learning"
            {
                return Err(Error::Usage(format!(
                    "unknown type {k:?}: use {}, session or learning",
                    memkit_core::record::OBSERVATION_TYPES.join(", ")
                )));
            }
        }
        let projects_filter = if all_projects {
            None
        } else if !projects.is_empty() {
            let mut all = Vec::new();
            for p in &projects {
                all.extend(memkit_core::store::projects::resolve(&self.conn, p)?);
            }
            Some(all)
        } else if let Some(p) = &project {
            Some(memkit_core::store::projects::resolve(&self.conn, p)?)
        } else {
            Some(current.iter().cloned().collect())
        };
        let after_ms = after
            .as_deref()
            .map(|a| parse_bound(a, false))
            .transpose()?;
        let before_ms = before
            .as_deref()
            .map(|b| parse_bound(b, true))
            .transpose()?;
        let files = match files {
            Some(f) => f,
            None => working_files(),
        };
        Ok(Request {
            text,
            filters: Filters {
                projects: projects_filter,
                kinds,
                tags: self.expand_tags(&tags)?,
                after_ms,
                before_ms,
                // `s4`, as mem-report and the blocks print sessions, or a session id.
                session: session
                    .map(|s| memkit_core::store::sessions::id_of(&self.conn, &s))
                    .transpose()?,
            },
            limit: if limit == 0 { 10 } else { limit },
            min_score,
            files,
            current_project: current,
            engine,
            probe,
            explain,
            rerank: self.reranker.is_some(),
        })
    }

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
        let want_dim = config::SEARCH_DIM.get(cfg)?;
        let vector_state = state.as_ref().and_then(|s| {
            let want_model = config::SEARCH_MODEL.get(cfg);
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
            model_hint: config::EMBED_MODEL.get(cfg),
            index_model: std::cell::OnceCell::new(),
            floor_setting: config::SEARCH_SIMILARITY_FLOOR.get(cfg)?,
            now_ms: None,
            reranker: None,
            from_words: std::cell::Cell::new(false),
        })
    }

    fn bm25_params(&self) -> bm25::Params {
        bm25::Params {
            k1: self.weights.bm25_k1 as f32,
            b: self.weights.bm25_b as f32,
        }
    }

    /// The vector index, memory-mapped on first use; `None` when missing or unreadable.
    pub fn vectors(&self) -> Option<&Vectors> {
        self.vectors
            .get_or_init(|| {
                let v = self.vector_state.as_ref()?;
                Vectors::view(&self.layout.dir, v).ok()
            })
            .as_ref()
    }

    /// (records with a vector in the vector index searched, records indexed): less than all
    /// while a backlog is being embedded. None without a vector index.
    pub fn vector_coverage(&self) -> Option<(u64, u64)> {
        let v = self.vector_state.as_ref()?;
        let docs = self.state.as_ref()?.docs;
        Some((v.count.min(docs), docs))
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

    /// The cosine a vector-only hit must reach: the setting, else the index model's manifest.
    /// Else the higher of the model's floor and the one mem-embed measured on this database.
    pub fn similarity_floor(&self) -> Option<f64> {
        if self.from_words.get() {
            let v = self.vector_state.as_ref()?;
            if let Ok(Some(f)) = crate::embed::words::floor(&self.conn, &v.model, v.dim) {
                return Some(f);
            }
        }
        if self.floor_setting.is_some() {
            return self.floor_setting;
        }
        let model = self
            .index_model()
            .and_then(|m| m.1.similarity_floor)
            .map(f64::from);
        let measured = self.measured(crate::embed::store::floor_key);
        match (model, measured) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }

    /// Whether the model finds this database's records from their own titles (the share
    /// mem-embed measured with the floor, `embed::store::sense_key`, at least
    /// [`fusion::SENSE_TRUSTED`]): then its arm votes in full for every query.
    fn vectors_make_sense(&self) -> bool {
        self.measured(crate::embed::store::sense_key)
            .is_some_and(|found| found >= fusion::SENSE_TRUSTED)
    }

    /// What mem-embed measured for the vector index's model on this database, under the
    /// `meta` key `key` makes ("<figure> <records then>").
    fn measured(&self, key: fn(&str, usize) -> String) -> Option<f64> {
        let v = self.vector_state.as_ref()?;
        memkit_core::store::meta_get(&self.conn, &key(&v.model, v.dim))
            .ok()
            .flatten()?
            .split_whitespace()
            .next()?
            .parse()
            .ok()
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

    /// Reranks the requests [`Searcher::request`] makes from now on with `stage`.
    pub fn use_reranker(&mut self, stage: rerank::Stage) {
        self.reranker = Some(stage);
    }

    /// Why the reranker failed since this was last asked (those searches kept the fused order).
    pub fn take_rerank_error(&self) -> Option<String> {
        self.reranker.as_ref()?.error.borrow_mut().take()
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

    /// The query vector for the open vector index: cached or embedded by the model, else (a
    /// process without the model, such as a hook) the sum of its words' vectors.
    pub fn query_vector(&self, query: &str) -> Result<Option<Vec<f32>>> {
        let Some(v) = &self.vector_state else {
            return Ok(None);
        };
        let full = self.doc_vector(&v.model, v.dim, &self.query_text(query))?;
        self.from_words.set(false);
        if full.is_some() {
            return Ok(full);
        }
        let words = crate::embed::words::query_vector(&self.conn, &v.model, v.dim, query)?;
        self.from_words.set(words.is_some());
        Ok(words)
    }

    /// Every known tag (from the index state, else the database).
    pub fn known_tags(&self) -> Result<Vec<String>> {
        if let Some(s) = &self.state {
            return Ok(s.tags.clone());
        }
        memkit_core::store::observations::distinct_tags(&self.conn)
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
                    if vecs.get(k.as_str()).is_some_and(|vk| {
                        crate::text::cosine(tv, vk) >= self.weights.tag_similarity
                    }) {
                        add(k, &mut out);
                    }
                }
            }
        }
        Ok(out)
    }

    /// Runs one search; hits best first, each carrying the mode used. Three steps: the
    /// candidates of each retriever (filtered by the database), their fusion (RRF), then the
    /// ranking by the weighted score.
    pub fn search(&self, req: &Request) -> Result<Vec<Hit>> {
        if req.text.trim().is_empty() {
            return Err(Error::Usage("empty query".into()));
        }
        let limit = req.limit.clamp(1, MAX_LIMIT);
        let mut c = self.candidates(req, limit)?;
        let floor = (req.engine != Engine::Vector && !c.vector.is_empty())
            .then(|| self.similarity_floor())
            .flatten();
        // Unless mem-embed found the model means something on this database, a query whose
        // best cosine is no better than what nonsense reaches has a vector list that is noise
        // to fusion (see fusion).
        let vector_weight = if floor.is_some() && !self.vectors_make_sense() {
            fusion::vector_weight(c.vector.first().map(|x| x.1), floor)
        } else {
            1.0
        };
        // Any record is some vector's nearest neighbour: one that only the vector arm found is
        // a hit when it is similar enough to mean something, so nonsense finds nothing. (Not
        // with --engine vector: that is the raw arm, for evaluation.)
        if let Some(floor) = floor {
            let lexical: HashSet<u64> = c.lexical.iter().map(|x| x.0).collect();
            c.vector.retain(|(k, s)| *s >= floor || lexical.contains(k));
        }
        // The vector index is opened only when there is a query vector (BM25 alone never maps it).
        // The vector arm's own candidates come with their similarity; only the others' vectors
        // are read from the database.
        let sims: HashMap<u64, f64> = match &c.query_vector {
            Some(q) => match self.vectors() {
                Some(v) => {
                    let mut sims: HashMap<u64, f64> = c.vector.iter().copied().collect();
                    match &c.lexical_sims {
                        // The scan sought every lexical candidate: one it did not find has no
                        // vector. Sought again, every row's key would be read (at a million
                        // 1024-dim rows, the whole 134 MB index in the hook's memory, for
                        // sessions without vectors).
                        Some(found) => {
                            for (k, s) in found {
                                sims.entry(*k).or_insert(*s);
                            }
                        }
                        None => {
                            let rest: Vec<u64> = c
                                .lexical
                                .iter()
                                .map(|x| x.0)
                                .filter(|k| !sims.contains_key(k))
                                .collect();
                            // From the index's own vectors: a read of each from the database
                            // cost more than the scan that finds them.
                            sims.extend(v.similarities(q, &rest)?);
                        }
                    }
                    sims
                }
                None => HashMap::new(),
            },
            None => HashMap::new(),
        };
        // Lexical candidates the vector index has no vector for yet (a backlog being embedded,
        // newest first): see fusion::keep_places. Measured with MiniLM on the dev sets, a store
        // with vectors for its newest half ranked at nDCG@10 .35 on locomo-dev and .02 on
        // musique-mini where BM25 alone made .49 and .75: the records with vectors took every
        // top place. Keeping the places: .49 and .75, and above BM25 from three quarters on.
        let unembedded: HashSet<u64> = match &c.query_vector {
            Some(_) => c
                .lexical
                .iter()
                .map(|x| x.0)
                .filter(|k| !sims.contains_key(k))
                .collect(),
            None => HashSet::new(),
        };
        // An arm without weight finds nothing either: its own candidates are left out.
        if vector_weight == 0.0 {
            c.vector.clear();
        }
        // Each arm's share follows how far its top stands out (see fusion::arm_shares).
        let (lexical_weight, vector_share) = fusion::arm_shares(
            &c.lexical.iter().map(|x| x.1).collect::<Vec<_>>(),
            &c.vector.iter().map(|x| x.1).collect::<Vec<_>>(),
        );
        let vector_weight = vector_weight * vector_share;
        let fused = fusion::fuse(
            &c.lexical,
            &c.vector,
            self.weights.rrf_k,
            lexical_weight,
            vector_weight,
        );
        let now_ms = self
            .now_ms
            .unwrap_or_else(|| chrono::Utc::now().timestamp_millis());
        let signals = fusion::Signals {
            lex_name: c.lex_name,
            lists: (if c.lexical.is_empty() {
                0.0
            } else {
                lexical_weight
            } + if c.vector.is_empty() {
                0.0
            } else {
                vector_weight
            })
            .max(1.0),
            lexical_weight,
            vector_weight,
            lex_min: c.lexical.iter().map(|x| x.1).fold(f64::MAX, f64::min),
            lex_max: c.lexical.iter().map(|x| x.1).fold(0.0f64, f64::max),
            sim_max: sims.values().copied().fold(0.0f64, f64::max),
            sims,
            now_ms,
            files: req.files.iter().map(|f| f.trim().to_string()).collect(),
            current_project: req.current_project.clone(),
            asked: time::asked(&req.text, now_ms),
        };
        let mut scored = fusion::rank(fused, &c.docs, &signals, &self.weights);
        if !unembedded.is_empty() {
            let places = self.lexical_ranking(&c, req, now_ms);
            scored = fusion::keep_places(&places, scored, &unembedded);
        }
        if req.explain
            && c.query_vector.is_some()
            && let Some((with, of)) = self.vector_coverage().filter(|(w, of)| w < of)
        {
            let share = (with as f64 / of.max(1) as f64 * 10_000.0).round() / 10_000.0;
            for s in &mut scored {
                s.2.vectors = Some(share);
            }
        }
        if let Some(m) = req.min_score {
            scored.retain(|s| s.0 >= m);
        }
        // The candidates' observations were read brief: those reranked or shown are read
        // whole (sessions and learnings were read whole already).
        let stage = self.reranker.as_ref().filter(|_| req.rerank);
        let shown = limit.max(stage.map_or(0, |s| s.depth));
        let whole: Vec<u64> = scored
            .iter()
            .take(shown)
            .map(|s| s.1)
            .filter(|k| c.docs[k].source == "observation")
            .collect();
        for d in crate::index::load_docs(&self.conn, &whole)? {
            c.docs.insert(d.key, d);
        }
        if let Some(stage) = stage {
            rerank::apply(stage, &req.text, &mut scored, &c.docs);
        }
        scored.truncate(limit);
        Ok(scored
            .into_iter()
            .enumerate()
            .map(|(i, (score, key, e))| make_hit(&c.docs[&key], i + 1, score, c.mode, req, e))
            .collect())
    }

    /// The keys of the ranking the lexical candidates alone make (what `--engine bm25` gives),
    /// best first: the places records without a vector keep ([`fusion::keep_places`]).
    fn lexical_ranking(&self, c: &Candidates, req: &Request, now_ms: i64) -> Vec<u64> {
        let only = fusion::fuse(&c.lexical, &[], self.weights.rrf_k, 1.0, 0.0);
        let sig = fusion::Signals {
            lex_name: c.lex_name,
            lists: 1.0,
            lexical_weight: 1.0,
            vector_weight: 1.0,
            lex_min: c.lexical.iter().map(|x| x.1).fold(f64::MAX, f64::min),
            lex_max: c.lexical.iter().map(|x| x.1).fold(0.0f64, f64::max),
            sim_max: 0.0,
            sims: HashMap::new(),
            now_ms,
            files: req.files.iter().map(|f| f.trim().to_string()).collect(),
            current_project: req.current_project.clone(),
            asked: time::asked(&req.text, now_ms),
        };
        fusion::rank(only, &c.docs, &sig, &self.weights)
            .into_iter()
            .map(|x| x.1)
            .collect()
    }

    /// Each retriever's candidates, best first, keeping only records that exist and pass the
    /// filters (the database decides both).
    fn candidates(&self, req: &Request, limit: usize) -> Result<Candidates> {
        let k = limit.max(FUSION_DEPTH);
        let qvec = match req.engine {
            Engine::Auto | Engine::Vector => self.query_vector(&req.text)?,
            _ => None,
        };
        // Read once: the lexical list and the vector arm's filter both need them.
        let learned = if req.engine != Engine::Vector || req.filters.restricts() {
            req.filters.learnings(&self.conn)?
        } else {
            Vec::new()
        };
        let vectors = if qvec.is_some() { self.vectors() } else { None };
        let allowed = match vectors {
            Some(_) => filters::keys(&req.filters, &self.conn, &learned, self.bm25.as_ref())?,
            None => None,
        };
        // A narrow filter, or a small index, is compared whole: exact, and the same whatever
        // order the rows were written in.
        let few: Option<Vec<u64>> = vectors.and_then(|v| match &allowed {
            Some(a) if a.len() <= EXACT_MAX => Some(a.iter().collect()),
            None if v.size() <= EXACT_MAX => v.keys(),
            _ => None,
        });
        // (Not on a second thread: measured, the thread's own arena and the TLB shootdowns
        // of its unmaps cost more than the scan it would overlap.)
        let (lexical, lex_name) = self.lexical(req, k, &learned)?;
        // The lexical candidates' similarities come from the scan that finds the vector arm's.
        let mut lexical_sims = None;
        let vector: Scored = match (&qvec, vectors, few) {
            (Some(q), Some(v), Some(keys)) => {
                let mut out: Scored = self
                    .similarities(q, &v.model, v.dim, keys.iter())?
                    .into_iter()
                    .collect();
                out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
                out.truncate(k);
                out
            }
            (Some(q), Some(v), None) => {
                let also: HashSet<u64> = lexical.iter().map(|x| x.0).collect();
                let (top, sims) = v.search_and(q, k, allowed.as_ref(), &also)?;
                lexical_sims = Some(sims);
                top.into_iter().map(|(k, s)| (k, s as f64)).collect()
            }
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
        let mut keys: Vec<u64> = lexical.iter().chain(vector.iter()).map(|x| x.0).collect();
        keys.sort_unstable();
        keys.dedup();
        let docs: HashMap<u64, Doc> = crate::index::load_briefs(&self.conn, &keys)?
            .into_iter()
            .filter(|d| filters::passes(&req.filters, d))
            .map(|d| (d.key, d))
            .collect();
        let lexical = lexical
            .into_iter()
            .filter(|x| docs.contains_key(&x.0))
            .collect();
        let vector = vector
            .into_iter()
            .filter(|x| docs.contains_key(&x.0))
            .collect();
        Ok(Candidates {
            lexical,
            vector,
            lexical_sims,
            lex_name,
            query_vector: qvec.filter(|_| vectors.is_some()),
            mode,
            docs,
        })
    }

    /// The lexical arm's candidates, best first: BM25 (or FTS5 without the index), with the
    /// learnings that pass merged in by their textbook BM25 score.
    fn lexical(
        &self,
        req: &Request,
        k: usize,
        learned: &[memkit_core::store::learnings::Learning],
    ) -> Result<(Scored, Option<&'static str>)> {
        let (mut lexical, lex_name): (Scored, Option<&'static str>) = match req.engine {
            Engine::Vector => return Ok((vec![], None)),
            Engine::Fts => (self.fts(&req.text, &req.filters, k)?, Some("fts")),
            _ => match &self.bm25 {
                Some(b) => (
                    bm25_search(b, &req.text, &req.filters, k, self.bm25_params())?,
                    Some("bm25"),
                ),
                None => (self.fts(&req.text, &req.filters, k)?, Some("fts")),
            },
        };
        // Learnings are few: the textbook BM25 over those that pass ranks them, merged into the
        // lexical list by score.
        if !learned.is_empty() {
            let ix = crate::textbook::Index::new(learned.iter().map(|l| {
                (
                    memkit_core::store::vector_key("learning", l.id).to_string(),
                    l.content.clone(),
                )
            }));
            lexical.extend(
                ix.search(&req.text)
                    .into_iter()
                    .take(k)
                    .filter_map(|(key, score)| Some((key.parse().ok()?, score))),
            );
            lexical.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        }
        Ok((lexical, lex_name))
    }

    fn similarities<'a>(
        &self,
        q: &[f32],
        model: &str,
        dim: usize,
        keys: impl Iterator<Item = &'a u64>,
    ) -> Result<HashMap<u64, f64>> {
        let keys: Vec<&u64> = keys.collect();
        let (obs, ses) = crate::index::split_keys(keys.iter().copied());
        let mut out = HashMap::new();
        let learned = crate::index::learning_ids(keys.iter().copied());
        for (kind, ids) in [
            ("observation", obs),
            ("session", ses),
            ("learning", learned),
        ] {
            if ids.is_empty() {
                continue;
            }
            for (id, v) in
                memkit_core::store::embeddings::of_owners(&self.conn, kind, &ids, model, dim)?
            {
                if let Some(best) = crate::text::best_window(q, &v) {
                    out.insert(memkit_core::store::vector_key(kind, id), best as f64);
                }
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
        let k = if f.tags.is_empty() { k } else { k * 20 };
        Ok(
            memkit_core::store::observations::fts(&self.conn, &expr, f, k)?
                .into_iter()
                .map(|(id, score)| (memkit_core::store::vector_key("observation", id), score))
                .collect(),
        )
    }
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

/// What the retrievers found for one request.
struct Candidates {
    /// (key, BM25 or FTS5 score), best first.
    lexical: Vec<(u64, f64)>,
    /// (key, cosine similarity), best first.
    vector: Vec<(u64, f64)>,
    /// The cosine of the lexical candidates the index's scan compared on the way, when that
    /// scan sought every one of them (those it did not find have no vector).
    lexical_sims: Option<HashMap<u64, f64>>,
    /// `bm25` or `fts`; `None` when only vectors were asked for.
    lex_name: Option<&'static str>,
    /// The query's vector, when a vector index can use it.
    query_vector: Option<Vec<f32>>,
    mode: &'static str,
    /// The records that exist and pass the filters, by key.
    docs: HashMap<u64, Doc>,
}

/// The distinct terms `field`'s analyser makes of `text` (at most 32). A word the query repeats
/// counts once, as in FTS5: counting it again measured worse on both development sets (queries
/// repeat their function words, "what … what").
fn query_terms(b: &Bm25, field: tantivy::schema::Field, text: &str) -> Result<Vec<Term>> {
    let mut analyzer = b.analyzer_of(field)?;
    let mut terms: Vec<Term> = Vec::new();
    let mut stream = analyzer.token_stream(text);
    while let Some(t) = stream.next() {
        let term = Term::from_field_text(field, &t.text);
        if !terms.contains(&term) && terms.len() < 32 {
            terms.push(term);
        }
    }
    Ok(terms)
}

/// BM25 candidates from tantivy: the query's analysed terms, OR-ed, scored by [`bm25`] over the
/// searchable fields (no query syntax: user text never reaches a parser), among the records the
/// filters let through.
fn bm25_search(
    b: &Bm25,
    text: &str,
    f: &Filters,
    k: usize,
    params: bm25::Params,
) -> Result<Vec<(u64, f64)>> {
    let fields = &b.fields;
    let mut lexical = Vec::new();
    for field in [fields.text, fields.exact] {
        let terms = query_terms(b, field, text)?;
        if !terms.is_empty() {
            lexical.push(bm25::Bm25Query { terms, params });
        }
    }
    if lexical.is_empty() {
        return Ok(vec![]);
    }
    let Some(filter) = filters::bm25_filter(b, f) else {
        return Ok(vec![]);
    };
    let searcher = b.reader.searcher();
    // Equal scores go to the smaller key, whatever segment a record landed in: the same
    // records come back after a rebuild.
    let top = bm25::top_k(&searcher, &lexical, filter.as_deref(), "key", k)
        .map_err(|e| crate::index::index_err("bm25 search", e))?;
    Ok(top
        .into_iter()
        .filter(|(_, key)| *key != u64::MAX)
        .map(|(score, key)| (key, score as f64))
        .collect())
}

fn one_line(s: &str, max: usize) -> String {
    let line = s
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    memkit_core::clip(line, max)
}

fn make_hit(d: &Doc, rank: usize, score: f64, mode: &str, req: &Request, e: Explain) -> Hit {
    // Another project than the one asked for (--project) or, when every project is searched,
    // than the current one.
    let other = match (&req.filters.projects, &req.current_project, &d.project) {
        (Some(ps), _, Some(p)) if !ps.is_empty() => !ps.contains(p),
        (Some(ps), _, None) if !ps.is_empty() => true,
        (_, Some(c), Some(p)) => c != p,
        (_, Some(_), None) => true,
        _ => false,
    };
    let full = !req.probe;
    Hit {
        query_id: None,
        rank,
        id: d.id,
        source: d.source.to_string(),
        handle: if d.source == "session" {
            memkit_core::ids::session(d.id)
        } else {
            memkit_core::ids::obs(d.id)
        },
        score,
        mode: mode.to_string(),
        project: d.project.clone(),
        project_name: d.project.as_deref().map(memkit_core::project::name_of),
        other_project: other,
        kind: d.kind.clone(),
        title: d.title.clone(),
        external_id: d.external_id.clone(),
        origin: d.origin.clone(),
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
        created_at: memkit_core::store::ms_text(d.created_ms),
        explain: req.explain.then_some(e),
    }
}
