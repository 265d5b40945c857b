//! Recall hook figures at 10,000 observations (memkit_testkit::corpus from the fixtures' real
//! text, seed 42, 12 projects; a Read and an Edit of one of 60 files of its project in the
//! queue behind each observation, as mem-compress links them; a failed Bash call with one of
//! 20 error signatures behind every 25th, fixed by that observation). Run: `cargo build
//! --release --bins && cargo bench --bench recall` (MEMKIT_BENCH_SIZES=10000,100000 changes the
//! sizes; MEMKIT_BENCH_DIR=DIR keeps the data homes).
//!
//! Prints, per size: per-process wall time (p50, p99 over 200 runs) of `mem-capture --recall`
//! (the registered recall command) for PreToolUse payloads (Read of a file with history, each in a new session so the answer is
//! built and printed every time) and for PostToolUseFailure payloads whose error matches a
//! stored fix; the baseline is `mem-capture --version` measured in the same run, and
//! `mem-context --hook` (what settings from before 0.1's recall move run) is shown beside.

mod common;

use std::path::{Path, PathBuf};

const PROJECT: &str = "/bench/project-3";
const RUNS: usize = 200;

/// One of 20 errors (numbers are folded by the signature, so words tell them apart).
fn error_text(k: usize) -> String {
    const WORDS: [&str; 20] = [
        "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
        "juliett", "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo",
        "sierra", "tango",
    ];
    let w = WORDS[k % 20];
    format!(
        "Exit code 1\nTraceback (most recent call last):\n  File \"/bench/x/m{k}.py\", line {k}, in run\nValueError: bad value in column {w} of batch {k}"
    )
}

fn runs(home: &Path, tool: &str, args: &[&str], payloads: &[PathBuf]) -> (f64, f64, usize) {
    let mut ms = Vec::new();
    let mut said = 0;
    for p in payloads {
        let mut c = common::cmd(home, tool);
        c.args(args);
        let (t, _, code) = common::timed(c, Some(p));
        assert_eq!(code, 0, "{tool} {args:?} exited {code}");
        ms.push(t);
    }
    // Checked in sessions of their own: a hook says nothing twice in one session, and the
    // timed runs have already spoken in theirs.
    for (k, p) in payloads.iter().take(20).enumerate() {
        let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap();
        v["session_id"] = format!("check-{k}").into();
        let mut child = common::cmd(home, tool)
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // --version exits without reading its stdin: a broken pipe is no failure.
        let _ =
            std::io::Write::write_all(&mut child.stdin.take().unwrap(), v.to_string().as_bytes());
        let out = child.wait_with_output().unwrap();
        said += (!out.stdout.is_empty()) as usize;
    }
    (
        common::median(&mut ms.clone()),
        common::pct(&mut ms, 0.99),
        said,
    )
}

fn main() {
    let sizes = common::sizes(&[10_000]);
    if let Some(h) = std::env::var_os("MEMKIT_BENCH_MEASURE") {
        return measure(Path::new(&h));
    }
    let tmp = tempfile::tempdir().unwrap();
    let (root, base) = common::root_and_base(tmp.path());
    for n in sizes {
        let (home, conn) = common::synth_store(&root, &base, n);
        conn.execute_batch(common::FILE_CALLS_SQL).unwrap();
        // Failures: every 25th observation fixed one of 20 errors.
        let ids: Vec<(i64, String, Option<String>, String)> = conn
            .prepare(
                "SELECT id, session_id, project, created_at FROM observations WHERE id % 25 = 0",
            )
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        for (id, session, project, at) in ids {
            let sig = memkit::errsig::signature(&error_text(id as usize % 20)).unwrap();
            conn.execute(
                "INSERT INTO failures (queue_id, session_id, project, signature, line, failed_obs, fix_obs, created_at)
                 VALUES (?1 + 100000000, ?2, ?3, ?4, ?5, ?1, ?1, ?6)",
                rusqlite::params![id, session, project, sig.key, sig.line, at],
            )
            .unwrap();
        }
        conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
            .unwrap();
        drop(conn);
        for i in 0..RUNS {
            let v = serde_json::json!({"hook_event_name": "PreToolUse", "session_id": format!("bench-{i}"),
                "cwd": PROJECT, "tool_name": "Read",
                "tool_input": {"file_path": format!("{PROJECT}/src/m{}.rs", i % 60)}});
            std::fs::write(home.join(format!("pre-{i}.json")), v.to_string()).unwrap();
            let v = serde_json::json!({"hook_event_name": "PostToolUseFailure", "session_id": format!("bench-{i}"),
                "cwd": PROJECT, "tool_name": "Bash", "tool_input": {"command": "python run.py"},
                "error": error_text(i % 20)});
            std::fs::write(home.join(format!("fail-{i}.json")), v.to_string()).unwrap();
        }
        common::measure_apart(&home);
    }
}

fn measure(home: &Path) {
    let n = common::observations(home);
    let pre: Vec<_> = (0..RUNS)
        .map(|i| home.join(format!("pre-{i}.json")))
        .collect();
    let fail: Vec<_> = (0..RUNS)
        .map(|i| home.join(format!("fail-{i}.json")))
        .collect();
    assert!(
        common::bin("mem-capture").is_file(),
        "mem-capture is not built beside mem-context (cargo build --release --bins)"
    );
    let (base, base99, _) = runs(home, "mem-capture", &["--version"], &pre);
    println!(
        "{n} observations: baseline mem-capture --version p50 {base:.2} ms, p99 {base99:.2} ms"
    );
    let n64 = Some(n as u64);
    let version = Some(("mem-capture --version", base));
    // p50 against its budget, p99 beside the baseline's.
    let record = |what: &str, p50: f64, p99: f64| {
        let p99_base = Some(("mem-capture --version p99", base99));
        common::figure(
            "recall",
            n64,
            &format!("{what} p50"),
            p50,
            "ms",
            common::Budget::Max(8.0),
            version,
        );
        common::figure(
            "recall",
            n64,
            &format!("{what} p99"),
            p99,
            "ms",
            common::Budget::None,
            p99_base,
        );
    };
    let (p50, p99, said) = runs(home, "mem-capture", &["--recall"], &pre);
    record("file recall hook (PreToolUse)", p50, p99);
    println!(
        "  PreToolUse file recall: p50 {p50:.2} ms ({:.2}x baseline), p99 {p99:.2} ms, output for {said}/20 checked (target p50 <= 6 ms, p99 <= 15 ms)",
        p50 / base
    );
    let (p50, p99, said) = runs(home, "mem-capture", &["--recall"], &fail);
    record("error recall hook (PostToolUseFailure)", p50, p99);
    println!(
        "  PostToolUseFailure error recall: p50 {p50:.2} ms ({:.2}x baseline), p99 {p99:.2} ms, output for {said}/20 checked (target p50 <= 6 ms, p99 <= 15 ms)",
        p50 / base
    );
    // The same payloads in fresh sessions, through the command earlier installs registered.
    let old: Vec<_> = (0..RUNS)
        .map(|i| home.join(format!("pre-old-{i}.json")))
        .collect();
    for (i, p) in old.iter().enumerate() {
        let text = std::fs::read_to_string(&pre[i]).unwrap();
        std::fs::write(p, text.replace("\"bench-", "\"old-")).unwrap();
    }
    let (p50, p99, _) = runs(home, "mem-context", &["--hook"], &old);
    println!(
        "  (mem-context --hook, earlier installs: file recall p50 {p50:.2} ms, p99 {p99:.2} ms)"
    );
}
