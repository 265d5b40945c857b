//! The offline compressor: deterministic, no network, always available.
//!
//! - type: from the tools and outcomes and the prompt's words (no edits: discovery, or decision
//!   for plans; edits: bugfix, refactor or feature when the prompt or outcomes say so, else
//!   change);
//! - title: the request itself when the prompt's first sentence is one ("Add a GitHub Action
//!   to run tests (ci.yml)"), with openers like "hey Claude, can you please" dropped; else the
//!   type's verb and that sentence ("Investigate: server does not start"); else the type's
//!   verb, the prompt's topic words and the main file; at most about 10 words;
//! - summary: what was asked, what was done (files edited, commands run), and the outcome (the
//!   assistant's final message, else the meaningful lines of the output);
//! - files from the inputs: files_modified only from successful Write/Edit/MultiEdit/NotebookEdit.

use std::collections::HashMap;
use std::path::Path;
use std::sync::OnceLock;

use regex::Regex;
use serde_json::Value;

use super::{Group, Item};
use memkit_capture::redact;
use memkit_core::record::Observation;
use memkit_core::tokens;

const STOP: &[&str] = &[
    "the",
    "and",
    "for",
    "that",
    "this",
    "with",
    "you",
    "your",
    "are",
    "can",
    "could",
    "would",
    "should",
    "will",
    "have",
    "has",
    "had",
    "was",
    "were",
    "been",
    "being",
    "but",
    "not",
    "now",
    "then",
    "than",
    "also",
    "just",
    "let",
    "lets",
    "let's",
    "please",
    "want",
    "need",
    "make",
    "sure",
    "into",
    "from",
    "what",
    "when",
    "where",
    "which",
    "who",
    "how",
    "why",
    "all",
    "any",
    "some",
    "our",
    "out",
    "its",
    "it's",
    "there",
    "their",
    "them",
    "they",
    "these",
    "those",
    "here",
    "about",
    "over",
    "only",
    "like",
    "use",
    "using",
    "able",
    "does",
    "did",
    "doing",
    "done",
    "don't",
    "dont",
    "yes",
    "okay",
    "ok",
    "great",
    "thanks",
    "thank",
    "hey",
    "still",
    "think",
    "see",
    "look",
    "check",
    "get",
    "got",
    "one",
    "way",
    "more",
    "very",
    "much",
    "again",
    "other",
    "new",
    "add",
    "fix",
    "update",
    "implement",
    "create",
    "refactor",
    "investigate",
    "may",
    "might",
    "must",
    "each",
    "every",
    "same",
    "both",
    "well",
    "too",
    "after",
    "before",
    "because",
    "while",
    "then",
    "instead",
    "rather",
    "etc",
    "via",
    "per",
    "without",
    "within",
    "his",
    "her",
    "him",
    "she",
    "she's",
    "he's",
    "i'm",
    "we're",
    "you're",
    "isn't",
    "doesn't",
    "can't",
    "won't",
    "i've",
    "we've",
    "ive",
    "we'll",
    "i'll",
    "something",
    "anything",
    "thing",
    "things",
    "bit",
    "lot",
    "try",
    "tried",
    "going",
    "sounds",
    "good",
    "nice",
    "cool",
    "run",
    "claude",
    "i'd",
    "you'd",
    "we'd",
    "can't",
    "there's",
    "that's",
    "what's",
    "kind",
    "sort",
];

/// A prompt's request: without IDE context blocks and markup tags, a slash command Claude Code
/// expanded as what was typed (`/fix-issue 42`), and "" for a wrapper (a teammate message, a
/// bare `/clear`, command output): see `memkit_capture::prompt`.
pub fn clean_prompt(p: &str) -> String {
    memkit_capture::prompt::request(p)
}

fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '-' || c == '_' || c == '.'))
        .map(|w| {
            w.trim_matches(|c: char| c == '\'' || c == '-' || c == '.')
                .to_lowercase()
        })
        .filter(|w| !w.is_empty())
}

/// Common verbs, adjectives and fillers: words of a prompt that name no topic, left out of
/// concepts (which search and context read as what the work was about).
const FILLER: &[&str] = &[
    "help",
    "contain",
    "contains",
    "top",
    "level",
    "seem",
    "seems",
    "keep",
    "getting",
    "give",
    "take",
    "know",
    "mind",
    "wait",
    "either",
    "stuck",
    "pretend",
    "especially",
    "less",
    "loop",
    "through",
    "actually",
    "even",
    "mostly",
    "little",
    "big",
    "whole",
    "put",
    "find",
    "going",
    "want",
    "wanted",
    "trying",
    "working",
    "works",
    "worked",
    "maybe",
    "probably",
    "really",
    "quite",
    "lost",
    "found",
    "saw",
    "seen",
    "said",
    "says",
    "tell",
    "told",
    "ask",
    "asked",
    "wrong",
    "right",
    "left",
    "next",
    "last",
    "first",
    "second",
    "better",
    "best",
    "easy",
    "hard",
    "simple",
    "clean",
    "cleaner",
    "quick",
    "quickly",
    "thorough",
    "mysterious",
    "experiment",
    "idea",
    "ideas",
    "stuff",
    "part",
    "parts",
    "current",
    "currently",
    "already",
    "always",
    "never",
    "sometimes",
    "everything",
    "nothing",
    "someone",
    "anyone",
    "makes",
    "made",
    "gets",
    "goes",
    "went",
    "come",
    "comes",
    "came",
    "happen",
    "happens",
    "happened",
    "possible",
    "able",
    "different",
    "similar",
    "several",
    "many",
    "few",
    "lots",
    "added",
    "changed",
    "fixed",
    "updated",
    "removed",
    "moved",
    "set",
    "sets",
    "show",
    "shows",
    "just",
];

