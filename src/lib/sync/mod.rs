//! `mem sync` end to end (docs/ARCHITECTURE.md, "Sync"): memories shared through a git remote,
//! no server. Each machine appends its opted-in projects' new memories to its own files in a
//! working clone (`export`), commits and pushes (a push that races another is rebased and
//! tried again); every machine reads the others' files from where it stopped (`import`).
//! Files are only ever appended to and each has one writer, so git never has a conflict to
//! solve, and global ids make reading a line twice do nothing.
//!
//! The caller holds the pipeline's lock (`mem sync` takes it; `mem pipeline` runs a sync as its
//! last stage under it), so one sync at a time works on the clone and the store.

pub mod export;
mod git;
mod import;
mod key;
pub mod projects;
pub mod wire;

use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::Connection;
use serde::Serialize;

use crate::config::{self, Config};
use crate::notice::{Notice, Notices};
use crate::store::sync as st;
use crate::store::{self, forget::Target};
use crate::{Error, Home, Result};

use export::{Item, Plan};
use git::Git;
use import::Intake;
use projects::Projects;
use wire::{MACHINES, Machine, Me};

/// Pushes tried before a sync gives up on a remote others keep pushing to.
const PUSHES: usize = 6;

/// What one sync did (`"type":"sync"`), the one record `mem sync` prints.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(remote = "Self")]
pub struct Report {
    pub remote: String,
    pub name: String,
    /// This machine's records written (new, or a newer version).
    pub exported: u64,
    /// Tombstones written for this machine's records forgotten here.
    pub forgotten: u64,
    /// Others' records stored here (new, or a newer version).
    pub imported: u64,
    /// Others' records their origin forgot, taken out here.
    pub removed: u64,
    /// Commits made (and pushed).
    pub commits: u64,
    /// Records held back: the current redactor still finds something in them.
    pub held_back: u64,
    /// Lines of the remote left alone: malformed, or written by a newer memkit.
    pub skipped: u64,
    pub elapsed_ms: u64,
}
memkit_core::record!(Report = "sync");

/// A sync's report, the records held back, and what to tell the user.
#[derive(Debug)]
pub struct Run {
    pub report: Report,
    pub held: Vec<Item>,
    pub notices: Notices,
}

/// `sync.remote`, or a usage error saying how to set it.
fn remote(cfg: &Config) -> Result<String> {
    config::SYNC_REMOTE.get(cfg).ok_or_else(|| {
        Error::Usage(
            "no sync remote: set sync.remote in config.toml or MEM_SYNC_REMOTE (a git URL or path)"
                .into(),
        )
    })
}

/// This database and its label.
fn me(conn: &Connection, cfg: &Config) -> Result<Me> {
    let id = store::database_id(conn)?.ok_or_else(|| Error::Store("no database id".into()))?;
    let name = config::SYNC_NAME.get(cfg).unwrap_or_else(key::host_name);
    Ok(Me {
        origin: id.chars().take(16).collect(),
        name: key::name(&name),
    })
}

/// A sync: the clone brought up to the remote, others' new lines read, this machine's new
/// memories appended, committed and pushed.
pub fn run(cfg: &Config) -> Result<Run> {
    let started = Instant::now();
    let remote = remote(cfg)?;
    crate::capture::redact::configure(cfg)?;
    let home = &cfg.home;
    let conn = store::open(&home.db())?;
    let me = me(&conn, cfg)?;
    let projects = Projects::find(&conn, cfg)?;
    let mut notices = Notices::new();
    say_keyless(&projects, &mut notices);
    let (git, branch) = prepare(home, &remote, &me, &conn)?;
    let mut intake = Intake::default();
    // The user's own forgets of imported records, before a newer version could bring one back.
    for (name, n) in st::hide_missing(&conn)? {
        notices.push(Notice::info(format!(
            "{n} record(s) from {name} forgotten here only"
        )));
    }
    let joined = claim(&git, &me, &remote)?;
    read_all(&conn, &me, &git, &projects, &mut intake)?;
    let now = store::now();
    let plan = export::plan(&conn, &me, &projects, &now)?;
    // This machine's own files only are committed: its lines' files and its machine file.
    let mut own = append(&git.dir, &plan)?;
    let mut commits = 0;
    let subject = format!(
        "memkit sync: {}: {} record(s), {} forgotten{}",
        me.name,
        plan.puts(),
        plan.forgets(),
        if joined { ", joined" } else { "" }
    );
    if joined {
        own.push(wire::machine_file(&me.name));
    }
    if git.commit_only(&own, &subject)? {
        commits += 1;
    }
    store::write_tx(&conn, |tx| {
        plan.record(tx)?;
        own_offsets(tx, &git.dir, &plan)
    })?;
    push(&conn, &me, &git, &branch, &projects, &remote, &mut intake)?;
    remember_seen(&conn, &git, &projects)?;
    let removed = forget_imported(home, cfg, &conn)?;
    if intake.imported > 0 {
        reindex(home, cfg, &conn, &mut notices);
    }
    store::meta_put(&conn, "sync.last_ok", &store::now())?;
    notices.extend(intake.notices);
    let held: Vec<Item> = plan.held.iter().map(|(i, _)| i.clone()).collect();
    for h in &held {
        notices.push(Notice::warn(format!(
            "{} {} held back: the redactor finds {} in it (mem-redact rewrites it, then it goes)",
            h.kind,
            h.handle,
            h.held_back.as_deref().unwrap_or("something")
        )));
    }
    let report = Report {
        remote,
        name: me.name,
        exported: plan.puts() as u64,
        forgotten: plan.forgets() as u64,
        imported: intake.imported,
        removed,
        commits,
        held_back: held.len() as u64,
        skipped: intake.skipped,
        elapsed_ms: started.elapsed().as_millis() as u64,
    };
    Ok(Run {
        report,
        held,
        notices,
    })
}

