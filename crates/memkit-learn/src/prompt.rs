//! The extraction request to an LLM backend: one call per summarised session, given its
//! summary, its observations and the project's active learnings (low-confidence ones marked, so
//! the model confirms or contradicts them instead of proposing them again).

use serde_json::{Value, json};

use memkit_core::record::Observation;
use memkit_core::store::learnings::{CATEGORIES, Learning};

use crate::{Candidate, clip};

pub const SYSTEM: &str = "You extract durable project knowledge from a coding session with \
Claude Code, for the next sessions of the same project. A learning is a convention (how things \
are done here: commands, style, workflow), a gotcha (a trap or environment fact that cost time), \
a decision (a choice and its reason), a dependency (a library, version or service fact) or a \
pattern (a recurring structure in the code). Only propose what the session shows and what stays \
true beyond this task: never a step of the task, a file's content, or a guess. Write each as one \
short imperative or factual sentence naming the command, file or tool. When the session \
restates an existing learning, propose it again with the same wording so it gains confidence; \
when it shows an existing learning is now wrong, propose the replacement and give the id it \
contradicts. confidence is how sure you are that it is true and durable (0-1). Propose nothing \
when there is nothing durable: most sessions teach zero to three things.";

/// Observations given to the model at most (newest kept), and characters per observation.
const MAX_OBSERVATIONS: usize = 40;
const OBSERVATION_CHARS: usize = 400;
const SUMMARY_CHARS: usize = 2_000;
/// The user's prompts: at most this many characters in all, and per prompt.
const PROMPT_CHARS: usize = 3_000;
const PROMPT_EACH: usize = 600;

/// The structured-output schema of the answer.
pub fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "learnings": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "content": {"type": "string"},
                        "category": {"type": "string", "enum": CATEGORIES},
                        "confidence": {"type": "number"},
                        "contradicts": {"type": "integer"},
                        "reason": {"type": "string"}
                    },
                    "required": ["content", "category", "confidence", "reason"],
                    "additionalProperties": false
                }
            }
        },
        "required": ["learnings"],
        "additionalProperties": false
    })
}

/// The user message for one session.
pub fn user(
    summary: &str,
    observations: &[Observation],
    prompts: &[String],
    active: &[Learning],
) -> String {
    let mut s = String::from("EXISTING LEARNINGS OF THE PROJECT (id, category, confidence)\n");
    if active.is_empty() {
        s.push_str("(none)\n");
    }
    for l in active {
        let low = if l.confidence < 0.5 {
            " [low confidence: confirm or contradict it, do not restate it as new]"
        } else {
            ""
        };
        s.push_str(&format!(
            "#{} [{}] {:.2}{low}: {}\n",
            l.id, l.category, l.confidence, l.content
        ));
    }
    s.push_str("\nWHAT THE USER TYPED (their rules and corrections count most)\n");
    let mut left = PROMPT_CHARS;
    for p in prompts {
        if left == 0 {
            break;
        }
        let p = clip(p.trim(), left.min(PROMPT_EACH));
        left = left.saturating_sub(p.chars().count());
        s.push_str(&format!("- {p}\n"));
    }
    s.push_str("\nSESSION SUMMARY\n");
    s.push_str(&clip(summary, SUMMARY_CHARS));
    s.push_str("\n\nSESSION OBSERVATIONS (oldest first)\n");
    let skip = observations.len().saturating_sub(MAX_OBSERVATIONS);
    for o in &observations[skip..] {
        let mut line = format!("- [{}] {}", o.kind, o.title);
        if !o.summary.is_empty() && o.summary != o.title {
            line.push_str(&format!(": {}", o.summary));
        }
        if !o.facts.is_empty() {
            line.push_str(&format!(" Facts: {}", o.facts.join("; ")));
        }
        s.push_str(&clip(&line, OBSERVATION_CHARS));
        s.push('\n');
    }
    s.push_str("\nAnswer with the learnings JSON.");
    s
}

/// The candidates of an answer; `None` when it does not follow the schema.
pub fn parse(v: &Value) -> Option<Vec<Candidate>> {
    let items = v.get("learnings")?.as_array()?;
    Some(
        items
            .iter()
            .filter_map(|it| {
                let content = it["content"].as_str()?.trim();
                if content.is_empty() {
                    return None;
                }
                Some(Candidate {
                    content: content.to_string(),
                    category: crate::category(it["category"].as_str().unwrap_or("")).into(),
                    confidence: it["confidence"].as_f64().unwrap_or(0.5).clamp(0.0, 1.0),
                    contradicts: it["contradicts"].as_i64(),
                    evidence: it["reason"]
                        .as_str()
                        .filter(|r| !r.trim().is_empty())
                        .map(str::to_string),
                })
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_become_candidates() {
        let v = json!({"learnings": [
            {"content": " Use pnpm ", "category": "convention", "confidence": 0.9, "contradicts": null, "reason": "user said so"},
            {"content": "CI has ffmpeg now", "category": "Gotcha", "confidence": 1.7, "contradicts": 4, "reason": ""},
            {"content": "", "category": "pattern", "confidence": 0.5, "contradicts": null, "reason": "x"}
        ]});
        let c = parse(&v).unwrap();
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].content, "Use pnpm");
        assert_eq!(c[0].evidence.as_deref(), Some("user said so"));
        assert_eq!(
            (c[1].category.as_str(), c[1].confidence, c[1].contradicts),
            ("gotcha", 1.0, Some(4))
        );
        assert_eq!(c[1].evidence, None);
        assert!(parse(&json!({"observations": []})).is_none());
    }
}
