//! The one SQLite file every tool shares (docs/ARCHITECTURE.md, "Storage").

mod schema;

pub mod backup;
pub mod embeddings;
pub mod events;
pub mod failures;
pub mod filters;
pub mod forget;
pub mod functions;
pub mod imports;
pub mod learnings;
pub mod observations;
pub mod projects;
pub mod queue;
pub mod recall;
pub mod redaction;
pub mod report;
pub mod retention;
pub mod sessions;
pub mod stats;
pub mod sync;
pub mod words;

use std::cell::Cell;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::{Connection, OpenFlags, TransactionBehavior};

use crate::home::Home;
use crate::{Error, Result};

pub use schema::{MIGRATIONS, owner_of_key, vector_key};

/// How long a connection waits on a lock held by another process before giving up.
pub const BUSY_TIMEOUT: Duration = Duration::from_millis(5000);

/// Creates the data home (0700) and its logs/ directory if missing. A home that others can
/// read or enter (made by an older memkit, or by hand) is made the user's only (see
/// [`tighten_home`]).
pub fn ensure_home(home: &Path) -> Result<()> {
    if let Ok(m) = std::fs::metadata(home)
        && m.permissions().mode() & 0o077 != 0
    {
        tighten_home(home, &m);
    }
    for dir in [home.to_path_buf(), Home::new(home).logs()] {
        if !dir.exists() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&dir)
                .map_err(|e| Error::Store(format!("cannot create {}: {e}", dir.display())))?;
        }
    }
    Ok(())
}

/// Makes a data home that others can read or enter the user's only, with what memkit keeps
/// in it. A shared directory (sticky, like /tmp) or another user's is left as it is.
fn tighten_home(home: &Path, m: &std::fs::Metadata) {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid has no preconditions and cannot fail.
    if m.mode() & 0o1000 != 0 || m.uid() != unsafe { libc::geteuid() } {
        return;
    }
    let _ = std::fs::set_permissions(home, std::fs::Permissions::from_mode(m.mode() & 0o7700));
    for e in Home::ENTRIES {
        tighten(&home.join(e));
    }
}

/// Takes the group and other permission bits off `path` and, for a directory, everything
/// under it (symbolic links are left alone). Best effort: what cannot be changed is skipped.
pub fn tighten(path: &Path) {
    let Ok(m) = std::fs::symlink_metadata(path) else {
        return;
    };
    if m.file_type().is_symlink() {
        return;
    }
    let mode = m.permissions().mode();
    if mode & 0o077 != 0 {
        let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode & 0o7700));
    }
    if m.is_dir()
        && let Ok(entries) = std::fs::read_dir(path)
    {
        for e in entries.flatten() {
            tighten(&e.path());
        }
    }
}

/// Opens (creating and migrating when needed) the database at `path`, emptying a large WAL.
pub fn open(path: &Path) -> Result<Connection> {
    let conn = open_with(path, Wait::For(BUSY_TIMEOUT))?;
    if wal_is_large(&conn) {
        truncate_wal(&conn);
    }
    Ok(conn)
}

/// How long a connection waits on locks other processes hold.
#[derive(Debug, Clone, Copy)]
pub enum Wait {
    /// Each statement waits at most this long (the tools).
    For(Duration),
    /// Every wait of the connection, opening included, ends at this instant (the hooks: a
    /// process holding the database with `locking_mode=EXCLUSIVE` must not keep Claude Code
    /// waiting statement after statement). The deadline belongs to the opening thread.
    Until(Instant),
}

impl Wait {
    fn deadline(self) -> Instant {
        match self {
            Wait::For(d) => Instant::now() + d,
            Wait::Until(t) => t,
        }
    }
}

