//! Reading the remote's files from where the last sync stopped: others' lines become (or
//! supersede, or forget) memories here, labelled with who they came from; this machine's own
//! lines tell it what the remote holds of its records (what a run killed between its commit
//! and its bookkeeping left unrecorded). A file is read in one transaction with its new
//! offset, so a killed run neither loses nor takes twice.

use std::io::{Read as _, Seek, SeekFrom};
use std::path::Path;

use rusqlite::Connection;
use serde::Deserialize;

use crate::notice::Notice;
use crate::record::{OBSERVATION_TYPES, Observation};
use crate::store::learnings::CATEGORIES;
use crate::store::sync::{self as st, LearningIn, Put, SessionIn, Taken};
use crate::store::{self, observations};
use crate::{Error, Result};

use super::wire::{self, LearningBody, Line, Me, ObservationBody, Read, SessionBody};

/// Notices of bad lines told per run at most; the rest are counted.
const TOLD: usize = 10;

/// What reading the remote did.
#[derive(Debug, Default)]
pub struct Intake {
    /// Others' records stored here, new or in a newer version.
    pub imported: u64,
    /// Others' records their origin forgot, taken out here.
    pub removed: u64,
    /// Lines left alone: malformed, or from a newer memkit.
    pub skipped: u64,
    pub notices: Vec<Notice>,
}

/// Reads `path` (relative to the clone at `tree`) past its offset. `root`: the local root its
/// project's memories go to (`None`: only this machine's own lines are read from it, and
/// others' wait for the project to be here).
pub fn file(
    conn: &Connection,
    me: &Me,
    tree: &Path,
    path: &str,
    root: Option<&str>,
    out: &mut Intake,
) -> Result<()> {
    let full = tree.join(path);
    let mut f = std::fs::File::open(&full)?;
    let size = f.metadata()?.len();
    let (mut offset, mut lines) = st::offset(conn, path)?;
    if offset == size {
        return Ok(());
    }
    // A file only grows: one that is shorter, or whose offset is not a line's end, was
    // rewritten by hand, and is read again from its start (taking a line twice does nothing).
    let at_line_end = offset == 0 || {
        let mut b = [0u8; 1];
        f.seek(SeekFrom::Start(offset - 1))?;
        f.read_exact(&mut b).is_ok() && b[0] == b'\n'
    };
    if offset > size || !at_line_end {
        (offset, lines) = (0, 0);
    }
    let mut bytes = Vec::with_capacity((size - offset) as usize);
    f.seek(SeekFrom::Start(offset))?;
    f.read_to_end(&mut bytes)?;
    // A last line without its newline is being written (or was cut): left for later.
    let Some(end) = bytes.iter().rposition(|&b| b == b'\n') else {
        return Ok(());
    };
    let now = store::now();
    store::write_tx(conn, |tx| {
        for raw in bytes[..end].split(|&b| b == b'\n') {
            lines += 1;
            let text = String::from_utf8_lossy(raw);
            if text.trim().is_empty() {
                continue;
            }
            let bad = |why: String, out: &mut Intake| {
                out.skipped += 1;
                if out.skipped as usize <= TOLD {
                    out.notices.push(Notice::warn(format!(
                        "sync remote {path}:{lines}: skipped: {why}"
                    )));
                }
            };
            match wire::read(&text) {
                Read::Newer(v) => bad(
                    format!("written by a newer memkit (record version {v})"),
                    out,
                ),
                Read::Malformed(why) => bad(why, out),
                Read::Line(l) if l.origin == me.origin => own(tx, &l)?,
                Read::Line(l) => {
                    if let Some(root) = root
                        && let Err(why) = other(tx, &l, root, &now, out)
                    {
                        bad(why, out);
                    }
                }
            }
        }
        let read = offset + end as u64 + 1;
        // Others' lines of a project not here are read again once it is.
        if root.is_some() || others_absent(&bytes[..end], me) {
            st::set_offset(tx, path, read, lines)?;
        }
        Ok(())
    })
}

