//! Claude Code hook payloads (../shared/reference/claude-code-hooks.md). Every field but
//! `hook_event_name` and `session_id` may be missing, and any field may have an unexpected
//! type: extraction is by hand from a JSON value so one odd field never loses the event.

use serde_json::{Map, Value};

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
