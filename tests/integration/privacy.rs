//! `mem forget` and `mem-prune` on the fixture transcripts, run through the real binaries
//! (import, `mem pipeline` with a real embedding model, tantivy and vector indexes), checked on
//! the database file, its WAL and the index files themselves.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::{Env, jsonl, show};

/// The fixture transcripts imported and run through `mem pipeline` (compress, ast, embed with
/// MiniLM, index), raw tool responses kept (so prune has something to drop).
fn fixture_store() -> Env {
    let env = Env::new()
        .set("MEM_MODELS", crate::embed::models().to_str().unwrap())
        .set("MEM_EMBED_MODEL", "minilm-l6")
        .set("MEM_RAW_RESPONSE_DAYS", "36500");
    env.import_fixtures();
    env.ok("mem", &["pipeline", "-q"], b"");
    assert!(env.count("SELECT count(*) FROM embeddings") > 0);
    env
}

/// Every file under `dir` (or `dir` itself) whose bytes contain `needle`, ignoring ASCII case.
fn files_holding(dir: &Path, needle: &str) -> Vec<PathBuf> {
    let needle = needle.to_ascii_lowercase();
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(p) = todo.pop() {
        if p.is_dir() {
            todo.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
        } else if let Ok(bytes) = std::fs::read(&p) {
            let lower = bytes.to_ascii_lowercase();
            if lower.windows(needle.len()).any(|w| w == needle.as_bytes()) {
                out.push(p);
            }
        }
    }
    out
}

/// `table.column` of every column of every table whose text holds `needle` (ASCII case ignored).
fn columns_holding(env: &Env, needle: &str) -> Vec<String> {
    let db = env.db();
    let tables: Vec<String> = db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let mut out = Vec::new();
    for t in tables {
        let cols: Vec<String> = db
            .prepare(&format!("SELECT name FROM pragma_table_info('{t}')"))
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        for c in cols {
            let n: i64 = db
                .query_row(
                    &format!(
                        "SELECT count(*) FROM \"{t}\" WHERE instr(lower(CAST(\"{c}\" AS TEXT)), lower(?1)) > 0"
                    ),
                    [needle],
                    |r| r.get(0),
                )
                .unwrap_or_else(|e| panic!("{t}.{c}: {e}"));
            if n > 0 {
                out.push(format!("{t}.{c}"));
            }
        }
    }
    out
}

/// Row counts of every ordinary table.
fn table_counts(env: &Env) -> BTreeMap<String, i64> {
    let names: Vec<String> = env
        .db()
        .prepare(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%'",
        )
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    names
        .into_iter()
        .map(|t| {
            let n = env.count(&format!("SELECT count(*) FROM \"{t}\""));
            (t, n)
        })
        .collect()
}

/// Lower-case words (letters and digits, 3 or more) of `text`.
fn words(text: &str) -> BTreeSet<String> {
    text.to_lowercase()
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| w.len() >= 3)
        .map(str::to_string)
        .collect()
}

/// The words of every observation and session summary the indexes should hold.
fn stored_words(env: &Env) -> BTreeSet<String> {
    let texts: Vec<String> = env
        .db()
        .prepare(
            "SELECT coalesce(title,'')||' '||summary||' '||coalesce(detail,'')||' '||facts||' '||concepts
                    ||' '||tags||' '||files_read||' '||files_modified FROM observations
             UNION ALL SELECT coalesce(title,'')||' '||coalesce(summary,'')||' '||coalesce(key_files,'')
                    ||' '||coalesce(key_decisions,'') FROM sessions",
        )
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    texts.iter().flat_map(|t| words(t)).collect()
}

/// Every term of the BM25 index's as-written text field (deleted documents' terms included:
/// tantivy keeps them in a segment until it is merged away).
fn bm25_terms(env: &Env) -> BTreeSet<String> {
    let b = memkit::index::bm25::Bm25::open(&env.home().join("index/bm25")).unwrap();
    let mut out = BTreeSet::new();
    for seg in b.reader.searcher().segment_readers() {
        let inv = seg.inverted_index(b.fields.exact).unwrap();
        let mut stream = inv.terms().stream().unwrap();
        while stream.advance() {
            out.insert(String::from_utf8_lossy(stream.key()).into_owned());
        }
    }
    out
}

fn hit_ids(out: &std::process::Output) -> Vec<(String, i64)> {
    jsonl(out)
        .iter()
        .filter(|r| r["type"] == "hit")
        .map(|r| {
            (
                r["source"].as_str().unwrap().to_string(),
                r["id"].as_i64().unwrap(),
            )
        })
        .collect()
}

