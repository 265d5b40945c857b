//! The embedding cache and the `embeddings` table: what is pending, what is cached, writing
//! vectors. (mem-search embeds its queries through [`super::QueryModel`].)

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rusqlite::Connection;

use super::{Embedder, Manifest, resolve_model, sha256_hex};
use memkit_core::Result;
use memkit_core::store::{self, embeddings, observations, sessions};

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
    Ok(embeddings::cache_lookup(conn, model, dim, hash)?.filter(|v| v.len() == dim))
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
        embeddings::cache_touch(conn, model, dim, &hash)?;
    }
    Ok(v)
}

pub fn cache_put(conn: &Connection, model: &str, dim: usize, text: &str, v: &[f32]) -> Result<()> {
    embeddings::cache_put(conn, model, dim, &sha256_hex(text), v)
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
    /// What the stored vector is checked against: the text's sha256, with its window count
    /// when it has several (so records embedded before windows existed get theirs).
    pub hash: String,
    /// The text cut for the model ([`crate::text::windows`]).
    pub windows: Vec<String>,
    /// When its owner was made: what [`pending`] orders by, newest first.
    pub at: String,
}

/// What the database holds to embed for (model, dim).
pub struct Owners {
    /// Observations, session summaries and learnings whose embedding is missing or was made from another
    /// text (or by another model or dimension), newest first: a run cut short by its budget
    /// leaves the old backlog, never today's work.
    pub pending: Vec<Pending>,
    /// How many are up to date.
    pub up_to_date: usize,
    /// sha256 of every current text, pending or not: the cache entries worth keeping.
    pub hashes: Vec<String>,
}

/// Every owner's text as embedded, before the model's document prefix, with when it was made:
/// observations, session summaries and learnings.
fn owner_texts(conn: &Connection) -> Result<Vec<(&'static str, i64, String, String)>> {
    let mut items = Vec::new();
    for o in observations::texts(conn)? {
        let text = super::observation_text(
            &o.title,
            &o.summary,
            o.detail.as_deref(),
            &o.facts,
            &o.concepts,
        );
        items.push(("observation", o.id, text, o.created_at));
    }
    for s in sessions::summaries(conn)? {
        if s.summary.trim().is_empty() {
            continue;
        }
        let title = s.title.unwrap_or_default();
        let text = super::observation_text(&title, &s.summary, None, &[], &[]);
        items.push(("session", s.rowid, text, s.at));
    }
    for (id, content, at) in store::learnings::texts(conn)? {
        items.push(("learning", id, content, at));
    }
    Ok(items)
}

/// What is pending and what is current for (model, dim).
pub fn pending(conn: &Connection, m: &Manifest, dim: usize) -> Result<Owners> {
    let items = owner_texts(conn)?;
    let mut out = Owners {
        pending: Vec::new(),
        up_to_date: 0,
        hashes: Vec::new(),
    };
    for (kind, id, text, at) in items {
        if text.trim().is_empty() {
            continue;
        }
        let text = format!("{}{}", m.document_prefix, text);
        let parts = crate::text::windows(&text, &m.document_prefix, m.max_tokens);
        let hash = match parts.len() {
            1 => sha256_hex(&text),
            n => sha256_hex(&format!("{text}\0windows {n}")),
        };
        // The cache entry of the text itself (its first window) backs the vector.
        out.hashes.push(sha256_hex(&text));
        let old = embeddings::hash_of(conn, kind, id, &m.name, dim)?;
        if old.as_deref() == Some(hash.as_str()) {
            out.up_to_date += 1;
        } else {
            out.pending.push(Pending {
                owner_kind: kind,
                owner_id: id,
                text,
                hash,
                windows: parts,
                at,
            });
        }
    }
    // Newest first; among equal times the later row (ids grow with time).
    out.pending
        .sort_by(|a, b| (&b.at, b.owner_id, b.owner_kind).cmp(&(&a.at, a.owner_id, a.owner_kind)));
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
    embeddings::put(conn, p.owner_kind, p.owner_id, model, dim, v, &p.hash)
}

