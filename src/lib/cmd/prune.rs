//! mem-prune: retention. Old raw tool responses, event_log rows and log files, unused
//! embedding cache entries go; then the database is vacuumed.

use clap::{CommandFactory, Parser};

use crate::cli::{Common, Io, Outcome};
use crate::config::{self, Config};
use crate::embed;
use crate::store::{self, embeddings, retention};
use crate::{Context, Error, Result};

pub const TOOL: super::Tool = super::Tool {
    name: "mem-prune",
    command: || Args::command(),
    details: DETAILS,
    examples: &[
        (
            "mem-prune --dry-run",
            "What would go, and the bytes it would save.",
        ),
        (
            "mem-prune --days 0",
            "Drop every processed capture's raw tool response now.",
        ),
    ],
};

const DETAILS: &str = r#"
mem-prune drops what memkit no longer needs: the raw tool responses of processed (done) captures
older than --days (default MEM_RAW_RESPONSE_DAYS, 7; the capture keeps its input and the
observation its facts), event_log rows and $MEM_HOME/logs/*.log files older than --log-days (30)
(and the lines older than that of the logs still written to), the per-session markers of what the
recall hooks told a session ($MEM_HOME/recall/, kind recall_markers) untouched for a day,
and embedding cache entries unused for MEM_EMBED_CACHE_DAYS that back no current vector. Then it
vacuums the database (an incremental vacuum when the database is in that mode, else a full one)
and empties its WAL.

It prints one pruned record per kind with the rows and bytes of content it removed, then a
record of kind database with the size of mem.db and its WAL before and after. --dry-run changes
nothing: it prunes a vacuumed copy of the database (written beside it, then deleted) and reports
what that saved. mem pipeline runs mem-prune once a day (the time of the last prune is kept in
the database); --now TIME (MEM_NOW) prunes as if it were that moment.
"#;

/// Drop old raw tool responses, logs and unused cached vectors, then vacuum.
#[derive(Debug, Parser)]
#[command(name = "mem-prune", version, long_about = None)]
pub struct Args {
    /// Days a processed capture keeps its raw tool response (default: MEM_RAW_RESPONSE_DAYS, 7).
    #[arg(long, value_name = "N")]
    pub days: Option<u32>,
    /// Days event_log rows and log files are kept.
    #[arg(long, value_name = "N", default_value_t = retention::LOG_DAYS)]
    pub log_days: u32,
    /// Change nothing; report what would go and the bytes it would save.
    #[arg(long)]
    pub dry_run: bool,
    /// Prune as of this moment (RFC 3339 or YYYY-MM-DD).
    #[arg(long, env = "MEM_NOW", value_name = "TIME")]
    pub now: Option<String>,
    #[command(flatten)]
    pub common: Common,
}

/// One kind of thing pruned, or (kind `database`) the sizes before and after.
#[derive(serde::Serialize)]
struct Pruned {
    r#type: &'static str,
    v: u32,
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    rows: Option<u64>,
    bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    size_before: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    size_after: Option<u64>,
    dry_run: bool,
}

fn stamp(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// A scratch copy for --dry-run, deleted with its WAL when dropped.
struct Scratch(std::path::PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", self.0.display()));
        }
    }
}

pub fn run(args: Args, io: &mut Io) -> Result<Outcome> {
    let home = config::data_home();
    let cfg = Config::load(&home)?;
    let raw_days: u32 = match args.days {
        Some(d) => d,
        None => cfg.get_num("raw_response_days")?.unwrap_or(7),
    };
    let cache_days: u32 = cfg
        .get_num("embed_cache_days")?
        .unwrap_or(embed::store::CACHE_DAYS);
    let now = match args.now.as_deref() {
        Some(t) => {
            store::parse_instant(t)
                .ok_or_else(|| Error::Usage(format!("--now: {t:?}: {}", store::DATE_HINT)))?
                .0
        }
        None => chrono::Utc::now(),
    };
    let db = cfg.db_path();
    if !db.exists() {
        return Ok(io.no_memories(&db));
    }
    // Sizes are compared with the WAL in the file (the pipeline leaves it there too).
    let _ = store::backup::checkpoint(&db, store::BUSY_TIMEOUT);
    let size_before = retention::db_size(&db);
    let scratch = if args.dry_run {
        let copy = home.join(format!(".mem-prune-{}.db", std::process::id()));
        store::backup::backup(&db, &copy)
            .map_err_context(|| format!("copying {} for the dry run", db.display()))?;
        Some(Scratch(copy))
    } else {
        None
    };
    let work = scratch.as_ref().map_or(db.clone(), |s| s.0.clone());
    let conn = store::open(&work)?;
    let days = |n: u32| stamp(now - chrono::Duration::days(i64::from(n)));
    let mut kinds = vec![
        store::write_tx(&conn, |c| retention::raw_responses(c, &days(raw_days)))?,
        store::write_tx(&conn, |c| retention::events(c, &days(args.log_days)))?,
    ];
    let hint = cfg.get("embed_model");
    kinds.push(store::write_tx(&conn, |c| {
        cache(c, cache_days, hint.as_deref(), io)
    })?);
    let log_cutoff =
        std::time::SystemTime::from(now - chrono::Duration::days(i64::from(args.log_days)));
    kinds.push(retention::log_files(
        &home.join("logs"),
        log_cutoff,
        args.dry_run,
    )?);
    // What recall hooks told sessions: a session left alone for a day is over.
    kinds.push(retention::old_files(
        &crate::context::recall::seen_dir(&home),
        "recall_markers",
        None,
        std::time::SystemTime::from(now - chrono::Duration::days(1)),
        args.dry_run,
    )?);
    kinds.push(retention::log_lines(
        &home.join("logs"),
        &days(args.log_days),
        args.dry_run,
    )?);
    if !args.dry_run {
        store::meta_put(&conn, retention::LAST_PRUNE, &stamp(chrono::Utc::now()))?;
    }
    let how = retention::vacuum(&conn)?;
    io.info(format!("vacuum: {how}"));
    drop(conn);
    let size_after = retention::db_size(&work);
    let mut recs: Vec<Pruned> = kinds
        .iter()
        .map(|k| Pruned {
            r#type: "pruned",
            v: crate::record::VERSION,
            kind: k.kind,
            rows: Some(k.rows),
            bytes: k.bytes,
            size_before: None,
            size_after: None,
            dry_run: args.dry_run,
        })
        .collect();
    recs.push(Pruned {
        r#type: "pruned",
        v: crate::record::VERSION,
        kind: "database",
        rows: None,
        bytes: size_before.saturating_sub(size_after),
        size_before: Some(size_before),
        size_after: Some(size_after),
        dry_run: args.dry_run,
    });
    io.listing(
        &recs,
        &[
            "kind",
            "rows",
            "bytes",
            "size_before",
            "size_after",
            "dry_run",
        ],
    )?;
    Ok(Outcome::Ok)
}

/// Embedding cache entries unused for `days` that back no current vector of the model in use
/// (the one with the most vectors), as mem-embed prunes them.
fn cache(
    conn: &rusqlite::Connection,
    days: u32,
    hint: Option<&str>,
    io: &Io,
) -> Result<retention::Pruned> {
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
                    io.warn(format!(
                        "embedding cache kept: cannot tell which entries model {model} uses: {e}"
                    ));
                    None
                }
            }
        }
    };
    let Some((model, dim, hashes)) = current else {
        return Ok(retention::Pruned {
            kind: "embedding_cache",
            rows: 0,
            bytes: 0,
        });
    };
    retention::measured(conn, "embedding_cache", "embedding_cache", &cols, |c| {
        embed::store::prune_cache(c, model, dim, &hashes, days)
    })
}
