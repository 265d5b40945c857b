//! mem: the git-style front. `mem search q` runs `mem-search q`.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

use clap::{CommandFactory, Parser, Subcommand};

use crate::cli::{self, Common, Io, Outcome};
use crate::{Error, Result};

pub const TOOL: super::Tool = super::Tool {
    name: "mem",
    command: || Args::command(),
    details: "mem TOOL ARGS runs mem-TOOL ARGS, found beside the mem binary first, then on PATH. Its exit status is the tool's.",
    examples: &[
        ("mem help", "List the installed tools."),
        (
            "mem capture --note 'use pnpm, not npm'",
            "Same as mem-capture --note ….",
        ),
        (
            "mem completions bash > ~/.local/share/bash-completion/completions/mem",
            "Install bash completions for every tool.",
        ),
    ],
};

/// memkit: a memory for Claude Code. `mem TOOL …` runs `mem-TOOL …`.
#[derive(Debug, Parser)]
#[command(name = "mem", version, long_about = None, disable_help_subcommand = true)]
pub struct Args {
    #[command(subcommand)]
    pub cmd: Option<Cmd>,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Debug, Subcommand)]
pub enum Cmd {
    /// List the installed tools, or show one tool's help.
    Help { tool: Option<String> },
    /// Print the version.
    Version,
    /// Print shell completions for every tool.
    Completions { shell: clap_complete::Shell },
    /// Write the man pages into a directory (used to refresh man/man1).
    #[command(hide = true)]
    GenMan { dir: PathBuf },
    /// Run mem-TOOL with the remaining arguments.
    #[command(external_subcommand)]
    External(Vec<String>),
}

impl cli::ToolArgs for Args {
    fn common(&self) -> &Common {
        &self.common
    }
}

/// Where a tool's binary is: beside this executable, else on PATH.
fn locate(name: &str) -> Option<PathBuf> {
    let beside = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(|d| d.join(name)));
    if let Some(p) = beside.filter(|p| p.is_file()) {
        return Some(p);
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    })
}

pub fn run(args: Args, io: &mut Io) -> Result<Outcome> {
    match args.cmd {
        None | Some(Cmd::Help { tool: None }) => {
            let rows: Vec<Vec<String>> = super::ALL
                .iter()
                .filter(|t| t.name != "mem" && locate(t.name).is_some())
                .map(|t| {
                    let about = (t.command)()
                        .get_about()
                        .map(|a| a.to_string())
                        .unwrap_or_default();
                    vec![t.name.trim_start_matches("mem-").to_string(), about]
                })
                .collect();
            let mut text = String::from("usage: mem TOOL [ARGS…]   (runs mem-TOOL)\n\ntools:\n");
            for r in &rows {
                text += &format!("  {:<10} {}\n", r[0], r[1]);
            }
            text += "\nalso: mem help TOOL · mem version · mem completions SHELL · man mem-TOOL\n";
            std::io::Write::write_all(&mut io.out, text.as_bytes())?;
            Ok(Outcome::Ok)
        }
        Some(Cmd::Help { tool: Some(t) }) => exec(
            &format!("mem-{}", t.trim_start_matches("mem-")),
            &["--help".into()],
        ),
        Some(Cmd::Version) => {
            std::io::Write::write_all(
                &mut io.out,
                format!("memkit {}\n", env!("CARGO_PKG_VERSION")).as_bytes(),
            )?;
            Ok(Outcome::Ok)
        }
        Some(Cmd::Completions { shell }) => {
            std::io::Write::write_all(&mut io.out, &super::man::completions(shell))?;
            Ok(Outcome::Ok)
        }
        Some(Cmd::GenMan { dir }) => {
            write_man_pages(&dir)?;
            Ok(Outcome::Ok)
        }
        Some(Cmd::External(argv)) => {
            let (tool, rest) = argv
                .split_first()
                .ok_or_else(|| Error::Usage("no tool given".into()))?;
            exec(&format!("mem-{tool}"), rest)
        }
    }
}

pub fn write_man_pages(dir: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir)?;
    for t in super::ALL {
        let path = dir.join(format!("{}.1", t.name));
        std::fs::write(&path, super::man::render(t))?;
        // Documentation is for everyone, whatever the private umask of memkit's tools.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644))?;
    }
    Ok(())
}

fn exec(name: &str, args: &[String]) -> Result<Outcome> {
    let Some(path) = locate(name) else {
        return Err(Error::Usage(format!(
            "unknown tool '{}': `mem help` lists the installed ones",
            name.trim_start_matches("mem-")
        )));
    };
    let err = std::process::Command::new(path).args(args).exec();
    Err(Error::Other(format!("cannot run {name}: {err}")))
}