/// Whether every line of `bytes` is this machine's own (so nothing waits in them for a
/// project to be here).
fn others_absent(bytes: &[u8], me: &Me) -> bool {
    let needle = format!("\"origin\":\"{}\"", me.origin);
    bytes
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .all(|l| String::from_utf8_lossy(l).contains(&needle))
}

/// One of this machine's own lines: what the remote holds of its record.
fn own(conn: &Connection, l: &Line) -> Result<()> {
    match (l.op.as_str(), &l.body) {
        ("put", Some(body)) => {
            let born = match l.kind.as_str() {
                "session" => body.get("started_at"),
                _ => body.get("created_at"),
            }
            .and_then(|v| v.as_str())
            .unwrap_or("");
            let local = l.local.clone().unwrap_or_default();
            st::put(
                conn,
                &Put {
                    gid: &l.gid,
                    kind: &l.kind,
                    local: &local,
                    born,
                    project: &l.project,
                    stamp: None,
                    hash: &wire::hash(&l.kind, body),
                },
            )
        }
        _ => st::unexport(conn, &l.gid),
    }
}

/// Another machine's line, applied to the project rooted at `root`; `Err` says why it is
/// malformed.
fn other(
    conn: &Connection,
    l: &Line,
    root: &str,
    now: &str,
    out: &mut Intake,
) -> std::result::Result<(), String> {
    let was = st::imported(conn, &l.gid).map_err(|e| e.to_string())?;
    let state = was.as_ref().map(|w| w.state.as_str());
    let store_err = |e: Error| e.to_string();
    if l.op == "forget" {
        if matches!(state, Some("forgotten")) {
            return Ok(());
        }
        if matches!(state, Some("live")) {
            out.removed += 1;
        }
        let local = was.as_ref().and_then(|w| w.local.as_deref());
        let t = Taken {
            gid: &l.gid,
            kind: &l.kind,
            local,
            origin: &l.origin,
            name: &l.name,
            hash: None,
            state: "forgotten",
        };
        return st::record_import(conn, &t).map_err(store_err);
    }
    let body = l.body.clone().unwrap_or_default();
    let hash = wire::hash(&l.kind, &body);
    match state {
        Some("hidden" | "forgotten") => return Ok(()),
        Some(_) if was.as_ref().and_then(|w| w.hash.as_deref()) == Some(hash.as_str()) => {
            return Ok(());
        }
        _ => {}
    }
    let local = was.as_ref().and_then(|w| w.local.clone());
    let name = super::key::name(&l.name);
    let stored = match l.kind.as_str() {
        "observation" => observation(conn, &body, root, local.as_deref(), &name, now)?,
        "session" => session(conn, &body, root, &name, now)?,
        _ => learning(conn, &body, root, local.as_deref(), &name, now)?,
    };
    let t = Taken {
        gid: &l.gid,
        kind: &l.kind,
        local: stored.as_deref(),
        origin: &l.origin,
        name: &name,
        hash: Some(&hash),
        // A session of this machine with the same id keeps its place: the import is hidden.
        state: if stored.is_some() { "live" } else { "hidden" },
    };
    st::record_import(conn, &t).map_err(store_err)?;
    if stored.is_some() {
        out.imported += 1;
    }
    Ok(())
}

fn parse<'a, T: Deserialize<'a>>(body: &'a serde_json::Value) -> std::result::Result<T, String> {
    T::deserialize(body).map_err(|e| format!("bad body: {e}"))
}

/// A path of the remote's as one here: relative ones are under the project's root.
fn here(files: Vec<String>, root: &str) -> Vec<String> {
    files
        .into_iter()
        .map(|f| {
            if crate::project::is_absolute(&f) || f.is_empty() {
                f
            } else {
                crate::project::join(root, &f)
            }
        })
        .collect()
}

