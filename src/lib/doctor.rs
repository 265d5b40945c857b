//! `mem doctor`'s checks of the memory, each with the fix it runs under `--fix`: events a hook
//! spooled are stored, captures whose compression failed and left nothing are queued again,
//! what lacks a vector is embedded, indexes that differ from the database are rebuilt, hooks
//! and mem-mcp whose programs went missing are registered again, and what an older redactor
//! stored is redacted again; then the pipeline runs, and every check that failed is made again.

use std::path::Path;

use rusqlite::Connection;

use crate::config::{self, Config};
use crate::install::hooks::{self, Hooks};
use crate::notice::{Notice, Notices};
use crate::{Result, store, tools};
use memkit_eval::health::Health;

/// One check, and the fix beside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    Spool,
    Queue,
    Embeddings,
    Indexes,
    Hooks,
    Mcp,
    Redaction,
}

/// What one check found.
#[derive(Debug, Clone)]
pub struct Verdict {
    pub check: Check,
    pub ok: bool,
    pub detail: String,
    /// After a fix: whether it ran and the check passes now.
    pub fixed: Option<bool>,
}

/// What a run found (and fixed).
#[derive(Debug)]
pub struct Report {
    /// One per check, in the order of [`Check::ALL`].
    pub verdicts: Vec<Verdict>,
    /// Said along the way (the pipeline after the fixes failed).
    pub notices: Notices,
}

/// A fix's own failure, told in its check's detail.
type Fixed = std::result::Result<(), String>;

/// What several checks read, read once.
struct Seen<'a> {
    home: &'a Path,
    conn: &'a Connection,
    health: Health,
    hooks: Vec<Hooks>,
}

impl Check {
    pub const ALL: [Check; 7] = [
        Check::Spool,
        Check::Queue,
        Check::Embeddings,
        Check::Indexes,
        Check::Hooks,
        Check::Mcp,
        Check::Redaction,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Check::Spool => "spool",
            Check::Queue => "queue",
            Check::Embeddings => "embeddings",
            Check::Indexes => "indexes",
            Check::Hooks => "hooks",
            Check::Mcp => "mcp",
            Check::Redaction => "redaction",
        }
    }

    /// The command that fixes a failed check, as the user would run it.
    pub fn fix_hint(self) -> &'static str {
        match self {
            Check::Spool => "mem doctor --fix (stores them now)",
            Check::Queue => "mem doctor --fix (queues them again), then mem pipeline",
            Check::Embeddings => "mem-embed && mem-index",
            Check::Indexes => "mem-index --rebuild",
            Check::Hooks => "mem-install (from where memkit is installed now)",
            Check::Mcp => "mem-install --mcp (from where memkit is installed now)",
            Check::Redaction => "mem-redact (rewrites what today's redactor changes)",
        }
    }

    fn verdict(self, seen: &Seen) -> Result<(bool, String)> {
        match self {
            Check::Spool => Ok(spool(seen.home)),
            Check::Queue => queue(seen.conn),
            Check::Embeddings => Ok(embeddings(&seen.health)),
            Check::Indexes => Ok(indexes(&seen.health)),
            Check::Hooks => Ok(hooks(&seen.hooks)),
            Check::Mcp => Ok(mcp()),
            Check::Redaction => redaction(seen.conn),
        }
    }

    fn fix(self, home: &Path, cfg: &Config) -> Result<Fixed> {
        match self {
            Check::Spool => fix_spool(home, cfg),
            Check::Queue => fix_queue(cfg),
            Check::Embeddings => fix_embeddings(),
            Check::Indexes => tools::run_quietly("mem-index", &["--rebuild"]),
            Check::Hooks => fix_hooks(),
            Check::Mcp => fix_mcp(),
            Check::Redaction => fix_redaction(home, cfg),
        }
    }
}

fn spool(home: &Path) -> (bool, String) {
    let spool = memkit_capture::spool::Spool::new(home);
    let spooled: usize = [&spool.primary, &spool.fallback]
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .map(|d| d.flatten().count())
        .sum();
    (
        spooled == 0,
        format!("{spooled} events a hook could not store yet"),
    )
}

fn fix_spool(home: &Path, cfg: &Config) -> Result<Fixed> {
    let conn = store::open(&cfg.home.db())?;
    let policy = memkit_capture::Policy::from_config(cfg)?;
    let spool = memkit_capture::spool::Spool::new(home);
    // A drain takes at most a batch: repeat until a round stores nothing.
    while spool.drain(&conn, &policy)? > 0 {}
    Ok(Ok(()))
}

fn queue(conn: &Connection) -> Result<(bool, String)> {
    let orphans = store::queue::orphan_errors(conn)?;
    Ok((
        orphans == 0,
        format!("{orphans} captures in error that no observation came from"),
    ))
}

fn fix_queue(cfg: &Config) -> Result<Fixed> {
    let conn = store::open(&cfg.home.db())?;
    store::queue::requeue_orphan_errors(&conn)?;
    Ok(Ok(()))
}

fn embeddings(h: &Health) -> (bool, String) {
    let model = h.embedding_model.as_deref().unwrap_or("the model in use");
    let detail = match h.embedding_backlog.as_ref() {
        Some(b) => match (&b.eta, b.per_second, b.pipeline_runs) {
            (Some(eta), Some(rate), Some(runs)) => format!(
                "{} observations without a vector of {model}: about {eta} of embedding at {rate} a second, {runs} pipeline runs of {:.0} s",
                b.observations, b.budget_seconds
            ),
            _ => format!(
                "{} observations without a vector of {model}",
                b.observations
            ),
        },
        None => format!(
            "{} observations without a vector of {model}",
            h.without_embedding
        ),
    };
    (h.without_embedding == 0, detail)
}

