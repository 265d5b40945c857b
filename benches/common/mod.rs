//! Shared set-up of the search benches: the fixture transcripts captured by the real
//! mem-capture binary, turned into observations by memkit::search::synth.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use memkit::search::synth::{self, Turn};

pub fn bin(name: &str) -> PathBuf {
    let mut p = PathBuf::from(env!("CARGO_BIN_EXE_mem-search"));
    p.set_file_name(name);
    p
}

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// A command with only the variables memkit needs.
pub fn cmd(home: &Path, tool: &str) -> Command {
    let mut c = Command::new(bin(tool));
    c.env_clear()
        .env("MEM_HOME", home)
        .env("HOME", home.join("user"))
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("MEM_SEARCH_GIT_FILES", "0")
        .current_dir(home);
    c
}

/// Captures the fixture transcripts into `home` and returns the user turns with one
/// observation per tool call (not yet stored).
pub fn fixture_turns(home: &Path) -> Vec<Turn> {
    std::fs::create_dir_all(home).unwrap();
    let out = cmd(home, "mem-capture")
        .args(["-q", "--transcripts"])
        .arg(fixtures().join("transcripts"))
        .output()
        .expect("mem-capture");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let conn = memkit::store::open(&home.join("mem.db")).unwrap();
    synth::turns_from_queue(&conn).unwrap()
}

pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

pub fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[((v.len() - 1) as f64 * p).round() as usize]
}
