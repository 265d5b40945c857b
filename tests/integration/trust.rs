//! What a user trusts memkit with: hooks that never hang or lose an event (held locks, full
//! disks, read-only homes, broken payloads), exclusions that hold, and pipeline stages that do
//! not stall on what a payload points at.

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::{Env, show};

fn tool_call(session: &str, cwd: &str, stdout: &str) -> Value {
    json!({
        "session_id": session, "hook_event_name": "PostToolUse", "cwd": cwd,
        "tool_name": "Bash", "tool_input": {"command": "cargo test --workspace"},
        "tool_response": {"stdout": stdout}, "tool_use_id": format!("toolu_{session}")
    })
}

/// Events with no natural key: a re-store of any of them would be a duplicate row.
fn keyless_events(n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| match i % 3 {
            0 => json!({"session_id": format!("k{i}"), "hook_event_name": "Stop", "cwd": "/tmp/kproj"}),
            1 => json!({"session_id": format!("k{i}"), "hook_event_name": "UserPromptSubmit",
                        "cwd": "/tmp/kproj", "prompt": format!("prompt number {i}")}),
            _ => json!({"session_id": format!("k{i}"), "hook_event_name": "PostToolUse",
                        "cwd": "/tmp/kproj", "tool_name": "Bash",
                        "tool_input": {"command": format!("echo {i} and some more words here")},
                        "tool_response": {"stdout": "a response long enough to be kept"}}),
        })
        .collect()
}

