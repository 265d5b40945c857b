//! A backlog of vectors (an imported history, a model change) worked a budget at a time, newest
//! first: `mem-embed --budget`, the pipeline's bounded runs and `--drain`, search before
//! everything has a vector, and what `mem status` says of it. Real binaries, real SQLite, the
//! tiny Qwen3 model through ONNX Runtime. No figure here is timed: a budget of 0 s stops a run
//! after its first batch, whatever the machine's speed.

use serde_json::{Value, json};

use crate::compress::small_session;
use crate::{Env, jsonl, show};

/// An environment whose model cache is the prepared one, embedding with the tiny Qwen3 model.
fn env() -> Env {
    Env::new()
        .set("MEM_MODELS", crate::embed::models().to_str().unwrap())
        .set("MEM_EMBED_MODEL", "qwen3-tiny")
}

/// `n` notes of one project, a day apart in 2025, whose texts are all the same number of
/// tokens (three words out of twenty, each one token): the model's batches, which sort texts
/// by length, then keep the order they are given in.
fn old_notes(env: &Env, n: usize) {
    let words = [
        "red", "blue", "green", "black", "white", "brown", "house", "river", "table", "chair",
        "water", "stone", "paper", "music", "horse", "apple", "light", "night", "field", "garden",
    ];
    let mut lines = String::new();
    let mut i = 0;
    'all: for a in words {
        for b in words {
            for c in words {
                if a == b || b == c || a == c {
                    continue;
                }
                if i == n {
                    break 'all;
                }
                let day = chrono::NaiveDate::from_ymd_opt(2025, 1, 1).unwrap()
                    + chrono::Days::new(i as u64);
                lines +=
                    &json!({"id": format!("n{i}"), "text": format!("the {a} {b} near the {c}"),
                                 "project": "/tmp/proj", "date": day.to_string()})
                    .to_string();
                lines.push('\n');
                i += 1;
            }
        }
    }
    let path = env.dir.path().join("notes.jsonl");
    std::fs::write(&path, lines).unwrap();
    env.ok(
        "mem-capture",
        &["-q", "--notes", path.to_str().unwrap()],
        b"",
    );
}

/// The counts of a run's summary record.
fn counts(out: &std::process::Output) -> Value {
    let recs = jsonl(out);
    let last = recs.last().expect("a summary record");
    assert_eq!(last["type"], "summary", "{}", show(out));
    last["counts"].clone()
}

fn n(v: &Value, k: &str) -> i64 {
    v[k].as_i64().unwrap_or_else(|| panic!("{k} in {v}"))
}

/// Observation ids newest first, and those with a vector of the tiny model.
fn newest_first_and_embedded(env: &Env) -> (Vec<i64>, Vec<i64>) {
    let all: Vec<(i64, i64)> =
        env.pairs("SELECT id, 0 FROM observations ORDER BY created_at DESC, id DESC");
    let with: Vec<(i64, i64)> = env.pairs(
        "SELECT owner_id, 0 FROM embeddings WHERE owner_kind = 'observation' AND model = 'qwen3-tiny'",
    );
    (
        all.into_iter().map(|x| x.0).collect(),
        with.into_iter().map(|x| x.0).collect(),
    )
}

/// Whether the embedded observations are exactly the newest ones.
fn the_newest(env: &Env) -> usize {
    let (order, with) = newest_first_and_embedded(env);
    let k = with.len();
    let mut newest = order[..k].to_vec();
    let mut with = with;
    newest.sort_unstable();
    with.sort_unstable();
    assert_eq!(
        with, newest,
        "the {k} observations with a vector are not the {k} newest"
    );
    k
}

