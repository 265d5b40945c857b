//! mem-install: register memkit's hooks in Claude Code's settings, merged with the user's own.

use std::path::{Path, PathBuf};

use clap::{CommandFactory, Parser};

use crate::cli::{Common, Io, Outcome, Tool};
use crate::install::{self, DocsDone, Done, Request};
use crate::{Error, Result};

pub const TOOL: crate::cli::Tool = crate::cli::Tool {
    name: "mem-install",
    command: || Args::command(),
    details: DETAILS,
    examples: &[
        ("mem-install", "Add the hooks to ~/.claude/settings.json."),
        (
            "mem-install --project --dry-run",
            "Show what .claude/settings.json of this project would become.",
        ),
        (
            "cargo build --release && target/release/mem-install",
            "Copy the freshly built tools to ~/.local/bin and register them: cargo clean cannot break the hooks.",
        ),
        (
            "mem-install --uninstall",
            "Remove memkit's hooks, keeping yours.",
        ),
    ],
};

const DETAILS: &str = r#"
The settings file is read as strict JSON and rewritten atomically (a temporary file renamed over it;
a symlinked settings file is written through the link, which stays) with the previous version kept
as <file>.memkit.bak. A file with comments or trailing commas is refused and left as it is;
--dry-run then prints memkit's hooks alone, to merge by hand. An event memkit registers whose value
is not a list of matcher groups ("Stop": "x") is an error naming it, and the file is left as it is.
memkit's entries are the hook handlers whose command runs a memkit tool (mem-capture, mem-context,
mem pipeline, and mem-pipeline of earlier versions); they are added as their own matcher groups so
that --uninstall removes exactly them and leaves every other hook in place. Stop and SessionEnd get
one handler that runs mem-capture --hook and then mem pipeline --detach (Claude Code runs an event's
handlers in parallel; the pipeline must see the capture), the pipeline only where mem-compress is
installed; PreCompact runs the pipeline too, so the work before a compaction is compressed before
it is summarised away. mem-context --hook also answers PreToolUse of Read, Edit, Write, MultiEdit
and NotebookEdit (file recall), PostToolUseFailure and PostToolUse of Bash (error recall) and
SubagentStart (a short project context). Running it twice changes nothing the second time.

Run from a cargo build directory (target/release, target/debug), mem-install first copies the
memkit programs to ~/.local/bin (--copy-to DIR; hard links when on the same file system) and
registers them there, so that cargo clean or a rebuild cannot leave the hooks pointing at nothing;
--no-copy registers them where they are. It then writes the man pages to
$XDG_DATA_HOME/man/man1 (default ~/.local/share/man/man1, where man finds them when ~/.local/bin
is on PATH) and completions for bash (~/.local/share/bash-completion/completions), zsh
(~/.local/share/zsh/site-functions, to add to fpath) and fish (~/.config/fish/completions);
--no-docs skips them. --uninstall removes the hooks, the man pages and the completions, and says
which binaries it left. Installed with cargo instead (cargo install --path . and cargo install
--path crates/memkit-capture, which put the programs in ~/.cargo/bin), mem-install registers
them where they are.
"#;

/// Register (or remove) memkit's hooks in Claude Code's settings.json.
#[derive(Debug, Parser)]
#[command(name = "mem-install", version, long_about = None)]
pub struct Args {
    /// Write the project's .claude/settings.json instead of ~/.claude/settings.json.
    #[arg(long, conflicts_with_all = ["local", "settings"])]
    pub project: bool,
    /// Write the project's .claude/settings.local.json (not committed).
    #[arg(long, conflicts_with = "settings")]
    pub local: bool,
    /// Write this settings file.
    #[arg(long, value_name = "FILE")]
    pub settings: Option<PathBuf>,
    /// Remove memkit's hooks instead of adding them.
    #[arg(long)]
    pub uninstall: bool,
    /// Print the resulting settings instead of writing them.
    #[arg(long)]
    pub dry_run: bool,
    /// Directory holding the memkit binaries (default: the one this binary is in).
    #[arg(long, value_name = "DIR")]
    pub bin_dir: Option<PathBuf>,
    /// Copy the binaries here and register the copies (default when they sit in a cargo build
    /// directory: ~/.local/bin).
    #[arg(long, value_name = "DIR", conflicts_with = "no_copy")]
    pub copy_to: Option<PathBuf>,
    /// Register the binaries where they are, even in a cargo build directory.
    #[arg(long)]
    pub no_copy: bool,
    /// Install no man pages or shell completions.
    #[arg(long)]
    pub no_docs: bool,
    /// Register mem-mcp, memkit's MCP server, for Claude Code too: in ~/.claude.json (every
    /// project), or with --project in the project's .mcp.json.
    #[arg(long)]
    pub mcp: bool,
    #[command(flatten)]
    pub common: Common,
}