thread_local! {
    static DEADLINE: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// SQLite's busy handler for [`Wait::Until`]: retry every few milliseconds until the deadline.
fn until_deadline(_tries: i32) -> bool {
    let left = DEADLINE
        .with(Cell::get)
        .map(|d| d.saturating_duration_since(Instant::now()))
        .unwrap_or_default();
    if left.is_zero() {
        return false;
    }
    std::thread::sleep(left.min(Duration::from_millis(2)));
    true
}

/// Opens like [`open`], but every lock wait (opening and migrating included) ends at
/// `deadline`, and a large WAL is left as it is: a hook hands that to a background
/// `mem-capture --checkpoint` (see [`wal_is_large`]).
pub fn open_until(path: &Path, deadline: Instant) -> Result<Connection> {
    open_with(path, Wait::Until(deadline))
}

/// Like [`open`], with the lock wait chosen by the caller and a large WAL left as it is.
pub fn open_with(path: &Path, wait: Wait) -> Result<Connection> {
    if let Some(dir) = path.parent() {
        ensure_home(dir)?;
    }
    let existed = path.exists();
    let mut conn = Connection::open(path)
        .map_err(|e| Error::Store(format!("cannot open {}: {e}", path.display())))?;
    if !existed {
        let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
    }
    configure(&mut conn, wait)?;
    migrate(&conn)?;
    Ok(conn)
}

/// [`open_existing`] when the database exists; `None` when it does not (nothing stored yet).
pub fn open_if_present(path: &Path) -> Result<Option<Connection>> {
    open_if_present_with(path, Wait::For(BUSY_TIMEOUT))
}

/// [`open_if_present`] with the caller's lock wait (a hook's deadline).
pub fn open_if_present_with(path: &Path, wait: Wait) -> Result<Option<Connection>> {
    if !path.exists() {
        return Ok(None);
    }
    open_existing_with(path, wait).map(Some)
}

/// Opens the database when it exists, migrating it only when it is behind (a searcher's open:
/// no write when the schema is current).
pub fn open_current(path: &Path) -> Result<Option<Connection>> {
    let Some(conn) = open_if_present(path)? else {
        return Ok(None);
    };
    if user_version(&conn)? < MIGRATIONS.len() {
        drop(conn);
        return Ok(Some(open(path)?));
    }
    Ok(Some(conn))
}

/// Opens an existing database without creating or migrating it (readers such as reports).
pub fn open_existing(path: &Path) -> Result<Connection> {
    open_existing_with(path, Wait::For(BUSY_TIMEOUT))
}

fn open_existing_with(path: &Path, wait: Wait) -> Result<Connection> {
    let mut conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| Error::Store(format!("cannot open {}: {e}", path.display())))?;
    configure(&mut conn, wait)?;
    check_version(&conn)?;
    Ok(conn)
}

fn configure(conn: &mut Connection, wait: Wait) -> Result<()> {
    match wait {
        Wait::For(d) => conn.busy_timeout(d)?,
        Wait::Until(t) => {
            DEADLINE.with(|d| d.set(Some(t)));
            conn.busy_handler(Some(until_deadline))?;
        }
    }
    // Switching to WAL needs a brief exclusive lock that the busy handler does not cover, so a
    // crowd of fresh processes retries it instead of failing, until the wait is over.
    let deadline = wait.deadline();
    let mut tries = 0u64;
    loop {
        match conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0)) {
            Ok(_) => break,
            Err(e) if is_busy(&e) && Instant::now() < deadline => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(2 + tries % 7));
            }
            Err(e) if is_busy(&e) => {
                return Err(Error::Store(format!(
                    "database is locked by another process (gave up after {tries} tries): {e}"
                )));
            }
            Err(e) => return Err(e.into()),
        }
    }
    conn.execute_batch("PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;")?;
    // Every tool is a short-lived process, usually the only connection: without this each exit
    // would checkpoint the whole WAL (page writes + fsyncs), which is most of a hook's cost.
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
        true,
    )?;
    Ok(())
}

/// WAL size past which it is checkpointed and emptied.
pub const WAL_TRUNCATE_BYTES: u64 = 1 << 20;

/// Whether the WAL has outgrown [`WAL_TRUNCATE_BYTES`]. It must be kept short by hand: the
/// first connection of a process rebuilds the WAL index by reading the whole WAL, and that
/// rebuild forgets what was already checkpointed, so SQLite's auto-checkpoint never rewinds
/// the file between processes. Left alone the WAL grows without bound and every process reads
/// all of it (a hook took 20 ms after 400 captures).
pub fn wal_is_large(conn: &Connection) -> bool {
    conn.path()
        .filter(|p| !p.is_empty())
        .and_then(|db| std::fs::metadata(format!("{db}-wal")).ok())
        .is_some_and(|m| m.len() > WAL_TRUNCATE_BYTES)
}

