//! mem-compress and mem-pipeline: the fixtures through the heuristic, the HTTP backends against a
//! mock server on 127.0.0.1, crash recovery, concurrent pipelines, filter mode.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::{Env, bin, jsonl, show, wait_for};

/// A request the mock server received.
#[derive(Debug, Clone)]
pub struct Seen {
    pub path: String,
    pub headers: String,
    pub body: Value,
}

/// An HTTP server on 127.0.0.1 answering each request with `respond(n, body)` (n from 0).
pub struct Mock {
    pub url: String,
    pub seen: Arc<Mutex<Vec<Seen>>>,
}

/// A raw answer of the mock server: status, extra headers, body, and optionally a cut (the
/// connection closes after that many body bytes, Content-Length still announcing them all).
pub struct Reply {
    pub code: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub cut_after: Option<usize>,
}

impl Mock {
    pub fn start<F>(delay: Duration, respond: F) -> Mock
    where
        F: Fn(usize, &Value) -> (u16, String) + Send + 'static,
    {
        Mock::start_raw(move |n, seen| {
            std::thread::sleep(delay);
            let (code, text) = respond(n, &seen.body);
            Reply {
                code,
                headers: vec![("Content-Type".into(), "application/json".into())],
                body: text.into_bytes(),
                cut_after: None,
            }
        })
    }

    /// A server answering each request with `respond(n, request)`.
    pub fn start_raw<F>(respond: F) -> Mock
    where
        F: Fn(usize, &Seen) -> Reply + Send + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let log = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut head = String::new();
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    head.push_str(&line);
                }
                let len = head
                    .lines()
                    .find_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        k.eq_ignore_ascii_case("content-length")
                            .then(|| v.trim().parse::<usize>().ok())?
                    })
                    .unwrap_or(0);
                let mut body = vec![0; len];
                let _ = reader.read_exact(&mut body);
                let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                let path = head.split_whitespace().nth(1).unwrap_or("").to_string();
                let req = Seen {
                    path,
                    headers: head.to_ascii_lowercase(),
                    body,
                };
                let n = {
                    let mut s = log.lock().unwrap();
                    s.push(req.clone());
                    s.len() - 1
                };
                let reply = respond(n, &req);
                let mut out = format!("HTTP/1.1 {} X\r\n", reply.code);
                for (k, v) in &reply.headers {
                    out.push_str(&format!("{k}: {v}\r\n"));
                }
                out.push_str(&format!(
                    "Content-Length: {}\r\nConnection: close\r\n\r\n",
                    reply.body.len()
                ));
                let upto = reply.cut_after.unwrap_or(reply.body.len());
                let _ = stream.write_all(out.as_bytes());
                let _ = stream.write_all(&reply.body[..upto]);
                let _ = stream.flush();
            }
        });
        Mock { url, seen }
    }

    pub fn calls(&self) -> usize {
        self.seen.lock().unwrap().len()
    }
}

/// An Anthropic Messages answer whose text is `text`.
pub fn anthropic_reply(text: &str, tin: u64, tout: u64) -> String {
    json!({"id": "msg_1", "type": "message", "role": "assistant",
           "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
           "usage": {"input_tokens": tin, "output_tokens": tout}})
    .to_string()
}

pub fn openai_reply(text: &str, tin: u64, tout: u64) -> String {
    json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
           "usage": {"prompt_tokens": tin, "completion_tokens": tout}})
    .to_string()
}

/// One observation as a model would answer, its title numbered so titles never merge.
pub fn obs_json(n: usize, files_modified: &[&str]) -> String {
    json!({"observations": [{
        "type": "bugfix", "title": format!("Mock observation number {n} for testing"),
        "summary": "What and why.", "facts": ["a fact"], "concepts": ["mock"],
        "files_read": [], "files_modified": files_modified, "functions_changed": ["refresh"]
    }]})
    .to_string()
}

fn payload(v: Value) -> Vec<u8> {
    v.to_string().into_bytes()
}

/// A small session through the hooks: a prompt, an edit of /tmp/proj/src/auth.rs, a failed
/// command, a read, a Stop. Returns the number of tool calls queued.
pub fn small_session(env: &Env, session: &str, turns: usize) -> usize {
    let mut calls = 0;
    for t in 0..turns {
        let base = json!({"session_id": session, "cwd": "/tmp/proj", "transcript_path": "/nonexistent.jsonl"});
        let with = |extra: Value| crate::event(&base, extra);
        env.ok(
            "mem-capture",
            &["--hook"],
            &with(json!({"hook_event_name": "UserPromptSubmit",
            "prompt": format!("Fix the token refresh race in the auth middleware, part {t}")})),
        );
        env.ok("mem-capture", &["--hook"], &with(json!({"hook_event_name": "PostToolUse", "tool_name": "Edit",
            "tool_use_id": format!("e{session}{t}"),
            "tool_input": {"file_path": "src/auth.rs", "old_string": "let t = token;", "new_string": "fn refresh(lock: &Mutex<Token>) {\n    let t = lock.lock();\n}"},
            "tool_response": {"filePath": "/tmp/proj/src/auth.rs", "structuredPatch": []}})));
        env.ok(
            "mem-capture",
            &["--hook"],
            &with(
                json!({"hook_event_name": "PostToolUseFailure", "tool_name": "Bash",
            "tool_use_id": format!("b{session}{t}"),
            "tool_input": {"command": "cargo test auth", "description": "Run the auth tests"},
            "error": "test auth::refresh ... FAILED\nerror: test failed, to rerun pass `--lib`"}),
            ),
        );
        env.ok("mem-capture", &["--hook"], &with(json!({"hook_event_name": "PostToolUse", "tool_name": "Read",
            "tool_use_id": format!("r{session}{t}"),
            "tool_input": {"file_path": "/tmp/proj/src/lib.rs"},
            "tool_response": {"type": "text", "file": {"filePath": "/tmp/proj/src/lib.rs", "content": "pub mod auth;\npub mod token;\n"}}})));
        env.ok("mem-capture", &["--hook"], &with(json!({"hook_event_name": "Stop",
            "last_assistant_message": "Fixed the race: refresh now holds the lock while it swaps the token."})));
        calls += 3;
    }
    calls
}

fn count(env: &Env, sql: &str) -> i64 {
    env.count(sql)
}

/// Checks the invariants every run must leave: nothing raw or processing, every tool call
/// part of exactly `links` observations (or any positive number when None), every other row
/// a documented skip.
pub fn assert_all_accounted(env: &Env) {
    assert_eq!(
        count(
            env,
            "SELECT count(*) FROM pending_queue WHERE status IN ('raw','processing')"
        ),
        0,
        "nothing left raw or processing"
    );
    let unlinked = count(
        env,
        "SELECT count(*) FROM pending_queue q WHERE q.event IN ('PostToolUse','PostToolUseFailure','Note')
           AND NOT EXISTS (SELECT 1 FROM observation_sources s WHERE s.queue_id = q.id)",
    );
    assert_eq!(
        unlinked, 0,
        "every tool call and note is part of an observation"
    );
    let undocumented = count(
        env,
        "SELECT count(*) FROM pending_queue q WHERE q.event NOT IN ('PostToolUse','PostToolUseFailure','Note')
           AND (q.skip_reason IS NULL OR q.skip_reason NOT IN ('prompt','turn-end','marker'))",
    );
    assert_eq!(
        undocumented, 0,
        "every other row has a documented skip reason"
    );
    let dangling = count(
        env,
        "SELECT count(*) FROM observation_sources s WHERE NOT EXISTS (SELECT 1 FROM observations o WHERE o.id = s.observation_id)",
    );
    assert_eq!(dangling, 0);
}

