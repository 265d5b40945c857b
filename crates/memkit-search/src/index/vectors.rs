//! usearch HNSW indexes (cosine), one per embedding model and dimension, keyed by
//! `store::vector_key`. Each `.usearch` file has a `.keys` sidecar (little-endian u64 keys)
//! because usearch cannot list its keys; the sidecar is checked against the index on load.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use rayon::prelude::*;
use rusqlite::Connection;
use usearch::{Index, IndexOptions, MetricKind, ScalarKind};

use super::{Check, Layout, Options, Report, State, VectorState, index_err};
use memkit_core::Result;
use memkit_core::store::{embeddings, owner_of_key, vector_key};

pub fn scalar_kind(q: &str) -> Option<ScalarKind> {
    match q {
        "f32" => Some(ScalarKind::F32),
        "f16" => Some(ScalarKind::F16),
        "i8" => Some(ScalarKind::I8),
        _ => None,
    }
}

/// An open vector index: the main file, the vectors added since it was written, and the keys
/// of the main file those replace or remove.
pub struct Vectors {
    pub index: Index,
    pub model: String,
    pub dim: usize,
    /// The saved index's file (its `.keys` sidecar lists the keys).
    path: std::path::PathBuf,
    delta: Option<(Index, std::path::PathBuf)>,
    dead: HashSet<u64>,
}

impl Vectors {
    /// Memory-maps a saved index for searching. It is viewed without usearch's key table
    /// (vendor/usearch/PATCHED.md): building that table touched every node of the file and
    /// was most of a 100k-record search; what needs a key's vectors reads the database.
    pub fn view(dir: &Path, st: &VectorState) -> Result<Vectors> {
        let open = |path: &Path| -> Result<Index> {
            let index = Index::restore_view_unkeyed(&path.to_string_lossy())
                .map_err(|e| index_err("vector index", e))?;
            if index.dimensions() != st.dim {
                return Err(index_err("vector index", "dimension differs"));
            }
            Ok(index)
        };
        let path = dir.join(&st.file);
        let delta = match &st.delta {
            Some(f) => Some((open(&dir.join(f))?, dir.join(f))),
            None => None,
        };
        Ok(Vectors {
            index: open(&path)?,
            model: st.model.clone(),
            dim: st.dim,
            dead: if delta.is_some() {
                read_dead(&path)
            } else {
                HashSet::new()
            },
            path,
            delta,
        })
    }

    /// Vectors held, the main file's replaced ones included.
    pub fn size(&self) -> usize {
        self.index.size() + self.delta.as_ref().map_or(0, |d| d.0.size())
    }

    /// Every key of the index (its sidecars); `None` when one is unreadable.
    pub fn keys(&self) -> Option<Vec<u64>> {
        let mut keys: Vec<u64> = read_keys(&self.path)?
            .into_iter()
            .filter(|k| !self.dead.contains(k))
            .collect();
        if let Some((_, p)) = &self.delta {
            keys.extend(read_keys(p)?);
        }
        keys.sort_unstable();
        keys.dedup();
        Some(keys)
    }

    /// Nearest keys with their cosine similarity through the HNSW graph, best first, ties by
    /// key; only keys in `allowed` when given, filtered inside the search, never from a global
    /// top-k (a small project would get a short page). Few allowed keys are better compared
    /// one by one ([`EXACT_MAX`], the searcher does).
    pub fn search(
        &self,
        q: &[f32],
        k: usize,
        allowed: Option<&HashSet<u64>>,
    ) -> Result<Vec<(u64, f32)>> {
        if q.len() != self.dim || self.size() == 0 || k == 0 {
            return Ok(vec![]);
        }
        // A record may come back once per window: asked for more, its best kept.
        let want = k * 2;
        let mut best: HashMap<u64, f32> = HashMap::new();
        let delta = self.delta.as_ref().map(|d| (&d.0, None));
        for (index, dead) in std::iter::once((&self.index, Some(&self.dead))).chain(delta) {
            let dead = dead.filter(|d| !d.is_empty());
            let m = match (allowed, dead) {
                (None, None) => index.search(q, want),
                _ => index.filtered_search(q, want, |key| {
                    allowed.is_none_or(|a| a.contains(&key))
                        && dead.is_none_or(|d| !d.contains(&key))
                }),
            }
            .map_err(|e| index_err("vector search", e))?;
            for (key, d) in m.keys.into_iter().zip(m.distances) {
                let s = best.entry(key).or_insert(f32::MIN);
                *s = s.max(1.0 - d);
            }
        }
        let mut out: Vec<(u64, f32)> = best.into_iter().collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        out.truncate(k);
        Ok(out)
    }
}

