//! Claude Code session transcripts (`~/.claude/projects/<project>/<session>.jsonl`), read back
//! into the events the hooks would have recorded (../shared/reference/transcript-schema.md).
//!
//! What one file becomes:
//! - UserPromptSubmit for each user line outside a subagent, not `isMeta` or a compaction
//!   summary; when its text is a wrapper (local command output, teammate messages, system
//!   reminders, interruption markers: `prompt::classify`) it neither ends nor starts a turn, and
//!   capture stores it as a `Wrapper`;
//! - PostToolUse (PostToolUseFailure when `is_error`) for each `tool_use`, paired with its
//!   `tool_result` by id; the structured `toolUseResult` is the response when the result line
//!   holds only that result, else the result's content;
//! - Stop at the end of each turn that had assistant activity (main files), with the turn's
//!   last assistant text; SubagentStop at the end of a subagent file;
//! - PreCompact for each `compact_boundary`;
//! - `summary` lines are returned apart: their `leafUuid` names a line of the session they
//!   describe, usually in another file.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::Origin;
use memkit_core::hook::HookPayload;
use memkit_core::store::normalize_time;

/// One problem line: the transcript is still imported without it.
#[derive(Debug, Clone)]
pub struct BadLine {
    pub line: usize,
    pub msg: String,
}

#[derive(Debug, Default)]
pub struct Parsed {
    pub path: PathBuf,
    pub session_id: Option<String>,
    pub agent_id: Option<String>,
    pub cwd: Option<String>,
    pub branch: Option<String>,
    pub version: Option<String>,
    /// Events in time order, ready for `capture::store_event`.
    pub events: Vec<(HookPayload, Origin)>,
    /// (summary text, leafUuid).
    pub summaries: Vec<(String, String)>,
    /// Every line uuid in the file, to resolve other files' summaries.
    pub uuids: Vec<String>,
    pub tool_uses: usize,
    pub unpaired: usize,
    pub bad_lines: Vec<BadLine>,
}

struct ToolUse {
    id: String,
    name: String,
    input: Value,
    at: String,
    seq: usize,
}

struct ToolResult {
    content: Value,
    is_error: bool,
    structured: Option<Value>,
    at: String,
}

/// Is this file a subagent transcript (`agent-<id>.jsonl`, beside the session or under
/// `<session>/subagents/`)?
pub fn agent_id_from_path(path: &Path) -> Option<String> {
    let stem = path.file_stem()?.to_str()?;
    stem.strip_prefix("agent-").map(str::to_string)
}

/// Reads `path` only if it is a regular file, and at most `max` bytes of it (the last `max`
/// with `tail`). A path taken from a hook payload can name anything: a FIFO would block the
/// pipeline (and its lock) until a writer came, `/dev/zero` would never end.
pub fn read_regular(path: &Path, max: u64, tail: bool) -> std::io::Result<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    use std::os::unix::fs::OpenOptionsExt;
    // Non-blocking, so opening a FIFO returns at once and fstat can refuse it.
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{}: not a regular file", path.display()),
        ));
    }
    if tail && meta.len() > max {
        f.seek(SeekFrom::Start(meta.len() - max))?;
    }
    let mut out = Vec::with_capacity(meta.len().min(max) as usize);
    f.take(max).read_to_end(&mut out)?;
    Ok(out)
}

/// Every `.jsonl` file under `dir`, sorted, subagent folders included.
pub fn find_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d)? {
            let entry = entry?;
            let p = entry.path();
            let ft = entry.file_type()?;
            if ft.is_dir() {
                stack.push(p);
            } else if ft.is_file() && p.extension().is_some_and(|e| e == "jsonl") {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}

fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn payload(fields: Value) -> HookPayload {
    HookPayload::from_value(fields).expect("object literal")
}

/// Parses one transcript file's bytes. Never fails: bad lines are reported in `bad_lines`.
pub fn parse(path: &Path, bytes: &[u8]) -> Parsed {
    let mut r = Reader::new(path);
    for (i, line) in memkit_core::utf8_lossy(bytes).lines().enumerate() {
        r.line(i + 1, line);
    }
    r.finish()
}

/// An event before it is stamped with the session: (time, sequence, fields, dedup key).
type Pending = (String, usize, Value, Option<String>);

/// The state of one transcript being read, line by line.
struct Reader<'p> {
    path: &'p Path,
    out: Parsed,
    /// The file's name says it is a subagent's (`agent-<id>.jsonl`).
    agent_from_path: Option<String>,
    uses: Vec<ToolUse>,
    results: HashMap<String, ToolResult>,
    events: Vec<Pending>,
    /// The last timestamp seen: lines without one happen then.
    last_at: String,
    /// The current turn had assistant activity (so it ends with a Stop).
    turn_active: bool,
    turn_last_text: Option<String>,
    turn_last_uuid: Option<String>,
    is_sidechain_file: bool,
    seq: usize,
}

