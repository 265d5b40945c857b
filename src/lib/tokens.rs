//! Token estimates for budgets and accounting.
//!
//! `estimate` is deliberately simple and fast: about one token per 4 bytes of ASCII text (the
//! usual ratio of BPE tokenizers on English and code), one per non-ASCII character (CJK and
//! symbols are roughly a token each), and never fewer than the number of words. It errs high
//! on short strings so budgets are kept. A later issue calibrates it against the Qwen3
//! tokenizer.

/// Estimated token count of `text`.
pub fn estimate(text: &str) -> usize {
    if text.is_empty() {
        return 0;
    }
    let mut ascii = 0usize;
    let mut other = 0usize;
    let mut words = 0usize;
    let mut in_word = false;
    for c in text.chars() {
        if c.is_ascii() {
            ascii += 1;
        } else {
            other += 1;
        }
        let w = !c.is_whitespace();
        if w && !in_word {
            words += 1;
        }
        in_word = w;
    }
    (ascii.div_ceil(4) + other).max(words)
}

#[cfg(test)]
mod tests {
    use super::estimate;

    #[test]
    fn estimates_grow_with_text() {
        assert_eq!(estimate(""), 0);
        assert_eq!(estimate("a b c d e"), 5);
        assert_eq!(estimate("abcdefgh"), 2);
        assert!(estimate("日本語") >= 3);
        assert!(estimate(&"x".repeat(4000)) == 1000);
    }
}
