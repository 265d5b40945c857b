//! The day-one import: a generated history of transcripts (MEMKIT_BENCH_IMPORT_MB, default 100;
//! kept in MEMKIT_BENCH_HISTORY when set) through the pipeline's stages as a user runs them:
//! `mem-capture --transcripts`, `mem-compress` (heuristic), `mem-embed` (MiniLM-L6) and
//! `mem-index`. Each stage is timed with its peak RSS and throughput in one home; in a second
//! home the same stage is killed with SIGKILL half-way through, then rerun to the end, and the
//! store's counts must equal the uninterrupted run's. With MEMKIT_BENCH_QWEN=<model dir>, the
//! Qwen3-size graph's throughput is measured on the first texts of the store.
//!
//! Then the user's first day, for MiniLM and (MEMKIT_BENCH_QWEN) the 0.6B-size graph: the
//! history imported into a fresh home and worked by `mem pipeline` runs as the hooks start
//! them (MEM_EMBED_BUDGET_S = MEMKIT_BENCH_EMBED_BUDGET_S, default 60), back to back for at most
//! MEMKIT_BENCH_BACKLOG_S (default 1800) while the hooks run beside them, then drained (or, over
//! MEMKIT_BENCH_DRAIN_MAX_S, the time `mem status` says the rest takes); see
//! [`first_day`]. MEMKIT_BENCH_IMPORT_STAGES=0 runs the first day alone,
//! MEMKIT_BENCH_FIRST_DAY_MINILM=0 the first day of the 0.6B-size graph alone.

#[path = "common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn stage_cmd(home: &Path, tool: &str, args: &[&str]) -> Command {
    let mut c = common::cmd(home, tool);
    c.args(args)
        .env("MEM_MODELS", common::models())
        .env("MEM_EMBED_MODEL", "minilm-l6");
    c
}

/// What a stage leaves in the store, compared between the interrupted and the whole run.
fn counts(home: &Path, sql: &[&str]) -> Vec<i64> {
    let c = rusqlite::Connection::open(home.join("mem.db")).unwrap();
    sql.iter()
        .map(|q| c.query_row(q, [], |r| r.get(0)).unwrap_or(-1))
        .collect()
}

struct Stage {
    name: &'static str,
    tool: &'static str,
    args: Vec<String>,
    /// What is counted (the first is the stage's unit of work), and its unit.
    sql: &'static [&'static str],
    unit: &'static str,
}

