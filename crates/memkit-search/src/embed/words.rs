//! A prompt's vector without the model: each word of the store's records is run through the
//! embedding model alone once, when mem-embed has the model loaded, and kept in the store. A
//! process that cannot afford a model load (a hook: Qwen3-Embedding-0.6B takes about 0.5 s to
//! load) adds up its prompt's word vectors, each weighed by how rare the word is in the store,
//! less the mean of all word vectors (what every word shares, which would otherwise pull every
//! prompt toward the same records). The sum lands in the model's own space, so it searches the
//! vector index the records already have; no second index is kept.
//!
//! Measured on musique-100 and locomo-dev with MiniLM (2026-12, best of top 3 against the
//! records' own vectors, one scope at a time): the words' sum finds .87 and .42 of the
//! questions where the model's own query vector finds .88 and .33; without the mean taken off,
//! .66 and .29; weighing every word alike, .58 and .31. The store's own words carry it: the
//! model's whole vocabulary without them found .63 on musique-100, where names decide.
//!
//! Its cosines run lower than the model's own query vector's, so it has a floor of its own,
//! measured per store ([`calibrate`]): what three of the store's words picked at random reach.

use std::collections::HashMap;

use rusqlite::Connection;

use memkit_core::Result;
use memkit_core::store::{self, words as table};

use super::{Embedder, Manifest};

/// Longer words are identifiers, hashes and paths, which BM25 finds by their letters.
const LONGEST: usize = 24;
/// Words run through the model at once.
const BATCH: usize = 256;

/// The distinct words of `text` that are distilled: lowercase, letters only, 2 to
/// [`LONGEST`] characters.
pub fn words(text: &str) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| {
            let n = w.chars().count();
            (2..=LONGEST).contains(&n) && w.chars().all(char::is_alphabetic)
        })
        .map(str::to_lowercase)
        .filter(|w| seen.insert(w.clone()))
        .collect()
}

/// A vector as int8 with one scale (f32, little-endian) in front: a quarter of f32's bytes, and
/// a sum of words does not need more.
pub fn encode(v: &[f32]) -> Vec<u8> {
    let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
    let scale = if max > 0.0 { max / 127.0 } else { 1.0 };
    let mut out = scale.to_le_bytes().to_vec();
    out.extend(
        v.iter()
            .map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8 as u8),
    );
    out
}

/// [`encode`]'s bytes back as floats; `None` for a blob of another dimension.
pub fn decode(b: &[u8], dim: usize) -> Option<Vec<f32>> {
    if b.len() != dim + 4 {
        return None;
    }
    let scale = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    Some(b[4..].iter().map(|&x| x as i8 as f32 * scale).collect())
}

/// `meta` keys: the mean word vector with how many words it is over, the records counted,
/// whether the records embedded before words were counted have been, and the floor.
fn mean_key(model: &str, dim: usize) -> String {
    format!("word_mean:{model}:{dim}")
}
fn records_key(model: &str, dim: usize) -> String {
    format!("word_records:{model}:{dim}")
}
fn backfill_key(model: &str, dim: usize) -> String {
    format!("word_backfill:{model}:{dim}")
}
pub fn floor_key(model: &str, dim: usize) -> String {
    format!("word_floor:{model}:{dim}")
}

fn meta_num(conn: &Connection, key: &str) -> Result<Option<f64>> {
    Ok(store::meta_get(conn, key)?.and_then(|v| v.split_whitespace().next()?.parse().ok()))
}

/// Whether the records embedded before this store counted its words are still to be counted:
/// the caller then hands [`count`] every record's text, not only the new ones.
pub fn backfill_due(conn: &Connection, model: &str, dim: usize) -> Result<bool> {
    Ok(store::meta_get(conn, &backfill_key(model, dim))?.is_none())
}