fn forgotten(out: &std::process::Output) -> BTreeMap<String, u64> {
    jsonl(out)
        .iter()
        .map(|r| {
            assert_eq!(r["type"], "forgotten", "{r}");
            (
                r["kind"].as_str().unwrap().to_string(),
                r["rows"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn forget_leaves_no_trace_in_tables_files_or_indexes() {
    let env = fixture_store();
    let needle = "phx.server";
    let ids: Vec<i64> = env
        .db()
        .prepare(
            "SELECT id FROM observations WHERE instr(lower(title || summary || facts), ?1) > 0",
        )
        .unwrap()
        .query_map([needle], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(
        !ids.is_empty(),
        "the fixtures have an observation about {needle}"
    );
    let search = |env: &Env| {
        env.run(
            "mem-search",
            &["--all-projects", "--format", "jsonl", needle],
            b"",
        )
    };
    let before = hit_ids(&search(&env));
    assert!(
        ids.iter()
            .any(|id| before.contains(&("observation".into(), *id))),
        "{before:?}"
    );
    assert!(!columns_holding(&env, needle).is_empty());
    let texts: String = env
        .db()
        .prepare(&format!(
            "SELECT title||' '||summary||' '||coalesce(detail,'')||' '||facts FROM observations WHERE id IN ({})",
            ids.iter().map(i64::to_string).collect::<Vec<_>>().join(",")
        ))
        .unwrap()
        .query_map([], |r| r.get::<_, String>(0))
        .unwrap()
        .map(Result::unwrap)
        .collect::<Vec<_>>()
        .join(" ");

    // An event a hook spooled while the database was busy, not stored yet.
    let spool = env.home().join("spool");
    std::fs::create_dir_all(&spool).unwrap();
    let spooled = json!({"session_id": "late", "hook_event_name": "UserPromptSubmit",
        "cwd": "/home/marco/projects/spotter", "prompt": "start mix PHX.SERVER again"});
    std::fs::write(
        spool.join("20260301T000000.000000000-1-0.json"),
        spooled.to_string(),
    )
    .unwrap();

    // A dry run says what would go and changes nothing.
    let counts = table_counts(&env);
    let dry = env.ok("mem", &["forget", "--match", needle, "--dry-run"], b"");
    let would = forgotten(&dry);
    assert_eq!(would["observations"], ids.len() as u64, "{}", show(&dry));
    assert!(
        would["captures"] > 0 && would["embeddings"] > 0,
        "{would:?}"
    );
    assert_eq!(would["spooled"], 1);
    assert_eq!(std::fs::read_dir(&spool).unwrap().count(), 1);
    assert_eq!(table_counts(&env), counts);
    assert!(!columns_holding(&env, needle).is_empty());

    let out = env.ok("mem", &["forget", "--match", needle], b"");
    assert_eq!(forgotten(&out), would, "the dry run told what went");

    // Not in any column of any table, FTS5's shadow tables included.
    assert_eq!(columns_holding(&env, needle), Vec::<String>::new());
    // Nor in the file's free pages or the WAL (emptied by the checkpoint), nor in any index file.
    let wal = env.home().join("mem.db-wal");
    assert!(!wal.exists() || std::fs::metadata(&wal).unwrap().len() == 0);
    for place in [env.db_path(), wal, env.home().join("index"), spool] {
        assert_eq!(files_holding(&place, needle), Vec::<PathBuf>::new());
    }
    // The BM25 index was rebuilt: words only the forgotten observations had are not terms of it
    // any more (a deleted tantivy document keeps its terms until its segment is merged).
    let only_theirs: BTreeSet<String> = words(&texts)
        .difference(&stored_words(&env))
        .cloned()
        .collect();
    assert!(!only_theirs.is_empty(), "{texts}");
    let terms = bm25_terms(&env);
    let left: Vec<&String> = only_theirs.iter().filter(|w| terms.contains(*w)).collect();
    assert!(left.is_empty(), "still indexed: {left:?}");
    for id in &ids {
        assert_eq!(
            env.count(&format!(
                "SELECT count(*) FROM embeddings WHERE owner_kind = 'observation' AND owner_id = {id}"
            )),
            0
        );
    }
    let check = env.run("mem-index", &["--check"], b"");
    assert_eq!(check.status.code(), Some(0), "{}", show(&check));
    let after = hit_ids(&search(&env));
    for id in &ids {
        assert!(!after.contains(&("observation".into(), *id)), "{after:?}");
    }
    // Nothing left to forget.
    let again = env.run("mem", &["forget", "--match", needle], b"");
    assert_eq!(again.status.code(), Some(1), "{}", show(&again));
}

#[test]
fn forget_takes_observation_and_session_ids() {
    let env = fixture_store();
    let (obs, session): (i64, String) = env
        .db()
        .query_row(
            "SELECT o.id, o.session_id FROM observations o
             WHERE EXISTS (SELECT 1 FROM observation_sources s WHERE s.observation_id = o.id)
             ORDER BY o.id LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let sources: Vec<i64> = env
        .db()
        .prepare("SELECT queue_id FROM observation_sources WHERE observation_id = ?1")
        .unwrap()
        .query_map([obs], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let out = env.ok("mem", &["forget", "--obs", &format!("o{obs}")], b"");
    let gone = forgotten(&out);
    assert_eq!(gone["observations"], 1);
    assert_eq!(gone["captures"], sources.len() as u64);
    assert_eq!(
        env.count(&format!(
            "SELECT count(*) FROM observations WHERE id = {obs}"
        )),
        0
    );
    for q in &sources {
        assert_eq!(
            env.count(&format!(
                "SELECT count(*) FROM pending_queue WHERE id = {q}"
            )),
            0
        );
    }
    assert_eq!(
        env.count(&format!(
            "SELECT count(*) FROM embeddings WHERE owner_kind = 'observation' AND owner_id = {obs}"
        )),
        0
    );
    // The session's summary named it: emptied, and not written again by the next run.
    let summary: String = env
        .db()
        .query_row(
            "SELECT coalesce(summary, 'NULL') FROM sessions WHERE session_id = ?1",
            [&session],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(summary, "");
    env.ok("mem", &["pipeline", "-q"], b"");
    let check = env.run("mem-index", &["--check"], b"");
    assert_eq!(check.status.code(), Some(0), "{}", show(&check));
    assert_eq!(
        env.count(&format!(
            "SELECT count(*) FROM sessions WHERE session_id = '{session}' AND summary = ''"
        )),
        1,
        "the next pipeline run does not write it again"
    );

    // A whole session by its number.
    let rowid: i64 = env
        .db()
        .query_row(
            "SELECT rowid FROM sessions WHERE session_id = ?1",
            [&session],
            |r| r.get(0),
        )
        .unwrap();
    let out = env.ok("mem", &["forget", "--session", &format!("s{rowid}")], b"");
    assert_eq!(forgotten(&out)["sessions"], 1);
    for table in [
        "sessions",
        "observations",
        "pending_queue",
        "function_map",
        "event_log",
    ] {
        assert_eq!(
            env.count(&format!(
                "SELECT count(*) FROM {table} WHERE session_id = '{session}'"
            )),
            0,
            "{table}"
        );
    }

    // A whole project by its name.
    let root = "/Users/dain/workspace/JSSoundRecorder";
    assert!(
        env.count(&format!(
            "SELECT count(*) FROM observations WHERE project = '{root}'"
        )) > 0
    );
    let out = env.ok("mem", &["forget", "--project", "JSSoundRecorder"], b"");
    let gone = forgotten(&out);
    assert!(gone["sessions"] > 0 && gone["projects"] == 1, "{gone:?}");
    for table in ["sessions", "observations", "pending_queue", "projects"] {
        let col = if table == "projects" {
            "full_path"
        } else {
            "project"
        };
        assert_eq!(
            env.count(&format!(
                "SELECT count(*) FROM {table} WHERE {col} = '{root}'"
            )),
            0,
            "{table}"
        );
    }
    assert_eq!(
        columns_holding(&env, "JSSoundRecorder"),
        Vec::<String>::new()
    );
    let check = env.run("mem-index", &["--check"], b"");
    assert_eq!(check.status.code(), Some(0), "{}", show(&check));

    // Ids that match nothing, and ids that are not ids.
    let none = env.run("mem", &["forget", "--obs", "999999"], b"");
    assert_eq!(none.status.code(), Some(1), "{}", show(&none));
    assert!(String::from_utf8_lossy(&none.stderr).contains("o999999"));
    let bad = env.run("mem", &["forget", "--obs", "x17"], b"");
    assert_eq!(bad.status.code(), Some(2), "{}", show(&bad));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("x17"));
    let neither = env.run("mem", &["forget"], b"");
    assert_eq!(neither.status.code(), Some(2), "{}", show(&neither));
}

/// Issue 19 item 4: a `<private>` span of a prompt is never stored, not even after the pipeline.
#[test]
fn a_private_span_of_a_prompt_is_never_stored() {
    let env = Env::new()
        .set("MEM_MODELS", crate::embed::models().to_str().unwrap())
        .set("MEM_EMBED_MODEL", "minilm-l6");
    let secret = "locker combination is 31-7-22";
    let prompt = json!({"session_id": "p", "hook_event_name": "UserPromptSubmit", "cwd": "/tmp/pp",
        "prompt": format!("Fix the login page. <private>My {secret}</private> Thanks")});
    env.ok("mem-capture", &["--hook"], prompt.to_string().as_bytes());
    let end = json!({"session_id": "p", "hook_event_name": "SessionEnd", "cwd": "/tmp/pp"});
    env.ok("mem-capture", &["--hook"], end.to_string().as_bytes());
    env.ok("mem", &["pipeline", "-q"], b"");
    assert!(env.count("SELECT count(*) FROM pending_queue WHERE event = 'UserPromptSubmit'") == 1);
    assert_eq!(
        columns_holding(&env, "locker combination"),
        Vec::<String>::new()
    );
    assert_eq!(columns_holding(&env, "31-7-22"), Vec::<String>::new());
    assert_eq!(files_holding(&env.home(), "31-7-22"), Vec::<PathBuf>::new());
    let payload: String = env
        .db()
        .query_row(
            "SELECT payload FROM pending_queue WHERE event = 'UserPromptSubmit'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(payload.contains("Fix the login page") && payload.contains("[REDACTED:private]"));
}

fn pruned(out: &std::process::Output) -> BTreeMap<String, Value> {
    jsonl(out)
        .into_iter()
        .map(|r| {
            assert_eq!(r["type"], "pruned", "{r}");
            (r["kind"].as_str().unwrap().to_string(), r)
        })
        .collect()
}

#[test]
fn prune_shrinks_the_database_by_what_it_reports_and_changes_no_result() {
    let env = fixture_store().set("MEM_NOW", "2027-01-01T00:00:00Z");
    // The pipeline pruned once (the database says when) and keeps to once a day.
    let last = || -> String {
        env.db()
            .query_row(
                "SELECT value FROM meta WHERE key = 'last_prune_at'",
                [],
                |r| r.get(0),
            )
            .unwrap()
    };
    let first = last();
    env.ok("mem", &["pipeline", "-q"], b"");
    assert_eq!(last(), first, "not again within the day");
    let results = |env: &Env| {
        let mut out = Vec::new();
        for q in [
            "renderer html",
            "phoenix server failed",
            "coderabbit reinstall",
            "AudioWorklet",
        ] {
            let o = env.ok(
                "mem-search",
                &["--all-projects", "--format", "jsonl", q],
                b"",
            );
            out.extend(jsonl(&o));
        }
        for p in [
            "/Users/dain/workspace/claude-code-log",
            "/home/marco/projects/spotter",
        ] {
            let o = env.ok("mem-context", &["--project", p, "--format", "jsonl"], b"");
            out.extend(jsonl(&o));
        }
        // How long a run took is no part of its result.
        for r in &mut out {
            if let Some(m) = r.as_object_mut() {
                m.retain(|k, _| k != "build_ms" && k != "elapsed_ms");
            }
        }
        out
    };
    let before = results(&env);
    let obs_before: Vec<(i64, String)> =
        env.pairs("SELECT id, content_hash FROM observations ORDER BY id");
    let size = || std::fs::metadata(env.db_path()).unwrap().len();

    let dry = pruned(&env.ok(
        "mem-prune",
        &["--days", "0", "--log-days", "3650", "--dry-run"],
        b"",
    ));
    let counts = table_counts(&env);
    let raw = env.count(
        "SELECT count(*) FROM pending_queue WHERE json_type(payload, '$.tool_response') IS NOT NULL",
    );
    assert!(
        dry["raw_responses"]["rows"].as_i64().unwrap() > 0,
        "{dry:?}"
    );
    assert_eq!(dry["database"]["size_before"].as_u64(), Some(size()));
    assert!(raw > 0);

    let size_before = size();
    let done = pruned(&env.ok("mem-prune", &["--days", "0", "--log-days", "3650"], b""));
    let db = &done["database"];
    assert_eq!(db["size_before"].as_u64(), Some(size_before));
    assert_eq!(db["size_after"].as_u64(), Some(size()));
    assert_eq!(
        db["bytes"].as_u64(),
        Some(size_before - size()),
        "it shrank by what it said"
    );
    // The dry run predicted it (the same work on a copy).
    assert_eq!(dry["database"]["size_after"], db["size_after"]);
    assert_eq!(dry["raw_responses"], {
        let mut d = done["raw_responses"].clone();
        d["dry_run"] = json!(true);
        d
    });
    // What went is most of it: raw responses are the bulk of a capture.
    let content = done["raw_responses"]["bytes"].as_u64().unwrap();
    assert!(content > db["bytes"].as_u64().unwrap() / 2, "{done:?}");
    assert_eq!(
        table_counts(&env),
        counts,
        "rows stay; only their raw responses go"
    );
    assert_eq!(
        env.count(
            "SELECT count(*) FROM pending_queue WHERE status = 'done' AND event LIKE 'PostToolUse%'
               AND json_type(payload, '$.tool_response') IS NOT NULL"
        ),
        0
    );
    eprintln!(
        "fixture database: {} bytes after import + pipeline, {} after prune, {} observations, {} bytes per observation",
        size_before,
        size(),
        obs_before.len(),
        size() / obs_before.len() as u64
    );
    // Observations, search and context are as they were.
    let obs_after: Vec<(i64, String)> =
        env.pairs("SELECT id, content_hash FROM observations ORDER BY id");
    assert_eq!(obs_after, obs_before);
    let after = results(&env);
    assert_eq!(after.len(), before.len());
    for (a, b) in after.iter().zip(&before) {
        assert_eq!(a, b);
    }
    let check = env.run("mem-index", &["--check"], b"");
    assert_eq!(check.status.code(), Some(0), "{}", show(&check));
}

#[test]
fn prune_drops_old_events_and_log_files_only() {
    let env = Env::new();
    env.ok("mem-capture", &["--note", "keep this note"], b"");
    let db = env.db();
    db.execute_batch(
        "INSERT INTO event_log (ts, event, level, detail) VALUES
           ('2020-01-01T00:00:00.000Z', 'old', 'info', '{\"x\":\"old event\"}'),
           ('2999-01-01T00:00:00.000Z', 'new', 'info', NULL);",
    )
    .unwrap();
    drop(db);
    let logs = env.home().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let old = logs.join("old.log");
    std::fs::write(&old, "old line\n").unwrap();
    let f = std::fs::File::options().write(true).open(&old).unwrap();
    f.set_modified(
        std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_600_000_000),
    )
    .unwrap();
    std::fs::write(logs.join("new.log"), "new line\n").unwrap();
    // A log still written to loses its old lines (with their continuation lines) only.
    let mixed = logs.join("pipeline.log");
    let kept = "2999-01-01T00:00:00.000Z mem pipeline[2]: mem-embed: new\n";
    std::fs::write(
        &mixed,
        format!("2020-01-01T00:00:00.000Z mem pipeline[1]: mem-embed failed (exit 5): a\nsecond line\n{kept}"),
    )
    .unwrap();
    let events = env.count("SELECT count(*) FROM event_log");
    let dry = pruned(&env.ok("mem-prune", &["--dry-run"], b""));
    assert_eq!(dry["events"]["rows"], 1);
    assert_eq!(dry["log_files"]["rows"], 1);
    assert_eq!(dry["log_lines"]["rows"], 2);
    assert!(old.exists());
    assert!(
        std::fs::read_to_string(&mixed)
            .unwrap()
            .contains("second line")
    );
    assert_eq!(env.count("SELECT count(*) FROM event_log"), events);
    let done = pruned(&env.ok("mem-prune", &[], b""));
    assert_eq!(done["events"]["rows"], 1);
    assert_eq!(done["log_files"]["rows"], 1);
    assert_eq!(done["log_files"]["bytes"], 9);
    assert!(!old.exists() && logs.join("new.log").exists());
    assert_eq!(done["log_lines"]["rows"], 2);
    assert_eq!(std::fs::read_to_string(&mixed).unwrap(), kept);
    assert_eq!(
        env.count("SELECT count(*) FROM event_log WHERE event = 'old'"),
        0
    );
    assert_eq!(
        env.count("SELECT count(*) FROM event_log WHERE event = 'new'"),
        1
    );
    assert_eq!(
        env.count("SELECT count(*) FROM pending_queue WHERE event = 'Note'"),
        1
    );
    assert_eq!(
        env.count("SELECT count(*) FROM meta WHERE key = 'last_prune_at'"),
        1
    );
}
