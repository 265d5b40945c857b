//! The day-one import: a generated history of transcripts (MEMKIT_BENCH_IMPORT_MB, default 100;
//! kept in MEMKIT_BENCH_HISTORY when set) through the pipeline's stages as a user runs them:
//! `mem-capture --transcripts`, `mem-compress` (heuristic), `mem-embed` (MiniLM-L6) and
//! `mem-index`. Each stage is timed with its peak RSS and throughput in one home; in a second
//! home the same stage is killed with SIGKILL half-way through, then rerun to the end, and the
//! store's counts must equal the uninterrupted run's. With MEMKIT_BENCH_QWEN=<model dir>, the
//! Qwen3-size graph's throughput is measured on the first texts of the store.

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
    for stage in &stages {
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
                // By what each hit says: records of the same text tie, and which of them comes
                // first depends on the last bits of their vectors (int8 activations are scaled
                // per batch, and a rerun batches what is left).
                let (a, b) = (hits(&killed), hits(&whole));
                let says =
                    |h: &[(String, String)]| h.iter().map(|x| x.0.clone()).collect::<Vec<_>>();
                assert_eq!(says(&a), says(&b), "{q}: {a:?} against {b:?}");
            }
            println!("index: the two homes give the same hits for 3 queries");
        }
    }
    if let Ok(qwen) = std::env::var("MEMKIT_BENCH_QWEN") {
        qwen_throughput(&whole, Path::new(&qwen));
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