impl<'p> Reader<'p> {
    fn new(path: &'p Path) -> Self {
        let agent_from_path = agent_id_from_path(path);
        Reader {
            path,
            out: Parsed {
                path: path.to_path_buf(),
                agent_id: agent_from_path.clone(),
                ..Default::default()
            },
            is_sidechain_file: agent_from_path.is_some(),
            agent_from_path,
            uses: Vec::new(),
            results: HashMap::new(),
            events: Vec::new(),
            last_at: String::new(),
            turn_active: false,
            turn_last_text: None,
            turn_last_uuid: None,
            seq: 0,
        }
    }

    fn line(&mut self, n: usize, line: &str) {
        if line.trim().is_empty() {
            return;
        }
        let v: Value = match memkit_core::hook::parse_json(line) {
            Ok(v) => v,
            Err(e) => {
                self.out.bad_lines.push(BadLine {
                    line: n,
                    msg: format!("invalid JSON: {e}"),
                });
                return;
            }
        };
        let Some(obj) = v.as_object() else {
            self.out.bad_lines.push(BadLine {
                line: n,
                msg: "not a JSON object".into(),
            });
            return;
        };
        self.seq += 1;
        let s = |k: &str| obj.get(k).and_then(Value::as_str).filter(|s| !s.is_empty());
        let kind = s("type").unwrap_or("");
        if kind == "summary" {
            if let (Some(sum), Some(leaf)) = (s("summary"), s("leafUuid")) {
                // The session's title: stored as it is, so redacted here.
                let sum = crate::redact::redact_str(sum).into_owned();
                self.out.summaries.push((sum, leaf.to_string()));
            }
            return;
        }
        self.header(obj);
        let uuid = s("uuid").map(str::to_string);
        match kind {
            "assistant" => self.assistant(obj, uuid),
            "user" => self.user(obj, uuid),
            "system" if s("subtype") == Some("compact_boundary") => {
                let trigger = obj
                    .get("compactMetadata")
                    .and_then(|m| m.get("trigger"))
                    .cloned()
                    .unwrap_or(Value::Null);
                self.events.push((
                    self.last_at.clone(),
                    self.seq,
                    json!({"hook_event_name": "PreCompact", "trigger": trigger}),
                    uuid.map(|u| format!("compact:{u}")),
                ));
            }
            _ => {}
        }
    }

    /// What every line may say about the session: ids, time, cwd, branch, version, agent.
    fn header(&mut self, obj: &Map<String, Value>) {
        let s = |k: &str| obj.get(k).and_then(Value::as_str).filter(|s| !s.is_empty());
        let out = &mut self.out;
        if let Some(id) = s("sessionId") {
            out.session_id.get_or_insert_with(|| id.to_string());
        }
        if let Some(u) = s("uuid") {
            out.uuids.push(u.to_string());
        }
        if let Some(ts) = s("timestamp") {
            self.last_at = normalize_time(ts);
        }
        if out.cwd.is_none() {
            out.cwd = s("cwd").map(str::to_string);
        }
        if let Some(b) = s("gitBranch") {
            out.branch = Some(b.to_string());
        }
        if let Some(ver) = s("version") {
            out.version = Some(ver.to_string());
        }
        if let Some(a) = s("agentId") {
            out.agent_id.get_or_insert_with(|| a.to_string());
        }
        if obj.get("isSidechain").and_then(Value::as_bool) == Some(true) {
            self.is_sidechain_file = true;
        }
    }

