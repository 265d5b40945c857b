//! `mem-capture --transcripts`: a whole history of transcripts into the queue, in bounded
//! memory and resumable. Files are read and parsed a batch at a time on every core while the
//! previous batch is stored, one file per transaction; each file's transaction also records its
//! size and modification time, so a rerun (after kill -9, or tomorrow's import of the same
//! `~/.claude/projects`) reads only files that are new or changed. Summary lines title their
//! sessions at the end of a run, from what this run read and, for a leaf in a file an earlier
//! run imported, from that file's text; titles an interrupted run did not set wait in the
//! store for the next run.

use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use rusqlite::Connection;

use crate as capture;
use crate::transcript::{self, Parsed};
use crate::{Policy, Stored};
use memkit_core::config::Config;
use memkit_core::notice::Notice;
use memkit_core::project;
use memkit_core::record::Session;
use memkit_core::store::{self, imports};
use memkit_core::{Error, Result};

/// Bytes of transcript parsed at once: a parsed file holds several times its size, and two
/// batches are alive at a time (one stored while the next is parsed, then waits to be handed
/// over).
const BATCH_BYTES: u64 = 16 << 20;

struct File {
    path: PathBuf,
    stamp: imports::Stamp,
}

/// What an import tells as it goes.
pub enum Progress {
    /// Before any file is read: the files to read (the others are unchanged) and their bytes.
    Start { files: usize, bytes: u64 },
    /// A file was stored: its bytes.
    Stored(u64),
    /// A line of a transcript was skipped: the warning naming it.
    BadLine(Notice),
}

/// What an import did.
pub struct Imported {
    /// One record per session read, in session-id order.
    pub sessions: Vec<Session>,
    /// The summary's counts.
    pub counts: BTreeMap<String, u64>,
    /// Lines skipped (each told through [`Progress::BadLine`]).
    pub bad: u64,
}

/// Imports `files`: those whose recorded stamp still matches are not read again.
pub fn run(
    cfg: &Config,
    policy: &Policy,
    files: &[PathBuf],
    on: &mut dyn FnMut(Progress),
) -> Result<Imported> {
    let conn = store::open(&cfg.home.db())?;
    let mut all = Vec::with_capacity(files.len());
    for f in files {
        let meta =
            std::fs::metadata(f).map_err(|e| Error::input(f.display().to_string(), None, e))?;
        let path = std::fs::canonicalize(f).unwrap_or_else(|_| f.clone());
        let mtime_ns = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos() as i64);
        all.push(File {
            stamp: imports::Stamp {
                path: path.display().to_string(),
                size: meta.len() as i64,
                mtime_ns,
            },
            path,
        });
    }
    let keys: Vec<&str> = all.iter().map(|f| f.stamp.path.as_str()).collect();
    let known = imports::stamps(&conn, &keys)?;
    let (todo, unchanged): (Vec<File>, Vec<File>) = all
        .into_iter()
        .partition(|f| known.get(&f.stamp.path) != Some(&f.stamp));
    on(Progress::Start {
        files: todo.len(),
        bytes: todo.iter().map(|f| f.stamp.size as u64).sum(),
    });

    let mut run = Run::default();
    // The same keys every run, a rerun that reads nothing included.
    for k in [
        "files",
        "sessions",
        "prompts",
        "tool_calls",
        "queued",
        "duplicates",
        "skipped",
        "unpaired",
    ] {
        run.counts.insert(k.into(), 0);
    }
    run.counts
        .insert("files_unchanged".into(), unchanged.len() as u64);
    // Parsing runs on rayon's threads one batch ahead of the store, which writes on this one.
    std::thread::scope(|s| -> Result<()> {
        let (tx, rx) = std::sync::mpsc::sync_channel::<(&[File], Result<Vec<Parsed>>)>(0);
        let todo = &todo;
        s.spawn(move || {
            for b in batches(todo) {
                if tx.send((b, parse_batch(b))).is_err() {
                    return;
                }
            }
        });
        for (files, parsed) in rx {
            for (mut p, f) in parsed?.into_iter().zip(files) {
                for bl in &p.bad_lines {
                    on(Progress::BadLine(Notice::warn(Error::input(
                        p.path.display().to_string(),
                        Some(bl.line),
                        &bl.msg,
                    ))));
                    run.bad += 1;
                }
                run.owners(&p);
                run.store(&conn, policy, &mut p, &f.stamp)?;
                on(Progress::Stored(f.stamp.size as u64));
            }
        }
        Ok(())
    })?;
    let (summaries, titled) = run.titles(&conn, &unchanged)?;
    let mut counts = run.counts;
    let sessions: Vec<Session> = run.sessions.into_values().collect();
    for r in &sessions {
        *counts.entry("sessions".into()).or_default() += 1;
        *counts.entry("prompts".into()).or_default() += r.prompts as u64;
        *counts.entry("queued".into()).or_default() += r.queued as u64;
        *counts.entry("duplicates".into()).or_default() += r.duplicates as u64;
        *counts.entry("skipped".into()).or_default() += r.skipped as u64;
    }
    counts.insert("summaries".into(), summaries);
    counts.insert("titles_set".into(), titled);
    counts.insert("bad_lines".into(), run.bad);
    Ok(Imported {
        sessions,
        counts,
        bad: run.bad,
    })
}

