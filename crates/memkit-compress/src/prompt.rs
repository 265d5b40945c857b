//! What the LLM is asked: the system prompt, the JSON schema of the answer, the rendering of a
//! turn's tool calls under a token budget, and the checks on what comes back.

use serde_json::{Value, json};

use super::{Group, Item, MAX_CAPTURE_CHARS};
use memkit_capture::{head_tail, redact};
use memkit_core::record::{OBSERVATION_TYPES, Observation};
use memkit_core::tokens;

pub const SYSTEM: &str = "You compress the tool calls of one turn of a Claude Code session into a few observations that a developer will search later. Write 1 to 3 observations (one per distinct piece of work; usually one). For each: type is one of decision, bugfix, feature, refactor, discovery, change; title is an imperative phrase of 5 to 10 words naming the action and the main file or component (\"Fix token refresh race in auth middleware\"); summary says what was done and why in one to three sentences; detail is optional extra context; facts are short standalone statements worth remembering (commands, versions, gotchas); concepts are a few keywords; files_read and files_modified are paths exactly as they appear in the tool calls (files_modified only for files that were written or edited); functions_changed names functions, methods or classes that were added or changed. Be concrete and brief. Never include secrets.";

/// JSON schema of the answer.
pub fn schema() -> Value {
    let list = json!({"type": "array", "items": {"type": "string"}});
    json!({
        "type": "object",
        "properties": {
            "observations": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "type": {"type": "string", "enum": OBSERVATION_TYPES},
                        "title": {"type": "string"},
                        "summary": {"type": "string"},
                        "detail": {"type": "string"},
                        "facts": list,
                        "concepts": list,
                        "files_read": list,
                        "files_modified": list,
                        "functions_changed": list,
                    },
                    "required": ["type", "title", "summary", "facts", "concepts", "files_read",
                                 "files_modified", "functions_changed"],
                    "additionalProperties": false,
                },
            },
        },
        "required": ["observations"],
        "additionalProperties": false,
    })
}

fn value_text(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        v => v.to_string(),
    }
}

/// One capture as text: tool, outcome, files, input and output; cut head + tail to
/// [`MAX_CAPTURE_CHARS`] characters and redacted again.
pub fn render(it: &Item) -> String {
    let p = &it.payload;
    let status = if it.failed() { "FAILED" } else { "ok" };
    let input = value_text(&p["tool_input"]);
    let mut output = match &p["tool_response"] {
        Value::Object(o) => {
            // The useful part of the common response shapes.
            let pick = [
                "stdout",
                "stderr",
                "content",
                "output",
                "result",
                "filenames",
            ]
            .iter()
            .filter_map(|k| o.get(*k))
            .map(value_text)
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>();
            if let Some(c) = o.get("file").and_then(|f| f.get("content")) {
                format!("(file content, {} chars)", value_text(c).chars().count())
            } else if pick.is_empty() {
                Value::Object(o.clone()).to_string()
            } else {
                pick.join("\n")
            }
        }
        v => value_text(v),
    };
    if let Some(e) = p.get("error").filter(|e| !e.is_null()) {
        output = format!("{output}\nerror: {}", value_text(e));
    }
    let text = format!(
        "[#{}] {} ({status}){}\ninput: {input}\noutput: {output}",
        it.id,
        it.tool(),
        if it.files.is_empty() {
            String::new()
        } else {
            format!(" files: {}", it.files.join(", "))
        }
    );
    let text = redact::redact_str(&text).into_owned();
    cut_chars(&text, MAX_CAPTURE_CHARS)
}

/// Keeps at most `max` characters: the first two thirds and the last third.
pub fn cut_chars(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max {
        return s.to_string();
    }
    let head = max * 2 / 3;
    let tail = max - head;
    let hb = s
        .char_indices()
        .nth(head)
        .map(|(i, _)| i)
        .unwrap_or(s.len());
    let tb = s
        .char_indices()
        .nth(n - tail)
        .map(|(i, _)| i)
        .unwrap_or(s.len());
    head_tail(s, hb, s.len() - tb)
}

/// One LLM call's worth of a group.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Indexes into the group's items.
    pub items: Vec<usize>,
    /// The user message.
    pub user: String,
    /// Estimated tokens of the captures it covers.
    pub raw_tokens: usize,
}

