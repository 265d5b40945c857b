//! mem-search's rerank stage with the real ONNX Runtime and a random-weight cross-encoder
//! (rerank-tiny, made by scripts/gen_cross_encoder_onnx.py in `scripts/test`): its scores mean
//! nothing, but the order they give is what --rerank must return.

use std::path::PathBuf;

use memkit::embed::cross::CrossEncoder;
use memkit_testkit::{self as synth, Obs};
use serde_json::Value;

use crate::{Env, jsonl, show};

fn models() -> PathBuf {
    let m = crate::embed::models();
    assert!(
        m.join("rerank-tiny/model.onnx").is_file(),
        "{} is missing: run scripts/test (it generates the tiny cross-encoder)",
        m.join("rerank-tiny/model.onnx").display()
    );
    m
}

fn env() -> Env {
    let m = models();
    Env::new()
        .set("MEM_MODELS", m.to_str().unwrap())
        .set(
            "ORT_DYLIB_PATH",
            m.join("runtime/libonnxruntime.so").to_str().unwrap(),
        )
        .set("MEM_SEARCH_RERANK_MODEL", "rerank-tiny")
}

/// Thirty records that all match [`QUERY`], in a fresh memory with a BM25 index.
fn memory() -> Env {
    let env = env();
    let topics = [
        "Redis",
        "the CDN",
        "npm",
        "the build",
        "thumbnails",
        "sessions",
        "DNS",
        "the query planner",
        "fonts",
        "the API gateway",
    ];
    let obs: Vec<Obs> = (0..30)
        .map(|i| Obs {
            session_id: "s".into(),
            project: Some("/work/alpha".into()),
            kind: "decision".into(),
            tool_name: "Edit".into(),
            title: format!("Cache for {} (step {i})", topics[i % topics.len()]),
            summary: format!(
                "Moved the cache of {} {}; eviction after {} minutes.",
                topics[i % topics.len()],
                ["behind a lock", "to a new host", "into memory"][i % 3],
                5 + i
            ),
            created_at: format!("2026-01-{:02}T10:00:00.000Z", 1 + i % 28),
            ..Obs::default()
        })
        .collect();
    let mut conn = memkit::store::open(&env.db_path()).unwrap();
    synth::insert(&mut conn, &obs).unwrap();
    drop(conn);
    env.ok("mem-index", &[], b"");
    env
}

/// Each record holds one of lock, host and memory (a word every record holds weighs nothing).
const QUERY: &str = "cache behind a lock, on a new host or in memory";

