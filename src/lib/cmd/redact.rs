//! mem-redact: rewrite every stored text that the current redactor changes (rows an older
//! redactor stored keep secrets it did not know), re-index and re-embed those rows, and
//! leave no old text in any file.

use clap::{CommandFactory, Parser};

use crate::capture::reredact::{self, Options};
use crate::cli::{Common, Io, Outcome};
use crate::config::{self, Config};
use crate::{Error, Result};

pub const TOOL: crate::cli::Tool = crate::cli::Tool {
    name: "mem-redact",
    command: || Args::command(),
    details: DETAILS,
    examples: &[
        (
            "mem-redact --dry-run",
            "How many stored rows of each table today's redactor would change.",
        ),
        (
            "mem-redact",
            "Rewrite them, then re-index and scrub the files.",
        ),
    ],
};

const DETAILS: &str = r#"
mem-redact runs today's redactor over every text memkit stored: the captures in the queue
(payloads, raw tool responses included, their files, errors and skip reasons), observations
(title, summary, detail, facts, concepts, tags and file lists; notes included), session titles
and summaries, learnings (content and evidence) and event_log details. A row whose text changes
is rewritten in place, in batches of --batch-size rows, each batch one transaction: a run that is
killed keeps the batches it committed, and the next run goes on (rows already rewritten do not
change again).

Then the indexes follow: the FTS5 index is optimised, the BM25 index re-indexes exactly the changed
observations and sessions and merges its segments so no deleted document stays in its files, and
the vectors of the changed rows are deleted (mem-embed makes them again from the new text; the
vector indexes drop them now). Last the database is vacuumed and its WAL emptied, so no old text
is left in free pages, and the store records the redactor version it now holds.

mem pipeline does all this once, before its stages, whenever the stored redactor version is older
than this memkit's (the version rises with every new redaction rule), and so does mem doctor
--fix. Run by hand it rewrites whatever the redactor changes, whatever the version.

A rewrite only ever takes more away, never gives back: where an older redactor took too much (a
test password such as 'testpassword', a placeholder, an <input tag, a URL's host, a Subresource
Integrity hash; redactor versions before 2), the original text is gone, and those rows stay as
they are. Today's redactor leaves their markers and what is around them alone.

It prints one redacted record per table with the rows read and the rows changed (never their
text), a table on a terminal. --dry-run changes nothing and prints the counts it would change.
Exit status 1 when nothing changed (or would).
"#;

/// What --help says of rows an older redactor took too much from.
const OVER_REDACTED: &str = "Rows that an older redactor over-redacted (redactor versions before 2 took test \
passwords, placeholders, <input tags, URL hosts and SRI hashes for secrets) stay as they are: the \
original text is gone, and today's redactor leaves them alone.";

/// Rewrite stored texts the current redactor changes; re-index and scrub them.
#[derive(Debug, Parser)]
#[command(name = "mem-redact", version, long_about = None, after_help = OVER_REDACTED)]
pub struct Args {
    /// Change nothing; count the rows of each table that would change.
    #[arg(long)]
    pub dry_run: bool,
    /// Rows per transaction.
    #[arg(long, value_name = "N", default_value_t = reredact::BATCH)]
    pub batch_size: usize,
    /// Stop after N batches, leaving the rest (and the version) to the next run.
    #[arg(long, value_name = "N")]
    pub max_batches: Option<usize>,
    #[command(flatten)]
    pub common: Common,
}

/// One table's counts.
#[derive(serde::Serialize)]
#[serde(remote = "Self")]
struct Redacted {
    table: &'static str,
    rows: u64,
    changed: u64,
    dry_run: bool,
}
memkit_core::record!(Redacted = "redacted");

pub fn run(args: Args, io: &mut Io) -> Result<Outcome> {
    if args.batch_size == 0 {
        return Err(Error::Usage("--batch-size: must be 1 or more".into()));
    }
    let home = config::data_home();
    let cfg = Config::load(&home)?;
    let opts = Options {
        dry_run: args.dry_run,
        batch: args.batch_size,
        max_batches: args.max_batches,
    };
    // No pipeline run may index the old text meanwhile.
    let _lock = if args.dry_run {
        None
    } else {
        Some(crate::pipeline::wait_lock(&home, "mem-redact")?)
    };
    let Some(done) = crate::reredact::run(&home, &cfg, &opts)? else {
        return Ok(io.no_memories(&cfg.home.db()));
    };
    if !done.rewritten.complete {
        io.warn("stopped at --max-batches: run mem-redact again to finish");
    }
    let recs: Vec<Redacted> = done
        .rewritten
        .tables
        .iter()
        .map(|&(table, rows, changed)| Redacted {
            table,
            rows,
            changed,
            dry_run: args.dry_run,
        })
        .collect();
    io.listing(&recs, &["table", "rows", "changed", "dry_run"])?;
    Ok(if done.rewritten.changed() == 0 {
        Outcome::NothingFound
    } else {
        Outcome::Ok
    })
}
