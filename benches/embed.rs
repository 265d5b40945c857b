//! Embedding figures: where a fresh process's model load goes, before and after the
//! persistent model cache, and tokens/s of memkit next to raw ONNX Runtime (Python
//! onnxruntime, same model, same batches, same threads, measured in the same run).
//!
//!     MEMKIT_BENCH_QWEN=/path/to/qwen3-full cargo bench --bench embed
//!
//! MEMKIT_BENCH_QWEN is a 0.6B-size model directory (scripts/gen_qwen3_onnx.py --config full
//! --int8); without it only MiniLM is measured. MEM_MODELS (default ~/.cache/memkit/models)
//! holds the runtime and minilm-l6; MEMKIT_TEST_PYTHON the venv python of scripts/pyenv.
//! MEMKIT_BENCH_RUNS (default 5) load runs per variant; medians are printed.
//! MEMKIT_BENCH_TEXTS caps the fixture texts of each throughput run (512 for MiniLM, 128 for
//! the 0.6B-size model), for a quicker iteration; MEMKIT_BENCH_BATCH_TOKENS tries another
//! batch size than embed::BATCH_TOKENS (padded tokens) on both memkit and the raw batches.

mod common;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use memkit::embed::{self, Embedder};
use serde_json::Value;

use common::models;

fn python() -> PathBuf {
    common::env_path("MEMKIT_TEST_PYTHON", ".cache/memkit/venv/bin/python")
}

/// One process run: wall ms, peak RSS MiB, stdout, stderr. Reaped by wait4 for its rusage.
#[allow(clippy::zombie_processes)]
fn run(mut c: Command, stdin: &[u8]) -> (f64, f64, String, String) {
    c.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let t = Instant::now();
    let mut child = c.spawn().expect("spawn");
    let mut input = child.stdin.take().unwrap();
    let data = stdin.to_vec();
    let feeder = std::thread::spawn(move || {
        let _ = input.write_all(&data);
    });
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let mut stdout = String::new();
    let _ = out.read_to_string(&mut stdout);
    let stderr = reader.join().unwrap();
    feeder.join().unwrap();
    let (code, rss) = common::reap(&child);
    let ms = t.elapsed().as_secs_f64() * 1000.0;
    assert!(code == 0, "{c:?} failed: {stderr}");
    (ms, rss, stdout, stderr)
}

fn mem_embed(cache: bool) -> Command {
    let mut c = Command::new(common::bin("mem-embed"));
    c.env("MEM_MODELS", models());
    c.env("MEM_MODEL_CACHE", if cache { "1" } else { "0" });
    c
}

/// The numbers of a "ready in …" line: (total, runtime, tokenizer, session) in ms.
fn load_line(stderr: &str) -> [f64; 4] {
    let line = stderr
        .lines()
        .find(|l| l.contains("ready in "))
        .unwrap_or_else(|| panic!("no load report in {stderr}"));
    // "... ready in T ms (runtime R ms, tokenizer K ms in parallel, session S ms; ..."
    let (_, from) = line.split_once("ready in ").unwrap();
    let nums: Vec<f64> = from
        .split(|c: char| !c.is_ascii_digit() && c != '.')
        .filter_map(|w| w.parse::<f64>().ok())
        .collect();
    [nums[0], nums[1], nums[2], nums[3]]
}

fn median(v: &mut [f64]) -> f64 {
    common::median(v)
}

