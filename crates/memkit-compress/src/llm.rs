//! LLM backends (docs/ARCHITECTURE.md, "LLM backends"): one attempt of one call, classified so the caller can
//! decide what comes next (retry, retry with more room, give up on the group, or stop calling
//! for the run). Retries, budgets and accounting live with the caller (`compress`).
//!
//! `MEM_LLM` picks the backend: `anthropic` (Messages API, `ANTHROPIC_API_KEY`, default model
//! claude-haiku-4-5, JSON-schema structured output, thinking off), `openai` (OpenAI-compatible
//! chat completions at `MEM_LLM_URL`, e.g. a local Ollama; strict JSON schema), `claude-cli`
//! (`claude -p` with JSON output, run with MEM_DISABLE=1, hooks disabled, no tools, no MCP
//! servers, no session file, in a scratch directory, so it never records itself) or
//! `heuristic` (offline; the default when `MEM_LLM` is unset).

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use memkit_core::config::{self, Config};
use memkit_core::notice::Notice;
use memkit_core::{Error, Result};

pub const DEFAULT_ANTHROPIC_MODEL: &str = "claude-haiku-4-5";
pub const DEFAULT_ANTHROPIC_URL: &str = "https://api.anthropic.com";
pub const DEFAULT_OPENAI_URL: &str = "http://127.0.0.1:11434/v1";
pub const DEFAULT_OPENAI_MODEL: &str = "qwen2.5:3b";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Anthropic,
    OpenAi,
    ClaudeCli,
    Heuristic,
}

impl Kind {
    pub fn parse(s: &str) -> Option<Kind> {
        match s.trim().to_ascii_lowercase().as_str() {
            "anthropic" => Some(Kind::Anthropic),
            "openai" | "ollama" => Some(Kind::OpenAi),
            "claude-cli" | "claude" => Some(Kind::ClaudeCli),
            "heuristic" | "none" | "off" => Some(Kind::Heuristic),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::Anthropic => "anthropic",
            Kind::OpenAi => "openai",
            Kind::ClaudeCli => "claude-cli",
            Kind::Heuristic => "heuristic",
        }
    }
}

/// A configured backend.
#[derive(Debug, Clone)]
pub struct Backend {
    pub kind: Kind,
    pub url: String,
    pub model: String,
    pub api_key: Option<String>,
    pub timeout: Duration,
    /// The `claude` program for claude-cli.
    pub claude_bin: String,
}

impl Backend {
    pub fn heuristic() -> Backend {
        Backend {
            kind: Kind::Heuristic,
            url: String::new(),
            model: "heuristic".into(),
            api_key: None,
            timeout: Duration::from_secs(60),
            claude_bin: "claude".into(),
        }
    }

    /// The backend `MEM_LLM` (or `override_kind`) names, with its settings. Returns the
    /// heuristic backend and a warning when the named one cannot work (no API key).
    pub fn from_config(
        cfg: &Config,
        override_kind: Option<&str>,
    ) -> Result<(Backend, Option<Notice>)> {
        let name = override_kind.map_or_else(|| config::LLM.get(cfg), str::to_string);
        let kind = Kind::parse(&name).ok_or_else(|| {
            Error::Usage(format!(
                "MEM_LLM: unknown backend {name:?} (anthropic, openai, claude-cli, heuristic)"
            ))
        })?;
        let timeout = Duration::from_secs_f64(config::LLM_TIMEOUT_SECS.get(cfg)?);
        let mut b = Backend {
            kind,
            timeout,
            claude_bin: config::CLAUDE_BIN.get(cfg),
            ..Backend::heuristic()
        };
        let url = config::LLM_URL.get(cfg);
        let model = config::LLM_MODEL.get(cfg);
        match kind {
            Kind::Anthropic => {
                b.url = url.unwrap_or_else(|| DEFAULT_ANTHROPIC_URL.into());
                b.model = model.unwrap_or_else(|| DEFAULT_ANTHROPIC_MODEL.into());
                b.api_key = config::ANTHROPIC_API_KEY.get();
                if b.api_key.is_none() {
                    return Ok((
                        Backend::heuristic(),
                        Some(Notice::warn(
                            "MEM_LLM=anthropic but ANTHROPIC_API_KEY is not set: using the heuristic backend",
                        )),
                    ));
                }
            }
            Kind::OpenAi => {
                b.url = url.unwrap_or_else(|| DEFAULT_OPENAI_URL.into());
                b.model = model.unwrap_or_else(|| DEFAULT_OPENAI_MODEL.into());
                b.api_key = config::MEM_LLM_API_KEY
                    .get()
                    .or_else(|| config::OPENAI_API_KEY.get());
            }
            Kind::ClaudeCli => {
                b.model = model.unwrap_or_else(|| "haiku".into());
            }
            Kind::Heuristic => {}
        }
        Ok((b, None))
    }
}

