//! Memory where the work happens: what the project's history says about the file Claude is
//! about to read or edit (file recall, PreToolUse), and how an error just met was fixed before
//! (error recall, PostToolUseFailure). Each says at most ~300 tokens, or nothing; a per-session
//! marker under the data home ([`Seen`]) keeps a file's history from being told twice in one
//! session unless something new was stored since.

use std::path::{Path, PathBuf};

use rusqlite::Connection;

use crate::errsig;
use crate::store::{self, failures, recall};
use crate::text::{flatten, relative, says_nothing};
use crate::tokens::estimate;
use crate::{Result, clip};

/// The most one recall may cost.
pub const RECALL_TOKENS: usize = 300;
/// The most a subagent's context may cost.
pub const SUBAGENT_TOKENS: usize = 500;
/// The tools whose file file recall speaks of (PreToolUse's matcher).
pub const FILE_TOOLS: &[&str] = &["Read", "Edit", "Write", "MultiEdit", "NotebookEdit"];
/// A path longer than this is nobody's file: nothing is looked up or remembered for it.
const MAX_PATH: usize = 4096;
/// Observations of a file read to rank (newest edits first).
const CANDIDATES: usize = 40;
/// Earlier fixes an error recall lists at most.
const FIXES: usize = 3;
const TITLE_CHARS: usize = 110;

/// What a recall says, and how to tell whether something new was stored since.
#[derive(Debug, Clone)]
pub struct Recall {
    pub text: String,
    /// Observation ids named, in order.
    pub ids: Vec<i64>,
    /// Changes when anything new is stored about the subject ([`Seen`] compares it).
    pub fingerprint: String,
}

/// The file a tool call names (`file_path` or `notebook_path`), resolved as capture stores it.
pub fn file_of(input: &serde_json::Value, cwd: Option<&str>) -> Option<String> {
    let p = ["file_path", "notebook_path"]
        .iter()
        .find_map(|k| input[*k].as_str())?;
    (!p.trim().is_empty() && p.len() <= MAX_PATH).then(|| crate::project::resolve(p, cwd))
}

fn ms(at: &str) -> i64 {
    store::parse_instant(at)
        .map(|(t, _)| t.timestamp_millis())
        .unwrap_or(0)
}

/// How useful a change is to someone about to touch the file: what kind of work it was
/// (fixes and decisions first, notes the user wrote above all), fading over a month.
fn usefulness(c: &recall::Change, now_ms: i64) -> f64 {
    let kind = match c.kind.as_str() {
        "bugfix" | "decision" => 3.0,
        "feature" | "refactor" => 2.0,
        _ => 1.0,
    } + if c.is_manual { 2.0 } else { 0.0 };
    let days = (now_ms - ms(&c.at)).max(0) as f64 / 86_400_000.0;
    kind * (0.5 + (-days / 30.0).exp()) + (c.edits as f64).ln_1p() * 0.5
}

/// File recall: the observations of `project` that changed `file` and the functions mem-ast
/// saw change in it, the most useful first, within [`RECALL_TOKENS`]; `None` when there is
/// nothing worth saying. `root` shortens the file's name when it lies inside it.
pub fn file_recall(
    conn: &Connection,
    project: Option<&str>,
    file: &str,
    now_ms: i64,
) -> Result<Option<Recall>> {
    if file.len() > MAX_PATH {
        return Ok(None);
    }
    let mut changes = recall::file_changes(conn, project, file, CANDIDATES)?;
    changes.retain(|c| !says_nothing(&c.title));
    let functions = recall::file_functions(conn, project, file, 8)?;
    if changes.is_empty() && functions.is_empty() {
        return Ok(None);
    }
    let fingerprint = format!(
        "{}:{}",
        changes.iter().map(|c| c.id).max().unwrap_or(0),
        functions.first().map(|f| f.at.as_str()).unwrap_or("")
    );
    changes.sort_by(|a, b| usefulness(b, now_ms).total_cmp(&usefulness(a, now_ms)));
    let name = project
        .map(|root| crate::project::relative(file, root))
        .unwrap_or(file);
    let mut text = format!(
        "memkit: earlier work on {} in this project (mem-report --obs ID for more):",
        clip(name, 200)
    );
    let mut ids = Vec::new();
    for c in &changes {
        let line = format!(
            "\n- o{} {} ({}): {}",
            c.id,
            c.kind,
            relative(ms(&c.at), now_ms),
            clip(&flatten(&c.title), TITLE_CHARS)
        );
        if estimate(&text) + estimate(&line) > RECALL_TOKENS {
            break;
        }
        text.push_str(&line);
        ids.push(c.id);
    }
    if !functions.is_empty() {
        let names: Vec<String> = functions
            .iter()
            .map(|f| format!("{} ({})", f.qualname, f.change))
            .collect();
        let line = format!("\n- functions changed here: {}", names.join(", "));
        if estimate(&text) + estimate(&line) <= RECALL_TOKENS {
            text.push_str(&line);
        }
    }
    if ids.is_empty() && !text.contains("functions changed") {
        return Ok(None);
    }
    Ok(Some(Recall {
        text,
        ids,
        fingerprint,
    }))
}

