//! Re-redaction end to end (`mem-redact`, and `mem pipeline` and `mem doctor --fix` when the
//! stored redactor version is older than this binary's): the stored texts are rewritten
//! (`capture::reredact`), the indexes follow (BM25 re-indexes the changed observations by
//! their `updated_at` and the sessions by their text's hash, the vector indexes drop the
//! vectors deleted with the old text, which the embed stage makes again), then the old text is
//! made unreadable from every file: tantivy's segments merged, the FTS5 index optimised, the
//! database vacuumed and its WAL emptied. The new version is recorded only then, so a run
//! killed anywhere is done again, from the start, by the next one (rows already rewritten
//! stay as they are).

use std::path::Path;

use crate::capture::{redact, reredact};
use crate::config::Config;
use crate::index::{self, Layout, Options};
use crate::store::{self, forget, redaction};
use crate::{Context, Result};

pub use reredact::Rewritten;

/// What a run did.
#[derive(Debug, Clone)]
pub struct Run {
    /// The redactor version the store had, and the one it has now.
    pub from: u32,
    pub to: u32,
    pub rewritten: Rewritten,
}

/// Whether the stored rows were redacted by an older redactor than this binary's.
pub fn due(conn: &rusqlite::Connection) -> Result<bool> {
    Ok(redaction::version(conn)? < redact::VERSION)
}

/// Rewrites what the current redactor changes in the store of `cfg`, then brings the indexes
/// and files in line (see the module). `None` when there is no database. With
/// `opts.dry_run` nothing is written; with `opts.max_batches` a run may stop early, leaving the
/// version as it was.
pub fn run(home: &Path, cfg: &Config, opts: &reredact::Options) -> Result<Option<Run>> {
    let Some(conn) = store::open_if_present(&cfg.home.db())? else {
        return Ok(None);
    };
    // The user's [redact] patterns count as rules; a bad entry is reported by the tools that
    // capture, the good ones apply here.
    let _ = redact::configure(cfg);
    let from = redaction::version(&conn)?;
    if !opts.dry_run {
        // Rewritten cells and freed pages are overwritten with zeros, not just unlinked.
        conn.pragma_update(None, "secure_delete", "ON")?;
    }
    let rewritten = reredact::rewrite(&conn, opts)?;
    let mut out = Run {
        from,
        to: from,
        rewritten,
    };
    if opts.dry_run || !out.rewritten.complete {
        return Ok(Some(out));
    }
    store::write_tx(&conn, redaction::optimize_fts)?;
    let layout = Layout::new(home);
    if layout.state().exists() || layout.bm25().exists() {
        let iopts = Options {
            quantization: crate::config::INDEX_QUANTIZATION.get(cfg),
            ..Options::default()
        };
        index::update(&conn, &layout, &iopts).map_err_context(|| {
            format!(
                "the store is redacted, but updating the indexes in {} failed (run mem-index, then mem-redact again)",
                layout.dir.display()
            )
        })?;
        index::bm25::compact(&layout.bm25())?;
    }
    forget::scrub(&conn)?;
    redaction::set_version(&conn, redact::VERSION)?;
    out.to = redact::VERSION;
    let counts: serde_json::Map<String, serde_json::Value> = out
        .rewritten
        .tables
        .iter()
        .map(|(t, _, n)| (t.to_string(), (*n).into()))
        .collect();
    store::events::log(
        &conn,
        None,
        "redact",
        None,
        "info",
        Some(&serde_json::json!({"from": from, "to": out.to, "changed": counts})),
    )?;
    Ok(Some(out))
}
