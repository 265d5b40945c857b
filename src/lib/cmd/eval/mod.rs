//! mem-eval: measurement built in. `retrieval` scores memkit's search on a retrieval set beside
//! a textbook BM25 over the same text, in the same run; `context` replays transcripts;
//! `compression` scores stored observations against their captures; `health` reports the state
//! of the memory and exits 1 naming what needs doing; `redaction` counts the redactor's false
//! positives beside its recall.

mod benchmark;
mod compression;
mod context;
mod details;
mod health;
mod prompt;
mod recall;
mod redaction;
mod retrieval;
mod shared;

use clap::{CommandFactory, Parser, Subcommand};

use crate::Result;
use crate::cli::{Common, Io, Outcome};
use details::DETAILS;

pub use benchmark::BenchmarkArgs;
pub use compression::CompressionArgs;
pub use context::ContextArgs;
pub use health::HealthArgs;
pub use prompt::PromptArgs;
pub use recall::RecallArgs;
pub use redaction::RedactionArgs;
pub use retrieval::RetrievalArgs;

pub const TOOL: crate::cli::Tool = crate::cli::Tool {
    name: "mem-eval",
    command: || Args::command(),
    details: DETAILS,
    examples: &[
        (
            "mem-eval compression --since 2026-11-01 --project spotter",
            "Score the observations of a project made since a day against their captures.",
        ),
        (
            "mem-eval compression | jq -r 'select(.faults | length > 0) | \"#\\(.id) \\(.faults)\"'",
            "The observations that fail a check, and why.",
        ),
        (
            "mem-eval benchmark --a heuristic --b anthropic --format table",
            "What the Anthropic backend would make of the same captures, beside the heuristic.",
        ),
        (
            "mem-eval health --days 14 || echo 'memkit needs attention'",
            "The state of the memory over two weeks; exit 1 names each problem.",
        ),
        (
            "mem-eval retrieval tests/fixtures/retrieval/musique-mini",
            "Every retriever on a set (corpus.jsonl, queries.jsonl, qrels.tsv in one directory).",
        ),
        (
            "mem-eval prompt ~/devsets/locomo-dev --noise ~/devsets/noise-prompts-dev.jsonl",
            "The prompt hook on a set's questions and on prompts memory knows nothing of.",
        ),
        (
            "mem-eval retrieval --corpus c.jsonl --queries q.jsonl --qrels q.tsv --mode bm25,textbook --run run.tsv",
            "Two retrievers on a BEIR-layout set; their rankings written as a TREC run file.",
        ),
        (
            "mem-eval redaction tests/fixtures/redaction tests/fixtures/transcripts --secrets tests/fixtures/secrets/corpus.jsonl",
            "Redactions per 1,000 benign messages by family, beside the secrets corpus's recall.",
        ),
    ],
};

/// Measure memkit: retrieval quality against a textbook baseline.
#[derive(Debug, Parser)]
#[command(name = "mem-eval", version, long_about = None)]
pub struct Args {
    #[command(subcommand)]
    pub what: What,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Debug, Subcommand)]
pub enum What {
    /// Score stored observations against the captures they came from.
    Compression(CompressionArgs),
    /// Report the state of the memory; exit 1 naming each problem.
    Health(HealthArgs),
    /// Compress the memory's captures again with two backends, in scratch copies, and score both.
    Benchmark(BenchmarkArgs),
    /// Score search on a retrieval set (corpus, queries, relevance judgements).
    Retrieval(RetrievalArgs),
    /// Replay transcripts: does the SessionStart block name the files each session then edits?
    Context(ContextArgs),
    /// Ask a retrieval set's questions through the prompt hook, beside mem-search and a
    /// textbook BM25.
    Prompt(PromptArgs),
    /// Replay transcripts through the recall hooks: file recall before each Read and edit,
    /// error recall after each failed shell call.
    Recall(RecallArgs),
    /// Count the redactor's false positives on a benign corpus beside its recall on secrets.
    Redaction(RedactionArgs),
}

pub fn run(args: Args, io: &mut Io) -> Result<Outcome> {
    match args.what {
        What::Compression(a) => compression::run(a, io),
        What::Health(a) => health::run(a, io),
        What::Benchmark(a) => benchmark::run(a, io),
        What::Retrieval(a) => retrieval::run(a, io),
        What::Context(a) => context::run(a, io),
        What::Recall(a) => recall::run(a, io),
        What::Redaction(a) => redaction::run(a, io),
        What::Prompt(a) => prompt::run(a, io),
    }
}
