//! What a name or a value says: whether a name is a secret's, and whether a value is code,
//! a placeholder, prose or random. Shared by the assignment, header, URL and prose families.

/// Values that are types, keywords or literals, not secrets (`password: str`, `token = None`).
pub(super) const KEYWORDS: &[&str] = &[
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
pub(super) const NAME_FILLER: &[&str] = &[
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
pub(super) const SECRET_KEY_PREFIXES: &[&str] = &[
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
pub(super) enum Strength {
    /// Any value but code and placeholders is the secret (`password`, `api_key`, `*_token`).
    Strong,
    /// Only a value that looks random (`STRIPE_KEY`, `cache_key`).
    Weak,
}

/// Lowercase words of an identifier: split at non-alphanumerics and camelCase humps.
pub(super) fn name_words(name: &str) -> Vec<String> {
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
pub(super) fn classify_name(name: &str) -> Option<(Strength, &'static str)> {
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

/// An empty value, a mask (`****`, `xxxx-xxxx`), a marker, a reference to the secret rather
/// than the secret itself (`$DB_PASSWORD`, `${TOKEN}`, `%PASS%`, `{{ .token }}`, `{password}`,
/// `%(password)s`), or words that ask for one (`<your-key>`, `[Your Password]`, `YOUR_API_KEY`,
/// `your-secret-key-here`, `changeme`).
pub(super) fn is_placeholder(v: &str) -> bool {
    let t = v.trim();
    let lower = t.to_ascii_lowercase();
    let enclosed = |o: char, c: char| t.len() >= 2 && t.starts_with(o) && t.ends_with(c);
    t.is_empty()
        || t.contains("[REDACTED:")
        || t.chars()
            .all(|c| matches!(c, '*' | 'x' | 'X' | '•' | '.' | '#' | '-' | '_' | '?'))
        || t.starts_with('$')
        || (t.starts_with('%') && t.ends_with('%'))
        || t.starts_with("{{")
        || enclosed('<', '>')
        || enclosed('[', ']')
        || enclosed('{', '}')
        || (t.starts_with("%(") && t.ends_with(")s"))
        || KEYWORDS.contains(&lower.as_str())
        || PLACEHOLDER_WORDS.contains(&lower.as_str())
        || asks_for_one(t)
        || is_constant_name(t)
}

/// Values that stand for any secret.
const PLACEHOLDER_WORDS: &[&str] = &[
    "changeme",
    "change_me",
    "change-me",
    "changeit",
    "example",
    "placeholder",
    "dummy",
    "sample",
    "test",
    "testing",
    "secret",
    "password",
    "passwd",
    "token",
    "foo",
    "bar",
    "foobar",
    "todo",
    "tbd",
];

/// Words telling the reader to put their own secret there: `your_api_key`, `YourToken`,
/// `my-secret-key`, `insert_token_here`.
fn asks_for_one(t: &str) -> bool {
    const FIRST: [&str; 9] = [
        "your", "my", "some", "insert", "enter", "replace", "put", "paste", "add",
    ];
    let starts = |w: &str| t.get(..w.len()).is_some_and(|p| p.eq_ignore_ascii_case(w));
    if !FIRST.iter().any(|w| starts(w)) {
        return false;
    }
    let words = name_words(t);
    let Some(first) = words.first() else {
        return false;
    };
    words.len() >= 2
        && FIRST.contains(&first.as_str())
        && words.iter().all(|w| {
            w.bytes().all(|c| c.is_ascii_lowercase()) || w.bytes().all(|c| c.is_ascii_digit())
        })
}

/// `YOUR_API_KEY`, `API_TOKEN`: the name of a secret (an environment variable, a docs
/// placeholder), not one.
pub(super) fn is_constant_name(t: &str) -> bool {
    t.len() >= 3
        && t.bytes().all(|c| c.is_ascii_uppercase() || c == b'_')
        && (t.contains('_')
            || ["KEY", "TOKEN", "SECRET", "PASSWORD", "YOUR"]
                .iter()
                .any(|w| t.contains(w)))
}

/// Words of a sentence, not a secret: a label or a message (`"Enter your password"`,
/// `'You do not have permission to perform this action'`). A passphrase has no such words.
pub(super) fn is_prose(v: &str) -> bool {
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
pub(super) fn is_code(v: &str, name: &str) -> bool {
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
pub(super) fn word_like(s: &str) -> bool {
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

pub(super) fn is_path_or_url(v: &str) -> bool {
    v.contains("://") || v.starts_with(['/', '~']) || v.starts_with("./") || v.starts_with("../")
}

/// A value that holds a random part rather than words, numbers and hashes (a cache key like
/// `setup-uv-1-x86_64-3a5f…` is none): for names that only may be secrets.
pub(super) fn looks_random(v: &str) -> bool {
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
pub(super) fn password_like(v: &str) -> bool {
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

pub(super) fn base64_decode(s: &str) -> Option<Vec<u8>> {
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

/// Shannon entropy in bits per character.
pub(super) fn entropy(s: &[u8]) -> f64 {
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
