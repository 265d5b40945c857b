//! Session summaries: for a session that stopped or ended with nothing pending, a summary, its
//! key files and key decisions, from its observations and the last user and assistant messages
//! of its transcript. A session that gains observations after its summary is summarised again.
//! No LLM call: the observations already are the compressed form, so this costs no tokens.

use std::collections::HashMap;
use std::path::Path;

use rusqlite::Connection;
use serde_json::Value;

use memkit_capture::redact;
use memkit_core::Result;
use memkit_core::record::Observation;
use memkit_core::store::{observations, queue, sessions};

/// Sessions that need a (new) summary.
pub fn due(conn: &Connection) -> Result<Vec<String>> {
    sessions::due_for_summary(conn)
}

/// What a session summary says.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionSummary {
    pub summary: String,
    pub key_files: Vec<String>,
    pub key_decisions: Vec<String>,
}

fn text_of_content(c: &Value) -> Option<String> {
    match c {
        Value::String(s) => Some(s.clone()),
        Value::Array(blocks) => {
            let t: Vec<&str> = blocks
                .iter()
                .filter(|b| b["type"].as_str() == Some("text"))
                .filter_map(|b| b["text"].as_str())
                .collect();
            (!t.is_empty()).then(|| t.join("\n"))
        }
        _ => None,
    }
}

/// How much of a transcript's end is read for its last messages: a long session's last turn
/// is in there, and a huge or endless file costs no more.
const TRANSCRIPT_TAIL: u64 = 8 << 20;

/// The last typed user message and last assistant text of a transcript file, redacted (the
/// transcript is Claude Code's, not a capture: nothing in it was redacted yet).
pub fn last_messages(path: &Path) -> (Option<String>, Option<String>) {
    let (user, assistant) = last_messages_raw(path);
    let red = |t: String| redact::redact_str(&t).into_owned();
    (user.map(red), assistant.map(red))
}

fn last_messages_raw(path: &Path) -> (Option<String>, Option<String>) {
    let Ok(bytes) = memkit_capture::transcript::read_regular(path, TRANSCRIPT_TAIL, true) else {
        return (None, None);
    };
    let text = memkit_core::utf8_lossy(&bytes);
    let (mut user, mut assistant) = (None, None);
    for line in text.lines().rev() {
        if user.is_some() && assistant.is_some() {
            break;
        }
        let Ok(v) = memkit_core::hook::parse_json(line) else {
            continue;
        };
        if v["isSidechain"].as_bool() == Some(true) || v["isMeta"].as_bool() == Some(true) {
            continue;
        }
        match v["type"].as_str() {
            Some("user") if user.is_none() => {
                if let Some(t) = text_of_content(&v["message"]["content"])
                    && !t.trim().is_empty()
                    && !t.trim_start().starts_with('<')
                    && !t.starts_with("[Request interrupted")
                {
                    user = Some(t);
                }
            }
            Some("assistant") if assistant.is_none() => {
                if let Some(t) = text_of_content(&v["message"]["content"])
                    && !t.trim().is_empty()
                    && !announces(&t)
                {
                    assistant = Some(t);
                }
            }
            _ => {}
        }
    }
    (user, assistant)
}

/// An assistant text that only says what comes next ("Now let me run the tests."): the
/// session's outcome is the last statement of what happened, not the step that followed it.
fn announces(text: &str) -> bool {
    let t = text.trim_start().to_lowercase();
    let short = t.chars().count() < 160 && !t.contains('\n');
    short
        && [
            "now let me",
            "let me",
            "i'll ",
            "i will ",
            "now i'll",
            "now i will",
            "next, i",
            "let's ",
            "now let's",
            "first, let me",
            "i need to",
            "i'm going to",
        ]
        .iter()
        .any(|p| t.starts_with(p))
}

/// A prompt that carries no goal of its own ("continue", "ok go on", "yes please").
pub fn is_filler(prompt: &str) -> bool {
    const FILLER: &[&str] = &[
        "continue", "go", "on", "ahead", "yes", "y", "ok", "okay", "sure", "please", "proceed",
        "thanks", "thank", "you", "do", "it", "keep", "going", "next", "great", "good", "fine",
        "carry", "resume", "sounds", "right", "yep", "yeah", "that", "k",
    ];
    let p = crate::heuristic::clean_prompt(prompt).to_lowercase();
    let words: Vec<&str> = p
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    !words.is_empty() && words.len() <= 4 && words.iter().all(|w| FILLER.contains(w))
}

fn clip(s: &str, max: usize) -> String {
    let s = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if s.chars().count() <= max {
        s
    } else {
        format!("{}…", s.chars().take(max).collect::<String>().trim_end())
    }
}

