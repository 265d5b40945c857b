//! mem-context hook figures at 10,000 and 100,000 observations (memkit::search::synth::corpus
//! from the fixtures' real text, seed 42, 12 projects, one session per 40 observations with a
//! summary, functions on a third of them, a Read and an Edit in the queue behind each, one
//! learning per 20 observations, BM25 index built). Run: `cargo bench --bench context`
//! (MEMKIT_BENCH_SIZES=10000,100000 changes the sizes; MEMKIT_BENCH_DIR=DIR keeps the data homes).
//!
//! Prints, per size: per-process wall time of `mem-context --hook` for a SessionStart payload
//! (p50, p90, peak RSS) and of `mem-context --hook --prompt` for UserPromptSubmit payloads made
//! of fixture text, half of them about stored work and half unrelated; the baseline is
//! `mem-context --version` measured in the same run. The prompt hook is measured with vectors of
//! each dimension in MEMKIT_BENCH_DIMS (default 384,1024: MiniLM's and Qwen3-Embedding-0.6B's),
//! a store per dimension.

mod common;

use std::path::Path;

use memkit::index::{self, Layout, Options};
use memkit_testkit as synth;

const PROJECT: &str = "/bench/project-3";
/// The vectors' dimensions: MiniLM's and Qwen3-Embedding-0.6B's.
fn dims() -> Vec<usize> {
    common::numbers("MEMKIT_BENCH_DIMS", &[384, 1024])
}

/// The prompt hook's p50 budget: 30 ms up to 100,000 observations, 40 ms at a million.
fn prompt_budget(n: usize) -> f64 {
    if n > 100_000 { 40.0 } else { 30.0 }
}

fn runs(home: &Path, args: &[&str], payloads: &[std::path::PathBuf]) -> (f64, f64, f64) {
    let mut ms = Vec::new();
    let mut rss: f64 = 0.0;
    for p in payloads {
        let mut c = common::cmd(home, "mem-context");
        c.args(args);
        let (t, r, code) = common::timed(c, Some(p));
        assert_eq!(code, 0, "mem-context {args:?} exited {code}");
        ms.push(t);
        rss = rss.max(r);
    }
    // The tool's own peak, where time can tell it (see common::peak_rss).
    let mut c = common::cmd(home, "mem-context");
    c.args(args);
    if let Some(r) = common::peak_rss(&c, Some(&payloads[0])) {
        rss = r;
    }
    (
        common::median(&mut ms.clone()),
        common::pct(&mut ms, 0.9),
        rss,
    )
}

fn main() {
    let sizes = common::sizes(&[10_000, 100_000]);
    if let Some(h) = std::env::var_os("MEMKIT_BENCH_MEASURE") {
        return measure(Path::new(&h));
    }
    // MEMKIT_BENCH_DIR keeps the data homes there (for profiling); else a temporary directory.
    let tmp = tempfile::tempdir().unwrap();
    let (root, base) = common::root_and_base(tmp.path());
    for (n, dim) in sizes
        .into_iter()
        .flat_map(|n| dims().into_iter().map(move |d| (n, d)))
    {
        let (home, conn) = common::synth_store(&root, &base, n);
        conn.execute_batch(common::SESSIONS_AND_LEARNINGS_SQL)
            .unwrap();
        // Files in play: a Read and an Edit behind each observation.
        conn.execute_batch(common::FILE_CALLS_SQL).unwrap();
        // Vectors for every observation, and the words' vectors a prompt without the model is
        // given its vector from (hashed: what is measured is the lookups and the scan).
        let mut conn = conn;
        synth::embed_observations(&mut conn, dim).unwrap();
        synth::embed_words(&mut conn, dim).unwrap();
        index::update(
            &conn,
            &Layout::new(&home),
            &Options {
                rebuild: true,
                ..Options::default()
            },
        )
        .unwrap();
        conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
            .unwrap();
        drop(conn);
        // Prompts: half are real fixture prompts' words, half unrelated text.
        let mut rng = synth::Rng(9);
        let mut payloads = Vec::new();
        for i in 0..40 {
            let prompt = if i % 2 == 0 {
                base[rng.below(base.len())].title.clone()
            } else {
                [
                    "what is the weather like in Lisbon today",
                    "write a haiku about autumn leaves",
                    "how many grams of flour for a sourdough loaf",
                    "explain the rules of cricket briefly",
                ][i / 2 % 4]
                    .to_string()
            };
            let p = home.join(format!("prompt-{i}.json"));
            let v = serde_json::json!({"hook_event_name": "UserPromptSubmit",
                "session_id": "bench", "cwd": PROJECT, "prompt": prompt});
            std::fs::write(&p, v.to_string()).unwrap();
            payloads.push(p);
        }
        let v = serde_json::json!({"hook_event_name": "SessionStart", "session_id": "bench",
            "cwd": PROJECT, "source": "startup"});
        std::fs::write(home.join("start.json"), v.to_string()).unwrap();
        std::fs::write(home.join("dim"), dim.to_string()).unwrap();
        // Timing in a fresh process: a child forked from this big one would carry its pages.
        common::measure_apart(&home);
    }
}

