//! The spool: where a hook keeps an event it could not store (database locked, full, read-only)
//! until a later run can. Nothing a hook was given may be lost silently:
//! - a spool file appears whole or not at all (written under a temporary name, then renamed);
//! - when the data home cannot be written, the event goes to a fallback spool under the
//!   system's temporary directory (per user and data home, 0700);
//! - when no spool can be written either (a full disk), an empty marker file whose name says
//!   when and what was lost is left, which needs no data blocks;
//! - each spooled event is stored exactly once: a drainer claims a file by renaming it while
//!   it holds the database's write lock, and records the claim in the same transaction.
//!
//! Draining reports what happened (`event_log` rows `spooled`, `capture_lost`, `spool_bad`).

use std::path::{Path, PathBuf};

use rusqlite::Connection;
use serde_json::{Value, json};

use crate::{Origin, Policy};
use memkit_core::hook::HookPayload;
use memkit_core::store::{self, events};
use memkit_core::{Error, Home, Result, project};

/// Files drained per run at most: a hook must stay quick even after a long outage.
const DRAIN_MAX: usize = 200;
/// A claim older than this was left by a process that died; its file is taken again.
const STALE_CLAIM_SECS: u64 = 60;

/// Where one data home spools: its own `spool/`, and the fallback for when that cannot be
/// written.
pub struct Spool {
    pub primary: PathBuf,
    pub fallback: PathBuf,
}

impl Spool {
    pub fn new(home: &Path) -> Spool {
        Spool {
            primary: Home::new(home).spool(),
            fallback: fallback_dir(home),
        }
    }

    /// Keeps `value` (an already redacted payload, with its `_memkit` metadata) for a later
    /// run. Returns where it went; an error only when nothing at all could be written, after
    /// leaving a marker of the loss where possible.
    pub fn put(&self, value: &Value, event: &str) -> Result<PathBuf> {
        let text = value.to_string();
        let name = unique_name();
        let mut errors = Vec::new();
        for dir in [&self.primary, &self.fallback] {
            match write_whole(dir, &format!("{name}.json"), text.as_bytes()) {
                Ok(p) => return Ok(p),
                Err(e) => errors.push(format!("{}: {e}", dir.display())),
            }
        }
        let event: String = event
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .take(40)
            .collect();
        let marker = format!("{name}-{event}.lost");
        let marked = [&self.primary, &self.fallback]
            .into_iter()
            .any(|d| make_dir(d).is_ok() && write_whole(d, &marker, b"").is_ok());
        Err(Error::Store(format!(
            "event not stored and not spooled ({}){}",
            errors.join("; "),
            if marked {
                "; a marker of the loss was left"
            } else {
                ""
            }
        )))
    }

    /// Deletes the spooled events (claimed ones too) for which `drop` holds, given the payload
    /// and its text: what `mem forget` forgets must not be stored by the next hook. With
    /// `dry_run` they are only counted. Returns how many.
    pub fn forget(&self, dry_run: bool, drop: impl Fn(&Value, &str) -> bool) -> Result<usize> {
        let mut n = 0;
        for dir in [&self.primary, &self.fallback] {
            let Ok(rd) = std::fs::read_dir(dir) else {
                continue;
            };
            for e in rd.flatten() {
                let path = e.path();
                let name = e.file_name().to_string_lossy().to_string();
                if !(name.ends_with(".json") || name.ends_with(".json.claimed")) {
                    continue;
                }
                let Ok(text) = std::fs::read_to_string(&path) else {
                    continue;
                };
                let value = serde_json::from_str(&text).unwrap_or(Value::Null);
                if drop(&value, &text) {
                    if !dry_run {
                        std::fs::remove_file(&path).map_err(|e| {
                            Error::Store(format!("cannot delete {}: {e}", path.display()))
                        })?;
                    }
                    n += 1;
                }
            }
        }
        Ok(n)
    }

    /// Stores what earlier hooks spooled (oldest first) and reports losses they marked.
    /// Stops at the first store error, leaving the rest for the next run. Returns how many
    /// events were stored.
    pub fn drain(&self, conn: &Connection, policy: &Policy) -> Result<usize> {
        let mut files: Vec<(String, PathBuf)> = Vec::new();
        for dir in [&self.primary, &self.fallback] {
            let Ok(rd) = std::fs::read_dir(dir) else {
                continue;
            };
            for e in rd.flatten() {
                let name = e.file_name().to_string_lossy().to_string();
                files.push((name, e.path()));
            }
        }
        // Names start with the time they were written.
        files.sort();
        let mut stored = 0;
        for (name, path) in files.into_iter().take(DRAIN_MAX) {
            if name.ends_with(".json") {
                stored += self.take(conn, policy, &path)? as usize;
            } else if name.ends_with(".lost") {
                report_loss(conn, &path)?;
            } else if is_stale(&path) {
                if let Some(orig) = name.strip_suffix(".claimed") {
                    // Its drainer died: stored already if its claim was committed.
                    if events::has_key(conn, "spooled", orig)? {
                        let _ = std::fs::remove_file(&path);
                    } else {
                        let _ = std::fs::rename(&path, path.with_file_name(orig));
                    }
                } else if name.ends_with(".tmp") {
                    // A write that never finished: its hook reported the failure itself.
                    let _ = std::fs::remove_file(&path);
                }
            }
        }
        Ok(stored)
    }