/// Counts each word of `texts` once per text (the records just embedded, or every record
/// when [`backfill_due`]), in one transaction.
pub fn count(conn: &mut Connection, model: &str, dim: usize, texts: &[&str]) -> Result<()> {
    let mut counts: HashMap<String, u64> = HashMap::new();
    for t in texts {
        for w in words(t) {
            *counts.entry(w).or_default() += 1;
        }
    }
    let backfill = backfill_due(conn, model, dim)?;
    store::write_tx(conn, |tx| {
        table::add_counts(tx, model, dim, &counts)?;
        let n = meta_num(tx, &records_key(model, dim))?.unwrap_or(0.0) + texts.len() as f64;
        store::meta_put(tx, &records_key(model, dim), &n.to_string())?;
        if backfill {
            store::meta_put(tx, &backfill_key(model, dim), "done")?;
        }
        Ok(())
    })
}

/// Pending observations whose words [`distil_ahead`] looks at, the newest first, with every
/// record newer than the last of them: about ten runs' worth with the 0.6B-size graph.
/// Measured on the first-day bench, the words of the next 5,000 took a quarter of every run
/// for 16 runs (20,000 words), and the newest 1,000 records waited for their own vectors past
/// 900 s where 620 s had done.
pub const AHEAD: usize = 1_000;

/// Runs the words of `texts` (the newest records waiting for their own vectors, newest first)
/// that have no vector yet through the model, in that order, a batch at a time until `until`,
/// the first batch whatever the time: a run whose model load and floor took its budget (a slow
/// or busy machine) still moves the hooks' signal on, as it still embeds one batch of records.
/// During a backlog a run spends its whole budget on records and [`distil`] never starts, so
/// a hook's prompt about today's work would have no vector for hours: the words of the
/// records next in line come first. A word is counted only once a record holding it has its
/// own vector ([`count`]); until then it weighs nothing in a prompt ([`query_vector`]).
pub fn distil_ahead(
    conn: &mut Connection,
    e: &mut Embedder,
    m: &Manifest,
    dim: usize,
    texts: &[&str],
    until: std::time::Instant,
) -> Result<usize> {
    let mut seen = std::collections::HashSet::new();
    let all: Vec<String> = texts
        .iter()
        .flat_map(|t| words(t))
        .filter(|w| seen.insert(w.clone()))
        .collect();
    let mut done = 0;
    for batch in table::missing(conn, &m.name, dim, &all)?.chunks(BATCH) {
        if done > 0 && std::time::Instant::now() >= until {
            break;
        }
        done += distil_batch(conn, e, m, dim, batch)?;
    }
    Ok(done)
}

/// Runs `batch` through the model and stores the words' vectors, in one transaction.
fn distil_batch(
    conn: &mut Connection,
    e: &mut Embedder,
    m: &Manifest,
    dim: usize,
    batch: &[String],
) -> Result<usize> {
    let texts: Vec<String> = batch
        .iter()
        .map(|w| format!("{}{w}", m.document_prefix))
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let vecs = e.embed(&refs)?;
    store::write_tx(conn, |tx| put(tx, &m.name, dim, batch, &vecs))?;
    Ok(batch.len())
}

/// Whether some counted word still waits for its vector.
pub fn due(conn: &Connection, model: &str, dim: usize) -> Result<bool> {
    Ok(!table::undistilled(conn, model, dim, 1)?.is_empty())
}

/// Runs the counted words through the model, the most common first, a batch at a time until
/// `until` (a pipeline run's budget, which the records' own vectors come first in), a
/// transaction per batch: a run stopped or killed keeps what it stored, and the next goes on.
/// Measures the floor again after. Returns how many were distilled.
pub fn distil(
    conn: &mut Connection,
    e: &mut Embedder,
    m: &Manifest,
    dim: usize,
    until: Option<std::time::Instant>,
) -> Result<usize> {
    let mut done = 0;
    loop {
        if until.is_some_and(|t| std::time::Instant::now() >= t) {
            break;
        }
        let batch = table::undistilled(conn, &m.name, dim, BATCH)?;
        if batch.is_empty() {
            break;
        }
        done += distil_batch(conn, e, m, dim, &batch)?;
    }
    if done > 0 {
        calibrate(conn, &m.name, dim)?;
    }
    Ok(done)
}

