//! mem-capture: hook events, past transcripts and manual notes into the queue.

use std::collections::{BTreeMap, HashMap};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::{CommandFactory, Parser};
use rusqlite::Connection;
use serde_json::{Value, json};

use crate as capture;
use crate::spool::Spool;
use crate::transcript;
use crate::{Origin, Policy, Stored};
use memkit_core::cli::{self, Common, Input, Io, Outcome};
use memkit_core::config::{self, Config};
use memkit_core::hook::HookPayload;
use memkit_core::project::{self, Project};
use memkit_core::record::Capture;
use memkit_core::store::{self, events};
use memkit_core::{Error, Result};

pub const TOOL: memkit_core::cli::Tool = memkit_core::cli::Tool {
    name: "mem-capture",
    command: || Args::command(),
    details: DETAILS,
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

const DETAILS: &str = r#"
Where events go: every hook event adds one event_log row. SessionStart, UserPromptSubmit, the tool
events, PreCompact, SubagentStop, Stop and SessionEnd create or update their session. The queue
(pending_queue) receives UserPromptSubmit, PostToolUse, PostToolUseFailure, each call of a
PostToolBatch, PreCompact, SubagentStop, Stop (with the session's pending count) and notes.
SessionEnd closes the session. Any other event is logged only.

Skipped: tools in MEM_SKIP_TOOLS (default TodoRead, TodoWrite, LS) and calls whose input and
response together are under 50 characters; they keep their event_log row. Projects matching
MEM_EXCLUDE store nothing at all. Secrets are redacted before anything is written; then strings over
64 KiB keep their first 48 KiB and last 16 KiB.

Redaction applies to every string of a payload, a transcript, a note and a spooled payload, and each
secret becomes [REDACTED:<kind>]: tokens known by their prefix (AKIA, ghp_, github_pat_, glpat-,
sk-, sk-ant-, sk_live_, sk_test_, xoxb-, AIza, npm_, hf_, SG., hvs. and more), private key blocks
(PEM, OpenSSH, PGP, also without their END line), JWTs, passwords in URLs
(postgres://user:PASS@host), Slack and Discord webhook URLs, Authorization and Cookie headers, Basic
and Bearer credentials, signed-URL parameters, password hashes, passwords on command lines (mysql
-pPASS, curl -u user:PASS, sshpass -p, redis-cli -a, docker login -p, openssl pass:, .netrc),
assignments whose name says secret (SECRET_KEY = '...', AWS_SECRET_ACCESS_KEY=..., export
X_TOKEN=..., --password VALUE, "api_key": ...), a password told in prose ("the staging db password
is ..."), in JSON any value under a key that names a secret (numbers included) or the value of a
{"name": "DB_PASSWORD", "value": ...} pair, <private>...</private> spans, and long random-looking
strings (high_entropy; hashes, UUIDs, paths, base64 of plain text and the ids Claude Code makes are
kept). Code that only names a secret (password = get_password(), token: Optional[str],
${DB_PASSWORD}) is kept.

config.toml's [redact] table adjusts this: patterns = [{kind = "employee_id", regex =
"EMP-[0-9]{6}"}] redacts more (the whole match, or its group named secret, as
[REDACTED:employee_id]); allow = ["AKIAIOSFODNN7EXAMPLE"] lists exact secrets to keep, allow_regex =
["test_[a-z]+"] regexes a secret (or the random-looking word holding it) matches whole. A bad entry
is a usage error naming it (exit 2); --hook logs it and applies the valid ones.

--hook never fails Claude Code: whatever happens it exits 0 with nothing on stdout; problems go to
$MEM_HOME/logs/mem-capture.log and event_log. A hook waits at most 0.5 s for the database in all.
When it cannot be written (held by another process, full, read-only) the redacted payload is kept in
$MEM_HOME/spool/ (when the data home itself cannot be written, in $TMPDIR/memkit-<uid>/<hash of the
data home>/spool/) and stored exactly once by the next hook that can, with an event_log row
'spooled'; an event that could not even be spooled leaves an empty marker file that the next run
records as 'capture_lost'. MEM_EXCLUDE globs (comma-separated; commas inside {a,b} belong to the
glob; ~/ and $HOME/ expanded) exclude a project when they match its root, its name, the event's
directory or any directory above them; a glob that does not parse excludes the path it spells (a
hook logs it, the other tools refuse it with exit 2); --note in an excluded project stores nothing
and exits 2. A lone UTF-16 surrogate escape in a payload or transcript line (a string cut mid-emoji)
becomes U+FFFD instead of losing the line.

Transcript import rebuilds what the hooks would have recorded: typed prompts, tool calls paired with
their results by tool_use_id (is_error results become PostToolUseFailure), a Stop at the end of each
turn, subagent files (agent-*.jsonl beside the session or under <session>/subagents/) attached to
their parent session, compaction boundaries as PreCompact, and summary lines as the title of the
session they describe. Re-importing adds nothing. Each file is stored in one transaction that also
records its size and modification time, so a rerun reads only new or changed files: an import
stopped anywhere (Ctrl-C, kill -9, a full disk) resumes where it stopped, and a daily import of
~/.claude/projects reads only that day's sessions. Files are parsed on every core a batch (about 16
MB) ahead of the store, so memory stays bounded whatever the history's size; on a terminal a
progress bar shows the bytes done, the rate and the time left. Output: one session record per
session read, then a summary record with the counts files, files_unchanged, sessions, prompts,
tool_calls, queued, duplicates, skipped, unpaired, summaries, titles_set, bad_lines.
"#;

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
        return Ok(run_hook());
    }
    if args.recall {
        capture::recall::run_hook(io);
        return Ok(Outcome::Ok);
    }
    let home = config::data_home();
    let cfg = Config::load(&home)?;
    capture::redact::configure(&cfg)?;
    if args.checkpoint {
        store::truncate_wal(&store::open_existing(&cfg.db_path())?);
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
        return note(io, cfg, text, &args.tags, args.project.as_deref());
    }
    if let Some(path) = &args.notes {
        return notes(io, cfg, path, args.project.as_deref());
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
        return capture::import::run(io, cfg, &policy, &files);
    }
    match &args.input {
        Some(p) => payloads(io, cfg, &policy, p),
        None => Err(Error::Usage(
            "nothing to do: give --hook, --transcript FILE, --transcripts DIR, --note TEXT or a FILE (- for stdin)".into(),
        )),
    }
}