#[allow(clippy::zombie_processes)]
fn main() {
    let mb: u64 = std::env::var("MEMKIT_BENCH_IMPORT_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let tmp = tempfile::tempdir().unwrap();
    let hist = std::env::var("MEMKIT_BENCH_HISTORY")
        .map(PathBuf::from)
        .unwrap_or_else(|_| tmp.path().join("projects"));
    let t = Instant::now();
    let h = if hist.join("DONE").is_file() {
        let files = memkit_capture::transcript::find_files(&hist).unwrap();
        memkit_testkit::transcripts::History {
            files: files.len(),
            bytes: files.iter().map(|f| f.metadata().unwrap().len()).sum(),
            replicas: 0,
        }
    } else {
        let h = memkit_testkit::transcripts::history(
            &common::fixtures().join("transcripts"),
            &hist,
            mb << 20,
            2026,
            40,
            3 * 365,
            0,
        )
        .unwrap();
        std::fs::write(hist.join("DONE"), "").unwrap();
        h
    };
    let size_mb = h.bytes as f64 / 1048576.0;
    println!(
        "history: {} files, {size_mb:.0} MB ({:.1} s to write or list)",
        h.files,
        t.elapsed().as_secs_f64()
    );
    let hist_s = hist.to_str().unwrap().to_string();
    let stages = [
        Stage {
            name: "capture",
            tool: "mem-capture",
            args: vec!["-q".into(), "--transcripts".into(), hist_s],
            sql: &[
                "SELECT count(*) FROM transcript_files",
                "SELECT count(*) FROM pending_queue",
                "SELECT count(*) FROM sessions",
                "SELECT count(*) FROM sessions WHERE title IS NOT NULL",
                "SELECT count(*) FROM event_log",
            ],
            unit: "files",
        },
        Stage {
            name: "compress",
            tool: "mem-compress",
            args: vec!["-q".into()],
            sql: &[
                "SELECT count(*) FROM pending_queue WHERE status = 'done'",
                "SELECT count(*) FROM observations",
                "SELECT count(*) FROM observation_sources",
                "SELECT count(*) FROM pending_queue WHERE status != 'done'",
            ],
            unit: "captures",
        },
        Stage {
            name: "embed",
            tool: "mem-embed",
            args: vec!["-q".into(), "--model".into(), "minilm-l6".into()],
            sql: &[
                "SELECT count(*) FROM embeddings",
                "SELECT count(DISTINCT owner_kind || owner_id) FROM embeddings",
            ],
            unit: "texts",
        },
        Stage {
            name: "index",
            tool: "mem-index",
            args: vec!["-q".into()],
            sql: &["SELECT count(*) FROM observations"],
            unit: "observations",
        },
    ];
    let whole = tmp.path().join("whole");
    let killed = tmp.path().join("killed");
    for home in [&whole, &killed] {
        std::fs::create_dir_all(home).unwrap();
    }
    // MEMKIT_BENCH_IMPORT_STAGES=0: the first day only.
    let by_stage = std::env::var("MEMKIT_BENCH_IMPORT_STAGES").map_or(true, |v| v != "0");
    for stage in stages.iter().filter(|_| by_stage) {
        let args: Vec<&str> = stage.args.iter().map(String::as_str).collect();
        let (ms, rss, code) = common::timed(stage_cmd(&whole, stage.tool, &args), None);
        assert!(code == 0, "{} failed (exit {code})", stage.tool);
        let want = counts(&whole, stage.sql);
        let per_s = want[0] as f64 / (ms / 1000.0);
        println!(
            "{}: {:.1} s, peak RSS {rss:.0} MB, {} {} ({per_s:.0}/s{})",
            stage.name,
            ms / 1000.0,
            want[0],
            stage.unit,
            if stage.name == "capture" {
                format!(", {:.1} MB/s of transcript", size_mb / (ms / 1000.0))
            } else {
                String::new()
            }
        );
        common::figure(
            "import",
            None,
            &format!("{} of a {size_mb:.0} MB history, peak RSS", stage.name),
            rss,
            "MB",
            common::Budget::Max(500.0),
            None,
        );
        let (value, unit) = if stage.name == "capture" {
            (size_mb / (ms / 1000.0), "MB/s")
        } else {
            (per_s, "/s")
        };
        common::figure(
            "import",
            None,
            &format!(
                "{} of a {size_mb:.0} MB history, {}",
                stage.name, stage.unit
            ),
            value,
            unit,
            common::Budget::None,
            None,
        );
        // The same stage killed half-way in the other home, then run again to its end.
        let mut child = stage_cmd(&killed, stage.tool, &args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_secs_f64(ms / 2000.0));
        let finished_early = child.try_wait().unwrap().is_some();
        let _ = child.kill();
        let _ = child.wait();
        let at_kill = counts(&killed, stage.sql);
        let t = Instant::now();
        let (_, _, code) = common::timed(stage_cmd(&killed, stage.tool, &args), None);
        assert!(code == 0, "{} rerun failed (exit {code})", stage.tool);
        let rerun_s = t.elapsed().as_secs_f64();
        let got = counts(&killed, stage.sql);
        println!(
            "{}: killed at {:.1} s with {} of {} {} done{}; the rerun took {rerun_s:.1} s; counts {got:?} (uninterrupted {want:?}): {}",
            stage.name,
            ms / 2000.0,
            at_kill[0].max(0),
            want[0],
            stage.unit,
            if finished_early {
                " (it had already finished)"
            } else {
                ""
            },
            if got == want { "equal" } else { "DIFFERENT" }
        );
        assert_eq!(
            got, want,
            "{}: a killed run then a rerun must end as the whole run",
            stage.name
        );
        if stage.name == "index" {
            // Both homes answer alike.
            for q in [
                "error in the test",
                "refactor the parser",
                "release workflow",
            ] {
                let hits = |home: &Path| {
                    let out = stage_cmd(
                        home,
                        "mem-search",
                        &["--all-projects", "--format", "jsonl", "-n", "20", q],
                    )
                    .output()
                    .unwrap();
                    assert!(
                        out.status.success(),
                        "{}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                    String::from_utf8_lossy(&out.stdout)
                        .lines()
                        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                        .map(|v| (v["title"].to_string(), v["id"].to_string()))
                        .collect::<Vec<_>>()
                };
                // The same records, in an order that may differ where scores nearly tie: the
                // last bits of a vector depend on its batch (int8 activations are scaled per
                // batch, and a rerun batches what is left, newest first).
                let (a, b) = (hits(&killed), hits(&whole));
                let says = |h: &[(String, String)]| {
                    let mut v: Vec<String> = h.iter().map(|x| x.0.clone()).collect();
                    v.sort();
                    v
                };
                assert_eq!(says(&a), says(&b), "{q}: {a:?} against {b:?}");
            }
            println!("index: the two homes give the same hits for 3 queries");
        }
    }
    if let Ok(qwen) = std::env::var("MEMKIT_BENCH_QWEN")
        && by_stage
    {
        qwen_throughput(&whole, Path::new(&qwen));
    }
    let budget: f64 = std::env::var("MEMKIT_BENCH_EMBED_BUDGET_S")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(60.0);
    let mut models = vec![];
    if std::env::var("MEMKIT_BENCH_FIRST_DAY_MINILM").as_deref() != Ok("0") {
        models.push(("minilm-l6".to_string(), "minilm-l6".to_string()));
    }
    if let Ok(qwen) = std::env::var("MEMKIT_BENCH_QWEN") {
        models.push(("the 0.6B-size graph".into(), qwen));
    }
    for (label, model) in &models {
        first_day(tmp.path(), &hist, size_mb, label, model, budget);
    }
}

/// The Qwen3-size graph over the first texts of the store, through mem-embed's file mode.
fn qwen_throughput(home: &Path, model: &Path) {
    let c = rusqlite::Connection::open(home.join("mem.db")).unwrap();
    let mut st = c
        .prepare("SELECT title || ' ' || summary FROM observations ORDER BY id LIMIT 256")
        .unwrap();
    let texts: Vec<String> = st
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let input = home.join("qwen-texts.jsonl");
    let lines: String = texts
        .iter()
        .enumerate()
        .map(|(i, t)| serde_json::json!({"id": i, "text": t}).to_string() + "\n")
        .collect();
    std::fs::write(&input, lines).unwrap();
    let mut cmd = stage_cmd(home, "mem-embed", &["-q", "--model"]);
    cmd.arg(model).arg(&input);
    let (ms, rss, code) = common::timed(cmd, None);
    assert!(code == 0, "mem-embed with {} failed", model.display());
    let per_s = texts.len() as f64 / (ms / 1000.0);
    println!(
        "embed with {}: {} texts in {:.1} s ({per_s:.1}/s, model load included), peak RSS {rss:.0} MB",
        model.display(),
        texts.len(),
        ms / 1000.0
    );
    common::figure(
        "import",
        None,
        "embed with the Qwen3-size graph, texts",
        per_s,
        "/s",
        common::Budget::None,
        None,
    );
}

/// A pipeline stage's command in a first-day home: the model under test, the budget.
fn day_cmd(home: &Path, tool: &str, model: &str, budget: f64) -> Command {
    let mut c = common::cmd(home, tool);
    c.env("MEM_EMBED_MODEL", model)
        .env("MEM_EMBED_BUDGET_S", budget.to_string());
    c
}

/// The end of the pipeline's log: why a run failed.
fn log_tail(home: &Path) -> String {
    let log = std::fs::read_to_string(home.join("logs/pipeline.log")).unwrap_or_default();
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(10)..].join("\n")
}

fn day_count(home: &Path, sql: &str) -> i64 {
    counts(home, &[sql])[0]
}

/// Whether the newest `n` observations all have a vector of the model in use.
fn newest_have_vectors(home: &Path, n: i64) -> bool {
    day_count(
        home,
        &format!(
            "SELECT count(*) FROM (SELECT id FROM observations ORDER BY created_at DESC, id DESC LIMIT {n}) o
             WHERE NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.owner_kind = 'observation' AND e.owner_id = o.id
                               AND e.model = (SELECT model FROM embeddings ORDER BY created_at DESC LIMIT 1))"
        ),
    ) == 0
}

