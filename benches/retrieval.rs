//! Retrieval evaluation (run: `cargo bench --bench retrieval`): labelled queries built from
//! the fixture transcripts — a turn's user prompt is the query, that turn's observations are
//! the relevant records — scored for BM25, vector and hybrid retrieval through the real
//! search path (memkit::search::Searcher, as mem-search --batch runs it).
//!
//! Vectors come from a real model through mem-embed's code: all-MiniLM-L6-v2 (int8) by
//! default, or MEMKIT_EVAL_MODEL (a name under the model cache or a directory). The model
//! cache is MEMKIT_TEST_MODELS, else MEM_MODELS, else ~/.cache/memkit/models (scripts/test
//! fills it). Search weights follow the MEM_SEARCH_* variables, so a change can be compared
//! in one command: `MEM_SEARCH_WEIGHT_SIMILARITY=1 cargo bench --bench retrieval`.
//!
//! recall@k = |relevant ∩ top k| / min(|relevant|, k); MRR = mean of 1 / rank of the first
//! relevant hit (0 when none is in the top 10).

mod common;

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::Instant;

use memkit::config::Config;
use memkit::embed;
use memkit::index::{self, Layout, Options};
use memkit::search::{Engine, Filters, Request, Searcher};
use memkit_testkit as synth;

fn model_cache() -> PathBuf {
    ["MEMKIT_TEST_MODELS", "MEM_MODELS"]
        .iter()
        .find_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cache/memkit/models")
        })
}

fn main() {
    let cache = model_cache();
    let spec = std::env::var("MEMKIT_EVAL_MODEL").unwrap_or_else(|_| "minilm-l6".into());
    let model_dir = if spec.contains('/') {
        PathBuf::from(&spec)
    } else {
        cache.join(&spec)
    };
    assert!(
        model_dir.join("model.onnx").is_file(),
        "{} has no model.onnx: run scripts/test (it fetches MiniLM) or set MEMKIT_TEST_MODELS / MEMKIT_EVAL_MODEL",
        model_dir.display()
    );
    embed::init_runtime_at(&cache.join("runtime/libonnxruntime.so")).unwrap();

    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("mem");
    let turns = common::fixture_turns(&home);
    // Search finds the model of the vector index through the configured embedding model.
    std::fs::write(
        home.join("config.toml"),
        format!("embed_model = {:?}\n", model_dir.display().to_string()),
    )
    .unwrap();
    let mut conn = memkit::store::open(&home.join("mem.db")).unwrap();
    let mut labelled: Vec<(String, HashSet<i64>)> = Vec::new();
    let mut total_obs = 0;
    for t in &turns {
        let ids = synth::insert(&mut conn, &t.obs).unwrap();
        total_obs += ids.len();
        if t.prompt.chars().count() >= 15 && !ids.is_empty() {
            labelled.push((t.prompt.clone(), ids.into_iter().collect()));
        }
    }
    let t = Instant::now();
    let run = embed::store::embed_database(
        &mut conn,
        &model_dir,
        None,
        None,
        Default::default(),
        |_, _| {},
    )
    .unwrap();
    let embed_s = t.elapsed().as_secs_f64();
    // Query vectors as mem-search makes them (same text, same cache key).
    let model = model_dir.to_str().unwrap();
    for (q, _) in &labelled {
        embed::store::embed_query(&conn, model, None, Some(embed::SEARCH_QUERY_KIND), q).unwrap();
    }
    index::update(&conn, &Layout::new(&home), &Options::default()).unwrap();
    drop(conn);
    let cfg = Config::load(&home).unwrap();
    let conn = memkit::store::open(&home.join("mem.db")).unwrap();
    let s = Searcher::open(&home, conn, &cfg).unwrap();
    assert!(s.vectors().is_some() && s.bm25.is_some());
    let vs = s.vector_state.clone().unwrap();

    println!(
        "retrieval evaluation: {} labelled queries (user prompts), {} observations from {} turns",
        labelled.len(),
        total_obs,
        turns.len()
    );
    println!(
        "vectors: {} ({}-d, {} embedded in {embed_s:.1} s), weights {}",
        vs.model,
        vs.dim,
        run.embedded,
        serde_json::to_string(&s.weights).unwrap()
    );
    println!("| retrieval | recall@5 | recall@10 | MRR |");
    println!("|---|---|---|---|");
    let mut results = Vec::new();
    for (name, engine) in [
        ("bm25", Engine::Bm25),
        ("vector", Engine::Vector),
        ("hybrid", Engine::Auto),
    ] {
        let (mut r5, mut r10, mut mrr) = (0.0, 0.0, 0.0);
        for (q, rel) in &labelled {
            let req = Request {
                text: q.clone(),
                filters: Filters::default(),
                limit: 10,
                engine,
                probe: true,
                ..Request::default()
            };
            let hits = s.search(&req).unwrap();
            let got: Vec<i64> = hits
                .iter()
                .filter(|h| h.source == "observation")
                .map(|h| h.id)
                .collect();
            if engine == Engine::Auto {
                assert!(hits.iter().all(|h| h.mode == "hybrid"), "{q:?} not hybrid");
            }
            let found = |k: usize| got.iter().take(k).filter(|i| rel.contains(i)).count() as f64;
            r5 += found(5) / rel.len().min(5) as f64;
            r10 += found(10) / rel.len().min(10) as f64;
            if let Some(p) = got.iter().position(|i| rel.contains(i)) {
                mrr += 1.0 / (p + 1) as f64;
            }
        }
        let n = labelled.len() as f64;
        println!(
            "| {name} | {:.3} | {:.3} | {:.3} |",
            r5 / n,
            r10 / n,
            mrr / n
        );
        results.push((name, r5 / n, r10 / n, mrr / n));
    }
    let h = results[2];
    let ahead = results[..2]
        .iter()
        .all(|r| h.1 > r.1 && h.2 > r.2 && h.3 > r.3);
    println!(
        "hybrid ahead of bm25 and vector on every measure: {}",
        if ahead { "yes" } else { "NO" }
    );
}
