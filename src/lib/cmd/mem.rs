//! mem: the git-style front. `mem search q` runs `mem-search q`.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

use clap::{CommandFactory, Parser, Subcommand};

use crate::cli::{Common, Io, Outcome};
use crate::config::{self, Config};
use crate::pipeline::{self, Ran};
use crate::{Context, Error, Result, store};

pub const TOOL: super::Tool = super::Tool {
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

/// Where a tool's binary is: beside this executable, else on PATH.
fn locate(name: &str) -> Option<PathBuf> {
    let beside = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(|d| d.join(name)));
    if let Some(p) = beside.filter(|p| p.is_file()) {
        return Some(p);
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    })
}

pub fn run(args: Args, io: &mut Io) -> Result<Outcome> {
    match args.cmd {
        None | Some(Cmd::Help { tool: None }) => {
            let rows: Vec<Vec<String>> = super::ALL
                .iter()
                .filter(|t| t.name != "mem" && locate(t.name).is_some())
                .map(|t| {
                    let about = (t.command)()
                        .get_about()
                        .map(|a| a.to_string())
                        .unwrap_or_default();
                    vec![t.name.trim_start_matches("mem-").to_string(), about]
                })
                .collect();
            let mut text = String::from("usage: mem TOOL [ARGS…]   (runs mem-TOOL)\n\ntools:\n");
            for r in &rows {
                text += &format!("  {:<10} {}\n", r[0], r[1]);
            }
            text += "\nalso: mem help TOOL · mem version · mem completions SHELL · man mem-TOOL\n";
            text +=
                "upkeep: mem pipeline [--detach] · mem backup FILE · mem forget … · mem prune\n";
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
        Some(Cmd::Help { tool: Some(t) }) => exec(
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
            std::io::Write::write_all(&mut io.out, &super::man::completions(shell))?;
            Ok(Outcome::Ok)
        }
        Some(Cmd::Pipeline(p)) => pipeline(p, io),
        Some(Cmd::Backup { file }) => backup(&file, io),
        Some(Cmd::Status) => super::status::run(io),
        Some(Cmd::Doctor { fix }) => super::doctor::run(fix, io),
        Some(Cmd::Forget(f)) => super::forget::run(f, io),
        Some(Cmd::GenMan { dir }) => {
            write_man_pages(&dir)?;
            Ok(Outcome::Ok)
        }
        Some(Cmd::External(argv)) => {
            let (tool, rest) = argv
                .split_first()
                .ok_or_else(|| Error::Usage("no tool given".into()))?;
            exec(&format!("mem-{tool}"), rest)
        }
    }
}

/// The subcommands `mem` runs itself rather than as `mem-NAME`.
const BUILTINS: &[&str] = &["pipeline", "backup", "forget", "status", "doctor"];

/// The path this binary was started by, made absolute, when it was started by a path rather
/// than a bare name looked up on PATH. Unlike `current_exe` it keeps symlinks: a bin directory
/// of links to the tools is where the other tools are.
fn invoked_path() -> Option<PathBuf> {
    let p = PathBuf::from(std::env::args_os().next()?);
    (p.components().count() > 1)
        .then(|| std::path::absolute(&p).ok())
        .flatten()
}

/// Where the pipeline looks for its stages before PATH: the directory mem was run from (else
/// the one it is in), then MEM_BIN_DIR.
fn tool_dirs(home: &Path) -> Vec<PathBuf> {
    let beside = invoked_path()
        .or_else(|| std::env::current_exe().ok())
        .and_then(|p| p.parent().map(Path::to_path_buf));
    let cfg = Config::load(home).unwrap_or_else(|_| Config::env_only(home));
    beside
        .into_iter()
        .chain(cfg.get("bin_dir").map(PathBuf::from))
        .collect()
}

fn pipeline(args: PipelineArgs, io: &mut Io) -> Result<Outcome> {
    if config::disabled() {
        return Ok(Outcome::Ok);
    }
    let home = config::data_home();
    if args.detach {
        // What the Stop hook runs: like every hook it never fails Claude Code; a run that
        // cannot start is logged and the next Stop tries again.
        let started = std::env::current_exe()
            .map_err(Error::from)
            .and_then(|exe| {
                let arg0 = invoked_path().unwrap_or_else(|| PathBuf::from("mem"));
                pipeline::detach(&home, &exe, arg0.as_os_str(), &["pipeline", "--detached"])
            });
        if let Err(e) = started {
            let msg = format!("cannot start a detached run: {e}");
            pipeline::log(
                &home,
                &format!("mem pipeline[{}]", std::process::id()),
                &msg,
            );
            io.warn(msg);
        }
        return Ok(Outcome::Ok);
    }
    let who = format!("mem pipeline[{}]", std::process::id());
    // The detached run's stderr is the log itself: it writes each line once, there.
    let echo = !args.detached && !io.quiet;
    let mut report = |line: &str| {
        pipeline::log(&home, &who, line);
        if echo {
            eprintln!("{}: pipeline: {line}", io.prog);
        }
    };
    let ran =
        pipeline::stages(&tool_dirs(&home)).and_then(|s| pipeline::run(&home, &s, &mut report));
    let err = match ran {
        Ok(Ran::Busy) => {
            io.info("another run holds the lock and takes what is pending");
            return Ok(Outcome::Ok);
        }
        Ok(Ran::Done { failed, .. }) if failed.is_empty() => return Ok(Outcome::Ok),
        Ok(Ran::Done { failed, .. }) => {
            let names: Vec<String> = failed
                .iter()
                .map(|(n, why)| format!("{n} ({why})"))
                .collect();
            Error::other(format!(
                "failed: {}; see {}",
                names.join(", "),
                pipeline::log_path(&home).display()
            ))
        }
        Err(e) => {
            pipeline::log(&home, &who, &format!("error: {e}"));
            e
        }
    };
    // Nobody waits for a detached run's status: the log has said it all.
    if args.detached {
        Ok(Outcome::Ok)
    } else {
        Err(err)
    }
}

fn backup(file: &Path, io: &mut Io) -> Result<Outcome> {
    let home = config::data_home();
    let db = Config::load(&home)?.db_path();
    if !db.exists() {
        return Ok(io.no_memories(&db));
    }
    let bytes = store::backup::backup(&db, file)?;
    if !io.quiet {
        eprintln!("{}: backup: {} ({bytes} bytes)", io.prog, file.display());
    }
    Ok(Outcome::Ok)
}

pub fn write_man_pages(dir: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir)
        .map_err_context(|| format!("cannot create directory {}", dir.display()))?;
    for t in super::ALL {
        let path = dir.join(format!("{}.1", t.name));
        let writing = || format!("cannot write {}", path.display());
        std::fs::write(&path, super::man::render(t)).map_err_context(writing)?;
        // Documentation is for everyone, whatever the private umask of memkit's tools.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644))
            .map_err_context(writing)?;
    }
    Ok(())
}

fn exec(name: &str, args: &[String]) -> Result<Outcome> {
    let Some(path) = locate(name) else {
        return Err(Error::Usage(format!(
            "unknown tool '{}': `mem help` lists the installed ones",
            name.trim_start_matches("mem-")
        )));
    };
    let err = std::process::Command::new(path).args(args).exec();
    Err(Error::Other(format!("cannot run {name}: {err}")))
}