fn settings_path(args: &Args) -> Result<PathBuf> {
    if let Some(p) = &args.settings {
        return Ok(p.clone());
    }
    if args.project || args.local {
        let root = crate::project::current_dir()
            .map(PathBuf::from)
            .ok_or_else(|| Error::other("the current directory cannot be read"))?;
        let name = if args.local {
            "settings.local.json"
        } else {
            "settings.json"
        };
        return Ok(root.join(".claude").join(name));
    }
    let home = crate::config::env_nonempty("HOME")
        .ok_or_else(|| Error::Usage("HOME is not set; use --settings FILE".into()))?;
    Ok(Path::new(&home).join(".claude/settings.json"))
}

/// Runs mem-install; `registry` is every tool (`cmd::ALL`): the programs to copy, the man pages
/// and completions to write.
pub fn run(args: Args, io: &mut Io, registry: &[Tool]) -> Result<Outcome> {
    let req = Request {
        settings: settings_path(&args)?,
        uninstall: args.uninstall,
        dry_run: args.dry_run,
        bin_dir: args.bin_dir,
        copy_to: args.copy_to,
        no_copy: args.no_copy,
        docs: !args.no_docs,
    };
    let name = req.settings.display().to_string();
    let a = match install::apply(&req, registry)? {
        Done::ByHand { text, why } => {
            io.warn(why);
            std::io::Write::write_all(&mut io.out, text.as_bytes())?;
            return Ok(Outcome::Ok);
        }
        Done::Preview { text, copy } => {
            if let Some((from, to)) = copy {
                io.warn(format!(
                    "would copy the memkit programs from {} to {}",
                    from.display(),
                    to.display()
                ));
            }
            std::io::Write::write_all(&mut io.out, text.as_bytes())?;
            return Ok(Outcome::Ok);
        }
        Done::Applied(a) => a,
    };
    if let Some(c) = &a.copied {
        if !io.quiet {
            eprintln!(
                "mem-install: copied {} programs from {} to {} (cargo clean cannot break the hooks)",
                c.count,
                c.from.display(),
                c.to.display()
            );
        }
        if !c.on_path {
            io.warn(format!(
                "{} is not on PATH: add it to run the tools by name (the hooks name them in full)",
                c.to.display()
            ));
        }
    }
    if args.mcp || args.uninstall {
        let root = args.project.then(crate::project::current_dir).flatten();
        let registered = memkit_mcp::register::install(
            &crate::config::home(),
            root.as_deref().map(Path::new),
            &a.bin_dir,
            args.uninstall,
        )?;
        if let Some(msg) = registered.filter(|_| !io.quiet) {
            eprintln!("mem-install: {msg}");
        }
    }
    if io.quiet {
        return Ok(Outcome::Ok);
    }
    let (n, what) = (
        a.hooks,
        if req.uninstall {
            "removed"
        } else {
            "registered"
        },
    );
    eprintln!(
        "mem-install: {}: {name} ({n} memkit hook(s) {what})",
        a.verb
    );
    match a.docs {
        Some(DocsDone::Removed(n)) if n > 0 => eprintln!(
            "mem-install: removed {n} man pages and completions; the programs in {} stay (rm {0}/mem {0}/mem-* to remove them)",
            a.bin_dir.display()
        ),
        Some(DocsDone::Written(man)) => eprintln!(
            "mem-install: man pages in {} (man mem-search), completions for bash, zsh and fish",
            man.display()
        ),
        _ => {}
    }
    Ok(Outcome::Ok)
}
