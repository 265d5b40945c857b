//! What the user said against what the agent did. A stated rule (typed by the user, found in
//! their prompt, or added by hand) outranks a learning inferred from behaviour; command
//! learnings ("Sessions here run `…`") fold into one line of usual commands, each command
//! normalised (output plumbing, the project's own path and `git -C` gone); and a command a rule
//! speaks against ("use X instead of Y", "never Y", "don't Y") is contradicted by that rule.

use std::sync::LazyLock;

use regex::Regex;

use memkit_core::store::learnings::Learning;

pub use crate::commands::{COMMAND_PREFIX, Purpose, command_of, housekeeping, normalise, purpose};

/// Where a learning comes from, in the order the block shows them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Typed by hand, or a rule the user stated in a prompt.
    Rule,
    /// Inferred by a model from what the session did.
    Inferred,
    /// A command seen in two sessions.
    Command,
}

impl Kind {
    pub fn of(l: &Learning) -> Kind {
        if l.is_manual {
            return Kind::Rule;
        }
        if command_of(&l.content).is_some() {
            return Kind::Command;
        }
        // The heuristic quotes the prompt a rule came from; a model gives its reason instead.
        let flat = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        let said = l.evidence.as_deref().is_some_and(|e| {
            flat(e)
                .to_lowercase()
                .contains(&flat(&l.content).to_lowercase())
        });
        if said || crate::heuristic::states_rule(&l.content) {
            Kind::Rule
        } else {
            Kind::Inferred
        }
    }
}

/// A rule's targets: what it says not to use or run ("use tspec instead of cargo" → `cargo`,
/// "never run `git push --force`" → `git push --force`), lowercase.
pub fn rejected(rule: &str) -> Vec<String> {
    static NEVER: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(
            r"(?i)\b(?:never|don'?t|do not|dont|avoid)\s+(?:ever\s+)?(?:(?:run|use|call|invoke|execute|type)\s+)?(?:the\s+)?(?:`([^`]+)`|([\w.+/-]+))",
        )
        .unwrap()
    });
    let mut out: Vec<String> = Vec::new();
    if let Some((_, r)) = crate::preference(rule) {
        out.push(r);
    }
    for c in NEVER.captures_iter(rule) {
        let t = c
            .get(1)
            .or(c.get(2))
            .map(|m| m.as_str().trim().to_lowercase());
        if let Some(t) = t.filter(|t| !t.is_empty() && !out.contains(t)) {
            out.push(t);
        }
    }
    out
}

/// The first of `rules` that speaks against running `cmd` (a normalised command).
pub fn against<'a>(cmd: &str, rules: &[&'a Learning]) -> Option<&'a Learning> {
    let cmd = cmd.to_lowercase();
    // The command itself or, under `uv run`/`npx`/`bunx`-style launchers, what they launch.
    let runs = |target: &str| {
        let hit = |c: &str| c == target || c.starts_with(&format!("{target} "));
        hit(&cmd)
            || ["uv run ", "npx ", "bunx ", "pnpm exec ", "poetry run "]
                .iter()
                .any(|l| cmd.strip_prefix(l).is_some_and(hit))
    };
    rules
        .iter()
        .find(|r| rejected(&r.content).iter().any(|t| runs(t)))
        .copied()
}

/// One command of the folded line.
#[derive(Debug, Clone, PartialEq)]
pub struct Usual {
    pub command: String,
    pub purpose: Purpose,
    /// How often it was seen: the sum of the `times_seen` of the learnings it folds.
    pub uses: i64,
    /// The learnings it folds.
    pub ids: Vec<i64>,
}

/// What the learnings layer shows of a project's active learnings.
#[derive(Debug, Default)]
pub struct Plan<'a> {
    /// Stated rules, then inferred learnings, each in the order given (the store's: manual,
    /// then confidence).
    pub rules: Vec<&'a Learning>,
    pub inferred: Vec<&'a Learning>,
    /// Usual commands, most used purpose first, then most used command.
    pub commands: Vec<Usual>,
    /// (command learning, the rule against it).
    pub contradicted: Vec<(&'a Learning, &'a Learning)>,
    /// Command learnings that are one-offs or git's housekeeping.
    pub dropped: Vec<&'a Learning>,
}

