//! Heuristic compression throughput: the fixture transcripts captured by the real mem-capture,
//! their queue copied under 20 new session ids (about 17,000 captures), then `mem-compress`
//! (heuristic backend) in a fresh process on a fresh copy of that database, 5 runs. Prints
//! captures per second (median) beside the same binary on an empty queue, measured in the same
//! run. Run: `cargo bench --bench compress` (MEMKIT_BENCH_COPIES=N changes the 20).

mod common;

const RUNS: usize = 5;

fn main() {
    let copies: usize = std::env::var("MEMKIT_BENCH_COPIES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let tmp = tempfile::tempdir().unwrap();
    let template = tmp.path().join("template");
    common::fixture_turns(&template);
    let conn = rusqlite::Connection::open(template.join("mem.db")).unwrap();
    let cols = "project, event, tool_name, tool_use_id, agent_id, payload, files, priority, status, origin, created_at";
    conn.execute_batch(&format!(
        "CREATE TEMP TABLE c(value INTEGER);
         WITH RECURSIVE n(v) AS (SELECT 1 UNION ALL SELECT v + 1 FROM n WHERE v < {copies})
           INSERT INTO c SELECT v FROM n;
         CREATE TEMP TABLE q AS SELECT session_id, {cols} FROM pending_queue;
         INSERT INTO sessions (session_id, project, cwd, started_at, last_activity_at, status)
           SELECT s.session_id || '-' || c.value, s.project, s.cwd, s.started_at, s.last_activity_at, s.status
           FROM sessions s, c;
         INSERT INTO pending_queue (session_id, {cols})
           SELECT q.session_id || '-' || c.value, {cols} FROM q, c;"
    ))
    .unwrap_or_else(|e| panic!("copying the queue: {e}"));
    let captures: i64 = conn
        .query_row("SELECT count(*) FROM pending_queue", [], |r| r.get(0))
        .unwrap();
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
        .unwrap();
    drop(conn);
    let empty = tmp.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    drop(memkit::store::open(&empty.join("mem.db")).unwrap());

    let run = |home: &std::path::Path| {
        let (ms, rss, code) = common::timed(common::cmd(home, "mem-compress"), None);
        assert_eq!(code, 0, "mem-compress exited {code}");
        (ms, rss)
    };
    let mut base = Vec::new();
    let mut full = Vec::new();
    let mut peak: f64 = 0.0;
    for i in 0..RUNS {
        base.push(run(&empty).0);
        let home = tmp.path().join(format!("run-{i}"));
        std::fs::create_dir_all(&home).unwrap();
        std::fs::copy(template.join("mem.db"), home.join("mem.db")).unwrap();
        let (ms, rss) = run(&home);
        full.push(ms);
        peak = peak.max(rss);
    }
    let (b, f) = (common::median(&mut base), common::median(&mut full));
    let rate = captures as f64 / ((f - b).max(1.0) / 1000.0);
    common::figure(
        "compress",
        None,
        "mem-compress (heuristic) throughput",
        rate,
        "captures/s",
        common::Budget::Min(2000.0),
        None,
    );
    common::figure(
        "compress",
        None,
        "mem-compress peak RSS",
        peak,
        "MB",
        common::Budget::Max(500.0),
        None,
    );
    println!(
        "{captures} captures: mem-compress (heuristic) p50 {f:.0} ms, empty queue p50 {b:.1} ms, {rate:.0} captures/s ({:.1}x the 2,000/s target), peak RSS {peak:.1} MB",
        rate / 2000.0
    );
}