    /// Stores one spooled file; `false` when another run took it first.
    fn take(&self, conn: &Connection, policy: &Policy, path: &Path) -> Result<bool> {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        let claimed = path.with_file_name(format!("{name}.claimed"));
        let mut renamed = false;
        let taken = store::write_tx(conn, |tx| {
            // Under the write lock: whoever renames first owns the file.
            if let Err(e) = std::fs::rename(path, &claimed) {
                return if e.kind() == std::io::ErrorKind::NotFound {
                    Ok(false)
                } else {
                    Err(Error::Store(format!("spool {}: {e}", path.display())))
                };
            }
            renamed = true;
            store_file(
                tx,
                policy,
                &claimed,
                &name,
                path.starts_with(&self.fallback),
            )?;
            Ok(true)
        });
        match taken {
            Ok(taken) => {
                if taken {
                    let _ = std::fs::remove_file(&claimed);
                }
                Ok(taken)
            }
            Err(e) => {
                if renamed {
                    let _ = std::fs::rename(&claimed, path);
                }
                Err(e)
            }
        }
    }
}

/// Stores a claimed spool file inside the caller's transaction, with its claim recorded.
fn store_file(
    conn: &Connection,
    policy: &Policy,
    path: &Path,
    name: &str,
    fallback: bool,
) -> Result<()> {
    let bytes =
        std::fs::read(path).map_err(|e| Error::Store(format!("{}: {e}", path.display())))?;
    let Ok(mut value) = memkit_core::hook::parse_payload(&bytes) else {
        events::log(
            conn,
            None,
            "spool_bad",
            None,
            "error",
            Some(&json!({"key": name, "error": "not a JSON object", "bytes": bytes.len()})),
        )?;
        return Ok(());
    };
    let meta = value
        .as_object_mut()
        .and_then(|o| o.remove("_memkit"))
        .unwrap_or_default();
    // Written redacted, but perhaps by another version or under other [redact] settings.
    crate::sanitize(&mut value);
    let at = meta
        .get("at")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(store::now);
    let dir = meta
        .get("project_dir")
        .and_then(Value::as_str)
        .map(str::to_string);
    let payload = HookPayload::from_value(value).expect("checked above");
    let project = dir
        .or_else(|| payload.cwd.clone())
        .map(|d| project::identify(&d));
    let origin = Origin {
        kind: "hook",
        at: at.clone(),
        key: None,
    };
    crate::store_event(conn, policy, &payload, &origin, project.as_ref())?;
    events::log(
        conn,
        payload.session_id.as_deref(),
        "spooled",
        payload.tool_name.as_deref(),
        "warn",
        Some(&json!({"key": name, "at": at, "why": meta.get("why"), "fallback": fallback})),
    )
}

fn report_loss(conn: &Connection, path: &Path) -> Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let stem = name.trim_end_matches(".lost");
    let event = stem.rsplit('-').next().unwrap_or("");
    let nanos: u128 = stem
        .split('-')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let at = chrono::DateTime::from_timestamp_nanos(nanos.min(i64::MAX as u128) as i64)
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    events::log(
        conn,
        None,
        "capture_lost",
        None,
        "error",
        Some(&json!({"key": name, "at": at, "event": event,
                     "error": "the event could be neither stored nor spooled (disk full or data home not writable)"})),
    )?;
    let _ = std::fs::remove_file(path);
    Ok(())
}

/// `<nanoseconds since the epoch>-<pid>`: sorts by time, unique per process.
fn unique_name() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{nanos:024}-{}", std::process::id())
}

fn is_stale(path: &Path) -> bool {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|age| age.as_secs() >= STALE_CLAIM_SECS)
}

/// The fallback spool of `home` (under [`Home::fallback`]).
pub fn fallback_dir(home: &Path) -> PathBuf {
    Home::new(home).fallback().spool()
}

/// Creates `dir` (and its parents) 0700, refusing a directory someone else owns or a symlink
/// where the fallback's own directories should be (the temporary directory is shared).
fn make_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let meta = std::fs::symlink_metadata(dir)?;
    // SAFETY: as above.
    let uid = unsafe { libc::getuid() };
    if !meta.is_dir() || meta.uid() != uid {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            "not a directory of this user",
        ));
    }
    Ok(())
}

/// Writes `name` in `dir` whole or not at all: under a temporary name first, renamed once
/// every byte is written.
fn write_whole(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<PathBuf> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    make_dir(dir)?;
    let path = dir.join(name);
    let tmp = dir.join(format!("{name}.tmp"));
    let written = std::fs::OpenOptions::new()
        .create_new(true)
        .write(true)
        .mode(0o600)
        .open(&tmp)
        .and_then(|mut f| f.write_all(bytes).and_then(|()| f.flush()));
    match written.and_then(|()| std::fs::rename(&tmp, &path)) {
        Ok(()) => Ok(path),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}