fn measure(home: &Path) {
    let n = common::observations(home);
    let dim: usize = std::fs::read_to_string(home.join("dim"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let budget = common::Budget::Max(prompt_budget(n as usize));
    let with = |what: &str| format!("{what} ({dim}-dim vectors)");
    let start = vec![home.join("start.json"); 40];
    let (base, _, _) = runs(home, &["--version"], &start);
    println!("{n} observations: baseline mem-context --version p50 {base:.2} ms");
    // SessionStart reads no vector: measured in the first dimension's store only.
    let n64 = Some(n as u64);
    let version = Some(("mem-context --version", base));
    if dims().first() == Some(&dim) {
        let (p50, p90, rss) = runs(home, &["--hook"], &start);
        common::figure(
            "context",
            n64,
            "SessionStart (mem-context --hook) p50",
            p50,
            "ms",
            common::Budget::Max(15.0),
            version,
        );
        common::figure(
            "context",
            n64,
            "SessionStart peak RSS",
            rss,
            "MB",
            common::Budget::Max(500.0),
            None,
        );
        println!(
            "  SessionStart --hook: p50 {p50:.2} ms, p90 {p90:.2} ms, {:.1}x baseline, peak RSS {rss:.1} MB (target p50 <= 15 ms at 10k, <= 50 ms at 100k)",
            p50 / base
        );
    }
    let prompts: Vec<_> = (0..40)
        .map(|i| home.join(format!("prompt-{i}.json")))
        .collect();
    let (p50, p90, rss) = runs(home, &["--hook", "--prompt"], &prompts);
    common::figure(
        "context",
        n64,
        &with("prompt hook (mem-context --hook --prompt) p50"),
        p50,
        "ms",
        budget,
        version,
    );
    common::figure(
        "context",
        n64,
        &with("prompt hook p90"),
        p90,
        "ms",
        common::Budget::None,
        version,
    );
    // Even prompts are about stored work, odd ones unrelated (see the setup above).
    let mut said = [0usize; 2];
    for (i, p) in prompts.iter().enumerate() {
        let out = common::cmd(home, "mem-context")
            .args(["--hook", "--prompt"])
            .stdin(std::fs::File::open(p).unwrap())
            .output()
            .unwrap();
        said[i % 2] += (!out.stdout.is_empty()) as usize;
    }
    println!(
        "  UserPromptSubmit --hook --prompt: p50 {p50:.2} ms, p90 {p90:.2} ms, {:.1}x baseline, peak RSS {rss:.1} MB, {dim}-dim vectors, context given for {}/{} prompts about stored work and {}/{} unrelated ones (target p50 <= {} ms)",
        p50 / base,
        said[0],
        prompts.len().div_ceil(2),
        said[1],
        prompts.len() / 2,
        prompt_budget(n as usize)
    );
    common::figure(
        "context",
        n64,
        &with("prompt hook peak RSS"),
        rss,
        "MB",
        common::Budget::Max(100.0),
        None,
    );
    // The same prompts without the words' vectors: BM25 alone, what the prompts' vectors cost.
    // Set aside, not deleted: a kept store (MEMKIT_BENCH_DIR) can be measured again.
    let words = |sql: &str| {
        rusqlite::Connection::open(home.join("mem.db"))
            .unwrap()
            .execute_batch(&format!("{sql}; PRAGMA wal_checkpoint(TRUNCATE)"))
            .unwrap()
    };
    words("ALTER TABLE word_vectors RENAME TO word_vectors_aside");
    words("CREATE TABLE word_vectors AS SELECT * FROM word_vectors_aside WHERE 0");
    let (lexical, _, _) = runs(home, &["--hook", "--prompt"], &prompts);
    words("DROP TABLE word_vectors; ALTER TABLE word_vectors_aside RENAME TO word_vectors");
    common::figure(
        "context",
        n64,
        &with("prompt hook without word vectors (BM25 alone) p50"),
        lexical,
        "ms",
        budget,
        version,
    );
    println!(
        "  the same prompts without word vectors: p50 {lexical:.2} ms (the words' vectors and the vector scan cost {:.2} ms)",
        p50 - lexical
    );
}
