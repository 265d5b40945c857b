//! Secret redaction (docs/ARCHITECTURE.md, "Safety"), run on every string before it is stored or sent.
//!
//! Every secret becomes `[REDACTED:<kind>]`. Four layers, in this order:
//! 1. tokens whose prefix names them (`ghp_`, `npm_`, `hf_`, `sk_test_`, `AKIA`…): found in the
//!    same pass over the text's runs of token characters as layer 4;
//! 2. pattern rules for secrets known by their context: key blocks (also without their END
//!    line), credentials in URLs, headers and command lines, `name = value` where the name says
//!    secret (`AWS_SECRET_ACCESS_KEY=`, `SECRET_KEY = '…'`, `--token X`), a password told in
//!    prose ("the db password is Tr0ub4dor&3"); a quoted literal in code only when it looks
//!    generated (`password='testpassword'` is a test value);
//! 3. in JSON objects ([`redact_value`]), any value under a key that names a secret
//!    (`api_key`, `password`, `token`…), numbers included, and the `value` of a
//!    `{"name": "DB_PASSWORD", "value": …}` pair;
//! 4. a high-entropy scan: a long run that looks random (three character classes, entropy near
//!    a random string's, frequent class changes) and is not a hash, a UUID, an id Claude's API
//!    made (`toolu_…`, `msg_…`), a path, a URL's host, base64 of plain text, or a public hash
//!    where one is expected (`integrity="sha384-…"`, go.sum's `h1:…`).
//!
//! A hook has a budget of a few milliseconds, so the regexes are compiled lazily and only run on
//! text that contains one of their literal triggers (plain substring searches find those), and
//! layers 1 and 4 are one byte loop each. config.toml's `[redact]` table adds patterns and an
//! allow-list, installed once per process by [`configure`].
//!
//! One file per family of secret: `tokens` (layer 1), `keys` (key blocks, password hashes),
//! `urls` (URLs and headers), `commands` (command lines), `assign` (assignments and JSON keys),
//! `prose`, `entropy` (layer 4); `judge` holds what they share (does a name say secret, is a
//! value code or a placeholder), `literal` whether a literal is the secret or a test value
//! (`'testpassword'`, `'Bearer valid_token'`); `rule` what a rule is, with the helpers the
//! families' checks share; `kinds` the table of rules in the order they run, and the run of
//! layers 1 and 2 (which `entropy` asks of decoded base64); `config` the `[redact]` table.
//!
//! A redaction replaces the secret's value and nothing else: quotes, the key's name, markup
//! around it, a URL's scheme and host, a header's scheme stay.

mod assign;
mod commands;
mod config;
mod entropy;
mod judge;
mod keys;
mod kinds;
mod literal;
mod prose;
mod rule;
#[cfg(test)]
mod tests;
mod tokens;
mod urls;

use std::borrow::Cow;

use serde_json::Value;

use config::settings;
use entropy::entropy_spans;
use judge::{Strength, classify_name, is_placeholder, is_prose, looks_random};
use kinds::{marker, redact_rules, splice};
use tokens::long_runs;

pub use config::{Settings, configure};
pub use urls::url_hosts;

/// The redactor's version, kept in the store beside what it redacted: bump it whenever a rule
/// is added or widened (a new prefix, kind, pattern or name word), so that `mem pipeline`
/// rewrites the rows an older redactor stored (see `crate::reredact`). Version 2 narrowed the
/// rules (test values, placeholders, markup, URL hosts and public hashes stay): rows version 1
/// over-redacted cannot be restored, and today's rules leave them as they are.
pub const VERSION: u32 = 2;

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
            // `{"Authorization": "Bearer …"}`: the scheme stays.
            let scheme = match x.split_once(' ') {
                Some((sc, rest))
                    if kind == "authorization"
                        && !rest.is_empty()
                        && !rest.contains(' ')
                        && sc.bytes().all(|c| c.is_ascii_alphabetic()) =>
                {
                    sc.len() + 1
                }
                _ => 0,
            };
            if !keep {
                *v = Value::String(format!("{}{}", &x[..scheme], marker(kind)));
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
