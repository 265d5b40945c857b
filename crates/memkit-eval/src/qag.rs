//! `mem-eval compression --qag`: an LLM judge scores an observation against its captures by
//! question-answer generation. In one call it writes yes/no questions the captures answer and
//! says which the observation answers too (coverage: what the observation kept), and lists
//! the observation's claims with whether the captures support each (alignment: what it made
//! up). Every call is logged as `llm_call` (purpose `judge`), so it counts against
//! MEM_LLM_DAILY_TOKENS like compression's; past the cap the judge stops.

use rusqlite::Connection;
use serde_json::{Value, json};

use memkit_compress::llm::{self, Backend, Class};
use memkit_core::Result;
use memkit_core::record::Observation;
use memkit_core::store::events;
use memkit_core::store::stats::Source;
use memkit_core::tokens;

/// The judge's instructions.
pub const SYSTEM: &str = "You judge a summary of a coding session's tool calls. From the CAPTURES \
write up to 8 yes/no questions about what was done and found (files, commands, errors, \
decisions) whose answer in the captures is yes. For each, say whether the OBSERVATION answers it \
(yes, no, or idk when it says nothing). Then list each factual claim the OBSERVATION makes, with \
whether the CAPTURES support it (yes or no). Answer with JSON only.";

/// Estimated tokens of capture text one judge call may send.
pub const CAPTURE_TOKENS: usize = 6000;

pub fn schema() -> Value {
    let answer = json!({"type": "string", "enum": ["yes", "no", "idk"]});
    json!({
        "type": "object",
        "properties": {
            "questions": {"type": "array", "items": {"type": "object",
                "properties": {"question": {"type": "string"}, "observation": answer},
                "required": ["question", "observation"], "additionalProperties": false}},
            "claims": {"type": "array", "items": {"type": "object",
                "properties": {"claim": {"type": "string"}, "supported": answer},
                "required": ["claim", "supported"], "additionalProperties": false}},
        },
        "required": ["questions", "claims"],
        "additionalProperties": false,
    })
}

/// What the judge said of one observation.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// Share of the questions the observation answers (yes).
    pub coverage: f64,
    /// Share of its claims the captures support.
    pub alignment: f64,
}

/// A judge with its backend and the day's spending.
pub struct Judge<'a> {
    pub backend: Backend,
    /// MEM_LLM_DAILY_TOKENS.
    pub cap: Option<u64>,
    /// Tokens spent today, this run's calls included.
    pub spent: u64,
    conn: &'a Connection,
    /// Why the judge stopped (the cap, or an error no call gets past).
    pub stopped: Option<String>,
    pub calls: u64,
}

impl<'a> Judge<'a> {
    pub fn new(backend: Backend, cap: Option<u64>, conn: &'a Connection) -> Result<Judge<'a>> {
        Ok(Judge {
            backend,
            cap,
            spent: memkit_compress::spent_today(conn)?,
            conn,
            stopped: None,
            calls: 0,
        })
    }

    /// The judge's verdict on `o`; `Ok(Err(why))` when there is none (the cap reached, the
    /// call failed).
    pub fn judge(
        &mut self,
        o: &Observation,
        sources: &[Source],
    ) -> Result<std::result::Result<Verdict, String>> {
        if let Some(why) = &self.stopped {
            return Ok(Err(why.clone()));
        }
        if let Some(cap) = self.cap
            && self.spent >= cap
        {
            let why = format!("daily token cap reached ({} of {cap})", self.spent);
            self.stopped = Some(why.clone());
            return Ok(Err(why));
        }
        let user = prompt(o, sources);
        let schema = schema();
        let req = llm::Request {
            system: SYSTEM,
            user: &user,
            schema: &schema,
            max_tokens: 2048,
        };
        let res = llm::call(&self.backend, &req);
        self.calls += 1;
        let (tin, tout, latency, error) = match &res {
            Ok(r) => (r.tokens_in, r.tokens_out, r.latency_ms, None),
            Err(e) => (e.tokens_in, e.tokens_out, 0, Some(e.message().to_string())),
        };
        self.spent += tin + tout;
        events::log(
            self.conn,
            o.session_id.as_deref(),
            "llm_call",
            None,
            if error.is_some() { "warn" } else { "info" },
            Some(
                &json!({"backend": self.backend.kind.name(), "model": self.backend.model,
                "purpose": "judge", "status": if error.is_some() { "error" } else { "ok" },
                "observation": o.id, "tokens_in": tin, "tokens_out": tout,
                "latency_ms": latency, "error": error}),
            ),
        )?;
        Ok(match res {
            Ok(r) => verdict(&r.value).ok_or_else(|| "the judge's answer lacks questions".into()),
            Err(e) => {
                if e.class == Class::Abort {
                    self.stopped = Some(e.message().to_string());
                }
                Err(e.message().to_string())
            }
        })
    }
}

/// The user message: the observation, then as much of its captures as [`CAPTURE_TOKENS`] allows.
fn prompt(o: &Observation, sources: &[Source]) -> String {
    let mut s = format!("OBSERVATION\nTitle: {}\nSummary: {}\n", o.title, o.summary);
    if let Some(d) = &o.detail {
        s.push_str(&format!("Detail: {d}\n"));
    }
    for f in &o.facts {
        s.push_str(&format!("- {f}\n"));
    }
    s.push_str("\nCAPTURES\n");
    let mut left = CAPTURE_TOKENS;
    for c in sources {
        let head = format!("[{} {}] ", c.event, c.tool_name.as_deref().unwrap_or(""));
        let cost = tokens::estimate(&c.payload);
        if cost <= left {
            s.push_str(&head);
            s.push_str(&c.payload);
            left -= cost;
        } else {
            // Cut to what is left (about 4 characters a token), on a character boundary.
            let keep: String = c.payload.chars().take(left * 4).collect();
            s.push_str(&head);
            s.push_str(&keep);
            s.push_str(" [cut]");
            left = 0;
        }
        s.push('\n');
        if left == 0 {
            break;
        }
    }
    s
}

/// Coverage and alignment from the judge's answer; `None` when it asked no question.
pub fn verdict(v: &Value) -> Option<Verdict> {
    let share = |list: &str, field: &str| -> Option<f64> {
        let items = v.get(list)?.as_array()?;
        let yes = items
            .iter()
            .filter(|i| i.get(field).and_then(Value::as_str) == Some("yes"))
            .count();
        Some(if items.is_empty() {
            1.0
        } else {
            yes as f64 / items.len() as f64
        })
    };
    if v.get("questions")?.as_array()?.is_empty() {
        return None;
    }
    let r3 = |x: f64| (x * 1000.0).round() / 1000.0;
    Some(Verdict {
        coverage: r3(share("questions", "observation")?),
        alignment: r3(share("claims", "supported").unwrap_or(1.0)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coverage_and_alignment_are_shares_of_yes() {
        let v = json!({"questions": [{"question": "a", "observation": "yes"},
            {"question": "b", "observation": "idk"}, {"question": "c", "observation": "yes"}],
            "claims": [{"claim": "x", "supported": "yes"}, {"claim": "y", "supported": "no"}]});
        assert_eq!(
            verdict(&v),
            Some(Verdict {
                coverage: 0.667,
                alignment: 0.5
            })
        );
        assert_eq!(verdict(&json!({"questions": [], "claims": []})), None);
    }
}
