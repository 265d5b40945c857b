//! The secret corpus (tests/fixtures/secrets/corpus.jsonl: synthetic secrets in every format
//! memkit redacts) through every way in — hook payloads (tool input, tool response as a string
//! and as a JSON object with secret-keyed values, numbers included), the spool, prompts, Stop's
//! last message, imported transcripts (typed prompts, assistant text, tool calls and results,
//! summary lines), notes — then the whole pipeline (mem-compress, mem-embed, mem-index) and the
//! outputs (mem-context, mem-search). No file under the data home and no output may hold any
//! secret, and every redaction names its kind.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use crate::compress::{Mock, anthropic_reply, obs_json};
use crate::{Env, fixtures, jsonl, show};

pub struct Secret {
    pub kind: String,
    pub secret: String,
    pub text: Option<String>,
    pub json: Option<Value>,
}

pub fn corpus() -> Vec<Secret> {
    let text = std::fs::read_to_string(fixtures().join("secrets/corpus.jsonl")).unwrap();
    let all: Vec<Secret> = text
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            Secret {
                kind: v["kind"].as_str().unwrap().into(),
                secret: v["secret"].as_str().unwrap().into(),
                text: v["text"].as_str().map(str::to_string),
                json: v.get("json").cloned(),
            }
        })
        .collect();
    assert!(all.len() >= 40, "the corpus has {} formats", all.len());
    all
}

/// What must be found nowhere: each secret as it is, and each run of 8 or more letters and
/// digits in it, lowercase — the form in which FTS5 and tantivy keep terms.
pub fn probes(corpus: &[Secret]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for s in corpus {
        out.push((s.secret.clone(), s.secret.clone()));
        let pieces: Vec<String> = s
            .secret
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|p| p.len() >= 8)
            .map(str::to_ascii_lowercase)
            .collect();
        assert!(
            !pieces.is_empty(),
            "{:?} needs a run of 8 letters or digits to be searched for",
            s.secret
        );
        out.extend(pieces.into_iter().map(|p| (p, s.secret.clone())));
    }
    out
}

/// Fails naming the secret and where it was found.
pub fn assert_clean(what: &str, bytes: &[u8], probes: &[(String, String)]) {
    let lower = bytes.to_ascii_lowercase();
    for (probe, secret) in probes {
        let (hay, needle) = if probe == secret {
            (bytes, probe.as_bytes())
        } else {
            (&lower[..], probe.as_bytes())
        };
        if let Some(at) = memchr::memmem::find(hay, needle) {
            let a = at.saturating_sub(80);
            let b = (at + needle.len() + 80).min(bytes.len());
            panic!(
                "{what} holds {secret:?} (as {probe:?}): …{}…",
                String::from_utf8_lossy(&bytes[a..b])
            );
        }
    }
}

/// Every file under `dir`, at any depth.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// The BM25 index's terms (its files keep them compressed), space-separated.
pub fn bm25_terms(env: &Env) -> Vec<u8> {
    let bm25 =
        memkit::index::bm25::Bm25::open(&memkit::index::Layout::new(&env.home()).bm25()).unwrap();
    let searcher = bm25.reader.searcher();
    let mut terms = Vec::new();
    for seg in searcher.segment_readers() {
        let inv = seg.inverted_index(bm25.fields.text).unwrap();
        let mut stream = inv.terms().stream().unwrap();
        while stream.advance() {
            terms.extend_from_slice(stream.key());
            terms.push(b' ');
        }
    }
    terms
}

/// The FTS5 index's vocabulary, space-separated.
pub fn fts_terms(env: &Env) -> String {
    let db = env.db();
    db.execute_batch(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.vocab USING fts5vocab(main, observations_fts, row)",
    )
    .unwrap();
    db.query_row(
        "SELECT coalesce(group_concat(term, ' '), '') FROM temp.vocab",
        [],
        |r| r.get(0),
    )
    .unwrap()
}

const PROJECT: &str = "/tmp/memkit-secret-project";

fn hook(env: &Env, tool: &str, payload: Value) {
    let out = env.run(tool, &["--hook"], payload.to_string().as_bytes());
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
}

