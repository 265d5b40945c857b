//! mem-install: register memkit's hooks in Claude Code's settings, merged with the user's own.

use std::path::{Path, PathBuf};

use clap::{CommandFactory, Parser};
use serde_json::{Map, Value, json};

use crate::cli::{self, Common, Io, Outcome};
use crate::{Error, Result};

pub const TOOL: super::Tool = super::Tool {
    name: "mem-install",
    command: || Args::command(),
    details: "The settings file is read as strict JSON and rewritten atomically (a temporary file renamed over it) with the previous version kept as <file>.memkit.bak. A file with comments or trailing commas is refused and left as it is. memkit's entries are the hook handlers whose command runs a memkit tool (mem-capture, mem-context, mem-pipeline); they are added as their own matcher groups so that --uninstall removes exactly them and leaves every other hook in place. Running it twice changes nothing the second time.",
    examples: &[
        ("mem-install", "Add the hooks to ~/.claude/settings.json."),
        (
            "mem-install --project --dry-run",
            "Show what .claude/settings.json of this project would become.",
        ),
        (
            "mem-install --uninstall",
            "Remove memkit's hooks, keeping yours.",
        ),
    ],
};

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
    #[command(flatten)]
    pub common: Common,
}

impl cli::ToolArgs for Args {
    fn common(&self) -> &Common {
        &self.common
    }
}

/// The programs whose handlers are memkit's.
const OURS: &[&str] = &["mem-capture", "mem-context", "mem-pipeline"];

/// (event, tool, arguments, timeout in seconds). A tool that is not installed is left out.
const HOOKS: &[(&str, &str, &str, u32)] = &[
    ("SessionStart", "mem-capture", "--hook", 10),
    ("SessionStart", "mem-context", "--hook", 10),
    ("UserPromptSubmit", "mem-capture", "--hook", 10),
    ("UserPromptSubmit", "mem-context", "--hook --prompt", 10),
    ("PostToolUse", "mem-capture", "--hook", 10),
    ("PostToolUseFailure", "mem-capture", "--hook", 10),
    ("PreCompact", "mem-capture", "--hook", 10),
    ("SubagentStop", "mem-capture", "--hook", 10),
    ("Stop", "mem-capture", "--hook", 10),
    ("Stop", "mem-pipeline", "--detach", 10),
    ("SessionEnd", "mem-capture", "--hook", 10),
    ("SessionEnd", "mem-pipeline", "--detach", 10),
];

/// scripts/mem-pipeline, carried in the binary so that mem-install can put it where the hooks
/// find it, whatever way memkit was installed.
pub const PIPELINE_SCRIPT: &str = include_str!("../../../scripts/mem-pipeline");

/// The script as installed: it remembers the directory of the memkit binaries.
pub fn pipeline_script(bin_dir: &Path) -> String {
    PIPELINE_SCRIPT.replacen(
        "MEMKIT_BIN_DIR_DEFAULT=\"\"",
        &format!(
            "MEMKIT_BIN_DIR_DEFAULT={}",
            shell_quote(&bin_dir.display().to_string())
        ),
        1,
    )
}

/// Where mem-pipeline lives: beside the binaries when that directory is writable (or it is
/// already there and current), else `$MEM_HOME/bin`. Writes it unless `dry_run`.
pub fn install_pipeline(bin_dir: &Path, dry_run: bool) -> Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let text = pipeline_script(bin_dir);
    let beside = bin_dir.join("mem-pipeline");
    let fallback_dir = crate::config::data_home().join("bin");
    for dir in [bin_dir.to_path_buf(), fallback_dir] {
        let path = dir.join("mem-pipeline");
        if std::fs::read_to_string(&path).ok().as_deref() == Some(text.as_str()) || dry_run {
            return Ok(if dry_run { beside } else { path });
        }
        let tmp = dir.join(format!(".mem-pipeline.tmp-{}", std::process::id()));
        let ok = std::fs::create_dir_all(&dir).is_ok()
            && std::fs::write(&tmp, &text).is_ok()
            && std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755)).is_ok()
            && std::fs::rename(&tmp, &path).is_ok();
        if ok {
            return Ok(path);
        }
        let _ = std::fs::remove_file(&tmp);
    }
    Err(Error::other(format!(
        "cannot write mem-pipeline into {} or $MEM_HOME/bin",
        bin_dir.display()
    )))
}

fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:@%=".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// The program a hook command runs: its first word, unquoted, without directories.
fn program_of(command: &str) -> String {
    let c = command.trim_start();
    let first = if let Some(rest) = c.strip_prefix('\'') {
        rest.split('\'').next().unwrap_or("")
    } else if let Some(rest) = c.strip_prefix('"') {
        rest.split('"').next().unwrap_or("")
    } else {
        c.split_whitespace().next().unwrap_or("")
    };
    first.rsplit('/').next().unwrap_or(first).to_string()
}

fn is_ours(handler: &Value) -> bool {
    handler
        .get("command")
        .and_then(Value::as_str)
        .is_some_and(|c| OURS.contains(&program_of(c).as_str()))
}

/// Removes memkit's handlers; groups and events that only held them go too. Returns how many.
pub fn remove_ours(hooks: &mut Map<String, Value>) -> usize {
    let mut removed = 0;
    hooks.retain(|_, groups| {
        let Some(arr) = groups.as_array_mut() else {
            return true;
        };
        if arr.is_empty() {
            return true;
        }
        arr.retain_mut(|g| {
            let Some(hs) = g.get_mut("hooks").and_then(Value::as_array_mut) else {
                return true;
            };
            let before = hs.len();
            hs.retain(|h| !is_ours(h));
            removed += before - hs.len();
            !(before > 0 && hs.is_empty())
        });
        !arr.is_empty()
    });
    removed
}

