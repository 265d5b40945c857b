//! `mem forget`: delete memories everywhere (database, vectors, indexes) and say what went.

use crate::cli::{Io, Outcome};
use crate::config::{self, Config};
use crate::index::{self, Layout, Options};
use crate::store::forget::{self, Target};
use crate::store::{self, projects};
use crate::{Context, Error, Result};

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
struct Forgotten {
    r#type: &'static str,
    v: u32,
    kind: &'static str,
    rows: u64,
    dry_run: bool,
}

pub fn run(args: ForgetArgs, io: &mut Io) -> Result<Outcome> {
    let home = config::data_home();
    let cfg = Config::load(&home)?;
    let path = cfg.db_path();
    let Some(conn) = store::open_if_present(&path)? else {
        return Ok(io.no_memories(&path));
    };
    let target = if !args.obs.is_empty() {
        Target::Obs(
            args.obs
                .iter()
                .map(|s| crate::ids::parse_obs(s, "--obs"))
                .collect::<Result<_>>()?,
        )
    } else if let Some(s) = args.session {
        if s.trim().is_empty() {
            return Err(Error::Usage("--session: empty session id".into()));
        }
        Target::Session(s.trim().to_string())
    } else if let Some(p) = args.project {
        if p.trim().is_empty() {
            return Err(Error::Usage("--project: empty project".into()));
        }
        Target::Project(projects::resolve(&conn, &p)?)
    } else {
        let t = args.text.unwrap_or_default();
        // A short text would match half the memories by accident.
        if t.trim().chars().count() < 3 {
            return Err(Error::Usage(format!(
                "--match: {t:?} is too short (3 characters at least)"
            )));
        }
        Target::Match(t)
    };
    // A pipeline run that read the rows before they went could index them again after the
    // rebuild: forgetting waits for it, and no run starts meanwhile.
    let _lock = if args.dry_run {
        None
    } else {
        Some(crate::pipeline::wait_lock(&home, "mem forget")?)
    };
    let mut done = forget::forget(&conn, &target, args.dry_run)?;
    // Events a hook spooled while the database was busy would bring the text back.
    let spooled = crate::capture::spool::Spool::new(&home).forget(args.dry_run, |v, text| {
        let session = v["session_id"].as_str().unwrap_or("");
        match &target {
            Target::Obs(_) => false,
            Target::Session(_) => done.sessions.iter().any(|s| s == session),
            Target::Project(roots) => {
                let cwd = v["cwd"].as_str().unwrap_or("");
                done.sessions.iter().any(|s| s == session)
                    || roots.iter().any(|r| {
                        cwd == r
                            || cwd
                                .strip_prefix(r.as_str())
                                .is_some_and(|x| x.starts_with('/'))
                    })
            }
            Target::Match(t) => {
                let (lower, t) = (text.to_lowercase(), t.to_lowercase());
                let esc = serde_json::to_string(&t).unwrap_or_default();
                lower.contains(&t) || lower.contains(esc.trim_matches('"'))
            }
        }
    })?;
    done.gone.push(forget::Gone {
        kind: "spooled",
        rows: spooled as u64,
    });
    for m in &done.missing {
        io.warn(format!("nothing stored for {m}"));
    }
    if !args.dry_run && done.total() > 0 {
        // The indexes hold the forgotten terms and vectors (deleted documents linger in
        // tantivy's segments and the vector files): they are built again from what is left.
        let layout = Layout::new(&home);
        if layout.state().exists() || layout.bm25().exists() {
            let mut opts = Options {
                rebuild: true,
                ..Options::default()
            };
            if let Some(q) = cfg.get("index_quantization") {
                opts.quantization = q;
            }
            let rebuilt = index::update(&conn, &layout, &opts).map_err_context(|| {
                format!(
                    "the database forgot, but rebuilding the indexes in {} failed (run mem-index --rebuild)",
                    layout.dir.display()
                )
            });
            // The file is scrubbed whatever became of the indexes.
            forget::scrub(&conn)?;
            rebuilt?;
        } else {
            forget::scrub(&conn)?;
        }
    }
    let recs: Vec<Forgotten> = done
        .gone
        .iter()
        .map(|g| Forgotten {
            r#type: "forgotten",
            v: crate::record::VERSION,
            kind: g.kind,
            rows: g.rows,
            dry_run: args.dry_run,
        })
        .collect();
    io.listing(&recs, &["kind", "rows", "dry_run"])?;
    Ok(if done.total() == 0 {
        Outcome::NothingFound
    } else {
        Outcome::Ok
    })
}
