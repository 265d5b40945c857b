//! Vector indexes (cosine), one per embedding model and dimension, keyed by
//! `store::vector_key`: a main file and a delta beside it, each a [`flat`] index (the keys are
//! in the file, a long record's windows each a row of their own).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use rusqlite::Connection;

use super::flat::{self, Kind, Part, Writer, sidecar};
use super::run::{Check, Options, Report, index_err, plan};
use super::state::{Layout, State, VectorState};
use memkit_core::Result;
use memkit_core::store::{embeddings, vector_key};

pub fn scalar_kind(q: &str) -> Option<Kind> {
    Kind::parse(q)
}

/// An open vector index: the main file, the vectors added since it was written, and the keys
/// of the main file those replace or remove.
pub struct Vectors {
    main: Part,
    pub model: String,
    pub dim: usize,
    delta: Option<Part>,
    dead: HashSet<u64>,
}

impl Vectors {
    /// Maps a saved index (and its delta) for searching.
    pub fn view(dir: &Path, st: &VectorState) -> Result<Vectors> {
        let open = |path: &Path| -> Result<Part> {
            let part = Part::open(path)?;
            if part.dim != st.dim {
                return Err(index_err("vector index", "dimension differs"));
            }
            Ok(part)
        };
        let path = dir.join(&st.file);
        let delta = match &st.delta {
            Some(f) => Some(open(&dir.join(f))?),
            None => None,
        };
        Ok(Vectors {
            main: open(&path)?,
            model: st.model.clone(),
            dim: st.dim,
            dead: if delta.is_some() {
                read_dead(&path)
            } else {
                HashSet::new()
            },
            delta,
        })
    }

    /// Vectors held, the main file's replaced ones included.
    pub fn size(&self) -> usize {
        self.main.rows() + self.delta.as_ref().map_or(0, Part::rows)
    }

    /// Every key of the index.
    pub fn keys(&self) -> Option<Vec<u64>> {
        let mut keys: Vec<u64> = self
            .main
            .keys()
            .filter(|k| !self.dead.contains(k))
            .chain(self.delta.iter().flat_map(Part::keys))
            .collect();
        keys.sort_unstable();
        keys.dedup();
        Some(keys)
    }

    /// The main file with its dead keys (none listed: `None`), then the delta.
    fn parts(&self) -> impl Iterator<Item = (&Part, Option<&HashSet<u64>>)> {
        let dead = (!self.dead.is_empty()).then_some(&self.dead);
        std::iter::once((&self.main, dead)).chain(self.delta.iter().map(|d| (d, None)))
    }

    /// The `k` keys nearest `q` with their cosine similarity, best first, ties by key; only
    /// keys in `allowed` when given, filtered inside the scan, never from a global top-k (a
    /// small project would get a short page).
    pub fn search(&self, q: &[f32], k: usize, allowed: Option<&Keys>) -> Result<Vec<(u64, f32)>> {
        Ok(self.search_and(q, k, allowed, &HashSet::new())?.0)
    }

    /// [`Vectors::search`], and [`Vectors::similarities`] of `also` from the same pass.
    pub fn search_and(
        &self,
        q: &[f32],
        k: usize,
        allowed: Option<&Keys>,
        also: &HashSet<u64>,
    ) -> Result<(flat::Hits, HashMap<u64, f64>)> {
        if q.len() != self.dim || self.size() == 0 || k == 0 {
            return Ok((vec![], HashMap::new()));
        }
        let mut best: HashMap<u64, f32> = HashMap::new();
        let mut sims: HashMap<u64, f32> = HashMap::new();
        for (part, dead) in self.parts() {
            let gone = |key: u64| dead.is_some_and(|d| d.contains(&key));
            let keep = |key: u64| allowed.is_none_or(|a| a.contains(key)) && !gone(key);
            // Below half the rows, a block none of whose rows is allowed costs its keys only.
            let narrow = allowed.map(Keys::len).filter(|&n| n * 2 < part.rows());
            let (top, found) = part.search_and(q, k, &keep, narrow, also, &gone)?;
            for (key, s) in top {
                flat::keep_best(&mut best, key, s);
            }
            for (key, s) in found {
                flat::keep_best(&mut sims, key, s);
            }
        }
        let mut out: Vec<(u64, f32)> = best.into_iter().collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        out.truncate(k);
        Ok((out, sims.into_iter().map(|(k, s)| (k, s as f64)).collect()))
    }

