//! mem-install's work: merge memkit's hooks into a Claude Code settings file (or take them out),
//! copy the programs out of a cargo build directory first, and write the man pages and shell
//! completions (`man` renders them). `cmd::install` parses the flags and says what `apply` did;
//! the tool registry is handed in, never imported, since the tools' modules come back here.

pub mod docs;
pub mod files;
pub mod hooks;
pub mod man;

use std::path::PathBuf;

use serde_json::{Map, Value, json};

use crate::cli::Tool;
use crate::{Error, Result};

/// What mem-install is asked to do.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// The settings file to rewrite.
    pub settings: PathBuf,
    pub uninstall: bool,
    pub dry_run: bool,
    /// Where the programs are (default: beside the running one).
    pub bin_dir: Option<PathBuf>,
    /// Where to copy them (default: ~/.local/bin when they sit in a cargo build directory).
    pub copy_to: Option<PathBuf>,
    pub no_copy: bool,
    /// Write (or with `uninstall` remove) the man pages and completions.
    pub docs: bool,
}

/// What `apply` did.
#[derive(Debug)]
pub enum Done {
    /// A dry run on a file that is not plain JSON: memkit's hooks alone, to merge by hand, and
    /// why the file itself cannot be.
    ByHand {
        text: String,
        why: String,
    },
    /// A dry run: the settings as they would be, and the copy that would be made (from, to).
    Preview {
        text: String,
        copy: Option<(PathBuf, PathBuf)>,
    },
    Applied(Applied),
}

#[derive(Debug)]
pub struct Applied {
    /// "installed", "removed" or "unchanged".
    pub verb: &'static str,
    /// Handlers registered (removed, when uninstalling).
    pub hooks: usize,
    /// Programs copied, from where to where, and whether the destination is on PATH.
    pub copied: Option<Copied>,
    /// Where the programs the hooks run are.
    pub bin_dir: PathBuf,
    /// The man page directory written, or how many pages and completions were removed.
    pub docs: Option<DocsDone>,
}

#[derive(Debug)]
pub struct Copied {
    pub count: usize,
    pub from: PathBuf,
    pub to: PathBuf,
    pub on_path: bool,
}

#[derive(Debug)]
pub enum DocsDone {
    Written(PathBuf),
    Removed(usize),
}

/// Does what `req` asks; `tools` is the registry of the programs to copy and of the man pages
/// and completions to write or remove.
pub fn apply(req: &Request, tools: &[Tool]) -> Result<Done> {
    let path = &req.settings;
    let name = path.display().to_string();
    let original = match std::fs::read_to_string(path) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(Error::input(&name, None, e)),
    };
    let built = match &req.bin_dir {
        Some(d) => std::path::absolute(d)?,
        // The programs' own directory, not a directory of links to them: the copy out of a
        // build directory is made from there.
        None => crate::programs::exe_dir().ok_or_else(|| {
            Error::other("cannot tell where the memkit binaries are; use --bin-dir")
        })?,
    };
    // Where the programs the hooks run are, or go.
    let copy_to = match &req.copy_to {
        _ if req.no_copy => None,
        Some(d) => Some(std::path::absolute(d)?),
        None if files::is_build_dir(&built) => Some(crate::config::home().join(".local/bin")),
        None => None,
    };
    let bin_dir = copy_to.clone().unwrap_or_else(|| built.clone());
    let copy_to = copy_to.filter(|_| !req.uninstall);
    let mut root: Value = match &original {
        Some(t) if !t.trim().is_empty() => match serde_json::from_str(t) {
            Ok(v) => v,
            Err(e) if req.dry_run && !req.uninstall => {
                let ours = hooks::ours_only(&bin_dir);
                if ours["hooks"].as_object().is_none_or(Map::is_empty) {
                    return Err(files::no_tools(&built));
                }
                return Ok(Done::ByHand {
                    text: serde_json::to_string_pretty(&ours)? + "\n",
                    why: format!(
                        "{name}:{}: not plain JSON ({e}); these are memkit's hooks, to merge into it by hand",
                        e.line()
                    ),
                });
            }
            Err(e) => {
                return Err(Error::input(
                    &name,
                    Some(e.line()),
                    format!(
                        "not plain JSON ({e}); settings with comments or trailing commas are left untouched: remove them, or add memkit's hooks by hand (mem-install --dry-run prints them)"
                    ),
                ));
            }
        },
        _ => json!({}),
    };
    let obj = root
        .as_object_mut()
        .ok_or_else(|| Error::input(&name, None, "settings are not a JSON object"))?;
    let hooks_val = obj.entry("hooks").or_insert_with(|| json!({}));
    let hooks = hooks_val
        .as_object_mut()
        .ok_or_else(|| Error::input(&name, None, "\"hooks\" is not an object"))?;
    if !req.uninstall {
        hooks::check_events(hooks).map_err(|msg| Error::input(&name, None, msg))?;
    }
    let removed = hooks::remove_ours(hooks);
    let added = if req.uninstall {
        0
    } else {
        hooks::add_ours(hooks, &built, &bin_dir)
    };
    if !req.uninstall && added == 0 {
        return Err(files::no_tools(&built));
    }
    if hooks.is_empty() {
        obj.remove("hooks");
    }
    let text = serde_json::to_string_pretty(&root)? + "\n";
    let unchanged = match &original {
        Some(o) => serde_json::from_str::<Value>(o).ok() == Some(root.clone()),
        None => req.uninstall,
    };
    if req.dry_run {
        return Ok(Done::Preview {
            text,
            copy: copy_to.map(|dest| (built, dest)),
        });
    }
    let copied = match copy_to {
        Some(to) => Some(Copied {
            count: files::copy_programs(&built, &to, tools)?,
            on_path: files::on_path(&to),
            from: built,
            to,
        }),
        None => None,
    };
    if !unchanged {
        files::write_atomic(path, original.as_deref(), &text)?;
    }
    let docs = if !req.docs {
        None
    } else {
        let d = docs::Docs::under(&crate::config::home());
        Some(if req.uninstall {
            DocsDone::Removed(d.remove(tools)?)
        } else {
            d.write(tools)?;
            DocsDone::Written(d.man)
        })
    };
    Ok(Done::Applied(Applied {
        verb: if unchanged {
            "unchanged"
        } else if req.uninstall {
            "removed"
        } else {
            "installed"
        },
        hooks: if req.uninstall { removed } else { added },
        copied,
        bin_dir,
        docs,
    }))
}
