//! `mem-eval compression` and `mem-eval health` on the fixture transcripts, captured and
//! compressed by the real binaries (heuristic), with problems planted in copies of the store.

use serde_json::Value;

use crate::{Env, copy_dir, jsonl, show};

/// The fixture transcripts captured, compressed (heuristic) and indexed.
fn fixture_store() -> Env {
    let env = Env::new();
    env.import_fixtures();
    env.ok("mem-compress", &["-q"], b"");
    env.ok("mem-index", &["-q"], b"");
    env
}

/// A new environment holding a copy of `env`'s data home.
fn copy_of(env: &Env) -> Env {
    let c = Env::new();
    copy_dir(&env.home(), &c.home());
    c
}

/// The eval_compression records by title, and the summary record.
fn compression(env: &Env, args: &[&str]) -> (Vec<Value>, Value) {
    let mut a = vec!["compression"];
    a.extend_from_slice(args);
    let out = env.ok("mem-eval", &a, b"");
    let mut recs = jsonl(&out);
    let summary = recs.pop().unwrap();
    assert_eq!(summary["type"], "eval", "{}", show(&out));
    assert_eq!(summary["set"], "compression");
    assert!(recs.iter().all(|r| r["type"] == "eval_compression"));
    (recs, summary)
}

fn by_title<'a>(recs: &'a [Value], title: &str) -> &'a Value {
    recs.iter()
        .find(|r| r["title"] == title)
        .unwrap_or_else(|| panic!("no observation {title:?}"))
}

#[test]
fn compression_scores_the_fixture_observations_against_their_captures() {
    let env = fixture_store();
    let (recs, s) = compression(&env, &[]);
    let scored = env.count(
        "SELECT count(*) FROM observations o WHERE is_manual = 0
         AND EXISTS (SELECT 1 FROM observation_sources s WHERE s.observation_id = o.id)",
    );
    assert_eq!(recs.len() as i64, scored);
    assert_eq!(s["observations"].as_i64(), Some(scored));
    eprintln!("compression on the fixtures: {s}");
    // The heuristic names only files its captures touched, and fills every field.
    assert_eq!(
        (s["valid"].as_f64(), s["grounded"].as_f64()),
        (Some(1.0), Some(1.0))
    );
    assert!(s["ratio"].as_f64().unwrap() > 10.0, "{s}");
    assert!(s["title_pass"].as_f64().unwrap() >= 0.85, "{s}");
    // "Start phoenix in background": a failed `mix phx.server` and its output, 2 captures.
    let r = by_title(&recs, "Run mix phx.server (failed)");
    let id = r["id"].as_i64().unwrap();
    assert_eq!(
        r["captures"].as_i64(),
        Some(env.count(&format!(
            "SELECT count(*) FROM observation_sources WHERE observation_id = {id}"
        )))
    );
    assert_eq!(r["captures"], 2);
    // Token estimates of the captures' payloads (they hold the checkout's path, so the raw
    // figure depends on where the repo lies: 366 in /work/main) and of the observation's text;
    // the ratio by hand.
    let raw = r["raw_tokens"].as_u64().unwrap();
    assert!((330..420).contains(&raw), "{r}");
    assert_eq!(r["compressed_tokens"].as_u64(), Some(68));
    let ratio = (raw as f64 / 68.0 * 1000.0).round() / 1000.0;
    assert_eq!(r["ratio"].as_f64(), Some(ratio));
    assert_eq!(r["title_score"], 1.0);
    assert_eq!(r["faults"], serde_json::json!([]));
    // A listing whose response was dropped after 7 days: raw tokens as the compressor counted
    // them (tokens_raw), not the input that is left.
    let r = by_title(&recs, "Run ls -la /home/user/project/");
    assert_eq!(r["raw_dropped"], true);
    let id42 = r["id"].as_i64().unwrap();
    assert_eq!(
        r["raw_tokens"].as_i64(),
        Some(env.count(&format!(
            "SELECT tokens_raw FROM observations WHERE id = {id42}"
        )))
    );
    // A request whose subject is a command name without an extension: 5 of 6 checks.
    let r = by_title(
        &recs,
        "Find a cleaner way to reinstall without manually going hunting (coderabbit-extract)",
    );
    assert_eq!(r["title_score"], 0.833);
    assert_eq!(r["faults"], serde_json::json!(["title: names nothing"]));

    // Planted: a raw prompt as the title and a file read no capture touched.
    let ghost = "/nowhere/ghost.js";
    env.db()
        .execute(
            "UPDATE observations SET title = 'Fix: Are you sure the HTML is the issue (index.html)',
             files_read = json_insert(files_read, '$[#]', ?1) WHERE id = ?2",
            rusqlite::params![ghost, id],
        )
        .unwrap();
    let (recs, s) = compression(&env, &["--project", "spotter"]);
    assert!(
        recs.iter()
            .all(|r| r["project"] == "/home/marco/projects/spotter")
    );
    let weak = recs.iter().find(|r| r["id"] == id).unwrap();
    // One file read was touched (the project directory), the ghost was not: 1 of 2.
    assert_eq!(weak["grounded"], 0.5);
    assert_eq!(
        weak["faults"],
        serde_json::json!([
            format!("ungrounded files_read {ghost}"),
            "title: raw prompt"
        ])
    );
    let good = by_title(&recs, "Start phoenix in background (mix phx.server)");
    assert!(
        weak["title_score"].as_f64() < good["title_score"].as_f64(),
        "{weak} {good}"
    );
    assert!(s["grounded"].as_f64().unwrap() < 1.0);

    // --limit takes the newest, --since filters by day; nothing matching is exit 1.
    let (recs, s) = compression(&env, &["--limit", "3"]);
    let ids: Vec<i64> = recs.iter().map(|r| r["id"].as_i64().unwrap()).collect();
    let max = env.count("SELECT max(id) FROM observations WHERE is_manual = 0");
    assert_eq!(ids, [max - 2, max - 1, max]);
    assert_eq!(s["observations"], 3);
    let out = env.run("mem-eval", &["compression", "--since", "2999-01-01"], b"");
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let out = env.run("mem-eval", &["compression", "--since", "last tuesday"], b"");
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--since"));
    let out = env.ok("mem-eval", &["compression", "--format", "table"], b"");
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("title_score") && table.contains("Run ls -la"),
        "{table}"
    );
}

