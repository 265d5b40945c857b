//! Is a literal the secret, or a test value? Code samples are full of `password='testpassword'`,
//! `auth=('user', 'pass')` and `'Bearer valid_token'`: values a person typed to show the shape
//! of a secret. A real one, as a password manager or a key generator makes it, has several
//! character classes, a random string's entropy, and letters that are not words: what gitleaks'
//! generic rules ask of a value too.

use super::judge::{NAME_FILLER, entropy, is_placeholder, name_words, word_like};

/// Words whose presence in a value says it names or stands for a secret rather than being one
/// (`mysecretpassword`, `some_token`, `fakehashedsecret`, `example-password`).
pub(super) const STAND_IN_WORDS: &[&str] = &[
    "password",
    "passwd",
    "secret",
    "token",
    "apikey",
    "changeme",
    "example",
    "placeholder",
    "dummy",
    "sample",
    "test",
    "fake",
    "mock",
    "demo",
];

/// The value spelled with letters and digits only, lowercase: `my_API-key` is `myapikey`.
fn folded(v: &str) -> String {
    v.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// The value repeats its key's name: `my_api_key` under `apiKey`, `some_token` under
/// `token`, `mysecretpassword` under `password`.
pub(super) fn repeats_name(v: &str, name: &str) -> bool {
    let f = folded(v);
    let words = name_words(name);
    !f.is_empty()
        && words
            .iter()
            .filter(|w| {
                w.len() >= 4
                    && !NAME_FILLER.contains(&w.as_str())
                    && !matches!(
                        w.as_str(),
                        "access" | "client" | "private" | "session" | "user"
                    )
            })
            .any(|w| f.contains(w.as_str()))
}

/// The value holds a word that stands for a secret (`fakehashedsecret`, `example-password`).
fn has_stand_in_word(v: &str) -> bool {
    let f = folded(v);
    STAND_IN_WORDS.iter().any(|w| f.contains(w))
}

/// A run of letters a person would read as a word: camelCase humps at most, a vowel, and no
/// four consonants in a row (`hunter`, `Welcome`, `bsPass`; not `kqzmxv` or `aBcDeF`).
fn reads_as_word(run: &str) -> bool {
    if run.len() < 3 || !word_like(run) {
        return false;
    }
    let mut consonants = 0;
    let mut vowel = false;
    for c in run.bytes().map(|c| c.to_ascii_lowercase()) {
        if b"aeiouy".contains(&c) {
            vowel = true;
            consonants = 0;
        } else {
            consonants += 1;
            if consonants >= 4 {
                return false;
            }
        }
    }
    vowel
}

/// Words with digits or symbols around them (`hunter22`, `Welcome2024!`, `admin123`,
/// `secure_password123`): words joined by `_`, `-`, `.`, with digits and symbols only before
/// and after them. `abc123def` and `B0bsPass` mix them and are not.
pub(super) fn words_with_digits(v: &str) -> bool {
    let core = v.trim_matches(|c: char| !c.is_ascii_alphabetic());
    let parts: Vec<&str> = core.split(['_', '-', '.']).collect();
    !core.is_empty()
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|c| c.is_ascii_alphabetic()))
        && parts.iter().any(|p| reads_as_word(p))
        && parts.iter().all(|p| {
            reads_as_word(p) || (p.len() <= 2 && p.bytes().all(|c| c.is_ascii_lowercase()))
        })
}

/// Letters, capitals, digits, anything else: how many of the four a value has.
fn classes(v: &str) -> usize {
    let b = v.as_bytes();
    [
        b.iter().any(u8::is_ascii_lowercase),
        b.iter().any(u8::is_ascii_uppercase),
        b.iter().any(u8::is_ascii_digit),
        b.iter().any(|c| !c.is_ascii_alphanumeric()),
    ]
    .into_iter()
    .filter(|x| *x)
    .count()
}

/// A literal under a secret's name that is the secret: not a placeholder, not words or words
/// with digits, not its key's name again; three character classes (two from 16 characters on,
/// as hex keys have) and the entropy of a random string of its length.
pub(super) fn real_literal(v: &str, name: &str) -> bool {
    let n = v.chars().count();
    if !(6..=256).contains(&n)
        || v.contains(char::is_whitespace)
        || is_placeholder(v)
        || repeats_name(v, name)
        || has_stand_in_word(v)
        || words_with_digits(v)
    {
        return false;
    }
    let c = classes(v);
    if c < 2 || (c == 2 && n < 16) {
        return false;
    }
    // Measured against the most its alphabet allows (hex: 4 bits a character).
    let b = v.as_bytes();
    let hex = b.iter().all(u8::is_ascii_hexdigit)
        && !(b.iter().any(u8::is_ascii_lowercase) && b.iter().any(u8::is_ascii_uppercase));
    let alphabet = if hex { 16 } else { 64 };
    entropy(b) >= 0.75 * (n.min(alphabet) as f64).log2()
}

/// A value that only names or stands for a secret: a placeholder, words (`postgres`,
/// `valid_token`), words with digits, or its key's name again. What a URL's password, a query
/// parameter and a header's credential are judged by.
pub(super) fn stand_in(v: &str, name: &str) -> bool {
    is_placeholder(v)
        || repeats_name(v, name)
        || has_stand_in_word(v)
        || words_with_digits(v)
        || v.chars().count() < 4
}