/// A transcript of one session: each corpus text typed as a prompt, answered in assistant text,
/// run as a Bash command whose result (and structured result) holds it too; a summary line.
fn transcript(dir: &Path, session: &str, corpus: &[Secret]) {
    let mut lines = Vec::new();
    let mut parent: Option<String> = None;
    let mut n = 0;
    let mut line = |v: Value, lines: &mut Vec<String>| {
        n += 1;
        let uuid = format!("00000000-0000-4000-8000-{n:012}");
        let mut v = v;
        v["uuid"] = json!(uuid);
        v["parentUuid"] = json!(parent);
        v["sessionId"] = json!(session);
        v["cwd"] = json!(PROJECT);
        v["isSidechain"] = json!(false);
        v["userType"] = json!("external");
        v["version"] = json!("2.0.0");
        v["timestamp"] = json!(format!("2026-01-01T00:{:02}:{:02}.000Z", n / 60, n % 60));
        lines.push(v.to_string());
        parent = Some(uuid.clone());
        uuid
    };
    let mut last = String::new();
    for (i, s) in corpus.iter().enumerate() {
        let text = s
            .text
            .clone()
            .unwrap_or_else(|| format!("config: {}", s.json.as_ref().unwrap()));
        line(
            json!({"type": "user", "message": {"role": "user", "content": format!("Please look at this: {text}")}}),
            &mut lines,
        );
        let id = format!("toolu_secret{i:04}");
        line(
            json!({"type": "assistant", "message": {"role": "assistant", "model": "claude-test", "content": [
                {"type": "text", "text": format!("I see {text}")},
                {"type": "tool_use", "id": id, "name": "Bash", "input": {"command": text, "description": "Check it"}}]}}),
            &mut lines,
        );
        let result = s
            .json
            .clone()
            .unwrap_or_else(|| json!({"stdout": text, "stderr": "", "interrupted": false}));
        last = line(
            json!({"type": "user", "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": id, "content": text, "is_error": false}]},
                "toolUseResult": result}),
            &mut lines,
        );
    }
    lines.push(
        json!({"type": "summary", "summary": "Deploy with password Sm9Kq2Lz7Xm4Vr8", "leafUuid": last})
            .to_string(),
    );
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join(format!("{session}.jsonl")),
        lines.join("\n") + "\n",
    )
    .unwrap();
}

