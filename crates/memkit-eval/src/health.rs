//! The state of a memory in one report (`mem-eval health`): what was captured, what waits or
//! failed in the queue, what the LLM spent against the daily cap, how well and how often
//! observations were compressed and merged, whether vectors and indexes keep up with the
//! database, how big it all is and how the last pipeline run went. [`Health::problems`] names
//! what needs doing; `mem status` and `mem doctor` can read the same report.

use std::collections::BTreeMap;
use std::path::Path;

use rusqlite::Connection;
use serde::Serialize;

use memkit_core::config::{self, Config};
use memkit_core::store::stats;
use memkit_core::{Home, Result};
use memkit_search::index::{self, Layout};

/// One index as `mem-index --check` sees it.
#[derive(Debug, Clone, Serialize)]
pub struct IndexHealth {
    pub index: String,
    /// Records the database says it should hold.
    pub docs: u64,
    pub missing: u64,
    pub extra: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One UTC day of LLM calls.
#[derive(Debug, Clone, Serialize)]
pub struct LlmDay {
    pub calls: u64,
    pub failed: u64,
    pub tokens: u64,
}

/// What is left to embed, and how long the model takes for it (`mem status`, `mem doctor`).
#[derive(Debug, Clone, Serialize)]
pub struct Backlog {
    /// Observations without a vector of the model in use.
    pub observations: u64,
    /// Observations of the backlog embedded a second with that model on this machine: its
    /// characters a second lately (`embed::store::rate`) over the backlog's characters per
    /// observation; none before a run has said.
    pub per_second: Option<f64>,
    /// The backlog's embedding time at that rate, in seconds, and in words.
    pub eta_seconds: Option<u64>,
    pub eta: Option<String>,
    /// What a pipeline run works of it at most (MEM_EMBED_BUDGET_S), and so how many runs it
    /// takes at that rate.
    pub budget_seconds: f64,
    pub pipeline_runs: Option<u64>,
}

impl Backlog {
    /// `n` observations (and `chars` characters with the sessions and learnings) left for
    /// `model`/`dim`.
    fn of(
        conn: &Connection,
        cfg: &Config,
        model: &str,
        dim: usize,
        (n, chars): (u64, u64),
    ) -> Result<Backlog> {
        let secs = memkit_search::embed::store::rate(conn, model, dim)?
            .map(|r| (chars as f64 / r).max(1.0));
        let per_second = secs.map(|s| n as f64 / s);
        let eta = secs.map(|s| s.ceil() as u64);
        let budget = config::EMBED_BUDGET_S.get(cfg)?;
        Ok(Backlog {
            observations: n,
            per_second: per_second.map(|r| (r * 100.0).round() / 100.0),
            eta_seconds: eta,
            eta: eta.map(in_words),
            budget_seconds: budget,
            pipeline_runs: eta.map(|s| (s as f64 / budget.max(1.0)).ceil().max(1.0) as u64),
        })
    }

