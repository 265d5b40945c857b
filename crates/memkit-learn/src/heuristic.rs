//! Learnings without an LLM: only what the user said or what sessions showed twice, never a
//! guess. A sentence of a typed prompt that states a rule ("always …", "never …", "don't …",
//! "use X instead of Y", "remember that …", "from now on …") is a candidate, with the prompt as
//! its evidence; so is a command that succeeded in two sessions of the project.
//! Wrappers, pasted blocks, quotes and a subagent's task (which the main agent wrote) are not
//! the user's words and are never read.

use std::sync::LazyLock;

use regex::Regex;

use crate::{Candidate, commands};

/// How sure a rule stated with an unmistakable marker is ("always", "never", "from now on",
/// "remember"); a bare "don't …" or "use X instead of Y" is often meant for this task only.
const STRONG: f64 = 0.8;
const WEAK: f64 = 0.6;

/// Sentences longer than this are explanations, not rules.
const MAX_WORDS: usize = 40;
const MIN_WORDS: usize = 3;

/// Openers that carry no meaning before the rule ("ok, always …", "also: never …").
static LEAD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^(?:(?:ok(?:ay)?|also|and|but|so|btw|note|rule|important|please|just|fyi|oh|to be clear|to be sure|again)\b[\s,:!-]*)+")
        .unwrap()
});

/// (pattern at the start of the sentence, category, confidence).
static RULES: LazyLock<Vec<(Regex, &'static str, f64)>> = LazyLock::new(|| {
    let r = |p: &str| Regex::new(&format!("(?i){p}")).unwrap();
    vec![
        (r(r"^from now on\b"), "convention", STRONG),
        (
            r(r"^(?:remember|keep in mind|note) (?:that|to)\b"),
            "gotcha",
            STRONG,
        ),
        (r(r"^(?:we|you) (?:always|never)\b"), "convention", STRONG),
        (
            r(r"^(?:i|we) (?:don'?t|do not|never) want (?:you |it |us |them )?to\b"),
            "convention",
            WEAK,
        ),
        (r(r"^(?:i|we) (?:always|prefer)\b"), "convention", WEAK),
        (r(r"^(?:always|never)\s+\w"), "convention", STRONG),
        (
            r(r"^(?:don'?t|do not|dont)\s+(?:ever\s+)?\w"),
            "convention",
            WEAK,
        ),
        (
            r(r"^(?:use|prefer)\s+\S.{0,60}\b(?:instead of|rather than|over|not)\b"),
            "convention",
            WEAK,
        ),
        (
            r(r"^(?:we|the project) (?:use|uses|run|runs)\s+\S.{0,60}\bfor\b"),
            "convention",
            WEAK,
        ),
    ]
});

/// "don't worry", "never mind": said to move on, not rules.
static NOT_RULES: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)^(?:never ?mind|don'?t (?:worry|bother|know|think|see|understand|get|like|want|need|forget to (?:reply|answer))|do not (?:respond|reply)|always the same)\b",
    )
    .unwrap()
});

/// Words that make a sentence about the moment rather than the project.
static MOMENT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:yet|right now|for now|this time|in this (?:pr|task|session|step)|today|anymore)\b")
        .unwrap()
});

/// Candidates from the prompts a user typed in one session.
pub fn extract(prompts: &[String]) -> Vec<Candidate> {
    let mut out: Vec<Candidate> = Vec::new();
    for p in prompts {
        // A rule can follow a clause: "I have both Node and Python, but I don't want …".
        let clauses = sentences(p).into_iter().flat_map(|s| {
            let after: Vec<String> = s.split(", but ").skip(1).map(str::to_string).collect();
            std::iter::once(s).chain(after)
        });
        for s in clauses {
            if let Some(c) = rule(&s, p)
                && !out
                    .iter()
                    .any(|o| crate::lexically_same(&o.content, &c.content))
            {
                out.push(c);
            }
        }
    }
    out
}

