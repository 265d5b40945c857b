//! Re-redaction of what is stored (issue 32): a store made "by an older redactor" (rows
//! holding secrets of the corpus that today's redactor removes, in every table, indexed by
//! FTS5, tantivy and the vector indexes, its redactor version set back) is rewritten by one
//! `mem pipeline`: no secret left under the data home, everything else as it was.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::secrets::{assert_clean, bm25_terms, corpus, files_under, fts_terms, probes};
use crate::{Env, jsonl, show};

/// The tables besides observations given one secret each.
const ONE_ROW_TABLES: [&str; 7] = [
    "sessions",
    "learnings",
    "pending_queue",
    "event_log",
    "failures",
    "function_map",
    "projects",
];

/// Where the planted secrets are.
struct Planted {
    /// Observations whose text was given a secret (title, detail, facts, a note's summary).
    obs: Vec<i64>,
    /// The one whose title holds a secret.
    titled: i64,
    probes: Vec<(String, String)>,
}

fn sql_text(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// A store a pipeline made from the fixture transcripts and a note, then given secrets in
/// every table and indexed again, as if an older redactor had let them through.
fn old_store() -> (Env, Planted) {
    let env = Env::new()
        .set("MEM_MODELS", crate::embed::models().to_str().unwrap())
        .set("MEM_EMBED_MODEL", "minilm-l6");
    env.import_fixtures();
    env.ok(
        "mem-capture",
        &["--note", "Deploys go through the staging cluster first"],
        b"",
    );
    env.ok("mem", &["pipeline"], b"");
    let texts: Vec<(String, String)> = corpus()
        .into_iter()
        .filter_map(|s| s.text.clone().map(|t| (t, s.secret.clone())))
        .filter(|(t, _)| !t.contains('\n'))
        .take(11)
        .collect();
    assert_eq!(texts.len(), 11);
    let t = |i: usize| sql_text(&texts[i].0);
    let ids: Vec<i64> = env
        .db()
        .prepare("SELECT id FROM observations WHERE is_manual = 0 ORDER BY id LIMIT 3")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let note: i64 = env.value("SELECT max(id) FROM observations WHERE is_manual = 1");
    let (a, b, c) = (ids[0], ids[1], ids[2]);
    let now = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')";
    env.db()
        .execute_batch(&format!(
            "UPDATE observations SET title = title || ' ' || {}, updated_at = {now} WHERE id = {a};
             UPDATE observations SET detail = coalesce(detail, '') || ' ' || {}, updated_at = {now} WHERE id = {b};
             UPDATE observations SET facts = json_insert(facts, '$[#]', {}), updated_at = {now} WHERE id = {c};
             UPDATE observations SET summary = summary || ' ' || {}, updated_at = {now} WHERE id = {note};
             UPDATE sessions SET summary = coalesce(summary, '') || ' ' || {}
               WHERE rowid = (SELECT min(rowid) FROM sessions WHERE summary IS NOT NULL);
             INSERT INTO learnings (project, content, category, confidence, created_at, updated_at)
               VALUES ('/tmp/proj', {}, 'gotcha', 0.8, {now}, {now});
             UPDATE pending_queue SET payload = json_set(payload, '$.tool_response', {})
               WHERE id = (SELECT min(id) FROM pending_queue WHERE event = 'PostToolUse');
             UPDATE event_log SET detail = json_object('error', {})
               WHERE id = (SELECT min(id) FROM event_log);
             INSERT INTO failures (queue_id, session_id, project, signature, line, created_at)
               VALUES (999999, 's-old', '/tmp/proj', 'sig', {}, {now});
             INSERT INTO function_map (session_id, file_path, project, qualname, name, kind,
                                       signature, docstring, line_start, line_end, body_hash,
                                       change, created_at)
               VALUES ('s-old', '/tmp/proj/a.py', '/tmp/proj', 'f', 'f', 'function', 'def f()',
                       {}, 1, 2, 'h', 'new', {now});
             UPDATE projects SET description = {}
               WHERE rowid = (SELECT min(rowid) FROM projects);
             INSERT OR REPLACE INTO meta (key, value) VALUES ('redactor_version', '0');",
            t(0),
            t(1),
            t(2),
            t(3),
            t(4),
            t(5),
            t(6),
            t(7),
            t(8),
            t(9),
            t(10)
        ))
        .unwrap();
    // The old text is embedded and indexed, as it would have been.
    env.ok("mem-embed", &["-q"], b"");
    env.ok("mem-index", &["-q"], b"");
    let secrets: Vec<_> = corpus()
        .into_iter()
        .filter(|s| texts.iter().any(|(_, sec)| *sec == s.secret))
        .collect();
    let planted = Planted {
        obs: vec![a, b, c, note],
        titled: a,
        probes: probes(&secrets),
    };
    // The old store does hold them: in the database file and in both indexes.
    let _ = memkit::store::backup::checkpoint(&env.db_path(), std::time::Duration::from_secs(5));
    let holds = |bytes: &[u8]| {
        let lower = bytes.to_ascii_lowercase();
        planted
            .probes
            .iter()
            .any(|(p, _)| memchr::memmem::find(&lower, p.to_ascii_lowercase().as_bytes()).is_some())
    };
    assert!(holds(&std::fs::read(env.db_path()).unwrap()), "mem.db");
    assert!(holds(&bm25_terms(&env)), "the BM25 index");
    assert!(holds(fts_terms(&env).as_bytes()), "the FTS5 index");
    (env, planted)
}

fn assert_no_secret_left(env: &Env, probes: &[(String, String)]) {
    for f in files_under(&env.home()) {
        assert_clean(
            &f.display().to_string(),
            &std::fs::read(&f).unwrap(),
            probes,
        );
    }
    assert_clean("the BM25 index's terms", &bm25_terms(env), probes);
    assert_clean("the FTS5 index's terms", fts_terms(env).as_bytes(), probes);
}

fn search_hits(env: &Env, query: &str) -> BTreeSet<String> {
    let out = env.run(
        "mem-search",
        &[
            "--format",
            "jsonl",
            "--all-projects",
            "--no-model",
            "--limit",
            "100",
            query,
        ],
        b"",
    );
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", show(&out));
    jsonl(&out).iter().map(|h| h["id"].to_string()).collect()
}

/// Rows changed per table, from mem-redact's records.
fn changed(out: &std::process::Output) -> BTreeMap<String, u64> {
    jsonl(out)
        .iter()
        .map(|r| {
            (
                r["table"].as_str().unwrap().to_string(),
                r["changed"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn embedded_at(env: &Env) -> BTreeMap<String, String> {
    env.pairs("SELECT owner_kind || owner_id, created_at FROM embeddings")
}

#[test]
fn one_pipeline_run_rewrites_what_an_older_redactor_stored() {
    let (env, planted) = old_store();
    let titles: BTreeMap<i64, String> = env.pairs("SELECT id, title FROM observations");
    let query = "session transcript renderer";
    let hits = search_hits(&env, query);
    assert!(!hits.is_empty(), "the query finds something");
    let vectors = embedded_at(&env);

    let out = env.ok("mem", &["pipeline"], b"");
    assert_no_secret_left(&env, &planted.probes);

    // Same observations, same titles where none held a secret, the same search hits.
    let after: BTreeMap<i64, String> = env.pairs("SELECT id, title FROM observations");
    assert_eq!(
        after.keys().collect::<Vec<_>>(),
        titles.keys().collect::<Vec<_>>()
    );
    for (id, title) in &titles {
        if *id == planted.titled {
            assert!(after[id].contains("[REDACTED:"), "{}", after[id]);
        } else {
            assert_eq!(&after[id], title);
        }
    }
    assert_eq!(search_hits(&env, query), hits);
    // Exactly the changed observations were embedded again.
    let now = embedded_at(&env);
    for (owner, at) in &vectors {
        let Some(id) = owner.strip_prefix("observation") else {
            continue;
        };
        let id: i64 = id.parse().unwrap();
        assert!(now.contains_key(owner), "{owner} has a vector again");
        if planted.obs.contains(&id) {
            assert_ne!(&now[owner], at, "{owner} was embedded again");
        } else {
            assert_eq!(&now[owner], at, "{owner} kept its vector");
        }
    }
    // The counts were logged, never the text.
    let logged: String =
        env.value("SELECT detail FROM event_log WHERE event = 'redact' ORDER BY id DESC LIMIT 1");
    let logged: Value = serde_json::from_str(&logged).unwrap();
    assert_eq!(logged["changed"]["observations"], 4, "{logged}");
    for table in ONE_ROW_TABLES {
        assert_eq!(logged["changed"][table], 1, "{table}: {logged}");
    }
    assert_eq!(
        env.value::<String>("SELECT value FROM meta WHERE key = 'redactor_version'"),
        memkit::capture::redact::VERSION.to_string()
    );
    let log = std::fs::read_to_string(env.home().join("logs/pipeline.log")).unwrap();
    assert!(
        log.contains(&format!(
            "redact: redactor 0 -> {}",
            memkit::capture::redact::VERSION
        )),
        "{log}\n{}",
        show(&out)
    );

    // A second pass changes nothing, and the next pipeline does not run it again.
    let runs = env.count("SELECT count(*) FROM event_log WHERE event = 'redact'");
    let again = env.run("mem-redact", &["--format", "jsonl"], b"");
    assert_eq!(again.status.code(), Some(1), "{}", show(&again));
    assert!(
        changed(&again).values().all(|n| *n == 0),
        "{}",
        show(&again)
    );
    env.ok("mem", &["pipeline"], b"");
    assert_eq!(
        env.count("SELECT count(*) FROM event_log WHERE event = 'redact'"),
        runs + 1,
        "mem-redact's run, not the pipeline's"
    );
}

#[test]
fn a_dry_run_counts_and_a_killed_run_is_finished_by_the_next() {
    let (env, planted) = old_store();
    let title = |env: &Env| -> String {
        env.value(&format!(
            "SELECT title FROM observations WHERE id = {}",
            planted.titled
        ))
    };
    let before = title(&env);

    let dry = env.ok("mem-redact", &["--dry-run", "--format", "jsonl"], b"");
    let counts = changed(&dry);
    assert_eq!(counts["observations"], 4, "{}", show(&dry));
    for table in ONE_ROW_TABLES {
        assert_eq!(counts[table], 1, "{table}: {}", show(&dry));
    }
    assert_eq!(title(&env), before, "a dry run changes nothing");
    assert_eq!(
        env.value::<String>("SELECT value FROM meta WHERE key = 'redactor_version'"),
        "0"
    );

    // A run stopped after two one-row batches keeps what it committed, and the old version.
    let part = env.ok(
        "mem-redact",
        &[
            "--batch-size",
            "1",
            "--max-batches",
            "2",
            "--format",
            "jsonl",
        ],
        b"",
    );
    assert!(
        String::from_utf8_lossy(&part.stderr).contains("run mem-redact again"),
        "{}",
        show(&part)
    );
    assert_eq!(
        env.value::<String>("SELECT value FROM meta WHERE key = 'redactor_version'"),
        "0"
    );

    // A run killed wherever it is leaves a sound database.
    let mut child = env
        .cmd("mem-redact")
        .args(["--batch-size", "1", "-q"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(150));
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(env.value::<String>("PRAGMA integrity_check"), "ok");

    env.ok("mem", &["pipeline"], b"");
    assert_no_secret_left(&env, &planted.probes);
    assert!(title(&env).contains("[REDACTED:"));
    let again = env.run("mem-redact", &["--format", "jsonl"], b"");
    assert!(
        changed(&again).values().all(|n| *n == 0),
        "{}",
        show(&again)
    );
}