/// Checkpoints the whole WAL into the database and truncates it (two fsyncs). It does not
/// wait: while another process reads or writes it degrades to a partial checkpoint.
pub fn truncate_wal(conn: &Connection) {
    // The connection's own wait is put back afterwards: the stages that follow need it.
    let Ok(ms) = conn.query_row("PRAGMA busy_timeout", [], |r| r.get::<_, i64>(0)) else {
        return;
    };
    if conn.busy_timeout(Duration::ZERO).is_ok() {
        let _ = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
    }
    let _ = conn.busy_timeout(Duration::from_millis(ms.max(0) as u64));
}

pub fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

pub fn user_version(conn: &Connection) -> Result<usize> {
    Ok(conn.query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0))? as usize)
}

fn check_version(conn: &Connection) -> Result<usize> {
    let v = user_version(conn)?;
    if v > MIGRATIONS.len() {
        return Err(Error::Store(format!(
            "database schema version {v} is newer than this memkit knows ({}); upgrade memkit, the database was not modified",
            MIGRATIONS.len()
        )));
    }
    Ok(v)
}

/// Applies the pending migrations, each in its own immediate transaction, re-checking the
/// version under the lock so concurrent first runs apply each step once.
pub fn migrate(conn: &Connection) -> Result<()> {
    if check_version(conn)? == MIGRATIONS.len() {
        return Ok(());
    }
    loop {
        let tx = begin_write(conn)?;
        let v = check_version(&tx)?;
        if v == MIGRATIONS.len() {
            return Ok(());
        }
        tx.execute_batch(MIGRATIONS[v])
            .map_err(|e| Error::Store(format!("migration {} failed: {e}", v + 1)))?;
        tx.pragma_update(None, "user_version", (v + 1) as i64)?;
        tx.commit()?;
    }
}

/// Runs `f` in an IMMEDIATE transaction (the write lock is taken up front, so a writer never
/// fails halfway on an upgrade deadlock) and commits; an error rolls it back. It borrows the
/// connection shared, so a caller may hold other borrows of it (statements, a spool).
pub fn write_tx<T>(conn: &Connection, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
    let tx = begin_write(conn)?;
    let out = f(&tx)?;
    tx.commit()?;
    Ok(out)
}

/// Starts the IMMEDIATE transaction of [`write_tx`] for a caller that commits it itself
/// (dropping it uncommitted rolls it back).
pub fn begin_write(conn: &Connection) -> Result<rusqlite::Transaction<'_>> {
    Ok(rusqlite::Transaction::new_unchecked(
        conn,
        TransactionBehavior::Immediate,
    )?)
}

/// A checkpoint that copies what it can without waiting for readers or writers (a session's
/// end: the WAL is small again for the next session's first process). Best effort.
pub fn checkpoint_passive(conn: &Connection) {
    let _ = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
}

/// Makes `conn` refuse every write (or accept them again): a reader that must leave the
/// database as it found it, caches included.
pub fn query_only(conn: &Connection, on: bool) -> Result<()> {
    conn.pragma_update(None, "query_only", on)?;
    Ok(())
}

/// A list column's stored form: a JSON array of strings.
pub fn json_list(v: &[String]) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "[]".into())
}

/// Reads a list column back, leniently (rows written by hand or by older versions): a JSON
/// array (non-string items as their JSON text), a JSON string as a list of one, other
/// non-blank text as itself; NULL or blank is empty.
pub fn parse_list(text: Option<String>) -> Vec<String> {
    let Some(text) = text else { return vec![] };
    match serde_json::from_str::<serde_json::Value>(&text) {
        Ok(serde_json::Value::Array(a)) => a
            .into_iter()
            .map(|v| match v {
                serde_json::Value::String(s) => s,
                v => v.to_string(),
            })
            .collect(),
        Ok(serde_json::Value::String(s)) => vec![s],
        _ if text.trim().is_empty() => vec![],
        _ => vec![text],
    }
}

