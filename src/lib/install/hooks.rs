//! memkit's hooks in Claude Code's settings: the table of what each event runs, how a handler is
//! known as memkit's, adding and removing them in a settings document, and what the settings
//! files on this machine register (for `mem status` and `mem doctor`).

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::config;

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
    ("PreToolUse", &[("mem-capture", "--recall")], 10),
    ("PostToolUse", &[("mem-capture", "--recall")], 10),
    ("PostToolUseFailure", &[("mem-capture", "--recall")], 10),
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
pub fn check_events(hooks: &Map<String, Value>) -> std::result::Result<(), String> {
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

/// The handlers that run for some tools only: (event, program and arguments, matcher). Every
/// other handler matches all ("").
const MATCHERS: &[(&str, Program, &str)] = &[
    (
        "PreToolUse",
        ("mem-capture", "--recall"),
        "Read|Edit|Write|MultiEdit|NotebookEdit",
    ),
    ("PostToolUse", ("mem-capture", "--recall"), "Bash"),
];

fn matcher_of(event: &str, programs: &[Program]) -> &'static str {
    MATCHERS
        .iter()
        .find(|(e, p, _)| *e == event && programs.first() == Some(p))
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
        let (first, args) = programs[0];
        // The arguments too: mem-capture --hook and --recall both answer PostToolUseFailure.
        let found = settings["hooks"][*event]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|g| g["matcher"].as_str().unwrap_or("") == matcher)
            .flat_map(|g| g["hooks"].as_array().into_iter().flatten())
            .filter_map(|h| h["command"].as_str())
            .any(|c| program_of(c) == first && command_args(c).starts_with(args));
        if !found {
            out.push(format!("{event}: {first} {args}"));
        }
    }
    out
}

