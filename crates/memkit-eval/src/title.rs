//! The title rubric of a colleague's note: what an observation's title must be to be read at a
//! glance in a SessionStart block or a search hit. One rubric, used by `mem-eval compression`
//! and by the compressor's own tests.

/// The checks a title can fail, in the order [`faults`] reports them.
pub const CHECKS: &[&str] = &[
    "length",
    "cut",
    "trailing period",
    "no action",
    "raw prompt",
    "names nothing",
];

/// Every check `title` fails: 3–15 words, nothing cut, no trailing period, an action first,
/// no raw prompt behind a "Verb:" label, and something named (a file, command or component).
pub fn faults(title: &str) -> Vec<&'static str> {
    let mut out = Vec::new();
    let words: Vec<&str> = title.split_whitespace().collect();
    if !(3..=15).contains(&words.len()) {
        out.push("length");
    }
    if title.contains('…') {
        out.push("cut");
    }
    // "etc." or "e.g." end with a period too, but a title has no business ending a sentence.
    if title.trim_end().ends_with('.') && !title.trim_end().ends_with("..") {
        out.push("trailing period");
    }
    let bare = |w: &str| {
        w.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'')
            .to_lowercase()
    };
    if !words
        .first()
        .is_some_and(|w| ACTIONS.contains(&bare(w).as_str()))
    {
        out.push("no action");
    }
    if let Some((_, rest)) = title.split_once(": ")
        && let Some(w) = rest.split_whitespace().next()
        && PROMPTISH.contains(&bare(w).as_str())
    {
        out.push("raw prompt");
    }
    let named = words.iter().skip(1).any(|w| {
        // A sentence's last word ("things.") is no file name.
        let w = w
            .trim_matches(|c: char| "()[]{},;:\"'`".contains(c))
            .trim_end_matches('.');
        (w.contains(['.', '/', '_']) && w.chars().any(char::is_alphabetic))
            || (w.chars().skip(1).any(char::is_uppercase) && w.chars().any(char::is_lowercase))
            || COMMANDS.contains(&w.to_lowercase().as_str())
    });
    if !named {
        out.push("names nothing");
    }
    out
}

/// The first check `title` fails, if any.
pub fn fault(title: &str) -> Option<&'static str> {
    faults(title).into_iter().next()
}

/// Share of the [`CHECKS`] that `title` passes (1.0: a good title).
pub fn score(title: &str) -> f64 {
    1.0 - faults(title).len() as f64 / CHECKS.len() as f64
}

/// Words a title starts with when it says what was done.
pub const ACTIONS: &[&str] = &[
    "add",
    "fix",
    "update",
    "refactor",
    "investigate",
    "decide",
    "run",
    "read",
    "search",
    "edit",
    "create",
    "write",
    "plan",
    "review",
    "remove",
    "delete",
    "rename",
    "move",
    "implement",
    "test",
    "debug",
    "configure",
    "install",
    "document",
    "explain",
    "check",
    "change",
    "replace",
    "make",
    "set",
    "use",
    "build",
    "merge",
    "commit",
    "push",
    "revert",
    "improve",
    "clean",
    "convert",
    "extract",
    "generate",
    "handle",
    "support",
    "show",
    "hide",
    "split",
    "upgrade",
    "bump",
    "enable",
    "disable",
    "allow",
    "migrate",
    "deploy",
    "compare",
    "inspect",
    "analyze",
    "analyse",
    "find",
    "look",
    "list",
    "open",
    "port",
    "simplify",
    "restore",
    "reorganize",
    "restructure",
    "optimize",
    "ensure",
    "verify",
    "write",
    "draft",
    "prepare",
    "design",
    "introduce",
    "drop",
    "keep",
    "format",
    "lint",
    "summarize",
    "translate",
    "map",
    "wire",
    "stop",
    "start",
    "fetch",
    "load",
    "save",
];

/// First words of a prompt pasted as it was typed.
pub const PROMPTISH: &[&str] = &[
    "i", "i'd", "i'm", "we", "you", "can", "could", "would", "do", "does", "are", "is", "it",
    "this", "that", "there", "hey", "please", "ok", "so", "now", "let's", "what", "why", "how",
    "when", "never", "yes", "no", "hmm", "actually", "great", "perfect",
];

/// Programs whose name in a title names what was done to.
pub const COMMANDS: &[&str] = &[
    "git", "cargo", "npm", "npx", "pnpm", "yarn", "pytest", "python", "python3", "uv", "make",
    "docker", "node", "mix", "go", "bun", "deno", "pip", "ruff", "act", "gh", "ls", "grep", "find",
    "curl", "bash", "sh", "just", "tox", "jest", "vitest", "eslint", "tsc",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_raw_prompt_behind_a_label_scores_below_a_colleagues_note() {
        let weak = "Fix: Are you sure the HTML is the issue (index.html)";
        let good = "Fix the audio worklet loading in index.html";
        assert_eq!(faults(weak), ["raw prompt"]);
        assert_eq!(fault(good), None);
        assert!(score(weak) < score(good));
        assert_eq!(score(good), 1.0);
        assert_eq!(
            faults("Updated things."),
            ["length", "trailing period", "no action", "names nothing"]
        );
        assert_eq!(fault("Run cargo test"), None);
        assert_eq!(fault("Add a Github Action to run tests…"), Some("cut"));
    }
}
