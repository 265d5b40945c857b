//! mem-embed with the real ONNX Runtime and real models: all-MiniLM-L6-v2 int8 and a tiny
//! random-weight Qwen3-architecture model, prepared by `scripts/test` (fetch-models, pyenv,
//! gen_qwen3_onnx.py). The models are found via MEMKIT_TEST_MODELS, else the default model cache.

use std::path::{Path, PathBuf};

use memkit::embed::{self, Embedder};
use serde_json::Value;

use crate::compress::{Mock, Reply};
use crate::{Env, jsonl, show};

/// The prepared model cache; fails (never skips) when it is not there.
pub fn models() -> PathBuf {
    let dir = std::env::var("MEMKIT_TEST_MODELS")
        .ok()
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let home = std::env::var("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|_| PathBuf::from(std::env::var("HOME").unwrap()).join(".cache"));
            home.join("memkit/models")
        });
    for need in [
        "runtime/libonnxruntime.so",
        "minilm-l6/model.onnx",
        "minilm-l6/manifest.json",
        "qwen3-tiny/model.onnx",
        "qwen3-tiny/manifest.json",
        "qwen3-tiny-past/model.onnx",
        "qwen3-tiny-w8/model.onnx",
    ] {
        assert!(
            dir.join(need).is_file(),
            "{} is missing: run scripts/test (it fetches the runtime and models and generates the tiny Qwen3 model), or set MEMKIT_TEST_MODELS",
            dir.join(need).display()
        );
    }
    dir
}

fn env() -> Env {
    Env::new().set("MEM_MODELS", models().to_str().unwrap())
}

fn in_process(model: &str) -> Embedder {
    let m = models();
    embed::init_runtime_at(&m.join("runtime/libonnxruntime.so")).unwrap();
    Embedder::load(&m.join(model), None).unwrap()
}

/// `in_process` with the model's own float products (MEM_EMBED_INT8=0).
fn in_process_float(model: &Path) -> Embedder {
    embed::init_runtime_at(&models().join("runtime/libonnxruntime.so")).unwrap();
    let opts = embed::LoadOptions {
        int8: false,
        ..embed::LoadOptions::batch()
    };
    Embedder::load_with(model, None, opts).unwrap()
}

pub fn vectors(out: &std::process::Output) -> Vec<Vec<f32>> {
    jsonl(out)
        .iter()
        .map(|r| {
            r["vector"]
                .as_array()
                .unwrap_or_else(|| panic!("no vector in {r}"))
                .iter()
                .map(|x| x.as_f64().unwrap() as f32)
                .collect()
        })
        .collect()
}

fn records(texts: &[&str]) -> Vec<u8> {
    texts
        .iter()
        .enumerate()
        .map(|(i, t)| serde_json::json!({"id": i, "text": t}).to_string() + "\n")
        .collect::<String>()
        .into_bytes()
}

fn norm(v: &[f32]) -> f32 {
    v.iter().map(|x| x * x).sum::<f32>().sqrt()
}

#[test]
fn minilm_related_pairs_score_above_unrelated() {
    let env = env();
    let texts = [
        "fix login bug",
        "repair authentication failure",
        "bake sourdough bread",
    ];
    let out = env.ok(
        "mem-embed",
        &["-", "--model", "minilm-l6"],
        &records(&texts),
    );
    let recs = jsonl(&out);
    assert_eq!(recs[1]["text"], texts[1], "records come back whole");
    let v = vectors(&out);
    assert_eq!(v[0].len(), 384);
    for x in &v {
        assert!((norm(x) - 1.0).abs() < 1e-4);
    }
    let related = embed::cosine(&v[0], &v[1]);
    let unrelated = embed::cosine(&v[0], &v[2]).max(embed::cosine(&v[1], &v[2]));
    assert!(
        related > unrelated + 0.2,
        "related {related} vs unrelated {unrelated}"
    );
}

/// A batch run loads a small model once per core and hands each session its own batches: every
/// text gets its own vector back, as one session gives it.
#[test]
fn a_session_per_core_gives_each_text_the_vector_one_session_gives() {
    let m = models();
    embed::init_runtime_at(&m.join("runtime/libonnxruntime.so")).unwrap();
    let load = |per_core| {
        let opts = embed::LoadOptions {
            sessions_per_core: per_core,
            ..embed::LoadOptions::batch()
        };
        Embedder::load_with(&m.join("minilm-l6"), None, opts).unwrap()
    };
    let topics = ["login", "indexer", "cache", "parser", "migration", "hook"];
    let texts: Vec<String> = (0..300)
        .map(|i| {
            let t = topics[i % topics.len()];
            format!(
                "note {i}: the {t} {} after change {}",
                "broke again ".repeat(i % 13),
                i * 7
            )
        })
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let mut one = load(false);
    assert_eq!(one.load_report().sessions.0, 1);
    let mut many = load(true);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert_eq!(
        many.load_report().sessions,
        (cores, if cores > 1 { 1 } else { cores })
    );
    let (a, b) = (one.embed(&refs).unwrap(), many.embed(&refs).unwrap());
    assert_eq!(b.len(), texts.len());
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        let c = embed::cosine(x, y);
        assert!(c >= 0.9999, "text {i}: cosine {c}");
    }
    assert_eq!(one.tokens_embedded(), many.tokens_embedded());
    // The texts differ, so a vector handed to the wrong text would show.
    assert!(embed::cosine(&b[0], &b[1]) < 0.99);
}

#[test]
fn qwen3_batch_of_mixed_lengths_equals_one_at_a_time() {
    let env = env();
    let texts = [
        "hi",
        "fix the login bug in the session middleware",
        "a considerably longer text: the indexer now writes one usearch file per model and dimension, and search reads the query vector from the embedding cache",
        "cargo",
    ];
    let batch = vectors(&env.ok(
        "mem-embed",
        &["-", "--model", "qwen3-tiny"],
        &records(&texts),
    ));
    for (i, t) in texts.iter().enumerate() {
        let alone = vectors(&env.ok("mem-embed", &["-", "--model", "qwen3-tiny"], &records(&[t])));
        let c = embed::cosine(&batch[i], &alone[0]);
        assert!(c >= 0.99999, "text {i}: cosine {c}");
    }
    // Different texts do differ (the comparison above is not vacuous).
    assert!(embed::cosine(&batch[0], &batch[1]) < 0.999);
}

#[test]
fn qwen3_tokens_end_with_eos_and_are_truncated_to_max_tokens() {
    let e = in_process("qwen3-tiny");
    let ids = e.token_ids("fix the login bug").unwrap();
    assert_eq!(*ids.last().unwrap(), 151643, "{ids:?}");
    assert_eq!(ids.iter().filter(|&&i| i == 151643).count(), 1);
    let long = "word ".repeat(5000);
    let ids = e.token_ids(&long).unwrap();
    assert_eq!(ids.len(), e.manifest.max_tokens);
    assert_eq!(*ids.last().unwrap(), 151643);
    // Bert-style models keep [CLS] … [SEP] and no EOS is appended.
    let m = in_process("minilm-l6");
    let ids = m.token_ids("fix the login bug").unwrap();
    assert_eq!(ids[0], 101);
    assert_eq!(*ids.last().unwrap(), 102);
}

