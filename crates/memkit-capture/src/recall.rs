//! `mem-capture --recall`: file recall before a Read or an edit, error recall after a failed
//! call (what `memkit_core::recall` says), answered by the lightest binary. A PreToolUse hook
//! runs before every Read, so its cost is start-up plus two index reads: mem-capture links
//! neither the search side nor ONNX Runtime and starts in half mem-context's time. The hook's
//! output is printed by `tool`.

use std::path::Path;

use serde_json::Value;

use crate::{HOOK_WAIT, Policy};
use memkit_core::cli;
use memkit_core::config::Config;
use memkit_core::hook::HookPayload;
use memkit_core::project::{self, Project};
use memkit_core::store;
use memkit_core::{Result, recall};

/// A hook payload read from stdin, in a project that is not excluded.
pub struct Admitted {
    pub payload: HookPayload,
    pub cfg: Config,
    /// The event's directory and the project it belongs to.
    pub dir: Option<String>,
    pub project: Option<Project>,
}

/// Reads the payload on stdin with the configuration; `None` when MEM_EXCLUDE excludes its
/// project (bad globs are logged under `prog`).
pub fn admit(home: &Path, prog: &str) -> Result<Option<Admitted>> {
    let payload = HookPayload::from_value(memkit_core::hook::read_stdin()?).expect("an object");
    let cfg = Config::load(home).unwrap_or_else(|_| Config::env_only(home));
    let dir = project::dir(payload.cwd.as_deref());
    let project = dir.as_deref().map(project::identify);
    let (policy, bad) = Policy::for_hook(&cfg);
    for msg in bad {
        cli::log_line(home, prog, "warn", &msg);
    }
    if let (Some(p), Some(d)) = (&project, &dir)
        && policy.excluded(p, Some(d))
    {
        return Ok(None);
    }
    Ok(Some(Admitted {
        payload,
        cfg,
        dir,
        project,
    }))
}

/// The hook output recall gives an admitted payload, or `None` (no database, nothing worth
/// saying, already said in this session).
pub fn answer(home: &Path, a: &Admitted, now_ms: i64) -> Result<Option<Value>> {
    let Some(subject) = recall::Subject::of(&a.payload) else {
        return Ok(None);
    };
    // A database another process holds must not keep the session waiting: give up with no
    // recall rather than late.
    let wait = store::Wait::Until(std::time::Instant::now() + HOOK_WAIT);
    let Some(conn) = store::open_if_present_with(&a.cfg.home.db(), wait)? else {
        return Ok(None);
    };
    let root = a.project.as_ref().map(|p| p.root.as_str());
    let said = recall::hook(home, &conn, &a.payload, &subject, root, now_ms)?;
    Ok(said.map(|(event, text)| memkit_core::hook::hook_json(&event, &text)))
}
