//! `name = value` where the name says secret, in code, config, shell and JSON text
//! (`AWS_SECRET_ACCESS_KEY=`, `"api_key": "…"`, `{"name": "DB_PASSWORD", "value": …}`).

use std::ops::Range;

use super::judge::{
    Strength, classify_name, is_code, is_path_or_url, is_placeholder, is_prose, looks_random,
};
use super::literal::{real_literal, repeats_name};
use super::rule::trim_bare;

/// A value after a separator: quoted (`"…"`, `'…'`, `` `…` ``, `\"…\"` in escaped JSON) or
/// bare (up to whitespace or a quote). Returns (value range, quoted, end of what was read).
pub(super) fn read_value(b: &[u8], at: usize) -> Option<(Range<usize>, bool, usize)> {
    let at = skip_inline_tag(b, at);
    let line_end = |from: usize, q: &[u8]| {
        let mut i = from;
        while i < b.len() && b[i] != b'\n' && b[i] != b'\r' {
            if b[i..].starts_with(q) && !(q.len() == 1 && i > from && b[i - 1] == b'\\') {
                return Some(i);
            }
            i += 1;
        }
        None
    };
    match b.get(at)? {
        q @ (b'"' | b'\'' | b'`') => {
            let end = line_end(at + 1, std::slice::from_ref(q))?;
            Some((at + 1..end, true, end + 1))
        }
        b'\\' if b.get(at + 1) == Some(&b'"') => {
            let end = line_end(at + 2, b"\\\"")?;
            Some((at + 2..end, true, end + 2))
        }
        _ => {
            let end = at
                + b[at..]
                    .iter()
                    .enumerate()
                    .position(|(i, c)| {
                        c.is_ascii_whitespace()
                            || matches!(c, b'"' | b'\'' | b'`')
                            || (*c == b'<' && b.get(at + i + 1) == Some(&b'/'))
                    })
                    .unwrap_or(b.len() - at);
            (end > at).then_some((at..end, false, end))
        }
    }
}

/// Past an inline tag that opens a value (`<code>`, `<b>`): the value is inside it.
fn skip_inline_tag(b: &[u8], at: usize) -> usize {
    if b.get(at) != Some(&b'<') {
        return at;
    }
    let name = b[at + 1..]
        .iter()
        .take_while(|c| c.is_ascii_alphabetic())
        .count();
    if (1..=6).contains(&name) && b.get(at + 1 + name) == Some(&b'>') {
        at + name + 2
    } else {
        at
    }
}

pub(super) fn is_name_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-')
}

pub(super) fn is_word_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

pub(super) fn skip(b: &[u8], mut i: usize, set: &[u8]) -> usize {
    while i < b.len() && set.contains(&b[i]) {
        i += 1;
    }
    i
}

/// Whether the value of a secret-named assignment or flag is the secret.
pub(super) fn value_is_secret(
    hay: &str,
    name: &str,
    strength: Strength,
    r: &Range<usize>,
    quoted: bool,
) -> bool {
    let v = &hay[r.clone()];
    if is_placeholder(v) || is_prose(v) {
        return false;
    }
    if quoted {
        // A literal in code: `password='testpassword'` is a test value, not a secret.
        return match strength {
            Strength::Strong => real_literal(v, name),
            Strength::Weak => looks_random(v),
        };
    }
    // Markup (`Password: <input …>`), a list or a call's arguments, an interpolation
    // (`{user.password_hash}`, `#{token}`), not a value.
    if v.len() < 3
        || v.starts_with(['<', '[', '(', '{'])
        || v.contains("${")
        || v.contains("#{")
        || is_code(v, name)
        || repeats_name(v, name)
    {
        return false;
    }
    // A word (`password=secret`, `cookies: RequestsCookieJar`) is code or a stand-in.
    if v.bytes()
        .all(|c| c.is_ascii_alphabetic() || matches!(c, b'_' | b'-' | b'.'))
        && !looks_random(v)
    {
        return false;
    }
    // The working directory (`PWD=/home/me`) is no password.
    let bare_name = name.trim_start_matches('-').to_ascii_lowercase();
    if matches!(bare_name.as_str(), "pwd" | "oldpwd") && is_path_or_url(v) {
        return false;
    }
    // `Authorization: Basic [REDACTED:…]`: the scheme is no secret; the header rules took the
    // rest.
    let after = &hay[r.end..];
    if after.starts_with(" [REDACTED:") {
        return false;
    }
    // "Password: Must be 8 characters": a plain word followed by more words is prose.
    if v.bytes().all(|c| c.is_ascii_alphabetic())
        && after.starts_with(' ')
        && after[1..]
            .bytes()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic())
    {
        return false;
    }
    strength == Strength::Strong || looks_random(v)
}

