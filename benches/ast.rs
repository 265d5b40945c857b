//! mem-ast's speed, with Python's own `ast` beside it in the same run: throughput in MB/s of
//! Python source over a corpus of at least 50 MB (the standard library of $MEMKIT_TEST_PYTHON or
//! python3, plus scripts/fetch-pycorpus's packages when $MEMKIT_TEST_PYCORPUS is set), single
//! thread and all cores, against `ast.parse` + `ast.walk` over the same files; the mem-ast binary
//! over the corpus's roots (the walk, the reads, the records on a pipe) against Python over the
//! files it found; then a typical file (≤ 1,000 lines) through the mem-ast binary, one process
//! per run. Each figure also goes to $MEMKIT_BENCH_FIGURES for scripts/bench's table.
//!
//!     cargo bench --bench ast

mod common;

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::Instant;

use rayon::prelude::*;

const CORPUS_BYTES: u64 = 60 << 20;

// The allocator of the mem-ast binary, so that the in-process figures measure what it runs.
memkit::batch_allocator!();

const PY_REFERENCE: &str = r#"
import ast, sys, time
paths = sys.stdin.read().split("\n")
srcs = []
for p in paths:
    if p:
        with open(p, "rb") as f:
            srcs.append(f.read())
n = 0
t = time.perf_counter()
for s in srcs:
    try:
        for node in ast.walk(ast.parse(s)):
            n += 1
    except (SyntaxError, ValueError, RecursionError):
        pass
dt = time.perf_counter() - t
print(sum(map(len, srcs)), dt, n)
"#;

