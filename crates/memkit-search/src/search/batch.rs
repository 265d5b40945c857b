//! What mem-search asks of a searcher beyond one search: a searcher opened for a tool's flags,
//! `--batch` lines (one query per JSON line, each field over the flags' query), why a search
//! found nothing and how it fell short.

use clap::ValueEnum;
use serde::Deserialize;
use serde_json::Value;

use super::{Engine, MAX_LIMIT, Query, Request, Searcher};
use memkit_core::notice::{Notice, Notices};
use memkit_core::{Result, project, store};

/// One line of `--batch` input.
#[derive(Debug, Deserialize, Default)]
#[serde(default)]
pub struct BatchLine {
    pub id: Value,
    query: String,
    project: Option<String>,
    projects: Option<ListArg>,
    all_projects: bool,
    #[serde(rename = "type")]
    kinds: Option<ListArg>,
    tags: Option<ListArg>,
    after: Option<String>,
    before: Option<String>,
    session: Option<String>,
    files: Option<ListArg>,
    limit: Option<usize>,
    min_score: Option<f64>,
    mode: Option<String>,
    explain: Option<bool>,
    engine: Option<String>,
}

/// A list given as a JSON array or a comma-separated string.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum ListArg {
    List(Vec<String>),
    Text(String),
}

impl ListArg {
    fn into_vec(self) -> Vec<String> {
        match self {
            ListArg::List(v) => v,
            ListArg::Text(s) => s
                .split(',')
                .map(|x| x.trim().to_string())
                .filter(|x| !x.is_empty())
                .collect(),
        }
    }
}

impl BatchLine {
    /// The line's query: its fields over `base` (the flags'). `Err`: what is wrong with the
    /// line. A limit past the cap is cut to it, and `capped` is told the limit asked for.
    pub fn query(
        self,
        base: &Query,
        capped: &mut dyn FnMut(usize),
    ) -> std::result::Result<Query, String> {
        let probe = match self.mode.as_deref() {
            Some("probe") => true,
            Some("full") => false,
            None => base.probe,
            Some(m) => return Err(format!("unknown mode {m:?}")),
        };
        let engine = match self.engine.as_deref() {
            None => base.engine,
            Some(e) => Engine::from_str(e, true).map_err(|_| format!("unknown engine {e:?}"))?,
        };
        let list =
            |l: Option<ListArg>, or: &Vec<String>| l.map_or_else(|| or.clone(), ListArg::into_vec);
        Ok(Query {
            text: self.query,
            project: self.project.or(base.project.clone()),
            projects: list(self.projects, &base.projects),
            all_projects: self.all_projects || base.all_projects,
            kinds: list(self.kinds, &base.kinds),
            tags: list(self.tags, &base.tags),
            after: self.after.or(base.after.clone()),
            before: self.before.or(base.before.clone()),
            session: self.session.or(base.session.clone()),
            files: self.files.map(ListArg::into_vec).or(base.files.clone()),
            limit: match self.limit {
                Some(l) => {
                    if l > MAX_LIMIT {
                        capped(l);
                    }
                    l.min(MAX_LIMIT)
                }
                None => base.limit.min(MAX_LIMIT),
            },
            min_score: self.min_score.or(base.min_score),
            probe,
            explain: self.explain.unwrap_or(base.explain),
            engine,
        })
    }
}

impl Searcher {
    /// [`Searcher::open`] for a tool: `now` (as typed) fixes the ranking's clock, and the
    /// installed model is loaded when `model` allows it, `search_model_load` is on and `engine`
    /// uses vectors.
    pub fn open_for(
        home: &std::path::Path,
        conn: rusqlite::Connection,
        cfg: &memkit_core::config::Config,
        now: Option<&str>,
        model: bool,
        engine: Engine,
    ) -> Result<Searcher> {
        let mut s = Searcher::open(home, conn, cfg)?;
        if let Some(now) = now {
            s.now_ms = Some(
                super::parse_bound(now, false)
                    .map_err(|e| memkit_core::Error::Usage(format!("--now: {e}")))?,
            );
        }
        if model
            && memkit_core::config::SEARCH_MODEL_LOAD.get(cfg)
            && !matches!(engine, Engine::Bm25 | Engine::Fts)
        {
            s.use_installed_model()?;
        }
        Ok(s)
    }

    /// How the last searches fell short of a hybrid search over the BM25 index, said once each:
    /// the query could not be embedded, the reranker failed, or the BM25 index was unreadable
    /// and FTS5 stood in.
    pub fn degraded(&self, hits: &[memkit_core::record::Hit]) -> Notices {
        let mut out = Notices::new();
        if let Some(e) = self.embed_error.borrow_mut().take() {
            out.push(Notice::warn(format!(
                "query not embedded ({e}): searched without vectors"
            )));
        }
        if let Some(e) = self.take_rerank_error() {
            out.push(Notice::warn(format!(
                "not reranked ({e}): hits in fused order"
            )));
        }
        if hits.iter().any(|h| h.mode == "fts") {
            out.push(Notice::warn(format!(
                "BM25 index unavailable ({}): searched with SQLite FTS5; run mem-index to rebuild it",
                self.bm25_error.as_deref().unwrap_or("?")
            )));
        }
        out
    }

    /// How much of the store has vectors, when not all of it (`--explain`, which asked: said
    /// as a warning, so without -v): records embedded later are found by their words meanwhile.
    pub fn coverage(&self) -> Option<Notice> {
        let (with, of) = self.vector_coverage().filter(|(w, of)| w < of)?;
        let model = self.vector_state.as_ref().map_or("", |v| v.model.as_str());
        Some(Notice::warn(format!(
            "{with} of {of} records have a vector of {model} ({:.0}%): the others, still being embedded, are found by their words and keep their places in the lexical ranking",
            with as f64 * 100.0 / of.max(1) as f64
        )))
    }

    /// Why a search found nothing, and what to do about it: no project here, nothing stored or
    /// indexed yet, memories waiting in the queue, or simply no match among so many.
    pub fn why_nothing(&self, req: &Request) -> Result<Notice> {
        let conn = &self.conn;
        let projects = req.filters.projects.as_deref();
        let scope = match projects {
            None => "any project".to_string(),
            Some([]) => {
                return Ok(Notice::warn(
                    "nothing found: no project here (not in a git repository or a known \
                    project); try --all-projects or --project NAME",
                ));
            }
            Some(ps) => ps
                .iter()
                .map(|p| project::name_of(p))
                .collect::<Vec<_>>()
                .join(", "),
        };
        let stored: i64 = match projects {
            None => store::observations::count(conn, None)?,
            Some(ps) => ps
                .iter()
                .map(|p| store::observations::count(conn, Some(p)))
                .sum::<Result<i64>>()?,
        };
        let waiting = store::queue::waiting(conn, projects)?;
        let queued = if waiting > 0 {
            format!("; {waiting} captures are waiting in the queue (mem-pipeline compresses them)")
        } else {
            String::new()
        };
        if stored == 0 {
            let all = store::observations::count(conn, None)?;
            let elsewhere = if projects.is_some() && all > 0 {
                format!(" ({all} in other projects: try --all-projects)")
            } else {
                String::new()
            };
            return Ok(Notice::warn(format!(
                "nothing found: no memories in {scope} yet{elsewhere}{queued}"
            )));
        }
        if self.state.is_none() {
            return Ok(Notice::warn(format!(
                "nothing found: nothing indexed yet (run mem-pipeline or mem-index){queued}"
            )));
        }
        Ok(Notice::warn(format!(
            "nothing found: no memory in {scope} matches {:?} ({stored} searched){queued}",
            req.text
        )))
    }
}
