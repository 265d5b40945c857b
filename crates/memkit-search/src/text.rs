//! What a record's text is to the indexes and the vectors: the one text BM25 indexes and the
//! model embeds, the windows a long text is embedded in, and how vectors compare. Below `embed`,
//! `index` and `search`, which all use it.

/// The text of a record as one piece: the title, the body parts, then the extras (concepts, tags,
/// files) on one line. `once`: leave out a title or an extra the body already says (what is
/// embedded: a model's window is short, and a note's generated title is its first sentence).
/// BM25 keeps them all, in one field: a word the title or the concepts repeat then counts once
/// more in one saturating term-frequency, not once more per field (measured when search quality
/// was tuned, aeebcfe, 2026-11-23: dropping them cost nDCG@10 on both development sets).
pub fn searchable_text(title: &str, body: &[&str], extras: &[&str], once: bool) -> String {
    let body: Vec<&str> = body
        .iter()
        .map(|b| b.trim())
        .filter(|b| !b.is_empty())
        .collect();
    let said = if once {
        body.join("\n").to_lowercase()
    } else {
        String::new()
    };
    let said_already = |s: &str| once && said.contains(&s.trim().to_lowercase());
    let keep = |s: &str| !s.trim().is_empty() && !said_already(s);
    let mut parts: Vec<String> = Vec::with_capacity(body.len() + 2);
    if keep(title) {
        parts.push(title.trim().to_string());
    }
    parts.extend(body.iter().map(|b| b.to_string()));
    let extras: Vec<&str> = extras
        .iter()
        .map(|e| e.trim())
        .filter(|e| keep(e))
        .collect();
    if !extras.is_empty() {
        parts.push(extras.join(", "));
    }
    parts.join("\n")
}

/// Most windows one record is embedded in (a record longer than that is found by its first
/// windows' worth of meaning, and by BM25 over all of it).
pub const MAX_WINDOWS: usize = 8;

/// `text` (the document prefix included) cut into windows of about `max_tokens` tokens, words
/// kept whole, overlapping a little: the first is the text itself (the model reads its start,
/// as before chunking, so the vectors of short records do not change), the others start where
/// the model stopped reading. Tokens are estimated at 4 for 3 words, on the low side for
/// English prose, so a window fits.
pub fn windows(text: &str, prefix: &str, max_tokens: usize) -> Vec<String> {
    let body = text.strip_prefix(prefix).unwrap_or(text);
    let words: Vec<&str> = body.split_whitespace().collect();
    let per = (max_tokens.max(16) * 3 / 4).saturating_sub(8).max(8);
    let overlap = per / 8;
    let mut out = vec![text.to_string()];
    let mut start = per - overlap;
    while start + overlap < words.len() && out.len() < MAX_WINDOWS {
        let end = (start + per).min(words.len());
        out.push(format!("{prefix}{}", words[start..end].join(" ")));
        start = end - overlap;
    }
    out
}

/// Cosine similarity of two vectors; 0 when their dimensions differ (vectors of two models)
/// or one is all zeros.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() {
        return 0.0;
    }
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (na * nb).max(f32::MIN_POSITIVE)
}

/// The best cosine of `q` with the windows in `flat` (vectors one after the other).
pub fn best_window(q: &[f32], flat: &[f32]) -> Option<f32> {
    flat.chunks_exact(q.len())
        .map(|w| cosine(q, w))
        .reduce(f32::max)
}
