//! mem-context: the context block for SessionStart, and relevant memories for each prompt.

use std::path::Path;

use clap::{CommandFactory, Parser};
use serde_json::Value;

use crate::cli::{self, Common, Format, Io, Outcome};
use crate::config::{self, Config};
use crate::context::request::Request;
use crate::context::{self, Source};
use crate::{Result, project, store};

mod details;
use details::DETAILS;

pub const TOOL: crate::cli::Tool = crate::cli::Tool {
    name: "mem-context",
    command: || Args::command(),
    details: DETAILS,
    examples: &[
        (
            "mem-context",
            "Show the block the next session in this project would start with.",
        ),
        (
            "mem-context --format json | jq '.layers[] | {name, tokens, reason}'",
            "See which layers made it in, and why the others did not.",
        ),
        (
            "mem-context --prompt 'why does the token refresh race?'",
            "What a prompt would bring in (nothing when nothing is clearly relevant).",
        ),
        (
            "mem-context --hook < session-start.json",
            "What the SessionStart hook runs.",
        ),
    ],
};

/// Print the context a Claude Code session starts with, or the memories relevant to a prompt.
#[derive(Debug, Parser)]
#[command(name = "mem-context", version, long_about = None)]
pub struct Args {
    /// Read a hook payload on stdin (SessionStart, UserPromptSubmit, PreToolUse, PostToolUse,
    /// PostToolUseFailure, SubagentStart) and print the hook's JSON; never fails.
    #[arg(long)]
    pub hook: bool,
    /// Prompt mode: memories relevant to this text (with --hook, to the payload's prompt).
    #[arg(long, value_name = "TEXT", num_args = 0..=1, default_missing_value = "")]
    pub prompt: Option<String>,
    /// Project directory or name (default: the current directory's project).
    #[arg(long)]
    pub project: Option<String>,
    /// The session that is starting (left out of the session list).
    #[arg(long)]
    pub session: Option<String>,
    /// Why the session starts: startup, resume, compact or clear.
    #[arg(long, value_enum, default_value_t = Source::Startup)]
    pub source: Source,
    /// Token budget of the block (default $MEM_CONTEXT_TOKENS, else 2000).
    #[arg(long, value_name = "N")]
    pub budget: Option<usize>,
    /// Build as of this moment (ISO date or datetime) instead of now: relative times and
    /// recency, so the block, are then reproducible (replays, tests).
    #[arg(long, env = "MEM_NOW", value_name = "TIME")]
    pub now: Option<String>,
    #[command(flatten)]
    pub common: Common,
}

pub fn run(args: Args, io: &mut Io) -> Result<Outcome> {
    if args.hook {
        return Ok(run_hook(io, &args));
    }
    let home = config::data_home();
    let cfg = Config::load(&home)?;
    let budget = budget(&cfg, args.budget)?;
    // Read only when a search runs, where a failure becomes a note: checked up front.
    context::request::thresholds(&cfg)?;
    let dir = std::env::current_dir()?;
    let Some(conn) = store::open_if_present(&cfg.home.db())? else {
        return Ok(io.no_memories(&cfg.home.db()));
    };
    let project = match &args.project {
        Some(p) => store::projects::resolve(&conn, p)?.into_iter().next(),
        None => Some(project::identify(&dir.display().to_string()).root),
    };
    let req = Request {
        project,
        session: args.session.clone(),
        source: args.source,
        prompt: args.prompt.clone(),
        budget,
        dir: Some(dir),
        now_ms: now_ms(&args)?,
        load_model: false,
    };
    let rec = context::request::build(&home, &cfg, conn, &req)?;
    // Markdown unless a record is asked for: the block is the product, even in a pipe.
    match args.common.format {
        Some(Format::Json | Format::Jsonl) => io.document(&rec)?,
        _ => {
            use std::io::Write;
            io.out.write_all(rec.text.as_bytes())?;
        }
    }
    Ok(if rec.text.is_empty() {
        Outcome::NothingFound
    } else {
        Outcome::Ok
    })
}

fn now_ms(args: &Args) -> Result<Option<i64>> {
    args.now
        .as_deref()
        .map(|t| {
            crate::search::parse_bound(t, false)
                .map_err(|e| crate::Error::Usage(format!("--now: {e}")))
        })
        .transpose()
}

fn budget(cfg: &Config, flag: Option<usize>) -> Result<usize> {
    config::CONTEXT_TOKENS.or_flag("--budget", flag, cfg)
}

/// Hook mode: read the payload, print the hook JSON or nothing, and never fail.
fn run_hook(io: &mut Io, args: &Args) -> Outcome {
    if let Some(v) = cli::guard_hook("mem-context", |home| hook_inner(home, args)) {
        // A closed stdout is Claude Code's business; nothing to report.
        let _ = io.record(&v);
    }
    Outcome::Ok
}

fn hook_inner(home: &Path, args: &Args) -> Result<Option<Value>> {
    let Some(a) = crate::capture::recall::admit(home, "mem-context")? else {
        return Ok(None);
    };
    let event = a.payload.event.clone().unwrap_or_default();
    let event = event.as_str();
    // Recall is mem-capture --recall's since it moved to the lighter binary; settings written
    // by an earlier mem-install still send these events here.
    if matches!(event, "PreToolUse" | "PostToolUse" | "PostToolUseFailure") {
        let now = now_ms(args)?.unwrap_or_else(|| chrono::Utc::now().timestamp_millis());
        return crate::capture::recall::answer(home, &a, now);
    }
    let crate::capture::recall::Admitted {
        payload,
        cfg,
        dir,
        project: pr,
    } = a;
    let wait = store::Wait::Until(std::time::Instant::now() + crate::capture::tool::HOOK_WAIT);
    let is_prompt = args.prompt.is_some() || event == "UserPromptSubmit";
    let prompt = if is_prompt {
        Some(
            args.prompt
                .clone()
                .filter(|p| !p.is_empty())
                .or(payload.prompt.clone())
                .unwrap_or_default(),
        )
    } else {
        None
    };
    let req = Request {
        project: args.project.clone().or(pr.map(|p| p.root)),
        session: payload.session_id.clone(),
        source: payload
            .source
            .as_deref()
            .map(Source::parse)
            .unwrap_or(args.source),
        prompt,
        budget: match event {
            // A subagent gets a short block: the project's context, not the session's start.
            "SubagentStart" => budget(&cfg, args.budget)?.min(context::recall::SUBAGENT_TOKENS),
            _ => budget(&cfg, args.budget)?,
        },
        dir: dir.map(std::path::PathBuf::from),
        now_ms: now_ms(args)?,
        load_model: false,
    };
    let Some(conn) = store::open_if_present_with(&cfg.home.db(), wait)? else {
        return Ok(None);
    };
    let rec = context::request::build(home, &cfg, conn, &req)?;
    // A subagent needs no welcome: the session it works for got that.
    if rec.text.is_empty() || (event == "SubagentStart" && rec.text == context::request::WELCOME) {
        return Ok(None);
    }
    let answers = if event == "SubagentStart" {
        event
    } else {
        &rec.event
    };
    Ok(Some(crate::context::hook_json(answers, &rec.text)))
}