/// Builds a summary from a session's observations and messages. Each text is redacted before
/// it is cut: a cut inside a key block or a `<private>` span would hide it from the rules.
pub fn build(
    obs: &[Observation],
    first_prompt: Option<&str>,
    last_user: Option<&str>,
    last_assistant: Option<&str>,
) -> SessionSummary {
    let mut parts: Vec<String> = Vec::new();
    let red = |t: &str| redact::redact_str(t).into_owned();
    // Before the tags go: `<private>…</private>` is one of them.
    let first_prompt = first_prompt.map(|p| crate::heuristic::clean_prompt(&red(p)));
    let first_prompt = first_prompt.as_deref().filter(|p| !p.is_empty());
    let last_user = last_user.map(red);
    let last_user = last_user.as_deref();
    let last_assistant = last_assistant.map(red);
    let last_assistant = last_assistant.as_deref();
    if let Some(p) = first_prompt {
        parts.push(format!("Goal: {}.", clip(p, 200).trim_end_matches('.')));
    }
    if !obs.is_empty() {
        let titles: Vec<&str> = obs.iter().take(6).map(|o| o.title.as_str()).collect();
        let more = obs.len().saturating_sub(6);
        parts.push(format!(
            "Work ({} observation{}): {}{}.",
            obs.len(),
            if obs.len() == 1 { "" } else { "s" },
            titles.join("; "),
            if more > 0 {
                format!("; and {more} more")
            } else {
                String::new()
            }
        ));
    } else {
        parts.push("No tool activity recorded.".into());
    }
    if let Some(u) = last_user.filter(|u| Some(*u) != first_prompt && !u.trim().is_empty()) {
        parts.push(format!(
            "Last request: {}.",
            clip(u, 200).trim_end_matches('.')
        ));
    }
    if let Some(a) = last_assistant.filter(|a| !a.trim().is_empty() && !announces(a)) {
        parts.push(format!("Outcome: {}", clip(a, 300)));
    }
    // Key files: most often modified, then most often read.
    let mut counts: HashMap<&str, (usize, usize, usize)> = HashMap::new();
    let mut n = 0;
    for o in obs {
        for f in &o.files_modified {
            n += 1;
            counts.entry(f).or_insert((0, 0, n)).0 += 1;
        }
    }
    for o in obs {
        for f in &o.files_read {
            n += 1;
            counts.entry(f).or_insert((0, 0, n)).1 += 1;
        }
    }
    let mut files: Vec<(&str, (usize, usize, usize))> = counts.into_iter().collect();
    files.sort_by_key(|(_, (w, r, first))| (std::cmp::Reverse(*w), std::cmp::Reverse(*r), *first));
    let modified_any = files.iter().any(|(_, (w, _, _))| *w > 0);
    let key_files: Vec<String> = files
        .iter()
        .filter(|(_, (w, _, _))| !modified_any || *w > 0)
        .take(10)
        .map(|(f, _)| f.to_string())
        .collect();
    // Key decisions: decisions first, then features, bug fixes and refactors.
    let rank = |k: &str| match k {
        "decision" => 0,
        "feature" => 1,
        "bugfix" => 2,
        "refactor" => 3,
        _ => 9,
    };
    let mut ranked: Vec<&Observation> = obs.iter().filter(|o| rank(&o.kind) < 9).collect();
    ranked.sort_by_key(|o| rank(&o.kind));
    let key_decisions = ranked.iter().take(5).map(|o| o.title.clone()).collect();
    SessionSummary {
        summary: red(&parts.join(" ")),
        key_files,
        key_decisions,
    }
}

/// A prompt that is only a slash command, with at most one argument word.
fn is_bare_command(prompt: &str) -> bool {
    let p = crate::heuristic::clean_prompt(prompt);
    p.starts_with('/') && p.split_whitespace().count() <= 2
}

/// Writes the summary of one session. Returns false when the session is unknown.
pub fn summarize(conn: &Connection, session_id: &str, now: &str) -> Result<bool> {
    // As before the store held this query: a session that cannot be read counts as unknown.
    let row = sessions::transcript_and_last_message(conn, session_id)
        .ok()
        .flatten();
    let Some((transcript, last_msg)) = row else {
        return Ok(false);
    };
    let obs = observations::of_session(conn, session_id)?;
    let prompts = queue::prompts(conn, session_id)?;
    let (mut user, mut assistant) = transcript
        .as_deref()
        .map(|p| last_messages(Path::new(p)))
        .unwrap_or((None, None));
    if user.is_none() {
        user = prompts.last().cloned();
    }
    if assistant.is_none() {
        assistant = last_msg;
    }
    // A session opened with a bare slash command (`/clear`, `/init`) has its goal in the next
    // prompt; the command would otherwise be all the session index says of it.
    // "continue" or "yes" says nothing of the goal either.
    let goal = prompts
        .iter()
        .find(|p| !is_bare_command(p) && !is_filler(p))
        .or(prompts.iter().find(|p| !is_filler(p)));
    let s = build(
        &obs,
        goal.map(String::as_str),
        user.as_deref(),
        assistant.as_deref(),
    );
    let max_id = obs.iter().filter_map(|o| o.id).max().unwrap_or(0);
    sessions::set_summary(
        conn,
        session_id,
        &s.summary,
        &s.key_files,
        &s.key_decisions,
        max_id,
        now,
    )?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prompt_that_only_says_go_on_is_no_goal() {
        for p in [
            "continue",
            "Continue.",
            "ok go on",
            "yes please",
            "keep going!",
            "y",
        ] {
            assert!(is_filler(p), "{p}");
        }
        for p in [
            "continue the migration",
            "fix it",
            "yes, but use sqlite",
            "/init",
        ] {
            assert!(!is_filler(p), "{p}");
        }
    }

    #[test]
    fn an_announcement_of_the_next_step_is_no_outcome() {
        assert!(announces("Now let me run the tests."));
        assert!(announces("Let me check the config file"));
        assert!(!announces(
            "All 42 tests pass; the rounding bug was in cents()."
        ));
        assert!(!announces(
            "Let me summarize:\n- fixed the parser\n- added two tests for the edge case"
        ));
    }
}