/// Consecutive files of about [`BATCH_BYTES`] (a bigger file is a batch of its own).
fn batches(todo: &[File]) -> Vec<&[File]> {
    let mut out = vec![];
    let (mut from, mut bytes) = (0, 0u64);
    for (i, f) in todo.iter().enumerate() {
        if i > from && bytes + f.stamp.size as u64 > BATCH_BYTES {
            out.push(&todo[from..i]);
            (from, bytes) = (i, 0);
        }
        bytes += f.stamp.size as u64;
    }
    if from < todo.len() {
        out.push(&todo[from..]);
    }
    out
}

/// Every file of a batch read and parsed, in parallel; a file that cannot be read is an error.
fn parse_batch(files: &[File]) -> Result<Vec<Parsed>> {
    files
        .par_iter()
        .map(|f| {
            let bytes = std::fs::read(&f.path)
                .map_err(|e| Error::input(f.path.display().to_string(), None, e))?;
            Ok(transcript::parse(&f.path, &bytes))
        })
        .collect()
}

fn hash_of(s: &str) -> u64 {
    let mut h = std::hash::DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}

#[derive(Default)]
struct Run {
    sessions: BTreeMap<String, Session>,
    counts: BTreeMap<String, u64>,
    bad: u64,
    /// Which session each line read this run belongs to (a hash of its uuid), to find the
    /// session a summary's leafUuid names. Hashes, not strings: a big history has millions.
    owner: HashMap<u64, u32>,
    session_ids: Vec<String>,
    session_index: HashMap<String, u32>,
}

impl Run {
    fn owners(&mut self, p: &Parsed) {
        let Some(sid) = &p.session_id else { return };
        let n = *self.session_index.entry(sid.clone()).or_insert_with(|| {
            self.session_ids.push(sid.clone());
            (self.session_ids.len() - 1) as u32
        });
        for u in &p.uuids {
            self.owner.insert(hash_of(u), n);
        }
    }

