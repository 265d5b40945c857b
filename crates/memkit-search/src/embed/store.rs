//! The embedding cache and the `embeddings` table: what is pending, what is cached, writing
//! vectors. (mem-search embeds its queries through [`super::QueryModel`].)

use std::path::Path;

use rusqlite::{Connection, OptionalExtension, params};

use super::{Embedder, Manifest, from_blob, resolve_model, sha256_hex, to_blob};
use memkit_core::Result;
use memkit_core::store::now;

/// A cached vector for (model, dim, sha256 of the exact input text), read only.
pub fn cache_lookup(
    conn: &Connection,
    model: &str,
    dim: usize,
    text: &str,
) -> Result<Option<Vec<f32>>> {
    lookup_hash(conn, model, dim, &sha256_hex(text))
}

fn lookup_hash(conn: &Connection, model: &str, dim: usize, hash: &str) -> Result<Option<Vec<f32>>> {
    let v: Option<Vec<u8>> = conn
        .query_row(
            "SELECT vector FROM embedding_cache WHERE model=?1 AND dim=?2 AND text_hash=?3",
            params![model, dim as i64, hash],
            |r| r.get(0),
        )
        .optional()?;
    Ok(v.map(|b| from_blob(&b)).filter(|v| v.len() == dim))
}

/// [`cache_lookup`], refreshing the entry's use time on a hit.
pub fn cache_get(
    conn: &Connection,
    model: &str,
    dim: usize,
    text: &str,
) -> Result<Option<Vec<f32>>> {
    let hash = sha256_hex(text);
    let v = lookup_hash(conn, model, dim, &hash)?;
    if v.is_some() {
        conn.execute(
            "UPDATE embedding_cache SET last_used_at=?4 WHERE model=?1 AND dim=?2 AND text_hash=?3",
            params![model, dim as i64, hash, now()],
        )?;
    }
    Ok(v)
}

pub fn cache_put(conn: &Connection, model: &str, dim: usize, text: &str, v: &[f32]) -> Result<()> {
    let t = now();
    conn.execute(
        "INSERT INTO embedding_cache(model, dim, text_hash, vector, created_at, last_used_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?5)
         ON CONFLICT(model, dim, text_hash) DO UPDATE SET vector=excluded.vector, last_used_at=excluded.last_used_at",
        params![model, dim as i64, sha256_hex(text), to_blob(v), t],
    )?;
    Ok(())
}

/// The vector of a search query: prefix by kind, cache lookup (no model load on a hit), else
/// load the model, embed and cache. `model` is a name or directory, `dim` None = model's own.
pub fn embed_query(
    conn: &Connection,
    model: &str,
    dim: Option<usize>,
    kind: Option<&str>,
    query: &str,
) -> Result<Vec<f32>> {
    let dir = resolve_model(model)?;
    let manifest = Manifest::load(&dir)?;
    let dim = manifest.output_dim(dim)?;
    let text = super::query_text(Some(&manifest), kind, query);
    if let Some(v) = cache_get(conn, &manifest.name, dim, &text)? {
        return Ok(v);
    }
    let mut e = Embedder::load_with(&dir, Some(dim), super::LoadOptions::query())?;
    let v = e.embed(&[&text])?.remove(0);
    cache_put(conn, &manifest.name, dim, &text, &v)?;
    Ok(v)
}

/// One thing to embed from the database.
#[derive(Debug, Clone)]
pub struct Pending {
    pub owner_kind: &'static str,
    pub owner_id: i64,
    /// The document text (document prefix included).
    pub text: String,
}

fn json_list(s: &str) -> Vec<String> {
    serde_json::from_str::<Vec<String>>(s).unwrap_or_default()
}

/// What the database holds to embed for (model, dim).
pub struct Owners {
    /// Observations and session summaries whose embedding is missing or was made from another
    /// text (or by another model or dimension).
    pub pending: Vec<Pending>,
    /// How many are up to date.
    pub up_to_date: usize,
    /// sha256 of every current text, pending or not: the cache entries worth keeping.
    pub hashes: Vec<String>,
}

