//! mem-install: register memkit's hooks in Claude Code's settings, merged with the user's own.

use std::path::{Path, PathBuf};

use clap::{CommandFactory, Parser};
use serde_json::{Map, Value, json};

use crate::cli::{Common, Io, Outcome};
use crate::{Context, Error, Result};

pub const TOOL: super::Tool = super::Tool {
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
    #[command(flatten)]
    pub common: Common,
}

/// The programs whose handlers are memkit's (`mem` only as `mem pipeline`; mem-pipeline is
/// the script earlier versions registered).
const OURS: &[&str] = &["mem-capture", "mem-context", "mem-pipeline"];

/// (event, the programs one handler runs in turn with their arguments, timeout in seconds).
/// A program that is not installed is left out of its handler.
///
/// Stop and SessionEnd run capture, then the pipeline, in one handler: Claude Code runs an
/// event's handlers in parallel, and the pipeline must find the Stop that closes the turn
/// stored, or the turn waits for the next one.
/// A program and its arguments, as a hook command runs it.
type Program = (&'static str, &'static str);

const HOOKS: &[(&str, &[Program], u32)] = &[
    ("SessionStart", &[("mem-capture", "--hook")], 10),
    ("SessionStart", &[("mem-context", "--hook")], 10),
    ("UserPromptSubmit", &[("mem-capture", "--hook")], 10),
    (
        "UserPromptSubmit",
        &[("mem-context", "--hook --prompt")],
        10,
    ),
    ("PostToolUse", &[("mem-capture", "--hook")], 10),
    ("PostToolUseFailure", &[("mem-capture", "--hook")], 10),
    // Recall (see MATCHERS): before a file is read or edited, after a shell call failed, and
    // a subagent's context.
    ("PreToolUse", &[("mem-context", "--hook")], 10),
    ("PostToolUse", &[("mem-context", "--hook")], 10),
    ("PostToolUseFailure", &[("mem-context", "--hook")], 10),
    ("SubagentStart", &[("mem-context", "--hook")], 10),
    // The work before a compaction is compressed before its transcript is summarised away.
    (
        "PreCompact",
        &[("mem-capture", "--hook"), ("mem", "pipeline --detach")],
        10,
    ),
    ("SubagentStop", &[("mem-capture", "--hook")], 10),
    (
        "Stop",
        &[("mem-capture", "--hook"), ("mem", "pipeline --detach")],
        10,
    ),
    (
        "SessionEnd",
        &[("mem-capture", "--hook"), ("mem", "pipeline --detach")],
        10,
    ),
];

/// The handlers that run for some tools only: (event, program, matcher). Every other handler
/// matches all ("").
const MATCHERS: &[(&str, &str, &str)] = &[
    (
        "PreToolUse",
        "mem-context",
        "Read|Edit|Write|MultiEdit|NotebookEdit",
    ),
    ("PostToolUse", "mem-context", "Bash"),
];

fn matcher_of(event: &str, programs: &[Program]) -> &'static str {
    MATCHERS
        .iter()
        .find(|(e, p, _)| *e == event && programs.first().is_some_and(|f| f.0 == *p))
        .map_or("", |m| m.2)
}

/// memkit's handlers a settings document with memkit's hooks lacks (none when it has none:
/// then nothing is registered there at all), as "event: program args".
pub fn absent(settings: &Value) -> Vec<String> {
    if our_commands(settings).is_empty() {
        return vec![];
    }
    let mut out = Vec::new();
    for (event, programs, _) in HOOKS {
        let matcher = matcher_of(event, programs);
        let first = programs[0].0;
        let found = settings["hooks"][*event]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|g| g["matcher"].as_str().unwrap_or("") == matcher)
            .flat_map(|g| g["hooks"].as_array().into_iter().flatten())
            .filter_map(|h| h["command"].as_str())
            .any(|c| program_of(c) == first);
        if !found {
            out.push(format!("{event}: {first} {}", programs[0].1));
        }
    }
    out
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
    let first = program_path(command);
    first.rsplit('/').next().unwrap_or(&first).to_string()
}

/// The program a hook command runs, unquoted, with its directories.
pub fn program_path(command: &str) -> String {
    let c = command.trim_start();
    if let Some(rest) = c.strip_prefix('\'') {
        rest.split('\'').next().unwrap_or("").to_string()
    } else if let Some(rest) = c.strip_prefix('"') {
        rest.split('"').next().unwrap_or("").to_string()
    } else {
        c.split_whitespace().next().unwrap_or("").to_string()
    }
}