/// The command one handler runs: its programs found in `built`, run from `bin_dir`; `None`
/// when none is there.
fn command_of(programs: &[Program], built: &Path, bin_dir: &Path) -> Option<String> {
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
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// The UserPromptSubmit handler that answers with memories (mem-context's; capture's prints
/// nothing), as mem-install registers it with the programs of `bin_dir`.
pub fn prompt_command(bin_dir: &Path) -> Option<String> {
    HOOKS
        .iter()
        .filter(|(event, programs, _)| {
            *event == "UserPromptSubmit" && programs.first().is_some_and(|p| p.0 == "mem-context")
        })
        .find_map(|(_, programs, _)| command_of(programs, bin_dir, bin_dir))
}

/// Adds memkit's handlers as one matcher group per event (groups that hold only memkit's
/// handlers are reused), for the programs found in `built`, run from `bin_dir` (where they are
/// copied to, or `built` itself). Returns how many handlers were added.
pub fn add_ours(hooks: &mut Map<String, Value>, built: &Path, bin_dir: &Path) -> usize {
    let mut added = 0;
    for (event, programs, timeout) in HOOKS {
        let Some(command) = command_of(programs, built, bin_dir) else {
            continue;
        };
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
pub fn ours_only(bin_dir: &Path) -> Value {
    let mut hooks = Map::new();
    add_ours(&mut hooks, bin_dir, bin_dir);
    json!({ "hooks": hooks })
}

/// One settings file's memkit hooks.
#[derive(Debug, Serialize)]
pub struct Hooks {
    pub file: String,
    /// memkit's handlers registered there.
    pub handlers: usize,
    /// Programs those handlers name that do not exist (hooks that would fail).
    pub missing: Vec<String>,
    /// memkit's handlers this version registers that the file lacks ("PreToolUse: mem-capture
    /// --recall"): an install from an earlier version.
    pub absent: Vec<String>,
}

/// The settings files Claude Code reads that may hold memkit's hooks: the user's, then the
/// current project's shared and local ones.
fn settings_files() -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(home) = config::env_nonempty("HOME") {
        out.push(Path::new(&home).join(".claude/settings.json"));
    }
    if let Some(dir) = crate::project::current_dir() {
        let root = PathBuf::from(crate::project::identify(&dir).root);
        out.push(root.join(".claude/settings.json"));
        out.push(root.join(".claude/settings.local.json"));
    }
    out.dedup();
    out
}

/// memkit's hooks in each settings file that exists.
pub fn registered() -> Vec<Hooks> {
    settings_files()
        .iter()
        .filter_map(|p| hooks_of(p))
        .collect()
}

fn hooks_of(path: &Path) -> Option<Hooks> {
    let text = std::fs::read_to_string(path).ok()?;
    let v: Value = serde_json::from_str(&text).ok()?;
    let commands = our_commands(&v);
    let mut missing: Vec<String> = commands
        .iter()
        .map(|c| program_path(c))
        .filter(|p| p.contains('/') && !Path::new(p).is_file())
        .collect();
    missing.sort();
    missing.dedup();
    Some(Hooks {
        file: path.display().to_string(),
        handlers: commands.len(),
        missing,
        absent: absent(&v),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bin directory holding every program the hooks run.
    fn built() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        for p in ["mem-capture", "mem-context", "mem", "mem-compress"] {
            std::fs::write(d.path().join(p), "").unwrap();
        }
        d
    }

    #[test]
    fn adding_keeps_the_users_hooks_and_removing_takes_only_ours() {
        let d = built();
        let mine = json!({"matcher": "Bash", "hooks": [{"type": "command", "command": "my-lint"}]});
        let mut hooks = Map::new();
        hooks.insert("PostToolUse".into(), json!([mine.clone()]));
        let added = add_ours(&mut hooks, d.path(), Path::new("/opt/mem bin"));
        assert_eq!(added, HOOKS.len());
        let cmds = our_commands(&json!({ "hooks": hooks }));
        assert_eq!(cmds.len(), HOOKS.len());
        // A directory with a space is quoted, and the quoted program is still found.
        assert!(
            cmds[0].starts_with("'/opt/mem bin/mem-capture' --hook"),
            "{cmds:?}"
        );
        assert_eq!(program_path(&cmds[0]), "/opt/mem bin/mem-capture");
        assert!(cmds.iter().any(|c| c.contains("/mem' pipeline --detach")));
        assert_eq!(remove_ours(&mut hooks), HOOKS.len());
        assert_eq!(Value::Object(hooks), json!({"PostToolUse": [mine]}));
    }

    #[test]
    fn the_prompt_command_is_the_registered_one_that_answers() {
        let d = built();
        let mut hooks = Map::new();
        add_ours(&mut hooks, d.path(), d.path());
        let c = prompt_command(d.path()).unwrap();
        assert!(c.ends_with("/mem-context --hook --prompt"), "{c}");
        assert!(our_commands(&json!({ "hooks": hooks })).contains(&c));
        assert_eq!(prompt_command(Path::new("/nowhere")), None);
    }

    #[test]
    fn the_pipeline_is_registered_only_beside_mem_compress() {
        let d = built();
        std::fs::remove_file(d.path().join("mem-compress")).unwrap();
        let mut hooks = Map::new();
        add_ours(&mut hooks, d.path(), d.path());
        let cmds = our_commands(&json!({ "hooks": hooks }));
        assert!(cmds.iter().all(|c| !c.contains("pipeline")), "{cmds:?}");
    }

    #[test]
    fn only_memkits_programs_are_ours() {
        for (command, ours) in [
            ("/x/mem-capture --hook", true),
            ("\"/a b/mem-context\" --hook", true),
            ("mem pipeline --detach", true),
            ("mem search foo", false),
            ("my-mem-capture --hook", false),
            ("", false),
        ] {
            assert_eq!(is_ours(&json!({"command": command})), ours, "{command}");
        }
    }

    #[test]
    fn an_event_that_is_not_a_list_is_refused_by_name() {
        let mut hooks = Map::new();
        hooks.insert("Stop".into(), json!("x"));
        let e = check_events(&hooks).unwrap_err();
        assert!(e.contains("\"hooks\".\"Stop\" is a string"), "{e}");
        hooks.insert("Stop".into(), json!([]));
        assert!(check_events(&hooks).is_ok());
    }
}