/// What is pending and what is current for (model, dim).
pub fn pending(conn: &Connection, m: &Manifest, dim: usize) -> Result<Owners> {
    let mut items = Vec::new();
    let mut st = conn.prepare(
        "SELECT id, title, summary, detail, facts, concepts FROM observations ORDER BY id",
    )?;
    let rows = st.query_map([], |r| {
        let facts: String = r.get(4)?;
        let concepts: String = r.get(5)?;
        Ok((
            r.get::<_, i64>(0)?,
            super::observation_text(
                &r.get::<_, String>(1)?,
                &r.get::<_, String>(2)?,
                r.get::<_, Option<String>>(3)?.as_deref(),
                &json_list(&facts),
                &json_list(&concepts),
            ),
        ))
    })?;
    for row in rows {
        let (id, text) = row?;
        items.push(("observation", id, text));
    }
    let mut st = conn.prepare(
        "SELECT rowid, COALESCE(title,''), summary FROM sessions WHERE summary IS NOT NULL AND trim(summary) != '' ORDER BY rowid",
    )?;
    let rows = st.query_map([], |r| {
        let title: String = r.get(1)?;
        let summary: String = r.get(2)?;
        Ok((
            r.get::<_, i64>(0)?,
            super::observation_text(&title, &summary, None, &[], &[]),
        ))
    })?;
    for row in rows {
        let (id, text) = row?;
        items.push(("session", id, text));
    }
    let mut have = conn.prepare(
        "SELECT content_hash FROM embeddings WHERE owner_kind=?1 AND owner_id=?2 AND model=?3 AND dim=?4",
    )?;
    let mut out = Owners {
        pending: Vec::new(),
        up_to_date: 0,
        hashes: Vec::new(),
    };
    for (kind, id, text) in items {
        if text.trim().is_empty() {
            continue;
        }
        let text = format!("{}{}", m.document_prefix, text);
        let hash = sha256_hex(&text);
        let old: Option<String> = have
            .query_row(params![kind, id, m.name, dim as i64], |r| r.get(0))
            .optional()?;
        if old.as_deref() == Some(hash.as_str()) {
            out.up_to_date += 1;
        } else {
            out.pending.push(Pending {
                owner_kind: kind,
                owner_id: id,
                text,
            });
        }
        out.hashes.push(hash);
    }
    Ok(out)
}

/// Stores one owner's vector, replacing one made by another model or dimension: an owner has
/// the vector of the model in use, and a switch of models does not leave the old vectors
/// behind (they stay in the embedding cache, so switching back embeds nothing).
pub fn put_embedding(
    conn: &Connection,
    model: &str,
    dim: usize,
    p: &Pending,
    v: &[f32],
) -> Result<()> {
    conn.execute(
        "DELETE FROM embeddings WHERE owner_kind=?1 AND owner_id=?2 AND NOT (model=?3 AND dim=?4)",
        params![p.owner_kind, p.owner_id, model, dim as i64],
    )?;
    conn.execute(
        "INSERT INTO embeddings(owner_kind, owner_id, model, dim, vector, content_hash, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ON CONFLICT(owner_kind, owner_id, model, dim) DO UPDATE SET
           vector=excluded.vector, content_hash=excluded.content_hash, created_at=excluded.created_at",
        params![
            p.owner_kind,
            p.owner_id,
            model,
            dim as i64,
            to_blob(v),
            sha256_hex(&p.text),
            now()
        ],
    )?;
    Ok(())
}

/// Totals of a database run.
#[derive(Debug, Default, Clone)]
pub struct DbRun {
    pub pending: usize,
    pub up_to_date: usize,
    pub embedded: usize,
    pub cache_hits: usize,
    /// Embeddings dropped because their owner no longer exists.
    pub removed: usize,
    /// Embedding cache entries pruned ([`prune_cache`]).
    pub pruned: usize,
    /// Tokens run through the model (padding not counted).
    pub tokens: usize,
    /// The model load, when one was needed.
    pub load: Option<super::LoadReport>,
}