fn search(env: &Env, extra: &[(&str, &str)], args: &[&str]) -> (Vec<Value>, String) {
    let mut cmd = env.cmd("mem-search");
    for (k, v) in extra {
        cmd.env(k, v);
    }
    let base = ["--all-projects", "--now", "2026-02-01", "--limit", "30"];
    let out = cmd.args(base).args(args).arg(QUERY).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    (
        jsonl(&out),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn ids(hits: &[Value]) -> Vec<i64> {
    hits.iter().map(|h| h["id"].as_i64().unwrap()).collect()
}

/// The text the stage hands the cross-encoder for a hit.
fn passage(h: &Value) -> String {
    let facts: Vec<String> = h["facts"]
        .as_array()
        .map(|a| a.iter().map(|f| f.as_str().unwrap().to_string()).collect())
        .unwrap_or_default();
    memkit::embed::observation_text(
        h["title"].as_str().unwrap(),
        h["summary"].as_str().unwrap_or(""),
        h["detail"].as_str(),
        &facts,
        &[],
    )
}

fn encoder() -> CrossEncoder {
    let m = models();
    memkit::embed::init_runtime_at(&m.join("runtime/libonnxruntime.so")).unwrap();
    CrossEncoder::load(&m.join("rerank-tiny")).unwrap()
}

#[test]
fn rerank_orders_the_best_fused_hits_as_the_cross_encoder_scores_them() {
    let env = memory();
    let (fused, _) = search(&env, &[], &[]);
    assert_eq!(fused.len(), 30, "every record matches");
    let (reranked, err) = search(&env, &[("MEM_SEARCH_RERANK_DEPTH", "20")], &["--rerank"]);
    assert!(!err.contains("warning"), "{err}");

    // What the model says of the first 20 fused hits, each scored as the stage scores it.
    let texts: Vec<String> = fused[..20].iter().map(passage).collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let logits = encoder().score(QUERY, &refs).unwrap();
    let mut order: Vec<usize> = (0..20).collect();
    order.sort_by(|&a, &b| logits[b].total_cmp(&logits[a]).then(a.cmp(&b)));
    let want: Vec<i64> = order
        .iter()
        .map(|&i| fused[i]["id"].as_i64().unwrap())
        .collect();

    assert_eq!(ids(&reranked[..20]), want);
    assert_ne!(
        ids(&reranked[..20]),
        ids(&fused[..20]),
        "the model moved hits"
    );
    // Below the depth the fused order stands, and every position keeps its score.
    assert_eq!(ids(&reranked[20..]), ids(&fused[20..]));
    let scores = |h: &[Value]| h.iter().map(|h| h["score"].as_f64()).collect::<Vec<_>>();
    assert_eq!(scores(&reranked), scores(&fused));

    // The setting does what the flag does.
    let (by_setting, _) = search(
        &env,
        &[
            ("MEM_SEARCH_RERANK", "1"),
            ("MEM_SEARCH_RERANK_DEPTH", "20"),
        ],
        &[],
    );
    assert_eq!(ids(&by_setting), ids(&reranked));
}

#[test]
fn a_batch_scores_each_pair_as_alone() {
    let mut e = encoder();
    let long = "the cache moved to a new host behind a lock ".repeat(40);
    let passages = ["short one", long.as_str(), "Moved the cache of Redis", "x"];
    let together = e.score(QUERY, &passages).unwrap();
    for (p, t) in passages.iter().zip(&together) {
        let alone = e.score(QUERY, &[p]).unwrap()[0];
        assert!(
            (alone - t).abs() < 1e-4,
            "{p:.20}: {alone} alone, {t} in a batch"
        );
    }
    // Different passages get different scores: the model reads them.
    assert!(together.windows(2).any(|w| (w[0] - w[1]).abs() > 1e-4));
}

#[test]
fn a_missing_or_broken_reranker_is_named_and_never_loses_the_hits() {
    let env = memory();
    let (fused, _) = search(&env, &[], &[]);

    // Asked for by flag with no such model: an error that says what to set.
    let out = env
        .cmd("mem-search")
        .env("MEM_SEARCH_RERANK_MODEL", "no-such-reranker")
        .args(["--all-projects", "--rerank", QUERY])
        .output()
        .unwrap();
    assert!(!out.status.success(), "{}", show(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no-such-reranker") && err.contains("MEM_SEARCH_RERANK_MODEL"),
        "{err}"
    );

    // Turned on by the setting: a warning, and the fused hits.
    let (hits, err) = search(
        &env,
        &[
            ("MEM_SEARCH_RERANK", "1"),
            ("MEM_SEARCH_RERANK_MODEL", "no-such-reranker"),
        ],
        &[],
    );
    assert!(err.contains("MEM_SEARCH_RERANK is on"), "{err}");
    assert_eq!(ids(&hits), ids(&fused));

    // A model file that cannot be loaded: the fused hits, and a warning saying why.
    let broken = env.dir.path().join("broken-reranker");
    std::fs::create_dir_all(&broken).unwrap();
    for f in ["tokenizer.json", "manifest.json"] {
        std::fs::copy(models().join("rerank-tiny").join(f), broken.join(f)).unwrap();
    }
    std::fs::write(broken.join("model.onnx"), b"not a model").unwrap();
    let (hits, err) = search(
        &env,
        &[("MEM_SEARCH_RERANK_MODEL", broken.to_str().unwrap())],
        &["--rerank"],
    );
    assert!(err.contains("not reranked"), "{err}");
    assert_eq!(ids(&hits), ids(&fused));

    // A manifest of another kind (an embedding model) is refused by name.
    let out = env
        .cmd("mem-search")
        .env(
            "MEM_SEARCH_RERANK_MODEL",
            models().join("minilm-l6").to_str().unwrap(),
        )
        .args(["--all-projects", "--rerank", QUERY])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("manifest.json") && err.contains("cross-encoder"),
        "{err}"
    );
}
