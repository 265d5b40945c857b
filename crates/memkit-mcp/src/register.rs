//! Where Claude Code finds MCP servers, and memkit's entry there: `mcpServers` at the top of
//! ~/.claude.json (user scope, every project; what `claude mcp add -s user` writes) or in a
//! project's .mcp.json (project scope, shared through the repository). Only the `memkit`
//! entry is touched; every other key of the file stays as it was.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use memkit_core::{Error, Result, programs};

/// The server's name in `mcpServers`: Claude Code calls its tools `mcp__memkit__search`, ….
pub const NAME: &str = "memkit";

/// ~/.claude.json, or `<root>/.mcp.json` for a project.
pub fn config_file(home: &Path, project_root: Option<&Path>) -> PathBuf {
    match project_root {
        Some(root) => root.join(".mcp.json"),
        None => home.join(".claude.json"),
    }
}

/// memkit's entry: a stdio server run as `command`.
pub fn entry(command: &Path) -> Value {
    json!({"type": "stdio", "command": command.display().to_string(), "args": [], "env": {}})
}

/// What registering or removing did.
#[derive(Debug, PartialEq, Eq)]
pub enum Done {
    Added,
    Replaced,
    Removed,
    Unchanged,
}

/// Adds (or with `remove`, removes) memkit's entry in `doc`.
pub fn apply(doc: &mut Value, command: &Path, remove: bool) -> std::result::Result<Done, String> {
    let obj = doc.as_object_mut().ok_or("the file is not a JSON object")?;
    if remove {
        let Some(servers) = obj.get_mut("mcpServers").and_then(Value::as_object_mut) else {
            return Ok(Done::Unchanged);
        };
        return Ok(match servers.remove(NAME) {
            Some(_) => Done::Removed,
            None => Done::Unchanged,
        });
    }
    let servers = obj
        .entry("mcpServers")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or("\"mcpServers\" is not an object")?;
    let want = entry(command);
    Ok(match servers.insert(NAME.to_string(), want.clone()) {
        None => Done::Added,
        Some(old) if old == want => Done::Unchanged,
        Some(_) => Done::Replaced,
    })
}

/// Registers `command` in `file` (or removes memkit's entry), rewriting it atomically with
/// the same permissions; a file that is not strict JSON is an error naming its line and is
/// left as it is.
pub fn update(file: &Path, command: &Path, remove: bool) -> Result<Done> {
    let name = file.display().to_string();
    let original = match std::fs::read_to_string(file) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(Error::input(&name, None, e)),
    };
    if original.is_none() && remove {
        return Ok(Done::Unchanged);
    }
    let mut doc: Value = match original.as_deref().map(str::trim) {
        Some(t) if !t.is_empty() => serde_json::from_str(t)
            .map_err(|e| Error::input(&name, Some(e.line()), format!("not plain JSON ({e})")))?,
        _ => json!({}),
    };
    let done = apply(&mut doc, command, remove).map_err(|m| Error::input(&name, None, m))?;
    if done != Done::Unchanged {
        write_replacing(file, &(serde_json::to_string_pretty(&doc)? + "\n"))?;
    }
    Ok(done)
}

/// Writes a temporary file beside `file` and renames it over it, keeping its mode (0600 for a
/// new one: ~/.claude.json holds the user's account state).
fn write_replacing(file: &Path, text: &str) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let target = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf());
    let dir = target.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mode = std::fs::metadata(&target).map_or(0o600, |m| m.permissions().mode());
    let tmp = dir.join(format!(
        ".{}.memkit-tmp-{}",
        target.file_name().and_then(|n| n.to_str()).unwrap_or("mcp"),
        std::process::id()
    ));
    std::fs::write(&tmp, text)?;
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(mode))?;
    std::fs::rename(&tmp, &target).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })?;
    Ok(())
}

/// What `mem-install --mcp` does: registers `bin_dir`/mem-mcp for Claude Code in
/// ~/.claude.json (user scope) or, with `project_root`, its .mcp.json; `remove` takes the entry
/// out. Returns what to tell the user, None when there was nothing to do.
pub fn install(
    home: &Path,
    project_root: Option<&Path>,
    bin_dir: &Path,
    remove: bool,
) -> Result<Option<String>> {
    let file = config_file(home, project_root);
    let command = bin_dir.join("mem-mcp");
    if !remove && !programs::is_program(&command) {
        return Err(Error::Usage(format!(
            "{} does not exist: build it (cargo build --bins) or use --bin-dir",
            command.display()
        )));
    }
    Ok(match update(&file, &command, remove)? {
        Done::Unchanged if remove => None,
        Done::Unchanged => Some(format!("MCP server unchanged: {}", file.display())),
        Done::Removed => Some(format!("MCP server removed from {}", file.display())),
        Done::Added | Done::Replaced => Some(format!(
            "MCP server {NAME} registered in {} ({}); Claude Code names its tools mcp__{NAME}__search and so on",
            file.display(),
            command.display()
        )),
    })
}

/// memkit's registration as `mem doctor` sees it: the file, and the command it runs.
#[derive(Debug)]
pub struct Registration {
    pub file: PathBuf,
    pub command: String,
    pub exists: bool,
}

/// memkit's entries in ~/.claude.json (its top level and the entry of `project_root`, which
/// `claude mcp add` writes by default) and in the project's .mcp.json.
pub fn registrations(home: &Path, project_root: Option<&Path>) -> Vec<Registration> {
    let mut out = Vec::new();
    let mut look = |file: PathBuf, pick: &dyn Fn(&Value) -> Option<&Value>| {
        let doc: Option<Value> = std::fs::read_to_string(&file)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok());
        if let Some(command) = doc
            .as_ref()
            .and_then(pick)
            .and_then(|s| s.get("mcpServers"))
            .and_then(|s| s.get(NAME))
            .and_then(|e| e.get("command"))
            .and_then(Value::as_str)
        {
            out.push(Registration {
                exists: runnable(command),
                command: command.to_string(),
                file: file.clone(),
            });
        }
    };
    look(config_file(home, None), &|d| Some(d));
    if let Some(root) = project_root {
        let key = root.display().to_string();
        look(config_file(home, None), &|d| d.get("projects")?.get(&key));
        look(config_file(home, Some(root)), &|d| Some(d));
    }
    out
}

/// A command that names a program, or a bare name found on PATH.
fn runnable(command: &str) -> bool {
    if command.contains('/') {
        return programs::is_program(Path::new(command));
    }
    programs::find_in(command, &[]).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registering_keeps_other_servers_and_is_idempotent() {
        let mut doc = json!({"numStartups": 3, "mcpServers": {"other": {"command": "x"}}});
        let cmd = Path::new("/opt/bin/mem-mcp");
        assert_eq!(apply(&mut doc, cmd, false), Ok(Done::Added));
        assert_eq!(apply(&mut doc, cmd, false), Ok(Done::Unchanged));
        assert_eq!(doc["mcpServers"]["other"]["command"], "x");
        assert_eq!(doc["mcpServers"]["memkit"]["command"], "/opt/bin/mem-mcp");
        assert_eq!(doc["numStartups"], 3);
        assert_eq!(
            apply(&mut doc, Path::new("/elsewhere/mem-mcp"), false),
            Ok(Done::Replaced)
        );
        assert_eq!(apply(&mut doc, cmd, true), Ok(Done::Removed));
        assert_eq!(apply(&mut doc, cmd, true), Ok(Done::Unchanged));
        assert_eq!(doc["mcpServers"]["other"]["command"], "x");
        assert!(apply(&mut json!({"mcpServers": []}), cmd, false).is_err());
    }
}
