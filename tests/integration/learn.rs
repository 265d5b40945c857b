//! mem-learn on real binaries and a real SQLite file: the heuristic on what users typed (the
//! fixtures and hand-written sessions through the hooks), the LLM backends against a mock on
//! 127.0.0.1, the daily cap, a run killed during its call, dedup with real MiniLM vectors,
//! call-graph healing from mem-ast's function map, the pipeline stage and the context layer.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};

use crate::compress::{Mock, Reply, anthropic_reply, openai_reply};
use crate::{Env, jsonl, show};

const PROJECT: &str = "/tmp/learnproj";

/// A session through the hooks in `cwd`: per prompt a turn with an edit and a Stop whose
/// assistant message states a rule of its own (which must never be learned).
fn session_in(env: &Env, cwd: &str, id: &str, prompts: &[&str]) {
    for (t, p) in prompts.iter().enumerate() {
        let base = json!({"session_id": id, "cwd": cwd, "transcript_path": "/nonexistent.jsonl"});
        let with = |extra: Value| crate::event(&base, extra);
        env.ok(
            "mem-capture",
            &["--hook"],
            &with(json!({"hook_event_name": "UserPromptSubmit", "prompt": p})),
        );
        env.ok("mem-capture", &["--hook"], &with(json!({"hook_event_name": "PostToolUse",
            "tool_name": "Edit", "tool_use_id": format!("e-{id}-{t}"),
            "tool_input": {"file_path": format!("{cwd}/src/app.py"), "old_string": "a = 1", "new_string": "a = 2"},
            "tool_response": {"filePath": format!("{cwd}/src/app.py"), "structuredPatch": []}})));
        env.ok("mem-capture", &["--hook"], &with(json!({"hook_event_name": "Stop",
            "last_assistant_message": "Done. Always restart the dev server after editing settings.py."})));
    }
}

fn session(env: &Env, id: &str, prompts: &[&str]) {
    session_in(env, PROJECT, id, prompts);
}

/// Compresses (heuristic: summaries), then learns; the learning records of the run.
fn learn(env: &Env) -> Vec<Value> {
    env.ok("mem-compress", &["--backend", "heuristic"], b"");
    let out = env.ok("mem-learn", &[], b"");
    jsonl(&out)
        .into_iter()
        .filter(|r| r["type"] == "learning")
        .collect()
}

fn list(env: &Env, extra: &[&str]) -> Vec<Value> {
    let mut args = vec!["list", "--project", PROJECT, "--format", "jsonl"];
    args.extend_from_slice(extra);
    jsonl(&env.run("mem-learn", &args, b""))
}

/// (a, b) of each record's two text fields.
fn pairs<'a>(recs: &'a [Value], a: &str, b: &str) -> Vec<(&'a str, &'a str)> {
    recs.iter()
        .map(|r| (r[a].as_str().unwrap(), r[b].as_str().unwrap()))
        .collect()
}

fn by_content(env: &Env) -> BTreeMap<String, Value> {
    list(env, &["--all"])
        .into_iter()
        .map(|l| (l["content"].as_str().unwrap().to_string(), l))
        .collect()
}

#[test]
fn the_heuristic_finds_on_the_fixtures_only_what_users_typed() {
    let env = Env::new();
    env.import_fixtures();
    let recs = learn(&env);
    let got: Vec<(&str, &str)> = pairs(&recs, "content", "category");
    // The one durable preference the fixtures' users stated in their own words (JSSoundRecorder:
    // "I have both Node and Python, but I don't want to make it only work for me or make
    // assumptions about people's env."). Subagent tasks written by the main agent ("Do not push.
    // Do not merge."), hook output ("prefer comparing against an empty list"), local-command
    // caveats ("DO NOT respond") and assistant text are not the user's rules.
    // "To be clear: don't use ClMail for communication, use the builtin subagent teams." And
    // the one command two sessions of claude-code-log ran successfully.
    let mut got = got;
    got.sort();
    assert_eq!(
        got,
        [
            (
                "Don't use ClMail for communication, use the builtin subagent teams",
                "convention"
            ),
            (
                "I don't want to make it only work for me or make assumptions about people's env",
                "convention"
            ),
            ("Sessions here run `uv run pyright`", "convention"),
        ],
        "{recs:#?}"
    );
    let pyright = recs
        .iter()
        .find(|r| r["content"].as_str().unwrap().contains("pyright"))
        .unwrap();
    assert_eq!(pyright["project"], "/Users/dain/workspace/claude-code-log");
    assert_eq!(
        env.count(
            "SELECT count(DISTINCT session_id) FROM pending_queue WHERE event = 'PostToolUse'
             AND json_extract(payload, '$.tool_input.command') = 'uv run pyright'"
        ),
        2
    );
    let recs: Vec<Value> = recs
        .iter()
        .filter(|r| !r["content"].as_str().unwrap().contains("pyright"))
        .cloned()
        .collect();
    let js: Vec<&Value> = recs
        .iter()
        .filter(|r| r["content"].as_str().unwrap().starts_with("I don't"))
        .collect();
    assert_eq!(js[0]["outcome"], "inserted");
    assert_eq!(js[0]["by"], "heuristic");
    assert_eq!(js[0]["project"], "/Users/dain/workspace/JSSoundRecorder");
    // Every learning quotes a prompt the user typed, and that prompt says it.
    for r in &recs {
        let evidence = r["evidence"].as_str().unwrap();
        let n = env.count(&format!(
            "SELECT count(*) FROM pending_queue WHERE event = 'UserPromptSubmit' AND agent_id IS NULL
             AND instr(lower(json_extract(payload, '$.prompt')), lower('{}')) > 0",
            r["content"].as_str().unwrap().replace('\'', "''")
        ));
        assert_eq!(n, 1, "{evidence}");
    }
    // The fixture project's next session starts with it, within the layer's cap.
    let out = env.ok(
        "mem-context",
        &[
            "--project",
            "/Users/dain/workspace/JSSoundRecorder",
            "--format",
            "json",
        ],
        b"",
    );
    let rec: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        rec["text"].as_str().unwrap().contains(
            "## Project learnings\n- [convention] I don't want to make it only work for me or make assumptions about people's env\n"
        ),
        "{}",
        rec["text"]
    );
    let layer = rec["layers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == "learnings")
        .unwrap();
    assert!(
        layer["included"] == true && layer["tokens"].as_u64().unwrap() <= 300,
        "{layer}"
    );
    // Once per summary: a second run learns nothing again.
    let again = jsonl(&env.ok("mem-learn", &[], b""));
    assert_eq!(
        again.last().unwrap()["counts"].get("sessions"),
        None,
        "{again:?}"
    );
    assert_eq!(env.count("SELECT count(*) FROM learnings"), 3);
}