/// Error recall: for a failed shell call's error text, the earlier failures of `project`
/// with the same signature that were followed by a fix, and the fix; `None` when there is no
/// such failure. `before` (ISO time) leaves out failures stored from then on (replays).
pub fn error_recall(
    conn: &Connection,
    project: Option<&str>,
    error: &str,
    before: Option<&str>,
    now_ms: i64,
) -> Result<Option<Recall>> {
    let Some(sig) = errsig::signature(error) else {
        return Ok(None);
    };
    let fixed = failures::fixed(conn, project, &sig.key, before, FIXES)?;
    if fixed.is_empty() {
        return Ok(None);
    }
    let mut text = format!(
        "memkit: this error was met before in this project and fixed: {}",
        clip(&flatten(&sig.line), 160)
    );
    let mut ids = Vec::new();
    for f in &fixed {
        let failed = f.failed_obs.map(|o| format!(" (o{o})")).unwrap_or_default();
        let line = format!(
            "\n- {}{failed}: fixed by o{} {}: {}",
            relative(ms(&f.at), now_ms),
            f.fix_obs,
            f.fix_kind,
            clip(&flatten(&f.fix_title), TITLE_CHARS)
        );
        if estimate(&text) + estimate(&line) > RECALL_TOKENS {
            break;
        }
        text.push_str(&line);
        ids.push(f.fix_obs);
    }
    if ids.is_empty() {
        return Ok(None);
    }
    Ok(Some(Recall {
        fingerprint: format!("{}", ids.iter().max().unwrap_or(&0)),
        text,
        ids,
    }))
}

/// What one session was already told: a small file per session under `<home>/recall/`
/// (mem-prune removes old ones), one line per telling: the subject's hash and the
/// fingerprint told.
pub struct Seen {
    path: PathBuf,
}

impl Seen {
    pub fn new(home: &Path, session: &str) -> Seen {
        Seen {
            path: crate::Home::new(home)
                .recall()
                .join(crate::short_hash(session.as_bytes(), 24)),
        }
    }

    fn subject(subject: &str) -> String {
        crate::short_hash(subject.as_bytes(), 24)
    }

    /// Whether `subject` was told with this `fingerprint` already in this session.
    pub fn told(&self, subject: &str, fingerprint: &str) -> bool {
        let Ok(text) = std::fs::read_to_string(&self.path) else {
            return false;
        };
        let key = Self::subject(subject);
        text.lines()
            .rev()
            .find_map(|l| l.strip_prefix(key.as_str()))
            .is_some_and(|f| f.trim_start() == fingerprint)
    }

    /// Records that `subject` was told with `fingerprint`.
    pub fn tell(&self, subject: &str, fingerprint: &str) -> std::io::Result<()> {
        use std::io::Write;
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        if let Some(dir) = self.path.parent() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)?;
        }
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(&self.path)?;
        // One write of one short line: concurrent hooks of a session append whole lines.
        f.write_all(format!("{} {fingerprint}\n", Self::subject(subject)).as_bytes())
    }
}

/// What a recall hook payload asks about: the file a file tool names, or a failed call's
/// error text. Read from the payload alone, so a call with nothing to recall (a Bash call that
/// succeeded, a Grep) costs no database open.
pub enum Subject {
    File(String),
    Error(String),
}

impl Subject {
    pub fn of(payload: &crate::hook::HookPayload) -> Option<Subject> {
        match payload.event.as_deref()? {
            "PreToolUse" => {
                let tool = payload.tool_name.as_deref().unwrap_or("");
                payload
                    .tool_input
                    .as_ref()
                    .filter(|_| FILE_TOOLS.contains(&tool))
                    .and_then(|i| file_of(i, payload.cwd.as_deref()))
                    .map(Subject::File)
            }
            "PostToolUse" | "PostToolUseFailure" => {
                errsig::failure_text(&payload.raw).map(Subject::Error)
            }
            _ => None,
        }
    }
}

/// What a recall hook answers for `subject` (read from `payload` by [`Subject::of`]): the
/// event to answer and the text, after the session's marker said it was not told already (and
/// recorded it).
pub fn hook(
    home: &Path,
    conn: &Connection,
    payload: &crate::hook::HookPayload,
    subject: &Subject,
    project: Option<&str>,
    now_ms: i64,
) -> Result<Option<(String, String)>> {
    // Without a project every project's history would answer: isolation says nothing.
    if project.is_none() {
        return Ok(None);
    }
    let (subject, found) = match subject {
        Subject::File(file) => (
            format!("file:{file}"),
            file_recall(conn, project, file, now_ms)?,
        ),
        Subject::Error(error) => {
            let key = errsig::signature(error).map(|s| s.key).unwrap_or_default();
            (
                format!("error:{key}"),
                error_recall(conn, project, error, None, now_ms)?,
            )
        }
    };
    let Some(r) = found else {
        return Ok(None);
    };
    if let Some(session) = payload.session_id.as_deref() {
        let seen = Seen::new(home, session);
        if seen.told(&subject, &r.fingerprint) {
            return Ok(None);
        }
        // A marker that cannot be written costs a repeat, not the recall.
        let _ = seen.tell(&subject, &r.fingerprint);
    }
    let event = payload.event.clone().unwrap_or_default();
    Ok(Some((event, r.text)))
}
