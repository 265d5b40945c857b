//! `mem-capture --note` and `--notes FILE`: notes saved by hand, one or a file of them.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::Instant;

use super::payloads::store_batched;
use crate::{Note, Policy, note, store_note};
use memkit_core::cli::{Input, Io, Outcome};
use memkit_core::config::Config;
use memkit_core::project::Project;
use memkit_core::store;
use memkit_core::{Error, Result};

/// `mem-capture --note TEXT`: one note, printed as the capture it became.
pub(super) fn note(
    io: &mut Io,
    cfg: &Config,
    text: &str,
    tags: &[String],
    project: Option<&str>,
) -> Result<Outcome> {
    if text.trim().is_empty() {
        return Err(Error::Usage("--note needs some text".into()));
    }
    let policy = Policy::from_config(cfg)?;
    let conn = store::open(&cfg.home.db())?;
    let n = Note {
        text: text.to_string(),
        tags: tags.to_vec(),
        ..Default::default()
    };
    let (id, _) = note::save(&conn, &policy, &n, project)?;
    let rec = store::queue::capture(&conn, id)?;
    io.listing(
        &[rec],
        &["id", "event", "project", "priority", "created_at"],
    )?;
    Ok(Outcome::Ok)
}

/// Notes stored per transaction by `--notes`.
const NOTE_BATCH: usize = 1000;

/// `mem-capture --notes FILE`: many notes in one process, with their own dates, tags and ids.
pub(super) fn notes(
    io: &mut Io,
    cfg: &Config,
    path: &Path,
    project: Option<&str>,
) -> Result<Outcome> {
    let start = Instant::now();
    let policy = Policy::from_config(cfg)?;
    let mut input = Input::open(path)?;
    let conn = store::open(&cfg.home.db())?;
    let default = note::project(&conn, project)?;
    let mut projects: HashMap<String, (Option<Project>, Option<String>)> = HashMap::new();
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut stored: BTreeMap<String, u64> = BTreeMap::new();
    store_batched(
        io,
        &mut input,
        &conn,
        NOTE_BATCH,
        |input, no, v| match note::parse_line(&v) {
            Err(why) => {
                input.bad(io, no, why);
                Ok(None)
            }
            Ok((one, named)) => {
                let (pr, dir) = match named {
                    None => default.clone(),
                    Some(n) => match projects.get(&n) {
                        Some(p) => p.clone(),
                        None => {
                            let p = note::project(&conn, Some(&n))?;
                            projects.insert(n, p.clone());
                            p
                        }
                    },
                };
                if pr
                    .as_ref()
                    .is_some_and(|p| policy.excluded(p, dir.as_deref()))
                {
                    *counts.entry("excluded".into()).or_default() += 1;
                    return Ok(None);
                }
                Ok(Some((one, pr)))
            }
        },
        |tx, (one, pr)| {
            let key = match store_note(tx, &one, pr.as_ref())? {
                Some(_) => "queued",
                None => "duplicates",
            };
            *stored.entry(key.into()).or_default() += 1;
            Ok(())
        },
    )?;
    counts.extend(stored);
    counts.insert("bad_lines".into(), input.bad_lines());
    io.summary(counts, start)?;
    input.finish()?;
    Ok(Outcome::Ok)
}
