//! Recall hooks (`mem-capture --recall` on PreToolUse, PostToolUseFailure, PostToolUse of Bash,
//! SubagentStart): transcripts imported with mem-capture and compressed by mem-compress, then
//! the hook payloads Claude Code sends, as the registered command runs them.

use std::path::Path;

use serde_json::{Value, json};

use crate::{Env, show};

const ROOT: &str = "/proj/app";
const OTHER: &str = "/proj/other";

/// One session as a transcript: a prompt, then each call with its result (`true`: an error).
pub fn session(
    dir: &Path,
    root: &str,
    id: &str,
    day: &str,
    prompt: &str,
    calls: &[(&str, Value, &str, bool)],
) {
    let folder = dir.join(root.replace('/', "-"));
    std::fs::create_dir_all(&folder).unwrap();
    let line = |n: usize, message: Value| {
        json!({"type": message["role"].clone(), "sessionId": id, "cwd": root,
               "uuid": format!("{id}-{n}"), "timestamp": format!("{day}T10:{n:02}:00.000Z"),
               "message": message})
        .to_string()
    };
    let mut lines = vec![line(0, json!({"role": "user", "content": prompt}))];
    for (k, (tool, input, result, is_error)) in calls.iter().enumerate() {
        let tid = format!("toolu_{id}_{k}");
        lines.push(line(
            2 * k + 1,
            json!({"role": "assistant", "content": [{"type": "tool_use", "id": tid,
                   "name": tool, "input": input}]}),
        ));
        lines.push(line(
            2 * k + 2,
            json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid,
                   "content": result, "is_error": is_error}]}),
        ));
    }
    std::fs::write(folder.join(format!("{id}.jsonl")), lines.join("\n") + "\n").unwrap();
}

const TRACEBACK: &str = "Exit code 1\nTraceback (most recent call last):\n  File \"/proj/app/extract.py\", line 4, in <module>\n    import requests\nModuleNotFoundError: No module named 'requests'";

/// Two sessions of /proj/app (one edits retry.py, one meets an error and fixes it) and one of
/// /proj/other, imported and compressed.
fn store() -> Env {
    let env = Env::new().set("MEM_SEARCH_GIT_FILES", "0");
    let tr = env.dir.path().join("transcripts");
    let edit =
        |f: &str, new: &str| json!({"file_path": f, "old_string": "x = 1", "new_string": new});
    session(
        &tr,
        ROOT,
        "00000000-0000-4000-8000-000000000001",
        "2025-03-01",
        "Make the retry wrapper honour the Retry-After header",
        &[
            (
                "Read",
                json!({"file_path": "/proj/app/retry.py"}),
                "def retry(): ...",
                false,
            ),
            (
                "Edit",
                edit(
                    "/proj/app/retry.py",
                    "delay = parse_retry_after(resp.headers)",
                ),
                "ok",
                false,
            ),
        ],
    );
    session(
        &tr,
        ROOT,
        "00000000-0000-4000-8000-000000000002",
        "2025-03-02",
        "Run the extractor on the March export",
        &[
            (
                "Bash",
                json!({"command": "python extract.py march.csv"}),
                TRACEBACK,
                true,
            ),
            (
                "Edit",
                edit("/proj/app/requirements.txt", "requests==2.31.0"),
                "ok",
                false,
            ),
            (
                "Bash",
                json!({"command": "python extract.py march.csv"}),
                "wrote 120 rows",
                false,
            ),
        ],
    );
    session(
        &tr,
        OTHER,
        "00000000-0000-4000-8000-000000000003",
        "2025-03-03",
        "Rename the config loader",
        &[(
            "Edit",
            edit("/proj/other/config.py", "def load_config(path):"),
            "ok",
            false,
        )],
    );
    env.ok(
        "mem-capture",
        &["-q", "--transcripts", tr.to_str().unwrap()],
        b"",
    );
    env.ok("mem-compress", &["-q"], b"");
    env
}

