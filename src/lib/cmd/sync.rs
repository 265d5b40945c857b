//! `mem sync`: share memories through a git remote; `--dry-run` shows what would leave,
//! `--status` where things stand.

use crate::Result;
use crate::cli::{Io, Outcome};
use crate::config::{self, Config};

#[derive(Debug, clap::Args)]
pub struct SyncArgs {
    /// Write and read nothing: print each record that would leave (held-back ones with what
    /// the redactor finds in them).
    #[arg(long, conflicts_with = "status")]
    pub dry_run: bool,
    /// Show the last sync, what is pending, and the machines on the remote.
    #[arg(long)]
    pub status: bool,
}

pub fn run(args: SyncArgs, io: &mut Io) -> Result<Outcome> {
    let home = config::data_home();
    let cfg = Config::load(&home)?;
    // A bad setting is the user's to fix, whichever mode reads it.
    config::SYNC_INTERVAL.get(&cfg)?;
    if args.status {
        let Some(s) = crate::sync::status(&cfg)? else {
            return Ok(io.no_memories(&cfg.home.db()));
        };
        io.figures(&s)?;
        return Ok(Outcome::Ok);
    }
    if args.dry_run {
        let (items, notices) = crate::sync::dry_run(&cfg)?;
        io.notices(&notices);
        io.listing(
            &items,
            &["op", "kind", "ref", "project", "title", "held_back"],
        )?;
        return Ok(if items.is_empty() {
            Outcome::NothingFound
        } else {
            Outcome::Ok
        });
    }
    // The store changes under the pipeline's lock, as mem forget's does: no run indexes or
    // embeds half an import.
    crate::store::ensure_home(&home)?;
    let _lock = crate::pipeline::wait_lock(&home, "mem sync")?;
    let run = crate::sync::run(&cfg)?;
    io.notices(&run.notices);
    io.listing(
        &[run.report],
        &[
            "exported",
            "forgotten",
            "imported",
            "removed",
            "commits",
            "held_back",
            "skipped",
        ],
    )?;
    Ok(Outcome::Ok)
}
