//! Small text helpers every surface that prints memories shares (the context blocks, recall,
//! reports).

/// Words that carry no subject in a title: the compressor's verbs, fillers, counts.
const EMPTY_WORDS: &[&str] = &[
    "investigate",
    "update",
    "fix",
    "add",
    "change",
    "refactor",
    "decide",
    "commit",
    "merge",
    "push",
    "pull",
    "run",
    "check",
    "continue",
    "proceed",
    "work",
    "make",
    "try",
    "look",
    "see",
    "yes",
    "okay",
    "please",
    "thanks",
    "this",
    "that",
    "these",
    "those",
    "all",
    "now",
    "again",
    "done",
    "next",
    "tool",
    "call",
    "calls",
    "the",
    "and",
    "for",
    "with",
    "it's",
    "let's",
    "go",
    "ahead",
    "same",
    "more",
    "it",
    "do",
    "on",
    "in",
    "to",
    "of",
    "a",
    "an",
];

/// A title that names no file or identifier and has fewer than two words with a subject says
/// nothing a session can use ("Investigate (2 tool calls)", "Commit this", "Merge #1").
pub fn says_nothing(title: &str) -> bool {
    let mut subject = 0;
    for w in title.split(|c: char| c.is_whitespace() || "():,;!?\"'`#".contains(c)) {
        let w = w.trim_matches(|c: char| c == '.' || c == '-');
        if w.is_empty() || w.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        let named = w.contains(['/', '_', '.'])
            || w.chars().skip(1).any(|c| c.is_uppercase()) && w.chars().any(|c| c.is_lowercase());
        if named {
            return false;
        }
        if w.chars().count() >= 3 && !EMPTY_WORDS.contains(&w.to_lowercase().as_str()) {
            subject += 1;
        }
    }
    subject < 2
}

/// Whitespace folded to single spaces.
pub fn flatten(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// "just now", "5 min ago", "3 h ago", "2 d ago", "6 w ago", else the date.
pub fn relative(ms: i64, now_ms: i64) -> String {
    if ms <= 0 {
        return "?".into();
    }
    let s = (now_ms - ms).max(0) / 1000;
    match s {
        0..60 => "just now".into(),
        60..3600 => format!("{} min ago", s / 60),
        3600..86_400 => format!("{} h ago", s / 3600),
        86_400..1_209_600 => format!("{} d ago", s / 86_400),
        1_209_600..5_184_000 => format!("{} w ago", s / 604_800),
        _ => chrono::DateTime::from_timestamp_millis(ms)
            .map(|t| t.format("%Y-%m-%d").to_string())
            .unwrap_or_else(|| "?".into()),
    }
}