/// The delta is merged into the main file when it would hold more than this share of it:
/// the main file is then loaded and rewritten once per so many new vectors, not once per run.
pub const DELTA_SHARE: f64 = 0.125;

/// The most keys compared one by one (exact, and the same whatever order the index was built
/// in) rather than through the graph: a filter this narrow starves a filtered HNSW search, and
/// so few vectors read from the database cost a few milliseconds.
pub const EXACT_MAX: usize = 8192;

fn sidecar(path: &Path, ext: &str) -> std::path::PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(ext);
    s.into()
}

fn keys_path(path: &Path) -> std::path::PathBuf {
    sidecar(path, ".keys")
}

/// The delta's file beside the main one.
fn delta_file(file: &str) -> String {
    format!("{}.delta.usearch", file.trim_end_matches(".usearch"))
}

/// Keys of the main file whose vectors no longer count (removed, or replaced in the delta).
fn read_dead(path: &Path) -> HashSet<u64> {
    std::fs::read(sidecar(path, ".dead"))
        .unwrap_or_default()
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn read_keys(path: &Path) -> Option<Vec<u64>> {
    let b = std::fs::read(keys_path(path)).ok()?;
    if b.len() % 8 != 0 {
        return None;
    }
    Some(
        b.chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect(),
    )
}

fn write_keys(path: &Path, keys: &HashSet<u64>) -> Result<()> {
    write_set(&keys_path(path), keys)
}

fn write_set(to: &Path, keys: &HashSet<u64>) -> Result<()> {
    let mut v: Vec<u64> = keys.iter().copied().collect();
    v.sort();
    let bytes: Vec<u8> = v.iter().flat_map(|k| k.to_le_bytes()).collect();
    let tmp = sidecar(to, ".tmp");
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, to)?;
    Ok(())
}

/// Loads a saved index and its sidecar, refusing one whose sidecar does not match it.
fn load(path: &Path, dim: usize, q: ScalarKind) -> Result<(Index, HashSet<u64>)> {
    let p = path.to_string_lossy();
    let index = Index::restore(&p).map_err(|e| index_err("vector index", e))?;
    if index.dimensions() != dim || index.scalar_kind() != q {
        return Err(index_err("vector index", "dimension or storage differs"));
    }
    let keys: HashSet<u64> = read_keys(path)
        .ok_or_else(|| index_err("vector index", "key list missing"))?
        .into_iter()
        .collect();
    // One key may hold several vectors (a long record's windows).
    if !index.multi() {
        return Err(index_err(
            "vector index",
            "one vector per record (rebuilt for windows)",
        ));
    }
    if keys.len() > index.size() || keys.iter().any(|k| !index.contains(*k)) {
        return Err(index_err("vector index", "key list does not match"));
    }
    Ok((index, keys))
}

fn new_index(dim: usize, q: ScalarKind) -> Result<Index> {
    let opts = IndexOptions {
        dimensions: dim,
        metric: MetricKind::Cos,
        quantization: q,
        connectivity: 16,
        expansion_add: 128,
        expansion_search: 64,
        multi: true,
    };
    Index::new(&opts).map_err(|e| index_err("vector index", e))
}

/// Every (model, dim) with vectors in the database.
pub fn models(conn: &Connection) -> Result<Vec<(String, usize)>> {
    embeddings::models(conn)
}

