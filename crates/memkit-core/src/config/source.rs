//! Where a setting's value comes from: `MEM_<KEY>`, else config.toml's key. Below `config` so
//! that the handle kinds read values without taking from their parent.

use std::path::Path;

use crate::home::Home;
use crate::{Error, Result};

/// The hook a process runs as, once [`set_hook`] is called: settings are then lenient.
static HOOK: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Marks the process as the hook `prog`: from then on a bad setting is logged to
/// `logs/<prog>.log` and its default used, since a hook must never fail Claude Code.
pub fn set_hook(prog: &str) {
    let _ = HOOK.set(prog.to_string());
}

/// Splits at the commas that are not inside braces (a glob's `{a,b}`); items trimmed, empty
/// ones dropped. With unbalanced braces every comma splits.
pub fn split_list(v: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut cur = String::new();
    for c in v.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    out.push(cur);
    if depth != 0 {
        out = v.split(',').map(str::to_string).collect();
    }
    out.into_iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

pub fn env_nonempty(key: &str) -> Option<String> {
    std::env::var(key).ok().filter(|v| !v.trim().is_empty())
}

/// The variable of config.toml's `key`: `MEM_` and the key in capitals, a dotted key's parts
/// joined with `_` (`sync.remote` → `MEM_SYNC_REMOTE`).
pub fn var_of(key: &str) -> String {
    format!("MEM_{}", key.to_ascii_uppercase().replace('.', "_"))
}

/// Settings from config.toml with `MEM_<KEY>` environment overrides, read through the
/// handles of [`super::SETTINGS`].
#[derive(Debug, Default, Clone)]
pub struct Config {
    pub home: Home,
    table: toml::Table,
}

impl Config {
    /// Loads `<home>/config.toml` if present. A malformed file is an input error naming it.
    pub fn load(home: &Path) -> Result<Config> {
        let home = Home::new(home);
        let path = home.config_file();
        let table = match std::fs::read_to_string(&path) {
            Ok(text) => text.parse::<toml::Table>().map_err(|e| {
                let line = e.span().map(|s| text[..s.start].matches('\n').count() + 1);
                Error::input(path.display().to_string(), line, e.message())
            })?,
            Err(_) => toml::Table::new(),
        };
        Ok(Config { home, table })
    }

    /// Environment and defaults only: what a hook falls back to when config.toml is unreadable.
    pub fn env_only(home: &Path) -> Config {
        Config {
            home: Home::new(home),
            table: toml::Table::new(),
        }
    }

    /// `MEM_<KEY>` from the environment, else `key` from config.toml (strings, numbers, bools
    /// and arrays of strings, the latter joined with commas). A dotted key (`sync.remote`) is a
    /// value of a table (`[sync]` `remote = …`), and its variable joins the parts with `_`.
    pub(super) fn raw(&self, key: &str) -> Option<String> {
        if let Some(v) = std::env::var(var_of(key)).ok().filter(|v| !v.is_empty()) {
            return Some(v);
        }
        let mut parts = key.split('.');
        let mut value = self.table.get(parts.next()?)?;
        for p in parts {
            value = value.as_table()?.get(p)?;
        }
        match value {
            toml::Value::String(s) => Some(s.clone()),
            toml::Value::Integer(i) => Some(i.to_string()),
            toml::Value::Float(f) => Some(f.to_string()),
            toml::Value::Boolean(b) => Some(b.to_string()),
            toml::Value::Array(a) => Some(
                a.iter()
                    .filter_map(|v| v.as_str())
                    .collect::<Vec<_>>()
                    .join(","),
            ),
            _ => None,
        }
    }

    /// Reports a setting whose value is unusable: a usage error naming it and its variable, or
    /// in a hook a log line (the caller then uses the default: a hook never fails on settings).
    pub(super) fn invalid(&self, key: &str, msg: &str) -> Result<()> {
        let msg = format!("{key} ({}): {msg}", var_of(key));
        match HOOK.get() {
            Some(prog) => {
                crate::log::log_line(
                    &self.home,
                    prog,
                    "warn",
                    &format!("{msg}; using the default"),
                );
                Ok(())
            }
            None => Err(Error::Usage(msg)),
        }
    }

    /// A table of config.toml (`[name]`), for settings that are not plain values.
    pub fn section(&self, name: &str) -> Option<&toml::Table> {
        self.table.get(name)?.as_table()
    }
}
