//! What a rule is and the helpers its checks share over a match's groups: below `kinds`,
//! whose table names the checks, and the families' files, whose checks use them.

use std::ops::Range;

use regex::bytes::Regex;

/// The capture groups of one match, as byte ranges of the text.
pub(super) type Groups = [Option<Range<usize>>];

/// Decides one match of a rule, given its groups and the text: `None` keeps it, else the
/// secret's kind and byte range.
pub(super) type Check = fn(&Groups, &str) -> Option<(&'static str, Range<usize>)>;

/// Finds a rule's secrets without a regex: the rules whose trigger words are common (`key`,
/// `token`) would otherwise compile a large regex in most hooks.
pub(super) type Scan = fn(&str) -> Vec<(Range<usize>, &'static str)>;

pub(super) enum Find {
    /// A regex and the group holding the secret (0: the whole match).
    Regex(&'static str, usize),
    /// A regex whose every match `Check` decides.
    Checked(&'static str, Check),
    Scan(Scan),
}

pub(super) struct Rule {
    pub(super) kind: &'static str,
    /// Lowercase substrings: the rule runs only on text holding one of them…
    pub(super) triggers: &'static [&'static str],
    /// …and, when this is not empty, one of these as well.
    pub(super) also: &'static [&'static str],
    pub(super) find: Find,
}

pub(super) const fn rule(
    kind: &'static str,
    triggers: &'static [&'static str],
    pattern: &'static str,
    group: usize,
) -> Rule {
    Rule {
        kind,
        triggers,
        also: &[],
        find: Find::Regex(pattern, group),
    }
}

pub(super) const fn checked(
    kind: &'static str,
    triggers: &'static [&'static str],
    pattern: &'static str,
    check: Check,
) -> Rule {
    Rule {
        kind,
        triggers,
        also: &[],
        find: Find::Checked(pattern, check),
    }
}

pub(super) const fn scan(kind: &'static str, triggers: &'static [&'static str], f: Scan) -> Rule {
    Rule {
        kind,
        triggers,
        also: &[],
        find: Find::Scan(f),
    }
}

impl Rule {
    pub(super) const fn also(self, also: &'static [&'static str]) -> Rule {
        Rule { also, ..self }
    }
}

/// The text of a group, when it participated and falls on character boundaries (a bytes
/// regex without Unicode could in principle end inside a character).
pub(super) fn group<'t>(g: &Groups, i: usize, hay: &'t str) -> Option<(Range<usize>, &'t str)> {
    let r = g.get(i)?.clone()?;
    let t = hay.get(r.clone())?;
    Some((r, t))
}

/// Trims a bare value's trailing punctuation (`hunter2,` in prose or a list).
pub(super) fn trim_bare(hay: &str, r: Range<usize>) -> Range<usize> {
    let t = hay[r.clone()].trim_end_matches(['.', ',', ';', ':', '!', '?', ')', ']', '}', '>']);
    r.start..r.start + t.len()
}

/// Strips one pair of surrounding quotes: the range inside them, and whether there were any.
pub(super) fn unquote(hay: &str, r: Range<usize>) -> (Range<usize>, bool) {
    let b = &hay.as_bytes()[r.clone()];
    if b.len() >= 2 && (b[0] == b'"' || b[0] == b'\'') && b[b.len() - 1] == b[0] {
        return (r.start + 1..r.end - 1, true);
    }
    (r, false)
}

/// Compiles a static pattern: ASCII only, over bytes.
pub(super) fn compile(pattern: &str) -> Regex {
    regex::bytes::RegexBuilder::new(pattern)
        .unicode(false)
        .build()
        .expect("static pattern")
}
