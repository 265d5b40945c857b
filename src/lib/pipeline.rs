//! The background run after Stop and SessionEnd (`mem pipeline`): mem-compress, mem-ast, mem-learn,
//! mem-embed and mem-index in order, under a lock, until no work is left, then (when
//! `sync.remote` is set and it is due) a sync, then a WAL checkpoint.
//!
//! The lock is flock(2) through std's `File::try_lock` and detaching is setsid(2) plus a second
//! fork, so nothing here needs util-linux `flock` or `setsid` (stock macOS has neither).

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Seek, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::{Error, Home, Result, programs};

/// The stages in the order they run. Only mem-compress is required; the others run when found.
/// mem-index runs before mem-embed too: what was just compressed is searchable by its words
/// while the embedding works on (its budget, a backlog), and again after for the vectors.
pub const STAGES: &[&str] = &[
    "mem-compress",
    "mem-ast",
    "mem-learn",
    "mem-index",
    "mem-embed",
    "mem-index",
];

/// Rounds one run does at most: a queue that refills forever must not keep a process forever.
pub const MAX_ROUNDS: usize = 20;

/// How long the closing checkpoint waits for other connections before leaving the WAL as it is.
pub const CHECKPOINT_WAIT: Duration = Duration::from_secs(2);

/// The lock file every run takes turns on (the one the shell script used, so both exclude each
/// other: util-linux `flock` is flock(2) too).
pub fn lock_path(home: &Path) -> PathBuf {
    Home::new(home).pipeline_lock()
}

pub fn log_path(home: &Path) -> PathBuf {
    Home::new(home).pipeline_log()
}

/// A stage binary found on disk.
#[derive(Debug, Clone)]
pub struct Stage {
    pub name: &'static str,
    pub path: PathBuf,
}

