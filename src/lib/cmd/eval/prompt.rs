//! mem-eval prompt: a set's questions asked through the prompt hook mem-install registers,
//! beside mem-search and a textbook BM25 given as many items.

use std::path::PathBuf;

use crate::cli::{Format, Io, Outcome};
use crate::{Error, Result};
use memkit_eval::{prompt, retrieval};

use super::retrieval::SetArgs;

#[derive(Debug, clap::Args)]
pub struct PromptArgs {
    #[command(flatten)]
    pub set: SetArgs,
    /// Prompts no memory bears on ({qid, scope, text} per line), each asked in its scope, or in
    /// the set's scopes in turn when the set has no such scope; a row per file.
    #[arg(long, value_name = "FILE")]
    pub noise: Vec<PathBuf>,
    /// The hook command the questions go to [default: the UserPromptSubmit command mem-install
    /// registers, with the programs beside mem-eval].
    #[arg(long, value_name = "CMD")]
    pub hook: Option<String>,
    /// Embedding model of the memory, for mem-search's default search (name under the model
    /// cache, or a directory).
    #[arg(long, default_value = "minilm-l6")]
    pub model: String,
    /// Scratch memories and the shared embedding cache [default: ~/.cache/memkit/eval].
    #[arg(long, value_name = "DIR")]
    pub work: Option<PathBuf>,
    /// Keep the scratch memory and print its path.
    #[arg(long)]
    pub keep: bool,
    /// Ask every prompt as of this moment (ISO date or datetime) [default: when the run starts].
    #[arg(long, value_name = "TIME")]
    pub now: Option<String>,
    /// Give vectors to only this percentage of the records, the newest first, as an
    /// embedding backlog worked newest first leaves a store.
    #[arg(long, value_name = "PCT", value_parser = clap::value_parser!(u8).range(0..=100))]
    pub vectors: Option<u8>,
    /// Write what each question was given to FILE, a JSON line each: its evidence, the
    /// hook's items, mem-search's and the textbook BM25's first 10.
    #[arg(long, value_name = "FILE")]
    pub questions: Option<PathBuf>,
}

pub fn run(a: PromptArgs, io: &mut Io) -> Result<Outcome> {
    let set = a.set.load()?;
    let hook = match &a.hook {
        Some(h) => h.clone(),
        None => crate::install::hooks::prompt_command(&crate::tools::bin_dir()?)
            .ok_or_else(|| Error::other("mem-context is not beside mem-eval: give --hook"))?,
    };
    let noise = a
        .noise
        .iter()
        .map(|p| Ok((noise_name(p), retrieval::data::jsonl(p)?)))
        .collect::<Result<Vec<_>>>()?;
    // Checked here; the hook reads it as its MEM_NOW.
    let now = match &a.now {
        Some(t) => crate::search::parse_bound(t, false)
            .map(|_| t.clone())
            .map_err(|e| Error::Usage(format!("--now: {e}")))?,
        None => chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
    };
    let opts = prompt::Options {
        hook,
        model: a.model.clone(),
        work: a.work.clone().unwrap_or_else(retrieval::default_work),
        keep: a.keep,
        noise,
        now,
        vectors: a.vectors.map(|p| f64::from(p) / 100.0),
        questions: a.questions.clone(),
    };
    let out = super::shared::with_progress(io, |p| prompt::run(&set, &opts, p))?;
    if let Some(home) = &out.home {
        io.warn(format!("scratch memory kept: MEM_HOME={}", home.display()));
    }
    let overall: Vec<_> = out
        .rows
        .iter()
        .filter(|r| r.retriever == "hook" && matches!(r.category.as_str(), "all" | "noise"))
        .collect();
    super::shared::record_figures(io, "prompt", &overall);
    let mut columns = vec!["set", "retriever", "k", "category", "questions"];
    columns.extend(["hit_rate", "recall", "silent", "items", "tokens", "p50_ms"]);
    if !matches!(io.format(), Format::Jsonl | Format::Json) {
        columns.retain(|c| *c != "set");
    }
    io.listing(&out.rows, &columns)?;
    Ok(Outcome::Ok)
}

/// A noise file's name in the figures: its stem, or its directory's name for a set's
/// queries.jsonl (another set's questions).
fn noise_name(p: &std::path::Path) -> String {
    let stem = |p: &std::path::Path| {
        p.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    match p.parent() {
        Some(d) if stem(p) == "queries" => format!("{}/queries", stem(d)),
        _ => stem(p),
    }
}