#[test]
fn qwen3_left_padding_and_last_token_pooling_match_a_single_text() {
    let mut e = in_process("qwen3-tiny");
    // In one batch, the short text is left-padded with the long one; its vector must be the
    // one it gets alone, which holds only when position ids skip the padding and the pooled
    // token is the final (EOS) one.
    let short = "login";
    let long = "the session middleware dropped the refresh token after the login redirect";
    let both = e.embed(&[short, long]).unwrap();
    let alone = e.embed(&[short]).unwrap();
    let c = embed::cosine(&both[0], &alone[0]);
    assert!(c >= 0.99999, "cosine {c}");
}

#[test]
fn query_prefix_changes_the_vector_and_equals_the_prefixed_document() {
    let env = env();
    let q = "why did login fail";
    let doc = vectors(&env.ok("mem-embed", &["-", "--model", "qwen3-tiny"], &records(&[q])));
    let query = vectors(&env.ok(
        "mem-embed",
        &["-", "--model", "qwen3-tiny", "--query", "observations"],
        &records(&[q]),
    ));
    assert!(embed::cosine(&doc[0], &query[0]) < 0.9999);
    let manifest = embed::Manifest::load(&models().join("qwen3-tiny")).unwrap();
    let prefixed = format!("{}{q}", manifest.query_prefix(Some("observations")));
    let same = vectors(&env.ok(
        "mem-embed",
        &["-", "--model", "qwen3-tiny"],
        &records(&[&prefixed]),
    ));
    assert!(embed::cosine(&same[0], &query[0]) >= 0.99999);
    let code = manifest.query_prefix(Some("code"));
    assert_ne!(code, manifest.query_prefix(Some("observations")));
}

#[test]
fn truncated_dimensions_are_unit_length_prefixes_of_the_full_vector() {
    let env = env();
    let text = records(&["matryoshka truncation keeps the leading dimensions"]);
    let full = vectors(&env.ok("mem-embed", &["-", "--model", "qwen3-tiny"], &text));
    assert_eq!(full[0].len(), 64);
    for dim in [32usize, 16] {
        let d = dim.to_string();
        let v = vectors(&env.ok(
            "mem-embed",
            &["-", "--model", "qwen3-tiny", "--dim", &d],
            &text,
        ));
        assert_eq!(v[0].len(), dim);
        assert!((norm(&v[0]) - 1.0).abs() < 1e-5);
        let head = &full[0][..dim];
        assert!(embed::cosine(&v[0], head) >= 0.99999);
    }
    let out = env.run(
        "mem-embed",
        &["-", "--model", "qwen3-tiny", "--dim", "128"],
        &text,
    );
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
}

#[test]
fn observation_records_get_vectors_and_other_records_pass_through() {
    let env = env();
    let input = concat!(
        r#"{"type":"observation","v":1,"kind":"bugfix","title":"Fix login bug","summary":"Refresh token kept","facts":["middleware dropped it"],"concepts":["auth"]}"#,
        "\n",
        r#"{"type":"summary","v":1,"tool":"mem-compress","counts":{},"elapsed_ms":1}"#,
        "\n"
    );
    let out = env.ok(
        "mem-embed",
        &["-", "--model", "minilm-l6"],
        input.as_bytes(),
    );
    let recs = jsonl(&out);
    assert_eq!(recs.len(), 2);
    assert_eq!(recs[0]["title"], "Fix login bug");
    assert_eq!(recs[0]["vector"].as_array().unwrap().len(), 384);
    assert_eq!(recs[1]["type"], "summary");
    assert!(recs[1].get("vector").is_none());
}

#[test]
fn a_one_megabyte_text_is_truncated_and_embedded() {
    let env = env();
    let big = "the quick brown fox jumps over the lazy dog ".repeat(1 << 20 >> 6);
    assert!(big.len() >= 700_000);
    let out = env.ok(
        "mem-embed",
        &["-", "--model", "minilm-l6"],
        &records(&[&big]),
    );
    let v = vectors(&out);
    assert_eq!(v[0].len(), 384);
    assert!((norm(&v[0]) - 1.0).abs() < 1e-4);
}

fn assert_clean_error(out: &std::process::Output, code: i32, needle: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{}", show(out));
    assert!(err.starts_with("mem-embed: error: "), "{}", show(out));
    assert!(err.contains(needle), "{needle:?} not in {}", show(out));
    assert!(!err.contains("panicked"), "{}", show(out));
    assert!(out.stdout.is_empty(), "{}", show(out));
}

/// A bad line is an input error naming it (exit 3, after the good lines are embedded: the
/// bad-line policy every JSONL reader shares, see tools.rs).
fn assert_bad_line(out: &std::process::Output, needle: &str, good: usize) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{}", show(out));
    assert!(
        err.lines()
            .any(|l| l.starts_with("mem-embed: warning: ") && l.contains(needle)),
        "{needle:?} not in {}",
        show(out)
    );
    assert!(err.contains("mem-embed: error: "), "{}", show(out));
    assert!(!err.contains("panicked"), "{}", show(out));
    assert_eq!(vectors(out).len(), good, "{}", show(out));
}

#[test]
fn invalid_jsonl_and_empty_text_are_input_errors_naming_the_line() {
    let env = env();
    let out = env.run(
        "mem-embed",
        &["-", "--model", "minilm-l6"],
        b"{\"id\":1,\"text\":\"ok\"}\n{\"id\":2,\"text\": oops}\n",
    );
    assert_bad_line(&out, "<stdin>:2:", 1);
    let out = env.run(
        "mem-embed",
        &["-", "--model", "minilm-l6"],
        b"{\"id\":1,\"text\":\"ok\"}\n{\"id\":2,\"text\":\"   \"}\n",
    );
    assert_bad_line(&out, "<stdin>:2: empty text", 1);
    let file = env.dir.path().join("in.jsonl");
    std::fs::write(&file, "{\"id\":1}\n").unwrap();
    let out = env.run(
        "mem-embed",
        &[file.to_str().unwrap(), "--model", "minilm-l6"],
        b"",
    );
    assert_bad_line(&out, "in.jsonl:1:", 0);
}

