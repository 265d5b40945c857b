//! Learnings: what a project teaches (conventions, gotchas, decisions, dependency notes,
//! patterns), with a confidence that grows when a learning is seen again and falls when it is
//! contradicted. A pure library: candidates come from an LLM ([`prompt`]) or from the user's
//! own words ([`heuristic`]); [`decide`] says what each does to the stored learnings; [`heal`]
//! plans call-graph changes from observations. [`session`] runs it all over the sessions due and
//! writes the outcomes through the store; nothing here prints.

pub mod commands;
pub mod extract;
pub mod heal;
pub mod heuristic;
pub mod manual;
pub mod prompt;
pub mod rules;
pub mod same;
pub mod session;

use memkit_core::store::learnings::{CATEGORIES, Learning};

/// Confidence of a newly inserted learning.
pub const INSERTED: f64 = 0.5;
/// Confidence of a learning typed by hand (never changes).
pub const MANUAL: f64 = 1.0;
/// Merges approach this and never pass it.
pub const CEILING: f64 = 0.95;
/// What a contradiction takes off.
pub const PENALTY: f64 = 0.3;
/// The floor of a contradicted learning; a learning at the floor is inactive.
pub const FLOOR: f64 = 0.1;
/// Candidates whose extraction confidence is under this are skipped.
pub const MIN_EXTRACTION: f64 = 0.3;
/// Cosine at which two learnings are the same (with the configured embedding model).
pub const DUPLICATE_COSINE: f64 = 0.90;

/// Confidence after being seen again: a fifth of the way to the ceiling.
pub fn merged(c: f64) -> f64 {
    round(CEILING.min(c + 0.2 * (CEILING - c)))
}

/// Confidence after being contradicted, and whether the learning stays active.
pub fn contradicted(c: f64) -> (f64, bool) {
    let c = round((c - PENALTY).max(FLOOR));
    (c, c > FLOOR)
}

/// Four decimals: the stored figure is the shown one, and float noise never decides a floor.
fn round(c: f64) -> f64 {
    (c * 10_000.0).round() / 10_000.0
}

/// `s` cut at `n` characters, an ellipsis marking the cut.
pub(crate) fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        return s.to_string();
    }
    let mut c: String = s.chars().take(n).collect();
    c.push('…');
    c
}

/// A category as given (an unknown one is a convention).
pub fn category(s: &str) -> &'static str {
    let s = s.trim().to_ascii_lowercase();
    CATEGORIES
        .iter()
        .find(|c| **c == s || s.starts_with(&c[..c.len() - 1]))
        .copied()
        .unwrap_or("convention")
}

/// A learning proposed by an extractor.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Candidate {
    pub content: String,
    pub category: String,
    /// How sure the extractor is (0–1).
    pub confidence: f64,
    /// The id of the active learning it contradicts.
    pub contradicts: Option<i64>,
    /// What it came from: the user's words, or the model's reason.
    pub evidence: Option<String>,
}

/// What a candidate does to the stored learnings.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// A new learning at [`INSERTED`].
    Insert,
    /// Seen again: `into` gains confidence (unless manual, or already counted for this session).
    Merge {
        into: i64,
    },
    /// `old` loses [`PENALTY`]; the candidate replaces it: the active learning `into` that
    /// already says it (seen again), else a new one.
    Contradict {
        old: i64,
        into: Option<i64>,
    },
    Skip {
        why: String,
    },
}

/// What `c`, found in `session`, does given the project's active learnings. `same` says
/// whether two contents state the same learning (embedding cosine, or [`lexically_same`]).
pub fn decide(
    c: &Candidate,
    active: &[Learning],
    session: &str,
    same: &mut dyn FnMut(&str, &str) -> bool,
) -> Action {
    if c.confidence < MIN_EXTRACTION {
        return Action::Skip {
            why: format!(
                "extraction confidence {:.2} is under {MIN_EXTRACTION}",
                c.confidence
            ),
        };
    }
    // Named by the extractor, or "use A instead of B" after "use B instead of A" (the words
    // coincide, the rule is reversed).
    let old = c
        .contradicts
        .and_then(|id| active.iter().find(|l| l.id == id))
        .or_else(|| active.iter().find(|l| reverses(&c.content, &l.content)));
    if let Some(old) = old {
        if old.is_manual {
            return Action::Skip {
                why: format!(
                    "contradicts {} which was typed by hand (manual learnings are kept as typed)",
                    old.handle
                ),
            };
        }
        let into = active
            .iter()
            .find(|l| {
                l.id != old.id && !reverses(&c.content, &l.content) && same(&l.content, &c.content)
            })
            .map(|l| l.id);
        return Action::Contradict { old: old.id, into };
    }
    if let Some(l) = active
        .iter()
        .find(|l| !reverses(&c.content, &l.content) && same(&l.content, &c.content))
    {
        if l.source_sessions.iter().any(|s| s == session) && !l.is_manual {
            return Action::Skip {
                why: format!("{} was already counted for this session", l.handle),
            };
        }
        return Action::Merge { into: l.id };
    }
    Action::Insert
}