fn load_breakdown(model: &Path, runs: usize) {
    let one = br#"{"id":1,"text":"why did the login fail after the refactor"}"#;
    // A text long enough (over embed::PACKED_FROM_TOKENS) for mem-embed to take packed weights.
    let long_text = texts(8, 400).join("\n");
    let long = serde_json::json!({"id": 1, "text": long_text}).to_string();
    let spec = model.to_str().unwrap();
    let variants: [(&str, bool, &[u8]); 3] = [
        ("plain model.onnx", false, one),
        ("cache, query", true, one),
        ("cache, packed", true, long.as_bytes()),
    ];
    // The first cached run builds the entry when there is none; it is not counted.
    run(
        {
            let mut c = mem_embed(true);
            c.args(["-", "-v", "--model", spec]);
            c
        },
        one,
    );
    let mut rows: Vec<(&str, Vec<[f64; 5]>)> = variants
        .iter()
        .map(|(name, _, _)| (*name, vec![]))
        .collect();
    let mut base = Vec::new();
    for _ in 0..runs {
        for (i, (_, cache, input)) in variants.iter().enumerate() {
            let mut c = mem_embed(*cache);
            c.args(["-", "-v", "--model", spec]);
            let (wall, _, _, err) = run(c, input);
            let [t, r, k, s] = load_line(&err);
            rows[i].1.push([t, r, k, s, wall]);
        }
        let mut c = mem_embed(true);
        c.arg("--version");
        base.push(run(c, b"").0);
    }
    let py = Command::new(python())
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/ort_raw_bench.py"))
        .arg(model)
        .args([
            "--load-only",
            "--threads",
            "2",
            "--load-runs",
            &runs.to_string(),
        ])
        .output()
        .expect("python");
    let raw: Value = serde_json::from_slice(&py.stdout).unwrap_or(Value::Null);
    println!(
        "load of {} ({} runs, medians, ms; mem-embed --version {:.1} ms)",
        model.display(),
        runs,
        median(&mut base)
    );
    println!(
        "  {:<18} {:>8} {:>8} {:>10} {:>8} {:>14}",
        "", "ready", "runtime", "tokenizer", "session", "process"
    );
    let mut totals = Vec::new();
    for (name, v) in &rows {
        let col = |k: usize| {
            let mut c: Vec<f64> = v.iter().map(|r| r[k]).collect();
            median(&mut c)
        };
        totals.push(col(0));
        println!(
            "  {:<18} {:>8.0} {:>8.0} {:>10.0} {:>8.0} {:>14.0}",
            name,
            col(0),
            col(1),
            col(2),
            col(3),
            col(4)
        );
    }
    println!(
        "  python onnxruntime InferenceSession(model.onnx): {} ms median {}",
        raw["load_ms"], raw["load_runs_ms"]
    );
    println!(
        "  model cache: ready {:.2}x faster than plain for a query, {:.2}x with packed weights; process = mem-embed embedding one short text (one of about {} tokens for packed)",
        totals[0] / totals[1],
        totals[0] / totals[2],
        memkit::tokens::estimate(&long_text)
    );
}

/// Real text from the fixture transcripts: user prompts and assistant messages.
fn texts(n: usize, max_chars: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut files = Vec::new();
    let mut stack = vec![common::fixtures().join("transcripts")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "jsonl") {
                files.push(p);
            }
        }
    }
    files.sort();
    for f in files {
        for line in std::fs::read_to_string(&f).unwrap_or_default().lines() {
            let Ok(v) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            let c = &v["message"]["content"];
            let parts: Vec<&str> = match c {
                Value::String(s) => vec![s.as_str()],
                Value::Array(a) => a.iter().filter_map(|x| x["text"].as_str()).collect(),
                _ => vec![],
            };
            for t in parts {
                let t = t.trim();
                if t.len() >= 40 && seen.insert(t.to_string()) {
                    out.push(t.chars().take(max_chars).collect());
                    if out.len() == n {
                        return out;
                    }
                }
            }
        }
    }
    out
}

/// Peak RSS of a whole mem-embed process over `texts`. Run before the bench loads any model
/// itself: Linux gives a child the parent's high-water RSS when it execs (the vfork-shared
/// address space is the one replaced), which would hide the child's own figure.
fn peak_rss(model: &Path, texts: &[String]) -> f64 {
    let input: String = texts
        .iter()
        .enumerate()
        .map(|(i, t)| serde_json::json!({"id": i, "text": t}).to_string() + "\n")
        .collect();
    let mut c = mem_embed(true);
    c.args(["-", "--model", model.to_str().unwrap()]);
    run(c, input.as_bytes()).1
}