/// Content words of a prompt, in order, without repeats.
fn topic_words(text: &str, max: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in words(text) {
        if w.len() < 3
            || STOP.contains(&w.as_str())
            || FILLER.contains(&w.as_str())
            || w.chars().all(|c| c.is_ascii_digit())
        {
            continue;
        }
        if w.contains('/') || w.len() > 30 {
            continue;
        }
        if !out.contains(&w) {
            out.push(w);
        }
        if out.len() == max {
            break;
        }
    }
    out
}

fn has_any(words: &[String], keys: &[&str]) -> bool {
    words.iter().any(|w| {
        keys.iter()
            .any(|k| w == k || (w.starts_with(k) && k.len() >= 4))
    })
}

/// The observation type of a turn.
pub fn classify(g: &Group) -> &'static str {
    let prompt = clean_prompt(g.prompt.as_deref().unwrap_or(""));
    let prompt_words: Vec<String> = words(&prompt).collect();
    let modified = g.items.iter().any(Item::writes);
    let planned = g.items.iter().any(|i| i.tool() == "ExitPlanMode");
    if !modified {
        if planned
            || has_any(
                &prompt_words,
                // Asked to decide, not merely asked a question ("what should I…").
                &["decide", "decision", "choose", "tradeoff", "trade-off"],
            )
        {
            return "decision";
        }
        return "discovery";
    }
    // What the prompt asks for decides; without a word for it, a failing command followed by
    // an edit is a fix and a new file a feature.
    let failed_then_edited = g
        .items
        .iter()
        .position(|i| i.failed() && i.tool() == "Bash")
        .is_some_and(|p| g.items[p..].iter().any(Item::writes));
    let created = g.items.iter().any(|i| {
        i.writes()
            && i.tool() == "Write"
            && i.payload["tool_response"]["type"].as_str() == Some("create")
    });
    const BUG: &[&str] = &[
        "fix",
        "bug",
        "error",
        "broken",
        "crash",
        "fail",
        "failing",
        "issue",
        "wrong",
        "regression",
        "doesn't",
        "exception",
    ];
    const REFACTOR: &[&str] = &[
        "refactor",
        "rename",
        "cleanup",
        "clean",
        "simplify",
        "extract",
        "reorganize",
        "restructure",
        "move",
        "dedupe",
    ];
    const FEATURE: &[&str] = &[
        "add",
        "implement",
        "create",
        "support",
        "feature",
        "build",
        "introduce",
        "new",
        "enable",
        "allow",
    ];
    if has_any(&prompt_words, BUG) {
        return "bugfix";
    }
    if has_any(&prompt_words, REFACTOR) {
        return "refactor";
    }
    if has_any(&prompt_words, FEATURE) {
        return "feature";
    }
    if failed_then_edited {
        return "bugfix";
    }
    if created {
        return "feature";
    }
    "change"
}

fn basename(p: &str) -> &str {
    p.trim_end_matches(['/', '\\'])
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or(p)
}

/// The file a turn is most about: the most edited, else the most read.
fn main_file(g: &Group) -> Option<String> {
    let mut counts: HashMap<&str, (usize, usize)> = HashMap::new();
    let mut order: Vec<&str> = Vec::new();
    for it in &g.items {
        for f in &it.files {
            let e = counts.entry(f.as_str()).or_insert_with(|| {
                order.push(f.as_str());
                (0, 0)
            });
            if it.writes() {
                e.0 += 1;
            } else {
                e.1 += 1;
            }
        }
    }
    order
        .iter()
        .max_by_key(|f| {
            let (w, r) = counts[*f];
            (w, r, std::cmp::Reverse(order.iter().position(|x| x == *f)))
        })
        .map(|f| basename(f).to_string())
}

/// Words that open a request without saying what it is about, longest first where one is a
/// prefix of another.
const OPENERS: &[&str] = &[
    "hey claude",
    "hi claude",
    "hello claude",
    "hello",
    "hey",
    "hi",
    "okay",
    "ok",
    "oh no",
    "oh",
    "so",
    "well",
    "yes please",
    "yes",
    "great",
    "thanks",
    "thank you",
    "alright",
    "right",
    "now",
    "wait",
    "and",
    "then",
    "also",
    "claude",
    "can you please",
    "could you please",
    "would you please",
    "can you",
    "could you",
    "would you",
    "will you",
    "please",
    "i'd like you to",
    "i would like you to",
    "i'd like your help with",
    "i'd like to",
    "i want you to",
    "i want to",
    "i need you to",
    "i need to",
    "let's",
    "lets",
    "let us",
    "we need to",
    "we should",
    "help me",
    "go ahead and",
    "try to",
    "fine",
    "cool",
    "perfect",
    "good",
    "nice",
    "sure",
    "awesome",
    "excellent",
];

