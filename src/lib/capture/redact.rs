//! Secret redaction (ARCHITECTURE.md §9), run on every string before it is stored or sent.
//!
//! A hook has a budget of a few milliseconds, so the regexes are compiled lazily and only run on
//! text that contains one of their literal triggers (plain substring searches find those).

use std::borrow::Cow;
use std::sync::OnceLock;

use memchr::memmem::Finder;
use regex::Regex;

struct Rule {
    kind: &'static str,
    triggers: &'static [&'static str],
    pattern: &'static str,
    /// Replacement; `{}` is the `[REDACTED:kind]` marker, `$1` keeps the first group.
    replace: &'static str,
}

const RULES: &[Rule] = &[
    Rule {
        kind: "private",
        triggers: &["<private>"],
        pattern: r"(?is)<private>.*?</private>",
        replace: "{}",
    },
    Rule {
        kind: "private_key",
        triggers: &["private key-----"],
        pattern: r"(?s)-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?-----END [A-Z0-9 ]*PRIVATE KEY-----",
        replace: "{}",
    },
    Rule {
        kind: "aws_access_key",
        triggers: &["akia", "asia"],
        pattern: r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
        replace: "{}",
    },
    Rule {
        kind: "github_token",
        triggers: &["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"],
        pattern: r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b",
        replace: "{}",
    },
    Rule {
        kind: "anthropic_key",
        triggers: &["sk-ant-"],
        pattern: r"\bsk-ant-[A-Za-z0-9_\-]{20,}",
        replace: "{}",
    },
    Rule {
        kind: "openai_key",
        triggers: &["sk-"],
        pattern: r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}",
        replace: "{}",
    },
    Rule {
        kind: "slack_token",
        triggers: &["xox"],
        pattern: r"\bxox[abposr]-[A-Za-z0-9\-]{10,}",
        replace: "{}",
    },
    Rule {
        kind: "google_api_key",
        triggers: &["aiza"],
        pattern: r"\bAIza[0-9A-Za-z_\-]{35}",
        replace: "{}",
    },
    Rule {
        kind: "stripe_key",
        triggers: &["k_live_"],
        pattern: r"\b[sr]k_live_[0-9A-Za-z]{20,}",
        replace: "{}",
    },
    Rule {
        kind: "jwt",
        triggers: &["eyj"],
        pattern: r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
        replace: "{}",
    },
    Rule {
        kind: "bearer",
        triggers: &["bearer"],
        pattern: r"(?i)\b(bearer\s+)[A-Za-z0-9\-._~+/]{20,}=*",
        replace: "$1{}",
    },
    Rule {
        kind: "password",
        triggers: &[
            "password",
            "passwd",
            "pwd",
            "secret",
            "api_key",
            "api-key",
            "apikey",
            "token",
            "private_key",
        ],
        pattern: r#"(?i)\b((?:[a-z0-9_\-]*(?:password|passwd|pwd|secret|api[_\-]?key|access[_\-]?token|auth[_\-]?token|private[_\-]?key))["']?\s*[:=]\s*["']?)([^\s"'`,;\[\]{}()<>\\][^\s"'`,;\]{}()<>\\]{2,})"#,
        replace: "$1{}",
    },
];

struct Compiled {
    /// Each rule's triggers, lowercase.
    triggers: Vec<Vec<Finder<'static>>>,
    /// Length of the longest trigger.
    longest: usize,
    regexes: Vec<OnceLock<Regex>>,
}

fn compiled() -> &'static Compiled {
    static C: OnceLock<Compiled> = OnceLock::new();
    C.get_or_init(|| Compiled {
        triggers: RULES
            .iter()
            .map(|r| {
                r.triggers
                    .iter()
                    .map(|t| Finder::new(t.to_ascii_lowercase().as_bytes()).into_owned())
                    .collect()
            })
            .collect(),
        longest: RULES
            .iter()
            .flat_map(|r| r.triggers.iter().map(|t| t.len()))
            .max()
            .unwrap_or(1),
        regexes: RULES.iter().map(|_| OnceLock::new()).collect(),
    })
}

/// Which rules have a trigger in `text`, ignoring ASCII case.
///
/// One SIMD substring search per trigger over a lowercased copy. Every hook pays for the set-up,
/// and an Aho-Corasick automaton costs more to build (0.37M instructions for the NFA, 1M for
/// the DFA) than this takes on a 5 KB payload, then scans 1 MB 4-10x slower. The copy is made
/// a window at a time (windows overlap by a trigger's length) so a 50 MB response needs no
/// second 50 MB.
fn triggered(c: &Compiled, text: &str) -> [bool; RULES.len()] {
    const WINDOW: usize = 64 * 1024;
    let bytes = text.as_bytes();
    let mut hit = [false; RULES.len()];
    let mut lower = Vec::with_capacity(WINDOW.min(bytes.len()));
    let mut start = 0;
    loop {
        let end = (start + WINDOW).min(bytes.len());
        lower.clear();
        lower.extend(bytes[start..end].iter().map(u8::to_ascii_lowercase));
        for (h, finders) in hit.iter_mut().zip(&c.triggers) {
            *h = *h || finders.iter().any(|f| f.find(&lower).is_some());
        }
        if end == bytes.len() {
            return hit;
        }
        start = end + 1 - c.longest;
    }
}

/// Replaces every secret in `text` with `[REDACTED:<kind>]`.
pub fn redact_str(text: &str) -> Cow<'_, str> {
    let c = compiled();
    let hit = triggered(c, text);
    let mut out = Cow::Borrowed(text);
    for (i, rule) in RULES.iter().enumerate().filter(|(i, _)| hit[*i]) {
        let re = c.regexes[i].get_or_init(|| Regex::new(rule.pattern).expect("static pattern"));
        if re.is_match(&out) {
            let marker = format!("[REDACTED:{}]", rule.kind);
            let rep = rule.replace.replace("{}", &marker);
            out = Cow::Owned(re.replace_all(&out, rep.as_str()).into_owned());
        }
    }
    out
}

/// Redacts every string inside a JSON value, in place.
pub fn redact_value(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::String(s) => {
            if let Cow::Owned(r) = redact_str(s) {
                *s = r;
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(redact_value),
        serde_json::Value::Object(o) => o.values_mut().for_each(redact_value),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            assert_eq!(redact_str(input), want, "input: {input}");
        }
    }

    #[test]
    fn triggers_are_found_across_scan_windows_and_in_any_case() {
        // A trigger straddling the 64 KiB window edge, in upper case, near the end of 200 KiB.
        for at in [64 * 1024 - 3, 128 * 1024 - 1, 200 * 1024 - 40] {
            let mut text = "x".repeat(200 * 1024);
            text.replace_range(at..at + 22, " AKIAIOSFODNN7EXAMPLE ");
            let out = redact_str(&text);
            assert!(
                out.contains("[REDACTED:aws_access_key]"),
                "secret at {at} missed"
            );
            assert_eq!(
                out.len(),
                text.len() - 20 + "[REDACTED:aws_access_key]".len()
            );
        }
    }

    #[test]
    fn private_key_blocks_go_whole() {
        let text =
            "a\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nabc\n-----END RSA PRIVATE KEY-----\nb";
        assert_eq!(redact_str(text), "a\n[REDACTED:private_key]\nb");
    }

    #[test]
    fn redaction_is_idempotent() {
        let once =
            redact_str("password=hunter22 sk-ant-api03-abcdefghijklmnopqrstuvwxyz").into_owned();
        assert_eq!(redact_str(&once), once);
    }
}
