//! Claude Code session transcripts (`~/.claude/projects/<project>/<session>.jsonl`), read back
//! into the events the hooks would have recorded (../shared/reference/transcript-schema.md).
//!
//! What one file becomes:
//! - UserPromptSubmit for each typed prompt: a user line outside a subagent, not `isMeta` or a
//!   compaction summary, whose text is not tool output or injected text (local command output,
//!   caveats, system reminders, interruption markers);
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

const NOT_PROMPTS: &[&str] = &[
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
    "Caveat:",
    "<system-reminder>",
    "<bash-stdout>",
    "<bash-stderr>",
    "[Request interrupted",
];

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
    let text = crate::utf8_lossy(bytes);
    let agent_from_path = agent_id_from_path(path);
    let mut out = Parsed {
        path: path.to_path_buf(),
        agent_id: agent_from_path.clone(),
        ..Default::default()
    };
    let path_str = path.display().to_string();
    let stem_session = path
        .file_stem()
        .and_then(|s| s.to_str())
        .filter(|_| agent_from_path.is_none())
        .map(str::to_string);

    let mut uses: Vec<ToolUse> = Vec::new();
    let mut results: HashMap<String, ToolResult> = HashMap::new();
    // (time, seq, event name, fields, dedup key)
    let mut events: Vec<(String, usize, Value, Option<String>)> = Vec::new();
    let mut last_at = String::new();
    let mut turn_active = false;
    let mut turn_last_text: Option<String> = None;
    let mut turn_last_uuid: Option<String> = None;
    let mut is_sidechain_file = agent_from_path.is_some();
    let mut seq = 0usize;

    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = match memkit_core::hook::parse_json(line) {
            Ok(v) => v,
            Err(e) => {
                out.bad_lines.push(BadLine {
                    line: i + 1,
                    msg: format!("invalid JSON: {e}"),
                });
                continue;
            }
        };
        let Some(obj) = v.as_object() else {
            out.bad_lines.push(BadLine {
                line: i + 1,
                msg: "not a JSON object".into(),
            });
            continue;
        };
        seq += 1;
        let s = |k: &str| obj.get(k).and_then(Value::as_str).filter(|s| !s.is_empty());
        let kind = s("type").unwrap_or("");
        if kind == "summary" {
            if let (Some(sum), Some(leaf)) = (s("summary"), s("leafUuid")) {
                // The session's title: stored as it is, so redacted here.
                let sum = crate::redact::redact_str(sum).into_owned();
                out.summaries.push((sum, leaf.to_string()));
            }
            continue;
        }
        if let Some(id) = s("sessionId") {
            out.session_id.get_or_insert_with(|| id.to_string());
        }
        if let Some(u) = s("uuid") {
            out.uuids.push(u.to_string());
        }
        if let Some(ts) = s("timestamp") {
            last_at = normalize_time(ts);
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
            is_sidechain_file = true;
        }
        let uuid = s("uuid").map(str::to_string);
        match kind {
            "assistant" => {
                turn_active = true;
                turn_last_uuid = uuid.clone().or(turn_last_uuid);
                let blocks = obj
                    .get("message")
                    .and_then(|m| m.get("content"))
                    .and_then(Value::as_array);
                for b in blocks.into_iter().flatten() {
                    match b.get("type").and_then(Value::as_str) {
                        Some("tool_use") => {
                            if let Some(id) = b.get("id").and_then(Value::as_str) {
                                uses.push(ToolUse {
                                    id: id.to_string(),
                                    name: b
                                        .get("name")
                                        .and_then(Value::as_str)
                                        .unwrap_or("unknown")
                                        .to_string(),
                                    input: b.get("input").cloned().unwrap_or(Value::Null),
                                    at: last_at.clone(),
                                    seq,
                                });
                            }
                        }
                        Some("text") => {
                            if let Some(t) = b
                                .get("text")
                                .and_then(Value::as_str)
                                .filter(|t| !t.trim().is_empty())
                            {
                                turn_last_text = Some(t.to_string());
                            }
                        }
                        _ => {}
                    }
                }
            }
            "user" => {
                let content = obj
                    .get("message")
                    .and_then(|m| m.get("content"))
                    .cloned()
                    .unwrap_or(Value::Null);
                let tool_results: Vec<&Value> = content
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter(|b| {
                                b.get("type").and_then(Value::as_str) == Some("tool_result")
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                if !tool_results.is_empty() {
                    let structured = (tool_results.len() == 1)
                        .then(|| obj.get("toolUseResult").cloned())
                        .flatten();
                    for r in &tool_results {
                        if let Some(id) = r.get("tool_use_id").and_then(Value::as_str) {
                            results.insert(
                                id.to_string(),
                                ToolResult {
                                    content: r.get("content").cloned().unwrap_or(Value::Null),
                                    is_error: r
                                        .get("is_error")
                                        .and_then(Value::as_bool)
                                        .unwrap_or(false),
                                    structured: structured.clone(),
                                    at: last_at.clone(),
                                },
                            );
                        }
                    }
                    continue;
                }
                let meta = obj.get("isMeta").and_then(Value::as_bool) == Some(true)
                    || obj.get("isCompactSummary").and_then(Value::as_bool) == Some(true);
                let prompt = text_of(&content);
                let prompt_t = prompt.trim_start();
                if meta
                    || is_sidechain_file
                    || prompt_t.is_empty()
                    || NOT_PROMPTS.iter().any(|p| prompt_t.starts_with(p))
                {
                    continue;
                }
                if turn_active {
                    events.push(stop_event(
                        &last_at,
                        seq,
                        turn_last_text.take(),
                        turn_last_uuid.take(),
                    ));
                    seq += 1;
                    turn_active = false;
                }
                events.push((
                    last_at.clone(),
                    seq,
                    json!({"hook_event_name": "UserPromptSubmit", "prompt": prompt}),
                    uuid.map(|u| format!("prompt:{u}")),
                ));
            }
            "system" if s("subtype") == Some("compact_boundary") => {
                let trigger = obj
                    .get("compactMetadata")
                    .and_then(|m| m.get("trigger"))
                    .cloned()
                    .unwrap_or(Value::Null);
                events.push((
                    last_at.clone(),
                    seq,
                    json!({"hook_event_name": "PreCompact", "trigger": trigger}),
                    uuid.map(|u| format!("compact:{u}")),
                ));
            }
            _ => {}
        }
    }

    for u in uses {
        let (event, response, error, at) = match results.remove(&u.id) {
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
                out.unpaired += 1;
                ("PostToolUse", Value::Null, Value::Null, u.at.clone())
            }
        };
        out.tool_uses += 1;
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
        events.push((at, u.seq, fields, None));
    }
    if turn_active {
        if is_sidechain_file {
            let agent = out.agent_id.clone().unwrap_or_default();
            events.push((
                last_at.clone(),
                usize::MAX,
                json!({"hook_event_name": "SubagentStop", "agent_id": agent, "agent_transcript_path": path_str, "last_assistant_message": turn_last_text}),
                Some(format!("substop:{agent}")),
            ));
        } else {
            events.push(stop_event(
                &last_at,
                usize::MAX,
                turn_last_text,
                turn_last_uuid,
            ));
        }
    }
    // Tool calls are placed at their result's time: a stable sort keeps file order on ties.
    events.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));

    if out.session_id.is_none() {
        out.session_id = stem_session;
    }
    let session = out.session_id.clone();
    // A subagent's events belong to its parent session, whose transcript sits in the project
    // folder (2.0: beside the agent file; 2.1: two levels up, beside `<session>/subagents/`).
    let transcript = match (&agent_from_path, &session) {
        (Some(_), Some(sid)) => {
            let mut dir = path.parent().unwrap_or(Path::new(""));
            if dir.file_name().is_some_and(|n| n == "subagents") {
                dir = dir.parent().and_then(Path::parent).unwrap_or(dir);
            }
            dir.join(format!("{sid}.jsonl")).display().to_string()
        }
        _ => path_str.clone(),
    };
    for (at, _, mut fields, key) in events {
        let obj = fields.as_object_mut().expect("object");
        if let Some(sid) = &session {
            obj.insert("session_id".into(), json!(sid));
        }
        obj.insert("transcript_path".into(), json!(transcript));
        if let Some(cwd) = &out.cwd {
            obj.insert("cwd".into(), json!(cwd));
        }
        if is_sidechain_file && let Some(a) = &out.agent_id {
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
