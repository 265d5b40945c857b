//! Forgetting: deleting memories everywhere the database holds them (`mem forget`), and
//! scrubbing the file so that what was deleted cannot be read back from free pages or the WAL.
//! The indexes under index/ are rebuilt by the caller (they live in memkit-search).

use rusqlite::{Connection, params};

use crate::{Error, Result};

/// What to forget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Observations by id.
    Obs(Vec<i64>),
    /// One session: `s17` (its row number, as indexes key it) or its session id.
    Session(String),
    /// Every session and observation of these project roots.
    Project(Vec<String>),
    /// Everything whose text contains this (case-insensitive for ASCII).
    Match(String),
}

/// How many rows of one kind went (or would go).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gone {
    pub kind: &'static str,
    pub rows: u64,
}

/// What a forget did.
#[derive(Debug, Clone, Default)]
pub struct Forgot {
    /// One entry per kind, in a fixed order (zeros included).
    pub gone: Vec<Gone>,
    /// Ids or names given that matched nothing.
    pub missing: Vec<String>,
    /// The session ids forgotten whole (what a spooled event is matched by).
    pub sessions: Vec<String>,
}

impl Forgot {
    pub fn total(&self) -> u64 {
        self.gone.iter().map(|g| g.rows).sum()
    }
}

/// The kinds reported, in order.
pub const KINDS: &[&str] = &[
    "observations",
    "captures",
    "observation_sources",
    "sessions",
    "summaries",
    "embeddings",
    "embedding_cache",
    "function_map",
    "call_graph",
    "ast_files",
    "transcript_files",
    "learnings",
    "events",
    "projects",
];

/// SQL that is true when column `col` contains `?1` or its JSON-escaped form `?2` (list columns
/// and payloads are JSON: a quote or a newline in the text is escaped there).
fn contains(col: &str) -> String {
    format!(
        "(instr(lower(coalesce({col}, '')), lower(?1)) > 0 OR instr(lower(coalesce({col}, '')), lower(?2)) > 0)"
    )
}

/// The text as it appears inside a JSON string.
fn json_escaped(text: &str) -> String {
    let s = serde_json::to_string(text).unwrap_or_default();
    s[1..s.len() - 1].to_string()
}

const OBS_TEXT: &[&str] = &[
    "title",
    "summary",
    "detail",
    "facts",
    "concepts",
    "tags",
    "files_read",
    "files_modified",
    "functions_changed",
];

const SESSION_TEXT: &[&str] = &[
    "title",
    "summary",
    "key_files",
    "key_decisions",
    "last_assistant_message",
];

/// Deletes `target` everywhere in the database: observations, the captures they came from
/// (their payloads), their source links, session rows (whole sessions for `Session` and
/// `Project`), session summaries that named a forgotten observation (emptied, not written
/// again: the transcript they were made from may hold the text), vectors and the embedding
/// cache entries of the forgotten texts, the function map and call graph of forgotten
/// sessions, learnings' sources, and event_log rows. With `dry_run` nothing changes (the work
/// is done in a transaction that is rolled back) and the counts are what would go.
///
/// The file still holds the deleted bytes in free pages until [`scrub`] runs.
pub fn forget(conn: &Connection, target: &Target, dry_run: bool) -> Result<Forgot> {
    if !dry_run {
        // Deleted cells and freed pages are overwritten with zeros, not just unlinked.
        conn.pragma_update(None, "secure_delete", "ON")?;
    }
    let tx = super::begin_write(conn)?;
    let out = forget_in(&tx, target)?;
    if dry_run {
        drop(tx);
    } else {
        tx.commit()?;
    }
    Ok(out)
}