#[test]
fn learnings_gain_confidence_when_seen_again_and_lose_it_when_contradicted() {
    let env = Env::new();
    session(
        &env,
        "s1",
        &[
            "Fix the flaky login test. From now on, run the tests with uv run pytest -m 'not browser'.",
            "Remember that the CI image has no ffmpeg",
            "ok. Use httpx instead of requests in the client",
        ],
    );
    let recs = learn(&env);
    let outcomes: Vec<(&str, &str)> = pairs(&recs, "outcome", "content");
    assert_eq!(
        outcomes,
        [
            (
                "inserted",
                "From now on, run the tests with uv run pytest -m 'not browser'"
            ),
            ("inserted", "Remember that the CI image has no ffmpeg"),
            ("inserted", "Use httpx instead of requests in the client"),
        ]
    );
    // Seen again in four later sessions: 0.50 -> 0.59 -> 0.662 -> 0.7196 -> 0.7657.
    let rule = "From now on, run the tests with uv run pytest -m 'not browser'";
    let mut seen = vec![by_content(&env)[rule]["confidence"].as_f64().unwrap()];
    for s in ["s2", "s3", "s4", "s5"] {
        session(
            &env,
            s,
            &["from now on run the tests with uv run pytest -m 'not browser'!"],
        );
        let recs = learn(&env);
        assert_eq!(recs.len(), 1, "{recs:?}");
        assert_eq!(recs[0]["outcome"], "merged");
        seen.push(by_content(&env)[rule]["confidence"].as_f64().unwrap());
    }
    assert_eq!(seen, [0.5, 0.59, 0.662, 0.7196, 0.7657]);
    let l = &by_content(&env)[rule];
    assert_eq!(l["times_seen"], 5);
    assert_eq!(l["source_sessions"], json!(["s1", "s2", "s3", "s4", "s5"]));

    // The reverse preference contradicts: the old one loses 0.3, the new one is stored as its
    // replacement (the topic is not forgotten).
    session(
        &env,
        "s6",
        &["Use requests instead of httpx in the client, the proxy needs it"],
    );
    let recs = learn(&env);
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0]["outcome"], "contradicted", "{recs:?}");
    let all = by_content(&env);
    let old = &all["Use httpx instead of requests in the client"];
    let new = &all["Use requests instead of httpx in the client, the proxy needs it"];
    assert_eq!(old["confidence"], 0.2);
    assert_eq!(old["is_active"], true);
    assert_eq!(old["replaced_by"], new["id"]);
    assert_eq!(new["confidence"], 0.5);
    // Contradicted again it reaches the floor and goes inactive.
    session(&env, "s7", &["Use httpx instead of requests in the client"]);
    let recs = learn(&env);
    assert_eq!(recs[0]["outcome"], "contradicted", "{recs:?}");
    let all = by_content(&env);
    let new = &all["Use requests instead of httpx in the client, the proxy needs it"];
    assert_eq!(new["confidence"], 0.2);
    // Its replacement is the learning that already said so, seen again: no second copy.
    let old = &all["Use httpx instead of requests in the client"];
    assert_eq!(
        (old["confidence"].as_f64(), old["times_seen"].as_i64()),
        (Some(0.35), Some(2))
    );
    assert_eq!(new["replaced_by"], old["id"]);
    assert_eq!(env.count("SELECT count(*) FROM learnings"), 4);
    session(
        &env,
        "s8",
        &["Use requests instead of httpx in the client, the proxy needs it"],
    );
    learn(&env);
    let inactive: Vec<Value> = list(&env, &["--all"])
        .into_iter()
        .filter(|l| l["is_active"] == false)
        .collect();
    assert_eq!(inactive.len(), 1, "{inactive:?}");
    assert_eq!(inactive[0]["confidence"], 0.1);
    assert!(
        list(&env, &[]).iter().all(|l| l["id"] != inactive[0]["id"]),
        "an inactive learning is not listed by default"
    );

    // What the assistant said is never a learning; each outcome is in event_log.
    assert_eq!(
        env.count("SELECT count(*) FROM learnings WHERE content LIKE '%dev server%'"),
        0
    );
    assert_eq!(
        env.count("SELECT count(*) FROM event_log WHERE event = 'learning'"),
        10
    );

    // The SessionStart block shows the active ones of at least 0.5, inactive ones never,
    // within the layer's 300 tokens.
    let out = env.ok(
        "mem-context",
        &["--project", PROJECT, "--format", "json"],
        b"",
    );
    let rec: Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = rec["text"].as_str().unwrap();
    assert!(text.contains("Project learnings"), "{text}");
    assert!(
        text.contains(
            "- [convention] From now on, run the tests with uv run pytest -m 'not browser'"
        ),
        "{text}"
    );
    assert!(
        text.contains("- [gotcha] Remember that the CI image has no ffmpeg"),
        "{text}"
    );
    let section = text
        .split("## Project learnings")
        .nth(1)
        .and_then(|t| t.split("\n## ").next())
        .unwrap();
    // Under 0.5 is not shown, only counted on the last line.
    let lines: Vec<&str> = section.trim().lines().collect();
    let active = env.count(&format!(
        "SELECT count(*) FROM learnings WHERE is_active = 1 AND project = '{PROJECT}'"
    ));
    assert_eq!(lines.len(), 3, "{text}");
    assert_eq!(
        lines[2],
        format!("- {} more: `mem-learn list`", active - 2),
        "{text}"
    );
    let layer = rec["layers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == "learnings")
        .unwrap();
    assert_eq!(layer["cap"], 300);
    assert!(layer["tokens"].as_u64().unwrap() <= 300, "{layer}");
    // Another project sees none of them.
    let other = env.ok(
        "mem-context",
        &["--project", "/tmp/elsewhere", "--format", "json"],
        b"",
    );
    let rec: Value = serde_json::from_slice(&other.stdout).unwrap();
    assert!(!rec["text"].as_str().unwrap().contains("uv run pytest"));
}