/// What a sync would write now, record by record (held-back ones included), from the store
/// alone: no git, no network.
pub fn dry_run(cfg: &Config) -> Result<(Vec<Item>, Notices)> {
    let mut notices = Notices::new();
    crate::capture::redact::configure(cfg)?;
    let Some(conn) = store::open_if_present(&cfg.home.db())? else {
        return Ok((vec![], notices));
    };
    let me = me(&conn, cfg)?;
    let projects = Projects::find(&conn, cfg)?;
    say_keyless(&projects, &mut notices);
    if projects.shared.is_empty() {
        notices.push(Notice::warn(
            "no project is shared: sync.projects (MEM_SYNC_PROJECTS) names none here",
        ));
    }
    let plan = export::plan(&conn, &me, &projects, &store::now())?;
    let mut items: Vec<Item> = plan.lines.into_iter().map(|l| l.item).collect();
    items.extend(plan.held.into_iter().map(|(i, _)| i));
    Ok((items, notices))
}

fn say_keyless(projects: &Projects, notices: &mut Notices) {
    for r in &projects.keyless {
        notices.push(Notice::warn(format!(
            "{r} is not shared: it is no git repository, so nothing names it on another machine"
        )));
    }
}

/// The working clone, cloned when missing (or when sync.remote names another remote), left as
/// its last commit says, with the remote's new commits under this machine's unpushed ones.
/// Returns it and its branch.
fn prepare(home: &Home, remote: &str, me: &Me, conn: &Connection) -> Result<(Git, String)> {
    let dir = home.sync();
    let same = Git::open(&dir, &me.name)
        .run(&["config", "--get", "remote.origin.url"])
        .is_ok_and(|u| u == remote);
    if !same || !dir.join(".git").is_dir() {
        if dir.exists() {
            std::fs::remove_dir_all(&dir)?;
        }
        // A new clone holds only what was pushed: what this machine wrote is learned again
        // from its own lines there, and everything is read from the start.
        st::forget_remote_state(conn)?;
        store::meta_put(conn, "sync.seen", "")?;
        git::probe(remote).map_err(|e| not_there(remote, &e))?;
        // Cloned aside and moved in whole: a run killed while cloning leaves no half clone
        // (and what such a run left aside goes now).
        for e in std::fs::read_dir(home).into_iter().flatten().flatten() {
            if e.file_name().to_string_lossy().starts_with(".sync-") {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
        let tmp = home.join(format!(".sync-{}", std::process::id()));
        git::clone(remote, &tmp).map_err(|e| not_there(remote, &e))?;
        std::fs::rename(&tmp, &dir)?;
        store::tighten(&dir);
    }
    let git = Git::open(&dir, &me.name);
    git.clean_up()?;
    git.net(&["fetch", "-q", "--no-tags", "origin"])
        .map_err(|e| not_there(remote, &e))?;
    let branch = git.branch()?;
    catch_up(&git, &branch, conn)?;
    Ok((git, branch))
}

/// This machine's unpushed commits put on top of the remote's branch (a fast-forward when it
/// has none). Each machine commits its own files only, so a rebase has nothing to merge;
/// should one fail all the same, the clone takes the remote's state and this machine's
/// lines are written again from the store.
fn catch_up(git: &Git, branch: &str, conn: &Connection) -> Result<()> {
    let up = format!("origin/{branch}");
    let (ahead, behind) = git.ahead_behind(branch);
    if behind == 0 {
        return Ok(());
    }
    let err = |e: git::Failed| Error::other(e.to_string());
    if ahead == 0 {
        return git
            .run(&["reset", "-q", "--hard", &up])
            .map(|_| ())
            .map_err(err);
    }
    if git.run(&["rebase", "-q", &up]).is_err() {
        let _ = git.run(&["rebase", "--abort"]);
        git.run(&["reset", "-q", "--hard", &up]).map_err(err)?;
        st::forget_remote_state(conn)?;
        store::meta_put(conn, "sync.seen", "")?;
    }
    Ok(())
}

/// The error of a remote that cannot be cloned or fetched, naming it.
fn not_there(remote: &str, e: &git::Failed) -> Error {
    let not_repo = [
        "not a git repository",
        "does not appear to be a git repository",
    ]
    .iter()
    .any(|m| e.stderr.contains(m));
    if not_repo {
        Error::input(
            format!("sync.remote {remote}"),
            None,
            format!("not a git repository ({e})"),
        )
    } else {
        Error::other(format!("sync.remote {remote} cannot be reached ({e})"))
    }
}

/// Names this machine on the remote; true when its file is new (to commit). A name another
/// database holds is refused: two machines must never append to one file.
fn claim(git: &Git, me: &Me, remote: &str) -> Result<bool> {
    let path = git.dir.join(wire::machine_file(&me.name));
    if let Ok(text) = std::fs::read_to_string(&path) {
        return match Machine::parse(&text) {
            Some(m) if m.origin != me.origin => Err(Error::Usage(format!(
                "sync.name {:?} is another machine's on {remote} (since {}): give this one its own (sync.name or MEM_SYNC_NAME)",
                me.name, m.since
            ))),
            _ => Ok(false),
        };
    }
    std::fs::create_dir_all(path.parent().expect("a machine file has a folder"))?;
    let m = Machine {
        name: me.name.clone(),
        origin: me.origin.clone(),
        since: store::now(),
    };
    std::fs::write(&path, format!("{}\n", serde_json::to_string(&m)?))?;
    Ok(true)
}

/// Every machine file of the clone, relative to it.
fn files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let name = e.file_name();
            if name.to_string_lossy().starts_with('.') {
                continue;
            }
            let p = e.path();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                todo.push(p);
            } else if let Ok(rel) = p.strip_prefix(dir) {
                let rel = rel.to_string_lossy().into_owned();
                if wire::parse_path(&rel).is_some() {
                    out.push(rel);
                }
            }
        }
    }
    out.sort();
    out
}