/// Verbs that make a request's first words an imperative title.
const VERBS: &[&str] = &[
    "add",
    "adjust",
    "allow",
    "analyze",
    "analyse",
    "build",
    "bump",
    "change",
    "check",
    "clean",
    "commit",
    "compare",
    "configure",
    "convert",
    "create",
    "debug",
    "delete",
    "deploy",
    "document",
    "drop",
    "enable",
    "disable",
    "ensure",
    "explain",
    "expose",
    "extract",
    "find",
    "fix",
    "format",
    "generate",
    "handle",
    "hide",
    "implement",
    "improve",
    "install",
    "investigate",
    "lint",
    "list",
    "look",
    "make",
    "merge",
    "migrate",
    "modify",
    "move",
    "optimize",
    "parse",
    "port",
    "prevent",
    "push",
    "read",
    "refactor",
    "remove",
    "rename",
    "replace",
    "resolve",
    "restructure",
    "reuse",
    "revert",
    "review",
    "rewrite",
    "rework",
    "run",
    "search",
    "set",
    "setup",
    "show",
    "simplify",
    "speed",
    "split",
    "start",
    "stop",
    "summarize",
    "support",
    "test",
    "tweak",
    "uninstall",
    "update",
    "upgrade",
    "use",
    "validate",
    "verify",
    "wire",
    "work",
    "write",
];

/// Words a title does not end on, and where a long sentence is cut.
const DANGLING: &[&str] = &[
    "a", "an", "the", "to", "and", "or", "of", "with", "for", "in", "on", "at", "by", "from",
    "that", "which", "but", "so", "as", "is", "are", "be", "it", "its", "this", "these", "all",
    "also", "because", "since", "while", "then", "instead", "when", "if",
];
const BREAKS: &[&str] = &[
    "but", "because", "so", "which", "since", "while", "instead", "as", "when", "if", "then",
];

/// The first sentence of a cleaned prompt as a title when it is an imperative request ("Add a
/// GitHub Action to run tests"); None when it is a question, a remark or no sentence at all:
/// those say what the user thought, not what was done, and go in the summary.
fn prompt_title(prompt: &str) -> Option<String> {
    // A slash command is not a request; its arguments may be.
    let p = match prompt.strip_prefix('/') {
        Some(cmd) => cmd.split_once(' ').map_or("", |(_, args)| args),
        None => prompt,
    };
    let end = p
        .char_indices()
        .find(|&(i, c)| {
            matches!(c, '.' | '?' | '!' | '\n')
                && p[i + c.len_utf8()..]
                    .chars()
                    .next()
                    .is_none_or(char::is_whitespace)
        })
        .map_or(p.len(), |(i, _)| i);
    let mut question = p[end..].starts_with('?');
    let mut asked = false;
    let mut rest: &str = &p[..end];
    'strip: loop {
        rest = rest
            .trim_start_matches(|c: char| c.is_whitespace() || matches!(c, ',' | ':' | ';' | '-'));
        for o in OPENERS {
            if rest.len() >= o.len()
                && rest.is_char_boundary(o.len())
                && rest[..o.len()].eq_ignore_ascii_case(o)
                && rest[o.len()..]
                    .chars()
                    .next()
                    .is_none_or(|c| !c.is_alphanumeric() && c != '\'')
            {
                // "Can you please add …?" asks for work, not for an answer.
                asked |= o.contains("you") || o.contains("please");
                rest = &rest[o.len()..];
                continue 'strip;
            }
        }
        break;
    }
    question &= !asked;
    let words: Vec<String> = rest
        .split_whitespace()
        .map(|w| w.trim_start_matches('@').replace('`', ""))
        .filter(|w| !w.is_empty())
        .collect();
    let bare = |w: &str| {
        w.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'')
            .to_lowercase()
    };
    if words.len() < 2 {
        return None;
    }
    // A long sentence is cut before a subordinate clause or an aside, or at a comma.
    let mut n = words.len().min(10);
    for (i, w) in words.iter().enumerate().take(10).skip(3) {
        if i >= 4 && (BREAKS.contains(&bare(w).as_str()) || w.starts_with('(')) {
            n = i;
            break;
        }
        if w.ends_with([',', ';', ':']) {
            n = i + 1;
            break;
        }
    }
    while n > 2 && DANGLING.contains(&bare(&words[n - 1]).as_str()) {
        n -= 1;
    }
    let joined = words[..n].join(" ");
    let phrase =
        joined.trim_end_matches(|c: char| !c.is_alphanumeric() && !matches!(c, ')' | '"' | '\''));
    let mut chars = phrase.chars();
    let first = chars.next()?;
    (!question && VERBS.contains(&bare(&words[0]).as_str()))
        .then(|| first.to_uppercase().chain(chars).collect())
}