/// Brings one vector index per (model, dim) up to date; removes files of models that are gone.
pub fn update(
    conn: &Connection,
    layout: &Layout,
    state: &mut State,
    opts: &Options,
) -> Result<Vec<Report>> {
    let q = scalar_kind(&opts.quantization).ok_or_else(|| {
        memkit_core::Error::Usage(format!(
            "unknown vector storage {:?} (f32, f16 or i8)",
            opts.quantization
        ))
    })?;
    let mut reports = Vec::new();
    let mut next = Vec::new();
    let models = models(conn)?;
    for (model, dim) in &models {
        let prev = state
            .vectors
            .iter()
            .find(|v| &v.model == model && v.dim == *dim);
        let (rep, st) = update_one(conn, layout, prev, (model, dim), opts, q)?;
        next.push(st);
        reports.push(rep);
    }
    // Indexes of models no longer in the database, and any not in the state (left by an
    // interrupted run, or by another database's index).
    if let Ok(entries) = std::fs::read_dir(&layout.dir) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let file = [".keys", ".dead"]
                .iter()
                .find_map(|x| name.strip_suffix(x))
                .unwrap_or(&name);
            if file.starts_with("vectors-")
                && file.ends_with(".usearch")
                && !next
                    .iter()
                    .any(|v| v.file == file || v.delta.as_deref() == Some(file))
            {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    state.vectors = next;
    Ok(reports)
}

/// What the last run left that this one can build on: the main file's keys (its sidecar: the
/// file itself is only loaded for a merge), the delta loaded with its keys, and the main file's
/// dead keys.
struct Prior {
    /// Sorted, as the sidecar is written.
    main: Vec<u64>,
    delta: (Index, HashSet<u64>),
    dead: HashSet<u64>,
}

/// The last run's index, when it can be kept (not asked to rebuild, same storage, readable);
/// otherwise `None`, with the reason in `rep`.
fn open_previous(
    prev: Option<&VectorState>,
    opts: &Options,
    path: &Path,
    dim: usize,
    q: ScalarKind,
    rep: &mut Report,
) -> Option<Prior> {
    let p = match (prev, opts.rebuild) {
        (_, true) => Err("asked".to_string()),
        (None, _) => Err("no index state".into()),
        (Some(p), _) if p.quantization != opts.quantization => Err(format!(
            "storage {} → {}",
            p.quantization, opts.quantization
        )),
        (Some(p), _) if !path.is_file() => Err(format!("{} missing", p.file)),
        (Some(p), _) => Ok(p),
    };
    let opened = p.and_then(|p| {
        let mut main = read_keys(path).ok_or("key list missing")?;
        main.sort_unstable();
        let (delta, dead) = match &p.delta {
            Some(f) => (
                load(&path.with_file_name(f), dim, q).map_err(|e| e.to_string())?,
                read_dead(path),
            ),
            None => (
                (
                    new_index(dim, q).map_err(|e| e.to_string())?,
                    HashSet::new(),
                ),
                HashSet::new(),
            ),
        };
        Ok(Prior { main, delta, dead })
    });
    opened.map_err(|e| rep.reason = Some(e)).ok()
}

/// Adds `vecs` (a record's windows each) to `index`, on `threads` threads.
fn add_all(index: &Index, vecs: &[(u64, Vec<f32>)], dim: usize, threads: usize) -> Result<()> {
    let windows: usize = vecs.iter().map(|(_, v)| v.len() / dim).sum();
    index
        .reserve_capacity_and_threads(index.size() + windows + 16, threads)
        .map_err(|e| index_err("vector reserve", e))?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| index_err("threads", e))?;
    pool.install(|| {
        vecs.par_iter()
            .flat_map(|(k, v)| v.par_chunks(dim).map(move |w| (*k, w)))
            .try_for_each(|(k, w)| index.add(k, w).map(|_| ()))
    })
    .map_err(|e| index_err("vector add", e))
}

