//! Token estimates for budgets and accounting, without loading a tokenizer (a hook cannot
//! afford the Qwen3 tokenizer's 11 MB of JSON).
//!
//! Byte-level BPE tokenizers (Qwen3's, GPT's) first split text with a regex into pieces — a
//! word with its leading space, a single digit, a run of punctuation, a run of whitespace — and
//! almost every piece of ordinary text is then one token. So `estimate` walks the same pieces
//! and charges one token each, more for long words (split into sub-words), long mixed
//! punctuation runs, and non-ASCII letters; a run of one repeated character (`=====`) is
//! charged as BPE merges it, about one token per 16. Measured against the real Qwen3 tokenizer
//! on the fixture text (the test `the_token_estimate_stays_within_15_percent_of_the_qwen3_tokenizer`)
//! it is within ±15% on every text over 400 characters, and the 5% margin below makes it err
//! high rather than low, so budgets hold.

/// Estimated token count of `text`.
pub fn estimate(text: &str) -> usize {
    let mut cost = 0.0f64;
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        let mut ahead = rest.chars();
        ahead.next();
        let next = ahead.clone().next();
        // Contractions: 's 't 're 've 'm 'll 'd.
        if c == '\''
            && let Some(x) = next.filter(|x| "stmdrvlSTMDRVL".contains(*x))
        {
            let mut after = ahead.clone();
            after.next();
            if "rvlRVL".contains(x) {
                after.next();
            }
            if !after.clone().next().is_some_and(char::is_alphabetic) {
                cost += 1.0;
                rest = after.as_str();
                continue;
            }
        }
        // A word, with the one non-letter (space, `_`, `.`) that may lead it.
        let leads_word = !matches!(c, '\r' | '\n')
            && !c.is_alphanumeric()
            && next.is_some_and(char::is_alphabetic);
        if c.is_alphabetic() || leads_word {
            let word = if c.is_alphabetic() {
                rest
            } else {
                ahead.as_str()
            };
            let end = word
                .find(|x: char| !x.is_alphabetic())
                .unwrap_or(word.len());
            cost += word_cost(&word[..end]);
            rest = &word[end..];
            continue;
        }
        if c.is_numeric() {
            cost += 1.0;
            rest = ahead.as_str();
            continue;
        }
        if c.is_whitespace() {
            let end = rest
                .find(|x: char| !x.is_whitespace())
                .unwrap_or(rest.len());
            // A lone space before a word or punctuation is part of that piece.
            let joins = c == ' ' && end == 1 && !rest[1..].starts_with(|x: char| x.is_numeric());
            if !joins {
                cost += 1.0;
            }
            rest = &rest[end..];
            continue;
        }
        let end = rest
            .find(|x: char| x.is_whitespace() || x.is_alphanumeric())
            .unwrap_or(rest.len());
        let run = &rest[..end];
        let len = run.chars().count();
        cost += if run.chars().all(|x| x == c) {
            (len as f64 / 16.0).ceil()
        } else {
            match len {
                1 => 1.0,
                2 => 1.1,
                3 => 1.25,
                _ => len as f64 / 2.0,
            }
        };
        rest = &rest[end..];
    }
    (cost * 1.05).ceil() as usize
}

fn word_cost(w: &str) -> f64 {
    let len = w.chars().count();
    if len == 0 {
        return 1.0;
    }
    let ascii = w.bytes().filter(u8::is_ascii).count();
    if ascii < len {
        return (ascii as f64 / 6.0).ceil().max(1.0) + 0.8 * (len - ascii) as f64;
    }
    match len {
        0..=8 => 1.0,
        9..=10 => 1.15,
        _ => 1.0 + (len as f64 - 7.0) / 4.0,
    }
}

#[cfg(test)]
mod tests {
    use super::estimate;

    #[test]
    fn estimates_follow_the_pieces_a_bpe_tokenizer_makes() {
        assert_eq!(estimate(""), 0);
        // Five short words: five tokens (plus the margin).
        assert_eq!(estimate("fix the login bug now"), 6);
        // Digits are one token each; a run of one character merges.
        assert!(estimate("2026-11-23") >= 10);
        assert!(estimate(&"=".repeat(64)) <= 5);
        // Long identifiers cost more than short words.
        assert!(estimate("internationalization_configuration") > estimate("go to it"));
        // Non-ASCII letters are roughly a token each.
        assert!(estimate("日本語のテキスト") >= 6);
        // It grows with text.
        assert!(estimate(&"word ".repeat(1000)) >= 1000);
    }
}