/// A title: the request when it was an imperative one, with the file or command it was about;
/// else what the tool calls did to what ("Fix parse_date in utils.py", "Run cargo test -p
/// billing (failed)", "Investigate renderer.py and converter.py").
fn title(g: &Group, kind: &str) -> String {
    let prompt = clean_prompt(g.prompt.as_deref().unwrap_or(""));
    let Some(mut t) = prompt_title(&prompt) else {
        return work_title(g, kind);
    };
    let subject = main_file(g).or_else(|| main_command(g).map(|(c, _)| c));
    if let Some(f) = subject
        && !t.to_lowercase().contains(&f.to_lowercase())
    {
        t.push_str(&format!(" ({f})"));
    }
    t
}

/// "a.rs", "a.rs and b.rs", "a.rs and 3 more files".
fn file_list(files: &[String]) -> String {
    match files {
        [] => String::new(),
        [a] => basename(a).to_string(),
        [a, b] => format!("{} and {}", basename(a), basename(b)),
        [a, rest @ ..] => format!("{} and {} more files", basename(a), rest.len()),
    }
}

/// The command a turn is most about (the first that failed, else the last) as its program and
/// first arguments, and whether it failed.
fn main_command(g: &Group) -> Option<(String, bool)> {
    // Plumbing around the work (waiting, printing, paging) is not what a turn ran.
    const PLUMBING: &[&str] = &[
        "sleep", "echo", "cd", "true", "printf", "export", "tail", "head", "wc", "cat", "clear",
    ];
    let step_words = |step: &str| -> Option<String> {
        let words: Vec<&str> = step
            .split_whitespace()
            .skip_while(|w| w.contains('=') && !w.starts_with('-'))
            .take_while(|w| {
                !matches!(*w, "|" | ">" | "2>&1" | ";" | "||")
                    && w.len() <= 40
                    && !w.contains(['"', '\'', '$', '`', '('])
            })
            .take(4)
            .collect();
        let prog = words.first()?.rsplit('/').next()?;
        Some(
            std::iter::once(prog)
                .chain(words[1..].iter().copied())
                .collect::<Vec<_>>()
                .join(" "),
        )
    };
    let work = |c: &String| !PLUMBING.contains(&c.split(' ').next().unwrap_or(""));
    // Of `cd x && cargo test && echo done`, the last step that is work is the command.
    let program = |i: &Item| -> Option<String> {
        let line = i.payload["tool_input"]["command"]
            .as_str()?
            .lines()
            .next()?;
        let steps: Vec<String> = line.split("&&").filter_map(step_words).collect();
        steps
            .iter()
            .rev()
            .find(|c| work(c))
            .or(steps.last())
            .cloned()
    };
    let bash: Vec<(&Item, String)> = g
        .items
        .iter()
        .filter(|i| i.tool() == "Bash")
        .filter_map(|i| Some((i, program(i)?)))
        .collect();
    let (it, cmd) = bash
        .iter()
        .find(|(i, c)| i.failed() && work(c))
        .or_else(|| bash.iter().rev().find(|(_, c)| work(c)))
        .or(bash.last())?;
    Some((cmd.clone(), it.failed()))
}

/// Words cut to at most `max`, at a word boundary and never on a dangling word.
fn words_upto(text: &str, max: usize) -> String {
    let mut w: Vec<&str> = text.split_whitespace().take(max).collect();
    while w.len() > 1
        && DANGLING.contains(
            &w[w.len() - 1]
                .trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase()
                .as_str(),
        )
    {
        w.pop();
    }
    w.join(" ")
        .trim_end_matches([',', ';', ':', '.'])
        .to_string()
}

