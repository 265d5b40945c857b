//! End to end with the real Claude Code CLI (npm @anthropic-ai/claude-code at the version
//! scripts/fetch-claude pins; scripts/test passes its path in MEMKIT_TEST_CLAUDE). Two `claude -p`
//! sessions run in a temporary HOME against a scripted Messages API on 127.0.0.1, for both ways
//! of installing memkit: `mem-install` settings and the plugin loaded with `--plugin-dir`. Every
//! hook event is captured, the Stop hook's pipeline turns the captures into observations, and
//! the second session starts with memkit's block.
//!
//! Nothing reaches the internet: the API is the mock, Claude Code's other traffic is turned off,
//! and a proxy on a closed local port catches whatever would still go out.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::compress::{Mock, Reply, Seen};
use crate::{Env, bin, copy_dir, show, wait_for};

/// The Claude Code CLI; fails (never skips) when it is not there, like the model tests.
fn claude() -> PathBuf {
    let path = std::env::var("MEMKIT_TEST_CLAUDE")
        .ok()
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            panic!(
                "MEMKIT_TEST_CLAUDE is not set: run scripts/test (scripts/fetch-claude installs the pinned Claude Code CLI with npm), or set it to a claude binary"
            )
        });
    assert!(
        path.is_file(),
        "MEMKIT_TEST_CLAUDE={} is not a file",
        path.display()
    );
    path
}

const PROMPTS: [&str; 2] = [
    "Fix the flaky login test in the auth module",
    "Speed up the signup form validation",
];

/// The scripted Messages API. The project's own, written for this test after the behaviour of
/// the reference server in the issue (mock-anthropic.py, which states no licence; no code of
/// it is used): a request offering the Bash tool is answered with one Bash call, the request
/// carrying its result with a closing text; requests without tools (titles and the like) with
/// a short text. Streaming requests get the same as server-sent events.
fn messages_api(n: usize, req: &Seen) -> Reply {
    if let Some(r) = side_reply(req) {
        return r;
    }
    let body = &req.body;
    let offers_bash = body["tools"]
        .as_array()
        .is_some_and(|ts| ts.iter().any(|t| t["name"] == "Bash"));
    let after_tool = after_tool(body);
    let (blocks, stop) = if offers_bash && !after_tool {
        (
            vec![
                json!({"type": "text", "text": "I will run the tests."}),
                json!({"type": "tool_use", "id": format!("toolu_e2e_{n:04}"), "name": "Bash",
                       "input": {"command": "echo running the tests; echo 3 passed",
                                 "description": "Run the tests"}}),
            ],
            "tool_use",
        )
    } else if offers_bash {
        (
            vec![json!({"type": "text", "text": "All 3 tests pass now."})],
            "end_turn",
        )
    } else {
        (vec![json!({"type": "text", "text": "ok"})], "end_turn")
    };
    answer(n, body, blocks, stop)
}

fn json_reply(v: Value) -> Reply {
    Reply {
        code: 200,
        headers: vec![("Content-Type".into(), "application/json".into())],
        body: v.to_string().into_bytes(),
        cut_after: None,
    }
}

/// The answer to a request that is not a message: token counts, model lists.
fn side_reply(req: &Seen) -> Option<Reply> {
    if req.path.contains("count_tokens") {
        return Some(json_reply(json!({"input_tokens": 100})));
    }
    (!req.path.starts_with("/v1/messages")).then(|| json_reply(json!({"data": []})))
}

/// Whether the request's last message carries a tool's result.
fn after_tool(body: &Value) -> bool {
    body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["content"].as_array())
        .is_some_and(|c| c.iter().any(|b| b["type"] == "tool_result"))
}

/// What the MCP sessions ask memkit's search tool.
const MCP_QUERY: &str = "staging deploy VPN";

/// The scripted API of the MCP sessions, as the reference server's script step
/// `{"tool": "*__search"}` behaves: a request offering a tool whose name ends in `__search`
/// (memkit's search, whatever prefix Claude Code gives its server) is answered with one call
/// of it, the request carrying its result with a closing text.
fn messages_api_mcp(n: usize, req: &Seen) -> Reply {
    if let Some(r) = side_reply(req) {
        return r;
    }
    let body = &req.body;
    let search = body["tools"].as_array().and_then(|ts| {
        ts.iter()
            .filter_map(|t| t["name"].as_str())
            .find(|name| name.ends_with("__search"))
    });
    let (blocks, stop) = match search {
        Some(name) if !after_tool(body) => (
            vec![
                json!({"type": "text", "text": "I will look in memkit."}),
                json!({"type": "tool_use", "id": format!("toolu_mcp_{n:04}"), "name": name,
                       "input": {"query": MCP_QUERY}}),
            ],
            "tool_use",
        ),
        Some(_) => (
            vec![json!({"type": "text", "text": "memkit answered."})],
            "end_turn",
        ),
        None => (vec![json!({"type": "text", "text": "ok"})], "end_turn"),
    };
    answer(n, body, blocks, stop)
}