    /// What the problem line adds: the time it takes and how it goes.
    fn said(&self) -> String {
        match (&self.eta, self.per_second) {
            (Some(eta), Some(r)) => format!(
                " (about {eta} at {r} a second; each pipeline run works {:.0} s of it, mem pipeline --drain all of it now)",
                self.budget_seconds
            ),
            _ => "; mem pipeline --drain embeds them now".into(),
        }
    }
}

/// A duration in seconds as a person says it: `40 s`, `12 min`, `2 h 10 min`.
pub fn in_words(secs: u64) -> String {
    match secs {
        0..=59 => format!("{secs} s"),
        60..=3599 => format!("{} min", secs.div_ceil(60)),
        _ => {
            let min = secs.div_ceil(60);
            match min % 60 {
                0 => format!("{} h", min / 60),
                m => format!("{} h {m} min", min / 60),
            }
        }
    }
}

/// The report (`"type":"health"`).
#[derive(Debug, Clone, Serialize)]
#[serde(remote = "Self")]
pub struct Health {
    /// Days the per-day figures cover, today included.
    pub days: u32,
    pub captures_per_day: BTreeMap<String, u64>,
    /// Queue rows per status (raw, processing, done, error).
    pub queue: BTreeMap<String, u64>,
    /// Queue rows in error per class of their last error.
    pub queue_errors: BTreeMap<String, u64>,
    pub llm_per_day: BTreeMap<String, LlmDay>,
    /// MEM_LLM_DAILY_TOKENS, when set.
    pub llm_daily_tokens: Option<u64>,
    pub llm_tokens_today: u64,
    /// Compressed observations (manual notes left out).
    pub observations: u64,
    /// Their raw tokens over their compressed tokens.
    pub compression_ratio: f64,
    /// Share of the observations the logged compression runs made that were merged into an
    /// earlier one; none when no run was logged in the period.
    pub dedup_rate: Option<f64>,
    /// `model/dim` of the newest vectors, or the configured model when none exists yet.
    pub embedding_model: Option<String>,
    pub without_embedding: u64,
    /// The observations without a vector, how fast they are being embedded and when they are
    /// done; none when every observation has one.
    pub embedding_backlog: Option<Backlog>,
    pub indexes: Vec<IndexHealth>,
    /// The database changed after the indexes were last brought up to date.
    pub index_behind: Option<String>,
    pub database_bytes: u64,
    pub index_bytes: u64,
    /// When the last pipeline run took its lock.
    pub last_pipeline_run: Option<String>,
    /// What the pipeline logged since then (stages that failed or said something).
    pub pipeline_log: Vec<String>,
    /// The last figures `mem-eval retrieval` and `mem-eval context` recorded, by mode.
    pub last_figures: BTreeMap<String, serde_json::Value>,
    /// What needs doing; empty when healthy.
    pub problems: Vec<String>,
}
memkit_core::record!(Health = "health");

/// The health of the memory in `home` over the last `days` days (today included).
pub fn check(home: &Path, cfg: &Config, conn: &Connection, days: u32) -> Result<Health> {
    let today = chrono::Utc::now().date_naive();
    let since = (today - chrono::Days::new(u64::from(days.max(1) - 1)))
        .and_hms_opt(0, 0, 0)
        .expect("midnight")
        .and_utc()
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let mut problems = Vec::new();

    let queue: BTreeMap<String, u64> = stats::queue_by_status(conn)?.into_iter().collect();
    let mut queue_errors: BTreeMap<String, u64> = BTreeMap::new();
    for (text, n) in stats::queue_errors(conn)? {
        *queue_errors.entry(error_class(&text)).or_default() += n;
    }
    if let Some(n) = queue.get("error").filter(|n| **n > 0) {
        let classes: Vec<String> = queue_errors
            .iter()
            .map(|(c, n)| format!("{c} ×{n}"))
            .collect();
        // The heuristic compressed them, but the backend failed: worth knowing why.
        problems.push(format!(
            "queue: {n} captures in error ({}); the LLM failed on them and the heuristic took over",
            classes.join(", ")
        ));
    }

    let llm_per_day = stats::llm_per_day(conn, &since)?
        .into_iter()
        .map(|d| {
            (
                d.day,
                LlmDay {
                    calls: d.calls,
                    failed: d.failed,
                    tokens: d.tokens,
                },
            )
        })
        .collect();
    let (observations, raw, compressed) = stats::compression_totals(conn)?;
    let (made, merged) = stats::dedup_since(conn, &since)?;

    let configured = config::EMBED_MODEL.get(cfg);
    let (embedding_model, without_embedding, embedding_backlog) = match stats::latest_model(conn)? {
        Some((model, dim)) => {
            let left = stats::embedding_backlog(conn, &model, Some(dim))?;
            let backlog = (left.0 > 0)
                .then(|| Backlog::of(conn, cfg, &model, dim, left))
                .transpose()?;
            (Some(format!("{model}/{dim}")), left.0, backlog)
        }
        None => match &configured {
            Some(m) => {
                let left = stats::embedding_backlog(conn, m, None)?;
                let dim = config::EMBED_DIM.get(cfg)?.unwrap_or(0);
                let backlog = (left.0 > 0)
                    .then(|| Backlog::of(conn, cfg, m, dim, left))
                    .transpose()?;
                (Some(m.clone()), left.0, backlog)
            }
            None => (None, 0, None),
        },
    };
    if let (Some(b), Some(m)) = (&embedding_backlog, &embedding_model) {
        problems.push(format!(
            "embeddings: {} observations without a vector of {m}{}",
            b.observations,
            b.said()
        ));
    }

    // The same comparison as `mem-index --check`, then what keys cannot show: records
    // changed after the index was last brought up to date.
    let layout = Layout::new(home);
    let mut indexes = Vec::new();
    for c in index::check(conn, &layout)? {
        if c.differs() {
            problems.push(match &c.error {
                Some(e) => format!("index {}: {e}; run mem-index", c.name),
                None => format!(
                    "index {}: {} missing, {} extra; run mem-index",
                    c.name,
                    c.missing.len(),
                    c.extra.len()
                ),
            });
        }
        indexes.push(IndexHealth {
            index: c.name,
            docs: c.expected,
            missing: c.missing.len() as u64,
            extra: c.extra.len() as u64,
            error: c.error,
        });
    }
    let index_behind = behind(conn, &layout)?;
    if let Some(why) = &index_behind {
        problems.push(format!(
            "index older than the database: {why}; run mem-index"
        ));
    }

    let (last_pipeline_run, pipeline_log) = last_run(home);
    Ok(Health {
        days,
        captures_per_day: stats::captures_per_day(conn, &since)?.into_iter().collect(),
        queue,
        queue_errors,
        llm_per_day,
        llm_daily_tokens: config::LLM_DAILY_TOKENS.get(cfg)?,
        llm_tokens_today: memkit_compress::spent_today(conn)?,
        observations,
        compression_ratio: r2(raw as f64 / compressed.max(1) as f64),
        dedup_rate: (made + merged > 0).then(|| r3(merged as f64 / (made + merged) as f64)),
        embedding_model,
        without_embedding,
        embedding_backlog,
        indexes,
        index_behind,
        database_bytes: Home::new(home).db_files().iter().map(|f| size(f)).sum(),
        index_bytes: size(&layout.dir),
        last_pipeline_run,
        pipeline_log,
        last_figures: ["retrieval", "context"]
            .into_iter()
            .filter_map(|m| {
                let text = std::fs::read(crate::last_figures_path(home, m)).ok()?;
                Some((m.to_string(), serde_json::from_slice(&text).ok()?))
            })
            .collect(),
        problems,
    })
}

/// Why the indexes are behind the database, if they are: an observation updated, or a vector
/// made, after the last index run took it in. None when the indexes have no state of this
/// database (`index::check` reports that).
fn behind(conn: &Connection, layout: &Layout) -> Result<Option<String>> {
    let Ok(state) = layout.state_for(conn)? else {
        return Ok(None);
    };
    let (obs, vec) = stats::last_changes(conn)?;
    if let Some(o) = obs
        && state.obs_updated_at.as_ref().is_none_or(|s| *s < o)
    {
        return Ok(Some(format!(
            "an observation changed at {o}, the index holds changes up to {}",
            state.obs_updated_at.as_deref().unwrap_or("none")
        )));
    }
    let upto = state.vectors.iter().filter_map(|v| v.upto.clone()).max();
    if let Some(e) = vec
        && upto.as_ref().is_none_or(|u| *u < e)
    {
        return Ok(Some(format!(
            "a vector made at {e}, the vector index holds vectors up to {}",
            upto.as_deref().unwrap_or("none")
        )));
    }
    Ok(None)
}

/// A last error's class: its text before the first colon when short (`HTTP 429`,
/// `timeout`), else its first three words.
pub fn error_class(text: &str) -> String {
    let text = text.trim();
    if text.is_empty() {
        return "unknown".into();
    }
    match text.split_once(':') {
        Some((head, _)) if head.len() <= 40 => head.trim().to_string(),
        _ => text
            .split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" "),
    }
}

