//! mem-compress: queued captures into typed observations and session summaries.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use clap::{CommandFactory, Parser};
use serde_json::Value;

use crate::Result;
use crate::cli::{Common, Input, Io, Outcome};
use crate::compress::{self, Item, Options, summary};
use crate::config::{self, Config};
use crate::llm::{Backend, Kind};
use crate::record::{Capture, Observation};
use crate::store::{self, queue};

pub const TOOL: crate::cli::Tool = crate::cli::Tool {
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
Database mode (no FILE): first discovers the projects of sessions with captures waiting: a session
started where no project is (the home directory, a folder of repositories such as ~/workspace)
moves to the project 60% of the files it touched agree on (an agent worktree's repository, a known
project, a marker such as .git or Cargo.toml on disk or among the paths, else the folder below
home), with its captures, observations, function map and the learnings drawn from it alone; its cwd
is kept, and a session started in a project root stays there. A project root on disk with no
description gets its README's (else CLAUDE.md's) first paragraph. Then it claims the due captures of the queue in one transaction (whole sessions at
a time, the latest first, so two runs never take the same row and today's work comes before an
imported history; only closed turns: rows after a session's last Stop
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
they are cut. With --budget SECS (what mem pipeline runs it with) no turn or summary
starts after SECS seconds (one always runs): what was claimed and not reached goes back to the
queue (counted in released) for the next run. Output: one observation record per new observation, then a summary record with the
counts captures, groups, chunks, observations, merged, notes, skipped, errors, reclaimed, rescoped,
llm_calls, llm_failed_calls, tokens_in, tokens_out, fallbacks, over_budget, switched_off, summaries,
released.

Where each capture ends: tool calls become part of an observation (observation_sources links them)
and are marked done; a note becomes a manual observation; the other rows are marked done with a
documented skip_reason: prompt (a UserPromptSubmit, used as the why of its turn), turn-end (a Stop,
whose last message is used as the outcome), marker (PreCompact, SubagentStop and any other event).
When the LLM fails the captures are marked error with the reason and compressed by the heuristic
backend instead: nothing is dropped. Connection errors, 429, 5xx and answers that are not the JSON
asked for are retried 3 times with exponential backoff from MEM_LLM_BACKOFF_MS, or after the
server's retry-after (at most 30 s), with jitter; attempts, next_attempt_at and last_error are kept
in the queue. An answer cut at its max_tokens is asked again once with twice the room. Refusals,
content filters and other 4xx are not retried. Errors no call can get past (401, 403, 404, a spend
limit, no credit or quota, a claude CLI that is not logged in or out of its usage) switch the
backend off for the rest of the run: one warning and one event_log event (llm_disabled), and the
heuristic compresses the remaining chunks (counted in switched_off).

Backends (MEM_LLM): heuristic (default; offline and deterministic), anthropic (Messages API,
ANTHROPIC_API_KEY, MEM_LLM_MODEL default claude-haiku-4-5, MEM_LLM_URL default
https://api.anthropic.com, a /v1 at its end or not; extended thinking off), openai
(OpenAI-compatible chat completions at MEM_LLM_URL, e.g. http://127.0.0.1:11434/v1 for Ollama, /v1
added to a bare host; MEM_LLM_API_KEY or OPENAI_API_KEY; a strict JSON schema; gpt-5 and o1/o3/o4
models get max_completion_tokens and no temperature), claude-cli (claude -p with
JSON output, run with MEM_DISABLE=1, hooks disabled, no tools, no MCP servers, no session file and
its own system prompt and its own retries off, in a scratch directory). Every call's tokens in (cache reads and writes
included) and out and latency go to event_log (event llm_call), failed calls' too; past
MEM_LLM_DAILY_TOKENS in a UTC day the heuristic takes over (a failed call is not retried past
it) and event_log says so (llm_budget_exhausted).

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
    /// Start no turn after SECS seconds (one always runs) and leave the rest, the oldest
    /// sessions, to the next run (mem pipeline passes what is left of MEM_EMBED_BUDGET_S).
    #[arg(long, value_name = "SECS", conflicts_with = "input", value_parser = crate::cli::finite)]
    pub budget: Option<f64>,
    #[command(flatten)]
    pub common: Common,
}

const COLUMNS: &[&str] = &["id", "kind", "title", "files_modified"];

fn backend(io: &Io, cfg: &Config, args: &Args) -> Result<Backend> {
    let (b, notice) = Backend::from_config(cfg, args.backend.as_deref())?;
    io.notices(&notice);
    Ok(b)
}

pub fn run(args: Args, io: &mut Io) -> Result<Outcome> {
    let home = config::data_home();
    let cfg = Config::load(&home)?;
    crate::capture::redact::configure(&cfg)?;
    if args.check {
        let conn = store::open(&cfg.home.db())?;
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
        config::COMPRESS_OPEN_TURN_SECS.get(cfg)?,
    ))
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
    if b.kind != Kind::Heuristic {
        io.info(format!("backend {} ({})", b.kind.name(), b.model));
    }
    let bar = crate::render::progress_bar(
        io,
        "mem-compress {bar:30} {pos}/{len} captures {per_sec} ETA {eta}",
    );
    let run = compress::database::Run {
        sessions_per_round: args.sessions_per_round,
        summaries: !args.no_summaries,
        open_turn: open_turn(cfg)?,
        progress: bar.clone().map(|b| {
            Box::new(move |done: u64, total: u64| {
                b.set_length(total.max(done));
                b.set_position(done);
            }) as Box<dyn Fn(u64, u64)>
        }),
        until: args
            .budget
            .map(|s| start + std::time::Duration::from_secs_f64(s.max(0.0))),
    };
    let done = compress::database::compress_queue(cfg, b, opts, &run);
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let done = done?;
    io.notices(&done.notices);
    finish(io, &done.observations, done.counts, start)?;
    Ok(Outcome::Ok)
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
                compress::database::add(&mut counts, "passed_through", 1);
            }
        }
    }
    let done = compress::database::compress_items(cfg, b, opts, items)?;
    io.notices(&done.notices);
    for (k, n) in done.counts {
        compress::database::add(&mut counts, &k, n);
    }
    finish(io, &done.observations, counts, start)?;
    input.finish()?;
    Ok(Outcome::Ok)
}