/// The `meta` key of the similarity floor measured for a model without one in its manifest.
pub fn floor_key(model: &str, dim: usize) -> String {
    format!("similarity_floor:{model}:{dim}")
}

/// Records embedded before a floor is measured, and how many of them the probes are compared to.
const FLOOR_MIN_RECORDS: usize = 100;
const FLOOR_SAMPLE: usize = 5000;

/// Whether this database's floor for (model, dim) is to be measured: never measured with 100
/// records or more, or the records have doubled since.
fn floor_due(conn: &Connection, m: &Manifest, dim: usize) -> Result<bool> {
    let stored = embeddings::count(conn, &m.name, dim)?;
    let measured_at: usize = store::meta_get(conn, &floor_key(&m.name, dim))?
        .and_then(|v| v.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0);
    // A database measured before the sense check was: measured again once, for it.
    let sensed = store::meta_get(conn, &sense_key(&m.name, dim))?.is_some();
    Ok(stored >= FLOOR_MIN_RECORDS && (measured_at == 0 || stored >= measured_at * 2 || !sensed))
}

/// Measures what nonsense reaches in this database: 24 strings of made-up words are embedded
/// as queries and compared with (a sample of) the stored vectors; the floor is the best any of
/// them reaches, plus 0.02. How close unrelated text comes depends on the records as much as on
/// the model (short chat turns sit close to anything short), so a model's own floor is only a
/// lower bound. Kept in `meta` (mem-search reads it) and measured again when the records have
/// doubled.
fn calibrate_floor(conn: &Connection, e: &mut Embedder, m: &Manifest, dim: usize) -> Result<()> {
    let stored = embeddings::count(conn, &m.name, dim)?;
    let key = floor_key(&m.name, dim);
    let probes: Vec<String> = nonsense(24)
        .into_iter()
        .map(|p| super::query_text(Some(m), Some(super::SEARCH_QUERY_KIND), &p))
        .collect();
    let refs: Vec<&str> = probes.iter().map(String::as_str).collect();
    let qs = e.embed(&refs)?;
    let sample = embeddings::sample(conn, &m.name, dim, FLOOR_SAMPLE)?;
    let best = qs
        .iter()
        .flat_map(|q| {
            sample
                .iter()
                .filter_map(|v| crate::text::best_window(q, &v.2))
        })
        .fold(f32::MIN, f32::max);
    if best > f32::MIN {
        let floor = ((best + 0.02) * 100.0).ceil() / 100.0;
        store::meta_put(conn, &key, &format!("{floor} {stored}"))?;
    }
    // "-" when there were too few titled records to tell: measured all the same, or every
    // pipeline run would load the model again to try.
    let found = self_found(conn, e, m, &sample)?.map_or("-".to_string(), |f| f.to_string());
    store::meta_put(conn, &sense_key(&m.name, dim), &format!("{found} {stored}"))?;
    Ok(())
}

/// The `meta` key of the share of records the model finds from their own title
/// ([`self_found`]).
pub fn sense_key(model: &str, dim: usize) -> String {
    format!("vector_sense:{model}:{dim}")
}

/// Records whose title is asked for as a query ([`self_found`]).
const SENSE_PROBES: usize = 24;

