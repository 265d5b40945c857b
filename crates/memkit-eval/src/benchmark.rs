//! `mem-eval benchmark --a X --b Y`: the memory's captures compressed again by two backends,
//! each in its own scratch copy of the database (the user's is only read, and charged the LLM
//! calls so the daily cap holds), and each result scored by `compression`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::{Value, json};

use memkit_compress::llm::{Backend, Kind};
use memkit_core::config::Config;
use memkit_core::notice::Notice;
use memkit_core::store::{self, stats};
use memkit_core::{Error, Home, Result};

pub struct Options {
    /// Where scratch copies live.
    pub work: PathBuf,
    pub keep: bool,
}

/// One side's figures (`"type":"eval"`, `"set":"benchmark"`): the compression means plus the
/// side, its backend and model, its LLM use and its time.
pub type Side = Value;

/// Replays the captures of the database in `home` through backend `a`, then `b`.
pub fn run(
    home: &Path,
    cfg: &Config,
    a: &str,
    b: &str,
    opts: &Options,
) -> Result<(Vec<Side>, Vec<PathBuf>)> {
    // Both backends are checked before any work: a missing key must not waste side a's run.
    for name in [a, b] {
        backend(cfg, name)?;
    }
    let mut out = Vec::new();
    let mut kept = Vec::new();
    for (side, name) in [("a", a), ("b", b)] {
        let (rec, dir) = replay(home, cfg, side, name, opts)?;
        out.push(rec);
        if opts.keep {
            kept.push(dir);
        } else {
            std::fs::remove_dir_all(&dir)?;
        }
    }
    Ok((out, kept))
}

/// The backend `name` names; an error when it cannot work (no key), rather than a silent
/// heuristic in its place.
fn backend(cfg: &Config, name: &str) -> Result<Backend> {
    let (b, notice) = Backend::from_config(cfg, Some(name))?;
    if b.kind == Kind::Heuristic && name != "heuristic" {
        // The warning says the heuristic takes over; here nothing does.
        let why = notice.as_ref().map_or("", Notice::text);
        let why = why.split(": using").next().unwrap_or_default();
        return Err(Error::Usage(format!("backend {name} cannot run: {why}")));
    }
    Ok(b)
}

fn replay(
    home: &Path,
    cfg: &Config,
    side: &str,
    name: &str,
    opts: &Options,
) -> Result<(Side, PathBuf)> {
    let dir = opts.work.join(format!(
        "benchmark-{}-{}-{side}",
        std::process::id(),
        chrono::Utc::now().timestamp_millis()
    ));
    std::fs::create_dir_all(&dir)?;
    let scratch = Home::new(&dir);
    store::backup::backup(&cfg.home.db(), &scratch.db())?;
    // The user's settings (prompt budget, cap, model) apply to the replay too.
    let settings = Home::new(home).config_file();
    if settings.exists() {
        std::fs::copy(settings, scratch.config_file())?;
    }
    let scfg = Config::load(&scratch)?;
    let conn = store::open(&scratch.db())?;
    store::write_tx(&conn, stats::reset_for_replay)?;
    let before = stats::last_event_id(&conn)?;
    let b = backend(&scfg, name)?;
    let model = b.model.clone();
    let started = Instant::now();
    let done = memkit_compress::database::compress_queue(
        &scfg,
        b,
        memkit_compress::Options::from_config(&scfg)?,
        &memkit_compress::database::Run {
            sessions_per_round: 1_000_000,
            summaries: false,
            open_turn: chrono::Duration::zero(),
            progress: None,
            until: None,
        },
    )?;
    let elapsed = started.elapsed().as_millis() as u64;
    let (_, report) = crate::compression::run(&conn, &stats::Selection::default(), None)?;
    let calls = stats::llm_calls_after(&conn, before)?;
    if !calls.is_empty() {
        let real = store::open(&cfg.home.db())?;
        store::write_tx(&real, |tx| stats::book_llm_calls(tx, &calls))?;
    }
    let mut rec = serde_json::to_value(&report)?;
    let count = |k: &str| done.counts.get(k).copied().unwrap_or(0);
    if let Some(m) = rec.as_object_mut() {
        m.insert("set".into(), json!("benchmark"));
        for (k, v) in [
            ("side", json!(side)),
            ("backend", json!(name)),
            ("model", json!(model)),
            ("llm_calls", json!(count("llm_calls"))),
            ("tokens_in", json!(count("tokens_in"))),
            ("tokens_out", json!(count("tokens_out"))),
            (
                "fallbacks",
                json!(count("fallbacks") + count("over_budget") + count("switched_off")),
            ),
            ("merged", json!(count("merged"))),
            ("elapsed_ms", json!(elapsed)),
        ] {
            m.insert(k.into(), v);
        }
    }
    Ok((rec, dir))
}
