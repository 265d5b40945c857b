//! config.toml's `[redact]` table: added patterns and the allow-list, installed once per
//! process.

use std::sync::OnceLock;

use memkit_core::config::Config;
use memkit_core::{Error, Result};

/// Patterns and allow-list from config.toml's `[redact]` table.
#[derive(Debug, Default)]
pub struct Settings {
    /// (kind, regex): the whole match, or its group named `secret`, is redacted.
    pub(super) patterns: Vec<(String, regex::Regex)>,
    /// Exact secrets never redacted.
    pub(super) allow: Vec<String>,
    /// Regexes a secret is never redacted when it matches them whole.
    pub(super) allow_re: Vec<regex::Regex>,
}

pub(super) static NO_SETTINGS: Settings = Settings {
    patterns: Vec::new(),
    allow: Vec::new(),
    allow_re: Vec::new(),
};
pub(super) static SETTINGS: OnceLock<Settings> = OnceLock::new();

impl Settings {
    /// Reads `[redact]`: the usable entries, and one message per bad one.
    pub fn from_config(cfg: &Config) -> (Settings, Vec<String>) {
        let mut s = Settings::default();
        let mut errors = Vec::new();
        let Some(table) = cfg.section("redact") else {
            return (s, errors);
        };
        let strings = |key: &str, errors: &mut Vec<String>| -> Vec<String> {
            match table.get(key) {
                None => Vec::new(),
                Some(toml::Value::Array(a)) => a
                    .iter()
                    .enumerate()
                    .filter_map(|(i, v)| match v.as_str() {
                        Some(s) => Some(s.to_string()),
                        None => {
                            errors.push(format!("[redact] {key}[{i}]: not a string"));
                            None
                        }
                    })
                    .collect(),
                Some(_) => {
                    errors.push(format!("[redact] {key}: not an array of strings"));
                    Vec::new()
                }
            }
        };
        for key in table.keys() {
            if !matches!(key.as_str(), "patterns" | "allow" | "allow_regex") {
                errors.push(format!(
                    "[redact] {key}: unknown setting (patterns, allow, allow_regex)"
                ));
            }
        }
        s.allow = strings("allow", &mut errors);
        for (i, re) in strings("allow_regex", &mut errors).iter().enumerate() {
            match regex::Regex::new(&format!("^(?:{re})$")) {
                Ok(r) => s.allow_re.push(r),
                Err(e) => errors.push(format!("[redact] allow_regex[{i}]: {e}")),
            }
        }
        let patterns = match table.get("patterns") {
            None => Vec::new(),
            Some(toml::Value::Array(a)) => a.clone(),
            Some(_) => {
                errors.push("[redact] patterns: not an array of {kind, regex} tables".into());
                Vec::new()
            }
        };
        for (i, p) in patterns.iter().enumerate() {
            let at = format!("[redact] patterns[{i}]");
            let (Some(kind), Some(re)) = (
                p.get("kind").and_then(toml::Value::as_str),
                p.get("regex").and_then(toml::Value::as_str),
            ) else {
                errors.push(format!("{at}: needs kind and regex strings"));
                continue;
            };
            if kind.is_empty()
                || kind.len() > 40
                || !kind
                    .bytes()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_')
            {
                errors.push(format!(
                    "{at}: kind {kind:?} must be lowercase letters, digits and _"
                ));
                continue;
            }
            match regex::Regex::new(re) {
                Ok(r) if r.is_match("") => {
                    errors.push(format!("{at}: regex {re:?} matches the empty string"))
                }
                Ok(r) => s.patterns.push((kind.to_string(), r)),
                Err(e) => errors.push(format!("{at}: {e}")),
            }
        }
        (s, errors)
    }

    pub(super) fn allowed(&self, secret: &str) -> bool {
        self.allow.iter().any(|a| a == secret) || self.allow_re.iter().any(|r| r.is_match(secret))
    }
}

/// Installs config.toml's `[redact]` patterns and allow-list for this process (the first call
/// wins). What is usable is installed even when some entries are bad; those are the error
/// (a usage error naming them, which a hook logs and goes on).
pub fn configure(cfg: &Config) -> Result<()> {
    if cfg.section("redact").is_none() {
        return Ok(());
    }
    let (s, errors) = Settings::from_config(cfg);
    let _ = SETTINGS.set(s);
    if errors.is_empty() {
        Ok(())
    } else {
        Err(Error::Usage(format!("config.toml: {}", errors.join("; "))))
    }
}

pub(super) fn settings() -> &'static Settings {
    SETTINGS.get().unwrap_or(&NO_SETTINGS)
}
