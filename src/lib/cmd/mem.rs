//! mem: the git-style front. `mem search q` runs `mem-search q`.

use std::path::{Path, PathBuf};

use clap::{CommandFactory, Parser, Subcommand};

use crate::cli::{Common, Io, Outcome, Tool};

mod details;
use crate::config::{self, Config};
use crate::install::{docs, man};
use crate::{Error, Result, store};
use crate::{pipeline, programs, tools};
use details::DETAILS;

pub const TOOL: crate::cli::Tool = crate::cli::Tool {
    name: "mem",
    command: || Args::command(),
    details: DETAILS,
    examples: &[
        ("mem help", "List the installed tools."),
        (
            "mem capture --note 'use pnpm, not npm'",
            "Same as mem-capture --note ….",
        ),
        (
            "mem pipeline --detach",
            "Compress, embed and index what is pending, in the background.",
        ),
        (
            "mem backup ~/backups/memkit-$(date +%F).db",
            "A safe copy of the database, taken while sessions run.",
        ),
        (
            "mem forget --match 'acme-prod-password' --dry-run",
            "What forgetting every memory that mentions it would delete.",
        ),
        (
            "mem forget --obs o17,o18",
            "Forget two observations everywhere.",
        ),
        (
            "mem sync --dry-run",
            "What the next sync would share, record by record.",
        ),
        (
            "MEM_SYNC_REMOTE=git@github.com:me/memory.git MEM_SYNC_PROJECTS='~/code/*' mem sync",
            "Share the memories of the projects under ~/code with every machine that syncs there.",
        ),
        (
            "mem completions bash > ~/.local/share/bash-completion/completions/mem",
            "Install bash completions for every tool.",
        ),
    ],
};

/// memkit: a memory for Claude Code. `mem TOOL …` runs `mem-TOOL …`.
#[derive(Debug, Parser)]
#[command(name = "mem", version, long_about = None, disable_help_subcommand = true)]
pub struct Args {
    #[command(subcommand)]
    pub cmd: Option<Cmd>,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Debug, Subcommand)]
pub enum Cmd {
    /// List the installed tools, or show one tool's help.
    Help { tool: Option<String> },
    /// Print the version.
    Version,
    /// Compress, embed and index what is pending, under a lock, until nothing is left.
    Pipeline(PipelineArgs),
    /// The state of the memory at a glance (read-only): counts, queue, pipeline, embeddings, indexes, hooks, disk.
    Status,
    /// Check the memory, each check with the command that fixes it; --fix runs the fixes.
    Doctor {
        /// Run the fixes (drain the spool, re-queue failed captures, embed, rebuild indexes, re-register hooks, re-redact), then the pipeline.
        #[arg(long)]
        fix: bool,
    },
    /// Write a consistent copy of the database (what its WAL holds included) to FILE.
    Backup {
        /// Where the copy goes (replaced if it exists).
        file: PathBuf,
    },
    /// Delete memories everywhere (database, vectors, indexes) and say what went.
    Forget(super::forget::ForgetArgs),
    /// Share memories through a git remote: export this machine's, import everyone else's.
    Sync(super::sync::SyncArgs),
    /// Print shell completions for every tool.
    Completions { shell: clap_complete::Shell },
    /// Write the man pages into a directory (used to refresh man/man1).
    #[command(hide = true)]
    GenMan { dir: PathBuf },
    /// Run mem-TOOL with the remaining arguments.
    #[command(external_subcommand)]
    External(Vec<String>),
}

#[derive(Debug, clap::Args)]
pub struct PipelineArgs {
    /// Start the run in its own session and return at once (what the Stop hook runs).
    #[arg(long)]
    pub detach: bool,
    /// The detached run itself (started by --detach): logs only to the pipeline log.
    #[arg(long, hide = true, conflicts_with = "detach")]
    pub detached: bool,
    /// Work the whole backlog (embedding an imported history, say) in this run, with
    /// mem-embed's progress and time left on a terminal, instead of MEM_EMBED_BUDGET_S a run.
    #[arg(long, conflicts_with_all = ["detach", "detached"])]
    pub drain: bool,
}

