//! The search indexes kept beside the database (docs/ARCHITECTURE.md, "Storage"): a tantivy BM25 index
//! (`$MEM_HOME/index/bm25/`) and one scanned vector index ([`flat`]) per embedding model and
//! dimension (`$MEM_HOME/index/vectors-<model>-<dim>.vec`), plus `state.json` recording how far each
//! was brought up to date. The database is the source of truth: an index that is missing,
//! unreadable or without its state is rebuilt from it, never trusted.
//!
//! Indexed: observations (key `vector_key("observation", id)`) and session summaries (key
//! `vector_key("session", rowid)`); learnings once their table exists.

pub mod bm25;
mod doc;
pub mod flat;
pub mod report;
mod run;
mod state;
pub mod vectors;

use rusqlite::Connection;

use memkit_core::Result;

pub use doc::{
    Doc, expected_keys, learning_ids, load_briefs, load_docs, load_sessions, session_hash,
    split_keys, time_ms,
};
pub use run::{
    Change, Check, MAX_THREADS, Options, Plan, Progress, ProgressFn, Report, index_err, plan,
};
pub use state::{FOREIGN, Layout, STATE_VERSION, State, VectorState};

/// Brings every index up to date with the database.
pub fn update(conn: &Connection, layout: &Layout, opts: &Options) -> Result<Vec<Report>> {
    std::fs::create_dir_all(&layout.dir)?;
    let (prev, why) = match layout.state_for(conn)? {
        _ if opts.rebuild => (None, None),
        Ok(s) => (Some(s), None),
        Err(why) => (None, Some(why)),
    };
    let mut state = prev.clone().unwrap_or(State {
        version: STATE_VERSION,
        database_id: memkit_core::store::database_id(conn)?,
        ..State::default()
    });
    let mut reports = Vec::new();
    let (rep, tags) = bm25::update(conn, layout, &mut state, prev.is_none(), opts)?;
    state.tags = tags;
    reports.push(rep);
    reports.extend(vectors::update(conn, layout, &mut state, opts)?);
    if why.as_deref() == Some(FOREIGN) {
        for r in reports.iter_mut().filter(|r| r.rebuilt) {
            r.reason = Some(FOREIGN.into());
        }
    }
    state.updated_at = Some(memkit_core::store::now());
    layout.save_state(&state)?;
    // Indexes made by an older memkit (or before the process umask was set) were 0755/0644.
    memkit_core::store::tighten(&layout.dir);
    Ok(reports)
}

/// Compares every index with the database.
pub fn check(conn: &Connection, layout: &Layout) -> Result<Vec<Check>> {
    let mut out = vec![bm25::check(conn, layout)?];
    out.extend(vectors::check(conn, layout)?);
    // Matching keys prove nothing when the index was built for another database.
    if let Err(why) = layout.state_for(conn)?
        && why == FOREIGN
    {
        for c in &mut out {
            c.error.get_or_insert_with(|| FOREIGN.into());
        }
    }
    Ok(out)
}
