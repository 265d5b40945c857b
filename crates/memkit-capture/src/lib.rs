//! Capture policy and storage: what a hook event (or its reconstruction from a transcript)
//! becomes in the store.
//!
//! Where each event goes (the documented contract the tests count against):
//! - every event: one `event_log` row (its name, tool and what happened to it);
//! - known session events (SessionStart, UserPromptSubmit, tool events, PreCompact,
//!   SubagentStop, Stop, SessionEnd): the session row is created or updated;
//! - `pending_queue`: UserPromptSubmit (as `Wrapper` when the text is not the user's request),
//!   PostToolUse, PostToolUseFailure, each call of a
//!   PostToolBatch, PreCompact, SubagentStop, Stop, and manual notes;
//! - skipped tool calls (tools in the skip list, or input+response under 50 characters) get
//!   their event_log row only, with `"skipped"` saying why.

pub mod files;
pub mod forget;
pub mod import;
pub mod note;
pub mod prompt;
pub mod recall;
pub mod redact;
pub mod reredact;
pub mod spool;
pub mod tool;
pub mod transcript;

#[cfg(test)]
mod fuzz;

use std::collections::HashSet;

use globset::{Glob, GlobSet, GlobSetBuilder};
use rusqlite::Connection;
use serde_json::{Map, Value, json};

use memkit_core::config::{self, Config};
use memkit_core::hook::HookPayload;
use memkit_core::project::Project;
use memkit_core::store::{self, events, projects, queue, queue::Priority, sessions};
use memkit_core::{Error, Result};

/// Calls whose input and response together are shorter than this carry no memory.
pub const MIN_CALL_CHARS: usize = 50;
/// Strings longer than this are cut to head + tail before storing (the compressor reads at most
/// 32,000 characters of a capture, so the rest would only bloat the database).
pub const MAX_STRING_CHARS: usize = 64 * 1024;
const KEEP_HEAD: usize = 48 * 1024;
const KEEP_TAIL: usize = 16 * 1024;

/// How long a hook may wait for the database in all (opening, migrating, writing): long
/// enough to ride out a pipeline commit, short enough that a database another process holds
/// costs Claude Code little; the payload is spooled instead and stored by a later run.
pub const HOOK_WAIT: std::time::Duration = std::time::Duration::from_millis(500);

/// The queue event a user turn becomes when its text is a wrapper, not a request
/// ([`prompt::classify`]); its payload says which (`wrapper`).
pub const WRAPPER: &str = "Wrapper";

/// Events that belong to a session and so create or update its row.
const SESSION_EVENTS: &[&str] = &[
    "SessionStart",
    "UserPromptSubmit",
    "PostToolUse",
    "PostToolUseFailure",
    "PostToolBatch",
    "PreCompact",
    "SubagentStop",
    "Stop",
    "SessionEnd",
];

#[derive(Debug, Clone)]
pub struct Policy {
    skip_tools: HashSet<String>,
    exclude: ProjectGlobs,
}

/// Globs of project paths or names (`MEM_EXCLUDE`, `MEM_SYNC_PROJECTS`): `~/`, `$HOME/`
/// expanded; a project matches when a glob matches its root or name, or a directory above its
/// root or the directory it was seen from, so a directory stands for everything under it.
#[derive(Debug, Clone, Default)]
pub struct ProjectGlobs {
    set: Option<GlobSet>,
}

impl ProjectGlobs {
    /// The globs of `patterns`; one that does not parse matches the path it spells literally
    /// and is returned, with `setting` naming where it came from.
    pub fn new(patterns: &[String], setting: &str) -> (ProjectGlobs, Vec<String>) {
        let mut bad = Vec::new();
        let mut b = GlobSetBuilder::new();
        let mut any = false;
        for raw in patterns {
            let pattern = normalize_pattern(raw);
            let glob = Glob::new(&pattern).or_else(|e| {
                bad.push(format!(
                    "{setting}: bad glob {raw:?}: {e}; matching that path literally"
                ));
                Glob::new(&globset::escape(&pattern))
            });
            if let Ok(g) = glob {
                b.add(g);
                any = true;
            }
        }
        let set = any.then(|| b.build().ok()).flatten();
        (ProjectGlobs { set }, bad)
    }

