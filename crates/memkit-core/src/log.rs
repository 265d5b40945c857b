//! The log files hooks write what they cannot say on stdout to. Below `cli` and `config`, which
//! both log; it uses only the store's clock and home, and the home's layout.

use std::io::Write;
use std::path::Path;

use crate::home::Home;

/// Appends a line to `$MEM_HOME/logs/<prog>.log`, where hooks report what they cannot say on
/// stdout. Best effort: logging must never be the thing that fails a hook.
///
/// When the data home cannot be written (read-only, or not a directory), the line goes to the
/// logs/ beside the fallback spool (see `capture::spool`), and failing that to stderr, which
/// Claude Code keeps in its debug log.
pub fn log_line(home: &Path, prog: &str, level: &str, msg: &str) {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let line = format!("{} {level} {msg}\n", crate::store::now());
    let append = |home: &Home| -> std::io::Result<()> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(home.logs())?;
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(home.log(prog))?
            .write_all(line.as_bytes())
    };
    let _ = crate::store::ensure_home(home);
    let home = Home::new(home);
    if append(&home).is_err() && append(&home.fallback()).is_err() {
        eprint!("{prog}: {line}");
    }
}