    /// The cosine of `q` with each of `keys` the index holds (a record by its best window).
    pub fn similarities(&self, q: &[f32], keys: &[u64]) -> Result<HashMap<u64, f64>> {
        let want: HashSet<u64> = keys.iter().copied().collect();
        let mut best: HashMap<u64, f32> = HashMap::new();
        for (part, dead) in self.parts() {
            let skip = |key: u64| dead.is_some_and(|d| d.contains(&key));
            for (key, s) in part.similarities(q, &want, &skip)? {
                flat::keep_best(&mut best, key, s);
            }
        }
        Ok(best.into_iter().map(|(k, s)| (k, s as f64)).collect())
    }
}

/// The keys a filter lets through: observations (most of any store) as a bitmap of their ids,
/// the rest in a set. A project's 80,000 keys at a million records cost a hash each to build
/// and to look up, a bit here.
#[derive(Debug, Default, Clone)]
pub struct Keys {
    observations: Vec<u64>,
    others: HashSet<u64>,
    len: usize,
}

impl Keys {
    /// An observation's id, when its bit would be in the bitmap: ids past the cap (16 MB of
    /// bits) go to the set, so that one odd id does not allocate its way there.
    fn bit(key: u64) -> Option<(usize, usize)> {
        let (tag, id) = (key >> 56, key & ((1 << 56) - 1));
        (tag == vector_key("observation", 0) >> 56 && id < 1 << 27)
            .then_some((id as usize / 64, id as usize % 64))
    }

    /// Adds a key (once).
    pub fn insert(&mut self, key: u64) {
        let fresh = match Self::bit(key) {
            Some((w, b)) => {
                if w >= self.observations.len() {
                    self.observations.resize(w + 1, 0);
                }
                let fresh = self.observations[w] >> b & 1 == 0;
                self.observations[w] |= 1 << b;
                fresh
            }
            None => self.others.insert(key),
        };
        self.len += usize::from(fresh);
    }