#[test]
fn no_secret_of_the_corpus_reaches_any_file_or_output() {
    let corpus = corpus();
    let mut probes = probes(&corpus);
    probes.push(("sm9kq2lz7xm4vr8".into(), "Sm9Kq2Lz7Xm4Vr8".into()));
    let models = crate::embed::models();
    let env = Env::new()
        .set("MEM_MODELS", models.to_str().unwrap())
        .set("MEM_SEARCH_GIT_FILES", "0");
    let texts: Vec<&str> = corpus.iter().filter_map(|s| s.text.as_deref()).collect();
    let all_text = texts.join("\n\n");
    let mut objects = serde_json::Map::new();
    for (i, s) in corpus.iter().filter(|s| s.json.is_some()).enumerate() {
        objects.insert(format!("result_{i}"), s.json.clone().unwrap());
    }
    let base = |session: &str, event: &str| {
        json!({"session_id": session, "hook_event_name": event, "cwd": PROJECT,
               "transcript_path": "/nonexistent/transcript.jsonl"})
    };
    let with = |mut b: Value, extra: Value| {
        for (k, v) in extra.as_object().unwrap() {
            b[k] = v.clone();
        }
        b
    };

    // Hooks: the whole corpus at once, as Claude Code would send it.
    let h = "hook-session";
    hook(
        &env,
        "mem-capture",
        with(base(h, "SessionStart"), json!({"source": "startup"})),
    );
    hook(
        &env,
        "mem-capture",
        with(base(h, "UserPromptSubmit"), json!({"prompt": all_text})),
    );
    hook(
        &env,
        "mem-capture",
        with(
            base(h, "PostToolUse"),
            json!({"tool_name": "Bash", "tool_use_id": "toolu_hook1",
                   "tool_input": {"command": all_text, "description": "Show the config"},
                   "tool_response": {"stdout": all_text, "stderr": "", "interrupted": false}}),
        ),
    );
    hook(
        &env,
        "mem-capture",
        with(
            base(h, "PostToolUse"),
            json!({"tool_name": "mcp__vault__read", "tool_use_id": "toolu_hook2",
                   "tool_input": {"path": "secret/app"}, "tool_response": all_text}),
        ),
    );
    hook(
        &env,
        "mem-capture",
        with(
            base(h, "PostToolUse"),
            json!({"tool_name": "mcp__config__get", "tool_use_id": "toolu_hook3",
                   "tool_input": {"service": "billing"}, "tool_response": Value::Object(objects.clone())}),
        ),
    );
    // The spool: a payload made while another process holds the database.
    let conn = env.db();
    conn.execute_batch("BEGIN EXCLUSIVE").unwrap();
    hook(
        &env,
        "mem-capture",
        with(
            base(h, "PostToolUseFailure"),
            json!({"tool_name": "Bash", "tool_use_id": "toolu_hook4",
                   "tool_input": {"command": all_text}, "error": all_text}),
        ),
    );
    let spool = env.home().join("spool");
    let spooled = files_under(&spool);
    assert_eq!(spooled.len(), 1, "the locked hook spooled its payload");
    for f in &spooled {
        assert_clean(
            &f.display().to_string(),
            &std::fs::read(f).unwrap(),
            &probes,
        );
    }
    conn.execute_batch("ROLLBACK").unwrap();
    drop(conn);
    hook(
        &env,
        "mem-capture",
        with(base(h, "Stop"), json!({"last_assistant_message": all_text})),
    );
    assert!(
        files_under(&spool).is_empty(),
        "the next hook drained the spool"
    );

    // Each text on its own, through the JSONL path, as prompt, tool input and tool response.
    let s2 = "batch-session";
    let mut batch = String::new();
    for (i, s) in corpus.iter().enumerate() {
        let text = s
            .text
            .clone()
            .unwrap_or_else(|| s.json.as_ref().unwrap().to_string());
        let response = s.json.clone().unwrap_or_else(|| json!(text));
        for p in [
            with(
                base(s2, "UserPromptSubmit"),
                json!({"prompt": text, "prompt_id": format!("p{i}")}),
            ),
            with(
                base(s2, "PostToolUse"),
                json!({"tool_name": "Bash", "tool_use_id": format!("toolu_b{i}"),
                       "tool_input": {"command": text}, "tool_response": response}),
            ),
        ] {
            batch.push_str(&p.to_string());
            batch.push('\n');
        }
    }
    batch.push_str(&with(base(s2, "Stop"), json!({"last_assistant_message": "Done."})).to_string());
    batch.push('\n');
    env.ok("mem-capture", &["-"], batch.as_bytes());

    // Transcripts, and notes.
    let tdir = env
        .dir
        .path()
        .join("claude/projects/-tmp-memkit-secret-project");
    transcript(&tdir, "transcript-session", &corpus);
    env.ok(
        "mem-capture",
        &[
            "--transcripts",
            env.dir.path().join("claude/projects").to_str().unwrap(),
        ],
        b"",
    );
    for t in &texts {
        let note = format!("--note={t}");
        let out = env.ok("mem-capture", &[&note, "--project", PROJECT], b"");
        assert_clean("mem-capture --note output", &out.stdout, &probes);
    }

    // The pipeline.
    let out = env.ok("mem-compress", &[], b"");
    assert_clean("mem-compress output", &out.stdout, &probes);
    let summary = jsonl(&out).into_iter().last().unwrap();
    assert!(
        summary["counts"]["observations"].as_u64().unwrap() > 60,
        "{summary}"
    );
    assert!(
        summary["counts"]["summaries"].as_u64().unwrap() >= 2,
        "{summary}"
    );
    let out = env.ok("mem-embed", &["--model", "qwen3-tiny"], b"");
    assert_clean("mem-embed output", &out.stdout, &probes);
    let out = env.ok("mem-index", &[], b"");
    assert_clean("mem-index output", &out.stdout, &probes);

    // What later sessions are shown.
    let ctx = env.ok(
        "mem-context",
        &["--hook"],
        with(base("next", "SessionStart"), json!({"source": "startup"}))
            .to_string()
            .as_bytes(),
    );
    assert!(
        String::from_utf8_lossy(&ctx.stdout).contains("additionalContext"),
        "{}",
        show(&ctx)
    );
    assert_clean("mem-context --hook (SessionStart)", &ctx.stdout, &probes);
    for prompt in [
        "what is the staging db password",
        "which token and api key does deploy use",
        "the database url and redis password",
    ] {
        let out = env.run(
            "mem-context",
            &["--hook"],
            with(base("next", "UserPromptSubmit"), json!({"prompt": prompt}))
                .to_string()
                .as_bytes(),
        );
        assert_clean("mem-context --hook (prompt)", &out.stdout, &probes);
    }
    let mut queries = String::new();
    for q in [
        "password",
        "token",
        "secret key",
        "api key",
        "private key",
        "deploy",
        "database",
    ]
    .iter()
    .map(|q| q.to_string())
    .chain(probes.iter().map(|(p, _)| p.clone()))
    {
        queries.push_str(&json!({"query": q, "limit": 50}).to_string());
        queries.push('\n');
    }
    let out = env.run(
        "mem-search",
        &["--batch", "-", "--no-model", "--all-projects"],
        queries.as_bytes(),
    );
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("[REDACTED:"),
        "search finds the redacted records: {}",
        show(&out)
    );
    assert_clean("mem-search output", &out.stdout, &probes);

    // Every file of the data home: database, WAL, indexes, logs, spool.
    let files = files_under(&env.home());
    for want in ["mem.db", "index", "logs"] {
        assert!(
            files.iter().any(|f| f.to_string_lossy().contains(want)),
            "no {want} under the data home: {files:?}"
        );
    }
    for f in &files {
        assert_clean(
            &f.display().to_string(),
            &std::fs::read(f).unwrap(),
            &probes,
        );
    }
    let terms = bm25_terms(&env);
    assert!(terms.len() > 1000, "the index has terms");
    assert_clean("the BM25 index's terms", &terms, &probes);
    assert_clean(
        "the FTS5 index's terms",
        fts_terms(&env).as_bytes(),
        &probes,
    );
    let db = env.db();

    // What was redacted says what it was.
    let stored: String = db
        .query_row(
            "SELECT group_concat(payload, ' ') FROM pending_queue",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let observations: String = db
        .query_row(
            "SELECT group_concat(title || ' ' || summary || ' ' || coalesce(detail, ''), ' ') FROM observations",
            [],
            |r| r.get(0),
        )
        .unwrap();
    for s in &corpus {
        let marker = format!("[REDACTED:{}]", s.kind);
        assert!(stored.contains(&marker), "no {marker} in the queue");
    }
    assert!(
        observations.contains("[REDACTED:"),
        "observations show markers"
    );
}