/// One request: a system prompt, a user message, and the JSON schema the answer must follow.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    pub system: &'a str,
    pub user: &'a str,
    pub schema: &'a Value,
    pub max_tokens: u32,
}

/// A successful call: the parsed JSON answer and what it cost.
#[derive(Debug, Clone)]
pub struct Reply {
    pub value: Value,
    /// Input tokens billed, cache reads and writes included.
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub latency_ms: u64,
}

/// What a failed call means for the next attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Connection errors, timeouts, 429, 5xx, an answer that is not the JSON asked for.
    Retry,
    /// The answer was cut at max_tokens: the same request would be cut again, a larger
    /// max_tokens may help.
    Truncated,
    /// This request cannot succeed (other 4xx, a refusal, a content filter): its group falls
    /// back to the heuristic.
    Fatal,
    /// No request can succeed in this run (401/403/404, a spend limit or no credit, a CLI that
    /// is not logged in or out of its usage, a missing program): the run falls back.
    Abort,
}

/// Why a call failed, and what the failed attempt was billed (a refusal, a cut or malformed
/// answer still costs tokens).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallError {
    pub class: Class,
    pub message: String,
    pub tokens_in: u64,
    pub tokens_out: u64,
    /// The server's `retry-after`, capped at [`MAX_RETRY_AFTER`].
    pub retry_after: Option<Duration>,
}

/// The longest `retry-after` honoured: a compression run must not stall on one answer.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(30);

impl CallError {
    pub fn new(class: Class, message: impl Into<String>) -> CallError {
        CallError {
            class,
            message: message.into(),
            tokens_in: 0,
            tokens_out: 0,
            retry_after: None,
        }
    }

    pub fn retry(m: impl Into<String>) -> CallError {
        CallError::new(Class::Retry, m)
    }

    pub fn fatal(m: impl Into<String>) -> CallError {
        CallError::new(Class::Fatal, m)
    }

    pub fn abort(m: impl Into<String>) -> CallError {
        CallError::new(Class::Abort, m)
    }

    pub fn billed(mut self, tin: u64, tout: u64) -> CallError {
        self.tokens_in = tin;
        self.tokens_out = tout;
        self
    }

    pub fn message(&self) -> &str {
        &self.message
    }
}

/// A backend's answer text and what it was billed.
struct Answer {
    text: String,
    tokens_in: u64,
    tokens_out: u64,
}

/// Makes one attempt of `req` on `b`. The heuristic backend is not an LLM: calling it is a
/// fatal error.
pub fn call(b: &Backend, req: &Request) -> std::result::Result<Reply, CallError> {
    let start = Instant::now();
    let a = match b.kind {
        Kind::Anthropic => anthropic(b, req)?,
        Kind::OpenAi => openai(b, req)?,
        Kind::ClaudeCli => claude_cli(b, req)?,
        Kind::Heuristic => return Err(CallError::abort("the heuristic backend makes no calls")),
    };
    let value = parse_json_tolerant(&a.text).ok_or_else(|| {
        CallError::retry(format!(
            "answer is not a JSON object: {:?}",
            a.text.chars().take(120).collect::<String>()
        ))
        .billed(a.tokens_in, a.tokens_out)
    })?;
    Ok(Reply {
        value,
        tokens_in: a.tokens_in,
        tokens_out: a.tokens_out,
        latency_ms: start.elapsed().as_millis() as u64,
    })
}

fn agent(b: &Backend) -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(b.timeout))
        .timeout_connect(Some(Duration::from_secs(10)))
        .build()
        .into()
}