/// What the last read saw: the clone's commit and the projects here. Unchanged, there is
/// nothing new to read (the one check of a sync with nothing new).
fn seen(git: &Git, projects: &Projects) -> String {
    let keys: Vec<&str> = projects.local.keys().map(String::as_str).collect();
    format!("{}|{}", git.rev("HEAD").unwrap_or_default(), keys.join(","))
}

fn remember_seen(conn: &Connection, git: &Git, projects: &Projects) -> Result<()> {
    store::meta_put(conn, "sync.seen", &seen(git, projects))
}

/// Reads what is new in every file: others' lines of the projects here, and this machine's own.
fn read_all(
    conn: &Connection,
    me: &Me,
    git: &Git,
    projects: &Projects,
    intake: &mut Intake,
) -> Result<()> {
    if store::meta_get(conn, "sync.seen")?.as_deref() == Some(seen(git, projects).as_str()) {
        return Ok(());
    }
    for path in files(&git.dir) {
        let Some((key, name)) = wire::parse_path(&path) else {
            continue;
        };
        let root = projects.local.get(key).map(String::as_str);
        if root.is_none() && name != me.name {
            continue;
        }
        import::file(conn, me, &git.dir, &path, root, intake)?;
    }
    Ok(())
}

/// Appends the plan's lines to this machine's files; the files, relative to the clone.
fn append(dir: &Path, plan: &Plan) -> Result<Vec<String>> {
    use std::io::Write;
    let mut by_file: std::collections::BTreeMap<&str, String> = Default::default();
    for l in plan.written() {
        let text = by_file.entry(&l.file).or_default();
        text.push_str(&l.text);
        text.push('\n');
    }
    for (file, text) in &by_file {
        let path = dir.join(file);
        std::fs::create_dir_all(path.parent().expect("a file has a folder"))?;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)?;
        f.write_all(text.as_bytes())?;
    }
    Ok(by_file.into_keys().map(str::to_string).collect())
}