/// What the calls of a turn did, to what: edits first, then a plan, commands, reading.
fn work_title(g: &Group, kind: &str) -> String {
    let modified = g.modified();
    let calls = g.items.len();
    let plural = |n: usize, w: &str| format!("{n} {w}{}", if n == 1 { "" } else { "s" });
    // "Update a.rs" says too little on its own: the count of what was done fills it out.
    let at_least_3 = |t: String, n: usize, w: &str| {
        if t.split_whitespace().count() < 3 {
            format!("{t} ({})", plural(n, w))
        } else {
            t
        }
    };
    if !modified.is_empty() {
        let created = g.items.iter().any(|i| {
            i.writes()
                && i.files.first() == modified.first()
                && i.tool() == "Write"
                && i.payload["tool_response"]["type"].as_str() == Some("create")
        });
        let verb = match kind {
            "bugfix" => "Fix",
            "refactor" => "Refactor",
            _ if created => "Create",
            _ => "Update",
        };
        // A config edit is what it set ("Update .markdownlint.json: set MD034").
        if let [(f, keys)] = config_changes(g).as_slice()
            && modified.len() == 1
        {
            return format!("{verb} {}: set {}", basename(f), keys.join(", "));
        }
        // Functions are named with the file whose edit defines them, that file first.
        let (fs, files) = match g.items.iter().filter(|i| i.writes()).find_map(|i| {
            let fs = functions_in_edit(&i.payload["tool_input"]);
            Some((fs, i.files.first()?.clone())).filter(|(fs, _)| !fs.is_empty())
        }) {
            Some((fs, file)) => {
                let mut files = vec![file.clone()];
                files.extend(modified.iter().filter(|m| **m != file).cloned());
                (fs, files)
            }
            None => (vec![], modified.clone()),
        };
        let t = match fs.as_slice() {
            [] => format!("{verb} {}", file_list(&files)),
            [f] => format!("{verb} {f} in {}", file_list(&files)),
            [f, h, ..] => format!("{verb} {f} and {h} in {}", file_list(&files)),
        };
        let edits = g.items.iter().filter(|i| i.writes()).count();
        return at_least_3(t, edits, "edit");
    }
    if let Some(plan) = g
        .items
        .iter()
        .find_map(|i| i.payload["tool_input"]["plan"].as_str())
    {
        let line = plan
            .lines()
            .map(|l| l.trim_start_matches(['#', '*', '-', ' ']).trim())
            .find(|l| l.split_whitespace().count() >= 2)
            .unwrap_or("");
        let line = line
            .strip_prefix("Plan:")
            .or_else(|| line.strip_prefix("Plan"))
            .unwrap_or(line);
        if !line.trim().is_empty() {
            return format!("Plan {}", words_upto(line.trim(), 10));
        }
    }
    if let Some((cmd, failed)) = main_command(g) {
        let others = g.items.iter().filter(|i| i.tool() == "Bash").count() - 1;
        let more = if others > 0 {
            format!(" and {}", plural(others, "more command"))
        } else {
            String::new()
        };
        let how = if failed { " (failed)" } else { "" };
        return format!("Run {cmd}{more}{how}");
    }
    let read: Vec<String> = g.all_files();
    let verb = if kind == "decision" {
        "Weigh options on"
    } else {
        "Investigate"
    };
    if !read.is_empty() {
        return at_least_3(format!("{verb} {}", file_list(&read)), calls, "call");
    }
    if let Some(p) = g
        .items
        .iter()
        .find_map(|i| i.payload["tool_input"]["pattern"].as_str())
    {
        return format!("Search for {}", words_upto(&p.replace('`', ""), 8));
    }
    let mut tools: Vec<&str> = Vec::new();
    for i in &g.items {
        if !tools.contains(&i.tool()) {
            tools.push(i.tool());
        }
    }
    format!(
        "Use {} ({})",
        tools.into_iter().take(3).collect::<Vec<_>>().join(" and "),
        plural(calls, "call")
    )
}

fn meaningful_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"(?i)\b(error|failed|failure|panicked|passed|warning|success(?:fully)?|test result|exception|traceback|not found|denied|created|deleted)\b")
            .expect("valid regex")
    })
}

fn function_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"(?m)^[ \t]*(?:export[ \t]+)?(?:pub(?:\([^)]*\))?[ \t]+)?(?:async[ \t]+)?(?:def|fn|function|class|func|struct|enum|trait|impl)[ \t]+([A-Za-z_][A-Za-z0-9_]*)")
            .expect("valid regex")
    })
}

fn output_text(it: &Item) -> String {
    let r = &it.payload["tool_response"];
    let mut s = String::new();
    match r {
        Value::String(t) => s.push_str(t),
        Value::Object(o) => {
            for k in ["stdout", "stderr", "output", "result"] {
                if let Some(Value::String(t)) = o.get(k) {
                    s.push_str(t);
                    s.push('\n');
                }
            }
        }
        _ => {}
    }
    if let Some(Value::String(e)) = it.payload.get("error") {
        s.push_str(e);
    }
    s
}

/// Up to `max` short lines of the outputs that say how things went.
fn meaningful_lines(g: &Group, max: usize) -> Vec<String> {
    let re = meaningful_re();
    let mut out: Vec<String> = Vec::new();
    for it in g.items.iter().filter(|i| i.tool() == "Bash" || i.failed()) {
        let text = output_text(it);
        for line in text.lines().take(2000) {
            let l = line.trim();
            if l.len() < 8 || !re.is_match(l) {
                continue;
            }
            let l: String = l.chars().take(160).collect();
            if !out.contains(&l) {
                out.push(l);
            }
            if out.len() >= max {
                return out;
            }
        }
    }
    out
}

fn first_sentence(text: &str, max: usize) -> String {
    let t = text.trim();
    let mut line = t
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    // "Perfect! I have…": skip a leading interjection of fewer than four words.
    if let Some(i) = line.find(['!', '.'])
        && line[..i].split_whitespace().count() < 4
        && line[i + 1..].trim().len() > 10
    {
        line = line[i + 1..].trim();
    }
    let end = line
        .char_indices()
        .find(|(i, c)| matches!(c, '.' | '?' | '!') && line[i + 1..].starts_with(' '))
        .map(|(i, _)| i + 1)
        .unwrap_or(line.len());
    let s = &line[..end];
    if s.chars().count() > max {
        let cut: String = s.chars().take(max).collect();
        format!("{}…", cut.trim_end())
    } else {
        s.to_string()
    }
}

fn functions(g: &Group) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for it in g.items.iter().filter(|i| i.writes()) {
        for name in functions_in_edit(&it.payload["tool_input"]) {
            if !out.contains(&name) && out.len() < 20 {
                out.push(name);
            }
        }
    }
    out
}