fn throughput(model: &Path, texts: &[String]) {
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    embed::init_runtime_at(&models().join("runtime/libonnxruntime.so")).unwrap();
    // The session as mem-embed gets it (from the model cache) and a plain one from
    // model.onnx, so the cost of the cache's session options shows next to raw ORT.
    let mut cached = Embedder::load_with(model, None, embed::LoadOptions::batch()).unwrap();
    let plain_opts = embed::LoadOptions {
        cache: false,
        ..embed::LoadOptions::batch()
    };
    let mut plain = Embedder::load_with(model, None, plain_opts).unwrap();
    let budget = std::env::var("MEMKIT_BENCH_BATCH_TOKENS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(embed::BATCH_TOKENS);
    cached.set_batch_tokens(budget);
    plain.set_batch_tokens(budget);
    let e = &cached;
    // memkit's batches: windows of WINDOW texts, each sorted by token count and cut at
    // `budget` padded tokens; the raw side runs the same batches.
    let ids: Vec<Vec<i64>> = refs.iter().map(|t| e.token_ids(t).unwrap()).collect();
    let tokens: usize = ids.iter().map(Vec::len).sum();
    let batches_file =
        std::env::temp_dir().join(format!("memkit-bench-batches-{}.jsonl", std::process::id()));
    let mut w = std::fs::File::create(&batches_file).unwrap();
    let mut sizes = Vec::new();
    for (k, window) in ids.chunks(embed::WINDOW).enumerate() {
        let lens: Vec<usize> = window.iter().map(Vec::len).collect();
        for b in embed::batches(&lens, budget) {
            sizes.push(b.len() as f64);
            let batch: Vec<&Vec<i64>> = b.iter().map(|&i| &ids[k * embed::WINDOW + i]).collect();
            writeln!(w, "{}", serde_json::to_string(&batch).unwrap()).unwrap();
        }
    }
    drop(w);
    // The naive loop: one text per session.run, the same ids.
    let ids_file =
        std::env::temp_dir().join(format!("memkit-bench-ids-{}.jsonl", std::process::id()));
    let lines: String = ids
        .iter()
        .map(|i| serde_json::to_string(i).unwrap() + "\n")
        .collect();
    std::fs::write(&ids_file, lines).unwrap();
    let batch_median = median(&mut sizes);
    // Warm-up, like the raw side's.
    cached.embed(&refs[..refs.len().min(16)]).unwrap();
    plain.embed(&refs[..refs.len().min(16)]).unwrap();
    // Alternated, so that a change in the machine's load falls on all sides alike.
    let mut runs = Vec::new();
    let mut plains = Vec::new();
    let mut raws = Vec::new();
    let mut naives = Vec::new();
    let mut naives_nospin = Vec::new();
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .to_string();
    // The naive loop also over the graph memkit runs (int8 products where the weights are
    // int8: embed::int8), so the table shows what the int8 kernels give and what the rest does.
    let int8_dir = std::env::temp_dir().join(format!("memkit-bench-int8-{}", std::process::id()));
    let int8_model = embed::int8::rewrite(&std::fs::read(model.join("model.onnx")).unwrap())
        .filter(|_| embed::int8_enabled())
        .map(|(bytes, _)| {
            std::fs::create_dir_all(&int8_dir).unwrap();
            std::fs::write(int8_dir.join("model.onnx"), bytes).unwrap();
            std::fs::copy(model.join("manifest.json"), int8_dir.join("manifest.json")).unwrap();
            int8_dir.clone()
        });
    let mut naives_int8 = Vec::new();
    let mut singles = Vec::new();
    let raw_run_with = |dir: &Path, args: &[&str], threads: &str| -> Value {
        let py = Command::new(python())
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/ort_raw_bench.py"))
            .arg(dir)
            .args(args)
            .args(["--threads", threads])
            .output()
            .expect("python");
        let v: Value = serde_json::from_slice(&py.stdout)
            .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&py.stderr)));
        assert_eq!(
            v["tokens"].as_u64(),
            Some(tokens as u64),
            "same tokens on both sides"
        );
        v
    };
    let raw_run = |args: &[&str]| raw_run_with(model, args, &threads);
    for _ in 0..3 {
        for (e, out) in [(&mut cached, &mut runs), (&mut plain, &mut plains)] {
            let t = Instant::now();
            e.embed(&refs).unwrap();
            out.push(tokens as f64 / t.elapsed().as_secs_f64());
        }
        // The same batches with memkit's thread settings: what memkit adds or loses around
        // session.run.
        let v = raw_run(&["--batches", batches_file.to_str().unwrap(), "--no-spin"]);
        raws.push(v["tokens_per_s"].as_f64().unwrap());
        let ids_arg = ids_file.to_str().unwrap();
        let v = raw_run(&["--ids", ids_arg, "--batch-size", "1"]);
        naives.push(v["tokens_per_s"].as_f64().unwrap());
        // How much of the gain is the thread setting alone, and how much the batches.
        let v = raw_run(&["--ids", ids_arg, "--batch-size", "1", "--no-spin"]);
        naives_nospin.push(v["tokens_per_s"].as_f64().unwrap());
        if let Some(dir) = &int8_model {
            let v = raw_run_with(dir, &["--ids", ids_arg, "--batch-size", "1"], &threads);
            naives_int8.push(v["tokens_per_s"].as_f64().unwrap());
        }
        // One thread alone over the graph memkit runs: no split of the cores between texts
        // can beat cores × this, so it is the ceiling of threads and batches.
        let graph = int8_model.as_deref().unwrap_or(model);
        let v = raw_run_with(graph, &["--ids", ids_arg, "--batch-size", "1"], "1");
        singles.push(v["tokens_per_s"].as_f64().unwrap());
    }
    let _ = std::fs::remove_dir_all(&int8_dir);
    let ours = median(&mut runs);
    let ours_plain = median(&mut plains);
    let raw = median(&mut raws);
    let naive = median(&mut naives);
    let naive_nospin = median(&mut naives_nospin);
    let _ = std::fs::remove_file(&batches_file);
    let _ = std::fs::remove_file(&ids_file);
    let name = model.file_name().unwrap().to_string_lossy();
    let cores: f64 = threads.parse().unwrap_or(1.0);
    let ceiling = cores * median(&mut singles);
    common::figure(
        "embed",
        None,
        &format!(
            "ceiling of threads and batches: {cores} × one thread of the naive loop over memkit's graph, {name}"
        ),
        ceiling,
        "tokens/s",
        common::Budget::None,
        Some(("naive onnxruntime loop, one text per run", naive)),
    );
    println!(
        "  the naive loop on one thread over memkit's graph, times {cores}: {ceiling:.0} tokens/s, {:.2} the naive loop (memkit {:.2})",
        ceiling / naive,
        ours / naive
    );
    if !naives_int8.is_empty() {
        let naive_int8 = median(&mut naives_int8);
        common::figure(
            "embed",
            None,
            &format!(
                "embedding throughput against the naive loop over memkit's int8 graph, {name}"
            ),
            ours,
            "tokens/s",
            common::Budget::None,
            Some(("naive loop, the same int8 products", naive_int8)),
        );
        println!(
            "  the naive one-text loop over memkit's int8 graph: {naive_int8:.0} tokens/s, memkit/that {:.2}",
            ours / naive_int8
        );
    }
    // A budget the ceiling beside it rules out is retired, not failed: the 0.6B-size graph's
    // ceiling is 1.1× on 2 cores (int8 already, its time in ONNX Runtime's int8 kernels).
    let wanted = if ceiling / naive >= 1.5 {
        common::Budget::TimesBaseline(1.5)
    } else {
        common::Budget::Retired("≥ 1.5× baseline, above the ceiling of threads and batches")
    };
    common::figure(
        "embed",
        None,
        &format!("embedding throughput, {name}"),
        ours,
        "tokens/s",
        wanted,
        Some(("naive onnxruntime loop, one text per run", naive)),
    );
    common::figure(
        "embed",
        None,
        &format!("embedding throughput against raw onnxruntime on the same batches, {name}"),
        ours,
        "tokens/s",
        common::Budget::None,
        Some(("onnxruntime session.run, same batches and threads", raw)),
    );
    common::figure(
        "embed",
        None,
        &format!("embedding throughput against the naive loop with memkit's threads, {name}"),
        ours,
        "tokens/s",
        common::Budget::None,
        Some(("naive loop, threads not spinning", naive_nospin)),
    );
    println!(
        "throughput of {} on {} fixture texts ({} tokens, {} batches of median {} texts within {} padded tokens, {} threads; medians of 3 alternated runs):\n  memkit (text -> vectors, tokenizing alongside) {:.0} tokens/s with the model cache, {:.0} with a plain session; raw onnxruntime (session.run only, same batches and threads) {:.0} tokens/s; memkit/raw {:.3} (plain session {:.3}); naive one-text loop {:.0} tokens/s, memkit/naive {:.2} (plain session {:.2}); the naive loop with threads not spinning {:.0} tokens/s, memkit/that {:.2}",
        model.display(),
        texts.len(),
        tokens,
        sizes.len(),
        batch_median,
        budget,
        threads,
        ours,
        ours_plain,
        raw,
        ours / raw,
        ours_plain / raw,
        naive,
        ours / naive,
        ours_plain / naive,
        naive_nospin,
        ours / naive_nospin,
    );
}