/// Days an embedding cache entry is kept after its last use, unless it backs a current
/// embedding (MEM_EMBED_CACHE_DAYS).
pub const CACHE_DAYS: u32 = 90;

/// Deletes cache entries unused for `days` other than those of `current` (sha256 of the texts
/// whose vectors for `model`/`dim` are in use): queries nobody asks again, texts since edited,
/// vectors of models no longer in use. Returns how many.
///
/// It reads the whole table (no index helps: `last_used_at` lies behind the vector blob, and
/// indexing it would read every blob once, in whichever process, hooks included, opened the
/// database first), so mem-embed runs it at most once a day.
pub fn prune_cache(
    conn: &Connection,
    model: &str,
    dim: usize,
    current: &[String],
    days: u32,
) -> Result<usize> {
    let cutoff = (chrono::Utc::now() - chrono::Duration::days(i64::from(days)))
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
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

/// Embeds every pending owner; the model is loaded only when some text is not in the cache.
/// With `prune_days`, cache entries unused for that many days that back no current embedding
/// are pruned first ([`prune_cache`]). `progress` is called with (done, total) after each batch.
pub fn embed_database(
    conn: &mut Connection,
    model_dir: &Path,
    dim: Option<usize>,
    prune_days: Option<u32>,
    mut progress: impl FnMut(usize, usize),
) -> Result<DbRun> {
    let m = Manifest::load(model_dir)?;
    let dim = m.output_dim(dim)?;
    let Owners {
        pending,
        up_to_date,
        hashes,
    } = pending(conn, &m, dim)?;
    let mut run = DbRun {
        pending: pending.len(),
        up_to_date,
        ..DbRun::default()
    };
    let mut misses = Vec::new();
    {
        let tx = conn.transaction()?;
        // Vectors of owners that are gone (deleted observations, sessions) go too.
        run.removed = tx.execute(
            "DELETE FROM embeddings WHERE
               (owner_kind='observation' AND owner_id NOT IN (SELECT id FROM observations))
            OR (owner_kind='session' AND owner_id NOT IN (SELECT rowid FROM sessions))",
            [],
        )?;
        if let Some(days) = prune_days {
            run.pruned = prune_cache(&tx, &m.name, dim, &hashes, days)?;
        }
        for p in &pending {
            match cache_get(&tx, &m.name, dim, &p.text)? {
                Some(v) => {
                    put_embedding(&tx, &m.name, dim, p, &v)?;
                    run.cache_hits += 1;
                }
                None => misses.push(p.clone()),
            }
        }
        tx.commit()?;
    }
    if misses.is_empty() {
        return Ok(run);
    }
    let texts: Vec<&str> = misses.iter().map(|p| p.text.as_str()).collect();
    let mut e = Embedder::load_with(model_dir, Some(dim), super::LoadOptions::for_texts(&texts))?;
    let total = misses.len();
    // Vectors arrive in batch order; they are stored a transaction per 64.
    let mut done: Vec<(usize, Vec<f32>)> = Vec::new();
    let mut store = |conn: &mut Connection, done: &mut Vec<(usize, Vec<f32>)>| -> Result<()> {
        let tx = conn.transaction()?;
        for (i, v) in done.iter() {
            cache_put(&tx, &m.name, dim, &misses[*i].text, v)?;
            put_embedding(&tx, &m.name, dim, &misses[*i], v)?;
        }
        tx.commit()?;
        run.embedded += done.len();
        done.clear();
        progress(run.embedded, total);
        Ok(())
    };
    e.embed_each(&texts, |i, v| {
        done.push((i, v));
        if done.len() >= 64 {
            store(conn, &mut done)?;
        }
        Ok(())
    })?;
    store(conn, &mut done)?;
    run.tokens = e.tokens_embedded();
    run.load = Some(e.load_report().clone());
    Ok(run)
}