/// Functions, methods and classes an edit call's new text defines (Write content, Edit and
/// MultiEdit new strings, notebook source), in order, without repeats.
pub fn functions_in_edit(input: &Value) -> Vec<String> {
    let re = function_re();
    let mut texts: Vec<&str> = Vec::new();
    for k in ["new_string", "content", "new_source"] {
        if let Some(s) = input[k].as_str() {
            texts.push(s);
        }
    }
    if let Some(edits) = input["edits"].as_array() {
        texts.extend(edits.iter().filter_map(|e| e["new_string"].as_str()));
    }
    let mut out: Vec<String> = Vec::new();
    for t in texts {
        let mut e = t.len().min(32_000);
        while !t.is_char_boundary(e) {
            e -= 1;
        }
        for c in re.captures_iter(&t[..e]) {
            if !out.iter().any(|n| n == &c[1]) {
                out.push(c[1].to_string());
            }
        }
    }
    out
}

/// Whether a path is source code (functions make sense there), not docs, config or markup.
pub fn is_code(path: &str) -> bool {
    matches!(
        language(path),
        Some(
            "rust"
                | "python"
                | "typescript"
                | "javascript"
                | "go"
                | "java"
                | "ruby"
                | "c"
                | "c++"
                | "shell"
        )
    ) || {
        let ext = path.rsplit('.').next().unwrap_or("").to_ascii_lowercase();
        [
            "kt", "kts", "swift", "scala", "cs", "php", "ex", "exs", "erl", "hs", "ml", "lua",
            "dart", "jl", "zig", "vue", "svelte", "m", "mm", "pl", "clj", "r", "fs", "groovy",
            "cjs", "mts", "cts",
        ]
        .contains(&ext.as_str())
    }
}

fn language(path: &str) -> Option<&'static str> {
    let ext = path.rsplit('.').next()?.to_ascii_lowercase();
    Some(match ext.as_str() {
        "rs" => "rust",
        "py" => "python",
        "ts" | "tsx" => "typescript",
        "js" | "jsx" | "mjs" => "javascript",
        "go" => "go",
        "java" => "java",
        "rb" => "ruby",
        "c" | "h" => "c",
        "cpp" | "cc" | "hpp" => "c++",
        "md" => "docs",
        "html" | "css" => "web",
        "json" | "toml" | "yaml" | "yml" => "config",
        "sh" => "shell",
        "sql" => "sql",
        _ => return None,
    })
}

fn config_key_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        // `"key": …`, `key = …`, `key: …` at the start of a line (JSON, TOML/INI/.env, YAML).
        Regex::new(r#"(?m)^[ \t-]*"?([A-Za-z_][A-Za-z0-9_.\-]{1,60})"?[ \t]*(?::|=)"#)
            .expect("valid regex")
    })
}

/// Keys a config file edit sets: those in its new text that its old text did not have (all of
/// a written file's), in order, at most 4. Empty for a file that is not configuration.
pub fn config_keys(path: &str, input: &Value) -> Vec<String> {
    let config = language(path) == Some("config")
        || [".env", ".ini", ".cfg", ".conf", ".properties"]
            .iter()
            .any(|e| path.to_ascii_lowercase().ends_with(e));
    if !config {
        return vec![];
    }
    let keys = |t: &str| -> Vec<String> {
        config_key_re()
            .captures_iter(t)
            .map(|c| c[1].to_string())
            .collect()
    };
    let mut pairs: Vec<(&str, &str)> = Vec::new();
    for (new, old) in [("new_string", "old_string"), ("content", "")] {
        if let Some(n) = input[new].as_str() {
            pairs.push((n, input[old].as_str().unwrap_or("")));
        }
    }
    if let Some(edits) = input["edits"].as_array() {
        for e in edits {
            if let Some(n) = e["new_string"].as_str() {
                pairs.push((n, e["old_string"].as_str().unwrap_or("")));
            }
        }
    }
    let mut out: Vec<String> = Vec::new();
    for (new, old) in pairs {
        let before = keys(old);
        for k in keys(new) {
            if !before.contains(&k) && !out.contains(&k) && out.len() < 4 {
                out.push(k);
            }
        }
    }
    out
}

/// (file, keys) of the turn's config edits.
fn config_changes(g: &Group) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for it in g.items.iter().filter(|i| i.writes()) {
        let Some(f) = it.files.first() else { continue };
        let ks = config_keys(f, &it.payload["tool_input"]);
        if ks.is_empty() {
            continue;
        }
        match out.iter_mut().find(|(o, _)| o == f) {
            Some((_, v)) => {
                for k in ks {
                    if !v.contains(&k) {
                        v.push(k);
                    }
                }
            }
            None => out.push((f.clone(), ks)),
        }
    }
    out
}

/// The text an observation is made of (for token counts).
pub fn text_of(o: &Observation) -> String {
    let mut s = format!("{}\n{}", o.title, o.summary);
    if let Some(d) = &o.detail {
        s.push('\n');
        s.push_str(d);
    }
    for f in &o.facts {
        s.push('\n');
        s.push_str(f);
    }
    s
}

fn raw_tokens(g: &Group) -> u64 {
    g.items
        .iter()
        .map(|i| {
            let n = i.payload.to_string().len().min(super::MAX_CAPTURE_CHARS);
            n.div_ceil(4) as u64
        })
        .sum()
}

/// Calls a turn keeps in one observation; a longer turn is cut into pieces of work.
const PIECE_CALLS: usize = 12;

