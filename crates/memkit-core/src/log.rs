//! The log files hooks write what they cannot say on stdout to. Below `cli` and `config`, which
//! both log; it uses only the store's clock and home.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Appends a line to `$MEM_HOME/logs/<prog>.log`, where hooks report what they cannot say on
/// stdout. Best effort: logging must never be the thing that fails a hook.
///
/// When the data home cannot be written (read-only, or not a directory), the line goes to the
/// logs/ beside the fallback spool (see `capture::spool`), and failing that to stderr, which
/// Claude Code keeps in its debug log.
pub fn log_line(home: &Path, prog: &str, level: &str, msg: &str) {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let line = format!("{} {level} {msg}\n", crate::store::now());
    let append = |dir: &Path| -> std::io::Result<()> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(dir.join(format!("{prog}.log")))?
            .write_all(line.as_bytes())
    };
    let _ = crate::store::ensure_home(home);
    let fallback = fallback_home(home).join("logs");
    if append(&home.join("logs")).is_err() && append(&fallback).is_err() {
        eprint!("{prog}: {line}");
    }
}

/// Where memkit writes when the data home cannot be written: `<temp dir>/memkit-<uid>/<hash of
/// home>`, so two data homes never mix their spooled events or logs.
pub fn fallback_home(home: &Path) -> PathBuf {
    use sha2::Digest;
    let hash = hex::encode(&sha2::Sha256::digest(home.as_os_str().as_encoded_bytes())[..6]);
    // SAFETY: getuid has no preconditions and cannot fail.
    let uid = unsafe { libc::getuid() };
    std::env::temp_dir()
        .join(format!("memkit-{uid}"))
        .join(hash)
}
