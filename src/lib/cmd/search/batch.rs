//! `mem-search --batch FILE`: one query per JSON line over the flags' query; every hit tagged
//! with its query's id.

use std::path::Path;

use crate::cli::{Input, Io, Outcome};
use crate::search::batch::BatchLine;
use crate::search::{self, Here, Query, Searcher};
use crate::{Error, Result};

pub(super) fn run(
    io: &mut Io,
    s: &Searcher,
    here: &mut Here,
    path: &Path,
    base: &Query,
) -> Result<Outcome> {
    let mut input = Input::open(path)?;
    let name = input.name().to_string();
    let mut any = false;
    let mut warned = false;
    while let Some((no, v)) = input.next(io)? {
        let line: BatchLine = match serde_json::from_value(v) {
            Ok(q) => q,
            Err(e) => {
                input.bad(io, no, format!("invalid query line: {e}"));
                continue;
            }
        };
        let id = line.id.clone();
        let q = line.query(base, &mut |l| {
            capped_limit(io, &format!("{name}:{no}: limit"), l);
        });
        let q = match q {
            Ok(q) => q,
            Err(e) => {
                input.bad(io, no, e);
                continue;
            }
        };
        let req = s.request(q, here.project.clone(), || here.files());
        let hits = match req.and_then(|r| s.search(&r)) {
            Ok(h) => h,
            Err(e) if matches!(e.root(), Error::Usage(_) | Error::Input { .. }) => {
                input.bad(io, no, e);
                continue;
            }
            Err(e) => return Err(e),
        };
        if !warned && (hits.iter().any(|h| h.mode == "fts") || s.embed_error.borrow().is_some()) {
            io.notices(&s.degraded(&hits));
            warned = true;
        }
        any |= !hits.is_empty();
        for mut h in hits {
            h.query_id = Some(id.clone());
            io.record(&h)?;
        }
    }
    input.finish()?;
    Ok(if any {
        Outcome::Ok
    } else {
        Outcome::NothingFound
    })
}

/// The limit actually used (a line's, or --limit's), with a warning when the asked one is past
/// the cap.
pub(super) fn capped_limit(io: &Io, what: &str, limit: usize) -> usize {
    if limit > search::MAX_LIMIT {
        io.warn(format!(
            "{what} {limit}: at most {} hits are returned",
            search::MAX_LIMIT
        ));
    }
    limit.min(search::MAX_LIMIT)
}