/// Stores counted words' vectors and keeps the running mean over every distilled word beside
/// them (call it in a transaction).
pub fn put(
    conn: &Connection,
    model: &str,
    dim: usize,
    words: &[String],
    vecs: &[Vec<f32>],
) -> Result<()> {
    let (mut mean, n) = mean_of(conn, model, dim)?.unwrap_or((vec![0.0; dim], 0));
    for (w, v) in words.iter().zip(vecs) {
        table::put(conn, model, dim, w, &encode(v))?;
    }
    let total = n + vecs.len();
    for (i, x) in mean.iter_mut().enumerate() {
        let sum: f32 = vecs.iter().map(|v| v[i]).sum();
        *x = (*x * n as f32 + sum) / total as f32;
    }
    let text: Vec<String> = std::iter::once(total.to_string())
        .chain(mean.iter().map(f32::to_string))
        .collect();
    store::meta_put(conn, &mean_key(model, dim), &text.join(" "))
}

/// Up to `n` counted words still without a vector, the most common first.
pub fn undistilled(conn: &Connection, model: &str, dim: usize, n: usize) -> Result<Vec<String>> {
    table::undistilled(conn, model, dim, n)
}

/// The mean word vector and how many words it is over.
fn mean_of(conn: &Connection, model: &str, dim: usize) -> Result<Option<(Vec<f32>, usize)>> {
    let Some(text) = store::meta_get(conn, &mean_key(model, dim))? else {
        return Ok(None);
    };
    let mut parts = text.split_whitespace();
    let n: usize = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let mean: Vec<f32> = parts.filter_map(|p| p.parse().ok()).collect();
    Ok((mean.len() == dim).then_some((mean, n)))
}

/// The vector of `text` from its words' vectors (see the module doc); `None` when the store
/// has no vector for any of its words.
pub fn query_vector(
    conn: &Connection,
    model: &str,
    dim: usize,
    text: &str,
) -> Result<Option<Vec<f32>>> {
    let ws = words(text);
    let refs: Vec<&str> = ws.iter().map(String::as_str).collect();
    let got = table::get(conn, model, dim, &refs)?;
    if got.is_empty() {
        return Ok(None);
    }
    let Some((mean, _)) = mean_of(conn, model, dim)? else {
        return Ok(None);
    };
    let records = meta_num(conn, &records_key(model, dim))?
        .unwrap_or(1.0)
        .max(1.0);
    let mut sum = vec![0f32; dim];
    for (blob, df) in got.values() {
        // Distilled ahead of its records' own vectors (distil_ahead): nothing to point at yet.
        if *df == 0 {
            continue;
        }
        let Some(v) = decode(blob, dim) else { continue };
        let df = (*df as f64).min(records);
        // BM25's IDF: a word in every record weighs next to nothing.
        let idf = (1.0 + (records - df + 0.5) / (df + 0.5)).ln() as f32;
        for ((s, x), m) in sum.iter_mut().zip(&v).zip(&mean) {
            *s += idf * (x - m);
        }
    }
    let norm = sum.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm == 0.0 || !norm.is_finite() {
        return Ok(None);
    }
    Ok(Some(sum.into_iter().map(|x| x / norm).collect()))
}

/// Probes of three words each for the floor.
const PROBES: usize = 24;

