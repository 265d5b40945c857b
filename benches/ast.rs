//! mem-ast's speed, with Python's own `ast` beside it in the same run: throughput in MB/s of
//! Python source over a corpus of at least 50 MB (the standard library of $MEMKIT_TEST_PYTHON or
//! python3, plus scripts/fetch-pycorpus's packages when $MEMKIT_TEST_PYCORPUS is set), single
//! thread and all cores, against `ast.parse` + `ast.walk` over the same files; then a typical
//! file (≤ 1,000 lines) through the mem-ast binary, one process per run.
//!
//!     cargo bench --bench ast

mod common;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Instant;

use rayon::prelude::*;

const CORPUS_BYTES: u64 = 60 << 20;

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
    let mut child = Command::new(&py)
        .args(["-c", PY_REFERENCE])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let list: String = paths.iter().map(|p| format!("{}\n", p.display())).collect();
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
    let py_mbs = fields[0] / (1 << 20) as f64 / fields[1];
    println!(
        "python ast.parse + ast.walk, 1 thread: {:.2} s, {py_mbs:.1} MB/s ({} nodes)",
        fields[1], fields[2]
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
    println!(
        "mem-ast snapshot, {} threads: {all:.2} s, {:.1} MB/s: {:.1}x python",
        rayon::current_num_threads(),
        mb / all,
        mb / all / py_mbs
    );

    // A typical file: the largest of the corpus with at most 1,000 lines.
    let (path, src) = sources
        .iter()
        .filter(|(_, b)| b.iter().filter(|&&c| c == b'\n').count() <= 1000)
        .max_by_key(|(_, b)| b.len())
        .unwrap();
    let lines = src.iter().filter(|&&c| c == b'\n').count();
    let home = tempfile::tempdir().unwrap();
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
    println!(
        "mem-ast on one file ({lines} lines, {} KB), one process per run: median {median:.2} ms, p90 {p90:.2} ms (/bin/true: {:.2} ms)",
        src.len() / 1024,
        common::median(&mut truecmd)
    );
}
