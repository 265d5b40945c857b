//! What a user turn's text is: the user's request, or text Claude Code wrapped into the
//! conversation as if the user had typed it (teammate and task notifications, slash-command
//! wrappers, local command output, system reminders, IDE context, compaction summaries).
//! Wrappers are kept as their own event kind and never become goals, titles or decisions.

use std::sync::OnceLock;

use regex::Regex;

/// A user turn's text, classified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Prompt {
    /// What the user asked, without markup and IDE context.
    Request(String),
    /// Not the user's words; the kind of wrapper.
    Wrapper(&'static str),
}

/// Texts that start this way were not typed by the user (as the trimmed text begins).
const OPENERS: &[(&str, &str)] = &[
    ("<teammate-message", "teammate-message"),
    ("<task-notification", "task-notification"),
    ("<local-command-", "local-command"),
    ("Caveat: The messages below were generated", "local-command"),
    ("<bash-input", "bash"),
    ("<bash-stdout", "bash"),
    ("<bash-stderr", "bash"),
    ("<system-reminder", "system-reminder"),
    ("<user-prompt-submit-hook", "hook-output"),
    ("[Request interrupted", "interrupted"),
    (
        "This session is being continued from a previous conversation",
        "compact-summary",
    ),
];

/// Blocks that carry context beside the request (dropped wherever they are), then any tag.
fn tag_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"(?s)<(ide_[a-z_]+|system-reminder|local-command-[a-z]+)>.*?</(ide_[a-z_]+|system-reminder|local-command-[a-z]+)>|</?[A-Za-z][A-Za-z0-9_-]*>")
            .expect("valid regex")
    })
}

fn command_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"(?s)<command-name>\s*(.*?)\s*</command-name>.*?(?:<command-args>(.*?)</command-args>|\z)|(?s)<command-args>(.*?)</command-args>.*?<command-name>\s*(.*?)\s*</command-name>")
            .expect("valid regex")
    })
}

/// Markup and context blocks removed, whitespace folded.
fn squash(t: &str) -> String {
    tag_re()
        .replace_all(t, " ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Classifies a user turn's text. A slash command counts as a request only with arguments
/// (`/fix-issue 42` says what to do; `/clear` or `/exit` does not).
pub fn classify(text: &str) -> Prompt {
    let t = text.trim_start();
    if let Some((_, kind)) = OPENERS.iter().find(|(o, _)| t.starts_with(o)) {
        return Prompt::Wrapper(kind);
    }
    if let Some(c) = command_re().captures(t) {
        let name = c.get(1).or(c.get(4)).map_or("", |m| m.as_str());
        let args = squash(c.get(2).or(c.get(3)).map_or("", |m| m.as_str()));
        if args.is_empty() {
            return Prompt::Wrapper("command");
        }
        let slash = if name.starts_with('/') { "" } else { "/" };
        return Prompt::Request(format!("{slash}{name} {args}"));
    }
    let clean = squash(t);
    if clean.is_empty() {
        let kind = if t.starts_with("<ide_") {
            "ide"
        } else {
            "markup"
        };
        return Prompt::Wrapper(kind);
    }
    // A bare command typed as text: `/clear`, `/compact`, `/model`.
    if clean.starts_with('/')
        && !clean.contains(char::is_whitespace)
        && clean[1..]
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_:".contains(c))
    {
        return Prompt::Wrapper("command");
    }
    Prompt::Request(clean)
}

/// The request in a user turn's text, or "" for a wrapper.
pub fn request(text: &str) -> String {
    match classify(text) {
        Prompt::Request(r) => r,
        Prompt::Wrapper(_) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrappers_are_not_requests() {
        for (text, kind) in [
            (
                "<teammate-message teammate_id=\"alice\">idle</teammate-message>",
                "teammate-message",
            ),
            (
                "<command-name>/exit</command-name>\n<command-message>exit</command-message>\n<command-args></command-args>",
                "command",
            ),
            (
                "<command-message>init is analyzing your codebase…</command-message>\n<command-name>/init</command-name>",
                "command",
            ),
            (
                "<local-command-stdout>See ya!</local-command-stdout>",
                "local-command",
            ),
            (
                "<task-notification>\n<task-id>be613ab</task-id></task-notification>",
                "task-notification",
            ),
            ("<bash-input>uv run pytest</bash-input>", "bash"),
            ("[Request interrupted by user for tool use]", "interrupted"),
            (
                "<ide_opened_file>The user opened index.html</ide_opened_file>",
                "ide",
            ),
            ("/clear", "command"),
            ("  ", "markup"),
        ] {
            assert_eq!(classify(text), Prompt::Wrapper(kind), "{text}");
        }
    }

    #[test]
    fn requests_lose_their_markup() {
        assert_eq!(
            classify("<ide_opened_file>The user opened a.py</ide_opened_file> fix the parser"),
            Prompt::Request("fix the parser".into())
        );
        assert_eq!(
            classify(
                "<command-message>fix-issue is running…</command-message>\n<command-name>/fix-issue</command-name>\n<command-args>42 login</command-args>"
            ),
            Prompt::Request("/fix-issue 42 login".into())
        );
        assert_eq!(
            classify("use /tmp/x as scratch"),
            Prompt::Request("use /tmp/x as scratch".into())
        );
        assert_eq!(request("<system-reminder>x</system-reminder>"), "");
    }
}