/// `name = value` and its relatives, found from their separator back to the name.
pub(super) fn assignment_spans(hay: &str) -> Vec<(Range<usize>, &'static str)> {
    let b = hay.as_bytes();
    let mut spans: Vec<(Range<usize>, &'static str)> = Vec::new();
    let mut done = 0;
    for at in memchr::memchr2_iter(b'=', b':', b) {
        if at < done {
            continue;
        }
        let prev = at.checked_sub(1).map(|i| b[i]);
        let next = b.get(at + 1).copied();
        // The separator: `=`, `:`, `:=`, `=>`, `==`, `===`, `!=`; not `::`, `://`, `<=`.
        let (sep_start, mut sep_end) = match (b[at], next) {
            (b':', Some(b'=')) | (b'=', Some(b'>')) => (at, at + 2),
            (b'=', Some(b'=')) => (at, skip(b, at, b"=")),
            (b':', Some(b':' | b'/')) => continue,
            _ => (at, at + 1),
        };
        match prev {
            Some(b'!') if b[at] == b'=' => {}
            Some(b'=' | b':' | b'<' | b'>' | b'!') => continue,
            _ => {}
        }
        let sep_start = if prev == Some(b'!') {
            at - 1
        } else {
            sep_start
        };
        // Back to the name: spaces, `?` (TypeScript's `name?:`), quotes and backslashes.
        let mut ne = sep_start;
        while ne > 0 && matches!(b[ne - 1], b' ' | b'\t') {
            ne -= 1;
        }
        if ne > 0 && b[ne - 1] == b'?' {
            ne -= 1;
            while ne > 0 && matches!(b[ne - 1], b' ' | b'\t') {
                ne -= 1;
            }
        }
        while ne > 0 && matches!(b[ne - 1], b'"' | b'\'' | b'\\') {
            ne -= 1;
        }
        let mut ns = ne;
        while ns > 0 && is_name_byte(b[ns - 1]) {
            ns -= 1;
        }
        // `?token=…`, `&password=…`, `;Password=…`: a query or connection string's, judged by
        // the URL rule.
        if ns == ne || (ns > 0 && matches!(b[ns - 1], b'?' | b'&' | b';') && b[at] == b'=') {
            continue;
        }
        let name = &hay[ns..ne];
        let Some((strength, kind)) = classify_name(name).or_else(|| {
            name.eq_ignore_ascii_case("value")
                .then(|| paired_name(hay, ns))
                .flatten()
        }) else {
            continue;
        };
        // `password: str = "…"`: past a type annotation to its default.
        let mut vs = skip(b, sep_end, b" \t");
        if b[at] == b':' && sep_end == at + 1 {
            let mut i = vs;
            while i < b.len() && (is_name_byte(b[i]) || matches!(b[i], b'[' | b']' | b'|' | b' ')) {
                i += 1;
            }
            if i > vs
                && b[vs].is_ascii_alphabetic()
                && b.get(i) == Some(&b'=')
                && b.get(i + 1) != Some(&b'=')
            {
                sep_end = i + 1;
                vs = skip(b, sep_end, b" \t");
            }
        }
        let Some((r, quoted, end)) = read_value(b, vs) else {
            continue;
        };
        let r = if quoted { r } else { trim_bare(hay, r) };
        if r.is_empty() || spans.last().is_some_and(|(p, _)| p.end > r.start) {
            continue;
        }
        done = end;
        if value_is_secret(hay, name, strength, &r, quoted) {
            spans.push((r, kind));
        }
    }
    spans
}

/// `{"name": "DB_PASSWORD", "value": …}`, `- name: API_TOKEN⏎  value: …` (environment lists,
/// parameter stores) as text: the name a `value` before `at` belongs to, when it says secret.
pub(super) fn paired_name(hay: &str, at: usize) -> Option<(Strength, &'static str)> {
    let mut from = at.saturating_sub(200);
    while !hay.is_char_boundary(from) {
        from += 1;
    }
    let window = &hay[from..at];
    // Not across the end of the object the name was in.
    let window = &window[window.rfind('}').map_or(0, |i| i + 1)..];
    let lower = window.to_ascii_lowercase();
    let b = window.as_bytes();
    let key = ["name", "key"]
        .iter()
        .filter_map(|k| {
            lower
                .match_indices(k)
                .filter(|(i, _)| *i == 0 || !is_word_byte(b[i - 1]))
                .map(|(i, _)| i + k.len())
                .last()
        })
        .max()?;
    let v = skip(b, key, b"\"' \t\\");
    if !matches!(b.get(v), Some(b':' | b'=')) {
        return None;
    }
    let s = skip(b, v + 1, b"\"' \t\\");
    let e = s + b[s..].iter().take_while(|c| is_name_byte(**c)).count();
    classify_name(&window[s..e]).filter(|(st, _)| *st == Strength::Strong)
}
