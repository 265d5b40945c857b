//! The toolkit as a whole: dispatcher, man pages, exit codes, pipes.

use std::process::Stdio;

use crate::{Env, jsonl, show};

#[test]
fn man_pages_are_fresh() {
    let env = Env::new();
    let out_dir = env.dir.path().join("man1");
    env.ok("mem", &["gen-man", out_dir.to_str().unwrap()], b"");
    let committed = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("man/man1");
    for t in memkit::cmd::ALL {
        let name = format!("{}.1", t.name);
        let fresh = std::fs::read_to_string(out_dir.join(&name)).unwrap();
        for section in ["EXIT STATUS", "ENVIRONMENT", "FILES", "EXAMPLES"] {
            assert!(fresh.contains(section), "{name} lacks {section}");
        }
        let old = std::fs::read_to_string(committed.join(&name)).unwrap_or_default();
        assert!(
            old == fresh,
            "man/man1/{name} is stale: run `cargo run --bin mem -- gen-man man/man1`"
        );
    }
}

/// The man pages' prose repeats some defaults; each must be the one `config` declares.
#[test]
fn man_page_prose_states_the_declared_defaults() {
    use memkit::config::*;
    let man = |name: &str| {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("man/man1");
        let roff = std::fs::read_to_string(dir.join(format!("{name}.1"))).unwrap();
        roff.replace("\\-", "-")
    };
    let thousands = |n: usize| match n {
        1000.. => format!("{},{:03}", n / 1000, n % 1000),
        _ => n.to_string(),
    };
    let search = man("mem-search");
    for said in [
        format!("fusion (k = {})", SEARCH_RRF_K.default),
        format!("half-life {} days", SEARCH_HALF_LIFE_DAYS.default),
        format!(
            "k1 {} and b {}",
            SEARCH_BM25_K1.default, SEARCH_BM25_B.default
        ),
        format!("at least {},", SEARCH_TAG_SIMILARITY.default),
        format!("the first {} fused hits", SEARCH_RERANK_DEPTH.default),
        format!("(w_time {})", SEARCH_WEIGHT_TIME.default),
    ] {
        assert!(
            search.contains(&said),
            "mem-search(1) does not say {said:?}"
        );
    }
    let types = search.split("type weights ").nth(1).unwrap_or_default();
    let types = types.split(';').next().unwrap_or_default();
    for (kind, w) in SEARCH_TYPE_WEIGHTS.defaults() {
        let said = format!("{kind} {w}");
        assert!(
            types.contains(&said),
            "mem-search(1)'s type weights lack {said:?}"
        );
    }
    let said = format!("tokens ({};", thousands(CONTEXT_TOKENS.default));
    assert!(
        man("mem-context").contains(&said),
        "mem-context(1): {said:?}"
    );
    let said = format!("MEM_RAW_RESPONSE_DAYS, {}", RAW_RESPONSE_DAYS.default);
    assert!(man("mem-prune").contains(&said), "mem-prune(1): {said:?}");
}

#[test]
fn mem_dispatches_to_tools_and_lists_them() {
    let env = Env::new();
    let out = env.ok("mem", &["help"], b"");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("capture") && text.contains("install"),
        "{text}"
    );
    // Each tool is listed with its own one-line summary, not the package's description.
    let summaries: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("  "))
        .map(|l| l.trim().split_once(' ').map(|x| x.1.trim()).unwrap_or(""))
        .collect();
    assert!(summaries.len() >= 8, "{text}");
    let mut distinct = summaries.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), summaries.len(), "{text}");
    let out = env.ok("mem", &["capture", "--note", "via the dispatcher"], b"");
    assert_eq!(jsonl(&out)[0]["event"], "Note");
    let out = env.run("mem", &["nosuchtool"], b"");
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("mem: error: unknown tool"));
    let out = env.ok("mem", &["completions", "bash"], b"");
    assert!(String::from_utf8_lossy(&out.stdout).contains("mem-capture"));
}

#[test]
fn usage_errors_exit_2_with_the_program_name() {
    let env = Env::new();
    let out = env.run("mem-capture", &["--no-such-flag"], b"");
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let out = env.run("mem-capture", &[], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("mem-capture: error:"));
}

