//! mem-index and mem-search on observations made from the fixture transcripts (by the
//! deterministic generator in memkit::search::synth), with hashed vectors standing in for
//! mem-embed's.

use std::path::Path;
use std::sync::OnceLock;

use memkit_testkit::{self as synth, HASH_MODEL, Obs};
use serde_json::Value;

use crate::{Env, jsonl, show};

const DIM: usize = 64;

/// A database built once from the fixtures: captures → observations → hashed vectors.
fn template() -> &'static Path {
    static T: OnceLock<tempfile::TempDir> = OnceLock::new();
    T.get_or_init(|| {
        let env = Env::new();
        env.import_fixtures();
        let mut conn = memkit::store::open(&env.db_path()).unwrap();
        let turns = synth::turns_from_queue(&conn).unwrap();
        let obs: Vec<Obs> = turns.into_iter().flat_map(|t| t.obs).collect();
        assert!(obs.len() > 500, "too few observations: {}", obs.len());
        synth::insert(&mut conn, &obs).unwrap();
        conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
            .unwrap();
        drop(conn);
        let dir = tempfile::tempdir().unwrap();
        std::fs::copy(env.db_path(), dir.path().join("mem.db")).unwrap();
        dir
    })
    .path()
}

/// A fresh data home holding a copy of the template database; `vectors` adds hashed vectors.
fn seeded(vectors: bool) -> Env {
    let env = Env::new();
    std::fs::create_dir_all(env.home()).unwrap();
    std::fs::copy(template().join("mem.db"), env.db_path()).unwrap();
    if vectors {
        let mut conn = memkit::store::open(&env.db_path()).unwrap();
        synth::embed_observations(&mut conn, DIM).unwrap();
    }
    env
}

fn conn(env: &Env) -> rusqlite::Connection {
    memkit::store::open(&env.db_path()).unwrap()
}

/// Stores one observation and returns its id.
fn add_obs(env: &Env, f: impl FnOnce(&mut Obs)) -> i64 {
    let mut o = Obs {
        session_id: "test-session".into(),
        project: Some("/work/alpha".into()),
        kind: "decision".into(),
        tool_name: "Edit".into(),
        title: "placeholder".into(),
        summary: "placeholder summary".into(),
        created_at: "2026-01-10T10:00:00.000Z".into(),
        ..Obs::default()
    };
    f(&mut o);
    synth::insert(&mut conn(env), &[o]).unwrap()[0]
}