/// The stages found in `dirs` (then PATH); an error when mem-compress is not among them.
pub fn stages(dirs: &[PathBuf]) -> Result<Vec<Stage>> {
    let found: Vec<Stage> = STAGES
        .iter()
        .filter_map(|name| programs::find_in(name, dirs).map(|path| Stage { name, path }))
        .collect();
    if found.first().is_none_or(|s| s.name != "mem-compress") {
        let dirs: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
        return Err(Error::other(format!(
            "mem-compress not found (looked in {} and on PATH)",
            dirs.join(", ")
        )));
    }
    Ok(found)
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ran {
    /// Another run held the lock; it takes what is pending, so this one did nothing.
    Busy,
    /// Rounds done, and the stages that failed (name, exit status or signal) in the last one.
    Done {
        rounds: usize,
        failed: Vec<(&'static str, String)>,
    },
}

/// Appends `line`, prefixed with the time and `who`, to the pipeline log (0600). Best effort.
pub fn log(home: &Path, who: &str, line: &str) {
    let _ = crate::store::ensure_home(home);
    if let Ok(mut f) = open_log(home) {
        let _ = writeln!(f, "{} {who}: {line}", crate::store::now());
    }
}

fn open_log(home: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(log_path(home))
}

/// How a run works the stages.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// How long one hold of the lock works at most (`embed_budget_s`): mem-compress and
    /// mem-embed get what is left of it, newest first, and the run lets the lock go once it is
    /// spent. `None` (`--drain`): until nothing is left.
    pub budget: Option<Duration>,
    /// mem-embed shows its progress bar and time left on the caller's terminal (`--drain`).
    pub show_progress: bool,
}

/// Runs the stages under the lock until `mem-compress --check` finds nothing left or the
/// budget is spent, and checkpoints the WAL before letting the lock go. Returns `Busy` at once
/// when another run holds the lock, after leaving word (`Home::pipeline_wanted`) for it: that
/// run takes the lock again for the work this one came for once it has let it go (a budget
/// later at most), or, when it has already gone, this run takes it itself. `report` receives
/// one line per stage that said something or failed.
pub fn run(
    home: &Path,
    stages: &[Stage],
    opts: Options,
    report: &mut dyn FnMut(&str),
) -> Result<Ran> {
    crate::store::ensure_home(home)?;
    let compress = &stages
        .first()
        .ok_or_else(|| Error::other("no stages"))?
        .path;
    let wanted = Home::new(home).pipeline_wanted();
    let mut rounds = 0;
    let mut failed = Vec::new();
    loop {
        let lock = match try_lock(home)? {
            Some(lock) => lock,
            None if rounds > 0 => break,
            None => {
                let _ = File::create(&wanted);
                // The holder may have looked for word just before it was left, and gone.
                match try_lock(home)? {
                    Some(lock) => lock,
                    None => return Ok(Ran::Busy),
                }
            }
        };
        // What whoever left word came for is pending now: this hold takes it.
        let _ = std::fs::remove_file(&wanted);
        let taken = Instant::now();
        let until = opts.budget.map(|b| taken + b);
        failed.clear();
        if rounds == 0 {
            redact_if_due(home, report);
        }
        while rounds < MAX_ROUNDS {
            rounds += 1;
            for s in stages {
                if let Some(fail) = run_stage(s, until, opts.show_progress, report) {
                    failed.push((s.name, fail));
                }
            }
            if until.is_some_and(|t| Instant::now() >= t) || !has_work(compress) {
                break;
            }
        }
        prune_if_due(home, compress, report);
        sync_if_due(home, report);
        checkpoint(home, report);
        drop(lock);
        // How long a hold lasts, against its budget, is what the import bench reads back.
        let held = taken.elapsed();
        if held >= Duration::from_secs(1) {
            log(
                home,
                &format!("mem pipeline[{}]", std::process::id()),
                &format!(
                    "held the lock {:.1} s ({})",
                    held.as_secs_f64(),
                    opts.budget.map_or("no budget".into(), |b| format!(
                        "budget {:.0} s",
                        b.as_secs_f64()
                    ))
                ),
            );
        }
        // Work queued meanwhile by runs that found the lock taken and left (whatever else is
        // pending, an imported history, waits for the next run).
        if rounds >= MAX_ROUNDS || !wanted.exists() || !has_work(compress) {
            break;
        }
    }
    Ok(Ran::Done { rounds, failed })
}

/// Runs mem-prune (found beside mem-compress) once a day: the database records when it last ran.
fn prune_if_due(home: &Path, compress: &Path, report: &mut dyn FnMut(&str)) {
    let Some(path) = compress
        .parent()
        .and_then(|d| programs::in_dir(d, "mem-prune"))
    else {
        return;
    };
    let due = crate::store::open_if_present(&Home::new(home).db()).and_then(|c| match c {
        Some(c) => crate::store::retention::prune_due(&c, chrono::Utc::now()),
        None => Ok(false),
    });
    match due {
        Ok(true) => {
            // A failure is logged by run_stage; it fails no run: tomorrow's tries again.
            let _ = run_stage(
                &Stage {
                    name: "mem-prune",
                    path,
                },
                None,
                false,
                report,
            );
        }
        Ok(false) => {}
        Err(e) => report(&format!("mem-prune: {e}")),
    }
}

/// The last stage: a sync with the remote when `sync.remote` is set and `sync.interval` has
/// passed (see [`crate::sync::in_pipeline`]). Hooks never wait for it: the pipeline runs
/// detached from them.
fn sync_if_due(home: &Path, report: &mut dyn FnMut(&str)) {
    let Ok(cfg) = crate::config::Config::load(home) else {
        return;
    };
    if let Some(line) = crate::sync::in_pipeline(&cfg) {
        report(&line);
    }
}

/// Rewrites what an older redactor stored, before the stages read it (they then embed and
/// index the rewritten rows); see [`crate::reredact`]. A failure is reported and the next run
/// tries again.
fn redact_if_due(home: &Path, report: &mut dyn FnMut(&str)) {
    let run = || -> Result<Option<crate::reredact::Run>> {
        let cfg = crate::config::Config::load(home)?;
        let due = match crate::store::open_if_present(&cfg.home.db())? {
            Some(c) => crate::reredact::due(&c)?,
            None => false,
        };
        if !due {
            return Ok(None);
        }
        crate::reredact::run(home, &cfg, &Default::default())
    };
    match run() {
        Ok(Some(r)) => report(&format!(
            "redact: redactor {} -> {}: {}",
            r.from,
            r.to,
            r.rewritten.summary()
        )),
        Ok(None) => {}
        Err(e) => report(&format!("redact: {e}")),
    }
}

/// Takes the lock, waiting up to a minute for a run that holds it (a tool that changes what
/// the stages read, `who`, must not interleave with one).
pub fn wait_lock(home: &Path, who: &str) -> Result<File> {
    let until = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(f) = try_lock(home)? {
            return Ok(f);
        }
        if std::time::Instant::now() >= until {
            return Err(Error::other(format!(
                "a mem pipeline run has held {} for a minute; run {who} again when it is done",
                lock_path(home).display()
            )));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Copies the WAL into mem.db (under the lock, so no other run's writes compete): hooks skip
/// that on close, and until it happens the latest captures exist only in mem.db-wal.
fn checkpoint(home: &Path, report: &mut dyn FnMut(&str)) {
    let db = Home::new(home).db();
    if !db.exists() {
        return;
    }
    match crate::store::backup::checkpoint(&db, CHECKPOINT_WAIT) {
        Ok(c) if c.complete => {}
        Ok(c) => report(&format!(
            "checkpoint: database busy, {} of {} WAL frames copied; the next run goes on",
            c.copied, c.frames
        )),
        Err(e) => report(&format!("checkpoint: {e}")),
    }
}

/// Takes the lock without waiting; `None` when another process holds it. The holder's pid is
/// written into the file, for whoever wonders which process runs.
pub fn try_lock(home: &Path) -> Result<Option<File>> {
    let path = lock_path(home);
    let mut f = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(&path)
        .map_err(|e| Error::other(format!("{}: {e}", path.display())))?;
    match f.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => return Ok(None),
        Err(TryLockError::Error(e)) => {
            return Err(Error::other(format!("{}: {e}", path.display())));
        }
    }
    let _ = f.set_len(0);
    let _ = f.rewind();
    let _ = writeln!(f, "{}", std::process::id());
    Ok(Some(f))
}

/// The stages that take a budget (`--budget SECS`): those whose backlog can be large.
const BUDGETED: &[&str] = &["mem-compress", "mem-embed"];

/// Runs one stage quietly (records to /dev/null); returns why it failed, if it did. Exit 1
/// ("nothing to do") is success. What it wrote on stderr goes to `report`; with `show_progress`
/// mem-embed writes on the caller's stderr instead, where its progress bar is seen. A stage in
/// [`BUDGETED`] gets what is left of the time until `until`.
fn run_stage(
    s: &Stage,
    until: Option<Instant>,
    show_progress: bool,
    report: &mut dyn FnMut(&str),
) -> Option<String> {
    let mut cmd = Command::new(&s.path);
    let shown = show_progress && s.name == "mem-embed";
    cmd.args(if shown {
        &["--format", "jsonl"][..]
    } else {
        &["-q", "--format", "jsonl"]
    });
    if let Some(t) = until.filter(|_| BUDGETED.contains(&s.name)) {
        let left = t.saturating_duration_since(Instant::now());
        cmd.args(["--budget", &format!("{:.3}", left.as_secs_f64())]);
    }
    let out = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(if shown {
            Stdio::inherit()
        } else {
            Stdio::piped()
        })
        .output();
    let out = match out {
        Ok(o) => o,
        Err(e) => {
            report(&format!("{}: cannot run {}: {e}", s.name, s.path.display()));
            return Some(format!("not run: {e}"));
        }
    };
    let said = String::from_utf8_lossy(&out.stderr);
    let said = said.trim();
    let status = match out.status.code() {
        Some(0 | 1) => None,
        Some(c) => Some(format!("exit {c}")),
        None => {
            use std::os::unix::process::ExitStatusExt;
            Some(format!("signal {}", out.status.signal().unwrap_or(0)))
        }
    };
    match (&status, said.is_empty()) {
        (Some(st), _) => report(&format!("{} failed ({st}): {said}", s.name)),
        (None, false) => report(&format!("{}: {said}", s.name)),
        (None, true) => {}
    }
    status
}

/// Whether mem-compress sees captures or summaries waiting.
fn has_work(compress: &Path) -> bool {
    Command::new(compress)
        .args(["--check", "-q"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.code() == Some(0))
}

/// Starts `exe` with `args` (and `arg0` as its argv[0]) detached, and returns as soon as it
/// runs: in a new session (no controlling terminal, out of reach of signals sent to the
/// caller's process group), stdin from /dev/null, stdout and stderr appended to the pipeline
/// log (so whoever reads the caller's pipes, such as Claude Code, sees them close at once).
///
/// The classic double fork: the child calls setsid and forks again; the grandchild execs while
/// the child exits at once and is reaped here. The grandchild is no one's child then and the
/// system reaps it when it ends, so the caller never keeps a zombie, however long it lives.
pub fn detach(home: &Path, exe: &Path, arg0: &std::ffi::OsStr, args: &[&str]) -> Result<()> {
    crate::store::ensure_home(home)?;
    let log =
        open_log(home).map_err(|e| Error::other(format!("{}: {e}", log_path(home).display())))?;
    let mut cmd = Command::new(exe);
    cmd.arg0(arg0)
        .args(args)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    // SAFETY: runs in the forked child before exec; setsid, fork and _exit are async-signal-safe
    // and the closure allocates nothing.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() == -1 {
                return Err(std::io::Error::last_os_error());
            }
            match libc::fork() {
                -1 => Err(std::io::Error::last_os_error()),
                0 => Ok(()),
                _ => libc::_exit(0),
            }
        });
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| Error::other(format!("cannot start {}: {e}", exe.display())))?;
    child.wait()?;
    Ok(())
}