/// `n` parameter marks for an SQL `IN` list ("?,?,?").
fn marks(n: usize) -> String {
    vec!["?"; n].join(",")
}

/// Integer ids as an SQL list (integers only, so no injection is possible).
fn join_ids(ids: &[i64]) -> String {
    ids.iter().map(i64::to_string).collect::<Vec<_>>().join(",")
}

/// Runs `f` over `ids` in chunks of `n` (an SQL `IN` list of bounded length), collecting.
fn by_chunks<T>(
    ids: &[i64],
    n: usize,
    mut f: impl FnMut(&str) -> Result<Vec<T>>,
) -> Result<Vec<T>> {
    let mut out = Vec::new();
    for chunk in ids.chunks(n) {
        out.extend(f(&join_ids(chunk))?);
    }
    Ok(out)
}

/// The first row of each key among `rows` (in their order), at most `limit` of them.
pub fn first_per_key<T, K: PartialEq>(
    rows: impl Iterator<Item = rusqlite::Result<T>>,
    key: impl Fn(&T) -> K,
    limit: usize,
) -> Result<Vec<T>> {
    let mut out: Vec<T> = Vec::new();
    for row in rows {
        let r = row?;
        if !out.iter().any(|o| key(o) == key(&r)) {
            out.push(r);
        }
        if out.len() >= limit {
            break;
        }
    }
    Ok(out)
}

/// Current time as the ISO-8601 UTC text every table stores (sortable as text).
pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// An instant in epoch milliseconds as the text every table stores.
pub fn ms_text(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Normalises any RFC 3339 timestamp to the stored form; unparseable text is kept as is.
pub fn normalize_time(ts: &str) -> String {
    chrono::DateTime::parse_from_rfc3339(ts)
        .map(|t| {
            t.with_timezone(&chrono::Utc)
                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
        })
        .unwrap_or_else(|_| ts.to_string())
}

/// A date as a user writes it (RFC 3339, `YYYY-MM-DD`, `YYYY-MM-DD HH:MM[:SS]` or with a `T`;
/// no zone = UTC) in the stored form; `None` when it is none of these.
pub fn parse_time(s: &str) -> Option<String> {
    parse_instant(s).map(|(t, _)| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
}

/// What a date given as [`parse_time`] takes should look like, for error messages.
pub const DATE_HINT: &str = "use YYYY-MM-DD or an ISO datetime such as 2026-02-21T14:30:00Z";

/// The instant a date as a user writes it names (see [`parse_time`]), and whether only a day
/// was given (then the instant is its start, UTC).
pub fn parse_instant(s: &str) -> Option<(chrono::DateTime<chrono::Utc>, bool)> {
    let s = s.trim();
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
        return Some((t.with_timezone(&chrono::Utc), false));
    }
    if let Ok(d) = chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d") {
        return Some((d.and_hms_opt(0, 0, 0)?.and_utc(), true));
    }
    [
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%d %H:%M",
    ]
    .iter()
    .find_map(|f| chrono::NaiveDateTime::parse_from_str(s, f).ok())
    // As chat logs date their sessions: "1:56 pm on 8 May, 2023".
    .or_else(|| chrono::NaiveDateTime::parse_from_str(s, "%I:%M %p on %d %B, %Y").ok())
    .map(|t| (t.and_utc(), false))
}

/// Whether a job that reads a whole table, and so runs once a day, is due: its `marker` file
/// (touched by [`mark_done`]) is a day old or missing, or `every_run` says to run anyway.
pub fn daily_due(marker: &Path, every_run: bool) -> bool {
    every_run
        || std::fs::metadata(marker)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_none_or(|age| age >= Duration::from_secs(86_400))
}

/// Marks a daily job done (see [`daily_due`]).
pub fn mark_done(marker: &Path) {
    let _ = std::fs::write(marker, b"");
}

/// A fact about the database kept in `meta` (`None`: never set, or a database too old).
pub fn meta_get(conn: &Connection, key: &str) -> Result<Option<String>> {
    use rusqlite::OptionalExtension;
    if user_version(conn)? < 5 {
        return Ok(None);
    }
    Ok(conn
        .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
        .optional()?)
}