/// `mem pipeline` in the foreground, its output on stderr (stdout carries this tool's records).
/// mem-capture links none of the pipeline's stages, so it runs the `mem` beside it (or on PATH).
fn run_pipeline(io: &Io) -> Result<()> {
    let beside = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(|d| d.join("mem")))
        .filter(|p| p.is_file());
    let mem = beside.unwrap_or_else(|| "mem".into());
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

/// The project an event belongs to (see `project::dir`) and its directory.
fn project_for(cwd: Option<&str>) -> Option<(Project, String)> {
    let dir = project::dir(cwd)?;
    Some((project::identify(&dir), dir))
}

/// Hook mode: whatever happens, exit 0 and print nothing; problems go to the log.
fn run_hook() -> Outcome {
    cli::guard_hook("mem-capture", |home| hook_inner(home).map(Some));
    Outcome::Ok
}

/// How long a hook may wait for the database in all (opening, migrating, writing): long
/// enough to ride out a pipeline commit, short enough that a database another process holds
/// costs Claude Code little; the payload is spooled instead and stored by a later run.
pub const HOOK_WAIT: Duration = Duration::from_millis(500);

fn hook_inner(home: &Path) -> Result<()> {
    let deadline = Instant::now() + HOOK_WAIT;
    let parsed = memkit_core::hook::read_stdin();
    let cfg = Config::load(home).unwrap_or_else(|e| {
        cli::log_line(home, "mem-capture", "warn", &format!("config ignored: {e}"));
        Config::env_only(home)
    });
    // Bad [redact] entries are logged; the valid ones and the built-in rules still apply.
    if let Err(e) = capture::redact::configure(&cfg) {
        cli::log_line(home, "mem-capture", "warn", &e.to_string());
    }
    let (policy, bad) = Policy::for_hook(&cfg);
    for msg in bad {
        cli::log_line(home, "mem-capture", "warn", &msg);
    }
    let mut value = match parsed {
        Ok(v) => v,
        Err(e @ Error::Input { .. }) => return log_bad(home, &cfg, &e.to_string()),
        Err(e) => return Err(e),
    };
    capture::sanitize(&mut value);
    let payload = HookPayload::from_value(value).expect("object");
    let Some((project, origin)) = admit(&policy, &payload) else {
        return Ok(());
    };
    let stored = (|| -> Result<Connection> {
        let conn = store::open_until(&cfg.db_path(), deadline)?;
        store::write_tx(&conn, |tx| {
            capture::store_event(
                tx,
                &policy,
                &payload,
                &origin,
                project.as_ref().map(|p| &p.0),
            )
        })?;
        Ok(conn)
    })();
    match stored {
        Ok(conn) => {
            if payload.event.as_deref() == Some("SessionEnd") {
                store::checkpoint_passive(&conn);
            }
            if let Err(e) = Spool::new(home).drain(&conn, &policy) {
                cli::log_line(home, "mem-capture", "warn", &format!("spool: {e}"));
            }
            if store::wal_is_large(&conn) {
                start_checkpoint();
            }
            Ok(())
        }
        Err(e) => {
            // The redacted payload itself (its map moves here): the common path copies nothing.
            let mut value = serde_json::Value::Object(payload.raw);
            value["_memkit"] = json!({"at": origin.at, "project_dir": project.map(|p| p.1),
                                      "why": e.to_string()});
            let event = payload.event.as_deref().unwrap_or("unknown");
            let at = Spool::new(home).put(&value, event)?;
            Err(Error::Store(format!(
                "{e}; payload spooled to {}",
                at.display()
            )))
        }
    }
}

