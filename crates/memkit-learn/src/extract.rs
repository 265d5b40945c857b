//! Where a session's candidates come from: one LLM call (the compression backends, with their
//! retry rules and the daily token cap), or the heuristic when there is no LLM, the cap is
//! reached or the call failed. Every call is logged in event_log (llm_call, purpose learn).

use std::time::Duration;

use rusqlite::Connection;
use serde_json::json;

use memkit_compress::llm::{self, Backend, CallError, Class, Kind};
use memkit_core::Result;
use memkit_core::record::Observation;
use memkit_core::store::events;
use memkit_core::store::learnings::Learning;

use crate::{Candidate, heuristic, prompt};

const ATTEMPTS: u32 = 3;
const MAX_TOKENS: u32 = 2048;

/// What a session gave and how.
#[derive(Debug, Clone)]
pub struct Extracted {
    pub candidates: Vec<Candidate>,
    /// `heuristic` or the backend's name.
    pub by: String,
    /// Why the heuristic stood in for the configured LLM.
    pub fallback: Option<String>,
}

pub struct Extractor<'a> {
    pub backend: Backend,
    /// MEM_LLM_DAILY_TOKENS.
    pub cap: Option<u64>,
    /// Tokens spent today, this run's calls included.
    pub spent: u64,
    backoff: Duration,
    conn: &'a Connection,
    /// Why the LLM is off for the rest of the run (an error no call gets past, or the cap).
    pub switched_off: Option<String>,
    pub calls: u64,
    pub tokens_in: u64,
    pub tokens_out: u64,
}

impl<'a> Extractor<'a> {
    pub fn new(
        backend: Backend,
        opts: &memkit_compress::Options,
        conn: &'a Connection,
    ) -> Result<Extractor<'a>> {
        Ok(Extractor {
            backend,
            cap: opts.daily_tokens,
            spent: memkit_compress::spent_today(conn)?,
            backoff: opts.backoff,
            conn,
            switched_off: None,
            calls: 0,
            tokens_in: 0,
            tokens_out: 0,
        })
    }

    /// The candidates of one session (`repeated`: the heuristic's from commands seen in two
    /// sessions, used when the heuristic extracts).
    pub fn extract(
        &mut self,
        session: &str,
        summary: &str,
        observations: &[Observation],
        prompts: &[String],
        repeated: &[Candidate],
        active: &[Learning],
    ) -> Result<Extracted> {
        let heuristic = |fallback: Option<String>| Extracted {
            candidates: heuristic::extract(prompts)
                .into_iter()
                .chain(repeated.iter().cloned())
                .collect(),
            by: "heuristic".into(),
            fallback,
        };
        if self.backend.kind == Kind::Heuristic {
            return Ok(heuristic(None));
        }
        if let Some(why) = &self.switched_off {
            return Ok(heuristic(Some(why.clone())));
        }
        if let Some(cap) = self.cap
            && self.spent >= cap
        {
            let why = format!("daily token cap reached ({} of {cap})", self.spent);
            self.switched_off = Some(why.clone());
            return Ok(heuristic(Some(why)));
        }
        let user = prompt::user(summary, observations, prompts, active);
        let schema = prompt::schema();
        let mut req = llm::Request {
            system: prompt::SYSTEM,
            user: &user,
            schema: &schema,
            max_tokens: MAX_TOKENS,
        };
        let mut delay = self.backoff;
        let mut enlarged = false;
        for attempt in 1..=ATTEMPTS {
            let res = llm::call(&self.backend, &req).and_then(|r| match prompt::parse(&r.value) {
                Some(c) => Ok((r, c)),
                None => Err(CallError::retry(
                    "answer does not follow the schema (no learnings list)",
                )
                .billed(r.tokens_in, r.tokens_out)),
            });
            self.calls += 1;
            let (tin, tout, latency) = match &res {
                Ok((r, _)) => (r.tokens_in, r.tokens_out, r.latency_ms),
                Err(e) => (e.tokens_in, e.tokens_out, 0),
            };
            self.tokens_in += tin;
            self.tokens_out += tout;
            self.spent += tin + tout;
            let error = res.as_ref().err().map(|e| e.message().to_string());
            events::log(
                self.conn,
                Some(session),
                "llm_call",
                None,
                if error.is_some() { "warn" } else { "info" },
                Some(
                    &json!({"backend": self.backend.kind.name(), "model": self.backend.model,
                    "purpose": "learn", "status": if error.is_some() { "error" } else { "ok" },
                    "attempt": attempt, "tokens_in": tin, "tokens_out": tout,
                    "max_tokens": req.max_tokens, "latency_ms": latency, "error": error}),
                ),
            )?;
            let e = match res {
                Ok((_, candidates)) => {
                    return Ok(Extracted {
                        candidates,
                        by: self.backend.kind.name().into(),
                        fallback: None,
                    });
                }
                Err(e) => e,
            };
            let last = attempt == ATTEMPTS;
            let over = self.cap.is_some_and(|c| self.spent >= c);
            match e.class {
                Class::Retry if !last && !over => {
                    let wait = e.retry_after.map_or(delay, |r| r.max(delay));
                    std::thread::sleep(memkit_compress::jitter(wait));
                    delay *= 2;
                }
                Class::Truncated if !last && !enlarged && !over => {
                    enlarged = true;
                    req.max_tokens *= 2;
                }
                Class::Abort => {
                    self.switched_off = Some(e.message().to_string());
                    return Ok(heuristic(Some(e.message().to_string())));
                }
                _ => return Ok(heuristic(Some(e.message().to_string()))),
            }
        }
        unreachable!("the last attempt returns")
    }
}