/// POSTs JSON; returns the parsed body of a 2xx answer or the classified failure.
fn post(
    b: &Backend,
    url: &str,
    headers: &[(&str, String)],
    body: &Value,
) -> std::result::Result<Value, CallError> {
    let mut r = agent(b).post(url);
    for (k, v) in headers {
        r = r.header(*k, v.as_str());
    }
    let mut resp = r
        .send_json(body)
        .map_err(|e| CallError::retry(format!("connection to {url}: {e}")))?;
    let status = resp.status().as_u16();
    let header = |k: &str| {
        resp.headers()
            .get(k)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let wait = retry_after(
        header("retry-after-ms").as_deref(),
        header("retry-after").as_deref(),
    );
    let text = resp
        .body_mut()
        .with_config()
        .limit(16 * 1024 * 1024)
        .read_to_string()
        .map_err(|e| CallError::retry(format!("reading the answer of {url}: {e}")))?;
    if !(200..300).contains(&status) {
        let mut e = http_error(status, &text);
        e.retry_after = wait;
        return Err(e);
    }
    serde_json::from_str(&text)
        .map_err(|e| CallError::retry(format!("answer is not JSON ({e}): {}", short(&text))))
}

/// The wait a server asks for: `retry-after-ms` (OpenAI) or `retry-after` in seconds (an
/// HTTP date is not worth a parser here), capped at [`MAX_RETRY_AFTER`].
fn retry_after(ms: Option<&str>, secs: Option<&str>) -> Option<Duration> {
    let parse = |s: Option<&str>| s.and_then(|s| s.trim().parse::<f64>().ok());
    let d = match (parse(ms), parse(secs)) {
        (Some(ms), _) => ms / 1000.0,
        (None, Some(s)) => s,
        (None, None) => return None,
    };
    (d.is_finite() && d >= 0.0).then(|| Duration::from_secs_f64(d.min(1e6)).min(MAX_RETRY_AFTER))
}

/// Classifies an HTTP error. Auth, permission and not-found answers, spend limits and empty
/// credit fail every request the same way: the run stops calling (Abort). Other 429s and
/// 5xx pass; other 4xx are this request's fault.
fn http_error(status: u16, text: &str) -> CallError {
    let v: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    let err = &v["error"];
    let hay = [&err["type"], &err["code"], &err["message"], err]
        .iter()
        .filter_map(|x| x.as_str())
        .collect::<Vec<_>>()
        .join(" ")
        .to_ascii_lowercase();
    let spend = [
        "enforced_spend_limit",
        "insufficient_quota",
        "billing_error",
        "credit balance",
    ]
    .iter()
    .any(|k| hay.contains(k));
    let msg = format!("HTTP {status}: {}", short(text));
    match status {
        401..=404 => CallError::abort(msg),
        _ if spend => CallError::abort(msg),
        408 | 429 | 500.. => CallError::retry(msg),
        _ => CallError::fatal(msg),
    }
}

/// An answer's start for an error message (kept in the queue and the event log): redacted
/// first, in case a server echoes a key or the prompt.
fn short(s: &str) -> String {
    memkit_capture::redact::redact_str(s)
        .chars()
        .take(200)
        .collect()
}

/// The end of a child's stderr for an error message, redacted.
fn tail(s: &str) -> String {
    let s = memkit_capture::redact::redact_str(s.trim());
    let n = s.chars().count();
    s.chars().skip(n.saturating_sub(300)).collect()
}

/// `base` joined with an API path: `version` (`/v1`) then `rest` (`/messages`). A base that is
/// the whole endpoint or already ends in the version gets no second one; a bare host gets the
/// version; a base with another path is the versioned root when `path_is_root` (an
/// OpenAI-compatible `https://host/api/openai`), else gets the version too.
fn endpoint(base: &str, version: &str, rest: &str, path_is_root: bool) -> String {
    let base = base.trim_end_matches('/');
    let full = format!("{version}{rest}");
    if base.ends_with(&full) {
        return base.to_string();
    }
    if base.ends_with(version) {
        return format!("{base}{rest}");
    }
    let has_path = base
        .split_once("://")
        .map_or(base, |(_, r)| r)
        .contains('/');
    if has_path && path_is_root {
        format!("{base}{rest}")
    } else {
        format!("{base}{full}")
    }
}

/// Input tokens of an Anthropic-style `usage`: cache reads and writes are billed input too.
fn input_tokens(u: &Value) -> u64 {
    [
        "input_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
    ]
    .iter()
    .filter_map(|k| u[*k].as_u64())
    .sum()
}

fn anthropic(b: &Backend, req: &Request) -> std::result::Result<Answer, CallError> {
    // Thinking off: a model that thinks by default would spend max_tokens before the answer.
    let body = json!({
        "model": b.model,
        "max_tokens": req.max_tokens,
        "thinking": {"type": "disabled"},
        "system": req.system,
        "messages": [{"role": "user", "content": req.user}],
        "output_config": {"format": {"type": "json_schema", "schema": req.schema}},
    });
    let headers = [
        ("x-api-key", b.api_key.clone().unwrap_or_default()),
        ("anthropic-version", "2023-06-01".to_string()),
    ];
    let url = endpoint(&b.url, "/v1", "/messages", false);
    let v = post(b, &url, &headers, &body)?;
    let text: String = v
        .get("content")
        .and_then(Value::as_array)
        .map(|blocks| {
            blocks
                .iter()
                .filter(|c| c.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|c| c.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("")
        })
        .unwrap_or_default();
    let (tin, tout) = (
        input_tokens(&v["usage"]),
        v["usage"]["output_tokens"].as_u64().unwrap_or(0),
    );
    let fail = |class, what: String| Err(CallError::new(class, what).billed(tin, tout));
    match v["stop_reason"].as_str().unwrap_or("") {
        "refusal" => fail(
            Class::Fatal,
            "the model refused (stop_reason refusal)".into(),
        ),
        "max_tokens" => fail(
            Class::Truncated,
            format!(
                "answer cut at max_tokens {} (stop_reason max_tokens)",
                req.max_tokens
            ),
        ),
        "model_context_window_exceeded" => fail(
            Class::Fatal,
            "the request fills the context window (stop_reason model_context_window_exceeded)"
                .into(),
        ),
        _ => Ok(Answer {
            text,
            tokens_in: tin,
            tokens_out: tout,
        }),
    }
}

/// OpenAI's reasoning models (gpt-5, o1, o3, o4), which take `max_completion_tokens` and no
/// `temperature`. A `provider/` prefix (OpenRouter's `openai/gpt-5`) is looked through.
pub fn is_reasoning_model(model: &str) -> bool {
    let m = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    ["gpt-5", "o1", "o3", "o4"].iter().any(|p| m.starts_with(p))
}

/// `schema` as OpenAI's strict structured output wants it: every property required, the
/// optional ones nullable, no other properties.
pub fn strict_schema(schema: &Value) -> Value {
    let mut s = schema.clone();
    let Some(o) = s.as_object_mut() else {
        return s;
    };
    if let Some(Value::Object(props)) = o.get("properties").cloned() {
        let required: Vec<&str> = schema["required"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut strict = serde_json::Map::new();
        for (k, p) in props {
            let p = strict_schema(&p);
            let p = if required.contains(&k.as_str()) {
                p
            } else {
                nullable(p)
            };
            strict.insert(k, p);
        }
        let keys: Vec<Value> = strict.keys().cloned().map(Value::String).collect();
        o.insert("properties".into(), Value::Object(strict));
        o.insert("required".into(), Value::Array(keys));
        o.insert("additionalProperties".into(), Value::Bool(false));
    }
    if let Some(items) = o.get("items").cloned() {
        o.insert("items".into(), strict_schema(&items));
    }
    s
}

/// `p` that also admits null.
fn nullable(mut p: Value) -> Value {
    match p.get("type").cloned() {
        Some(Value::String(t)) => p["type"] = json!([t, "null"]),
        Some(Value::Array(mut ts)) => {
            if !ts.iter().any(|t| t == "null") {
                ts.push(json!("null"));
            }
            p["type"] = Value::Array(ts);
        }
        _ => return json!({"anyOf": [p, {"type": "null"}]}),
    }
    if let Some(Value::Array(e)) = p.get_mut("enum")
        && !e.contains(&Value::Null)
    {
        e.push(Value::Null);
    }
    p
}

fn openai(b: &Backend, req: &Request) -> std::result::Result<Answer, CallError> {
    let mut body = json!({
        "model": b.model,
        "messages": [
            {"role": "system", "content": req.system},
            {"role": "user", "content": req.user},
        ],
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "observations", "strict": true,
                            "schema": strict_schema(req.schema)},
        },
    });
    let cap = if is_reasoning_model(&b.model) {
        // Reasoning tokens count toward this cap (billed as used, not as capped): room for
        // them, or the answer is cut before it starts.
        let cap = req.max_tokens.saturating_mul(4);
        body["max_completion_tokens"] = json!(cap);
        cap
    } else {
        body["max_tokens"] = json!(req.max_tokens);
        body["temperature"] = json!(0);
        req.max_tokens
    };
    let mut headers = Vec::new();
    if let Some(k) = &b.api_key {
        headers.push(("authorization", format!("Bearer {k}")));
    }
    let url = endpoint(&b.url, "/v1", "/chat/completions", true);
    let v = post(b, &url, &headers, &body)?;
    let (tin, tout) = (
        v["usage"]["prompt_tokens"].as_u64().unwrap_or(0),
        v["usage"]["completion_tokens"].as_u64().unwrap_or(0),
    );
    let choice = &v["choices"][0];
    let fail = |class, what: String| Err(CallError::new(class, what).billed(tin, tout));
    if let Some(r) = choice["message"]["refusal"]
        .as_str()
        .filter(|r| !r.is_empty())
    {
        return fail(Class::Fatal, format!("the model refused: {}", short(r)));
    }
    match choice["finish_reason"].as_str().unwrap_or("") {
        "length" => fail(
            Class::Truncated,
            format!("answer cut at {cap} tokens (finish_reason length)"),
        ),
        "content_filter" => fail(
            Class::Fatal,
            "answer withheld by the content filter (finish_reason content_filter)".into(),
        ),
        _ => Ok(Answer {
            text: choice["message"]["content"]
                .as_str()
                .unwrap_or("")
                .to_string(),
            tokens_in: tin,
            tokens_out: tout,
        }),
    }
}

/// What `claude -p` says when no call can work until a person acts: not logged in, a bad
/// key, a usage or spend limit.
const CLI_FATAL: &[&str] = &[
    "/login",
    "not logged in",
    "invalid api key",
    "authentication_error",
    "oauth token has expired",
    "usage limit",
    "hit your limit",
    "credit balance",
    "spend limit",
];

/// A scratch working directory for the child, removed when dropped.
struct Scratch(std::path::PathBuf);

impl Scratch {
    fn new() -> std::io::Result<Scratch> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        let p = std::env::temp_dir().join(format!("memkit-claude-{}-{nanos}", std::process::id()));
        std::fs::create_dir(&p)?;
        Ok(Scratch(p))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Reads a pipe to its end in a thread.
fn drain(mut r: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = r.read_to_end(&mut s);
        String::from_utf8_lossy(&s).into_owned()
    })
}

