//! `mem doctor [--fix]`: each check of the memory with its verdict and the command that fixes
//! it; `--fix` runs the fixes (`crate::doctor`), then the pipeline, and says what they did.

use serde::Serialize;

use crate::Result;
use crate::cli::{Io, Outcome};
use crate::config::{self, Config};
use crate::doctor::Verdict;

#[derive(Debug, Serialize)]
#[serde(remote = "Self")]
pub struct Check {
    pub check: &'static str,
    pub ok: bool,
    pub detail: String,
    /// The command that fixes it (empty when nothing needs doing).
    pub fix: String,
    /// With --fix: whether the fix ran and the check passes now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fixed: Option<bool>,
}
memkit_core::record!(Check = "check");

impl From<Verdict> for Check {
    fn from(v: Verdict) -> Check {
        Check {
            check: v.check.name(),
            ok: v.ok,
            detail: v.detail,
            fix: if v.ok {
                String::new()
            } else {
                v.check.fix_hint().to_string()
            },
            fixed: v.fixed,
        }
    }
}

pub fn run(fix_them: bool, io: &mut Io) -> Result<Outcome> {
    let home = config::data_home();
    let cfg = Config::load(&home)?;
    let Some(report) = crate::doctor::run(&home, &cfg, fix_them)? else {
        return Ok(io.no_memories(&cfg.home.db()));
    };
    io.notices(&report.notices);
    let found: Vec<Check> = report.verdicts.into_iter().map(Check::from).collect();
    io.listing(&found, &["check", "ok", "detail", "fix", "fixed"])?;
    let healthy = found.iter().all(|c| c.ok || c.fixed == Some(true));
    for c in found.iter().filter(|c| !c.ok && c.fixed != Some(true)) {
        io.warn(format!("{}: {} (fix: {})", c.check, c.detail, c.fix));
    }
    Ok(if healthy {
        Outcome::Ok
    } else {
        Outcome::NothingFound
    })
}