#[test]
fn a_run_stopped_at_its_budget_embeds_the_newest_and_the_next_goes_on_embedding_nothing_twice() {
    let env = env();
    old_notes(&env, 80);
    env.ok("mem-compress", &["-q"], b"");
    assert_eq!(env.count("SELECT count(*) FROM observations"), 80);

    // A budget already spent when the model is loaded: one batch runs all the same.
    let c = counts(&env.ok("mem-embed", &["--budget", "0"], b""));
    let first = the_newest(&env);
    assert!((1..80).contains(&first), "{c}");
    assert_eq!((n(&c, "pending"), n(&c, "embedded")), (80, first as i64));
    assert_eq!(n(&c, "left"), 80 - first as i64, "{c}");

    // The next run starts where that one stopped: the next newest, none of the first again.
    let c = counts(&env.ok("mem-embed", &["--budget", "0"], b""));
    let second = the_newest(&env);
    assert!(second > first, "{c}");
    assert_eq!(n(&c, "pending"), 80 - first as i64, "{c}");
    assert_eq!(n(&c, "up_to_date"), first as i64, "{c}");
    assert_eq!(n(&c, "embedded"), (second - first) as i64, "{c}");
    assert_eq!(n(&c, "cache_hits"), 0, "{c}");

    // By hand, without a budget: the rest, all of it.
    let c = counts(&env.ok("mem-embed", &[], b""));
    assert_eq!(n(&c, "embedded"), 80 - second as i64, "{c}");
    assert_eq!((n(&c, "left"), n(&c, "cache_hits")), (0, 0), "{c}");
    assert_eq!(the_newest(&env), 80);
    // Each text was embedded once: one cache entry each, one vector each.
    assert_eq!(env.count("SELECT count(*) FROM embedding_cache"), 80);
    assert_eq!(env.count("SELECT count(*) FROM embeddings"), 80);
}