/// A long turn cut into pieces of work, as index lists into its items, in order: a piece ends
/// where an edit of a file it has not edited begins (reads of that file just before go with
/// it); a turn without edits is cut where another program is run. Pieces are at least
/// max(6, calls/6) calls, so a turn gives at most about six observations.
pub fn pieces(g: &Group) -> Vec<Vec<usize>> {
    let n = g.items.len();
    if n <= PIECE_CALLS {
        return vec![(0..n).collect()];
    }
    let edits = g.items.iter().any(Item::writes);
    let key = |it: &Item| -> Option<String> {
        if edits {
            it.writes().then(|| it.files.first().cloned()).flatten()
        } else if it.tool() == "Bash" {
            let cmd = it.payload["tool_input"]["command"].as_str().unwrap_or("");
            cmd.split_whitespace().next().map(|p| format!("${p}"))
        } else {
            None
        }
    };
    let min = (n / 6).max(6);
    let mut out: Vec<Vec<usize>> = Vec::new();
    let mut cur: Vec<usize> = Vec::new();
    let mut keys: Vec<String> = Vec::new();
    for (i, it) in g.items.iter().enumerate() {
        if let Some(k) = key(it) {
            if !keys.is_empty() && !keys.contains(&k) && cur.len() >= min {
                // The reads that prepared this edit belong to it.
                let mut next = Vec::new();
                while let Some(&j) = cur.last() {
                    let prep = &g.items[j];
                    if key(prep).is_none() && prep.files.iter().any(|f| it.files.contains(f)) {
                        next.insert(0, cur.pop().unwrap_or(j));
                    } else {
                        break;
                    }
                }
                out.push(std::mem::take(&mut cur));
                keys.clear();
                cur = next;
            }
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
        cur.push(i);
    }
    // A short tail is part of the last piece (the tests run after the last edit).
    match out.last_mut() {
        Some(last) if cur.len() < min => last.extend(cur),
        _ => out.push(cur),
    }
    out
}

/// Compresses a turn into one observation.
pub fn compress(g: &Group) -> Observation {
    observation(g, false)
}

/// Compresses one piece of a long turn: its title says what the piece did (the request, the
/// same for every piece, stays in the summary).
pub fn compress_piece(g: &Group) -> Observation {
    observation(g, true)
}

fn observation(g: &Group, piece: bool) -> Observation {
    let kind = classify(g);
    let modified = g.modified();
    let mut read: Vec<String> = Vec::new();
    for it in g.items.iter().filter(|i| !i.writes()) {
        for f in &it.files {
            if !modified.contains(f) && !read.contains(f) {
                read.push(f.clone());
            }
        }
    }
    // What was done.
    let mut commands: Vec<String> = Vec::new();
    let mut tool_counts: Vec<(String, usize)> = Vec::new();
    for it in &g.items {
        match tool_counts.iter_mut().find(|(t, _)| t == it.tool()) {
            Some(e) => e.1 += 1,
            None => tool_counts.push((it.tool().to_string(), 1)),
        }
        if it.tool() == "Bash" {
            let inp = &it.payload["tool_input"];
            let what = inp["description"]
                .as_str()
                .filter(|s| !s.is_empty())
                .or_else(|| inp["command"].as_str())
                .unwrap_or("")
                .lines()
                .next()
                .unwrap_or("")
                .chars()
                .take(120)
                .collect::<String>();
            if !what.is_empty() && commands.len() < 8 {
                // A failure's first error line is the fact worth keeping.
                let f = if it.failed() {
                    let re = meaningful_re();
                    match output_text(it)
                        .lines()
                        .map(str::trim)
                        .find(|l| re.is_match(l))
                    {
                        Some(e) => format!(
                            "failed: {what}: {}",
                            e.chars().take(120).collect::<String>()
                        ),
                        None => format!("failed: {what}"),
                    }
                } else {
                    format!("ran: {what}")
                };
                if !commands.contains(&f) {
                    commands.push(f);
                }
            }
        }
    }
    let mut did: Vec<String> = Vec::new();
    if !modified.is_empty() {
        let names: Vec<&str> = modified.iter().take(4).map(|f| basename(f)).collect();
        let more = modified.len().saturating_sub(4);
        did.push(format!(
            "changed {}{}",
            names.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        ));
    }
    let bash = g.items.iter().filter(|i| i.tool() == "Bash").count();
    if bash > 0 {
        did.push(format!(
            "ran {bash} command{}",
            if bash == 1 { "" } else { "s" }
        ));
    }
    if !read.is_empty() {
        did.push(format!(
            "looked at {} file{}",
            read.len(),
            if read.len() == 1 { "" } else { "s" }
        ));
    }
    let failures = g.items.iter().filter(|i| i.failed()).count();
    if failures > 0 {
        did.push(format!(
            "{failures} call{} failed",
            if failures == 1 { "" } else { "s" }
        ));
    }
    if did.is_empty() {
        did.push(
            tool_counts
                .iter()
                .map(|(t, n)| format!("{t} ×{n}"))
                .collect::<Vec<_>>()
                .join(", "),
        );
    }
    let lines = meaningful_lines(g, 3);
    let mut summary = String::new();
    let prompt = clean_prompt(g.prompt.as_deref().unwrap_or(""));
    if !prompt.is_empty() {
        summary.push_str(&format!(
            "Asked: {}. ",
            first_sentence(&prompt, 200).trim_end_matches(['.', '?'])
        ));
    }
    let did_s = did.join("; ");
    let mut did_c = did_s.chars();
    let first = did_c
        .next()
        .map(|c| c.to_uppercase().collect::<String>())
        .unwrap_or_default();
    summary.push_str(&format!("{first}{}.", did_c.as_str()));
    if let Some(m) = g.last_message.as_deref().filter(|m| !m.trim().is_empty()) {
        summary.push_str(&format!(" Outcome: {}", first_sentence(m, 240)));
    } else if let Some(l) = lines.first() {
        summary.push_str(&format!(" Output: {l}"));
    }
    let mut facts = commands;
    for f in &modified {
        let n = g
            .items
            .iter()
            .filter(|i| i.writes() && i.files.contains(f))
            .count();
        if facts.len() < 12 {
            facts.push(format!("edited {} ({n}×)", basename(f)));
        }
    }
    // What the work was about: the functions and files it touched and the command it ran,
    // then the prompt's topic words.
    for (f, keys) in config_changes(g) {
        if facts.len() < 12 {
            facts.push(format!("set {} in {}", keys.join(", "), basename(&f)));
        }
    }
    let mut concepts: Vec<String> = Vec::new();
    let stems = modified.iter().chain(read.iter()).filter_map(|f| {
        Path::new(f)
            .file_stem()
            .and_then(|s| s.to_str())
            .filter(|s| s.len() >= 3)
            .map(str::to_lowercase)
    });
    let program = main_command(g).and_then(|(c, _)| c.split(' ').next().map(str::to_string));
    for c in functions(g)
        .into_iter()
        .take(3)
        .chain(stems.take(3))
        .chain(program)
        .chain(topic_words(&prompt, 5))
    {
        if concepts.len() < 8 && !concepts.contains(&c) {
            concepts.push(c);
        }
    }
    concepts.truncate(6);
    for f in modified.iter().chain(read.iter()) {
        if let Some(l) = language(f)
            && !concepts.iter().any(|c| c == l)
        {
            concepts.push(l.to_string());
        }
    }
    concepts.truncate(8);
    let detail = (!lines.is_empty()).then(|| lines.join("\n"));
    let mut o = Observation {
        kind: kind.to_string(),
        title: redact::redact_str(&if piece {
            work_title(g, kind)
        } else {
            title(g, kind)
        })
        .into_owned(),
        summary: redact::redact_str(&summary).into_owned(),
        detail: detail.map(|d| redact::redact_str(&d).into_owned()),
        facts: facts
            .into_iter()
            .map(|f| redact::redact_str(&f).into_owned())
            .collect(),
        concepts,
        files_read: read,
        files_modified: modified,
        functions_changed: functions(g),
        tokens_raw: raw_tokens(g),
        ..Default::default()
    };
    o.tokens_compressed = tokens::estimate(&text_of(&o)) as u64;
    o
}

/// A manual note as an observation: its words kept, its type guessed from them.
pub fn note(it: &Item) -> Observation {
    let text = it.payload["note"].as_str().unwrap_or("").trim().to_string();
    let tags: Vec<String> = it.payload["tags"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let w: Vec<String> = words(&text).collect();
    let kind = if has_any(&w, &["fix", "bug", "broken", "workaround"]) {
        "bugfix"
    } else if has_any(
        &w,
        &[
            "decide", "decided", "decision", "always", "never", "prefer", "use",
        ],
    ) {
        "decision"
    } else {
        "discovery"
    };
    let given = |k: &str| {
        it.payload[k]
            .as_str()
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let title: String = given("title").unwrap_or_else(|| {
        let s = first_sentence(&text, 100);
        let ws: Vec<&str> = s.split_whitespace().take(10).collect();
        ws.join(" ")
    });
    let mut o = Observation {
        kind: kind.into(),
        title: if title.is_empty() {
            "Note".into()
        } else {
            title
        },
        summary: text.clone(),
        concepts: topic_words(&text, 5),
        tags,
        is_manual: true,
        tokens_raw: tokens::estimate(&text) as u64,
        external_id: given("external_id"),
        // A note brought with its date was made then (recency and date filters see it there).
        created_at: given("date"),
        ..Default::default()
    };
    o.tokens_compressed = tokens::estimate(&text_of(&o)) as u64;
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_config_edit_says_which_keys_it_set() {
        let edit = json!({"old_string": "{\n  \"MD013\": false\n}",
                          "new_string": "{\n  \"MD013\": false,\n  \"MD034\": false\n}"});
        assert_eq!(config_keys("/p/.markdownlint.json", &edit), ["MD034"]);
        let toml = json!({"content": "[tool.ruff]\nline-length = 100\nselect = [\"E\"]\n"});
        assert_eq!(
            config_keys("/p/pyproject.toml", &toml),
            ["line-length", "select"]
        );
        let env = json!({"new_string": "DATABASE_URL=postgres://x\n", "old_string": ""});
        assert_eq!(config_keys("/p/.env", &env), ["DATABASE_URL"]);
        assert!(config_keys("/p/src/main.rs", &toml).is_empty());
    }
}
