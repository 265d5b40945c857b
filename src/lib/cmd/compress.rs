//! mem-compress: queued captures into typed observations and session summaries.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use clap::{CommandFactory, Parser};
use rusqlite::{Connection, TransactionBehavior};
use serde_json::Value;

use crate::Result;
use crate::cli::{Common, Input, Io, Outcome};
use crate::compress::{self, Compressor, Item, Options, dedup, summary};
use crate::config::{self, Config};
use crate::llm::{Backend, Kind};
use crate::record::{Capture, Observation};
use crate::store::{self, queue};

pub const TOOL: super::Tool = super::Tool {
    name: "mem-compress",
    command: || Args::command(),
    details: DETAILS,
    examples: &[
        (
            "mem-compress",
            "Compress everything pending into observations and summarise finished sessions.",
        ),
        (
            "MEM_LLM=anthropic mem-compress",
            "The same with Claude Haiku (needs ANTHROPIC_API_KEY).",
        ),
        (
            "mem-capture --transcript s.jsonl --format jsonl | mem-compress - | jq -r .title",
            "Filter mode: capture records in, observation records out, nothing stored.",
        ),
        (
            "mem-compress --check && echo work pending",
            "Exit 0 when there is work, 1 when there is none.",
        ),
    ],
};

const DETAILS: &str = r#"
Database mode (no FILE): claims the due captures of the queue in one transaction (whole sessions at
a time, so two runs never take the same row; only closed turns: rows after a session's last Stop
wait for it, unless the session ended or they are older than MEM_COMPRESS_OPEN_TURN_SECS, default
600; rows a killed run left in processing are taken back when its process is gone or after 30
minutes), groups them by session and turn (the tool calls between two user prompts, the prompt being
the why and the assistant's last message the outcome), and turns each group into 1 to 3
observations: one LLM call per group, split when it does not fit MEM_LLM_PROMPT_TOKENS. Each capture
is redacted again (mem-capture(1)'s rules and config.toml's [redact]), then cut to 32,000 characters
(head and tail), before it is used or sent. An observation whose title shares more than 80% of its
words with one of the same project from the last hour is merged into it. Then every session that
stopped or ended with nothing pending gets a summary, key files and key decisions (again when it
gains observations after a resume); the transcript's last messages it quotes are redacted before
they are cut. Output: one observation record per new observation, then a summary record with the
counts captures, groups, chunks, observations, merged, notes, skipped, errors, reclaimed, llm_calls,
llm_failed_calls, tokens_in, tokens_out, fallbacks, over_budget, summaries.

Where each capture ends: tool calls become part of an observation (observation_sources links them)
and are marked done; a note becomes a manual observation; the other rows are marked done with a
documented skip_reason: prompt (a UserPromptSubmit, used as the why of its turn), turn-end (a Stop,
whose last message is used as the outcome), marker (PreCompact, SubagentStop and any other event).
When the LLM fails (connection errors, 429, 5xx and answers that are not the JSON asked for are
retried 3 times with exponential backoff from MEM_LLM_BACKOFF_MS, attempts, next_attempt_at and
last_error kept in the queue; other 4xx are not retried) the captures are marked error with the
reason and compressed by the heuristic backend instead: nothing is dropped.

Backends (MEM_LLM): heuristic (default; offline and deterministic), anthropic (Messages API,
ANTHROPIC_API_KEY, MEM_LLM_MODEL default claude-haiku-4-5, MEM_LLM_URL default
https://api.anthropic.com), openai (OpenAI-compatible chat completions at MEM_LLM_URL, e.g.
http://127.0.0.1:11434/v1 for Ollama; MEM_LLM_API_KEY or OPENAI_API_KEY), claude-cli (claude -p with
JSON output, run with MEM_DISABLE=1 and hooks disabled). Every call's tokens in and out and latency
go to event_log (event llm_call); past MEM_LLM_DAILY_TOKENS in a UTC day the heuristic takes over
and event_log says so (llm_budget_exhausted).

Filter mode (FILE or -): reads capture records (JSONL), writes observation records (with the ids of
their captures in sources); other record types pass through; nothing is stored (LLM calls are still
logged in event_log).
"#;

/// Turn queued captures into typed observations and session summaries.
#[derive(Debug, Parser)]
#[command(name = "mem-compress", version, long_about = None)]
pub struct Args {
    /// Read capture records from FILE (- for stdin) and write observation records; store nothing.
    #[arg(value_name = "FILE")]
    pub input: Option<PathBuf>,
    /// Backend for this run (anthropic, openai, claude-cli, heuristic), overriding MEM_LLM.
    #[arg(long, value_name = "NAME")]
    pub backend: Option<String>,
    /// Exit 0 when captures or session summaries are waiting, 1 when not; do nothing else.
    #[arg(long, conflicts_with = "input")]
    pub check: bool,
    /// Do not write session summaries.
    #[arg(long)]
    pub no_summaries: bool,
    /// Sessions claimed per round.
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub sessions_per_round: usize,
    #[command(flatten)]
    pub common: Common,
}

const COLUMNS: &[&str] = &["id", "kind", "title", "files_modified"];

/// Runs `f` in an IMMEDIATE transaction on a shared connection.
fn tx<T>(conn: &Connection, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
    let t = rusqlite::Transaction::new_unchecked(conn, TransactionBehavior::Immediate)?;
    let out = f(&t)?;
    t.commit()?;
    Ok(out)
}

fn backend(io: &Io, cfg: &Config, args: &Args) -> Result<Backend> {
    let (b, warning) = Backend::from_config(cfg, args.backend.as_deref())?;
    if let Some(w) = warning {
        io.warn(w);
    }
    Ok(b)
}

pub fn run(args: Args, io: &mut Io) -> Result<Outcome> {
    let home = config::data_home();
    let cfg = Config::load(&home)?;
    crate::capture::redact::configure(&cfg)?;
    if args.check {
        let conn = store::open(&cfg.db_path())?;
        queue::reclaim_stale(&conn, chrono::Duration::minutes(30))?;
        let work = queue::has_work(&conn, &store::now(), open_turn(&cfg)?)?
            || (!args.no_summaries && !summary::due(&conn)?.is_empty());
        return Ok(if work {
            Outcome::Ok
        } else {
            Outcome::NothingFound
        });
    }
    let b = backend(io, &cfg, &args)?;
    let opts = Options::from_config(&cfg)?;
    match &args.input {
        Some(p) => filter(io, &cfg, b, opts, p),
        None => database(io, &cfg, b, opts, &args),
    }
}

/// How long a turn without its Stop waits before it is compressed anyway.
fn open_turn(cfg: &Config) -> Result<chrono::Duration> {
    Ok(chrono::Duration::seconds(
        cfg.get_num("compress_open_turn_secs")?.unwrap_or(600),
    ))
}

fn add(counts: &mut BTreeMap<String, u64>, k: &str, n: u64) {
    *counts.entry(k.into()).or_default() += n;
}

fn stats_into(counts: &mut BTreeMap<String, u64>, c: &Compressor) {
    add(counts, "chunks", c.stats.chunks);
    add(counts, "llm_calls", c.stats.calls);
    add(counts, "llm_failed_calls", c.stats.failed_calls);
    add(counts, "tokens_in", c.stats.tokens_in);
    add(counts, "tokens_out", c.stats.tokens_out);
    add(counts, "fallbacks", c.stats.fallbacks);
    add(counts, "over_budget", c.stats.over_budget);
}

fn finish(
    io: &mut Io,
    recs: &[Observation],
    counts: BTreeMap<String, u64>,
    start: Instant,
) -> Result<()> {
    io.listing(recs, COLUMNS)?;
    io.summary(counts, start)
}

fn database(io: &mut Io, cfg: &Config, b: Backend, opts: Options, args: &Args) -> Result<Outcome> {
    let start = Instant::now();
    // Read before any work, so a bad value stops the run before it changes anything.
    let raw_days: u32 = cfg
        .get_num("raw_response_days")?
        .unwrap_or(RAW_RESPONSE_DAYS);
    let conn = store::open(&cfg.db_path())?;
    let pid = std::process::id() as i64;
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    for k in [
        "captures",
        "groups",
        "observations",
        "merged",
        "notes",
        "skipped",
        "errors",
        "summaries",
    ] {
        counts.insert(k.into(), 0);
    }
    let reclaimed = queue::reclaim_stale(&conn, chrono::Duration::minutes(30))?;
    counts.insert("reclaimed".into(), reclaimed as u64);
    let open_turn = open_turn(cfg)?;
    if b.kind != Kind::Heuristic {
        io.info(format!("backend {} ({})", b.kind.name(), b.model));
    }
    let mut comp = Compressor::new(b, opts, Some(&conn));
    let mut recs: Vec<Observation> = Vec::new();
    loop {
        let now = store::now();
        let rows = tx(&conn, |c| {
            queue::claim(c, pid, args.sessions_per_round, &now, open_turn)
        })?;
        if rows.is_empty() {
            break;
        }
        add(&mut counts, "captures", rows.len() as u64);
        let grouped = compress::group(rows.iter().map(Item::from_row).collect());
        tx(&conn, |c| {
            for (id, why) in &grouped.skips {
                queue::finish(c, &[*id], "done", None, Some(why))?;
            }
            Ok(())
        })?;
        add(&mut counts, "skipped", grouped.skips.len() as u64);
        for n in &grouped.notes {
            let mut o = compress::note_observation(n);
            compress::finish_observation(&mut o, &n.session_id, n.project.as_deref(), &[n.id]);
            let now = store::now();
            let (id, _) = tx(&conn, |c| {
                let r = dedup::store(c, &o, &now)?;
                queue::finish(c, &[n.id], "done", None, None)?;
                Ok(r)
            })?;
            o.id = Some(id);
            o.created_at = Some(now);
            recs.push(o);
            add(&mut counts, "notes", 1);
        }
        for mut g in grouped.groups {
            add(&mut counts, "groups", 1);
            add(&mut counts, "skipped", g.boundaries.len() as u64);
            if g.prompt.is_none() {
                g.prompt = queue::prompt_before(&conn, &g.session_id, &g.items[0].created_at)?;
            }
            let chunks = comp.compress(&g)?;
            let now = store::now();
            let worked_at = g.items.iter().map(|i| i.created_at.clone()).max();
            let stored = tx(&conn, |c| {
                let mut out = Vec::new();
                for ch in &chunks {
                    for o in &ch.observations {
                        let mut o = o.clone();
                        compress::finish_observation(
                            &mut o,
                            &g.session_id,
                            g.project.as_deref(),
                            &ch.ids,
                        );
                        o.created_at = worked_at.clone().or_else(|| Some(now.clone()));
                        let (id, merged) = dedup::store(c, &o, &now)?;
                        o.id = Some(id);
                        out.push((o, merged));
                    }
                    let status = if ch.error.is_some() { "error" } else { "done" };
                    queue::finish(c, &ch.ids, status, ch.error.as_deref(), None)?;
                }
                for (id, why) in &g.boundaries {
                    queue::finish(c, &[*id], "done", None, Some(why))?;
                }
                Ok(out)
            })?;
            for ch in &chunks {
                if ch.error.is_some() {
                    add(&mut counts, "errors", ch.ids.len() as u64);
                }
            }
            for (o, merged) in stored {
                if merged {
                    add(&mut counts, "merged", 1);
                } else {
                    add(&mut counts, "observations", 1);
                    recs.push(o);
                }
            }
        }
    }
    if !args.no_summaries {
        for sid in summary::due(&conn)? {
            let now = store::now();
            if tx(&conn, |c| summary::summarize(c, &sid, &now))? {
                add(&mut counts, "summaries", 1);
            }
        }
    }
    stats_into(&mut counts, &comp);
    drop(comp);
    let dropped = drop_raw(cfg, &conn, raw_days)?;
    counts.insert("raw_dropped".into(), dropped as u64);
    finish(io, &recs, counts, start)?;
    Ok(Outcome::Ok)
}

/// Days a processed tool capture keeps its raw response (MEM_RAW_RESPONSE_DAYS).
const RAW_RESPONSE_DAYS: u32 = 7;

/// Drops old raw tool responses (see `queue::drop_raw_responses`). The query reads every
/// queued payload, so it runs once a day (every run when the days are 0).
fn drop_raw(cfg: &Config, conn: &Connection, days: u32) -> Result<usize> {
    let marker = cfg.db_path().with_file_name(".raw-dropped");
    if !store::daily_due(&marker, days == 0) {
        return Ok(0);
    }
    let now = chrono::Utc::now();
    let before = (now - chrono::Duration::days(i64::from(days)))
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let n = tx(conn, |c| {
        queue::drop_raw_responses(c, &before, &store::now())
    })?;
    store::mark_done(&marker);
    Ok(n)
}

fn filter(
    io: &mut Io,
    cfg: &Config,
    b: Backend,
    opts: Options,
    path: &std::path::Path,
) -> Result<Outcome> {
    let start = Instant::now();
    let mut input = Input::open(path)?;
    let mut items = Vec::new();
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    while let Some((no, v)) = input.next(io)? {
        match v.get("type").and_then(Value::as_str) {
            Some("capture") => match serde_json::from_value::<Capture>(v) {
                Ok(c) => items.push(Item::from_capture(c)),
                Err(e) => input.bad(io, no, format!("invalid capture record: {e}")),
            },
            _ => {
                // Not ours: passed through untouched (a summary of the previous tool too).
                if v.get("type").and_then(Value::as_str) != Some("summary") {
                    io.record(&v)?;
                }
                add(&mut counts, "passed_through", 1);
            }
        }
    }
    add(&mut counts, "captures", items.len() as u64);
    // LLM calls are accounted in the store even in filter mode.
    let conn = if b.kind != Kind::Heuristic {
        Some(store::open(&cfg.db_path())?)
    } else {
        None
    };
    let mut comp = Compressor::new(b, opts, conn.as_ref());
    let grouped = compress::group(items);
    add(&mut counts, "skipped", grouped.skips.len() as u64);
    add(&mut counts, "groups", grouped.groups.len() as u64);
    add(
        &mut counts,
        "skipped",
        grouped
            .groups
            .iter()
            .map(|g| g.boundaries.len() as u64)
            .sum(),
    );
    let mut recs = Vec::new();
    for n in &grouped.notes {
        let mut o = compress::note_observation(n);
        compress::finish_observation(&mut o, &n.session_id, n.project.as_deref(), &[n.id]);
        recs.push(o);
    }
    for g in &grouped.groups {
        for ch in comp.compress(g)? {
            if ch.error.is_some() {
                add(&mut counts, "errors", ch.ids.len() as u64);
            }
            for mut o in ch.observations {
                compress::finish_observation(&mut o, &g.session_id, g.project.as_deref(), &ch.ids);
                recs.push(o);
            }
        }
    }
    add(&mut counts, "observations", recs.len() as u64);
    stats_into(&mut counts, &comp);
    drop(comp);
    finish(io, &recs, counts, start)?;
    input.finish()?;
    Ok(Outcome::Ok)
}