/// This machine's files read to their new end (what it appended is what it recorded).
fn own_offsets(conn: &Connection, dir: &Path, plan: &Plan) -> Result<()> {
    let mut counts: std::collections::BTreeMap<&str, u64> = Default::default();
    for l in plan.written() {
        *counts.entry(&l.file).or_default() += 1;
    }
    for (file, n) in counts {
        let (_, lines) = st::offset(conn, file)?;
        let size = std::fs::metadata(dir.join(file))?.len();
        st::set_offset(conn, file, size, lines + n)?;
    }
    Ok(())
}

/// Pushes what is not on the remote yet. A push another machine's beat is rebased onto the
/// remote's new state (whose lines are read) and tried again, after a pause that differs from
/// one try and one machine to the next.
fn push(
    conn: &Connection,
    me: &Me,
    git: &Git,
    branch: &str,
    projects: &Projects,
    remote: &str,
    intake: &mut Intake,
) -> Result<()> {
    for attempt in 0..PUSHES {
        let (ahead, _) = git.ahead_behind(branch);
        if ahead == 0 {
            return Ok(());
        }
        let refspec = format!("HEAD:refs/heads/{branch}");
        let failed = match git.net(&["push", "-q", "origin", &refspec]) {
            Ok(_) => return Ok(()),
            Err(e) => e,
        };
        if attempt + 1 == PUSHES {
            return Err(not_there(remote, &failed));
        }
        let pause = 50 + (std::process::id() as u64 * 37 + attempt as u64 * 101) % 200;
        std::thread::sleep(Duration::from_millis(pause * (attempt as u64 + 1)));
        git.net(&["fetch", "-q", "--no-tags", "origin"])
            .map_err(|e| not_there(remote, &e))?;
        catch_up(git, branch, conn)?;
        read_all(conn, me, git, projects, intake)?;
    }
    Ok(())
}

/// Takes out the imported records their origin forgot (each marked when its tombstone was
/// read): everywhere, as `mem forget` does. Returns how many went.
fn forget_imported(home: &Home, cfg: &Config, conn: &Connection) -> Result<u64> {
    let gone = st::forgotten_here(conn)?;
    if gone.is_empty() {
        return Ok(0);
    }
    let mut obs = Vec::new();
    for (kind, local) in &gone {
        match kind.as_str() {
            "observation" => obs.extend(local.parse::<i64>().ok()),
            "session" => {
                crate::forget::run(home, cfg, conn, &Target::Session(local.clone()), false)?
                    .finished?
            }
            _ => {
                if let Ok(id) = local.parse() {
                    store::learnings::remove(conn, id)?;
                }
            }
        }
    }
    if !obs.is_empty() {
        crate::forget::run(home, cfg, conn, &Target::Obs(obs), false)?.finished?;
    }
    Ok(gone.len() as u64)
}

/// Brings the search indexes up to what was imported (an incremental run; the next pipeline
/// run embeds the new records with this machine's model).
fn reindex(home: &Home, cfg: &Config, conn: &Connection, notices: &mut Notices) {
    let layout = crate::index::Layout::new(home);
    if !(layout.state().exists() || layout.bm25().exists()) {
        return;
    }
    let opts = crate::index::Options {
        quantization: config::INDEX_QUANTIZATION.get(cfg),
        ..Default::default()
    };
    if let Err(e) = crate::index::update(conn, &layout, &opts) {
        notices.push(Notice::warn(format!(
            "the imported records wait for the next mem-index run: {e}"
        )));
    }
}

/// What `mem sync --status` shows (`"type":"sync_status"`).
#[derive(Debug, Clone, Serialize)]
#[serde(remote = "Self")]
pub struct Status {
    pub remote: Option<String>,
    pub name: String,
    pub last_sync: Option<String>,
    /// Why the last try failed, when it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failing: Option<String>,
    /// The projects shared, each with its key.
    pub shared: Vec<Shared>,
    /// What would leave now: records (new or changed) and tombstones.
    pub pending: u64,
    pub pending_forgotten: u64,
    pub held_back: u64,
    pub counts: st::Counts,
    /// The machines on the remote as of the last sync.
    pub machines: Vec<Seen>,
}
memkit_core::record!(Status = "sync_status");