fn forget_in(c: &Connection, target: &Target) -> Result<Forgot> {
    c.execute_batch(
        "CREATE TEMP TABLE IF NOT EXISTS f_obs (id INTEGER PRIMARY KEY);
         CREATE TEMP TABLE IF NOT EXISTS f_queue (id INTEGER PRIMARY KEY);
         CREATE TEMP TABLE IF NOT EXISTS f_sessions (session_id TEXT PRIMARY KEY);
         CREATE TEMP TABLE IF NOT EXISTS f_summaries (session_id TEXT PRIMARY KEY);
         CREATE TEMP TABLE IF NOT EXISTS f_vec (model TEXT, dim INTEGER, vector BLOB);
         CREATE INDEX IF NOT EXISTS temp.f_vec_key ON f_vec(model, dim, vector);
         DELETE FROM f_obs; DELETE FROM f_queue; DELETE FROM f_sessions;
         DELETE FROM f_summaries; DELETE FROM f_vec;",
    )?;
    let mut missing = Vec::new();
    let (text, esc) = match target {
        Target::Match(t) => (t.clone(), json_escaped(t)),
        _ => (String::new(), String::new()),
    };
    match target {
        Target::Obs(ids) => {
            let mut put =
                c.prepare("INSERT OR IGNORE INTO f_obs SELECT id FROM observations WHERE id = ?1")?;
            for id in ids {
                if put.execute([id])? == 0 {
                    missing.push(crate::ids::obs(*id));
                }
            }
        }
        Target::Session(s) => {
            let id = super::sessions::id_of(c, s)?;
            let known: bool = c.query_row(
                "SELECT EXISTS (SELECT 1 FROM sessions WHERE session_id = ?1)
                     OR EXISTS (SELECT 1 FROM pending_queue WHERE session_id = ?1)
                     OR EXISTS (SELECT 1 FROM observations WHERE session_id = ?1)",
                [&id],
                |r| r.get(0),
            )?;
            if !known {
                missing.push(s.clone());
            }
            c.execute("INSERT OR IGNORE INTO f_sessions VALUES (?1)", [&id])?;
        }
        Target::Project(roots) => {
            for root in roots {
                let n = c.execute(
                    "INSERT OR IGNORE INTO f_sessions
                     SELECT session_id FROM sessions WHERE project = ?1
                     UNION SELECT session_id FROM pending_queue WHERE project = ?1
                     UNION SELECT session_id FROM observations WHERE project = ?1 AND session_id IS NOT NULL",
                    [root],
                )?;
                // Manual notes belong to a project without a session.
                let m = c.execute(
                    "INSERT OR IGNORE INTO f_obs SELECT id FROM observations WHERE project = ?1",
                    [root],
                )?;
                if n + m == 0 {
                    missing.push(root.clone());
                }
            }
        }
        Target::Match(_) => {
            let any = |cols: &[&str]| {
                cols.iter()
                    .map(|c| contains(c))
                    .collect::<Vec<_>>()
                    .join(" OR ")
            };
            c.execute(
                &format!(
                    "INSERT OR IGNORE INTO f_obs SELECT id FROM observations WHERE {}",
                    any(OBS_TEXT)
                ),
                params![text, esc],
            )?;
            c.execute(
                &format!(
                    "INSERT OR IGNORE INTO f_queue SELECT id FROM pending_queue WHERE {}",
                    any(&["payload", "last_error"])
                ),
                params![text, esc],
            )?;
            c.execute(
                &format!(
                    "INSERT OR IGNORE INTO f_summaries SELECT session_id FROM sessions WHERE {}",
                    any(SESSION_TEXT)
                ),
                params![text, esc],
            )?;
        }
    }
    // What belongs to forgotten sessions, and what forgotten observations came from.
    c.execute_batch(
        "INSERT OR IGNORE INTO f_obs SELECT id FROM observations WHERE session_id IN (SELECT session_id FROM f_sessions);
         INSERT OR IGNORE INTO f_queue SELECT id FROM pending_queue WHERE session_id IN (SELECT session_id FROM f_sessions);
         INSERT OR IGNORE INTO f_queue SELECT queue_id FROM observation_sources WHERE observation_id IN (SELECT id FROM f_obs);
         -- A summary lists its session's observation titles.
         INSERT OR IGNORE INTO f_summaries SELECT session_id FROM observations
             WHERE id IN (SELECT id FROM f_obs) AND session_id IS NOT NULL;
         DELETE FROM f_summaries WHERE session_id IN (SELECT session_id FROM f_sessions);",
    )?;
    let mut gone: Vec<Gone> = KINDS.iter().map(|k| Gone { kind: k, rows: 0 }).collect();
    let mut add = |kind: &str, n: usize| {
        if let Some(g) = gone.iter_mut().find(|g| g.kind == kind) {
            g.rows += n as u64;
        }
    };
    // Vectors of the forgotten owners, and the cache entries holding the same vectors (an
    // owner's vector is its windows' cached vectors one after the other).
    let owners = "(owner_kind = 'observation' AND owner_id IN (SELECT id FROM f_obs))
        OR (owner_kind = 'session' AND owner_id IN (SELECT rowid FROM sessions
              WHERE session_id IN (SELECT session_id FROM f_sessions UNION SELECT session_id FROM f_summaries)))";
    {
        let mut st = c.prepare(&format!(
            "SELECT model, dim, vector FROM embeddings WHERE {owners}"
        ))?;
        let rows = st.query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, Vec<u8>>(2)?,
            ))
        })?;
        let mut put = c.prepare("INSERT INTO f_vec VALUES (?1, ?2, ?3)")?;
        for row in rows {
            let (model, dim, blob) = row?;
            let width = (dim.max(1) as usize) * 4;
            for part in blob.chunks(width) {
                put.execute(params![model, dim, part])?;
            }
        }
    }
    add(
        "embedding_cache",
        c.execute(
            "DELETE FROM embedding_cache WHERE EXISTS (SELECT 1 FROM f_vec v
               WHERE v.model = embedding_cache.model AND v.dim = embedding_cache.dim
                 AND v.vector = embedding_cache.vector)",
            [],
        )?,
    );
    add(
        "embeddings",
        c.execute(&format!("DELETE FROM embeddings WHERE {owners}"), [])?,
    );
    add(
        "observation_sources",
        c.execute(
            "DELETE FROM observation_sources WHERE observation_id IN (SELECT id FROM f_obs)
                OR queue_id IN (SELECT id FROM f_queue)",
            [],
        )?,
    );
    // A failure's line is captured text, and its fix an observation: both go with them.
    c.execute(
        "DELETE FROM failures WHERE queue_id IN (SELECT id FROM f_queue)
            OR failed_obs IN (SELECT id FROM f_obs) OR fix_obs IN (SELECT id FROM f_obs)",
        [],
    )?;
    add(
        "observations",
        c.execute(
            "DELETE FROM observations WHERE id IN (SELECT id FROM f_obs)",
            [],
        )?,
    );
    add(
        "captures",
        c.execute(
            "DELETE FROM pending_queue WHERE id IN (SELECT id FROM f_queue)",
            [],
        )?,
    );
    // Emptied rather than NULL: a NULL summary is written again by the next pipeline run.
    add(
        "summaries",
        c.execute(
            "UPDATE sessions SET summary = '', key_files = '[]', key_decisions = '[]'
             WHERE session_id IN (SELECT session_id FROM f_summaries)
               AND (coalesce(summary, '') != '' OR coalesce(key_files, '[]') != '[]'
                    OR coalesce(key_decisions, '[]') != '[]')",
            [],
        )?,
    );
    if let Target::Match(_) = target {
        // The session's own text fields that hold the text (its title is its first prompt).
        for col in ["title", "last_assistant_message"] {
            c.execute(
                &format!("UPDATE sessions SET {col} = NULL WHERE {}", contains(col)),
                params![text, esc],
            )?;
        }
    }
    // The code map of forgotten sessions; with --match also the rows whose text holds it.
    for (table, cols) in [
        (
            "function_map",
            &[
                "file_path",
                "qualname",
                "signature",
                "decorators",
                "docstring",
            ][..],
        ),
        (
            "call_graph",
            &["file_path", "caller", "callee", "target"][..],
        ),
        ("ast_files", &["file_path", "reason"][..]),
        // A forgotten session's transcript is no longer "imported": a later import reads it
        // again, as it would have before imports were recorded.
        ("transcript_files", &["path", "summaries"][..]),
    ] {
        let by_session =
            format!("DELETE FROM {table} WHERE session_id IN (SELECT session_id FROM f_sessions)");
        let n = match target {
            Target::Match(_) => {
                let any: Vec<String> = cols.iter().map(|col| contains(col)).collect();
                c.execute(
                    &format!("{by_session} OR {}", any.join(" OR ")),
                    params![text, esc],
                )?
            }
            _ => c.execute(&by_session, [])?,
        };
        add(table, n);
    }
    add("learnings", forget_learnings(c, target, &text, &esc)?);
    let mut events = c.execute(
        "DELETE FROM event_log WHERE session_id IN (SELECT session_id FROM f_sessions)",
        [],
    )?;
    if let Target::Match(_) = target {
        events += c.execute(
            &format!("DELETE FROM event_log WHERE {}", contains("detail")),
            params![text, esc],
        )?;
    }
    add("events", events);
    add(
        "sessions",
        c.execute(
            "DELETE FROM sessions WHERE session_id IN (SELECT session_id FROM f_sessions)",
            [],
        )?,
    );
    if let Target::Project(roots) = target {
        for root in roots {
            // Claude Code keeps a project's transcripts in a folder named after its path
            // (`/home/me/app` -> `-home-me-app`), files without a session included.
            let folder = format!("/{}/", root.replace(['/', '.'], "-"));
            add(
                "transcript_files",
                c.execute(
                    "DELETE FROM transcript_files WHERE instr(path, ?1) > 0",
                    [&folder],
                )?,
            );
            add(
                "projects",
                c.execute("DELETE FROM projects WHERE full_path = ?1", [root])?,
            );
        }
    }
    let sessions: Vec<String> = c
        .prepare("SELECT session_id FROM f_sessions")?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    // FTS5 keeps a deleted row's terms in its old segments until they are merged.
    c.execute(
        "INSERT INTO observations_fts(observations_fts) VALUES ('optimize')",
        [],
    )?;
    c.execute_batch(
        "DELETE FROM f_obs; DELETE FROM f_queue; DELETE FROM f_sessions;
         DELETE FROM f_summaries; DELETE FROM f_vec;",
    )?;
    Ok(Forgot {
        gone,
        missing,
        sessions,
    })
}