/// Filter mode streams: records are embedded a chunk at a time, and come out in input order,
/// typed records passed through in their place, whatever chunk a bad line falls in.
#[test]
fn a_long_filter_input_is_embedded_in_order_chunk_by_chunk() {
    let env = env();
    let mut input = String::new();
    for i in 0..600 {
        match i {
            300 => input.push_str("not json\n"),
            i if i % 100 == 7 => input.push_str(&format!("{{\"type\":\"marker\",\"id\":{i}}}\n")),
            i => input.push_str(&format!("{{\"id\":{i},\"text\":\"note number {i}\"}}\n")),
        }
    }
    let out = env.run(
        "mem-embed",
        &["-", "--model", "qwen3-tiny"],
        input.as_bytes(),
    );
    assert_eq!(out.status.code(), Some(3), "{}", show(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("<stdin>:301: invalid JSON"));
    let recs = jsonl(&out);
    assert_eq!(recs.len(), 599);
    let ids: Vec<u64> = recs.iter().map(|r| r["id"].as_u64().unwrap()).collect();
    let want: Vec<u64> = (0..600).filter(|&i| i != 300).collect();
    assert_eq!(ids, want);
    for r in &recs {
        assert_eq!(r["type"] == "marker", r.get("vector").is_none(), "{r}");
    }
}

#[test]
fn missing_runtime_missing_model_and_corrupt_model_are_clear_errors() {
    let models = models();
    let input = records(&["fix login bug"]);
    // No runtime: a model cache without runtime/, the model given by directory.
    let env = Env::new();
    let minilm = models.join("minilm-l6");
    let out = env.run(
        "mem-embed",
        &["-", "--model", minilm.to_str().unwrap()],
        &input,
    );
    assert_clean_error(&out, 5, "scripts/fetch-models");
    assert!(String::from_utf8_lossy(&out.stderr).contains("ONNX Runtime not found"));
    let out = env
        .set("ORT_DYLIB_PATH", "/nonexistent/libonnxruntime.so")
        .run(
            "mem-embed",
            &["-", "--model", minilm.to_str().unwrap()],
            &input,
        );
    assert_clean_error(&out, 5, "ORT_DYLIB_PATH=/nonexistent/libonnxruntime.so");
    // No model of that name.
    let env = self::env();
    let out = env.run("mem-embed", &["-", "--model", "no-such-model"], &input);
    assert_clean_error(&out, 5, "model \"no-such-model\" not found");
    // The default model, not installed, says how to get it.
    let out = env.run(
        "mem-embed",
        &["-", "--model", "qwen3-embedding-0.6b"],
        &input,
    );
    assert_clean_error(&out, 5, "mem-embed --install qwen3-embedding-0.6b");
    // A corrupt model.onnx next to a good tokenizer and manifest.
    let bad = env.dir.path().join("bad-model");
    std::fs::create_dir_all(&bad).unwrap();
    for f in ["tokenizer.json", "manifest.json"] {
        std::fs::copy(minilm.join(f), bad.join(f)).unwrap();
    }
    std::fs::write(bad.join("model.onnx"), b"this is not an onnx model").unwrap();
    let out = env.run(
        "mem-embed",
        &["-", "--model", bad.to_str().unwrap()],
        &input,
    );
    assert_clean_error(&out, 5, "cannot load model");
    // A truncated model file.
    let good = std::fs::read(minilm.join("model.onnx")).unwrap();
    std::fs::write(bad.join("model.onnx"), &good[..good.len() / 3]).unwrap();
    let out = env.run(
        "mem-embed",
        &["-", "--model", bad.to_str().unwrap()],
        &input,
    );
    assert_clean_error(&out, 5, "cannot load model");
}

fn seed(env: &Env) {
    let conn = memkit::store::open(&env.db_path()).unwrap();
    let now = "2026-01-01T00:00:00Z";
    for (title, summary, facts) in [
        (
            "Fix login bug",
            "Refresh token kept",
            r#"["middleware dropped it"]"#,
        ),
        ("Add search", "FTS5 over observations", "[]"),
        ("Refactor store", "One transaction per batch", "[]"),
    ] {
        conn.execute(
            "INSERT INTO observations(type, title, summary, facts, concepts, created_at, updated_at)
             VALUES ('change', ?1, ?2, ?3, '[\"auth\"]', ?4, ?4)",
            rusqlite::params![title, summary, facts, now],
        )
        .unwrap();
    }
    conn.execute(
        "INSERT INTO sessions(session_id, title, summary) VALUES ('s1', 'Login work', 'Fixed the login bug')",
        [],
    )
    .unwrap();
    conn.execute(
        "INSERT INTO sessions(session_id, title) VALUES ('s2', 'No summary yet')",
        [],
    )
    .unwrap();
}

fn summary(out: &std::process::Output) -> Value {
    let recs = jsonl(out);
    let last = recs.last().expect("a summary record").clone();
    assert_eq!(last["type"], "summary", "{}", show(out));
    last["counts"].clone()
}

#[test]
fn database_mode_embeds_pending_once_and_uses_the_cache() {
    let env = env();
    seed(&env);
    let args = ["--model", "qwen3-tiny"];
    let c = summary(&env.ok("mem-embed", &args, b""));
    assert_eq!(c["embedded"], 4, "{c}");
    assert_eq!(c["pending"], 4);
    assert_eq!(
        env.count("SELECT count(*) FROM embeddings WHERE model='qwen3-tiny' AND dim=64"),
        4
    );
    assert_eq!(
        env.count("SELECT count(*) FROM embeddings WHERE length(vector) = 64*4"),
        4
    );
    assert_eq!(env.count("SELECT count(*) FROM embedding_cache"), 4);
    // The stored hash is the sha256 of the embedded text; the vector is unit length.
    let (hash, blob): (String, Vec<u8>) = env
        .db()
        .query_row(
            "SELECT content_hash, vector FROM embeddings WHERE owner_kind='session'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(hash, embed::sha256_hex("Login work\nFixed the login bug"));
    assert!((norm(&embed::from_blob(&blob)) - 1.0).abs() < 1e-5);

    // Re-running embeds nothing.
    let c = summary(&env.ok("mem-embed", &args, b""));
    assert_eq!(c["embedded"], 0, "{c}");
    assert_eq!(c["pending"], 0);
    assert_eq!(c["up_to_date"], 4);

    // An edited observation is embedded again; only it.
    env.db()
        .execute(
            "UPDATE observations SET title='Fix the login bug' WHERE id=1",
            [],
        )
        .unwrap();
    let c = summary(&env.ok("mem-embed", &args, b""));
    assert_eq!(
        (c["pending"].as_u64(), c["embedded"].as_u64()),
        (Some(1), Some(1)),
        "{c}"
    );

    // Lost embeddings come back from the cache without a model load: even a broken model
    // file is never opened.
    env.db().execute("DELETE FROM embeddings", []).unwrap();
    let copy = env.dir.path().join("qwen3-copy");
    std::fs::create_dir_all(&copy).unwrap();
    for f in ["tokenizer.json", "manifest.json"] {
        std::fs::copy(models().join("qwen3-tiny").join(f), copy.join(f)).unwrap();
    }
    std::fs::write(copy.join("model.onnx"), b"broken").unwrap();
    let c = summary(&env.ok("mem-embed", &["--model", copy.to_str().unwrap()], b""));
    assert_eq!(c["cache_hits"], 4, "{c}");
    assert_eq!(c["embedded"], 0);

    // A deleted observation loses its vector.
    env.db()
        .execute("DELETE FROM observations WHERE id=3", [])
        .unwrap();
    let c = summary(&env.ok("mem-embed", &args, b""));
    assert_eq!(
        (c["removed"].as_u64(), c["embedded"].as_u64()),
        (Some(1), Some(0)),
        "{c}"
    );
    assert_eq!(
        env.count("SELECT count(*) FROM embeddings WHERE owner_kind='observation' AND owner_id=3"),
        0
    );

    // Another dimension is another embedding, which replaces the one of the old dimension;
    // switching back takes the old vectors from the cache.
    let c = summary(&env.ok("mem-embed", &["--model", "qwen3-tiny", "--dim", "32"], b""));
    assert_eq!(c["embedded"], 3, "{c}");
    assert_eq!(
        env.count("SELECT count(*) FROM embeddings WHERE dim=32 AND length(vector)=128"),
        3
    );
    assert_eq!(env.count("SELECT count(*) FROM embeddings"), 3);
    let c = summary(&env.ok("mem-embed", &args, b""));
    assert_eq!(
        (c["cache_hits"].as_u64(), c["embedded"].as_u64()),
        (Some(3), Some(0)),
        "{c}"
    );
    assert_eq!(env.count("SELECT count(*) FROM embeddings WHERE dim=64"), 3);
    assert_eq!(env.count("SELECT count(*) FROM embeddings"), 3);
}

#[test]
fn embed_query_reuses_cached_query_vectors() {
    let m = models();
    embed::init_runtime_at(&m.join("runtime/libonnxruntime.so")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("qwen3");
    std::fs::create_dir_all(&model).unwrap();
    for f in ["tokenizer.json", "manifest.json", "model.onnx"] {
        std::fs::copy(m.join("qwen3-tiny").join(f), model.join(f)).unwrap();
    }
    let conn = memkit::store::open(&dir.path().join("mem.db")).unwrap();
    let spec = model.to_str().unwrap();
    let q = "why did login fail";
    let v = embed::store::embed_query(&conn, spec, Some(32), Some("observations"), q).unwrap();
    assert_eq!(v.len(), 32);
    let manifest = embed::Manifest::load(&model).unwrap();
    let text = format!("{}{q}", manifest.query_prefix(Some("observations")));
    let hash: String = conn
        .query_row("SELECT text_hash FROM embedding_cache", [], |r| r.get(0))
        .unwrap();
    assert_eq!(hash, embed::sha256_hex(&text));
    // With the model file broken, the cached query still answers (no model load on a hit).
    std::fs::write(model.join("model.onnx"), b"broken").unwrap();
    let again = embed::store::embed_query(&conn, spec, Some(32), Some("observations"), q).unwrap();
    assert_eq!(v, again);
    // A query not in the cache needs the model, and says so clearly.
    let err = embed::store::embed_query(&conn, spec, Some(32), Some("code"), q).unwrap_err();
    assert!(err.to_string().contains("cannot load model"), "{err}");
}

/// Makes the env's model cache hold only the runtime and MiniLM; returns its path.
fn minilm_only_cache(env: &Env) -> PathBuf {
    let cache = env.dir.path().join("models");
    std::fs::create_dir_all(&cache).unwrap();
    for d in ["runtime", "minilm-l6"] {
        std::os::unix::fs::symlink(models().join(d), cache.join(d)).unwrap();
    }
    cache
}

#[test]
fn without_a_model_setting_database_mode_falls_back_to_minilm_when_qwen3_is_absent() {
    let env = Env::new();
    minilm_only_cache(&env);
    seed(&env);
    let out = env.ok("mem-embed", &[], b"");
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("qwen3-embedding-0.6b is not installed; using minilm-l6"),
        "{}",
        show(&out)
    );
    assert_eq!(summary(&out)["embedded"], 4);
    assert_eq!(
        env.count(
            "SELECT count(*) FROM embeddings WHERE model='all-minilm-l6-v2-int8' AND dim=384"
        ),
        4
    );
}

/// The venv python with onnxruntime (scripts/pyenv), for reference computations.
fn python() -> PathBuf {
    let py = std::env::var("MEMKIT_TEST_PYTHON")
        .ok()
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let cache = std::env::var("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|_| PathBuf::from(std::env::var("HOME").unwrap()).join(".cache"));
            cache.join("memkit/venv/bin/python")
        });
    assert!(
        py.is_file(),
        "{} is missing: run scripts/test (it creates the Python venv with onnxruntime), or set MEMKIT_TEST_PYTHON",
        py.display()
    );
    py
}

/// Raw ONNX Runtime in Python, one text at a time (no padding): pooled per the manifest and
/// L2-normalised. The independent reference for our batching, padding and pooling.
const REFERENCE: &str = r#"
import json, sys
import numpy as np, onnxruntime as ort
req = json.load(sys.stdin)
m = req["manifest"]
s = ort.InferenceSession(req["model"], providers=["CPUExecutionProvider"])
out = []
for ids in req["ids"]:
    n = len(ids)
    feeds = {}
    for role, name in m["inputs"].items():
        feeds[name] = {
            "input_ids": np.array([ids], dtype=np.int64),
            "attention_mask": np.ones((1, n), dtype=np.int64),
            "position_ids": np.arange(n, dtype=np.int64)[None, :],
            "token_type_ids": np.zeros((1, n), dtype=np.int64),
        }[role]
    h = s.run([m["output"]], feeds)[0][0]
    v = h[-1] if m["pooling"] == "last_token" else h.mean(axis=0)
    out.append((v / np.linalg.norm(v)).tolist())
print(json.dumps(out))
"#;

#[test]
fn pooling_matches_raw_onnx_runtime_in_python() {
    let m = models();
    for model in ["qwen3-tiny", "minilm-l6"] {
        // The reference runs model.onnx as it is: float products (int8 ones are pinned below).
        let mut e = in_process_float(&m.join(model));
        let texts = [
            "hi",
            "fix the login bug in the session middleware",
            "the indexer writes one usearch file per model and dimension",
        ];
        let ids: Vec<Vec<i64>> = texts.iter().map(|t| e.token_ids(t).unwrap()).collect();
        let ours = e.embed(&texts).unwrap();
        let manifest: Value = serde_json::from_str(
            &std::fs::read_to_string(m.join(model).join("manifest.json")).unwrap(),
        )
        .unwrap();
        let req = serde_json::json!({
            "model": m.join(model).join("model.onnx"),
            "manifest": manifest,
            "ids": ids,
        });
        let out = crate::piped(
            std::process::Command::new(python()).args(["-c", REFERENCE]),
            req.to_string().as_bytes(),
        );
        assert!(out.status.success(), "{}", show(&out));
        let reference: Vec<Vec<f32>> = serde_json::from_slice(&out.stdout).unwrap();
        for (i, (a, b)) in ours.iter().zip(&reference).enumerate() {
            assert_eq!(a.len(), b.len());
            let c = embed::cosine(a, b);
            assert!(
                c >= 0.99999,
                "{model} text {i}: cosine {c} to the reference"
            );
        }
    }
}

/// A copy of a prepared model in its own directory (so its model cache is the test's own).
fn model_copy(env: &Env, model: &str) -> PathBuf {
    let dir = env.dir.path().join(format!("{model}-copy"));
    std::fs::create_dir_all(&dir).unwrap();
    for f in ["tokenizer.json", "manifest.json", "model.onnx"] {
        std::fs::copy(models().join(model).join(f), dir.join(f)).unwrap();
    }
    dir
}

/// Runs `mem-embed - -v` on one text; returns its vector and what the model cache did.
fn embed_verbose(env: &Env, model: &Path) -> (Vec<f32>, String) {
    let out = env.ok(
        "mem-embed",
        &["-", "-v", "--model", model.to_str().unwrap()],
        &records(&["the login bug came back after the refactor"]),
    );
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    let how = err
        .split("model cache: ")
        .nth(1)
        .and_then(|r| r.split([')', ';']).next())
        .unwrap_or_else(|| panic!("no model cache report in {}", show(&out)))
        .to_string();
    assert!(err.contains("ready in "), "{}", show(&out));
    (vectors(&out).remove(0), how)
}

/// The cache entries of a model directory.
fn cache_entries(model: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(model.join(".ort-cache"))
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

#[test]
fn model_cache_is_built_once_then_hit_with_the_same_vectors() {
    let env = env();
    let model = model_copy(&env, "qwen3-tiny");
    let (plain, how) = embed_verbose(&self::env().set("MEM_MODEL_CACHE", "0"), &model);
    assert_eq!(how, "off");
    assert!(
        cache_entries(&model).is_empty(),
        "MEM_MODEL_CACHE=0 writes nothing"
    );
    let (built, how) = embed_verbose(&env, &model);
    assert_eq!(how, "built");
    let entries = cache_entries(&model);
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert!(entries[0].join("ready.json").is_file());
    assert!(entries[0].join("model.onnx.data").is_file());
    for run in 0..2 {
        let (hit, how) = embed_verbose(&env, &model);
        assert_eq!(how, "hit", "run {run}");
        assert!(embed::cosine(&hit, &plain) >= 0.99999);
    }
    assert!(embed::cosine(&built, &plain) >= 0.99999);
    // One entry serves both loads: packed weights for batches, the stored ones for a query.
    embed::init_runtime_at(&models().join("runtime/libonnxruntime.so")).unwrap();
    for packed in [true, false] {
        let opts = embed::LoadOptions {
            cache: true,
            packed,
            sessions_per_core: false,
            ..embed::LoadOptions::batch()
        };
        let mut e = Embedder::load_with(&model, None, opts).unwrap();
        assert_eq!(e.load_report().cache, embed::cache::CacheUse::Hit);
        assert_eq!(e.load_report().packed, packed);
        let v = e
            .embed(&["the login bug came back after the refactor"])
            .unwrap();
        assert!(embed::cosine(&v[0], &plain) >= 0.99999, "packed {packed}");
    }
    // mem-embed takes packed weights only when there is enough to embed.
    let long = "the indexer drops documents when the batch is cut short ".repeat(40);
    for (text, want) in [
        ("fix the login bug", "as stored"),
        (long.as_str(), "packed"),
    ] {
        let out = env.ok(
            "mem-embed",
            &["-", "-v", "--model", model.to_str().unwrap()],
            &records(&[text]),
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&format!("weights: {want};")), "{}", show(&out));
    }
    // A changed model file is a new entry; the old one goes.
    std::fs::remove_file(model.join("model.onnx")).unwrap();
    std::fs::copy(
        models().join("minilm-l6/model.onnx"),
        model.join("model.onnx"),
    )
    .unwrap();
    std::fs::copy(
        models().join("qwen3-tiny/model.onnx"),
        model.join("model.onnx"),
    )
    .unwrap();
    let (_, how) = embed_verbose(&env, &model);
    assert_eq!(how, "built");
    let now = cache_entries(&model);
    assert_eq!(now.len(), 1, "{now:?}");
    assert_ne!(now[0], entries[0]);
}

#[test]
fn a_corrupt_model_cache_is_rebuilt_not_an_error() {
    let env = env();
    let model = model_copy(&env, "qwen3-tiny");
    let (good, how) = embed_verbose(&env, &model);
    assert_eq!(how, "built");
    let entry = cache_entries(&model).remove(0);
    // Garbage of the right size in the graph: ONNX Runtime refuses it.
    let len = std::fs::metadata(entry.join("model.onnx")).unwrap().len() as usize;
    std::fs::write(entry.join("model.onnx"), vec![0x5a; len]).unwrap();
    let (v, how) = embed_verbose(&env, &model);
    assert!(how.starts_with("rebuilt"), "{how}");
    assert!(embed::cosine(&v, &good) >= 0.99999);
    // A truncated weights file (a crash while copying, a full disk).
    let entry = cache_entries(&model).remove(0);
    let data = std::fs::read(entry.join("model.onnx.data")).unwrap();
    std::fs::write(entry.join("model.onnx.data"), &data[..data.len() / 2]).unwrap();
    let (v, how) = embed_verbose(&env, &model);
    assert!(how.starts_with("rebuilt"), "{how}");
    assert!(embed::cosine(&v, &good) >= 0.99999);
    let (_, how) = embed_verbose(&env, &model);
    assert_eq!(how, "hit");
    // Leftovers of a build that died are not entries, and are not loaded.
    assert!(cache_entries(&model).iter().all(|p| {
        !p.file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with(".tmp-")
    }));
}

#[test]
fn kv_cache_inputs_of_generation_exports_are_fed_empty() {
    let env = env();
    let text = records(&[
        "fix the login bug",
        "a second, longer text about the indexer",
    ]);
    let with = vectors(&env.ok("mem-embed", &["-", "--model", "qwen3-tiny-past"], &text));
    let without = vectors(&env.ok("mem-embed", &["-", "--model", "qwen3-tiny"], &text));
    for (a, b) in with.iter().zip(&without) {
        assert!(embed::cosine(a, b) >= 0.99999);
    }
}

fn sha(path: &Path) -> String {
    embed::install::sha256_file(path).unwrap()
}

/// The tiny Qwen3 model as a package served by a mock Hugging Face.
fn tiny_package() -> embed::install::Package {
    let m = models().join("qwen3-tiny");
    embed::install::Package {
        name: "tiny-remote".into(),
        repo: "test-org/Tiny-ONNX".into(),
        revision: "0123abcd".into(),
        files: vec![
            embed::install::RemoteFile {
                remote: "onnx/model_int8.onnx".into(),
                local: "model.onnx".into(),
                sha256: sha(&m.join("model.onnx")),
            },
            embed::install::RemoteFile {
                remote: "tokenizer.json".into(),
                local: "tokenizer.json".into(),
                sha256: sha(&m.join("tokenizer.json")),
            },
        ],
        manifest: serde_json::from_str(&std::fs::read_to_string(m.join("manifest.json")).unwrap())
            .unwrap(),
    }
}

/// Serves the tiny model's files like Hugging Face (`/<repo>/resolve/<rev>/<path>`), honouring
/// Range; the first three requests for the model are cut halfway through what they serve, as
/// many as one install tries before it gives up.
fn hub() -> Mock {
    let m = models().join("qwen3-tiny");
    let model = std::fs::read(m.join("model.onnx")).unwrap();
    let tokenizer = std::fs::read(m.join("tokenizer.json")).unwrap();
    let cuts_left = std::sync::atomic::AtomicUsize::new(3);
    Mock::start_raw(move |_, req| {
        let body = match req.path.as_str() {
            "/test-org/Tiny-ONNX/resolve/0123abcd/onnx/model_int8.onnx" => &model,
            "/test-org/Tiny-ONNX/resolve/0123abcd/tokenizer.json" => &tokenizer,
            _ => {
                return Reply {
                    code: 404,
                    headers: vec![],
                    body: b"not found".to_vec(),
                    cut_after: None,
                };
            }
        };
        let from = req
            .headers
            .lines()
            .find_map(|l| l.strip_prefix("range: bytes="))
            .and_then(|r| r.trim().trim_end_matches('-').parse::<usize>().ok());
        let cut = body.len() > 1_000_000
            && cuts_left
                .fetch_update(
                    std::sync::atomic::Ordering::SeqCst,
                    std::sync::atomic::Ordering::SeqCst,
                    |n| n.checked_sub(1),
                )
                .is_ok();
        let f = from.unwrap_or(0);
        Reply {
            code: if from.is_some() { 206 } else { 200 },
            headers: from
                .map(|f| {
                    (
                        "Content-Range".into(),
                        format!("bytes {f}-{}/{}", body.len() - 1, body.len()),
                    )
                })
                .into_iter()
                .collect(),
            body: body[f..].to_vec(),
            cut_after: cut.then_some((body.len() - f) / 2),
        }
    })
}

#[test]
fn install_downloads_resumes_after_a_cut_and_verifies() {
    let env = env();
    let cache = env.dir.path().join("models");
    std::fs::create_dir_all(&cache).unwrap();
    std::os::unix::fs::symlink(models().join("runtime"), cache.join("runtime")).unwrap();
    let mock = hub();
    let pkg = tiny_package();
    let mut seen = Vec::new();
    let err = embed::install::install(&pkg, &mock.url, &cache, &mut |f, n, t| {
        seen.push((f.to_string(), n, t))
    })
    .unwrap_err();
    assert!(err.to_string().contains("download cut"), "{err}");
    assert!(
        !cache.join("tiny-remote").exists(),
        "nothing installed after a cut"
    );
    // Each cut was resumed at once, up to three attempts: 1/2 + 1/4 + 1/8 of the file.
    let part = cache.join(".install-tiny-remote/model.onnx.part");
    let got = std::fs::metadata(&part).unwrap().len();
    let full = std::fs::metadata(models().join("qwen3-tiny/model.onnx"))
        .unwrap()
        .len();
    assert!(got > full * 3 / 4 && got < full, "{got} of {full}");
    assert!(
        seen.iter()
            .any(|(f, _, t)| f == "model.onnx" && *t == Some(full))
    );
    let reqs = mock.seen.lock().unwrap().clone();
    assert_eq!(reqs.len(), 3, "no attempt after the third");
    assert!(
        reqs[2].headers.contains("range: bytes="),
        "{}",
        reqs[2].headers
    );

    let dir = embed::install::install(&pkg, &mock.url, &cache, &mut |_, _, _| {}).unwrap();
    assert_eq!(dir, cache.join("tiny-remote"));
    let reqs = mock.seen.lock().unwrap().clone();
    assert!(
        reqs[3].headers.contains(&format!("range: bytes={got}-")),
        "the next install resumes: {}",
        reqs[3].headers
    );
    for f in &pkg.files {
        assert_eq!(sha(&dir.join(&f.local)), f.sha256);
    }
    assert!(!cache.join(".install-tiny-remote").exists());
    // The installed model works by name, and gives the original's vectors.
    let env = env.set("MEM_MODELS", cache.to_str().unwrap());
    let text = records(&["fix login bug"]);
    let got = vectors(&env.ok("mem-embed", &["-", "--model", "tiny-remote"], &text));
    let want = vectors(&self::env().ok("mem-embed", &["-", "--model", "qwen3-tiny"], &text));
    assert!(embed::cosine(&got[0], &want[0]) >= 0.99999);
}

#[test]
fn install_with_a_checksum_mismatch_installs_nothing() {
    let mock = Mock::start_raw(|_, _| Reply {
        code: 200,
        headers: vec![],
        body: b"not the model you are looking for".to_vec(),
        cut_after: None,
    });
    let env = Env::new();
    let cache = env.dir.path().join("models");
    let env = env
        .set("MEM_MODELS", cache.to_str().unwrap())
        .set("MEM_HF_ENDPOINT", &mock.url);
    let out = env.run("mem-embed", &["--install", "qwen3-embedding-0.6b"], b"");
    assert_clean_error(&out, 5, "nothing installed");
    assert!(String::from_utf8_lossy(&out.stderr).contains("sha256"));
    assert!(!cache.join("qwen3-embedding-0.6b").exists());
    assert!(
        !cache
            .join(".install-qwen3-embedding-0.6b/model.onnx.part")
            .exists()
    );
    let reqs = mock.seen.lock().unwrap().clone();
    assert_eq!(
        reqs[0].path,
        "/onnx-community/Qwen3-Embedding-0.6B-ONNX/resolve/c25a394dd583836952667c12f008335071b3f43d/onnx/model_int8.onnx"
    );
    // An unknown name is a usage error.
    let out = env.run("mem-embed", &["--install", "no-such-model"], b"");
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
}

#[test]
fn cached_qwen3_tokenizer_gives_the_same_tokens_as_tokenizer_json() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        models().join("qwen3-tiny/tokenizer.json"),
        dir.path().join("tokenizer.json"),
    )
    .unwrap();
    let plain = tokenizers::Tokenizer::from_file(dir.path().join("tokenizer.json")).unwrap();
    let (_, how) = embed::cache::tokenizer(dir.path(), true).unwrap();
    assert_eq!(how, embed::cache::CacheUse::Built);
    let (cached, how) = embed::cache::tokenizer(dir.path(), true).unwrap();
    assert_eq!(how, embed::cache::CacheUse::Hit);
    let texts = [
        "fix the login bug",
        "Instruct: Given a search query\nQuery: why did <|endoftext|> appear",
        "<|im_start|>user\nüñíçødé 漢字 emoji 🚀 tabs\tand  spaces<|im_end|>",
        "fn main() { println!(\"{}\", 42); }",
    ];
    for t in texts {
        for special in [true, false] {
            let a = plain.encode(t, special).unwrap();
            let b = cached.encode(t, special).unwrap();
            assert_eq!(a.get_ids(), b.get_ids(), "{t:?}");
            assert_eq!(a.get_offsets(), b.get_offsets(), "{t:?}");
        }
    }
    // A damaged entry is rebuilt, not an error.
    let entry = std::fs::read_dir(dir.path().join(".tokenizer-cache"))
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    let bytes = std::fs::read(&entry).unwrap();
    std::fs::write(&entry, &bytes[..bytes.len() / 3]).unwrap();
    let (again, how) = embed::cache::tokenizer(dir.path(), true).unwrap();
    assert!(matches!(how, embed::cache::CacheUse::Rebuilt(_)), "{how:?}");
    assert_eq!(
        again.encode(texts[1], true).unwrap().get_ids(),
        plain.encode(texts[1], true).unwrap().get_ids()
    );
}

