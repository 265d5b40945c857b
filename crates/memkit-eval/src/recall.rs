//! `mem-eval recall`: do the recall hooks speak when they should and only then? Real
//! transcripts are replayed project by project in time order (as `mem-eval context` does):
//! before session i the store holds what the hooks captured of the sessions before it,
//! compressed (which also signs their failures); then every Read and edit call of session i is
//! sent to the registered hook command as a PreToolUse payload, and every failed shell call as
//! a PostToolUseFailure payload, each in its own process, as Claude Code runs it.
//!
//! Error recall is set beside a baseline that needs no signature: the last observation that
//! touched a file the failed call names. A hit names the fix of an earlier failure with the
//! same signature; any other answer is a false positive.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::Serialize;
use serde_json::{Value, json};

use memkit_context::recall::{FILE_TOOLS, file_of};
use memkit_core::config::Config;
use memkit_core::store::{self, failures, recall};
use memkit_core::{Error, Result, errsig, project};

use crate::context::{Session, Stored, compress, projects};

pub struct Options {
    /// The hook program (mem-capture) and its arguments, as registered.
    pub hook: Vec<String>,
    /// Where scratch memories live.
    pub work: PathBuf,
    pub keep: bool,
}

/// One project's figures, or all projects' (`project` = "all").
#[derive(Debug, Clone, Default, Serialize)]
#[serde(remote = "Self")]
pub struct Report {
    pub set: String,
    pub project: String,
    /// Read and edit calls replayed, and the share that got an answer.
    pub file_calls: usize,
    pub answered: f64,
    /// Edits of files an earlier session's observations changed, and the share for which the
    /// session was told (at that call or an earlier one) one of those observations.
    pub edits_with_history: usize,
    pub named_earlier: f64,
    /// Answers about files with no history (must be 0).
    pub answered_without_history: usize,
    /// Answers repeated in one session with nothing new stored (must be 0).
    pub repeats: usize,
    /// Failed shell calls replayed, those with an earlier fixed failure of the same signature,
    /// and error recall's answers, hits and false positives.
    pub failures: usize,
    pub failures_with_earlier_fix: usize,
    pub error_answers: usize,
    pub error_hits: usize,
    pub error_false_positives: usize,
    /// The baseline (the last observation that touched a file the failed call names).
    pub baseline_answers: usize,
    pub baseline_hits: usize,
    pub baseline_false_positives: usize,
    #[serde(skip)]
    answered_n: usize,
    #[serde(skip)]
    named_n: usize,
}
memkit_core::record!(Report = "eval");

impl Report {
    fn add(&mut self, o: &Report) {
        self.file_calls += o.file_calls;
        self.answered_n += o.answered_n;
        self.edits_with_history += o.edits_with_history;
        self.named_n += o.named_n;
        self.answered_without_history += o.answered_without_history;
        self.repeats += o.repeats;
        self.failures += o.failures;
        self.failures_with_earlier_fix += o.failures_with_earlier_fix;
        self.error_answers += o.error_answers;
        self.error_hits += o.error_hits;
        self.error_false_positives += o.error_false_positives;
        self.baseline_answers += o.baseline_answers;
        self.baseline_hits += o.baseline_hits;
        self.baseline_false_positives += o.baseline_false_positives;
    }

    fn finish(&mut self) {
        let share = |n: usize, d: usize| if d == 0 { 0.0 } else { n as f64 / d as f64 };
        self.answered = share(self.answered_n, self.file_calls);
        self.named_earlier = share(self.named_n, self.edits_with_history);
    }
}

pub struct Outcome {
    pub reports: Vec<Report>,
    pub homes: Vec<PathBuf>,
}

/// Replays every project found in `dirs`.
pub fn run(set: &str, dirs: &[PathBuf], opts: &Options) -> Result<Outcome> {
    if opts.hook.is_empty() {
        return Err(Error::Usage("no hook command to replay through".into()));
    }
    let mut out = Outcome {
        reports: vec![],
        homes: vec![],
    };
    let mut all = Report {
        set: set.into(),
        project: "all".into(),
        ..Report::default()
    };
    for (root, sessions) in projects(dirs)? {
        let home = opts.work.join(format!(
            "recall-{}-{}-{}",
            std::process::id(),
            chrono::Utc::now().timestamp_millis(),
            project::name_of(&root)
        ));
        std::fs::create_dir_all(&home)?;
        let mut r = replay(&home, &root, &sessions, opts)?;
        r.set = set.into();
        all.add(&r);
        r.finish();
        out.reports.push(r);
        if opts.keep {
            out.homes.push(home);
        } else {
            std::fs::remove_dir_all(&home)?;
        }
    }
    all.finish();
    out.reports.push(all);
    Ok(out)
}