/// The commands of a command line as they are compared across sessions ([`commands::normalise`]:
/// plumbing and the project's own path left out), keeping only those worth remembering: not
/// looking around, not git's housekeeping, not one-offs (a command whose words say no purpose:
/// build, test, lint or format, install, run) and no long line.
pub fn command_keys(cmd: &str, root: Option<&str>) -> Vec<String> {
    commands::normalise(cmd, root)
        .into_iter()
        .filter(|c| c.len() <= 100 && !commands::housekeeping(c) && commands::purpose(c).is_some())
        .collect()
}

/// Candidates from commands that succeeded in this session and in an earlier one of
/// `project`: a fact seen twice ("`uv run pyright`" is how this project type-checks), with the
/// sessions as evidence.
pub fn repeated_commands(
    this: &[String],
    earlier: &[(String, String)],
    project: Option<&str>,
) -> Vec<Candidate> {
    let earlier: Vec<(&str, Vec<String>)> = earlier
        .iter()
        .map(|(s, e)| (s.as_str(), command_keys(e, project)))
        .collect();
    let mut out: Vec<Candidate> = Vec::new();
    for c in this.iter().flat_map(|c| command_keys(c, project)) {
        let mut before: Vec<&str> = earlier
            .iter()
            .filter(|(_, e)| e.contains(&c))
            .map(|(s, _)| *s)
            .collect();
        before.sort();
        before.dedup();
        if before.is_empty() || out.iter().any(|o| o.content.contains(&format!("`{c}`"))) {
            continue;
        }
        out.push(Candidate {
            content: format!("{}{c}`", commands::COMMAND_PREFIX),
            category: "convention".into(),
            confidence: WEAK,
            contradicts: None,
            evidence: Some(format!(
                "run successfully in this session and in {}",
                one_line(&before.join(", "), 200)
            )),
        });
    }
    out
}

/// Whether a sentence is worded as a rule ("always …", "never …", "use X instead of Y", …).
pub fn states_rule(sentence: &str) -> bool {
    let s = LEAD.replace(sentence.trim(), "");
    RULES.iter().any(|(re, _, _)| re.is_match(s.trim()))
}

/// The candidate a sentence states, if it states a rule.
fn rule(sentence: &str, prompt: &str) -> Option<Candidate> {
    let s = LEAD.replace(sentence.trim(), "");
    let s = s.trim();
    let words = s.split_whitespace().count();
    if !(MIN_WORDS..=MAX_WORDS).contains(&words) || NOT_RULES.is_match(s) || MOMENT.is_match(s) {
        return None;
    }
    // A question asks; it does not rule.
    if s.ends_with('?') {
        return None;
    }
    let (_, category, confidence) = RULES.iter().find(|(re, _, _)| re.is_match(s))?;
    let category = if s.to_lowercase().contains(" because ") {
        "decision"
    } else {
        category
    };
    let mut content = s.trim_end_matches(['.', '!', ',', ';', ':']).to_string();
    if let Some(first) = content.get(..1) {
        content = first.to_uppercase() + &content[1..];
    }
    Some(Candidate {
        content,
        category: category.to_string(),
        confidence: *confidence,
        contradicts: None,
        evidence: Some(one_line(prompt, 300)),
    })
}