fn fix_embeddings() -> Result<Fixed> {
    Ok(tools::run_quietly("mem-embed", &[])?.and(tools::run_quietly("mem-index", &[])?))
}

fn indexes(h: &Health) -> (bool, String) {
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
    let detail = if bad.is_empty() {
        format!("{} indexes match the database", h.indexes.len())
    } else {
        bad.join("; ")
    };
    (bad.is_empty(), detail)
}

fn hooks(hooks: &[Hooks]) -> (bool, String) {
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
    let any = hooks.iter().any(|h| h.handlers > 0);
    let detail = if !broken.is_empty() {
        format!("{} (missing programs)", broken.join("; "))
    } else if !old.is_empty() {
        format!("{} (registered by an earlier version)", old.join("; "))
    } else if any {
        "registered; every program exists".into()
    } else {
        "no settings file registers memkit's hooks".into()
    };
    (broken.is_empty() && old.is_empty() && any, detail)
}

fn fix_hooks() -> Result<Fixed> {
    let bin = tools::bin_dir()?.display().to_string();
    let hooks = hooks::registered();
    let targets: Vec<&Hooks> = hooks
        .iter()
        .filter(|h| !h.missing.is_empty() || !h.absent.is_empty())
        .collect();
    if targets.is_empty() {
        // Nothing registered at all: the user's settings.
        return tools::run_quietly("mem-install", &["--bin-dir", &bin]);
    }
    let mut res = Ok(());
    for h in targets {
        res = res.and(tools::run_quietly(
            "mem-install",
            &["--settings", &h.file, "--bin-dir", &bin],
        )?);
    }
    Ok(res)
}

fn mcp() -> (bool, String) {
    let root = crate::project::current_dir().map(|d| crate::project::identify(&d).root);
    let mcp = memkit_mcp::register::registrations(&config::home(), root.as_deref().map(Path::new));
    let broken: Vec<String> = mcp
        .iter()
        .filter(|r| !r.exists)
        .map(|r| format!("{} runs {}", r.file.display(), r.command))
        .collect();
    let detail = match mcp.first() {
        _ if !broken.is_empty() => format!("{} (missing program)", broken.join("; ")),
        Some(r) => format!("mem-mcp registered in {}", r.file.display()),
        None => "mem-mcp is not registered for Claude Code (optional: mem-install --mcp)".into(),
    };
    (broken.is_empty(), detail)
}

fn fix_mcp() -> Result<Fixed> {
    let bin = tools::bin_dir()?.display().to_string();
    tools::run_quietly("mem-install", &["--mcp", "--no-docs", "--bin-dir", &bin])
}

fn redaction(conn: &Connection) -> Result<(bool, String)> {
    let stored = store::redaction::version(conn)?;
    let current = memkit_capture::redact::VERSION;
    Ok((
        stored >= current,
        format!("stored texts redacted by redactor version {stored}, this memkit's is {current}"),
    ))
}

fn fix_redaction(home: &Path, cfg: &Config) -> Result<Fixed> {
    let _lock = crate::pipeline::wait_lock(home, "mem doctor --fix")?;
    crate::reredact::run(home, cfg, &Default::default())?;
    Ok(Ok(()))
}

/// Every check's verdict, in the order of [`Check::ALL`].
fn verdicts(home: &Path, cfg: &Config, conn: &Connection) -> Result<Vec<Verdict>> {
    let seen = Seen {
        home,
        conn,
        health: memkit_eval::health::check(home, cfg, conn, 1)?,
        hooks: hooks::registered(),
    };
    Check::ALL
        .iter()
        .map(|&check| {
            let (ok, detail) = check.verdict(&seen)?;
            Ok(Verdict {
                check,
                ok,
                detail,
                fixed: None,
            })
        })
        .collect()
}

/// Checks the memory of `cfg`; with `fix`, runs the fixes of the failed checks, then the
/// pipeline, and checks again. `None` when there is no database.
pub fn run(home: &Path, cfg: &Config, fix: bool) -> Result<Option<Report>> {
    let db = cfg.home.db();
    let Some(conn) = store::open_if_present(&db)? else {
        return Ok(None);
    };
    let mut found = verdicts(home, cfg, &conn)?;
    drop(conn);
    let mut notices = Notices::new();
    if fix && found.iter().any(|v| !v.ok) {
        let mut why: Vec<(Check, String)> = Vec::new();
        for v in found.iter().filter(|v| !v.ok) {
            if let Err(e) = v.check.fix(home, cfg)? {
                why.push((v.check, e));
            }
        }
        // What was queued or stored is compressed, embedded and indexed now.
        if let Err(e) = tools::run_quietly("mem", &["pipeline"])? {
            notices.push(Notice::Warn(e));
        }
        let conn = store::open(&db)?;
        let after = verdicts(home, cfg, &conn)?;
        for (before, now) in found.iter_mut().zip(after) {
            if !before.ok {
                before.fixed = Some(now.ok);
                if let Some((_, e)) = why.iter().find(|(c, _)| *c == before.check) {
                    before.detail = format!("{}; the fix failed: {e}", before.detail);
                } else if !now.ok {
                    before.detail = format!("{}; after the fix: {}", before.detail, now.detail);
                }
            }
        }
    }
    Ok(Some(Report {
        verdicts: found,
        notices,
    }))
}
