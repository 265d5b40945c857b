//! Secret redaction (ARCHITECTURE.md §9), run on every string before it is stored or sent.
//!
//! Every secret becomes `[REDACTED:<kind>]`. Four layers, in this order:
//! 1. tokens whose prefix names them (`ghp_`, `npm_`, `hf_`, `sk_test_`, `AKIA`…): found in the
//!    same pass over the text's runs of token characters as layer 4;
//! 2. pattern rules for secrets known by their context: key blocks (also without their END
//!    line), credentials in URLs, headers and command lines, `name = value` where the name says
//!    secret (`AWS_SECRET_ACCESS_KEY=`, `SECRET_KEY = '…'`, `--token X`), a password told in
//!    prose ("the db password is Tr0ub4dor&3");
//! 3. in JSON objects ([`redact_value`]), any value under a key that names a secret
//!    (`api_key`, `password`, `token`…), numbers included, and the `value` of a
//!    `{"name": "DB_PASSWORD", "value": …}` pair;
//! 4. a high-entropy scan: a long run that looks random (three character classes, entropy near
//!    a random string's, frequent class changes) and is not a hash, a UUID, an id Claude's API
//!    made (`toolu_…`, `msg_…`), a path or base64 of plain text.
//!
//! A hook has a budget of a few milliseconds, so the regexes are compiled lazily and only run on
//! text that contains one of their literal triggers (plain substring searches find those), and
//! layers 1 and 4 are one byte loop each. config.toml's `[redact]` table adds patterns and an
//! allow-list, installed once per process by [`configure`].

use std::borrow::Cow;
use std::ops::Range;
use std::sync::OnceLock;

use regex::bytes::Regex;
use serde_json::Value;

use memkit_core::config::Config;
use memkit_core::{Error, Result};

/// The capture groups of one match, as byte ranges of the text.
type Groups = [Option<Range<usize>>];

