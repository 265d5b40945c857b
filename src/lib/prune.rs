//! Retention end to end (`mem-prune`, and `mem pipeline` once a day): old raw tool responses,
//! event_log rows, log files and log lines, recall markers and unused embedding cache entries
//! go (each step one of `store::retention`'s), then the database is vacuumed. A dry run does
//! it all on a vacuumed copy, so what it reports is what a real run would save.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use chrono::{DateTime, Duration, Utc};
use rusqlite::Connection;

use crate::config::{self, Config};
use crate::embed;
use crate::notice::{Notice, Notices};
use crate::store::retention::{self, Pruned};
use crate::store::{self, embeddings};
use crate::{Context, Error, Home, Result};

/// How a run goes.
#[derive(Debug, Clone)]
pub struct Options {
    /// Days a processed capture keeps its raw tool response.
    pub raw_days: u32,
    /// Days event_log rows, log files and log lines are kept.
    pub log_days: u32,
    /// Days an embedding cache entry that backs no current vector is kept unused.
    pub cache_days: u32,
    /// The moment the days count back from.
    pub now: DateTime<Utc>,
    /// Prune a copy, deleted afterwards; change nothing.
    pub dry_run: bool,
}

/// What a run did.
#[derive(Debug)]
pub struct Run {
    /// One entry per kind, in a fixed order.
    pub kinds: Vec<Pruned>,
    /// How the database was vacuumed (incremental or full).
    pub vacuum: &'static str,
    /// mem.db and its WAL, bytes, before and after.
    pub size_before: u64,
    pub size_after: u64,
    /// What was kept for a reason worth telling.
    pub notices: Notices,
}

fn stamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// A scratch copy for a dry run, deleted with its WAL when dropped.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", self.0.display()));
        }
    }
}

/// Prunes the store of `cfg` and the files under `home`; `None` when there is no database.
pub fn run(home: &Path, cfg: &Config, opts: &Options) -> Result<Option<Run>> {
    let home = Home::new(home);
    let db = cfg.home.db();
    if !db.exists() {
        return Ok(None);
    }
    // Sizes are compared with the WAL in the file (the pipeline leaves it there too).
    let _ = store::backup::checkpoint(&db, store::BUSY_TIMEOUT);
    let size_before = retention::db_size(&db);
    let scratch = if opts.dry_run {
        let copy = home.scratch_db("mem-prune", std::process::id());
        store::backup::backup(&db, &copy)
            .map_err_context(|| format!("copying {} for the dry run", db.display()))?;
        Some(Scratch(copy))
    } else {
        None
    };
    let work = scratch.as_ref().map_or(db.clone(), |s| s.0.clone());
    let conn = store::open(&work)?;
    let now = opts.now;
    let days = |n: u32| stamp(now - Duration::days(i64::from(n)));
    let mut notices = Notices::new();
    let mut kinds = vec![
        store::write_tx(&conn, |c| retention::raw_responses(c, &days(opts.raw_days)))?,
        store::write_tx(&conn, |c| retention::events(c, &days(opts.log_days)))?,
    ];
    let hint = config::EMBED_MODEL.get(cfg);
    kinds.push(store::write_tx(&conn, |c| {
        cache(c, opts.cache_days, hint.as_deref(), &mut notices)
    })?);
    let log_cutoff = SystemTime::from(now - Duration::days(i64::from(opts.log_days)));
    kinds.push(retention::log_files(
        &home.logs(),
        log_cutoff,
        opts.dry_run,
    )?);
    // What recall hooks told sessions: a session left alone for a day is over.
    kinds.push(retention::old_files(
        &home.recall(),
        "recall_markers",
        None,
        SystemTime::from(now - Duration::days(1)),
        opts.dry_run,
    )?);
    kinds.push(retention::log_lines(
        &home.logs(),
        &days(opts.log_days),
        opts.dry_run,
    )?);
    if !opts.dry_run {
        store::meta_put(&conn, retention::LAST_PRUNE, &stamp(Utc::now()))?;
    }
    let vacuum = retention::vacuum(&conn)?;
    drop(conn);
    Ok(Some(Run {
        kinds,
        vacuum,
        size_before,
        size_after: retention::db_size(&work),
        notices,
    }))
}

/// Embedding cache entries unused for `days` that back no current vector of the model in use
/// (the one with the most vectors), as mem-embed prunes them. When the model cannot be had,
/// nothing goes and `notices` says why.
fn cache(
    conn: &Connection,
    days: u32,
    hint: Option<&str>,
    notices: &mut Notices,
) -> Result<Pruned> {
    let cols = ["model", "text_hash", "vector", "created_at", "last_used_at"];
    let mut in_use: Option<(String, usize, usize)> = None;
    for (model, dim) in embeddings::models(conn)? {
        let n = embeddings::count(conn, &model, dim)?;
        if in_use.as_ref().is_none_or(|(_, _, m)| n > *m) {
            in_use = Some((model, dim, n));
        }
    }
    let current = match &in_use {
        None => Some(("", 0, Vec::new())),
        Some((model, dim, _)) => {
            let found = embed::find_model(model, hint).ok_or_else(|| {
                Error::other(format!(
                    "model {model} is not installed under {}",
                    config::models_dir().display()
                ))
            });
            match found.and_then(|(_, m)| embed::store::pending(conn, &m, *dim)) {
                Ok(owners) => Some((model.as_str(), *dim, owners.hashes)),
                Err(e) => {
                    notices.push(Notice::warn(format!(
                        "embedding cache kept: cannot tell which entries model {model} uses: {e}"
                    )));
                    None
                }
            }
        }
    };
    let Some((model, dim, hashes)) = current else {
        return Ok(Pruned {
            kind: "embedding_cache",
            rows: 0,
            bytes: 0,
        });
    };
    retention::measured(conn, "embedding_cache", "embedding_cache", &cols, |c| {
        embed::store::prune_cache(c, model, dim, &hashes, days)
    })
}
