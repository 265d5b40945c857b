//! `embeddings` (one vector per owner, model and dimension) and `embedding_cache` (vectors by
//! the sha256 of the exact text embedded), with the blob layout both store.

use rusqlite::{Connection, OptionalExtension, params};

use super::{by_chunks, now};
use crate::Result;

/// Little-endian f32 bytes of a vector (the `vector` blob layout).
pub fn to_blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A `vector` blob back as its floats (a trailing partial float is dropped).
pub fn from_blob(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// The cached vector for (model, dim, text hash), if any.
pub fn cache_lookup(
    conn: &Connection,
    model: &str,
    dim: usize,
    hash: &str,
) -> Result<Option<Vec<f32>>> {
    let v: Option<Vec<u8>> = conn
        .prepare_cached(
            "SELECT vector FROM embedding_cache WHERE model=?1 AND dim=?2 AND text_hash=?3",
        )?
        .query_row(params![model, dim as i64, hash], |r| r.get(0))
        .optional()?;
    Ok(v.map(|b| from_blob(&b)))
}

/// Marks a cache entry used now (pruning keeps what is used).
pub fn cache_touch(conn: &Connection, model: &str, dim: usize, hash: &str) -> Result<()> {
    conn.prepare_cached(
        "UPDATE embedding_cache SET last_used_at=?4 WHERE model=?1 AND dim=?2 AND text_hash=?3",
    )?
    .execute(params![model, dim as i64, hash, now()])?;
    Ok(())
}

/// Caches a vector (replacing one of the same key), used now.
pub fn cache_put(conn: &Connection, model: &str, dim: usize, hash: &str, v: &[f32]) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO embedding_cache(model, dim, text_hash, vector, created_at, last_used_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?5)
         ON CONFLICT(model, dim, text_hash) DO UPDATE SET vector=excluded.vector, last_used_at=excluded.last_used_at",
    )?
    .execute(params![model, dim as i64, hash, to_blob(v), now()])?;
    Ok(())
}

/// Deletes cache entries last used before `cutoff` other than those of `current` (text
/// hashes whose vectors for `model`/`dim` are in use). Returns how many.
///
/// It reads the whole table (no index helps: `last_used_at` lies behind the vector blob, and
/// indexing it would read every blob once, in whichever process, hooks included, opened the
/// database first), so it is run at most once a day.
pub fn cache_prune(
    conn: &Connection,
    model: &str,
    dim: usize,
    current: &[String],
    cutoff: &str,
) -> Result<usize> {
    conn.execute_batch("CREATE TEMP TABLE IF NOT EXISTS current_hashes (h TEXT PRIMARY KEY)")?;
    conn.execute("DELETE FROM temp.current_hashes", [])?;
    {
        let mut put = conn.prepare("INSERT OR IGNORE INTO temp.current_hashes VALUES (?1)")?;
        for h in current {
            put.execute([h])?;
        }
    }
    // The current test comes first: those rows (most of them) never have their blob read.
    let pruned = conn.execute(
        "DELETE FROM embedding_cache WHERE NOT (model = ?1 AND dim = ?2
           AND text_hash IN (SELECT h FROM temp.current_hashes)) AND last_used_at < ?3",
        params![model, dim as i64, cutoff],
    )?;
    conn.execute("DELETE FROM temp.current_hashes", [])?;
    Ok(pruned)
}

/// The content hash of an owner's vector for (model, dim), if it has one.
pub fn hash_of(
    conn: &Connection,
    kind: &str,
    id: i64,
    model: &str,
    dim: usize,
) -> Result<Option<String>> {
    Ok(conn
        .prepare_cached(
            "SELECT content_hash FROM embeddings WHERE owner_kind=?1 AND owner_id=?2 AND model=?3 AND dim=?4",
        )?
        .query_row(params![kind, id, model, dim as i64], |r| r.get(0))
        .optional()?)
}

