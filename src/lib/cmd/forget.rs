//! `mem forget`: delete memories everywhere (database, vectors, indexes) and say what went.

use crate::cli::{Io, Outcome};
use crate::config::{self, Config};
use crate::store::forget::Target;
use crate::store::{self, projects};
use crate::{Error, Result};

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("what").required(true).args(["obs", "session", "project", "text"])))]
pub struct ForgetArgs {
    /// Observations (17, o17 or #17; comma-separated or repeated).
    #[arg(long, value_name = "ID", value_delimiter = ',', num_args = 1..)]
    pub obs: Vec<String>,
    /// A session: s17 (its number) or its session id.
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Every session and note of a project (its directory, stored root or name).
    #[arg(long, value_name = "P")]
    pub project: Option<String>,
    /// Everything whose text contains TEXT (ASCII letters in any case).
    #[arg(long = "match", value_name = "TEXT")]
    pub text: Option<String>,
    /// Delete nothing; print what would go.
    #[arg(long)]
    pub dry_run: bool,
}

/// One kind of thing forgotten.
#[derive(serde::Serialize)]
#[serde(remote = "Self")]
struct Forgotten {
    kind: &'static str,
    rows: u64,
    dry_run: bool,
}
memkit_core::record!(Forgotten = "forgotten");

pub fn run(args: ForgetArgs, io: &mut Io) -> Result<Outcome> {
    let home = config::data_home();
    let cfg = Config::load(&home)?;
    let path = cfg.home.db();
    let Some(conn) = store::open_if_present(&path)? else {
        return Ok(io.no_memories(&path));
    };
    let dry_run = args.dry_run;
    let target = target(args, &conn)?;
    // A pipeline run that read the rows before they went could index them again after the
    // rebuild: forgetting waits for it, and no run starts meanwhile.
    let _lock = if dry_run {
        None
    } else {
        Some(crate::pipeline::wait_lock(&home, "mem forget")?)
    };
    let run = crate::forget::run(&home, &cfg, &conn, &target, dry_run)?;
    for m in &run.forgot.missing {
        io.warn(format!("nothing stored for {m}"));
    }
    for (name, n) in &run.hidden {
        io.warn(format!(
            "{n} of them came from {name} through mem sync: forgotten here only, {name} keeps them (forget them there to forget them everywhere)"
        ));
    }
    if run.unshared > 0 {
        io.tell(format!(
            "{} shared through mem sync: the next sync forgets them on the remote and on every machine",
            run.unshared
        ));
    }
    run.finished?;
    let recs: Vec<Forgotten> = run
        .forgot
        .gone
        .iter()
        .map(|g| Forgotten {
            kind: g.kind,
            rows: g.rows,
            dry_run,
        })
        .collect();
    io.listing(&recs, &["kind", "rows", "dry_run"])?;
    Ok(if run.forgot.total() == 0 {
        Outcome::NothingFound
    } else {
        Outcome::Ok
    })
}

/// What the flags name (a project resolved to its stored roots).
fn target(args: ForgetArgs, conn: &rusqlite::Connection) -> Result<Target> {
    if !args.obs.is_empty() {
        return Ok(Target::Obs(
            args.obs
                .iter()
                .map(|s| crate::ids::parse_obs(s, "--obs"))
                .collect::<Result<_>>()?,
        ));
    }
    if let Some(s) = args.session {
        if s.trim().is_empty() {
            return Err(Error::Usage("--session: empty session id".into()));
        }
        return Ok(Target::Session(s.trim().to_string()));
    }
    if let Some(p) = args.project {
        if p.trim().is_empty() {
            return Err(Error::Usage("--project: empty project".into()));
        }
        return Ok(Target::Project(projects::resolve(conn, &p)?));
    }
    let t = args.text.unwrap_or_default();
    // A short text would match half the memories by accident.
    if t.trim().chars().count() < 3 {
        return Err(Error::Usage(format!(
            "--match: {t:?} is too short (3 characters at least)"
        )));
    }
    Ok(Target::Match(t))
}
