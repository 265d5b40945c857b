//! Credentials in URLs (`user:pass@`, `?sig=…`, webhook paths) and in headers
//! (`Authorization`, `Basic`, `Bearer`, `Cookie`).

use super::*;

/// The secret path of a Slack webhook.
pub(super) const SLACK_WEBHOOK: &str =
    r"(?i)hooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9/_\-]+)";

/// The token of a Discord webhook.
pub(super) const DISCORD_WEBHOOK: &str =
    r"(?i)discord(?:app)?\.com/api/webhooks/[0-9]+/([A-Za-z0-9_\-]+)";

/// `scheme://user:password@host`: the password.
pub(super) const URL_PASSWORD: &str =
    r#"(?i)\b[a-z][a-z0-9+.\-]{1,30}://[^\s:/?#@"'<>\[\]]*:([^\s/?#"'<>]+)@"#;

/// `Basic <base64>` (an Authorization header's value).
pub(super) const BASIC: &str = r"(?i)\bbasic[ \t]+([A-Za-z0-9+/]{6,}={0,2})";

/// `Bearer <token>`.
pub(super) const BEARER: &str = r"(?i)\bbearer[ \t]+([A-Za-z0-9\-._~+/]{8,}=*)";

/// An Authorization header, in any quoting.
pub(super) const AUTHORIZATION: &str =
    r#"(?i)\b(?:proxy-)?authorization["'\\]*[ \t]*[:=][ \t]*["'\\]*([^\r\n"'\\]+)"#;

/// A Cookie or Set-Cookie header.
pub(super) const COOKIE: &str = r#"(?i)\b(?:set-)?cookie["'\\]*[ \t]*:[ \t]*["'\\]*([^\r\n"'\\]+)"#;

pub(super) fn url_check(g: &Groups, hay: &str) -> Option<(&'static str, Range<usize>)> {
    let (r, v) = group(g, 1, hay)?;
    (!is_placeholder(v)).then_some(("url_password", r))
}

/// `Basic <base64 of user:password>`.
pub(super) fn basic_check(g: &Groups, hay: &str) -> Option<(&'static str, Range<usize>)> {
    let (r, v) = group(g, 1, hay)?;
    let bytes = base64_decode(v)?;
    let text = std::str::from_utf8(&bytes).ok()?;
    (text.contains(':') && text.chars().all(|c| !c.is_control())).then_some(("basic_auth", r))
}

pub(super) fn bearer_check(g: &Groups, hay: &str) -> Option<(&'static str, Range<usize>)> {
    let (r, v) = group(g, 1, hay)?;
    // "Bearer authentication" is prose; a token has digits, mixed case or length.
    let b = v.as_bytes();
    let tokenish = b.iter().any(u8::is_ascii_digit)
        || (b.iter().any(u8::is_ascii_lowercase) && b.iter().any(u8::is_ascii_uppercase))
        || v.len() >= 24;
    (tokenish && !is_placeholder(v)).then_some(("bearer", r))
}

/// The value of an Authorization or Cookie header: all of it, unless code, a placeholder or
/// prose.
pub(super) fn header_check(g: &Groups, hay: &str) -> Option<(&'static str, Range<usize>)> {
    let (r, v) = group(g, 1, hay)?;
    let v = v.trim_end();
    let mut words = v.split_whitespace();
    let first = words.next().unwrap_or("");
    let second = words.next();
    if v.len() < 4
        || is_placeholder(v)
        || second.is_some_and(is_placeholder)
        || is_code(v, "")
        || is_prose(v)
        || (second.is_none() && first.bytes().all(|c| c.is_ascii_lowercase()))
    {
        return None;
    }
    let (_, whole) = group(g, 0, hay)?;
    let kind = if whole.to_ascii_lowercase().contains("cookie") {
        "cookie"
    } else {
        "authorization"
    };
    Some((kind, r.start..r.start + v.len()))
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
        // `;Password=` in a connection string is a password; a signature is a URL's secret.
        let kind = match classify_name(&name) {
            Some((Strength::Strong, kind)) => kind,
            _ => "url_secret",
        };
        spans.push((vs..ve, kind));
    }
    spans
}