/// Whether the model means anything on this database: the share of sampled observations
/// whose own title, asked as a query, ranks them among the top 10 of the sample. A model
/// that means something finds most (MiniLM: 0.83 and 1.0 on the bundled retrieval sets); a
/// random-weight one next to none (0.08 there). `None` with too few titled records to tell.
fn self_found(
    conn: &Connection,
    e: &mut Embedder,
    m: &Manifest,
    sample: &[(String, i64, Vec<f32>)],
) -> Result<Option<f64>> {
    let obs: Vec<usize> = (0..sample.len())
        .filter(|&i| sample[i].0 == "observation")
        .collect();
    let step = (obs.len() / SENSE_PROBES).max(1);
    let picked: Vec<usize> = obs.into_iter().step_by(step).take(SENSE_PROBES).collect();
    let ids: Vec<i64> = picked.iter().map(|&i| sample[i].1).collect();
    let titles: HashMap<i64, String> = store::observations::by_ids(conn, &ids)?
        .into_iter()
        .filter(|o| !o.title.trim().is_empty())
        .filter_map(|o| Some((o.id?, o.title)))
        .collect();
    let probes: Vec<(usize, String)> = picked
        .iter()
        .filter_map(|&i| {
            let t = titles.get(&sample[i].1)?;
            Some((
                i,
                super::query_text(Some(m), Some(super::SEARCH_QUERY_KIND), t),
            ))
        })
        .collect();
    if probes.len() < SENSE_PROBES / 2 {
        return Ok(None);
    }
    let refs: Vec<&str> = probes.iter().map(|p| p.1.as_str()).collect();
    let qs = e.embed(&refs)?;
    let found = probes
        .iter()
        .zip(&qs)
        .filter(|((own, _), q)| {
            let sim = |v: &[f32]| crate::text::best_window(q, v).unwrap_or(f32::MIN);
            let mine = sim(&sample[*own].2);
            // Ties count against: a model that gives everything the same cosine finds nothing.
            sample.iter().filter(|v| sim(&v.2) >= mine).count() <= 10
        })
        .count();
    Ok(Some(
        (found as f64 / probes.len() as f64 * 100.0).round() / 100.0,
    ))
}