/// Where the pipeline looks for its stages before PATH: beside mem (the directory it was run
/// from), then MEM_BIN_DIR.
fn tool_dirs(home: &Path) -> Vec<PathBuf> {
    let cfg =
        crate::config::Config::load(home).unwrap_or_else(|_| crate::config::Config::env_only(home));
    programs::beside()
        .into_iter()
        .chain(crate::config::BIN_DIR.get(&cfg).map(PathBuf::from))
        .collect()
}

/// `mem pipeline --detach`: starts a detached run of the running `mem`. A run that cannot start
/// is logged to the pipeline log; the message is returned too.
pub fn start_detached(home: &Path) -> std::result::Result<(), String> {
    std::env::current_exe()
        .map_err(Error::from)
        .and_then(|exe| {
            let arg0 = programs::invoked_path().unwrap_or_else(|| PathBuf::from("mem"));
            detach(home, &exe, arg0.as_os_str(), &["pipeline", "--detached"])
        })
        .map_err(|e| {
            let msg = format!("cannot start a detached run: {e}");
            log(home, &format!("mem pipeline[{}]", std::process::id()), &msg);
            msg
        })
}

/// Lowers this process's priority, and so its stages': a run the hooks start in the
/// background must not slow the hooks of the session that goes on meanwhile. With both cores
/// of a 2-core machine busy at nice 10, a capture hook's p50 was 4.01 ms against 2.40 idle; in
/// the idle class, where a waking hook takes the core at once, 2.45 (alternated, 240 hooks
/// each, 2026-12-05). The cost: on a machine busy with other work a run waits for idle time,
/// and so does the lock it holds; hooks never wait for it (they spool).
pub fn in_background() {
    // SAFETY: nice only changes this process's scheduling priority; a failure leaves it as
    // it was, which is no reason to stop.
    unsafe {
        libc::nice(10);
    }
    // SAFETY: as nice; the policy goes to the threads and processes the run starts.
    #[cfg(target_os = "linux")]
    unsafe {
        let p = libc::sched_param { sched_priority: 0 };
        libc::sched_setscheduler(0, libc::SCHED_IDLE, &p);
    }
}