fn main() {
    batch_allocator_setup();
    let py = std::env::var("MEMKIT_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let stdlib = Command::new(&py)
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['stdlib'])",
        ])
        .output()
        .expect("python");
    let mut roots = vec![String::from_utf8(stdlib.stdout).unwrap().trim().to_string()];
    if let Ok(extra) = std::env::var("MEMKIT_TEST_PYCORPUS") {
        roots.insert(0, format!("{extra}/src"));
    }
    let mut paths = Vec::new();
    let mut total = 0u64;
    'outer: for root in &roots {
        let mut found: Vec<_> = ignore::WalkBuilder::new(root)
            .standard_filters(false)
            .build()
            .filter_map(|e| e.ok())
            .filter(|e| e.path().extension().is_some_and(|x| x == "py"))
            .map(|e| e.into_path())
            .collect();
        found.sort();
        for p in found {
            let Ok(m) = std::fs::metadata(&p) else {
                continue;
            };
            total += m.len();
            paths.push(p);
            if total >= CORPUS_BYTES {
                break 'outer;
            }
        }
    }
    let sources: Vec<(String, Vec<u8>)> = paths
        .iter()
        .map(|p| (p.display().to_string(), std::fs::read(p).unwrap()))
        .collect();
    let mb = total as f64 / (1 << 20) as f64;
    println!(
        "corpus: {} files, {mb:.1} MB of Python ({})",
        sources.len(),
        roots.join(", ")
    );

    // Python first, so its run does not share the cores with ours.
    let (py_mbs, py_secs, nodes) = python(&py, paths.iter().map(|p| p.display().to_string()));
    println!(
        "python ast.parse + ast.walk, 1 thread: {py_secs:.2} s, {py_mbs:.1} MB/s ({nodes} nodes)"
    );

    // The pinned parser alone, without anything mem-ast does with the tree: the ceiling of
    // mem-ast's own figure.
    let t = Instant::now();
    let parsed = sources
        .iter()
        .filter(|(_, b)| {
            std::str::from_utf8(b).is_ok_and(|s| ruff_python_parser::parse_module(s).is_ok())
        })
        .count();
    let parse = t.elapsed().as_secs_f64();
    println!(
        "ruff_python_parser::parse_module alone, 1 thread: {parse:.2} s, {:.1} MB/s ({parsed} files parsed): {:.1}x python",
        mb / parse,
        mb / parse / py_mbs
    );
    let baseline = ("python ast.parse + walk", py_mbs);
    common::figure(
        "ast",
        None,
        "parser alone, 1 thread",
        mb / parse,
        "MB/s",
        common::Budget::None,
        Some(baseline),
    );

    let t = Instant::now();
    let defs: usize = sources
        .iter()
        .map(|(p, b)| memkit_ast::snapshot(p, b).functions.len())
        .sum();
    let one = t.elapsed().as_secs_f64();
    println!(
        "mem-ast snapshot (parse, definitions, hashes, calls), 1 thread: {one:.2} s, {:.1} MB/s, {defs} definitions: {:.1}x python",
        mb / one,
        mb / one / py_mbs
    );
    let t = Instant::now();
    let _: usize = sources
        .par_iter()
        .map(|(p, b)| memkit_ast::snapshot(p, b).functions.len())
        .sum();
    let all = t.elapsed().as_secs_f64();
    let threads = rayon::current_num_threads();
    println!(
        "mem-ast snapshot, {threads} threads: {all:.2} s, {:.1} MB/s: {:.1}x python",
        mb / all,
        mb / all / py_mbs
    );
    common::figure(
        "ast",
        None,
        &format!("mem-ast snapshot, {threads} threads"),
        mb / all,
        "MB/s",
        common::Budget::TimesBaseline(20.0),
        Some(baseline),
    );

    // The binary over the roots as a user runs it: the walk (which skips what a developer never
    // wants parsed, site-packages among them: not the corpus above), the reads, the parse on
    // every core, the links across files and the records, drained from a pipe. Python parses
    // the files it found, in the same run.
    let home = tempfile::tempdir().unwrap();
    let tree = |calls: bool| {
        let mut c = common::cmd(home.path(), "mem-ast");
        c.args(["--format", "jsonl"]);
        if calls {
            c.arg("--calls");
        }
        c.args(&roots).stdout(Stdio::piped()).stderr(Stdio::null());
        let t = Instant::now();
        let mut child = c.spawn().expect("mem-ast");
        let mut out = Vec::new();
        child.stdout.take().unwrap().read_to_end(&mut out).unwrap();
        assert!(child.wait().unwrap().success());
        (t.elapsed().as_secs_f64(), out)
    };
    let (_, out) = tree(false);
    let (mut files, mut bytes) = (Vec::new(), 0.0);
    for line in out.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let rec: serde_json::Value = serde_json::from_slice(line).unwrap();
        match rec["type"].as_str() {
            Some("file") => files.push(rec["path"].as_str().unwrap().to_string()),
            Some("summary") => bytes = rec["counts"]["bytes"].as_f64().unwrap(),
            _ => {}
        }
    }
    let tree_mb = bytes / (1 << 20) as f64;
    let (py_tree_mbs, py_tree_secs, _) = python(&py, files.iter().cloned());
    println!(
        "python ast.parse + ast.walk over the files mem-ast finds under the roots ({} files, {tree_mb:.1} MB), 1 thread: {py_tree_secs:.2} s, {py_tree_mbs:.1} MB/s",
        files.len()
    );
    // The default run computes every call (the file records count them); --calls also prints
    // one record per call, three times the bytes: its figure is shown beside, with no budget.
    for (label, calls) in [("", false), (" --calls", true)] {
        let mut runs: Vec<(f64, usize)> = (0..3)
            .map(|_| {
                let (secs, out) = tree(calls);
                (secs, out.len())
            })
            .collect();
        runs.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (secs, out) = runs[1];
        let mbs = tree_mb / secs;
        println!(
            "mem-ast --format jsonl{label} ROOTS (the binary, {} MB of records), median of 3: {secs:.2} s, {mbs:.1} MB/s: {:.1}x python",
            out >> 20,
            mbs / py_tree_mbs
        );
        common::figure(
            "ast",
            None,
            &format!("mem-ast binary over the tree{label}"),
            mbs,
            "MB/s",
            if calls {
                common::Budget::None
            } else {
                common::Budget::TimesBaseline(20.0)
            },
            Some(("python ast.parse + walk, same files", py_tree_mbs)),
        );
    }

    // A typical file: the largest of the corpus with at most 1,000 lines.
    let (path, src) = sources
        .iter()
        .filter(|(_, b)| b.iter().filter(|&&c| c == b'\n').count() <= 1000)
        .max_by_key(|(_, b)| b.len())
        .unwrap();
    let lines = src.iter().filter(|&&c| c == b'\n').count();
    let mut times = Vec::new();
    for _ in 0..30 {
        let mut c = common::cmd(home.path(), "mem-ast");
        c.args(["--format", "jsonl", path]);
        let (ms, _, code) = common::timed(c, None);
        assert_eq!(code, 0);
        times.push(ms);
    }
    let median = common::median(&mut times);
    let p90 = common::pct(&mut times, 0.9);
    let mut truecmd = Vec::new();
    for _ in 0..30 {
        truecmd.push(common::timed(Command::new("/bin/true"), None).0);
    }
    let true_ms = common::median(&mut truecmd);
    println!(
        "mem-ast on one file ({lines} lines, {} KB), one process per run: median {median:.2} ms, p90 {p90:.2} ms (/bin/true: {true_ms:.2} ms)",
        src.len() / 1024,
    );
    common::figure(
        "ast",
        None,
        "mem-ast on one file, one process",
        median,
        "ms",
        common::Budget::None,
        Some(("/bin/true", true_ms)),
    );
}

/// Python's `ast.parse` + `ast.walk` over `paths` in one process: (MB/s, seconds, nodes).
fn python(py: &str, paths: impl Iterator<Item = String>) -> (f64, f64, u64) {
    let mut child = Command::new(py)
        .args(["-c", PY_REFERENCE])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let list: String = paths.map(|p| p + "\n").collect();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(list.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let fields: Vec<f64> = text
        .split_whitespace()
        .map(|x| x.parse().unwrap())
        .collect();
    (
        fields[0] / (1 << 20) as f64 / fields[1],
        fields[1],
        fields[2] as u64,
    )
}