/// Stores one owner's vector (made from the text of hash `hash`), replacing one made by
/// another model or dimension: an owner has the vector of the model in use, and a switch of
/// models does not leave the old vectors behind (they stay in the cache).
pub fn put(
    conn: &Connection,
    kind: &str,
    id: i64,
    model: &str,
    dim: usize,
    v: &[f32],
    hash: &str,
) -> Result<()> {
    conn.prepare_cached(
        "DELETE FROM embeddings WHERE owner_kind=?1 AND owner_id=?2 AND NOT (model=?3 AND dim=?4)",
    )?
    .execute(params![kind, id, model, dim as i64])?;
    conn.prepare_cached(
        "INSERT INTO embeddings(owner_kind, owner_id, model, dim, vector, content_hash, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ON CONFLICT(owner_kind, owner_id, model, dim) DO UPDATE SET
           vector=excluded.vector, content_hash=excluded.content_hash, created_at=excluded.created_at",
    )?
    .execute(params![kind, id, model, dim as i64, to_blob(v), hash, now()])?;
    Ok(())
}

/// Drops the vectors of owners that are gone (deleted observations, sessions). Returns how many.
pub fn remove_orphans(conn: &Connection) -> Result<usize> {
    Ok(conn.execute(
        "DELETE FROM embeddings WHERE
           (owner_kind='observation' AND owner_id NOT IN (SELECT id FROM observations))
        OR (owner_kind='session' AND owner_id NOT IN (SELECT rowid FROM sessions))",
        [],
    )?)
}

