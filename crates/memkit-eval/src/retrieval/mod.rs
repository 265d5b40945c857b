//! `mem-eval retrieval`: a set's corpus goes into a scratch memory the way a user brings notes
//! (one note per record, its id kept, its scope as the project), through compression, embedding
//! and indexing; each query then searches its own scope with each retriever, and the rankings
//! are scored beside the textbook BM25's over the same text.

pub mod data;
pub mod metrics;
pub use memkit_search::textbook;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;

use memkit_core::config::Config;
use memkit_core::project::Project;
use memkit_core::store;
use memkit_core::{Error, Result};
use memkit_search::index;
use memkit_search::search::{Engine, Filters, Request, Searcher};

pub use data::Set;
use metrics::Means;

/// The retrievers `--mode` names: memkit's four, hybrid reordered by a cross-encoder, and the
/// textbook baseline.
pub const MODES: &[&str] = &["textbook", "fts", "bm25", "vector", "hybrid", RERANKED];

/// Hybrid search with the rerank stage ([`Options::reranker`]).
pub const RERANKED: &str = "hybrid+rerank";

pub struct Options {
    pub modes: Vec<String>,
    /// The embedding model (name or directory) for the vector and hybrid modes.
    pub model: String,
    pub ks: Vec<usize>,
    /// Where scratch memories and the shared embedding cache live.
    pub work: PathBuf,
    /// Keep the scratch memory (its path is reported) instead of deleting it.
    pub keep: bool,
    /// Hits asked for per query (MRR sees this deep).
    pub depth: usize,
    /// The cross-encoder (name or directory) and its depth for the `hybrid+rerank` mode.
    pub reranker: Option<(String, usize)>,
    /// The share of the records (0..=1) given vectors, the newest first, as a backlog worked
    /// newest first leaves a store; `None`: all of them.
    pub vectors: Option<f64>,
}

/// One retriever's figures on one set (`"type":"eval"`).
#[derive(Debug, Clone, Serialize)]
#[serde(remote = "Self")]
pub struct Report {
    pub set: String,
    pub mode: String,
    /// Queries with at least one relevant document (the others are not scored).
    pub queries: usize,
    #[serde(flatten)]
    pub metrics: BTreeMap<String, f64>,
    /// Median search time per query, milliseconds.
    pub p50_ms: f64,
    /// Queries whose hits came from another retriever than asked (e.g. no vector: BM25).
    #[serde(skip_serializing_if = "is_zero")]
    pub degraded: usize,
    pub by_category: BTreeMap<String, BTreeMap<String, f64>>,
    /// What of a user's search this mode does not measure (memkit's modes run the search a
    /// `mem-search --project SCOPE` of a `mem-capture --notes` import runs, priors included).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leaves_out: Option<&'static str>,
    /// The share of the records with a vector, when not all (`--vectors`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vectors: Option<f64>,
}
memkit_core::record!(Report = "eval");

/// What memkit's modes leave out of a user's search: the working tree is no user's here.
pub const LEAVES_OUT: &str = "the working tree's changed files (the --files prior)";