#[test]
fn manual_learnings_are_trusted_and_the_user_can_edit_remove_and_reset() {
    let env = Env::new();
    let out = env.ok(
        "mem-learn",
        &[
            "add",
            "Use pnpm instead of npm",
            "--category",
            "convention",
            "--project",
            PROJECT,
        ],
        b"",
    );
    let added = &jsonl(&out)[0];
    assert_eq!(added["confidence"], 1.0);
    assert_eq!(added["is_manual"], true);
    let id = added["id"].as_i64().unwrap();
    // Contradicted and restated by sessions, it does not change.
    session(&env, "s1", &["Use npm instead of pnpm for this one"]);
    session(&env, "s2", &["always use pnpm instead of npm"]);
    let recs = learn(&env);
    let outcomes: Vec<&str> = recs
        .iter()
        .map(|r| r["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["skipped", "merged"], "{recs:?}");
    assert!(recs[0]["why"].as_str().unwrap().contains("typed by hand"));
    let l = &by_content(&env)["Use pnpm instead of npm"];
    assert_eq!(
        (l["confidence"].as_f64(), l["times_seen"].as_i64()),
        (Some(1.0), Some(1))
    );

    env.ok(
        "mem-learn",
        &[
            "edit",
            &format!("l{id}"),
            "Use pnpm 9, never npm",
            "--category",
            "dependency",
        ],
        b"",
    );
    let l = &by_content(&env)["Use pnpm 9, never npm"];
    assert_eq!(
        (l["category"].as_str(), l["is_manual"].as_bool()),
        (Some("dependency"), Some(true))
    );
    let bad = env.run(
        "mem-learn",
        &["add", "x y z", "--category", "style", "--project", PROJECT],
        b"",
    );
    assert_eq!(bad.status.code(), Some(2), "{}", show(&bad));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--category \"style\""));
    let missing = env.run("mem-learn", &["remove", "999"], b"");
    assert_eq!(missing.status.code(), Some(2));
    env.ok("mem-learn", &["remove", &id.to_string()], b"");
    assert!(!by_content(&env).contains_key("Use pnpm 9, never npm"));
    env.ok(
        "mem-learn",
        &["add", "Remember to bump the version", "--project", PROJECT],
        b"",
    );
    // A secret typed into a learning is redacted before it is stored, as in a note.
    let token = format!(
        "ghp_{}",
        "a1B2c3D4e5F6g7H8i9J0".repeat(2).get(..36).unwrap()
    );
    let out = env.ok(
        "mem-learn",
        &[
            "add",
            &format!("Deploy with the token {token}"),
            "--project",
            PROJECT,
        ],
        b"",
    );
    let stored = jsonl(&out)[0]["content"].as_str().unwrap().to_string();
    assert!(
        stored.contains("[REDACTED:") && !stored.contains(&token),
        "{stored}"
    );
    assert_eq!(
        env.count(&format!(
            "SELECT count(*) FROM learnings WHERE content LIKE '%{token}%'"
        )),
        0
    );

    // reset asks; without a terminal it needs --yes. Afterwards the sessions are learned again.
    let n = env.count("SELECT count(*) FROM learnings");
    assert!(n > 0);
    let refused = env.run("mem-learn", &["reset", "--project", PROJECT], b"");
    assert_eq!(refused.status.code(), Some(2), "{}", show(&refused));
    assert_eq!(env.count("SELECT count(*) FROM learnings"), n);
    env.ok("mem-learn", &["reset", "--project", PROJECT, "--yes"], b"");
    assert_eq!(env.count("SELECT count(*) FROM learnings"), 0);
    let again = jsonl(&env.ok("mem-learn", &[], b""));
    assert_eq!(again.last().unwrap()["counts"]["sessions"], 2, "{again:?}");
}

