//! Integration tests: the real binaries, run in their own data home with a cleared environment,
//! asserting on parsed output and on the real SQLite file.

mod ast;
mod backlog;
mod capture;
mod compress;
mod context;
mod cpus;
mod discovery;
mod e2e;
mod embed;
mod eval;
mod html;
mod install;
mod layout;
mod learn;
mod mcp;
mod pipeline;
mod privacy;
mod prompt_eval;
mod recall;
mod records;
mod redact;
mod report;
mod rerank;
mod retrieval;
mod robust;
mod search;
mod secrets;
mod sync;
mod tools;
mod trust;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

/// Path of a built binary of the workspace (they all land beside `mem`).
pub fn bin(name: &str) -> PathBuf {
    let mut p = PathBuf::from(env!("CARGO_BIN_EXE_mem"));
    p.set_file_name(name);
    // cargo test builds the binaries of this package only: mem-capture is memkit-capture's.
    assert!(
        p.exists(),
        "{} is not built: run `cargo build --bins` first (scripts/test does)",
        p.display()
    );
    p
}

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// A throwaway data home; every command runs with only the variables it sets.
pub struct Env {
    pub dir: tempfile::TempDir,
    pub vars: Vec<(String, String)>,
}

impl Default for Env {
    fn default() -> Self {
        Env::new()
    }
}

impl Env {
    pub fn new() -> Env {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = dir.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        Env {
            vars: vec![
                (
                    "MEM_HOME".into(),
                    dir.path().join("mem").display().to_string(),
                ),
                (
                    "MEM_MODELS".into(),
                    dir.path().join("models").display().to_string(),
                ),
                ("HOME".into(), home.display().to_string()),
                ("PATH".into(), std::env::var("PATH").unwrap_or_default()),
                // Tests never reach the internet: no first-use downloads, and any download
                // that a test turns on goes to its own mock (nothing listens on port 9).
                ("MEM_AUTO_INSTALL".into(), "0".into()),
                ("MEM_HF_ENDPOINT".into(), "http://127.0.0.1:9".into()),
            ],
            dir,
        }
    }

    pub fn set(mut self, k: &str, v: &str) -> Env {
        self.vars.retain(|(kk, _)| kk != k);
        self.vars.push((k.into(), v.into()));
        self
    }

    pub fn home(&self) -> PathBuf {
        self.dir.path().join("mem")
    }

    pub fn db_path(&self) -> PathBuf {
        self.home().join("mem.db")
    }

    pub fn db(&self) -> rusqlite::Connection {
        rusqlite::Connection::open(self.db_path()).expect("open db")
    }

    pub fn cmd(&self, tool: &str) -> Command {
        let mut c = Command::new(bin(tool));
        c.env_clear();
        for (k, v) in &self.vars {
            c.env(k, v);
        }
        c.current_dir(self.dir.path());
        c
    }

    /// Runs `tool args` with `stdin` piped in; returns the finished process.
    pub fn run(&self, tool: &str, args: &[&str], stdin: &[u8]) -> Output {
        piped(self.cmd(tool).args(args), stdin)
    }

    /// Runs and requires exit 0, showing stdout and stderr otherwise.
    pub fn ok(&self, tool: &str, args: &[&str], stdin: &[u8]) -> Output {
        let out = self.run(tool, args, stdin);
        assert!(
            out.status.success(),
            "{tool} {args:?} failed: {}",
            show(&out)
        );
        out
    }

    /// The rows of a two-column query, collected as pairs (a `BTreeMap` for counts by key).
    pub fn pairs<A, B, C>(&self, sql: &str) -> C
    where
        A: rusqlite::types::FromSql,
        B: rusqlite::types::FromSql,
        C: FromIterator<(A, B)>,
    {
        self.db()
            .prepare(sql)
            .and_then(|mut st| {
                st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect::<rusqlite::Result<C>>()
            })
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    /// Imports the bundled fixture transcripts (tests/fixtures/transcripts) into this home.
    pub fn import_fixtures(&self) {
        let tr = fixtures().join("transcripts");
        self.ok(
            "mem-capture",
            &["-q", "--transcripts", tr.to_str().unwrap()],
            b"",
        );
    }

    pub fn count(&self, sql: &str) -> i64 {
        self.value(sql)
    }

    /// The one value a query selects.
    pub fn value<T: rusqlite::types::FromSql>(&self, sql: &str) -> T {
        self.db()
            .query_row(sql, [], |r| r.get(0))
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
    }
}

/// A copy of the directory `from` at `to` (made, with its parents, when missing).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}

/// Polls `cond` until it holds, failing with `what` after a minute: for work done by a
/// detached process, which the test cannot wait for directly.
pub fn wait_for(env: &Env, what: &str, cond: impl Fn(&Env) -> bool) {
    for _ in 0..1200 {
        if cond(env) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("waited a minute, still not true: {what}");
}

/// Runs `c` with `input` on its stdin and its output captured. The input is written from a
/// thread, so a program that writes before it has read everything cannot deadlock; a program
/// that exits before reading (MEM_DISABLE, --version) breaks the pipe, which is no failure here:
/// the exit code and the output are what callers check.
pub fn piped(c: &mut Command, input: &[u8]) -> Output {
    let mut child = c
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().unwrap();
    let data = input.to_vec();
    let writer = std::thread::spawn(move || match stdin.write_all(&data) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e),
        _ => Ok(()),
    });
    let out = child.wait_with_output().expect("wait");
    writer.join().unwrap().expect("writing stdin");
    out
}

pub fn show(out: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A hook payload: a session's common fields (`base`) with one event's own (`extra`).
pub fn event(base: &Value, extra: Value) -> Vec<u8> {
    let mut b = base.clone();
    for (k, v) in extra.as_object().expect("an object") {
        b[k] = v.clone();
    }
    b.to_string().into_bytes()
}

/// Parses JSONL stdout.
pub fn jsonl(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad JSONL line {l:?}: {e}")))
        .collect()
}