/// Measures the floor of word-sum queries on this store: [`PROBES`] queries of three of its
/// words, spread over the alphabet, each compared with (a sample of) the records' vectors;
/// the floor is the median of their best cosines. Random words of the store come closer to its
/// records than unrelated text does (each is in some record), so a prompt that reaches no
/// further than half of them is about nothing in particular here. Kept in `meta`.
pub fn calibrate(conn: &Connection, model: &str, dim: usize) -> Result<()> {
    let n = table::count(conn, model, dim)?;
    if n < PROBES * 3 {
        return Ok(());
    }
    let picked = table::spread(conn, model, dim, n / (PROBES * 3), PROBES * 3)?;
    let sample = store::embeddings::sample(conn, model, dim, 5000)?;
    if sample.is_empty() || picked.len() < PROBES * 3 {
        return Ok(());
    }
    let mut best: Vec<f32> = Vec::new();
    for i in 0..PROBES.min(picked.len() / 3) {
        let probe = format!(
            "{} {} {}",
            picked[i],
            picked[i + PROBES],
            picked[(i + 2 * PROBES) % picked.len()]
        );
        let Some(q) = query_vector(conn, model, dim, &probe)? else {
            continue;
        };
        let top = sample
            .iter()
            .filter_map(|v| crate::text::best_window(&q, &v.2))
            .fold(f32::MIN, f32::max);
        best.push(top);
    }
    if best.is_empty() {
        return Ok(());
    }
    best.sort_by(f32::total_cmp);
    let floor = (best[best.len() / 2] * 100.0).round() / 100.0;
    store::meta_put(conn, &floor_key(model, dim), &format!("{floor} {n}"))
}

/// The floor [`calibrate`] measured, if any.
pub fn floor(conn: &Connection, model: &str, dim: usize) -> Result<Option<f64>> {
    meta_num(conn, &floor_key(model, dim))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_distinct_lowercase_letters_of_a_readable_length() {
        assert_eq!(
            words("Fix the parse_config bug in Parser.rs: the BUG is 0x1f, a2b and x"),
            [
                "fix", "the", "parse", "config", "bug", "in", "parser", "rs", "is", "and"
            ]
        );
        assert!(words(&"a".repeat(LONGEST + 1)).is_empty());
    }

    #[test]
    fn the_floor_is_measured_on_counted_words_whatever_was_distilled_ahead() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = store::open(&dir.path().join("mem.db")).unwrap();
        let dim = 8;
        let vec_of =
            |i: usize| -> Vec<f32> { (0..dim).map(|d| ((i * 7 + d) % 5) as f32 - 2.0).collect() };
        // Many words distilled ahead of their records, few counted: a floor was measured with
        // more probes than counted words and failed out of bounds.
        let ahead: Vec<String> = (0..200)
            .map(|i| format!("ahead{}", char::from(b'a' + (i % 26) as u8)).repeat(1 + i / 26))
            .collect();
        let vecs: Vec<Vec<f32>> = (0..ahead.len()).map(vec_of).collect();
        store::write_tx(&conn, |tx| put(tx, "m", dim, &ahead, &vecs)).unwrap();
        count(&mut conn, "m", dim, &["aheada aheadb aheadc", "aheadd"]).unwrap();
        store::embeddings::put(&conn, "observation", 1, "m", dim, &vec_of(3), "h").unwrap();
        calibrate(&conn, "m", dim).unwrap();
        assert_eq!(floor(&conn, "m", dim).unwrap(), None);
        // Once enough are counted, it is measured.
        let texts: Vec<&str> = ahead.iter().map(String::as_str).collect();
        count(&mut conn, "m", dim, &texts).unwrap();
        calibrate(&conn, "m", dim).unwrap();
        assert!(floor(&conn, "m", dim).unwrap().is_some());
    }

    #[test]
    fn a_vector_survives_its_int8_encoding_to_within_a_step() {
        let v: Vec<f32> = (0..384)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) / 97.0)
            .collect();
        let back = decode(&encode(&v), 384).unwrap();
        let step = 50.0 / 97.0 / 127.0;
        assert!(v.iter().zip(&back).all(|(a, b)| (a - b).abs() <= step));
        assert!(decode(&encode(&v), 383).is_none());
    }
}
