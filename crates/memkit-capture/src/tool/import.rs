//! `mem-capture --transcript FILE… / --transcripts DIR…`: `import`'s run, with a progress bar
//! of the bytes on a terminal, the bad lines as warnings, then one record per session and the
//! summary.

use std::path::PathBuf;
use std::time::Instant;

use crate::Policy;
use crate::import::{self, Progress};
use memkit_core::cli::{Io, Outcome};
use memkit_core::config::Config;
use memkit_core::{Error, Result};

pub(super) fn run(
    io: &mut Io,
    cfg: &Config,
    policy: &Policy,
    files: &[PathBuf],
) -> Result<Outcome> {
    let start = Instant::now();
    let mut bar: Option<indicatif::ProgressBar> = None;
    let done = import::run(cfg, policy, files, &mut |p| match p {
        Progress::Start { files, bytes } => {
            bar = (io.stderr_tty && !io.quiet && files > 0).then(|| {
                let b = indicatif::ProgressBar::new(bytes);
                b.set_style(
                    indicatif::ProgressStyle::with_template(
                        "{prefix} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} ETA {eta} {msg}",
                    )
                    .expect("template"),
                );
                b.set_prefix("mem-capture");
                b
            });
        }
        Progress::Stored(bytes) => {
            if let Some(b) = &bar {
                b.inc(bytes);
            }
        }
        Progress::BadLine(n) => io.notice(&n),
    });
    let done = done?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    io.listing(
        &done.sessions,
        &[
            "session_id",
            "project",
            "branch",
            "started_at",
            "prompts",
            "tool_calls",
            "queued",
            "duplicates",
            "skipped",
        ],
    )?;
    io.summary(done.counts, start)?;
    if done.bad > 0 {
        return Err(Error::input(
            "transcripts",
            None,
            format!(
                "{} bad line(s) skipped; everything else was imported",
                done.bad
            ),
        ));
    }
    Ok(Outcome::Ok)
}
