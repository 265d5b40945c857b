//! The system `git`, driven on mem sync's working clone: the user's own git, with their
//! credentials and config. Nothing here may wait for a person (no prompts), and what talks to
//! the remote gives up after [`NET_TIMEOUT`].

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::{Error, Result};

/// How long a fetch, clone or push may take before it is taken as a remote out of reach.
pub const NET_TIMEOUT: Duration = Duration::from_secs(120);

/// The working clone, with the identity commits are made as when git has none of its own.
#[derive(Debug, Clone)]
pub struct Git {
    pub dir: PathBuf,
    identity: Vec<String>,
}

/// What a git command said when it failed.
#[derive(Debug, Clone)]
pub struct Failed {
    pub args: String,
    pub stderr: String,
}

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let said = self
            .stderr
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with("hint:"))
            .collect::<Vec<_>>()
            .join("; ");
        write!(f, "git {} failed: {said}", self.args)
    }
}

fn base(dir: Option<&Path>) -> Command {
    let mut c = Command::new("git");
    if let Some(d) = dir {
        c.arg("-C").arg(d);
    }
    // No prompt for an https password (a sync runs in the background too; ssh prompts only
    // where there is a terminal). Messages in English.
    c.env("GIT_TERMINAL_PROMPT", "0")
        .env("LC_ALL", "C")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .stdin(Stdio::null());
    dies_with_parent(&mut c);
    c
}

/// A git started by a sync that is killed goes with it: left running, it went on changing the
/// working clone under the next sync (which takes its lock files for stale ones).
#[cfg(target_os = "linux")]
fn dies_with_parent(c: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: between fork and exec only async-signal-safe calls (prctl, getppid, _exit), on
    // a value copied before the fork.
    let parent = std::process::id() as libc::pid_t;
    unsafe {
        c.pre_exec(move || {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            // The parent may have died before the prctl took effect.
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn dies_with_parent(_: &mut Command) {}

/// Runs `cmd` to its end, or kills it (and what it started) after `limit`.
fn finish(
    mut cmd: Command,
    args: &str,
    limit: Option<Duration>,
) -> std::result::Result<String, Failed> {
    let failed = |stderr: String| Failed {
        args: args.to_string(),
        stderr,
    };
    let out = match limit {
        None => cmd.output().map_err(|e| failed(e.to_string()))?,
        Some(limit) => {
            cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
            let child = cmd.spawn().map_err(|e| failed(e.to_string()))?;
            let pid = child.id() as i32;
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let _ = tx.send(child.wait_with_output());
            });
            match rx.recv_timeout(limit) {
                Ok(Ok(out)) => out,
                Ok(Err(e)) => return Err(failed(e.to_string())),
                Err(_) => {
                    // SAFETY: kill has no memory effects; the pid is git's, not yet reaped.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                    return Err(failed(format!("no answer in {} s", limit.as_secs())));
                }
            }
        }
    };
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim_end().to_string())
    } else {
        Err(failed(String::from_utf8_lossy(&out.stderr).into_owned()))
    }
}

/// Whether `remote` answers as a git repository; the error says why not.
pub fn probe(remote: &str) -> std::result::Result<(), Failed> {
    let mut c = base(None);
    c.args(["ls-remote", "--heads", "--", remote]);
    finish(c, "ls-remote", Some(NET_TIMEOUT)).map(|_| ())
}

/// Clones `remote` into `dir` (which must not exist).
pub fn clone(remote: &str, dir: &Path) -> std::result::Result<(), Failed> {
    let mut c = base(None);
    c.args(["clone", "-q", "--no-tags", "--", remote]).arg(dir);
    finish(c, "clone", Some(NET_TIMEOUT)).map(|_| ())
}

impl Git {
    /// The clone at `dir`; commits are made as `memkit <name>` unless git has an identity.
    pub fn open(dir: &Path, name: &str) -> Git {
        let mut g = Git {
            dir: dir.to_path_buf(),
            identity: vec![],
        };
        let has = |k: &str| g.run(&["config", "--get", k]).is_ok_and(|v| !v.is_empty());
        let (user, email) = (has("user.name"), has("user.email"));
        if !user {
            g.identity.push(format!("user.name=memkit {name}"));
        }
        if !email {
            g.identity.push("user.email=memkit@localhost".into());
        }
        g
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = base(Some(&self.dir));
        for i in &self.identity {
            c.args(["-c", i]);
        }
        c.args(args);
        c
    }

    /// A local command (no network): its stdout, trimmed.
    pub fn run(&self, args: &[&str]) -> std::result::Result<String, Failed> {
        finish(self.cmd(args), &args.join(" "), None)
    }

    /// A command that talks to the remote, given up after [`NET_TIMEOUT`].
    pub fn net(&self, args: &[&str]) -> std::result::Result<String, Failed> {
        finish(self.cmd(args), &args.join(" "), Some(NET_TIMEOUT))
    }