#[test]
fn a_backlog_run_killed_mid_way_is_resumed_newest_first_embedding_nothing_twice() {
    let env = env();
    old_notes(&env, 3000);
    env.ok("mem-compress", &["-q"], b"");
    let mut child = env
        .cmd("mem-embed")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Killed hard once its first transaction of vectors is in, as a machine put to sleep or an
    // OOM killer would.
    let embedded = || env.count("SELECT count(*) FROM embeddings WHERE owner_kind = 'observation'");
    for _ in 0..1000 {
        if embedded() > 0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let killed = the_newest(&env);
    assert!(
        (1..3000).contains(&killed),
        "killed mid-way: {killed} of 3000 with a vector"
    );

    // The next run, within a budget, goes on with the next newest.
    let c = counts(&env.ok("mem-embed", &["--budget", "0"], b""));
    let next = the_newest(&env);
    assert!(next > killed, "{c}");
    assert_eq!(n(&c, "up_to_date"), killed as i64, "{c}");
    assert_eq!(n(&c, "embedded"), (next - killed) as i64, "{c}");
    // And the rest; each text has one cache entry and one vector.
    let c = counts(&env.ok("mem-embed", &[], b""));
    assert_eq!(n(&c, "embedded"), 3000 - next as i64, "{c}");
    assert_eq!(the_newest(&env), 3000);
    assert_eq!(env.count("SELECT count(*) FROM embedding_cache"), 3000);
    assert_eq!(env.count("SELECT count(*) FROM embeddings"), 3000);
}

/// The additionalContext SessionStart gives this project ("" when nothing).
fn session_start(env: &Env) -> String {
    let out = env.ok(
        "mem-context",
        &["--hook"],
        json!({"hook_event_name": "SessionStart", "session_id": "next", "cwd": "/tmp/proj",
               "source": "startup", "transcript_path": "/tmp/t.jsonl"})
        .to_string()
        .as_bytes(),
    );
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    if text.trim().is_empty() {
        return text;
    }
    let v: Value = serde_json::from_str(&text).unwrap();
    v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// `mem-search --explain` in the project, as JSON Lines (the share of vectors on stderr).
fn explained(env: &Env, query: &str) -> std::process::Output {
    env.ok(
        "mem-search",
        &[
            "--project",
            "/tmp/proj",
            "--format",
            "jsonl",
            "--explain",
            query,
        ],
        b"",
    )
}

fn status(env: &Env) -> Value {
    serde_json::from_slice(&env.ok("mem", &["status", "--format", "json"], b"").stdout).unwrap()
}

#[test]
fn todays_session_is_searchable_with_vectors_after_one_budgeted_run_and_drain_does_the_rest() {
    let env = env().set("MEM_EMBED_BUDGET_S", "0");
    old_notes(&env, 80);
    // Today's session, captured after the import.
    small_session(&env, "today", 1);

    // One pipeline run, its budget spent at once: today's work is compressed, embedded and
    // indexed first; the old notes mostly wait.
    env.ok("mem", &["pipeline"], b"");
    let today: i64 =
        env.count("SELECT count(*) FROM observations WHERE session_id = 'today' AND is_manual = 0");
    assert!(today >= 1);
    assert_eq!(
        env.count(
            "SELECT count(*) FROM observations o JOIN embeddings e ON e.owner_kind = 'observation'
               AND e.owner_id = o.id WHERE o.session_id = 'today'"
        ),
        today,
        "today's observations have their vectors after one run"
    );
    let backlog = env.count(
        "SELECT count(*) FROM observations o WHERE NOT EXISTS (SELECT 1 FROM embeddings e
           WHERE e.owner_kind = 'observation' AND e.owner_id = o.id)",
    );
    assert!(backlog > 0, "the old notes wait for later runs");

    // Searchable before embedded: today's session with its vectors, an old note by its words.
    let hits = jsonl(&env.ok(
        "mem-search",
        &[
            "--project",
            "/tmp/proj",
            "--format",
            "jsonl",
            "token refresh race",
        ],
        b"",
    ));
    assert_eq!(hits[0]["session_id"], "today", "{hits:?}");
    assert_eq!(hits[0]["mode"], "hybrid");
    let out = explained(&env, "red blue green");
    let hits = jsonl(&out);
    let note: String = env.value("SELECT title FROM observations WHERE external_id = 'n0'");
    assert!(
        hits.iter().take(3).any(|h| h["title"] == note.as_str()),
        "the oldest note, without a vector, is found by its words: {hits:?}"
    );
    // --explain says how much of the store has vectors, and which hits have none yet.
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("records have a vector of qwen3-tiny"), "{err}");
    let share = hits[0]["explain"]["vectors"].as_f64().unwrap();
    assert!(share > 0.0 && share < 1.0, "{share}");
    assert!(
        hits.iter().any(|h| h["explain"]["no_vector"] == true),
        "{hits:?}"
    );

    // mem status: the backlog, the rate the model embeds at here, and when it is done.
    let s = status(&env);
    let b = &s["embedding_backlog"];
    assert_eq!(b["observations"].as_i64(), Some(backlog), "{s}");
    assert!(b["per_second"].as_f64().unwrap() > 0.0, "{b}");
    assert!(b["eta_seconds"].as_u64().is_some(), "{b}");
    assert!(!b["eta"].as_str().unwrap().is_empty(), "{b}");
    assert_eq!(b["budget_seconds"].as_f64(), Some(0.0), "{b}");
    assert!(b["pipeline_runs"].as_u64().unwrap() >= 1, "{b}");
    assert!(
        s["problems"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p.as_str().unwrap().contains(&format!(
                "embeddings: {backlog} observations without a vector of qwen3-tiny/64 (about"
            ))),
        "{s}"
    );
    // mem doctor says it too, with the time it takes.
    let out = env.run("mem", &["doctor", "--format", "jsonl"], b"");
    let check = jsonl(&out)
        .into_iter()
        .find(|c| c["check"] == "embeddings")
        .unwrap();
    assert_eq!(check["ok"], false);
    let detail = check["detail"].as_str().unwrap();
    assert!(
        detail.starts_with(&format!("{backlog} observations without a vector"))
            && detail.contains("of embedding at"),
        "{detail}"
    );
    // The SessionStart block says nothing of it.
    let block = session_start(&env);
    for word in ["backlog", "vector", "embed"] {
        assert!(!block.to_lowercase().contains(word), "{word}: {block}");
    }

    // --drain works it all in one run.
    env.ok("mem", &["pipeline", "--drain"], b"");
    assert_eq!(
        env.count(
            "SELECT count(*) FROM observations o WHERE NOT EXISTS (SELECT 1 FROM embeddings e
               WHERE e.owner_kind = 'observation' AND e.owner_id = o.id)"
        ),
        0
    );
    assert!(status(&env)["embedding_backlog"].is_null());
    let out = explained(&env, "red blue");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("records have a vector"));
    crate::pipeline::wait_idle(&env);
}