/// A private bin dir holding this build's tools and the pipeline script (the shared target
/// dir may hold other tools' binaries): `mem pipeline` looks for its stages where `mem` was run
/// from.
pub fn bin_dir(env: &Env) -> PathBuf {
    let d = env.dir.path().join("bin");
    if !d.exists() {
        std::fs::create_dir_all(&d).unwrap();
        for t in ["mem", "mem-compress", "mem-capture"] {
            std::os::unix::fs::symlink(bin(t), d.join(t)).unwrap();
        }
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/mem-pipeline");
        std::fs::copy(&script, d.join("mem-pipeline")).unwrap();
    }
    d
}

/// scripts/mem-pipeline (which runs `mem pipeline`) from the private bin dir, with a PATH that
/// holds no memkit tool.
pub fn pipeline(env: &Env, args: &[&str]) -> Command {
    let mut c = Command::new(bin_dir(env).join("mem-pipeline"));
    c.env_clear();
    for (k, v) in &env.vars {
        c.env(k, v);
    }
    c.env("PATH", "/usr/bin:/bin");
    c.args(args).current_dir(env.dir.path());
    c
}

#[test]
fn fixtures_through_the_heuristic_pipeline() {
    let env = Env::new();
    env.import_fixtures();
    let out = pipeline(&env, &[]).output().unwrap();
    assert!(out.status.success(), "{}", show(&out));
    assert_all_accounted(&env);
    // files_modified: only files the session wrote or edited successfully.
    let db = env.db();
    let mut stmt = db
        .prepare("SELECT id, session_id, files_modified FROM observations")
        .unwrap();
    let rows: Vec<(i64, String, String)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(rows.len() > 20, "observations: {}", rows.len());
    let mut checked = 0;
    for (id, session, files) in rows {
        let files: Vec<String> = serde_json::from_str(&files).unwrap();
        for f in files {
            let written = db
                .query_row(
                    "SELECT count(*) FROM pending_queue, json_each(pending_queue.files) j
                     WHERE session_id = ?1 AND event = 'PostToolUse'
                       AND tool_name IN ('Write','Edit','MultiEdit','NotebookEdit') AND j.value = ?2",
                    rusqlite::params![session, f],
                    |r| r.get::<_, i64>(0),
                )
                .unwrap();
            assert!(
                written > 0,
                "observation #{id}: {f} was not written in {session}"
            );
            checked += 1;
        }
    }
    assert!(checked > 10, "files checked: {checked}");
    // Every session with a Stop or SessionEnd has a summary.
    let missing = count(
        &env,
        "SELECT count(*) FROM sessions s WHERE (s.status = 'ended' OR EXISTS (SELECT 1 FROM pending_queue q
           WHERE q.session_id = s.session_id AND q.event = 'Stop')) AND (s.summary IS NULL OR s.summary = '')",
    );
    assert_eq!(missing, 0, "sessions with a Stop and no summary");
    let with_files = count(
        &env,
        "SELECT count(*) FROM sessions WHERE key_files <> '[]'",
    );
    assert!(with_files > 5);
    // Observations are typed and titled.
    let bad = count(
        &env,
        "SELECT count(*) FROM observations WHERE title = '' OR summary = '' OR tokens_raw = 0",
    );
    assert_eq!(bad, 0);
    // A title is the request itself when the prompt makes one, openers and politeness dropped,
    // with the main file; else what the calls did to what (the remark goes in the summary).
    let titles: Vec<String> = {
        let db = env.db();
        let mut st = db.prepare("SELECT title FROM observations").unwrap();
        st.query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    for want in [
        // "Hey Claude, can you please add a Github Action to run tests and linting? …"
        "Add a Github Action to run tests and linting (ci.yml)",
        // "Let's also Migrate to AudioWorklet"
        "Migrate to AudioWorklet",
        // "Wait, does it only run on main?": CI fixed by editing both files.
        "Fix ci.yml and converter.py",
    ] {
        assert!(
            titles.iter().any(|t| t.starts_with(want)),
            "no title {want:?} in {titles:#?}"
        );
    }
    // A long turn is cut into pieces of work: "Work on bead spotter-fum" (196 calls, 11 files
    // edited) is several observations, each about its own files.
    let pieces: Vec<(String, String)> = env.pairs(
        "SELECT title, files_modified FROM observations
         WHERE session_id = '8463c716-a2ea-4c14-9efa-87158ebd9f20' ORDER BY id",
    );
    assert!(pieces.len() >= 3, "{pieces:#?}");
    let distinct: std::collections::HashSet<&String> = pieces.iter().map(|p| &p.1).collect();
    assert_eq!(distinct.len(), pieces.len(), "{pieces:#?}");
    // The prompt's intent decides the type: a failing command on the way does not make adding
    // a CI workflow a bugfix.
    assert_eq!(
        count(
            &env,
            "SELECT count(*) FROM observations WHERE title LIKE 'Add a Github Action%' AND type = 'feature'"
        ),
        1
    );
    // A slash command is what was typed, not Claude Code's expansion of it ("init is analyzing
    // your codebase…"), and a bare one is no session's goal.
    assert_eq!(
        count(
            &env,
            "SELECT count(*) FROM sessions WHERE summary LIKE '%is analyzing your codebase%' OR summary LIKE 'Goal: /init%'"
        ),
        0
    );
    assert_eq!(
        count(
            &env,
            "SELECT count(*) FROM observations WHERE summary LIKE 'Asked: /handgemacht:create-beads websearch to learn%'"
        ),
        1
    );
    // A second run has nothing to do.
    let again = env.ok("mem-compress", &[], b"");
    let recs = jsonl(&again);
    assert_eq!(recs.last().unwrap()["counts"]["captures"], 0);
}

fn llm_env(kind: &str, mock: &Mock) -> Env {
    Env::new()
        .set("MEM_LLM", kind)
        .set("MEM_LLM_URL", &mock.url)
        .set("ANTHROPIC_API_KEY", "test-key")
        .set("MEM_LLM_BACKOFF_MS", "10")
}

fn summary_of(out: &std::process::Output) -> Value {
    jsonl(out).into_iter().last().unwrap()
}

#[test]
fn anthropic_success_logs_tokens_and_keeps_only_real_files() {
    let mock = Mock::start(Duration::ZERO, |n, _| {
        (
            200,
            anthropic_reply(&obs_json(n, &["src/auth.rs", "/etc/passwd"]), 1200, 80),
        )
    });
    let env = llm_env("anthropic", &mock);
    small_session(&env, "s1", 2);
    let out = env.ok("mem-compress", &[], b"");
    let s = summary_of(&out);
    assert_eq!(s["counts"]["llm_calls"], 2, "one call per turn: {s}");
    assert_eq!(s["counts"]["tokens_in"], 2400);
    assert_eq!(mock.calls(), 2);
    let seen = mock.seen.lock().unwrap().clone();
    assert_eq!(seen[0].path, "/v1/messages");
    assert!(seen[0].headers.contains("x-api-key: test-key"));
    assert_eq!(seen[0].body["model"], "claude-haiku-4-5");
    assert_eq!(
        seen[0].body["output_config"]["format"]["type"],
        "json_schema"
    );
    let user = seen[0].body["messages"][0]["content"].as_str().unwrap();
    assert!(user.contains("token refresh race"), "the prompt is the why");
    let obs: Vec<Value> = jsonl(&out)
        .into_iter()
        .filter(|r| r["type"] == "observation")
        .collect();
    assert_eq!(obs.len(), 2);
    assert_eq!(obs[0]["kind"], "bugfix");
    assert_eq!(
        obs[0]["files_modified"],
        json!(["/tmp/proj/src/auth.rs"]),
        "invented files dropped"
    );
    assert_eq!(
        count(
            &env,
            "SELECT count(*) FROM event_log WHERE event = 'llm_call' AND json_extract(detail, '$.tokens_out') = 80 AND json_extract(detail, '$.latency_ms') >= 0"
        ),
        2
    );
    assert_all_accounted(&env);
    assert_eq!(
        count(
            &env,
            "SELECT count(*) FROM pending_queue WHERE status = 'error'"
        ),
        0
    );
}