/// Runs the command mem-install registers for the payload's event (mem-context --hook for the
/// context blocks, mem-capture --recall for recall) on it; see [`hook_with`].
fn hook(env: &Env, payload: &[u8]) -> Option<(String, String)> {
    let v: Value = serde_json::from_slice(payload).unwrap_or_default();
    match v["hook_event_name"].as_str() {
        Some("SessionStart" | "SubagentStart") => hook_with(env, "mem-context", "--hook", payload),
        _ => hook_with(env, "mem-capture", "--recall", payload),
    }
}

/// Runs a hook command on a payload: exit 0 and an empty stderr always; the additionalContext
/// it printed, if any, after checking the output is the hook's JSON only.
fn hook_with(env: &Env, tool: &str, arg: &str, payload: &[u8]) -> Option<(String, String)> {
    let out = env.run(tool, &[arg], payload);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(out.stderr.is_empty(), "{}", show(&out));
    if out.stdout.is_empty() {
        return None;
    }
    let v: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", show(&out)));
    let h = &v["hookSpecificOutput"];
    assert_eq!(v.as_object().unwrap().len(), 1, "{v}");
    assert!(
        h.get("permissionDecision").is_none(),
        "recall never decides: {v}"
    );
    Some((
        h["hookEventName"].as_str().unwrap().to_string(),
        h["additionalContext"].as_str().unwrap().to_string(),
    ))
}

fn pre(session: &str, cwd: &str, tool: &str, file: &str) -> Vec<u8> {
    json!({"hook_event_name": "PreToolUse", "session_id": session, "cwd": cwd,
           "tool_name": tool, "tool_input": {"file_path": file}, "tool_use_id": "toolu_x"})
    .to_string()
    .into_bytes()
}

fn failure(session: &str, error: &str) -> Vec<u8> {
    json!({"hook_event_name": "PostToolUseFailure", "session_id": session, "cwd": ROOT,
           "tool_name": "Bash", "tool_input": {"command": "python extract.py april.csv"},
           "tool_use_id": "toolu_y", "error": error})
    .to_string()
    .into_bytes()
}

