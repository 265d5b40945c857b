//! `mem doctor [--fix]`: each check of the memory with its verdict and the command that fixes
//! it; `--fix` runs the fixes: drains the spool, puts captures whose compression failed and
//! left nothing back in the queue, embeds what lacks a vector, rebuilds indexes that differ
//! from the database, re-registers hooks whose programs went missing, rewrites what an older
//! redactor stored, then runs the pipeline.

use std::path::Path;

use serde::Serialize;

use crate::cli::{Io, Outcome};
use crate::config::{self, Config};
use crate::{Result, store, tools};

#[derive(Debug, Serialize)]
pub struct Check {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub v: u32,
    pub check: &'static str,
    pub ok: bool,
    pub detail: String,
    /// The command that fixes it (empty when nothing needs doing).
    pub fix: String,
    /// With --fix: whether the fix ran and the check passes now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fixed: Option<bool>,
}

fn check(name: &'static str, ok: bool, detail: String, fix: &str) -> Check {
    Check {
        kind: "check",
        v: memkit_core::record::VERSION,
        check: name,
        ok,
        detail,
        fix: if ok { String::new() } else { fix.to_string() },
        fixed: None,
    }
}

fn checks(home: &Path, cfg: &Config, conn: &rusqlite::Connection) -> Result<Vec<Check>> {
    let mut out = Vec::new();
    let spool = memkit_capture::spool::Spool::new(home);
    let spooled: usize = [&spool.primary, &spool.fallback]
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .map(|d| d.flatten().count())
        .sum();
    out.push(check(
        "spool",
        spooled == 0,
        format!("{spooled} events a hook could not store yet"),
        "mem doctor --fix (stores them now)",
    ));
    let orphans = store::queue::orphan_errors(conn)?;
    out.push(check(
        "queue",
        orphans == 0,
        format!("{orphans} captures in error that no observation came from"),
        "mem doctor --fix (queues them again), then mem pipeline",
    ));
    let h = memkit_eval::health::check(home, cfg, conn, 1)?;
    out.push(check(
        "embeddings",
        h.without_embedding == 0,
        format!(
            "{} observations without a vector of {}",
            h.without_embedding,
            h.embedding_model.as_deref().unwrap_or("the model in use")
        ),
        "mem-embed && mem-index",
    ));
    let bad: Vec<String> = h
        .indexes
        .iter()
        .filter(|i| i.missing > 0 || i.extra > 0 || i.error.is_some())
        .map(|i| {
            i.error.clone().map_or_else(
                || format!("{}: {} missing, {} extra", i.index, i.missing, i.extra),
                |e| format!("{}: {e}", i.index),
            )
        })
        .collect();
    out.push(check(
        "indexes",
        bad.is_empty(),
        if bad.is_empty() {
            format!("{} indexes match the database", h.indexes.len())
        } else {
            bad.join("; ")
        },
        "mem-index --rebuild",
    ));
    let hooks = crate::install::hooks::registered();
    let broken: Vec<String> = hooks
        .iter()
        .filter(|h| !h.missing.is_empty())
        .map(|h| format!("{} runs {}", h.file, h.missing.join(", ")))
        .collect();
    let old: Vec<String> = hooks
        .iter()
        .filter(|h| !h.absent.is_empty())
        .map(|h| format!("{} lacks {}", h.file, h.absent.join(", ")))
        .collect();
    out.push(check(
        "hooks",
        broken.is_empty() && old.is_empty() && hooks.iter().any(|h| h.handlers > 0),
        if !broken.is_empty() {
            format!("{} (missing programs)", broken.join("; "))
        } else if !old.is_empty() {
            format!("{} (registered by an earlier version)", old.join("; "))
        } else if hooks.iter().any(|h| h.handlers > 0) {
            "registered; every program exists".into()
        } else {
            "no settings file registers memkit's hooks".into()
        },
        "mem-install (from where memkit is installed now)",
    ));
    let root = crate::project::current_dir().map(|d| crate::project::identify(&d).root);
    let mcp = memkit_mcp::register::registrations(&config::home(), root.as_deref().map(Path::new));
    let broken: Vec<String> = mcp
        .iter()
        .filter(|r| !r.exists)
        .map(|r| format!("{} runs {}", r.file.display(), r.command))
        .collect();
    out.push(check(
        "mcp",
        broken.is_empty(),
        match mcp.first() {
            _ if !broken.is_empty() => format!("{} (missing program)", broken.join("; ")),
            Some(r) => format!("mem-mcp registered in {}", r.file.display()),
            None => {
                "mem-mcp is not registered for Claude Code (optional: mem-install --mcp)".into()
            }
        },
        "mem-install --mcp (from where memkit is installed now)",
    ));
    let stored = store::redaction::version(conn)?;
    let current = memkit_capture::redact::VERSION;
    out.push(check(
        "redaction",
        stored >= current,
        format!("stored texts redacted by redactor version {stored}, this memkit's is {current}"),
        "mem-redact (rewrites what today's redactor changes)",
    ));
    Ok(out)
}