/// `l` seen again in `session`: confidence and count up, the session added. Manual learnings
/// do not change.
pub fn apply_merge(l: &mut Learning, session: &str) {
    if l.is_manual {
        return;
    }
    l.confidence = merged(l.confidence);
    l.times_seen += 1;
    if !l.source_sessions.iter().any(|s| s == session) {
        l.source_sessions.push(session.to_string());
    }
}

/// `l` contradicted by learning `by`: confidence down, inactive at the floor.
pub fn apply_contradiction(l: &mut Learning, by: i64) {
    if l.is_manual {
        return;
    }
    let (c, active) = contradicted(l.confidence);
    l.confidence = c;
    l.is_active = active;
    l.replaced_by = Some(by);
}

/// (preferred, rejected) of a rule such as "use pnpm instead of npm" or "prefer httpx over
/// requests".
pub fn preference(s: &str) -> Option<(String, String)> {
    static RE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"(?i)\b(?:use|prefer|choose|pick)\s+`?([\w.+/-]+)`?,?\s+(?:instead of|rather than|over|not|never)\s+`?([\w.+/-]+)",
        )
        .unwrap()
    });
    let c = RE.captures(s)?;
    Some((c[1].to_lowercase(), c[2].to_lowercase()))
}

/// Whether `a` states the opposite preference of `b` (each prefers what the other rejects).
pub fn reverses(a: &str, b: &str) -> bool {
    match (preference(a), preference(b)) {
        (Some((pa, ra)), Some((pb, rb))) => pa == rb && ra == pb,
        _ => false,
    }
}

/// The words that carry a learning's meaning (lowercase, no stop words).
fn content_words(s: &str) -> std::collections::BTreeSet<String> {
    const STOP: &[&str] = &[
        "the", "a", "an", "to", "of", "in", "on", "for", "and", "or", "is", "are", "be", "it",
        "with", "we", "you", "use", "always", "never", "should", "must", "please", "that", "this",
        "by", "as", "at", "from", "when",
    ];
    s.split(|c: char| !c.is_alphanumeric() && c != '_' && c != '-' && c != '.')
        .map(|w| w.trim_matches('.').to_lowercase())
        .filter(|w| !w.is_empty() && !STOP.contains(&w.as_str()))
        .collect()
}

/// Same learning without a model: the same content words, or nearly (Jaccard ≥ 0.75, so one
/// extra or missing word in a short rule still matches, but a different tool does not).
pub fn lexically_same(a: &str, b: &str) -> bool {
    let (a, b) = (content_words(a), content_words(b));
    if a.is_empty() || b.is_empty() {
        return false;
    }
    let inter = a.intersection(&b).count() as f64;
    let union = a.union(&b).count() as f64;
    inter / union >= 0.75
}

#[cfg(test)]
mod tests {
    use super::*;

    fn learning(id: i64, content: &str, manual: bool) -> Learning {
        Learning {
            id,
            handle: format!("l{id}"),
            project: Some("/p".into()),
            content: content.into(),
            category: "convention".into(),
            confidence: if manual { MANUAL } else { INSERTED },
            times_seen: 1,
            source_sessions: vec!["s0".into()],
            evidence: None,
            is_manual: manual,
            is_active: true,
            replaced_by: None,
            created_at: String::new(),
            updated_at: String::new(),
            origin: None,
        }
    }

    #[test]
    fn repeated_merges_approach_the_ceiling_by_a_fifth_each_time() {
        let mut c = INSERTED;
        let mut seen = vec![c];
        for _ in 0..4 {
            c = merged(c);
            seen.push(c);
        }
        // c + 0.2·(0.95 − c) from 0.5, as the design gives it.
        assert_eq!(seen, [0.5, 0.59, 0.662, 0.7196, 0.7657]);
        for _ in 0..100 {
            c = merged(c);
        }
        assert!(c <= CEILING && c > 0.94, "{c}");
    }