/// Whether the hooks' semantic signal reaches the newest `n` observations: each has its vector,
/// and every word of its title and summary has one (a prompt's vector is made of those).
fn newest_reached(home: &Path, n: i64) -> bool {
    if !newest_have_vectors(home, n) {
        return false;
    }
    let conn = rusqlite::Connection::open(home.join("mem.db")).unwrap();
    let mut texts = conn
        .prepare(&format!(
            "SELECT title || ' ' || summary FROM observations ORDER BY created_at DESC, id DESC LIMIT {n}"
        ))
        .unwrap();
    let texts: Vec<String> = texts
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut has = conn
        .prepare("SELECT 1 FROM word_vectors WHERE word = ?1 AND length(vector) > 0")
        .unwrap();
    texts.iter().all(|t| {
        memkit::embed::words::words(t)
            .iter()
            .all(|w| has.exists([w]).unwrap())
    })
}

fn backlog(home: &Path) -> i64 {
    day_count(
        home,
        "SELECT count(*) FROM observations o WHERE NOT EXISTS (SELECT 1 FROM embeddings e
           WHERE e.owner_kind = 'observation' AND e.owner_id = o.id)",
    )
}

/// Hits of a search, as JSON.
fn hits(home: &Path, model: &str, budget: f64, args: &[&str]) -> Vec<serde_json::Value> {
    let out = day_cmd(home, "mem-search", model, budget)
        .args(["--all-projects", "--format", "jsonl"])
        .args(args)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The hook payloads of one round (capture, SessionStart, prompt) in `project`, as files.
fn hook_payloads(home: &Path, project: &str, prompt: &str, round: usize) -> [PathBuf; 3] {
    let dir = home.join("payloads");
    std::fs::create_dir_all(&dir).unwrap();
    let out = "cargo test output line with some text\n".repeat(135);
    let capture = serde_json::json!({"session_id": "bench-day", "hook_event_name": "PostToolUse",
        "cwd": project, "transcript_path": "/tmp/t.jsonl", "tool_name": "Bash",
        "tool_use_id": format!("toolu_day_{round}"),
        "tool_input": {"command": "cargo test --all", "description": "Run tests"},
        "tool_response": {"stdout": out, "stderr": "", "interrupted": false, "isImage": false}});
    let start = serde_json::json!({"hook_event_name": "SessionStart", "session_id": "bench-day",
        "cwd": project, "source": "startup", "transcript_path": "/tmp/t.jsonl"});
    let ask = serde_json::json!({"hook_event_name": "UserPromptSubmit", "session_id": "bench-day",
        "cwd": project, "prompt": prompt});
    let files = [
        dir.join(format!("capture-{round}.json")),
        dir.join("start.json"),
        dir.join("prompt.json"),
    ];
    for (f, v) in files.iter().zip([capture, start, ask]) {
        std::fs::write(f, v.to_string()).unwrap();
    }
    files
}

/// One round of the three hooks as Claude Code runs them: wall ms of each.
fn hook_round(home: &Path, files: &[PathBuf; 3]) -> [f64; 3] {
    let args: [(&str, &[&str]); 3] = [
        ("mem-capture", &["--hook"]),
        ("mem-context", &["--hook"]),
        ("mem-context", &["--hook", "--prompt"]),
    ];
    let mut out = [0.0; 3];
    for (i, ((tool, a), f)) in args.iter().zip(files).enumerate() {
        let mut c = common::cmd(home, tool);
        c.args(*a);
        let (ms, _, code) = common::timed(c, Some(f));
        assert_eq!(code, 0, "{tool} {a:?} exited {code}");
        out[i] = ms;
    }
    out
}

/// A new session's hooks: a prompt, an edit, a failed test run and the Stop.
fn new_session(home: &Path, project: &str) {
    let base = serde_json::json!({"session_id": "bench-newday", "cwd": project,
        "transcript_path": "/nonexistent.jsonl"});
    let with = |extra: serde_json::Value| {
        let mut b = base.clone();
        for (k, v) in extra.as_object().unwrap() {
            b[k] = v.clone();
        }
        b.to_string()
    };
    for ev in [
        with(serde_json::json!({"hook_event_name": "UserPromptSubmit",
            "prompt": "Fix the flaky retry budget in the upload worker"})),
        with(
            serde_json::json!({"hook_event_name": "PostToolUse", "tool_name": "Edit", "tool_use_id": "nd1",
            "tool_input": {"file_path": "src/upload_worker.py", "old_string": "retries = 3",
                           "new_string": "retries = budget.remaining()"},
            "tool_response": {"filePath": "src/upload_worker.py", "structuredPatch": []}}),
        ),
        with(
            serde_json::json!({"hook_event_name": "PostToolUseFailure", "tool_name": "Bash", "tool_use_id": "nd2",
            "tool_input": {"command": "pytest tests/test_upload_worker.py", "description": "Run the worker tests"},
            "error": "FAILED tests/test_upload_worker.py::test_retry_budget - AssertionError"}),
        ),
        with(serde_json::json!({"hook_event_name": "Stop",
            "last_assistant_message": "The upload worker now takes its retries from the budget."})),
    ] {
        let mut c = common::cmd(home, "mem-capture");
        c.arg("--hook");
        let mut child = c
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(ev.as_bytes())
            .unwrap();
        assert!(child.wait().unwrap().success());
    }
}

/// Whether the new session's observations have vectors and a hybrid search finds them.
fn new_session_found(home: &Path, model: &str, budget: f64) -> bool {
    let obs = day_count(
        home,
        "SELECT count(*) FROM observations WHERE session_id = 'bench-newday'",
    );
    let without = day_count(
        home,
        "SELECT count(*) FROM observations o WHERE session_id = 'bench-newday' AND NOT EXISTS
           (SELECT 1 FROM embeddings e WHERE e.owner_kind = 'observation' AND e.owner_id = o.id)",
    );
    obs > 0
        && without == 0
        && hits(
            home,
            model,
            budget,
            &["--explain", "flaky retry budget in the upload worker"],
        )
        .iter()
        .take(5)
        .any(|h| {
            h["session_id"] == "bench-newday"
                && h["mode"] == "hybrid"
                && h["explain"]["cosine"].is_number()
        })
}

/// The longest hold of the lock the pipeline log records (`held the lock N s`).
fn longest_hold(home: &Path) -> f64 {
    std::fs::read_to_string(home.join("logs/pipeline.log"))
        .unwrap_or_default()
        .lines()
        // `mem pipeline --drain` works it all, by design: only budgeted runs count.
        .filter(|l| !l.contains("(no budget)"))
        .filter_map(|l| {
            let rest = &l[l.find("held the lock ")? + "held the lock ".len()..];
            rest.split(' ').next()?.parse::<f64>().ok()
        })
        .fold(0.0, f64::max)
}

/// The user's first day with `model`: `mem-capture --transcripts` of the history into a fresh
/// home, then `mem pipeline` runs back to back (each as the Stop hook's detached run is:
/// budgeted, at nice 10 and in the idle scheduling class) while the capture, SessionStart and
/// prompt hooks run beside them, a new session arriving after the first run; then
/// `mem pipeline --drain`, unless `mem status` says
/// it takes over MEMKIT_BENCH_DRAIN_MAX_S: the time the backlog is gone is then the one it
/// estimates. Prints each row with its budget.
fn first_day(tmp: &Path, hist: &Path, size_mb: f64, label: &str, model: &str, budget: f64) {
    let home = tmp.join(format!("first-day-{}", label.replace(' ', "-")));
    std::fs::create_dir_all(&home).unwrap();
    let phase_cap: f64 = std::env::var("MEMKIT_BENCH_BACKLOG_S")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1800.0);
    let row = |what: &str| format!("first day of a {size_mb:.0} MB history, {label}: {what}");
    let t0 = Instant::now();
    let mut c = day_cmd(&home, "mem-capture", model, budget);
    c.args(["-q", "--transcripts"]).arg(hist);
    let (_, _, code) = common::timed(c, None);
    assert_eq!(code, 0, "mem-capture --transcripts failed");
    let captured_s = t0.elapsed().as_secs_f64();
    let captures = day_count(&home, "SELECT count(*) FROM pending_queue");
    // Pipeline runs until a BM25 search finds the history.
    let mut runs = 0;
    let mut holds: Vec<f64> = Vec::new();
    let lexical_s = loop {
        let mut c = day_cmd(&home, "mem", model, budget);
        c.args(["pipeline", "-q"]);
        let (ms, _, code) = common::timed(c, None);
        assert_eq!(code, 0, "mem pipeline failed: {}", log_tail(&home));
        runs += 1;
        holds.push(ms / 1000.0);
        let found = hits(
            &home,
            model,
            budget,
            &["--engine", "bm25", "error in the test"],
        );
        if !found.is_empty() || runs >= 50 {
            break t0.elapsed().as_secs_f64();
        }
    };
    let observations = day_count(&home, "SELECT count(*) FROM observations");
    // Checked before the hooks' idle rounds, which take seconds.
    let reached_early = newest_reached(&home, observations.min(1000)).then_some(lexical_s);
    let compressed = day_count(
        &home,
        "SELECT count(*) FROM pending_queue WHERE status = 'done'",
    );
    println!(
        "first day, {label}: {captures} captures imported in {captured_s:.1} s; BM25 finds the history after {runs} pipeline run(s), {lexical_s:.1} s from the start ({compressed} of {captures} captures compressed, {observations} observations, {} without a vector)",
        backlog(&home)
    );
    common::figure(
        "import",
        None,
        &row("lexical search finds it, from the import's start"),
        lexical_s,
        "s",
        common::Budget::Max(120.0),
        None,
    );
    // The hooks idle, in the project with the most history.
    let project: String = rusqlite::Connection::open(home.join("mem.db"))
        .unwrap()
        .query_row(
            "SELECT project FROM observations GROUP BY project ORDER BY count(*) DESC LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let prompt: String = rusqlite::Connection::open(home.join("mem.db"))
        .unwrap()
        .query_row(
            "SELECT title FROM observations WHERE project = ?1 ORDER BY id DESC LIMIT 1",
            [&project],
            |r| r.get(0),
        )
        .unwrap();
    // Idle: 30 rounds now (after 5 to warm the page cache), 5 between two runs and 30 once the
    // backlog is drained.
    let mut idle: [Vec<f64>; 3] = Default::default();
    let idle_rounds = |idle: &mut [Vec<f64>; 3], from: usize| {
        for round in from..from + 35 {
            let files = hook_payloads(&home, &project, &prompt, round);
            let took = hook_round(&home, &files);
            if round >= from + 5 {
                for (k, ms) in took.into_iter().enumerate() {
                    idle[k].push(ms);
                }
            }
        }
    };
    idle_rounds(&mut idle, 0);
    // A new session arrives; the backlog is worked by runs back to back, the hooks beside.
    new_session(&home, &project);
    let runs_before_new = runs;
    let mut runs_until_new: Option<usize> = None;
    let want_newest = observations.min(1000);
    let mut newest_s = newest_have_vectors(&home, want_newest).then(|| t0.elapsed().as_secs_f64());
    let mut reached_s = reached_early;
    let mut busy: [Vec<f64>; 3] = Default::default();
    let phase = Instant::now();
    let mut round = 100;
    let mut child: Option<(std::process::Child, Instant)> = None;
    loop {
        if child.is_none() {
            if runs_until_new.is_some() && backlog(&home) == 0 {
                break;
            }
            if phase.elapsed().as_secs_f64() > phase_cap {
                break;
            }
            // The detached run a Stop hook starts, as this process's child so it can be timed.
            let c = day_cmd(&home, "mem", model, budget)
                .args(["pipeline", "--detached"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            child = Some((c, Instant::now()));
            runs += 1;
        }
        round += 1;
        let files = hook_payloads(&home, &project, &prompt, round);
        let took = hook_round(&home, &files);
        let (c, started) = child.as_mut().unwrap();
        if c.try_wait().unwrap().is_none() {
            for (k, ms) in took.into_iter().enumerate() {
                busy[k].push(ms);
            }
            continue;
        }
        holds.push(started.elapsed().as_secs_f64());
        child = None;
        // Idle rounds between two runs: a baseline from the same minutes of a shared machine.
        for _ in 0..5 {
            round += 1;
            let files = hook_payloads(&home, &project, &prompt, round);
            for (k, ms) in hook_round(&home, &files).into_iter().enumerate() {
                idle[k].push(ms);
            }
        }
        if newest_s.is_none() && newest_have_vectors(&home, want_newest) {
            newest_s = Some(t0.elapsed().as_secs_f64());
        }
        if reached_s.is_none() && newest_reached(&home, want_newest) {
            reached_s = Some(t0.elapsed().as_secs_f64());
        }
        if runs_until_new.is_none() && new_session_found(&home, model, budget) {
            runs_until_new = Some(runs - runs_before_new);
        }
    }
    let left = backlog(&home);
    // What mem status tells the user: the time left at the rate measured on this machine.
    let out = day_cmd(&home, "mem", model, budget)
        .args(["status", "--format", "json"])
        .output()
        .unwrap();
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    let eta = status["embedding_backlog"]["eta_seconds"]
        .as_f64()
        .unwrap_or(0.0);
    let drain_cap: f64 = std::env::var("MEMKIT_BENCH_DRAIN_MAX_S")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(f64::INFINITY);
    let drain = eta <= drain_cap;
    let t = Instant::now();
    let (drain_s, drained_s) = if drain {
        let mut c = day_cmd(&home, "mem", model, budget);
        c.args(["pipeline", "--drain", "-q"]);
        let (_, _, code) = common::timed(c, None);
        assert_eq!(code, 0, "mem pipeline --drain failed");
        (t.elapsed().as_secs_f64(), t0.elapsed().as_secs_f64())
    } else {
        println!(
            "first day, {label}: not drained; mem status says {left} observations left, {eta:.0} s at {:.2}/s",
            status["embedding_backlog"]["per_second"]
                .as_f64()
                .unwrap_or(0.0)
        );
        (eta, t0.elapsed().as_secs_f64() + eta)
    };
    if newest_s.is_none() && newest_have_vectors(&home, want_newest) {
        newest_s = Some(drained_s);
    }
    if reached_s.is_none() && newest_reached(&home, want_newest) {
        reached_s = Some(drained_s);
    }
    if runs_until_new.is_none() && new_session_found(&home, model, budget) {
        runs_until_new = Some(runs - runs_before_new + 1);
    }
    idle_rounds(&mut idle, 50);
    let longest = longest_hold(&home).max(holds.iter().copied().fold(0.0, f64::max));
    println!(
        "first day, {label}: {} runs of MEM_EMBED_BUDGET_S={budget} back to back for {:.0} s, the longest {longest:.1} s; {left} observations left then, drained in {drain_s:.1} s ({:.1}/s); the newest {want_newest} with vectors after {}; the new session searchable with vectors after {} run(s)",
        runs,
        phase.elapsed().as_secs_f64(),
        left as f64 / drain_s.max(1e-3),
        newest_s.map_or("never".into(), |s| format!("{s:.0} s")),
        runs_until_new.map_or("none".into(), |n| n.to_string()),
    );
    common::figure(
        "import",
        None,
        &row(&format!(
            "the newest {want_newest} observations with vectors, from the import's start"
        )),
        newest_s.unwrap_or(f64::INFINITY),
        "s",
        common::Budget::Max(1200.0),
        None,
    );
    // The hooks compare a prompt's words with the records' own vectors: their signal reaches
    // a record with its vector, which the 2-minute target would need ~4× faster than the
    // 0.6B-size graph's ceiling. Stand-ins cheap enough for it (sums of words' vectors, the
    // model's vectors of the records' heads; in the gate or in the ranking only) were measured
    // and each either opened the hook on noise or ranked below the lexical search alone
    // (docs/PERFORMANCE.md, "The hooks' semantic signal on the first day").
    common::figure(
        "import",
        None,
        &row(&format!(
            "the newest {want_newest} observations reached by the hooks' semantic signal (their vectors, their words'), from the import's start"
        )),
        reached_s.unwrap_or(f64::INFINITY),
        "s",
        common::Budget::Max(120.0),
        None,
    );
    common::figure(
        "import",
        None,
        &row(if drain {
            "backlog gone (runs, then mem pipeline --drain), from the import's start"
        } else {
            "backlog gone (runs, then the time mem status gives), from the import's start"
        }),
        drained_s,
        "s",
        common::Budget::None,
        None,
    );
    common::figure(
        "import",
        None,
        &row(&format!(
            "longest hold of the pipeline lock (MEM_EMBED_BUDGET_S={budget})"
        )),
        longest,
        "s",
        common::Budget::Max(budget + 30.0),
        None,
    );
    let names = ["capture hook p50", "SessionStart p50", "prompt hook p50"];
    for (k, name) in names.iter().enumerate() {
        if busy[k].is_empty() {
            println!("first day, {label}: no hook ran while a pipeline run held the lock");
            break;
        }
        let (i, b) = (common::median(&mut idle[k]), common::median(&mut busy[k]));
        println!(
            "first day, {label}: {name} {b:.2} ms while the backlog is worked ({} runs), {i:.2} ms idle: {:.2}×",
            busy[k].len(),
            b / i
        );
        common::figure(
            "import",
            None,
            &row(&format!("{name} while the backlog is worked")),
            b,
            "ms",
            common::Budget::AtMostTimesBaseline(1.5),
            Some(("idle, same run", i)),
        );
    }
    common::figure(
        "import",
        None,
        &row("pipeline runs until a new session is searchable with vectors"),
        runs_until_new.map_or(f64::INFINITY, |n| n as f64),
        "runs",
        common::Budget::Max(1.0),
        None,
    );
}
