//! mem: the git-style front. `mem search q` runs `mem-search q`.

use std::path::{Path, PathBuf};

use clap::{CommandFactory, Parser, Subcommand};

use crate::cli::{Common, Io, Outcome, Tool};
use crate::config::{self, Config};
use crate::install::{docs, man};
use crate::{Error, Result, store};
use crate::{pipeline, programs, tools};

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
            "mem completions bash > ~/.local/share/bash-completion/completions/mem",
            "Install bash completions for every tool.",
        ),
    ],
};

const DETAILS: &str = r#"
mem TOOL ARGS runs mem-TOOL ARGS, found beside the mem binary first, then on PATH. Its exit status
is the tool's.

mem pipeline runs the background stages in order, mem-compress (required), mem-ast, mem-learn,
mem-embed and mem-index (and mem-prune once a day; first, when the stored texts were redacted by an
older redactor than this memkit's, what mem-redact does), each found in the directory mem was run from, else in MEM_BIN_DIR, else on PATH; it repeats them
until mem-compress --check finds nothing left (at most 20 rounds), then checkpoints the WAL into
mem.db. Runs take turns on $MEM_HOME/pipeline.lock (flock; it holds the running pid): a run that
finds it taken exits 0 at once, and the running one takes the work that arrived meanwhile. What the
stages say and how they fail goes to $MEM_HOME/logs/pipeline.log. With --detach it starts the run in
its own session, detached from the caller's terminal and pipes, and returns at once: what the Stop
and SessionEnd hooks run. scripts/mem-pipeline is the same command for those who know it by that
name. MEM_DISABLE=1 makes it a no-op.

mem status shows the state of the memory at a glance, read-only: the database and WAL sizes, counts
of sessions, observations, active learnings and captures, the queue by status and its errors by
class, the last pipeline run and what it logged, the embedding model in use and the observations
without its vector, each index as mem-index --check sees it, LLM tokens spent today against
MEM_LLM_DAILY_TOKENS, the disk the indexes and models take, and which settings files
(~/.claude/settings.json, the project's .claude/settings.json and settings.local.json) register
memkit's hooks, naming hook programs that no longer exist. problems says what needs doing (the
checks of mem-eval health, plus missing or broken hooks). Always exit 0: mem-eval health is the
check that fails.

mem doctor checks the memory and prints one check record per check (spool, queue, embeddings,
indexes, hooks, redaction) with ok, what it found and the command that fixes it; exit 1 when one fails. With
--fix it runs the fixes of the failed ones: stores what hooks left in spool/, puts captures in error
that no observation came from back in the queue, runs mem-embed and mem-index, mem-index --rebuild
for an index that differs from the database, mem-install (with the directory this mem runs from)
for settings whose hook programs went missing (or the user's settings when none registers memkit),
mem-redact when the stored texts were redacted by an older redactor, then mem pipeline; each failed check says whether it passes now (fixed).

mem backup FILE writes a consistent copy of mem.db, including what only its write-ahead log holds
yet, to FILE (mode 0600, replaced in one rename) while the hooks keep writing. Copying mem.db alone
can miss the latest captures: restore by copying FILE over mem.db while nothing runs.

mem forget --obs ID… | --session ID | --project P | --match TEXT deletes memories everywhere:
the observations, the captures they came from (payloads included), their source links, the
sessions (with --session and --project: whole, with their function map, call graph and
event_log rows), vectors and the embedding cache entries of the forgotten texts, learnings'
sources, and event_log rows that hold the text (--match). A session summary that named a
forgotten observation is emptied, not written again. Then the database is vacuumed and its WAL
emptied (deleted rows are not left in free pages), and the BM25 and vector indexes are rebuilt
from what is left. It prints one forgotten record per kind with its row count (a table on a
terminal); --dry-run deletes nothing and prints the same counts. Events a hook spooled while the
database was busy (spool/) that match go too, so the next hook cannot store them. Observation ids are 17, o17 or
#17; a session is s17 (its number) or its session id. --match looks in the text of
observations, captures (payloads), session titles and summaries, learnings, event_log rows and the
function map, comparing ASCII letters in any case. Exit status 1 when nothing matched. Logs under $MEM_HOME/logs/ and Claude Code's own
transcripts are not touched.
"#;

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
const BUILTINS: &[&str] = &["pipeline", "backup", "forget", "status", "doctor"];

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
    // The detached run's stderr is the log itself: it writes each line once, there.
    let echo = !args.detached && !io.quiet;
    let prog = io.prog;
    match pipeline::run_here(&home, &mut |line| {
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