/// Learnings: those whose text or evidence matches go; a forgotten session leaves their
/// sources (and their evidence, which may quote it), and a learning with no source left (and
/// not written by hand) goes, with its vector. Returns the learnings deleted or changed.
fn forget_learnings(c: &Connection, target: &Target, text: &str, esc: &str) -> Result<usize> {
    let mut n = 0;
    if let Target::Match(_) = target {
        n += c.execute(
            &format!(
                "DELETE FROM learnings WHERE {} OR {}",
                contains("content"),
                contains("evidence")
            ),
            params![text, esc],
        )?;
    }
    let cites = "EXISTS (SELECT 1 FROM json_each(CASE WHEN json_valid(learnings.source_sessions)
                     THEN learnings.source_sessions ELSE '[]' END) j
                 WHERE j.value IN (SELECT session_id FROM f_sessions))";
    c.execute_batch(&format!(
        "CREATE TEMP TABLE IF NOT EXISTS f_learn (id INTEGER PRIMARY KEY);
         DELETE FROM f_learn;
         INSERT INTO f_learn SELECT rowid FROM learnings WHERE {cites};"
    ))?;
    n += c.execute(
        "UPDATE learnings SET evidence = NULL, source_sessions = (SELECT json_group_array(j.value)
             FROM json_each(learnings.source_sessions) j
             WHERE j.value NOT IN (SELECT session_id FROM f_sessions))
         WHERE rowid IN (SELECT id FROM f_learn)",
        [],
    )?;
    c.execute(
        "DELETE FROM learnings WHERE rowid IN (SELECT id FROM f_learn)
           AND source_sessions = '[]' AND is_manual = 0",
        [],
    )?;
    c.execute(
        "DELETE FROM embeddings WHERE owner_kind = 'learning'
           AND owner_id NOT IN (SELECT id FROM learnings)",
        [],
    )?;
    Ok(n)
}

