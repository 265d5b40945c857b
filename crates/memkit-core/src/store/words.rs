//! `word_vectors`: a word's vector from the embedding model, by (model, dim, word), with the
//! records that held it. A word is counted before it is distilled (its vector is empty until
//! then), so a count never waits on the model. The blob's layout is the search side's
//! (`memkit_search::embed::words`); the store only keeps it.

use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension, params};

use crate::Result;

/// Adds to the words' counts of records; a word not seen before is added without a vector.
pub fn add_counts(
    conn: &Connection,
    model: &str,
    dim: usize,
    counts: &HashMap<String, u64>,
) -> Result<()> {
    let mut st = conn.prepare_cached(
        "INSERT INTO word_vectors(model, dim, word, vector, df) VALUES (?1, ?2, ?3, x'', ?4)
         ON CONFLICT(model, dim, word) DO UPDATE SET df = df + excluded.df",
    )?;
    for (w, n) in counts {
        st.execute(params![model, dim as i64, w, *n as i64])?;
    }
    Ok(())
}

/// Up to `n` counted words still without a vector, the most common first.
pub fn undistilled(conn: &Connection, model: &str, dim: usize, n: usize) -> Result<Vec<String>> {
    let mut st = conn.prepare_cached(
        "SELECT word FROM word_vectors WHERE model=?1 AND dim=?2 AND length(vector) = 0
         ORDER BY df DESC, word LIMIT ?3",
    )?;
    let rows = st.query_map(params![model, dim as i64, n as i64], |r| r.get(0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Stores a word's vector blob; a word not counted yet is added with no records.
pub fn put(conn: &Connection, model: &str, dim: usize, word: &str, blob: &[u8]) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO word_vectors(model, dim, word, vector, df) VALUES (?1, ?2, ?3, ?4, 0)
         ON CONFLICT(model, dim, word) DO UPDATE SET vector = excluded.vector",
    )?
    .execute(params![model, dim as i64, word, blob])?;
    Ok(())
}

/// Those of `words` without a vector for (model, dim), counted or not, in their order.
pub fn missing(
    conn: &Connection,
    model: &str,
    dim: usize,
    words: &[String],
) -> Result<Vec<String>> {
    let mut st = conn.prepare_cached(
        "SELECT 1 FROM word_vectors WHERE model=?1 AND dim=?2 AND word=?3 AND length(vector) > 0",
    )?;
    let mut out = Vec::new();
    for w in words {
        if !st.exists(params![model, dim as i64, w])? {
            out.push(w.clone());
        }
    }
    Ok(out)
}

/// The blobs and counts of records of those of `words` that have a vector.
pub fn get(
    conn: &Connection,
    model: &str,
    dim: usize,
    words: &[&str],
) -> Result<HashMap<String, (Vec<u8>, u64)>> {
    let mut st = conn.prepare_cached(
        "SELECT vector, df FROM word_vectors
          WHERE model=?1 AND dim=?2 AND word=?3 AND length(vector) > 0",
    )?;
    let mut out = HashMap::new();
    for w in words {
        if let Some(b) = st
            .query_row(params![model, dim as i64, w], |r| {
                Ok((r.get::<_, Vec<u8>>(0)?, r.get::<_, i64>(1)?.max(0) as u64))
            })
            .optional()?
        {
            out.insert(w.to_string(), b);
        }
    }
    Ok(out)
}

/// How many words have a vector for (model, dim) and a record that holds them (those distilled
/// ahead of their records' own vectors are not counted).
pub fn count(conn: &Connection, model: &str, dim: usize) -> Result<usize> {
    Ok(conn.query_row(
        "SELECT count(*) FROM word_vectors WHERE model=?1 AND dim=?2 AND length(vector) > 0
            AND df > 0",
        params![model, dim as i64],
        |r| r.get::<_, i64>(0),
    )? as usize)
}

/// Every `step`-th word of (model, dim) with a vector, in key order, at most `n`: a spread of
/// the store's words that does not depend on when each was added.
pub fn spread(
    conn: &Connection,
    model: &str,
    dim: usize,
    step: usize,
    n: usize,
) -> Result<Vec<String>> {
    let mut st = conn.prepare_cached(
        "SELECT word FROM word_vectors WHERE model=?1 AND dim=?2 AND length(vector) > 0 AND df > 0
         ORDER BY word",
    )?;
    let rows = st.query_map(params![model, dim as i64], |r| r.get::<_, String>(0))?;
    let mut out = Vec::new();
    for (i, w) in rows.enumerate() {
        if i % step.max(1) == 0 {
            out.push(w?);
            if out.len() == n {
                break;
            }
        }
    }
    Ok(out)
}

/// Drops the words of every (model, dim) other than the one in use: a switch of models makes
/// them dead weight. Returns how many.
pub fn retain_model(conn: &Connection, model: &str, dim: usize) -> Result<usize> {
    Ok(conn.execute(
        "DELETE FROM word_vectors WHERE NOT (model=?1 AND dim=?2)",
        params![model, dim as i64],
    )?)
}
