//! Search and indexing figures on a 100,000-observation corpus made from the fixtures' real
//! text (memkit::search::synth::corpus, seed 42). Run: `cargo bench --bench search`
//! (MEMKIT_BENCH_N changes the corpus size).
//!
//! Prints: full BM25 rebuild, vector index build (256-d), incremental index of 1,000 new
//! observations, and per-process wall time (start + index open + search) of mem-search in
//! BM25 and hybrid mode (cached query vector), with peak RSS; the baseline is
//! `mem-search --version` measured in the same run.
//!
//! MEMKIT_BENCH_RERANK=DIR also measures hybrid + `--rerank` with the cross-encoder in DIR at
//! depths 10 and 20 (e.g. one made by `scripts/gen_cross_encoder_onnx.py --body` on MiniLM-L6,
//! which costs what ms-marco-MiniLM-L-6-v2 does).
//!
//! MEMKIT_BENCH_HOME=DIR keeps the data home in DIR for profiling; a DIR already holding a
//! corpus is measured again without being rebuilt. MEMKIT_BENCH_RECALL_ONLY=1 prints only the
//! vector index's recall against comparing every vector (DIR/mem may be any kept store with a
//! `bench-queries.txt`, e.g. one `mem-eval retrieval --keep` left: its cached query vectors are
//! the queries).

mod common;

/// The project the one-project rows search (a twelfth of the store).
const PROJECT: &str = "/bench/project-3";

use std::path::Path;
use std::time::Instant;

use memkit::index::{self, Layout, Options};
use memkit_testkit as synth;

const DIM: usize = 256;

fn run_many(home: &Path, queries: &[String], args: &[&str]) -> (f64, f64, f64, usize) {
    let mut ms = Vec::new();
    let mut rss: f64 = 0.0;
    let mut found = 0;
    for q in queries {
        let mut c = common::cmd(home, "mem-search");
        c.args(args).arg("--").arg(q);
        let (t, r, code) = common::timed(c, None);
        assert!(code == 0 || code == 1, "mem-search exited {code} for {q:?}");
        found += (code == 0) as usize;
        ms.push(t);
        rss = rss.max(r);
    }
    // The tool's own peak, where time can tell it (see common::peak_rss).
    let mut c = common::cmd(home, "mem-search");
    c.args(args).arg("--").arg(&queries[0]);
    if let Some(r) = common::peak_rss(&c, None) {
        rss = r;
    }
    (
        common::median(&mut ms.clone()),
        common::pct(&mut ms, 0.9),
        rss,
        found,
    )
}