    /// An assistant line: its tool calls, and its text as the turn's last words so far.
    fn assistant(&mut self, obj: &Map<String, Value>, uuid: Option<String>) {
        self.turn_active = true;
        self.turn_last_uuid = uuid.or(self.turn_last_uuid.take());
        let blocks = obj
            .get("message")
            .and_then(|m| m.get("content"))
            .and_then(Value::as_array);
        for b in blocks.into_iter().flatten() {
            match b.get("type").and_then(Value::as_str) {
                Some("tool_use") => {
                    if let Some(id) = b.get("id").and_then(Value::as_str) {
                        self.uses.push(ToolUse {
                            id: id.to_string(),
                            name: b
                                .get("name")
                                .and_then(Value::as_str)
                                .unwrap_or("unknown")
                                .to_string(),
                            input: b.get("input").cloned().unwrap_or(Value::Null),
                            at: self.last_at.clone(),
                            seq: self.seq,
                        });
                    }
                }
                Some("text") => {
                    if let Some(t) = b
                        .get("text")
                        .and_then(Value::as_str)
                        .filter(|t| !t.trim().is_empty())
                    {
                        self.turn_last_text = Some(t.to_string());
                    }
                }
                _ => {}
            }
        }
    }

    /// A user line: tool results, or a typed prompt (which ends the turn before it).
    fn user(&mut self, obj: &Map<String, Value>, uuid: Option<String>) {
        let content = obj
            .get("message")
            .and_then(|m| m.get("content"))
            .cloned()
            .unwrap_or(Value::Null);
        let tool_results: Vec<&Value> = content
            .as_array()
            .map(|a| {
                a.iter()
                    .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
                    .collect()
            })
            .unwrap_or_default();
        if !tool_results.is_empty() {
            let structured = (tool_results.len() == 1)
                .then(|| obj.get("toolUseResult").cloned())
                .flatten();
            for r in &tool_results {
                if let Some(id) = r.get("tool_use_id").and_then(Value::as_str) {
                    self.results.insert(
                        id.to_string(),
                        ToolResult {
                            content: r.get("content").cloned().unwrap_or(Value::Null),
                            is_error: r.get("is_error").and_then(Value::as_bool).unwrap_or(false),
                            structured: structured.clone(),
                            at: self.last_at.clone(),
                        },
                    );
                }
            }
            return;
        }
        let meta = obj.get("isMeta").and_then(Value::as_bool) == Some(true)
            || obj.get("isCompactSummary").and_then(Value::as_bool) == Some(true);
        let prompt = text_of(&content);
        let prompt_t = prompt.trim_start();
        if meta || self.is_sidechain_file || prompt_t.is_empty() {
            return;
        }
        // Not the user's words: kept (capture stores it as a wrapper), but it neither ends the
        // turn nor starts one.
        if let crate::prompt::Prompt::Wrapper(_) = crate::prompt::classify(prompt_t) {
            self.events.push((
                self.last_at.clone(),
                self.seq,
                json!({"hook_event_name": "UserPromptSubmit", "prompt": prompt}),
                uuid.map(|u| format!("prompt:{u}")),
            ));
            return;
        }
        if self.turn_active {
            self.events.push(stop_event(
                &self.last_at,
                self.seq,
                self.turn_last_text.take(),
                self.turn_last_uuid.take(),
            ));
            self.seq += 1;
            self.turn_active = false;
        }
        self.events.push((
            self.last_at.clone(),
            self.seq,
            json!({"hook_event_name": "UserPromptSubmit", "prompt": prompt}),
            uuid.map(|u| format!("prompt:{u}")),
        ));
    }

    /// Each tool call with its result (by id): a PostToolUse, or a PostToolUseFailure.
    fn pair_tool_calls(&mut self) {
        for u in std::mem::take(&mut self.uses) {
            let (event, response, error, at) = match self.results.remove(&u.id) {
                Some(r) => {
                    let response = r.structured.unwrap_or_else(|| r.content.clone());
                    if r.is_error {
                        (
                            "PostToolUseFailure",
                            Value::Null,
                            Value::String(text_of(&r.content)),
                            r.at,
                        )
                    } else {
                        ("PostToolUse", response, Value::Null, r.at)
                    }
                }
                None => {
                    self.out.unpaired += 1;
                    ("PostToolUse", Value::Null, Value::Null, u.at.clone())
                }
            };
            self.out.tool_uses += 1;
            let mut fields = json!({
                "hook_event_name": event,
                "tool_name": u.name,
                "tool_input": u.input,
                "tool_use_id": u.id,
            });
            if !response.is_null() {
                fields["tool_response"] = response;
            }
            if !error.is_null() {
                fields["error"] = error;
            }
            let at = if at.is_empty() { u.at } else { at };
            self.events.push((at, u.seq, fields, None));
        }
    }

