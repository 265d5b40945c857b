//! memkit's other programs, as `mem` and `mem doctor` run them, found by
//! [`memkit_core::programs`]: beside the running binary first, then on PATH.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;

use crate::cli::Outcome;
use crate::{Error, Result, programs};

/// The directory of the running `mem`, where its sibling tools are.
pub fn bin_dir() -> Result<PathBuf> {
    programs::exe_dir().ok_or_else(|| Error::other("cannot tell where mem runs from"))
}

/// Runs a sibling tool quietly; its stderr is kept for the report.
pub fn run_quietly(name: &str, args: &[&str]) -> Result<std::result::Result<(), String>> {
    let out = Command::new(programs::command(name))
        .args(args)
        .arg("-q")
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| Error::other(format!("cannot run {name}: {e}")))?;
    Ok(if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{name} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    })
}

/// Replaces this process with tool `name` (found by [`programs::find`]) run with `args`.
pub fn exec(name: &str, args: &[String]) -> Result<Outcome> {
    let Some(path) = programs::find(name) else {
        return Err(Error::Usage(format!(
            "unknown tool '{}': `mem help` lists the installed ones",
            name.trim_start_matches("mem-")
        )));
    };
    let err = std::process::Command::new(path).args(args).exec();
    Err(Error::Other(format!("cannot run {name}: {err}")))
}