    pub fn is_empty(&self) -> bool {
        self.set.is_none()
    }

    /// Whether `project` (or `dir`, the directory it was seen from) matches.
    pub fn matches(&self, project: &Project, dir: Option<&str>) -> bool {
        let Some(set) = &self.set else {
            return false;
        };
        if set.is_match(&project.name) {
            return true;
        }
        let paths = std::iter::once(project.root.as_str()).chain(dir);
        paths
            .flat_map(|p| std::path::Path::new(p).ancestors())
            .any(|a| !a.as_os_str().is_empty() && set.is_match(a))
    }

    /// Whether one of the globs matches `path` itself.
    pub fn matches_path(&self, path: &std::path::Path) -> bool {
        self.set.as_ref().is_some_and(|s| s.is_match(path))
    }
}

/// A pattern of [`ProjectGlobs`] as the user meant it, `~` expanded: for a caller that walks
/// the directories it names.
pub fn expand_home(raw: &str) -> String {
    normalize_pattern(raw)
}

impl Policy {
    /// The built-in policy, ignoring configuration.
    pub fn defaults() -> Policy {
        Policy {
            skip_tools: config::SKIP_TOOLS.defaults().into_iter().collect(),
            exclude: ProjectGlobs::default(),
        }
    }

    /// The configured policy; a glob in MEM_EXCLUDE that does not parse is a usage error.
    pub fn from_config(cfg: &Config) -> Result<Policy> {
        let (policy, bad) = Policy::build(cfg);
        match bad.into_iter().next() {
            Some(msg) => Err(Error::Usage(msg)),
            None => Ok(policy),
        }
    }

    /// The configured policy for a hook, which cannot stop to complain: a glob that does not
    /// parse still excludes the path it spells literally (failing closed: a typo in one pattern
    /// must not let every excluded project be stored), and each such glob is returned so the
    /// caller can log it.
    pub fn for_hook(cfg: &Config) -> (Policy, Vec<String>) {
        Policy::build(cfg)
    }

    fn build(cfg: &Config) -> (Policy, Vec<String>) {
        let skip_tools = config::SKIP_TOOLS.get(cfg).into_iter().collect();
        let (exclude, bad) = ProjectGlobs::new(&config::EXCLUDE.get(cfg), "MEM_EXCLUDE");
        (
            Policy {
                skip_tools,
                exclude,
            },
            bad,
        )
    }

    /// A project is excluded when a glob matches its root path or name, or the directory the
    /// event came from, or any directory above either: excluding a directory excludes
    /// everything under it, git repository or not.
    pub fn excluded(&self, project: &Project, dir: Option<&str>) -> bool {
        self.exclude.matches(project, dir)
    }

    /// Why a tool call is not queued, if it is not.
    pub fn skip_reason(
        &self,
        tool: &str,
        input: Option<&Value>,
        response: Option<&Value>,
    ) -> Option<&'static str> {
        if self.skip_tools.contains(tool) {
            return Some("tool");
        }
        let len = |v: Option<&Value>| match v {
            None | Some(Value::Null) => 0,
            Some(Value::String(s)) => s.chars().count(),
            Some(v) => v.to_string().chars().count(),
        };
        if len(input) + len(response) < MIN_CALL_CHARS {
            return Some("small");
        }
        None
    }
}

