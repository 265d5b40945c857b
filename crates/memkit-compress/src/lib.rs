//! Compression: queued captures become typed observations (docs/ARCHITECTURE.md, "Data flow").
//!
//! Captures are grouped by session and turn (the tool calls between two user prompts, the
//! prompt being the "why"); each group becomes 1..n observations with one LLM call per group
//! (a group too large for the prompt budget is split), or with the offline heuristic. Failed
//! calls are retried with exponential backoff; a group whose calls finally fail is compressed by
//! the heuristic instead, so no capture is ever dropped.

pub mod database;
pub mod dedup;
pub mod heuristic;
pub mod llm;
pub mod prompt;
pub mod summary;

use std::time::Duration;

use rusqlite::Connection;
use serde_json::{Value, json};

use crate::llm::{Backend, CallError, Class, Kind};
use memkit_core::Result;
use memkit_core::config::{self, Config};
use memkit_core::notice::{Notice, Notices};
use memkit_core::record::{Capture, Observation};
use memkit_core::store::{events, queue};

/// Each capture is cut to its first and last characters up to this size before compression.
pub const MAX_CAPTURE_CHARS: usize = 32_000;
/// Attempts per LLM call before the heuristic takes over.
pub const ATTEMPTS: u32 = 3;

/// Skip reasons of the rows that do not become observations themselves (documented in
/// mem-compress(1)).
pub const SKIP_PROMPT: &str = "prompt";
pub const SKIP_TURN_END: &str = "turn-end";
pub const SKIP_MARKER: &str = "marker";

/// One capture as compression sees it.
#[derive(Debug, Clone)]
pub struct Item {
    pub id: i64,
    pub session_id: String,
    pub project: Option<String>,
    pub event: String,
    pub tool_name: Option<String>,
    pub files: Vec<String>,
    pub payload: Value,
    pub created_at: String,
}

impl Item {
    /// A capture record, claimed from the queue or read in filter mode. Its payload is redacted
    /// again: rows stored before a rule existed, under another `[redact]` configuration, or
    /// read from anywhere, go to observations and to the LLM as well.
    pub fn from_capture(c: Capture) -> Item {
        let mut payload = c.payload;
        memkit_capture::sanitize(&mut payload);
        Item {
            id: c.id,
            session_id: c.session_id,
            project: c.project,
            event: c.event,
            tool_name: c.tool_name,
            files: c.files,
            payload,
            created_at: c.created_at,
        }
    }

    pub fn is_tool(&self) -> bool {
        matches!(self.event.as_str(), "PostToolUse" | "PostToolUseFailure")
    }

    pub fn tool(&self) -> &str {
        self.tool_name.as_deref().unwrap_or("unknown")
    }

    pub fn failed(&self) -> bool {
        self.event == "PostToolUseFailure"
            || self.payload["tool_response"]["is_error"].as_bool() == Some(true)
            || self.payload["tool_response"]["interrupted"].as_bool() == Some(true)
    }

    /// A successful call that wrote or edited files.
    pub fn writes(&self) -> bool {
        !self.failed() && matches!(self.tool(), "Write" | "Edit" | "MultiEdit" | "NotebookEdit")
    }
}

/// The tool calls of one turn.
#[derive(Debug, Clone)]
pub struct Group {
    pub session_id: String,
    pub project: Option<String>,
    /// The user prompt that opened the turn: the "why".
    pub prompt: Option<String>,
    pub items: Vec<Item>,
    /// The assistant's last message of the turn (from its Stop), when known.
    pub last_message: Option<String>,
    /// The prompt and Stop rows that bound the turn, with their skip reasons: they are done
    /// when the turn is.
    pub boundaries: Vec<(i64, &'static str)>,
}

impl Group {
    pub fn ids(&self) -> Vec<i64> {
        self.items.iter().map(|i| i.id).collect()
    }