    pub fn contains(&self, key: u64) -> bool {
        match Self::bit(key) {
            Some((w, b)) => self.observations.get(w).is_some_and(|x| x >> b & 1 == 1),
            None => self.others.contains(&key),
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Every key, observations first in id order.
    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        // Set bits only, lowest first: a narrow filter's few ids may span a million.
        let obs = self.observations.iter().enumerate().flat_map(|(w, &bits)| {
            std::iter::successors((bits != 0).then_some(bits), |b| {
                let rest = b & (b - 1);
                (rest != 0).then_some(rest)
            })
            .map(move |b| vector_key("observation", (w * 64 + b.trailing_zeros() as usize) as i64))
        });
        obs.chain(self.others.iter().copied())
    }
}

impl FromIterator<u64> for Keys {
    fn from_iter<I: IntoIterator<Item = u64>>(it: I) -> Keys {
        let mut k = Keys::default();
        it.into_iter().for_each(|key| k.insert(key));
        k
    }
}

impl Extend<u64> for Keys {
    fn extend<I: IntoIterator<Item = u64>>(&mut self, it: I) {
        it.into_iter().for_each(|key| self.insert(key));
    }
}

/// Vectors a rebuild takes the mean from (the first, in owner order): enough for the mean of
/// every dimension, and a rebuild holds no more than these at once.
const MEAN_SAMPLE: usize = 20_000;

/// The delta is merged into the main file when it would hold more than this share of it:
/// the main file is then rewritten once per so many new vectors, not once per run.
pub const DELTA_SHARE: f64 = 0.125;

/// The most keys compared one by one with the database's own vectors (exact f32) rather than
/// through the index: so few vectors read from the database cost a few milliseconds.
pub const EXACT_MAX: usize = 8192;

/// The delta's file beside the main one.
fn delta_file(file: &str) -> String {
    format!("{}.delta.vec", file.trim_end_matches(".vec"))
}

/// The sidecar of the main file's dead keys.
fn dead_path(path: &Path) -> PathBuf {
    sidecar(path, ".dead")
}

/// Keys of the main file whose vectors no longer count (removed, or replaced in the delta).
fn read_dead(path: &Path) -> HashSet<u64> {
    std::fs::read(dead_path(path))
        .unwrap_or_default()
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect()
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

/// The distinct keys of a part, sorted.
fn part_keys(p: &Part) -> Vec<u64> {
    let mut k: Vec<u64> = p.keys().collect();
    k.sort_unstable();
    k.dedup();
    k
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
    // Indexes of models no longer in the database, any not in the state (left by an
    // interrupted run, or by another database's index), and the usearch HNSW files memkit
    // wrote before the flat index (`.usearch`, with `.keys` sidecars).
    if let Ok(entries) = std::fs::read_dir(&layout.dir) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let file = [".keys", ".dead", ".data", ".tmp"]
                .iter()
                .fold(name.as_str(), |n, x| n.strip_suffix(x).unwrap_or(n));
            let ours = next
                .iter()
                .any(|v| v.file == file || v.delta.as_deref() == Some(file));
            if file.starts_with("vectors-")
                && (file.ends_with(".usearch") || (file.ends_with(".vec") && !ours))
            {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    state.vectors = next;
    Ok(reports)
}

/// What the last run left that this one can build on: the main file and its keys, the delta
/// with its keys, and the main file's dead keys.
struct Prior {
    part: Part,
    /// Sorted.
    main: Vec<u64>,
    delta: Option<Part>,
    dkeys: HashSet<u64>,
    dead: HashSet<u64>,
}

/// The last run's index, when it can be kept (not asked to rebuild, same storage, readable);
/// otherwise `None`, with the reason in `rep`.
fn open_previous(
    prev: Option<&VectorState>,
    opts: &Options,
    path: &Path,
    dim: usize,
    q: Kind,
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
        let part = Part::open(path).map_err(|e| e.to_string())?;
        if part.dim != dim || part.kind != q {
            return Err("dimension or storage differs".to_string());
        }
        let main = part_keys(&part);
        let (delta, dead) = match &p.delta {
            Some(f) => (
                Some(Part::open(&path.with_file_name(f)).map_err(|e| e.to_string())?),
                read_dead(path),
            ),
            None => (None, HashSet::new()),
        };
        let dkeys = delta.iter().flat_map(Part::keys).collect();
        Ok(Prior {
            part,
            main,
            delta,
            dkeys,
            dead,
        })
    });
    opened.map_err(|e| rep.reason = Some(e)).ok()
}

/// Brings the index of one model and dimension up to date with the embeddings table (or
/// rebuilds it), and says what it did. New and changed vectors go to the delta; the main file
/// is rewritten only when the delta has grown past [`DELTA_SHARE`] of it (or on a rebuild).
fn update_one(
    conn: &Connection,
    layout: &Layout,
    prev: Option<&VectorState>,
    (model, dim): (&String, &usize),
    opts: &Options,
    q: Kind,
) -> Result<(Report, VectorState)> {
    let file = Layout::vector_file(model, *dim);
    let path = layout.dir.join(&file);
    let dfile = delta_file(&file);
    let dpath = layout.dir.join(&dfile);
    let mut rep = Report {
        name: file.trim_end_matches(".vec").to_string(),
        ..Report::default()
    };
    let prior = open_previous(prev, opts, &path, *dim, q, &mut rep);
    let since = prior
        .as_ref()
        .and(prev.as_ref())
        .and_then(|p| p.upto.clone());
    // What the index holds: the main file's keys less the dead ones, and the delta's (dead
    // keys are all the main file's, and none of the delta's).
    let held = prior
        .as_ref()
        .map_or(0, |p| p.main.len() - p.dead.len() + p.dkeys.len());
    let has = |k: u64| {
        prior.as_ref().is_some_and(|p| {
            p.dkeys.contains(&k) || (!p.dead.contains(&k) && p.main.binary_search(&k).is_ok())
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
    let plan = plan(
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
            .chain(&p.dkeys)
            .filter(|k| !plan.keys.contains(k))
            .copied()
            .collect(),
        _ => HashSet::new(),
    };
    let todo: HashSet<u64> = plan.todo.iter().map(|c| c.key).collect();
    rep.removed = removed.len() as u64;
    rep.updated = plan.todo.iter().filter(|c| c.indexed).count() as u64;
    rep.added = todo.len() as u64 - rep.updated;
    rep.rebuilt = prior.is_none();
    let usable = |v: &Vec<f32>| !v.is_empty() && v.len().is_multiple_of(*dim);
    // The usable vectors of the plan's rows (a record's windows each).
    let mut vecs = Vec::new();
    if prior.is_some() {
        for c in &plan.todo {
            let (kind, id) = &c.row;
            let v = embeddings::get(conn, kind, *id, model, *dim)?;
            if usable(&v) {
                vecs.push((c.key, v));
            }
        }
    }
    let fresh: HashSet<u64> = vecs.iter().map(|(k, _)| *k).collect();
    let (delta_state, kept) = match prior {
        None => {
            // Streamed twice: the mean from the first vectors, then every vector written.
            let mut sample = Vec::new();
            embeddings::each(conn, model, *dim, |_, _, v| {
                if usable(&v) {
                    sample.push(v);
                }
                Ok(sample.len() < MEAN_SAMPLE)
            })?;
            let mean = flat::mean_of(sample.iter().flat_map(|v| v.chunks_exact(*dim)), *dim);
            drop(sample);
            let mut w = Writer::create(&path, *dim, q, mean)?;
            let (mut n, mut seen, total) = (0u64, 0u64, plan.keys.len() as u64);
            embeddings::each(conn, model, *dim, |kind, id, v| {
                if usable(&v) {
                    w.push_all(vector_key(&kind, id), &v)?;
                    n += 1;
                }
                seen += 1;
                if seen.is_multiple_of(4096) {
                    opts.report(&rep.name, seen, total);
                }
                Ok(true)
            })?;
            opts.report(&rep.name, seen, total);
            w.finish()?;
            rep.added = n;
            rep.updated = 0;
            rep.removed = 0;
            (None, n)
        }
        // Nothing new, nothing gone: the files stay as they are.
        Some(p) if fresh.is_empty() && removed.is_empty() => (
            prev.and_then(|v| v.delta.clone()),
            (p.main.len() - p.dead.len() + p.dkeys.len()) as u64,
        ),
        Some(p) if (p.dkeys.len() + todo.len()) as f64 > DELTA_SHARE * p.main.len() as f64 => {
            // Merge: the main file's live rows, the delta's, and the new vectors, against the
            // main file's mean.
            let gone = |k: &u64| removed.contains(k) || fresh.contains(k);
            let mut w = Writer::create(&path, *dim, q, p.part.mean())?;
            let mut keys = HashSet::new();
            for part in std::iter::once(&p.part).chain(&p.delta) {
                let main = std::ptr::eq(part, &p.part);
                for r in 0..part.rows() {
                    let k = part.key(r);
                    if !(gone(&k) || main && p.dead.contains(&k)) {
                        w.push(k, &part.vector(r)?)?;
                        keys.insert(k);
                    }
                }
            }
            for (k, v) in &vecs {
                w.push_all(*k, v)?;
                keys.insert(*k);
            }
            w.finish()?;
            (None, keys.len() as u64)
        }
        Some(mut p) => {
            // A key leaves the delta itself, and is dead in the main file.
            let gone = |k: &u64| removed.contains(k) || fresh.contains(k);
            let mut w = Writer::create(&dpath, *dim, q, p.part.mean())?;
            let mut dkeys = HashSet::new();
            if let Some(d) = &p.delta {
                for r in 0..d.rows() {
                    let k = d.key(r);
                    if !gone(&k) {
                        w.push(k, &d.vector(r)?)?;
                        dkeys.insert(k);
                    }
                }
            }
            for (k, v) in &vecs {
                w.push_all(*k, v)?;
                dkeys.insert(*k);
            }
            for k in removed.iter().chain(&fresh) {
                if p.main.binary_search(k).is_ok() {
                    p.dead.insert(*k);
                }
            }
            w.finish()?;
            write_set(&dead_path(&path), &p.dead)?;
            // Dead keys are all of the main file's.
            (
                Some(dfile),
                (p.main.len() - p.dead.len() + dkeys.len()) as u64,
            )
        }
    };
    if delta_state.is_none() {
        for f in [dpath.clone(), flat::data_path(&dpath), dead_path(&path)] {
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
            name: file.trim_end_matches(".vec").to_string(),
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
        for (path, dead) in parts {
            let part = match Part::open(&path) {
                Ok(p) => p,
                Err(e) => {
                    c.error = Some(e.to_string());
                    continue;
                }
            };
            if part.dim != dim {
                c.error = Some(format!("{} holds {}-d vectors", path.display(), part.dim));
            }
            c.indexed += part.rows() as u64;
            for k in part_keys(&part).into_iter().filter(|k| !dead.contains(k)) {
                *counts.entry(k).or_default() += 1;
            }
        }
        c.missing = want
            .iter()
            .filter(|k| !counts.contains_key(k))
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

    fn vec_of(i: u64) -> Vec<f32> {
        crate::index::flat::tests::random_vector(i, DIM, 1.0)
    }

    #[test]
    fn a_key_set_holds_each_kind_of_key_once_and_nothing_else() {
        let keys = [
            vector_key("observation", 0),
            vector_key("observation", 63),
            vector_key("observation", 64),
            vector_key("observation", 1 << 40),
            vector_key("session", 63),
            vector_key("learning", 7),
        ];
        let mut set: Keys = keys.iter().copied().collect();
        set.extend(keys);
        assert_eq!(set.len(), keys.len());
        for k in keys {
            assert!(set.contains(k), "{k:x}");
        }
        for k in [
            vector_key("observation", 1),
            vector_key("observation", 1 << 20),
            vector_key("session", 0),
            vector_key("learning", 63),
        ] {
            assert!(!set.contains(k), "{k:x}");
        }
        let mut listed: Vec<u64> = set.iter().collect();
        listed.sort_unstable();
        let mut want = keys.to_vec();
        want.sort_unstable();
        assert_eq!(listed, want);
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
        let top = |q: &[f32], allowed: Option<&Keys>| v.search(q, 10, allowed).unwrap();
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
        let allowed = Keys::from_iter([key(203), key(5)]);
        let hits = top(&vec_of(203), Some(&allowed));
        assert_eq!(hits[0].0, key(203));
        assert!(hits.iter().all(|h| allowed.contains(h.0)), "{hits:?}");
        // A record's similarity read from the index: none for a deleted one, the new vector's
        // for a replaced one.
        let sims = v
            .similarities(&vec_of(203), &[key(203), key(20), key(5), key(10)])
            .unwrap();
        assert!(sims[&key(203)] > 0.999, "{sims:?}");
        assert!(!sims.contains_key(&key(20)), "{sims:?}");
        let cos = |a: &[f32], b: &[f32]| crate::text::cosine(a, b) as f64;
        assert!((sims[&key(5)] - cos(&vec_of(203), &vec_of(5))).abs() < 0.01);
        assert!((sims[&key(10)] - cos(&vec_of(203), &vec_of(999))).abs() < 0.01);
        let keys = v.keys().unwrap();
        assert_eq!(keys.len(), n);
        assert!(keys.contains(&key(203)) && !keys.contains(&key(20)));
        let c = &check(conn, layout).unwrap()[0];
        assert!(!c.differs(), "{c:?}");
    }

    #[test]
    fn a_rebuild_says_how_far_it_got_up_to_every_vector() {
        let tmp = tempfile::tempdir().unwrap();
        let conn = memkit_core::store::open(&tmp.path().join("mem.db")).unwrap();
        let layout = Layout::new(tmp.path());
        std::fs::create_dir_all(&layout.dir).unwrap();
        let mut state = State::default();
        put(
            &conn,
            (1..=9000).map(|i| (i, i as u64)),
            "2026-01-01T00:00:00.000Z",
        );
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let told = seen.clone();
        let opts = Options {
            progress: Some(crate::index::Progress(std::sync::Arc::new(
                move |stage, done, total| {
                    told.lock().unwrap().push((stage.to_string(), done, total))
                },
            ))),
            ..Options::default()
        };
        update(&conn, &layout, &mut state, &opts).unwrap();
        let seen = seen.lock().unwrap();
        let name = format!("vectors-{MODEL}-{DIM}");
        let steps: Vec<u64> = seen.iter().filter(|s| s.0 == name).map(|s| s.1).collect();
        assert_eq!(steps, [4096, 8192, 9000], "{seen:?}");
        assert!(seen.iter().all(|s| s.2 == 9000), "{seen:?}");
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
        // What an HNSW index of an earlier memkit left goes on the first run.
        std::fs::create_dir_all(&layout.dir).unwrap();
        let old = layout.dir.join(format!("vectors-{MODEL}-{DIM}.usearch"));
        for f in [old.clone(), sidecar(&old, ".keys")] {
            std::fs::write(f, b"old").unwrap();
        }
        let r = run(&conn, &layout, &mut state);
        assert!(r.rebuilt && r.docs == 200, "{r:?}");
        assert!(!old.exists() && !sidecar(&old, ".keys").exists());
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

        // Nothing new: no file is written again.
        let dpath = layout.dir.join(state.vectors[0].delta.as_ref().unwrap());
        let before = std::fs::metadata(&dpath).unwrap().modified().unwrap();
        let r = run(&conn, &layout, &mut state);
        assert_eq!((r.added, r.updated, r.removed, r.docs), (0, 0, 0, 204));
        assert_eq!(
            std::fs::metadata(&dpath).unwrap().modified().unwrap(),
            before
        );
        assert_searches(&conn, &layout, &state, 204);

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