fn llm_env(kind: &str, mock: &Mock) -> Env {
    Env::new()
        .set("MEM_LLM", kind)
        .set("MEM_LLM_URL", &mock.url)
        .set("ANTHROPIC_API_KEY", "test-key")
        .set("MEM_LLM_BACKOFF_MS", "10")
}

fn answer(items: Value) -> String {
    json!({ "learnings": items }).to_string()
}

/// Runs one session through compress (heuristic, so the mock only sees learn's calls) and learn.
fn learn_session(env: &Env, id: &str, prompt: &str) -> Vec<Value> {
    session(env, id, &[prompt]);
    env.ok("mem-compress", &["--backend", "heuristic"], b"");
    let out = env.ok("mem-learn", &[], b"");
    jsonl(&out)
}

#[test]
fn llm_extraction_inserts_merges_contradicts_and_skips() {
    let mock = Mock::start(Duration::ZERO, |n, _| {
        let items = match n {
            0 => json!([
                {"content": "Run the tests with make check", "category": "convention", "confidence": 0.9, "reason": "the user ran it"},
                {"content": "Maybe format with black", "category": "convention", "confidence": 0.2, "reason": "a guess"}
            ]),
            1 => json!([
                {"content": "run tests with make check", "category": "convention", "confidence": 0.8, "reason": "again"},
                {"content": "The API listens on port 8080", "category": "gotcha", "confidence": 0.9, "reason": "seen"}
            ]),
            _ => json!([
                {"content": "The API listens on port 9090 since the proxy change", "category": "gotcha", "confidence": 0.9, "contradicts": 2, "reason": "moved"}
            ]),
        };
        (200, anthropic_reply(&answer(items), 1000, 50))
    });
    let env = llm_env("anthropic", &mock);
    let outcomes = |recs: &[Value]| -> Vec<String> {
        recs.iter()
            .filter(|r| r["type"] == "learning")
            .map(|r| r["outcome"].as_str().unwrap().to_string())
            .collect()
    };
    let r1 = learn_session(&env, "s1", "Set up the test command");
    assert_eq!(outcomes(&r1), ["inserted", "skipped"], "{r1:?}");
    assert_eq!(r1.last().unwrap()["counts"]["llm_calls"], 1);
    let r2 = learn_session(&env, "s2", "Add the health endpoint");
    assert_eq!(outcomes(&r2), ["merged", "inserted"], "{r2:?}");
    let r3 = learn_session(&env, "s3", "Move the API behind the proxy");
    let l3: Vec<&Value> = r3.iter().filter(|r| r["type"] == "learning").collect();
    assert_eq!(l3[0]["outcome"], "contradicted");
    assert_eq!(l3[0]["by"], "anthropic");
    assert_eq!(
        l3[0]["contradicted"],
        json!({"id": 2, "confidence": 0.2, "is_active": true})
    );
    assert_eq!(mock.calls(), 3, "one call per summarised session");

    let all = by_content(&env);
    assert_eq!(all["Run the tests with make check"]["confidence"], 0.59);
    assert_eq!(
        all["The API listens on port 8080"]["replaced_by"],
        all["The API listens on port 9090 since the proxy change"]["id"]
    );
    // The request carries the structured-output schema, what the user typed, the summary, and
    // the project's learnings with their ids.
    let seen = mock.seen.lock().unwrap().clone();
    assert_eq!(seen[0].path, "/v1/messages");
    let user = seen[2].body["messages"][0]["content"].to_string();
    assert!(
        user.contains("#2 [gotcha] 0.50: The API listens on port 8080"),
        "{user}"
    );
    assert!(
        user.contains("#1 [convention] 0.59: Run the tests with make check"),
        "{user}"
    );
    assert!(user.contains("Move the API behind the proxy"), "{user}");
    assert!(
        seen[0].body.to_string().contains("\"contradicts\""),
        "schema sent: {}",
        seen[0].body
    );
    assert_eq!(
        env.count("SELECT count(*) FROM event_log WHERE event = 'llm_call' AND json_extract(detail, '$.purpose') = 'learn' AND json_extract(detail, '$.tokens_in') = 1000"),
        3
    );
}