fn claude_cli(b: &Backend, req: &Request) -> std::result::Result<Answer, CallError> {
    // The schema goes in --json-schema (the CLI's StructuredOutput tool), not the prompt.
    let system = format!(
        "{}\n\nAnswer with one JSON object that follows the given JSON schema, and nothing else.",
        req.system
    );
    // Not the project: the child must read no CLAUDE.md or settings of it, and leave nothing.
    let scratch = Scratch::new()
        .map_err(|e| CallError::abort(format!("cannot make a scratch directory: {e}")))?;
    let mut child = Command::new(&b.claude_bin)
        .args(["-p", "--output-format", "json", "--model", &b.model])
        .args(["--tools", ""])
        .args(["--no-session-persistence", "--strict-mcp-config"])
        .args(["--system-prompt", &system])
        .args(["--json-schema", &req.schema.to_string()])
        .args(["--settings", r#"{"disableAllHooks":true}"#])
        .env("MEM_DISABLE", "1")
        // The retries are ours (backoff, attempts, the daily cap): the CLI would otherwise
        // retry even a 401 for minutes, and report nothing until it gives up.
        .env("CLAUDE_CODE_MAX_RETRIES", "0")
        // Set inside a Claude Code session: the child must not take itself for a nested one.
        .env_remove("CLAUDECODE")
        .env_remove("CLAUDE_CODE_ENTRYPOINT")
        .current_dir(&scratch.0)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| CallError::abort(format!("cannot run {}: {e}", b.claude_bin)))?;
    let mut stdin = child.stdin.take().expect("piped");
    let prompt = req.user.to_string();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(prompt.as_bytes());
    });
    // Both pipes are read while the child runs: a chatty child must not block on a full pipe.
    let reader = drain(child.stdout.take().expect("piped"));
    let errs = drain(child.stderr.take().expect("piped"));
    let deadline = Instant::now() + b.timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(CallError::retry(format!("{} timed out", b.claude_bin)));
            }
        }
    };
    let _ = writer.join();
    let out = reader.join().unwrap_or_default();
    let err = errs.join().unwrap_or_default();
    let v: Option<Value> = serde_json::from_str(out.trim()).ok();
    let (tin, tout) = v.as_ref().map_or((0, 0), |v| {
        (
            input_tokens(&v["usage"]),
            v["usage"]["output_tokens"].as_u64().unwrap_or(0),
        )
    });
    let is_error = v
        .as_ref()
        .is_some_and(|v| v.get("is_error").and_then(Value::as_bool) == Some(true));
    let Some(v) = v.filter(|_| status.success() && !is_error) else {
        let said = serde_json::from_str::<Value>(out.trim())
            .ok()
            .and_then(|v| v["result"].as_str().map(str::to_string))
            .unwrap_or_else(|| out.clone());
        let hay = format!("{said}\n{err}").to_ascii_lowercase();
        // The API's own status and error type, when the CLI passes them on, are classified as
        // the HTTP backends classify them.
        let api = serde_json::from_str::<Value>(out.trim())
            .ok()
            .and_then(|v| {
                let status = u16::try_from(v["api_error_status"].as_u64()?).ok()?;
                let body = json!({"error": {"type": v["api_error_type"], "message": said}});
                Some(http_error(status, &body.to_string()).class)
            });
        let class = if CLI_FATAL.iter().any(|k| hay.contains(k)) {
            Class::Abort
        } else {
            api.unwrap_or(Class::Retry)
        };
        let what = if !status.success() {
            format!("exited with {status}")
        } else if is_error {
            "reported an error".into()
        } else {
            "wrote no JSON".into()
        };
        let msg = format!(
            "{} {what}: {}; stderr: {}",
            b.claude_bin,
            short(&said),
            tail(&err)
        );
        return Err(CallError::new(class, msg).billed(tin, tout));
    };
    let text = match v.get("structured_output") {
        Some(s) if s.is_object() => s.to_string(),
        _ => v["result"].as_str().unwrap_or("").to_string(),
    };
    Ok(Answer {
        text,
        tokens_in: tin,
        tokens_out: tout,
    })
}