#[test]
fn rate_limit_is_retried_then_succeeds() {
    let mock = Mock::start(Duration::ZERO, |n, _| {
        if n == 0 {
            (
                429,
                r#"{"type":"error","error":{"type":"rate_limit_error"}}"#.into(),
            )
        } else {
            (200, anthropic_reply(&obs_json(n, &[]), 10, 5))
        }
    });
    let env = llm_env("anthropic", &mock);
    small_session(&env, "s1", 1);
    let out = env.ok("mem-compress", &[], b"");
    assert_eq!(mock.calls(), 2);
    assert_eq!(summary_of(&out)["counts"]["fallbacks"], 0);
    assert_eq!(
        count(
            &env,
            "SELECT count(*) FROM observations WHERE title LIKE 'Mock observation%'"
        ),
        1
    );
    assert_eq!(
        count(
            &env,
            "SELECT count(*) FROM pending_queue WHERE event LIKE 'PostToolUse%' AND attempts = 1 AND status = 'done' AND last_error LIKE 'HTTP 429%' AND next_attempt_at IS NOT NULL"
        ),
        3
    );
    assert_all_accounted(&env);
}

#[test]
fn server_errors_three_times_fall_back_to_the_heuristic() {
    let mock = Mock::start(Duration::ZERO, |_, _| (500, "oops".into()));
    let env = llm_env("anthropic", &mock);
    small_session(&env, "s1", 1);
    let out = env.ok("mem-compress", &[], b"");
    assert_eq!(mock.calls(), 3, "3 attempts");
    assert_eq!(summary_of(&out)["counts"]["fallbacks"], 1);
    assert_eq!(
        count(
            &env,
            "SELECT count(*) FROM pending_queue WHERE status = 'error' AND attempts = 3 AND last_error LIKE 'HTTP 500%'"
        ),
        3
    );
    let title: String = env
        .db()
        .query_row("SELECT title FROM observations", [], |r| r.get(0))
        .unwrap();
    assert!(title.starts_with("Fix "), "heuristic title: {title}");
    assert_all_accounted(&env);
}

#[test]
fn client_errors_are_not_retried() {
    let mock = Mock::start(Duration::ZERO, |_, _| {
        (400, r#"{"error":"bad request"}"#.into())
    });
    let env = llm_env("anthropic", &mock);
    small_session(&env, "s1", 1);
    env.ok("mem-compress", &[], b"");
    assert_eq!(mock.calls(), 1);
    assert_eq!(
        count(
            &env,
            "SELECT count(*) FROM pending_queue WHERE status = 'error' AND attempts = 1 AND last_error LIKE 'HTTP 400%'"
        ),
        3
    );
    assert_all_accounted(&env);
}

#[test]
fn malformed_answers_are_retried_and_fenced_json_is_read() {
    let mock = Mock::start(Duration::ZERO, |n, _| match n {
        0 => (200, anthropic_reply("I cannot produce JSON today", 10, 5)),
        1 => (200, "{not json".into()),
        _ => (
            200,
            anthropic_reply(&format!("```json\n{}\n```", obs_json(n, &[])), 10, 5),
        ),
    });
    let env = llm_env("anthropic", &mock);
    small_session(&env, "s1", 1);
    env.ok("mem-compress", &[], b"");
    assert_eq!(mock.calls(), 3);
    assert_eq!(
        count(
            &env,
            "SELECT count(*) FROM observations WHERE title = 'Mock observation number 2 for testing'"
        ),
        1
    );
    assert_eq!(
        count(
            &env,
            "SELECT count(*) FROM pending_queue WHERE status = 'error'"
        ),
        0
    );
    assert_all_accounted(&env);
}

#[test]
fn daily_token_cap_hands_over_to_the_heuristic() {
    let mock = Mock::start(Duration::ZERO, |n, _| {
        (200, anthropic_reply(&obs_json(n, &[]), 100, 50))
    });
    let env = llm_env("anthropic", &mock).set("MEM_LLM_DAILY_TOKENS", "250");
    small_session(&env, "s1", 4);
    let out = env.ok("mem-compress", &[], b"");
    let s = summary_of(&out);
    assert_eq!(
        mock.calls(),
        2,
        "150 spent after one call, 300 after two: {s}"
    );
    assert_eq!(s["counts"]["over_budget"], 2);
    assert_eq!(
        count(
            &env,
            "SELECT count(*) FROM event_log WHERE event = 'llm_budget_exhausted'"
        ),
        1
    );
    // The next run starts over budget: no call at all.
    small_session(&env, "s2", 1);
    env.ok("mem-compress", &[], b"");
    assert_eq!(mock.calls(), 2);
    assert_all_accounted(&env);
}

#[test]
fn openai_backend_and_calls_per_turn_group_on_the_fixtures() {
    let mock = Mock::start(Duration::ZERO, |n, _| {
        (200, openai_reply(&obs_json(n, &[]), 50, 20))
    });
    let env = Env::new()
        .set("MEM_LLM", "openai")
        .set("MEM_LLM_URL", &format!("{}/v1", mock.url))
        .set("MEM_LLM_MODEL", "qwen2.5:3b")
        .set("MEM_LLM_PROMPT_TOKENS", "10000000");
    env.import_fixtures();
    let tool_calls = count(
        &env,
        "SELECT count(*) FROM pending_queue WHERE event LIKE 'PostToolUse%'",
    );
    let out = env.ok("mem-compress", &[], b"");
    let s = summary_of(&out);
    let groups = s["counts"]["groups"].as_u64().unwrap();
    let seen = mock.seen.lock().unwrap().clone();
    assert_eq!(seen[0].path, "/v1/chat/completions");
    assert_eq!(seen[0].body["model"], "qwen2.5:3b");
    assert_eq!(seen[0].body["response_format"]["type"], "json_schema");
    // With a budget every group fits in, calls == turn groups, far fewer than tool calls.
    assert_eq!(mock.calls() as u64, groups, "{s}");
    assert!(
        (groups as i64) * 5 < tool_calls,
        "groups {groups}, tool calls {tool_calls}"
    );
    eprintln!(
        "fixtures: {tool_calls} tool calls, {groups} turn groups, {} LLM calls",
        mock.calls()
    );
    // Per session: logged calls == that session's groups.
    let per_session: Vec<(String, i64, i64)> = env
        .db()
        .prepare(
            "SELECT q.session_id, count(DISTINCT s.observation_id),
                    (SELECT count(*) FROM event_log e WHERE e.event = 'llm_call' AND e.session_id = q.session_id)
             FROM pending_queue q JOIN observation_sources s ON s.queue_id = q.id GROUP BY q.session_id",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    for (sid, observations, calls) in per_session {
        assert_eq!(
            observations, calls,
            "{sid}: one observation per call, one call per group"
        );
    }
    assert_all_accounted(&env);
}

#[test]
fn claude_cli_runs_without_hooks_and_with_memkit_disabled() {
    let env = Env::new();
    let fake = env.dir.path().join("claude");
    let seen = env.dir.path().join("claude-seen");
    let answer = json!({"type": "result", "is_error": false,
        "result": obs_json(0, &["/tmp/proj/src/auth.rs"]),
        "usage": {"input_tokens": 321, "output_tokens": 45}});
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\necho \"MEM_DISABLE=$MEM_DISABLE args=$*\" > {}\ncat > /dev/null\necho '{}'\n",
            seen.display(),
            answer.to_string().replace('\'', "'\\''")
        ),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let env = env
        .set("MEM_LLM", "claude-cli")
        .set("MEM_CLAUDE_BIN", fake.to_str().unwrap());
    small_session(&env, "s1", 1);
    let out = env.ok("mem-compress", &[], b"");
    assert_eq!(summary_of(&out)["counts"]["tokens_in"], 321);
    let args = std::fs::read_to_string(&seen).unwrap();
    assert!(args.starts_with("MEM_DISABLE=1 "), "{args}");
    assert!(
        args.contains("-p --output-format json") && args.contains("disableAllHooks"),
        "{args}"
    );
    assert_eq!(
        count(
            &env,
            "SELECT count(*) FROM observations WHERE files_modified = '[\"/tmp/proj/src/auth.rs\"]'"
        ),
        1
    );
}

