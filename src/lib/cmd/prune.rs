//! mem-prune: retention. Old raw tool responses, event_log rows and log files, unused
//! embedding cache entries go; then the database is vacuumed.

use clap::{CommandFactory, Parser};

use crate::cli::{Common, Io, Outcome};
use crate::config::{self, Config};
use crate::prune::Options;
use crate::store::{self, retention};
use crate::{Error, Result};

pub const TOOL: crate::cli::Tool = crate::cli::Tool {
    name: "mem-prune",
    command: || Args::command(),
    details: DETAILS,
    examples: &[
        (
            "mem-prune --dry-run",
            "What would go, and the bytes it would save.",
        ),
        (
            "mem-prune --days 0",
            "Drop every processed capture's raw tool response now.",
        ),
    ],
};

const DETAILS: &str = r#"
mem-prune drops what memkit no longer needs: the raw tool responses of processed (done) captures
older than --days (default MEM_RAW_RESPONSE_DAYS, 7; the capture keeps its input and the
observation its facts), event_log rows and $MEM_HOME/logs/*.log files older than --log-days (30)
(and the lines older than that of the logs still written to), the per-session markers of what the
recall hooks told a session ($MEM_HOME/recall/, kind recall_markers) untouched for a day,
and embedding cache entries unused for MEM_EMBED_CACHE_DAYS that back no current vector. Then it
vacuums the database (an incremental vacuum when the database is in that mode, else a full one)
and empties its WAL.

It prints one pruned record per kind with the rows and bytes of content it removed, then a
record of kind database with the size of mem.db and its WAL before and after. --dry-run changes
nothing: it prunes a vacuumed copy of the database (written beside it, then deleted) and reports
what that saved. mem pipeline runs mem-prune once a day (the time of the last prune is kept in
the database); --now TIME (MEM_NOW) prunes as if it were that moment.
"#;

/// Drop old raw tool responses, logs and unused cached vectors, then vacuum.
#[derive(Debug, Parser)]
#[command(name = "mem-prune", version, long_about = None)]
pub struct Args {
    /// Days a processed capture keeps its raw tool response (default: MEM_RAW_RESPONSE_DAYS, 7).
    #[arg(long, value_name = "N")]
    pub days: Option<u32>,
    /// Days event_log rows and log files are kept.
    #[arg(long, value_name = "N", default_value_t = retention::LOG_DAYS)]
    pub log_days: u32,
    /// Change nothing; report what would go and the bytes it would save.
    #[arg(long)]
    pub dry_run: bool,
    /// Prune as of this moment (RFC 3339 or YYYY-MM-DD).
    #[arg(long, env = "MEM_NOW", value_name = "TIME")]
    pub now: Option<String>,
    #[command(flatten)]
    pub common: Common,
}

/// One kind of thing pruned, or (kind `database`) the sizes before and after.
#[derive(serde::Serialize)]
#[serde(remote = "Self")]
struct Pruned {
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    rows: Option<u64>,
    bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    size_before: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    size_after: Option<u64>,
    dry_run: bool,
}
memkit_core::record!(Pruned = "pruned");

pub fn run(args: Args, io: &mut Io) -> Result<Outcome> {
    let home = config::data_home();
    let cfg = Config::load(&home)?;
    let raw_days = match args.days {
        Some(d) => d,
        None => config::RAW_RESPONSE_DAYS.get(&cfg)?,
    };
    let cache_days = config::EMBED_CACHE_DAYS.get(&cfg)?;
    let now = match args.now.as_deref() {
        Some(t) => {
            store::parse_instant(t)
                .ok_or_else(|| Error::Usage(format!("--now: {t:?}: {}", store::DATE_HINT)))?
                .0
        }
        None => chrono::Utc::now(),
    };
    let opts = Options {
        raw_days,
        log_days: args.log_days,
        cache_days,
        now,
        dry_run: args.dry_run,
    };
    let Some(run) = crate::prune::run(&home, &cfg, &opts)? else {
        return Ok(io.no_memories(&cfg.home.db()));
    };
    io.notices(&run.notices);
    io.info(format!("vacuum: {}", run.vacuum));
    let mut recs: Vec<Pruned> = run
        .kinds
        .iter()
        .map(|k| Pruned {
            kind: k.kind,
            rows: Some(k.rows),
            bytes: k.bytes,
            size_before: None,
            size_after: None,
            dry_run: args.dry_run,
        })
        .collect();
    recs.push(Pruned {
        kind: "database",
        rows: None,
        bytes: run.size_before.saturating_sub(run.size_after),
        size_before: Some(run.size_before),
        size_after: Some(run.size_after),
        dry_run: args.dry_run,
    });
    io.listing(
        &recs,
        &[
            "kind",
            "rows",
            "bytes",
            "size_before",
            "size_after",
            "dry_run",
        ],
    )?;
    Ok(Outcome::Ok)
}
