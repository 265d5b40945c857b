//! mem-eval context: transcripts replayed; does the SessionStart block name the files each
//! session then edits?

use std::io::Write;
use std::path::PathBuf;

use crate::cli::{Io, Outcome};
use crate::{Error, Result};
use memkit_eval::retrieval;

#[derive(Debug, clap::Args)]
pub struct ContextArgs {
    /// Transcript files or folders of them (e.g. ~/.claude/projects/<project>).
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<PathBuf>,
    /// Token budget of the block.
    #[arg(long, default_value_t = memkit_context::DEFAULT_BUDGET)]
    pub budget: usize,
    /// Name of the set in the figures [default: the first PATH's name].
    #[arg(long)]
    pub set: Option<String>,
    /// Write each replayed session (files edited, files each method named, the block) as JSONL.
    #[arg(long, value_name = "FILE")]
    pub sessions: Option<PathBuf>,
    /// Scratch memories [default: ~/.cache/memkit/eval].
    #[arg(long, value_name = "DIR")]
    pub work: Option<PathBuf>,
    /// Keep the scratch memories and print their paths.
    #[arg(long)]
    pub keep: bool,
}

pub fn run(a: ContextArgs, io: &mut Io) -> Result<Outcome> {
    use memkit_eval::context;
    let set = a.set.clone().unwrap_or_else(|| {
        a.paths[0]
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    });
    let opts = context::Options {
        budget: a.budget,
        work: a.work.clone().unwrap_or_else(retrieval::default_work),
        keep: a.keep,
    };
    let out = super::shared::with_progress(io, |p| context::run(&set, &a.paths, &opts, p))?;
    if let Some(path) = &a.sessions {
        let name = path.display().to_string();
        let f = std::fs::File::create(path).map_err(|e| Error::input(&name, None, e))?;
        let mut w = std::io::BufWriter::new(f);
        for s in &out.sessions {
            serde_json::to_writer(&mut w, s)?;
            writeln!(w)?;
        }
        w.flush()?;
    }
    for home in &out.homes {
        io.warn(format!("scratch memory kept: MEM_HOME={}", home.display()));
    }
    if out.sessions.is_empty() {
        io.warn("no session to score: a project needs a second session that edits files");
        return Ok(Outcome::NothingFound);
    }
    let overall: Vec<_> = out.reports.iter().filter(|r| r.project == "all").collect();
    super::shared::record_figures(io, "context", &overall);
    io.listing(
        &out.reports,
        &[
            "set",
            "project",
            "method",
            "sessions",
            "hit_rate",
            "recall",
            "files_named",
            "recall_in_project",
        ],
    )?;
    Ok(Outcome::Ok)
}