#[test]
fn kill_9_mid_run_loses_and_duplicates_nothing() {
    let mock = Mock::start(Duration::from_millis(150), |n, _| {
        (200, anthropic_reply(&obs_json(n, &[]), 10, 5))
    });
    let env = llm_env("anthropic", &mock);
    small_session(&env, "s1", 6);
    small_session(&env, "s2", 6);
    let mut child = env
        .cmd("mem-compress")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the run has stored something, then kill it hard.
    for _ in 0..200 {
        if count(&env, "SELECT count(*) FROM observations") >= 2 {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let left = count(
        &env,
        "SELECT count(*) FROM pending_queue WHERE status = 'processing'",
    );
    assert!(left > 0, "the run was killed mid-way");
    let before = count(&env, "SELECT count(*) FROM observations");
    let out = env.ok("mem-compress", &[], b"");
    assert!(summary_of(&out)["counts"]["reclaimed"].as_u64().unwrap() > 0);
    assert_all_accounted(&env);
    // Each tool call is part of exactly one observation; 12 turns give 12 observations.
    assert_eq!(
        count(
            &env,
            "SELECT count(*) FROM (SELECT queue_id FROM observation_sources GROUP BY queue_id HAVING count(*) > 1)"
        ),
        0
    );
    assert_eq!(
        count(&env, "SELECT count(*) FROM observations"),
        12,
        "before kill: {before}"
    );
}

fn spawn_pipeline(env: &Env) -> Child {
    pipeline(env, &[])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn two_pipelines_at_once_one_works_the_other_leaves_and_late_captures_are_done() {
    let mock = Mock::start(Duration::from_millis(100), |n, _| {
        (200, anthropic_reply(&obs_json(n, &[]), 10, 5))
    });
    let env = llm_env("anthropic", &mock);
    small_session(&env, "s1", 5);
    let mut a = spawn_pipeline(&env);
    for _ in 0..200 {
        if mock.calls() > 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let b = pipeline(&env, &[]).output().unwrap();
    assert!(b.status.success(), "{}", show(&b));
    assert!(
        a.try_wait().unwrap().is_none(),
        "the second run left while the first worked"
    );
    // Captures arriving while the first run works (each followed by its own refused pipeline).
    small_session(&env, "s2", 2);
    let c = pipeline(&env, &[]).output().unwrap();
    assert!(c.status.success());
    let status = a.wait().unwrap();
    assert!(status.success());
    assert_all_accounted(&env);
    assert_eq!(count(&env, "SELECT count(*) FROM observations"), 7);
    assert_eq!(
        count(
            &env,
            "SELECT count(*) FROM sessions WHERE summary IS NOT NULL"
        ),
        2
    );
}

#[test]
fn detached_pipeline_returns_and_does_the_work() {
    let env = Env::new();
    small_session(&env, "s1", 2);
    let out = pipeline(&env, &["--detach"]).output().unwrap();
    assert!(out.status.success());
    assert!(out.stdout.is_empty());
    wait_for(&env, "the detached run summarised the session", |env| {
        count(
            env,
            "SELECT count(*) FROM sessions WHERE summary IS NOT NULL",
        ) == 1
    });
    crate::pipeline::wait_idle(&env);
    assert_all_accounted(&env);
    assert!(env.home().join("logs").is_dir());
}

#[test]
fn resumed_session_is_summarised_again_and_notes_become_manual_observations() {
    let env = Env::new();
    small_session(&env, "s1", 1);
    env.ok("mem-compress", &[], b"");
    let first: String = env
        .db()
        .query_row(
            "SELECT summary FROM sessions WHERE session_id = 's1'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(first.contains("Fix"), "{first}");
    let kf: String = env
        .db()
        .query_row(
            "SELECT key_files FROM sessions WHERE session_id = 's1'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(kf, r#"["/tmp/proj/src/auth.rs"]"#);
    env.ok(
        "mem-capture",
        &["--hook"],
        &payload(json!({"session_id": "s1", "hook_event_name": "SessionStart", "source": "resume", "cwd": "/tmp/proj"})),
    );
    env.ok(
        "mem-capture",
        &["--hook"],
        &payload(
            json!({"session_id": "s1", "hook_event_name": "UserPromptSubmit", "cwd": "/tmp/proj",
                         "prompt": "Now add a config option for the refresh interval"}),
        ),
    );
    env.ok(
        "mem-capture",
        &["--hook"],
        &payload(json!({"session_id": "s1", "hook_event_name": "PostToolUse", "cwd": "/tmp/proj", "tool_name": "Write",
            "tool_use_id": "w1", "tool_input": {"file_path": "/tmp/proj/src/config.rs", "content": "pub struct Config { pub refresh_secs: u64 }\n"},
            "tool_response": {"type": "create", "filePath": "/tmp/proj/src/config.rs"}})),
    );
    env.ok(
        "mem-capture",
        &["--hook"],
        &payload(json!({"session_id": "s1", "hook_event_name": "Stop", "cwd": "/tmp/proj", "last_assistant_message": "Added it."})),
    );
    env.ok(
        "mem-capture",
        &[
            "--note",
            "Deploys need the VPN; always use the staging bastion",
            "--tags",
            "ops",
            "--project",
            "/tmp/proj",
        ],
        b"",
    );
    let out = env.ok("mem-compress", &[], b"");
    assert_eq!(summary_of(&out)["counts"]["summaries"], 1);
    let (summary, kf): (String, String) = env
        .db()
        .query_row(
            "SELECT summary, key_files FROM sessions WHERE session_id = 's1'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_ne!(summary, first);
    assert!(kf.contains("config.rs"), "{kf}");
    let feature: String = env
        .db()
        .query_row(
            "SELECT type FROM observations WHERE files_modified LIKE '%config.rs%'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(feature, "feature");
    assert_eq!(
        count(
            &env,
            "SELECT count(*) FROM observations WHERE is_manual = 1 AND tags = '[\"ops\"]' AND type = 'decision'"
        ),
        1
    );
    assert_all_accounted(&env);
}

#[test]
fn near_duplicate_titles_are_merged() {
    let mock = Mock::start(Duration::ZERO, |_, _| {
        (200, anthropic_reply(&obs_json(7, &["src/auth.rs"]), 10, 5))
    });
    let env = llm_env("anthropic", &mock);
    small_session(&env, "s1", 3);
    let out = env.ok("mem-compress", &[], b"");
    let s = summary_of(&out);
    assert_eq!(s["counts"]["observations"], 1, "{s}");
    assert_eq!(s["counts"]["merged"], 2);
    assert_eq!(count(&env, "SELECT count(*) FROM observation_sources"), 9);
    assert_all_accounted(&env);
}

#[test]
fn filter_mode_reads_captures_and_writes_observations() {
    let env = Env::new();
    let caps = [
        json!({"type": "capture", "v": 1, "id": 1, "session_id": "f", "project": "/p", "event": "UserPromptSubmit",
               "priority": "high", "status": "raw", "payload": {"prompt": "Refactor the parser into smaller functions"}, "created_at": "2026-01-01T00:00:00.000Z"}),
        json!({"type": "capture", "v": 1, "id": 2, "session_id": "f", "project": "/p", "event": "PostToolUse", "tool_name": "Edit",
               "files": ["/p/parser.py"], "priority": "high", "status": "raw",
               "payload": {"tool_name": "Edit", "tool_input": {"file_path": "/p/parser.py", "old_string": "x", "new_string": "def parse_header(s):\n    return s\n"}, "tool_response": {}},
               "created_at": "2026-01-01T00:00:01.000Z"}),
        json!({"type": "note-from-the-future", "x": 1}),
        json!({"type": "capture", "v": 1, "id": 3, "session_id": "f", "event": "Stop", "priority": "normal", "status": "raw",
               "payload": {"last_assistant_message": "Split it."}, "created_at": "2026-01-01T00:00:02.000Z"}),
    ];
    let input: String = caps.iter().map(|c| c.to_string() + "\n").collect();
    let out = env.ok("mem-compress", &["-"], input.as_bytes());
    let recs = jsonl(&out);
    assert_eq!(recs[0]["type"], "note-from-the-future", "passed through");
    let obs: Vec<&Value> = recs.iter().filter(|r| r["type"] == "observation").collect();
    assert_eq!(obs.len(), 1);
    assert_eq!(obs[0]["kind"], "refactor");
    assert_eq!(obs[0]["files_modified"], json!(["/p/parser.py"]));
    assert_eq!(obs[0]["functions_changed"], json!(["parse_header"]));
    assert_eq!(obs[0]["sources"], json!([2]));
    assert!(
        !env.db_path().exists(),
        "the heuristic filter stores nothing"
    );
    let bad = env.run(
        "mem-compress",
        &["-"],
        b"{\"type\":\"capture\"}\nnot json\n",
    );
    assert_eq!(bad.status.code(), Some(3), "{}", show(&bad));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("<stdin>:1"));
}

#[test]
fn install_registers_the_pipeline_on_stop_and_session_end() {
    let env = Env::new();
    let bins = env.dir.path().join("installed");
    std::fs::create_dir_all(&bins).unwrap();
    for t in ["mem", "mem-compress", "mem-capture", "mem-install"] {
        std::os::unix::fs::symlink(bin(t), bins.join(t)).unwrap();
    }
    let settings = env.dir.path().join("settings.json");
    let out = env.run(
        bins.join("mem-install").to_str().unwrap(),
        &[
            "--settings",
            settings.to_str().unwrap(),
            "--bin-dir",
            bins.to_str().unwrap(),
        ],
        b"",
    );
    assert!(out.status.success(), "{}", show(&out));
    let v: Value = serde_json::from_slice(&std::fs::read(&settings).unwrap()).unwrap();
    let capture = bins.join("mem-capture").display().to_string();
    let mem = bins.join("mem").display().to_string();
    let mut stop_command = String::new();
    for ev in ["Stop", "SessionEnd"] {
        let cmds: Vec<String> = v["hooks"][ev][0]["hooks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["command"].as_str().unwrap().to_string())
            .collect();
        // One handler, capture first: the pipeline must find the event that ends the turn.
        assert_eq!(
            cmds,
            [format!("{capture} --hook; {mem} pipeline --detach")],
            "{ev}"
        );
        stop_command = cmds[0].clone();
    }
    assert!(
        !bins.join("mem-pipeline").exists(),
        "no script is written among the binaries"
    );
    // A turn whose Stop arrives through that handler, run as Claude Code runs it (sh -c, the
    // payload on stdin) with a PATH that holds none of the tools: the Stop is stored, then the
    // detached pipeline compresses the turn and summarises the session.
    let base =
        json!({"session_id": "s1", "cwd": "/tmp/proj", "transcript_path": "/nonexistent.jsonl"});
    let event = |extra: Value| crate::event(&base, extra);
    env.ok(
        "mem-capture",
        &["--hook"],
        &event(json!({"hook_event_name": "UserPromptSubmit",
        "prompt": "Fix the token refresh race in the auth middleware"})),
    );
    env.ok(
        "mem-capture",
        &["--hook"],
        &event(json!({"hook_event_name": "PostToolUse",
        "tool_name": "Edit", "tool_use_id": "e1",
        "tool_input": {"file_path": "/tmp/proj/src/auth.rs", "old_string": "a", "new_string": "b"},
        "tool_response": {"filePath": "/tmp/proj/src/auth.rs"}})),
    );
    let mut c = Command::new("/bin/sh");
    c.env_clear();
    for (k, v) in &env.vars {
        c.env(k, v);
    }
    c.env("PATH", "/usr/bin:/bin")
        .args(["-c", &stop_command])
        .stdin(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let stop =
        event(json!({"hook_event_name": "Stop", "last_assistant_message": "Fixed the race."}));
    child.stdin.take().unwrap().write_all(&stop).unwrap();
    assert!(child.wait().unwrap().success());
    wait_for(
        &env,
        "the detached pipeline summarised the session",
        |env| {
            count(
                env,
                "SELECT count(*) FROM sessions WHERE summary IS NOT NULL",
            ) == 1
        },
    );
    assert_all_accounted(&env);
    assert_eq!(count(&env, "SELECT count(*) FROM observations"), 1);
    crate::pipeline::wait_idle(&env);
}

#[test]
fn two_sessions_with_the_same_prompt_keep_their_own_observations_and_summaries() {
    let env = Env::new();
    for (session, command, error) in [
        (
            "py",
            "pytest tests/test_tokens.py",
            "FAILED tests/test_tokens.py::test_expiry - KeyError: 'expires_at'",
        ),
        (
            "rs",
            "cargo test -p billing",
            "test invoice::rounding ... FAILED: left 1.005 right 1.01",
        ),
    ] {
        let base = json!({"session_id": session, "cwd": "/tmp/proj", "transcript_path": "/nonexistent.jsonl"});
        let hook = |extra: Value| {
            env.ok("mem-capture", &["--hook"], &crate::event(&base, extra));
        };
        hook(json!({"hook_event_name": "UserPromptSubmit", "prompt": "run the tests"}));
        hook(
            json!({"hook_event_name": "PostToolUseFailure", "tool_name": "Bash",
            "tool_use_id": format!("b{session}"), "tool_input": {"command": command},
            "error": error}),
        );
        hook(
            json!({"hook_event_name": "Stop", "last_assistant_message": format!("One test fails: {error}")}),
        );
        hook(json!({"hook_event_name": "SessionEnd", "reason": "prompt_input_exit"}));
    }
    env.ok("mem-compress", &["-q"], b"");
    assert_all_accounted(&env);
    let obs: Vec<(String, String)> = env
        .pairs("SELECT session_id, facts || ' ' || summary FROM observations ORDER BY session_id");
    assert_eq!(obs.len(), 2, "{obs:?}");
    assert!(
        obs[0].0 == "py" && obs[0].1.contains("pytest") && !obs[0].1.contains("cargo"),
        "{obs:?}"
    );
    assert!(
        obs[1].0 == "rs" && obs[1].1.contains("cargo test") && !obs[1].1.contains("pytest"),
        "{obs:?}"
    );
    let summaries: Vec<(String, String)> =
        env.pairs("SELECT session_id, coalesce(summary, '') FROM sessions ORDER BY session_id");
    for (s, text) in &summaries {
        assert!(!text.contains("No tool activity"), "{s}: {text}");
    }
    assert!(
        summaries[0].1.contains("expires_at") && summaries[1].1.contains("rounding"),
        "{summaries:?}"
    );
}

#[test]
fn heuristic_titles_read_like_a_colleagues_note() {
    let env = Env::new();
    env.import_fixtures();
    env.ok("mem-compress", &["-q"], b"");
    let titles: Vec<(String, String)> =
        env.pairs("SELECT title, type FROM observations WHERE is_manual = 0 ORDER BY id");
    assert!(titles.len() >= 30, "{}", titles.len());
    let faults: Vec<(String, &str)> = titles
        .iter()
        .filter_map(|(t, _)| memkit_eval::title::fault(t).map(|f| (t.clone(), f)))
        .collect();
    let share = 1.0 - faults.len() as f64 / titles.len() as f64;
    eprintln!(
        "title rubric: {:.3} of {} heuristic titles pass; failing: {faults:#?}",
        share,
        titles.len()
    );
    assert!(share >= 0.9, "{share}");
}

/// An Anthropic Messages answer with a given stop_reason and usage (cache tokens included).
fn anthropic_stop(text: &str, stop: &str, usage: Value) -> String {
    json!({"id": "msg_1", "type": "message", "role": "assistant",
           "content": [{"type": "text", "text": text}], "stop_reason": stop, "usage": usage})
    .to_string()
}

/// The tokens (in + out) event_log holds for LLM calls: what the daily cap counts.
fn logged_tokens(env: &Env) -> i64 {
    count(
        env,
        "SELECT coalesce(sum(json_extract(detail, '$.tokens_in') + json_extract(detail, '$.tokens_out')), 0)
         FROM event_log WHERE event = 'llm_call'",
    )
}

#[test]
fn anthropic_refusal_falls_back_at_once_and_its_tokens_count() {
    let mock = Mock::start(Duration::ZERO, |_, _| {
        let usage = json!({"input_tokens": 100, "cache_read_input_tokens": 50,
                           "cache_creation_input_tokens": 20, "output_tokens": 7});
        (200, anthropic_stop("", "refusal", usage))
    });
    let env = llm_env("anthropic", &mock);
    small_session(&env, "s1", 1);
    let out = env.ok("mem-compress", &[], b"");
    let s = summary_of(&out);
    assert_eq!(mock.calls(), 1, "a refusal is not asked again: {s}");
    assert_eq!(s["counts"]["fallbacks"], 1);
    assert_eq!(
        s["counts"]["tokens_in"], 170,
        "cache reads and writes are input"
    );
    assert_eq!(logged_tokens(&env), 177);
    assert_eq!(
        count(
            &env,
            "SELECT count(*) FROM pending_queue WHERE status = 'error' AND last_error LIKE '%refusal%'"
        ),
        3
    );
    let seen = mock.seen.lock().unwrap().clone();
    assert_eq!(seen[0].body["thinking"], json!({"type": "disabled"}));
    assert_all_accounted(&env);
}

#[test]
fn anthropic_answer_cut_at_max_tokens_is_asked_once_with_more_room() {
    // Turn 0 is cut at the first max_tokens only; turn 1 is cut whatever the room.
    let mock = Mock::start(Duration::ZERO, |n, body| {
        let user = body["messages"][0]["content"].as_str().unwrap_or("");
        let usage = json!({"input_tokens": 10, "output_tokens": 5});
        if user.contains("part 1") || body["max_tokens"] == 2048 {
            (
                200,
                anthropic_stop("{\"observations\": [{\"ty", "max_tokens", usage),
            )
        } else {
            (200, anthropic_stop(&obs_json(n, &[]), "end_turn", usage))
        }
    });
    let env = llm_env("anthropic", &mock);
    small_session(&env, "s1", 2);
    let out = env.ok("mem-compress", &[], b"");
    let s = summary_of(&out);
    let seen = mock.seen.lock().unwrap().clone();
    let max: Vec<&Value> = seen.iter().map(|r| &r.body["max_tokens"]).collect();
    assert_eq!(
        max,
        [2048, 4096, 2048, 4096],
        "never the same request twice: {s}"
    );
    assert_eq!(
        s["counts"]["fallbacks"], 1,
        "turn 1 falls back after its second cut"
    );
    assert_eq!(s["counts"]["llm_calls"], 4);
    assert_eq!(logged_tokens(&env), 60, "every cut answer was billed");
    assert_eq!(
        count(
            &env,
            "SELECT count(*) FROM observations WHERE title LIKE 'Mock observation%'"
        ),
        1
    );
    assert_all_accounted(&env);
}

/// A backend, an answer no request can get past, and what the run must do with it.
#[test]
fn auth_spend_and_not_found_errors_switch_the_backend_off_for_the_run() {
    let cases: [(&str, u16, &str); 6] = [
        (
            "anthropic",
            401,
            r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
        ),
        (
            "anthropic",
            429,
            r#"{"type":"error","error":{"type":"enforced_spend_limit_error","message":"workspace spend limit reached"}}"#,
        ),
        (
            "anthropic",
            400,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API."}}"#,
        ),
        (
            "anthropic",
            404,
            r#"{"type":"error","error":{"type":"not_found_error","message":"model: claude-nope"}}"#,
        ),
        (
            "openai",
            429,
            r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}"#,
        ),
        ("openai", 403, r#"{"error":{"message":"forbidden"}}"#),
    ];
    for (kind, status, body) in cases {
        let body = body.to_string();
        let mock = Mock::start(Duration::ZERO, move |_, _| (status, body.clone()));
        let env = llm_env(kind, &mock);
        small_session(&env, "s1", 2);
        small_session(&env, "s2", 1);
        let out = env.ok("mem-compress", &[], b"");
        let s = summary_of(&out);
        let case = format!("{kind} HTTP {status}: {s}");
        assert_eq!(mock.calls(), 1, "one call, not one per group: {case}");
        assert_eq!(s["counts"]["fallbacks"], 1, "{case}");
        assert_eq!(s["counts"]["switched_off"], 2, "{case}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            stderr.matches("switched off").count(),
            1,
            "one line: {stderr}"
        );
        assert!(stderr.contains(&format!("HTTP {status}")), "{stderr}");
        assert_eq!(
            count(
                &env,
                "SELECT count(*) FROM event_log WHERE event = 'llm_disabled'"
            ),
            1,
            "{case}"
        );
        // The failed group is marked error; the rest is done by the heuristic.
        assert_eq!(
            count(
                &env,
                "SELECT count(*) FROM pending_queue WHERE status = 'error'"
            ),
            3,
            "{case}"
        );
        assert_all_accounted(&env);
    }
}

#[test]
fn retry_after_is_honoured() {
    let mock = Mock::start_raw(|n, _| {
        let (code, body, wait) = if n == 0 {
            (
                429,
                r#"{"type":"error","error":{"type":"rate_limit_error"}}"#.to_string(),
                "1",
            )
        } else {
            (200, anthropic_reply(&obs_json(n, &[]), 10, 5), "0")
        };
        Reply {
            code,
            headers: vec![
                ("Content-Type".into(), "application/json".into()),
                ("retry-after".into(), wait.into()),
            ],
            body: body.into_bytes(),
            cut_after: None,
        }
    });
    let env = llm_env("anthropic", &mock);
    small_session(&env, "s1", 1);
    let start = std::time::Instant::now();
    let out = env.ok("mem-compress", &[], b"");
    let took = start.elapsed();
    assert_eq!(mock.calls(), 2);
    assert_eq!(summary_of(&out)["counts"]["fallbacks"], 0);
    assert!(
        took >= Duration::from_secs(1),
        "waited {took:?}, not the 1 s asked (backoff is 10 ms)"
    );
    assert!(took < Duration::from_secs(10), "{took:?}");
}

#[test]
fn failed_attempts_count_toward_the_daily_cap() {
    // Every answer is billed and useless.
    let mock = Mock::start(Duration::ZERO, |_, _| {
        (200, anthropic_reply("I cannot produce JSON today", 100, 50))
    });
    let env = llm_env("anthropic", &mock).set("MEM_LLM_DAILY_TOKENS", "250");
    small_session(&env, "s1", 3);
    let out = env.ok("mem-compress", &[], b"");
    let s = summary_of(&out);
    assert_eq!(
        mock.calls(),
        2,
        "150 spent after the first attempt, 300 after the second: no third: {s}"
    );
    assert_eq!(s["counts"]["tokens_in"], 200);
    assert_eq!(s["counts"]["fallbacks"], 1);
    assert_eq!(s["counts"]["over_budget"], 2, "turns never sent");
    assert_eq!(
        count(
            &env,
            "SELECT count(*) FROM pending_queue WHERE status = 'error' AND last_error LIKE '%daily token cap%'"
        ),
        3
    );
    assert_eq!(logged_tokens(&env), 300);
    small_session(&env, "s2", 1);
    env.ok("mem-compress", &[], b"");
    assert_eq!(mock.calls(), 2, "the next run starts over the cap");
    assert_all_accounted(&env);
}

#[test]
fn openai_reasoning_models_get_their_parameters_and_a_strict_schema() {
    let mock = Mock::start(Duration::ZERO, |n, _| {
        // A strict answer: the optional detail is there, as null.
        let text = json!({"observations": [{
            "type": "bugfix", "title": format!("Mock observation number {n} for testing"),
            "summary": "What and why.", "detail": null, "facts": [], "concepts": [],
            "files_read": [], "files_modified": [], "functions_changed": []}]})
        .to_string();
        (200, openai_reply(&text, 50, 20))
    });
    for (model, url) in [
        ("gpt-5-mini", format!("{}/v1/", mock.url)),
        ("o4-mini", format!("{}/v1", mock.url)),
        ("qwen2.5:3b", mock.url.clone()),
    ] {
        let env = Env::new()
            .set("MEM_LLM", "openai")
            .set("MEM_LLM_URL", &url)
            .set("MEM_LLM_MODEL", model);
        small_session(&env, "s1", 1);
        let before = mock.calls();
        let out = env.ok("mem-compress", &[], b"");
        assert_eq!(summary_of(&out)["counts"]["fallbacks"], 0, "{model}");
        assert_eq!(mock.calls(), before + 1);
        let seen = mock.seen.lock().unwrap().last().unwrap().clone();
        assert_eq!(seen.path, "/v1/chat/completions", "{model} at {url}");
        let b = &seen.body;
        if model == "qwen2.5:3b" {
            assert_eq!(b["max_tokens"], 2048);
            assert_eq!(b["temperature"], 0);
            assert!(b.get("max_completion_tokens").is_none());
        } else {
            assert!(b["max_completion_tokens"].as_u64().unwrap() >= 2048, "{b}");
            assert!(b.get("max_tokens").is_none(), "{model}");
            assert!(b.get("temperature").is_none(), "{model}");
        }
        let js = &b["response_format"]["json_schema"];
        assert_eq!(js["strict"], true);
        let item = &js["schema"]["properties"]["observations"]["items"];
        assert!(
            item["required"]
                .as_array()
                .unwrap()
                .contains(&json!("detail"))
        );
        assert_eq!(
            item["properties"]["detail"]["type"],
            json!(["string", "null"])
        );
        assert_eq!(
            count(
                &env,
                "SELECT count(*) FROM observations WHERE title LIKE 'Mock observation%' AND detail IS NULL"
            ),
            1
        );
    }
}

#[test]
fn openai_cut_filtered_and_refused_answers() {
    // Turn 0: cut once, then fine with more room; turn 1: filtered; turn 2: refused.
    let mock = Mock::start(Duration::ZERO, |n, body| {
        let user = body["messages"][1]["content"].as_str().unwrap_or("");
        let usage = json!({"prompt_tokens": 10, "completion_tokens": 5});
        let choice = |finish: &str, message: Value| {
            json!({"choices": [{"index": 0, "finish_reason": finish, "message": message}],
                   "usage": usage})
            .to_string()
        };
        let text = obs_json(n, &[]);
        let answer = if user.contains("part 0") && body["max_tokens"] == 2048 {
            choice("length", json!({"role": "assistant", "content": "{\"obs"}))
        } else if user.contains("part 1") {
            choice(
                "content_filter",
                json!({"role": "assistant", "content": null}),
            )
        } else if user.contains("part 2") {
            choice(
                "stop",
                json!({"role": "assistant", "content": null, "refusal": "I can't help with that."}),
            )
        } else {
            choice("stop", json!({"role": "assistant", "content": text}))
        };
        (200, answer)
    });
    let env = Env::new()
        .set("MEM_LLM", "openai")
        .set("MEM_LLM_URL", &mock.url)
        .set("MEM_LLM_BACKOFF_MS", "10");
    small_session(&env, "s1", 3);
    let out = env.ok("mem-compress", &[], b"");
    let s = summary_of(&out);
    let max: Vec<Value> = mock
        .seen
        .lock()
        .unwrap()
        .iter()
        .map(|r| r.body["max_tokens"].clone())
        .collect();
    assert_eq!(
        max,
        [json!(2048), json!(4096), json!(2048), json!(2048)],
        "{s}"
    );
    assert_eq!(s["counts"]["fallbacks"], 2);
    assert_eq!(logged_tokens(&env), 60);
    for why in ["%content_filter%", "%refused%"] {
        assert_eq!(
            count(
                &env,
                &format!(
                    "SELECT count(*) FROM pending_queue WHERE status = 'error' AND last_error LIKE '{why}'"
                )
            ),
            3,
            "{why}"
        );
    }
    assert_all_accounted(&env);
}

/// A fake `claude` that records its arguments, environment and directory, writes `stderr_kb`
/// KB and then `said` to stderr, and answers `answer` on stdout with exit code `code`.
pub fn fake_claude(
    env: &Env,
    answer: &Value,
    stderr_kb: usize,
    said: &str,
    code: i32,
) -> (PathBuf, PathBuf) {
    let fake = env.dir.path().join("claude");
    let seen = env.dir.path().join("claude-seen");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\n{{ for a in \"$@\"; do printf '[%s]\\n' \"$a\"; done\n\
             echo \"CLAUDECODE=${{CLAUDECODE-unset}} ENTRYPOINT=${{CLAUDE_CODE_ENTRYPOINT-unset}} MEM_DISABLE=$MEM_DISABLE RETRIES=$CLAUDE_CODE_MAX_RETRIES\"\n\
             echo \"PWD=$PWD\"; }} > {seen}\n\
             head -c {bytes} /dev/zero | tr '\\0' 'x' >&2\n\
             echo '{said}' >&2\n\
             cat > /dev/null\necho '{answer}'\nexit {code}\n",
            seen = seen.display(),
            bytes = stderr_kb * 1024,
            answer = answer.to_string().replace('\'', "'\\''"),
        ),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    (fake, seen)
}

#[test]
fn claude_cli_runs_bare_in_a_scratch_directory_and_counts_cache_tokens() {
    let env = Env::new();
    let answer = json!({"type": "result", "is_error": false,
        "result": "", "structured_output": serde_json::from_str::<Value>(&obs_json(0, &[])).unwrap(),
        "usage": {"input_tokens": 3, "cache_read_input_tokens": 300,
                  "cache_creation_input_tokens": 18, "output_tokens": 45}});
    // 1 MB of stderr: more than a pipe holds, so the child blocks unless it is read.
    let (fake, seen) = fake_claude(&env, &answer, 1024, "chatty", 0);
    let env = env
        .set("MEM_LLM", "claude-cli")
        .set("MEM_CLAUDE_BIN", fake.to_str().unwrap())
        .set("MEM_LLM_TIMEOUT_SECS", "20")
        .set("CLAUDECODE", "1")
        .set("CLAUDE_CODE_ENTRYPOINT", "cli");
    small_session(&env, "s1", 1);
    let out = env.ok("mem-compress", &[], b"");
    let s = summary_of(&out);
    assert_eq!(s["counts"]["tokens_in"], 321, "{s}");
    assert_eq!(s["counts"]["fallbacks"], 0, "{s}");
    let got = std::fs::read_to_string(&seen).unwrap();
    for want in [
        "[--tools]\n[]\n",
        "[--no-session-persistence]\n",
        "[--strict-mcp-config]\n",
        "[--system-prompt]\n[You compress",
        "[--json-schema]\n[{",
        "CLAUDECODE=unset ENTRYPOINT=unset MEM_DISABLE=1 RETRIES=0",
    ] {
        assert!(got.contains(want), "{want:?} not in {got}");
    }
    let pwd = got.lines().find_map(|l| l.strip_prefix("PWD=")).unwrap();
    assert!(
        !Path::new(pwd).starts_with(env.dir.path()),
        "not the project: {pwd}"
    );
    assert!(!Path::new(pwd).exists(), "the scratch directory is removed");
    assert_eq!(
        count(
            &env,
            "SELECT count(*) FROM observations WHERE title LIKE 'Mock observation%'"
        ),
        1
    );
}

#[test]
fn claude_cli_login_error_is_fatal_for_the_run_and_quotes_stderr() {
    let env = Env::new();
    let answer = json!({"type": "result", "is_error": true,
        "result": "Invalid API key · Please run /login", "usage": {"input_tokens": 0, "output_tokens": 0}});
    let (fake, seen) = fake_claude(
        &env,
        &answer,
        1,
        "error: Invalid API key · Please run /login",
        1,
    );
    let env = env
        .set("MEM_LLM", "claude-cli")
        .set("MEM_CLAUDE_BIN", fake.to_str().unwrap())
        .set("MEM_LLM_BACKOFF_MS", "10");
    small_session(&env, "s1", 2);
    let out = env.ok("mem-compress", &[], b"");
    let s = summary_of(&out);
    assert_eq!(
        s["counts"]["llm_calls"], 1,
        "not retried, not tried again: {s}"
    );
    assert_eq!(s["counts"]["switched_off"], 1);
    assert!(seen.exists());
    let err: String = env
        .db()
        .query_row(
            "SELECT last_error FROM pending_queue WHERE status = 'error' LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(
        err.contains("exited with") && err.contains("stderr:") && err.contains("Please run /login"),
        "{err}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.matches("switched off").count(), 1, "{stderr}");
    assert_all_accounted(&env);
}

#[test]
fn claude_cli_api_errors_are_classified_like_the_http_backends() {
    // (api_error_status, api_error_type, calls for one turn, switched off)
    for (status, kind, calls, off) in [
        (429, "rate_limit_error", 3, 0),
        (403, "permission_error", 1, 1),
        (400, "billing_error", 1, 1),
        (400, "invalid_request_error", 1, 0),
    ] {
        let env = Env::new();
        let answer = json!({"type": "result", "is_error": true, "api_error_status": status,
            "api_error_type": kind, "result": "API Error", "usage": {"input_tokens": 0, "output_tokens": 0}});
        let (fake, _) = fake_claude(&env, &answer, 0, "", 1);
        let env = env
            .set("MEM_LLM", "claude-cli")
            .set("MEM_CLAUDE_BIN", fake.to_str().unwrap())
            .set("MEM_LLM_BACKOFF_MS", "10");
        small_session(&env, "s1", 1);
        let s = summary_of(&env.ok("mem-compress", &[], b""));
        assert_eq!(s["counts"]["llm_calls"], calls, "{status} {kind}: {s}");
        assert_eq!(
            count(
                &env,
                "SELECT count(*) FROM event_log WHERE event = 'llm_disabled'"
            ),
            off,
            "{status} {kind}"
        );
        assert_all_accounted(&env);
    }
}

#[test]
fn the_daily_cap_counts_cache_tokens_and_stops_spending() {
    // Claude Code-style caching: almost every input token is a cache read.
    let mock = Mock::start(Duration::ZERO, |n, _| {
        let usage = json!({"input_tokens": 3, "cache_read_input_tokens": 300,
                           "cache_creation_input_tokens": 40, "output_tokens": 20});
        (
            200,
            anthropic_stop(&obs_json(n, &["src/auth.rs"]), "end_turn", usage),
        )
    });
    let env = llm_env("anthropic", &mock).set("MEM_LLM_DAILY_TOKENS", "500");
    small_session(&env, "s1", 3);
    let out = env.ok("mem-compress", &[], b"");
    let s = summary_of(&out);
    // 363 after the first turn, 726 after the second: the third is never sent. Counting only
    // input_tokens (3 a call) would have let every call through.
    assert_eq!(mock.calls(), 2, "{s}");
    assert_eq!(s["counts"]["tokens_in"], 686);
    assert_eq!(s["counts"]["over_budget"], 1);
    assert_all_accounted(&env);
}