/// Sorts a project's active learnings (store order) into what the block shows. Learnings
/// under `min` confidence are left to `mem-learn list`, except rules.
pub fn plan<'a>(active: &'a [Learning], root: Option<&str>, min: f64) -> Plan<'a> {
    let mut p = Plan::default();
    let mut commands: Vec<&Learning> = Vec::new();
    for l in active {
        match Kind::of(l) {
            Kind::Rule if l.confidence >= min || l.is_manual => p.rules.push(l),
            Kind::Inferred if l.confidence >= min => p.inferred.push(l),
            Kind::Command => commands.push(l),
            _ => {}
        }
    }
    let rules = p.rules.clone();
    for l in commands {
        let cmds: Vec<String> = command_of(&l.content)
            .map(|c| normalise(c, root))
            .unwrap_or_default()
            .into_iter()
            .filter(|c| !housekeeping(c))
            .collect();
        if let Some(r) = cmds.iter().find_map(|c| against(c, &rules)) {
            p.contradicted.push((l, r));
            continue;
        }
        let mut kept = false;
        for c in cmds {
            let Some(purpose) = purpose(&c) else { continue };
            kept = true;
            match p.commands.iter_mut().find(|u| u.command == c) {
                Some(u) => {
                    u.uses += l.times_seen;
                    u.ids.push(l.id);
                }
                None => p.commands.push(Usual {
                    command: c,
                    purpose,
                    uses: l.times_seen,
                    ids: vec![l.id],
                }),
            }
        }
        if !kept {
            p.dropped.push(l);
        }
    }
    let by_purpose = |p: Purpose, all: &[Usual]| -> i64 {
        all.iter().filter(|u| u.purpose == p).map(|u| u.uses).sum()
    };
    let all = p.commands.clone();
    p.commands.sort_by(|a, b| {
        by_purpose(b.purpose, &all)
            .cmp(&by_purpose(a.purpose, &all))
            .then(a.purpose.cmp(&b.purpose))
            .then(b.uses.cmp(&a.uses))
            .then(a.command.cmp(&b.command))
    });
    p
}

/// The folded line's text: `Usual commands: a · b · c`, as many as fit in `chars`.
pub fn usual_line(commands: &[Usual], chars: usize) -> Option<String> {
    let mut line = String::from("Usual commands: ");
    let mut n = 0;
    for u in commands {
        let add = if n == 0 {
            format!("`{}`", u.command)
        } else {
            format!(" · `{}`", u.command)
        };
        if line.chars().count() + add.chars().count() > chars && n > 0 {
            break;
        }
        line.push_str(&add);
        n += 1;
    }
    (n > 0).then_some(line)
}

/// What `mem-learn list` says of a learning beyond its row.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Note {
    pub kind: Kind,
    /// A command learning's commands as the block folds them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<String>,
    /// `l9: Use tspec instead of cargo`: the stated rule a command learning goes against.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contradicted_by: Option<String>,
}

