//! A password told in prose: "the staging db password is Tr0ub4dor&3".

use std::ops::Range;

use super::assign::{is_name_byte, is_word_byte, read_value, skip};
use super::judge::{is_code, password_like};
use super::literal::{real_literal, repeats_name};
use super::rule::trim_bare;

/// Words that name a secret in prose, and the kind each names.
pub(super) const PROSE_WORDS: &[(&str, &str)] = &[
    ("password", "password"),
    ("passwd", "password"),
    ("passphrase", "password"),
    ("passcode", "password"),
    ("pwd", "password"),
    ("pw", "password"),
    ("api key", "api_key"),
    ("api_key", "api_key"),
    ("api-key", "api_key"),
    ("apikey", "api_key"),
    ("secret key", "secret"),
    ("secret", "secret"),
    ("access token", "token"),
    ("auth token", "token"),
    ("token", "token"),
    ("credentials", "credentials"),
    ("credential", "credentials"),
];

/// Reads `[ \t]+word` (case-insensitive) at `i`; returns the position after it.
pub(super) fn read_word(b: &[u8], i: usize, words: &[&str]) -> Option<usize> {
    let s = skip(b, i, b" \t");
    if s == i {
        return None;
    }
    words.iter().find_map(|w| {
        let e = s + w.len();
        (b.len() >= e
            && b[s..e].eq_ignore_ascii_case(w.as_bytes())
            && b.get(e).is_none_or(|&c| !is_word_byte(c)))
        .then_some(e)
    })
}

/// Reads `[ \t]+<token>` (name characters) at `i`.
pub(super) fn read_token(b: &[u8], i: usize) -> Option<usize> {
    let s = skip(b, i, b" \t");
    let mut e = s;
    while e < b.len() && is_name_byte(b[e]) {
        e += 1;
    }
    (s > i && e > s).then_some(e)
}

/// A secret told in prose: "the staging db password is Tr0ub4dor&3", "password for prod:
/// …", "my API key \"…\"". A bare value must look like a password (letters with digits or
/// symbols); a quoted one need only not be code or a placeholder.
pub(super) fn natural_spans(hay: &str) -> Vec<(Range<usize>, &'static str)> {
    let b = hay.as_bytes();
    let mut spans: Vec<(Range<usize>, &'static str)> = Vec::new();
    // Where a word may start: SIMD searches for their stems in a lowercase copy.
    let lower = hay.to_ascii_lowercase();
    let mut starts: Vec<usize> = [
        "pass", "pw", "api", "secret", "access", "auth", "token", "cred",
    ]
    .iter()
    .flat_map(|stem| memchr::memmem::find_iter(lower.as_bytes(), stem.as_bytes()))
    // (`&token=…` is a query string's: the URL rule judges it.)
    .filter(|&i| i == 0 || !(is_word_byte(b[i - 1]) || matches!(b[i - 1], b'?' | b'&' | b';')))
    .collect();
    starts.sort_unstable();
    let mut next = 0;
    for i in starts {
        if i < next {
            continue;
        }
        let Some((word, kind)) = PROSE_WORDS.iter().find(|(w, _)| {
            b.len() >= i + w.len()
                && b[i..i + w.len()].eq_ignore_ascii_case(w.as_bytes())
                && b.get(i + w.len()).is_none_or(|&c| !is_word_byte(c))
        }) else {
            continue;
        };
        let after = i + word.len();
        // "for [the] staging db": what the secret is for, up to two words.
        let clause = read_word(b, after, &["for", "of", "on", "to", "at"]).and_then(|p| {
            let p = read_word(b, p, &["the", "my", "our", "your"]).unwrap_or(p);
            let p = read_token(b, p)?;
            Some(read_token(b, p).unwrap_or(p))
        });
        let found = [clause, Some(after)].into_iter().flatten().find_map(|p| {
            let sep = read_word(
                b,
                p,
                &["is", "was", "are", "were", "equals", "becomes", "reads"],
            )
            .and_then(|e| (b.get(e).is_some_and(|c| *c == b' ' || *c == b'\t')).then_some(e))
            .or_else(|| {
                let e = read_word(b, p, &["will", "should", "would", "must"])?;
                read_word(b, e, &["be"])
            })
            .or_else(|| {
                let e = read_word(b, p, &["set", "changed", "reset", "updated"])?;
                read_word(b, e, &["to"])
            })
            .or_else(|| {
                let s = skip(b, p, b" \t");
                matches!(b.get(s), Some(b':' | b'=')).then_some(s + 1)
            })
            .or_else(|| (skip(b, p, b" \t") > p).then_some(p))?;
            let sep = read_word(b, sep, &["now"]).unwrap_or(sep);
            let vs = skip(b, sep, b" \t");
            if hay[vs..].starts_with('“') {
                let close = hay[vs + 3..].find('”')?;
                let r = vs + 3..vs + 3 + close;
                return (!hay[r.clone()].contains('\n')).then_some((r, true));
            }
            let (r, quoted, _) = read_value(b, vs)?;
            Some((r, quoted))
        });
        let Some((r, quoted)) = found else {
            continue;
        };
        let r = if quoted { r } else { trim_bare(hay, r) };
        let v = &hay[r.clone()];
        let secret = if quoted {
            !is_code(v, "") && real_literal(v, word)
        } else {
            // `password name=password>` is markup going on, not a value.
            let attribute = v
                .split_once('=')
                .is_some_and(|(k, _)| !k.is_empty() && k.bytes().all(|c| c.is_ascii_alphabetic()));
            password_like(v) && !attribute && !repeats_name(v, word)
        };
        if secret && spans.last().is_none_or(|(p, _)| p.end <= r.start) {
            next = r.end;
            spans.push((r, *kind));
        }
    }
    spans
}
