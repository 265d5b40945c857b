//! LLM backends (ARCHITECTURE.md §8): one attempt of one call, classified so the caller can
//! decide to retry. Retries, budgets and accounting live with the caller (`compress`).
//!
//! `MEM_LLM` picks the backend: `anthropic` (Messages API, `ANTHROPIC_API_KEY`, default model
//! claude-haiku-4-5, JSON-schema structured output), `openai` (OpenAI-compatible chat
//! completions at `MEM_LLM_URL`, e.g. a local Ollama), `claude-cli` (`claude -p` with JSON
//! output, run with MEM_DISABLE=1 and hooks disabled so it never records itself) or `heuristic`
//! (offline; the default when `MEM_LLM` is unset).

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use memkit_core::config::{self, Config};
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
    ) -> Result<(Backend, Option<String>)> {
        let name = override_kind.map(str::to_string).or_else(|| cfg.get("llm"));
        let kind = match name {
            None => Kind::Heuristic,
            Some(n) => Kind::parse(&n).ok_or_else(|| {
                Error::Usage(format!(
                    "MEM_LLM: unknown backend {n:?} (anthropic, openai, claude-cli, heuristic)"
                ))
            })?,
        };
        let timeout = Duration::from_secs_f64(cfg.get_num("llm_timeout_secs")?.unwrap_or(60.0));
        let mut b = Backend {
            kind,
            timeout,
            claude_bin: cfg.get("claude_bin").unwrap_or_else(|| "claude".into()),
            ..Backend::heuristic()
        };
        let url = cfg.get("llm_url");
        let model = cfg.get("llm_model");
        match kind {
            Kind::Anthropic => {
                b.url = url.unwrap_or_else(|| DEFAULT_ANTHROPIC_URL.into());
                b.model = model.unwrap_or_else(|| DEFAULT_ANTHROPIC_MODEL.into());
                b.api_key = config::api_key("ANTHROPIC_API_KEY");
                if b.api_key.is_none() {
                    return Ok((
                        Backend::heuristic(),
                        Some("MEM_LLM=anthropic but ANTHROPIC_API_KEY is not set: using the heuristic backend".into()),
                    ));
                }
            }
            Kind::OpenAi => {
                b.url = url.unwrap_or_else(|| DEFAULT_OPENAI_URL.into());
                b.model = model.unwrap_or_else(|| DEFAULT_OPENAI_MODEL.into());
                b.api_key = config::api_key("MEM_LLM_API_KEY")
                    .or_else(|| config::api_key("OPENAI_API_KEY"));
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
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub latency_ms: u64,
}

/// Why a call failed, and whether trying again may help.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// Connection errors, timeouts, 429, 5xx, an answer that is not the JSON asked for.
    Retry(String),
    /// Other 4xx, a missing program: trying again cannot help.
    Fatal(String),
}

impl CallError {
    pub fn message(&self) -> &str {
        match self {
            CallError::Retry(m) | CallError::Fatal(m) => m,
        }
    }
}

/// Makes one attempt of `req` on `b`. The heuristic backend is not an LLM: calling it is a
/// fatal error.
pub fn call(b: &Backend, req: &Request) -> std::result::Result<Reply, CallError> {
    let start = Instant::now();
    let (text, tin, tout) = match b.kind {
        Kind::Anthropic => anthropic(b, req)?,
        Kind::OpenAi => openai(b, req)?,
        Kind::ClaudeCli => claude_cli(b, req)?,
        Kind::Heuristic => {
            return Err(CallError::Fatal(
                "the heuristic backend makes no calls".into(),
            ));
        }
    };
    let value = parse_json_tolerant(&text).ok_or_else(|| {
        CallError::Retry(format!(
            "answer is not a JSON object: {:?}",
            text.chars().take(120).collect::<String>()
        ))
    })?;
    Ok(Reply {
        value,
        tokens_in: tin,
        tokens_out: tout,
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
        .map_err(|e| CallError::Retry(format!("connection: {e}")))?;
    let status = resp.status().as_u16();
    let text = resp
        .body_mut()
        .with_config()
        .limit(16 * 1024 * 1024)
        .read_to_string()
        .map_err(|e| CallError::Retry(format!("reading the answer: {e}")))?;
    if status == 429 || status >= 500 {
        return Err(CallError::Retry(format!("HTTP {status}: {}", short(&text))));
    }
    if !(200..300).contains(&status) {
        return Err(CallError::Fatal(format!("HTTP {status}: {}", short(&text))));
    }
    serde_json::from_str(&text)
        .map_err(|e| CallError::Retry(format!("answer is not JSON ({e}): {}", short(&text))))
}

/// An answer's start for an error message (kept in the queue and the event log): redacted
/// first, in case a server echoes a key or the prompt.
fn short(s: &str) -> String {
    memkit_capture::redact::redact_str(s)
        .chars()
        .take(200)
        .collect()
}

fn endpoint(base: &str, path: &str) -> String {
    let base = base.trim_end_matches('/');
    if base.ends_with(path) {
        base.to_string()
    } else {
        format!("{base}{path}")
    }
}

fn anthropic(b: &Backend, req: &Request) -> std::result::Result<(String, u64, u64), CallError> {
    let body = json!({
        "model": b.model,
        "max_tokens": req.max_tokens,
        "system": req.system,
        "messages": [{"role": "user", "content": req.user}],
        "output_config": {"format": {"type": "json_schema", "schema": req.schema}},
    });
    let headers = [
        ("x-api-key", b.api_key.clone().unwrap_or_default()),
        ("anthropic-version", "2023-06-01".to_string()),
    ];
    let v = post(b, &endpoint(&b.url, "/v1/messages"), &headers, &body)?;
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
    let u = |k: &str| v["usage"][k].as_u64().unwrap_or(0);
    Ok((text, u("input_tokens"), u("output_tokens")))
}

fn openai(b: &Backend, req: &Request) -> std::result::Result<(String, u64, u64), CallError> {
    let body = json!({
        "model": b.model,
        "max_tokens": req.max_tokens,
        "temperature": 0,
        "messages": [
            {"role": "system", "content": req.system},
            {"role": "user", "content": req.user},
        ],
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "observations", "schema": req.schema},
        },
    });
    let mut headers = Vec::new();
    if let Some(k) = &b.api_key {
        headers.push(("authorization", format!("Bearer {k}")));
    }
    let v = post(b, &endpoint(&b.url, "/chat/completions"), &headers, &body)?;
    let text = v["choices"][0]["message"]["content"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let u = |k: &str| v["usage"][k].as_u64().unwrap_or(0);
    Ok((text, u("prompt_tokens"), u("completion_tokens")))
}

fn claude_cli(b: &Backend, req: &Request) -> std::result::Result<(String, u64, u64), CallError> {
    let prompt = format!(
        "{}\n\nAnswer with one JSON object that follows this JSON schema, and nothing else:\n{}\n\n{}",
        req.system, req.schema, req.user
    );
    let mut child = Command::new(&b.claude_bin)
        .args(["-p", "--output-format", "json", "--model", &b.model])
        .args(["--settings", r#"{"disableAllHooks":true}"#])
        .env("MEM_DISABLE", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| CallError::Fatal(format!("cannot run {}: {e}", b.claude_bin)))?;
    let mut stdin = child.stdin.take().expect("piped");
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(prompt.as_bytes());
    });
    let mut stdout = child.stdout.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + b.timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(CallError::Retry(format!("{} timed out", b.claude_bin)));
            }
        }
    };
    let _ = writer.join();
    let out = reader.join().unwrap_or_default();
    if !status.success() {
        return Err(CallError::Retry(format!(
            "{} exited with {status}: {}",
            b.claude_bin,
            short(&out)
        )));
    }
    let v: Value = serde_json::from_str(out.trim())
        .map_err(|e| CallError::Retry(format!("claude output is not JSON ({e})")))?;
    if v.get("is_error").and_then(Value::as_bool) == Some(true) {
        return Err(CallError::Retry(format!(
            "claude: {}",
            short(&v["result"].to_string())
        )));
    }
    let text = match v.get("structured_output") {
        Some(s) if s.is_object() => s.to_string(),
        _ => v["result"].as_str().unwrap_or("").to_string(),
    };
    let u = |k: &str| v["usage"][k].as_u64().unwrap_or(0);
    Ok((text, u("input_tokens"), u("output_tokens")))
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
}
