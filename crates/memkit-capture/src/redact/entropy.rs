//! Layer 4: runs of token characters that look random, judged whole or, in a path, part by
//! part.

use std::ops::Range;

use super::config::{Settings, settings};
use super::judge::{base64_decode, entropy, word_like};
use super::kinds::redact_rules;
use super::tokens::{CLASS, ID_PREFIXES, Run, long_runs};
use super::urls::url_hosts;

/// Share of the characters in words: a run of three or more lowercase letters, with the
/// capital before it.
pub(super) fn word_share(b: &[u8]) -> f64 {
    let mut words = 0;
    let mut i = 0;
    while i < b.len() {
        if !b[i].is_ascii_lowercase() {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && b[i].is_ascii_lowercase() {
            i += 1;
        }
        if i - start >= 3 {
            words += i - start + usize::from(start > 0 && b[start - 1].is_ascii_uppercase());
        }
    }
    words as f64 / b.len() as f64
}

/// Whether one segment (no structure left in it) is a random secret.
pub(super) fn random_segment(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 20 {
        return false;
    }
    let mask = b.iter().fold(0, |m, &c| m | CLASS[c as usize]);
    if mask & 7 != 7 || b.iter().all(|c| c.is_ascii_hexdigit() || *c == b'-') {
        return false;
    }
    // camelCase words (`getUTF8StringFromBase64Buffer2`): most letters in runs of three or
    // more lowercase letters; a random string has 17% there (55% at the 99th percentile for
    // n = 28).
    if word_share(b) >= 0.55 {
        return false;
    }
    // A random string over a 62-64 letter alphabet has about log2(min(n, 64)) bits per
    // character (0.84 of it at the 1st percentile for n = 20) and changes character class
    // at 60% of positions (37% at the 1st percentile); words and camelCase do neither.
    let n = b.len().min(64) as f64;
    if entropy(b) < 0.8 * n.log2() {
        return false;
    }
    let switches = b
        .windows(2)
        .filter(|w| CLASS[w[0] as usize] != CLASS[w[1] as usize])
        .count();
    if (switches as f64) < 0.35 * (b.len() - 1) as f64 {
        return false;
    }
    // Base64 of plain text (an encoded message, a JWT header) is kept unless the text hides a
    // secret; a key's bytes are not text.
    if b.len() <= 64 * 1024
        && let Some(bytes) = base64_decode(s)
        && let Ok(decoded) = std::str::from_utf8(&bytes)
        && !decoded.is_empty()
        && decoded
            .chars()
            .all(|c| !c.is_control() || c.is_ascii_whitespace())
    {
        return redact_rules(decoded, settings(), &long_runs(decoded)).is_some();
    }
    true
}

/// A path component or slug piece made of words: `claude-code-log`, `Users`, `GDrive`.
pub(super) fn wordy(c: &str) -> bool {
    let c = c.trim_end_matches('=');
    !c.is_empty()
        && c.split(['-', '_'])
            .all(|p| word_like(p) && p.bytes().filter(u8::is_ascii_alphabetic).count() >= 3)
}

/// Random parts of one `/`-free piece. A slug (`attio-mcp-server-3f2a…`: half its characters
/// in words, hex or numbers) is judged by its parts, so the hash in it stays; anything else
/// (a base64url token, whose alphabet has `-` and `_`) whole.
pub(super) fn judge_piece(
    p: &str,
    at: usize,
    s: &Settings,
    spans: &mut Vec<(Range<usize>, &'static str)>,
) {
    if p.len() < 20 || ID_PREFIXES.iter().any(|x| p.starts_with(x)) || s.allowed(p) {
        return;
    }
    let structure: usize = p
        .split(['-', '_'])
        .filter(|x| {
            let x = x.trim_end_matches('=');
            (word_like(x) && x.bytes().filter(u8::is_ascii_alphabetic).count() >= 3)
                || (x.len() >= 6 && x.bytes().all(|c| c.is_ascii_hexdigit()))
                || x.bytes().all(|c| c.is_ascii_digit())
        })
        .map(str::len)
        .sum();
    if structure * 2 < p.len() {
        if random_segment(p) {
            spans.push((at..at + p.len(), "high_entropy"));
        }
        return;
    }
    let mut off = at;
    for x in p.split(['-', '_']) {
        if random_segment(x) && !s.allowed(x) {
            spans.push((off..off + x.len(), "high_entropy"));
        }
        off += x.len() + 1;
    }
}

/// A public value in a place that says so: a Subresource Integrity hash (`sha384-…` in an
/// `integrity` attribute or a lockfile), a go.sum line's `h1:…`, an HTTP Digest challenge's
/// `nonce="…"` and `opaque="…"`.
pub(super) fn public_hash(text: &str, start: usize) -> bool {
    let rest = &text[start..];
    let before = &text[..start];
    ["sha1-", "sha256-", "sha384-", "sha512-"]
        .iter()
        .any(|p| rest.starts_with(p))
        || ["h1:", "nonce=\"", "opaque=\""]
            .iter()
            .any(|p| before.ends_with(p))
}

/// Layer 4: random-looking runs. A run with two words between its `/` (`/Users/bob/…`,
/// `github.com/org/repo/raw/<sha>`) or an id in them is a path: its components are judged
/// one by one, so the UUID or SHA in a path stays. Otherwise the `/` is base64's and the run
/// is judged whole.
pub(super) fn entropy_spans(
    text: &str,
    s: &Settings,
    runs: &[Run],
) -> Vec<(Range<usize>, &'static str)> {
    let mut spans = Vec::new();
    let hosts = if runs.iter().any(|r| r.1 - r.0 >= 20) && text.contains("://") {
        url_hosts(text)
    } else {
        Vec::new()
    };
    for &(start, end, mask) in runs {
        if end - start < 20 || mask & 7 != 7 || public_hash(text, start) {
            continue;
        }
        // A URL's host is never a secret: what follows it is its path.
        let host = hosts.iter().find(|h| h.start < end && start < h.end);
        let start = host.map_or(start, |h| start.max(h.end));
        if start >= end {
            continue;
        }
        let run = &text[start..end];
        let trimmed = run.trim_start_matches(['/', '-', '_', '+']);
        let start = start + (run.len() - trimmed.len());
        let run = trimmed.trim_end_matches(['/', '-', '_', '+']);
        if run.is_empty() || s.allowed(run) {
            continue;
        }
        if !run.contains('/') {
            judge_piece(run, start, s, &mut spans);
            continue;
        }
        // (A base64 blob longer than any path has such components by chance.)
        let path = host.is_some()
            || run.len() <= 512 && run.split('/').filter(|c| wordy(c)).nth(1).is_some()
            || run
                .split('/')
                .any(|c| ID_PREFIXES.iter().any(|x| c.starts_with(x)));
        if !path {
            if random_segment(run) {
                spans.push((start..start + run.len(), "high_entropy"));
            }
            continue;
        }
        let mut at = start;
        for c in run.split('/') {
            judge_piece(c, at, s, &mut spans);
            at += c.len() + 1;
        }
    }
    spans
}