/// Empties the WAL in a detached `mem-capture --checkpoint`: the checkpoint's fsyncs cost
/// ~15 ms, which no hook should make Claude Code wait for.
fn start_checkpoint() {
    if let Ok(exe) = std::env::current_exe() {
        let _ = std::process::Command::new(exe)
            .arg("--checkpoint")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            // Its own group, so it outlives whatever is done to the hook's.
            .process_group(0)
            .spawn();
    }
}

/// Records an unusable payload in the log and, when possible, the event_log.
fn log_bad(home: &Path, cfg: &Config, msg: &str) -> Result<()> {
    if let Ok(conn) = store::open_until(&cfg.db_path(), Instant::now() + HOOK_WAIT) {
        let _ = events::log(
            &conn,
            None,
            "invalid",
            None,
            "error",
            Some(&json!({"error": msg})),
        );
    }
    cli::log_line(home, "mem-capture", "error", msg);
    Ok(())
}

fn note(
    io: &mut Io,
    cfg: &Config,
    text: &str,
    tags: &[String],
    project: Option<&str>,
) -> Result<Outcome> {
    if text.trim().is_empty() {
        return Err(Error::Usage("--note needs some text".into()));
    }
    let policy = Policy::from_config(cfg)?;
    let conn = store::open(&cfg.db_path())?;
    let n = capture::Note {
        text: text.to_string(),
        tags: tags.to_vec(),
        ..Default::default()
    };
    let (id, _) = capture::note::save(&conn, &policy, &n, project)?;
    let rec = load_capture(&conn, id)?;
    io.listing(
        &[rec],
        &["id", "event", "project", "priority", "created_at"],
    )?;
    Ok(Outcome::Ok)
}