fn replay(home: &Path, root: &str, sessions: &[Session], opts: &Options) -> Result<Report> {
    let cfg = Config::load(home)?;
    let mut stored = Stored::new(sessions);
    let mut r = Report {
        project: project::name_of(root),
        ..Report::default()
    };
    for (i, s) in sessions.iter().enumerate() {
        stored.load_before(&cfg, sessions, i, &s.start)?;
        if i > 0 {
            compress(&cfg)?;
        }
        let conn = store::open(&cfg.home.db())?;
        let mut events: Vec<_> = s.files.iter().flat_map(|p| p.events.iter()).collect();
        events.sort_by(|a, b| a.1.at.cmp(&b.1.at));
        // What the session was told of each file (once, by design: the Read before an edit).
        let mut told: std::collections::HashMap<String, String> = Default::default();
        for (p, origin) in events {
            let cwd = p.cwd.clone().unwrap_or_else(|| root.to_string());
            let tool = p.tool_name.as_deref().unwrap_or("");
            let base = json!({"session_id": s.id, "cwd": cwd, "tool_name": tool,
                "tool_input": p.tool_input.clone().unwrap_or(Value::Null),
                "tool_use_id": p.tool_use_id});
            let is_call = matches!(
                p.event.as_deref(),
                Some("PostToolUse" | "PostToolUseFailure")
            );
            if is_call && FILE_TOOLS.contains(&tool) {
                let Some(file) = p.tool_input.as_ref().and_then(|i| file_of(i, Some(&cwd))) else {
                    continue;
                };
                let mut payload = base;
                payload["hook_event_name"] = "PreToolUse".into();
                let said = ask(home, &opts.hook, &payload, &origin.at)?;
                let ids: Vec<i64> = recall::file_changes(&conn, Some(root), &file, 1000)?
                    .iter()
                    .map(|c| c.id)
                    .collect();
                let functions = recall::file_functions(&conn, Some(root), &file, 1)?;
                r.file_calls += 1;
                if let Some(text) = &said {
                    r.answered_n += 1;
                    if ids.is_empty() && functions.is_empty() {
                        r.answered_without_history += 1;
                    }
                    if told.insert(file.clone(), text.clone()).is_some() {
                        r.repeats += 1;
                    }
                }
                if tool != "Read" && !ids.is_empty() {
                    r.edits_with_history += 1;
                    let named = named_ids(told.get(&file).map_or("", String::as_str));
                    if ids.iter().any(|id| named.contains(id)) {
                        r.named_n += 1;
                    }
                }
                continue;
            }
            let Some(error) = errsig::failure_text(&p.raw) else {
                continue;
            };
            r.failures += 1;
            let fixes: HashSet<i64> = match errsig::signature(&error) {
                Some(sig) => failures::fixed(&conn, Some(root), &sig.key, None, 1000)?
                    .iter()
                    .map(|f| f.fix_obs)
                    .collect(),
                None => HashSet::new(),
            };
            if !fixes.is_empty() {
                r.failures_with_earlier_fix += 1;
            }
            let mut payload = base;
            payload["hook_event_name"] = "PostToolUseFailure".into();
            payload["error"] = error.clone().into();
            if let Some(text) = ask(home, &opts.hook, &payload, &origin.at)? {
                r.error_answers += 1;
                if named_ids(&text).iter().any(|id| fixes.contains(id)) {
                    r.error_hits += 1;
                } else {
                    r.error_false_positives += 1;
                }
            }
            let command = p
                .tool_input
                .as_ref()
                .map(|i| i.to_string())
                .unwrap_or_default();
            if let Some(last) = last_toucher(&conn, root, &cwd, &format!("{command}\n{error}"))? {
                r.baseline_answers += 1;
                if fixes.contains(&last) {
                    r.baseline_hits += 1;
                } else {
                    r.baseline_false_positives += 1;
                }
            }
        }
    }
    Ok(r)
}

/// The observation ids (`o17`) a text names.
fn named_ids(text: &str) -> HashSet<i64> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter_map(|w| w.strip_prefix('o')?.parse().ok())
        .collect()
}

/// The baseline: the newest observation of the project made from an edit of the first file
/// the failed call names (a word with a `/` or a file extension that some edit changed).
fn last_toucher(
    conn: &rusqlite::Connection,
    root: &str,
    cwd: &str,
    text: &str,
) -> Result<Option<i64>> {
    let words = text
        .split(|c: char| c.is_whitespace() || "\"'`(),:;=".contains(c))
        .filter(|w| {
            w.contains('/')
                || w.rsplit_once('.').is_some_and(|(a, e)| {
                    !a.is_empty()
                        && (1..=5).contains(&e.len())
                        && e.chars().all(char::is_alphanumeric)
                })
        })
        .take(50);
    for w in words {
        let file = project::resolve(w, Some(cwd));
        if let Some(c) = recall::file_changes(conn, Some(root), &file, 1)?.first() {
            return Ok(Some(c.id));
        }
    }
    Ok(None)
}

/// Runs the hook command on one payload, as Claude Code would, as of `at`; the
/// additionalContext it printed, if any.
pub(crate) fn ask(
    home: &Path,
    hook: &[String],
    payload: &Value,
    at: &str,
) -> Result<Option<String>> {
    use std::io::Write;
    let mut child = Command::new(&hook[0])
        .args(&hook[1..])
        .env("MEM_HOME", home)
        .env("MEM_NOW", at)
        .env_remove("CLAUDE_PROJECT_DIR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| Error::other(format!("cannot run {}: {e}", hook[0])))?;
    let mut stdin = child.stdin.take().expect("piped");
    let _ = stdin.write_all(payload.to_string().as_bytes());
    drop(stdin);
    let out = child.wait_with_output()?;
    if out.stdout.is_empty() {
        return Ok(None);
    }
    let v: Value = serde_json::from_slice(&out.stdout).map_err(|e| {
        Error::other(format!(
            "{} printed what is not the hook's JSON: {e}",
            hook[0]
        ))
    })?;
    Ok(v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .map(str::to_string))
}