/// Runs the fix of one failed check; `Err` says why it could not.
fn fix(c: &Check, home: &Path, cfg: &Config) -> Result<std::result::Result<(), String>> {
    match c.check {
        "spool" => {
            let conn = store::open(&cfg.db_path())?;
            let policy = memkit_capture::Policy::from_config(cfg)?;
            let spool = memkit_capture::spool::Spool::new(home);
            // A drain takes at most a batch: repeat until a round stores nothing.
            while spool.drain(&conn, &policy)? > 0 {}
            Ok(Ok(()))
        }
        "queue" => {
            let conn = store::open(&cfg.db_path())?;
            store::queue::requeue_orphan_errors(&conn)?;
            Ok(Ok(()))
        }
        "embeddings" => {
            Ok(tools::run_quietly("mem-embed", &[])?.and(tools::run_quietly("mem-index", &[])?))
        }
        "indexes" => tools::run_quietly("mem-index", &["--rebuild"]),
        "hooks" => {
            let bin = tools::bin_dir()?.display().to_string();
            let mut res = Ok(());
            let hooks = crate::install::hooks::registered();
            let targets: Vec<&crate::install::hooks::Hooks> = hooks
                .iter()
                .filter(|h| !h.missing.is_empty() || !h.absent.is_empty())
                .collect();
            if targets.is_empty() {
                // Nothing registered at all: the user's settings.
                return tools::run_quietly("mem-install", &["--bin-dir", &bin]);
            }
            for h in targets {
                res = res.and(tools::run_quietly(
                    "mem-install",
                    &["--settings", &h.file, "--bin-dir", &bin],
                )?);
            }
            Ok(res)
        }
        "mcp" => {
            let bin = tools::bin_dir()?.display().to_string();
            tools::run_quietly("mem-install", &["--mcp", "--no-docs", "--bin-dir", &bin])
        }
        "redaction" => {
            let _lock = crate::pipeline::wait_lock(home, "mem doctor --fix")?;
            crate::reredact::run(home, cfg, &Default::default())?;
            Ok(Ok(()))
        }
        _ => Ok(Ok(())),
    }
}

pub fn run(fix_them: bool, io: &mut Io) -> Result<Outcome> {
    let home = config::data_home();
    let cfg = Config::load(&home)?;
    let db = cfg.db_path();
    let Some(conn) = store::open_if_present(&db)? else {
        return Ok(io.no_memories(&db));
    };
    let mut found = checks(&home, &cfg, &conn)?;
    drop(conn);
    if fix_them && found.iter().any(|c| !c.ok) {
        let mut why: Vec<(usize, String)> = Vec::new();
        for (i, c) in found.iter().enumerate() {
            if !c.ok
                && let Err(e) = fix(c, &home, &cfg)?
            {
                why.push((i, e));
            }
        }
        // What was queued or stored is compressed, embedded and indexed now.
        if let Err(e) = tools::run_quietly("mem", &["pipeline"])? {
            io.warn(e);
        }
        let conn = store::open(&db)?;
        let after = checks(&home, &cfg, &conn)?;
        for (i, (before, now)) in found.iter_mut().zip(after).enumerate() {
            if !before.ok {
                before.fixed = Some(now.ok);
                if let Some((_, e)) = why.iter().find(|(j, _)| *j == i) {
                    before.detail = format!("{}; the fix failed: {e}", before.detail);
                } else if !now.ok {
                    before.detail = format!("{}; after the fix: {}", before.detail, now.detail);
                }
            }
        }
    }
    io.listing(&found, &["check", "ok", "detail", "fix", "fixed"])?;
    let healthy = found.iter().all(|c| c.ok || c.fixed == Some(true));
    for c in found.iter().filter(|c| !c.ok && c.fixed != Some(true)) {
        io.warn(format!("{}: {} (fix: {})", c.check, c.detail, c.fix));
    }
    Ok(if healthy {
        Outcome::Ok
    } else {
        Outcome::NothingFound
    })
}