#[test]
fn bad_jsonl_input_names_the_line_and_keeps_the_good_ones() {
    let env = Env::new();
    let input = b"{\"session_id\":\"a\",\"hook_event_name\":\"UserPromptSubmit\",\"prompt\":\"first prompt\"}\nnot json\n{\"session_id\":\"a\",\"hook_event_name\":\"UserPromptSubmit\",\"prompt\":\"third\"}\n";
    let out = env.run("mem-capture", &["-"], input);
    assert_eq!(out.status.code(), Some(3), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("<stdin>:2: invalid JSON"),
        "{}",
        show(&out)
    );
    assert_eq!(env.count("SELECT count(*) FROM pending_queue"), 2);
}

/// The four JSONL readers (mem-capture FILE, mem-compress FILE, mem-embed FILE, mem-search
/// --batch FILE) share one reader and one bad-line policy: the same bad line gets the same
/// warning naming the input and the line, the good lines around it are processed, and the tool
/// ends with the same message and exit 3.
#[test]
fn every_jsonl_reader_treats_a_bad_line_alike() {
    let env = Env::new();
    let around = |first: &str, third: &str| format!("{first}\n{{\"text\": oops}}\n{third}\n");
    let check = |tool: &str, out: &std::process::Output| {
        assert_eq!(out.status.code(), Some(3), "{tool}: {}", show(out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("{tool}: warning: <stdin>:2: invalid JSON: ")),
            "{tool}: {err}"
        );
        assert!(
            err.ends_with(&format!(
                "{tool}: error: <stdin>: 1 bad line(s) skipped; the others were processed\n"
            )),
            "{tool}: {err}"
        );
    };

    let payload = |prompt: &str| {
        serde_json::json!({"session_id": "s", "hook_event_name": "UserPromptSubmit", "prompt": prompt})
            .to_string()
    };
    let out = env.run(
        "mem-capture",
        &["-"],
        around(&payload("first prompt"), &payload("third prompt")).as_bytes(),
    );
    check("mem-capture", &out);
    assert_eq!(env.count("SELECT count(*) FROM pending_queue"), 2);

    let note = |text: &str| {
        let out = env.ok("mem-capture", &["--note", text, "--format", "jsonl"], b"");
        jsonl(&out)[0].to_string()
    };
    let (a, b) = (note("deploys need the VPN"), note("the VPN needs a token"));
    let out = env.run("mem-compress", &["-"], around(&a, &b).as_bytes());
    check("mem-compress", &out);
    let obs = jsonl(&out)
        .into_iter()
        .filter(|r| r["type"] == "observation")
        .count();
    assert_eq!(obs, 2, "{}", show(&out));

    // Typed records without text pass through mem-embed without loading a model.
    let out = env.run(
        "mem-embed",
        &["-"],
        around("{\"type\":\"x\",\"n\":1}", "{\"type\":\"x\",\"n\":3}").as_bytes(),
    );
    check("mem-embed", &out);
    let ns: Vec<_> = jsonl(&out).iter().map(|r| r["n"].clone()).collect();
    assert_eq!(ns, [1, 3], "{}", show(&out));

    env.ok("mem-compress", &[], b"");
    let out = env.run(
        "mem-search",
        &["--batch", "-"],
        around(
            "{\"id\":1,\"query\":\"deploys\",\"all_projects\":true}",
            "{\"id\":3,\"query\":\"token\",\"all_projects\":true}",
        )
        .as_bytes(),
    );
    check("mem-search", &out);
    let ids: Vec<_> = jsonl(&out).iter().map(|h| h["query_id"].clone()).collect();
    assert!(
        ids.contains(&1.into()) && ids.contains(&3.into()),
        "{}",
        show(&out)
    );
}

#[test]
fn format_json_is_one_array_of_the_records() {
    let env = Env::new();
    let out = env.ok(
        "mem-capture",
        &["--note", "one array", "--format", "json"],
        b"",
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    let recs = v.as_array().expect("an array");
    assert_eq!(recs[0]["event"], "Note", "{v}");
    // jsonl stays one object per line.
    let out = env.ok(
        "mem-capture",
        &["--note", "lines", "--format", "jsonl"],
        b"",
    );
    assert_eq!(jsonl(&out).len(), recs.len());
    // Nothing found is still one document.
    let out = env.run(
        "mem-search",
        &["--format", "json", "--all-projects", "zebra"],
        b"",
    );
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "[]\n");
}