/// (model, fixture texts, at most this many characters each) of the throughput runs.
const THROUGHPUT: [(usize, usize); 2] = [(512, 1000), (128, 600)];

fn main() {
    let runs: usize = std::env::var("MEMKIT_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let qwen = std::env::var("MEMKIT_BENCH_QWEN").ok().map(PathBuf::from);
    let minilm = models().join("minilm-l6");
    load_breakdown(&minilm, runs);
    if let Some(q) = &qwen {
        load_breakdown(q, runs);
    }
    let cap: Option<usize> = std::env::var("MEMKIT_BENCH_TEXTS")
        .ok()
        .and_then(|v| v.parse().ok());
    let count = |n: usize| cap.map_or(n, |c| c.min(n));
    let mut sets = vec![(minilm, texts(count(THROUGHPUT[0].0), THROUGHPUT[0].1))];
    if let Some(q) = qwen {
        sets.push((q, texts(count(THROUGHPUT[1].0), THROUGHPUT[1].1)));
    }
    for (model, texts) in &sets {
        let rss = peak_rss(model, texts);
        println!(
            "mem-embed of {} on {} fixture texts: peak RSS {rss:.0} MiB",
            model.display(),
            texts.len(),
        );
        let name = model.file_name().unwrap().to_string_lossy();
        // A model past a session per core reads all its weights for every text: the 0.6B-size
        // graph's 441 MB of int8 matrices, the runtime and a 151k-token tokenizer leave no
        // room under 500 MB.
        let large = std::fs::metadata(model.join("model.onnx"))
            .is_ok_and(|m| m.len() > memkit::embed::SHARED_UP_TO);
        common::figure(
            "embed",
            None,
            &format!("mem-embed peak RSS, {name}"),
            rss,
            "MB",
            common::Budget::Max(if large { 600.0 } else { 500.0 }),
            None,
        );
    }
    for (model, texts) in &sets {
        throughput(model, texts);
    }
}