fn observation(
    conn: &Connection,
    body: &serde_json::Value,
    root: &str,
    local: Option<&str>,
    name: &str,
    now: &str,
) -> std::result::Result<Option<String>, String> {
    let b: ObservationBody = parse(body)?;
    if !OBSERVATION_TYPES.contains(&b.kind.as_str()) {
        return Err(format!("unknown observation type {:?}", b.kind));
    }
    if b.title.trim().is_empty() {
        return Err("an observation without a title".into());
    }
    let mut o = Observation {
        session_id: b.session_id,
        project: Some(root.to_string()),
        kind: b.kind,
        title: b.title,
        summary: b.summary,
        detail: b.detail,
        facts: b.facts,
        concepts: b.concepts,
        tags: b.tags,
        files_read: here(b.files_read, root),
        files_modified: here(b.files_modified, root),
        functions_changed: b.functions_changed,
        is_manual: b.is_manual,
        created_at: Some(b.created_at),
        origin: Some(name.to_string()),
        ..Default::default()
    };
    let e = |e: Error| e.to_string();
    let id = match local.and_then(|l| l.parse::<i64>().ok()) {
        Some(id) => {
            o.id = Some(id);
            observations::replace_imported(conn, &o, now).map_err(e)?;
            id
        }
        None => {
            let id = observations::insert(conn, &o, o.is_manual, now).map_err(e)?;
            st::set_origin(conn, "observation", &id.to_string(), name).map_err(e)?;
            crate::store::projects::upsert(conn, root, &crate::project::name_of(root), "git")
                .map_err(e)?;
            id
        }
    };
    Ok(Some(id.to_string()))
}

fn session(
    conn: &Connection,
    body: &serde_json::Value,
    root: &str,
    name: &str,
    now: &str,
) -> std::result::Result<Option<String>, String> {
    let b: SessionBody = parse(body)?;
    if b.session_id.trim().is_empty() || b.summary.trim().is_empty() {
        return Err("a session without an id or a summary".into());
    }
    let key_files = here(b.key_files, root);
    let s = SessionIn {
        session_id: &b.session_id,
        project: root,
        branch: b.branch.as_deref(),
        title: b.title.as_deref(),
        summary: &b.summary,
        key_files: &key_files,
        key_decisions: &b.key_decisions,
        started_at: b.started_at.as_deref(),
        ended_at: b.ended_at.as_deref(),
        origin: name,
        now,
    };
    let stored = st::upsert_session(conn, &s).map_err(|e| e.to_string())?;
    if stored {
        crate::store::projects::upsert(conn, root, &crate::project::name_of(root), "git")
            .map_err(|e| e.to_string())?;
    }
    Ok(stored.then_some(b.session_id))
}

fn learning(
    conn: &Connection,
    body: &serde_json::Value,
    root: &str,
    local: Option<&str>,
    name: &str,
    now: &str,
) -> std::result::Result<Option<String>, String> {
    let b: LearningBody = parse(body)?;
    if !CATEGORIES.contains(&b.category.as_str()) {
        return Err(format!("unknown learning category {:?}", b.category));
    }
    if b.content.trim().is_empty() || !(0.0..=1.0).contains(&b.confidence) {
        return Err("a learning without content or with a confidence out of 0..1".into());
    }
    let l = LearningIn {
        project: root,
        content: &b.content,
        category: &b.category,
        confidence: b.confidence,
        evidence: b.evidence.as_deref(),
        is_manual: b.is_manual,
        is_active: b.is_active,
        created_at: &b.created_at,
        origin: name,
    };
    let e = |e: Error| e.to_string();
    let id = match local.and_then(|l| l.parse::<i64>().ok()) {
        Some(id) => {
            st::update_learning(conn, id, &l, now).map_err(e)?;
            id
        }
        None => st::insert_learning(conn, &l, now).map_err(e)?,
    };
    Ok(Some(id.to_string()))
}