/// The observations made from successful edits of `file`.
fn editors(env: &Env, file: &str) -> Vec<i64> {
    let db = env.db();
    let mut st = db
        .prepare(
            "SELECT DISTINCT s.observation_id FROM observation_sources s
               JOIN pending_queue q ON q.id = s.queue_id
              WHERE q.event = 'PostToolUse' AND q.tool_name = 'Edit' AND q.files = json_array(?1)",
        )
        .unwrap();
    st.query_map([file], |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

#[test]
fn file_recall_names_the_observations_that_changed_the_file_once_per_session() {
    let env = store();
    let retry = editors(&env, "/proj/app/retry.py");
    assert!(!retry.is_empty());
    let (event, text) = hook(&env, &pre("s1", ROOT, "Read", "/proj/app/retry.py")).expect("recall");
    assert_eq!(event, "PreToolUse");
    assert!(text.contains("retry.py"), "{text}");
    assert!(
        retry.iter().any(|id| text.contains(&format!("o{id} "))),
        "{text}"
    );
    assert!(memkit::tokens::estimate(&text) <= 300, "{text}");
    // Once per file per session: the Edit that follows the Read says nothing new.
    assert_eq!(
        hook(&env, &pre("s1", ROOT, "Edit", "/proj/app/retry.py")),
        None
    );
    // Another session is told again.
    assert!(hook(&env, &pre("s2", ROOT, "Edit", "/proj/app/retry.py")).is_some());
    // Settings an earlier mem-install wrote run mem-context --hook here: the same answer.
    let read = pre("s5", ROOT, "Read", "/proj/app/retry.py");
    assert_eq!(
        hook_with(&env, "mem-context", "--hook", &read).map(|r| r.1),
        Some(text.clone())
    );
    // Something new stored since: told again in the same session.
    let db = env.db();
    db.execute_batch(
        "INSERT INTO pending_queue (session_id, project, event, tool_name, payload, files, status, created_at)
           VALUES ('later', '/proj/app', 'PostToolUse', 'Edit', '{}', '[\"/proj/app/retry.py\"]', 'done', '2025-03-05T10:00:00.000Z');
         INSERT INTO observations (session_id, project, type, title, created_at, updated_at)
           VALUES ('later', '/proj/app', 'bugfix', 'Cap the retry-after delay at 60 seconds', '2025-03-05T10:00:00.000Z', '2025-03-05T10:00:00.000Z');
         INSERT INTO observation_sources (observation_id, queue_id)
           SELECT max(o.id), max(q.id) FROM observations o, pending_queue q;",
    )
    .unwrap();
    let (_, again) =
        hook(&env, &pre("s1", ROOT, "Read", "/proj/app/retry.py")).expect("new memory");
    assert!(again.contains("Cap the retry-after delay"), "{again}");
    // A file with no history, and a file another project changed: nothing.
    assert_eq!(
        hook(&env, &pre("s1", ROOT, "Read", "/proj/app/new_module.py")),
        None
    );
    assert_eq!(
        hook(&env, &pre("s1", ROOT, "Edit", "/proj/other/config.py")),
        None
    );
    assert!(hook(&env, &pre("s1", OTHER, "Edit", "/proj/other/config.py")).is_some());
    // Tools that name no file, and excluded or disabled projects: nothing.
    let grep = json!({"hook_event_name": "PreToolUse", "session_id": "s3", "cwd": ROOT,
        "tool_name": "Grep", "tool_input": {"pattern": "retry", "path": "/proj/app/retry.py"}});
    assert_eq!(hook(&env, grep.to_string().as_bytes()), None);
    for (k, v) in [("MEM_EXCLUDE", "/proj/app"), ("MEM_DISABLE", "1")] {
        let mut c = env.cmd("mem-capture");
        c.env(k, v).arg("--recall");
        let out = crate::piped(&mut c, &pre("s4", ROOT, "Read", "/proj/app/retry.py"));
        assert_eq!(out.status.code(), Some(0));
        assert!(out.stdout.is_empty(), "{k}: {}", show(&out));
    }
}

#[test]
fn error_recall_tells_how_the_same_error_was_fixed_and_nothing_for_others() {
    let env = store();
    let fix: i64 = env.value("SELECT fix_obs FROM failures WHERE line LIKE 'ModuleNotFoundError%'");
    assert!(editors(&env, "/proj/app/requirements.txt").contains(&fix));
    // The same error elsewhere: another file, another line.
    let again = "Exit code 1\nTraceback (most recent call last):\n  File \"/home/me/app/tools/extract.py\", line 19, in main\nModuleNotFoundError: No module named 'requests'";
    let (event, text) = hook(&env, &failure("s1", again)).expect("recall");
    assert_eq!(event, "PostToolUseFailure");
    assert!(text.contains(&format!("fixed by o{fix} ")), "{text}");
    assert!(text.contains("No module named"), "{text}");
    assert_eq!(
        hook(&env, &failure("s1", again)),
        None,
        "told once per session"
    );
    // PostToolUse of Bash with a non-zero exit code counts as a failure too.
    let post = json!({"hook_event_name": "PostToolUse", "session_id": "s2", "cwd": ROOT,
        "tool_name": "Bash", "tool_input": {"command": "python extract.py"},
        "tool_response": {"exit_code": 1, "stdout": "", "stderr": again}});
    assert!(hook(&env, post.to_string().as_bytes()).is_some());
    // Another error, another module, an error of another project, a success: nothing.
    let other = "Exit code 1\nTraceback (most recent call last):\nModuleNotFoundError: No module named 'numpy'";
    assert_eq!(hook(&env, &failure("s3", other)), None);
    assert_eq!(
        hook(
            &env,
            &failure("s3", "Exit code 2\nTypeError: unsupported operand")
        ),
        None
    );
    let elsewhere = String::from_utf8(failure("s4", again))
        .unwrap()
        .replace(ROOT, OTHER);
    assert_eq!(hook(&env, elsewhere.as_bytes()), None);
    let ok = json!({"hook_event_name": "PostToolUse", "session_id": "s5", "cwd": ROOT,
        "tool_name": "Bash", "tool_input": {"command": "ls"},
        "tool_response": {"stdout": "a", "stderr": "", "exit_code": 0}});
    assert_eq!(hook(&env, ok.to_string().as_bytes()), None);
}

#[test]
fn a_subagent_gets_a_short_project_context_and_compaction_gets_the_block_again() {
    let env = store();
    let sub = json!({"hook_event_name": "SubagentStart", "session_id": "s1", "cwd": ROOT,
        "agent_id": "a1", "agent_type": "Explore"});
    let (event, text) = hook(&env, sub.to_string().as_bytes()).expect("context");
    assert_eq!(event, "SubagentStart");
    assert!(text.contains("retry.py"), "{text}");
    assert!(memkit::tokens::estimate(&text) <= 500, "{text}");
    let compact = json!({"hook_event_name": "SessionStart", "session_id": "s1", "cwd": ROOT,
        "source": "compact"});
    let (event, text) = hook(&env, compact.to_string().as_bytes()).expect("block");
    assert_eq!(event, "SessionStart");
    assert!(text.contains("retry.py"), "{text}");
}

#[test]
fn a_compaction_makes_the_turn_so_far_compressible() {
    let env = Env::new();
    let base = json!({"session_id": "long", "cwd": ROOT, "transcript_path": "/nonexistent.jsonl"});
    for extra in [
        json!({"hook_event_name": "UserPromptSubmit", "prompt": "Port the parser to the new tokenizer"}),
        json!({"hook_event_name": "PostToolUse", "tool_name": "Edit", "tool_use_id": "e1",
            "tool_input": {"file_path": "/proj/app/parser.py", "old_string": "tok = old()", "new_string": "tok = Tokenizer.new()"},
            "tool_response": {"filePath": "/proj/app/parser.py"}}),
        json!({"hook_event_name": "PreCompact", "trigger": "auto", "custom_instructions": null}),
    ] {
        env.ok("mem-capture", &["--hook"], &crate::event(&base, extra));
    }
    // The turn has no Stop yet: before, nothing of it was due until the grace time passed.
    env.ok("mem-compress", &["-q"], b"");
    assert!(env.count("SELECT count(*) FROM observations WHERE session_id = 'long'") >= 1);
}

#[test]
fn hostile_payloads_exit_zero_print_nothing_that_does_not_belong_and_store_nothing() {
    let env = store();
    let counts = |env: &Env| {
        (
            env.count("SELECT count(*) FROM pending_queue"),
            env.count("SELECT count(*) FROM event_log"),
            env.count("SELECT count(*) FROM observations"),
        )
    };
    let before = counts(&env);
    let long = format!("/proj/app/{}", "a".repeat(10 << 20));
    let mut non_utf8 = br#"{"hook_event_name": "PreToolUse", "session_id": "h", "cwd": "/proj/app", "tool_name": "Read", "tool_input": {"file_path": "/proj/app/re"#.to_vec();
    non_utf8.extend_from_slice(b"\xff\xfetry.py\"}}");
    for payload in [
        pre("h", ROOT, "Read", "/proj/app/logo.png"),
        pre("h", ROOT, "Read", &long),
        pre("h", ROOT, "Read", "/etc/passwd"),
        pre("h", ROOT, "NotebookEdit", ""),
        non_utf8,
        b"{\"hook_event_name\": \"PreToolUse\", \"tool_input\": 7}".to_vec(),
        b"not json".to_vec(),
        failure("h", &"\u{0}\u{1}binary\u{7f}".repeat(1000)),
    ] {
        assert_eq!(hook(&env, &payload), None);
    }
    assert_eq!(counts(&env), before, "a recall hook stores nothing");
    // Nothing remembered for what was never told.
    let markers = env.home().join("recall");
    let told = std::fs::read_dir(&markers).map(|d| d.count()).unwrap_or(0);
    assert_eq!(told, 0);
    // No database yet: nothing, and none is created.
    let fresh = Env::new();
    assert_eq!(
        hook(&fresh, &pre("h", ROOT, "Read", "/proj/app/retry.py")),
        None
    );
    assert_eq!(hook(&fresh, &failure("h", TRACEBACK)), None);
    assert!(!fresh.db_path().exists());
}
