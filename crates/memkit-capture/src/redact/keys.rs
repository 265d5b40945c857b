//! Key blocks (PEM and PuTTY, also without their END line) and crypt-style password hashes.

use std::ops::Range;

/// A key block, or what a cut left of one (`head -5 id_rsa`): the base64 and header lines
/// after BEGIN.
pub(super) const KEY_BLOCK: &str = r"(?s)-{4,5} ?BEGIN (?:[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?|OpenVPN Static key V1) ?-{4,5}(?:.*?-{4,5} ?END (?:[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?|OpenVPN Static key V1) ?-{4,5}|(?:(?:\r?\n|(?:\\r)?\\n)[ \t]*(?:[A-Za-z0-9+/=]+|[A-Za-z][A-Za-z0-9-]*: ?[^\r\n\\]*)?)*)";

/// A PuTTY key file's private lines.
pub(super) const PUTTY_KEY: &str = r"Private-Lines: *[0-9]+(?:\r?\n[A-Za-z0-9+/=]+)*";

/// Crypt-style password hashes: `$2b$12$…` (bcrypt), `$6$salt$…` (SHA-512 crypt), `$y$…`
/// (yescrypt), `$argon2id$v=19$…`, `$apr1$…` (htpasswd).
pub(super) fn hash_spans(hay: &str) -> Vec<(Range<usize>, &'static str)> {
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