fn spool_files(env: &Env) -> Vec<String> {
    std::fs::read_dir(env.home().join("spool"))
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// A connection holding the database the way another program may: exclusive locking mode with
/// a write transaction open, so every other process gets SQLITE_BUSY on everything.
fn hold_exclusively(env: &Env) -> rusqlite::Connection {
    let conn = env.db();
    conn.execute_batch("PRAGMA locking_mode=EXCLUSIVE; BEGIN EXCLUSIVE;")
        .unwrap();
    conn.execute(
        "INSERT INTO event_log (ts, event, level) VALUES ('x', 'holder', 'info')",
        [],
    )
    .unwrap();
    conn
}

#[test]
fn hooks_under_an_exclusive_lock_give_up_at_once_spool_and_are_stored_exactly_once() {
    let env = Env::new();
    env.ok(
        "mem-capture",
        &["--hook"],
        tool_call("first", "/tmp/kproj", "stored before the lock was taken")
            .to_string()
            .as_bytes(),
    );
    let mut events = keyless_events(12);
    // And one with a natural key (its tool_use_id).
    events.push(tool_call(
        "keyed",
        "/tmp/kproj",
        "a keyed call made under the lock",
    ));
    let holder = hold_exclusively(&env);
    for ev in &events {
        let start = Instant::now();
        let out = env.run("mem-capture", &["--hook"], ev.to_string().as_bytes());
        let took = start.elapsed();
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert!(out.stdout.is_empty());
        // The design wait is 0.5 s; this bound only catches a hang (it was 617 s).
        assert!(took < Duration::from_secs(5), "hook took {took:?}");
    }
    // The SessionStart hook gives up too, saying nothing.
    let start = Instant::now();
    let payload =
        json!({"hook_event_name": "SessionStart", "session_id": "n", "cwd": "/tmp/kproj"});
    let out = env.run("mem-context", &["--hook"], payload.to_string().as_bytes());
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    let spooled = spool_files(&env);
    assert_eq!(spooled.len(), events.len(), "{spooled:?}");
    assert!(spooled.iter().all(|f| f.ends_with(".json")), "{spooled:?}");
    drop(holder);

    // Released: many hooks at once drain the spool; each event is stored exactly once.
    let children: Vec<_> = (0..8)
        .map(|i| {
            let mut c = env.cmd("mem-capture");
            c.arg("--hook").stdin(Stdio::piped()).stdout(Stdio::null());
            let mut child = c.spawn().unwrap();
            let ev = tool_call(
                &format!("after{i}"),
                "/tmp/kproj",
                "stored after the lock went away",
            );
            child
                .stdin
                .take()
                .unwrap()
                .write_all(ev.to_string().as_bytes())
                .unwrap();
            child
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    assert!(spool_files(&env).is_empty(), "{:?}", spool_files(&env));
    for (i, ev) in events.iter().enumerate() {
        let sid = ev["session_id"].as_str().unwrap();
        let n = env.count(&format!(
            "SELECT count(*) FROM pending_queue WHERE session_id = '{sid}'"
        ));
        assert_eq!(
            n, 1,
            "event {i} ({}) stored {n} times",
            ev["hook_event_name"]
        );
    }
    assert_eq!(
        env.count("SELECT count(*) FROM event_log WHERE event = 'spooled'"),
        events.len() as i64
    );
    assert_eq!(
        env.count("SELECT count(*) FROM pending_queue WHERE session_id LIKE 'after%'"),
        8
    );
}

#[test]
fn a_payload_with_a_lone_surrogate_is_stored_with_a_replacement_character() {
    let env = Env::new();
    // What Node's JSON.stringify writes for a string cut in the middle of an emoji.
    let payload = r#"{"session_id":"sur","hook_event_name":"UserPromptSubmit","cwd":"/tmp/sproj","prompt":"ship it \ud83d and tell me when the build is green"}"#;
    env.ok("mem-capture", &["--hook"], payload.as_bytes());
    let prompt: String = env
        .db()
        .query_row(
            "SELECT json_extract(payload, '$.prompt') FROM pending_queue WHERE session_id = 'sur'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(
        prompt,
        "ship it \u{fffd} and tell me when the build is green"
    );

    // The same line in a transcript is imported, not skipped.
    let dir = env.dir.path().join("tr");
    std::fs::create_dir_all(&dir).unwrap();
    let line = r#"{"type":"user","sessionId":"sur2","uuid":"u1","timestamp":"2026-01-02T03:04:05Z","cwd":"/tmp/sproj","message":{"role":"user","content":"fix the parser \ud83d please, it drops whole lines"}}"#;
    std::fs::write(dir.join("sur2.jsonl"), format!("{line}\n")).unwrap();
    let out = env.ok(
        "mem-capture",
        &["--transcript", dir.join("sur2.jsonl").to_str().unwrap()],
        b"",
    );
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("invalid JSON"),
        "{}",
        show(&out)
    );
    let prompt: String = env
        .db()
        .query_row(
            "SELECT json_extract(payload, '$.prompt') FROM pending_queue WHERE session_id = 'sur2'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(prompt.contains("parser \u{fffd} please"), "{prompt}");
}

#[test]
fn exclusions_fail_closed_and_cover_what_the_user_meant() {
    let env = Env::new();
    let root = env.dir.path().to_path_buf();
    let home = root.join("home");
    let plain = root.join("plain-project");
    std::fs::create_dir_all(plain.join("sub/deeper")).unwrap();
    std::fs::create_dir_all(home.join("work/secret/api")).unwrap();
    std::fs::create_dir_all(home.join("work/private")).unwrap();
    std::fs::create_dir_all(home.join("work/kept")).unwrap();
    // A brace list with ~, a directory with a trailing slash, $HOME, and a bad glob.
    let good = format!(
        "~/work/{{secret,private}},{}/,$HOME/elsewhere",
        plain.display()
    );
    let env = env.set(
        "MEM_EXCLUDE",
        &format!("{good},{}/[unclosed", root.display()),
    );
    let cwds = [
        plain.join("sub/deeper"), // below an excluded directory that is no git repository
        plain.clone(),
        home.join("work/secret/api"),
        home.join("work/private"),
        home.join("elsewhere"),
        root.join("[unclosed"), // the bad glob still excludes the path it spells
    ];
    for (i, cwd) in cwds.iter().enumerate() {
        let ev = tool_call(
            &format!("x{i}"),
            cwd.to_str().unwrap(),
            "must never be stored",
        );
        env.ok("mem-capture", &["--hook"], ev.to_string().as_bytes());
    }
    let kept = tool_call(
        "kept",
        home.join("work/kept").to_str().unwrap(),
        "this one is stored",
    );
    env.ok("mem-capture", &["--hook"], kept.to_string().as_bytes());
    let stored: Vec<(String, i64)> =
        env.pairs("SELECT session_id, count(*) FROM pending_queue GROUP BY session_id");
    assert_eq!(stored, vec![("kept".to_string(), 1)]);
    let log = std::fs::read_to_string(env.home().join("logs/mem-capture.log")).unwrap();
    assert!(log.contains("bad glob"), "{log}");
    // The tools themselves refuse a bad glob outright.
    let out = env.run("mem-capture", &["--note", "x", "--project", "/srv/p"], b"");
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("bad glob"),
        "{}",
        show(&out)
    );

    // A note in an excluded project is refused, not stored.
    let env = env.set("MEM_EXCLUDE", &good);
    let out = env
        .cmd("mem-capture")
        .args(["--note", "the deploy key lives in vault"])
        .current_dir(home.join("work/secret/api"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("excluded"),
        "{}",
        show(&out)
    );
    env.ok(
        "mem-capture",
        &[
            "--note",
            "kept projects take notes",
            "--project",
            home.join("work/kept").to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(
        env.count("SELECT count(*) FROM pending_queue WHERE event = 'Note'"),
        1
    );
}

#[test]
fn a_read_only_home_or_a_full_disk_loses_nothing_silently() {
    let env = Env::new();
    let tmp = env.dir.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let env = env.set("TMPDIR", tmp.to_str().unwrap());
    env.ok(
        "mem-capture",
        &["--hook"],
        tool_call("before", "/tmp/rproj", "stored while all was well")
            .to_string()
            .as_bytes(),
    );
    // The data home becomes unwritable (a file where its directories should be: root ignores
    // permission bits, so chmod would prove nothing here).
    let home = env.home();
    let aside = env.dir.path().join("home-aside");
    std::fs::rename(&home, &aside).unwrap();
    std::fs::write(&home, b"not a directory").unwrap();
    let out = env.run(
        "mem-capture",
        &["--hook"],
        tool_call(
            "readonly",
            "/tmp/rproj",
            "made while the home could not be written",
        )
        .to_string()
        .as_bytes(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(out.stdout.is_empty());
    let fallback = walk(&tmp);
    assert!(
        fallback
            .iter()
            .any(|p| p.ends_with(".json") && p.contains("/spool/")),
        "{fallback:?}"
    );
    assert!(
        fallback.iter().any(|p| p.ends_with("logs/mem-capture.log")),
        "{fallback:?}"
    );
    std::fs::remove_file(&home).unwrap();
    std::fs::rename(&aside, &home).unwrap();

    // A full disk: no write may grow a file (RLIMIT_FSIZE 0 fails writes like ENOSPC does).
    let mut c = env.cmd("mem-capture");
    c.arg("--hook")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        c.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 0,
                rlim_max: libc::RLIM_INFINITY,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = c.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(
            tool_call("full", "/tmp/rproj", "made while the disk was full")
                .to_string()
                .as_bytes(),
        )
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    // No empty or half-written spool file stands for the event.
    for p in walk(env.dir.path()) {
        if p.ends_with(".json") {
            assert!(
                std::fs::metadata(&p).unwrap().len() > 0,
                "empty spool file {p}"
            );
        }
    }

    // The next run stores what was spooled and reports what was lost.
    env.ok(
        "mem-capture",
        &["--hook"],
        tool_call("after", "/tmp/rproj", "stored once all was well again")
            .to_string()
            .as_bytes(),
    );
    assert_eq!(
        env.count(
            "SELECT count(*) FROM pending_queue WHERE session_id IN ('before', 'readonly', 'after')"
        ),
        3
    );
    assert_eq!(
        env.count("SELECT count(*) FROM event_log WHERE event = 'spooled' AND json_extract(detail, '$.fallback')"),
        1
    );
    assert_eq!(
        env.count("SELECT count(*) FROM event_log WHERE event = 'capture_lost' AND json_extract(detail, '$.event') = 'PostToolUse'"),
        1,
    );
    assert!(
        !walk(&tmp).iter().any(|p| p.ends_with(".json")),
        "{:?}",
        walk(&tmp)
    );
}

fn walk(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        let p = e.path();
        if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
            out.extend(walk(&p));
        } else {
            out.push(p.display().to_string());
        }
    }
    out
}

#[test]
fn a_transcript_path_that_never_ends_does_not_stall_the_pipeline() {
    let env = Env::new().set("MEM_COMPRESS_OPEN_TURN_SECS", "0");
    let fifo = env.dir.path().join("fifo.jsonl");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    for (sid, path) in [("zero", "/dev/zero"), ("fifo", fifo.to_str().unwrap())] {
        for ev in [
            json!({"session_id": sid, "hook_event_name": "UserPromptSubmit", "cwd": "/tmp/fproj",
                   "transcript_path": path, "prompt": "run the whole test suite please"}),
            tool_call(sid, "/tmp/fproj", "412 passed, 0 failed in 3.2s"),
            json!({"session_id": sid, "hook_event_name": "Stop", "cwd": "/tmp/fproj",
                   "transcript_path": path, "last_assistant_message": "All tests pass."}),
            json!({"session_id": sid, "hook_event_name": "SessionEnd", "cwd": "/tmp/fproj",
                   "transcript_path": path, "reason": "exit"}),
        ] {
            env.ok("mem-capture", &["--hook"], ev.to_string().as_bytes());
        }
    }
    let mut child = env
        .cmd("mem-compress")
        .arg("-q")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("mem-compress still running after 60 s on a FIFO / /dev/zero transcript");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success());
    assert_eq!(
        env.count("SELECT count(*) FROM sessions WHERE summary IS NOT NULL AND session_id IN ('zero', 'fifo')"),
        2
    );
}

#[test]
fn a_stage_after_emptying_a_large_wal_still_waits_for_a_lock() {
    let env = Env::new().set("MEM_COMPRESS_OPEN_TURN_SECS", "0");
    env.ok(
        "mem-capture",
        &["--hook"],
        tool_call("w", "/tmp/wproj", "some output worth compressing later on")
            .to_string()
            .as_bytes(),
    );
    // Grow the WAL past the size at which a tool empties it on opening, while a reader keeps
    // it from being checkpointed.
    let reader = env.db();
    reader
        .execute_batch("BEGIN; SELECT count(*) FROM event_log;")
        .unwrap();
    let writer = env.db();
    writer.execute_batch("PRAGMA wal_autocheckpoint=0").unwrap();
    let blob = "x".repeat(4000);
    for i in 0..600 {
        writer
            .execute(
                "INSERT INTO event_log (ts, event, level, detail) VALUES (?1, 'filler', 'info', ?2)",
                rusqlite::params![i.to_string(), blob],
            )
            .unwrap();
    }
    reader.execute_batch("COMMIT").unwrap();
    drop(reader);
    // Hold the write lock for a moment: mem-compress must wait for it, not fail at once.
    writer.execute_batch("BEGIN IMMEDIATE").unwrap();
    let release = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(1500));
        writer.execute_batch("COMMIT").unwrap();
    });
    let out = env.run("mem-compress", &["-q"], b"");
    release.join().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(
        env.count("SELECT count(*) FROM pending_queue WHERE session_id = 'w' AND status = 'raw'"),
        0
    );
}

#[test]
fn processed_tool_captures_drop_their_raw_response_after_the_retention() {
    let secret_file = "API_BASE=https://example.test\nFEATURE_FLAGS=a,b,c\nOTHER=value";
    let run = |days: Option<&str>| {
        let mut env = Env::new().set("MEM_COMPRESS_OPEN_TURN_SECS", "0");
        if let Some(d) = days {
            env = env.set("MEM_RAW_RESPONSE_DAYS", d);
        }
        let ev = json!({"session_id": "r", "hook_event_name": "PostToolUse", "cwd": "/tmp/rproj",
                        "tool_name": "Read", "tool_input": {"file_path": "/tmp/rproj/.env.example"},
                        "tool_response": {"file": {"content": secret_file}}, "tool_use_id": "toolu_r"});
        env.ok("mem-capture", &["--hook"], ev.to_string().as_bytes());
        let end = json!({"session_id": "r", "hook_event_name": "SessionEnd", "cwd": "/tmp/rproj"});
        env.ok("mem-capture", &["--hook"], end.to_string().as_bytes());
        env.ok("mem-compress", &["-q"], b"");
        let payload: String = env
            .db()
            .query_row(
                "SELECT payload FROM pending_queue WHERE tool_use_id = 'toolu_r' AND status = 'done'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        payload
    };
    let kept = run(None);
    assert!(
        kept.contains("FEATURE_FLAGS"),
        "kept for 7 days by default: {kept}"
    );
    let dropped = run(Some("0"));
    assert!(!dropped.contains("FEATURE_FLAGS"), "{dropped}");
    let v: Value = serde_json::from_str(&dropped).unwrap();
    assert_eq!(v["tool_input"]["file_path"], "/tmp/rproj/.env.example");
    assert!(v["tool_response_dropped_at"].is_string(), "{v}");
}

/// Two years of history, each imported, compressed and pruned as of its end, as a store that
/// runs the pipeline every day ages: what the second year adds to the pruned store is its
/// observations and the inputs of its calls, not the raw responses, and nothing the retention
/// covers outlives it.
#[test]
fn a_store_pruned_as_it_ages_keeps_only_what_the_retention_allows() {
    let tmp = tempfile::tempdir().unwrap();
    let env = Env::new().set("MEM_COMPRESS_OPEN_TURN_SECS", "0");
    let src = crate::fixtures().join("transcripts");
    let raw_bytes = "SELECT coalesce(sum(length(json_extract(payload, '$.tool_response'))), 0) FROM pending_queue";
    let mut years = vec![];
    // The fixtures end early in 2026: year one ends a year before.
    for (seed, ago, now) in [(1, 365, "2025-03-01"), (2, 0, "2026-03-01")] {
        let dir = tmp.path().join(format!("y{seed}"));
        memkit_testkit::transcripts::history(&src, &dir, 12_000_000, seed, 3, 365, ago).unwrap();
        let before = if env.db_path().exists() {
            env.count(raw_bytes)
        } else {
            0
        };
        env.ok(
            "mem-capture",
            &["-q", "--transcripts", dir.to_str().unwrap()],
            b"",
        );
        let captured = env.count(raw_bytes) - before;
        env.ok("mem-compress", &["-q"], b"");
        let out = env.ok("mem-prune", &["--now", now], b"");
        let size = std::fs::metadata(env.db_path()).unwrap().len() as i64;
        // Nothing done and older than the retention (7 days) keeps its raw response.
        let cutoff = format!("{}T00:00:00.000Z", &chrono_minus_days(now, 7));
        assert_eq!(
            env.count(&format!(
                "SELECT count(*) FROM pending_queue WHERE status = 'done' AND created_at < '{cutoff}'
                 AND json_type(payload, '$.tool_response') IS NOT NULL"
            )),
            0,
            "{}",
            show(&out)
        );
        years.push((captured, env.count(raw_bytes), size));
    }
    let [(cap1, kept1, size1), (cap2, kept2, size2)] = years[..] else {
        unreachable!()
    };
    assert!(cap1 > 1_000_000 && cap2 > 1_000_000, "{years:?}");
    // The raw responses kept do not pile up year after year.
    assert!(kept2 <= kept1 + cap1 / 10, "{years:?}");
    // The second year grows the pruned store by less than the raw responses it captured.
    assert!(size2 - size1 < cap2, "{years:?}");
}

/// `day` (YYYY-MM-DD) minus `n` days.
fn chrono_minus_days(day: &str, n: i64) -> String {
    let d = chrono::NaiveDate::parse_from_str(day, "%Y-%m-%d").unwrap();
    (d - chrono::Duration::days(n))
        .format("%Y-%m-%d")
        .to_string()
}

#[cfg(target_os = "linux")]
#[test]
fn the_hook_binaries_keep_the_platforms_hardening() {
    // A program that reads untrusted input keeps address randomisation of its own image: a
    // position-independent executable is ELF type ET_DYN (3), a fixed-address one ET_EXEC (2).
    for tool in ["mem-capture", "mem-context"] {
        let bytes = std::fs::read(crate::bin(tool)).unwrap();
        assert_eq!(&bytes[..4], b"\x7fELF", "{tool}");
        let e_type = u16::from_le_bytes([bytes[16], bytes[17]]);
        assert_eq!(e_type, 3, "{tool} is not a position-independent executable");
    }
}