/// `mem-eval health`: its exit status, its record, and the problems it named on stderr.
fn health(env: &Env) -> (Option<i32>, Value, String) {
    let out = env.run("mem-eval", &["health"], b"");
    let recs = jsonl(&out);
    assert_eq!(recs.len(), 1, "{}", show(&out));
    (
        out.status.code(),
        recs[0].clone(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn health_passes_a_healthy_store_and_names_each_planted_problem() {
    let env = fixture_store();
    let (code, h, err) = health(&env);
    assert_eq!(code, Some(0), "{h}\n{err}");
    assert_eq!(h["type"], "health");
    assert_eq!(h["problems"], serde_json::json!([]));
    let queued = env.count("SELECT count(*) FROM pending_queue");
    assert_eq!(h["queue"]["done"].as_i64(), Some(queued));
    assert_eq!(
        h["observations"].as_i64(),
        Some(env.count("SELECT count(*) FROM observations WHERE is_manual = 0"))
    );
    assert!(h["compression_ratio"].as_f64().unwrap() > 1.0);
    // The compression run of today was logged: its merges give the dedup rate.
    assert!(h["dedup_rate"].as_f64().is_some(), "{h}");
    assert_eq!(h["indexes"][0]["index"], "bm25");
    assert_eq!(h["indexes"][0]["missing"], 0);
    assert!(h["database_bytes"].as_u64().unwrap() > 0 && h["index_bytes"].as_u64().unwrap() > 0);
    assert!(h["embedding_model"].is_null());
    let out = env.ok("mem-eval", &["health", "--format", "table"], b"");
    assert!(String::from_utf8_lossy(&out.stdout).contains("compression_ratio"));
    // The last figures a measuring mode made are shown beside the state.
    assert_eq!(h["last_figures"], serde_json::json!({}));
    let tr = crate::fixtures().join("transcripts/claude-code-log");
    let work = env.dir.path().join("eval-work");
    env.ok(
        "mem-eval",
        &[
            "context",
            tr.to_str().unwrap(),
            "--work",
            work.to_str().unwrap(),
        ],
        b"",
    );
    let (_, h, _) = health(&env);
    let last = &h["last_figures"]["context"];
    assert!(last["at"].is_string(), "{h}");
    let methods: Vec<&str> = last["figures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["method"].as_str().unwrap())
        .collect();
    assert_eq!(methods, ["memkit", "recent", "frequent", "merged", "seen"]);

    // A capture the LLM failed on.
    let e = copy_of(&env);
    e.db()
        .execute(
            "UPDATE pending_queue SET status = 'error', last_error = 'HTTP 500: overloaded'
             WHERE id = (SELECT min(id) FROM pending_queue)",
            [],
        )
        .unwrap();
    let (code, h, err) = health(&e);
    assert_eq!(code, Some(1), "{h}");
    assert_eq!(h["queue_errors"]["HTTP 500"], 1);
    assert!(
        err.contains("problem: queue: 1 captures in error (HTTP 500 ×1)"),
        "{err}"
    );
    assert_eq!(h["problems"].as_array().unwrap().len(), 1, "{h}");

    // An observation changed after the last index run: the keys match, the index is old.
    let e = copy_of(&env);
    e.db()
        .execute(
            "UPDATE observations SET title = title || ' again',
             updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+1 second')
             WHERE id = (SELECT min(id) FROM observations)",
            [],
        )
        .unwrap();
    let (code, h, err) = health(&e);
    assert_eq!(code, Some(1), "{h}");
    assert!(
        err.contains("problem: index older than the database"),
        "{err}"
    );
    assert_eq!(h["problems"].as_array().unwrap().len(), 1, "{h}");
    assert!(h["index_behind"].is_string());
    // mem-index brings it up to date: healthy again.
    e.ok("mem-index", &["-q"], b"");
    assert_eq!(health(&e).0, Some(0));

    // Vectors of a model for every observation but one, indexed: that one is named.
    let e = copy_of(&env);
    e.db()
        .execute(
            "INSERT INTO embeddings (owner_kind, owner_id, model, dim, vector, content_hash, created_at)
             SELECT 'observation', id, 'hash-test', 4, X'0000803F000000000000000000000000', 'h',
                    strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
             FROM observations WHERE id > (SELECT min(id) FROM observations)",
            [],
        )
        .unwrap();
    e.ok("mem-index", &["-q"], b"");
    let (code, h, err) = health(&e);
    assert_eq!(code, Some(1), "{h}");
    assert_eq!(h["embedding_model"], "hash-test/4");
    assert_eq!(h["without_embedding"], 1);
    assert!(
        err.contains("problem: embeddings: 1 observations without a vector of hash-test/4"),
        "{err}"
    );
    assert_eq!(h["problems"].as_array().unwrap().len(), 1, "{h}");

    // A model configured and nothing embedded yet: every observation is named.
    let e = copy_of(&env).set("MEM_EMBED_MODEL", "minilm-l6");
    let (code, h, err) = health(&e);
    assert_eq!(code, Some(1), "{h}");
    let n = env.count("SELECT count(*) FROM observations");
    assert!(
        err.contains(&format!(
            "embeddings: {n} observations without a vector of minilm-l6"
        )),
        "{err}"
    );

    // No database at all: nothing to report, exit 1.
    let out = Env::new().run("mem-eval", &["health"], b"");
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
}

#[test]
fn qag_judges_with_the_llm_backend_and_stops_at_the_daily_cap() {
    use crate::compress::{Mock, anthropic_reply};
    let answer = serde_json::json!({
        "questions": [{"question": "Was a file edited?", "observation": "yes"},
                      {"question": "Did a command fail?", "observation": "idk"},
                      {"question": "Was a test run?", "observation": "yes"}],
        "claims": [{"claim": "It edited a file", "supported": "yes"},
                   {"claim": "It deployed", "supported": "no"}]})
    .to_string();
    let mock = Mock::start(std::time::Duration::ZERO, move |_, _| {
        (200, anthropic_reply(&answer, 100, 50))
    });
    let heuristic = fixture_store();
    // Without an LLM backend there is no judge.
    let out = heuristic.run("mem-eval", &["compression", "--qag"], b"");
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("MEM_LLM"));
    let env = copy_of(&heuristic)
        .set("MEM_LLM", "anthropic")
        .set("MEM_LLM_URL", &mock.url)
        .set("ANTHROPIC_API_KEY", "test-key");
    let (recs, s) = compression(&env, &["--qag", "--limit", "3"]);
    assert_eq!(mock.calls(), 3);
    // By hand: 2 of 3 questions answered, 1 of 2 claims supported.
    for r in &recs {
        assert_eq!(
            (r["qag_coverage"].as_f64(), r["qag_alignment"].as_f64()),
            (Some(0.667), Some(0.5)),
            "{r}"
        );
    }
    assert_eq!(
        (s["qag_judged"].as_u64(), s["qag_coverage"].as_f64()),
        (Some(3), Some(0.667))
    );
    let seen = mock.seen.lock().unwrap()[0].body.to_string();
    assert!(
        seen.contains("You judge") && seen.contains("OBSERVATION") && seen.contains("CAPTURES")
    );
    // Each call is booked like compression's: 150 tokens each, purpose judge.
    assert_eq!(
        env.count("SELECT coalesce(sum(json_extract(detail, '$.tokens_in') + json_extract(detail, '$.tokens_out')), 0)
                   FROM event_log WHERE event = 'llm_call' AND json_extract(detail, '$.purpose') = 'judge'"),
        450
    );
    // 450 spent today, a cap of 700: two more calls (600, then 750), then the judge stops.
    let env = env.set("MEM_LLM_DAILY_TOKENS", "700");
    let out = env.ok("mem-eval", &["compression", "--qag", "--limit", "3"], b"");
    assert_eq!(mock.calls(), 5);
    let recs = jsonl(&out);
    assert!(
        recs[2]["qag_error"]
            .as_str()
            .unwrap()
            .contains("daily token cap"),
        "{}",
        show(&out)
    );
    assert_eq!(recs[3]["qag_judged"], 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("the judge stopped"));
}

#[test]
fn benchmark_replays_the_captures_through_two_backends_in_scratch_copies() {
    use crate::compress::{Mock, anthropic_reply, obs_json};
    let mock = Mock::start(std::time::Duration::ZERO, |n, _| {
        (200, anthropic_reply(&obs_json(n, &[]), 100, 50))
    });
    let env = fixture_store()
        .set("MEM_LLM_URL", &mock.url)
        .set("MEM_LLM_PROMPT_TOKENS", "10000000");
    let work = env.dir.path().join("work");
    let w = work.to_str().unwrap();
    // A backend that cannot run is refused before any work.
    let out = env.run(
        "mem-eval",
        &[
            "benchmark",
            "--a",
            "heuristic",
            "--b",
            "anthropic",
            "--work",
            w,
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("ANTHROPIC_API_KEY"));
    let env = env.set("ANTHROPIC_API_KEY", "test-key");
    let (_, stored) = compression(&env, &[]);
    let observations = env.count("SELECT count(*) FROM observations");
    let before: Vec<(i64, String)> = env.pairs("SELECT id, status FROM pending_queue ORDER BY id");
    let out = env.ok(
        "mem-eval",
        &[
            "benchmark",
            "--a",
            "heuristic",
            "--b",
            "anthropic",
            "--work",
            w,
        ],
        b"",
    );
    let sides = jsonl(&out);
    assert_eq!(sides.len(), 2, "{}", show(&out));
    let (a, b) = (&sides[0], &sides[1]);
    eprintln!("benchmark on the fixtures:\n{a}\n{b}");
    assert_eq!(
        (a["side"].as_str(), a["backend"].as_str()),
        (Some("a"), Some("heuristic"))
    );
    assert_eq!(
        (a["set"].as_str(), b["backend"].as_str()),
        (Some("benchmark"), Some("anthropic"))
    );
    // The heuristic replayed makes what it made the first time.
    for k in [
        "observations",
        "valid",
        "grounded",
        "title_score",
        "title_pass",
    ] {
        assert_eq!(a[k], stored[k], "{k}");
    }
    assert_eq!(a["llm_calls"], 0);
    // The mock's titles ("Mock observation number 3 for testing") start with no action and
    // name nothing: 4 of 6 checks.
    assert_eq!(b["llm_calls"].as_u64(), Some(mock.calls() as u64));
    assert!(mock.calls() > 10);
    assert_eq!(b["title_score"], 0.667);
    assert_eq!(b["tokens_in"].as_u64(), Some(100 * mock.calls() as u64));
    // The user's memory is as it was, but for the LLM calls booked against its daily cap.
    assert_eq!(env.count("SELECT count(*) FROM observations"), observations);
    let after: Vec<(i64, String)> = env.pairs("SELECT id, status FROM pending_queue ORDER BY id");
    assert_eq!(after, before);
    assert_eq!(
        env.count("SELECT count(*) FROM event_log WHERE event = 'llm_call'"),
        mock.calls() as i64
    );
    assert_eq!(
        std::fs::read_dir(&work).unwrap().count(),
        0,
        "scratch copies left"
    );
}

#[test]
fn status_counts_what_the_database_holds_and_names_broken_hooks() {
    let env = fixture_store();
    let status = |env: &Env| -> Value {
        let out = env.ok("mem", &["status", "--format", "json"], b"");
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", show(&out)))
    };
    let s = status(&env);
    assert_eq!(s["type"], "status");
    for (field, sql) in [
        ("sessions", "SELECT count(*) FROM sessions"),
        ("observations", "SELECT count(*) FROM observations"),
        ("captures", "SELECT count(*) FROM pending_queue"),
        (
            "learnings",
            "SELECT count(*) FROM learnings WHERE is_active = 1",
        ),
    ] {
        assert_eq!(s[field].as_i64(), Some(env.count(sql)), "{field}: {s}");
    }
    assert_eq!(
        s["queue"]["done"].as_i64(),
        Some(env.count("SELECT count(*) FROM pending_queue WHERE status = 'done'"))
    );
    assert!(s["database_bytes"].as_u64().unwrap() > 0);
    assert_eq!(s["indexes"][0]["index"], "bm25", "{s}");
    // No hooks yet: said as a problem.
    assert!(
        s["problems"]
            .to_string()
            .contains("no settings file registers memkit's hooks"),
        "{s}"
    );
    // Installed into the user's settings: counted, and a program that went away is named.
    let home = env.dir.path().join("home");
    let bin_dir = crate::bin("mem").parent().unwrap().display().to_string();
    env.ok("mem-install", &["--bin-dir", &bin_dir, "--no-copy"], b"");
    let s = status(&env);
    let user = &s["hooks"][0];
    assert_eq!(
        user["file"].as_str(),
        Some(home.join(".claude/settings.json").to_str().unwrap())
    );
    assert!(user["handlers"].as_u64().unwrap() >= 9, "{s}");
    assert_eq!(user["missing"], serde_json::json!([]));
    assert!(!s["problems"].to_string().contains("hooks:"), "{s}");
    let path = home.join(".claude/settings.json");
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace(&format!("{bin_dir}/mem-capture"), "/gone/bin/mem-capture");
    std::fs::write(&path, text).unwrap();
    let s = status(&env);
    assert_eq!(
        s["hooks"][0]["missing"],
        serde_json::json!(["/gone/bin/mem-capture"])
    );
    assert!(
        s["problems"]
            .to_string()
            .contains("/gone/bin/mem-capture, which does not exist"),
        "{s}"
    );
}

#[test]
fn doctor_finds_each_planted_problem_and_fix_repairs_it() {
    let env = fixture_store()
        .set("MEM_MODELS", crate::embed::models().to_str().unwrap())
        .set("MEM_EMBED_MODEL", "minilm-l6");
    let bin_dir = crate::bin("mem").parent().unwrap().display().to_string();
    env.ok("mem", &["pipeline"], b"");
    env.ok("mem-install", &["--bin-dir", &bin_dir, "--no-copy"], b"");
    let doctor = |env: &Env, args: &[&str]| -> (Option<i32>, Vec<Value>) {
        let mut a = vec!["doctor", "--format", "jsonl"];
        a.extend_from_slice(args);
        let out = env.run("mem", &a, b"");
        (out.status.code(), jsonl(&out))
    };
    let (code, checks) = doctor(&env, &[]);
    assert_eq!(code, Some(0), "{checks:?}");
    assert!(checks.iter().all(|c| c["ok"] == true), "{checks:?}");

    // Plant one problem per check.
    // A turn whose compression failed and left nothing.
    let base = serde_json::json!({"session_id": "failed", "cwd": "/tmp/proj",
        "transcript_path": "/nonexistent.jsonl"});
    for extra in [
        serde_json::json!({"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": "b1",
            "tool_input": {"command": "make migrate", "description": "Run the migrations"},
            "tool_response": {"stdout": "applied 3 migrations", "stderr": "", "interrupted": false}}),
        serde_json::json!({"hook_event_name": "Stop", "last_assistant_message": "Migrated."}),
    ] {
        env.ok("mem-capture", &["--hook"], &crate::event(&base, extra));
    }
    // An event a hook spooled (after the hooks above: each hook drains the spool).
    let spool = env.home().join("spool");
    std::fs::create_dir_all(&spool).unwrap();
    let late = serde_json::json!({"session_id": "late", "hook_event_name": "UserPromptSubmit",
        "cwd": "/tmp/proj", "prompt": "a prompt a busy database kept waiting"});
    std::fs::write(
        spool.join("20260301T000000.000000000-1-0.json"),
        late.to_string(),
    )
    .unwrap();
    let db = env.db();
    db.execute_batch(
        "UPDATE pending_queue SET status = 'error', last_error = 'HTTP 500'
           WHERE session_id = 'failed' AND event = 'PostToolUse';
         DELETE FROM embeddings WHERE owner_kind = 'observation'
           AND owner_id = (SELECT max(id) FROM observations);
         UPDATE meta SET value = '0' WHERE key = 'redactor_version';",
    )
    .unwrap();
    drop(db);
    // An index that lost its files.
    std::fs::remove_dir_all(env.home().join("index/bm25")).unwrap();
    // Hooks whose program went away.
    let settings = env.dir.path().join("home/.claude/settings.json");
    let text = std::fs::read_to_string(&settings)
        .unwrap()
        .replace(&format!("{bin_dir}/mem-capture"), "/gone/bin/mem-capture");
    std::fs::write(&settings, text).unwrap();

    let (code, checks) = doctor(&env, &[]);
    assert_eq!(code, Some(1));
    let failed: Vec<&str> = checks
        .iter()
        .filter(|c| c["ok"] == false)
        .map(|c| c["check"].as_str().unwrap())
        .collect();
    assert_eq!(
        failed,
        [
            "spool",
            "queue",
            "embeddings",
            "indexes",
            "hooks",
            "redaction"
        ],
        "{checks:?}"
    );
    assert!(
        checks
            .iter()
            .all(|c| c["ok"] == true || !c["fix"].as_str().unwrap().is_empty())
    );

    let (code, checks) = doctor(&env, &["--fix"]);
    assert_eq!(code, Some(0), "{checks:#?}");
    for c in checks.iter().filter(|c| c["ok"] == false) {
        assert_eq!(c["fixed"], true, "{c}");
    }
    let (code, checks) = doctor(&env, &[]);
    assert_eq!(code, Some(0), "{checks:?}");
    assert_eq!(
        env.count("SELECT count(*) FROM pending_queue WHERE session_id = 'late'"),
        1,
        "the spooled event is stored"
    );
    assert!(
        !std::fs::read_to_string(&settings)
            .unwrap()
            .contains("/gone/bin")
    );
}

/// `mem-eval redaction` on the bundled corpora: every secret of the secrets corpus goes, and
/// only its value; the benign corpus keeps its test values, placeholders, markup, hosts and SRI
/// hashes (what is left are secret-looking keys, signatures and password hashes printed in
/// documentation).
#[test]
fn redaction_eval_pins_the_bundled_corpora() {
    let env = Env::new();
    let fx = crate::fixtures();
    let (redaction, transcripts, secrets) = (
        fx.join("redaction"),
        fx.join("transcripts"),
        fx.join("secrets/corpus.jsonl"),
    );
    let out = env.ok(
        "mem-eval",
        &[
            "redaction",
            redaction.to_str().unwrap(),
            transcripts.to_str().unwrap(),
            "--secrets",
            secrets.to_str().unwrap(),
            "--hits",
        ],
        b"",
    );
    let recs = jsonl(&out);
    let figure = |set: &str, source: &str, family: &str| {
        recs.iter()
            .find(|r| {
                r["type"] == "eval_redaction"
                    && r["set"] == set
                    && r["source"] == source
                    && r["family"] == family
            })
            .cloned()
            .unwrap_or_else(|| panic!("no {set}/{source}/{family} figure: {}", show(&out)))
    };
    let sec = figure("secrets", "all", "all");
    assert_eq!(sec["recall"], 1.0, "{sec}");
    assert_eq!(sec["missed"], serde_json::json!([]), "{sec}");
    assert_eq!(sec["eaten"], 0, "{sec}");
    let all = figure("benign", "all", "all");
    assert!(all["messages"].as_u64().unwrap() > 4000, "{all}");
    assert!(all["per_1000"].as_f64().unwrap() <= 10.0, "{all}");
    assert_eq!(all["eaten"], 0, "{all}");
    for source in ["chats", "requests", "transcripts", "bootstrap-flask"] {
        assert_eq!(figure("benign", source, "all")["redactions"], 0, "{source}");
    }
    let hits: Vec<&Value> = recs
        .iter()
        .filter(|r| r["type"] == "eval_redaction_hit" && r["set"] == "benign")
        .collect();
    for h in &hits {
        let family = h["family"].as_str().unwrap();
        assert!(
            matches!(
                family,
                "high_entropy" | "secret" | "secret_key" | "password" | "password_hash"
            ),
            "{h}"
        );
        let removed = h["removed"].as_str().unwrap();
        assert!(
            !removed.starts_with("sha") && !removed.contains("test"),
            "{h}"
        );
    }
}