fn main() {
    let n: usize = std::env::var("MEMKIT_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    if let Some(h) = std::env::var_os("MEMKIT_BENCH_MEASURE") {
        return measure(Path::new(&h), n);
    }
    let keep = std::env::var_os("MEMKIT_BENCH_HOME").map(std::path::PathBuf::from);
    if let Some(k) = &keep
        && k.join("mem/bench-queries.txt").is_file()
    {
        // MEMKIT_BENCH_INCREMENTAL=SEED: 1,000 more observations indexed first (with the
        // binaries of this build), then the queries.
        if let Some(seed) = std::env::var("MEMKIT_BENCH_INCREMENTAL")
            .ok()
            .and_then(|s| s.parse().ok())
        {
            let base: Vec<synth::Obs> = common::fixture_turns(&k.join("fixtures"))
                .into_iter()
                .flat_map(|t| t.obs)
                .collect();
            let home = k.join("mem");
            let mut conn = memkit::store::open(&home.join("mem.db")).unwrap();
            incremental(&mut conn, &base, &Layout::new(&home), n, seed);
        }
        return spawn_measure(&k.join("mem"), n);
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = keep.unwrap_or_else(|| tmp.path().to_path_buf());
    let src = root.join("fixtures");
    let base: Vec<synth::Obs> = common::fixture_turns(&src)
        .into_iter()
        .flat_map(|t| t.obs)
        .collect();
    let home = root.join("mem");
    std::fs::create_dir_all(&home).unwrap();
    let mut conn = memkit::store::open(&home.join("mem.db")).unwrap();
    let t = Instant::now();
    let corpus = synth::corpus(&base, n, 42, 12);
    synth::insert(&mut conn, &corpus).unwrap();
    println!(
        "corpus: {n} observations from {} fixture observations (seed 42), stored in {:.1} s",
        base.len(),
        t.elapsed().as_secs_f64()
    );
    let layout = Layout::new(&home);

    let t = Instant::now();
    index::update(
        &conn,
        &layout,
        &Options {
            rebuild: true,
            ..Options::default()
        },
    )
    .unwrap();
    let bm25_full = t.elapsed().as_secs_f64();
    println!("full BM25 rebuild of {n}: {bm25_full:.2} s (target <= 30 s)");
    let n64 = Some(n as u64);
    common::figure(
        "search",
        n64,
        "full BM25 index build",
        bm25_full,
        "s",
        common::Budget::None,
        None,
    );

    let t = Instant::now();
    synth::embed_observations(&mut conn, DIM).unwrap();
    println!(
        "hashed vectors written to the embeddings table (stand-in for mem-embed, not an index figure): {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    let reps = index::update(&conn, &layout, &Options::default()).unwrap();
    let vec_s = t.elapsed().as_secs_f64();
    assert!(
        reps.iter()
            .any(|r| r.name.starts_with("vectors") && r.docs == n as u64)
    );
    println!("vector index ({DIM}-d, f16) of {n}: {vec_s:.2} s (target <= 60 s)");
    common::figure(
        "search",
        n64,
        "vector index build (256-d)",
        vec_s,
        "s",
        common::Budget::None,
        None,
    );

    incremental(&mut conn, &base, &layout, n, 4242);

    // Queries: words from real fixture titles and summaries.
    let mut rng = synth::Rng(7);
    let queries: Vec<String> = (0..60)
        .map(|_| {
            let o = &base[rng.below(base.len())];
            let words: Vec<&str> = o
                .summary
                .split_whitespace()
                .filter(|w| w.len() > 3 && w.chars().all(char::is_alphanumeric))
                .collect();
            if words.len() < 3 {
                o.title.clone()
            } else {
                let i = rng.below(words.len() - 2);
                words[i..i + 3].join(" ")
            }
        })
        .collect();
    for q in &queries {
        synth::cache_query(&conn, q, DIM).unwrap();
    }
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
        .unwrap();
    drop(conn);

    // Timing runs in a fresh process of this bench: a child forked from this big one would
    // inherit its resident pages in ru_maxrss and pay for copying its page tables.
    std::fs::write(home.join("bench-queries.txt"), queries.join("\n")).unwrap();
    spawn_measure(&home, n);
}

fn spawn_measure(home: &Path, n: usize) {
    let st = std::process::Command::new(std::env::current_exe().unwrap())
        .env("MEMKIT_BENCH_MEASURE", home)
        .env("MEMKIT_BENCH_N", n.to_string())
        .status()
        .unwrap();
    assert!(st.success());
}

fn measure(home: &Path, n: usize) {
    let queries: Vec<String> = std::fs::read_to_string(home.join("bench-queries.txt"))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    let home = home.to_path_buf();
    let mut base_ms = Vec::new();
    for _ in 0..30 {
        let mut c = common::cmd(&home, "mem-search");
        c.arg("--version");
        base_ms.push(common::timed(c, None).0);
    }
    let baseline = common::median(&mut base_ms);
    println!("baseline (mem-search --version, process start only): p50 {baseline:.2} ms");
    let n64 = Some(n as u64);
    let version = Some(("mem-search --version", baseline));
    let fig = |name: &str, p50: f64, budget: f64| {
        common::figure(
            "search",
            n64,
            name,
            p50,
            "ms",
            common::Budget::Max(budget),
            version,
        )
    };
    // #30 asks 15 ms of a hybrid search at 100k, #31 25 ms at a million.
    let hybrid_budget = if n <= 100_000 { 15.0 } else { 25.0 };
    let db = walk_bytes(&home.join("mem.db"));
    let index = walk_bytes(&home.join("index"));
    println!(
        "store: database {:.0} bytes per observation, indexes {:.0} bytes per observation",
        db as f64 / n as f64,
        index as f64 / n as f64
    );
    for (what, bytes) in [("database", db), ("indexes (BM25 + vectors)", index)] {
        let per = bytes as f64 / n as f64;
        let name = format!("{what}: bytes per observation");
        common::figure("search", n64, &name, per, "B", common::Budget::None, None);
    }
    if std::env::var_os("MEMKIT_BENCH_RECALL_ONLY").is_some() {
        for (k, project) in [
            (10, None),
            (100, None),
            (10, Some(PROJECT)),
            (100, Some(PROJECT)),
        ] {
            let (strict, tied) = recall(&home, &queries, k, project);
            let within = project.map_or(String::new(), |p| format!(" within {p}"));
            println!(
                "vector index recall@{k}{within} against exact: {strict:.3} ({tied:.3} counting ties within {EPSILON})"
            );
        }
        return;
    }
    let (strict, tied) = recall(&home, &queries, 100, None);
    println!(
        "vector index: {:.1}% of the exact top 100 (every stored vector compared), {:.1}% counting ties within {EPSILON} of the 100th",
        100.0 * strict,
        100.0 * tied
    );
    common::figure(
        "search",
        n64,
        "vector index recall@100 against exact",
        strict,
        "",
        common::Budget::Min(0.95),
        None,
    );
    common::figure(
        "search",
        n64,
        &format!("vector index recall@100, ties within {EPSILON} counted"),
        tied,
        "",
        common::Budget::None,
        None,
    );
    let project = ["--project", PROJECT];
    let (p50, p90, rss, found) = run_many(
        &home,
        &queries,
        &["--engine", "bm25", project[0], project[1]],
    );
    fig("mem-search BM25, one project p50", p50, 10.0);
    println!(
        "mem-search BM25, one project (~{} records): p50 {p50:.2} ms, p90 {p90:.2} ms, {:.1}x baseline, peak RSS {rss:.1} MB, {found}/{} found (target p50 <= 10 ms, RSS <= 100 MB)",
        n / 12,
        p50 / baseline,
        queries.len()
    );
    let (p50, p90, rss, found) = run_many(&home, &queries, &["--engine", "bm25", "--all-projects"]);
    fig("mem-search BM25, all projects p50", p50, 10.0);
    println!(
        "mem-search BM25, all {n}: p50 {p50:.2} ms, p90 {p90:.2} ms, {:.1}x baseline, peak RSS {rss:.1} MB, {found}/{} found",
        p50 / baseline,
        queries.len()
    );
    let (p50, p90, rss, found) = run_many(&home, &queries, &["--all-projects"]);
    fig("mem-search hybrid, all projects p50", p50, hybrid_budget);
    common::figure(
        "search",
        n64,
        "mem-search hybrid peak RSS",
        rss,
        "MB",
        common::Budget::Max(500.0),
        None,
    );
    println!(
        "mem-search hybrid (cached query vector), all {n}: p50 {p50:.2} ms, p90 {p90:.2} ms, {:.1}x baseline, peak RSS {rss:.1} MB, {found}/{} found (target p50 <= 25 ms)",
        p50 / baseline,
        queries.len()
    );
    // The vector arm filtered inside the search (a project of ~n/12 records).
    let (p50, p90, rss, found) = run_many(&home, &queries, &project);
    fig("mem-search hybrid, one project p50", p50, hybrid_budget);
    println!(
        "mem-search hybrid (cached query vector), one project (~{} records): p50 {p50:.2} ms, p90 {p90:.2} ms, {:.1}x baseline, peak RSS {rss:.1} MB, {found}/{} found (target p50 <= 25 ms)",
        n / 12,
        p50 / baseline,
        queries.len()
    );
    let (p50, _, rss, _) = run_many(&home, &queries, &["--all-projects", "--mode", "probe"]);
    println!("mem-search hybrid --mode probe, all {n}: p50 {p50:.2} ms, peak RSS {rss:.1} MB");
    if let Some(dir) = std::env::var_os("MEMKIT_BENCH_RERANK") {
        let dir = Path::new(&dir).canonicalize().unwrap();
        for depth in [10, 20] {
            // The settings file, so that run_many's command line stays the user's.
            std::fs::write(
                home.join("config.toml"),
                format!(
                    "search_rerank_model = {:?}\nsearch_rerank_depth = {depth}\n",
                    dir.display().to_string()
                ),
            )
            .unwrap();
            // A reranker that cannot load leaves the fused order, and its time would be
            // hybrid's: the bench stops instead.
            let out = common::cmd(&home, "mem-search")
                .args(["--all-projects", "--rerank", "--", &queries[0]])
                .output()
                .unwrap();
            assert!(
                out.stderr.is_empty(),
                "mem-search --rerank: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let (p50, p90, rss, found) = run_many(&home, &queries, &["--all-projects", "--rerank"]);
            println!(
                "mem-search hybrid --rerank (depth {depth}, {}), all {n}: p50 {p50:.2} ms, p90 {p90:.2} ms, {:.1}x baseline, peak RSS {rss:.1} MB, {found}/{} found (target p50 <= 60 ms)",
                dir.display(),
                p50 / baseline,
                queries.len()
            );
        }
        std::fs::remove_file(home.join("config.toml")).unwrap();
    }
}

/// The share of the exact top `k` (every stored vector compared at f32, a record by its best
/// window) that the vector index returns for the bench's queries.
/// The vector index's recall@k against comparing every stored vector: (strict, and counting
/// ties within [`EPSILON`] of the k-th as ann-benchmarks does).
/// Within `project` when given: its records only, the keys a project search hands the scan
/// (`search::filters::keys`).
fn recall(home: &Path, queries: &[String], k: usize, project: Option<&str>) -> (f64, f64) {
    let conn = memkit::store::open(&home.join("mem.db")).unwrap();
    let layout = Layout::new(home);
    let st = layout.load_state().unwrap();
    let vs = &st.vectors[0];
    let v = memkit::index::vectors::Vectors::view(&layout.dir, vs).unwrap();
    let allowed = project.and_then(|p| {
        let f = memkit::store::filters::Filters {
            projects: Some(vec![p.to_string()]),
            ..Default::default()
        };
        let learned = f.learnings(&conn).unwrap();
        memkit::search::filters::keys(&f, &conn, &learned, None).unwrap()
    });
    let mut all = memkit::store::embeddings::all(&conn, &vs.model, vs.dim).unwrap();
    if let Some(a) = &allowed {
        all.retain(|(kind, id, _)| a.contains(memkit::store::vector_key(kind, *id)));
    }
    let (mut found, mut near, mut total) = (0, 0, 0);
    // The bench's queries on its hashed vectors; on a kept store of a real model (e.g. one
    // `mem-eval retrieval --keep` left), every 20th cached vector that is no record's.
    let qvs: Vec<Vec<f32>> = if vs.model == synth::HASH_MODEL {
        queries
            .iter()
            .map(|q| {
                let text =
                    memkit::embed::query_text(None, Some(memkit::embed::SEARCH_QUERY_KIND), q);
                synth::hash_embed(&text, vs.dim)
            })
            .collect()
    } else {
        let mut st = conn
            .prepare(
                "SELECT vector FROM embedding_cache WHERE model = ?1 AND dim = ?2 \
                 AND text_hash NOT IN (SELECT content_hash FROM embeddings)",
            )
            .unwrap();
        st.query_map(rusqlite::params![vs.model, vs.dim as i64], |r| {
            r.get::<_, Vec<u8>>(0)
        })
        .unwrap()
        .map(|b| memkit::store::embeddings::from_blob(&b.unwrap()))
        .step_by(20)
        .collect()
    };
    for qv in qvs {
        let mut exact: Vec<(u64, f32)> = all
            .iter()
            .filter_map(|(kind, id, v)| {
                Some((
                    memkit::store::vector_key(kind, *id),
                    memkit_search::text::best_window(&qv, v)?,
                ))
            })
            .collect();
        exact.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let got: std::collections::HashSet<u64> = v
            .search(&qv, k, allowed.as_ref())
            .unwrap()
            .into_iter()
            .map(|x| x.0)
            .collect();
        total += k.min(exact.len());
        found += exact.iter().take(k).filter(|x| got.contains(&x.0)).count();
        // As ann-benchmarks counts: a hit within EPSILON of the k-th exact similarity is a
        // right answer. The synthetic corpus recombines 711 texts into a million records, so
        // the k-th place is shared by many records whose order f16 rounding decides.
        if let Some(kth) = exact.get(k.min(exact.len()).saturating_sub(1)) {
            let sim: std::collections::HashMap<u64, f32> = exact.iter().copied().collect();
            near += got
                .iter()
                .filter(|key| sim.get(key).is_some_and(|s| *s >= kth.1 - EPSILON))
                .count()
                .min(k);
        }
    }
    (
        found as f64 / total.max(1) as f64,
        near as f64 / total.max(1) as f64,
    )
}

/// How far below the k-th exact similarity a hit still counts, for the tied recall.
const EPSILON: f32 = 1e-3;

/// Bytes of a file, or of every file under a directory.
fn walk_bytes(p: &Path) -> u64 {
    match std::fs::metadata(p) {
        Ok(m) if m.is_dir() => std::fs::read_dir(p)
            .unwrap()
            .flatten()
            .map(|e| walk_bytes(&e.path()))
            .sum(),
        Ok(m) => m.len(),
        Err(_) => 0,
    }
}

/// Indexes 1,000 new observations (from `seed`) into a store of `n`, timed.
fn incremental(
    conn: &mut rusqlite::Connection,
    base: &[synth::Obs],
    layout: &Layout,
    n: usize,
    seed: u64,
) {
    let n64 = Some(n as u64);
    let extra = synth::corpus(base, 1000, seed, 12);
    synth::insert(conn, &extra).unwrap();
    synth::embed_observations(conn, DIM).unwrap();
    let t = Instant::now();
    let reps = index::update(conn, layout, &Options::default()).unwrap();
    let inc = t.elapsed().as_secs_f64();
    assert!(
        reps.iter().all(|r| !r.rebuilt && r.added == 1000),
        "{reps:?}"
    );
    println!(
        "incremental index of 1,000 new observations (BM25 + vectors): {inc:.3} s (target <= 1 s)"
    );
    common::figure(
        "search",
        n64,
        "incremental index of 1,000 new observations",
        inc,
        "s",
        common::Budget::Max(1.0),
        None,
    );
}
