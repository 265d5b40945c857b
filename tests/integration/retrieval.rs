//! Retrieval quality and the search behaviour a user relies on, with real MiniLM vectors: the
//! `mem-eval retrieval` gate on the bundled public sets (tests/fixtures/retrieval, see
//! SOURCES.md), `mem-capture --notes`, a full page per project, nothing for nonsense, the same
//! output twice.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::{Env, fixtures, jsonl, show};

/// An environment whose model cache is the prepared one (MiniLM with its manifest's floor).
fn model_env() -> Env {
    let models = crate::embed::models();
    Env::new().set("MEM_MODELS", models.to_str().unwrap()).set(
        "ORT_DYLIB_PATH",
        models.join("runtime/libonnxruntime.so").to_str().unwrap(),
    )
}

fn set(name: &str) -> PathBuf {
    fixtures().join("retrieval").join(name)
}

/// Each mode's report of `mem-eval retrieval` on a bundled set, and each mode's per-query
/// metrics recomputed from the rankings it wrote (`--run`).
fn eval(env: &Env, name: &str) -> (HashMap<String, Value>, PerQuery) {
    eval_with(env, name, &[])
}

/// [`eval`] with more arguments.
fn eval_with(env: &Env, name: &str, more: &[&str]) -> (HashMap<String, Value>, PerQuery) {
    let work = env.dir.path().join("eval");
    let run = env.dir.path().join(format!("{name}.run"));
    let dir = set(name);
    let mut args = vec![
        "retrieval",
        dir.to_str().unwrap(),
        "--work",
        work.to_str().unwrap(),
        "--run",
        run.to_str().unwrap(),
    ];
    args.extend(more);
    let out = env.ok("mem-eval", &args, b"");
    let reports = jsonl(&out)
        .into_iter()
        .map(|r| (r["mode"].as_str().unwrap().to_string(), r))
        .collect();
    (reports, per_query(&set(name), &run))
}

/// mode → metric → qid → value.
type PerQuery = HashMap<String, HashMap<String, BTreeMap<String, f64>>>;