/// Runs `mem`; `registry` is every tool (`cmd::ALL`), for `mem help`, completions and man pages.
pub fn run(args: Args, io: &mut Io, registry: &[Tool]) -> Result<Outcome> {
    match args.cmd {
        None | Some(Cmd::Help { tool: None }) => {
            let text = man::listing(registry, |name| programs::find(name).is_some());
            std::io::Write::write_all(&mut io.out, text.as_bytes())?;
            Ok(Outcome::Ok)
        }
        Some(Cmd::Help { tool: Some(t) }) if BUILTINS.contains(&t.as_str()) => {
            let mut cmd = Args::command();
            let sub = cmd
                .find_subcommand_mut(&t)
                .expect("a built-in is a subcommand");
            let help = sub.render_long_help().to_string();
            std::io::Write::write_all(&mut io.out, help.as_bytes())?;
            Ok(Outcome::Ok)
        }
        Some(Cmd::Help { tool: Some(t) }) => tools::exec(
            &format!("mem-{}", t.trim_start_matches("mem-")),
            &["--help".into()],
        ),
        Some(Cmd::Version) => {
            std::io::Write::write_all(
                &mut io.out,
                format!("memkit {}\n", env!("CARGO_PKG_VERSION")).as_bytes(),
            )?;
            Ok(Outcome::Ok)
        }
        Some(Cmd::Completions { shell }) => {
            std::io::Write::write_all(&mut io.out, &man::completions(registry, shell))?;
            Ok(Outcome::Ok)
        }
        Some(Cmd::Pipeline(p)) => pipeline(p, io),
        Some(Cmd::Backup { file }) => backup(&file, io),
        Some(Cmd::Status) => super::status::run(io),
        Some(Cmd::Doctor { fix }) => super::doctor::run(fix, io),
        Some(Cmd::Forget(f)) => super::forget::run(f, io),
        Some(Cmd::Sync(a)) => super::sync::run(a, io),
        Some(Cmd::GenMan { dir }) => {
            docs::write_man_pages(&dir, registry)?;
            Ok(Outcome::Ok)
        }
        Some(Cmd::External(argv)) => {
            let (tool, rest) = argv
                .split_first()
                .ok_or_else(|| Error::Usage("no tool given".into()))?;
            tools::exec(&format!("mem-{tool}"), rest)
        }
    }
}

/// The subcommands `mem` runs itself rather than as `mem-NAME`.
const BUILTINS: &[&str] = &["pipeline", "backup", "forget", "status", "doctor", "sync"];

fn pipeline(args: PipelineArgs, io: &mut Io) -> Result<Outcome> {
    if config::disabled() {
        return Ok(Outcome::Ok);
    }
    let home = config::data_home();
    if args.detach {
        // What the Stop hook runs: like every hook it never fails Claude Code; a run that
        // cannot start is logged and the next Stop tries again.
        if let Err(msg) = pipeline::start_detached(&home) {
            io.warn(msg);
        }
        return Ok(Outcome::Ok);
    }
    if args.detached {
        pipeline::in_background();
    }
    // The detached run's stderr is the log itself: it writes each line once, there.
    let echo = !args.detached && !io.quiet;
    let prog = io.prog;
    let progress = args.drain && io.stderr_tty && !io.quiet;
    match pipeline::run_here(&home, args.drain, progress, &mut |line| {
        if echo {
            eprintln!("{prog}: pipeline: {line}");
        }
    }) {
        Ok(true) => Ok(Outcome::Ok),
        Ok(false) => {
            io.info("another run holds the lock and takes what is pending");
            Ok(Outcome::Ok)
        }
        // Nobody waits for a detached run's status: the log has said it all.
        Err(_) if args.detached => Ok(Outcome::Ok),
        Err(e) => Err(e),
    }
}

fn backup(file: &Path, io: &mut Io) -> Result<Outcome> {
    let home = config::data_home();
    let db = Config::load(&home)?.home.db();
    if !db.exists() {
        return Ok(io.no_memories(&db));
    }
    let bytes = store::backup::backup(&db, file)?;
    if !io.quiet {
        eprintln!("{}: backup: {} ({bytes} bytes)", io.prog, file.display());
    }
    Ok(Outcome::Ok)
}
