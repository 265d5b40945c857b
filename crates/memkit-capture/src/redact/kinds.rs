//! The table of kinds: every rule (its kind, the words that trigger it, how it finds the
//! secret) in the order they run, and the machinery that runs them, here rather than in the
//! parent so that `entropy` can run them on decoded base64.

use std::ops::Range;
use std::sync::OnceLock;

use regex::bytes::Regex;

use super::assign::assignment_spans;
use super::commands::{
    AUTH_TUPLE, CLIENT_PASSWORD, CURL_USER, MYSQL, NETRC, flag_spans, literal_check,
    plain_value_check,
};
use super::config::Settings;
use super::keys::{KEY_BLOCK, PUTTY_KEY, hash_spans};
use super::prose::natural_spans;
use super::rule::{Find, Rule, checked, compile, rule, scan};
use super::tokens::{DOPPLER, JWT, Run, SENDGRID, TELEGRAM, VAULT, prefix_spans};
use super::urls::{
    AUTHORIZATION, BASIC, BEARER, DISCORD_WEBHOOK, SLACK_WEBHOOK, URL_PASSWORD, basic_check,
    bearer_check, cookie_spans, header_check, url_check, url_param_spans,
};

/// Words that make a `name = value` name a secret's: the assignment rules' triggers.
pub(super) const NAME_TRIGGERS: &[&str] = &[
    "pass", "pwd", "pw", "secret", "token", "key", "auth", "cred", "cookie",
];

/// The rules, specific before generic: a secret redacted by an earlier rule leaves a marker
/// that later ones skip. The regexes are ASCII-only and compiled without Unicode (a third
/// cheaper), and case-insensitive only where the secret's context is.
pub(super) const RULES: &[Rule] = &[
    rule("private", &["<private>"], r"(?is)<private>.*?</private>", 0),
    rule("private_key", &["private key", "static key"], KEY_BLOCK, 0),
    rule("private_key", &["private-lines:"], PUTTY_KEY, 0),
    rule("jwt", &["eyj"], JWT, 0),
    rule("slack_webhook", &["hooks.slack.com"], SLACK_WEBHOOK, 1),
    rule("discord_webhook", &["/api/webhooks/"], DISCORD_WEBHOOK, 1),
    checked("url_password", &["://"], URL_PASSWORD, url_check).also(&["@"]),
    rule("sendgrid_key", &["sg."], SENDGRID, 0),
    rule("vault_token", &["hvs.", "hvb.", "hvr."], VAULT, 0),
    rule(
        "doppler_token",
        &["dp.pt.", "dp.st.", "dp.sa.", "dp.ct."],
        DOPPLER,
        0,
    ),
    rule("telegram_bot_token", &[":aa"], TELEGRAM, 1),
    scan("password_hash", &["$"], hash_spans),
    checked("basic_auth", &["basic "], BASIC, basic_check).also(&["auth"]),
    checked("bearer", &["bearer"], BEARER, bearer_check),
    checked(
        "authorization",
        &["authorization"],
        AUTHORIZATION,
        header_check,
    ),
    scan("cookie", &["cookie"], cookie_spans),
    scan("url_secret", &["?", "&", ";"], url_param_spans),
    rule("password", &["mysql", "mariadb"], MYSQL, 1).also(&[" -p"]),
    checked(
        "password",
        &[
            "sshpass",
            "redis-cli",
            "mongo",
            "docker login",
            "storepass",
            "keypass",
            "pass:",
            "htpasswd",
        ],
        CLIENT_PASSWORD,
        plain_value_check,
    ),
    checked(
        "password",
        &[" -u", "--user", "--proxy-user"],
        CURL_USER,
        plain_value_check,
    )
    .also(&["curl", "wget", "http", "xh "]),
    checked(
        "password",
        &["machine", "default"],
        NETRC,
        plain_value_check,
    )
    .also(&["password"]),
    checked(
        "password",
        &["auth=(", "auth = (", "auth("],
        AUTH_TUPLE,
        literal_check,
    ),
    // `--password VALUE`, `--api-key VALUE`.
    scan("password", NAME_TRIGGERS, flag_spans).also(&["--"]),
    // `name = value`, `name: value`, `"name": "value"`, `name := value`, `name => value`,
    // `name == value` (a comparison shows the value too), escaped JSON included.
    scan("password", NAME_TRIGGERS, assignment_spans).also(&["=", ":"]),
    // A secret told in prose: "the staging db password is Tr0ub4dor&3", "API key: …".
    scan("password", NAME_TRIGGERS, natural_spans),
];

pub(super) struct Compiled {
    /// Every distinct trigger of two bytes or more (lowercase), and of one byte.
    finders: Vec<memchr::memmem::Finder<'static>>,
    bytes: Vec<u8>,
    /// Each rule's `triggers` and `also`, as indexes into `finders` then `bytes`.
    any: Vec<Vec<usize>>,
    all: Vec<Vec<usize>>,
    /// Length of the longest trigger.
    longest: usize,
    regexes: Vec<OnceLock<Regex>>,
}

pub(super) fn compiled() -> &'static Compiled {
    static C: OnceLock<Compiled> = OnceLock::new();
    C.get_or_init(|| {
        let mut words: Vec<&'static str> = Vec::new();
        let mut bytes: Vec<u8> = Vec::new();
        let mut index = |list: &'static [&'static str]| -> Vec<usize> {
            list.iter()
                .map(|t| {
                    debug_assert_eq!(*t, t.to_ascii_lowercase(), "triggers are lowercase");
                    if let [b] = t.as_bytes() {
                        return 1 << 16
                            | bytes.iter().position(|x| x == b).unwrap_or_else(|| {
                                bytes.push(*b);
                                bytes.len() - 1
                            });
                    }
                    words.iter().position(|w| w == t).unwrap_or_else(|| {
                        words.push(t);
                        words.len() - 1
                    })
                })
                .collect()
        };
        let any = RULES.iter().map(|r| index(r.triggers)).collect();
        let all = RULES.iter().map(|r| index(r.also)).collect();
        Compiled {
            finders: words
                .iter()
                .map(|w| memchr::memmem::Finder::new(w.as_bytes()).into_owned())
                .collect(),
            longest: words.iter().map(|w| w.len()).max().unwrap_or(1),
            bytes,
            any,
            all,
            regexes: RULES.iter().map(|_| OnceLock::new()).collect(),
        }
    })
}