/// A [`Note`] for each of `rows` (any projects), the rules of each learning's own project
/// among `rows` judging its commands.
pub fn notes(rows: &[Learning]) -> Vec<Note> {
    rows.iter()
        .map(|l| {
            let kind = Kind::of(l);
            let commands: Vec<String> = match (kind, command_of(&l.content)) {
                (Kind::Command, Some(c)) => normalise(c, l.project.as_deref()),
                _ => Vec::new(),
            };
            let rules: Vec<&Learning> = rows
                .iter()
                .filter(|r| r.project == l.project && r.is_active && Kind::of(r) == Kind::Rule)
                .collect();
            let contradicted_by = commands
                .iter()
                .find_map(|c| against(c, &rules))
                .map(|r| format!("{}: {}", r.handle, r.content));
            Note {
                kind,
                commands,
                contradicted_by,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn learning(id: i64, content: &str, seen: i64) -> Learning {
        Learning {
            id,
            handle: format!("l{id}"),
            project: Some("/home/u/tspec".into()),
            content: content.into(),
            category: "convention".into(),
            confidence: 0.5,
            times_seen: seen,
            source_sessions: vec![],
            evidence: None,
            is_manual: false,
            is_active: true,
            replaced_by: None,
            created_at: String::new(),
            updated_at: String::new(),
            origin: None,
        }
    }

    #[test]
    fn plumbing_the_projects_path_and_git_c_are_normalised_away() {
        let root = Some("/home/u/tspec");
        let n = |c: &str| normalise(c, root);
        assert_eq!(n("cargo build 2>&1"), ["cargo build"]);
        assert_eq!(n("cargo build 2>&1 | tail -20"), ["cargo build"]);
        assert_eq!(
            n("cargo   test -p tspec 2>&1 | grep -E 'FAIL|ok'"),
            ["cargo test -p tspec"]
        );
        assert_eq!(
            n("cd /home/u/tspec && tspec clippy 2>&1 | head"),
            ["tspec clippy"]
        );
        assert_eq!(
            n("cargo install --path /home/u/tspec 2>&1"),
            ["cargo install --path ."]
        );
        assert_eq!(n("git -C /home/u/tspec status"), ["git status"]);
        assert_eq!(
            n("timeout 120 cargo test > /dev/null 2>&1; echo $?"),
            ["cargo test"]
        );
        assert_eq!(
            n("tspec fmt && tspec clippy"),
            ["tspec fmt", "tspec clippy"]
        );
        // A pipe into a real program is part of the command.
        assert_eq!(
            n("cargo run | python3 plot.py"),
            ["cargo run | python3 plot.py"]
        );
        assert!(n("cat <<EOF\nx\nEOF").is_empty());
    }

    #[test]
    fn purposes_come_from_the_commands_words() {
        assert_eq!(purpose("cargo test -p tspec"), Some(Purpose::Test));
        assert_eq!(
            purpose("uv run pytest -m 'not browser'"),
            Some(Purpose::Test)
        );
        assert_eq!(purpose("uv run pyright"), Some(Purpose::Lint));
        assert_eq!(purpose("tspec fmt --check"), Some(Purpose::Lint));
        assert_eq!(purpose("npm run build"), Some(Purpose::Build));
        assert_eq!(purpose("cargo install --path ."), Some(Purpose::Install));
        assert_eq!(purpose("npm run dev"), Some(Purpose::Run));
        assert_eq!(purpose("python3 scripts/x.py --foo"), None);
    }

    #[test]
    fn rules_name_what_they_reject() {
        assert_eq!(rejected("Use tspec instead of cargo, please"), ["cargo"]);
        assert_eq!(
            rejected("Never run `git push --force`"),
            ["git push --force"]
        );
        assert_eq!(rejected("Don't use npm here"), ["npm"]);
        assert_eq!(
            rejected("Remember that the CI image has no ffmpeg"),
            Vec::<String>::new()
        );
        let rule = learning(1, "Use tspec instead of cargo, please", 1);
        let rules = [&rule];
        assert_eq!(against("cargo build", &rules).map(|r| r.id), Some(1));
        assert_eq!(against("uv run cargo build", &rules).map(|r| r.id), Some(1));
        assert_eq!(against("tspec build", &rules), None);
        assert_eq!(against("cargo-deny check", &rules), None);
    }

    #[test]
    fn commands_fold_into_one_line_and_contradicted_ones_leave_it() {
        let mut rule = learning(9, "Use tspec instead of cargo, please", 1);
        rule.evidence = Some("use tspec instead of cargo, please".into());
        let all = vec![
            rule,
            learning(1, "Sessions here run `cargo build 2>&1`", 12),
            learning(
                2,
                "Sessions here run `tspec test -p tspec 2>&1 | tail -30`",
                5,
            ),
            learning(3, "Sessions here run `tspec test -p tspec`", 4),
            learning(4, "Sessions here run `tspec clippy 2>&1`", 6),
            learning(5, "Sessions here run `git -C /home/u/tspec status`", 9),
            learning(
                6,
                "Sessions here run `tspec install --path /home/u/tspec 2>&1`",
                2,
            ),
            learning(7, "Sessions here run `python3 scratch.py`", 3),
        ];
        let p = plan(&all, Some("/home/u/tspec"), 0.5);
        assert_eq!(p.rules.iter().map(|l| l.id).collect::<Vec<_>>(), [9]);
        assert_eq!(
            p.contradicted
                .iter()
                .map(|(c, r)| (c.id, r.id))
                .collect::<Vec<_>>(),
            [(1, 9)]
        );
        assert_eq!(
            usual_line(&p.commands, 300).unwrap(),
            "Usual commands: `tspec test -p tspec` · `tspec clippy` · `tspec install --path .`"
        );
        assert_eq!(p.commands[0].ids, [2, 3]);
        assert_eq!(p.dropped.iter().map(|l| l.id).collect::<Vec<_>>(), [5, 7]);
        assert_eq!(
            usual_line(&p.commands, 40).unwrap(),
            "Usual commands: `tspec test -p tspec`"
        );
    }
}
