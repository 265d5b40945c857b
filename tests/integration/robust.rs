//! What no input may do (issue 11, items 12–14): crash a tool, be silently ignored as a
//! setting, let an index outlive its database, or leave memories readable by other users.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde_json::json;

use crate::{Env, jsonl, show};

/// Notes stored and compressed into observations (one per note), then indexed.
fn remember(env: &Env, project: &str, notes: &[&str]) {
    for n in notes {
        env.ok(
            "mem-capture",
            &["-q", "--note", n, "--project", project],
            b"",
        );
    }
    env.ok("mem-compress", &["-q"], b"");
    env.ok("mem-index", &["-q"], b"");
}

/// A project directory, which the tools run as (CLAUDE_PROJECT_DIR), and its notes.
fn remembered() -> Env {
    let env = Env::new();
    let project = env.dir.path().join("proj");
    std::fs::create_dir_all(&project).unwrap();
    let env = env.set("CLAUDE_PROJECT_DIR", project.to_str().unwrap());
    remember(
        &env,
        project.to_str().unwrap(),
        &[
            "the walrus deployment uses blue green switching",
            "walrus cache keys expire after one hour",
            "flaky walrus test fixed by pinning the clock",
        ],
    );
    env
}

/// A crash is exit 101 (panic) or a signal (abort: 134 from a shell, no code here).
fn assert_no_crash(out: &std::process::Output, what: &str) {
    let code = out.status.code();
    assert!(
        code.is_some() && code != Some(101),
        "{what} crashed: {}",
        show(out)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !err.contains("panicked") && !err.contains("RUST_BACKTRACE"),
        "{what}: {}",
        show(out)
    );
}

/// Every numeric setting, with a tool that reads it (the database has memories, so each tool
/// gets as far as reading it).
const SETTING_USERS: &[(&str, &[&str])] = &[
    ("embed_dim", &["mem-embed"]),
    ("embed_cache_days", &["mem-embed"]),
    ("embed_budget_s", &["mem", "pipeline"]),
    ("raw_response_days", &["mem-compress"]),
    ("llm_daily_tokens", &["mem-compress"]),
    ("llm_prompt_tokens", &["mem-compress"]),
    ("llm_backoff_ms", &["mem-compress"]),
    ("llm_timeout_secs", &["mem-compress"]),
    ("compress_open_turn_secs", &["mem-compress", "--check"]),
    ("search_dim", &["mem-search", "walrus"]),
    ("search_weight_relevance", &["mem-search", "walrus"]),
    ("search_weight_lexical", &["mem-search", "walrus"]),
    ("search_weight_similarity", &["mem-search", "walrus"]),
    ("search_weight_recency", &["mem-search", "walrus"]),
    ("search_weight_time", &["mem-search", "walrus"]),
    ("search_rerank_depth", &["mem-search", "--rerank", "walrus"]),
    ("search_weight_type", &["mem-search", "walrus"]),
    ("search_weight_files", &["mem-search", "walrus"]),
    ("search_weight_project", &["mem-search", "walrus"]),
    ("search_type_weights", &["mem-search", "walrus"]),
    ("search_half_life_days", &["mem-search", "walrus"]),
    ("search_rrf_k", &["mem-search", "walrus"]),
    ("search_tag_similarity", &["mem-search", "walrus"]),
    ("search_bm25_k1", &["mem-search", "walrus"]),
    ("search_bm25_b", &["mem-search", "walrus"]),
    ("search_similarity_floor", &["mem-search", "walrus"]),
    ("context_tokens", &["mem-context"]),
    ("context_prompt_coverage", &["mem-context"]),
    ("context_prompt_terms", &["mem-context"]),
    ("context_type_weights", &["mem-context"]),
    ("context_files_decay", &["mem-context"]),
    ("context_files_read", &["mem-context"]),
    ("sync.interval", &["mem", "sync", "--dry-run"]),
];