#[test]
fn a_missing_default_model_is_installed_on_first_use_after_a_fallback_while_it_cannot_be() {
    let env = Env::new();
    let cache = minilm_only_cache(&env);
    // The tiny model stands in for the default one: packages.json names it so, and the mock
    // hub serves it (cutting the first download halfway).
    let pkg = tiny_package();
    let files: Vec<Value> = pkg
        .files
        .iter()
        .map(|f| serde_json::json!({"remote": f.remote, "local": f.local, "sha256": f.sha256}))
        .collect();
    let mut manifest = pkg.manifest.clone();
    manifest["name"] = "qwen3-embedding-0.6b".into();
    let listed = serde_json::json!([{"name": "qwen3-embedding-0.6b", "repo": pkg.repo,
        "revision": pkg.revision, "files": files, "manifest": manifest}]);
    std::fs::write(cache.join("packages.json"), listed.to_string()).unwrap();
    let mock = hub();
    let env = env
        .set("MEM_AUTO_INSTALL", "1")
        .set("MEM_HF_ENDPOINT", &mock.url);
    seed(&env);
    let embedded_by = |model: &str| {
        env.count(&format!(
            "SELECT count(*) FROM embeddings WHERE model='{model}'"
        ))
    };

    // First use: the download is cut, so this run falls back to MiniLM and says why.
    let out = env.ok("mem-embed", &[], b"");
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(err.contains("download cut"), "{}", show(&out));
    assert!(err.contains("using minilm-l6"), "{}", show(&out));
    assert_eq!(embedded_by("all-minilm-l6-v2-int8"), 4);
    assert!(!cache.join("qwen3-embedding-0.6b").exists());
    let asked = mock.seen.lock().unwrap().len();

    // Within a day the failure is remembered: no request, the same fallback.
    let out = env.ok("mem-embed", &[], b"");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("within the last day"),
        "{}",
        show(&out)
    );
    assert_eq!(mock.seen.lock().unwrap().len(), asked);

    // A day later the download resumes where it was cut, and everything is embedded again
    // with the installed default model.
    let marker = cache.join(".install-qwen3-embedding-0.6b.failed");
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(25 * 3600);
    std::fs::File::options()
        .write(true)
        .open(&marker)
        .unwrap()
        .set_modified(old)
        .unwrap();
    let out = env.ok("mem-embed", &[], b"");
    assert_eq!(summary(&out)["embedded"], 4, "{}", show(&out));
    assert_eq!(embedded_by("qwen3-embedding-0.6b"), 4);
    assert_eq!(
        embedded_by("all-minilm-l6-v2-int8"),
        0,
        "replaced, not kept"
    );
    assert!(!marker.exists());
    let reqs = mock.seen.lock().unwrap().clone();
    assert!(
        reqs[asked].headers.contains("range: bytes="),
        "the download resumes: {}",
        reqs[asked].headers
    );
    for f in &pkg.files {
        assert_eq!(
            sha(&cache.join("qwen3-embedding-0.6b").join(&f.local)),
            f.sha256
        );
    }
    // Installed: the next run asks nothing.
    let n = reqs.len();
    env.ok("mem-embed", &[], b"");
    assert_eq!(mock.seen.lock().unwrap().len(), n);
}