/// Scores every ranking of a TREC run file (`qid Q0 doc rank score mode`) against the set's
/// qrels with mem-eval's own metrics.
fn per_query(dir: &Path, run: &Path) -> PerQuery {
    let mut qrels: HashMap<String, HashMap<String, i64>> = HashMap::new();
    for line in std::fs::read_to_string(dir.join("qrels.tsv"))
        .unwrap()
        .lines()
        .skip(1)
    {
        let c: Vec<&str> = line.split('\t').collect();
        qrels
            .entry(c[0].to_string())
            .or_default()
            .insert(c[1].to_string(), c[2].parse().unwrap());
    }
    let mut rankings: HashMap<String, HashMap<String, Vec<String>>> = HashMap::new();
    for line in std::fs::read_to_string(run).unwrap().lines() {
        let c: Vec<&str> = line.split_whitespace().collect();
        rankings
            .entry(c[5].to_string())
            .or_default()
            .entry(c[0].to_string())
            .or_default()
            .push(c[2].to_string());
    }
    // Scored as mem-eval scores: every question with a relevant record, found or not.
    let asked: Vec<String> = std::fs::read_to_string(dir.join("queries.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["qid"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .filter(|q| qrels.get(q).is_some_and(|r| r.values().any(|&v| v > 0)))
        .collect();
    let mut out = PerQuery::new();
    for (mode, by_qid) in rankings {
        for qid in &asked {
            let ranking = by_qid.get(qid).map_or(&[][..], |r| &r[..]);
            for (metric, v) in memkit_eval::retrieval::metrics::score(ranking, &qrels[qid], &[10]) {
                out.entry(mode.clone())
                    .or_default()
                    .entry(metric)
                    .or_default()
                    .insert(qid.clone(), v);
            }
        }
    }
    out
}

/// Whether fusion keeps up with an arm on one metric: hybrid's per-query values summed must
/// reach the arm's once the single question hybrid loses most on is set aside. ONNX Runtime's
/// int8 kernels differ by CPU (AVX2, AVX-512, VNNI), so MiniLM's vectors differ in their last
/// bits and one near-tie on a mini set of 19 questions can flip either way; two questions lost
/// (or one lost beyond what the others win back) still fail. Returns the shortfall, if any.
fn loses_more_than_one_question(
    hybrid: &BTreeMap<String, f64>,
    arm: &BTreeMap<String, f64>,
) -> Option<f64> {
    assert_eq!(hybrid.len(), arm.len(), "both modes score every question");
    let diffs: Vec<f64> = hybrid.iter().map(|(q, h)| h - arm[q]).collect();
    let worst = diffs.iter().copied().fold(0.0f64, f64::min);
    let total: f64 = diffs.iter().sum::<f64>() - worst;
    (total < -1e-9).then_some(-total / diffs.len() as f64)
}

/// nDCG@10 the default search must not fall below on each bundled set (recorded from
/// `mem-eval retrieval tests/fixtures/retrieval/<set>`, minus a margin for other machines'
/// floating point).
/// Recorded 2026-11-23: musique-mini 0.7957, qmsum-mini 0.2055; 2026-12-03 on an AVX-512 VNNI
/// machine: 0.8030 and 0.2331.
const GATE: &[(&str, f64)] = &[("musique-mini", 0.77), ("qmsum-mini", 0.18)];

#[test]
fn retrieval_gate_on_the_bundled_sets() {
    let env = model_env();
    for &(name, floor) in GATE {
        let (r, per) = eval(&env, name);
        let ndcg = |m: &str| r[m]["ndcg@10"].as_f64().unwrap();
        let report: Vec<String> = ["textbook", "fts", "bm25", "vector", "hybrid"]
            .iter()
            .map(|m| format!("{m} {:.4}", ndcg(m)))
            .collect();
        let report = format!("{name}: {}", report.join(", "));
        eprintln!("{report}");
        assert!(r["hybrid"]["queries"].as_u64().unwrap() > 15, "{report}");
        assert_eq!(r["hybrid"]["mode"], "hybrid");
        assert!(r["hybrid"].get("degraded").is_none(), "{report}");
        assert!(
            ndcg("hybrid") >= floor,
            "hybrid fell below the gate: {report}"
        );
        assert!(ndcg("bm25") >= ndcg("textbook"), "{report}");
        for k in ["ndcg@10", "recall@10"] {
            // The run file holds what the report averaged.
            for mode in ["bm25", "vector", "hybrid"] {
                let values = &per[mode][k];
                let mean = values.values().sum::<f64>() / values.len() as f64;
                let reported = r[mode][k].as_f64().unwrap();
                assert!(
                    (mean - reported).abs() < 1e-4,
                    "{mode} {k}: run {mean:.4}, report {reported:.4}"
                );
            }
            // Fusion never loses to either of its arms (issue #30), but for one question's
            // near-tie (issue #49).
            for arm in ["bm25", "vector"] {
                if let Some(short) = loses_more_than_one_question(&per["hybrid"][k], &per[arm][k]) {
                    panic!(
                        "{k}: hybrid {:.4} below {arm} {:.4} by {short:.4} beyond its worst question: {report}",
                        r["hybrid"][k].as_f64().unwrap(),
                        r[arm][k].as_f64().unwrap()
                    );
                }
            }
        }
        for m in ["recall@5", "recall_any@10", "mrr"] {
            assert!(r["hybrid"][m].as_f64().is_some(), "{m} missing: {report}");
        }
        assert!(r["hybrid"]["by_category"].as_object().unwrap().len() >= 2);
    }
}

/// A store whose vectors are half made, the newest first (a backlog being embedded): the
/// hybrid search ranks no worse than its BM25 arm on the same store. Before the records
/// without a vector kept their lexical places, the half with vectors took every top place:
/// hybrid nDCG@10 .02 on musique-mini against BM25's .75.
#[test]
fn a_store_half_embedded_newest_first_ranks_no_worse_than_its_bm25() {
    let env = model_env();
    for name in ["musique-mini", "qmsum-mini"] {
        let (r, per) = eval_with(&env, name, &["--mode", "bm25,hybrid", "--vectors", "50"]);
        let report = format!(
            "{name}: bm25 {:.4}, hybrid {:.4}",
            r["bm25"]["ndcg@10"].as_f64().unwrap(),
            r["hybrid"]["ndcg@10"].as_f64().unwrap()
        );
        eprintln!("{report}");
        assert_eq!(r["hybrid"]["vectors"].as_f64(), Some(0.5), "{report}");
        assert_eq!(r["hybrid"]["mode"], "hybrid");
        assert!(r["hybrid"].get("degraded").is_none(), "{report}");
        for k in ["ndcg@10", "recall@10"] {
            if let Some(short) = loses_more_than_one_question(&per["hybrid"][k], &per["bm25"][k]) {
                panic!("{k}: hybrid below bm25 by {short:.4} beyond its worst question: {report}");
            }
        }
    }
}

/// Notes of two projects imported with `--notes`, compressed, embedded with MiniLM, indexed.
fn notes_store(env: &Env, notes: &str) {
    let path = env.dir.path().join("notes.jsonl");
    std::fs::write(&path, notes).unwrap();
    env.ok("mem-capture", &["--notes", path.to_str().unwrap()], b"");
    env.ok("mem-compress", &[], b"");
    env.ok("mem-embed", &["--model", "minilm-l6"], b"");
    env.ok("mem-index", &[], b"");
}

#[test]
fn notes_import_keeps_ids_dates_and_tags_and_a_reimport_adds_nothing() {
    let env = Env::new();
    let notes = concat!(
        r#"{"id":"N-1","text":"We had a picnic by the lake last week.","tags":["Trip","ID-7"],"project":"alpha","date":"2024-05-01"}"#,
        "\n",
        r#"{"id":17,"title":"Deploys","text":"Deploys need the VPN.","project":"beta"}"#,
        "\n",
        r#"{"text":"","project":"alpha"}"#,
        "\n",
        r#"{"id":"N-3","text":"x","date":"yesterday"}"#,
        "\n",
    );
    let path = env.dir.path().join("notes.jsonl");
    std::fs::write(&path, notes).unwrap();
    let out = env.run("mem-capture", &["--notes", path.to_str().unwrap()], b"");
    // Two good notes stored, the two bad lines named, exit 3.
    assert_eq!(out.status.code(), Some(3), "{}", show(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("notes.jsonl:3") && err.contains("notes.jsonl:4"),
        "{err}"
    );
    assert_eq!(jsonl(&out)[0]["counts"]["queued"], 2);
    let again = env.run("mem-capture", &["--notes", path.to_str().unwrap()], b"");
    assert_eq!(
        jsonl(&again)[0]["counts"]["duplicates"],
        2,
        "{}",
        show(&again)
    );
    env.ok("mem-compress", &[], b"");
    env.ok("mem-index", &[], b"");
    let out = env.ok(
        "mem-search",
        &["--project", "alpha", "--tags", "id-7", "picnic"],
        b"",
    );
    let hits = jsonl(&out);
    assert_eq!(hits.len(), 1, "{}", show(&out));
    assert_eq!(hits[0]["external_id"], "N-1");
    assert_eq!(hits[0]["tags"], serde_json::json!(["Trip", "ID-7"]));
    assert_eq!(hits[0]["created_at"], "2024-05-01T00:00:00.000Z");
    assert!(hits[0].get("other_project").is_none());
    let out = env.ok("mem-search", &["--all-projects", "deploys"], b"");
    let hits = jsonl(&out);
    assert_eq!(hits[0]["external_id"], "17");
    assert_eq!(hits[0]["title"], "Deploys");
    // A changed note replaces what it said; its id stays.
    std::fs::write(
        &path,
        r#"{"id":17,"title":"Deploys","text":"Deploys need the VPN and a token.","project":"beta"}"#,
    )
    .unwrap();
    env.ok("mem-capture", &["--notes", path.to_str().unwrap()], b"");
    env.ok("mem-compress", &[], b"");
    let n: i64 = env
        .db()
        .query_row(
            "SELECT count(*) FROM observations WHERE external_id = '17'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(n, 1);
    env.ok("mem-index", &[], b"");
    let out = env.ok("mem-search", &["--project", "beta", "token"], b"");
    assert_eq!(jsonl(&out)[0]["external_id"], "17");
}

#[test]
fn vectors_fill_a_page_per_project_find_nothing_for_nonsense_and_repeat_exactly() {
    let env = model_env();
    // A small project among a large one: a global top-N cut would leave it short.
    let mut notes = String::new();
    for i in 0..400 {
        notes.push_str(&format!(
            "{{\"id\":\"big-{i}\",\"project\":\"big\",\"text\":\"Ticket {i}: the payment service timed out while charging card batch {i}.\"}}\n"
        ));
    }
    for i in 0..30 {
        notes.push_str(&format!(
            "{{\"id\":\"small-{i}\",\"project\":\"small\",\"text\":\"Garden log {i}: watered the tomatoes and pruned the roses.\"}}\n"
        ));
    }
    notes_store(&env, &notes);
    // What nonsense reaches in this store was measured for the floor.
    let floor: String = env
        .db()
        .query_row(
            "SELECT value FROM meta WHERE key LIKE 'similarity_floor:%'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let floor: f64 = floor.split(' ').next().unwrap().parse().unwrap();
    assert!(floor > 0.0 && floor < 1.0, "{floor}");
    let search = |args: &[&str]| {
        let out = env.run("mem-search", args, b"");
        assert!(matches!(out.status.code(), Some(0 | 1)), "{}", show(&out));
        out
    };
    let out = search(&[
        "--project",
        "small",
        "--engine",
        "vector",
        "-n",
        "20",
        "payment timeout",
    ]);
    let hits = jsonl(&out);
    // Vectors alone: the small project's nearest 20 clear the floor or not, but none of the
    // big project's 400 closer ones may take their places.
    assert!(
        hits.iter().all(|h| h["project"] == "small"),
        "{}",
        show(&out)
    );
    let out = search(&[
        "--project",
        "small",
        "--engine",
        "vector",
        "-n",
        "20",
        "watering the garden plants",
    ]);
    let hits = jsonl(&out);
    assert_eq!(hits.len(), 20, "a full page: {}", show(&out));
    // Nonsense finds nothing, in hybrid too, and says so.
    for q in ["qwzxv plokm", "zzkx vbnq trrp"] {
        let out = search(&["--all-projects", q]);
        assert_eq!(out.status.code(), Some(1), "{q}: {}", show(&out));
        assert!(jsonl(&out).is_empty());
        assert!(String::from_utf8_lossy(&out.stderr).contains("nothing found"));
    }
    // The same search twice, and after a rebuild of every index: the same bytes.
    let args = [
        "--all-projects",
        "-n",
        "50",
        "--explain",
        "--now",
        "2026-12-01",
        "card payment",
    ];
    let first = search(&args).stdout;
    assert_eq!(search(&args).stdout, first);
    env.ok("mem-index", &["--rebuild"], b"");
    assert_eq!(
        search(&args).stdout,
        first,
        "a rebuilt index ranks the same"
    );
}

#[test]
fn an_empty_result_says_why() {
    let env = Env::new();
    let path = env.dir.path().join("notes.jsonl");
    std::fs::write(
        &path,
        "{\"id\":\"a\",\"project\":\"alpha\",\"text\":\"Ocelots sleep by day.\"}\n",
    )
    .unwrap();
    env.ok("mem-capture", &["--notes", path.to_str().unwrap()], b"");
    let why = |args: &[&str]| {
        let out = env.run("mem-search", args, b"");
        assert_eq!(out.status.code(), Some(1), "{}", show(&out));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    // Compressed nothing yet: the queue is named.
    let w = why(&["--project", "alpha", "ocelots"]);
    assert!(w.contains("waiting in the queue"), "{w}");
    env.ok("mem-compress", &[], b"");
    let w = why(&["--project", "alpha", "giraffes"]);
    assert!(
        w.contains("nothing indexed yet") && w.contains("mem-pipeline"),
        "{w}"
    );
    env.ok("mem-index", &[], b"");
    // Outside any project: say so and point to --all-projects.
    let w = why(&["ocelots"]);
    assert!(w.contains("--all-projects"), "{w}");
    let w = why(&["--project", "alpha", "giraffes"]);
    assert!(w.contains("no memory in alpha matches"), "{w}");
}

#[test]
fn a_long_record_is_found_by_what_its_end_says() {
    let env = model_env();
    let filler = "The committee reviewed the quarterly budget figures and approved the travel \
                  expenses for the regional sales team. "
        .repeat(40);
    let notes = format!(
        "{}\n{}\n{}\n",
        serde_json::json!({"id": "long", "project": "p",
            "text": format!("{filler}At night the octopus escaped from its aquarium tank and hid in a drain.")}),
        serde_json::json!({"id": "cat", "project": "p", "text": "The cat slept on the sofa all afternoon."}),
        serde_json::json!({"id": "api", "project": "p", "text": "We deployed the new billing API to production."}),
    );
    notes_store(&env, &notes);
    let windows: i64 = env
        .db()
        .query_row(
            "SELECT length(vector) / (4 * dim) FROM embeddings e JOIN observations o
             ON o.id = e.owner_id WHERE o.external_id = 'long'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(
        windows >= 3,
        "a 700-word note has several windows: {windows}"
    );
    let out = env.ok(
        "mem-search",
        &[
            "--project",
            "p",
            "--engine",
            "vector",
            "an octopus escaping from an aquarium",
        ],
        b"",
    );
    let hits = jsonl(&out);
    assert_eq!(hits[0]["external_id"], "long", "{}", show(&out));
    // Nothing changed: nothing is embedded again.
    let out = env.ok("mem-embed", &["--model", "minilm-l6"], b"");
    assert_eq!(jsonl(&out)[0]["counts"]["embedded"], 0, "{}", show(&out));
}

/// A bundled set imported as a user would (`mem-capture --notes`, then compress, embed, index)
/// and queried as a user would (`mem-search --batch`, the default limit, each query in its
/// project): the first ten hits are those `mem-eval retrieval` scores, and asking for 100 hits
/// does not change the first ten.
#[test]
fn the_cli_ranks_what_mem_eval_measures_whatever_the_limit() {
    // The set's records have no dates, so each import stamps them with its own clock: the
    // recency prior would differ by the seconds between the two imports and flip near-ties.
    let env = model_env().set("MEM_SEARCH_WEIGHT_RECENCY", "0");
    let dir = set("qmsum-mini");
    let run = env.dir.path().join("run.txt");
    let work = env.dir.path().join("eval");
    env.ok(
        "mem-eval",
        &[
            "retrieval",
            dir.to_str().unwrap(),
            "--mode",
            "hybrid",
            "--work",
            work.to_str().unwrap(),
            "--run",
            run.to_str().unwrap(),
        ],
        b"",
    );
    // qid → the eval's ranking (TREC run lines: qid Q0 doc rank score mode).
    let mut measured: HashMap<String, Vec<String>> = HashMap::new();
    for line in std::fs::read_to_string(&run).unwrap().lines() {
        let cols: Vec<&str> = line.split_whitespace().collect();
        measured
            .entry(cols[0].to_string())
            .or_default()
            .push(cols[2].to_string());
    }
    let read = |name: &str| -> Vec<Value> {
        std::fs::read_to_string(dir.join(name))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let notes: String = read("corpus.jsonl")
        .iter()
        .map(|d| {
            let mut n = d.clone();
            n["project"] = d["scope"].clone();
            format!("{n}\n")
        })
        .collect();
    notes_store(&env, &notes);
    let queries = read("queries.jsonl");
    let batch = |limit: Option<usize>| -> HashMap<String, Vec<String>> {
        let lines: String = queries
            .iter()
            .map(|q| {
                let mut l =
                    serde_json::json!({"id": q["qid"], "query": q["text"], "project": q["scope"]});
                if let Some(n) = limit {
                    l["limit"] = n.into();
                }
                format!("{l}\n")
            })
            .collect();
        let out = env.ok("mem-search", &["--batch", "-"], lines.as_bytes());
        let mut got: HashMap<String, Vec<String>> = HashMap::new();
        for h in jsonl(&out) {
            got.entry(h["query_id"].as_str().unwrap().to_string())
                .or_default()
                .push(h["external_id"].as_str().unwrap().to_string());
        }
        got
    };
    let ten = batch(None);
    let hundred = batch(Some(100));
    assert_eq!(ten.len(), queries.len());
    for q in &queries {
        let qid = q["qid"].as_str().unwrap();
        let first = &ten[qid];
        assert_eq!(first.len(), 10, "{qid}");
        assert!(hundred[qid].len() > 10, "{qid}");
        assert_eq!(
            first[..],
            hundred[qid][..10],
            "{qid}: the limit moved the top ten"
        );
        assert_eq!(
            first[..],
            measured[qid][..10],
            "{qid}: mem-eval scored another ranking than mem-search returns"
        );
    }
}

/// The fusion property: with a vector arm that is noise (the random-weight Qwen3 of the tests),
/// hybrid stays within 0.02 of the BM25 arm, on each bundled set.
#[test]
fn a_random_vector_arm_does_not_pull_hybrid_down() {
    let env = model_env();
    for name in ["musique-mini", "qmsum-mini"] {
        let work = env.dir.path().join("eval");
        let out = env.ok(
            "mem-eval",
            &[
                "retrieval",
                set(name).to_str().unwrap(),
                "--mode",
                "bm25,vector,hybrid",
                "--model",
                "qwen3-tiny",
                "--work",
                work.to_str().unwrap(),
            ],
            b"",
        );
        let r: HashMap<String, Value> = jsonl(&out)
            .into_iter()
            .map(|r| (r["mode"].as_str().unwrap().to_string(), r))
            .collect();
        let m = |mode: &str, k: &str| r[mode][k].as_f64().unwrap();
        let report = format!(
            "{name}: ndcg@10 bm25 {:.4} vector {:.4} hybrid {:.4}",
            m("bm25", "ndcg@10"),
            m("vector", "ndcg@10"),
            m("hybrid", "ndcg@10")
        );
        eprintln!("{report}");
        assert_eq!(r["hybrid"]["mode"], "hybrid");
        // The random arm is the weak one (on qmsum-mini, where many turns are relevant, even
        // noise finds some: .13 against BM25's .23), or the test shows nothing.
        assert!(
            m("vector", "ndcg@10") < m("bm25", "ndcg@10") - 0.05,
            "{report}"
        );
        for k in ["ndcg@10", "recall@10"] {
            assert!(
                (m("hybrid", k) - m("bm25", k)).abs() <= 0.02,
                "{k}: {report}"
            );
        }
    }
}

/// Each musique-mini question's top `n` by `mem-search` (run by `cmd`), and whether one of its
/// evidence passages is among them, with the mode the search says it used.
fn top_found(cmd: impl Fn(&[&str]) -> std::process::Output, engine: &str) -> (f64, Vec<String>) {
    let dir = set("musique-mini");
    let mut qrels: HashMap<String, Vec<String>> = HashMap::new();
    for l in std::fs::read_to_string(dir.join("qrels.tsv"))
        .unwrap()
        .lines()
        .skip(1)
    {
        let c: Vec<&str> = l.split('\t').collect();
        qrels.entry(c[0].into()).or_default().push(c[1].into());
    }
    let (mut found, mut asked, mut modes) = (0, 0, Vec::new());
    for q in std::fs::read_to_string(dir.join("queries.jsonl"))
        .unwrap()
        .lines()
    {
        let q: Value = serde_json::from_str(q).unwrap();
        let Some(rel) = qrels.get(q["qid"].as_str().unwrap()) else {
            continue;
        };
        let out = cmd(&[
            "--all-projects",
            "--engine",
            engine,
            "-n",
            "3",
            q["text"].as_str().unwrap(),
        ]);
        let hits = jsonl(&out);
        asked += 1;
        found += usize::from(
            hits.iter()
                .any(|h| rel.iter().any(|r| h["external_id"].as_str() == Some(r))),
        );
        modes.extend(
            hits.first()
                .map(|h| h["mode"].as_str().unwrap().to_string()),
        );
    }
    (found as f64 / asked as f64, modes)
}

/// A process without the model (a hook, or mem-search once the model is gone) still gives a
/// query a vector: the sum of its words' vectors, which mem-embed ran through the model once
/// each. It finds most of what the model's own query vector finds, in the same run.
#[test]
fn without_the_model_a_query_is_given_a_vector_by_its_words() {
    let env = model_env();
    let mut notes = String::new();
    for l in std::fs::read_to_string(set("musique-mini").join("corpus.jsonl"))
        .unwrap()
        .lines()
    {
        let d: Value = serde_json::from_str(l).unwrap();
        let text = format!(
            "{}. {}",
            d["title"].as_str().unwrap_or(""),
            d["text"].as_str().unwrap()
        );
        notes.push_str(&format!(
            "{}\n",
            json!({"id": d["id"], "project": "all", "text": text})
        ));
    }
    notes_store(&env, &notes);
    let db = env.db();
    let count = |sql: &str| -> i64 { db.query_row(sql, [], |r| r.get(0)).unwrap() };
    // Every word of the records counted and distilled, once.
    let words = count("SELECT count(*) FROM word_vectors WHERE length(vector) > 0");
    assert!(words > 2000, "{words} words");
    assert_eq!(
        count("SELECT count(*) FROM word_vectors WHERE length(vector) = 0"),
        0
    );
    assert_eq!(
        count("SELECT count(*) FROM word_vectors WHERE word = 'journal' AND df > 1"),
        1
    );
    assert_eq!(
        count("SELECT count(*) FROM meta WHERE key LIKE 'word_floor:%'"),
        1
    );
    let again = env.ok("mem-embed", &["--model", "minilm-l6"], b"");
    let summary = jsonl(&again).pop().unwrap();
    assert_eq!(summary["counts"]["words"], 0, "{summary}");

    let bare = env.dir.path().join("no-models");
    std::fs::create_dir_all(&bare).unwrap();
    let without = |args: &[&str]| {
        let mut c = env.cmd("mem-search");
        c.env("MEM_MODELS", &bare).args(args);
        let out = crate::piped(&mut c, b"");
        assert!(matches!(out.status.code(), Some(0 | 1)), "{}", show(&out));
        out
    };
    let with = |args: &[&str]| env.run("mem-search", args, b"");
    let (by_words, modes) = top_found(without, "vector");
    let (by_model, _) = top_found(with, "vector");
    let (bm25, _) = top_found(with, "bm25");
    eprintln!("top 3 by the vector arm: words {by_words:.3}, model {by_model:.3}; bm25 {bm25:.3}");
    assert!(modes.iter().all(|m| m == "vector"), "{modes:?}");
    assert!(
        by_words >= 0.8 * by_model,
        "words {by_words} model {by_model}"
    );
    // The default engine without the model is hybrid, not BM25 alone.
    let (_, modes) = top_found(without, "auto");
    assert!(modes.iter().all(|m| m == "hybrid"), "{modes:?}");
    // Words no record holds give no vector: the vector arm says so rather than invent one.
    let mut c = env.cmd("mem-search");
    c.env("MEM_MODELS", &bare)
        .args(["--all-projects", "--engine", "vector", "zorblax quimwoth"]);
    let out = crate::piped(&mut c, b"");
    assert!(
        !out.status.success() && jsonl(&out).is_empty(),
        "{}",
        show(&out)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no query vector"),
        "{}",
        show(&out)
    );
}
