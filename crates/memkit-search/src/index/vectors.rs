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
use memkit_core::store::{embeddings, vector_key};

pub fn scalar_kind(q: &str) -> Option<ScalarKind> {
    match q {
        "f32" => Some(ScalarKind::F32),
        "f16" => Some(ScalarKind::F16),
        "i8" => Some(ScalarKind::I8),
        _ => None,
    }
}

/// An open vector index with its keys.
pub struct Vectors {
    pub index: Index,
    pub model: String,
    pub dim: usize,
    /// The saved index's file (its `.keys` sidecar lists the keys).
    path: std::path::PathBuf,
}

impl Vectors {
    /// Memory-maps a saved index for searching. It is viewed without usearch's key table
    /// (vendor/usearch/PATCHED.md): building that table touched every node of the file and
    /// was most of a 100k-record search; what needs a key's vectors reads the database.
    pub fn view(path: &Path, model: &str, dim: usize) -> Result<Vectors> {
        let index = Index::restore_view_unkeyed(&path.to_string_lossy())
            .map_err(|e| index_err("vector index", e))?;
        if index.dimensions() != dim {
            return Err(index_err("vector index", "dimension differs"));
        }
        Ok(Vectors {
            index,
            model: model.into(),
            dim,
            path: path.to_path_buf(),
        })
    }

    /// Every key of the index (its sidecar); `None` when the sidecar is unreadable.
    pub fn keys(&self) -> Option<Vec<u64>> {
        read_keys(&self.path)
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
        if q.len() != self.dim || self.index.size() == 0 || k == 0 {
            return Ok(vec![]);
        }
        // A record may come back once per window: asked for more, its best kept.
        let want = k * 2;
        let m = match allowed {
            Some(keys) => self
                .index
                .filtered_search(q, want, |key| keys.contains(&key)),
            None => self.index.search(q, want),
        }
        .map_err(|e| index_err("vector search", e))?;
        let mut best: HashMap<u64, f32> = HashMap::new();
        for (key, d) in m.keys.into_iter().zip(m.distances) {
            let s = best.entry(key).or_insert(f32::MIN);
            *s = s.max(1.0 - d);
        }
        let mut out: Vec<(u64, f32)> = best.into_iter().collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        out.truncate(k);
        Ok(out)
    }
}

/// The most keys compared one by one (exact, and the same whatever order the index was built
/// in) rather than through the graph: a filter this narrow starves a filtered HNSW search, and
/// so few vectors read from the database cost a few milliseconds.
pub const EXACT_MAX: usize = 8192;

fn keys_path(path: &Path) -> std::path::PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".keys");
    s.into()
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
    let mut v: Vec<u64> = keys.iter().copied().collect();
    v.sort();
    let bytes: Vec<u8> = v.iter().flat_map(|k| k.to_le_bytes()).collect();
    let tmp = keys_path(path).with_extension("keys.tmp");
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, keys_path(path))?;
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
            let file = name.strip_suffix(".keys").unwrap_or(&name);
            if file.starts_with("vectors-")
                && file.ends_with(".usearch")
                && !next.iter().any(|v| v.file == file)
            {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    state.vectors = next;
    Ok(reports)
}

/// The index the last run saved, when it can be kept (not asked to rebuild, same storage,
/// readable); otherwise `None`, with the reason in `rep`.
fn open_previous(
    prev: Option<&VectorState>,
    opts: &Options,
    path: &Path,
    dim: usize,
    q: ScalarKind,
    rep: &mut Report,
) -> Option<(Index, HashSet<u64>)> {
    match (prev, opts.rebuild) {
        (_, true) => {
            rep.reason = Some("asked".into());
            None
        }
        (None, _) => {
            rep.reason = Some("no index state".into());
            None
        }
        (Some(p), _) if p.quantization != opts.quantization => {
            rep.reason = Some(format!(
                "storage {} → {}",
                p.quantization, opts.quantization
            ));
            None
        }
        (Some(_), _) => match load(path, dim, q) {
            Ok(x) => Some(x),
            Err(e) => {
                rep.reason = Some(e.to_string());
                None
            }
        },
    }
}