    /// Stores one parsed transcript (unless its project is excluded) under its session's
    /// record, and records the file as imported in the same transaction.
    fn store(
        &mut self,
        conn: &Connection,
        policy: &Policy,
        p: &mut Parsed,
        stamp: &imports::Stamp,
    ) -> Result<()> {
        *self.counts.entry("files".into()).or_default() += 1;
        *self.counts.entry("tool_calls".into()).or_default() += p.tool_uses as u64;
        *self.counts.entry("unpaired".into()).or_default() += p.unpaired as u64;
        let pending = imports::PendingTitles {
            path: stamp.path.clone(),
            session_id: p.session_id.clone(),
            events: p.events.len(),
            summaries: std::mem::take(&mut p.summaries),
        };
        let now = store::now();
        let Some(sid) = p.session_id.clone() else {
            return store::write_tx(conn, |tx| imports::record(tx, stamp, &pending, &now));
        };
        let project = p.cwd.as_deref().map(|cwd| {
            let mut pr = project::identify(cwd);
            if pr.branch.is_none() {
                pr.branch = p.branch.clone();
            }
            (pr, cwd.to_string())
        });
        if let Some((pr, dir)) = &project
            && policy.excluded(pr, Some(dir))
        {
            *self.counts.entry("excluded".into()).or_default() += 1;
            return store::write_tx(conn, |tx| imports::record(tx, stamp, &pending, &now));
        }
        let rec = self.sessions.entry(sid.clone()).or_insert_with(|| Session {
            session_id: sid.clone(),
            project: project.as_ref().map(|p| p.0.root.clone()),
            branch: p.branch.clone(),
            started_at: None,
            files: 0,
            prompts: 0,
            tool_calls: 0,
            queued: 0,
            duplicates: 0,
            skipped: 0,
        });
        rec.files += 1;
        rec.tool_calls += p.tool_uses;
        let start_ev = transcript::session_start(p);
        let events = std::mem::take(&mut p.events);
        let stored = store::write_tx(conn, |tx| {
            let mut total = Stored::default();
            for (payload, origin) in start_ev.iter().chain(events.iter()) {
                let s = capture::store_event(
                    tx,
                    policy,
                    payload,
                    origin,
                    project.as_ref().map(|p| &p.0),
                )?;
                if payload.event.as_deref() == Some("UserPromptSubmit") {
                    rec.prompts += 1;
                }
                total.queued += s.queued;
                total.duplicates += s.duplicates;
                total.skipped.extend(s.skipped);
            }
            imports::record(tx, stamp, &pending, &now)?;
            Ok(total)
        })?;
        if let Some(first) = events.first() {
            let at = &first.1.at;
            if rec.started_at.as_ref().is_none_or(|s| s > at) {
                rec.started_at = Some(at.clone());
            }
        }
        rec.queued += stored.queued;
        rec.duplicates += stored.duplicates;
        rec.skipped += stored.skipped.len();
        for (tool, _) in &stored.skipped {
            *self.counts.entry(format!("skipped_{tool}")).or_default() += 1;
        }
        Ok(())
    }

    /// Titles the sessions the pending summaries describe: the session holding the summary's
    /// leafUuid, usually another file's (else the summary's own file's session, when that has
    /// events). A leaf this run did not read is looked for in the unchanged files of the same
    /// folder (a resumed session's summary names its predecessor's last message; Claude Code
    /// keeps both in the project's folder), each read once. (summaries seen, titles set).
    fn titles(&self, conn: &Connection, unchanged: &[File]) -> Result<(u64, u64)> {
        let pending = imports::pending_titles(conn)?;
        // owners[file][summary]: the session found for it so far.
        let mut owners: Vec<Vec<Option<String>>> = pending
            .iter()
            .map(|f| {
                f.summaries
                    .iter()
                    .map(|(_, leaf)| {
                        let n = *self.owner.get(&hash_of(leaf))?;
                        Some(self.session_ids[n as usize].clone())
                    })
                    .collect()
            })
            .collect();
        let mut wanted: HashMap<&Path, Vec<(usize, usize)>> = HashMap::new();
        for (i, f) in pending.iter().enumerate() {
            for (j, o) in owners[i].iter().enumerate() {
                if let (None, Some(folder)) = (o, Path::new(&f.path).parent()) {
                    wanted.entry(folder).or_default().push((i, j));
                }
            }
        }
        for u in unchanged {
            let Some(want) = u.path.parent().and_then(|d| wanted.get(d)) else {
                continue;
            };
            let Ok(bytes) = std::fs::read(&u.path) else {
                continue;
            };
            let mut session = None;
            for &(i, j) in want {
                let needle = format!(r#""uuid":"{}""#, pending[i].summaries[j].1);
                if owners[i][j].is_none()
                    && memchr::memmem::find(&bytes, needle.as_bytes()).is_some()
                {
                    if session.is_none() {
                        session = Some(imports::session_of(conn, &u.stamp.path)?);
                    }
                    owners[i][j] = session.clone().flatten();
                }
            }
        }
        let (mut seen, mut titled) = (0u64, 0u64);
        for (f, owners) in pending.iter().zip(owners) {
            let own = (f.events > 0).then(|| f.session_id.clone()).flatten();
            store::write_tx(conn, |tx| {
                for ((text, _), owner) in f.summaries.iter().zip(&owners) {
                    seen += 1;
                    if let Some(sid) = owner.as_ref().or(own.as_ref()) {
                        titled += store::sessions::set_title(tx, sid, text)? as u64;
                    }
                }
                imports::titles_done(tx, &f.path)
            })?;
        }
        Ok((seen, titled))
    }
}
