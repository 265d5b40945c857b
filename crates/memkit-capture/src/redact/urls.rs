//! Credentials in URLs (`user:pass@`, `?sig=…`, webhook paths) and in headers
//! (`Authorization`, `Basic`, `Bearer`, `Cookie`).

use std::ops::Range;

use super::judge::{
    Strength, base64_decode, classify_name, is_code, is_placeholder, is_prose, looks_random,
};
use super::literal::{real_literal, stand_in};
use super::rule::{Groups, compile, group};
use super::tokens::{long_runs, prefix_spans};

/// The secret path of a Slack webhook.
pub(super) const SLACK_WEBHOOK: &str =
    r"(?i)hooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9/_\-]+)";

/// The token of a Discord webhook.
pub(super) const DISCORD_WEBHOOK: &str =
    r"(?i)discord(?:app)?\.com/api/webhooks/[0-9]+/([A-Za-z0-9_\-]+)";

/// `scheme://user:password@host`: the user and the password.
pub(super) const URL_PASSWORD: &str =
    r#"(?i)\b[a-z][a-z0-9+.\-]{1,30}://([^\s:/?#@"'<>\[\]]*):([^\s/?#"'<>]+)@"#;

/// `Basic <base64>` (an Authorization header's value).
pub(super) const BASIC: &str = r"(?i)\bbasic[ \t]+([A-Za-z0-9+/]{6,}={0,2})";

/// `Bearer <token>`.
pub(super) const BEARER: &str = r"(?i)\bbearer[ \t]+([A-Za-z0-9\-._~+/]{8,}=*)";

/// An Authorization header, in any quoting.
pub(super) const AUTHORIZATION: &str =
    r#"(?i)\b(?:proxy-)?authorization["'\\]*[ \t]*[:=][ \t]*["'\\]*([^\r\n"'\\]+)"#;

/// A Cookie or Set-Cookie header.
pub(super) const COOKIE: &str = r#"(?i)\b(?:set-)?cookie["'\\]*[ \t]*:[ \t]*["'\\]*([^\r\n"'\\]+)"#;