/// An exclusion pattern as the user meant it: `~/…`, `$HOME/…` and `${HOME}/…` expanded, a
/// trailing `/` dropped (a directory is excluded with everything under it anyway).
fn normalize_pattern(raw: &str) -> String {
    let home = memkit_core::config::home().display().to_string();
    let mut p = raw.trim().to_string();
    for prefix in ["~", "$HOME", "${HOME}"] {
        if p == prefix {
            p = home.clone();
        } else if let Some(rest) = p.strip_prefix(&format!("{prefix}/")) {
            p = format!("{}/{rest}", home.trim_end_matches('/'));
        }
    }
    while p.len() > 1 && p.ends_with('/') {
        p.pop();
    }
    p
}

/// Queue priority of a tool call: edits and commands matter most, reading and bookkeeping least.
pub fn priority(tool: &str) -> Priority {
    match tool {
        "Write" | "Edit" | "MultiEdit" | "NotebookEdit" | "Bash" => Priority::High,
        "Read" | "Glob" | "Grep" | "LS" | "WebSearch" | "WebFetch" => Priority::Low,
        t if t.starts_with("Todo") || t.starts_with("Task") => Priority::Low,
        _ => Priority::Normal,
    }
}

/// Redacts secrets, then cuts overlong strings to head + tail: the order matters, so a secret
/// is never split by the cut and half-kept.
pub fn sanitize(v: &mut Value) {
    redact::redact_value(v);
    truncate_value(v);
}

fn truncate_value(v: &mut Value) {
    match v {
        Value::String(s) if s.len() > MAX_STRING_CHARS => *s = head_tail(s, KEEP_HEAD, KEEP_TAIL),
        Value::Array(a) => a.iter_mut().for_each(truncate_value),
        Value::Object(o) => o.values_mut().for_each(truncate_value),
        _ => {}
    }
}

/// Keeps the first `head` and last `tail` bytes (on char boundaries) with a marker between.
pub fn head_tail(s: &str, head: usize, tail: usize) -> String {
    if s.len() <= head + tail {
        return s.to_string();
    }
    let mut h = head;
    while !s.is_char_boundary(h) {
        h -= 1;
    }
    let mut t = s.len() - tail;
    while !s.is_char_boundary(t) {
        t += 1;
    }
    format!("{}\n…[{} bytes cut]…\n{}", &s[..h], t - h, &s[t..])
}

/// Where an event came from and how to recognise it again.
#[derive(Debug, Clone)]
pub struct Origin {
    /// `hook`, `transcript` or `note`.
    pub kind: &'static str,
    /// When the event happened (stored time format).
    pub at: String,
    /// Dedup key for a non-tool event, so a re-import adds nothing (tool calls use their
    /// tool_use_id).
    pub key: Option<String>,
}

/// What storing one event did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Stored {
    pub queued: usize,
    /// Queue rows already present (a re-import).
    pub duplicates: usize,
    /// Tool calls not queued, with the reason.
    pub skipped: Vec<(String, &'static str)>,
}