/// One line of `--notes` as a note and the project it names, or why it cannot be one.
fn parse_note(v: &Value) -> std::result::Result<(capture::Note, Option<String>), String> {
    let text_of = |k: &str| -> std::result::Result<Option<String>, String> {
        match &v[k] {
            Value::Null => Ok(None),
            Value::String(s) => Ok(Some(s.clone())),
            // Ids are often numbers; kept as written.
            Value::Number(n) if k == "id" => Ok(Some(n.to_string())),
            other => Err(format!("{k:?} must be a string, not {other}")),
        }
    };
    let text = match (text_of("text")?, text_of("note")?) {
        (Some(t), _) | (None, Some(t)) if !t.trim().is_empty() => t,
        _ => return Err("no \"text\": a note needs some text".into()),
    };
    let tags = match &v["tags"] {
        Value::Null => Vec::new(),
        Value::String(s) => s.split(',').map(|t| t.trim().to_string()).collect(),
        Value::Array(a) => a
            .iter()
            .map(|t| t.as_str().map(|t| t.trim().to_string()))
            .collect::<Option<Vec<_>>>()
            .ok_or("\"tags\" must be strings")?,
        other => return Err(format!("\"tags\" must be a list of strings, not {other}")),
    };
    let date = match text_of("date")? {
        Some(d) => {
            Some(store::parse_time(&d).ok_or_else(|| format!("date {d:?}: {}", store::DATE_HINT))?)
        }
        None => None,
    };
    let external_id = match text_of("id")? {
        Some(id) => Some(id),
        None => text_of("key")?,
    };
    Ok((
        capture::Note {
            text,
            tags: tags.into_iter().filter(|t| !t.is_empty()).collect(),
            title: text_of("title")?,
            external_id,
            date,
        },
        text_of("project")?,
    ))
}

/// Notes stored per transaction by `--notes`.
const NOTE_BATCH: usize = 1000;

/// `mem-capture --notes FILE`: many notes in one process, with their own dates, tags and ids.
fn notes(io: &mut Io, cfg: &Config, path: &Path, project: Option<&str>) -> Result<Outcome> {
    let start = Instant::now();
    let policy = Policy::from_config(cfg)?;
    let mut input = Input::open(path)?;
    let conn = store::open(&cfg.db_path())?;
    let default = capture::note::project(&conn, project)?;
    let mut projects: HashMap<String, (Option<Project>, Option<String>)> = HashMap::new();
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut stored: BTreeMap<String, u64> = BTreeMap::new();
    store_batched(
        io,
        &mut input,
        &conn,
        NOTE_BATCH,
        |input, no, v| match parse_note(&v) {
            Err(why) => {
                input.bad(io, no, why);
                Ok(None)
            }
            Ok((note, named)) => {
                let (pr, dir) = match named {
                    None => default.clone(),
                    Some(n) => match projects.get(&n) {
                        Some(p) => p.clone(),
                        None => {
                            let p = capture::note::project(&conn, Some(&n))?;
                            projects.insert(n, p.clone());
                            p
                        }
                    },
                };
                if pr
                    .as_ref()
                    .is_some_and(|p| policy.excluded(p, dir.as_deref()))
                {
                    *counts.entry("excluded".into()).or_default() += 1;
                    return Ok(None);
                }
                Ok(Some((note, pr)))
            }
        },
        |tx, (note, pr)| {
            let key = match capture::store_note(tx, &note, pr.as_ref())? {
                Some(_) => "queued",
                None => "duplicates",
            };
            *stored.entry(key.into()).or_default() += 1;
            Ok(())
        },
    )?;
    counts.extend(stored);
    counts.insert("bad_lines".into(), input.bad_lines());
    finish(io, counts, start)?;
    input.finish()?;
    Ok(Outcome::Ok)
}