/// `%40` and the like decoded, for judging a URL's part (`a%20secret` is `a secret`).
fn percent_decoded(v: &str) -> String {
    let b = v.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (
            b[i],
            b.get(i + 1).copied().and_then(hex),
            b.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The password of `scheme://user:password@host`, unless it stands for one
/// (`user:password@`, `postgres:postgres@`, `{}:{}@`, `test:pass@`).
pub(super) fn url_check(g: &Groups, hay: &str) -> Option<(&'static str, Range<usize>)> {
    let (r, v) = group(g, 2, hay)?;
    let user = group(g, 1, hay).map_or("", |(_, u)| u);
    let pw = percent_decoded(v);
    let word = pw.bytes().all(|c| c.is_ascii_alphabetic()) && !looks_random(&pw);
    (!(stand_in(&pw, "password") || word || pw == user)).then_some(("url_password", r))
}

/// `Basic <base64 of user:password>`, unless the password is a test value (`user:pass`).
pub(super) fn basic_check(g: &Groups, hay: &str) -> Option<(&'static str, Range<usize>)> {
    let (r, v) = group(g, 1, hay)?;
    let bytes = base64_decode(v)?;
    let text = std::str::from_utf8(&bytes).ok()?;
    let (user, pw) = text.split_once(':')?;
    if text.chars().any(char::is_control) {
        return None;
    }
    // An API key sent as the user with no password (`sk_live_…:`).
    let secret = if pw.is_empty() { user } else { pw };
    let known = !prefix_spans(secret, &long_runs(secret)).is_empty();
    (known || real_literal(secret, "password")).then_some(("basic_auth", r))
}

/// A header's credential: digits, mixed case or length (not "Bearer authentication"), and
/// not a stand-in (`valid_token`, `test-token-123`) or code.
fn credential(v: &str) -> bool {
    let b = v.as_bytes();
    let tokenish = b.iter().any(u8::is_ascii_digit)
        || (b.iter().any(u8::is_ascii_lowercase) && b.iter().any(u8::is_ascii_uppercase))
        || v.len() >= 24;
    let words = v
        .split(['_', '-', '.'])
        .all(|w| w.bytes().all(|c| c.is_ascii_alphabetic()));
    tokenish
        && !words
        && !v.contains(char::is_whitespace)
        && !stand_in(v, "token")
        && !is_code(v, "")
        && !v.starts_with(['{', '<', '[', '(', '$', '#', '%'])
}

pub(super) fn bearer_check(g: &Groups, hay: &str) -> Option<(&'static str, Range<usize>)> {
    let (r, v) = group(g, 1, hay)?;
    credential(v).then_some(("bearer", r))
}

/// The credential of an Authorization header: the value, or what follows its scheme
/// (`Token 9f…`); the scheme stays.
pub(super) fn header_check(g: &Groups, hay: &str) -> Option<(&'static str, Range<usize>)> {
    let (r, v) = group(g, 1, hay)?;
    let v = v.trim_end();
    if v.len() < 4 || is_placeholder(v) || is_code(v, "") || is_prose(v) {
        return None;
    }
    let words: Vec<&str> = v.split_whitespace().collect();
    let cred = match words.as_slice() {
        [one] => one,
        // Basic's credentials are the basic_auth rule's to judge.
        [scheme, _] if scheme.eq_ignore_ascii_case("basic") => return None,
        [scheme, cred]
            if scheme
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'-') =>
        {
            cred
        }
        _ => return None,
    };
    let cred = cred.trim_end_matches([',', ';']);
    let at = r.start + (cred.as_ptr() as usize - v.as_ptr() as usize);
    credential(cred).then_some(("authorization", at..at + cred.len()))
}

/// The values of a Cookie header's pairs (`sessionid=…; theme=dark`), each judged as a
/// credential; a Set-Cookie's first pair only (the rest are its attributes).
pub(super) fn cookie_spans(hay: &str) -> Vec<(Range<usize>, &'static str)> {
    static RE: std::sync::OnceLock<regex::bytes::Regex> = std::sync::OnceLock::new();
    let re = RE.get_or_init(|| compile(COOKIE));
    let mut spans = Vec::new();
    for c in re.captures_iter(hay.as_bytes()) {
        let g: Vec<Option<Range<usize>>> = c.iter().map(|m| m.map(|m| m.range())).collect();
        let (Some(whole), Some((r, v))) = (c.get(0), group(&g, 1, hay)) else {
            continue;
        };
        let set = hay[whole.start()..r.start]
            .to_ascii_lowercase()
            .starts_with("set-");
        let mut at = r.start;
        for pair in v.split(';').take(if set { 1 } else { usize::MAX }) {
            let lead = pair.len() - pair.trim_start().len();
            let p = pair.trim();
            let (name, value, off) = match p.split_once('=') {
                Some((n, val)) => (n.trim(), val.trim(), p.len() - val.trim_start().len()),
                None => ("cookie", p, 0),
            };
            let value = value.trim_matches('"');
            let start = at + lead + off + usize::from(p[off..].starts_with('"'));
            if !value.is_empty() && credential(value) && !stand_in(value, name) {
                spans.push((start..start + value.len(), "cookie"));
            }
            at += pair.len() + 1;
        }
    }
    spans
}

/// Query parameters that hold secrets; those whose name only may (`code`, `key`, `session`)
/// when their value looks random.
pub(super) const URL_SECRET_PARAMS: &[&str] = &[
    "sig",
    "signature",
    "x-amz-signature",
    "x-amz-credential",
    "x-amz-security-token",
    "x-goog-signature",
    "x-goog-credential",
    "credential",
    "token",
    "access_token",
    "refresh_token",
    "id_token",
    "api_key",
    "apikey",
    "secret",
    "client_secret",
    "password",
    "passwd",
    "pwd",
    "code",
    "key",
    "auth",
    "session",
    "sessionid",
    "sid",
];

/// `?sig=…`, `&access_token=…`, `;sessionid=…` in URLs and query strings.
pub(super) fn url_param_spans(hay: &str) -> Vec<(Range<usize>, &'static str)> {
    let b = hay.as_bytes();
    let mut spans = Vec::new();
    for at in memchr::memchr3_iter(b'?', b'&', b';', b) {
        let ns = at + 1;
        let ne = ns
            + b[ns..]
                .iter()
                .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-'))
                .count();
        if ne == ns || b.get(ne) != Some(&b'=') {
            continue;
        }
        let name = hay[ns..ne].to_ascii_lowercase();
        if !URL_SECRET_PARAMS.contains(&name.as_str()) {
            continue;
        }
        let vs = ne + 1;
        let ve = vs
            + b[vs..]
                .iter()
                .take_while(|c| {
                    !c.is_ascii_whitespace()
                        && !matches!(c, b'&' | b';' | b'#' | b'\'' | b'"' | b'<' | b'>')
                })
                .count();
        let v = &hay[vs..ve];
        if v.is_empty() || is_placeholder(v) {
            continue;
        }
        let weak = matches!(
            name.as_str(),
            "code" | "key" | "session" | "sid" | "auth" | "sessionid"
        );
        if weak && !looks_random(v) {
            continue;
        }
        // `?token=hunter2`, `&password=secret` in an example; a signature is always the URL's.
        let signed = name.contains("sig") || name.starts_with("x-");
        if !weak && !signed && stand_in(&percent_decoded(v), &name) {
            continue;
        }
        // `;Password=` in a connection string is a password; a signature is a URL's secret.
        let kind = match classify_name(&name) {
            Some((Strength::Strong, kind)) => kind,
            _ => "url_secret",
        };
        spans.push((vs..ve, kind));
    }
    spans
}

/// Byte ranges of the URL hosts in `text`: after `scheme://` and any userinfo, up to the port
/// or path. A redaction never cuts one.
pub fn url_hosts(text: &str) -> Vec<Range<usize>> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    for at in memchr::memmem::find_iter(b, b"://") {
        let start = at + 3;
        let end = start
            + b[start..]
                .iter()
                .position(|c| c.is_ascii_whitespace() || b"/?#\"'<>`()[]{}\\,;".contains(c))
                .unwrap_or(b.len() - start);
        let host_start = start + text[start..end].rfind('@').map_or(0, |p| p + 1);
        let host_end = host_start
            + text[host_start..end]
                .rfind(':')
                .filter(|p| {
                    text[host_start + p + 1..end]
                        .bytes()
                        .all(|c| c.is_ascii_digit())
                })
                .unwrap_or(end - host_start);
        if host_end > host_start {
            out.push(host_start..host_end);
        }
    }
    out
}
