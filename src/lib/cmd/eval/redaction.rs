//! mem-eval redaction: the redactor's false positives on a benign corpus beside its recall on a
//! secrets corpus, in one run.

use std::path::PathBuf;

use crate::Result;
use crate::cli::{Io, Outcome};
use memkit_eval::redaction;

#[derive(Debug, clap::Args)]
pub struct RedactionArgs {
    /// Benign messages: .jsonl files or folders of them, of notes ({"text", "source"?, "file"?}
    /// a line) or Claude Code transcripts.
    #[arg(value_name = "PATH", required = true)]
    pub benign: Vec<PathBuf>,
    /// The secrets corpus ({"kind", "secret", "text" or "json"} per line).
    #[arg(long, value_name = "FILE")]
    pub secrets: Option<PathBuf>,
    /// Also print every redaction, with the text around it.
    #[arg(long)]
    pub hits: bool,
}

pub fn run(a: RedactionArgs, io: &mut Io) -> Result<Outcome> {
    let benign = redaction::read_benign(&a.benign)?;
    let secrets = match &a.secrets {
        Some(p) => redaction::read_secrets(p)?,
        None => Vec::new(),
    };
    let out = redaction::run(&benign, &secrets);
    io.listing(
        &out.figures,
        &[
            "set",
            "source",
            "family",
            "messages",
            "redactions",
            "per_1000",
            "eaten",
            "eaten_what",
            "recall",
            "missed",
        ],
    )?;
    if a.hits {
        io.listing(
            &out.hits,
            &[
                "set", "source", "family", "before", "removed", "after", "eaten",
            ],
        )?;
    }
    Ok(Outcome::Ok)
}