/// Writes `index` to `path` (through a temporary file) with its key list.
fn save(index: &Index, path: &Path, keys: &HashSet<u64>) -> Result<()> {
    let tmp = sidecar(path, ".tmp");
    index
        .save(&tmp.to_string_lossy())
        .map_err(|e| index_err("vector save", e))?;
    std::fs::rename(&tmp, path)?;
    write_keys(path, keys)
}

/// Brings the index of one model and dimension up to date with the embeddings table (or
/// rebuilds it), saves it with its key list, and says what it did. New and changed vectors go
/// to the delta; the main file is rewritten only when the delta has grown past
/// [`DELTA_SHARE`] of it (or on a rebuild).
fn update_one(
    conn: &Connection,
    layout: &Layout,
    prev: Option<&VectorState>,
    (model, dim): (&String, &usize),
    opts: &Options,
    q: ScalarKind,
) -> Result<(Report, VectorState)> {
    let file = Layout::vector_file(model, *dim);
    let path = layout.dir.join(&file);
    let dfile = delta_file(&file);
    let dpath = layout.dir.join(&dfile);
    let mut rep = Report {
        name: file.trim_end_matches(".usearch").to_string(),
        ..Report::default()
    };
    let mut prior = open_previous(prev, opts, &path, *dim, q, &mut rep);
    let since = prior
        .as_ref()
        .and(prev.as_ref())
        .and_then(|p| p.upto.clone());
    // What the index holds: the main file's keys less the dead ones, and the delta's (dead
    // keys are all the main file's, and none of the delta's).
    let held = prior
        .as_ref()
        .map_or(0, |p| p.main.len() - p.dead.len() + p.delta.1.len());
    let has = |k: u64| {
        prior.as_ref().is_some_and(|p| {
            p.delta.1.contains(&k) || (!p.dead.contains(&k) && p.main.binary_search(&k).is_ok())
        })
    };
    // Only the rows written since the last run when nothing was deleted, which is when the
    // index's records and the new ones add up to the table's count; else every row, compared.
    let recent = match &since {
        Some(s) => {
            let rows = embeddings::owners_since(conn, model, *dim, s)?;
            let new = rows
                .iter()
                .filter(|(kind, id, _)| !has(vector_key(kind, *id)))
                .count();
            (held + new == embeddings::count_owners(conn, model, *dim)? as usize).then_some(rows)
        }
        None => None,
    };
    let full = recent.is_none();
    let rows = match recent {
        Some(r) => r,
        None => embeddings::owners(conn, model, *dim)?,
    };
    let plan = super::plan(
        rows.into_iter()
            .map(|(kind, id, at)| (vector_key(&kind, id), at, (kind, id))),
        has,
        since,
    );
    let removed: HashSet<u64> = match (&prior, full) {
        (Some(p), true) => p
            .main
            .iter()
            .filter(|k| !p.dead.contains(k))
            .chain(&p.delta.1)
            .filter(|k| !plan.keys.contains(k))
            .copied()
            .collect(),
        _ => HashSet::new(),
    };
    let todo: HashSet<u64> = plan.todo.iter().map(|c| c.key).collect();
    rep.removed = removed.len() as u64;
    rep.updated = plan.todo.iter().filter(|c| c.indexed).count() as u64;
    rep.added = todo.len() as u64 - rep.updated;
    let merge = prior
        .as_ref()
        .is_some_and(|p| (p.delta.1.len() + todo.len()) as f64 > DELTA_SHARE * p.main.len() as f64);
    // A merge loads the main file whole; one that does not load is rebuilt.
    let mut main = None;
    if merge {
        match load(&path, *dim, q) {
            Ok(x) => main = Some(x),
            Err(e) => {
                rep.reason = Some(e.to_string());
                prior = None;
            }
        }
    }
    rep.rebuilt = prior.is_none();
    let fetch = |rows: &[(String, i64)]| -> Result<Vec<(u64, Vec<f32>)>> {
        let mut out = Vec::new();
        for (kind, id) in rows {
            out.push((
                vector_key(kind, *id),
                embeddings::get(conn, kind, *id, model, *dim)?,
            ));
        }
        Ok(out)
    };
    let threads = opts.threads.clamp(1, super::MAX_THREADS);
    let usable = |v: &Vec<f32>| !v.is_empty() && v.len().is_multiple_of(*dim);
    let (delta_state, kept) = match (prior, main) {
        (None, _) => {
            let index = new_index(*dim, q)?;
            let mut vecs = Vec::new();
            for (kind, id, v) in embeddings::all(conn, model, *dim)? {
                vecs.push((vector_key(&kind, id), v));
            }
            vecs.retain(|(_, v)| usable(v));
            rep.added = vecs.len() as u64;
            rep.updated = 0;
            rep.removed = 0;
            add_all(&index, &vecs, *dim, threads)?;
            save(&index, &path, &vecs.iter().map(|(k, _)| *k).collect())?;
            (None, vecs.len() as u64)
        }
        (Some(p), Some((index, mut keys))) => {
            // Merge: what the delta and the dead list said goes into the main file.
            let rows: Vec<(String, i64)> = plan
                .todo
                .iter()
                .map(|c| c.row.clone())
                .chain(
                    p.delta
                        .1
                        .iter()
                        .filter(|k| !removed.contains(k) && !todo.contains(k))
                        .map(|k| {
                            let (kind, id) = owner_of_key(*k);
                            (kind.to_string(), id)
                        }),
                )
                .collect();
            let mut vecs = fetch(&rows)?;
            vecs.retain(|(_, v)| usable(v));
            for k in p
                .dead
                .iter()
                .chain(&removed)
                .chain(vecs.iter().map(|(k, _)| k))
            {
                if keys.remove(k) {
                    let _ = index.remove(*k);
                }
            }
            add_all(&index, &vecs, *dim, threads)?;
            keys.extend(vecs.iter().map(|(k, _)| *k));
            save(&index, &path, &keys)?;
            (None, keys.len() as u64)
        }
        (Some(mut p), None) => {
            let (dindex, dkeys) = &mut p.delta;
            let rows: Vec<(String, i64)> = plan.todo.iter().map(|c| c.row.clone()).collect();
            let mut vecs = fetch(&rows)?;
            vecs.retain(|(_, v)| usable(v));
            // A key leaves the delta itself, and is dead in the main file.
            for k in removed.iter().chain(vecs.iter().map(|(k, _)| k)) {
                if dkeys.remove(k) {
                    let _ = dindex.remove(*k);
                }
                if p.main.binary_search(k).is_ok() {
                    p.dead.insert(*k);
                }
            }
            add_all(dindex, &vecs, *dim, threads)?;
            dkeys.extend(vecs.iter().map(|(k, _)| *k));
            save(dindex, &dpath, dkeys)?;
            write_set(&sidecar(&path, ".dead"), &p.dead)?;
            // Dead keys are all of the main file's.
            (
                Some(dfile),
                (p.main.len() - p.dead.len() + dkeys.len()) as u64,
            )
        }
    };
    if delta_state.is_none() {
        for f in [dpath.clone(), keys_path(&dpath), sidecar(&path, ".dead")] {
            let _ = std::fs::remove_file(f);
        }
    }
    rep.docs = kept;
    let st = VectorState {
        model: model.clone(),
        dim: *dim,
        quantization: opts.quantization.clone(),
        count: kept,
        upto: plan.upto,
        file,
        delta: delta_state,
    };
    Ok((rep, st))
}