impl Report {
    /// The report as table rows: one for all queries, then one per category, each with the
    /// mode's figures (`category` names the row).
    pub fn rows(&self) -> Vec<serde_json::Value> {
        let mut all = serde_json::to_value(self).unwrap_or_default();
        if let Some(o) = all.as_object_mut() {
            o.remove("by_category");
            o.insert("category".into(), "all".into());
        }
        let mut out = vec![all];
        for (c, m) in &self.by_category {
            let mut row = serde_json::json!({
                "set": self.set, "mode": self.mode, "category": c,
                "queries": m.get("queries").copied().unwrap_or(0.0) as usize,
            });
            for (k, v) in m.iter().filter(|(k, _)| *k != "queries") {
                row[k] = serde_json::json!(v);
            }
            out.push(row);
        }
        out
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// One query's ranking: doc ids, best first, with scores.
pub type Ranking = Vec<(String, f64)>;

/// What a run made: the reports, and each mode's rankings by qid (for `--run`).
pub struct Outcome {
    pub reports: Vec<Report>,
    pub runs: Vec<(String, Vec<(String, Ranking)>)>,
    /// The scratch memory, when kept.
    pub home: Option<PathBuf>,
}

/// Progress of the long steps: (step, done, total).
pub type Progress<'a> = &'a mut dyn FnMut(&str, usize, usize);

pub fn run(set: &Set, opts: &Options, progress: Progress) -> Result<Outcome> {
    for m in &opts.modes {
        if !MODES.contains(&m.as_str()) {
            return Err(Error::Usage(format!(
                "unknown mode {m:?}: use {}",
                MODES.join(", ")
            )));
        }
    }
    check_scopes(set)?;
    let mut out = Outcome {
        reports: Vec::new(),
        runs: Vec::new(),
        home: None,
    };
    let mut memory: Option<Memory> = None;
    for mode in &opts.modes {
        let started = Instant::now();
        let mut times = Vec::with_capacity(set.queries.len());
        let mut rankings = Vec::with_capacity(set.queries.len());
        let mut degraded = 0;
        if mode == "textbook" {
            let indexes = textbook_indexes(set);
            for q in &set.queries {
                let t = Instant::now();
                let mut r = indexes
                    .get(q.scope.as_str())
                    .map(|ix| ix.search(&q.text))
                    .unwrap_or_default();
                r.truncate(opts.depth);
                times.push(t.elapsed().as_secs_f64() * 1000.0);
                rankings.push((q.qid.clone(), r));
            }
        } else {
            if memory.is_none() {
                memory = Some(Memory::build(set, opts, progress)?);
            }
            let mem = memory.as_ref().expect("built");
            let engine = match mode.as_str() {
                "fts" => Engine::Fts,
                "bm25" => Engine::Bm25,
                "vector" => Engine::Vector,
                _ => Engine::Auto,
            };
            for (i, q) in set.queries.iter().enumerate() {
                let t = Instant::now();
                let rerank = mode == RERANKED;
                let (r, used) = mem.search(q, engine, opts.depth, rerank)?;
                times.push(t.elapsed().as_secs_f64() * 1000.0);
                if let Some(e) = mem.searcher.take_rerank_error() {
                    return Err(Error::other(format!("{mode}: {e}")));
                }
                let asked = if rerank { "hybrid" } else { mode.as_str() };
                if used.as_deref().is_some_and(|u| u != asked) {
                    degraded += 1;
                }
                rankings.push((q.qid.clone(), r));
                progress(&format!("{mode} queries"), i + 1, set.queries.len());
            }
        }
        let _ = started;
        let mut r = report(set, mode, &rankings, &times, degraded, &opts.ks);
        if mode != "textbook" {
            r.vectors = opts.vectors;
        }
        out.reports.push(r);
        out.runs.push((mode.clone(), rankings));
    }
    if let Some(m) = memory {
        out.home = m.finish(opts.keep)?;
    }
    Ok(out)
}

/// The textbook BM25 of each scope, the title prepended as the devsets' bm25.py does.
pub(crate) fn textbook_indexes(set: &Set) -> HashMap<&str, textbook::Index> {
    let mut by_scope: HashMap<&str, Vec<&data::Doc>> = HashMap::new();
    for d in &set.corpus {
        by_scope.entry(&d.scope).or_default().push(d);
    }
    by_scope
        .into_iter()
        .map(|(s, docs)| {
            let docs = docs.into_iter().map(|d| match &d.title {
                Some(t) if !t.is_empty() => (d.id.clone(), format!("{t} {}", d.text)),
                _ => (d.id.clone(), d.text.clone()),
            });
            (s, textbook::Index::new(docs))
        })
        .collect()
}

/// Every relevant document must lie in its query's scope, or the figures mean nothing.
pub(crate) fn check_scopes(set: &Set) -> Result<()> {
    let scope_of: HashMap<&str, &str> = set
        .corpus
        .iter()
        .map(|d| (d.id.as_str(), d.scope.as_str()))
        .collect();
    if scope_of.len() != set.corpus.len() {
        return Err(Error::Usage(format!(
            "{}: document ids repeat in the corpus",
            set.name
        )));
    }
    let outside = set
        .queries
        .iter()
        .filter_map(|q| Some((q, set.qrels.get(&q.qid)?)))
        .flat_map(|(q, rels)| rels.keys().map(move |d| (q, d)))
        .filter(|(q, d)| scope_of.get(d.as_str()).is_some_and(|s| *s != q.scope))
        .count();
    if outside > 0 {
        return Err(Error::Usage(format!(
            "{}: {outside} relevant documents lie outside their query's scope",
            set.name
        )));
    }
    Ok(())
}

fn report(
    set: &Set,
    mode: &str,
    rankings: &[(String, Ranking)],
    times: &[f64],
    degraded: usize,
    ks: &[usize],
) -> Report {
    let mut means = Means::default();
    let empty = HashMap::new();
    for (q, (_, r)) in set.queries.iter().zip(rankings) {
        let rels = set.qrels.get(&q.qid).unwrap_or(&empty);
        if metrics::relevant(rels).next().is_none() {
            continue;
        }
        let ids: Vec<String> = r.iter().map(|x| x.0.clone()).collect();
        means.add(q.category.as_deref(), &metrics::score(&ids, rels, ks));
    }
    let by_category = means
        .categories()
        .into_iter()
        .map(|c| {
            let mut m = means.of(&c);
            m.insert("queries".into(), means.count(&c) as f64);
            (c, m)
        })
        .collect();
    Report {
        set: set.name.clone(),
        mode: mode.to_string(),
        queries: means.count(metrics::ALL),
        metrics: means.of(metrics::ALL),
        p50_ms: median(times),
        degraded,
        by_category,
        leaves_out: (mode != "textbook").then_some(LEAVES_OUT),
        vectors: None,
    }
}

pub(crate) fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    (s[s.len() / 2] * 1000.0).round() / 1000.0
}

/// A scratch memory holding one set.
pub(crate) struct Memory {
    pub(crate) home: PathBuf,
    pub(crate) searcher: Searcher,
    /// Observation id → the record's id in the set.
    pub(crate) ids: HashMap<i64, String>,
}

impl Memory {
    pub(crate) fn build(set: &Set, opts: &Options, progress: Progress) -> Result<Memory> {
        std::fs::create_dir_all(&opts.work)?;
        let home = opts.work.join(format!(
            "memory-{}-{}",
            std::process::id(),
            chrono::Utc::now().timestamp_millis()
        ));
        std::fs::create_dir_all(&home)?;
        let cfg = Config::load(&home)?;
        let mut conn = store::open(&cfg.home.db())?;
        let notes: Vec<_> = set.corpus.iter().map(note_of).collect::<Result<_>>()?;
        store::write_tx(&conn, |tx| {
            for (i, (note, project)) in notes.iter().enumerate() {
                memkit_capture::store_note(tx, note, Some(project))?;
                if i % 1000 == 0 {
                    progress("import", i, notes.len());
                }
            }
            Ok(())
        })?;
        let run = memkit_compress::database::Run {
            sessions_per_round: 1_000_000,
            summaries: false,
            open_turn: chrono::Duration::zero(),
            progress: None,
            until: None,
        };
        progress("compress", 0, 1);
        memkit_compress::database::compress_queue(
            &cfg,
            memkit_compress::llm::Backend::heuristic(),
            memkit_compress::Options::from_config(&cfg)?,
            &run,
        )?;
        if opts
            .modes
            .iter()
            .any(|m| m == "vector" || m == "hybrid" || m == RERANKED)
        {
            let cache = opts.work.join("embedding-cache.db");
            store::embeddings::cache_share(&conn, &cache, false)?;
            let dir = memkit_search::embed::resolve_model(&opts.model)?;
            let limits = memkit_search::embed::store::Limits {
                until: None,
                owners: opts
                    .vectors
                    .map(|share| (share.clamp(0.0, 1.0) * notes.len() as f64).round() as usize),
            };
            memkit_search::embed::store::embed_database(
                &mut conn,
                &dir,
                None,
                None,
                limits,
                |d, t| progress("embed", d, t),
            )?;
            store::embeddings::cache_share(&conn, &cache, true)?;
        }
        progress("index", 0, 1);
        index::update(
            &conn,
            &index::Layout::new(&home),
            &index::Options::default(),
        )?;
        let ids = memkit_core::store::observations::external_ids(&conn)?
            .into_iter()
            .collect();
        let mut searcher = Searcher::open(&home, conn, &cfg)?;
        searcher.use_installed_model()?;
        if opts.modes.iter().any(|m| m == RERANKED) {
            let (spec, depth) = opts.reranker.clone().ok_or_else(|| {
                Error::Usage(format!("mode {RERANKED} needs a reranker (--rerank-model)"))
            })?;
            let model = memkit_search::embed::cross::RerankModel::new(&spec)?;
            searcher.use_reranker(memkit_search::search::rerank::Stage::new(
                Box::new(model),
                depth,
            ));
        }
        Ok(Memory {
            home,
            searcher,
            ids,
        })
    }

