//! Shared set-up of the search benches: the fixture transcripts captured by the real
//! mem-capture binary, turned into observations by memkit::search::synth.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use memkit_testkit::{self as synth, Turn};

pub fn bin(name: &str) -> PathBuf {
    let mut p = PathBuf::from(env!("CARGO_BIN_EXE_mem-search"));
    p.set_file_name(name);
    p
}

/// `$var`, else `default` under $HOME.
pub fn env_path(var: &str, default: &str) -> PathBuf {
    std::env::var(var)
        .ok()
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var("HOME").unwrap()).join(default))
}

/// Where the models and the ONNX runtime are ($MEM_MODELS, as the tools read it).
pub fn models() -> PathBuf {
    env_path("MEM_MODELS", ".cache/memkit/models")
}

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// A command with only the variables memkit needs.
pub fn cmd(home: &Path, tool: &str) -> Command {
    let mut c = Command::new(bin(tool));
    c.env_clear()
        .env("MEM_HOME", home)
        .env("HOME", home.join("user"))
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("MEM_SEARCH_GIT_FILES", "0")
        // The ONNX runtime and the models: a reranker or a query model is found where the
        // user's would be, not under the bench's fresh HOME.
        .env("MEM_MODELS", models())
        .current_dir(home);
    c
}

/// Captures the fixture transcripts into `home` and returns the user turns with one
/// observation per tool call (not yet stored).
pub fn fixture_turns(home: &Path) -> Vec<Turn> {
    std::fs::create_dir_all(home).unwrap();
    let out = cmd(home, "mem-capture")
        .args(["-q", "--transcripts"])
        .arg(fixtures().join("transcripts"))
        .output()
        .expect("mem-capture");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let conn = memkit::store::open(&home.join("mem.db")).unwrap();
    synth::turns_from_queue(&conn).unwrap()
}

pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

pub fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[((v.len() - 1) as f64 * p).round() as usize]
}

/// Waits for `child` with wait4, which also gives its own peak RSS (a plain wait would leave the
/// rusage unread): (exit code or -1, peak RSS MiB). The figure is at least the bench's own
/// peak RSS when the child was spawned (Linux charges the replaced address space at exec), so
/// spawn measured children before the bench itself grows, or measure with [`peak_rss`].
pub fn reap(child: &std::process::Child) -> (i32, f64) {
    let mut status = 0;
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: wait4 on our own child's pid, writing into locals we own.
    let r = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut ru) };
    assert!(r > 0, "wait4 failed");
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    (code, ru.ru_maxrss as f64 / 1024.0)
}

/// Runs a command (stdin from `stdin` when given, output discarded): (wall ms, peak RSS MiB,
/// exit code).
#[allow(clippy::zombie_processes)]
pub fn timed(mut c: Command, stdin: Option<&Path>) -> (f64, f64, i32) {
    if let Some(p) = stdin {
        c.stdin(std::fs::File::open(p).unwrap());
    }
    c.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let t = std::time::Instant::now();
    let child = c.spawn().expect("spawn");
    let (code, rss) = reap(&child);
    (t.elapsed().as_secs_f64() * 1000.0, rss, code)
}

/// The peak RSS (MiB) of one run of `c`, as `/usr/bin/time` measures it; `None` without it.
/// wait4's own figure for a child is no use from a bench that built a big corpus in memory:
/// Linux carries the high-water mark of the memory a child execs from into the child's, and a
/// spawned child execs from its parent's (posix_spawn shares it), so every tool reported the
/// bench's own peak (1.1 GB at a million). time's fork execs from time's small one instead.
pub fn peak_rss(c: &Command, stdin: Option<&Path>) -> Option<f64> {
    let time = Path::new("/usr/bin/time");
    if !time.exists() {
        return None;
    }
    let out = tempfile::NamedTempFile::new().ok()?;
    let mut t = Command::new(time);
    t.args(["-f", "%M", "-o"])
        .arg(out.path())
        .arg(c.get_program())
        .args(c.get_args())
        .env_clear()
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    for (k, v) in c.get_envs() {
        if let Some(v) = v {
            t.env(k, v);
        }
    }
    if let Some(d) = c.get_current_dir() {
        t.current_dir(d);
    }
    if let Some(p) = stdin {
        t.stdin(std::fs::File::open(p).ok()?);
    }
    t.status().ok()?;
    let kib: f64 = std::fs::read_to_string(out.path())
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Some(kib / 1024.0)
}

/// Sizes from MEMKIT_BENCH_SIZES (comma-separated), else `default`.
pub fn sizes(default: &[usize]) -> Vec<usize> {
    numbers("MEMKIT_BENCH_SIZES", default)
}

/// The comma-separated numbers of the variable `var`, else `default`.
pub fn numbers(var: &str, default: &[usize]) -> Vec<usize> {
    std::env::var(var)
        .ok()
        .map(|v| v.split(',').filter_map(|s| s.trim().parse().ok()).collect())
        .unwrap_or_else(|| default.to_vec())
}