/// Decides one match of a rule, given its groups and the text: `None` keeps it, else the
/// secret's kind and byte range.
type Check = fn(&Groups, &str) -> Option<(&'static str, Range<usize>)>;

/// Finds a rule's secrets without a regex: the rules whose trigger words are common (`key`,
/// `token`) would otherwise compile a large regex in most hooks.
type Scan = fn(&str) -> Vec<(Range<usize>, &'static str)>;

enum Find {
    /// A regex and the group holding the secret (0: the whole match).
    Regex(&'static str, usize),
    /// A regex whose every match `Check` decides.
    Checked(&'static str, Check),
    Scan(Scan),
}

struct Rule {
    kind: &'static str,
    /// Lowercase substrings: the rule runs only on text holding one of them…
    triggers: &'static [&'static str],
    /// …and, when this is not empty, one of these as well.
    also: &'static [&'static str],
    find: Find,
}

const fn rule(
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

const fn checked(
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

const fn scan(kind: &'static str, triggers: &'static [&'static str], f: Scan) -> Rule {
    Rule {
        kind,
        triggers,
        also: &[],
        find: Find::Scan(f),
    }
}

impl Rule {
    const fn also(self, also: &'static [&'static str]) -> Rule {
        Rule { also, ..self }
    }
}

/// Words that make a `name = value` name a secret's: the assignment rules' triggers.
const NAME_TRIGGERS: &[&str] = &[
    "pass", "pwd", "pw", "secret", "token", "key", "auth", "cred", "cookie",
];

/// The rules, specific before generic: a secret redacted by an earlier rule leaves a marker
/// that later ones skip. The regexes are ASCII-only and compiled without Unicode (a third
/// cheaper), and case-insensitive only where the secret's context is.
const RULES: &[Rule] = &[
    rule(
        "private",
        &["<private>"],
        r"(?is)<private>.*?</private>",
        0,
    ),
    // A key block, or what a cut left of one (`head -5 id_rsa`): the base64 and header lines
    // after BEGIN.
    rule(
        "private_key",
        &["private key", "static key"],
        r"(?s)-{4,5} ?BEGIN (?:[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?|OpenVPN Static key V1) ?-{4,5}(?:.*?-{4,5} ?END (?:[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?|OpenVPN Static key V1) ?-{4,5}|(?:(?:\r?\n|(?:\\r)?\\n)[ \t]*(?:[A-Za-z0-9+/=]+|[A-Za-z][A-Za-z0-9-]*: ?[^\r\n\\]*)?)*)",
        0,
    ),
    rule(
        "private_key",
        &["private-lines:"],
        r"Private-Lines: *[0-9]+(?:\r?\n[A-Za-z0-9+/=]+)*",
        0,
    ),
    rule(
        "jwt",
        &["eyj"],
        r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*",
        0,
    ),
    rule(
        "slack_webhook",
        &["hooks.slack.com"],
        r"(?i)hooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9/_\-]+)",
        1,
    ),
    rule(
        "discord_webhook",
        &["/api/webhooks/"],
        r"(?i)discord(?:app)?\.com/api/webhooks/[0-9]+/([A-Za-z0-9_\-]+)",
        1,
    ),
    checked(
        "url_password",
        &["://"],
        r#"(?i)\b[a-z][a-z0-9+.\-]{1,30}://[^\s:/?#@"'<>\[\]]*:([^\s/?#"'<>]+)@"#,
        url_check,
    )
    .also(&["@"]),
    rule(
        "sendgrid_key",
        &["sg."],
        r"\bSG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}",
        0,
    ),
    rule(
        "vault_token",
        &["hvs.", "hvb.", "hvr."],
        r"\bhv[sbr]\.[A-Za-z0-9_\-]{20,}",
        0,
    ),
    rule(
        "doppler_token",
        &["dp.pt.", "dp.st.", "dp.sa.", "dp.ct."],
        r"\bdp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{30,}",
        0,
    ),
    rule(
        "telegram_bot_token",
        &[":aa"],
        r"(?:\b|bot)([0-9]{8,10}:AA[A-Za-z0-9_\-]{30,})",
        1,
    ),
    scan("password_hash", &["$"], hash_spans),
    checked(
        "basic_auth",
        &["basic "],
        r"(?i)\bbasic[ \t]+([A-Za-z0-9+/]{6,}={0,2})",
        basic_check,
    )
    .also(&["auth"]),
    checked(
        "bearer",
        &["bearer"],
        r"(?i)\bbearer[ \t]+([A-Za-z0-9\-._~+/]{8,}=*)",
        bearer_check,
    ),
    checked(
        "authorization",
        &["authorization"],
        r#"(?i)\b(?:proxy-)?authorization["'\\]*[ \t]*[:=][ \t]*["'\\]*([^\r\n"'\\]+)"#,
        header_check,
    ),
    checked(
        "cookie",
        &["cookie"],
        r#"(?i)\b(?:set-)?cookie["'\\]*[ \t]*:[ \t]*["'\\]*([^\r\n"'\\]+)"#,
        header_check,
    ),
    scan("url_secret", &["?", "&", ";"], url_param_spans),
    // mysql takes its password glued to -p (`-p secret` would be a database name).
    rule(
        "password",
        &["mysql", "mariadb"],
        r"\b(?i:mysql|mysqldump|mysqladmin|mysqlimport|mysqlsh|mysqlcheck|mariadb|mariadb-dump)\b[^\r\n|;&]*?[ \t]-p([^\s\-][^\s]*)",
        1,
    )
    .also(&[" -p"]),
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
        r#"(?:\bsshpass[ \t]+-p[ \t]*|\bredis-cli\b[^\r\n|;&]*?[ \t]-a[ \t]+|\b(?i:mongo|mongosh|mongodump|mongorestore|mongoexport|mongoimport)\b[^\r\n|;&]*?[ \t](?:-p|--password)[ \t]+|\bdocker[ \t]+login\b[^\r\n|;&]*?[ \t](?:-p|--password)[ \t]+|[ \t]-(?:src|dest|new)?(?:store|key)pass[ \t]+|-pass(?:in|out)?[ \t]+pass:|\bhtpasswd[ \t]+-[a-zA-Z]*b[a-zA-Z]*[ \t]+[^\s]+[ \t]+[^\s]+[ \t]+)("[^"\r\n]*"|'[^'\r\n]*'|[^\s"']+)"#,
        plain_value_check,
    ),
    checked(
        "password",
        &[" -u", "--user", "--proxy-user"],
        r#"\b(?:curl|wget|http|https|xh)\b[^\r\n|;&]*?[ \t](?:-u|--user|--proxy-user|-U)[ \t=]*["']?[^\s:"']*:([^\s"']+)"#,
        plain_value_check,
    )
    .also(&["curl", "wget", "http", "xh "]),
    // .netrc: `machine h login u password p`, on one line or several.
    checked(
        "password",
        &["machine", "default"],
        r"(?i)\blogin\s+\S+\s+password\s+(\S+)",
        plain_value_check,
    )
    .also(&["password"]),
    // requests' auth=('user', 'pass') and the BasicAuth constructors.
    checked(
        "password",
        &["auth=(", "auth = (", "auth("],
        r#"(?i)(?:\bauth[ \t]*=[ \t]*\(|basicauth[ \t]*\(|httpbasicauth[ \t]*\(|digestauth[ \t]*\(|basic_auth[ \t]*\()[ \t]*["'][^"'\r\n]*["'][ \t]*,[ \t]*["']([^"'\r\n]+)["']"#,
        plain_value_check,
    ),
    // `--password VALUE`, `--api-key VALUE`.
    scan("password", NAME_TRIGGERS, flag_spans).also(&["--"]),
    // `name = value`, `name: value`, `"name": "value"`, `name := value`, `name => value`,
    // `name == value` (a comparison shows the value too), escaped JSON included.
    scan("password", NAME_TRIGGERS, assignment_spans).also(&["=", ":"]),
    // A secret told in prose: "the staging db password is Tr0ub4dor&3", "API key: …".
    scan(
        "password",
        NAME_TRIGGERS,
        natural_spans,
    ),
];

/// Tokens known by their prefix (case-sensitive): prefix, kind, and the least number of
/// characters after it.
const PREFIXES: &[(&str, &str, usize)] = &[
    ("AKIA", "aws_access_key", 16),
    ("ASIA", "aws_access_key", 16),
    ("ghp_", "github_token", 30),
    ("gho_", "github_token", 30),
    ("ghu_", "github_token", 30),
    ("ghs_", "github_token", 30),
    ("ghr_", "github_token", 30),
    ("github_pat_", "github_token", 22),
    ("glpat-", "gitlab_token", 20),
    ("gldt-", "gitlab_token", 20),
    ("glrt-", "gitlab_token", 20),
    ("glptt-", "gitlab_token", 20),
    ("glsoat-", "gitlab_token", 20),
    ("sk-ant-", "anthropic_key", 20),
    ("sk-", "openai_key", 20),
    ("sk_live_", "stripe_key", 10),
    ("sk_test_", "stripe_key", 10),
    ("rk_live_", "stripe_key", 10),
    ("rk_test_", "stripe_key", 10),
    ("pk_live_", "stripe_key", 10),
    ("pk_test_", "stripe_key", 10),
    ("whsec_", "stripe_key", 20),
    ("xoxb-", "slack_token", 10),
    ("xoxp-", "slack_token", 10),
    ("xoxa-", "slack_token", 10),
    ("xoxo-", "slack_token", 10),
    ("xoxs-", "slack_token", 10),
    ("xoxr-", "slack_token", 10),
    ("xoxe-", "slack_token", 10),
    ("xapp-", "slack_token", 10),
    ("AIza", "google_api_key", 30),
    ("GOCSPX-", "google_oauth_secret", 20),
    ("npm_", "npm_token", 30),
    ("hf_", "huggingface_token", 30),
    ("pypi-AgE", "pypi_token", 50),
    ("dop_v1_", "digitalocean_token", 40),
    ("doo_v1_", "digitalocean_token", 40),
    ("dor_v1_", "digitalocean_token", 40),
    ("shpat_", "shopify_token", 32),
    ("shpss_", "shopify_token", 32),
    ("shpca_", "shopify_token", 32),
    ("shppa_", "shopify_token", 32),
    ("dapi", "databricks_token", 32),
    ("AGE-SECRET-KEY-1", "age_secret_key", 50),
    ("key-", "mailgun_key", 32),
    ("lin_api_", "linear_key", 30),
    ("PMAK-", "postman_key", 40),
    ("glsa_", "grafana_token", 30),
    ("glc_", "grafana_token", 30),
    ("ATATT3", "atlassian_token", 50),
];

/// Ids that Claude Code and the model APIs put in payloads and transcripts: random-looking,
/// not secret, and needed (a tool_use_id is the queue's dedup key).
const ID_PREFIXES: &[&str] = &[
    "toolu_",
    "srvtoolu_",
    "msg_",
    "req_",
    "agent_msg_",
    "chatcmpl-",
    "call_",
    "resp_",
    "run_",
    "thread_",
    "asst_",
    "batch_",
];

/// Values that are types, keywords or literals, not secrets (`password: str`, `token = None`).
const KEYWORDS: &[&str] = &[
    "none",
    "null",
    "nil",
    "undefined",
    "true",
    "false",
    "yes",
    "no",
    "on",
    "off",
    "str",
    "string",
    "int",
    "integer",
    "bool",
    "boolean",
    "bytes",
    "number",
    "any",
    "object",
    "optional",
    "option",
    "required",
    "secretstr",
    "char",
    "text",
    "varchar",
    "unknown",
    "never",
    "void",
    "self",
    "this",
    "redacted",
    "hidden",
    "empty",
    "function",
    "func",
    "fn",
    "new",
    "await",
    "return",
];

/// Words after the secret word that keep it the secret (`password_hash`, `secret_key_base`).
const NAME_FILLER: &[&str] = &[
    "value",
    "str",
    "string",
    "b64",
    "base64",
    "hex",
    "raw",
    "plain",
    "text",
    "enc",
    "encoded",
    "hash",
    "confirm",
    "confirmation",
    "base",
];

/// `<word>_key` names that hold a secret whatever the value looks like.
const SECRET_KEY_PREFIXES: &[&str] = &[
    "access",
    "signing",
    "encryption",
    "decryption",
    "master",
    "account",
    "client",
    "session",
    "auth",
    "license",
    "licence",
    "shared",
    "hmac",
    "jwt",
    "app",
    "webhook",
    "ssh",
    "gpg",
    "pgp",
    "deploy",
    "service",
    "admin",
    "root",
    "sas",
    "storage",
    "subscription",
    "consumer",
    "crypto",
    "cipher",
    "aes",
    "rsa",
    "ecdsa",
    "ed25519",
];

/// How sure a name is that its value is a secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Strength {
    /// Any value but code and placeholders is the secret (`password`, `api_key`, `*_token`).
    Strong,
    /// Only a value that looks random (`STRIPE_KEY`, `cache_key`).
    Weak,
}

/// Lowercase words of an identifier: split at non-alphanumerics and camelCase humps.
fn name_words(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if !c.is_ascii_alphanumeric() {
            if !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if c.is_ascii_uppercase() && prev_lower && !cur.is_empty() {
            words.push(std::mem::take(&mut cur));
        }
        cur.push(c.to_ascii_lowercase());
        prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    words
}

/// Whether a name (a variable, a JSON key, a flag) says its value is a secret, and its kind.
fn classify_name(name: &str) -> Option<(Strength, &'static str)> {
    use Strength::*;
    let mut w = name_words(name);
    while w.len() > 1 && w.last().is_some_and(|l| NAME_FILLER.contains(&l.as_str())) {
        w.pop();
    }
    let last = w.last()?.as_str();
    let prev = (w.len() >= 2).then(|| w[w.len() - 2].as_str());
    if last.ends_with("password")
        || last.ends_with("passwd")
        || last.ends_with("passphrase")
        || last == "passcode"
        // `DB_PASS`, `db_pw`, `PWD`; alone `pass` and `pw` are too often the verb ("tests pass:").
        || (matches!(last, "pass" | "pw") && w.len() >= 2)
        || last == "pwd"
    {
        return Some((Strong, "password"));
    }
    if last.ends_with("secret") || last == "secrets" {
        return Some((Strong, "secret"));
    }
    if last.ends_with("apikey") || (last == "key" && prev == Some("api")) {
        return Some((Strong, "api_key"));
    }
    if last.ends_with("token") {
        // A count or a limit of tokens (`max_token`), not one.
        if prev.is_some_and(|p| {
            matches!(
                p,
                "max" | "min" | "num" | "total" | "input" | "output" | "prompt" | "completion"
            )
        }) {
            return None;
        }
        return Some((Strong, "token"));
    }
    if last.ends_with("key") {
        let stem = last.strip_suffix("key").unwrap_or("");
        if stem == "private" || (last == "key" && prev == Some("private")) {
            return Some((Strong, "private_key"));
        }
        if stem == "secret" || w.iter().any(|x| x == "secret") {
            return Some((Strong, "secret"));
        }
        let prefixed = |p: &str| SECRET_KEY_PREFIXES.contains(&p);
        if prefixed(stem) || (last == "key" && prev.is_some_and(prefixed)) {
            return Some((Strong, "secret_key"));
        }
        if last == "key" {
            return Some((Weak, "secret_key"));
        }
        return None;
    }
    if matches!(last, "credential" | "credentials" | "creds") {
        return Some((Strong, "credentials"));
    }
    if last == "authorization" || (last == "auth" && w.len() == 1) {
        return Some((Strong, "authorization"));
    }
    if matches!(last, "cookie" | "cookies") {
        return Some((Strong, "cookie"));
    }
    None
}

/// An empty value, a mask (`****`), a marker, or a reference to the secret rather than the
/// secret itself (`$DB_PASSWORD`, `${TOKEN}`, `%PASS%`, `{{ .token }}`, `<your-key>`).
fn is_placeholder(v: &str) -> bool {
    let t = v.trim();
    t.is_empty()
        || t.contains("[REDACTED:")
        || t.chars()
            .all(|c| matches!(c, '*' | 'x' | 'X' | '•' | '.' | '#' | '-' | '_' | '?'))
        || t.starts_with('$')
        || (t.starts_with('%') && t.ends_with('%'))
        || t.starts_with("{{")
        || (t.starts_with('<') && t.ends_with('>'))
        || KEYWORDS.contains(&t.to_ascii_lowercase().as_str())
        || is_constant_name(t)
}

/// `YOUR_API_KEY`, `API_TOKEN`: the name of a secret (an environment variable, a docs
/// placeholder), not one.
fn is_constant_name(t: &str) -> bool {
    t.len() >= 3
        && t.bytes().all(|c| c.is_ascii_uppercase() || c == b'_')
        && (t.contains('_')
            || ["KEY", "TOKEN", "SECRET", "PASSWORD", "YOUR"]
                .iter()
                .any(|w| t.contains(w)))
}

/// Words of a sentence, not a secret: a label or a message (`"Enter your password"`,
/// `'You do not have permission to perform this action'`). A passphrase has no such words.
fn is_prose(v: &str) -> bool {
    const SMALL: &[&str] = &[
        "the", "a", "an", "to", "your", "you", "is", "not", "be", "of", "and", "or", "must",
        "please", "enter", "for", "with", "this", "that", "in", "on", "at", "are", "was", "will",
        "can", "should", "have", "has", "do", "does", "no", "invalid", "required", "missing",
    ];
    let words: Vec<&str> = v.split_whitespace().collect();
    words.len() >= 3
        && words.iter().any(|w| {
            SMALL.contains(
                &w.trim_matches(|c: char| !c.is_alphanumeric())
                    .to_ascii_lowercase()
                    .as_str(),
            )
        })
}

/// A bare (unquoted) value that is code, not a secret: a call or an index
/// (`get_password()`, `os.environ["X"]`), a member path (`settings.SECRET_KEY`), a keyword or
/// type (`str`, `None`), or a variable named like the secret (`password=password`,
/// `token=api_token`).
fn is_code(v: &str, name: &str) -> bool {
    let v = v.trim_start_matches(['&', '*', '@', '!']);
    let b = v.as_bytes();
    let mut i = 0;
    let mut parts: Vec<&str> = Vec::new();
    while i < b.len() && (b[i].is_ascii_alphabetic() || b[i] == b'_') {
        let start = i;
        while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
            i += 1;
        }
        parts.push(&v[start..i]);
        let rest = &v[i..];
        let sep = ["::", "?.", "->", "."]
            .iter()
            .find(|s| rest.starts_with(**s))
            .map_or(0, |s| s.len());
        if sep == 0 {
            break;
        }
        i += sep;
    }
    let Some(first) = parts.first() else {
        return false;
    };
    let rest = &v[i..];
    if rest.starts_with('(') || rest.starts_with('[') || rest.starts_with("!(") {
        return true;
    }
    if !rest.is_empty() {
        return false;
    }
    if parts.len() >= 2 {
        // `Pa55.word` has digits; `config.db.password` does not.
        return parts
            .iter()
            .all(|p| !p.is_empty() && !p.bytes().any(|c| c.is_ascii_digit()));
    }
    let lower = first.to_ascii_lowercase();
    if KEYWORDS.contains(&lower.as_str()) || lower == name.to_ascii_lowercase() {
        return true;
    }
    let words = name_words(first);
    let names = name_words(name);
    words.len() >= 2
        && (words
            .iter()
            .all(|w| w.bytes().all(|c| c.is_ascii_alphabetic()))
            && (first.contains('_') || words.iter().any(|w| names.contains(w))))
        || words.iter().any(|w| {
            matches!(
                w.as_str(),
                "password" | "passwd" | "secret" | "token" | "apikey" | "credentials"
            )
        }) && words.len() >= 2
}

/// A word of a path, slug or identifier: `Users`, `python3`, `createdAt`, `README`.
fn word_like(s: &str) -> bool {
    let b = s.as_bytes();
    if b.is_empty() {
        return false;
    }
    let digits = b.iter().rev().take_while(|c| c.is_ascii_digit()).count();
    let letters = &b[..b.len() - digits];
    if digits > 4 || letters.is_empty() {
        return false;
    }
    if letters.iter().all(u8::is_ascii_uppercase) {
        return true;
    }
    // Up to two capitals first, then lowercase humps (camelCase): `GDrive`, `createdAt`.
    let lead = letters
        .iter()
        .take_while(|c| c.is_ascii_uppercase())
        .count();
    if lead > 2 || !letters[lead..].first().is_some_and(u8::is_ascii_lowercase) {
        return false;
    }
    let mut run = 0;
    for &c in &letters[lead..] {
        if c.is_ascii_lowercase() {
            run += 1;
        } else if c.is_ascii_uppercase() && run >= 2 {
            run = 0;
        } else {
            return false;
        }
    }
    run >= 1
}

fn is_path_or_url(v: &str) -> bool {
    v.contains("://") || v.starts_with(['/', '~']) || v.starts_with("./") || v.starts_with("../")
}

/// A value that holds a random part rather than words, numbers and hashes (a cache key like
/// `setup-uv-1-x86_64-3a5f…` is none): for names that only may be secrets.
fn looks_random(v: &str) -> bool {
    if v.len() < 8 || is_path_or_url(v) || is_placeholder(v) {
        return false;
    }
    v.split(['_', '-', '.', '/', ':', ' ', ','])
        .map(|s| s.trim_end_matches('='))
        .any(|s| {
            let b = s.as_bytes();
            let has = |f: fn(&u8) -> bool| b.iter().any(f);
            b.len() >= 12
                && !word_like(s)
                && !b.iter().all(u8::is_ascii_hexdigit)
                && has(u8::is_ascii_alphabetic)
                && (has(u8::is_ascii_digit)
                    || (has(u8::is_ascii_lowercase) && has(u8::is_ascii_uppercase)))
        })
}

/// A word told as a password in prose: letters mixed with digits or symbols, not a file name,
/// a path, a version or code.
fn password_like(v: &str) -> bool {
    let n = v.chars().count();
    if !(6..=128).contains(&n) || is_placeholder(v) || is_path_or_url(v) || is_code(v, "") {
        return false;
    }
    let b = v.as_bytes();
    let alpha = b.iter().any(u8::is_ascii_alphabetic);
    let digit = b.iter().any(u8::is_ascii_digit);
    // Not `*`: markdown's bold ("**Token Usage**:").
    let symbol = b.iter().any(|c| b"!@#$%^&+=?~".contains(c));
    if !alpha || !(digit || symbol) {
        return false;
    }
    // A file name (`auth2.py`), a version (`v1.2.3`), or words joined (`user_123`).
    if let Some((stem, ext)) = v.rsplit_once('.')
        && (1..=5).contains(&ext.len())
        && ext.bytes().all(|c| c.is_ascii_alphanumeric())
        && !stem.is_empty()
        && !symbol
    {
        return false;
    }
    let segs = v
        .split(['_', '-', '.', '/'])
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>();
    !(segs.len() >= 2
        && segs
            .iter()
            .all(|s| word_like(s) || s.bytes().all(|c| c.is_ascii_digit())))
}

/// The text of a group, when it participated and falls on character boundaries (a bytes
/// regex without Unicode could in principle end inside a character).
fn group<'t>(g: &Groups, i: usize, hay: &'t str) -> Option<(Range<usize>, &'t str)> {
    let r = g.get(i)?.clone()?;
    let t = hay.get(r.clone())?;
    Some((r, t))
}

/// Trims a bare value's trailing punctuation (`hunter2,` in prose or a list).
fn trim_bare(hay: &str, r: Range<usize>) -> Range<usize> {
    let t = hay[r.clone()].trim_end_matches(['.', ',', ';', ':', '!', '?', ')', ']', '}', '>']);
    r.start..r.start + t.len()
}

/// Strips one pair of surrounding quotes: the range inside them, and whether there were any.
fn unquote(hay: &str, r: Range<usize>) -> (Range<usize>, bool) {
    let b = &hay.as_bytes()[r.clone()];
    if b.len() >= 2 && (b[0] == b'"' || b[0] == b'\'') && b[b.len() - 1] == b[0] {
        return (r.start + 1..r.end - 1, true);
    }
    (r, false)
}

fn url_check(g: &Groups, hay: &str) -> Option<(&'static str, Range<usize>)> {
    let (r, v) = group(g, 1, hay)?;
    (!is_placeholder(v)).then_some(("url_password", r))
}

/// `Basic <base64 of user:password>`.
fn basic_check(g: &Groups, hay: &str) -> Option<(&'static str, Range<usize>)> {
    let (r, v) = group(g, 1, hay)?;
    let bytes = base64_decode(v)?;
    let text = std::str::from_utf8(&bytes).ok()?;
    (text.contains(':') && text.chars().all(|c| !c.is_control())).then_some(("basic_auth", r))
}

fn bearer_check(g: &Groups, hay: &str) -> Option<(&'static str, Range<usize>)> {
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
fn header_check(g: &Groups, hay: &str) -> Option<(&'static str, Range<usize>)> {
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
const URL_SECRET_PARAMS: &[&str] = &[
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
fn url_param_spans(hay: &str) -> Vec<(Range<usize>, &'static str)> {
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

/// Crypt-style password hashes: `$2b$12$…` (bcrypt), `$6$salt$…` (SHA-512 crypt), `$y$…`
/// (yescrypt), `$argon2id$v=19$…`, `$apr1$…` (htpasswd).
fn hash_spans(hay: &str) -> Vec<(Range<usize>, &'static str)> {
    let b = hay.as_bytes();
    let mut spans = Vec::new();
    let mut next = 0;
    for at in memchr::memchr_iter(b'$', b) {
        if at < next {
            continue;
        }
        let id_end = at
            + 1
            + b[at + 1..]
                .iter()
                .take_while(|c| c.is_ascii_alphanumeric())
                .count();
        if b.get(id_end) != Some(&b'$')
            || !matches!(
                &hay[at + 1..id_end],
                "1" | "2a"
                    | "2b"
                    | "2x"
                    | "2y"
                    | "5"
                    | "6"
                    | "7"
                    | "y"
                    | "gy"
                    | "apr1"
                    | "md5"
                    | "argon2i"
                    | "argon2d"
                    | "argon2id"
                    | "scrypt"
            )
        {
            continue;
        }
        let end = id_end
            + b[id_end..]
                .iter()
                .take_while(|c| {
                    c.is_ascii_alphanumeric()
                        || matches!(c, b'.' | b'/' | b'$' | b'=' | b',' | b'+' | b'-')
                })
                .count();
        // The hash proper, after the last `$`, is long; `$1$2` in a shell script is not.
        let last = at + hay[at..end].rfind('$').map_or(0, |i| i + 1);
        if end - last >= 20 {
            spans.push((at..end, "password_hash"));
            next = end;
        }
    }
    spans
}

/// A command-line password (the last group): anything but a reference to one (`-p"$PASS"`).
fn plain_value_check(g: &Groups, hay: &str) -> Option<(&'static str, Range<usize>)> {
    let (r, _) = group(g, g.len() - 1, hay)?;
    let (r, _) = unquote(hay, r);
    let v = hay.get(r.clone())?;
    (!is_placeholder(v)).then_some(("password", r))
}

/// A value after a separator: quoted (`"…"`, `'…'`, `` `…` ``, `\"…\"` in escaped JSON) or
/// bare (up to whitespace or a quote). Returns (value range, quoted, end of what was read).
fn read_value(b: &[u8], at: usize) -> Option<(Range<usize>, bool, usize)> {
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
                    .position(|c| c.is_ascii_whitespace() || matches!(c, b'"' | b'\'' | b'`'))
                    .unwrap_or(b.len() - at);
            (end > at).then_some((at..end, false, end))
        }
    }
}

fn is_name_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-')
}

fn skip(b: &[u8], mut i: usize, set: &[u8]) -> usize {
    while i < b.len() && set.contains(&b[i]) {
        i += 1;
    }
    i
}

/// Whether the value of a secret-named assignment or flag is the secret.
fn value_is_secret(
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
    if !quoted {
        if v.len() < 3 || is_code(v, name) {
            return false;
        }
        // The working directory (`PWD=/home/me`) is no password.
        let bare_name = name.trim_start_matches('-').to_ascii_lowercase();
        if matches!(bare_name.as_str(), "pwd" | "oldpwd") && is_path_or_url(v) {
            return false;
        }
        // `Authorization: Bearer …`: the scheme is no secret; the header rules take the rest.
        let after = &hay[r.end..];
        if after.starts_with(" [REDACTED:")
            || (matches!(
                v.to_ascii_lowercase().as_str(),
                "bearer" | "basic" | "token" | "digest" | "negotiate" | "ntlm"
            ) && after.starts_with(' '))
        {
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
    }
    strength == Strength::Strong || looks_random(v)
}

/// `--password VALUE`, `--api-key "VALUE"` (the `=` form is an assignment).
fn flag_spans(hay: &str) -> Vec<(Range<usize>, &'static str)> {
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

/// `name = value` and its relatives, found from their separator back to the name.
fn assignment_spans(hay: &str) -> Vec<(Range<usize>, &'static str)> {
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
        if ns == ne {
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
fn paired_name(hay: &str, at: usize) -> Option<(Strength, &'static str)> {
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

/// Words that name a secret in prose, and the kind each names.
const PROSE_WORDS: &[(&str, &str)] = &[
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

fn is_word_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Reads `[ \t]+word` (case-insensitive) at `i`; returns the position after it.
fn read_word(b: &[u8], i: usize, words: &[&str]) -> Option<usize> {
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
fn read_token(b: &[u8], i: usize) -> Option<usize> {
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
fn natural_spans(hay: &str) -> Vec<(Range<usize>, &'static str)> {
    let b = hay.as_bytes();
    let mut spans: Vec<(Range<usize>, &'static str)> = Vec::new();
    // Where a word may start: SIMD searches for their stems in a lowercase copy.
    let lower = hay.to_ascii_lowercase();
    let mut starts: Vec<usize> = [
        "pass", "pw", "api", "secret", "access", "auth", "token", "cred",
    ]
    .iter()
    .flat_map(|stem| memchr::memmem::find_iter(lower.as_bytes(), stem.as_bytes()))
    .filter(|&i| i == 0 || !is_word_byte(b[i - 1]))
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
            v.chars().count() >= 3 && !is_placeholder(v) && !is_code(v, "")
        } else {
            password_like(v)
        };
        if secret && spans.last().is_none_or(|(p, _)| p.end <= r.start) {
            next = r.end;
            spans.push((r, *kind));
        }
    }
    spans
}

fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let s = s.trim_end_matches('=');
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let mut acc = 0u32;
    let mut bits = 0;
    for c in s.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        };
        acc = (acc << 6) | v as u32;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    (s.len() % 4 != 1).then_some(out)
}

/// Patterns and allow-list from config.toml's `[redact]` table.
#[derive(Debug, Default)]
pub struct Settings {
    /// (kind, regex): the whole match, or its group named `secret`, is redacted.
    patterns: Vec<(String, regex::Regex)>,
    /// Exact secrets never redacted.
    allow: Vec<String>,
    /// Regexes a secret is never redacted when it matches them whole.
    allow_re: Vec<regex::Regex>,
}

static NO_SETTINGS: Settings = Settings {
    patterns: Vec::new(),
    allow: Vec::new(),
    allow_re: Vec::new(),
};
static SETTINGS: OnceLock<Settings> = OnceLock::new();

impl Settings {
    /// Reads `[redact]`: the usable entries, and one message per bad one.
    pub fn from_config(cfg: &Config) -> (Settings, Vec<String>) {
        let mut s = Settings::default();
        let mut errors = Vec::new();
        let Some(table) = cfg.section("redact") else {
            return (s, errors);
        };
        let strings = |key: &str, errors: &mut Vec<String>| -> Vec<String> {
            match table.get(key) {
                None => Vec::new(),
                Some(toml::Value::Array(a)) => a
                    .iter()
                    .enumerate()
                    .filter_map(|(i, v)| match v.as_str() {
                        Some(s) => Some(s.to_string()),
                        None => {
                            errors.push(format!("[redact] {key}[{i}]: not a string"));
                            None
                        }
                    })
                    .collect(),
                Some(_) => {
                    errors.push(format!("[redact] {key}: not an array of strings"));
                    Vec::new()
                }
            }
        };
        for key in table.keys() {
            if !matches!(key.as_str(), "patterns" | "allow" | "allow_regex") {
                errors.push(format!(
                    "[redact] {key}: unknown setting (patterns, allow, allow_regex)"
                ));
            }
        }
        s.allow = strings("allow", &mut errors);
        for (i, re) in strings("allow_regex", &mut errors).iter().enumerate() {
            match regex::Regex::new(&format!("^(?:{re})$")) {
                Ok(r) => s.allow_re.push(r),
                Err(e) => errors.push(format!("[redact] allow_regex[{i}]: {e}")),
            }
        }
        let patterns = match table.get("patterns") {
            None => Vec::new(),
            Some(toml::Value::Array(a)) => a.clone(),
            Some(_) => {
                errors.push("[redact] patterns: not an array of {kind, regex} tables".into());
                Vec::new()
            }
        };
        for (i, p) in patterns.iter().enumerate() {
            let at = format!("[redact] patterns[{i}]");
            let (Some(kind), Some(re)) = (
                p.get("kind").and_then(toml::Value::as_str),
                p.get("regex").and_then(toml::Value::as_str),
            ) else {
                errors.push(format!("{at}: needs kind and regex strings"));
                continue;
            };
            if kind.is_empty()
                || kind.len() > 40
                || !kind
                    .bytes()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_')
            {
                errors.push(format!(
                    "{at}: kind {kind:?} must be lowercase letters, digits and _"
                ));
                continue;
            }
            match regex::Regex::new(re) {
                Ok(r) if r.is_match("") => {
                    errors.push(format!("{at}: regex {re:?} matches the empty string"))
                }
                Ok(r) => s.patterns.push((kind.to_string(), r)),
                Err(e) => errors.push(format!("{at}: {e}")),
            }
        }
        (s, errors)
    }

    fn allowed(&self, secret: &str) -> bool {
        self.allow.iter().any(|a| a == secret) || self.allow_re.iter().any(|r| r.is_match(secret))
    }
}

/// Installs config.toml's `[redact]` patterns and allow-list for this process (the first call
/// wins). What is usable is installed even when some entries are bad; those are the error
/// (a usage error naming them, which a hook logs and goes on).
pub fn configure(cfg: &Config) -> Result<()> {
    if cfg.section("redact").is_none() {
        return Ok(());
    }
    let (s, errors) = Settings::from_config(cfg);
    let _ = SETTINGS.set(s);
    if errors.is_empty() {
        Ok(())
    } else {
        Err(Error::Usage(format!("config.toml: {}", errors.join("; "))))
    }
}

fn settings() -> &'static Settings {
    SETTINGS.get().unwrap_or(&NO_SETTINGS)
}

struct Compiled {
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

fn compiled() -> &'static Compiled {
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
fn triggered(c: &Compiled, text: &str) -> [bool; RULES.len()] {
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

fn marker(kind: &str) -> String {
    format!("[REDACTED:{kind}]")
}

/// Replaces the given byte ranges (sorted, not overlapping) of `text` with markers.
fn splice(text: &str, spans: &[(Range<usize>, &str)]) -> String {
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

/// The spans one rule redacts in `text`.
fn rule_matches(i: usize, text: &str) -> Vec<(Range<usize>, &'static str)> {
    let rule = &RULES[i];
    let (pattern, group, check) = match rule.find {
        Find::Scan(f) => return f(text),
        Find::Regex(p, g) => (p, g, None),
        Find::Checked(p, c) => (p, 0, Some(c)),
    };
    let re = compiled().regexes[i].get_or_init(|| {
        regex::bytes::RegexBuilder::new(pattern)
            .unicode(false)
            .build()
            .expect("static pattern")
    });
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

/// Byte classes of token characters: 1 lowercase, 2 uppercase, 4 digit, 8 `+ / _ -`.
static CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut c = 0;
    while c < 256 {
        t[c] = match c as u8 {
            b'a'..=b'z' => 1,
            b'A'..=b'Z' => 2,
            b'0'..=b'9' => 4,
            b'+' | b'/' | b'_' | b'-' => 8,
            _ => 0,
        };
        c += 1;
    }
    t
};

/// A run of token characters: start, end, and the union of its byte classes.
type Run = (usize, usize, u8);

/// The first two bytes of each token prefix, one bit each.
static PREFIX_PAIRS: [u64; 1024] = {
    let mut t = [0u64; 1024];
    let mut i = 0;
    while i < PREFIXES.len() {
        let b = PREFIXES[i].0.as_bytes();
        let key = ((b[0] as usize) << 8) | b[1] as usize;
        t[key >> 6] |= 1 << (key & 63);
        i += 1;
    }
    t
};

/// The runs of token characters of 14 bytes or more (with their trailing `=` padding): where
/// prefixed tokens (layer 1) and random strings (layer 4) can be. One pass, a table lookup
/// per byte.
fn long_runs(text: &str) -> Vec<Run> {
    let mut out = Vec::new();
    runs(text, 14, |s, e, m| out.push((s, e, m)));
    out
}

fn runs(text: &str, min: usize, mut f: impl FnMut(usize, usize, u8)) {
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if CLASS[b[i] as usize] == 0 {
            i += 1;
            continue;
        }
        let start = i;
        let mut mask = 0;
        while i < b.len() {
            let c = CLASS[b[i] as usize];
            if c == 0 {
                break;
            }
            mask |= c;
            i += 1;
        }
        let mut end = i;
        while end < b.len() && end - i < 2 && b[end] == b'=' {
            end += 1;
        }
        if end - start >= min {
            f(start, end, mask);
        }
        i = end.max(i);
    }
}

/// Layer 1: tokens known by their prefix, at the start of a run or of one of its `/` parts.
fn prefix_spans(text: &str, runs: &[Run]) -> Vec<(Range<usize>, &'static str)> {
    let mut spans = Vec::new();
    for &(start, end, _) in runs {
        let run = &text[start..end];
        let mut at = 0;
        for part in run.split('/') {
            let p = part.trim_start_matches(['-', '_', '+']);
            let off = start + at + (part.len() - p.len());
            let two = match p.as_bytes() {
                [a, b, ..] => u16::from_be_bytes([*a, *b]),
                _ => 0,
            };
            if PREFIX_PAIRS[two as usize >> 6] & (1 << (two & 63)) == 0 {
                at += part.len() + 1;
                continue;
            }
            if let Some((pre, kind, _)) = PREFIXES
                .iter()
                .find(|(pre, _, min)| p.len() >= pre.len() + min && p.starts_with(pre))
            {
                let body = &p[p.len().min(4)..];
                // AKIA ids, `dapi` and `key-` tokens have a fixed alphabet; the others are
                // random (digits or capitals), which `sk-learn-compatible-estimator` is not.
                let random = p[pre.len()..]
                    .bytes()
                    .any(|c| c.is_ascii_digit() || c.is_ascii_uppercase());
                let ok = match *kind {
                    "aws_access_key" => {
                        p.len() == 20
                            && p.bytes()
                                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
                    }
                    "databricks_token" | "mailgun_key" => body
                        .bytes()
                        .take(32)
                        .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()),
                    _ => random,
                };
                if ok {
                    spans.push((off..off + p.len(), *kind));
                }
            }
            at += part.len() + 1;
        }
    }
    spans
}

/// Shannon entropy in bits per character.
fn entropy(s: &[u8]) -> f64 {
    let mut counts = [0u32; 128];
    for &c in s {
        counts[(c & 0x7f) as usize] += 1;
    }
    let n = s.len() as f64;
    counts
        .iter()
        .filter(|&&k| k > 0)
        .map(|&k| {
            let p = k as f64 / n;
            -p * p.log2()
        })
        .sum()
}

/// Share of the characters in words: a run of three or more lowercase letters, with the
/// capital before it.
fn word_share(b: &[u8]) -> f64 {
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
fn random_segment(s: &str) -> bool {
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
fn wordy(c: &str) -> bool {
    let c = c.trim_end_matches('=');
    !c.is_empty()
        && c.split(['-', '_'])
            .all(|p| word_like(p) && p.bytes().filter(u8::is_ascii_alphabetic).count() >= 3)
}

/// Random parts of one `/`-free piece. A slug (`attio-mcp-server-3f2a…`: half its characters
/// in words, hex or numbers) is judged by its parts, so the hash in it stays; anything else
/// (a base64url token, whose alphabet has `-` and `_`) whole.
fn judge_piece(p: &str, at: usize, s: &Settings, spans: &mut Vec<(Range<usize>, &'static str)>) {
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

/// Layer 4: random-looking runs. A run with two words between its `/` (`/Users/bob/…`,
/// `github.com/org/repo/raw/<sha>`) or an id in them is a path: its components are judged
/// one by one, so the UUID or SHA in a path stays. Otherwise the `/` is base64's and the run
/// is judged whole.
fn entropy_spans(text: &str, s: &Settings, runs: &[Run]) -> Vec<(Range<usize>, &'static str)> {
    let mut spans = Vec::new();
    for &(start, end, mask) in runs {
        if end - start < 20 || mask & 7 != 7 {
            continue;
        }
        let run = &text[start..end];
        let trimmed = run.trim_start_matches(['/', '-', '_', '+']);
        let start = start + (run.len() - trimmed.len());
        let run = trimmed.trim_end_matches(['/', '-', '_', '+']);
        if s.allowed(run) {
            continue;
        }
        if !run.contains('/') {
            judge_piece(run, start, s, &mut spans);
            continue;
        }
        // (A base64 blob longer than any path has such components by chance.)
        let path = run.len() <= 512 && run.split('/').filter(|c| wordy(c)).nth(1).is_some()
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

/// Layers 1 and 2 and the configured patterns; `None` when nothing was found.
fn redact_rules(text: &str, s: &Settings, runs: &[Run]) -> Option<String> {
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

fn redact_with<'a>(text: &'a str, s: &Settings, entropy: bool) -> Cow<'a, str> {
    // Nothing the rules know fits in 7 bytes (a JSON payload has many such strings).
    if text.len() < 8 && s.patterns.is_empty() {
        return Cow::Borrowed(text);
    }
    let runs = long_runs(text);
    let out = redact_rules(text, s, &runs);
    if !entropy {
        return out.map_or(Cow::Borrowed(text), Cow::Owned);
    }
    // The runs are found again only in text that the rules changed.
    let (cur, runs) = match &out {
        Some(o) => (o.as_str(), long_runs(o)),
        None => (text, runs),
    };
    let spans = entropy_spans(cur, s, &runs);
    if !spans.is_empty() {
        return Cow::Owned(splice(cur, &spans));
    }
    out.map_or(Cow::Borrowed(text), Cow::Owned)
}

/// Replaces every secret in `text` with `[REDACTED:<kind>]`.
pub fn redact_str(text: &str) -> Cow<'_, str> {
    redact_with(text, settings(), true)
}

/// Keys whose values are ids: random-looking by design, never judged by entropy.
fn id_key(k: &str) -> bool {
    let lower = k.to_ascii_lowercase();
    lower.ends_with("uuid")
        || lower == "id"
        || (lower.ends_with("id")
            && (k.ends_with("Id") || k.ends_with("ID") || k[..k.len() - 2].ends_with(['_', '-'])))
}

/// Redacts every string inside a JSON value, in place; a value under a key that names a
/// secret goes whole, whatever its type (numbers included).
pub fn redact_value(v: &mut Value) {
    redact_value_with(v, settings(), true);
}

fn redact_value_with(v: &mut Value, s: &Settings, entropy: bool) {
    match v {
        Value::String(x) => {
            if let Cow::Owned(r) = redact_with(x, s, entropy) {
                *x = r;
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| redact_value_with(x, s, entropy)),
        Value::Object(o) => {
            // {"name": "DB_PASSWORD", "value": "…"} (env lists, parameter stores).
            let named = ["name", "Name", "key", "Key"]
                .iter()
                .find_map(|k| o.get(*k).and_then(Value::as_str))
                .and_then(classify_name)
                .filter(|(st, _)| *st == Strength::Strong)
                .map(|(_, kind)| kind);
            for (k, val) in o.iter_mut() {
                let by_name =
                    named.filter(|_| matches!(k.as_str(), "value" | "Value" | "secret" | "data"));
                let by_key = classify_name(k);
                match (by_name, by_key) {
                    (Some(kind), _) | (None, Some((Strength::Strong, kind))) => {
                        redact_secret_value(val, kind, s, false)
                    }
                    (None, Some((Strength::Weak, kind))) => redact_secret_value(val, kind, s, true),
                    (None, None) => redact_value_with(val, s, entropy && !id_key(k)),
                }
            }
        }
        _ => {}
    }
}

/// A value held under a secret's name: scalars become the marker; containers are searched.
fn redact_secret_value(v: &mut Value, kind: &'static str, s: &Settings, weak: bool) {
    match v {
        Value::String(x) => {
            let keep =
                is_placeholder(x) || is_prose(x) || s.allowed(x) || (weak && !looks_random(x));
            if !keep {
                *v = Value::String(marker(kind));
            } else {
                redact_value_with(v, s, true);
            }
        }
        Value::Number(n) if !weak => {
            if !s.allowed(&n.to_string()) {
                *v = Value::String(marker(kind));
            }
        }
        Value::Array(a) => a
            .iter_mut()
            .for_each(|x| redact_secret_value(x, kind, s, weak)),
        _ => redact_value_with(v, s, true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(text: &str) -> String {
        redact_with(text, &NO_SETTINGS, true).into_owned()
    }

    /// (input, what must be gone, the kind its marker names)
    fn assert_redacted(input: &str, secret: &str, kind: &str) {
        let out = r(input);
        assert!(
            !out.contains(secret),
            "{secret:?} kept in {out:?} (input {input:?})"
        );
        assert!(
            out.contains(&format!("[REDACTED:{kind}]")),
            "no [REDACTED:{kind}] in {out:?} (input {input:?})"
        );
    }

    fn assert_kept(input: &str) {
        assert_eq!(r(input), input, "changed");
    }

    #[test]
    fn redacts_each_kind_and_keeps_the_rest() {
        let cases = [
            (
                "keep <private>my secret</private> this",
                "keep [REDACTED:private] this",
            ),
            (
                "id AKIAIOSFODNN7EXAMPLE x",
                "id [REDACTED:aws_access_key] x",
            ),
            (
                "tok ghp_0123456789abcdefghijABCDEFGHIJ012345 end",
                "tok [REDACTED:github_token] end",
            ),
            (
                "ANTHROPIC_API_KEY=sk-ant-api03-abcdefghijklmnopqrstuvwxyz",
                "ANTHROPIC_API_KEY=[REDACTED:anthropic_key]",
            ),
            (
                "key sk-proj-abcdefghijklmnopqrstuvwx1234",
                "key [REDACTED:openai_key]",
            ),
            (
                "password=hunter22 next",
                "password=[REDACTED:password] next",
            ),
            (
                "\"db_password\": \"s3cr3t!\"",
                "\"db_password\": \"[REDACTED:password]\"",
            ),
            (
                "Authorization: Bearer abcdefghijklmnopqrstuvwxyz0123",
                "Authorization: Bearer [REDACTED:bearer]",
            ),
            (
                "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
                "jwt [REDACTED:jwt]",
            ),
            ("nothing to see here", "nothing to see here"),
            ("the token count is 5", "the token count is 5"),
        ];
        for (input, want) in cases {
            assert_eq!(r(input), want, "input: {input}");
        }
    }

    #[test]
    fn each_class_of_the_issue_is_redacted_and_names_its_kind() {
        let cases: &[(&str, &str, &str)] = &[
            (
                "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                "wJalrXUtnFEMI",
                "secret",
            ),
            (
                "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                "bPxRfiCY",
                "secret",
            ),
            (
                "DATABASE_URL=postgres://app:Sup3rS3cret@db.internal:5432/app",
                "Sup3rS3cret",
                "url_password",
            ),
            (
                "redis://:r3disPa55word@cache:6379/0",
                "r3disPa55word",
                "url_password",
            ),
            (
                "mongodb+srv://admin:m0ng0P@ss@cluster0.example.net/db",
                "m0ng0P@ss",
                "url_password",
            ),
            (
                "SECRET_KEY = 'django-insecure-9x#k2!mq'",
                "django-insecure-9x#k2!mq",
                "secret",
            ),
            (
                "NPM_TOKEN=npm_AbCdEf0123456789GhIjKl0123456789MnOp",
                "npm_AbCdEf0123456789",
                "npm_token",
            ),
            (
                "HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567",
                "hf_AbCdEfGhIj",
                "huggingface_token",
            ),
            ("export X_TOKEN=plainvalue99", "plainvalue99", "token"),
            (
                "curl -X POST https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
                "XXXXXXXXXXXXXXXXXXXXXXXX",
                "slack_webhook",
            ),
            (
                "stripe sk_test_4eC39HqLyjWDarjtT1zdp7dc",
                "4eC39HqLyjWDarjtT1zdp7dc",
                "stripe_key",
            ),
            (
                "Authorization: Basic dXNlcjpwYXNzd29yZDEyMw==",
                "dXNlcjpwYXNzd29yZDEyMw",
                "basic_auth",
            ),
            ("mysql -u root -pMyS3cretPw -h db", "MyS3cretPw", "password"),
            (
                "curl -u admin:CurlPa55 https://api.example.com",
                "CurlPa55",
                "password",
            ),
            (
                "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBGXfakeKeyBodyLine1\nAbCdEfGh==\n-----END PGP PRIVATE KEY BLOCK-----",
                "lQOYBGXfakeKeyBodyLine1",
                "private_key",
            ),
            (
                "$ head -5 id_rsa\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAABlwAAAAdzc2gtcn\nNhAAAAAwEAAQAAAYEAx1mVtXaKfakefakefakefakefakefakefakefakefakefakefake\n",
                "b3BlbnNzaC1rZXktdjEAAAAABG5vbmU",
                "private_key",
            ),
            (
                "the staging db password is Tr0ub4dor&3",
                "Tr0ub4dor&3",
                "password",
            ),
            ("my password: hunter2 ok", "hunter2", "password"),
            (
                "use high entropy 9fKq2LmX7vRt4ZpW8sNd3HbJ6cYg",
                "9fKq2LmX7vRt4ZpW8sNd3HbJ6cYg",
                "high_entropy",
            ),
            (
                "docker login -u me -p D0ckerPw! registry.example.com",
                "D0ckerPw!",
                "password",
            ),
            ("sshpass -p 'Ssh!Pass42' ssh host", "Ssh!Pass42", "password"),
            (
                "redis-cli -h cache -a R3disAuth! ping",
                "R3disAuth!",
                "password",
            ),
            ("--api-key abcd1234efgh5678", "abcd1234efgh5678", "api_key"),
            (
                "requests.get(url, auth=('bob', 'B0bsPass'))",
                "B0bsPass",
                "password",
            ),
            (
                "machine api.example.com\n  login bob\n  password NetrcPw9",
                "NetrcPw9",
                "password",
            ),
            (
                "Cookie: sessionid=abc123def456; csrftoken=zzz",
                "abc123def456",
                "cookie",
            ),
            (
                "https://bucket.s3.amazonaws.com/f?X-Amz-Signature=abcdef0123456789&X-Amz-Expires=60",
                "abcdef0123456789",
                "url_secret",
            ),
            (
                "admin:$2b$12$R9h/cIPz0gi.URNNX3kh2OPST9/PgBkqquzi.Ss7KIUgO2t0jWMUW",
                "R9h/cIPz0gi.URNNX3kh2OPST9",
                "password_hash",
            ),
            (
                "glpat-AbCdEfGhIjKlMnOpQrSt12",
                "glpat-AbCdEfGhIjKlMnOpQrSt12",
                "gitlab_token",
            ),
            (
                "SG.AbCdEfGhIjKlMnOpQrStUv.WxYz0123456789AbCdEfGhIjKlMnOpQrStUvWxYz01234",
                "WxYz0123456789AbCdEf",
                "sendgrid_key",
            ),
            (
                "VAULT_ADDR=x hvs.CAESIAbCdEfGhIjKlMnOpQrStUvWxYz0123",
                "CAESIAbCdEfGhIjKlMnOp",
                "vault_token",
            ),
            (
                "bot 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1 x",
                "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1",
                "telegram_bot_token",
            ),
            (
                "https://discord.com/api/webhooks/123456789012345678/AbCdEf-GhIjKl_MnOpQr",
                "AbCdEf-GhIjKl_MnOpQr",
                "discord_webhook",
            ),
            (
                "openssl enc -aes256 -pass pass:OpenSslPw1 -in f",
                "OpenSslPw1",
                "password",
            ),
        ];
        for (input, secret, kind) in cases {
            assert_redacted(input, secret, kind);
        }
    }

    #[test]
    fn what_a_memory_needs_is_kept() {
        for text in [
            // Hashes, ids, paths, versions.
            "commit 7c4ca6eaf5c054a470907c1dc5d342941b7e724c fixed it",
            "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
            "session 6706089d-9d7e-4f48-bd2d-8f2a2546eb78 resumed",
            "/Users/dain/workspace/claude-code-log/docs/cache/37f83ec9-f2ea-42a9-925e-0d5c105cb6e8",
            "/var/folders/4n/2f7pppjd2_n0fftzg8vrlg040000gn/T/tmp6i8r8cem",
            "https://github.com/kesslerio/attio-mcp-server/raw/7c4ca6eaf5c054a470907c1dc5d342941b7e724c/CHANGELOG.md",
            "src/lib/capture/redact.rs:42",
            "tool toolu_01ApB1rYz4e7h3nZtU4G77c8 and msg_01W5wUwhA8h4Ku1Bm4uH5H7b, req_011CaBKjYuTsEY2FzRt8LsFk",
            "upgraded to v1.2.3-beta.4 and node 20.11.1",
            // Base64 of ordinary words, identifiers.
            "SGVsbG8gV29ybGQsIHRoaXMgaXMgYSB0ZXN0Lg==",
            "AbstractSingletonProxyFactoryBean2 and getUTF8StringFromBase64Buffer2",
            // Prose about passwords and tokens, with no value.
            "the password field must be validated before the token is refreshed",
            "we rotate the API key every month; the secret is stored in Vault",
            "Password: Must be at least 8 characters",
            "the token limit of 4096 was hit; max_tokens = 4096",
            "input_tokens: 1200, output_tokens: 300",
            "bearer authentication is used",
            "Authorization: required",
            // Code that names secrets without holding them.
            "password = get_password()",
            "api_key = os.environ[\"OPENAI_API_KEY\"]",
            "token: Optional[str] = None",
            "secret = settings.SECRET_KEY",
            "password: string;",
            "DB_PASSWORD=${DB_PASSWORD}",
            "connect(user=user, password=password)",
            "PWD=/home/me/project",
            "cache_key = user_123",
            "PASSWORD_FILE=/run/secrets/db",
            "mysql -u root -p mydb",
        ] {
            assert_kept(text);
        }
    }

    /// The corpus of tests/fixtures/secrets: every format, as text or as a JSON value.
    #[test]
    fn every_secret_of_the_corpus_goes_and_its_marker_names_its_kind() {
        let corpus = include_str!("../../../tests/fixtures/secrets/corpus.jsonl");
        let mut n = 0;
        for line in corpus.lines() {
            let e: Value = serde_json::from_str(line).unwrap();
            let (kind, secret) = (e["kind"].as_str().unwrap(), e["secret"].as_str().unwrap());
            let out = match (&e["text"], &e["json"]) {
                (Value::String(t), _) => r(t),
                (_, j) => {
                    let mut j = j.clone();
                    redact_value_with(&mut j, &NO_SETTINGS, true);
                    j.to_string()
                }
            };
            assert!(!out.contains(secret), "{secret:?} kept in {out:?}");
            assert!(
                out.contains(&format!("[REDACTED:{kind}]")),
                "no [REDACTED:{kind}] in {out:?}"
            );
            n += 1;
        }
        assert!(n >= 40, "{n} formats");
    }

    #[test]
    fn json_values_under_secret_keys_go_whole_numbers_included() {
        let mut v = serde_json::json!({
            "tool_use_id": "toolu_01ApB1rYz4e7h3nZtU4G77c8",
            "session_id": "6706089d-9d7e-4f48-bd2d-8f2a2546eb78",
            "config": {
                "api_key": "plain-looking-but-secret",
                "password": 123456,
                "pin_code": 4242,
                "client_secret": "abc",
                "max_tokens": 4096,
                "token_count": 12,
                "auth": {"token": "t0k3n-value"},
                "password_required": true,
                "token": null,
                "db_password": "${DB_PASSWORD}",
                "sort_key": "created_at",
                "secrets": ["one-secret", "two-secret"],
            },
            "env": [{"name": "DB_PASSWORD", "value": "EnvListPw1"}, {"name": "HOME", "value": "/root"}],
        });
        redact_value_with(&mut v, &NO_SETTINGS, true);
        let c = &v["config"];
        assert_eq!(c["api_key"], "[REDACTED:api_key]");
        assert_eq!(c["password"], "[REDACTED:password]");
        assert_eq!(c["pin_code"], 4242);
        assert_eq!(c["client_secret"], "[REDACTED:secret]");
        assert_eq!(c["max_tokens"], 4096);
        assert_eq!(c["token_count"], 12);
        assert_eq!(c["auth"]["token"], "[REDACTED:token]");
        assert_eq!(c["password_required"], true);
        assert_eq!(c["token"], Value::Null);
        assert_eq!(c["db_password"], "${DB_PASSWORD}");
        assert_eq!(c["sort_key"], "created_at");
        assert_eq!(c["secrets"][1], "[REDACTED:secret]");
        assert_eq!(v["env"][0]["value"], "[REDACTED:password]");
        assert_eq!(v["env"][1]["value"], "/root");
        assert_eq!(v["tool_use_id"], "toolu_01ApB1rYz4e7h3nZtU4G77c8");
        assert_eq!(v["session_id"], "6706089d-9d7e-4f48-bd2d-8f2a2546eb78");
    }

    #[test]
    fn triggers_are_found_across_scan_windows_and_in_any_case() {
        // A trigger straddling the 64 KiB window edge, in upper case, near the end of 200 KiB.
        for at in [64 * 1024 - 3, 128 * 1024 - 1, 200 * 1024 - 40] {
            let mut text = "x ".repeat(100 * 1024);
            text.replace_range(at..at + 24, " MYSQL -u r -pSecretPw1 ");
            let out = r(&text);
            assert!(
                out.contains("-p[REDACTED:password]"),
                "secret at {at} missed"
            );
            assert_eq!(
                out.len(),
                text.len() - "SecretPw1".len() + "[REDACTED:password]".len()
            );
        }
    }

    #[test]
    fn private_key_blocks_go_whole() {
        let text =
            "a\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nabc\n-----END RSA PRIVATE KEY-----\nb";
        assert_eq!(r(text), "a\n[REDACTED:private_key]\nb");
        // Escaped inside JSON text, and cut before its END line.
        let text =
            r#"{"k": "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBfakefake0123\nAwEHoUQDQgAE"} tail"#;
        assert_eq!(r(text), r#"{"k": "[REDACTED:private_key]"} tail"#);
    }

    #[test]
    fn redaction_is_idempotent() {
        let once = r(
            "password=hunter22 sk-ant-api03-abcdefghijklmnopqrstuvwxyz 9fKq2LmX7vRt4ZpW8sNd3HbJ6cYg the db password is Tr0ub4dor&3",
        );
        assert_eq!(r(&once), once);
    }

    #[test]
    fn configured_patterns_add_and_the_allow_list_keeps() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("config.toml"),
            r#"
[redact]
patterns = [
  { kind = "employee_id", regex = "EMP-[0-9]{6}" },
  { kind = "db_host", regex = "host=(?P<secret>[a-z]+\\.corp)" },
]
allow = ["AKIAIOSFODNN7EXAMPLE", "hunter22"]
allow_regex = ["test_[a-z]+_[0-9A-Za-z]{20,}"]
"#,
        )
        .unwrap();
        let cfg = Config::load(dir.path()).unwrap();
        let (s, errors) = Settings::from_config(&cfg);
        assert!(errors.is_empty(), "{errors:?}");
        let out = redact_with(
            "EMP-123456 at host=db.corp, AKIAIOSFODNN7EXAMPLE password=hunter22 \
             test_fixture_9fKq2LmX7vRt4ZpW8sNd3HbJ6cYg AKIAABCDEFGHIJKLMNOP",
            &s,
            true,
        );
        assert_eq!(
            out,
            "[REDACTED:employee_id] at host=[REDACTED:db_host], AKIAIOSFODNN7EXAMPLE \
             password=hunter22 test_fixture_9fKq2LmX7vRt4ZpW8sNd3HbJ6cYg [REDACTED:aws_access_key]"
        );
        let mut v = serde_json::json!({"password": "hunter22", "token": "other1234"});
        redact_value_with(&mut v, &s, true);
        assert_eq!(v["password"], "hunter22");
        assert_eq!(v["token"], "[REDACTED:token]");
    }

    #[test]
    fn bad_redact_settings_are_named() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("config.toml"),
            "[redact]\npatterns = [{kind = \"Bad Kind\", regex = \"x\"}, {kind = \"ok\", regex = \"(\"}, {kind = \"empty\", regex = \"a*\"}, {kind = \"fine\", regex = \"zz[0-9]+\"}]\nallow_regex = [\"[\"]\nallw = []\n",
        )
        .unwrap();
        let cfg = Config::load(dir.path()).unwrap();
        let (s, errors) = Settings::from_config(&cfg);
        let all = errors.join("\n");
        for want in [
            "patterns[0]: kind \"Bad Kind\"",
            "patterns[1]:",
            "patterns[2]: regex \"a*\" matches the empty string",
            "allow_regex[0]:",
            "allw: unknown setting",
        ] {
            assert!(all.contains(want), "{want:?} not in {all}");
        }
        // What is usable still works.
        assert_eq!(redact_with("zz42", &s, true), "[REDACTED:fine]");
    }
}