    /// The commit `rev` names, if any.
    pub fn rev(&self, rev: &str) -> Option<String> {
        self.run(&["rev-parse", "-q", "--verify", &format!("{rev}^{{commit}}")])
            .ok()
            .filter(|s| !s.is_empty())
    }

    /// The branch to work on: the one the clone checked out, which is the remote's own. A
    /// clone with nothing checked out takes a branch the remote has (`main` first), or `main`
    /// for an empty remote, so that every machine pushes one branch whatever its git's
    /// default.
    pub fn branch(&self) -> Result<String> {
        let b = self
            .run(&["symbolic-ref", "--short", "-q", "HEAD"])
            .map_err(|e| Error::other(e.to_string()))?;
        if self.rev("HEAD").is_some() || self.rev(&format!("origin/{b}")).is_some() {
            return Ok(b);
        }
        let there = self
            .run(&[
                "for-each-ref",
                "--format=%(refname:lstrip=3)",
                "refs/remotes/origin",
            ])
            .unwrap_or_default();
        let mut there: Vec<&str> = there.lines().filter(|l| *l != "HEAD").collect();
        there.sort_by_key(|l| (*l != "main", *l));
        let pick = there.first().copied().unwrap_or("main").to_string();
        self.run(&["symbolic-ref", "HEAD", &format!("refs/heads/{pick}")])
            .map_err(|e| Error::other(e.to_string()))?;
        Ok(pick)
    }

    /// Leaves the clone as its last commit says, whatever a killed run left: stale lock
    /// files, a rebase halfway, lines appended and not committed.
    pub fn clean_up(&self) -> Result<()> {
        let dotgit = self.dir.join(".git");
        for d in [
            dotgit.clone(),
            dotgit.join("refs/heads"),
            dotgit.join("refs/remotes/origin"),
        ] {
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                if e.file_name().to_string_lossy().ends_with(".lock") {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
        if dotgit.join("rebase-merge").exists() || dotgit.join("rebase-apply").exists() {
            let _ = self.run(&["rebase", "--abort"]);
        }
        // Before the first commit there is no HEAD to reset to, but a run killed after
        // staging left its lines in the index, where `clean` does not reach them: read back
        // as this machine's own, they were taken as shared and never committed.
        let reset: &[&str] = if self.rev("HEAD").is_some() {
            &["reset", "-q", "--hard"]
        } else {
            &["read-tree", "--empty"]
        };
        self.run(reset).map_err(|e| Error::other(e.to_string()))?;
        self.run(&["clean", "-q", "-fd"])
            .map_err(|e| Error::other(e.to_string()))?;
        Ok(())
    }

    /// Commits `paths` (this machine's own files, relative to the clone) as they are in the
    /// tree, and nothing else, with `message`; false when none changed. Whatever else the
    /// tree holds (another machine's file gone or changed by something outside this run) is
    /// never committed, so a sync cannot take another machine's lines off the remote.
    pub fn commit_only(&self, paths: &[String], message: &str) -> Result<bool> {
        let err = |e: Failed| Error::other(e.to_string());
        if paths.is_empty() {
            return Ok(false);
        }
        fn with<'a>(head: &[&'a str], paths: &'a [String]) -> Vec<&'a str> {
            head.iter()
                .copied()
                .chain(["--"])
                .chain(paths.iter().map(String::as_str))
                .collect()
        }
        self.run(&with(&["add"], paths)).map_err(err)?;
        if self
            .run(&with(&["diff", "--cached", "--quiet"], paths))
            .is_ok()
        {
            return Ok(false);
        }
        self.run(&with(
            &[
                "commit",
                "-q",
                "--no-verify",
                "--no-gpg-sign",
                "-m",
                message,
            ],
            paths,
        ))
        .map_err(err)?;
        Ok(true)
    }

    /// Commits of HEAD the remote's `branch` lacks, and the other way round.
    pub fn ahead_behind(&self, branch: &str) -> (u64, u64) {
        let up = format!("origin/{branch}");
        let count = |range: &str| {
            self.run(&["rev-list", "--count", range])
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(0)
        };
        match (self.rev("HEAD"), self.rev(&up)) {
            (None, _) => (0, u64::from(self.rev(&up).is_some())),
            (Some(_), None) => (count("HEAD"), 0),
            (Some(h), Some(u)) if h == u => (0, 0),
            (Some(_), Some(_)) => (count(&format!("{up}..HEAD")), count(&format!("HEAD..{up}"))),
        }
    }

    /// Commit times and subjects, newest first (what --status reads machines' activity from).
    pub fn log(&self, max: usize) -> Vec<(String, String)> {
        self.run(&["log", &format!("-{max}"), "--format=%cI%x09%s"])
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.split_once('\t'))
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }
}
