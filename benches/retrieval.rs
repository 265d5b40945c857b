//! Retrieval evaluation (run: `cargo bench --bench retrieval`): labelled queries built from
//! the fixture transcripts — a turn's user prompt is the query, that turn's observations are
//! the relevant records — scored for BM25, vector and hybrid retrieval through the real
//! search path (memkit::search::Searcher, as mem-search --batch runs it).
//!
//! Vectors are the deterministic hashed bag-of-words vectors of memkit::search::synth (the
//! stand-in until mem-embed's ONNX models are wired in), 256 dimensions.
//!
//! recall@k = |relevant ∩ top k| / min(|relevant|, k); MRR = mean of 1 / rank of the first
//! relevant hit (0 when none is in the top 10).

mod common;

use std::collections::HashSet;

use memkit::config::Config;
use memkit::index::{self, Layout, Options};
use memkit::search::synth;
use memkit::search::{Engine, Filters, Request, Searcher};

const DIM: usize = 256;

fn main() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("mem");
    let turns = common::fixture_turns(&home);
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
    synth::embed_observations(&mut conn, DIM).unwrap();
    for (q, _) in &labelled {
        synth::cache_query(&conn, q, DIM).unwrap();
    }
    index::update(&conn, &Layout::new(&home), &Options::default()).unwrap();
    drop(conn);
    let cfg = Config::load(&home).unwrap();
    let conn = memkit::store::open(&home.join("mem.db")).unwrap();
    let s = Searcher::open(&home, conn, &cfg).unwrap();
    assert!(s.vectors().is_some() && s.bm25.is_some());

    println!(
        "retrieval evaluation: {} labelled queries (user prompts), {} observations from {} turns, hashed vectors {DIM}-d",
        labelled.len(),
        total_obs,
        turns.len()
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
                assert!(hits.iter().all(|h| h.mode == "hybrid"));
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
        .all(|r| h.1 >= r.1 && h.2 >= r.2 && h.3 >= r.3);
    println!(
        "hybrid ahead of bm25 and vector on every measure: {}",
        if ahead { "yes" } else { "NO" }
    );
}
