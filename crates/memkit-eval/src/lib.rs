//! mem-eval's measurements. `retrieval`: a benchmark's corpus loaded into a scratch memory the
//! way a user would bring notes, searched per scope by each retriever, and scored next to a
//! textbook BM25 over the same text in the same run. `compression`: stored observations scored
//! against the captures they came from. `health`: the checks of a memory's state that
//! `mem-eval health` (and a future `mem status`/`mem doctor`) report. `title`: the title rubric.
//! `qag`: an LLM judge of observations (`compression --qag`). `benchmark`: two backends compared
//! on the same captures, each in a scratch copy. `redaction`: the redactor's false positives on a
//! benign corpus beside its recall on a secrets corpus.

pub mod benchmark;
pub mod compression;
pub mod context;
pub mod health;
pub mod prompt;
pub mod qag;
pub mod recall;
pub mod redaction;
pub mod retrieval;
pub mod title;

/// Where the last figures of each measuring mode are kept (`$MEM_HOME/eval/last-<mode>.json`):
/// `mem-eval health` shows them beside the memory's own state.
pub fn last_figures_path(home: &std::path::Path, mode: &str) -> std::path::PathBuf {
    memkit_core::Home::new(home)
        .eval()
        .join(format!("last-{mode}.json"))
}

/// Records a run's figures as the last of `mode` (with when they were made). A failure to
/// write is the caller's to report: the run itself stands.
pub fn record_figures<T: serde::Serialize>(
    home: &std::path::Path,
    mode: &str,
    figures: &[T],
) -> memkit_core::Result<()> {
    let path = last_figures_path(home, mode);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let v = serde_json::json!({
        "at": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        "figures": figures,
    });
    std::fs::write(&path, serde_json::to_vec_pretty(&v)?)?;
    Ok(())
}