#[test]
fn openai_extraction_uses_a_strict_schema() {
    let mock = Mock::start(Duration::ZERO, |_, _| {
        let items = json!([{"content": "Deploy with fly deploy --remote-only", "category": "convention", "confidence": 0.9, "contradicts": null, "reason": "the user said so"}]);
        (200, openai_reply(&answer(items), 500, 40))
    });
    let env = llm_env("openai", &mock).set("MEM_LLM_URL", &format!("{}/v1", mock.url));
    let recs = learn_session(&env, "s1", "Deploy it");
    let l: Vec<&Value> = recs.iter().filter(|r| r["type"] == "learning").collect();
    assert_eq!(l.len(), 1);
    assert_eq!(
        (l[0]["outcome"].as_str(), l[0]["by"].as_str()),
        (Some("inserted"), Some("openai"))
    );
    let seen = mock.seen.lock().unwrap().clone();
    assert_eq!(seen[0].path, "/v1/chat/completions");
    let schema = &seen[0].body["response_format"]["json_schema"];
    assert_eq!(schema["strict"], true, "{}", seen[0].body);
}

#[test]
fn the_daily_cap_and_a_failing_backend_hand_extraction_to_the_heuristic() {
    let mock = Mock::start(Duration::ZERO, |_, _| {
        (200, anthropic_reply(&answer(json!([])), 1500, 50))
    });
    let env = llm_env("anthropic", &mock).set("MEM_LLM_DAILY_TOKENS", "1000");
    learn_session(&env, "s1", "Set things up");
    let out = {
        session(&env, "s2", &["Always run cargo fmt before committing"]);
        env.ok("mem-compress", &["--backend", "heuristic"], b"");
        env.ok("mem-learn", &[], b"")
    };
    assert_eq!(mock.calls(), 1, "no call past the cap");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("daily token cap reached"), "{err}");
    let recs = jsonl(&out);
    assert_eq!(recs[0]["by"], "heuristic");
    assert_eq!(recs[0]["content"], "Always run cargo fmt before committing");

    // A backend that refuses every key: the heuristic stands in, nothing is lost.
    let mock = Mock::start(Duration::ZERO, |_, _| {
        (401, "{\"error\":\"bad key\"}".into())
    });
    let env = llm_env("anthropic", &mock);
    let recs = learn_session(&env, "s1", "Never push to main directly");
    assert_eq!(recs[0]["content"], "Never push to main directly");
    assert_eq!(recs[0]["by"], "heuristic");
    assert_eq!(mock.calls(), 1, "401 is not retried");
}

#[test]
fn a_run_killed_during_its_call_learns_the_session_once_on_the_next_run() {
    let mock = Mock::start_raw(|n, _| {
        if n == 0 {
            std::thread::sleep(Duration::from_secs(3));
        }
        let items = json!([{"content": "Seed the database with make seed", "category": "convention", "confidence": 0.9, "reason": "x"}]);
        Reply {
            code: 200,
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: anthropic_reply(&answer(items), 100, 10).into_bytes(),
            cut_after: None,
        }
    });
    let env = llm_env("anthropic", &mock);
    session(&env, "s1", &["Seed the dev database"]);
    env.ok("mem-compress", &["--backend", "heuristic"], b"");
    let mut child = env
        .cmd("mem-learn")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    crate::wait_for(&env, "the call is in flight", |_| mock.calls() == 1);
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert_eq!(env.count("SELECT count(*) FROM learnings"), 0);
    assert_eq!(
        env.count("SELECT count(*) FROM sessions WHERE learned_at IS NOT NULL"),
        0
    );
    env.ok("mem-learn", &[], b"");
    env.ok("mem-learn", &[], b"");
    assert_eq!(mock.calls(), 2, "asked again once, then never");
    assert_eq!(env.count("SELECT count(*) FROM learnings"), 1);
    assert_eq!(
        env.count("SELECT count(*) FROM event_log WHERE event = 'learning'"),
        1
    );
}