/// Which rules have their triggers in `text`, ignoring ASCII case.
///
/// One SIMD substring search per distinct trigger (memchr for one byte) over a lowercased
/// copy. Every hook pays for the set-up, and an Aho-Corasick automaton costs more to build
/// (0.37M instructions for the NFA, 1M for the DFA) than this takes on a 5 KB payload, then
/// scans 1 MB 4-10x slower; a bit table of byte pairs costs 40 instructions a byte. The copy is
/// made a window at a time (windows overlap by a trigger's length) so a 50 MB response needs
/// no second 50 MB.
pub(super) fn triggered(c: &Compiled, text: &str) -> [bool; RULES.len()] {
    const WINDOW: usize = 64 * 1024;
    let b = text.as_bytes();
    let mut found = vec![false; c.finders.len()];
    let byte_found: Vec<bool> = c
        .bytes
        .iter()
        .map(|x| memchr::memchr(*x, b).is_some())
        .collect();
    let mut lower = Vec::with_capacity(WINDOW.min(b.len()));
    let mut start = 0;
    loop {
        let end = (start + WINDOW).min(b.len());
        lower.clear();
        lower.extend(b[start..end].iter().map(u8::to_ascii_lowercase));
        for (f, hit) in c.finders.iter().zip(found.iter_mut()) {
            *hit = *hit || f.find(&lower).is_some();
        }
        if end == b.len() {
            break;
        }
        start = end + 1 - c.longest;
    }
    let is = |t: &usize| {
        if *t >= 1 << 16 {
            byte_found[*t - (1 << 16)]
        } else {
            found[*t]
        }
    };
    let mut hit = [false; RULES.len()];
    for (r, h) in hit.iter_mut().enumerate() {
        *h = c.any[r].iter().any(is) && (c.all[r].is_empty() || c.all[r].iter().any(is));
    }
    hit
}

/// The spans one rule redacts in `text`.
pub(super) fn rule_matches(i: usize, text: &str) -> Vec<(Range<usize>, &'static str)> {
    let rule = &RULES[i];
    let (pattern, group, check) = match rule.find {
        Find::Scan(f) => return f(text),
        Find::Regex(p, g) => (p, g, None),
        Find::Checked(p, c) => (p, 0, Some(c)),
    };
    let re = compiled().regexes[i].get_or_init(|| compile(pattern));
    let mut groups: Vec<Option<Range<usize>>> = Vec::new();
    re.captures_iter(text.as_bytes())
        .filter_map(|c| {
            groups.clear();
            groups.extend(c.iter().map(|m| m.map(|m| m.range())));
            match check {
                Some(f) => f(&groups, text),
                None => groups.get(group)?.clone().map(|r| (rule.kind, r)),
            }
            .map(|(kind, r)| (r, kind))
        })
        .collect()
}

pub(super) fn marker(kind: &str) -> String {
    format!("[REDACTED:{kind}]")
}

/// Replaces the given byte ranges (sorted, not overlapping) of `text` with markers.
pub(super) fn splice(text: &str, spans: &[(Range<usize>, &str)]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (r, kind) in spans {
        out.push_str(&text[last..r.start]);
        out.push_str(&marker(kind));
        last = r.end;
    }
    out.push_str(&text[last..]);
    out
}

/// Keeps the spans that are on character boundaries, in order, apart, and not allowed.
fn keep_spans<'k>(
    text: &str,
    s: &Settings,
    found: impl IntoIterator<Item = (Range<usize>, &'k str)>,
) -> Vec<(Range<usize>, &'k str)> {
    let mut spans: Vec<(Range<usize>, &str)> = Vec::new();
    for (r, kind) in found {
        let Some(secret) = text.get(r.clone()) else {
            continue;
        };
        if r.is_empty() || spans.last().is_some_and(|(p, _)| p.end > r.start) || s.allowed(secret) {
            continue;
        }
        spans.push((r, kind));
    }
    spans
}

/// Layers 1 and 2 and the configured patterns; `None` when nothing was found.
pub(super) fn redact_rules(text: &str, s: &Settings, runs: &[Run]) -> Option<String> {
    let mut out: Option<String> = None;
    let spans = keep_spans(text, s, prefix_spans(text, runs));
    if !spans.is_empty() {
        out = Some(splice(text, &spans));
    }
    let hit = triggered(compiled(), text);
    for i in (0..RULES.len()).filter(|i| hit[*i]) {
        let cur = out.as_deref().unwrap_or(text);
        let spans = keep_spans(cur, s, rule_matches(i, cur));
        if !spans.is_empty() {
            out = Some(splice(cur, &spans));
        }
    }
    for (kind, re) in &s.patterns {
        let cur = out.as_deref().unwrap_or(text);
        let found = re.captures_iter(cur).filter_map(|c| {
            c.name("secret")
                .or_else(|| c.get(0))
                .map(|m| (m.range(), kind.as_str()))
        });
        let spans = keep_spans(cur, s, found);
        if !spans.is_empty() {
            out = Some(splice(cur, &spans));
        }
    }
    out
}
