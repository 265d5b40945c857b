//! mem-eval recall: transcripts replayed through the recall hooks; is a file's history told
//! before it is edited, and an earlier fix after the same failure?

use std::path::PathBuf;

use crate::cli::{Io, Outcome};
use crate::{Result, programs};
use memkit_eval::retrieval;

#[derive(Debug, clap::Args)]
pub struct RecallArgs {
    /// Transcript files or folders of them (e.g. ~/.claude/projects/<project>).
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<PathBuf>,
    /// The hook command the payloads go to [default: mem-capture --recall, beside mem-eval].
    #[arg(long, value_name = "CMD")]
    pub hook: Option<String>,
    /// Name of the set in the figures [default: the first PATH's name].
    #[arg(long)]
    pub set: Option<String>,
    /// Scratch memories [default: ~/.cache/memkit/eval].
    #[arg(long, value_name = "DIR")]
    pub work: Option<PathBuf>,
    /// Keep the scratch memories and print their paths.
    #[arg(long)]
    pub keep: bool,
}

pub fn run(a: RecallArgs, io: &mut Io) -> Result<Outcome> {
    let set = a.set.clone().unwrap_or_else(|| {
        a.paths[0]
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    });
    let hook = match &a.hook {
        Some(h) => h.split_whitespace().map(str::to_string).collect(),
        None => vec![
            programs::command("mem-capture").display().to_string(),
            "--recall".into(),
        ],
    };
    let opts = memkit_eval::recall::Options {
        hook,
        work: a.work.clone().unwrap_or_else(retrieval::default_work),
        keep: a.keep,
    };
    let out = memkit_eval::recall::run(&set, &a.paths, &opts)?;
    for home in &out.homes {
        io.warn(format!("scratch memory kept: MEM_HOME={}", home.display()));
    }
    let overall: Vec<_> = out.reports.iter().filter(|r| r.project == "all").collect();
    super::shared::record_figures(io, "recall", &overall);
    io.listing(
        &out.reports,
        &[
            "project",
            "file_calls",
            "answered",
            "edits_with_history",
            "named_earlier",
            "answered_without_history",
            "repeats",
            "failures",
            "failures_with_earlier_fix",
            "error_answers",
            "error_hits",
            "error_false_positives",
            "baseline_answers",
            "baseline_hits",
            "baseline_false_positives",
        ],
    )?;
    Ok(Outcome::Ok)
}