#[test]
fn a_configured_model_that_cannot_be_downloaded_is_a_clear_error_storing_nothing() {
    let env = Env::new();
    minilm_only_cache(&env);
    seed(&env);
    // Port 9 of the harness: nothing listens, as on a machine without network.
    let env = env.set("MEM_AUTO_INSTALL", "1");
    let out = env.run("mem-embed", &["--model", "qwen3-embedding-0.6b"], b"");
    assert_clean_error(&out, 5, "qwen3-embedding-0.6b");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("127.0.0.1:9"),
        "{}",
        show(&out)
    );
    assert_eq!(env.count("SELECT count(*) FROM embeddings"), 0);
    // With first-use installs off, the error says how to install.
    let out = env.set("MEM_AUTO_INSTALL", "0").run(
        "mem-embed",
        &["--model", "qwen3-embedding-0.6b"],
        b"",
    );
    assert_clean_error(&out, 5, "mem-embed --install qwen3-embedding-0.6b");
}

#[test]
fn optional_inputs_an_export_lacks_are_skipped_but_a_missing_output_is_a_clear_error() {
    let env = env();
    let model = model_copy(&env, "qwen3-tiny");
    let text = records(&["fix the login bug"]);
    let want = vectors(&env.ok("mem-embed", &["-", "--model", "qwen3-tiny"], &text));
    let path = model.join("manifest.json");
    let mut m: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    // Exports differ in whether they take token type or position ids.
    m["inputs"]["token_type_ids"] = "token_type_ids".into();
    std::fs::write(&path, m.to_string()).unwrap();
    let spec = model.to_str().unwrap();
    let got = vectors(&env.ok("mem-embed", &["-", "--model", spec], &text));
    assert!(embed::cosine(&got[0], &want[0]) >= 0.99999);
    // A required input or the output the model does not have is named, with what it has.
    m["output"] = "sentence_embedding".into();
    std::fs::write(&path, m.to_string()).unwrap();
    let out = env.run("mem-embed", &["-", "--model", spec], &text);
    assert_clean_error(
        &out,
        5,
        "manifest output \"sentence_embedding\" is not an output of the model (it has last_hidden_state",
    );
    m["output"] = "last_hidden_state".into();
    m["inputs"]["attention_mask"] = "mask".into();
    std::fs::write(&path, m.to_string()).unwrap();
    let out = env.run("mem-embed", &["-", "--model", spec], &text);
    assert_clean_error(&out, 5, "manifest input attention_mask=\"mask\"");
}