    /// Files the turn successfully wrote or edited, in order.
    pub fn modified(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for i in self.items.iter().filter(|i| i.writes()) {
            for f in &i.files {
                if !out.contains(f) {
                    out.push(f.clone());
                }
            }
        }
        out
    }

    /// Every file the turn named.
    pub fn all_files(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for f in self.items.iter().flat_map(|i| &i.files) {
            if !out.contains(f) {
                out.push(f.clone());
            }
        }
        out
    }

    fn subset(&self, idx: &[usize]) -> Group {
        Group {
            items: idx.iter().map(|&i| self.items[i].clone()).collect(),
            ..self.clone()
        }
    }
}

/// Captures sorted into turn groups, notes and documented skips.
#[derive(Debug, Default)]
pub struct Grouped {
    pub groups: Vec<Group>,
    pub notes: Vec<Item>,
    /// (capture id, skip reason).
    pub skips: Vec<(i64, &'static str)>,
}

/// Groups captures (any order) by session and turn: a UserPromptSubmit opens a turn, a Stop
/// closes it; tool calls join the open turn (or a turn without a prompt); notes stand alone.
pub fn group(mut items: Vec<Item>) -> Grouped {
    items.sort_by(|a, b| {
        (&a.session_id, &a.created_at, a.id).cmp(&(&b.session_id, &b.created_at, b.id))
    });
    let mut out = Grouped::default();
    let mut cur: Option<Group> = None;
    let mut last_prompt: Option<(String, String)> = None; // (session, prompt)
    let flush = |cur: &mut Option<Group>, out: &mut Grouped| {
        if let Some(g) = cur.take() {
            if g.items.is_empty() {
                out.skips.extend(g.boundaries);
            } else {
                out.groups.push(g);
            }
        }
    };
    for it in items {
        if cur.as_ref().is_some_and(|g| g.session_id != it.session_id) {
            flush(&mut cur, &mut out);
        }
        if last_prompt
            .as_ref()
            .is_some_and(|(s, _)| *s != it.session_id)
        {
            last_prompt = None;
        }
        match it.event.as_str() {
            "Note" => out.notes.push(it),
            // A wrapper stored as a prompt before wrappers had their own kind opens no turn.
            "UserPromptSubmit"
                if heuristic::clean_prompt(it.payload["prompt"].as_str().unwrap_or(""))
                    .is_empty() =>
            {
                out.skips.push((it.id, SKIP_MARKER))
            }
            "UserPromptSubmit" => {
                flush(&mut cur, &mut out);
                let prompt = it.payload["prompt"].as_str().unwrap_or("").to_string();
                last_prompt = Some((it.session_id.clone(), prompt.clone()));
                cur = Some(Group {
                    session_id: it.session_id,
                    project: it.project,
                    prompt: Some(prompt),
                    items: Vec::new(),
                    last_message: None,
                    boundaries: vec![(it.id, SKIP_PROMPT)],
                });
            }
            "Stop" => {
                match cur.as_mut() {
                    Some(g) => {
                        g.last_message = it.payload["last_assistant_message"]
                            .as_str()
                            .map(str::to_string);
                        g.boundaries.push((it.id, SKIP_TURN_END));
                    }
                    None => out.skips.push((it.id, SKIP_TURN_END)),
                }
                flush(&mut cur, &mut out);
            }
            _ if it.is_tool() => {
                let g = cur.get_or_insert_with(|| Group {
                    session_id: it.session_id.clone(),
                    project: it.project.clone(),
                    prompt: last_prompt.as_ref().map(|(_, p)| p.clone()),
                    items: Vec::new(),
                    last_message: None,
                    boundaries: Vec::new(),
                });
                if g.project.is_none() {
                    g.project = it.project.clone();
                }
                g.items.push(it);
            }
            _ => out.skips.push((it.id, SKIP_MARKER)),
        }
    }
    flush(&mut cur, &mut out);
    out
}

/// Compression settings.
#[derive(Debug, Clone)]
pub struct Options {
    /// Prompt budget in estimated tokens (system + why + tool calls).
    pub prompt_tokens: usize,
    /// First retry delay; doubled on each attempt.
    pub backoff: Duration,
    /// Tokens (in + out) the LLM may spend per UTC day; past it the heuristic takes over.
    pub daily_tokens: Option<u64>,
    pub max_output_tokens: u32,
}

impl Options {
    /// The settings, each checked against its bounds: a bad one is a usage error, never a
    /// silent default (an unreadable daily cap must not turn the cap off).
    pub fn from_config(cfg: &Config) -> Result<Options> {
        Ok(Options {
            prompt_tokens: config::LLM_PROMPT_TOKENS.get(cfg)?,
            backoff: Duration::from_millis(config::LLM_BACKOFF_MS.get(cfg)?),
            daily_tokens: config::LLM_DAILY_TOKENS.get(cfg)?,
            max_output_tokens: 2048,
        })
    }
}

/// What one chunk of a group became.
#[derive(Debug, Clone)]
pub struct Chunk {
    /// The captures it covers.
    pub ids: Vec<i64>,
    pub observations: Vec<Observation>,
    /// Why the LLM failed for it, when the heuristic had to take over after retries.
    pub error: Option<String>,
}

/// Counters of a run.
#[derive(Debug, Default, Clone)]
pub struct Stats {
    /// Parts of groups sent to the LLM (a group over the prompt budget is split).
    pub chunks: u64,
    pub calls: u64,
    pub failed_calls: u64,
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub fallbacks: u64,
    pub over_budget: u64,
    /// Chunks the heuristic compressed because the backend was switched off for the run.
    pub switched_off: u64,
}

/// Turns groups into observations with one backend, keeping the books in `event_log` when a
/// database is given.
pub struct Compressor<'a> {
    pub backend: Backend,
    pub opts: Options,
    conn: Option<&'a Connection>,
    pub stats: Stats,
    spent_today: Option<u64>,
    budget_logged: bool,
    /// Why the backend was switched off for the rest of the run (auth, spend limit, ...).
    pub switched_off: Option<String>,
    /// What the run must tell its user.
    pub notices: Notices,
}

impl<'a> Compressor<'a> {
    pub fn new(backend: Backend, opts: Options, conn: Option<&'a Connection>) -> Compressor<'a> {
        Compressor {
            backend,
            opts,
            conn,
            stats: Stats::default(),
            spent_today: None,
            budget_logged: false,
            switched_off: None,
            notices: Notices::new(),
        }
    }

    /// Compresses one group into chunks of observations (with the heuristic, one per piece of
    /// work: a long turn is not one vague observation).
    pub fn compress(&mut self, g: &Group) -> Result<Vec<Chunk>> {
        if self.backend.kind == Kind::Heuristic {
            let pieces = heuristic::pieces(g);
            let whole = pieces.len() == 1;
            return Ok(pieces
                .into_iter()
                .map(|idx| {
                    let part = g.subset(&idx);
                    let o = if whole {
                        heuristic::compress(&part)
                    } else {
                        heuristic::compress_piece(&part)
                    };
                    Chunk {
                        ids: part.ids(),
                        observations: vec![o],
                        error: None,
                    }
                })
                .collect());
        }
        let mut out = Vec::new();
        for plan in prompt::plan(g, self.opts.prompt_tokens) {
            let part = g.subset(&plan.items);
            let ids = part.ids();
            self.stats.chunks += 1;
            if self.switched_off.is_some() {
                self.stats.switched_off += 1;
                out.push(Chunk {
                    ids,
                    observations: vec![heuristic::compress(&part)],
                    error: None,
                });
                continue;
            }
            if self.over_budget()? {
                self.stats.over_budget += 1;
                out.push(Chunk {
                    ids,
                    observations: vec![heuristic::compress(&part)],
                    error: None,
                });
                continue;
            }
            match self.call_with_retries(&part, &ids, &plan.user)? {
                Ok(mut obs) => {
                    if obs.is_empty() {
                        obs.push(heuristic::compress(&part));
                    }
                    let raw = plan.raw_tokens as u64;
                    let n = obs.len() as u64;
                    for (i, o) in obs.iter_mut().enumerate() {
                        o.tokens_raw = raw / n + if i == 0 { raw % n } else { 0 };
                    }
                    out.push(Chunk {
                        ids,
                        observations: obs,
                        error: None,
                    });
                }
                Err(reason) => {
                    self.stats.fallbacks += 1;
                    out.push(Chunk {
                        ids,
                        observations: vec![heuristic::compress(&part)],
                        error: Some(reason),
                    });
                }
            }
        }
        Ok(out)
    }

    fn log(&self, session: &str, event: &str, level: &str, detail: &Value) -> Result<()> {
        if let Some(c) = self.conn {
            events::log(c, Some(session), event, None, level, Some(detail))?;
        }
        Ok(())
    }

    /// Whether the day's token cap is spent (logging it once per run).
    fn over_budget(&mut self) -> Result<bool> {
        let Some(cap) = self.opts.daily_tokens else {
            return Ok(false);
        };
        if self.spent_today.is_none() {
            self.spent_today = Some(match self.conn {
                Some(c) => spent_today(c)?,
                None => 0,
            });
        }
        let spent = self.spent_today.unwrap_or(0);
        if spent < cap {
            return Ok(false);
        }
        if !self.budget_logged {
            self.budget_logged = true;
            self.log(
                "",
                "llm_budget_exhausted",
                "warn",
                &json!({"cap": cap, "spent": spent, "backend": self.backend.kind.name(),
                        "using": "heuristic"}),
            )?;
        }
        Ok(true)
    }

    /// Up to [`ATTEMPTS`] calls with exponential backoff (or the server's `retry-after`, with
    /// jitter); an answer cut at max_tokens is asked again once with twice the room, never
    /// the same way. The queue rows keep the attempts, the next due time and the last error;
    /// every attempt's billed tokens count toward the day's cap, failed ones too. An error
    /// that no call can get past switches the backend off for the rest of the run.
    fn call_with_retries(
        &mut self,
        g: &Group,
        ids: &[i64],
        user: &str,
    ) -> Result<std::result::Result<Vec<Observation>, String>> {
        let schema = prompt::schema();
        let mut req = llm::Request {
            system: prompt::SYSTEM,
            user,
            schema: &schema,
            max_tokens: self.opts.max_output_tokens,
        };
        let mut delay = self.opts.backoff;
        let mut enlarged = false;
        for attempt in 1..=ATTEMPTS {
            let started = std::time::Instant::now();
            let res = llm::call(&self.backend, &req).and_then(|reply| {
                match prompt::parse_reply(&reply.value, g) {
                    Some(obs) => Ok((reply, obs)),
                    None => Err(CallError::retry(
                        "answer does not follow the schema (no observations list)",
                    )
                    .billed(reply.tokens_in, reply.tokens_out)),
                }
            });
            self.stats.calls += 1;
            let (tin, tout) = match &res {
                Ok((r, _)) => (r.tokens_in, r.tokens_out),
                Err(e) => (e.tokens_in, e.tokens_out),
            };
            self.stats.tokens_in += tin;
            self.stats.tokens_out += tout;
            if let Some(s) = self.spent_today.as_mut() {
                *s += tin + tout;
            }
            let e = match res {
                Ok((reply, obs)) => {
                    self.log(
                        &g.session_id,
                        "llm_call",
                        "info",
                        &json!({"backend": self.backend.kind.name(), "model": self.backend.model,
                                "purpose": "compress", "status": "ok", "attempt": attempt,
                                "captures": ids.len(), "tokens_in": tin, "tokens_out": tout,
                                "max_tokens": req.max_tokens, "latency_ms": reply.latency_ms}),
                    )?;
                    return Ok(Ok(obs));
                }
                Err(e) => e,
            };
            self.stats.failed_calls += 1;
            let last = attempt == ATTEMPTS;
            let (retry, wait) = match e.class {
                Class::Retry if !last => {
                    let wait = jitter(e.retry_after.map_or(delay, |r| r.max(delay)));
                    (true, wait)
                }
                Class::Truncated if !last && !enlarged => (true, Duration::ZERO),
                _ => (false, Duration::ZERO),
            };
            let next = chrono::Utc::now() + chrono::Duration::from_std(wait).unwrap_or_default();
            let next_at = next.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
            self.log(
                &g.session_id,
                "llm_call",
                "warn",
                &json!({"backend": self.backend.kind.name(), "model": self.backend.model,
                        "purpose": "compress", "status": "error", "attempt": attempt,
                        "captures": ids.len(), "error": e.message(), "retry": retry,
                        "tokens_in": tin, "tokens_out": tout, "max_tokens": req.max_tokens,
                        "latency_ms": started.elapsed().as_millis() as u64}),
            )?;
            if let Some(c) = self.conn {
                queue::record_attempt(c, ids, &next_at, e.message())?;
            }
            if e.class == Class::Abort {
                self.switch_off(&g.session_id, e.message())?;
            }
            if !retry {
                return Ok(Err(e.message().to_string()));
            }
            // Failed attempts are billed too: the cap can be reached between two of them.
            if self.over_budget()? {
                return Ok(Err(format!(
                    "{}; not retried: the daily token cap is reached",
                    e.message()
                )));
            }
            if e.class == Class::Truncated {
                enlarged = true;
                req.max_tokens = req.max_tokens.saturating_mul(2);
            } else {
                std::thread::sleep(wait);
                delay *= 2;
            }
        }
        Ok(Err("retries exhausted".into()))
    }

    /// Stops calling the backend for the rest of the run, saying so once (stderr and
    /// event_log): every later call would fail the same way, and could be billed.
    fn switch_off(&mut self, session: &str, why: &str) -> Result<()> {
        if self.switched_off.is_some() {
            return Ok(());
        }
        self.switched_off = Some(why.to_string());
        self.notices.push(Notice::warn(format!(
            "LLM backend {} switched off for this run: {why}; the heuristic compresses the rest",
            self.backend.kind.name()
        )));
        self.log(
            session,
            "llm_disabled",
            "error",
            &json!({"backend": self.backend.kind.name(), "model": self.backend.model,
                    "error": why, "using": "heuristic"}),
        )
    }
}

/// `d` plus up to a quarter more, so runs that failed together do not retry in step.
pub fn jitter(d: Duration) -> Duration {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos(),
    );
    d + d.mul_f64((h.finish() % 1000) as f64 / 4000.0)
}

/// Tokens (in + out) the LLM calls logged since midnight UTC.
pub fn spent_today(conn: &Connection) -> Result<u64> {
    let midnight = chrono::Utc::now()
        .date_naive()
        .and_hms_opt(0, 0, 0)
        .expect("midnight")
        .and_utc()
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    memkit_core::store::events::llm_tokens_since(conn, &midnight)
}

/// A manual note as an observation (no LLM: the user's words are kept as they are).
pub fn note_observation(it: &Item) -> Observation {
    heuristic::note(it)
}

/// Stamps the common fields of an observation made from `g`.
pub fn finish_observation(o: &mut Observation, session: &str, project: Option<&str>, ids: &[i64]) {
    o.session_id = Some(session.to_string());
    o.project = project.map(str::to_string);
    o.sources = ids.to_vec();
    if o.tokens_compressed == 0 {
        o.tokens_compressed = memkit_core::tokens::estimate(&heuristic::text_of(o)) as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_adds_up_to_a_quarter() {
        let d = Duration::from_millis(1000);
        for _ in 0..50 {
            let j = jitter(d);
            assert!(j >= d && j <= d + d / 4, "{j:?}");
        }
    }
}