#[test]
fn paraphrases_merge_with_minilm_vectors_and_different_rules_do_not() {
    let models = crate::embed::models();
    let run = |with_model: bool| {
        let env = Env::new()
            .set("MEM_MODELS", models.to_str().unwrap())
            .set("MEM_EMBED_MODEL", "minilm-l6");
        session(
            &env,
            "s1",
            &[
                "From now on, run the tests with uv run pytest -m 'not browser'",
                "Always use pnpm instead of npm",
            ],
        );
        env.ok("mem-compress", &["--backend", "heuristic"], b"");
        if with_model {
            // The stored vectors say which model is in use.
            env.ok("mem-embed", &[], b"");
        }
        env.ok("mem-learn", &[], b"");
        session(
            &env,
            "s2",
            &[
                "Always use uv run pytest -m 'not browser' to run the test suite",
                "Never commit the pnpm lockfile",
            ],
        );
        let recs = learn(&env);
        recs.iter()
            .map(|r| {
                (
                    r["outcome"].as_str().unwrap().to_string(),
                    r["content"].as_str().unwrap().to_string(),
                )
            })
            .collect::<Vec<_>>()
    };
    let with = run(true);
    assert_eq!(
        with,
        [
            (
                "merged".to_string(),
                "From now on, run the tests with uv run pytest -m 'not browser'".to_string()
            ),
            ("inserted".into(), "Never commit the pnpm lockfile".into()),
        ]
    );
    // Words alone do not see the paraphrase.
    let without = run(false);
    assert_eq!(without[0].0, "inserted", "{without:?}");
}

