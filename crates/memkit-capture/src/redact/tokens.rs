//! Layer 1: tokens whose prefix names them (`ghp_`, `npm_`, `AKIA`…), found in the runs of
//! token characters that layer 4 judges too.

use std::ops::Range;

/// A JSON Web Token: three base64url parts, the first two JSON objects.
pub(super) const JWT: &str = r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*";

/// A SendGrid key: `SG.` and two parts.
pub(super) const SENDGRID: &str = r"\bSG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}";

/// A HashiCorp Vault token.
pub(super) const VAULT: &str = r"\bhv[sbr]\.[A-Za-z0-9_\-]{20,}";

/// A Doppler token.
pub(super) const DOPPLER: &str = r"\bdp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{30,}";

/// A Telegram bot token: the bot's id, `:AA` and the secret.
pub(super) const TELEGRAM: &str = r"(?:\b|bot)([0-9]{8,10}:AA[A-Za-z0-9_\-]{30,})";

/// Tokens known by their prefix (case-sensitive): prefix, kind, and the least number of
/// characters after it.
pub(super) const PREFIXES: &[(&str, &str, usize)] = &[
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
pub(super) const ID_PREFIXES: &[&str] = &[
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

/// Byte classes of token characters: 1 lowercase, 2 uppercase, 4 digit, 8 `+ / _ -`.
pub(super) static CLASS: [u8; 256] = {
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
pub(super) type Run = (usize, usize, u8);

/// The first two bytes of each token prefix, one bit each.
pub(super) static PREFIX_PAIRS: [u64; 1024] = {
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
pub(super) fn long_runs(text: &str) -> Vec<Run> {
    let mut out = Vec::new();
    runs(text, 14, |s, e, m| out.push((s, e, m)));
    out
}

pub(super) fn runs(text: &str, min: usize, mut f: impl FnMut(usize, usize, u8)) {
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
pub(super) fn prefix_spans(text: &str, runs: &[Run]) -> Vec<(Range<usize>, &'static str)> {
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
