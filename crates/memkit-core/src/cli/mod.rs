//! Shared CLI plumbing: output format, records vs tables, diagnostics, exit codes
//! (docs/ARCHITECTURE.md, "Command-line conventions"). The only place that decides how a result becomes an exit status.

use std::path::Path;

use crate::{Error, Result};

mod input;
mod io;
pub use crate::log::log_line;
pub use input::Input;
pub use io::{Common, Format, Io, Outcome, render_table};

/// Runs a tool and exits with the status its result maps to: 0 ok, 1 nothing found, 2 usage,
/// 3 bad input, 4 store error, 5 other. A closed stdout pipe is a silent success.
pub fn exit_with(prog: &str, result: Result<Outcome>) -> ! {
    let code = match result {
        Ok(Outcome::Ok) => 0,
        Ok(Outcome::NothingFound) => 1,
        Err(e) if matches!(e.root(), Error::BrokenPipe) => 0,
        Err(e) => {
            eprintln!("{prog}: error: {e}");
            e.exit_code()
        }
    };
    std::process::exit(code)
}

/// A tool as the registry (`cmd::ALL`) knows it.
pub struct Tool {
    /// Binary name (`mem-capture`).
    pub name: &'static str,
    /// Its clap definition.
    pub command: fn() -> clap::Command,
    /// Extra man page text (paragraphs separated by blank lines).
    pub details: &'static str,
    /// (command, what it does) pairs for the EXAMPLES section.
    pub examples: &'static [(&'static str, &'static str)],
}

/// The whole `main` of a tool binary: parse, run, flush, exit with the mapped status. `A`
/// flattens [`Common`] (`#[command(flatten)] common: Common`), read here from the same matches.
pub fn main<A: clap::Parser>(prog: &'static str, run: fn(A, &mut Io) -> Result<Outcome>) -> ! {
    // Memories, logs, spooled payloads and indexes are the user's alone: whatever creates a
    // file (tantivy, the vector index and SQLite included) creates it 0600, a directory 0700.
    // SAFETY: umask only sets the process's file mode mask; it cannot fail.
    unsafe {
        libc::umask(0o077);
    }
    let (args, common): (A, Common) = parse_args();
    let mut io = Io::std(prog, &common);
    // Flush even when the tool failed: records written before the error must reach the pipe.
    let result = run(args, &mut io);
    let flushed = io.finish(result.is_ok());
    exit_with(prog, result.and_then(|o| flushed.map(|_| o)))
}

/// Parses argv with clap, into the tool's arguments and the common flags they flatten, mapping
/// clap's errors to exit 2 (help and version to 0).
fn parse_args<A: clap::Parser>() -> (A, Common) {
    use clap::FromArgMatches;
    let parsed = A::command()
        .try_get_matches()
        .and_then(|m| Ok((A::from_arg_matches(&m)?, Common::from_arg_matches(&m)?)));
    parsed.unwrap_or_else(|e| {
        let e = e.format(&mut A::command());
        let code = if e.use_stderr() { 2 } else { 0 };
        let _ = e.print();
        std::process::exit(code)
    })
}

/// Runs a hook's work under the `--hook` contract: a no-op when MEM_DISABLE is set, and
/// whatever goes wrong (an error or a panic) is logged to `$MEM_HOME/logs/<prog>.log` and
/// becomes `None`, never a failure Claude Code would see.
pub fn guard_hook<T>(prog: &str, work: impl FnOnce(&Path) -> Result<Option<T>>) -> Option<T> {
    if crate::config::disabled() {
        return None;
    }
    let home = crate::config::data_home();
    // A write past the file-size limit must fail like a full disk (and be handled), not kill
    // the hook with SIGXFSZ.
    // SAFETY: setting a signal's disposition to SIG_IGN has no preconditions.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
    crate::config::set_hook(prog);
    std::panic::set_hook(Box::new(|_| {}));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(&home)));
    let problem = match result {
        Ok(Ok(out)) => return out,
        Ok(Err(e)) => e.to_string(),
        Err(p) => format!(
            "panic: {}",
            p.downcast_ref::<&str>()
                .copied()
                .or(p.downcast_ref::<String>().map(String::as_str))
                .unwrap_or("?")
        ),
    };
    log_line(&home, prog, "error", &problem);
    None
}

/// A flag's value parser for a finite number (`NaN` or `inf` would silently drop every hit or
/// none).
pub fn finite(s: &str) -> std::result::Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if x.is_finite() => Ok(x),
        _ => Err(format!("{s:?} is not a finite number")),
    }
}
