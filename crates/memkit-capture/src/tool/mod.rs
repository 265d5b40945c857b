//! mem-capture: hook events, past transcripts and manual notes into the queue. Each mode's
//! front is a file of its own; the work is the crate's (`import`, `note`, `recall`, `spool`).

mod details;
mod hook;
mod import;
mod notes;
mod payloads;

use std::path::PathBuf;

use clap::{CommandFactory, Parser};

use crate::{Policy, redact, transcript};
use memkit_core::cli::{Common, Io, Outcome};
use memkit_core::config::{self, Config};
use memkit_core::store;
use memkit_core::{Error, Result};

pub use crate::HOOK_WAIT;

pub const TOOL: memkit_core::cli::Tool = memkit_core::cli::Tool {
    name: "mem-capture",
    command: || Args::command(),
    details: details::DETAILS,
    examples: &[
        (
            "mem-capture --hook < payload.json",
            "What Claude Code's hooks run: store one event, print nothing, exit 0.",
        ),
        (
            "mem-capture --recall < pre-tool-use.json",
            "What the PreToolUse and failure hooks run: a file's or an error's history, or nothing.",
        ),
        (
            "mem-capture --transcripts ~/.claude/projects",
            "Import every past session (re-running adds nothing).",
        ),
        (
            "mem-capture --note 'deploys need VPN' --tags ops,deploy",
            "Save a memory by hand.",
        ),
        (
            "jq -c '.[]' payloads.json | mem-capture -",
            "Store a batch of hook payloads from JSONL.",
        ),
    ],
};

/// Record Claude Code hook events, past session transcripts and manual notes into the memkit store.
#[derive(Debug, Parser)]
#[command(name = "mem-capture", version, long_about = None)]
pub struct Args {
    /// Read one hook payload on stdin, as Claude Code's hooks do; never fails.
    #[arg(long, conflicts_with_all = ["transcript", "transcripts", "note", "input"])]
    pub hook: bool,
    /// Recall hook (PreToolUse of a file tool, a failed call): print what memory holds about
    /// the file or the error as the hook's additionalContext, or nothing; never fails.
    #[arg(long, conflicts_with_all = ["hook", "transcript", "transcripts", "note", "input"])]
    pub recall: bool,
    /// Import past session transcripts (.jsonl files).
    #[arg(long, value_name = "FILE", num_args = 1..)]
    pub transcript: Vec<PathBuf>,
    /// Import every transcript under a directory, such as ~/.claude/projects.
    #[arg(long, value_name = "DIR", num_args = 1..)]
    pub transcripts: Vec<PathBuf>,
    /// Save a manual memory with this text.
    #[arg(long, value_name = "TEXT", conflicts_with_all = ["transcript", "transcripts", "input"])]
    pub note: Option<String>,
    /// Import notes from a JSONL file (- for stdin): one {"text", "tags"?, "project"?, "date"?,
    /// "id"?, "title"?} per line.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["note", "transcript", "transcripts", "input"])]
    pub notes: Option<PathBuf>,
    /// Tags for --note, comma-separated.
    #[arg(long, value_delimiter = ',', requires = "note")]
    pub tags: Vec<String>,
    /// Project for --note and --notes: a known project name or a directory (default: the
    /// current project).
    #[arg(long)]
    pub project: Option<String>,
    /// Store the hook payloads read from a JSONL file (- for stdin).
    #[arg(value_name = "FILE")]
    pub input: Option<PathBuf>,
    /// Run `mem pipeline` afterwards, so what was stored becomes searchable now.
    #[arg(long, conflicts_with = "hook")]
    pub pipeline: bool,
    /// Checkpoint and empty a large WAL (what a hook starts in the background).
    #[arg(long, hide = true)]
    pub checkpoint: bool,
    #[command(flatten)]
    pub common: Common,
}

pub fn run(args: Args, io: &mut Io) -> Result<Outcome> {
    if args.hook {
        return Ok(hook::run());
    }
    if args.recall {
        hook::recall(io);
        return Ok(Outcome::Ok);
    }
    let home = config::data_home();
    let cfg = Config::load(&home)?;
    redact::configure(&cfg)?;
    if args.checkpoint {
        store::truncate_wal(&store::open_existing(&cfg.home.db())?);
        return Ok(Outcome::Ok);
    }
    let outcome = store_what_was_given(&args, io, &cfg)?;
    io.flush()?;
    if args.pipeline {
        run_pipeline(io)?;
    } else {
        io.tell("stored; it becomes searchable once `mem pipeline` has run (the Stop hook runs it; --pipeline runs it now)");
    }
    Ok(outcome)
}

fn store_what_was_given(args: &Args, io: &mut Io, cfg: &Config) -> Result<Outcome> {
    let policy = Policy::from_config(cfg)?;
    if let Some(text) = &args.note {
        return notes::note(io, cfg, text, &args.tags, args.project.as_deref());
    }
    if let Some(path) = &args.notes {
        return notes::notes(io, cfg, path, args.project.as_deref());
    }
    if args.project.is_some() {
        return Err(Error::Usage("--project goes with --note or --notes".into()));
    }
    if !args.transcript.is_empty() || !args.transcripts.is_empty() {
        let mut files = args.transcript.clone();
        for dir in &args.transcripts {
            files.extend(
                transcript::find_files(dir)
                    .map_err(|e| Error::input(dir.display().to_string(), None, e))?,
            );
        }
        return import::run(io, cfg, &policy, &files);
    }
    match &args.input {
        Some(p) => payloads::run(io, cfg, &policy, p),
        None => Err(Error::Usage(
            "nothing to do: give --hook, --transcript FILE, --transcripts DIR, --note TEXT or a FILE (- for stdin)".into(),
        )),
    }
}

/// `mem pipeline` in the foreground, its output on stderr (stdout carries this tool's records).
/// mem-capture links none of the pipeline's stages, so it runs the `mem` beside it (or on PATH).
fn run_pipeline(io: &Io) -> Result<()> {
    let mem = memkit_core::programs::command("mem");
    io.tell("running mem pipeline");
    let status = std::process::Command::new(&mem)
        .arg("pipeline")
        .stdout(std::io::stderr())
        .status()
        .map_err(|e| Error::other(format!("cannot run {}: {e}", mem.display())))?;
    if !status.success() {
        return Err(Error::other(format!(
            "mem pipeline failed ({status}); what was captured is stored, run `mem pipeline` again"
        )));
    }
    Ok(())
}