#[test]
fn every_bad_numeric_setting_is_a_usage_error_naming_it() {
    // The table covers every setting config declares as numeric, and nothing else (the code
    // reads a number only through a declared setting's handle, which carries its bounds).
    let known: Vec<&str> = memkit::config::SETTINGS
        .iter()
        .filter(|s| s.bounds.is_some())
        .filter_map(|s| s.key)
        .collect();
    let tested: Vec<&str> = SETTING_USERS.iter().map(|s| s.0).collect();
    for k in &known {
        assert!(tested.contains(k), "{k} has no row in SETTING_USERS");
    }
    for k in &tested {
        assert!(
            known.contains(k),
            "{k} is not a numeric setting of config::SETTINGS"
        );
    }

    let env = remembered();
    for (key, argv) in SETTING_USERS {
        let var = memkit::config::var_of(key);
        for bad in ["abc", "NaN", "-1", "50k", "1e400", "99999999999999999999"] {
            let value = if key.ends_with("type_weights") {
                format!("decision={bad}")
            } else {
                bad.to_string()
            };
            let env = Env {
                dir: tempfile::tempdir().unwrap(),
                vars: env.vars.clone(),
            }
            .set(&var, &value);
            let out = env.run(argv[0], &argv[1..], b"");
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{var}={value}: {}", show(&out));
            assert!(
                err.contains(&var) && err.contains(key),
                "{var}={value}: the error names the setting and its variable: {err}"
            );
        }
    }
    // The same from config.toml.
    std::fs::write(
        env.home().join("config.toml"),
        "llm_daily_tokens = \"50k\"\n",
    )
    .unwrap();
    let out = env.run("mem-compress", &[], b"");
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("llm_daily_tokens"));
    // Values in range are taken.
    std::fs::write(env.home().join("config.toml"), "llm_daily_tokens = 50000\n").unwrap();
    let env = env
        .set("MEM_SEARCH_HALF_LIFE_DAYS", "0.5")
        .set("MEM_SEARCH_RRF_K", "0")
        .set("MEM_SEARCH_TYPE_WEIGHTS", "decision=1.5,change=0");
    env.ok("mem-compress", &["-q"], b"");
    env.ok("mem-search", &["walrus"], b"");
}

#[test]
fn absurd_numbers_never_crash_a_tool() {
    let env = remembered();
    // Limits past the cap are capped, with a warning.
    let out = env.run("mem-search", &["-n", "1000000000", "walrus"], b"");
    assert_no_crash(&out, "mem-search -n 1000000000");
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(jsonl(&out).len(), 3);
    assert!(String::from_utf8_lossy(&out.stderr).contains("at most 10000"));
    let out = env.run("mem-search", &["-n", "18446744073709551615", "walrus"], b"");
    assert_no_crash(&out, "mem-search -n u64::MAX");
    let q = json!({"id": 1, "query": "walrus", "limit": 1_000_000_000u64}).to_string();
    let out = env.run("mem-search", &["--batch", "-"], q.as_bytes());
    assert_no_crash(&out, "mem-search --batch limit 1e9");
    assert_eq!(jsonl(&out).len(), 3, "{}", show(&out));
    // Scores that are not numbers are refused, not silently matched against.
    for v in ["NaN", "inf"] {
        let out = env.run("mem-search", &["--min-score", v, "walrus"], b"");
        assert_eq!(
            out.status.code(),
            Some(2),
            "--min-score {v}: {}",
            show(&out)
        );
    }
    // More threads than cores: capped with a note; a rebuild keeps a usable index.
    let out = env.run("mem-index", &["--rebuild", "--threads", "100000"], b"");
    assert_no_crash(&out, "mem-index --threads 100000");
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--threads 100000: using"));
    let out = env.run("mem-search", &["walrus"], b"");
    let hits = jsonl(&out);
    assert_eq!(hits.len(), 3, "{}", show(&out));
    assert!(hits.iter().all(|h| h["mode"] == "bm25"), "{hits:?}");
    env.ok("mem-index", &["--check"], b"");
    for t in ["9223372036854775807", "0"] {
        let out = env.run("mem-index", &["--threads", t], b"");
        assert_no_crash(&out, "mem-index --threads");
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    }
    // Durations that would overflow are out of range (exit 2), never a panic.
    for (var, v, tool) in [
        (
            "MEM_COMPRESS_OPEN_TURN_SECS",
            "99999999999999",
            "mem-compress",
        ),
        ("MEM_LLM_TIMEOUT_SECS", "1e308", "mem-compress"),
        ("MEM_EMBED_CACHE_DAYS", "4000000000", "mem-embed"),
        ("MEM_CONTEXT_TOKENS", "9223372036854775807", "mem-context"),
    ] {
        let e = Env {
            dir: tempfile::tempdir().unwrap(),
            vars: env.vars.clone(),
        }
        .set(var, v);
        let out = e.run(tool, &[], b"");
        assert_no_crash(&out, var);
        assert_eq!(out.status.code(), Some(2), "{var}={v}: {}", show(&out));
    }
    let out = env.run("mem-context", &["--budget", "18446744073709551615"], b"");
    assert_no_crash(&out, "mem-context --budget");
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
}

