//! Claude Code hook payloads (../shared/reference/claude-code-hooks.md). Every field but
//! `hook_event_name` and `session_id` may be missing, and any field may have an unexpected
//! type: extraction is by hand from a JSON value so one odd field never loses the event.

use serde_json::{Map, Value};

use crate::{Error, Result};

#[derive(Debug, Clone, Default)]
pub struct HookPayload {
    pub event: Option<String>,
    pub session_id: Option<String>,
    pub transcript_path: Option<String>,
    pub cwd: Option<String>,
    pub agent_id: Option<String>,
    pub source: Option<String>,
    pub model: Option<String>,
    pub prompt: Option<String>,
    pub tool_name: Option<String>,
    pub tool_use_id: Option<String>,
    pub tool_input: Option<Value>,
    pub last_assistant_message: Option<String>,
    pub reason: Option<String>,
    /// The whole payload (already redacted by the caller), kept as the queue row's payload.
    pub raw: Map<String, Value>,
}

fn string_field(map: &Map<String, Value>, key: &str) -> Option<String> {
    match map.get(key)? {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

impl HookPayload {
    /// Reads a payload object; anything that is not an object is `None`.
    pub fn from_value(v: Value) -> Option<HookPayload> {
        let Value::Object(raw) = v else {
            return None;
        };
        let s = |k: &str| string_field(&raw, k);
        Some(HookPayload {
            event: s("hook_event_name"),
            session_id: s("session_id"),
            transcript_path: s("transcript_path"),
            cwd: s("cwd"),
            agent_id: s("agent_id"),
            source: s("source"),
            model: s("model"),
            prompt: s("prompt"),
            tool_name: s("tool_name"),
            tool_use_id: s("tool_use_id"),
            tool_input: raw.get("tool_input").cloned(),
            last_assistant_message: s("last_assistant_message"),
            reason: s("reason"),
            raw,
        })
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.raw.get(key)
    }

    /// PostToolBatch: the calls it resolved, each as a PostToolUse-shaped object.
    pub fn batch_calls(&self) -> Vec<Map<String, Value>> {
        self.raw
            .get("tool_calls")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(|c| c.as_object().cloned()).collect())
            .unwrap_or_default()
    }
}

/// Reads the one hook payload Claude Code writes on stdin (nothing when stdin is a terminal,
/// so a hook run by hand does not wait). A payload that is empty, not JSON or not an object is
/// an input error naming `<stdin>`; other errors are reading ones.
pub fn read_stdin() -> Result<Value> {
    use std::io::{IsTerminal, Read};
    let mut bytes = Vec::new();
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        stdin.lock().read_to_end(&mut bytes)?;
    }
    parse_payload(&bytes)
}

/// A payload's bytes as a JSON object (invalid UTF-8 replaced, lone surrogates tolerated).
pub fn parse_payload(bytes: &[u8]) -> Result<Value> {
    let text = crate::utf8_lossy(bytes);
    if text.trim().is_empty() {
        return Err(Error::input("<stdin>", None, "empty payload"));
    }
    match parse_json(&text) {
        Ok(v) if v.is_object() => Ok(v),
        Ok(_) => Err(Error::input(
            "<stdin>",
            None,
            "payload is not a JSON object",
        )),
        Err(e) => Err(Error::input(
            "<stdin>",
            Some(e.line()),
            format!("invalid JSON payload: {e}"),
        )),
    }
}

/// Parses JSON text, first as it is and, when that fails on a lone UTF-16 surrogate escape
/// (`"\ud83d"`: what Node's JSON.stringify writes for a string cut mid-emoji), again with each
/// lone surrogate replaced by U+FFFD, so one broken character never loses a whole payload.
pub fn parse_json(text: &str) -> serde_json::Result<Value> {
    match serde_json::from_str(text) {
        Ok(v) => Ok(v),
        Err(e) => match replace_lone_surrogates(text) {
            Some(fixed) => serde_json::from_str(&fixed),
            None => Err(e),
        },
    }
}

/// `text` with every `\uXXXX` escape of a surrogate that is not half of a valid pair turned
/// into `\ufffd`; `None` when there is none.
pub fn replace_lone_surrogates(text: &str) -> Option<String> {
    let b = text.as_bytes();
    let hex4 = |i: usize| -> Option<u16> {
        let s = text.get(i..i + 4)?;
        u16::from_str_radix(s, 16).ok()
    };
    // (start, end) byte ranges of the escapes to replace.
    let mut lone: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while let Some(off) = b.get(i..).and_then(|rest| memchr::memchr(b'\\', rest)) {
        i += off;
        if b.get(i + 1) != Some(&b'u') {
            i += 2; // any other escape, an escaped backslash included
            continue;
        }
        let Some(unit) = hex4(i + 2) else {
            i += 2;
            continue;
        };
        match unit {
            0xD800..=0xDBFF => {
                let low = (b.get(i + 6) == Some(&b'\\') && b.get(i + 7) == Some(&b'u'))
                    .then(|| hex4(i + 8))
                    .flatten();
                if low.is_some_and(|l| (0xDC00..=0xDFFF).contains(&l)) {
                    i += 12;
                } else {
                    lone.push((i, i + 6));
                    i += 6;
                }
            }
            0xDC00..=0xDFFF => {
                lone.push((i, i + 6));
                i += 6;
            }
            _ => i += 6,
        }
    }
    if lone.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (s, e) in lone {
        out.push_str(&text[last..s]);
        out.push_str("\\ufffd");
        last = e;
    }
    out.push_str(&text[last..]);
    Some(out)
}

/// The hook output for an event carrying `text` as additionalContext.
pub fn hook_json(event: &str, text: &str) -> serde_json::Value {
    serde_json::json!({
        "hookSpecificOutput": {"hookEventName": event, "additionalContext": text}
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lone_surrogates_become_replacement_characters_and_the_rest_stays() {
        let v =
            parse_json(r#"{"a":"cut \ud83d","b":"ok \ud83d\ude00","c":"\udc00x","d":"\\ud83d"}"#)
                .unwrap();
        assert_eq!(v["a"], "cut \u{fffd}");
        assert_eq!(v["b"], "ok \u{1F600}");
        assert_eq!(v["c"], "\u{fffd}x");
        // An escaped backslash followed by "ud83d" is text, not an escape.
        assert_eq!(v["d"], "\\ud83d");
        assert!(parse_json("{\"a\": 1").is_err());
        // Cut right after a backslash (found by the fuzz test).
        assert!(parse_json("{\"a\": \"x\\").is_err());
    }
}
