//! What mem-eval's subcommands share: the data home's store, the figures kept for
//! `mem-eval health`, the progress bar.

use crate::Result;
use crate::cli::Io;
use crate::config::{self, Config};
use crate::store;

/// The progress bar of the runs that replay or import a set.
pub(super) const BAR: &str = "mem-eval {msg} {bar:30} {pos}/{len} {eta}";

/// Keeps a run's overall figures for `mem-eval health`; a failure is said, not fatal.
pub(super) fn record_figures<T: serde::Serialize>(io: &mut Io, mode: &str, figures: &[T]) {
    if let Err(e) = memkit_eval::record_figures(&config::data_home(), mode, figures) {
        io.warn(format!(
            "the figures were not kept for mem-eval health: {e}"
        ));
    }
}

/// The database of the data home, or `None` (said on stderr) when nothing is stored yet.
pub(super) fn open_store(io: &Io) -> Result<Option<(crate::Home, Config, rusqlite::Connection)>> {
    let home = config::data_home();
    let cfg = Config::load(&home)?;
    match store::open_if_present(&cfg.home.db())? {
        Some(conn) => Ok(Some((home, cfg, conn))),
        None => {
            io.no_memories(&cfg.home.db());
            Ok(None)
        }
    }
}

/// Runs `f` with a progress bar on a terminal, cleared when it returns.
pub(super) fn with_progress<T>(
    io: &Io,
    f: impl FnOnce(memkit_eval::retrieval::Progress) -> Result<T>,
) -> Result<T> {
    let bar = crate::render::progress_bar(io, BAR);
    let out = f(&mut |step, done, total| {
        if let Some(b) = &bar {
            b.set_message(step.to_string());
            b.set_length(total as u64);
            b.set_position(done as u64);
        }
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    out
}