/// Stores one sanitized event. Run it inside a write transaction.
pub fn store_event(
    conn: &Connection,
    policy: &Policy,
    p: &HookPayload,
    origin: &Origin,
    project: Option<&Project>,
) -> Result<Stored> {
    let event = p.event.as_deref().unwrap_or("");
    let Some(session_id) = p.session_id.as_deref() else {
        events::log(
            conn,
            None,
            event,
            p.tool_name.as_deref(),
            "error",
            Some(&json!({"error": "missing session_id"})),
        )?;
        return Ok(Stored::default());
    };
    let mut stored = Stored::default();
    let project_key = project.map(|p| p.root.clone());
    if SESSION_EVENTS.contains(&event) {
        if let Some(pr) = project {
            projects::upsert(conn, &pr.root, &pr.name, pr.source)?;
        }
        sessions::upsert(
            conn,
            &sessions::SessionInfo {
                session_id: session_id.to_string(),
                project: project_key.clone(),
                project_dir: project.map(|p| p.root.clone()),
                cwd: p.cwd.clone(),
                branch: project.and_then(|p| p.branch.clone()),
                transcript_path: p.transcript_path.clone(),
                source: p.source.clone(),
                model: p.model.clone(),
                at: origin.at.clone(),
                imported: origin.kind == "transcript",
            },
            event == "SessionStart",
        )?;
    }
    let mut w = Writer {
        conn,
        session_id,
        project: project_key,
        agent_id: p.agent_id.as_deref(),
        origin,
        cwd: p.cwd.as_deref(),
        stored: &mut stored,
    };
    let detail: Option<Value> = match event {
        "SessionStart" | "SessionEnd" => {
            if event == "SessionEnd" {
                sessions::end(conn, session_id, p.reason.as_deref(), &origin.at)?;
            }
            p.source
                .as_ref()
                .or(p.reason.as_ref())
                .map(|s| json!({"source": s}))
        }
        "UserPromptSubmit" => {
            let key = origin.key.clone().or_else(|| {
                p.get("prompt_id")
                    .and_then(Value::as_str)
                    .map(|id| format!("prompt:{session_id}:{id}"))
            });
            let text = p.prompt.as_deref().unwrap_or("");
            match prompt::classify(text) {
                prompt::Prompt::Request(_) => {
                    w.enqueue(event, None, &p.raw, Vec::new(), Priority::High, key)?;
                    None
                }
                // Kept, as what it is: never the user's request (a goal, a title, a decision).
                prompt::Prompt::Wrapper(kind) => {
                    let mut payload = p.raw.clone();
                    payload.insert("wrapper".into(), json!(kind));
                    w.enqueue(WRAPPER, None, &payload, Vec::new(), Priority::Low, key)?;
                    Some(json!({"wrapper": kind}))
                }
            }
        }
        "PostToolUse" | "PostToolUseFailure" => w
            .tool_call(policy, &p.raw, event)?
            .map(|why| json!({"skipped": why})),
        "PostToolBatch" => {
            let calls = p.batch_calls();
            for mut call in calls {
                if let (Some(cwd), false) = (&p.cwd, call.contains_key("cwd")) {
                    call.insert("cwd".into(), Value::String(cwd.clone()));
                }
                w.tool_call(policy, &call, "PostToolUse")?;
            }
            Some(json!({"calls": w.stored.queued + w.stored.skipped.len() + w.stored.duplicates}))
        }
        "PreCompact" | "SubagentStop" => {
            w.enqueue(
                event,
                None,
                &p.raw,
                Vec::new(),
                Priority::Normal,
                origin.key.clone(),
            )?;
            None
        }
        "Stop" => {
            let pending = queue::pending_count(conn, session_id)?;
            let mut payload = p.raw.clone();
            payload.insert("pending_count".into(), json!(pending));
            w.enqueue(
                event,
                None,
                &payload,
                Vec::new(),
                Priority::Normal,
                origin.key.clone(),
            )?;
            sessions::record_stop(
                conn,
                session_id,
                p.last_assistant_message.as_deref(),
                &origin.at,
            )?;
            Some(json!({"pending_count": pending}))
        }
        _ => None,
    };
    if origin.kind == "hook" {
        events::log(
            conn,
            Some(session_id),
            event,
            p.tool_name.as_deref(),
            "info",
            detail.as_ref(),
        )?;
    }
    Ok(stored)
}

/// Queues rows for one event's session and counts what happened.
struct Writer<'a> {
    conn: &'a Connection,
    session_id: &'a str,
    project: Option<String>,
    agent_id: Option<&'a str>,
    origin: &'a Origin,
    cwd: Option<&'a str>,
    stored: &'a mut Stored,
}

