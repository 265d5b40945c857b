//! mem-capture: hooks, transcripts, notes, hostile input, concurrency.

use std::collections::BTreeMap;
use std::process::Stdio;

use serde_json::{Value, json};

use crate::{Env, fixtures, jsonl, show};

fn payload_files() -> Vec<Value> {
    let dir = fixtures().join("hook-payloads/attio-mcp-server");
    let mut all = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.file_name().unwrap() == "chat.json" {
            continue; // a transcript dump, not payloads
        }
        let arr: Vec<Value> = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
        all.extend(arr);
    }
    all
}

/// The documented skip rule, restated independently of the implementation.
fn skipped(p: &Value) -> bool {
    let tool = p["tool_name"].as_str().unwrap_or("");
    if ["TodoRead", "TodoWrite", "LS"].contains(&tool) {
        return true;
    }
    let len = |v: &Value| match v {
        Value::Null => 0,
        Value::String(s) => s.chars().count(),
        v => v.to_string().chars().count(),
    };
    len(&p["tool_input"]) + len(&p["tool_response"]) < 50
}

#[test]
fn every_fixture_payload_is_stored_as_documented() {
    let env = Env::new();
    let payloads = payload_files();
    assert!(
        payloads.len() > 900,
        "fixture set shrank: {}",
        payloads.len()
    );
    let mut by_event: BTreeMap<String, i64> = BTreeMap::new();
    let mut queued_by_tool: BTreeMap<String, i64> = BTreeMap::new();
    let mut queued_events: BTreeMap<String, i64> = BTreeMap::new();
    for p in &payloads {
        let out = env.run("mem-capture", &["--hook"], p.to_string().as_bytes());
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert!(
            out.stdout.is_empty(),
            "hook printed on stdout: {}",
            show(&out)
        );
        let ev = p["hook_event_name"].as_str().unwrap().to_string();
        *by_event.entry(ev.clone()).or_default() += 1;
        match ev.as_str() {
            "PostToolUse" if !skipped(p) => {
                *queued_by_tool
                    .entry(p["tool_name"].as_str().unwrap().into())
                    .or_default() += 1;
                *queued_events.entry(ev).or_default() += 1;
            }
            "UserPromptSubmit" | "PreCompact" | "SubagentStop" | "Stop" => {
                *queued_events.entry(ev).or_default() += 1
            }
            _ => {}
        }
    }
    // A hook that missed its deadline on a loaded machine spooled its payload (documented: the
    // next hook stores it, with a 'spooled' row): drain what is left with logged-only events.
    let spool = env.home().join("spool");
    for i in 0..20 {
        let left = std::fs::read_dir(&spool).map_or(0, |d| d.count());
        if left == 0 {
            break;
        }
        let drain = serde_json::json!({"hook_event_name": "Notification", "session_id": format!("drain-{i}"),
                                       "message": "drain", "cwd": "/tmp"});
        env.ok("mem-capture", &["--hook"], drain.to_string().as_bytes());
        *by_event.entry("Notification".into()).or_default() += 1;
    }
    let mut got_log: BTreeMap<String, i64> =
        env.pairs("SELECT event, count(*) FROM event_log GROUP BY event");
    got_log.remove("spooled");
    assert_eq!(got_log, by_event, "event_log counts by event");
    let got_q: BTreeMap<String, i64> =
        env.pairs("SELECT event, count(*) FROM pending_queue GROUP BY event");
    assert_eq!(got_q, queued_events, "queue counts by event");
    let got_tools: BTreeMap<String, i64> = env.pairs(
        "SELECT tool_name, count(*) FROM pending_queue WHERE tool_name IS NOT NULL GROUP BY tool_name",
    );
    assert_eq!(got_tools, queued_by_tool, "queue counts by tool");
    let sessions: std::collections::BTreeSet<&str> = payloads
        .iter()
        .filter(|p| {
            !["PreToolUse", "Notification"].contains(&p["hook_event_name"].as_str().unwrap())
        })
        .map(|p| p["session_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        env.count("SELECT count(*) FROM sessions") as usize,
        sessions.len()
    );
    assert_eq!(
        env.count("SELECT count(*) FROM sessions WHERE project = '/Users/kesslerio/GDrive/Projects/attio-mcp-server'") as usize,
        sessions.len()
    );
}

fn count_tool_uses(dir: &std::path::Path) -> usize {
    let mut n = 0;
    for f in memkit::transcript::find_files(dir).unwrap() {
        for line in std::fs::read_to_string(f)
            .unwrap()
            .lines()
            .filter(|l| !l.trim().is_empty())
        {
            let v: Value = serde_json::from_str(line).unwrap();
            if let Some(blocks) = v["message"]["content"].as_array() {
                n += blocks.iter().filter(|b| b["type"] == "tool_use").count();
            }
        }
    }
    n
}

#[test]
fn transcripts_import_pairs_every_call_and_reimport_adds_nothing() {
    let env = Env::new();
    let dir = fixtures().join("transcripts");
    let out = env.ok(
        "mem-capture",
        &["--transcripts", dir.to_str().unwrap()],
        b"",
    );
    let recs = jsonl(&out);
    let summary = recs.last().unwrap();
    assert_eq!(summary["type"], "summary");
    let c = &summary["counts"];
    let tool_uses = count_tool_uses(&dir);
    assert_eq!(c["tool_calls"].as_u64().unwrap() as usize, tool_uses);
    assert_eq!(c["unpaired"], 0);
    assert_eq!(c["bad_lines"], 0);
    let tool_rows =
        env.count("SELECT count(*) FROM pending_queue WHERE tool_name IS NOT NULL") as usize;
    assert_eq!(
        tool_rows + c["skipped"].as_u64().unwrap() as usize,
        tool_uses,
        "queued + skipped = every tool_use"
    );
    // Every queued call carries its result: a response, or the error of a failed call.
    assert_eq!(
        env.count(
            "SELECT count(*) FROM pending_queue WHERE tool_name IS NOT NULL
             AND json_extract(payload, '$.tool_response') IS NULL AND json_extract(payload, '$.error') IS NULL"
        ),
        0
    );
    assert!(env.count("SELECT count(*) FROM pending_queue WHERE event = 'PostToolUseFailure'") > 0);
    // Subagent calls are attached to their parent session.
    let parent = "ef958aa1-0e93-49f0-bb71-150f63befcd1";
    assert!(env.count(&format!("SELECT count(*) FROM pending_queue WHERE session_id = '{parent}' AND agent_id IS NOT NULL")) > 0);
    assert_eq!(
        env.count("SELECT count(*) FROM sessions WHERE session_id LIKE 'agent-%'"),
        0
    );
    // Sessions carry cwd, branch and times.
    assert!(
        env.count(
            "SELECT count(*) FROM sessions WHERE branch IS NOT NULL AND started_at IS NOT NULL"
        ) > 0
    );
    assert!(
        env.count("SELECT count(*) FROM sessions WHERE title IS NOT NULL") > 0,
        "summary lines become titles"
    );

    let rows = env.count("SELECT count(*) FROM pending_queue");
    let again = env.ok(
        "mem-capture",
        &["--transcripts", dir.to_str().unwrap()],
        b"",
    );
    let again = jsonl(&again);
    let c2 = &again.last().unwrap()["counts"];
    assert_eq!(c2["queued"], 0);
    // Nothing was read again: every file is as it was imported.
    assert_eq!(c2["files"], 0);
    assert_eq!(c2["files_unchanged"], c["files"]);
    assert_eq!(env.count("SELECT count(*) FROM pending_queue"), rows);
}

#[test]
fn an_import_killed_mid_way_resumes_where_it_stopped_and_ends_as_an_uninterrupted_one() {
    let tmp = tempfile::tempdir().unwrap();
    let hist = tmp.path().join("projects");
    let h = memkit_testkit::transcripts::history(
        &fixtures().join("transcripts"),
        &hist,
        15_000_000,
        11,
        4,
        2 * 365,
        0,
    )
    .unwrap();
    let hist = hist.to_str().unwrap();
    let whole = Env::new();
    whole.ok("mem-capture", &["-q", "--transcripts", hist], b"");

    let env = Env::new();
    let mut child = env
        .cmd("mem-capture")
        .args(["-q", "--transcripts", hist])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let done = |env: &Env| {
        let db = env.db_path();
        if !db.exists() {
            return 0;
        }
        let c = rusqlite::Connection::open(db).unwrap();
        c.busy_timeout(std::time::Duration::from_secs(5)).unwrap();
        c.query_row("SELECT count(*) FROM transcript_files", [], |r| {
            r.get::<_, i64>(0)
        })
        .unwrap_or(0)
    };
    for _ in 0..3000 {
        if done(&env) >= 3 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let imported = done(&env);
    assert!(
        imported >= 3 && (imported as usize) < h.files,
        "killed after {imported} of {} files",
        h.files
    );

    let out = env.ok("mem-capture", &["--transcripts", hist], b"");
    let c = jsonl(&out).last().unwrap()["counts"].clone();
    // The files stored before the kill are not read again.
    assert_eq!(c["files_unchanged"], imported, "{c}");
    assert_eq!(
        c["files"].as_i64().unwrap(),
        h.files as i64 - imported,
        "{c}"
    );
    for sql in [
        "SELECT count(*) FROM pending_queue",
        "SELECT count(DISTINCT dedup_key) FROM pending_queue",
        "SELECT sum(length(payload)) FROM pending_queue",
        "SELECT count(*) FROM sessions",
        "SELECT count(*) FROM sessions WHERE title IS NOT NULL",
        "SELECT count(*) FROM sessions WHERE started_at IS NOT NULL AND branch IS NOT NULL",
        "SELECT count(*) FROM transcript_files WHERE summaries IS NULL",
    ] {
        assert_eq!(env.count(sql), whole.count(sql), "{sql}");
    }
    assert!(whole.count("SELECT count(*) FROM sessions WHERE title IS NOT NULL") > 0);
}

#[test]
fn edge_case_transcripts_import_cleanly() {
    let env = Env::new();
    let base = fixtures().join("transcripts/claude-code-log");
    let empty = base
        .join("-Users-dain-workspace-JSSoundRecorder/2c5941bd-b9de-41d6-9414-221d175776f7.jsonl");
    let summary_only = base.join(
        "-Users-dain-workspace-claude-code-log-sample/4e27c414-a885-46a0-b5c8-d58e1417377d.jsonl",
    );
    let snapshot_only = base.join("-experiments-ideas/a95fea4a-b88a-4e49-ac07-4cc323d8700c.jsonl");
    for f in [&empty, &summary_only, &snapshot_only] {
        let out = env.ok("mem-capture", &["--transcript", f.to_str().unwrap()], b"");
        assert_eq!(jsonl(&out).last().unwrap()["counts"]["queued"], 0, "{f:?}");
    }
}

#[test]
fn bad_transcript_lines_are_named_and_the_rest_is_kept() {
    let env = Env::new();
    let src = fixtures().join("transcripts/spotter/short.jsonl");
    let mut text = std::fs::read_to_string(src).unwrap();
    let good = text.lines().count();
    text.push_str("{not json\n");
    let f = env.dir.path().join("broken.jsonl");
    std::fs::write(&f, text).unwrap();
    let out = env.run("mem-capture", &["--transcript", f.to_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(3), "{}", show(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("broken.jsonl:{}", good + 1)), "{err}");
    assert!(
        env.count("SELECT count(*) FROM pending_queue") > 0,
        "good lines kept"
    );
}

fn post_tool_use(session: &str, response: Value) -> Value {
    json!({
        "session_id": session, "hook_event_name": "PostToolUse", "cwd": "/tmp/proj",
        "tool_name": "Bash", "tool_input": {"command": "cargo test --all-features"},
        "tool_response": response, "tool_use_id": format!("toolu_{session}")
    })
}

#[test]
fn hostile_hook_input_never_fails_and_loses_nothing() {
    let env = Env::new();
    env.ok(
        "mem-capture",
        &["--hook"],
        post_tool_use("s1", json!({"stdout": "all 12 tests passed"}))
            .to_string()
            .as_bytes(),
    );
    assert_eq!(env.count("SELECT count(*) FROM pending_queue"), 1);
    let big = "x".repeat(50 * 1024 * 1024);
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty", Vec::new()),
        ("invalid json", b"{\"session_id\": ".to_vec()),
        ("array", b"[1,2]".to_vec()),
        ("non-utf8", [b"{\"session_id\":\"s2\",\"hook_event_name\":\"UserPromptSubmit\",\"prompt\":\"caf".to_vec(), vec![0xff, 0xfe], b" au lait\"}".to_vec()].concat()),
        ("unknown event", br#"{"session_id":"s3","hook_event_name":"FutureEvent","cwd":"/tmp/proj"}"#.to_vec()),
        ("missing session_id", br#"{"hook_event_name":"PostToolUse","tool_name":"Bash"}"#.to_vec()),
        ("windows path", json!({"session_id":"s4","hook_event_name":"PostToolUse","cwd":"C:\\Users\\dev\\proj","tool_name":"Edit","tool_input":{"file_path":"src\\main.rs","old_string":"a","new_string":"b"},"tool_response":{"filePath":"C:\\Users\\dev\\proj\\src\\main.rs"},"tool_use_id":"toolu_w"}).to_string().into_bytes()),
        ("50 MB response", post_tool_use("s5", json!({"stdout": big})).to_string().into_bytes()),
    ];
    for (name, input) in &cases {
        let out = env.run("mem-capture", &["--hook"], input);
        assert_eq!(out.status.code(), Some(0), "{name}: {}", show(&out));
        assert!(out.stdout.is_empty(), "{name}: stdout must stay empty");
    }
    let conn = env.db();
    assert_eq!(
        env.count("SELECT count(*) FROM pending_queue WHERE session_id = 's1'"),
        1,
        "earlier row kept"
    );
    let prompt: String = conn
        .query_row(
            "SELECT json_extract(payload,'$.prompt') FROM pending_queue WHERE session_id='s2'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(
        prompt.starts_with("caf") && prompt.ends_with("au lait"),
        "{prompt}"
    );
    assert_eq!(
        env.count("SELECT count(*) FROM event_log WHERE event = 'FutureEvent'"),
        1
    );
    assert_eq!(
        env.count("SELECT count(*) FROM pending_queue WHERE session_id = 's3'"),
        0
    );
    assert_eq!(
        env.count("SELECT count(*) FROM event_log WHERE level = 'error'"),
        4,
        "empty, invalid, array, missing id"
    );
    let files: String = conn
        .query_row(
            "SELECT files FROM pending_queue WHERE session_id='s4'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(files, r#"["C:\\Users\\dev\\proj\\src\\main.rs"]"#);
    let size: i64 = conn
        .query_row(
            "SELECT length(payload) FROM pending_queue WHERE session_id='s5'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(
        size < 100_000,
        "a 50 MB response is stored cut to head and tail, got {size}"
    );
    let log = std::fs::read_to_string(env.home().join("logs/mem-capture.log")).unwrap();
    assert!(
        log.contains("empty payload") && log.contains("invalid JSON"),
        "{log}"
    );
}

#[test]
fn a_locked_database_spools_and_the_next_hook_stores_it() {
    let env = Env::new();
    env.ok(
        "mem-capture",
        &["--hook"],
        post_tool_use("a", json!({"stdout": "first call output, long enough"}))
            .to_string()
            .as_bytes(),
    );
    let conn = env.db();
    conn.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let out = env.run(
        "mem-capture",
        &["--hook"],
        post_tool_use("b", json!({"stdout": "made while the db was locked"}))
            .to_string()
            .as_bytes(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    conn.execute_batch("ROLLBACK").unwrap();
    let spooled = std::fs::read_dir(env.home().join("spool")).unwrap().count();
    assert_eq!(spooled, 1);
    env.ok(
        "mem-capture",
        &["--hook"],
        post_tool_use("c", json!({"stdout": "after the lock was released"}))
            .to_string()
            .as_bytes(),
    );
    assert_eq!(
        env.count("SELECT count(*) FROM pending_queue WHERE session_id IN ('a','b','c')"),
        3
    );
    assert_eq!(
        std::fs::read_dir(env.home().join("spool")).unwrap().count(),
        0
    );
    let log = std::fs::read_to_string(env.home().join("logs/mem-capture.log")).unwrap();
    assert!(log.contains("payload spooled"), "{log}");
}

#[test]
fn an_unopenable_database_still_exits_zero() {
    let env = Env::new();
    std::fs::create_dir_all(env.db_path()).unwrap(); // a directory where the file should be
    let out = env.run(
        "mem-capture",
        &["--hook"],
        post_tool_use("x", json!({"stdout": "some output that matters"}))
            .to_string()
            .as_bytes(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(out.stdout.is_empty());
    assert_eq!(
        std::fs::read_dir(env.home().join("spool")).unwrap().count(),
        1,
        "payload kept in the spool"
    );
}

#[test]
fn fifty_concurrent_hooks_lose_nothing() {
    let env = Env::new();
    let children: Vec<_> = (0..50)
        .map(|i| {
            let mut c = env.cmd("mem-capture");
            c.arg("--hook")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            let mut child = c.spawn().unwrap();
            let p = post_tool_use(
                &format!("c{i}"),
                json!({"stdout": format!("output number {i} of the concurrent run")}),
            );
            std::io::Write::write_all(child.stdin.as_mut().unwrap(), p.to_string().as_bytes())
                .unwrap();
            drop(child.stdin.take());
            child
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    }
    assert_eq!(env.count("SELECT count(*) FROM pending_queue"), 50);
    // Each event once; under load a hook may spool its payload for the next one to store, which
    // adds a 'spooled' warning beside the event (what mem doctor reports), not a second event.
    assert_eq!(
        env.count("SELECT count(*) FROM event_log WHERE event != 'spooled'"),
        50
    );
    assert!(
        !env.home().join("spool").exists()
            || std::fs::read_dir(env.home().join("spool")).unwrap().count() == 0
    );
}

#[test]
fn secrets_are_redacted_before_storage() {
    let env = Env::new();
    let p = json!({"session_id":"r","hook_event_name":"PostToolUse","cwd":"/tmp/p","tool_name":"Bash",
        "tool_input":{"command":"export ANTHROPIC_API_KEY=sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123"},
        "tool_response":{"stdout":"password=hunter22 <private>my home address</private> ok"}});
    env.ok("mem-capture", &["--hook"], p.to_string().as_bytes());
    let payload: String = env
        .db()
        .query_row("SELECT payload FROM pending_queue", [], |r| r.get(0))
        .unwrap();
    for secret in ["sk-ant-api03", "hunter22", "home address"] {
        assert!(!payload.contains(secret), "{secret} leaked: {payload}");
    }
    assert!(payload.contains("[REDACTED:anthropic_key]") && payload.contains("[REDACTED:private]"));
}

#[test]
fn disable_and_exclude_store_nothing() {
    let env = Env::new().set("MEM_DISABLE", "1");
    env.ok(
        "mem-capture",
        &["--hook"],
        post_tool_use("d", json!({"stdout": "should not be stored at all"}))
            .to_string()
            .as_bytes(),
    );
    assert!(!env.db_path().exists());
    let env = Env::new().set("MEM_EXCLUDE", "/tmp/pro*,other");
    env.ok(
        "mem-capture",
        &["--hook"],
        post_tool_use("e", json!({"stdout": "should not be stored at all"}))
            .to_string()
            .as_bytes(),
    );
    let mut keep = post_tool_use("f", json!({"stdout": "stored because not excluded"}));
    keep["cwd"] = json!("/srv/kept");
    env.ok("mem-capture", &["--hook"], keep.to_string().as_bytes());
    assert_eq!(env.count("SELECT count(*) FROM pending_queue"), 1);
    assert_eq!(
        env.count("SELECT count(*) FROM event_log WHERE session_id = 'e'"),
        0
    );
}

#[test]
fn skip_tools_can_be_overridden() {
    let env = Env::new().set("MEM_SKIP_TOOLS", "Bash");
    env.ok(
        "mem-capture",
        &["--hook"],
        post_tool_use("s", json!({"stdout": "skipped because Bash is listed"}))
            .to_string()
            .as_bytes(),
    );
    assert_eq!(env.count("SELECT count(*) FROM pending_queue"), 0);
    let todo = json!({"session_id":"s","hook_event_name":"PostToolUse","tool_name":"TodoWrite","tool_input":{"todos":[{"content":"write the tests first, then the code"}]},"tool_response":{}});
    env.ok("mem-capture", &["--hook"], todo.to_string().as_bytes());
    assert_eq!(
        env.count("SELECT count(*) FROM pending_queue WHERE tool_name='TodoWrite'"),
        1
    );
}

#[test]
fn session_lifecycle_and_priorities() {
    let env = Env::new();
    let s = |v: Value| env.ok("mem-capture", &["--hook"], v.to_string().as_bytes());
    s(
        json!({"session_id":"L","hook_event_name":"SessionStart","source":"startup","cwd":"/tmp/lp","transcript_path":"/tmp/t.jsonl"}),
    );
    s(
        json!({"session_id":"L","hook_event_name":"UserPromptSubmit","prompt":"fix the flaky login test"}),
    );
    s(
        json!({"session_id":"L","hook_event_name":"PostToolUse","cwd":"/tmp/lp","tool_name":"Read","tool_input":{"file_path":"tests/login.rs"},"tool_response":{"file":{"content":"fn login() {}"}}}),
    );
    s(json!({"session_id":"L","hook_event_name":"Stop","last_assistant_message":"Fixed it."}));
    s(json!({"session_id":"L","hook_event_name":"SessionEnd","reason":"prompt_input_exit"}));
    let conn = env.db();
    let (status, tp, msg): (String, String, String) = conn
        .query_row("SELECT status, transcript_path, last_assistant_message FROM sessions WHERE session_id='L'", [], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap();
    assert_eq!(
        (status.as_str(), tp.as_str(), msg.as_str()),
        ("ended", "/tmp/t.jsonl", "Fixed it.")
    );
    let prio: Vec<(String, String)> =
        env.pairs("SELECT event, priority FROM pending_queue ORDER BY id");
    assert_eq!(
        prio,
        vec![
            ("UserPromptSubmit".into(), "high".into()),
            ("PostToolUse".into(), "low".into()),
            ("Stop".into(), "normal".into())
        ]
    );
    let pending: i64 = conn
        .query_row(
            "SELECT json_extract(payload,'$.pending_count') FROM pending_queue WHERE event='Stop'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(pending, 2);
    let files: String = conn
        .query_row(
            "SELECT files FROM pending_queue WHERE tool_name='Read'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(files, r#"["/tmp/lp/tests/login.rs"]"#);
    // A resume reopens the session.
    s(json!({"session_id":"L","hook_event_name":"SessionStart","source":"resume"}));
    assert_eq!(env.count("SELECT count(*) FROM sessions WHERE session_id='L' AND status='active' AND ended_at IS NULL"), 1);
}

#[test]
fn notes_are_stored_at_high_priority() {
    let env = Env::new()
        .set("MEM_MODELS", crate::embed::models().to_str().unwrap())
        .set("MEM_EMBED_MODEL", "minilm-l6");
    let out = env.ok(
        "mem-capture",
        &[
            "--note",
            "deploys need the VPN up",
            "--tags",
            "ops,deploy",
            "--project",
            "/srv/app",
        ],
        b"",
    );
    let rec = &jsonl(&out)[0];
    assert_eq!(rec["type"], "capture");
    assert_eq!(rec["event"], "Note");
    assert_eq!(rec["priority"], "high");
    assert_eq!(rec["payload"]["tags"], json!(["ops", "deploy"]));
    assert_eq!(rec["project"], "/srv/app");
    // The user is told when it becomes searchable…
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("becomes searchable once `mem pipeline` has run"),
        "{err}"
    );
    assert_eq!(env.count("SELECT count(*) FROM observations"), 0);
    // …and --pipeline makes it so now, stdout still carrying only the capture record.
    let out = env.ok(
        "mem-capture",
        &[
            "--note",
            "the staging DB is read-only on Fridays",
            "--project",
            "/srv/app",
            "--pipeline",
        ],
        b"",
    );
    assert_eq!(jsonl(&out).len(), 1, "{}", show(&out));
    assert_eq!(
        env.count("SELECT count(*) FROM observations WHERE is_manual = 1"),
        2
    );
    let q = env.run(
        "mem-capture",
        &["-q", "--note", "quiet one", "--project", "/srv/app"],
        b"",
    );
    assert!(q.stderr.is_empty(), "{}", show(&q));
}

#[test]
fn a_newer_database_is_refused_untouched() {
    let env = Env::new();
    env.ok("mem-capture", &["--note", "first"], b"");
    env.db().execute_batch("PRAGMA user_version = 999").unwrap();
    let before = std::fs::read(env.db_path()).unwrap();
    let out = env.run("mem-capture", &["--note", "second"], b"");
    assert_eq!(out.status.code(), Some(4), "{}", show(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("newer than this memkit"));
    assert_eq!(std::fs::read(env.db_path()).unwrap(), before);
}

#[test]
fn the_wal_stays_short_across_many_hook_processes() {
    // Each hook is a new process whose first connection rebuilds the WAL index from the whole
    // WAL; SQLite's auto-checkpoint alone never rewinds the file between processes, so without
    // memkit's own truncation it grows by every hook's pages and every hook reads all of it.
    // Past 1 MiB a hook starts `mem-capture --checkpoint` in the background to empty it.
    let env = Env::new();
    let out = "test output line\n".repeat(600);
    for i in 0..60 {
        let mut p = post_tool_use(&format!("w{}", i % 3), json!({"stdout": out}));
        p["tool_use_id"] = json!(format!("toolu_w{i}"));
        env.ok("mem-capture", &["--hook"], p.to_string().as_bytes());
    }
    assert_eq!(env.count("SELECT count(*) FROM pending_queue"), 60);
    // Hooks leave the checkpoint to a background process: give the last one time to finish.
    let wal_size = || std::fs::metadata(env.home().join("mem.db-wal")).map_or(0, |m| m.len());
    for _ in 0..100 {
        if wal_size() < 3 << 19 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let wal = wal_size();
    let db = std::fs::metadata(env.db_path()).unwrap().len();
    assert!(
        wal < 3 << 19,
        "WAL is {wal} bytes after 60 hooks (db {db}): it should be truncated past 1 MiB"
    );
    assert!(
        db > 100_000,
        "checkpointed pages reach the database file ({db} bytes)"
    );
}

#[test]
fn the_hook_binary_links_no_search_side_and_no_cpp_runtime() {
    // Every hook pays for what mem-capture links: a C++ runtime costs more than half a
    // millisecond of start-up per process. The library's other tools do link the search side.
    let names = |tool: &str| {
        let bytes = std::fs::read(crate::bin(tool)).unwrap();
        ["libstdc++", "tantivy", "tokenizers"]
            .into_iter()
            .filter(|n| memchr::memmem::find(&bytes, n.as_bytes()).is_some())
            .collect::<Vec<_>>()
    };
    assert_eq!(names("mem-capture"), Vec::<&str>::new());
    let search = names("mem-search");
    assert!(
        search.contains(&"tokenizers") && search.contains(&"tantivy"),
        "the check sees them where they are: {search:?}"
    );
}

#[test]
fn a_long_payload_stream_is_stored_batch_by_batch_past_a_bad_line() {
    let env = Env::new();
    let mut input = String::new();
    for i in 0..1201 {
        if i == 600 {
            input.push_str("{\"session_id\": \n");
        } else {
            input.push_str(&format!(
                "{{\"session_id\":\"s\",\"hook_event_name\":\"UserPromptSubmit\",\"prompt\":\"prompt number {i}\"}}\n"
            ));
        }
    }
    let out = env.run("mem-capture", &["-"], input.as_bytes());
    assert_eq!(out.status.code(), Some(3), "{}", show(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("<stdin>:601: invalid JSON"));
    assert_eq!(env.count("SELECT count(*) FROM pending_queue"), 1200);
    let s = jsonl(&out).pop().unwrap();
    assert_eq!(s["counts"]["bad_lines"], 1, "{s}");
    assert_eq!(s["counts"]["events"], 1200, "{s}");
}

#[test]
fn wrappers_are_kept_as_wrappers_never_as_the_users_request() {
    let env = Env::new();
    let s = |prompt: &str| {
        env.ok(
            "mem-capture",
            &["--hook"],
            json!({"session_id":"W","hook_event_name":"UserPromptSubmit","cwd":"/tmp/w","prompt":prompt})
                .to_string()
                .as_bytes(),
        )
    };
    s("<teammate-message teammate_id=\"lead\">{\"type\":\"idle_notification\"}</teammate-message>");
    s(
        "<command-message>init is analyzing your codebase…</command-message>\n<command-name>/init</command-name>",
    );
    s("<local-command-stdout>Compacted</local-command-stdout>");
    s("<system-reminder>The user opened src/a.rs</system-reminder>");
    s("fix the flaky login test");
    let rows: Vec<(String, String)> = env.pairs(
        "SELECT event, coalesce(json_extract(payload, '$.wrapper'), json_extract(payload, '$.prompt'))
         FROM pending_queue ORDER BY id",
    );
    let events: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(
        events,
        [
            "Wrapper",
            "Wrapper",
            "Wrapper",
            "Wrapper",
            "UserPromptSubmit"
        ],
        "{rows:?}"
    );
    assert_eq!(rows[4].1, "fix the flaky login test");

    // Imported transcripts: no observation or session summary is wrapper text (a command with
    // arguments stays a request, stored raw as it came).
    let env = Env::new();
    let dir = fixtures().join("transcripts");
    env.ok(
        "mem-capture",
        &["-q", "--transcripts", dir.to_str().unwrap()],
        b"",
    );
    env.ok("mem-compress", &["-q"], b"");
    for (what, sql) in [
        ("title", "SELECT title, '' FROM observations"),
        ("summary", "SELECT summary, '' FROM observations"),
        (
            "session",
            "SELECT coalesce(summary, '') || coalesce(title, ''), '' FROM sessions",
        ),
    ] {
        let texts: Vec<(String, String)> = env.pairs(sql);
        for (t, _) in texts {
            for w in [
                "<command-",
                "<local-command",
                "<system-reminder",
                "<task-notification",
                "Caveat: The messages below",
            ] {
                assert!(!t.contains(w), "{what} holds {w}: {t}");
            }
        }
    }
    assert!(env.count("SELECT count(*) FROM pending_queue WHERE event = 'Wrapper'") > 0);
}