/// Every (model, dim) with vectors.
pub fn models(conn: &Connection) -> Result<Vec<(String, usize)>> {
    let mut st = conn.prepare("SELECT DISTINCT model, dim FROM embeddings ORDER BY model, dim")?;
    let rows = st.query_map([], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? as usize))
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// (owner kind, owner id, created_at) of every vector of (model, dim).
pub fn owners(conn: &Connection, model: &str, dim: usize) -> Result<Vec<(String, i64, String)>> {
    let mut st = conn.prepare(
        "SELECT owner_kind, owner_id, created_at FROM embeddings WHERE model = ?1 AND dim = ?2",
    )?;
    let rows = st.query_map(params![model, dim as i64], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?))
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Owners of the vectors of (model, dim) written after `since` (the index on
/// (model, dim, created_at) finds them without a scan).
pub fn owners_since(
    conn: &Connection,
    model: &str,
    dim: usize,
    since: &str,
) -> Result<Vec<(String, i64, String)>> {
    let mut st = conn.prepare(
        "SELECT owner_kind, owner_id, created_at FROM embeddings
         WHERE model = ?1 AND dim = ?2 AND created_at > ?3",
    )?;
    let rows = st.query_map(params![model, dim as i64, since], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?))
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// How many records have a vector of (model, dim).
pub fn count_owners(conn: &Connection, model: &str, dim: usize) -> Result<u64> {
    Ok(conn.query_row(
        "SELECT count(*) FROM embeddings WHERE model = ?1 AND dim = ?2",
        params![model, dim as i64],
        |r| r.get::<_, i64>(0),
    )? as u64)
}

/// Every vector of (model, dim) with its owner.
pub fn all(conn: &Connection, model: &str, dim: usize) -> Result<Vec<(String, i64, Vec<f32>)>> {
    let mut st = conn.prepare(
        "SELECT owner_kind, owner_id, vector FROM embeddings WHERE model = ?1 AND dim = ?2",
    )?;
    let rows = st.query_map(params![model, dim as i64], |r| {
        Ok((r.get(0)?, r.get(1)?, from_blob(&r.get::<_, Vec<u8>>(2)?)))
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Every vector of (model, dim) with its owner, one at a time in owner order, so that a
/// million are never held at once; stops where `f` returns false.
pub fn each(
    conn: &Connection,
    model: &str,
    dim: usize,
    mut f: impl FnMut(String, i64, Vec<f32>) -> Result<bool>,
) -> Result<()> {
    let mut st = conn.prepare(
        "SELECT owner_kind, owner_id, vector FROM embeddings WHERE model = ?1 AND dim = ?2
          ORDER BY owner_kind, owner_id",
    )?;
    let mut rows = st.query(params![model, dim as i64])?;
    while let Some(r) = rows.next()? {
        if !f(r.get(0)?, r.get(1)?, from_blob(&r.get::<_, Vec<u8>>(2)?))? {
            break;
        }
    }
    Ok(())
}

/// How many owners have a vector for (model, dim).
pub fn count(conn: &Connection, model: &str, dim: usize) -> Result<usize> {
    let n: i64 = conn.query_row(
        "SELECT count(*) FROM embeddings WHERE model = ?1 AND dim = ?2",
        params![model, dim as i64],
        |r| r.get(0),
    )?;
    Ok(n as usize)
}

/// About `n` stored vectors of (model, dim), spread evenly over the owners, with their owner
/// (kind, id).
pub fn sample(
    conn: &Connection,
    model: &str,
    dim: usize,
    n: usize,
) -> Result<Vec<(String, i64, Vec<f32>)>> {
    let step = (count(conn, model, dim)? / n.max(1)).max(1) as i64;
    let mut st = conn.prepare(
        "SELECT owner_kind, owner_id, vector FROM (SELECT owner_kind, owner_id, vector,
                row_number() OVER (ORDER BY owner_kind, owner_id) AS i
           FROM embeddings WHERE model = ?1 AND dim = ?2) WHERE i % ?3 = 0 LIMIT ?4",
    )?;
    let rows = st.query_map(params![model, dim as i64, step, n as i64], |r| {
        Ok((r.get(0)?, r.get(1)?, from_blob(&r.get::<_, Vec<u8>>(2)?)))
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// One owner's vector for (model, dim); an error when it has none.
pub fn get(conn: &Connection, kind: &str, id: i64, model: &str, dim: usize) -> Result<Vec<f32>> {
    let blob: Vec<u8> = conn
        .prepare_cached(
            "SELECT vector FROM embeddings WHERE owner_kind = ?1 AND owner_id = ?2 AND model = ?3 AND dim = ?4",
        )?
        .query_row(params![kind, id, model, dim as i64], |r| r.get(0))?;
    Ok(from_blob(&blob))
}

/// (owner id, vector) of the owners `ids` of `kind` that have one for (model, dim).
pub fn of_owners(
    conn: &Connection,
    kind: &str,
    ids: &[i64],
    model: &str,
    dim: usize,
) -> Result<Vec<(i64, Vec<f32>)>> {
    by_chunks(ids, 500, |list| {
        let mut st = conn.prepare(&format!(
            "SELECT owner_id, vector FROM embeddings WHERE owner_kind = ?1 AND model = ?2 AND dim = ?3 AND owner_id IN ({list})"
        ))?;
        let rows = st.query_map(params![kind, model, dim as i64], |r| {
            Ok((r.get(0)?, from_blob(&r.get::<_, Vec<u8>>(1)?)))
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    })
}

/// Stores vectors of observations as they are, replacing any of the same key: the stand-in
/// vectors of tests and benches (what mem-embed would write). Run inside a transaction.
pub fn put_observations(
    conn: &Connection,
    model: &str,
    dim: usize,
    vecs: &[(i64, Vec<f32>, String)],
) -> Result<()> {
    let at = now();
    let mut st = conn.prepare(
        "INSERT OR REPLACE INTO embeddings (owner_kind, owner_id, model, dim, vector, content_hash, created_at)
         VALUES ('observation', ?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    for (id, v, hash) in vecs {
        st.execute(params![id, model, dim as i64, to_blob(v), hash, at])?;
    }
    Ok(())
}

/// Copies the embedding cache between this database and the SQLite file `other` (`into_other`:
/// from here to there, else back), keeping what the target has. Scratch stores (mem-eval) share
/// one cache file this way, so a corpus is embedded once. Returns the rows copied.
pub fn cache_share(conn: &Connection, other: &std::path::Path, into_other: bool) -> Result<usize> {
    conn.execute(
        "ATTACH DATABASE ?1 AS shared",
        [other.display().to_string()],
    )?;
    let copy = (|| -> Result<usize> {
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS shared.embedding_cache (
                model TEXT NOT NULL, dim INTEGER NOT NULL, text_hash TEXT NOT NULL,
                vector BLOB NOT NULL, created_at TEXT NOT NULL, last_used_at TEXT NOT NULL,
                PRIMARY KEY (model, dim, text_hash))",
        )?;
        let (from, to) = if into_other {
            ("main", "shared")
        } else {
            ("shared", "main")
        };
        Ok(conn.execute(
            &format!(
                "INSERT OR IGNORE INTO {to}.embedding_cache
                 SELECT model, dim, text_hash, vector, created_at, last_used_at
                 FROM {from}.embedding_cache"
            ),
            [],
        )?)
    })();
    conn.execute("DETACH DATABASE shared", [])?;
    copy
}