#[test]
fn a_hook_logs_a_bad_setting_and_uses_the_default() {
    let env = remembered();
    let project = env.dir.path().join("proj").display().to_string();
    let env = env
        .set("MEM_CONTEXT_TOKENS", "abc")
        .set("MEM_SEARCH_WEIGHT_TYPE", "NaN")
        .set("MEM_LLM_DAILY_TOKENS", "50k");
    let start = json!({"hook_event_name": "SessionStart", "session_id": "s2", "cwd": project,
                       "source": "startup"});
    let out = env.run("mem-context", &["--hook"], start.to_string().as_bytes());
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("no context ({e}): {}", show(&out)));
    let text = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(text.contains("walrus"), "{text}");
    let log = std::fs::read_to_string(env.home().join("logs/mem-context.log")).unwrap();
    assert!(
        log.contains("MEM_CONTEXT_TOKENS") && log.contains("using the default"),
        "{log}"
    );
    let prompt = json!({"hook_event_name": "UserPromptSubmit", "session_id": "s2",
                        "cwd": project, "prompt": "why is the walrus test flaky with the clock"});
    let out = env.run(
        "mem-context",
        &["--hook", "--prompt"],
        prompt.to_string().as_bytes(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("flaky walrus test"),
        "{}",
        show(&out)
    );
    let log = std::fs::read_to_string(env.home().join("logs/mem-context.log")).unwrap();
    assert!(log.contains("MEM_SEARCH_WEIGHT_TYPE"), "{log}");
    // Capture reads no number today; a bad one elsewhere never costs a capture.
    let stop = json!({"hook_event_name": "Stop", "session_id": "s2", "cwd": project});
    let out = env.run("mem-capture", &["--hook"], stop.to_string().as_bytes());
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty());
    assert_eq!(
        env.count("SELECT count(*) FROM pending_queue WHERE session_id = 's2'"),
        1
    );
}

#[test]
fn a_stale_index_never_serves_another_databases_memories() {
    let env = remembered();
    let project = env.dir.path().join("proj").display().to_string();
    let old = jsonl(&env.ok("mem-search", &["walrus"], b""));
    assert_eq!(old.len(), 3);
    // The database goes (a user starting over); its indexes stay behind.
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", env.db_path().display()));
    }
    env.ok(
        "mem-capture",
        &[
            "-q",
            "--note",
            "penguin colony rollout checklist",
            "--project",
            &project,
        ],
        b"",
    );
    env.ok(
        "mem-capture",
        &[
            "-q",
            "--note",
            "penguin feeding schedule moved to noon",
            "--project",
            &project,
        ],
        b"",
    );
    env.ok("mem-compress", &["-q"], b"");
    // Before mem-index runs: nothing of the old database, and the new rows found by their
    // own text (SQLite FTS5), never through the old index's keys.
    let out = env.run("mem-search", &["walrus"], b"");
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(jsonl(&out).is_empty());
    let out = env.ok("mem-search", &["penguin"], b"");
    let hits = jsonl(&out);
    assert_eq!(hits.len(), 2, "{}", show(&out));
    for h in &hits {
        assert!(h["title"].as_str().unwrap().contains("penguin"), "{h}");
        assert_eq!(h["mode"], "fts", "{h}");
    }
    assert!(String::from_utf8_lossy(&out.stderr).contains("index of another database"));
    // The prompt hook does not bring the old memories in either.
    let prompt = json!({"hook_event_name": "UserPromptSubmit", "session_id": "s9",
                        "cwd": project, "prompt": "why is the walrus test flaky with the clock"});
    let out = env.run(
        "mem-context",
        &["--hook", "--prompt"],
        prompt.to_string().as_bytes(),
    );
    assert_eq!(out.status.code(), Some(0));
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("walrus"),
        "{}",
        show(&out)
    );
    // --check knows the index is not this database's, even where the keys coincide.
    let out = env.run("mem-index", &["--check"], b"");
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    // mem-index rebuilds it, saying why; then search is back on BM25 with the new rows only.
    let recs = jsonl(&env.ok("mem-index", &[], b""));
    assert_eq!(recs[0]["rebuilt"], true, "{recs:?}");
    assert_eq!(recs[0]["reason"], "index of another database", "{recs:?}");
    env.ok("mem-index", &["--check"], b"");
    let out = env.run("mem-search", &["walrus"], b"");
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let hits = jsonl(&env.ok("mem-search", &["penguin"], b""));
    assert_eq!(hits.len(), 2);
    assert!(hits.iter().all(|h| h["mode"] == "bm25"), "{hits:?}");
    for h in &hits {
        let id = h["id"].as_i64().unwrap();
        let title: String = env
            .db()
            .query_row("SELECT title FROM observations WHERE id = ?1", [id], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(h["title"].as_str().unwrap(), title);
    }
}