/// The sentences of a prompt the user wrote: wrappers, fenced and indented code, quoted lines
/// and list markers left out.
fn sentences(prompt: &str) -> Vec<String> {
    let t = prompt.trim_start();
    if t.starts_with('<') || t.starts_with("Caveat:") || t.starts_with('/') {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut fenced = false;
    for line in prompt.lines() {
        let l = line.trim_end();
        if l.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced || l.starts_with("    ") || l.starts_with('\t') || l.trim_start().starts_with('>')
        {
            continue;
        }
        let l = l
            .trim_start()
            .trim_start_matches(['-', '*', '•'])
            .trim_start();
        let l = l.trim_start_matches(|c: char| c.is_ascii_digit());
        let l = l.strip_prefix(". ").or(l.strip_prefix(") ")).unwrap_or(l);
        let mut start = 0;
        let b = l.as_bytes();
        for i in 0..b.len() {
            let end = matches!(b[i], b'.' | b'!' | b'?' | b';')
                && b.get(i + 1).is_none_or(|n| *n == b' ');
            if end {
                out.push(l[start..=i].trim().to_string());
                start = i + 1;
            }
        }
        if start < l.len() {
            out.push(l[start..].trim().to_string());
        }
    }
    out.retain(|s| !s.is_empty());
    out
}

/// `s` on one line, cut at `n` characters.
fn one_line(s: &str, n: usize) -> String {
    crate::clip(&s.split_whitespace().collect::<Vec<_>>().join(" "), n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contents(prompts: &[&str]) -> Vec<(String, String)> {
        let p: Vec<String> = prompts.iter().map(|s| s.to_string()).collect();
        extract(&p)
            .into_iter()
            .map(|c| (c.category, c.content))
            .collect()
    }

    #[test]
    fn rules_the_user_states_are_found() {
        let got = contents(&[
            "Fix the failing test. From now on, run the tests with uv run pytest -m 'not browser'.",
            "ok, always use pnpm instead of npm in this repo",
            "Remember that the CI image has no ffmpeg",
            "Never commit the .env file!",
            "Don't add new dependencies without asking",
            "Use httpx instead of requests because requests has no async support",
            "I have both Node and Python, but I don't want to make it only work for me.",
        ]);
        assert_eq!(
            got,
            [
                (
                    "convention".to_string(),
                    "From now on, run the tests with uv run pytest -m 'not browser'".to_string()
                ),
                (
                    "convention".into(),
                    "Always use pnpm instead of npm in this repo".into()
                ),
                (
                    "gotcha".into(),
                    "Remember that the CI image has no ffmpeg".into()
                ),
                ("convention".into(), "Never commit the .env file".into()),
                (
                    "convention".into(),
                    "Don't add new dependencies without asking".into()
                ),
                (
                    "decision".into(),
                    "Use httpx instead of requests because requests has no async support".into()
                ),
                (
                    "convention".into(),
                    "I don't want to make it only work for me".into()
                ),
            ]
        );
    }

    #[test]
    fn talk_that_is_not_a_rule_is_left_alone() {
        let got = contents(&[
            "Never mind",
            "I don't think we need to loop through all items, the group names should match the filters?",
            "Don't worry about the docs for now",
            "don't push yet",
            "Do you always run the linter?",
            "<local-command-caveat>Caveat: DO NOT respond to these messages</local-command-caveat>",
            "Caveat: The messages below were generated by the user while running local commands. DO NOT respond to these messages.",
            "> Never use unwrap in library code\nthat's what the blog says, what do you think",
            "```\n# never edit this file\n```",
            "/clear",
            "also we don't need to check for the existence of the file, let's just launch it.",
        ]);
        assert_eq!(got, Vec::<(String, String)>::new());
    }

    #[test]
    fn commands_run_in_two_sessions_are_candidates_and_looking_around_is_not() {
        let this: Vec<String> = [
            "cd /repo && uv run   pyright",
            "ls -la",
            "git status",
            "uv run pytest -m 'not browser'",
            "make deploy",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let earlier = vec![
            ("s0".to_string(), "uv run pyright".to_string()),
            ("s1".to_string(), "uv run pyright".to_string()),
            ("s0".to_string(), "ls -la".to_string()),
            ("s0".to_string(), "git status".to_string()),
        ];
        let got = repeated_commands(&this, &earlier, Some("/repo"));
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].content, "Sessions here run `uv run pyright`");
        assert_eq!(
            got[0].evidence.as_deref(),
            Some("run successfully in this session and in s0, s1")
        );
        // Git's housekeeping and one-offs are no habit; plumbing variants are one command.
        assert!(command_keys("git commit -m x", None).is_empty());
        assert!(command_keys("python3 /tmp/scratch.py", None).is_empty());
        assert!(command_keys("cat <<EOF > f\nx\nEOF", None).is_empty());
        let this = vec!["uv run pytest -x 2>&1 | tail -20".to_string()];
        let earlier = vec![("s0".to_string(), "cd /repo && uv run pytest -x".to_string())];
        let got = repeated_commands(&this, &earlier, Some("/repo"));
        assert_eq!(got[0].content, "Sessions here run `uv run pytest -x`");
    }

    #[test]
    fn the_same_rule_twice_is_one_candidate() {
        let got = contents(&["Always use pnpm.", "always use pnpm!!"]);
        assert_eq!(got.len(), 1);
    }
}