impl Writer<'_> {
    fn enqueue(
        &mut self,
        event: &str,
        tool: Option<(&str, Option<&str>)>,
        payload: &Map<String, Value>,
        files: Vec<String>,
        priority: Priority,
        dedup_key: Option<String>,
    ) -> Result<()> {
        let id = queue::insert(
            self.conn,
            &queue::NewCapture {
                session_id: self.session_id.to_string(),
                project: self.project.clone(),
                event: event.to_string(),
                tool_name: tool.map(|t| t.0.to_string()),
                tool_use_id: tool.and_then(|t| t.1).map(str::to_string),
                agent_id: self.agent_id.map(str::to_string),
                payload: serde_json::to_string(payload)?,
                files,
                priority,
                origin: self.origin.kind,
                dedup_key,
                created_at: self.origin.at.clone(),
            },
        )?;
        if id.is_some() {
            self.stored.queued += 1;
        } else {
            self.stored.duplicates += 1;
        }
        Ok(())
    }

    /// Queues one tool call unless policy skips it; returns the skip reason.
    fn tool_call(
        &mut self,
        policy: &Policy,
        call: &Map<String, Value>,
        event: &str,
    ) -> Result<Option<&'static str>> {
        let tool = call
            .get("tool_name")
            .and_then(Value::as_str)
            .unwrap_or("unknown");
        let input = call.get("tool_input");
        let response = call.get("tool_response").or_else(|| call.get("error"));
        if let Some(why) = policy.skip_reason(tool, input, response) {
            self.stored.skipped.push((tool.to_string(), why));
            return Ok(Some(why));
        }
        let id = call.get("tool_use_id").and_then(Value::as_str);
        let key = id.map(|id| format!("tool:{}:{id}", self.session_id));
        let files = files::touched(input, self.cwd);
        self.enqueue(event, Some((tool, id)), call, files, priority(tool), key)?;
        Ok(None)
    }
}

/// Stores a manual memory (`mem-capture --note`) at high priority.
/// A manual memory: `--note`'s text, or one line of `--notes`.
#[derive(Debug, Clone, Default)]
pub struct Note {
    pub text: String,
    /// As given: a tag keeps its case.
    pub tags: Vec<String>,
    pub title: Option<String>,
    /// The note's id where it came from, verbatim.
    pub external_id: Option<String>,
    /// When it was written (stored form); `None` = now.
    pub date: Option<String>,
}

/// Queues a manual note; returns its queue id, or `None` when the very same imported note
/// (same project, id and content) is already queued.
pub fn store_note(
    conn: &Connection,
    note: &Note,
    project: Option<&Project>,
) -> Result<Option<i64>> {
    let mut payload = json!({"note": note.text, "tags": note.tags});
    for (k, v) in [
        ("title", &note.title),
        ("external_id", &note.external_id),
        ("date", &note.date),
    ] {
        if let Some(v) = v {
            payload[k] = json!(v);
        }
    }
    sanitize(&mut payload);
    let at = note.date.clone().unwrap_or_else(store::now);
    if let Some(pr) = project {
        projects::upsert(conn, &pr.root, &pr.name, pr.source)?;
    }
    // Only a note with an id can be the same note again: a re-import of an unchanged file adds
    // nothing, a changed note is queued and replaces what it said.
    let dedup_key = note.external_id.as_ref().map(|_| {
        let root = project.map(|p| p.root.as_str()).unwrap_or("");
        let digest = <sha2::Sha256 as sha2::Digest>::digest(format!("{root}\0{payload}"));
        format!("note:{}", hex::encode(digest))
    });
    let Some(id) = queue::insert(
        conn,
        &queue::NewCapture {
            session_id: "manual".into(),
            project: project.map(|p| p.root.clone()),
            event: "Note".into(),
            tool_name: None,
            tool_use_id: None,
            agent_id: None,
            payload: payload.to_string(),
            files: Vec::new(),
            priority: Priority::High,
            origin: "note",
            dedup_key,
            created_at: at,
        },
    )?
    else {
        return Ok(None);
    };
    events::log(
        conn,
        Some("manual"),
        "Note",
        None,
        "info",
        Some(&json!({"queue_id": id})),
    )?;
    Ok(Some(id))
}