#[test]
fn stale_cache_entries_are_pruned_but_never_those_of_current_embeddings() {
    let env = env();
    seed(&env);
    let args = ["--model", "qwen3-tiny"];
    env.ok("mem-embed", &args, b"");
    let old = "2020-01-01T00:00:00.000Z";
    let put = |text: &str, used: &str| {
        env.db()
            .execute(
                "INSERT INTO embedding_cache(model, dim, text_hash, vector, created_at, last_used_at)
                 VALUES ('qwen3-tiny', 64, ?1, ?2, ?3, ?3)",
                rusqlite::params![embed::sha256_hex(text), embed::to_blob(&[0.125; 64]), used],
            )
            .unwrap();
    };
    put("a query asked once, long ago", old);
    // The entries of the current embeddings have not been used for years either.
    env.db()
        .execute("UPDATE embedding_cache SET last_used_at = ?1", [old])
        .unwrap();
    put("a query asked today", &memkit::store::now());
    env.db()
        .execute(
            "INSERT INTO embedding_cache(model, dim, text_hash, vector, created_at, last_used_at)
             VALUES ('another-model', 64, ?1, ?2, ?3, ?3)",
            rusqlite::params![
                embed::sha256_hex("Login work\nFixed the login bug"),
                embed::to_blob(&[0.125; 64]),
                old
            ],
        )
        .unwrap();
    // Pruning reads the whole cache, so it waits a day after the last one.
    let c = summary(&env.ok("mem-embed", &args, b""));
    assert_eq!(c["pruned"], 0, "{c}");
    let marker = env.home().join(".embed-cache-pruned");
    std::fs::File::options()
        .write(true)
        .open(&marker)
        .unwrap()
        .set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(2 * 86_400))
        .unwrap();
    let c = summary(&env.ok("mem-embed", &args, b""));
    // The old query and the other model's vector of a current text go; the current texts'
    // entries stay however old.
    assert_eq!(c["pruned"], 2, "{c}");
    assert_eq!(c["embedded"], 0, "{c}");
    assert_eq!(env.count("SELECT count(*) FROM embedding_cache"), 5);
    assert_eq!(
        env.count(
            "SELECT count(*) FROM embedding_cache c JOIN embeddings e
             ON e.model = c.model AND e.dim = c.dim AND e.content_hash = c.text_hash"
        ),
        4,
        "every current embedding keeps its cache entry"
    );
    // MEM_EMBED_CACHE_DAYS=0 prunes on every run whatever is not current.
    let env = env.set("MEM_EMBED_CACHE_DAYS", "0");
    let c = summary(&env.ok("mem-embed", &args, b""));
    assert_eq!(c["pruned"], 1, "{c}");
    assert_eq!(env.count("SELECT count(*) FROM embedding_cache"), 4);
}