fn load_capture(conn: &Connection, id: i64) -> Result<Capture> {
    store::queue::capture(conn, id)
}

/// Payloads stored per transaction by `mem-capture FILE`.
const PAYLOAD_BATCH: usize = 500;

/// Reads `input` a line at a time, makes each good line an item with `parse` (`None`: nothing to
/// store), and stores the items `size` at a time, one transaction per batch: the input streams,
/// and the write lock is held only while a batch is written, never while waiting on a slow pipe
/// (hooks would spool).
fn store_batched<T>(
    io: &Io,
    input: &mut Input,
    conn: &Connection,
    size: usize,
    mut parse: impl FnMut(&mut Input, usize, Value) -> Result<Option<T>>,
    mut put: impl FnMut(&Connection, T) -> Result<()>,
) -> Result<()> {
    let mut batch: Vec<T> = Vec::new();
    loop {
        let next = input.next(io)?;
        let end = next.is_none();
        if let Some((no, value)) = next
            && let Some(item) = parse(input, no, value)?
        {
            batch.push(item);
        }
        if (end || batch.len() >= size) && !batch.is_empty() {
            store::write_tx(conn, |tx| {
                for item in batch.drain(..) {
                    put(tx, item)?;
                }
                Ok(())
            })?;
        }
        if end {
            return Ok(());
        }
    }
}

/// `mem-capture FILE`: hook payloads as JSONL, stored as the hooks would have.
fn payloads(io: &mut Io, cfg: &Config, policy: &Policy, path: &Path) -> Result<Outcome> {
    let start = Instant::now();
    let mut input = Input::open(path)?;
    let conn = store::open(&cfg.db_path())?;
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    store_batched(
        io,
        &mut input,
        &conn,
        PAYLOAD_BATCH,
        |_, _, mut value| {
            capture::sanitize(&mut value);
            Ok(Some(HookPayload::from_value(value).expect("an object")))
        },
        |tx, payload| store_payload(tx, policy, &payload, &mut counts),
    )?;
    counts.insert("bad_lines".into(), input.bad_lines());
    finish(io, counts, start)?;
    input.finish()?;
    Ok(Outcome::Ok)
}

/// A live payload's project and origin, or `None` when MEM_EXCLUDE excludes its project (then
/// nothing of it is stored).
fn admit(policy: &Policy, payload: &HookPayload) -> Option<(Option<(Project, String)>, Origin)> {
    let project = project_for(payload.cwd.as_deref());
    if let Some((pr, dir)) = &project
        && policy.excluded(pr, Some(dir))
    {
        return None;
    }
    let origin = Origin {
        kind: "hook",
        at: store::now(),
        key: None,
    };
    Some((project, origin))
}

/// Stores one payload of `mem-capture FILE` (unless its project is excluded), counting it.
fn store_payload(
    tx: &Connection,
    policy: &Policy,
    payload: &HookPayload,
    counts: &mut BTreeMap<String, u64>,
) -> Result<()> {
    let Some((project, origin)) = admit(policy, payload) else {
        *counts.entry("excluded".into()).or_default() += 1;
        return Ok(());
    };
    let s = capture::store_event(tx, policy, payload, &origin, project.as_ref().map(|p| &p.0))?;
    *counts.entry("events".into()).or_default() += 1;
    add_stored(counts, &s);
    Ok(())
}

fn add_stored(counts: &mut BTreeMap<String, u64>, s: &Stored) {
    *counts.entry("queued".into()).or_default() += s.queued as u64;
    *counts.entry("duplicates".into()).or_default() += s.duplicates as u64;
    *counts.entry("skipped".into()).or_default() += s.skipped.len() as u64;
}

fn finish(io: &mut Io, counts: BTreeMap<String, u64>, start: Instant) -> Result<()> {
    io.summary(counts, start)
}