/// The commands of memkit's handlers in a settings document.
pub fn our_commands(settings: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for groups in settings["hooks"]
        .as_object()
        .into_iter()
        .flat_map(|m| m.values())
    {
        for group in groups.as_array().into_iter().flatten() {
            for h in group["hooks"].as_array().into_iter().flatten() {
                if is_ours(h)
                    && let Some(c) = h["command"].as_str()
                {
                    out.push(c.to_string());
                }
            }
        }
    }
    out
}

fn is_ours(handler: &Value) -> bool {
    handler
        .get("command")
        .and_then(Value::as_str)
        .is_some_and(|c| {
            let program = program_of(c);
            OURS.contains(&program.as_str())
                || (program == "mem" && command_args(c).starts_with("pipeline"))
        })
}

/// What follows a hook command's program (as `program_of` finds it).
fn command_args(command: &str) -> &str {
    let c = command.trim_start();
    let rest = match c.chars().next() {
        Some(q @ ('\'' | '"')) => c[1..].split_once(q).map(|x| x.1).unwrap_or(""),
        _ => c.split_once(char::is_whitespace).map(|x| x.1).unwrap_or(""),
    };
    rest.trim_start()
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

/// The events memkit registers whose value in `hooks` is not a list of matcher groups: Claude
/// Code would not run a handler added there, so the install stops instead of skipping them.
fn check_events(hooks: &Map<String, Value>) -> std::result::Result<(), String> {
    for (event, _, _) in HOOKS {
        let kind = match hooks.get(*event) {
            None | Some(Value::Array(_)) => continue,
            Some(Value::Null) => "null",
            Some(Value::Bool(_)) => "a boolean",
            Some(Value::Number(_)) => "a number",
            Some(Value::String(_)) => "a string",
            Some(Value::Object(_)) => "an object",
        };
        return Err(format!(
            "\"hooks\".\"{event}\" is {kind}, not a list of matcher groups ([{{\"matcher\": …, \"hooks\": […]}}]); fix or remove it and run mem-install again (the file is left as it is)"
        ));
    }
    Ok(())
}

/// Adds memkit's handlers as one matcher group per event (groups that hold only memkit's
/// handlers are reused), for the programs found in `built`, run from `bin_dir` (where they are
/// copied to, or `built` itself). Returns how many handlers were added.
pub fn add_ours(hooks: &mut Map<String, Value>, built: &Path, bin_dir: &Path) -> usize {
    let mut added = 0;
    for (event, programs, timeout) in HOOKS {
        let parts: Vec<String> = programs
            .iter()
            .filter(|(tool, _)| {
                built.join(tool).is_file()
                    // The pipeline drives mem-compress: register it only where that is.
                    && (*tool != "mem" || built.join("mem-compress").is_file())
            })
            .map(|(tool, args)| {
                format!(
                    "{} {args}",
                    shell_quote(&bin_dir.join(tool).display().to_string())
                )
            })
            .collect();
        if parts.is_empty() {
            continue;
        }
        let command = parts.join("; ");
        let Some(arr) = hooks
            .entry(event.to_string())
            .or_insert_with(|| json!([]))
            .as_array_mut()
        else {
            continue; // refused earlier by check_events
        };
        let handler = json!({"type": "command", "command": command, "timeout": timeout});
        let matcher = matcher_of(event, programs);
        if let Some(g) = arr.iter_mut().find(|g| {
            g.get("matcher").and_then(Value::as_str).unwrap_or("") == matcher
                && g.get("hooks")
                    .and_then(Value::as_array)
                    .is_some_and(|hs| !hs.is_empty() && hs.iter().all(is_ours))
        }) {
            g["hooks"].as_array_mut().expect("checked").push(handler);
        } else {
            arr.push(json!({"matcher": matcher, "hooks": [handler]}));
        }
        added += 1;
    }
    added
}

/// memkit's hooks alone, as a settings object: what --dry-run shows for a file it cannot
/// rewrite, for merging by hand.
fn ours_only(bin_dir: &Path) -> Value {
    let mut hooks = Map::new();
    add_ours(&mut hooks, bin_dir, bin_dir);
    json!({ "hooks": hooks })
}

/// Follows `path` through symlinks to the file they name (which may not exist yet), so that
/// writing it replaces the target and keeps the links.
fn resolve_links(path: &Path) -> Result<PathBuf> {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let target = std::fs::read_link(&p)?;
                p = match p.parent() {
                    Some(dir) if target.is_relative() => dir.join(target),
                    _ => target,
                };
            }
            _ => return Ok(p),
        }
    }
    Err(Error::other(format!(
        "{}: too many levels of symbolic links",
        path.display()
    )))
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