fn search(env: &Env, args: &[&str]) -> (Option<i32>, Vec<Value>, String) {
    let out = env.run("mem-search", args, b"");
    let code = out.status.code();
    assert!(
        matches!(code, Some(0) | Some(1)),
        "mem-search {args:?}: {}",
        show(&out)
    );
    (
        code,
        jsonl(&out),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn ids(hits: &[Value]) -> Vec<i64> {
    hits.iter().map(|h| h["id"].as_i64().unwrap()).collect()
}

fn check(env: &Env) -> (Option<i32>, Vec<Value>) {
    let out = env.run("mem-index", &["--check"], b"");
    (out.status.code(), jsonl(&out))
}

#[test]
fn rebuild_then_check_reports_no_difference_and_incremental_follows_the_database() {
    let env = seeded(true);
    let out = env.ok("mem-index", &["--rebuild"], b"");
    let recs = jsonl(&out);
    let bm25 = recs.iter().find(|r| r["index"] == "bm25").unwrap();
    let total = env.count("SELECT count(*) FROM observations");
    assert_eq!(bm25["docs"].as_i64(), Some(total));
    assert_eq!(bm25["rebuilt"], true);
    let vec_name = format!("vectors-{HASH_MODEL}-{DIM}");
    assert!(
        recs.iter().any(|r| r["index"] == vec_name.as_str()),
        "{recs:?}"
    );
    assert!(env.home().join("index/bm25/meta.json").exists());
    assert!(env.home().join(format!("index/{vec_name}.vec")).exists());

    let (code, recs) = check(&env);
    assert_eq!(code, Some(0), "{recs:?}");
    assert_eq!(recs.len(), 2);
    for r in &recs {
        assert_eq!(r["missing"], 0, "{r}");
        assert_eq!(r["extra"], 0, "{r}");
    }

    // The database changes: one new, one deleted, one edited observation.
    let new_id = add_obs(&env, |o| {
        o.title = "Zebrafish quokka migration decided".into();
    });
    let c = conn(&env);
    let gone: i64 = c
        .query_row("SELECT min(id) FROM observations", [], |r| r.get(0))
        .unwrap();
    c.execute("DELETE FROM observations WHERE id = ?1", [gone])
        .unwrap();
    let edited = gone + 1;
    c.execute(
        "UPDATE observations SET title = 'Platypus narwhal rename', updated_at = ?2 WHERE id = ?1",
        rusqlite::params![edited, "2999-01-01T00:00:00.000Z"],
    )
    .unwrap();
    drop(c);
    let (code, recs) = check(&env);
    assert_eq!(code, Some(1), "a stale index must fail --check: {recs:?}");
    let b = recs.iter().find(|r| r["index"] == "bm25").unwrap();
    assert_eq!(b["missing"], 1);
    assert_eq!(b["extra"], 1);

    let out = env.ok("mem-index", &[], b"");
    let b = jsonl(&out)
        .into_iter()
        .find(|r| r["index"] == "bm25")
        .unwrap();
    assert_eq!(b["rebuilt"], false, "{b}");
    assert_eq!(b["added"], 1, "{b}");
    assert_eq!(b["removed"], 1, "{b}");
    assert_eq!(b["updated"], 1, "{b}");
    let (code, _) = check(&env);
    // The new observation has no vector yet: the vector index agrees with the embeddings table.
    assert_eq!(code, Some(0));

    let (_, hits, _) = search(&env, &["--all-projects", "zebrafish quokka"]);
    assert_eq!(hits[0]["id"].as_i64(), Some(new_id));
    assert_eq!(hits[0]["mode"], "bm25", "no cached query vector: BM25 only");
    let (_, hits, _) = search(&env, &["--all-projects", "platypus narwhal"]);
    assert_eq!(hits[0]["id"].as_i64(), Some(edited));
    let (_, hits, _) = search(
        &env,
        &[
            "--all-projects",
            "--limit",
            "50",
            "--mode",
            "probe",
            "zebrafish",
        ],
    );
    assert!(!ids(&hits).contains(&gone));

    // New vectors are picked up incrementally too.
    synth::embed_observations(&mut conn(&env), DIM).unwrap();
    let out = env.ok("mem-index", &[], b"");
    let v = jsonl(&out)
        .into_iter()
        .find(|r| r["index"] == vec_name.as_str())
        .unwrap();
    assert_eq!(v["added"], 1, "{v}");
    assert_eq!(v["rebuilt"], false, "{v}");
    assert_eq!(check(&env).0, Some(0));

    // Nothing deleted since: a run reads only what changed, sessions are still compared, and
    // a second run finds nothing to do and leaves no duplicate behind.
    let new_id = add_obs(&env, |o| o.title = "Axolotl retry budget".into());
    conn(&env)
        .execute(
            "INSERT INTO sessions (session_id, project, summary, started_at, last_activity_at, status)
             VALUES ('s-fast', NULL, 'Okapi session summary', '2026-01-11T00:00:00.000Z',
                     '2026-01-11T00:00:00.000Z', 'ended')",
            [],
        )
        .unwrap();
    let bm25_run = || {
        let out = env.ok("mem-index", &[], b"");
        jsonl(&out)
            .into_iter()
            .find(|r| r["index"] == "bm25")
            .unwrap()
    };
    let b = bm25_run();
    assert_eq!(
        (b["added"].as_i64(), b["removed"].as_i64()),
        (Some(2), Some(0)),
        "{b}"
    );
    let b = bm25_run();
    assert_eq!(
        (
            b["added"].as_i64(),
            b["updated"].as_i64(),
            b["removed"].as_i64()
        ),
        (Some(0), Some(0), Some(0)),
        "{b}"
    );
    assert_eq!(b["docs"], bm25["docs"].as_i64().unwrap() + 2, "{b}");
    let (code, recs) = check(&env);
    assert_eq!(code, Some(0), "{recs:?}");
    let (_, hits, _) = search(&env, &["--all-projects", "axolotl retry"]);
    assert_eq!(hits[0]["id"].as_i64(), Some(new_id));
}

#[test]
fn a_missing_or_corrupt_index_is_never_trusted() {
    let env = seeded(false);
    let id = add_obs(&env, |o| o.title = "Wombat cache eviction".into());
    env.ok("mem-index", &[], b"");
    std::fs::remove_dir_all(env.home().join("index")).unwrap();
    // Search still works, with FTS5, and says so.
    let (code, hits, err) = search(&env, &["--all-projects", "wombat eviction"]);
    assert_eq!(code, Some(0));
    assert_eq!(hits[0]["id"].as_i64(), Some(id));
    assert_eq!(hits[0]["mode"], "fts");
    assert!(err.contains("FTS5"), "{err}");
    assert_eq!(check(&env).0, Some(1));
    // mem-index rebuilds it, saying why.
    let out = env.ok("mem-index", &[], b"");
    let b = &jsonl(&out)[0];
    assert_eq!(b["rebuilt"], true);
    assert!(b["reason"].is_string(), "{b}");
    let (_, hits, _) = search(&env, &["--all-projects", "wombat eviction"]);
    assert_eq!(hits[0]["mode"], "bm25");

    // Garbage in the tantivy directory: search falls back, mem-index rebuilds.
    std::fs::write(env.home().join("index/bm25/meta.json"), b"{not json").unwrap();
    let (_, hits, _) = search(&env, &["--all-projects", "wombat eviction"]);
    assert_eq!(hits[0]["mode"], "fts");
    let out = env.ok("mem-index", &[], b"");
    assert_eq!(jsonl(&out)[0]["rebuilt"], true);
    assert_eq!(check(&env).0, Some(0));
}

#[test]
fn hybrid_needs_vectors_and_a_cached_query_vector() {
    let env = seeded(true);
    env.ok("mem-index", &[], b"");
    let q = "JSSoundRecorder spectrum worker";
    let (_, hits, _) = search(&env, &["--all-projects", q]);
    assert!(!hits.is_empty());
    assert!(hits.iter().all(|h| h["mode"] == "bm25"));
    synth::cache_query(&conn(&env), q, DIM).unwrap();
    let (_, hits, _) = search(&env, &["--all-projects", "--explain", q]);
    assert!(hits.iter().all(|h| h["mode"] == "hybrid"), "{hits:?}");
    assert!(hits.iter().any(|h| h["explain"]["vector_rank"].is_u64()));
    assert!(
        hits.iter()
            .any(|h| h["explain"]["similarity"].as_f64().unwrap() > 0.2)
    );
    // Vectors alone find records whose words differ slightly (trigram fuzziness).
    let (_, vhits, _) = search(&env, &["--all-projects", "--engine", "vector", q]);
    assert!(vhits.iter().all(|h| h["mode"] == "vector"));
    assert!(!vhits.is_empty());
    // --engine bm25 forces BM25 even when a vector exists.
    let (_, bhits, _) = search(&env, &["--all-projects", "--engine", "bm25", q]);
    assert!(bhits.iter().all(|h| h["mode"] == "bm25"));
}

#[test]
fn date_bounds_cover_the_whole_day_in_both_index_and_fts_modes() {
    let env = seeded(false);
    let id = add_obs(&env, |o| {
        o.title = "Capybara deadline handling".into();
        o.created_at = "2026-02-21T14:30:00.000Z".into();
    });
    env.ok("mem-index", &[], b"");
    for round in ["bm25", "fts"] {
        if round == "fts" {
            std::fs::remove_dir_all(env.home().join("index")).unwrap();
        }
        let found = |args: &[&str]| {
            let mut a = vec!["--all-projects", "capybara"];
            a.extend_from_slice(args);
            let (_, hits, _) = search(&env, &a);
            if let Some(h) = hits.first() {
                assert_eq!(h["mode"], round);
            }
            ids(&hits).contains(&id)
        };
        assert!(found(&["--before", "2026-02-21"]), "{round}");
        assert!(found(&["--after", "2026-02-21"]), "{round}");
        assert!(found(&["--after", "2026-02-21", "--before", "2026-02-21"]));
        assert!(!found(&["--after", "2026-02-22"]), "{round}");
        assert!(!found(&["--before", "2026-02-20"]), "{round}");
        assert!(found(&["--after", "2026-02-21T14:30:00Z"]), "{round}");
        assert!(!found(&["--after", "2026-02-21T14:30:01Z"]), "{round}");
        assert!(found(&["--before", "2026-02-21T14:30"]), "{round}");
        assert!(!found(&["--before", "2026-02-21T14:29:59Z"]), "{round}");
        assert!(found(&["--after", "2026-02-21T16:00:00+02:00"]), "{round}");
    }
    for bad in ["2026-02-30", "21/02/2026", "yesterday", "2026-13-01", ""] {
        let out = env.run(
            "mem-search",
            &["--all-projects", "--after", bad, "capybara"],
            b"",
        );
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {}", show(&out));
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn project_scope_defaults_to_the_current_project_and_labels_others() {
    let env = seeded(false);
    let t = tempfile::tempdir().unwrap();
    let alpha = t.path().join("alpha");
    let beta = t.path().join("beta");
    std::fs::create_dir_all(alpha.join(".git")).unwrap();
    std::fs::create_dir_all(beta.join(".git")).unwrap();
    let (alpha_s, beta_s) = (alpha.display().to_string(), beta.display().to_string());
    let a = add_obs(&env, |o| {
        o.title = "Ocelot retry policy".into();
        o.project = Some(alpha_s.clone());
    });
    let b = add_obs(&env, |o| {
        o.title = "Ocelot retry budget".into();
        o.project = Some(beta_s.clone());
    });
    env.ok("mem-index", &[], b"");
    // From inside alpha (a subdirectory resolves to the repository root).
    std::fs::create_dir_all(alpha.join("src")).unwrap();
    let mut c = env.cmd("mem-search");
    c.current_dir(alpha.join("src")).arg("ocelot retry");
    let out = c.output().unwrap();
    let hits = jsonl(&out);
    assert_eq!(ids(&hits), vec![a], "{}", show(&out));
    assert!(hits[0].get("other_project").is_none());
    // CLAUDE_PROJECT_DIR wins, as in capture.
    let env2 = Env {
        dir: tempfile::tempdir().unwrap(),
        vars: env.vars.clone(),
    }
    .set("CLAUDE_PROJECT_DIR", &beta_s);
    let (_, hits, _) = search(&env2, &["ocelot retry"]);
    assert_eq!(ids(&hits), vec![b]);
    // --project by path and by name, --projects, --all-projects with labels.
    let (_, hits, _) = search(&env, &["--project", &beta_s, "ocelot"]);
    assert_eq!(ids(&hits), vec![b]);
    let (_, hits, _) = search(
        &env,
        &["--projects", &format!("{alpha_s},{beta_s}"), "ocelot"],
    );
    assert_eq!(hits.len(), 2);
    let mut c = env.cmd("mem-search");
    c.current_dir(&alpha)
        .args(["--all-projects", "ocelot retry"]);
    let hits = jsonl(&c.output().unwrap());
    let hb = hits.iter().find(|h| h["id"] == b).unwrap();
    assert_eq!(hb["other_project"], true);
    assert_eq!(hb["project"], beta_s.as_str());
    assert_eq!(hb["project_name"], "beta");
    let ha = hits.iter().find(|h| h["id"] == a).unwrap();
    assert!(ha.get("other_project").is_none());
    assert_eq!(hits[0]["id"], a, "same-project bonus ranks alpha first");
    // A fixture project by its name.
    let (code, hits, _) = search(&env, &["--project", "JSSoundRecorder", "spectrum"]);
    assert_eq!(code, Some(0));
    assert!(
        hits.iter()
            .all(|h| h["project"] == "/Users/dain/workspace/JSSoundRecorder")
    );
    // A directory outside any project with memories: nothing, exit 1.
    let (code, hits, _) = search(&env, &["ocelot"]);
    assert_eq!(code, Some(1));
    assert!(hits.is_empty());
}

#[test]
fn fuzzy_tags_match_prefixes_and_close_embeddings_but_not_unrelated_tags() {
    let env = seeded(true);
    let auth = add_obs(&env, |o| {
        o.title = "Session tokens rotate hourly".into();
        o.tags = vec!["authentication".into()];
    });
    let cache = add_obs(&env, |o| {
        o.title = "Session tokens cached per worker".into();
        o.tags = vec!["caching".into()];
    });
    let login = add_obs(&env, |o| {
        o.title = "Session tokens checked at signin".into();
        o.tags = vec!["signin".into()];
    });
    env.ok("mem-index", &[], b"");
    let tagged = |tags: &str| {
        let (_, hits, _) = search(&env, &["--all-projects", "--tags", tags, "session tokens"]);
        ids(&hits)
    };
    assert_eq!(tagged("auth"), vec![auth]);
    assert_eq!(tagged("Authentication"), vec![auth]);
    assert_eq!(tagged("caching"), vec![cache]);
    assert!(tagged("cach").contains(&cache));
    assert!(tagged("nothing-like-it").is_empty());
    // Embedding similarity: "login" is close to "signin" and "authentication" (cosine ≥ 0.75),
    // far from "caching".
    let c = conn(&env);
    let put = |text: &str, v: Vec<f32>| {
        c.execute(
            "INSERT OR REPLACE INTO embedding_cache (model, dim, text_hash, vector, created_at, last_used_at) VALUES (?1, ?2, ?3, ?4, 'now', 'now')",
            rusqlite::params![HASH_MODEL, DIM as i64, memkit::search::text_hash(text), memkit::embed::to_blob(&v)],
        )
        .unwrap();
    };
    let basis = |i: usize, j: usize, wj: f32| {
        let mut v = vec![0f32; DIM];
        v[i] = 1.0;
        v[j] += wj;
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.into_iter().map(|x| x / n).collect::<Vec<_>>()
    };
    put("login", basis(0, 1, 0.3));
    put("signin", basis(0, 1, 0.0));
    put("authentication", basis(0, 2, 0.5));
    put("caching", basis(5, 6, 0.2));
    let got = tagged("login");
    assert!(got.contains(&login), "{got:?}");
    assert!(got.contains(&auth), "{got:?}");
    assert!(!got.contains(&cache), "{got:?}");
}

#[test]
fn probe_full_explain_type_session_limit_and_min_score() {
    let env = seeded(false);
    env.ok("mem-index", &[], b"");
    let (_, full, _) = search(&env, &["--all-projects", "--limit", "3", "test"]);
    assert_eq!(full.len(), 3);
    for h in &full {
        assert_eq!(h["type"], "hit");
        assert!(h["summary"].is_string());
        assert!(h["files"].is_array());
        assert!(h.get("line").is_none());
        assert!(h.get("explain").is_none());
    }
    let (_, probe, _) = search(
        &env,
        &["--all-projects", "--limit", "3", "--mode", "probe", "test"],
    );
    assert_eq!(ids(&probe), ids(&full));
    for h in &probe {
        assert!(h["line"].is_string());
        assert!(h.get("summary").is_none() && h.get("detail").is_none());
        assert!(h["score"].is_f64() && h["title"].is_string());
    }
    let (_, ex, _) = search(
        &env,
        &["--all-projects", "--limit", "5", "--explain", "test"],
    );
    for h in &ex {
        let e = &h["explain"];
        let w = [1.0, 0.5, 0.5, 0.2, 0.1, 0.3, 0.2];
        let parts = [
            "relevance",
            "lexical_match",
            "similarity",
            "recency",
            "type_weight",
            "files",
            "same_project",
        ];
        let sum: f64 = parts
            .iter()
            .zip(w)
            .map(|(p, w)| e[*p].as_f64().unwrap() * w)
            .sum();
        assert!((sum - h["score"].as_f64().unwrap()).abs() < 1e-3, "{h}");
        assert_eq!(e["lexical"], "bm25");
    }
    let scores: Vec<f64> = ex.iter().map(|h| h["score"].as_f64().unwrap()).collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");
    let (_, hits, _) = search(
        &env,
        &[
            "--all-projects",
            "--type",
            "discovery",
            "--limit",
            "20",
            "file",
        ],
    );
    assert!(!hits.is_empty() && hits.iter().all(|h| h["kind"] == "discovery"));
    let sid = full[0]["session_id"].as_str().unwrap().to_string();
    let (_, hits, _) = search(
        &env,
        &["--all-projects", "--session", &sid, "--limit", "50", "test"],
    );
    assert!(!hits.is_empty() && hits.iter().all(|h| h["session_id"] == sid.as_str()));
    let cut = scores[1];
    let (_, hits, _) = search(
        &env,
        &[
            "--all-projects",
            "--min-score",
            &cut.to_string(),
            "--limit",
            "5",
            "test",
        ],
    );
    assert!(hits.len() >= 2 && hits.iter().all(|h| h["score"].as_f64().unwrap() >= cut));
    let out = env.run(
        "mem-search",
        &["--all-projects", "--type", "gossip", "x"],
        b"",
    );
    assert_eq!(out.status.code(), Some(2));
    // Weights are configurable.
    let env2 = Env {
        dir: tempfile::tempdir().unwrap(),
        vars: env.vars.clone(),
    }
    .set("MEM_SEARCH_WEIGHT_TYPE", "0")
    .set("MEM_SEARCH_WEIGHT_RECENCY", "0");
    let (_, hits, _) = search(&env2, &["--all-projects", "--explain", "test"]);
    let h = &hits[0];
    let e = &h["explain"];
    let sum = e["relevance"].as_f64().unwrap()
        + 0.5 * e["lexical_match"].as_f64().unwrap()
        + 0.5 * e["similarity"].as_f64().unwrap()
        + 0.3 * e["files"].as_f64().unwrap()
        + 0.2 * e["same_project"].as_f64().unwrap();
    assert!((sum - h["score"].as_f64().unwrap()).abs() < 1e-3, "{h}");
    // --files boosts records that touched them.
    let target = add_obs(&env, |o| {
        o.title = "Heron config loader".into();
        o.files_modified = vec!["/repo/src/heron/config.py".into()];
        o.kind = "change".into();
    });
    add_obs(&env, |o| {
        o.title = "Heron config loader notes".into();
        o.kind = "decision".into();
    });
    env.ok("mem-index", &[], b"");
    let (_, hits, _) = search(
        &env,
        &[
            "--all-projects",
            "--files",
            "src/heron/config.py",
            "--explain",
            "heron config loader",
        ],
    );
    assert_eq!(hits[0]["id"].as_i64(), Some(target));
    assert_eq!(hits[0]["explain"]["files"], 1.0);
}

#[test]
fn no_query_can_break_search() {
    let env = seeded(false);
    env.ok("mem-index", &[], b"");
    let long = "token refresh race ".repeat(600);
    let queries = [
        "\"unbalanced quote",
        "\"token refresh\"",
        "token-refresh",
        "key:value field:title",
        "(((nested) parens",
        "a AND NOT b OR",
        "AND",
        "NOT",
        "*",
        "test*",
        "~fuzzy^2",
        "[1 TO 5]",
        "日本語 テスト émoji 🚀",
        "\\ / ' ` $ % ; --",
        "NEAR(a b)",
        "title:\"x\" -y +z",
        long.as_str(),
    ];
    for q in queries {
        for engine in ["auto", "fts"] {
            let out = env.run(
                "mem-search",
                &["--all-projects", "--engine", engine, "--", q],
                b"",
            );
            assert!(
                matches!(out.status.code(), Some(0) | Some(1)),
                "{q:?} ({engine}): {}",
                show(&out)
            );
            jsonl(&out);
        }
    }
    for q in ["", "   "] {
        let out = env.run("mem-search", &[q], b"");
        assert_eq!(out.status.code(), Some(2), "{q:?}: {}", show(&out));
    }
    let out = env.run("mem-search", &[], b"");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn batch_runs_many_queries_and_tags_hits_with_their_id() {
    let env = seeded(true);
    env.ok("mem-index", &[], b"");
    synth::cache_query(&conn(&env), "spectrum analyser", DIM).unwrap();
    let input = [
        r#"{"id":"q1","query":"spectrum analyser","all_projects":true,"limit":3}"#,
        r#"{"id":2,"query":"README","all_projects":true,"limit":2,"mode":"probe"}"#,
        r#"{"id":"q3","query":"zzzqqqxxx","all_projects":true}"#,
        r#"{"id":"q4","query":"test","project":"JSSoundRecorder","type":"discovery,change"}"#,
    ]
    .join("\n");
    let out = env.ok("mem-search", &["--batch", "-"], input.as_bytes());
    let hits = jsonl(&out);
    let q1: Vec<&Value> = hits.iter().filter(|h| h["query_id"] == "q1").collect();
    assert_eq!(q1.len(), 3);
    assert!(q1.iter().all(|h| h["mode"] == "hybrid"));
    let q2: Vec<&Value> = hits.iter().filter(|h| h["query_id"] == 2).collect();
    assert_eq!(q2.len(), 2);
    assert!(q2[0]["line"].is_string());
    assert!(!hits.iter().any(|h| h["query_id"] == "q3"));
    assert!(hits.iter().filter(|h| h["query_id"] == "q4").all(|h| {
        h["project_name"] == "JSSoundRecorder"
            && ["discovery", "change"].contains(&h["kind"].as_str().unwrap())
    }));
    // A bad line is reported with its number; the others still run.
    let input = "{\"id\":1,\"query\":\"README\",\"all_projects\":true}\nnot json\n{\"id\":3,\"query\":\"x\",\"after\":\"soon\"}\n";
    let out = env.run("mem-search", &["--batch", "-"], input.as_bytes());
    assert_eq!(out.status.code(), Some(3), "{}", show(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("<stdin>:2"), "{err}");
    assert!(err.contains("<stdin>:3"), "{err}");
    assert!(jsonl(&out).iter().any(|h| h["query_id"] == 1));
}

#[test]
fn table_on_request_and_nothing_found_exits_1() {
    let env = seeded(false);
    env.ok("mem-index", &[], b"");
    let out = env.ok(
        "mem-search",
        &["--all-projects", "--format", "table", "README"],
        b"",
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("title") && text.contains("score"), "{text}");
    let out = env.run("mem-search", &["--all-projects", "qqqzzzxxyy"], b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    // No database at all: nothing found, not a crash.
    let empty = Env::new();
    let out = empty.run("mem-search", &["--all-projects", "x"], b"");
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
}

#[test]
fn session_summaries_are_indexed_and_found() {
    let env = seeded(false);
    let c = conn(&env);
    let sid: String = c
        .query_row(
            "SELECT session_id FROM sessions ORDER BY rowid LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    c.execute(
        "UPDATE sessions SET summary = 'Migrated the lemur scheduler to cron', key_files = '[\"sched.py\"]' WHERE session_id = ?1",
        [&sid],
    )
    .unwrap();
    drop(c);
    env.ok("mem-index", &[], b"");
    let (_, hits, _) = search(
        &env,
        &["--all-projects", "--type", "session", "lemur scheduler"],
    );
    assert_eq!(hits.len(), 1, "{hits:#?}");
    assert_eq!(hits[0]["source"], "session");
    assert_eq!(hits[0]["kind"], "session");
    assert_eq!(hits[0]["session_id"], sid.as_str());
    let (_, hits, _) = search(&env, &["--all-projects", "lemur scheduler"]);
    assert!(
        hits.iter().take(3).any(|h| h["source"] == "session"),
        "{hits:#?}"
    );
    assert_eq!(check(&env).0, Some(0));
    // A changed summary is re-indexed.
    conn(&env)
        .execute(
            "UPDATE sessions SET summary = 'Moved the lemur scheduler to systemd timers' WHERE session_id = ?1",
            [&sid],
        )
        .unwrap();
    let out = env.ok("mem-index", &[], b"");
    assert_eq!(jsonl(&out)[0]["updated"], 1);
    let (_, hits, _) = search(
        &env,
        &["--all-projects", "--type", "session", "systemd timers"],
    );
    assert_eq!(hits[0]["source"], "session");
    let (code, _, _) = search(&env, &["--all-projects", "--type", "session", "cron"]);
    assert_eq!(code, Some(1), "the old summary is gone from the index");
}

#[test]
fn a_query_whose_meaning_matches_is_found_by_a_real_model_and_then_cached() {
    // A model cache of our own (MiniLM copied) so its model file can be broken later.
    let models = crate::embed::models();
    let env = Env::new().set(
        "ORT_DYLIB_PATH",
        models.join("runtime/libonnxruntime.so").to_str().unwrap(),
    );
    let cache = env.dir.path().join("models/minilm-l6");
    std::fs::create_dir_all(&cache).unwrap();
    for f in ["model.onnx", "tokenizer.json", "manifest.json"] {
        std::fs::copy(models.join("minilm-l6").join(f), cache.join(f)).unwrap();
    }
    let target = add_obs(&env, |o| {
        o.title = "Users could not sign in once their cookie expired".into();
        o.summary = "Sign-in bounced back to the start page: the session cookie had expired, so the credentials were rejected.".into();
    });
    for (title, summary) in [
        (
            "Tuned the CSS grid of the dashboard",
            "Columns now wrap on narrow screens.",
        ),
        (
            "Upgraded the Postgres driver",
            "Pool settings moved to the new format.",
        ),
        (
            "Baked sourdough bread for the team",
            "Overnight proof, high hydration.",
        ),
        (
            "Sped up the thumbnail generator",
            "Resizing runs on a thread pool now.",
        ),
    ] {
        add_obs(&env, |o| {
            o.title = title.into();
            o.summary = summary.into();
        });
    }
    env.ok("mem-embed", &["--model", "minilm-l6"], b"");
    env.ok("mem-index", &[], b"");
    let cached = |q: &str| {
        let m = memkit::embed::Manifest::load(&cache).unwrap();
        let text = memkit::embed::query_text(Some(&m), Some("observations"), q);
        env.count(&format!(
            "SELECT count(*) FROM embedding_cache WHERE model = '{}' AND dim = 384 AND text_hash = '{}'",
            m.name,
            memkit::embed::sha256_hex(&text)
        ))
    };

    // No word in common: BM25 finds nothing; the query's meaning finds the sign-in record.
    let q = "authentication failure";
    let (code, _, _) = search(&env, &["--all-projects", "--engine", "bm25", q]);
    assert_eq!(code, Some(1));
    // Forbidding model loads leaves an uncached query to BM25 and caches nothing.
    let (code, _, _) = search(&env, &["--all-projects", "--no-model", q]);
    assert_eq!(code, Some(1));
    let out = env
        .cmd("mem-search")
        .env("MEM_SEARCH_MODEL_LOAD", "0")
        .args(["--all-projects", q])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert_eq!(cached(q), 0);
    let (code, hits, err) = search(&env, &["--all-projects", "--explain", q]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(hits[0]["id"], target, "{hits:#?}");
    assert!(hits.iter().all(|h| h["mode"] == "hybrid"));
    assert!(hits[0]["explain"]["similarity"].as_f64().unwrap() > 0.3);
    assert_eq!(cached(q), 1, "the query vector is cached");

    // The second identical query loads no model: it works with the model file broken.
    std::fs::write(cache.join("model.onnx"), b"broken").unwrap();
    let (code, again, err) = search(&env, &["--all-projects", q]);
    assert_eq!(code, Some(0));
    assert_eq!(ids(&again), ids(&hits));
    assert!(again.iter().all(|h| h["mode"] == "hybrid"));
    assert!(!err.contains("warning"), "{err}");
    // An uncached query needs the (now broken) model: BM25 alone, and a warning says why.
    let (code, _, err) = search(&env, &["--all-projects", "login trouble"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("query not embedded"), "{err}");
}

#[test]
fn tags_are_widened_by_a_real_model_and_their_vectors_cached() {
    let models = crate::embed::models();
    let env = Env::new().set("MEM_MODELS", models.to_str().unwrap());
    let tagged_obs = |title: &str, tag: &str| {
        add_obs(&env, |o| {
            o.title = title.into();
            o.tags = vec![tag.into()];
        })
    };
    let signin = tagged_obs("Session tokens checked at sign-in", "signin");
    tagged_obs("Session tokens cached per worker", "caching");
    let db = tagged_obs("Session tokens kept in the database", "database");
    env.ok("mem-embed", &["--model", "minilm-l6"], b"");
    env.ok("mem-index", &[], b"");
    let tagged = |env: &Env, tags: &str| {
        let (_, hits, _) = search(env, &["--all-projects", "--tags", tags, "session tokens"]);
        ids(&hits)
    };
    // all-MiniLM-L6-v2: login~signin 0.79 and db~database 0.83 pass the 0.75 threshold;
    // every other pair here is under 0.4.
    assert_eq!(tagged(&env, "login"), vec![signin]);
    assert_eq!(tagged(&env, "db"), vec![db]);
    for tag in ["signin", "caching", "database", "login", "db"] {
        assert_eq!(
            env.count(&format!(
                "SELECT count(*) FROM embedding_cache WHERE model = 'all-minilm-l6-v2-int8' AND dim = 384 AND text_hash = '{}'",
                memkit::embed::sha256_hex(tag)
            )),
            1,
            "{tag} cached"
        );
    }
    // Without any model the cached vectors still widen the tags.
    let no_models = env.dir.path().join("no-models");
    std::fs::create_dir_all(&no_models).unwrap();
    let bare = env.set("MEM_MODELS", no_models.to_str().unwrap());
    assert_eq!(tagged(&bare, "login"), vec![signin]);
}
