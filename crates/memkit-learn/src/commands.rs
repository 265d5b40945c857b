//! Commands as a project's habits: one command line normalised into the commands it runs
//! (output plumbing and the project's own path left out), what each is for, and which are no
//! habit at all (git's housekeeping, looking around). Below both the heuristic that learns them
//! and the rules that fold and judge them.

use std::sync::LazyLock;

use regex::Regex;

/// Programs whose runs say nothing about how a project works (looking around, not doing).
pub const LOOKING: &[&str] = &[
    "ls", "cat", "head", "tail", "grep", "rg", "find", "echo", "pwd", "wc", "sed", "awk", "which",
    "tree", "du", "df", "cd", "sleep", "true", "file", "stat", "sort", "diff", "less", "jq",
];

/// How the heuristic words a command seen in two sessions.
pub const COMMAND_PREFIX: &str = "Sessions here run `";

/// The command a command learning names.
pub fn command_of(content: &str) -> Option<&str> {
    content.strip_prefix(COMMAND_PREFIX)?.strip_suffix('`')
}

/// Why a command is run, where its words say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Purpose {
    Test,
    Lint,
    Build,
    Install,
    Run,
}

/// The purpose of a normalised command; `None` for a command whose words say none (a one-off).
pub fn purpose(cmd: &str) -> Option<Purpose> {
    const TEST: &[&str] = &[
        "test",
        "tests",
        "pytest",
        "nextest",
        "jest",
        "vitest",
        "mocha",
        "ctest",
        "tox",
        "nox",
        "playwright",
        "rspec",
        "unittest",
    ];
    const LINT: &[&str] = &[
        "clippy",
        "fmt",
        "lint",
        "eslint",
        "ruff",
        "black",
        "isort",
        "prettier",
        "pyright",
        "mypy",
        "flake8",
        "pylint",
        "check",
        "format",
        "typecheck",
        "biome",
        "golangci-lint",
        "vet",
        "rustfmt",
        "gofmt",
    ];
    const BUILD: &[&str] = &[
        "build", "make", "compile", "tsc", "webpack", "bundle", "dist", "cmake", "ninja",
    ];
    const INSTALL: &[&str] = &["install", "sync", "ci", "i", "bootstrap", "setup"];
    const RUN: &[&str] = &["run", "serve", "dev", "start", "watch", "preview", "exec"];
    let words: Vec<String> = cmd
        .split(|c: char| c.is_whitespace() || c == ':')
        .filter(|w| !w.starts_with('-') && !w.contains('/') && !w.contains('='))
        .map(|w| w.trim_matches(['"', '\'']).to_lowercase())
        .collect();
    let has = |set: &[&str]| words.iter().any(|w| set.contains(&w.as_str()));
    // The most specific word wins: `uv run pytest` tests, `npm run build` builds.
    [
        (TEST, Purpose::Test),
        (LINT, Purpose::Lint),
        (BUILD, Purpose::Build),
        (INSTALL, Purpose::Install),
        (RUN, Purpose::Run),
    ]
    .into_iter()
    .find(|(set, _)| has(set))
    .map(|(_, p)| p)
}

/// Programs whose output a pipe only trims or filters.
const PLUMBING: &[&str] = &[
    "tail", "head", "grep", "rg", "less", "more", "tee", "sort", "uniq", "wc", "cat", "cut", "awk",
    "sed", "jq", "column", "tr",
];

/// Redirections that only move output around.
static REDIRECT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:^|\s)(?:\d?>&\d|&>\s*/dev/null|\d?>>?\s*/dev/null)(?:\s|$)").unwrap()
});

/// The commands one command line runs, as they are compared across sessions: `cd DIR &&`,
/// output plumbing (`2>&1`, `| tail -5`, `| grep x`, `; echo $?`), `timeout N`, and the
/// project's own path (`root` → `.`, `git -C root` → `git`) left out. Empty for a script, a
/// heredoc or a line too long to be a habit.
pub fn normalise(cmd: &str, root: Option<&str>) -> Vec<String> {
    if cmd.contains('\n') || cmd.contains("<<") {
        return Vec::new();
    }
    let mut c = cmd.split_whitespace().collect::<Vec<_>>().join(" ");
    if let Some(root) = root
        .map(|r| r.trim_end_matches('/'))
        .filter(|r| r.len() > 1)
    {
        c = c.replace(&format!("git -C {root} "), "git ");
        c = c.replace(&format!("{root}/"), "./");
        c = c
            .split(' ')
            .map(|w| if w == root { "." } else { w })
            .collect::<Vec<_>>()
            .join(" ");
    }
    let mut out = Vec::new();
    for seg in c
        .split(" && ")
        .flat_map(|s| s.split("; "))
        .flat_map(|s| s.split(" || "))
    {
        let mut parts = seg.split(" | ");
        let mut s = parts.next().unwrap_or("").to_string();
        // A pipe into a program that only filters output is plumbing; into anything else, a
        // different command.
        for p in parts {
            let prog = p.split_whitespace().next().unwrap_or("");
            if !PLUMBING.contains(&prog) {
                s = format!("{s} | {p}");
            }
        }
        // Adjacent redirections share the space between them: replace until none is left.
        while REDIRECT.is_match(&s) {
            s = REDIRECT.replace_all(&s, " ").into_owned();
        }
        let mut s = s.split_whitespace().collect::<Vec<_>>().join(" ");
        if let Some(rest) = s.strip_prefix("timeout ") {
            s = rest
                .split_once(' ')
                .map(|(_, r)| r.to_string())
                .unwrap_or_default();
        }
        // Looking around (`cd`, `echo $?`, `ls`) is no part of what a line runs.
        let program = s.split_whitespace().next().unwrap_or("");
        if !s.is_empty() && !LOOKING.contains(&program) && !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

/// Git's own housekeeping: status, commits, branches, pushes are no project's habit.
pub fn housekeeping(cmd: &str) -> bool {
    cmd == "git" || cmd.starts_with("git ")
}
