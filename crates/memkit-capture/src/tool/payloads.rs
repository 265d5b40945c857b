//! `mem-capture FILE`: hook payloads from JSONL, stored as the hooks would have, a batch per
//! transaction.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use rusqlite::Connection;
use serde_json::Value;

use crate::{Origin, Policy, Stored};
use memkit_core::Result;
use memkit_core::cli::{Input, Io, Outcome};
use memkit_core::config::Config;
use memkit_core::hook::HookPayload;
use memkit_core::project::{self, Project};
use memkit_core::store;

/// Payloads stored per transaction by `mem-capture FILE`.
const PAYLOAD_BATCH: usize = 500;

/// Reads `input` a line at a time, makes each good line an item with `parse` (`None`: nothing to
/// store), and stores the items `size` at a time, one transaction per batch: the input streams,
/// and the write lock is held only while a batch is written, never while waiting on a slow pipe
/// (hooks would spool).
pub(super) fn store_batched<T>(
    io: &Io,
    input: &mut Input,
    conn: &Connection,
    size: usize,
    mut parse: impl FnMut(&mut Input, usize, Value) -> Result<Option<T>>,
    mut put: impl FnMut(&Connection, T) -> Result<()>,
) -> Result<()> {
    let mut batch: Vec<T> = Vec::new();
    loop {
        let next = input.next(io)?;
        let end = next.is_none();
        if let Some((no, value)) = next
            && let Some(item) = parse(input, no, value)?
        {
            batch.push(item);
        }
        if (end || batch.len() >= size) && !batch.is_empty() {
            store::write_tx(conn, |tx| {
                for item in batch.drain(..) {
                    put(tx, item)?;
                }
                Ok(())
            })?;
        }
        if end {
            return Ok(());
        }
    }
}

/// `mem-capture FILE`: hook payloads as JSONL, stored as the hooks would have.
pub(super) fn run(io: &mut Io, cfg: &Config, policy: &Policy, path: &Path) -> Result<Outcome> {
    let start = Instant::now();
    let mut input = Input::open(path)?;
    let conn = store::open(&cfg.home.db())?;
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    store_batched(
        io,
        &mut input,
        &conn,
        PAYLOAD_BATCH,
        |_, _, mut value| {
            crate::sanitize(&mut value);
            Ok(Some(HookPayload::from_value(value).expect("an object")))
        },
        |tx, payload| store_payload(tx, policy, &payload, &mut counts),
    )?;
    counts.insert("bad_lines".into(), input.bad_lines());
    io.summary(counts, start)?;
    input.finish()?;
    Ok(Outcome::Ok)
}

/// A live payload's project and origin, or `None` when MEM_EXCLUDE excludes its project (then
/// nothing of it is stored).
pub(super) fn admit(
    policy: &Policy,
    payload: &HookPayload,
) -> Option<(Option<(Project, String)>, Origin)> {
    let project = project_for(payload.cwd.as_deref());
    if let Some((pr, dir)) = &project
        && policy.excluded(pr, Some(dir))
    {
        return None;
    }
    let origin = Origin {
        kind: "hook",
        at: store::now(),
        key: None,
    };
    Some((project, origin))
}

/// Stores one payload of `mem-capture FILE` (unless its project is excluded), counting it.
fn store_payload(
    tx: &Connection,
    policy: &Policy,
    payload: &HookPayload,
    counts: &mut BTreeMap<String, u64>,
) -> Result<()> {
    let Some((project, origin)) = admit(policy, payload) else {
        *counts.entry("excluded".into()).or_default() += 1;
        return Ok(());
    };
    let s = crate::store_event(tx, policy, payload, &origin, project.as_ref().map(|p| &p.0))?;
    *counts.entry("events".into()).or_default() += 1;
    add_stored(counts, &s);
    Ok(())
}

fn add_stored(counts: &mut BTreeMap<String, u64>, s: &Stored) {
    *counts.entry("queued".into()).or_default() += s.queued as u64;
    *counts.entry("duplicates".into()).or_default() += s.duplicates as u64;
    *counts.entry("skipped".into()).or_default() += s.skipped.len() as u64;
}

/// The project an event belongs to (see `project::dir`) and its directory.
fn project_for(cwd: Option<&str>) -> Option<(Project, String)> {
    let dir = project::dir(cwd)?;
    Some((project::identify(&dir), dir))
}