/// Parses a model's answer as a JSON object: as is, else without Markdown code fences, else
/// the outermost `{…}` in the text.
pub fn parse_json_tolerant(text: &str) -> Option<Value> {
    let t = text.trim();
    if let Ok(v @ Value::Object(_)) = serde_json::from_str::<Value>(t) {
        return Some(v);
    }
    let unfenced = t
        .trim_start_matches("```json")
        .trim_start_matches("```JSON")
        .trim_start_matches("```")
        .trim_end_matches("```")
        .trim();
    if let Ok(v @ Value::Object(_)) = serde_json::from_str::<Value>(unfenced) {
        return Some(v);
    }
    let start = t.find('{')?;
    let end = t.rfind('}')?;
    if end <= start {
        return None;
    }
    match serde_json::from_str::<Value>(&t[start..=end]) {
        Ok(v @ Value::Object(_)) => Some(v),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tolerant_parser() {
        assert_eq!(parse_json_tolerant(r#"{"a":1}"#).unwrap()["a"], 1);
        assert_eq!(
            parse_json_tolerant("```json\n{\"a\":2}\n```").unwrap()["a"],
            2
        );
        assert_eq!(
            parse_json_tolerant("Here you go:\n{\"a\":{\"b\":3}} hope it helps").unwrap()["a"]["b"],
            3
        );
        assert!(parse_json_tolerant("no json here").is_none());
        assert!(parse_json_tolerant("[1,2]").is_none());
    }
    #[test]
    fn endpoints_never_double_the_version() {
        let a = |u| endpoint(u, "/v1", "/messages", false);
        assert_eq!(
            a("https://api.anthropic.com"),
            "https://api.anthropic.com/v1/messages"
        );
        assert_eq!(a("http://h:1/v1"), "http://h:1/v1/messages");
        assert_eq!(a("http://h:1/v1/"), "http://h:1/v1/messages");
        assert_eq!(a("http://h:1/v1/messages"), "http://h:1/v1/messages");
        assert_eq!(a("http://h:1/proxy"), "http://h:1/proxy/v1/messages");
        let o = |u| endpoint(u, "/v1", "/chat/completions", true);
        assert_eq!(o("http://h:1"), "http://h:1/v1/chat/completions");
        assert_eq!(o("http://h:1/v1"), "http://h:1/v1/chat/completions");
        assert_eq!(
            o("https://h/api/openai/"),
            "https://h/api/openai/chat/completions"
        );
        assert_eq!(
            o("http://h:1/v1/chat/completions"),
            "http://h:1/v1/chat/completions"
        );
    }

    #[test]
    fn strict_schema_requires_everything_and_nulls_the_optional() {
        let s = strict_schema(&crate::prompt::schema());
        let item = &s["properties"]["observations"]["items"];
        let props = item["properties"].as_object().unwrap();
        let required: Vec<&str> = item["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(required.len(), props.len());
        assert!(props.keys().all(|k| required.contains(&k.as_str())));
        assert_eq!(
            item["properties"]["detail"]["type"],
            json!(["string", "null"])
        );
        assert_eq!(item["properties"]["title"]["type"], "string");
        assert_eq!(item["additionalProperties"], false);
        assert_eq!(s["required"], json!(["observations"]));
    }

    #[test]
    fn reasoning_models() {
        for m in [
            "gpt-5",
            "gpt-5-mini",
            "o1-preview",
            "o3",
            "o4-mini",
            "openai/gpt-5",
        ] {
            assert!(is_reasoning_model(m), "{m}");
        }
        for m in ["gpt-4o", "gpt-4.1-mini", "qwen2.5:3b", "llama3", "omni"] {
            assert!(!is_reasoning_model(m), "{m}");
        }
    }

    #[test]
    fn retry_after_is_read_and_capped() {
        assert_eq!(retry_after(None, Some("2")), Some(Duration::from_secs(2)));
        assert_eq!(
            retry_after(Some("1500"), Some("9")),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(retry_after(None, Some("3600")), Some(MAX_RETRY_AFTER));
        assert_eq!(
            retry_after(None, Some("Wed, 21 Oct 2015 07:28:00 GMT")),
            None
        );
        assert_eq!(retry_after(None, Some("-1")), None);
        assert_eq!(retry_after(None, None), None);
    }

    #[test]
    fn http_errors_are_classified() {
        let class = |status, body: &str| http_error(status, body).class;
        assert_eq!(
            class(429, r#"{"error":{"type":"rate_limit_error"}}"#),
            Class::Retry
        );
        assert_eq!(
            class(529, r#"{"error":{"type":"overloaded_error"}}"#),
            Class::Retry
        );
        assert_eq!(class(500, "oops"), Class::Retry);
        assert_eq!(
            class(400, r#"{"error":{"type":"invalid_request_error"}}"#),
            Class::Fatal
        );
        assert_eq!(class(413, ""), Class::Fatal);
        for s in [401, 402, 403, 404] {
            assert_eq!(class(s, "{}"), Class::Abort, "{s}");
        }
        assert_eq!(
            class(429, r#"{"error":{"type":"enforced_spend_limit_error"}}"#),
            Class::Abort
        );
        assert_eq!(
            class(
                429,
                r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}"#
            ),
            Class::Abort
        );
        assert_eq!(
            class(
                400,
                r#"{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API."}}"#
            ),
            Class::Abort
        );
        assert!(http_error(401, "{}").message.starts_with("HTTP 401"));
    }

    #[test]
    fn cache_tokens_are_input_tokens() {
        let u = json!({"input_tokens": 10, "cache_read_input_tokens": 200,
                       "cache_creation_input_tokens": 30, "output_tokens": 5});
        assert_eq!(input_tokens(&u), 240);
        assert_eq!(input_tokens(&json!({"input_tokens": 7})), 7);
    }
}