    /// The file's last turn ends with it: a Stop, or a SubagentStop in a subagent's file.
    fn close_last_turn(&mut self) {
        if !self.turn_active {
            return;
        }
        if self.is_sidechain_file {
            let agent = self.out.agent_id.clone().unwrap_or_default();
            let path = self.path.display().to_string();
            self.events.push((
                self.last_at.clone(),
                usize::MAX,
                json!({"hook_event_name": "SubagentStop", "agent_id": agent, "agent_transcript_path": path, "last_assistant_message": self.turn_last_text.take()}),
                Some(format!("substop:{agent}")),
            ));
        } else {
            self.events.push(stop_event(
                &self.last_at,
                usize::MAX,
                self.turn_last_text.take(),
                self.turn_last_uuid.take(),
            ));
        }
    }

    /// The parent session's transcript: a subagent's events belong to its parent session,
    /// whose transcript sits in the project folder (2.0: beside the agent file; 2.1: two
    /// levels up, beside `<session>/subagents/`).
    fn session_transcript(&self) -> String {
        match (&self.agent_from_path, &self.out.session_id) {
            (Some(_), Some(sid)) => {
                let mut dir = self.path.parent().unwrap_or(Path::new(""));
                if dir.file_name().is_some_and(|n| n == "subagents") {
                    dir = dir.parent().and_then(Path::parent).unwrap_or(dir);
                }
                dir.join(format!("{sid}.jsonl")).display().to_string()
            }
            _ => self.path.display().to_string(),
        }
    }

    /// The events in time order, each stamped with its session, transcript, cwd and agent and
    /// redacted.
    fn finish(mut self) -> Parsed {
        self.pair_tool_calls();
        self.close_last_turn();
        // Tool calls are placed at their result's time: a stable sort keeps file order on ties.
        self.events
            .sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
        if self.out.session_id.is_none() && self.agent_from_path.is_none() {
            self.out.session_id = self
                .path
                .file_stem()
                .and_then(|s| s.to_str())
                .map(str::to_string);
        }
        let transcript = self.session_transcript();
        let mut out = self.out;
        let session = out.session_id.clone();
        for (at, _, mut fields, key) in self.events {
            let obj = fields.as_object_mut().expect("object");
            if let Some(sid) = &session {
                obj.insert("session_id".into(), json!(sid));
            }
            obj.insert("transcript_path".into(), json!(transcript));
            if let Some(cwd) = &out.cwd {
                obj.insert("cwd".into(), json!(cwd));
            }
            if self.is_sidechain_file
                && let Some(a) = &out.agent_id
            {
                obj.entry("agent_id").or_insert_with(|| json!(a));
            }
            let mut fields = Value::Object(std::mem::take(obj));
            crate::sanitize(&mut fields);
            out.events.push((
                payload(fields),
                Origin {
                    kind: "transcript",
                    at,
                    key: key.map(|k| format!("{}:{k}", session.as_deref().unwrap_or(""))),
                },
            ));
        }
        out
    }
}

fn stop_event(
    at: &str,
    seq: usize,
    last_text: Option<String>,
    uuid: Option<String>,
) -> (String, usize, Value, Option<String>) {
    (
        at.to_string(),
        seq,
        json!({"hook_event_name": "Stop", "stop_hook_active": false, "last_assistant_message": last_text}),
        uuid.map(|u| format!("stop:{u}")),
    )
}

/// A `SessionStart` for an imported session: sets its cwd, branch and transcript path, at the
/// time of its first event.
pub fn session_start(p: &Parsed) -> Option<(HookPayload, Origin)> {
    if p.agent_id.is_some() {
        return None;
    }
    let sid = p.session_id.as_ref()?;
    let first = p.events.first()?;
    let mut fields = Map::new();
    fields.insert("hook_event_name".into(), json!("SessionStart"));
    fields.insert("session_id".into(), json!(sid));
    fields.insert("source".into(), json!("transcript"));
    fields.insert(
        "transcript_path".into(),
        json!(p.path.display().to_string()),
    );
    if let Some(cwd) = &p.cwd {
        fields.insert("cwd".into(), json!(cwd));
    }
    Some((
        payload(Value::Object(fields)),
        Origin {
            kind: "transcript",
            at: first.1.at.clone(),
            key: None,
        },
    ))
}