pub fn run(args: Args, io: &mut Io) -> Result<Outcome> {
    let path = settings_path(&args)?;
    let name = path.display().to_string();
    let original = match std::fs::read_to_string(&path) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(Error::input(&name, None, e)),
    };
    let built = match &args.bin_dir {
        Some(d) => std::path::absolute(d)?,
        None => std::env::current_exe()?
            .parent()
            .map(Path::to_path_buf)
            .ok_or_else(|| {
                Error::other("cannot tell where the memkit binaries are; use --bin-dir")
            })?,
    };
    // Where the programs the hooks run are, or go.
    let copy_to = match &args.copy_to {
        _ if args.no_copy => None,
        Some(d) => Some(std::path::absolute(d)?),
        None if is_build_dir(&built) => Some(crate::config::home().join(".local/bin")),
        None => None,
    };
    let bin_dir = copy_to.clone().unwrap_or_else(|| built.clone());
    let copy_to = copy_to.filter(|_| !args.uninstall);
    let mut root: Value = match &original {
        Some(t) if !t.trim().is_empty() => match serde_json::from_str(t) {
            Ok(v) => v,
            Err(e) if args.dry_run && !args.uninstall => {
                io.warn(format!(
                    "{name}:{}: not plain JSON ({e}); these are memkit's hooks, to merge into it by hand",
                    e.line()
                ));
                let ours = ours_only(&bin_dir);
                if ours["hooks"].as_object().is_none_or(Map::is_empty) {
                    return Err(no_tools(&built));
                }
                let text = serde_json::to_string_pretty(&ours)? + "\n";
                std::io::Write::write_all(&mut io.out, text.as_bytes())?;
                return Ok(Outcome::Ok);
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
    if !args.uninstall {
        check_events(hooks).map_err(|msg| Error::input(&name, None, msg))?;
    }
    let removed = remove_ours(hooks);
    let added = if args.uninstall {
        0
    } else {
        add_ours(hooks, &built, &bin_dir)
    };
    if !args.uninstall && added == 0 {
        return Err(no_tools(&built));
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
        if let Some(dest) = &copy_to {
            io.warn(format!(
                "would copy the memkit programs from {} to {}",
                built.display(),
                dest.display()
            ));
        }
        std::io::Write::write_all(&mut io.out, text.as_bytes())?;
        return Ok(Outcome::Ok);
    }
    if let Some(dest) = &copy_to {
        let n = copy_programs(&built, dest)?;
        if !io.quiet {
            eprintln!(
                "mem-install: copied {n} programs from {} to {} (cargo clean cannot break the hooks)",
                built.display(),
                dest.display()
            );
        }
        if !on_path(dest) {
            io.warn(format!(
                "{} is not on PATH: add it to run the tools by name (the hooks name them in full)",
                dest.display()
            ));
        }
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
    if !args.no_docs {
        let docs = Docs::under(&crate::config::home());
        if args.uninstall {
            let n = docs.remove()?;
            if !io.quiet && n > 0 {
                eprintln!(
                    "mem-install: removed {n} man pages and completions; the programs in {} stay (rm {0}/mem {0}/mem-* to remove them)",
                    bin_dir.display()
                );
            }
        } else {
            docs.write()?;
            if !io.quiet {
                eprintln!(
                    "mem-install: man pages in {} (man mem-search), completions for bash, zsh and fish",
                    docs.man.display()
                );
            }
        }
    }
    Ok(Outcome::Ok)
}

/// A cargo profile directory (target/debug, target/release): what cargo clean empties.
fn is_build_dir(dir: &Path) -> bool {
    dir.join(".fingerprint").is_dir() && dir.join("deps").is_dir()
}

fn on_path(dir: &Path) -> bool {
    std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|d| d == dir))
}

/// The memkit programs found in `from`, copied (hard-linked when possible) to `to`; each
/// replaced by a rename, so a hook running the old one is not cut short. Returns how many.
fn copy_programs(from: &Path, to: &Path) -> Result<usize> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(to)
        .map_err_context(|| format!("cannot create directory {}", to.display()))?;
    let mut n = 0;
    for t in super::ALL {
        let src = from.join(t.name);
        if !src.is_file() {
            continue;
        }
        let dst = to.join(t.name);
        if std::fs::canonicalize(&src).ok() == std::fs::canonicalize(&dst).ok() {
            n += 1;
            continue;
        }
        let tmp = to.join(format!(".{}.memkit-tmp-{}", t.name, std::process::id()));
        let _ = std::fs::remove_file(&tmp);
        let writing = || format!("cannot copy {} to {}", src.display(), dst.display());
        if std::fs::hard_link(&src, &tmp).is_err() {
            std::fs::copy(&src, &tmp).map_err_context(writing)?;
            std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755))
                .map_err_context(writing)?;
        }
        std::fs::rename(&tmp, &dst)
            .inspect_err(|_| {
                let _ = std::fs::remove_file(&tmp);
            })
            .map_err_context(writing)?;
        n += 1;
    }
    if n == 0 {
        return Err(no_tools(from));
    }
    Ok(n)
}