#[test]
fn a_budgeted_run_gives_the_words_of_the_records_next_in_line_their_vectors_before_the_records_theirs()
 {
    let env = env();
    old_notes(&env, 6000);
    env.ok("mem-compress", &["-q"], b"");
    // A budget spent before the words' turn (as on a slow machine: no time is left once the
    // model is loaded) still gives them a batch, and the records theirs.
    let c = counts(&env.ok("mem-embed", &["--budget", "0"], b""));
    assert!(
        n(&c, "left") > 0,
        "the run was to end at its budget with records left: {c}"
    );
    // Every word of the records still waiting has its vector: a hook's prompt about them has
    // one as soon as they have theirs.
    let waiting = env.count(
        "SELECT count(*) FROM word_vectors WHERE model = 'qwen3-tiny' AND length(vector) = 0",
    );
    assert_eq!(waiting, 0, "{c}");
    let words = env.count(
        "SELECT count(*) FROM word_vectors WHERE model = 'qwen3-tiny' AND length(vector) > 0",
    );
    assert_eq!(words, 22, "the, near and the twenty nouns: {c}");
    let counted = env.count("SELECT count(*) FROM word_vectors WHERE df > 0");
    assert!(counted > 0 && n(&c, "embedded") > 0, "{c}");
    // The rest by hand: every word is counted once a record holding it has its vector.
    env.ok("mem-embed", &[], b"");
    assert_eq!(
        env.count("SELECT count(*) FROM word_vectors WHERE df = 0"),
        0
    );
}

/// The words looked at ahead reach the newest observations waiting, past the records newer
/// than all of them that are in line first (a first run's learnings are newer than any
/// imported observation, and were most of the first 1,000 in line).
#[test]
fn the_words_looked_at_ahead_reach_the_newest_observations_past_newer_learnings() {
    let env = env();
    old_notes(&env, 1500);
    env.ok("mem-compress", &["-q"], b"");
    let db = env.db();
    let newest: String = db
        .query_row("SELECT max(created_at) FROM observations", [], |r| r.get(0))
        .unwrap();
    assert!(newest.as_str() < "2030-01-01", "{newest}");
    db.execute_batch("BEGIN").unwrap();
    for _ in 0..1200 {
        db.execute(
            "INSERT INTO learnings (project, content, category, confidence, created_at, updated_at)
             VALUES ('/tmp/proj', 'prefer tabs', 'convention', 0.8, '2030-01-01T00:00:00Z',
                     '2030-01-01T00:00:00Z')",
            [],
        )
        .unwrap();
    }
    db.execute_batch("COMMIT").unwrap();
    let c = counts(&env.ok("mem-embed", &["--budget", "0"], b""));
    assert!(n(&c, "left") > 0, "{c}");
    let words = env.count(
        "SELECT count(*) FROM word_vectors WHERE model = 'qwen3-tiny' AND length(vector) > 0",
    );
    assert_eq!(
        words, 24,
        "prefer, tabs, and the notes' the, near and twenty nouns: {c}"
    );
}