/// Paths under `dir` (itself included) that the group or others may use, with their modes.
fn loose(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(p) = todo.pop() {
        let m = std::fs::symlink_metadata(&p).unwrap();
        if m.permissions().mode() & 0o077 != 0 {
            out.push(format!(
                "{:o} {}",
                m.permissions().mode() & 0o777,
                p.display()
            ));
        }
        if m.is_dir() {
            todo.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
        }
    }
    out
}

#[test]
fn everything_under_the_data_home_is_the_users_only() {
    let env = Env::new();
    // A home made by hand (or an older memkit) that others can read.
    std::fs::create_dir_all(env.home().join("index")).unwrap();
    std::fs::write(env.home().join("config.toml"), "skip_tools = [\"LS\"]\n").unwrap();
    for (p, mode) in [("", 0o755), ("index", 0o755), ("config.toml", 0o644)] {
        std::fs::set_permissions(env.home().join(p), std::fs::Permissions::from_mode(mode))
            .unwrap();
    }
    let project = env.dir.path().join("proj");
    std::fs::create_dir_all(&project).unwrap();
    let project = project.display().to_string();
    let env = env.set("CLAUDE_PROJECT_DIR", &project);
    // The whole pipeline, hooks included (one bad payload, so a log is written).
    for p in [
        json!({"hook_event_name": "SessionStart", "session_id": "s1", "cwd": project, "source": "startup"}),
        json!({"hook_event_name": "UserPromptSubmit", "session_id": "s1", "cwd": project,
               "prompt": "make the walrus deploy safer"}),
        json!({"hook_event_name": "PostToolUse", "session_id": "s1", "cwd": project,
               "tool_name": "Edit", "tool_use_id": "t1",
               "tool_input": {"file_path": format!("{project}/deploy.sh"), "old_string": "a", "new_string": "b"},
               "tool_response": {"success": true}}),
        json!({"hook_event_name": "Stop", "session_id": "s1", "cwd": project}),
    ] {
        env.ok("mem-capture", &["--hook"], p.to_string().as_bytes());
    }
    env.ok("mem-capture", &["--hook"], b"{not json");
    env.ok(
        "mem-capture",
        &[
            "-q",
            "--note",
            "walrus deploys go blue green",
            "--project",
            &project,
        ],
        b"",
    );
    env.ok("mem-compress", &["-q"], b"");
    env.ok("mem-index", &["-q"], b"");
    env.ok("mem-search", &["walrus"], b"");
    let start = json!({"hook_event_name": "SessionStart", "session_id": "s2", "cwd": project, "source": "startup"});
    env.ok("mem-context", &["--hook"], start.to_string().as_bytes());
    assert!(env.home().join("logs/mem-capture.log").exists());
    assert!(env.home().join("index/bm25/meta.json").exists());
    assert_eq!(loose(&env.home()), Vec::<String>::new());
}