/// Brings the index of one model and dimension up to date with the embeddings table (or
/// rebuilds it), saves it with its key list, and says what it did.
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
    let mut rep = Report {
        name: file.trim_end_matches(".usearch").to_string(),
        ..Report::default()
    };
    let loaded = open_previous(prev, opts, &path, *dim, q, &mut rep);
    let since = loaded
        .as_ref()
        .and(prev.as_ref())
        .and_then(|p| p.upto.clone());
    let (index, mut have) = match loaded {
        Some(x) => x,
        None => {
            rep.rebuilt = true;
            (new_index(*dim, q)?, HashSet::new())
        }
    };
    // What the database holds for this model.
    let rows = embeddings::owners(conn, model, *dim)?
        .into_iter()
        .map(|(kind, id, at)| (vector_key(&kind, id), at, (kind, id)));
    let plan = super::plan(rows, |k| have.contains(&k), since);
    for k in have
        .iter()
        .filter(|k| !plan.keys.contains(k))
        .copied()
        .collect::<Vec<_>>()
    {
        let _ = index.remove(k);
        have.remove(&k);
        rep.removed += 1;
    }
    // Fetch the vectors to add.
    let mut vecs: Vec<(u64, Vec<f32>)> = Vec::with_capacity(plan.todo.len());
    if rep.rebuilt {
        for (kind, id, v) in embeddings::all(conn, model, *dim)? {
            vecs.push((vector_key(&kind, id), v));
        }
    } else {
        for c in &plan.todo {
            let (kind, id) = &c.row;
            vecs.push((c.key, embeddings::get(conn, kind, *id, model, *dim)?));
        }
    }
    vecs.retain(|(_, v)| !v.is_empty() && v.len() % *dim == 0);
    for (k, _) in &vecs {
        if have.contains(k) {
            let _ = index.remove(*k);
            rep.updated += 1;
        } else {
            rep.added += 1;
        }
    }
    let threads = opts.threads.clamp(1, super::MAX_THREADS);
    let windows: usize = vecs.iter().map(|(_, v)| v.len() / *dim).sum();
    index
        .reserve_capacity_and_threads(index.size() + windows + 16, threads)
        .map_err(|e| index_err("vector reserve", e))?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| index_err("threads", e))?;
    pool.install(|| {
        vecs.par_iter()
            .flat_map(|(k, v)| v.par_chunks(*dim).map(move |w| (*k, w)))
            .try_for_each(|(k, w)| index.add(k, w).map(|_| ()))
    })
    .map_err(|e| index_err("vector add", e))?;
    for (k, _) in &vecs {
        have.insert(*k);
    }
    let tmp = layout.dir.join(format!("{file}.tmp"));
    index
        .save(&tmp.to_string_lossy())
        .map_err(|e| index_err("vector save", e))?;
    std::fs::rename(&tmp, &path)?;
    write_keys(&path, &have)?;
    rep.docs = have.len() as u64;
    let st = VectorState {
        model: model.clone(),
        dim: *dim,
        quantization: opts.quantization.clone(),
        count: have.len() as u64,
        upto: plan.upto,
        file,
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
        let loaded = Index::restore_view(&path.to_string_lossy())
            .map_err(|e| e.to_string())
            .and_then(|i| {
                read_keys(&path)
                    .map(|k| (i, k))
                    .ok_or("key list missing".into())
            });
        match loaded {
            Ok((index, keys)) => {
                let mut counts: HashMap<u64, u32> = HashMap::new();
                for k in keys {
                    *counts.entry(k).or_default() += 1;
                }
                c.indexed = index.size() as u64;
                c.missing = want
                    .iter()
                    .filter(|k| !counts.contains_key(k) || !index.contains(**k))
                    .copied()
                    .collect();
                c.extra = counts
                    .iter()
                    .filter(|(k, n)| !want.contains(k) || **n > 1)
                    .map(|(k, _)| *k)
                    .collect();
                if counts.len() != index.size() {
                    c.error = Some(format!(
                        "index holds {} vectors, key list {}",
                        index.size(),
                        counts.len()
                    ));
                }
            }
            Err(e) => {
                c.error = Some(e);
                c.missing = want.iter().copied().collect();
            }
        }
        c.missing.sort();
        c.extra.sort();
        out.push(c);
    }
    Ok(out)
}
