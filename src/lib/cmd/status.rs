//! `mem status`: the state of the memory at a glance, read-only. The counts and checks of
//! `mem-eval health` (one day of history) plus what only a user's machine knows: which
//! settings files register memkit's hooks and whether the programs they name exist, and the
//! disk the models and indexes take.

use std::path::PathBuf;

use serde::Serialize;

use crate::cli::{Io, Outcome};
use crate::config::{self, Config};
use crate::install::hooks::Hooks;
use crate::{Result, store};
use memkit_eval::health::size;

#[derive(Debug, Serialize)]
#[serde(remote = "Self")]
pub struct Status {
    pub database: String,
    pub database_bytes: u64,
    pub wal_bytes: u64,
    pub sessions: i64,
    pub observations: i64,
    pub learnings: i64,
    pub captures: i64,
    pub queue: std::collections::BTreeMap<String, u64>,
    pub queue_errors: std::collections::BTreeMap<String, u64>,
    pub last_pipeline_run: Option<String>,
    pub pipeline_log: Vec<String>,
    pub embedding_model: Option<String>,
    pub without_embedding: u64,
    pub embedding_backlog: Option<memkit_eval::health::Backlog>,
    pub indexes: Vec<memkit_eval::health::IndexHealth>,
    pub index_behind: Option<String>,
    pub llm_tokens_today: u64,
    pub llm_daily_tokens: Option<u64>,
    pub index_bytes: u64,
    pub models_bytes: u64,
    pub hooks: Vec<Hooks>,
    pub problems: Vec<String>,
}
memkit_core::record!(Status = "status");

pub fn run(io: &mut Io) -> Result<Outcome> {
    let home = config::data_home();
    let cfg = Config::load(&home)?;
    let db = cfg.home.db();
    let Some(conn) = store::open_if_present(&db)? else {
        return Ok(io.no_memories(&db));
    };
    let h = memkit_eval::health::check(&home, &cfg, &conn, 1)?;
    let n = store::stats::counts(&conn)?;
    let mut problems = h.problems.clone();
    let hooks = crate::install::hooks::registered();
    for hk in &hooks {
        for m in &hk.missing {
            problems.push(format!(
                "hooks: {} runs {m}, which does not exist (mem-install again, from where memkit is now)",
                hk.file
            ));
        }
    }
    if hooks.iter().all(|h| h.handlers == 0) {
        problems.push(
            "hooks: no settings file registers memkit's hooks (mem-install, or the plugin)".into(),
        );
    }
    let wal = PathBuf::from(format!("{}-wal", db.display()));
    let s = Status {
        database: db.display().to_string(),
        database_bytes: size(&db),
        wal_bytes: size(&wal),
        sessions: n.sessions,
        observations: n.observations,
        learnings: n.learnings,
        captures: n.captures,
        queue: h.queue,
        queue_errors: h.queue_errors,
        last_pipeline_run: h.last_pipeline_run,
        pipeline_log: h.pipeline_log,
        embedding_model: h.embedding_model,
        without_embedding: h.without_embedding,
        embedding_backlog: h.embedding_backlog,
        indexes: h.indexes,
        index_behind: h.index_behind,
        llm_tokens_today: h.llm_tokens_today,
        llm_daily_tokens: h.llm_daily_tokens,
        index_bytes: h.index_bytes,
        models_bytes: size(&config::models_dir()),
        hooks,
        problems,
    };
    io.figures(&s)?;
    Ok(Outcome::Ok)
}