/// Where the man pages and completions go, under the XDG data and config directories.
struct Docs {
    man: PathBuf,
    bash: PathBuf,
    zsh: PathBuf,
    fish: PathBuf,
}

impl Docs {
    fn under(home: &Path) -> Docs {
        let data = crate::config::env_nonempty("XDG_DATA_HOME")
            .map_or_else(|| home.join(".local/share"), PathBuf::from);
        let config = crate::config::env_nonempty("XDG_CONFIG_HOME")
            .map_or_else(|| home.join(".config"), PathBuf::from);
        Docs {
            man: data.join("man/man1"),
            bash: data.join("bash-completion/completions"),
            zsh: data.join("zsh/site-functions"),
            fish: config.join("fish/completions"),
        }
    }

    /// Each completion file with its shell and tool: one file per tool, since bash-completion
    /// and zsh load a command's completions by its name.
    fn completions(&self) -> Vec<(PathBuf, clap_complete::Shell, &'static super::Tool)> {
        use clap_complete::Shell;
        super::ALL
            .iter()
            .flat_map(|t| {
                [
                    (self.bash.join(t.name), Shell::Bash, t),
                    (self.zsh.join(format!("_{}", t.name)), Shell::Zsh, t),
                    (self.fish.join(format!("{}.fish", t.name)), Shell::Fish, t),
                ]
            })
            .collect()
    }

    fn write(&self) -> Result<()> {
        super::mem::write_man_pages(&self.man)?;
        for (path, shell, t) in self.completions() {
            let dir = path.parent().unwrap_or(Path::new("."));
            std::fs::create_dir_all(dir)
                .map_err_context(|| format!("cannot create directory {}", dir.display()))?;
            std::fs::write(&path, super::man::completion(t, shell))
                .map_err_context(|| format!("cannot write {}", path.display()))?;
        }
        Ok(())
    }

    fn remove(&self) -> Result<usize> {
        let mut n = 0;
        let pages = super::ALL
            .iter()
            .map(|t| self.man.join(format!("{}.1", t.name)));
        for path in pages.chain(self.completions().into_iter().map(|(p, ..)| p)) {
            match std::fs::remove_file(&path) {
                Ok(()) => n += 1,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(Error::other(format!(
                        "cannot remove {}: {e}",
                        path.display()
                    )));
                }
            }
        }
        Ok(n)
    }
}

fn no_tools(bin_dir: &Path) -> Error {
    Error::Usage(format!(
        "no memkit tools found in {}; use --bin-dir",
        bin_dir.display()
    ))
}

/// Backs up the old file beside `path`, then writes a temporary file beside the file `path`
/// names (through any symlinks, which stay as they are) and renames it over that file.
fn write_atomic(path: &Path, original: Option<&str>, text: &str) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let target = resolve_links(path)?;
    let dir = target.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)
        .map_err_context(|| format!("cannot create directory {}", dir.display()))?;
    let mode = std::fs::metadata(&target)
        .map(|m| m.permissions().mode())
        .unwrap_or(0o644);
    if let Some(o) = original {
        let mut bak = path.as_os_str().to_owned();
        bak.push(".memkit.bak");
        std::fs::write(&bak, o)
            .map_err_context(|| format!("cannot write the backup {}", Path::new(&bak).display()))?;
    }
    let mut tmp = target.as_os_str().to_owned();
    tmp.push(format!(".memkit-tmp-{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let writing = || format!("cannot write {}", target.display());
    std::fs::write(&tmp, text).map_err_context(writing)?;
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(mode))
        .map_err_context(writing)?;
    std::fs::rename(&tmp, &target)
        .inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
        .map_err_context(writing)?;
    Ok(())
}