    #[test]
    fn contradiction_takes_0_3_and_deactivates_at_the_floor() {
        assert_eq!(contradicted(0.79), (0.49, true));
        assert_eq!(contradicted(0.5), (0.2, true));
        assert_eq!(contradicted(0.2), (0.1, false));
        assert_eq!(contradicted(0.35), (0.1, false));
        let mut l = learning(1, "use pnpm", false);
        apply_contradiction(&mut l, 2);
        assert_eq!(
            (l.confidence, l.is_active, l.replaced_by),
            (0.2, true, Some(2))
        );
        apply_contradiction(&mut l, 3);
        assert_eq!((l.confidence, l.is_active), (0.1, false));
    }

    #[test]
    fn manual_learnings_never_change() {
        let mut l = learning(1, "use pnpm", true);
        apply_merge(&mut l, "s1");
        apply_contradiction(&mut l, 2);
        assert_eq!(l, learning(1, "use pnpm", true));
        let c = Candidate {
            content: "use npm".into(),
            category: "convention".into(),
            confidence: 0.9,
            contradicts: Some(1),
            evidence: None,
        };
        let act = decide(&c, &[l], "s1", &mut lexically_same);
        assert!(matches!(act, Action::Skip { .. }), "{act:?}");
    }

    #[test]
    fn decisions() {
        let active = vec![
            learning(
                1,
                "Run the tests with uv run pytest -m 'not browser'",
                false,
            ),
            learning(2, "The CI image has no ffmpeg", false),
        ];
        let cand = |content: &str, conf: f64, contradicts| Candidate {
            content: content.into(),
            category: "convention".into(),
            confidence: conf,
            contradicts,
            evidence: None,
        };
        let mut same = lexically_same;
        let d = |c: &Candidate, s: &str, same: &mut dyn FnMut(&str, &str) -> bool| {
            decide(c, &active, s, same)
        };
        assert_eq!(
            d(
                &cand("run tests with uv run pytest -m 'not browser'", 0.8, None),
                "s1",
                &mut same
            ),
            Action::Merge { into: 1 }
        );
        // Counted once per session.
        assert!(matches!(
            d(
                &cand("the CI image has no ffmpeg", 0.8, None),
                "s0",
                &mut same
            ),
            Action::Skip { .. }
        ));
        assert_eq!(
            d(
                &cand("The CI image now has ffmpeg 7", 0.8, Some(2)),
                "s1",
                &mut same
            ),
            Action::Contradict { old: 2, into: None }
        );
        assert!(matches!(
            d(&cand("maybe use black", 0.2, None), "s1", &mut same),
            Action::Skip { .. }
        ));
        assert_eq!(
            d(
                &cand("Run the tests with cargo nextest", 0.8, None),
                "s1",
                &mut same
            ),
            Action::Insert
        );
        // An id that is not an active learning of the project is no contradiction.
        assert_eq!(
            d(
                &cand("Deploy with fly deploy", 0.8, Some(99)),
                "s1",
                &mut same
            ),
            Action::Insert
        );
    }

    #[test]
    fn lexical_sameness_is_about_the_words_that_matter() {
        assert!(lexically_same("Use pnpm, not npm.", "use pnpm not npm"));
        assert!(lexically_same(
            "Always run cargo fmt before committing",
            "run cargo fmt before committing"
        ));
        assert!(!lexically_same("Use pnpm, not npm", "Use yarn, not npm"));
        assert!(!lexically_same("", "use pnpm"));
    }

    #[test]
    fn a_reversed_preference_contradicts_instead_of_merging() {
        assert!(reverses(
            "Use requests instead of httpx",
            "use httpx instead of requests"
        ));
        assert!(reverses("prefer npm over pnpm", "Always use pnpm, not npm"));
        assert!(!reverses(
            "Use httpx instead of requests",
            "use httpx instead of requests"
        ));
        assert!(!reverses("Use uv", "use pip"));
        let active = vec![learning(1, "Use httpx instead of requests", false)];
        let c = Candidate {
            content: "Use requests instead of httpx".into(),
            category: "convention".into(),
            confidence: 0.6,
            contradicts: None,
            evidence: None,
        };
        assert_eq!(
            decide(&c, &active, "s1", &mut lexically_same),
            Action::Contradict { old: 1, into: None }
        );
    }

    #[test]
    fn unknown_categories_are_conventions() {
        assert_eq!(category("Gotcha"), "gotcha");
        assert_eq!(category("dependencies"), "dependency");
        assert_eq!(category("style"), "convention");
    }
}
