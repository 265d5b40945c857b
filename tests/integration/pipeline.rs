//! `mem pipeline` (and scripts/mem-pipeline, which runs it): locking and detaching without
//! util-linux, the lock's rules, the closing WAL checkpoint, and `mem backup`.

use std::fs::File;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use crate::compress::{
    Mock, Reply, anthropic_reply, assert_all_accounted, obs_json, small_session,
};
use crate::{Env, bin, show, wait_for};

/// A bin dir holding only memkit's tools (links to this build) and scripts/mem-pipeline:
/// used as the whole PATH, it has no flock, no setsid, not even bash.
fn memkit_only_dir(env: &Env) -> PathBuf {
    let d = env.dir.path().join("memkit-bin");
    std::fs::create_dir_all(&d).unwrap();
    for t in ["mem", "mem-capture", "mem-compress"] {
        std::os::unix::fs::symlink(bin(t), d.join(t)).unwrap();
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/mem-pipeline");
    std::fs::copy(script, d.join("mem-pipeline")).unwrap();
    d
}

fn with_path(env: &Env, program: impl AsRef<std::ffi::OsStr>, path: &Path) -> Command {
    let mut c = Command::new(program);
    c.env_clear();
    for (k, v) in &env.vars {
        c.env(k, v);
    }
    c.env("PATH", path).current_dir(env.dir.path());
    c
}

/// The pid a run wrote into the lock file, if any run has taken it.
fn lock_holder(env: &Env) -> Option<u32> {
    std::fs::read_to_string(env.home().join("pipeline.lock"))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// `/proc/<pid>/stat` fields after the command name: state, ppid, pgrp, session.
fn stat(pid: u32) -> Option<(char, u32, u32, u32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &text[text.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    Some((
        f[0].chars().next()?,
        f[1].parse().ok()?,
        f[2].parse().ok()?,
        f[3].parse().ok()?,
    ))
}

/// Alive: exists and has not exited (a zombie has exited; whether it is reaped is up to its
/// parent, which for a detached run is the system's init).
fn alive(pid: u32) -> bool {
    stat(pid).is_some_and(|(state, ..)| state != 'Z')
}

/// Waits until the last run that took the pipeline lock has exited, so that the test's
/// directory is not removed under a detached run.
pub fn wait_idle(env: &Env) {
    if let Some(pid) = lock_holder(env) {
        wait_for(env, "the detached pipeline run exited", |_| !alive(pid));
    }
}

#[test]
fn the_pipeline_needs_neither_flock_nor_setsid() {
    let env = Env::new();
    let only = memkit_only_dir(&env);
    for tool in ["flock", "setsid", "bash", "env"] {
        assert!(!only.join(tool).exists());
    }
    small_session(&env, "s1", 1);
    // The documented entry, found on that PATH, in the foreground.
    let out = with_path(&env, "/bin/sh", &only)
        .args(["-c", "mem-pipeline"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", show(&out));
    assert_all_accounted(&env);
    assert_eq!(
        env.count("SELECT count(*) FROM sessions WHERE summary IS NOT NULL"),
        1
    );
    // Detached, as the Stop hook runs it.
    small_session(&env, "s2", 1);
    let out = with_path(&env, "/bin/sh", &only)
        .args(["-c", "mem pipeline --detach"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", show(&out));
    assert!(
        out.stdout.is_empty() && out.stderr.is_empty(),
        "{}",
        show(&out)
    );
    wait_for(&env, "the detached run summarised s2", |env| {
        env.count("SELECT count(*) FROM sessions WHERE summary IS NOT NULL") == 2
    });
    wait_idle(&env);
    assert_all_accounted(&env);
    let log = env.home().join("logs/pipeline.log");
    if log.exists() {
        let mode = std::fs::metadata(&log).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{}", log.display());
    }
}

#[test]
fn a_run_that_finds_the_lock_taken_leaves_at_once_and_does_nothing() {
    let env = Env::new();
    let only = memkit_only_dir(&env);
    small_session(&env, "s1", 1);
    let lock = File::create(env.home().join("pipeline.lock")).unwrap();
    lock.try_lock().unwrap();
    let out = with_path(&env, only.join("mem"), &only)
        .arg("pipeline")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", show(&out));
    assert_eq!(
        env.count("SELECT count(*) FROM pending_queue WHERE status <> 'raw'"),
        0,
        "nothing was compressed while another run held the lock"
    );
    drop(lock);
    let out = with_path(&env, only.join("mem"), &only)
        .arg("pipeline")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", show(&out));
    assert_all_accounted(&env);
}

/// A gate the mock LLM waits at until the test opens it (or a minute passes, so a broken
/// build fails instead of hanging).
#[derive(Clone, Default)]
struct Gate(Arc<(Mutex<(bool, bool)>, Condvar)>);

impl Gate {
    fn wait(&self) {
        let (m, cv) = &*self.0;
        let (mut g, timeout) = cv
            .wait_timeout_while(m.lock().unwrap(), Duration::from_secs(60), |g| !g.0)
            .unwrap();
        if timeout.timed_out() {
            *g = (true, true);
        }
    }

    fn open(&self) {
        let (m, cv) = &*self.0;
        m.lock().unwrap().0 = true;
        cv.notify_all();
    }

    /// Whether the gate opened by itself, the minute up.
    fn timed_out(&self) -> bool {
        self.0.0.lock().unwrap().1
    }
}

#[test]
fn a_detached_run_returns_at_once_in_its_own_session_and_leaves_no_zombie() {
    let gate = Gate::default();
    let g = gate.clone();
    let mock = Mock::start_raw(move |n, _| {
        g.wait();
        Reply {
            code: 200,
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: anthropic_reply(&obs_json(n, &[]), 10, 5).into_bytes(),
            cut_after: None,
        }
    });
    let env = Env::new()
        .set("MEM_LLM", "anthropic")
        .set("MEM_LLM_URL", &mock.url)
        .set("ANTHROPIC_API_KEY", "test-key");
    let only = memkit_only_dir(&env);
    small_session(&env, "s1", 1);
    let caller = with_path(&env, only.join("mem"), &only)
        .args(["pipeline", "--detach"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let caller_pid = caller.id();
    // Reads the caller's pipes to their end: nothing the run started holds them open.
    let out = caller.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", show(&out));
    assert!(
        out.stdout.is_empty() && out.stderr.is_empty(),
        "{}",
        show(&out)
    );
    wait_for(&env, "the detached run called the model", |_| {
        mock.calls() > 0
    });
    assert!(
        !gate.timed_out(),
        "the caller returned only after the run's model call was answered"
    );
    let run = lock_holder(&env).expect("the run wrote its pid into the lock file");
    let (_, ppid, pgrp, sid) = stat(run).expect("the run is alive while its model call waits");
    let me = std::process::id();
    let (_, _, my_pgrp, my_sid) = stat(me).unwrap();
    assert!(
        ppid != caller_pid && ppid != me,
        "the run is nobody's child here"
    );
    assert!(
        sid != my_sid && pgrp != my_pgrp,
        "the run has its own session"
    );
    // setsid made the intermediate process the session leader; the run itself is not one, so it
    // can never acquire a controlling terminal.
    assert_ne!(sid, run);
    assert!(
        stat(sid).is_none(),
        "the intermediate process was reaped by the caller, not left a zombie: {:?}",
        stat(sid)
    );
    gate.open();
    wait_for(&env, "the run summarised the session", |env| {
        env.count("SELECT count(*) FROM sessions WHERE summary IS NOT NULL") == 1
    });
    wait_idle(&env);
    assert_all_accounted(&env);
}

/// The database file alone, as a copy of mem.db without its WAL would see it.
fn without_wal(env: &Env) -> rusqlite::Connection {
    let copy = env.dir.path().join("copy-of-mem.db");
    std::fs::copy(env.db_path(), &copy).unwrap();
    rusqlite::Connection::open(&copy).unwrap()
}

fn count_in(conn: &rusqlite::Connection, sql: &str) -> i64 {
    conn.query_row(sql, [], |r| r.get(0)).unwrap_or(-1)
}

#[test]
fn a_run_ends_with_the_wal_in_the_database_file() {
    let env = Env::new();
    let only = memkit_only_dir(&env);
    small_session(&env, "s1", 2);
    let out = with_path(&env, only.join("mem"), &only)
        .arg("pipeline")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", show(&out));
    // Looked at before the test opens the database (its connection would checkpoint on close).
    let wal = env.home().join("mem.db-wal");
    let wal_len = std::fs::metadata(&wal).map_or(0, |m| m.len());
    let copy = without_wal(&env);
    assert_eq!(wal_len, 0, "the WAL was emptied");
    let observations = env.count("SELECT count(*) FROM observations");
    assert!(observations > 0);
    assert_eq!(
        count_in(&copy, "SELECT count(*) FROM observations"),
        observations
    );
    assert_eq!(
        count_in(
            &copy,
            "SELECT count(*) FROM pending_queue WHERE status = 'done'"
        ),
        env.count("SELECT count(*) FROM pending_queue")
    );
}

#[test]
fn a_backup_right_after_the_hooks_holds_every_capture() {
    let env = Env::new();
    small_session(&env, "s1", 3);
    // The hooks left the captures in the WAL: a plain copy of mem.db misses them. (Copied
    // before the test opens the database: its own connection would checkpoint on close.)
    let plain_copy = count_in(&without_wal(&env), "SELECT count(*) FROM pending_queue");
    let dest = env.dir.path().join("backups/memkit.db");
    std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
    // An older backup, readable by all, is replaced.
    std::fs::write(&dest, b"old").unwrap();
    std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = env.ok("mem", &["backup", dest.to_str().unwrap()], b"");
    assert!(out.stdout.is_empty(), "{}", show(&out));
    assert_eq!(
        std::fs::metadata(&dest).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let captured = env.count("SELECT count(*) FROM pending_queue");
    assert!(plain_copy < captured, "{plain_copy} of {captured}");
    let copy = rusqlite::Connection::open(&dest).unwrap();
    assert_eq!(
        count_in(&copy, "SELECT count(*) FROM pending_queue"),
        captured
    );
    assert_eq!(
        copy.query_row("PRAGMA integrity_check", [], |r| r.get::<_, String>(0))
            .unwrap(),
        "ok"
    );
    let leftovers: Vec<_> = std::fs::read_dir(dest.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers.len(), 1, "{leftovers:?}");
    // Never over the live database.
    let db = env.db_path();
    let before = std::fs::read(&db).unwrap();
    let out = env.run("mem", &["backup", db.to_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert_eq!(std::fs::read(&db).unwrap(), before);
    // Without a database there is nothing to back up.
    let empty = Env::new();
    let out = empty.run("mem", &["backup", dest.to_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
}

#[test]
fn a_detach_that_cannot_start_still_exits_0() {
    // A data home that cannot be created (below a regular file): the Stop hook must not fail.
    let env = Env::new();
    let file = env.dir.path().join("not-a-dir");
    std::fs::write(&file, b"").unwrap();
    let env = env.set("MEM_HOME", file.join("mem").to_str().unwrap());
    let out = env.run("mem", &["pipeline", "--detach"], b"");
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(out.stdout.is_empty());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("cannot start a detached run"),
        "{}",
        show(&out)
    );
}
