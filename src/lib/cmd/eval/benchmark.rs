//! mem-eval benchmark: two backends compress the memory's captures again in scratch copies.

use std::path::PathBuf;

use crate::Result;
use crate::cli::{Io, Outcome};
use memkit_eval::retrieval;

#[derive(Debug, clap::Args)]
pub struct BenchmarkArgs {
    /// The first backend (heuristic, anthropic, openai, claude-cli).
    #[arg(long = "a", value_name = "BACKEND")]
    pub a: String,
    /// The second backend.
    #[arg(long = "b", value_name = "BACKEND")]
    pub b: String,
    /// Scratch copies [default: ~/.cache/memkit/eval].
    #[arg(long, value_name = "DIR")]
    pub work: Option<PathBuf>,
    /// Keep the scratch copies and print their paths.
    #[arg(long)]
    pub keep: bool,
}

pub fn run(a: BenchmarkArgs, io: &mut Io) -> Result<Outcome> {
    let Some((home, cfg, conn)) = super::shared::open_store(io)? else {
        return Ok(Outcome::NothingFound);
    };
    drop(conn);
    let opts = memkit_eval::benchmark::Options {
        work: a.work.clone().unwrap_or_else(retrieval::default_work),
        keep: a.keep,
    };
    let (sides, kept) = memkit_eval::benchmark::run(&home, &cfg, &a.a, &a.b, &opts)?;
    for d in &kept {
        io.warn(format!("scratch copy kept: MEM_HOME={}", d.display()));
    }
    io.listing(
        &sides,
        &[
            "side",
            "backend",
            "observations",
            "valid",
            "grounded",
            "ratio",
            "title_score",
            "title_pass",
            "clean",
            "llm_calls",
            "tokens_in",
            "tokens_out",
            "fallbacks",
            "elapsed_ms",
        ],
    )?;
    Ok(Outcome::Ok)
}
