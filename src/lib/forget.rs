//! Forgetting end to end (`mem forget`): the store's rows (`store::forget`), the events a hook
//! spooled (`capture::forget`), then, when anything went, the indexes built again from what is
//! left (deleted documents linger in tantivy's segments and the vector files) and the database
//! file scrubbed of the old pages.

use std::path::Path;

use rusqlite::Connection;

use crate::capture::spool::Spool;
use crate::config::Config;
use crate::index::{self, Layout, Options};
use crate::store::forget::{self, Forgot, Gone, Target};
use crate::{Context, Result};

/// What a run did.
#[derive(Debug)]
pub struct Run {
    /// The rows that went (or, dry, would go), spooled events last.
    pub forgot: Forgot,
    /// The indexes rebuilt and the file scrubbed. An error here comes after the rows went.
    pub finished: Result<()>,
    /// Records taken from the sync remote that went, by who they came from: forgotten here
    /// only (their origin keeps them).
    pub hidden: Vec<(String, u64)>,
    /// This machine's records on the sync remote that went: the next sync forgets them there.
    pub unshared: u64,
}

/// Forgets `target` from the store of `cfg` (opened as `conn`) and from everything built on
/// it. The caller holds the pipeline's lock, so that no run indexes the rows again meanwhile.
pub fn run(
    home: &Path,
    cfg: &Config,
    conn: &Connection,
    target: &Target,
    dry_run: bool,
) -> Result<Run> {
    let mut forgot = forget::forget(conn, target, dry_run)?;
    let spooled =
        crate::capture::forget::spooled(&Spool::new(home), target, &forgot.sessions, dry_run)?;
    forgot.gone.push(Gone {
        kind: "spooled",
        rows: spooled as u64,
    });
    let (mut hidden, mut unshared) = (vec![], 0);
    if !dry_run && forgot.total() > 0 {
        // An imported record forgotten here stays hidden whatever its origin writes later.
        hidden = crate::store::sync::hide_missing(conn)?;
        unshared = crate::store::sync::gone(conn)?
            .iter()
            .filter(|g| g.written)
            .count() as u64;
    }
    let finished = if !dry_run && forgot.total() > 0 {
        rebuild_and_scrub(home, cfg, conn)
    } else {
        Ok(())
    };
    Ok(Run {
        forgot,
        finished,
        hidden,
        unshared,
    })
}

fn rebuild_and_scrub(home: &Path, cfg: &Config, conn: &Connection) -> Result<()> {
    let layout = Layout::new(home);
    if !(layout.state().exists() || layout.bm25().exists()) {
        return forget::scrub(conn);
    }
    let opts = Options {
        rebuild: true,
        quantization: crate::config::INDEX_QUANTIZATION.get(cfg),
        ..Options::default()
    };
    let rebuilt = index::update(conn, &layout, &opts).map_err_context(|| {
        format!(
            "the database forgot, but rebuilding the indexes in {} failed (run mem-index --rebuild)",
            layout.dir.display()
        )
    });
    // The file is scrubbed whatever became of the indexes.
    forget::scrub(conn)?;
    rebuilt.map(|_| ())
}
