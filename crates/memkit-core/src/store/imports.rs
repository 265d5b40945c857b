//! `transcript_files`: the transcripts `mem-capture --transcripts` has imported, so that a
//! rerun (after an interruption, or a daily import of `~/.claude/projects`) reads only the
//! files that are new or changed. A file's row is written in the transaction that stores its
//! events: a file is either wholly imported and recorded, or neither.

use std::collections::HashMap;

use rusqlite::{Connection, params};

use crate::Result;

/// What identifies a version of a file: a changed size or modification time is a new version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp {
    pub path: String,
    pub size: i64,
    pub mtime_ns: i64,
}

/// The stamps recorded for `paths` (those with none are left out).
pub fn stamps(conn: &Connection, paths: &[&str]) -> Result<HashMap<String, Stamp>> {
    let mut st =
        conn.prepare_cached("SELECT path, size, mtime_ns FROM transcript_files WHERE path = ?1")?;
    let mut out = HashMap::new();
    for p in paths {
        let mut rows = st.query([p])?;
        if let Some(r) = rows.next()? {
            let s = Stamp {
                path: r.get(0)?,
                size: r.get(1)?,
                mtime_ns: r.get(2)?,
            };
            out.insert(s.path.clone(), s);
        }
    }
    Ok(out)
}

/// A file's summary lines whose titles are not set yet.
#[derive(Debug, Clone)]
pub struct PendingTitles {
    pub path: String,
    /// The file's session, and whether it had events (a summary whose leaf is found nowhere
    /// titles its own file's session only then).
    pub session_id: Option<String>,
    pub events: usize,
    /// (summary text, leafUuid).
    pub summaries: Vec<(String, String)>,
}

/// Records `stamp` as imported, with its summaries pending until [`titles_done`].
pub fn record(conn: &Connection, stamp: &Stamp, pending: &PendingTitles, at: &str) -> Result<()> {
    let summaries = (!pending.summaries.is_empty())
        .then(|| serde_json::to_string(&pending.summaries).expect("strings"));
    conn.prepare_cached(
        "INSERT INTO transcript_files (path, size, mtime_ns, session_id, events, summaries, imported_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ON CONFLICT(path) DO UPDATE SET size = excluded.size, mtime_ns = excluded.mtime_ns,
            session_id = excluded.session_id, events = excluded.events,
            summaries = excluded.summaries, imported_at = excluded.imported_at",
    )?
    .execute(params![
        stamp.path,
        stamp.size,
        stamp.mtime_ns,
        pending.session_id,
        pending.events as i64,
        summaries,
        at
    ])?;
    Ok(())
}

/// Every imported file whose summaries still wait for their titles, whichever run read it.
pub fn pending_titles(conn: &Connection) -> Result<Vec<PendingTitles>> {
    let mut st = conn.prepare(
        "SELECT path, session_id, events, summaries FROM transcript_files
         WHERE summaries IS NOT NULL ORDER BY path",
    )?;
    let rows = st.query_map([], |r| {
        let text: String = r.get(3)?;
        Ok(PendingTitles {
            path: r.get(0)?,
            session_id: r.get(1)?,
            events: r.get::<_, i64>(2)? as usize,
            summaries: serde_json::from_str(&text).unwrap_or_default(),
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The session of an imported file.
pub fn session_of(conn: &Connection, path: &str) -> Result<Option<String>> {
    use rusqlite::OptionalExtension;
    Ok(conn
        .query_row(
            "SELECT session_id FROM transcript_files WHERE path = ?1",
            [path],
            |r| r.get(0),
        )
        .optional()?
        .flatten())
}

/// The file's summaries are dealt with (titled, or found to name no known session).
pub fn titles_done(conn: &Connection, path: &str) -> Result<()> {
    conn.prepare_cached("UPDATE transcript_files SET summaries = NULL WHERE path = ?1")?
        .execute([path])?;
    Ok(())
}