/// Item 2 of issue 11: a session summary re-reads the transcript and cut its messages before
/// redacting them, so a cut inside a `<private>` span (or a key block) kept what came before
/// the cut.
#[test]
fn session_summaries_redact_before_they_cut() {
    let env = Env::new();
    let dir = env.dir.path().join("projects/-tmp-summary");
    std::fs::create_dir_all(&dir).unwrap();
    let private = format!(
        "Here is what to keep in mind: <private>the alarm code is 4471 and the spare key is under the blue pot {}</private> thanks",
        "and more private words ".repeat(20)
    );
    let key = format!(
        "-----BEGIN OPENSSH PRIVATE KEY-----\n{}\n-----END OPENSSH PRIVATE KEY-----",
        ["Su7Kq2Lz9Xm4Vr8Tn3Wp6Ys1Jd5Fb0CaQe8HkLm2Nn4Pp6Rr8Tt0Vv2Xx4Zz6AbCdEfGh"; 6].join("\n")
    );
    let lines = [
        json!({"type": "user", "uuid": "u1", "parentUuid": null, "sessionId": "sum", "cwd": "/tmp/summary",
               "timestamp": "2026-01-01T00:00:00.000Z", "message": {"role": "user", "content": "Set up the backups"}}),
        json!({"type": "assistant", "uuid": "u2", "parentUuid": "u1", "sessionId": "sum", "cwd": "/tmp/summary",
               "timestamp": "2026-01-01T00:00:01.000Z", "message": {"role": "assistant", "content": [{"type": "text", "text": "Done."}]}}),
        json!({"type": "user", "uuid": "u3", "parentUuid": "u2", "sessionId": "sum", "cwd": "/tmp/summary",
               "timestamp": "2026-01-01T00:00:02.000Z", "message": {"role": "user", "content": private}}),
        json!({"type": "assistant", "uuid": "u4", "parentUuid": "u3", "sessionId": "sum", "cwd": "/tmp/summary",
               "timestamp": "2026-01-01T00:00:03.000Z", "message": {"role": "assistant", "content": [{"type": "text", "text": format!("Stored the deploy key:\n{key}")}]}}),
    ];
    let path = dir.join("sum.jsonl");
    std::fs::write(
        &path,
        lines
            .iter()
            .map(|l| l.to_string() + "\n")
            .collect::<String>(),
    )
    .unwrap();
    env.ok(
        "mem-capture",
        &["--transcript", path.to_str().unwrap()],
        b"",
    );
    env.ok("mem-compress", &[], b"");
    let summary: String = env
        .db()
        .query_row(
            "SELECT summary FROM sessions WHERE session_id = 'sum'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    for leak in ["alarm code", "blue pot", "private words", "Su7Kq2Lz9Xm4"] {
        assert!(
            !summary.contains(leak),
            "{leak:?} in the summary: {summary}"
        );
    }
    assert!(
        summary.contains("[REDACTED:private]") && summary.contains("[REDACTED:private_key]"),
        "{summary}"
    );
}

