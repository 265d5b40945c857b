//! `mem-capture --hook` and `--recall`: what Claude Code's hooks run. Whatever happens they exit
//! 0; problems go to the log, and only recall's answer reaches stdout.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::time::Instant;

use rusqlite::Connection;
use serde_json::json;

use super::payloads::admit;
use crate::spool::Spool;
use crate::{HOOK_WAIT, Policy, recall};
use memkit_core::cli::{self, Io, Outcome};
use memkit_core::config::Config;
use memkit_core::hook::HookPayload;
use memkit_core::store::{self, events};
use memkit_core::{Error, Result};

/// Hook mode: whatever happens, exit 0 and print nothing; problems go to the log.
pub(super) fn run() -> Outcome {
    cli::guard_hook("mem-capture", |home| store_one(home).map(Some));
    Outcome::Ok
}

fn store_one(home: &Path) -> Result<()> {
    let deadline = Instant::now() + HOOK_WAIT;
    let parsed = memkit_core::hook::read_stdin();
    let cfg = Config::load(home).unwrap_or_else(|e| {
        cli::log_line(home, "mem-capture", "warn", &format!("config ignored: {e}"));
        Config::env_only(home)
    });
    // Bad [redact] entries are logged; the valid ones and the built-in rules still apply.
    if let Err(e) = crate::redact::configure(&cfg) {
        cli::log_line(home, "mem-capture", "warn", &e.to_string());
    }
    let (policy, bad) = Policy::for_hook(&cfg);
    for msg in bad {
        cli::log_line(home, "mem-capture", "warn", &msg);
    }
    let mut value = match parsed {
        Ok(v) => v,
        Err(e @ Error::Input { .. }) => return log_bad(home, &cfg, &e.to_string()),
        Err(e) => return Err(e),
    };
    crate::sanitize(&mut value);
    let payload = HookPayload::from_value(value).expect("object");
    let Some((project, origin)) = admit(&policy, &payload) else {
        return Ok(());
    };
    let stored = (|| -> Result<Connection> {
        let conn = store::open_until(&cfg.home.db(), deadline)?;
        store::write_tx(&conn, |tx| {
            crate::store_event(
                tx,
                &policy,
                &payload,
                &origin,
                project.as_ref().map(|p| &p.0),
            )
        })?;
        Ok(conn)
    })();
    match stored {
        Ok(conn) => {
            if payload.event.as_deref() == Some("SessionEnd") {
                store::checkpoint_passive(&conn);
            }
            if let Err(e) = Spool::new(home).drain(&conn, &policy) {
                cli::log_line(home, "mem-capture", "warn", &format!("spool: {e}"));
            }
            if store::wal_is_large(&conn) {
                start_checkpoint();
            }
            Ok(())
        }
        Err(e) => {
            // The redacted payload itself (its map moves here): the common path copies nothing.
            let mut value = serde_json::Value::Object(payload.raw);
            value["_memkit"] = json!({"at": origin.at, "project_dir": project.map(|p| p.1),
                                      "why": e.to_string()});
            let event = payload.event.as_deref().unwrap_or("unknown");
            let at = Spool::new(home).put(&value, event)?;
            Err(Error::Store(format!(
                "{e}; payload spooled to {}",
                at.display()
            )))
        }
    }
}

/// Empties the WAL in a detached `mem-capture --checkpoint`: the checkpoint's fsyncs cost
/// ~15 ms, which no hook should make Claude Code wait for.
fn start_checkpoint() {
    if let Ok(exe) = std::env::current_exe() {
        let _ = std::process::Command::new(exe)
            .arg("--checkpoint")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            // Its own group, so it outlives whatever is done to the hook's.
            .process_group(0)
            .spawn();
    }
}

/// Records an unusable payload in the log and, when possible, the event_log.
fn log_bad(home: &Path, cfg: &Config, msg: &str) -> Result<()> {
    if let Ok(conn) = store::open_until(&cfg.home.db(), Instant::now() + HOOK_WAIT) {
        let _ = events::log(
            &conn,
            None,
            "invalid",
            None,
            "error",
            Some(&json!({"error": msg})),
        );
    }
    cli::log_line(home, "mem-capture", "error", msg);
    Ok(())
}

/// Recall's hook mode: print the hook JSON or nothing; never fails.
pub(super) fn recall(io: &mut Io) {
    let out = cli::guard_hook("mem-capture", |home| {
        let Some(a) = recall::admit(home, "mem-capture")? else {
            return Ok(None);
        };
        recall::answer(home, &a, chrono::Utc::now().timestamp_millis())
    });
    if let Some(v) = out {
        // A closed stdout is Claude Code's business; nothing to report.
        let _ = io.record(&v);
    }
}