/// Sets a fact about the database in `meta`.
pub fn meta_put(conn: &Connection, key: &str, value: &str) -> Result<()> {
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (?1, ?2)
         ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        [key, value],
    )?;
    Ok(())
}

/// The database's random id (migration 5), which its indexes record; `None` for a database
/// older than that migration (opened without migrating).
pub fn database_id(conn: &Connection) -> Result<Option<String>> {
    meta_get(conn, "database_id")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_columns_read_back_leniently() {
        let v = vec!["a".to_string(), "b \"c\"".to_string()];
        assert_eq!(parse_list(Some(json_list(&v))), v);
        assert_eq!(parse_list(None), Vec::<String>::new());
        assert_eq!(parse_list(Some("  ".into())), Vec::<String>::new());
        assert_eq!(parse_list(Some("[1, \"x\"]".into())), ["1", "x"]);
        assert_eq!(parse_list(Some("\"one\"".into())), ["one"]);
        assert_eq!(parse_list(Some("plain text".into())), ["plain text"]);
    }

    #[test]
    fn a_failed_write_transaction_leaves_nothing_and_a_good_one_commits() {
        let dir = tempfile::tempdir().unwrap();
        let conn = open(&dir.path().join("mem.db")).unwrap();
        let note = |c: &Connection, e: &str| events::log(c, None, e, None, "info", None);
        let failed: Result<()> = write_tx(&conn, |tx| {
            note(tx, "first")?;
            Err(Error::Store("stop".into()))
        });
        assert!(failed.is_err());
        write_tx(&conn, |tx| note(tx, "second")).unwrap();
        let n: i64 = conn
            .query_row("SELECT count(*) FROM event_log", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 1);
    }

    #[test]
    fn an_observation_reads_back_as_stored_and_updates_in_place() {
        use crate::record::Observation;
        let dir = tempfile::tempdir().unwrap();
        let conn = open(&dir.path().join("mem.db")).unwrap();
        let mut o = Observation {
            session_id: Some("s".into()),
            project: Some("/p".into()),
            kind: "bugfix".into(),
            title: "Fixed the parser".into(),
            summary: "It read past the end".into(),
            detail: Some("details".into()),
            facts: vec!["f1".into()],
            tags: vec!["rust".into()],
            files_modified: vec!["src/p.rs".into()],
            functions_changed: vec!["parse".into()],
            tokens_raw: 40,
            tokens_compressed: 10,
            created_at: Some("2026-01-01T00:00:00.000Z".into()),
            ..Observation::default()
        };
        let id = observations::insert(&conn, &o, true, "2026-01-02T00:00:00.000Z").unwrap();
        o.id = Some(id);
        o.is_manual = true;
        assert_eq!(observations::get(&conn, id).unwrap().unwrap(), o);
        o.summary = "It read past the end of the buffer".into();
        o.concepts = vec!["bounds".into()];
        observations::update(&conn, &o, "2026-01-03T00:00:00.000Z").unwrap();
        assert_eq!(observations::of_session(&conn, "s").unwrap(), vec![o]);
    }

    #[test]
    fn vectors_survive_the_blob_codec() {
        let v = vec![0.5f32, -1.25, 3.0e-7, f32::MAX];
        assert_eq!(embeddings::from_blob(&embeddings::to_blob(&v)), v);
    }

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
    }

    fn set(p: &Path, m: u32) {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
    }

    #[test]
    fn a_loose_home_is_tightened_with_memkits_files_only() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        for d in ["index/bm25", "mine"] {
            std::fs::create_dir_all(home.join(d)).unwrap();
        }
        std::fs::write(home.join("index/bm25/meta.json"), "{}").unwrap();
        for p in ["", "index", "index/bm25", "index/bm25/meta.json", "mine"] {
            set(&home.join(p), 0o755);
        }
        ensure_home(&home).unwrap();
        assert_eq!(mode(&home), 0o700);
        assert_eq!(mode(&home.join("index/bm25")), 0o700);
        assert_eq!(mode(&home.join("index/bm25/meta.json")), 0o700);
        assert_eq!(mode(&home.join("logs")) & 0o077, 0);
        // Not memkit's: MEM_HOME may name a directory that holds other things.
        assert_eq!(mode(&home.join("mine")), 0o755);
        // A shared directory such as /tmp is never made private.
        let shared = dir.path().join("shared");
        std::fs::create_dir(&shared).unwrap();
        set(&shared, 0o1777);
        ensure_home(&shared).unwrap();
        assert_eq!(mode(&shared), 0o1777);
    }
}