/// Makes deleted rows unreadable from the file: rewrites the database without its free space
/// (VACUUM; the schema's auto_vacuum is NONE, so an incremental vacuum would free nothing),
/// then copies the WAL into it and truncates the WAL, whose old frames held the rows. Fails
/// when another connection keeps the WAL from being emptied.
pub fn scrub(conn: &Connection) -> Result<()> {
    conn.execute_batch("VACUUM")?;
    let (busy, frames, copied): (i64, i64, i64) =
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })?;
    if busy != 0 || (frames >= 0 && copied < frames) {
        return Err(Error::Store(format!(
            "the WAL could not be emptied ({copied} of {frames} frames copied): another process holds the database; run mem forget again when it is done"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(c: &Connection, sql: &str) -> i64 {
        c.query_row(sql, [], |r| r.get(0)).unwrap()
    }

    #[test]
    fn a_forgotten_session_leaves_the_sources_of_learnings() {
        let dir = tempfile::tempdir().unwrap();
        let c = super::super::open(&dir.path().join("mem.db")).unwrap();
        c.execute_batch(
            "INSERT INTO sessions (session_id, project) VALUES ('a', '/p'), ('b', '/p');
             INSERT INTO learnings (content, category, confidence, source_sessions, evidence,
                                    is_manual, created_at, updated_at) VALUES
               ('only from a', 'gotcha', 0.5, '[\"a\"]', 'said in a', 0, 't', 't'),
               ('from a and b', 'gotcha', 0.59, '[\"a\",\"b\"]', 'said in a', 0, 't', 't'),
               ('written by hand in a', 'gotcha', 1.0, '[\"a\"]', NULL, 1, 't', 't'),
               ('from b', 'gotcha', 0.5, '[\"b\"]', 'said in b', 0, 't', 't'),
               ('no sources at all', 'gotcha', 0.5, '[]', NULL, 0, 't', 't');",
        )
        .unwrap();
        let dry = forget(&c, &Target::Session("a".into()), true).unwrap();
        let learn = |f: &Forgot| f.gone.iter().find(|g| g.kind == "learnings").unwrap().rows;
        assert_eq!(learn(&dry), 3);
        assert_eq!(count(&c, "SELECT count(*) FROM learnings"), 5);
        let done = forget(&c, &Target::Session("a".into()), false).unwrap();
        assert_eq!(learn(&done), 3);
        assert_eq!(
            count(
                &c,
                "SELECT count(*) FROM learnings WHERE evidence = 'said in a'"
            ),
            0,
            "a forgotten session's words leave the evidence too"
        );
        let left: Vec<(String, String)> = c
            .prepare("SELECT content, source_sessions FROM learnings ORDER BY id")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        let left: Vec<(&str, &str)> = left.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        assert_eq!(
            left,
            [
                ("from a and b", "[\"b\"]"),
                ("written by hand in a", "[]"),
                ("from b", "[\"b\"]"),
                ("no sources at all", "[]"),
            ]
        );
        assert_eq!(count(&c, "SELECT count(*) FROM sessions"), 1);
        // A learning whose text matches goes whole.
        forget(&c, &Target::Match("FROM B".into()), false).unwrap();
        assert_eq!(count(&c, "SELECT count(*) FROM learnings"), 3);
    }

    #[test]
    fn match_finds_text_as_json_stores_it() {
        let dir = tempfile::tempdir().unwrap();
        let c = super::super::open(&dir.path().join("mem.db")).unwrap();
        c.execute(
            "INSERT INTO pending_queue (session_id, event, payload, created_at)
             VALUES ('s', 'UserPromptSubmit', ?1, '2026-01-01T00:00:00.000Z')",
            [serde_json::json!({"prompt": "say \"hello\"\nworld"}).to_string()],
        )
        .unwrap();
        c.execute_batch(
            "INSERT INTO function_map (session_id, file_path, qualname, name, kind, signature,
                 docstring, line_start, line_end, body_hash, change, created_at) VALUES
               ('s2', 'a.py', 'f', 'f', 'function', 'def f()', 'Say \"hello\" and world', 1, 2, 'h', 'new', 't'),
               ('s2', 'a.py', 'g', 'g', 'function', 'def g()', 'Other', 3, 4, 'h', 'new', 't');",
        )
        .unwrap();
        let f = forget(&c, &Target::Match("\"hello\"\nworld".into()), false).unwrap();
        let rows = |f: &Forgot, k: &str| f.gone.iter().find(|g| g.kind == k).unwrap().rows;
        assert_eq!(rows(&f, "captures"), 1);
        assert_eq!(count(&c, "SELECT count(*) FROM pending_queue"), 0);
        // Not this one: its docstring says it on one line, not as the text was given.
        assert_eq!(rows(&f, "function_map"), 0);
        let f = forget(&c, &Target::Match("SAY \"hello\"".into()), false).unwrap();
        assert_eq!(rows(&f, "function_map"), 1);
        assert_eq!(count(&c, "SELECT count(*) FROM function_map"), 1);
    }
}