/// Settings the embedding side reads deep inside (the model cache switch) come from config
/// like every other: config.toml sets them, and the variable still overrides the file.
#[test]
fn config_toml_turns_the_model_cache_off_too() {
    let env = env();
    let model = model_copy(&env, "qwen3-tiny");
    std::fs::create_dir_all(env.home()).unwrap();
    std::fs::write(env.home().join("config.toml"), "model_cache = 0\n").unwrap();
    let (_, how) = embed_verbose(&env, &model);
    assert_eq!(how, "off");
    assert!(cache_entries(&model).is_empty());
    let env = env.set("MEM_MODEL_CACHE", "1");
    let (_, how) = embed_verbose(&env, &model);
    assert_eq!(how, "built");
}

/// The fixture set's passages and questions (musique-mini: real text, CC BY 4.0).
fn musique_mini() -> (Vec<String>, Vec<String>) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/retrieval/musique-mini");
    let read = |f: &str, field: &str| -> Vec<String> {
        std::fs::read_to_string(dir.join(f))
            .unwrap()
            .lines()
            .map(|l| {
                serde_json::from_str::<Value>(l).unwrap()[field]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect()
    };
    (read("corpus.jsonl", "text"), read("queries.jsonl", "text"))
}

/// A copy of `model` (its own cache), how many products embed::int8 rewrites in it, and the
/// rewritten graph's op types.
fn rewritten_copy(env: &Env, model: &str) -> (PathBuf, usize, Vec<String>) {
    let dir = model_copy(env, model);
    let bytes = std::fs::read(dir.join("model.onnx")).unwrap();
    let (rewritten, n) = embed::int8::rewrite(&bytes).expect("a model with int8 weights");
    (dir, n, embed::int8::op_types(&rewritten))
}

/// MiniLM's int8 weights are multiplied as int8 (embed::int8): every linear layer of the six
/// is rewritten, ONNX Runtime fuses each into its int8 kernel, and the vectors stay within a
/// cosine of the float ones that leaves what a question finds the same.
#[test]
fn int8_weights_are_multiplied_as_int8_and_find_what_the_float_products_find() {
    let env = env();
    let (model, n, ops) = rewritten_copy(&env, "minilm-l6");
    // Q, K, V, the attention output and the two feed-forward products of six layers.
    assert_eq!(n, 36);
    let count = |op: &str| ops.iter().filter(|o| *o == op).count();
    assert_eq!(count("MatMulInteger"), 36);
    // Q, K and V read one tensor: it is quantized once.
    assert_eq!(count("DynamicQuantizeLinear"), 24);
    assert_eq!(
        count("MatMul"),
        embed::int8::op_types(&std::fs::read(model.join("model.onnx")).unwrap())
            .iter()
            .filter(|o| *o == "MatMul")
            .count()
            - 36
    );
    // A model without int8 weights is left as it is.
    let tiny = std::fs::read(models().join("qwen3-tiny/model.onnx")).unwrap();
    assert!(embed::int8::rewrite(&tiny).is_none());

    embed::init_runtime_at(&models().join("runtime/libonnxruntime.so")).unwrap();
    let mut int8 = Embedder::load(&model, None).unwrap();
    assert_eq!(int8.load_report().int8_products, 36);
    assert_eq!(int8.load_report().cache, embed::cache::CacheUse::Built);
    // The cache entry holds ONNX Runtime's fused int8 products, not float ones.
    let entry = cache_entries(&model).pop().expect("an entry");
    let optimised = embed::int8::op_types(&std::fs::read(entry.join("model.onnx")).unwrap());
    let fused = optimised
        .iter()
        .filter(|o| *o == "DynamicQuantizeMatMul" || *o == "MatMulIntegerToFloat")
        .count();
    assert!(fused >= 36, "{optimised:?}");
    let hit = Embedder::load(&model, None).unwrap();
    assert_eq!(hit.load_report().cache, embed::cache::CacheUse::Hit);
    assert_eq!(hit.load_report().int8_products, 36);
    let mut float = in_process_float(&model);
    assert_eq!(float.load_report().int8_products, 0);

    let (passages, questions) = musique_mini();
    let texts: Vec<&str> = passages
        .iter()
        .chain(&questions)
        .map(String::as_str)
        .collect();
    let (a, b) = (int8.embed(&texts).unwrap(), float.embed(&texts).unwrap());
    let cos: Vec<f32> = a.iter().zip(&b).map(|(x, y)| embed::cosine(x, y)).collect();
    let mean = cos.iter().sum::<f32>() / cos.len() as f32;
    let worst = cos.iter().cloned().fold(1.0, f32::min);
    assert!(mean >= 0.99 && worst >= 0.95, "mean {mean}, worst {worst}");
    let best = |v: &[Vec<f32>], q: usize| {
        (0..passages.len())
            .max_by(|&i, &j| embed::cosine(&v[q], &v[i]).total_cmp(&embed::cosine(&v[q], &v[j])))
            .unwrap()
    };
    let np = passages.len();
    let same = (np..texts.len())
        .filter(|&q| best(&a, q) == best(&b, q))
        .count();
    assert!(
        same * 10 >= questions.len() * 9,
        "the same best passage for {same} of {} questions",
        questions.len()
    );
    eprintln!(
        "int8 against float: mean cosine {mean:.4}, worst {worst:.4}, same best passage {same}/{}",
        questions.len()
    );
}

/// The other form of int8 weights, `DequantizeLinear` before a float product (a per-tensor
/// scale), in the Qwen3 architecture: its 14 products (7 of each of 2 layers) are rewritten, the
/// embedding table's dequantization (a Gather's, not a product's) is left, and the vectors stay
/// close to the float ones.
#[test]
fn dequantized_weights_of_a_qwen3_graph_are_multiplied_as_int8() {
    let env = env();
    let (model, n, ops) = rewritten_copy(&env, "qwen3-tiny-w8");
    assert_eq!(n, 14);
    let count = |op: &str| ops.iter().filter(|o| *o == op).count();
    assert_eq!(count("MatMulInteger"), 14);
    assert_eq!(count("DequantizeLinear"), 1, "{ops:?}");
    embed::init_runtime_at(&models().join("runtime/libonnxruntime.so")).unwrap();
    let mut int8 = Embedder::load(&model, None).unwrap();
    assert_eq!(int8.load_report().int8_products, 14);
    let mut float = in_process_float(&model);
    let texts = [
        "fix the login bug in the session middleware",
        "the indexer writes one usearch file per model and dimension",
        "hi",
    ];
    let (a, b) = (int8.embed(&texts).unwrap(), float.embed(&texts).unwrap());
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        let c = embed::cosine(x, y);
        assert!(c >= 0.98, "text {i}: cosine {c}");
    }
    // Still one vector per text, not one for all.
    assert!(embed::cosine(&a[0], &a[1]) < embed::cosine(&a[0], &b[0]));
}