#[test]
fn a_closed_pipe_is_a_silent_success() {
    let env = Env::new();
    let dir = crate::fixtures().join("transcripts");
    let mut child = env
        .cmd("mem-capture")
        .args(["--transcripts", dir.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take()); // the reader goes away, like `| head -0`
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(out.stderr.is_empty(), "{}", show(&out));
}

#[test]
fn plugin_files_register_the_capture_hook_for_every_event_and_the_pipeline_on_stop() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let plugin: serde_json::Value =
        serde_json::from_slice(&std::fs::read(root.join(".claude-plugin/plugin.json")).unwrap())
            .unwrap();
    assert_eq!(plugin["name"], "memkit");
    let hooks: serde_json::Value =
        serde_json::from_slice(&std::fs::read(root.join("hooks/hooks.json")).unwrap()).unwrap();
    for ev in [
        "SessionStart",
        "UserPromptSubmit",
        "PostToolUse",
        "PostToolUseFailure",
        "PreCompact",
        "SubagentStop",
        "Stop",
        "SessionEnd",
    ] {
        let cmds: Vec<&str> = hooks["hooks"][ev]
            .as_array()
            .unwrap_or_else(|| panic!("{ev} missing"))
            .iter()
            .flat_map(|g| {
                g["hooks"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|h| h["command"].as_str().unwrap())
            })
            .collect();
        // Stop and SessionEnd store the event, then start the pipeline that compresses it: in
        // one handler, since Claude Code runs an event's handlers in parallel.
        let capture = match ev {
            "Stop" | "SessionEnd" | "PreCompact" => "mem-capture --hook; mem pipeline --detach",
            _ => "mem-capture --hook",
        };
        assert!(cmds.contains(&capture), "{ev}: {cmds:?}");
        let context = match ev {
            "SessionStart" => Some("mem-context --hook"),
            "PostToolUseFailure" => Some("mem-capture --recall"),
            "UserPromptSubmit" => Some("mem-context --hook --prompt"),
            _ => None,
        };
        if let Some(c) = context {
            assert!(cmds.contains(&c), "{ev}: {cmds:?}");
        }
    }
    // Recall: before file tools and after a Bash call (by mem-capture, which starts fastest),
    // and for subagents, with those matchers.
    for (ev, matcher, command) in [
        (
            "PreToolUse",
            "Read|Edit|Write|MultiEdit|NotebookEdit",
            "mem-capture --recall",
        ),
        ("PostToolUse", "Bash", "mem-capture --recall"),
        ("SubagentStart", "", "mem-context --hook"),
    ] {
        let groups = hooks["hooks"][ev].as_array().unwrap();
        assert!(
            groups
                .iter()
                .any(|g| g["matcher"] == matcher && g["hooks"][0]["command"] == command),
            "{ev}: {groups:?}"
        );
    }
    // The skill that teaches Claude to drill down: small, and naming only tools that exist.
    let skills = root.join(plugin["skills"].as_str().expect("skills path"));
    let skill = std::fs::read_to_string(skills.join("memkit-search/SKILL.md")).unwrap();
    assert!(skill.starts_with("---\nname: memkit-search\ndescription: "));
    let body = skill.splitn(3, "---").nth(2).unwrap();
    let tokens = memkit::tokens::estimate(body);
    assert!(tokens <= 250, "{tokens} tokens");
    for word in skill.split(|c: char| !(c.is_alphanumeric() || c == '-')) {
        if word.starts_with("mem-") {
            assert!(memkit::cmd::find(word).is_some(), "the skill names {word}");
        }
    }
}

#[test]
fn tables_fit_columns_and_never_wrap_times() {
    let env = crate::Env::new().set("COLUMNS", "100");
    let dir = crate::fixtures().join("transcripts/spotter");
    let out = env.ok(
        "mem-capture",
        &["--transcripts", dir.to_str().unwrap(), "--format", "table"],
        b"",
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.lines().count() > 3, "{text}");
    for l in text.lines() {
        assert!(l.chars().count() <= 100, "wider than $COLUMNS: {l}");
    }
    // The start times stay whole: the session ids and paths take the squeeze.
    assert!(text.contains("2026-02-10T21:54:53.186Z"), "{text}");
}
