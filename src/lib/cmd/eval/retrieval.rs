//! mem-eval retrieval: memkit's search scored on a retrieval set beside a textbook BM25.

use std::path::PathBuf;

use crate::cli::{Format, Io, Outcome};
use crate::config::{self, Config};
use crate::{Error, Result};
use memkit_eval::retrieval::{self, Set};

/// A retrieval set: its directory, or its three files.
#[derive(Debug, clap::Args)]
pub struct SetArgs {
    /// A directory holding corpus.jsonl, queries.jsonl and qrels.tsv.
    #[arg(value_name = "DIR", required_unless_present_all = ["corpus", "queries", "qrels"])]
    pub dir: Option<PathBuf>,
    #[arg(long, value_name = "FILE")]
    pub corpus: Option<PathBuf>,
    #[arg(long, value_name = "FILE")]
    pub queries: Option<PathBuf>,
    #[arg(long, value_name = "FILE")]
    pub qrels: Option<PathBuf>,
}

impl SetArgs {
    /// The set, named after its directory (or its corpus file).
    pub fn load(&self) -> Result<Set> {
        let file = |given: &Option<PathBuf>, name: &str| -> Result<PathBuf> {
            match (given, &self.dir) {
                (Some(p), _) => Ok(p.clone()),
                (None, Some(d)) => Ok(d.join(name)),
                (None, None) => Err(Error::Usage(format!(
                    "give DIR or --{}",
                    &name[..name.find('.').unwrap_or(name.len())]
                ))),
            }
        };
        let (corpus, queries, qrels) = (
            file(&self.corpus, "corpus.jsonl")?,
            file(&self.queries, "queries.jsonl")?,
            file(&self.qrels, "qrels.tsv")?,
        );
        let name = self
            .dir
            .as_ref()
            .unwrap_or(&corpus)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        Set::load(&name, &corpus, &queries, &qrels)
    }
}

#[derive(Debug, clap::Args)]
pub struct RetrievalArgs {
    #[command(flatten)]
    pub set: SetArgs,
    /// Retrievers, comma-separated: textbook, fts, bm25, vector, hybrid, hybrid+rerank.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "textbook,fts,bm25,vector,hybrid"
    )]
    pub mode: Vec<String>,
    /// Embedding model (name under the model cache, or a directory).
    #[arg(long, default_value = "minilm-l6")]
    pub model: String,
    /// Cross-encoder for hybrid+rerank (name under the model cache, or a directory)
    /// [default: MEM_SEARCH_RERANK_MODEL].
    #[arg(long, value_name = "MODEL")]
    pub rerank_model: Option<String>,
    /// Candidates hybrid+rerank reorders [default: MEM_SEARCH_RERANK_DEPTH].
    #[arg(long, value_name = "N")]
    pub rerank_depth: Option<usize>,
    /// Cut-offs for recall@k and recall_any@k.
    #[arg(long, value_delimiter = ',', default_value = "5,10")]
    pub k: Vec<usize>,
    /// Hits asked for per query.
    #[arg(long, default_value_t = 100)]
    pub depth: usize,
    /// Write every ranking as a TREC run file (qid Q0 doc rank score mode).
    #[arg(long, value_name = "FILE")]
    pub run: Option<PathBuf>,
    /// Scratch memories and the shared embedding cache [default: ~/.cache/memkit/eval].
    #[arg(long, value_name = "DIR")]
    pub work: Option<PathBuf>,
    /// Keep the scratch memory and print its path (MEM_HOME=PATH mem-search … then works on it).
    #[arg(long)]
    pub keep: bool,
    /// Give vectors to only this percentage of the records, the newest first, as an
    /// embedding backlog worked newest first leaves a store.
    #[arg(long, value_name = "PCT", value_parser = clap::value_parser!(u8).range(0..=100))]
    pub vectors: Option<u8>,
}

pub fn run(a: RetrievalArgs, io: &mut Io) -> Result<Outcome> {
    if a.k.is_empty() || a.k.contains(&0) || a.depth == 0 {
        return Err(Error::Usage("--k and --depth take numbers above 0".into()));
    }
    let set = a.set.load()?;
    let opts = retrieval::Options {
        modes: a.mode.iter().map(|m| m.trim().to_lowercase()).collect(),
        model: a.model.clone(),
        ks: a.k.clone(),
        work: a.work.clone().unwrap_or_else(retrieval::default_work),
        keep: a.keep,
        depth: a.depth,
        reranker: Some(rerank_choice(&a)?),
        vectors: a.vectors.map(|p| f64::from(p) / 100.0),
    };
    let out = super::shared::with_progress(io, |p| retrieval::run(&set, &opts, p))?;
    if let Some(path) = &a.run {
        retrieval::write_run(path, &out.runs)?;
    }
    if let Some(home) = &out.home {
        io.warn(format!("scratch memory kept: MEM_HOME={}", home.display()));
    }
    super::shared::record_figures(io, "retrieval", &out.reports);
    let mut columns = vec!["set", "mode", "category", "queries", "ndcg@10"];
    let names: Vec<String> =
        a.k.iter()
            .flat_map(|k| [format!("recall@{k}"), format!("recall_any@{k}")])
            .collect();
    columns.extend(names.iter().map(String::as_str));
    columns.extend(["mrr", "p50_ms"]);
    if matches!(io.format(), Format::Jsonl | Format::Json) {
        io.listing(&out.reports, &columns)?;
    } else {
        let rows: Vec<_> = out.reports.iter().flat_map(|r| r.rows()).collect();
        io.listing(&rows, &columns)?;
    }
    Ok(Outcome::Ok)
}

/// The reranker and depth hybrid+rerank uses: the flags, else the settings.
fn rerank_choice(a: &RetrievalArgs) -> Result<(String, usize)> {
    let cfg = Config::load(&config::data_home())?;
    crate::search::rerank::settings(&cfg, a.rerank_model.clone(), a.rerank_depth)
}
