//! Passwords on command lines: database and service clients, curl's `-u`, .netrc, the
//! BasicAuth constructors and `--password VALUE` flags.

use std::ops::Range;

use super::assign::{read_value, skip, value_is_secret};
use super::judge::{classify_name, is_placeholder};
use super::literal::real_literal;
use super::rule::{Groups, group, trim_bare, unquote};

/// mysql and its tools take the password glued to -p (`-p secret` would be a database name).
pub(super) const MYSQL: &str = r"\b(?i:mysql|mysqldump|mysqladmin|mysqlimport|mysqlsh|mysqlcheck|mariadb|mariadb-dump)\b[^\r\n|;&]*?[ \t]-p([^\s\-][^\s]*)";

/// The password argument of sshpass, redis-cli, the mongo tools, docker login, keytool and
/// openssl's `pass:`, and htpasswd -b.
pub(super) const CLIENT_PASSWORD: &str = r#"(?:\bsshpass[ \t]+-p[ \t]*|\bredis-cli\b[^\r\n|;&]*?[ \t]-a[ \t]+|\b(?i:mongo|mongosh|mongodump|mongorestore|mongoexport|mongoimport)\b[^\r\n|;&]*?[ \t](?:-p|--password)[ \t]+|\bdocker[ \t]+login\b[^\r\n|;&]*?[ \t](?:-p|--password)[ \t]+|[ \t]-(?:src|dest|new)?(?:store|key)pass[ \t]+|-pass(?:in|out)?[ \t]+pass:|\bhtpasswd[ \t]+-[a-zA-Z]*b[a-zA-Z]*[ \t]+[^\s]+[ \t]+[^\s]+[ \t]+)("[^"\r\n]*"|'[^'\r\n]*'|[^\s"']+)"#;

/// `curl -u user:password` and the other HTTP clients' like it.
pub(super) const CURL_USER: &str = r#"\b(?:curl|wget|http|https|xh)\b[^\r\n|;&]*?[ \t](?:-u|--user|--proxy-user|-U)[ \t=]*["']?[^\s:"']*:([^\s"']+)"#;

/// .netrc: `machine h login u password p`, on one line or several.
pub(super) const NETRC: &str = r"(?i)\blogin\s+\S+\s+password\s+(\S+)";

/// requests' `auth=('user', 'pass')` and the BasicAuth constructors.
pub(super) const AUTH_TUPLE: &str = r#"(?i)(?:\bauth[ \t]*=[ \t]*\(|basicauth[ \t]*\(|httpbasicauth[ \t]*\(|digestauth[ \t]*\(|basic_auth[ \t]*\()[ \t]*["'][^"'\r\n]*["'][ \t]*,[ \t]*["']([^"'\r\n]+)["']"#;

/// A command-line password (the last group): anything but a reference to one (`-p"$PASS"`).
pub(super) fn plain_value_check(g: &Groups, hay: &str) -> Option<(&'static str, Range<usize>)> {
    let (r, _) = group(g, g.len() - 1, hay)?;
    let (r, _) = unquote(hay, r);
    let v = hay.get(r.clone())?;
    (!is_placeholder(v)).then_some(("password", r))
}

/// The password of `auth=('user', 'pass')` in code: a literal, judged as one.
pub(super) fn literal_check(g: &Groups, hay: &str) -> Option<(&'static str, Range<usize>)> {
    let (r, v) = group(g, g.len() - 1, hay)?;
    real_literal(v, "password").then_some(("password", r))
}

/// `--password VALUE`, `--api-key "VALUE"` (the `=` form is an assignment).
pub(super) fn flag_spans(hay: &str) -> Vec<(Range<usize>, &'static str)> {
    let b = hay.as_bytes();
    let mut spans = Vec::new();
    for at in memchr::memmem::find_iter(b, b"--") {
        if at > 0 && !matches!(b[at - 1], b' ' | b'\t') && at != 0 {
            continue;
        }
        let ns = at + 2;
        let mut ne = ns;
        while ne < b.len() && (b[ne].is_ascii_alphanumeric() || b[ne] == b'-') {
            ne += 1;
        }
        let Some((strength, kind)) = classify_name(&hay[ns..ne]) else {
            continue;
        };
        let vs = skip(b, ne, b" \t");
        if vs == ne || b.get(vs) == Some(&b'-') {
            continue;
        }
        let Some((r, quoted, _)) = read_value(b, vs) else {
            continue;
        };
        let r = if quoted { r } else { trim_bare(hay, r) };
        if !r.is_empty() && value_is_secret(hay, &hay[ns..ne], strength, &r, quoted) {
            spans.push((r, kind));
        }
    }
    spans
}