/// The Messages API's answer of `blocks`: one JSON message, or its server-sent events when
/// the request streams.
fn answer(n: usize, body: &Value, blocks: Vec<Value>, stop: &str) -> Reply {
    let message = json!({"id": format!("msg_e2e_{n}"), "type": "message", "role": "assistant",
        "model": body["model"], "content": blocks, "stop_reason": stop, "stop_sequence": null,
        "usage": {"input_tokens": 10, "output_tokens": 5}});
    if body["stream"] != true {
        return json_reply(message);
    }
    let mut events = vec![json!({"type": "message_start", "message": {
        "id": message["id"], "type": "message", "role": "assistant", "model": message["model"],
        "content": [], "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": 10, "output_tokens": 1}}})];
    for (i, b) in message["content"].as_array().unwrap().iter().enumerate() {
        let (start, delta) = if b["type"] == "text" {
            (
                json!({"type": "text", "text": ""}),
                json!({"type": "text_delta", "text": b["text"]}),
            )
        } else {
            (
                json!({"type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}),
                json!({"type": "input_json_delta", "partial_json": b["input"].to_string()}),
            )
        };
        events.push(json!({"type": "content_block_start", "index": i, "content_block": start}));
        events.push(json!({"type": "content_block_delta", "index": i, "delta": delta}));
        events.push(json!({"type": "content_block_stop", "index": i}));
    }
    events.push(json!({"type": "message_delta",
        "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": 5}}));
    events.push(json!({"type": "message_stop"}));
    let sse: String = events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect();
    Reply {
        code: 200,
        headers: vec![("Content-Type".into(), "text/event-stream".into())],
        body: sse.into_bytes(),
        cut_after: None,
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Install {
    Settings,
    Plugin,
}

/// Runs `cmd` to its end, killing it (and failing) after `limit`: a hung CLI must not hang the
/// suite.
fn run_bounded(mut cmd: Command, limit: Duration) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn claude");
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            v
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "claude ran longer than {limit:?}; stderr: {}",
                String::from_utf8_lossy(&err.join().unwrap())
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

struct Setup {
    env: Env,
    mock: Mock,
    claude: PathBuf,
    project: PathBuf,
    path: String,
    extra: Vec<String>,
}

impl Setup {
    fn new(install: Install) -> Setup {
        Setup::with_api(install, messages_api)
    }

    fn with_api(install: Install, api: fn(usize, &Seen) -> Reply) -> Setup {
        let claude = claude();
        let env = Env::new();
        let mock = Mock::start_raw(api);
        let bins = env.dir.path().join("bin");
        std::fs::create_dir_all(&bins).unwrap();
        for t in [
            "mem",
            "mem-capture",
            "mem-context",
            "mem-compress",
            "mem-install",
            "mem-mcp",
        ] {
            std::os::unix::fs::symlink(bin(t), bins.join(t)).unwrap();
        }
        let project = env.dir.path().join("project");
        std::fs::create_dir_all(&project).unwrap();
        let (path, extra) = match install {
            Install::Settings => {
                env.ok(
                    bins.join("mem-install").to_str().unwrap(),
                    &["--bin-dir", bins.to_str().unwrap()],
                    b"",
                );
                assert!(env.dir.path().join("home/.claude/settings.json").is_file());
                // The hooks name the tools by their full path.
                ("/usr/bin:/bin".to_string(), vec![])
            }
            Install::Plugin => {
                let root = Path::new(env!("CARGO_MANIFEST_DIR"));
                let plugin = env.dir.path().join("plugin");
                copy_dir(&root.join(".claude-plugin"), &plugin.join(".claude-plugin"));
                copy_dir(&root.join("hooks"), &plugin.join("hooks"));
                // The plugin's hooks name the tools alone: they must be on PATH.
                (
                    format!("{}:/usr/bin:/bin", bins.display()),
                    vec!["--plugin-dir".into(), plugin.display().to_string()],
                )
            }
        };
        Setup {
            env,
            mock,
            claude,
            project,
            path,
            extra,
        }
    }

    fn session(&self, prompt: &str) -> Output {
        let out = self.run_claude(prompt, "Bash");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("All 3 tests pass now."),
            "the session ran against the mock: {}",
            show(&out)
        );
        out
    }

    /// One `claude -p` session in the project, allowed the tools `allowed` names.
    fn run_claude(&self, prompt: &str, allowed: &str) -> Output {
        let mut c = Command::new(&self.claude);
        c.env_clear();
        for (k, v) in &self.env.vars {
            c.env(k, v);
        }
        c.env("PATH", &self.path)
            .env("ANTHROPIC_BASE_URL", &self.mock.url)
            .env("ANTHROPIC_API_KEY", "sk-ant-memkit-e2e-test")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("DISABLE_AUTOUPDATER", "1")
            .env("DISABLE_TELEMETRY", "1")
            .env("DISABLE_ERROR_REPORTING", "1")
            // MCP tools offered with the first request, not behind a ToolSearch call.
            .env("ENABLE_TOOL_SEARCH", "false");
        for k in ["HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"] {
            c.env(k, "http://127.0.0.1:9");
        }
        for k in ["NO_PROXY", "no_proxy"] {
            c.env(k, "127.0.0.1,localhost");
        }
        // As root Claude Code refuses --dangerously-skip-permissions; allowing Bash suffices.
        c.args(["-p", prompt, "--allowedTools", allowed])
            .args(&self.extra)
            .current_dir(&self.project);
        let out = run_bounded(c, Duration::from_secs(180));
        assert!(out.status.success(), "claude -p: {}", show(&out));
        out
    }

    fn sessions(&self) -> Vec<String> {
        let db = self.env.db();
        let mut st = db
            .prepare("SELECT session_id FROM event_log WHERE event = 'SessionStart' ORDER BY id")
            .unwrap();
        st.query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    }

    /// Every hook event of `session` captured, and all its captures worked off by the pipeline:
    /// nothing raw, its tool call part of an observation, the session summarised.
    fn assert_captured_and_compressed(&self, session: &str) {
        let q = |sql: &str| -> i64 {
            self.env
                .db()
                .query_row(sql, [session], |r| r.get(0))
                .unwrap()
        };
        wait_for(
            &self.env,
            &format!("the pipeline worked off session {session}"),
            |_| {
                q("SELECT count(*) FROM pending_queue WHERE session_id = ?1 AND status <> 'done'")
                    == 0
                    && q(
                        "SELECT count(*) FROM sessions WHERE session_id = ?1 AND summary IS NOT NULL",
                    ) == 1
            },
        );
        for event in [
            "SessionStart",
            "UserPromptSubmit",
            "PostToolUse",
            "Stop",
            "SessionEnd",
        ] {
            let n: i64 = self
                .env
                .db()
                .query_row(
                    "SELECT count(*) FROM event_log WHERE session_id = ?1 AND event = ?2",
                    [session, event],
                    |r| r.get(0),
                )
                .unwrap();
            assert_eq!(n, 1, "{event} of {session} captured once");
        }
        assert_eq!(
            q(
                "SELECT count(*) FROM pending_queue WHERE session_id = ?1 AND event = 'PostToolUse' AND tool_name = 'Bash'"
            ),
            1
        );
        assert_eq!(
            q("SELECT count(*) FROM pending_queue q JOIN observation_sources s ON s.queue_id = q.id
               WHERE q.session_id = ?1 AND q.event = 'PostToolUse'"),
            1,
            "the tool call became part of an observation"
        );
        assert_eq!(
            q(
                "SELECT count(*) FROM sessions WHERE session_id = ?1 AND status = 'ended' AND ended_at IS NOT NULL"
            ),
            1,
            "SessionEnd closed the session"
        );
    }
}

fn two_sessions(install: Install) {
    let s = Setup::new(install);
    s.session(PROMPTS[0]);
    let first = s.sessions();
    assert_eq!(first.len(), 1, "{first:?}");
    s.assert_captured_and_compressed(&first[0]);
    let title: String = s
        .env
        .db()
        .query_row(
            "SELECT title FROM observations WHERE session_id = ?1",
            [&first[0]],
            |r| r.get(0),
        )
        .unwrap();

    s.session(PROMPTS[1]);
    let all = s.sessions();
    assert_eq!(all.len(), 2, "{all:?}");
    let second = &all[1];
    s.assert_captured_and_compressed(second);
    crate::pipeline::wait_idle(&s.env);

    // The second session started with memkit's block, naming what the first one did: in its
    // transcript, and in what the model was sent.
    let transcript: String = s
        .env
        .db()
        .query_row(
            "SELECT transcript_path FROM sessions WHERE session_id = ?1",
            [second],
            |r| r.get(0),
        )
        .unwrap();
    let text = std::fs::read_to_string(&transcript).unwrap();
    assert!(
        text.contains("# memkit: what happened before") && text.contains(&title),
        "the second transcript ({transcript}) holds memkit's SessionStart block with {title:?}"
    );
    let sent = s.mock.seen.lock().unwrap().iter().any(|r| {
        let b = r.body.to_string();
        b.contains("memkit: what happened before") && b.contains(&title)
    });
    assert!(sent, "the model was sent the block");
    let first_transcript: String = s
        .env
        .db()
        .query_row(
            "SELECT transcript_path FROM sessions WHERE session_id = ?1",
            [&first[0]],
            |r| r.get(0),
        )
        .unwrap();
    assert!(
        !std::fs::read_to_string(first_transcript)
            .unwrap()
            .contains("# memkit: what happened before"),
        "the first session had nothing to recall"
    );
}

#[test]
fn claude_code_with_memkit_installed_in_settings() {
    two_sessions(Install::Settings);
}

#[test]
fn claude_code_with_memkit_as_a_plugin() {
    two_sessions(Install::Plugin);
}

/// A session whose turn calls memkit's MCP search tool: the tool result in the transcript,
/// and what the model was sent, carry the memory stored before.
fn mcp_search(install: Install) {
    let s = Setup::with_api(install, messages_api_mcp);
    if install == Install::Settings {
        let bins = s.env.dir.path().join("bin");
        s.env.ok(
            bins.join("mem-install").to_str().unwrap(),
            &["--bin-dir", bins.to_str().unwrap(), "--mcp", "--no-docs"],
            b"",
        );
        let config: Value = serde_json::from_slice(
            &std::fs::read(s.env.dir.path().join("home/.claude.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(
            config["mcpServers"]["memkit"]["command"],
            bins.join("mem-mcp").display().to_string()
        );
    }
    let note = "The staging deploy needs the VPN up and the zanzibar token rotated weekly";
    s.env.ok(
        "mem-capture",
        &[
            "-q",
            "--note",
            note,
            "--project",
            s.project.to_str().unwrap(),
        ],
        b"",
    );
    // Compressed and indexed (BM25): the test home has no embedding model.
    s.env.ok("mem-compress", &["-q"], b"");
    s.env.ok("mem-index", &["-q"], b"");
    // Claude Code names the tools mcp__<server>__<tool>; a plugin's server gets a prefix.
    let out = s.run_claude(
        "What do we know about the staging deploy?",
        "Bash mcp__memkit mcp__plugin_memkit_memkit",
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("memkit answered."),
        "the session called the tool: {}; tools offered: {:?}",
        show(&out),
        s.mock
            .seen
            .lock()
            .unwrap()
            .iter()
            .map(|r| r.body["tools"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|t| t["name"].as_str().unwrap_or("?").to_string())
                .collect::<Vec<_>>())
            .collect::<Vec<_>>()
    );
    let results: Vec<String> = s
        .mock
        .seen
        .lock()
        .unwrap()
        .iter()
        .flat_map(|r| r.body["messages"].as_array().cloned().unwrap_or_default())
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == "tool_result")
        .map(|b| b["content"].to_string())
        .collect();
    assert!(
        results.iter().any(|r| r.contains("zanzibar")),
        "the search tool's result, as the model was sent it, carries the note: {results:?}"
    );
    crate::pipeline::wait_idle(&s.env);
    let transcript: String = s
        .env
        .value("SELECT transcript_path FROM sessions ORDER BY rowid DESC LIMIT 1");
    let text = std::fs::read_to_string(&transcript).unwrap();
    let in_transcript = text.lines().any(|l| {
        let v: Value = serde_json::from_str(l).unwrap_or_default();
        v["message"]["content"].as_array().is_some_and(|c| {
            c.iter().any(|b| {
                b["type"] == "tool_result" && b["content"].to_string().contains("zanzibar")
            })
        })
    });
    assert!(
        in_transcript,
        "the transcript ({transcript}) holds the tool result with the note"
    );
}

#[test]
fn claude_code_calls_the_mcp_search_tool_registered_by_mem_install() {
    mcp_search(Install::Settings);
}

#[test]
fn claude_code_calls_the_mcp_search_tool_of_the_plugin() {
    mcp_search(Install::Plugin);
}