/// One run in this process, with the stages found beside `mem` (then MEM_BIN_DIR, then PATH),
/// each hold of the lock within `embed_budget_s` (`drain`: until nothing is left, mem-embed's
/// progress on the terminal with `progress`); each line goes to the pipeline log and to `echo`. `Ok(false)`: another run holds the lock.
/// Stages that failed are an error naming them and the log.
pub fn run_here(
    home: &Path,
    drain: bool,
    progress: bool,
    echo: &mut dyn FnMut(&str),
) -> Result<bool> {
    let who = format!("mem pipeline[{}]", std::process::id());
    let mut report = |line: &str| {
        log(home, &who, line);
        echo(line);
    };
    let cfg =
        crate::config::Config::load(home).unwrap_or_else(|_| crate::config::Config::env_only(home));
    // A bad budget is an error the log tells too (a detached run has no one else to tell).
    let budget = match drain {
        true => Ok(None),
        false => crate::config::EMBED_BUDGET_S
            .get(&cfg)
            .map(|s| Some(Duration::from_secs_f64(s))),
    };
    let ran = budget.and_then(|budget| {
        let opts = Options {
            budget,
            show_progress: progress,
        };
        stages(&tool_dirs(home)).and_then(|s| run(home, &s, opts, &mut report))
    });
    match ran {
        Ok(Ran::Busy) => Ok(false),
        Ok(Ran::Done { failed, .. }) if failed.is_empty() => Ok(true),
        Ok(Ran::Done { failed, .. }) => {
            let names: Vec<String> = failed
                .iter()
                .map(|(n, why)| format!("{n} ({why})"))
                .collect();
            Err(Error::other(format!(
                "failed: {}; see {}",
                names.join(", "),
                log_path(home).display()
            )))
        }
        Err(e) => {
            log(home, &who, &format!("error: {e}"));
            Err(e)
        }
    }
}