#[derive(Debug, Clone, Serialize)]
pub struct Shared {
    pub root: String,
    pub key: String,
}

/// A machine on the remote: when it first synced, and when it last pushed.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, PartialOrd, Ord)]
pub struct Seen {
    pub name: String,
    pub since: String,
    pub last_push: Option<String>,
}

pub fn status(cfg: &Config) -> Result<Option<Status>> {
    crate::capture::redact::configure(cfg)?;
    let Some(conn) = store::open_if_present(&cfg.home.db())? else {
        return Ok(None);
    };
    let me = me(&conn, cfg)?;
    let projects = Projects::find(&conn, cfg)?;
    let plan = export::plan(&conn, &me, &projects, &store::now())?;
    let git = Git::open(&cfg.home.sync(), &me.name);
    let log = if git.dir.join(".git").is_dir() {
        git.log(2000)
    } else {
        vec![]
    };
    let mut machines = Vec::new();
    for e in std::fs::read_dir(git.dir.join(MACHINES))
        .into_iter()
        .flatten()
        .flatten()
    {
        if let Some(m) = std::fs::read_to_string(e.path())
            .ok()
            .and_then(|t| Machine::parse(&t))
        {
            let prefix = format!("memkit sync: {}:", m.name);
            let last = log
                .iter()
                .find(|(_, s)| s.starts_with(&prefix))
                .map(|(t, _)| t.clone());
            machines.push(Seen {
                name: m.name,
                since: m.since,
                last_push: last,
            });
        }
    }
    machines.sort();
    Ok(Some(Status {
        remote: config::SYNC_REMOTE.get(cfg),
        name: me.name,
        last_sync: store::meta_get(&conn, "sync.last_ok")?,
        failing: store::meta_get(&conn, "sync.failing")?.filter(|f| !f.is_empty()),
        shared: projects
            .shared
            .iter()
            .map(|(root, key)| Shared {
                root: root.clone(),
                key: key.clone(),
            })
            .collect(),
        pending: plan.puts() as u64,
        pending_forgotten: plan.forgets() as u64,
        held_back: plan.held.len() as u64,
        counts: st::counts(&conn)?,
        machines,
    }))
}

/// The pipeline's last stage: a sync when `sync.remote` is set and `sync.interval` has passed
/// since the last try. A remote out of reach is told once (the line returned), then quietly
/// tried again each interval until it answers. `None`: nothing to tell.
pub fn in_pipeline(cfg: &Config) -> Option<String> {
    config::SYNC_REMOTE.get(cfg)?;
    let conn = store::open_if_present(&cfg.home.db()).ok()??;
    let minutes = match config::SYNC_INTERVAL.get(cfg) {
        Ok(m) => m,
        Err(e) => return Some(format!("sync: {e}")),
    };
    let last = store::meta_get(&conn, "sync.last_attempt").ok().flatten();
    let due = last
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(&t).ok())
        .is_none_or(|t| {
            chrono::Utc::now().signed_duration_since(t) >= chrono::Duration::minutes(minutes as i64)
        });
    if !due {
        return None;
    }
    let _ = store::meta_put(&conn, "sync.last_attempt", &store::now());
    let was = store::meta_get(&conn, "sync.failing")
        .ok()
        .flatten()
        .unwrap_or_default();
    match run(cfg) {
        Ok(r) => {
            let _ = store::meta_put(&conn, "sync.failing", "");
            let r = r.report;
            // Records held back are said by mem sync and --status; the log would say them
            // again every interval.
            let did = r.exported + r.forgotten + r.imported + r.removed + r.skipped;
            let back = if was.is_empty() {
                ""
            } else {
                " (the remote answers again)"
            };
            (did > 0 || !was.is_empty()).then(|| {
                format!(
                    "sync: exported {}, forgotten {}, imported {}, removed {}, held back {}, skipped {}{back}",
                    r.exported, r.forgotten, r.imported, r.removed, r.held_back, r.skipped
                )
            })
        }
        Err(e) => {
            let msg = e.to_string();
            let _ = store::meta_put(&conn, "sync.failing", &msg);
            // Told once: the same failure again says nothing until a sync succeeds.
            was.is_empty()
                .then(|| format!("sync: {msg}; tried again every {minutes} min"))
        }
    }
}