    /// A query's ranking in its scope, and the retriever the hits say was used.
    pub(crate) fn search(
        &self,
        q: &data::Query,
        engine: Engine,
        depth: usize,
        rerank: bool,
    ) -> Result<(Ranking, Option<String>)> {
        let req = Request {
            text: q.text.clone(),
            filters: Filters {
                projects: Some(vec![q.scope.clone()]),
                ..Filters::default()
            },
            limit: depth,
            current_project: Some(q.scope.clone()),
            engine,
            rerank,
            ..Request::default()
        };
        let hits = self.searcher.search(&req)?;
        let used = hits.first().map(|h| h.mode.clone());
        let ranking = hits
            .into_iter()
            .filter(|h| h.source == "observation")
            .filter_map(|h| Some((self.ids.get(&h.id)?.clone(), h.score)))
            .collect();
        Ok((ranking, used))
    }

    /// Deletes the scratch memory, or says where it is.
    pub(crate) fn finish(self, keep: bool) -> Result<Option<PathBuf>> {
        let home = self.home.clone();
        drop(self);
        if keep {
            return Ok(Some(home));
        }
        std::fs::remove_dir_all(&home)?;
        Ok(None)
    }
}

/// A corpus record as the note a user would import (`mem-capture --notes`).
fn note_of(d: &data::Doc) -> Result<(memkit_capture::Note, Project)> {
    let date = match &d.date {
        Some(s) => Some(store::parse_time(s).ok_or_else(|| {
            Error::Usage(format!(
                "document {}: date {s:?}: {}",
                d.id,
                store::DATE_HINT
            ))
        })?),
        None => None,
    };
    Ok((
        memkit_capture::Note {
            text: d.text.clone(),
            tags: d.tags.clone(),
            title: d.title.clone().filter(|t| !t.trim().is_empty()),
            external_id: Some(d.id.clone()),
            date,
        },
        Project {
            root: d.scope.clone(),
            name: d.scope.clone(),
            branch: None,
            source: "path",
        },
    ))
}

/// `work` default: the cache directory, where the shared embedding cache survives runs.
pub fn default_work() -> PathBuf {
    memkit_core::config::models_dir()
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(std::env::temp_dir)
        .join("eval")
}

/// Writes every ranking as a TREC run file: `qid Q0 doc rank score mode` per line.
pub fn write_run(path: &Path, runs: &[(String, Vec<(String, Ranking)>)]) -> Result<()> {
    use std::io::Write;
    let name = path.display().to_string();
    let f = std::fs::File::create(path).map_err(|e| Error::input(&name, None, e))?;
    let mut w = std::io::BufWriter::new(f);
    for (mode, rankings) in runs {
        for (qid, r) in rankings {
            for (i, (doc, score)) in r.iter().enumerate() {
                writeln!(w, "{qid} Q0 {doc} {} {score:.6} {mode}", i + 1)?;
            }
        }
    }
    w.flush()?;
    Ok(())
}