#[test]
fn observations_heal_the_call_graph_and_observation_edges_fade() {
    let env = Env::new();
    let cwd = "/tmp/healproj";
    let code = "def load(path):\n    return parse(open(path).read())\n\n\ndef parse(text):\n    return text.split()\n\n\ndef report(items):\n    return len(items)\n";
    let base = json!({"session_id": "h1", "cwd": cwd, "transcript_path": "/nonexistent.jsonl"});
    let with = |extra: Value| crate::event(&base, extra);
    env.ok(
        "mem-capture",
        &["--hook"],
        &with(json!({"hook_event_name": "UserPromptSubmit", "prompt": "Write the loader"})),
    );
    env.ok(
        "mem-capture",
        &["--hook"],
        &with(
            json!({"hook_event_name": "PostToolUse", "tool_name": "Write",
        "tool_use_id": "w1", "tool_input": {"file_path": format!("{cwd}/app.py"), "content": code},
        "tool_response": {"filePath": format!("{cwd}/app.py"), "type": "create"}}),
        ),
    );
    env.ok(
        "mem-capture",
        &["--hook"],
        &with(json!({"hook_event_name": "Stop", "last_assistant_message": "Wrote it."})),
    );
    env.ok("mem-compress", &["--backend", "heuristic"], b"");
    env.ok("mem-ast", &[], b"");
    let changed: String = env
        .value("SELECT functions_changed FROM observations WHERE files_modified LIKE '%app.py%'");
    assert_eq!(changed, r#"["load","parse","report"]"#);
    let out = env.ok("mem-learn", &[], b"");
    let edges: Vec<(String, String, String)> = jsonl(&out)
        .iter()
        .filter(|r| r["type"] == "edge")
        .map(|r| {
            (
                r["outcome"].as_str().unwrap().into(),
                r["caller"].as_str().unwrap().into(),
                r["callee"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        edges,
        [
            ("confirmed".into(), "load".into(), "parse".into()),
            ("added".into(), "load".into(), "report".into()),
            ("added".into(), "parse".into(), "report".into()),
        ]
    );
    let ast_edge: (f64, i64, String) = env
        .db()
        .query_row("SELECT confidence, times_confirmed, source FROM call_graph WHERE caller = 'load' AND callee = 'parse'", [], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap();
    assert_eq!((ast_edge.1, ast_edge.2.as_str()), (1, "ast"));
    assert_eq!(
        env.count(
            "SELECT count(*) FROM call_graph WHERE source = 'observation' AND confidence = 0.6"
        ),
        2
    );
    // Ten later sessions of the project leave them; the eleventh and twelfth take 0.05 each.
    for i in 0..12 {
        session_in(&env, cwd, &format!("later{i}"), &["Tidy up the readme"]);
        env.ok("mem-compress", &["--backend", "heuristic"], b"");
        env.ok("mem-learn", &[], b"");
        let c: f64 =
            env.value("SELECT max(confidence) FROM call_graph WHERE source = 'observation'");
        let want = match i {
            0..=9 => 0.6,
            10 => 0.55,
            _ => 0.5,
        };
        assert_eq!(c, want, "after {} sessions", i + 1);
    }
    let after: f64 =
        env.value("SELECT confidence FROM call_graph WHERE caller = 'load' AND callee = 'parse'");
    assert_eq!(after, ast_edge.0, "parser edges do not fade");
}

#[test]
fn the_pipeline_learns_once_per_summarised_session() {
    let env = Env::new()
        .set("MEM_MODELS", crate::embed::models().to_str().unwrap())
        .set("MEM_EMBED_MODEL", "minilm-l6");
    session(&env, "s1", &["Never log the request body; it holds tokens"]);
    let first = env.run("mem", &["pipeline"], b"");
    assert!(first.status.success(), "{}", show(&first));
    assert_eq!(env.count("SELECT count(*) FROM learnings"), 1);
    assert_eq!(
        env.count("SELECT count(*) FROM sessions WHERE learned_at IS NOT NULL"),
        1
    );
    env.ok("mem", &["pipeline"], b"");
    assert_eq!(
        env.count("SELECT count(*) FROM event_log WHERE event = 'learning'"),
        1
    );
    // Embedded and indexed like observations: mem-search --type learning finds it.
    assert_eq!(
        env.count("SELECT count(*) FROM embeddings WHERE owner_kind = 'learning'"),
        1
    );
    let out = env.ok(
        "mem-search",
        &[
            "--type",
            "learning",
            "--project",
            PROJECT,
            "logging request bodies",
            "--format",
            "jsonl",
        ],
        b"",
    );
    let hits = jsonl(&out);
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0]["source"], "learning");
    assert_eq!(hits[0]["title"], "Never log the request body");
    // By meaning alone too (no word in common).
    let out = env.ok(
        "mem-search",
        &[
            "--type",
            "learning",
            "--project",
            PROJECT,
            "--engine",
            "vector",
            "printing HTTP payloads",
            "--format",
            "jsonl",
        ],
        b"",
    );
    assert_eq!(jsonl(&out)[0]["title"], "Never log the request body");
    let other = env.run(
        "mem-search",
        &[
            "--type",
            "learning",
            "--project",
            "/tmp/elsewhere",
            "request body",
        ],
        b"",
    );
    assert_eq!(other.status.code(), Some(1), "{}", show(&other));
}

#[test]
fn claude_cli_extraction_goes_through_the_users_claude() {
    let env = Env::new();
    let answer = json!({"type": "result", "is_error": false, "result": "",
        "structured_output": {"learnings": [
            {"content": "Release with make release VERSION=x.y.z", "category": "convention",
             "confidence": 0.9, "reason": "the user did it twice"}]},
        "usage": {"input_tokens": 3, "cache_read_input_tokens": 300, "output_tokens": 20}});
    let (fake, seen) = crate::compress::fake_claude(&env, &answer, 0, "", 0);
    let env = env
        .set("MEM_LLM", "claude-cli")
        .set("MEM_CLAUDE_BIN", fake.to_str().unwrap());
    let recs = learn_session(&env, "s1", "Cut the release");
    let l: Vec<&Value> = recs.iter().filter(|r| r["type"] == "learning").collect();
    assert_eq!(l.len(), 1, "{recs:?}");
    assert_eq!(
        (l[0]["outcome"].as_str(), l[0]["by"].as_str()),
        (Some("inserted"), Some("claude-cli"))
    );
    assert_eq!(recs.last().unwrap()["counts"]["tokens_in"], 303);
    let got = std::fs::read_to_string(&seen).unwrap();
    assert!(
        got.contains("[--system-prompt]\n[You extract durable project knowledge"),
        "{got}"
    );
}

/// A session in `cwd` whose user types `prompt` and whose agent runs each of `commands`
/// successfully, then stops.
fn commands_session(env: &Env, cwd: &str, id: &str, prompt: &str, commands: &[&str]) {
    let base = json!({"session_id": id, "cwd": cwd, "transcript_path": "/nonexistent.jsonl"});
    let with = |extra: Value| crate::event(&base, extra);
    env.ok(
        "mem-capture",
        &["--hook"],
        &with(json!({"hook_event_name": "UserPromptSubmit", "prompt": prompt})),
    );
    for (i, c) in commands.iter().enumerate() {
        env.ok(
            "mem-capture",
            &["--hook"],
            &with(json!({"hook_event_name": "PostToolUse",
            "tool_name": "Bash", "tool_use_id": format!("b-{id}-{i}"),
            "tool_input": {"command": c, "description": "run it"},
            "tool_response": {"stdout": "ok", "stderr": "", "interrupted": false}})),
        );
    }
    env.ok(
        "mem-capture",
        &["--hook"],
        &with(json!({"hook_event_name": "Stop", "last_assistant_message": "Done."})),
    );
}

/// The lines of the block's learnings layer, and the layer's report.
fn learnings_layer(env: &Env, project: &str) -> (Vec<String>, Value) {
    let out = env.ok(
        "mem-context",
        &["--project", project, "--format", "json"],
        b"",
    );
    let rec: Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = rec["text"].as_str().unwrap();
    let lines = text
        .split("## Project learnings\n")
        .nth(1)
        .unwrap_or_else(|| panic!("no learnings layer in {text}"))
        .lines()
        .take_while(|l| l.starts_with("- "))
        .map(str::to_string)
        .collect();
    let layer = rec["layers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == "learnings")
        .unwrap()
        .clone();
    (lines, layer)
}

#[test]
fn stated_rules_come_first_commands_fold_and_none_goes_against_a_rule() {
    let env = Env::new();
    let root = "/tmp/tspec";
    // Twenty `cargo build` runs in ten sessions, written the ways an agent writes them; the
    // user asks for tspec in the fourth; tspec's own commands and git's housekeeping meanwhile.
    let builds = [
        "cargo build 2>&1",
        "cargo build 2>&1 | tail -20",
        "cd /tmp/tspec && cargo build",
        "timeout 300 cargo build 2>&1 | grep -E 'error|warning'",
    ];
    for s in 0..10 {
        let prompt = if s == 3 {
            "The build is red again. Use tspec instead of cargo, please."
        } else {
            "Fix the next failing check"
        };
        let mut cmds = vec![builds[s % 4], builds[(s + 1) % 4]];
        cmds.extend([
            "tspec test -p tspec 2>&1 | tail -30",
            "tspec clippy 2>&1",
            "git -C /tmp/tspec status",
            "git add -A && git commit -m wip",
        ]);
        if s % 2 == 0 {
            cmds.push("tspec install --path /tmp/tspec 2>&1");
        }
        commands_session(&env, root, &format!("t{s}"), prompt, &cmds);
    }
    learn(&env);
    let list_of = |extra: &[&str]| {
        let mut args = vec!["list", "--project", root, "--format", "jsonl"];
        args.extend_from_slice(extra);
        jsonl(&env.ok("mem-learn", &args, b""))
    };
    let rows = list_of(&[]);
    // Plumbing variants are one learning each; git's housekeeping is none.
    let contents: Vec<&str> = rows
        .iter()
        .map(|r| r["content"].as_str().unwrap())
        .collect();
    let with = |w: &str| contents.iter().filter(|c| c.contains(w)).count();
    assert_eq!(with("`cargo build`"), 1, "{contents:#?}");
    assert_eq!(with("cargo build"), 1, "{contents:#?}");
    assert_eq!(with("tspec test"), 1, "{contents:#?}");
    assert_eq!(with("git"), 0, "{contents:#?}");
    assert!(
        !contents
            .iter()
            .any(|c| c.contains("2>&1") || c.contains("| tail"))
    );
    assert!(contents.contains(&"Sessions here run `tspec install --path .`"));
    // The command learning is contradicted by the rule, which the list names with its evidence.
    let rule = rows
        .iter()
        .find(|r| r["content"] == "Use tspec instead of cargo, please")
        .expect("the stated rule");
    assert_eq!(rule["kind"], "rule");
    assert!(
        rule["evidence"]
            .as_str()
            .unwrap()
            .contains("The build is red again")
    );
    let cargo = rows
        .iter()
        .find(|r| r["content"] == "Sessions here run `cargo build`")
        .unwrap();
    assert_eq!(cargo["kind"], "command");
    assert_eq!(
        cargo["contradicted_by"],
        format!(
            "{}: Use tspec instead of cargo, please",
            rule["ref"].as_str().unwrap()
        )
    );
    assert!(cargo["times_seen"].as_i64().unwrap() > rule["times_seen"].as_i64().unwrap());
    assert!(cargo["confidence"].as_f64().unwrap() > rule["confidence"].as_f64().unwrap());
    let table = String::from_utf8_lossy(
        &env.ok("mem-learn", &["list", "--project", root], b"")
            .stdout,
    )
    .to_string();
    assert!(
        table.contains("contradicted_by") && table.contains(": Use tspec instead"),
        "{table}"
    );

    // The block: the rule first, though less confident than the commands; one commands line,
    // tspec's, most used first; nothing of cargo but the rule.
    let (lines, layer) = learnings_layer(&env, root);
    assert_eq!(
        lines,
        [
            "- [convention] Use tspec instead of cargo, please",
            "- Usual commands: `tspec test -p tspec` · `tspec clippy` · `tspec install --path .`",
            "- 1 more: `mem-learn list`",
        ],
        "{layer}"
    );

    // Many rules: the layer stays within its cap and says how many more the list holds.
    for i in 0..14 {
        env.ok(
            "mem-learn",
            &[
                "add",
                &format!("Rule {i}: keep every public function of module {i} documented with an example that compiles and runs"),
                "--project",
                root,
            ],
            b"",
        );
    }
    let (lines, layer) = learnings_layer(&env, root);
    assert!(
        layer["tokens"].as_u64().unwrap() <= layer["cap"].as_u64().unwrap(),
        "{layer}"
    );
    let shown = lines.len() - 1;
    let total = list_of(&[]).len();
    assert_eq!(
        lines.last().unwrap(),
        &format!("- {} more: `mem-learn list`", total - shown),
        "{lines:#?}"
    );
    // Rules typed by hand first, the commands line only if room remains: at most one.
    assert!(lines[0].starts_with("- [convention] Rule "), "{lines:#?}");
    assert!(
        lines
            .iter()
            .filter(|l| l.contains("Usual commands"))
            .count()
            <= 1
    );
    assert!(!lines.iter().any(|l| l.contains("cargo build")));
}
