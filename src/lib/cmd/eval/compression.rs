//! mem-eval compression: stored observations scored against the captures they came from.

use crate::cli::{Io, Outcome};
use crate::store;
use crate::{Error, Result};

#[derive(Debug, clap::Args)]
pub struct CompressionArgs {
    /// Score the newest N observations only.
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Observations made on or after DATE (YYYY-MM-DD or an ISO datetime).
    #[arg(long, value_name = "DATE")]
    pub since: Option<String>,
    /// Observations of one project (its name or root path).
    #[arg(long, value_name = "P")]
    pub project: Option<String>,
    /// Also have the LLM backend (MEM_LLM) judge each observation by question-answer
    /// generation; its calls count against MEM_LLM_DAILY_TOKENS.
    #[arg(long)]
    pub qag: bool,
}

pub fn run(a: CompressionArgs, io: &mut Io) -> Result<Outcome> {
    let since = match &a.since {
        Some(s) => Some(
            store::parse_time(s)
                .ok_or_else(|| Error::Usage(format!("--since {s:?}: {}", store::DATE_HINT)))?,
        ),
        None => None,
    };
    if a.limit == Some(0) {
        return Err(Error::Usage("--limit takes a number above 0".into()));
    }
    let Some((_, cfg, conn)) = super::shared::open_store(io)? else {
        return Ok(Outcome::NothingFound);
    };
    let sel = memkit_core::store::stats::Selection {
        since,
        project: a.project.clone(),
        limit: a.limit,
    };
    let mut judge = None;
    if a.qag {
        let (b, notice) = crate::llm::Backend::from_config(&cfg, None)?;
        if b.kind == crate::llm::Kind::Heuristic {
            return Err(Error::Usage(format!(
                "--qag needs an LLM backend: set MEM_LLM to anthropic, openai or claude-cli{}",
                notice.map(|n| format!(" ({n})")).unwrap_or_default()
            )));
        }
        let cap = crate::config::LLM_DAILY_TOKENS.get(&cfg)?;
        judge = Some(memkit_eval::qag::Judge::new(b, cap, &conn)?);
    }
    let (scores, report) = memkit_eval::compression::run(&conn, &sel, judge.as_mut())?;
    if let Some(j) = &judge {
        if let Some(why) = &j.stopped {
            io.warn(format!("the judge stopped: {why}"));
        }
        io.info(format!(
            "judge: {} calls, {} tokens spent today",
            j.calls, j.spent
        ));
    }
    if scores.is_empty() {
        io.warn("no compressed observation matches");
        return Ok(Outcome::NothingFound);
    }
    // The judge's columns only when it judged.
    let qag: &[&str] = if a.qag {
        &["qag_coverage", "qag_alignment"]
    } else {
        &[]
    };
    let mut columns = vec![
        "id",
        "obs_type",
        "title",
        "captures",
        "valid",
        "grounded",
        "ratio",
        "title_score",
    ];
    columns.extend(qag);
    columns.push("faults");
    io.listing(&scores, &columns)?;
    let mut columns = vec![
        "set",
        "observations",
        "valid",
        "grounded",
        "ratio",
        "ratio_mean",
        "title_score",
        "title_pass",
        "clean",
    ];
    if a.qag {
        columns.push("qag_judged");
    }
    columns.extend(qag);
    io.listing(&[report], &columns)?;
    Ok(Outcome::Ok)
}