/// What is sent to a model is redacted, also in filter mode where the captures come from
/// anywhere (here: raw, never redacted).
#[test]
fn llm_prompts_hold_no_secret_even_from_raw_captures() {
    let corpus = corpus();
    let probes = probes(&corpus);
    let mock = Mock::start(Duration::ZERO, |n, _| {
        (200, anthropic_reply(&obs_json(n, &[]), 100, 20))
    });
    let env = Env::new()
        .set("MEM_LLM", "anthropic")
        .set("MEM_LLM_URL", &mock.url)
        .set("ANTHROPIC_API_KEY", "test-key")
        .set("MEM_LLM_BACKOFF_MS", "10");
    let all: String = corpus
        .iter()
        .map(|s| {
            s.text
                .clone()
                .unwrap_or_else(|| s.json.as_ref().unwrap().to_string())
        })
        .collect::<Vec<_>>()
        .join("\n\n");
    let objects: Vec<Value> = corpus.iter().filter_map(|s| s.json.clone()).collect();
    let caps = [
        json!({"type": "capture", "v": 1, "id": 1, "session_id": "raw", "project": "/p", "event": "UserPromptSubmit",
               "priority": "high", "status": "raw", "payload": {"prompt": all}, "created_at": "2026-01-01T00:00:00.000Z"}),
        json!({"type": "capture", "v": 1, "id": 2, "session_id": "raw", "project": "/p", "event": "PostToolUse", "tool_name": "Bash",
               "priority": "high", "status": "raw",
               "payload": {"tool_name": "Bash", "tool_input": {"command": all}, "tool_response": {"stdout": all, "result": objects}},
               "created_at": "2026-01-01T00:00:01.000Z"}),
        json!({"type": "capture", "v": 1, "id": 3, "session_id": "raw", "event": "Stop", "priority": "normal", "status": "raw",
               "payload": {"last_assistant_message": all}, "created_at": "2026-01-01T00:00:02.000Z"}),
    ];
    let input: String = caps.iter().map(|c| c.to_string() + "\n").collect();
    let out = env.ok("mem-compress", &["-"], input.as_bytes());
    assert!(mock.calls() >= 1, "{}", show(&out));
    for seen in mock.seen.lock().unwrap().iter() {
        assert_clean(
            "a request to the model",
            seen.body.to_string().as_bytes(),
            &probes,
        );
    }
    assert_clean("mem-compress - output", &out.stdout, &probes);
}
