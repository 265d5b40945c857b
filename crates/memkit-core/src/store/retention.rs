//! Retention (`mem-prune`): what is dropped after its time, measured in rows and bytes, and
//! the vacuum that gives the space back.

use std::path::Path;
use std::time::SystemTime;

use rusqlite::Connection;

use crate::Result;

/// What one kind of pruning removed (or would remove).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pruned {
    pub kind: &'static str,
    pub rows: u64,
    /// Bytes of content removed (text and blob lengths; a file's size).
    pub bytes: u64,
}

/// Days event_log rows and log files are kept.
pub const LOG_DAYS: u32 = 30;

/// The `meta` key of the last prune's time (the pipeline prunes once a day).
pub const LAST_PRUNE: &str = "last_prune_at";

/// The summed length of `cols` over `table`: what a prune is measured by.
pub fn content_bytes(conn: &Connection, table: &str, cols: &[&str]) -> Result<u64> {
    let sum: Vec<String> = cols
        .iter()
        .map(|c| format!("coalesce(length({c}), 0)"))
        .collect();
    let n: i64 = conn.query_row(
        &format!("SELECT coalesce(sum({}), 0) FROM {table}", sum.join(" + ")),
        [],
        |r| r.get(0),
    )?;
    Ok(n.max(0) as u64)
}

/// Runs `f` (which returns a row count) and measures what it took from `table`'s `cols`.
pub fn measured(
    conn: &Connection,
    kind: &'static str,
    table: &str,
    cols: &[&str],
    f: impl FnOnce(&Connection) -> Result<usize>,
) -> Result<Pruned> {
    let before = content_bytes(conn, table, cols)?;
    let rows = f(conn)? as u64;
    let after = content_bytes(conn, table, cols)?;
    Ok(Pruned {
        kind,
        rows,
        bytes: before.saturating_sub(after),
    })
}

/// Drops the raw tool responses of processed captures created before `before`
/// ([`super::queue::drop_raw_responses`]); the observations keep their facts.
pub fn raw_responses(conn: &Connection, before: &str) -> Result<Pruned> {
    measured(conn, "raw_responses", "pending_queue", &["payload"], |c| {
        super::queue::drop_raw_responses(c, before, &super::now())
    })
}

/// Deletes event_log rows logged before `before`.
pub fn events(conn: &Connection, before: &str) -> Result<Pruned> {
    measured(
        conn,
        "events",
        "event_log",
        &["ts", "session_id", "event", "tool_name", "level", "detail"],
        |c| Ok(c.execute("DELETE FROM event_log WHERE ts < ?1", [before])?),
    )
}

/// Log files (`*.log` under `dir`) last written before `before`; deleted unless `dry_run`.
pub fn log_files(dir: &Path, before: SystemTime, dry_run: bool) -> Result<Pruned> {
    old_files(dir, "log_files", Some("log"), before, dry_run)
}

/// Files under `dir` (with extension `ext` only, when given) last written before `before`,
/// counted as `kind`; deleted unless `dry_run`.
pub fn old_files(
    dir: &Path,
    kind: &'static str,
    ext: Option<&str>,
    before: SystemTime,
    dry_run: bool,
) -> Result<Pruned> {
    let mut out = Pruned {
        kind,
        rows: 0,
        bytes: 0,
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(out);
    };
    for e in entries.flatten() {
        let path = e.path();
        let Ok(m) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        let wanted = ext.is_none_or(|ext| path.extension().is_some_and(|x| x == ext));
        if !m.is_file() || !wanted || m.modified().map_or(true, |t| t >= before) {
            continue;
        }
        if !dry_run {
            std::fs::remove_file(&path).map_err(|e| {
                crate::Error::other(format!("cannot delete {}: {e}", path.display()))
            })?;
        }
        out.rows += 1;
        out.bytes += m.len();
    }
    Ok(out)
}

/// Lines logged before `before` (RFC 3339, the stored form) in the `*.log` files under `dir`
/// that are still written to: every line memkit logs starts with its time, and a line without
/// one (a stage's multi-line message) goes with the line before it. A file is rewritten (kept
/// 0600) and replaced in one rename; a line appended by another process meanwhile may be lost,
/// which a log can afford. Nothing is changed with `dry_run`.
pub fn log_lines(dir: &Path, before: &str, dry_run: bool) -> Result<Pruned> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut out = Pruned {
        kind: "log_lines",
        rows: 0,
        bytes: 0,
    };
    let Some((cutoff, _)) = super::parse_instant(before) else {
        return Ok(out);
    };
    let before_time = SystemTime::from(cutoff);
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(out);
    };
    for e in entries.flatten() {
        let path = e.path();
        let is_log = path.extension().is_some_and(|x| x == "log");
        let Ok(m) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        // A file not written since is [`log_files`]' to delete whole.
        let stale = m.modified().is_ok_and(|t| t < before_time);
        if !is_log || !m.is_file() || stale {
            continue;
        }
        let Ok(text) = std::fs::read(&path) else {
            continue;
        };
        let text = String::from_utf8_lossy(&text);
        let mut keep = String::with_capacity(text.len());
        let (mut dropping, mut lines, mut bytes) = (false, 0u64, 0u64);
        for line in text.split_inclusive('\n') {
            let ts = line.split(' ').next().unwrap_or("");
            if super::parse_instant(ts).is_some() {
                dropping = super::normalize_time(ts).as_str() < before;
            }
            if dropping {
                lines += 1;
                bytes += line.len() as u64;
            } else {
                keep.push_str(line);
            }
        }
        if lines == 0 {
            continue;
        }
        out.rows += lines;
        out.bytes += bytes;
        if !dry_run {
            let tmp = path.with_extension("log.tmp");
            let written = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&tmp)
                .and_then(|mut f| std::io::Write::write_all(&mut f, keep.as_bytes()))
                .and_then(|_| std::fs::rename(&tmp, &path));
            written.map_err(|e| {
                crate::Error::other(format!("cannot rewrite {}: {e}", path.display()))
            })?;
        }
    }
    Ok(out)
}

/// Gives freed pages back to the file system: an incremental vacuum when the database is in
/// that mode, else a full VACUUM (memkit's schema leaves auto_vacuum NONE, where an
/// incremental vacuum does nothing), then the WAL is checkpointed and truncated. Returns which
/// it ran.
pub fn vacuum(conn: &Connection) -> Result<&'static str> {
    let mode: i64 = conn.query_row("PRAGMA auto_vacuum", [], |r| r.get(0))?;
    let how = if mode == 2 {
        conn.execute_batch("PRAGMA incremental_vacuum")?;
        "incremental"
    } else {
        conn.execute_batch("VACUUM")?;
        "full"
    };
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
    Ok(how)
}

/// The bytes the database takes on disk: the file and its WAL.
pub fn db_size(db: &Path) -> u64 {
    let len = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    let wal = format!("{}-wal", db.display());
    len(db) + len(Path::new(&wal))
}

/// Whether a day has passed since the last prune recorded in `meta` (or none was).
pub fn prune_due(conn: &Connection, now: chrono::DateTime<chrono::Utc>) -> Result<bool> {
    let last = super::meta_get(conn, LAST_PRUNE)?;
    Ok(last
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(&t).ok())
        .is_none_or(|t| now.signed_duration_since(t) >= chrono::Duration::hours(24)))
}