/// Functions changed on a third of the observations, a session with a summary per session id,
/// and one learning per 20 observations of a project, confidences spread over 0.1-0.95, a
/// tenth of them inactive.
pub const SESSIONS_AND_LEARNINGS_SQL: &str = "UPDATE observations SET functions_changed = json_array('handler_' || (id % 97), 'parse_' || (id % 13))
               WHERE id % 3 = 0;
             INSERT OR IGNORE INTO sessions (session_id, project, summary, started_at, last_activity_at, ended_at, status)
               SELECT session_id, project, 'Worked on: ' || group_concat(title, '; '), min(created_at), max(created_at), max(created_at), 'ended'
               FROM observations GROUP BY session_id;
             INSERT INTO learnings (project, content, category, confidence, times_seen, is_active, created_at, updated_at)
               SELECT project, 'Learned from: ' || title, 'convention', 0.1 + (id % 18) * 0.05,
                      1 + id % 5, (id % 10) != 0, created_at, created_at
               FROM observations WHERE id % 20 = 0;";

/// Behind each observation, a Read and an Edit of one of 60 files of its project in the
/// queue, linked as mem-compress links them.
pub const FILE_CALLS_SQL: &str = "
    INSERT INTO pending_queue (session_id, project, event, tool_name, payload, files, status, created_at)
      SELECT session_id, project, 'PostToolUse', t.tool,
             json_object('tool_input', json_object('file_path', project || '/src/m' || (id % 60) || '.rs',
                         'new_string', 'fn handler_' || (id % 97) || '() {}')),
             json_array(project || '/src/m' || (id % 60) || '.rs'), 'done', created_at
      FROM observations, (SELECT 'Read' AS tool UNION ALL SELECT 'Edit') AS t;
    INSERT INTO observation_sources (observation_id, queue_id)
      SELECT o.id, q.id FROM pending_queue q JOIN observations o
        ON o.session_id = q.session_id AND o.created_at = q.created_at;";

/// Times in a fresh process (MEMKIT_BENCH_MEASURE=home): a child forked from the big set-up
/// process would carry its pages.
pub fn measure_apart(home: &Path) {
    let st = Command::new(std::env::current_exe().unwrap())
        .env("MEMKIT_BENCH_MEASURE", home)
        .status()
        .unwrap();
    assert!(st.success());
}

/// How many observations the data home holds.
pub fn observations(home: &Path) -> i64 {
    rusqlite::Connection::open(home.join("mem.db"))
        .unwrap()
        .query_row("SELECT count(*) FROM observations", [], |r| r.get(0))
        .unwrap()
}

/// The bench root (MEMKIT_BENCH_DIR, kept for profiling, else `tmp`) and the observations the
/// fixture transcripts give, which the synthetic corpora are made from.
pub fn root_and_base(tmp: &Path) -> (PathBuf, Vec<memkit_testkit::Obs>) {
    let root = std::env::var_os("MEMKIT_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| tmp.to_path_buf());
    let base = fixture_turns(&root.join("fixtures"))
        .into_iter()
        .flat_map(|t| t.obs)
        .collect();
    (root, base)
}

/// A data home under `root` holding `n` synthetic observations (seed 42, 12 projects), and its
/// open store.
pub fn synth_store(
    root: &Path,
    base: &[memkit_testkit::Obs],
    n: usize,
) -> (PathBuf, rusqlite::Connection) {
    let home = root.join(format!("mem-{n}"));
    // A kept root holds the last run's store: this run's starts empty (inserted twice, the
    // sessions and file calls the benches add would collide).
    let _ = std::fs::remove_dir_all(&home);
    std::fs::create_dir_all(&home).unwrap();
    let mut conn = memkit::store::open(&home.join("mem.db")).unwrap();
    let corpus = memkit_testkit::corpus(base, n, 42, 12);
    memkit_testkit::insert(&mut conn, &corpus).unwrap();
    (home, conn)
}

/// What a figure must be to pass in scripts/bench's table.
#[derive(Clone, Copy)]
pub enum Budget {
    None,
    /// The value at most this.
    Max(f64),
    /// The value at least this.
    Min(f64),
    /// The value at least this many times the baseline (for throughputs).
    TimesBaseline(f64),
    /// The value at most this many times the baseline (a latency under load against idle).
    AtMostTimesBaseline(f64),
    /// A budget that no longer applies, and why (a ceiling the same run measured rules it
    /// out): shown in the budget column, never marked ✘.
    Retired(&'static str),
}

/// Appends one figure to $MEMKIT_BENCH_FIGURES (a JSON line; nothing when unset), for
/// scripts/bench's one table. `size` is the store's observations when the figure depends on it;
/// the baseline is what the same run measured to compare with (`--version`, Python, raw ORT).
pub fn figure(
    bench: &str,
    size: Option<u64>,
    name: &str,
    value: f64,
    unit: &str,
    budget: Budget,
    baseline: Option<(&str, f64)>,
) {
    let Some(path) = std::env::var_os("MEMKIT_BENCH_FIGURES") else {
        return;
    };
    let budget = match budget {
        Budget::None => serde_json::Value::Null,
        Budget::Max(v) => serde_json::json!({"max": v}),
        Budget::Min(v) => serde_json::json!({"min": v}),
        Budget::TimesBaseline(v) => serde_json::json!({"times_baseline": v}),
        Budget::AtMostTimesBaseline(v) => serde_json::json!({"max_times_baseline": v}),
        Budget::Retired(why) => serde_json::json!({"retired": why}),
    };
    let line = serde_json::json!({
        "bench": bench, "size": size, "name": name, "value": value, "unit": unit,
        "budget": budget,
        "baseline": baseline.map(|(n, v)| serde_json::json!({"name": n, "value": v})),
    });
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("MEMKIT_BENCH_FIGURES");
    writeln!(f, "{line}").unwrap();
}