/// Adds memkit's handlers as one matcher group per event.
pub fn add_ours(hooks: &mut Map<String, Value>, bin_dir: &Path, pipeline: Option<&Path>) -> usize {
    let mut added = 0;
    for (event, tool, args, timeout) in HOOKS {
        let path = match (*tool, pipeline) {
            ("mem-pipeline", Some(p)) => p.to_path_buf(),
            _ => bin_dir.join(tool),
        };
        let pending_pipeline = *tool == "mem-pipeline" && pipeline.is_some();
        if !(path.is_file() || pending_pipeline) {
            continue;
        }
        let command = format!("{} {args}", shell_quote(&path.display().to_string()));
        let groups = hooks.entry(event.to_string()).or_insert_with(|| json!([]));
        let Some(arr) = groups.as_array_mut() else {
            continue;
        };
        let handler = json!({"type": "command", "command": command, "timeout": timeout});
        // Reuse the group added for an earlier tool on the same event.
        if let Some(g) = arr.iter_mut().find(|g| {
            g.get("hooks")
                .and_then(Value::as_array)
                .is_some_and(|hs| !hs.is_empty() && hs.iter().all(is_ours))
        }) {
            g["hooks"].as_array_mut().expect("checked").push(handler);
        } else {
            arr.push(json!({"matcher": "", "hooks": [handler]}));
        }
        added += 1;
    }
    added
}

fn settings_path(args: &Args) -> Result<PathBuf> {
    if let Some(p) = &args.settings {
        return Ok(p.clone());
    }
    if args.project || args.local {
        let root = crate::config::env_nonempty("CLAUDE_PROJECT_DIR")
            .map(PathBuf::from)
            .unwrap_or(std::env::current_dir()?);
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

pub fn run(args: Args, io: &mut Io) -> Result<Outcome> {
    let path = settings_path(&args)?;
    let name = path.display().to_string();
    let original = match std::fs::read_to_string(&path) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(Error::input(&name, None, e)),
    };
    let mut root: Value = match &original {
        Some(t) if !t.trim().is_empty() => serde_json::from_str(t).map_err(|e| {
            Error::input(
                &name,
                Some(e.line()),
                format!(
                    "not plain JSON ({e}); settings with comments or trailing commas are left untouched: remove them, or add the hooks by hand (mem-install --dry-run shows them)"
                ),
            )
        })?,
        _ => json!({}),
    };
    let obj = root
        .as_object_mut()
        .ok_or_else(|| Error::input(&name, None, "settings are not a JSON object"))?;
    let hooks_val = obj.entry("hooks").or_insert_with(|| json!({}));
    let hooks = hooks_val
        .as_object_mut()
        .ok_or_else(|| Error::input(&name, None, "\"hooks\" is not an object"))?;
    let removed = remove_ours(hooks);
    let bin_dir = match &args.bin_dir {
        Some(d) => std::path::absolute(d)?,
        None => std::env::current_exe()?
            .parent()
            .map(Path::to_path_buf)
            .ok_or_else(|| {
                Error::other("cannot tell where the memkit binaries are; use --bin-dir")
            })?,
    };
    let added = if args.uninstall {
        0
    } else {
        // The pipeline drives mem-compress: install it only where mem-compress is.
        let pipeline = if bin_dir.join("mem-compress").is_file() {
            Some(install_pipeline(&bin_dir, args.dry_run)?)
        } else {
            None
        };
        add_ours(hooks, &bin_dir, pipeline.as_deref())
    };
    if !args.uninstall && added == 0 {
        return Err(Error::Usage(format!(
            "no memkit tools found in {}; use --bin-dir",
            bin_dir.display()
        )));
    }
    if hooks.is_empty() {
        obj.remove("hooks");
    }
    let text = serde_json::to_string_pretty(&root)? + "\n";
    let unchanged = match &original {
        Some(o) => serde_json::from_str::<Value>(o).ok() == Some(root.clone()),
        None => args.uninstall,
    };
    if args.dry_run {
        std::io::Write::write_all(&mut io.out, text.as_bytes())?;
        return Ok(Outcome::Ok);
    }
    if !unchanged {
        write_atomic(&path, original.as_deref(), &text)?;
    }
    let verb = if unchanged {
        "unchanged"
    } else if args.uninstall {
        "removed"
    } else {
        "installed"
    };
    if !io.quiet {
        eprintln!(
            "mem-install: {verb}: {name} ({} memkit hook(s) {})",
            if args.uninstall { removed } else { added },
            if args.uninstall {
                "removed"
            } else {
                "registered"
            }
        );
    }
    Ok(Outcome::Ok)
}

/// Backs up the old file, writes a temporary file beside it and renames it into place.
fn write_atomic(path: &Path, original: Option<&str>, text: &str) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mode = std::fs::metadata(path)
        .map(|m| m.permissions().mode())
        .unwrap_or(0o644);
    if let Some(o) = original {
        let mut bak = path.as_os_str().to_owned();
        bak.push(".memkit.bak");
        std::fs::write(&bak, o)?;
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".memkit-tmp-{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, text)?;
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(mode))?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })?;
    Ok(())
}
