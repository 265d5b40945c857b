//! `pending_queue`: every capture waits here until compression turns it into observations.

use std::collections::HashMap;
use std::rc::Rc;

use rustc_hash::FxHashMap;

use rusqlite::{Connection, OptionalExtension, params};

use crate::Result;
use crate::record::Capture;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Priority {
    High,
    Normal,
    Low,
}

impl Priority {
    pub fn as_str(self) -> &'static str {
        match self {
            Priority::High => "high",
            Priority::Normal => "normal",
            Priority::Low => "low",
        }
    }
}

/// One row to queue. `dedup_key` makes re-imports idempotent: a second insert with the same key
/// is ignored.
#[derive(Debug, Clone)]
pub struct NewCapture {
    pub session_id: String,
    pub project: Option<String>,
    pub event: String,
    pub tool_name: Option<String>,
    pub tool_use_id: Option<String>,
    pub agent_id: Option<String>,
    pub payload: String,
    pub files: Vec<String>,
    pub priority: Priority,
    pub origin: &'static str,
    pub dedup_key: Option<String>,
    pub created_at: String,
}

/// Inserts the capture; returns its id, or None when its dedup key was already stored.
pub fn insert(conn: &Connection, c: &NewCapture) -> Result<Option<i64>> {
    let n = conn.execute(
        "INSERT OR IGNORE INTO pending_queue
           (session_id, project, event, tool_name, tool_use_id, agent_id, payload, files, priority,
            origin, dedup_key, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
        params![
            c.session_id,
            c.project,
            c.event,
            c.tool_name,
            c.tool_use_id,
            c.agent_id,
            c.payload,
            super::json_list(&c.files),
            c.priority.as_str(),
            c.origin,
            c.dedup_key,
            c.created_at,
        ],
    )?;
    Ok((n == 1).then(|| conn.last_insert_rowid()))
}

/// Captures of a session not yet compressed (raw or being processed).
pub fn pending_count(conn: &Connection, session_id: &str) -> Result<i64> {
    Ok(conn.query_row(
        "SELECT count(*) FROM pending_queue WHERE session_id = ?1 AND status IN ('raw','processing')",
        [session_id],
        |r| r.get(0),
    )?)
}

/// Captures not yet compressed (raw or being processed) of `projects` (`None`: all).
pub fn waiting(conn: &Connection, projects: Option<&[String]>) -> Result<i64> {
    let mut st = conn.prepare(
        "SELECT project, count(*) FROM pending_queue WHERE status IN ('raw','processing') GROUP BY project",
    )?;
    let rows = st.query_map([], |r| {
        Ok((r.get::<_, Option<String>>(0)?, r.get::<_, i64>(1)?))
    })?;
    let mut n = 0;
    for row in rows {
        let (p, c) = row?;
        if projects.is_none_or(|ps| p.is_some_and(|p| ps.contains(&p))) {
            n += c;
        }
    }
    Ok(n)
}

/// Whether a row with this dedup key exists (used to report re-import skips).
pub fn has_key(conn: &Connection, key: &str) -> Result<bool> {
    Ok(conn
        .query_row(
            "SELECT 1 FROM pending_queue WHERE dedup_key = ?1",
            [key],
            |_| Ok(()),
        )
        .optional()?
        .is_some())
}

/// Is process `pid` alive on this machine?
fn alive(pid: i64) -> bool {
    if pid <= 0 {
        return false;
    }
    // SAFETY: kill with signal 0 only checks that the process exists.
    let r = unsafe { libc::kill(pid as libc::pid_t, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// Puts back to `raw` the rows a run left in `processing`: its process is gone, or it claimed
/// them more than `stale_after` ago. Returns how many.
pub fn reclaim_stale(conn: &Connection, stale_after: chrono::Duration) -> Result<usize> {
    let cutoff =
        (chrono::Utc::now() - stale_after).to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let mut stmt = conn.prepare(
        "SELECT DISTINCT coalesce(claimed_by, 0), coalesce(claimed_at, '') FROM pending_queue WHERE status = 'processing'",
    )?;
    let claims: Vec<(i64, String)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let mut n = 0;
    for (pid, at) in claims {
        if !alive(pid) || at < cutoff {
            n += conn.execute(
                "UPDATE pending_queue SET status = 'raw', claimed_by = NULL, claimed_at = NULL
                 WHERE status = 'processing' AND coalesce(claimed_by, 0) = ?1 AND coalesce(claimed_at, '') = ?2",
                params![pid, at],
            )?;
        }
    }
    Ok(n)
}

/// Which raw rows are due (`?2` = now, `?4` = the time before which an open turn counts as
/// abandoned): past their retry time, and part of a closed turn, i.e. not after the session's
/// last Stop or PreCompact, unless the session ended, the row is a note, or it is older than the
/// grace time. A turn still in progress is left for the run its Stop triggers; a compaction
/// makes what came before it due, so the early work is compressed before it is summarised away.
/// The last turn's end is read from the partial index `pending_turn_ends`, whose WHERE term
/// the subquery repeats to the letter (else every row of the session is read, for every row).
const DUE: &str = "q.status = 'raw' AND (q.next_attempt_at IS NULL OR q.next_attempt_at <= ?2)
    AND (q.event = 'Note' OR q.created_at < ?4
         OR q.created_at <= (SELECT max(b.created_at) FROM pending_queue b
                             WHERE b.session_id = q.session_id AND b.event IN ('Stop', 'PreCompact'))
         OR EXISTS (SELECT 1 FROM sessions s WHERE s.session_id = q.session_id AND s.status = 'ended'))";

fn grace_cutoff(now: &str, open_turn: chrono::Duration) -> String {
    let t = chrono::DateTime::parse_from_rfc3339(now)
        .map(|t| t.with_timezone(&chrono::Utc))
        .unwrap_or_else(|_| chrono::Utc::now());
    (t - open_turn).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn claim_sql() -> String {
    format!(
        "UPDATE pending_queue AS q SET status = 'processing', claimed_by = ?1, claimed_at = ?2
         WHERE {DUE} AND q.session_id IN (
             SELECT q.session_id FROM pending_queue q WHERE {DUE}
             GROUP BY q.session_id ORDER BY max(q.created_at) DESC LIMIT ?3)
         RETURNING {CAPTURE_COLS}"
    )
}

/// Atomically claims (as capture records) the due rows of up to `sessions` sessions (whole
/// sessions, so a turn is not split between runs; the latest sessions first, so today's work
/// comes before an imported history) for process `pid`. Run inside an IMMEDIATE transaction: two runs never
/// take the same row.
pub fn claim(
    conn: &Connection,
    pid: i64,
    sessions: usize,
    now: &str,
    open_turn: chrono::Duration,
) -> Result<Vec<Capture>> {
    let mut stmt = conn.prepare(&claim_sql())?;
    let mut rows: Vec<Capture> = stmt
        .query_map(
            params![
                pid,
                now,
                sessions.max(1) as i64,
                grace_cutoff(now, open_turn)
            ],
            capture_from_row,
        )?
        .collect::<rusqlite::Result<_>>()?;
    rows.sort_by(|a, b| {
        (&a.session_id, &a.created_at, a.id).cmp(&(&b.session_id, &b.created_at, b.id))
    });
    Ok(rows)
}

/// Puts rows a run claimed but did not reach (it stopped at its budget) back in the queue as
/// they were, for the next run.
pub fn release(conn: &Connection, ids: &[i64]) -> Result<()> {
    let mut stmt = conn.prepare(
        "UPDATE pending_queue SET status = 'raw', claimed_by = NULL, claimed_at = NULL
         WHERE id = ?1 AND status = 'processing'",
    )?;
    for id in ids {
        stmt.execute([id])?;
    }
    Ok(())
}

fn has_work_sql() -> String {
    format!("SELECT 1 FROM pending_queue q WHERE {DUE} AND ?1 = ?1 AND ?3 = ?3 LIMIT 1")
}

/// Whether any row is due for compression now.
pub fn has_work(conn: &Connection, now: &str, open_turn: chrono::Duration) -> Result<bool> {
    let sql = has_work_sql();
    Ok(conn
        .query_row(
            &sql,
            params![0, now, 0, grace_cutoff(now, open_turn)],
            |_| Ok(()),
        )
        .optional()?
        .is_some())
}

/// The prompt that opened the turn a capture at `at` belongs to.
pub fn prompt_before(conn: &Connection, session_id: &str, at: &str) -> Result<Option<String>> {
    let payload: Option<String> = conn
        .query_row(
            "SELECT payload FROM pending_queue WHERE session_id = ?1 AND event = 'UserPromptSubmit'
               AND created_at <= ?2 ORDER BY created_at DESC, id DESC LIMIT 1",
            params![session_id, at],
            |r| r.get(0),
        )
        .optional()?;
    Ok(payload
        .and_then(|p| serde_json::from_str::<serde_json::Value>(&p).ok())
        .and_then(|v| v.get("prompt").and_then(|p| p.as_str()).map(str::to_string)))
}

/// Marks rows done (or error, with the reason), optionally with a documented skip reason.
pub fn finish(
    conn: &Connection,
    ids: &[i64],
    status: &str,
    error: Option<&str>,
    skip_reason: Option<&str>,
) -> Result<()> {
    let mut stmt = conn.prepare(
        "UPDATE pending_queue SET status = ?2, last_error = coalesce(?3, last_error),
                skip_reason = ?4, claimed_by = NULL, claimed_at = NULL WHERE id = ?1",
    )?;
    for id in ids {
        stmt.execute(params![id, status, error, skip_reason])?;
    }
    Ok(())
}

/// Records a failed attempt on rows: attempts + 1, when the next try is due, and why.
pub fn record_attempt(conn: &Connection, ids: &[i64], next_at: &str, error: &str) -> Result<()> {
    let mut stmt = conn.prepare(
        "UPDATE pending_queue SET attempts = attempts + 1, next_attempt_at = ?2, last_error = ?3 WHERE id = ?1",
    )?;
    for id in ids {
        stmt.execute(params![id, next_at, error])?;
    }
    Ok(())
}

/// Drops the raw tool response from processed tool captures created before `before` (its
/// observation holds what was worth keeping; a Read of a `.env` file need not stay forever).
/// The payload keeps its input and says when the response went. Returns the rows changed.
pub fn drop_raw_responses(conn: &Connection, before: &str, now: &str) -> Result<usize> {
    Ok(conn.execute(
        "UPDATE pending_queue
            SET payload = json_set(json_remove(payload, '$.tool_response'), '$.tool_response_dropped_at', ?2)
          WHERE status = 'done' AND created_at < ?1
            AND event IN ('PostToolUse', 'PostToolUseFailure')
            AND json_type(payload, '$.tool_response') IS NOT NULL",
        params![before, now],
    )?)
}

/// The columns [`capture_from_row`] reads.
const CAPTURE_COLS: &str = "id, session_id, project, event, tool_name, tool_use_id, files,
    priority, status, payload, created_at";

/// A queue row selected with `CAPTURE_COLS` as its capture record.
fn capture_from_row(r: &rusqlite::Row) -> rusqlite::Result<Capture> {
    Ok(Capture {
        id: r.get(0)?,
        session_id: r.get(1)?,
        project: r.get(2)?,
        event: r.get(3)?,
        tool_name: r.get(4)?,
        tool_use_id: r.get(5)?,
        files: super::parse_list(r.get(6)?),
        priority: r.get(7)?,
        status: r.get(8)?,
        payload: serde_json::from_str(&r.get::<_, String>(9)?).unwrap_or_default(),
        created_at: r.get(10)?,
    })
}

/// One queue row as its capture record.
pub fn capture(conn: &Connection, id: i64) -> Result<Capture> {
    Ok(conn.query_row(
        &format!("SELECT {CAPTURE_COLS} FROM pending_queue WHERE id = ?1"),
        [id],
        capture_from_row,
    )?)
}

/// The prompts and tool calls of every session as capture records, by session and time: the
/// material of the synthetic corpora of tests and benches.
pub fn turns(conn: &Connection) -> Result<Vec<Capture>> {
    let mut st = conn.prepare(&format!(
        "SELECT {CAPTURE_COLS} FROM pending_queue
         WHERE event IN ('UserPromptSubmit', 'PostToolUse', 'PostToolUseFailure')
         ORDER BY session_id, created_at, id"
    ))?;
    let rows = st.query_map([], capture_from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The prompts of a session's turns, oldest first (payloads that are not JSON are skipped).
pub fn prompts(conn: &Connection, session_id: &str) -> Result<Vec<String>> {
    prompts_of(conn, session_id, false)
}

/// The prompts the user typed in a session, oldest first: not a subagent's task (its main agent
/// wrote that), so nothing an assistant wrote passes for the user's words.
pub fn typed_prompts(conn: &Connection, session_id: &str) -> Result<Vec<String>> {
    prompts_of(conn, session_id, true)
}

fn prompts_of(conn: &Connection, session_id: &str, typed_only: bool) -> Result<Vec<String>> {
    Ok(conn
        .prepare(
            "SELECT payload FROM pending_queue WHERE session_id = ?1 AND event = 'UserPromptSubmit'
               AND (NOT ?2 OR agent_id IS NULL)
             ORDER BY created_at, id",
        )?
        .query_map(rusqlite::params![session_id, typed_only], |r| {
            r.get::<_, String>(0)
        })?
        .filter_map(|p| p.ok())
        .filter_map(|p| serde_json::from_str::<serde_json::Value>(&p).ok())
        .filter_map(|v| v["prompt"].as_str().map(str::to_string))
        .collect())
}

/// Tools whose successful calls change a file.
pub const EDIT_TOOLS: &[&str] = &["Write", "Edit", "MultiEdit", "NotebookEdit"];

/// `EDIT_TOOLS` as quoted SQL literals ("'Write', 'Edit', …").
pub(super) fn edit_tools_sql() -> String {
    EDIT_TOOLS
        .iter()
        .map(|t| format!("'{t}'"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One successful Read or edit of files, with the observation it went into (if compressed).
#[derive(Debug, Clone)]
pub struct FileCall {
    /// The queue row.
    pub id: i64,
    /// Shared by the calls of a session (a session's calls are thousands, its id one).
    pub session_id: Rc<str>,
    pub tool: Rc<str>,
    /// Shared by the calls that name the same list.
    pub files: Rc<[String]>,
    pub at: String,
    /// The call's input, when asked for (edits only).
    pub input: Option<serde_json::Value>,
}

impl FileCall {
    pub fn edits(&self) -> bool {
        EDIT_TOOLS.contains(&&*self.tool)
    }
}

/// The successful Read and edit calls of `sessions`, newest first (at most `limit`); with
/// `edits_only`, only edits, with their input. By session, so a large project is not read whole.
pub fn file_calls(
    conn: &Connection,
    sessions: &[String],
    edits_only: bool,
    limit: usize,
) -> Result<Vec<FileCall>> {
    if sessions.is_empty() {
        return Ok(vec![]);
    }
    let marks = super::marks(sessions.len());
    let tools = if edits_only {
        edit_tools_sql()
    } else {
        format!("'Read', {}", edit_tools_sql())
    };
    // Read from the covering index unordered and sorted here: SQLite's sorter (a temporary
    // b-tree) took 3 ms for 1,700 calls, the read 0.6. The calls of a few sessions are few
    // enough to hold.
    let mut st = conn.prepare(&format!(
        "SELECT q.session_id, q.tool_name, q.files, q.created_at, q.id
           FROM pending_queue q
          WHERE q.session_id IN ({marks}) AND q.event = 'PostToolUse' AND q.tool_name IN ({tools})"
    ))?;
    // A session's calls name the same few files over and over: each list is parsed once, and
    // each list, session and tool is one allocation that the calls share.
    let mut lists: FxHashMap<String, Rc<[String]>> = FxHashMap::default();
    let mut names: FxHashMap<String, Rc<str>> = FxHashMap::default();
    let mut shared = |s: &str| -> Rc<str> {
        if let Some(n) = names.get(s) {
            return n.clone();
        }
        let n: Rc<str> = s.into();
        names.insert(s.to_string(), n.clone());
        n
    };
    let mut calls: Vec<FileCall> = Vec::new();
    let mut rows = st.query(rusqlite::params_from_iter(sessions))?;
    while let Some(r) = rows.next()? {
        let list = str_at(r, 2)?;
        let files = match lists.get(list) {
            Some(f) => f.clone(),
            None => {
                let f: Rc<[String]> = super::parse_list(Some(list.to_string())).into();
                lists.insert(list.to_string(), f.clone());
                f
            }
        };
        calls.push(FileCall {
            id: r.get(4)?,
            session_id: shared(str_at(r, 0)?),
            tool: shared(str_at(r, 1)?),
            files,
            at: r.get(3)?,
            input: None,
        });
    }
    calls.sort_unstable_by(|a, b| b.at.cmp(&a.at).then(b.id.cmp(&a.id)));
    calls.truncate(limit);
    if edits_only {
        // The edits' inputs (from the payload, which the index does not hold) only for the
        // calls kept.
        let ids: Vec<i64> = calls.iter().map(|c| c.id).collect();
        let inputs: HashMap<i64, serde_json::Value> = super::by_chunks(&ids, 500, |list| {
            let mut st = conn.prepare(&format!(
                "SELECT id, json_extract(payload, '$.tool_input') FROM pending_queue
                  WHERE id IN ({list})"
            ))?;
            let rows = st.query_map([], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, Option<String>>(1)?))
            })?;
            Ok(rows
                .filter_map(|r| match r {
                    Ok((id, Some(i))) => Some(Ok((id, serde_json::from_str(&i).ok()?))),
                    Ok(_) => None,
                    Err(e) => Some(Err(e)),
                })
                .collect::<rusqlite::Result<Vec<_>>>()?)
        })?
        .into_iter()
        .collect();
        for c in &mut calls {
            c.input = inputs.get(&c.id).cloned();
        }
    }
    Ok(calls)
}

/// How often one file was edited over some sessions.
#[derive(Debug, Clone, Default)]
pub struct Edited {
    pub file: String,
    /// Sessions that edited it.
    pub sessions: usize,
    pub edits: usize,
    /// The newest edit: when, and its queue row.
    pub last_at: String,
    pub last_id: i64,
}

/// A text column of a row, borrowed (NULL: empty).
fn str_at<'r>(r: &'r rusqlite::Row<'_>, i: usize) -> rusqlite::Result<&'r str> {
    Ok(r.get_ref(i)?
        .as_str_or_null()
        .map_err(rusqlite::Error::from)?
        .unwrap_or_default())
}

/// How often each file was edited across `sessions`. One read of the covering index, unordered
/// and counted here: SQLite's GROUP BY sorted every edit of the sessions in a temporary b-tree
/// first, most of the SessionStart hook's time at 100k observations. A file listed with others
/// in one call counts apart from its calls alone (rare: a call edits one file).
pub fn edit_history(conn: &Connection, sessions: &[String]) -> Result<Vec<Edited>> {
    if sessions.is_empty() {
        return Ok(vec![]);
    }
    let marks = super::marks(sessions.len());
    let mut st = conn.prepare(&format!(
        "SELECT q.files, q.session_id, q.created_at, q.id
           FROM pending_queue q
          WHERE q.session_id IN ({marks}) AND q.event = 'PostToolUse'
            AND q.tool_name IN ({tools})",
        tools = edit_tools_sql()
    ))?;
    // By the stored list as written, parsed once per distinct list; the sessions that wrote it
    // as bits by their place in `sessions`. Rows are borrowed, not copied: a few thousand of
    // them at a million observations, and their strings were most of the time spent here.
    let place: FxHashMap<&str, usize> = sessions
        .iter()
        .enumerate()
        .map(|(i, s)| (s.as_str(), i))
        .collect();
    let words = sessions.len().div_ceil(64);
    let mut by_list: FxHashMap<String, (Vec<u64>, Edited)> = FxHashMap::default();
    let mut rows = st.query(rusqlite::params_from_iter(sessions))?;
    while let Some(r) = rows.next()? {
        let list = str_at(r, 0)?;
        if !by_list.contains_key(list) {
            by_list.insert(list.to_string(), (vec![0; words], Edited::default()));
        }
        let (seen, e) = by_list.get_mut(list).expect("inserted above");
        if let Some(&i) = place.get(str_at(r, 1)?) {
            seen[i / 64] |= 1 << (i % 64);
        }
        e.edits += 1;
        let id = r.get::<_, i64>(3)?;
        let at = str_at(r, 2)?;
        if (at, id) > (e.last_at.as_str(), e.last_id) {
            e.last_at = at.to_string();
            e.last_id = id;
        }
    }
    let mut by_file: FxHashMap<String, Edited> = FxHashMap::default();
    for (list, (seen, e)) in by_list {
        let seen = seen.iter().map(|w| w.count_ones() as usize).sum::<usize>();
        for f in super::parse_list(Some(list)) {
            let m = by_file.entry(f.clone()).or_insert_with(|| Edited {
                file: f,
                ..Edited::default()
            });
            m.sessions += seen;
            m.edits += e.edits;
            if m.last_at < e.last_at {
                m.last_at = e.last_at.clone();
                m.last_id = e.last_id;
            }
        }
    }
    Ok(by_file.into_values().collect())
}

/// The newest plan among `sessions`: the text of the last plan approved (ExitPlanMode) or
/// written to a plan file (`~/.claude/plans/*.md`).
pub fn latest_plan(conn: &Connection, sessions: &[String]) -> Result<Option<String>> {
    if sessions.is_empty() {
        return Ok(None);
    }
    let marks = super::marks(sessions.len());
    let mut st = conn.prepare(&format!(
        "SELECT coalesce(json_extract(q.payload, '$.tool_input.plan'),
                         json_extract(q.payload, '$.tool_input.content'))
           FROM pending_queue q
          WHERE q.session_id IN ({marks}) AND q.event = 'PostToolUse'
            AND (q.tool_name = 'ExitPlanMode'
                 OR (q.tool_name = 'Write' AND q.files LIKE '%.claude%plans%'))
          ORDER BY q.created_at DESC, q.id DESC LIMIT 1"
    ))?;
    let plan = st
        .query_row(rusqlite::params_from_iter(sessions), |r| {
            r.get::<_, Option<String>>(0)
        })
        .optional()?;
    Ok(plan.flatten())
}

/// The title of the observation made from each of these queue rows that has one. Asked for
/// the few files a block shows, not with every call: a lookup per call was a third of
/// SessionStart's time.
pub fn observation_titles(conn: &Connection, ids: &[i64]) -> Result<HashMap<i64, String>> {
    super::by_chunks(ids, 500, |list| {
        let mut st = conn.prepare(&format!(
            "SELECT s.queue_id, o.title FROM observation_sources s
               JOIN observations o ON o.id = s.observation_id
              WHERE s.queue_id IN ({list}) ORDER BY s.queue_id, o.id"
        ))?;
        let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        rows.collect::<rusqlite::Result<Vec<(i64, String)>>>()
            .map_err(Into::into)
    })
    .map(|pairs| {
        let mut out = HashMap::new();
        for (id, title) in pairs {
            out.entry(id).or_insert(title);
        }
        out
    })
}

/// Captures in error that no observation came from: their compression left nothing.
const ORPHAN_ERRORS: &str = "FROM pending_queue q WHERE q.status = 'error'
     AND NOT EXISTS (SELECT 1 FROM observation_sources s WHERE s.queue_id = q.id)";

/// How many captures are in error with no observation made from them.
pub fn orphan_errors(conn: &Connection) -> Result<i64> {
    Ok(
        conn.query_row(&format!("SELECT count(*) {ORPHAN_ERRORS}"), [], |r| {
            r.get(0)
        })?,
    )
}

/// Queues the captures `orphan_errors` counts again, as if never tried. Returns how many.
pub fn requeue_orphan_errors(conn: &Connection) -> Result<usize> {
    Ok(conn.execute(
        &format!(
            "UPDATE pending_queue SET status = 'raw', attempts = 0, next_attempt_at = NULL
             WHERE id IN (SELECT q.id {ORPHAN_ERRORS})"
        ),
        [],
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A long session (an afternoon of tool calls) whose last turn is still open: the claim
    /// takes what its Stop closed and leaves the rest, and finds that Stop through the index
    /// of turn ends, not by reading every row of the session for every row.
    #[test]
    fn a_claim_takes_the_closed_turns_of_a_long_session_by_the_index_of_turn_ends() {
        let dir = tempfile::tempdir().unwrap();
        let c = super::super::open(&dir.path().join("mem.db")).unwrap();
        let now = "2026-12-04T12:00:00.000Z";
        let row = |i: i64, event: &str| {
            c.execute(
                "INSERT INTO pending_queue (session_id, event, tool_name, payload, created_at)
                 VALUES ('long', ?1, 'Bash', '{}', ?2)",
                params![
                    event,
                    format!("2026-12-04T11:{:02}:{:02}.000Z", i / 60, i % 60)
                ],
            )
            .unwrap();
        };
        for i in 0..3000 {
            row(i, if i == 1999 { "Stop" } else { "PostToolUse" });
        }
        for sql in [claim_sql(), has_work_sql()] {
            let plan: Vec<String> = c
                .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
                .unwrap()
                .query_map(params![0, now, 1, "2026-12-04T11:00:00.000Z"], |r| {
                    r.get::<_, String>(3)
                })
                .unwrap()
                .collect::<rusqlite::Result<_>>()
                .unwrap();
            assert!(
                plan.iter().any(|p| p.contains("pending_turn_ends")),
                "{plan:#?}"
            );
        }
        let claimed = claim(&c, 7, 1, now, chrono::Duration::hours(1)).unwrap();
        assert_eq!(claimed.len(), 2000);
        assert!(
            claimed
                .iter()
                .all(|r| r.created_at.as_str() <= "2026-12-04T11:33:19.000Z")
        );
    }
}