#[cfg(test)]
mod filter_tests {
    use super::*;

    /// The filters each clause of these queries is built from, alone and together.
    #[test]
    fn session_keys_and_learnings_pass_exactly_the_filters_asked() {
        let dir = tempfile::tempdir().unwrap();
        let conn = open(&dir.path().join("mem.db")).unwrap();
        let rows = [
            ("a1", Some("/a"), "2026-01-01T00:00:00.000Z", true),
            ("a2", Some("/a"), "2026-03-01T00:00:00.000Z", true),
            ("a3", Some("/a"), "2026-03-02T00:00:00.000Z", false),
            ("b1", Some("/b"), "2026-02-01T00:00:00.000Z", true),
            ("n1", None, "2026-02-01T00:00:00.000Z", true),
        ];
        for (id, project, at, summarised) in rows {
            conn.execute(
                "INSERT INTO sessions (session_id, project, started_at, last_activity_at)
                 VALUES (?1, ?2, ?3, ?3)",
                rusqlite::params![id, project, at],
            )
            .unwrap();
            if summarised {
                sessions::set_summary(&conn, id, "did things", &[], &[], 0, at).unwrap();
            }
        }
        let ids = |projects: Option<&[String]>, s: Option<&str>, after: Option<&str>| {
            let mut out: Vec<String> =
                sessions::matching_rowids(&conn, projects, s, after, Some("2026-12-31"))
                    .unwrap()
                    .into_iter()
                    .map(|r| sessions::id_at(&conn, r).unwrap().unwrap())
                    .collect();
            out.sort();
            out
        };
        let a = ["/a".to_string()];
        let ab = ["/a".to_string(), "/b".to_string()];
        assert_eq!(ids(None, None, None), ["a1", "a2", "b1", "n1"]);
        assert_eq!(ids(Some(&a), None, None), ["a1", "a2"]);
        assert_eq!(ids(Some(&ab), None, None), ["a1", "a2", "b1"]);
        assert_eq!(ids(Some(&[]), None, None), Vec::<String>::new());
        assert_eq!(ids(Some(&ab), None, Some("2026-01-15")), ["a2", "b1"]);
        assert_eq!(ids(Some(&ab), Some("b1"), None), ["b1"]);
        assert_eq!(ids(Some(&a), Some("b1"), None), Vec::<String>::new());

        for (project, content, active, confidence) in [
            (Some("/a"), "a on", true, 0.9),
            (Some("/a"), "a low", true, 0.2),
            (Some("/a"), "a off", false, 0.9),
            (Some("/b"), "b on", true, 0.9),
        ] {
            let id = learnings::insert(
                &conn,
                &learnings::New {
                    project,
                    content,
                    category: "pattern",
                    confidence,
                    source_session: None,
                    evidence: None,
                    is_manual: false,
                },
                "2026-01-01T00:00:00.000Z",
            )
            .unwrap();
            if !active {
                conn.execute("UPDATE learnings SET is_active = 0 WHERE id = ?1", [id])
                    .unwrap();
            }
        }
        let listed = |f: learnings::Filter| -> Vec<String> {
            let mut v: Vec<String> = learnings::list(&conn, &f)
                .unwrap()
                .into_iter()
                .map(|l| l.content)
                .collect();
            v.sort();
            v
        };
        let f = learnings::Filter::default;
        assert_eq!(listed(f()), ["a low", "a on", "b on"]);
        let a = learnings::Filter {
            project: Some("/a"),
            ..f()
        };
        assert_eq!(listed(a.clone()), ["a low", "a on"]);
        assert_eq!(
            listed(learnings::Filter {
                all: true,
                ..a.clone()
            }),
            ["a low", "a off", "a on"]
        );
        assert_eq!(
            listed(learnings::Filter {
                min_confidence: Some(0.5),
                ..a
            }),
            ["a on"]
        );
    }
}