/// When the last pipeline run took its lock (the lock file's time), and the pipeline log's
/// lines since then.
fn last_run(home: &Path) -> (Option<String>, Vec<String>) {
    let home = Home::new(home);
    let Some(at) = std::fs::metadata(home.pipeline_lock())
        .and_then(|m| m.modified())
        .ok()
        .map(|t| {
            chrono::DateTime::<chrono::Utc>::from(t)
                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
        })
    else {
        return (None, vec![]);
    };
    let log = std::fs::read_to_string(home.pipeline_log()).unwrap_or_default();
    // Lines start with their time, in the stored form: text order is time order.
    let lines = log
        .lines()
        .filter(|l| l.split(' ').next().is_some_and(|t| t >= at.as_str()))
        .map(str::to_string)
        .collect();
    (Some(at), lines)
}

/// Bytes of a file, or of everything under a directory (links not followed).
pub fn size(p: &Path) -> u64 {
    let Ok(m) = std::fs::symlink_metadata(p) else {
        return 0;
    };
    if !m.is_dir() {
        return m.len();
    }
    std::fs::read_dir(p)
        .map(|es| es.flatten().map(|e| size(&e.path())).sum())
        .unwrap_or(0)
}

fn r2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

fn r3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_classes_are_the_label_or_the_first_words() {
        assert_eq!(error_class("HTTP 429: rate limited"), "HTTP 429");
        assert_eq!(
            error_class("the model answered something that is not JSON at all"),
            "the model answered"
        );
        assert_eq!(error_class(""), "unknown");
    }
}