fn header(g: &Group) -> String {
    let mut h = String::new();
    if let Some(p) = &g.project {
        h.push_str(&format!("Project: {p}\n"));
    }
    let why = g.prompt.as_deref().unwrap_or("(no prompt recorded)");
    h.push_str(&format!(
        "User request (the why): {}\n",
        cut_chars(&redact::redact_str(why), 2000)
    ));
    if let Some(m) = &g.last_message {
        h.push_str(&format!(
            "Assistant's final message: {}\n",
            cut_chars(&redact::redact_str(m), 1500)
        ));
    }
    h.push_str("\nTool calls:\n");
    h
}

/// Splits a group into calls that each fit `budget` estimated tokens (system prompt, header
/// and answer room included). A capture too large on its own is cut further to fit.
pub fn plan(g: &Group, budget: usize) -> Vec<Plan> {
    let head = header(g);
    let fixed = tokens::estimate(SYSTEM) + tokens::estimate(&head) + 600;
    let room = budget.saturating_sub(fixed).max(500);
    let mut plans: Vec<Plan> = Vec::new();
    let mut cur = Plan {
        items: Vec::new(),
        user: head.clone(),
        raw_tokens: 0,
    };
    let mut used = 0usize;
    for (i, it) in g.items.iter().enumerate() {
        let mut text = render(it);
        let mut t = tokens::estimate(&text);
        if t > room {
            text = cut_chars(&text, room * 3);
            t = tokens::estimate(&text);
        }
        if used + t > room && !cur.items.is_empty() {
            plans.push(std::mem::replace(
                &mut cur,
                Plan {
                    items: Vec::new(),
                    user: head.clone(),
                    raw_tokens: 0,
                },
            ));
            used = 0;
        }
        cur.user.push_str(&text);
        cur.user.push_str("\n\n");
        cur.items.push(i);
        cur.raw_tokens += t;
        used += t;
    }
    if !cur.items.is_empty() {
        plans.push(cur);
    }
    plans
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .take(30)
                .collect()
        })
        .unwrap_or_default()
}

/// Maps a path the model wrote back to one the turn named (exact, or a suffix of it).
fn match_file(p: &str, known: &[String]) -> Option<String> {
    let p = p.trim().trim_start_matches("./");
    if p.is_empty() {
        return None;
    }
    known
        .iter()
        .find(|k| k.as_str() == p || k.ends_with(&format!("/{p}")))
        .cloned()
}

/// Reads the observations out of an answer; None when it does not follow the schema. Types
/// outside the list become `change`; files_modified keeps only files the turn wrote or edited,
/// files_read only files it named.
pub fn parse_reply(v: &Value, g: &Group) -> Option<Vec<Observation>> {
    let list = v.get("observations")?.as_array()?;
    let modified = g.modified();
    let all = g.all_files();
    let mut out = Vec::new();
    for o in list.iter().take(5) {
        let title = o["title"].as_str().unwrap_or("").trim();
        let summary = o["summary"].as_str().unwrap_or("").trim();
        if title.is_empty() {
            continue;
        }
        let kind = o["type"].as_str().unwrap_or("change").to_ascii_lowercase();
        let kind = if OBSERVATION_TYPES.contains(&kind.as_str()) {
            kind
        } else {
            "change".into()
        };
        let mut files_modified = Vec::new();
        for f in strings(&o["files_modified"]) {
            if let Some(k) = match_file(&f, &modified)
                && !files_modified.contains(&k)
            {
                files_modified.push(k);
            }
        }
        let mut files_read = Vec::new();
        for f in strings(&o["files_read"]) {
            if let Some(k) = match_file(&f, &all)
                && !files_read.contains(&k)
                && !files_modified.contains(&k)
            {
                files_read.push(k);
            }
        }
        let detail = o["detail"]
            .as_str()
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .map(|d| cut_chars(&redact::redact_str(d), 2000));
        out.push(Observation {
            kind,
            title: cut_chars(&redact::redact_str(title), 120),
            summary: cut_chars(&redact::redact_str(summary), 1200),
            detail,
            facts: strings(&o["facts"])
                .into_iter()
                .map(|f| redact::redact_str(&f).into_owned())
                .collect(),
            concepts: strings(&o["concepts"]),
            files_read,
            files_modified,
            functions_changed: strings(&o["functions_changed"]),
            ..Default::default()
        });
    }
    Some(out)
}