/// `n` strings of two or three made-up words (letters in a fixed pseudo-random order).
pub fn nonsense(n: usize) -> Vec<String> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    };
    let (cons, vows) = (b"bcdfghjklmnpqrstvwxz", b"aeiouy");
    (0..n)
        .map(|_| {
            (0..2 + next(2))
                .map(|_| {
                    (0..4 + next(3))
                        .map(|i| {
                            let set: &[u8] = if i % 2 == 0 { cons } else { vows };
                            set[next(set.len() as u64) as usize] as char
                        })
                        .collect::<String>()
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

/// A pending owner's text without the model's prefix (in every text, not one of its words).
fn bare<'a>(m: &Manifest, p: &'a Pending) -> &'a str {
    p.text
        .strip_prefix(m.document_prefix.as_str())
        .unwrap_or(&p.text)
}

/// Counts the words of the owners whose vectors this run stored, or of every owner with a
/// vector the first time ([`super::words::backfill_due`]): the words a hook's prompt is given a
/// vector from. An owner left for a later run is counted then.
fn count_words(
    conn: &mut Connection,
    m: &Manifest,
    dim: usize,
    pending: &[Pending],
    stored: &[bool],
) -> Result<()> {
    let done: Vec<&str> = pending
        .iter()
        .zip(stored)
        .filter(|(_, s)| **s)
        .map(|(p, _)| bare(m, p))
        .collect();
    if super::words::backfill_due(conn, &m.name, dim)? {
        // Every owner with a vector: those up to date before this run, and this run's.
        let left: HashSet<(&str, i64)> = pending
            .iter()
            .zip(stored)
            .filter(|(_, s)| !**s)
            .map(|(p, _)| (p.owner_kind, p.owner_id))
            .collect();
        let all = owner_texts(conn)?;
        let texts: Vec<&str> = all
            .iter()
            .filter(|t| !left.contains(&(t.0, t.1)))
            .map(|t| t.2.as_str())
            .collect();
        return super::words::count(conn, &m.name, dim, &texts);
    }
    if done.is_empty() {
        return Ok(());
    }
    let texts = done;
    super::words::count(conn, &m.name, dim, &texts)
}

/// One owner's window vectors one after the other, once all are there.
fn joined(parts: &[Option<Vec<f32>>]) -> Option<Vec<f32>> {
    let mut out = Vec::new();
    for p in parts {
        out.extend_from_slice(p.as_ref()?);
    }
    Some(out)
}

/// Totals of a database run.
#[derive(Debug, Default, Clone)]
pub struct DbRun {
    pub pending: usize,
    pub up_to_date: usize,
    pub embedded: usize,
    pub cache_hits: usize,
    /// Pending owners this run did not reach (its [`Limits`] cut it short): the backlog the
    /// next run goes on with.
    pub left: usize,
    /// Embeddings dropped because their owner no longer exists.
    pub removed: usize,
    /// Embedding cache entries pruned ([`prune_cache`]).
    pub pruned: usize,
    /// Words given a vector ([`super::words`]).
    pub words: usize,
    /// Tokens run through the model (padding not counted).
    pub tokens: usize,
    /// The model load, when one was needed.
    pub load: Option<super::LoadReport>,
    /// Time spent embedding, the load left out.
    pub embedding: Duration,
}

impl DbRun {
    /// The run's summary counts.
    pub fn counts(&self) -> std::collections::BTreeMap<String, u64> {
        [
            ("pending", self.pending),
            ("up_to_date", self.up_to_date),
            ("embedded", self.embedded),
            ("cache_hits", self.cache_hits),
            ("left", self.left),
            ("removed", self.removed),
            ("pruned", self.pruned),
            ("words", self.words),
        ]
        .into_iter()
        .map(|(k, n)| (k.to_string(), n as u64))
        .collect()
    }
}

/// How much of what is pending one run embeds (nothing set: all of it).
#[derive(Debug, Clone, Copy, Default)]
pub struct Limits {
    /// No batch starts after this moment, though one always runs: a pipeline run's budget.
    /// The batches running then finish and are stored.
    pub until: Option<Instant>,
    /// At most this many owners, the newest (what `mem-eval retrieval --vectors` leaves).
    pub owners: Option<usize>,
}

/// The `meta` key of the rate mem-embed embeds at for (model, dim): `"<owners> <seconds>"`,
/// each run's added to half the runs' before (so the figure follows the machine and the texts
/// of late, weighted by work done). `mem status` estimates the backlog's time from it.
pub fn rate_key(model: &str, dim: usize) -> String {
    format!("embed_chars_rate:{model}:{dim}")
}

/// Characters of text embedded per second of model time for (model, dim), as recorded by
/// earlier runs. Characters, not records: a run that embedded short learnings first would
/// otherwise promise a backlog of long observations ten times too soon (measured on a 1 GB
/// history with the 0.6B-size graph: 11.9 records a second said, 1.2 done).
pub fn rate(conn: &Connection, model: &str, dim: usize) -> Result<Option<f64>> {
    Ok(read_rate(conn, &rate_key(model, dim))?
        .filter(|(_, secs)| *secs > 0.0)
        .map(|(n, secs)| n / secs))
}

fn read_rate(conn: &Connection, key: &str) -> Result<Option<(f64, f64)>> {
    Ok(store::meta_get(conn, key)?.and_then(|v| {
        let mut it = v.split_whitespace().map(|x| x.parse::<f64>().ok());
        Some((it.next()??, it.next()??))
    }))
}

/// Adds a run's characters and seconds to the recorded rate (see [`rate_key`]), the older
/// runs weighing half as much at each.
fn record_rate(
    conn: &Connection,
    model: &str,
    dim: usize,
    chars: usize,
    took: Duration,
) -> Result<()> {
    // The load is not in `took`: even one batch's time is a fair sample of the rate.
    if chars == 0 || took.is_zero() {
        return Ok(());
    }
    let key = rate_key(model, dim);
    let (n, secs) = read_rate(conn, &key)?.unwrap_or((0.0, 0.0));
    let (n, secs) = (n / 2.0 + chars as f64, secs / 2.0 + took.as_secs_f64());
    store::meta_put(conn, &key, &format!("{n:.1} {secs:.3}"))
}

/// Deletes cache entries unused for `days` other than those of `current` (sha256 of the texts
/// whose vectors for `model`/`dim` are in use): queries nobody asks again, texts since edited,
/// vectors of models no longer in use. Returns how many. It reads the whole table, so mem-embed
/// runs it at most once a day ([`embeddings::cache_prune`]).
pub fn prune_cache(
    conn: &Connection,
    model: &str,
    dim: usize,
    current: &[String],
    days: u32,
) -> Result<usize> {
    let cutoff = (chrono::Utc::now() - chrono::Duration::days(i64::from(days)))
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    embeddings::cache_prune(conn, model, dim, current, &cutoff)
}

/// Texts sorted by length together in a database run: small enough that the run keeps close
/// to newest first, large enough that a batch of short texts pads little.
pub const DB_WINDOW: usize = 32;

/// Embeds what is pending, newest first, as far as `limits` let it; the model is loaded only
/// when some text is not in the cache. With `prune_days`, cache entries unused for that many
/// days that back no current embedding are pruned first ([`prune_cache`]). `progress` is
/// called with (done, total) after each batch.
pub fn embed_database(
    conn: &mut Connection,
    model_dir: &Path,
    dim: Option<usize>,
    prune_days: Option<u32>,
    limits: Limits,
    mut progress: impl FnMut(usize, usize),
) -> Result<DbRun> {
    let m = Manifest::load(model_dir)?;
    let dim = m.output_dim(dim)?;
    let Owners {
        mut pending,
        up_to_date,
        hashes,
    } = pending(conn, &m, dim)?;
    let mut run = DbRun {
        pending: pending.len(),
        up_to_date,
        ..DbRun::default()
    };
    if let Some(n) = limits.owners {
        run.left = pending.len().saturating_sub(n);
        pending.truncate(n);
    }
    // Each owner's text in windows the model can read whole (one for most): its vector is
    // theirs, one after the other, so a long record is found by what its end says too.
    let parts: Vec<&[String]> = pending.iter().map(|p| p.windows.as_slice()).collect();
    let mut got: Vec<Vec<Option<Vec<f32>>>> = parts.iter().map(|w| vec![None; w.len()]).collect();
    let mut misses: Vec<(usize, usize)> = Vec::new();
    // Owners whose vector is stored (from the cache, or embedded by this run).
    let mut stored = vec![false; pending.len()];
    store::write_tx(conn, |tx| {
        // Vectors of owners that are gone (deleted observations, sessions) go too.
        run.removed = embeddings::remove_orphans(tx)?;
        if let Some(days) = prune_days {
            run.pruned = prune_cache(tx, &m.name, dim, &hashes, days)?;
        }
        for (i, p) in pending.iter().enumerate() {
            for (j, text) in parts[i].iter().enumerate() {
                match cache_get(tx, &m.name, dim, text)? {
                    Some(v) => got[i][j] = Some(v),
                    None => misses.push((i, j)),
                }
            }
            if let Some(v) = joined(&got[i]) {
                put_embedding(tx, &m.name, dim, p, &v)?;
                stored[i] = true;
                run.cache_hits += 1;
            }
        }
        Ok(())
    })?;
    // Whether the floor can be measured again within the budget (it embeds 48 short texts).
    let in_time = |l: &Limits| l.until.is_none_or(|t| Instant::now() < t);
    if misses.is_empty() {
        count_words(conn, &m, dim, &pending, &stored)?;
        let floor = floor_due(conn, &m, dim)? && in_time(&limits);
        if floor || (super::words::due(conn, &m.name, dim)? && in_time(&limits)) {
            let mut e = Embedder::load_with(model_dir, Some(dim), super::LoadOptions::query())?;
            if floor {
                calibrate_floor(conn, &mut e, &m, dim)?;
            }
            run.words = super::words::distil(conn, &mut e, &m, dim, limits.until)?;
            run.load = Some(e.load_report().clone());
        }
        return Ok(run);
    }
    let texts: Vec<&str> = misses.iter().map(|&(i, j)| parts[i][j].as_str()).collect();
    let mut e = Embedder::load_with(model_dir, Some(dim), super::LoadOptions::for_texts(&texts))?;
    e.set_window(DB_WINDOW);
    let started = Instant::now();
    // A budgeted run whose every run ends at its budget would never measure the floor at its
    // end: it measures it first, while there is time.
    if limits.until.is_some() && floor_due(conn, &m, dim)? {
        calibrate_floor(conn, &mut e, &m, dim)?;
    }
    if let Some(until) = limits.until {
        // A quarter of what is left, before the records that take the rest: the words of
        // records with a vector (an earlier run ended at its budget before them), then those of
        // the records next in line.
        let share = Instant::now() + until.saturating_duration_since(Instant::now()) / 4;
        run.words += super::words::distil(conn, &mut e, &m, dim, Some(share))?;
        // As far as the AHEAD-th observation: the learnings a first run distils are newer than
        // any of them, and were most of the first 1,000 in line.
        let mut observations = 0;
        let ahead: Vec<&str> = pending
            .iter()
            .zip(&stored)
            .filter(|(_, s)| !**s)
            .take_while(|(p, _)| {
                let more = observations < super::words::AHEAD;
                observations += usize::from(p.owner_kind == "observation");
                more
            })
            .map(|(p, _)| bare(&m, p))
            .collect();
        run.words += super::words::distil_ahead(conn, &mut e, &m, dim, &ahead, share)?;
    }
    let total = misses
        .iter()
        .map(|m| m.0)
        .collect::<std::collections::HashSet<_>>()
        .len();
    // The length first, so a progress bar counts (and estimates) from the start.
    progress(0, total);
    // Vectors arrive as their batches finish, out of order across sessions; an owner is stored
    // once all its windows are in and so are those of every owner before it, a transaction per
    // 64 owners. What is stored is then always the newest of the backlog, whatever kills the run.
    let mut ready: Vec<usize> = Vec::new();
    let mut frontier = 0;
    let mut store = |conn: &mut Connection,
                     ready: &mut Vec<usize>,
                     got: &[Vec<Option<Vec<f32>>>],
                     stored: &mut [bool]|
     -> Result<()> {
        store::write_tx(conn, |tx| {
            for &i in ready.iter() {
                for (text, v) in parts[i].iter().zip(&got[i]) {
                    if let Some(v) = v {
                        cache_put(tx, &m.name, dim, text, v)?;
                    }
                }
                if let Some(v) = joined(&got[i]) {
                    put_embedding(tx, &m.name, dim, &pending[i], &v)?;
                    stored[i] = true;
                    run.embedded += 1;
                }
            }
            Ok(())
        })?;
        ready.clear();
        progress(run.embedded, total);
        Ok(())
    };
    let stop = AtomicBool::new(false);
    e.embed_each_until(
        &texts,
        |k, v| {
            let (i, j) = misses[k];
            got[i][j] = Some(v);
            while frontier < pending.len()
                && (stored[frontier] || got[frontier].iter().all(Option::is_some))
            {
                if !stored[frontier] {
                    ready.push(frontier);
                }
                frontier += 1;
            }
            if ready.len() >= 64 {
                store(conn, &mut ready, &got, &mut stored)?;
            }
            if limits.until.is_some_and(|t| Instant::now() >= t) {
                stop.store(true, Ordering::Relaxed);
            }
            Ok(())
        },
        &stop,
    )?;
    // Stopped at the budget: the owners that are whole past the frontier and the windows of a
    // long owner done so far go to the cache, so the next run embeds none of them again.
    let partial: Vec<usize> = (frontier..pending.len())
        .filter(|&i| !stored[i] && got[i].iter().any(Option::is_some))
        .collect();
    ready.extend(partial);
    store(conn, &mut ready, &got, &mut stored)?;
    run.embedding = started.elapsed();
    run.left += stored.iter().filter(|s| !**s).count();
    let chars = misses
        .iter()
        .filter(|&&(i, j)| got[i][j].is_some())
        .map(|&(i, j)| parts[i][j].chars().count())
        .sum();
    record_rate(conn, &m.name, dim, chars, run.embedding)?;
    if floor_due(conn, &m, dim)? && in_time(&limits) {
        calibrate_floor(conn, &mut e, &m, dim)?;
    }
    count_words(conn, &m, dim, &pending, &stored)?;
    let distilled = super::words::distil(conn, &mut e, &m, dim, limits.until)?;
    // A first floor: distil measures it when it distils words, but during a backlog the words
    // are distilled ahead, so it could otherwise wait for the last run.
    let unmeasured = super::words::floor(conn, &m.name, dim)?.is_none();
    if distilled == 0 && unmeasured && run.embedded > 0 {
        super::words::calibrate(conn, &m.name, dim)?;
    }
    run.words += distilled;
    run.tokens = e.tokens_embedded();
    run.load = Some(e.load_report().clone());
    Ok(run)
}