/// Compares each vector index with the embeddings table.
pub fn check(conn: &Connection, layout: &Layout) -> Result<Vec<Check>> {
    let mut out = Vec::new();
    for (model, dim) in models(conn)? {
        let file = Layout::vector_file(&model, dim);
        let path = layout.dir.join(&file);
        let mut c = Check {
            name: file.trim_end_matches(".usearch").to_string(),
            ..Check::default()
        };
        let want: HashSet<u64> = embeddings::owners(conn, &model, dim)?
            .into_iter()
            .map(|(kind, id, _)| vector_key(&kind, id))
            .collect();
        c.expected = want.len() as u64;
        // The main file less its dead keys, and the delta the state names.
        let delta = layout
            .load_state()
            .and_then(|s| {
                s.vectors
                    .into_iter()
                    .find(|v| v.model == model && v.dim == dim)
            })
            .and_then(|v| v.delta)
            .map(|f| layout.dir.join(f));
        let dead = if delta.is_some() {
            read_dead(&path)
        } else {
            HashSet::new()
        };
        let mut parts = vec![(path.clone(), dead)];
        parts.extend(delta.map(|d| (d, HashSet::new())));
        let mut counts: HashMap<u64, u32> = HashMap::new();
        let mut broken: HashSet<u64> = HashSet::new();
        for (path, dead) in parts {
            let loaded = Index::restore_view(&path.to_string_lossy())
                .map_err(|e| e.to_string())
                .and_then(|i| {
                    read_keys(&path)
                        .map(|k| (i, k))
                        .ok_or("key list missing".into())
                });
            let (index, keys) = match loaded {
                Ok(x) => x,
                Err(e) => {
                    c.error = Some(e);
                    continue;
                }
            };
            c.indexed += index.size() as u64;
            if keys.len() != index.size() {
                c.error = Some(format!(
                    "index holds {} vectors, key list {}",
                    index.size(),
                    keys.len()
                ));
            }
            for k in keys.into_iter().filter(|k| !dead.contains(k)) {
                *counts.entry(k).or_default() += 1;
                if !index.contains(k) {
                    broken.insert(k);
                }
            }
        }
        c.missing = want
            .iter()
            .filter(|k| !counts.contains_key(k) || broken.contains(k))
            .copied()
            .collect();
        c.extra = counts
            .iter()
            .filter(|(k, n)| !want.contains(k) || **n > 1)
            .map(|(k, _)| *k)
            .collect();
        c.missing.sort();
        c.extra.sort();
        out.push(c);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::{Options, State};

    const DIM: usize = 16;
    const MODEL: &str = "test-model";

    /// A pseudo-random vector per id (splitmix64): no two are collinear.
    fn vec_of(i: u64) -> Vec<f32> {
        let mut x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        (0..DIM)
            .map(|_| {
                x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let mut z = x;
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                ((z ^ (z >> 31)) % 2000) as f32 / 1000.0 - 1.0
            })
            .collect()
    }

    fn put(conn: &Connection, ids: impl Iterator<Item = (i64, u64)>, at: &str) {
        let vecs: Vec<(i64, Vec<f32>, String)> = ids
            .map(|(id, seed)| (id, vec_of(seed), String::new()))
            .collect();
        embeddings::put_observations(conn, MODEL, DIM, &vecs).unwrap();
        let ids: Vec<String> = vecs.iter().map(|v| v.0.to_string()).collect();
        conn.execute(
            &format!(
                "UPDATE embeddings SET created_at = ?1 WHERE owner_id IN ({})",
                ids.join(",")
            ),
            [at],
        )
        .unwrap();
    }

    fn key(id: i64) -> u64 {
        vector_key("observation", id)
    }

    fn run(conn: &Connection, layout: &Layout, state: &mut State) -> Report {
        std::fs::create_dir_all(&layout.dir).unwrap();
        let reps = update(conn, layout, state, &Options::default()).unwrap();
        layout.save_state(state).unwrap();
        reps.into_iter().next().unwrap()
    }

    /// What a search sees: the new records, not the deleted one, the replaced one by its new
    /// vector only; the key list and --check agree with the database.
    fn assert_searches(conn: &Connection, layout: &Layout, state: &State, n: usize) {
        let v = Vectors::view(&layout.dir, &state.vectors[0]).unwrap();
        let top = |q: &[f32], allowed: Option<&HashSet<u64>>| v.search(q, 10, allowed).unwrap();
        let hits = top(&vec_of(203), None);
        assert_eq!(hits[0].0, key(203));
        assert!(hits[0].1 > 0.999, "{hits:?}");
        assert!(top(&vec_of(20), None).iter().all(|h| h.0 != key(20)));
        // Record 10's old vector is gone; its new one (seed 999) finds it.
        assert!(
            top(&vec_of(10), None)
                .iter()
                .all(|h| h.0 != key(10) || h.1 < 0.99)
        );
        assert_eq!(top(&vec_of(999), None)[0].0, key(10));
        let allowed = HashSet::from([key(203), key(5)]);
        let hits = top(&vec_of(203), Some(&allowed));
        assert_eq!(hits[0].0, key(203));
        assert!(hits.iter().all(|h| allowed.contains(&h.0)), "{hits:?}");
        let keys = v.keys().unwrap();
        assert_eq!(keys.len(), n);
        assert!(keys.contains(&key(203)) && !keys.contains(&key(20)));
        let c = &check(conn, layout).unwrap()[0];
        assert!(!c.differs(), "{c:?}");
    }

    #[test]
    fn new_vectors_go_to_a_delta_that_is_merged_once_it_outgrows_its_share() {
        let tmp = tempfile::tempdir().unwrap();
        let conn = memkit_core::store::open(&tmp.path().join("mem.db")).unwrap();
        let layout = Layout::new(tmp.path());
        let mut state = State {
            version: crate::index::STATE_VERSION,
            ..State::default()
        };
        put(
            &conn,
            (1..=200).map(|i| (i, i as u64)),
            "2026-01-01T00:00:00.000Z",
        );
        let r = run(&conn, &layout, &mut state);
        assert!(r.rebuilt && r.docs == 200, "{r:?}");
        let main = layout.dir.join(&state.vectors[0].file);
        let written = std::fs::read(&main).unwrap();

        // One session's worth: five new, one re-embedded, one deleted.
        put(
            &conn,
            (201..=205).map(|i| (i, i as u64)),
            "2026-01-02T00:00:00.000Z",
        );
        put(&conn, [(10, 999)].into_iter(), "2026-01-02T00:00:00.000Z");
        conn.execute("DELETE FROM embeddings WHERE owner_id = 20", [])
            .unwrap();
        let r = run(&conn, &layout, &mut state);
        assert!(!r.rebuilt, "{r:?}");
        assert_eq!((r.added, r.updated, r.removed, r.docs), (5, 1, 1, 204));
        assert_eq!(
            std::fs::read(&main).unwrap(),
            written,
            "the main file is not rewritten"
        );
        let delta = state.vectors[0].delta.clone().expect("a delta");
        assert!(layout.dir.join(&delta).is_file());
        assert_searches(&conn, &layout, &state, 204);

        // Nothing deleted: only the rows written since are read, a re-embedded one included.
        put(&conn, [(30, 777)].into_iter(), "2026-01-02T12:00:00.000Z");
        let r = run(&conn, &layout, &mut state);
        assert_eq!((r.added, r.updated, r.removed, r.docs), (0, 1, 0, 204));
        let v = Vectors::view(&layout.dir, &state.vectors[0]).unwrap();
        assert_eq!(v.search(&vec_of(777), 5, None).unwrap()[0].0, key(30));
        drop(v);

        // More than an eighth of the main file: merged into it, the delta gone.
        put(
            &conn,
            (206..=245).map(|i| (i, i as u64)),
            "2026-01-03T00:00:00.000Z",
        );
        let r = run(&conn, &layout, &mut state);
        assert!(!r.rebuilt, "{r:?}");
        assert_eq!((r.added, r.docs), (40, 244));
        assert_eq!(state.vectors[0].delta, None);
        assert!(!layout.dir.join(&delta).exists());
        assert_ne!(std::fs::read(&main).unwrap(), written);
        assert_searches(&conn, &layout, &state, 244);
    }
}
