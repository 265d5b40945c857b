//! A vector index that is scanned, not walked: each vector's sign bits (after the file's mean
//! is taken off) in one compact run, the vectors themselves in a second file. A search scores
//! every row's bits against the query (a table lookup per four bits, thirty-two rows at once,
//! see [`Tables`]), then compares the query with the best rows' vectors.
//!
//! Why not a graph: mem-search is a new process per query, so every page an index touches is
//! a page fault (about 2 µs in this VM), and the unmap at exit pays for it again. An HNSW walk
//! at 100k records touched some 6,000 random pages of a 66 MB file: over 20 ms. Here a search
//! reads 44 bytes a row in order (fault-around maps them 64 KB at a time) and a thousand rows'
//! vectors, and a rebuild is a write of every vector, not a graph built for minutes.
//!
//! `X.vec`: header (magic, dim, storage, rows), the mean, then the rows in blocks of
//! [`BLOCK`]: the block's keys (u64 each), their scales (f32 each, see [`code`]), then their
//! codes (a bit per rotated dimension) byte by byte: the first byte of each row's code, then
//! the second, and so on (the last block padded with empty rows). `X.vec.data`: per row its
//! unit vector in the storage asked (f32, f16, or i8 with the row's scale). Rows of one key are
//! a long record's windows.

use std::collections::{BinaryHeap, HashMap};
use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use half::slice::HalfFloatSliceExt;
use memmap2::Mmap;

use super::run::index_err;
use memkit_core::Result;

const MAGIC: &[u8; 8] = b"MKVEC003";
const HEADER: usize = 32;
/// Rows in a block: the code bytes of 32 rows at one position fill one AVX2 register, where
/// one shuffle looks all 32 up in a 16-entry table.
pub const BLOCK: usize = 32;
/// Where a block's scales start, after its keys; its codes after them.
const SCALES_AT: usize = 8 * BLOCK;
const CODES_AT: usize = 12 * BLOCK;

/// How a row's vector is stored in the data file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    F32,
    F16,
    I8,
}

impl Kind {
    pub fn parse(q: &str) -> Option<Kind> {
        match q {
            "f32" => Some(Kind::F32),
            "f16" => Some(Kind::F16),
            "i8" => Some(Kind::I8),
            _ => None,
        }
    }
    fn tag(self) -> u8 {
        match self {
            Kind::F32 => 0,
            Kind::F16 => 1,
            Kind::I8 => 2,
        }
    }
    fn from_tag(t: u8) -> Option<Kind> {
        [Kind::F32, Kind::F16, Kind::I8]
            .into_iter()
            .find(|k| k.tag() == t)
    }
    /// Bytes of one row in the data file (i8 rows lead with their f32 scale).
    fn row_bytes(self, dim: usize) -> usize {
        match self {
            Kind::F32 => 4 * dim,
            Kind::F16 => 2 * dim,
            Kind::I8 => 4 + dim,
        }
    }
}

/// `path` with `ext` appended (`X.vec` → `X.vec.data`).
pub fn sidecar(path: &Path, ext: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(ext);
    s.into()
}

/// The data file beside an index file.
pub fn data_path(path: &Path) -> PathBuf {
    sidecar(path, ".data")
}

/// The rotated space's dimension: the next power of two (a code has a bit for each).
fn padded(dim: usize) -> usize {
    dim.next_power_of_two().max(64)
}

fn words(dim: usize) -> usize {
    padded(dim) / 64
}

/// Bytes of one row's code.
fn code_bytes(dim: usize) -> usize {
    words(dim) * 8
}

/// Bytes of one block of rows.
fn block_bytes(dim: usize) -> usize {
    CODES_AT + BLOCK * code_bytes(dim)
}

/// A fixed random rotation of `x` into `out` (`padded(x.len())` long): three rounds of random
/// sign flips, each followed by a normalised Walsh–Hadamard transform. Sign bits of a vector
/// as it is say little where its energy sits in a few components (a short text's hashed
/// vector, an embedding whose components differ in spread); after the rotation every bit
/// carries a share of the whole vector (RaBitQ's rotation, in O(d log d)).
fn rotate(x: &[f32], out: &mut [f32]) {
    let n = out.len();
    out.fill(0.0);
    out[..x.len()].copy_from_slice(x);
    let norm = 1.0 / (n as f32).sqrt();
    let mut seed = 0x6d65_6d6b_6974_u64;
    for _ in 0..3 {
        for chunk in out.chunks_mut(64) {
            seed = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = seed;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            for (i, v) in chunk.iter_mut().enumerate() {
                if z >> i & 1 == 1 {
                    *v = -*v;
                }
            }
        }
        let mut h = 1;
        while h < n {
            for block in out.chunks_mut(2 * h) {
                let (a, b) = block.split_at_mut(h);
                for (x, y) in a.iter_mut().zip(b.iter_mut()) {
                    (*x, *y) = (*x + *y, *x - *y);
                }
            }
            h *= 2;
        }
        out.iter_mut().for_each(|v| *v *= norm);
    }
}

fn unit(v: &[f32]) -> Vec<f32> {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 0.0 {
        v.iter().map(|x| x / n).collect()
    } else {
        v.to_vec()
    }
}

/// The sign bits of `r`, [`rotate`]d `u - mean`, and the scale that turns a query's sum over
/// them into an estimate of `q · r`: |r|² / Σ|rᵢ| (RaBitQ's estimator). Sign bits alone treat
/// a row near the mean like one far from it.
fn code(u: &[f32], mean: &[f32], out: &mut [u64]) -> f32 {
    out.fill(0);
    let diff: Vec<f32> = u.iter().zip(mean).map(|(x, m)| x - m).collect();
    let mut rotated = vec![0f32; padded(u.len())];
    rotate(&diff, &mut rotated);
    let (mut sq, mut abs) = (0f32, 0f32);
    for (i, &r) in rotated.iter().enumerate() {
        sq += r * r;
        abs += r.abs();
        if r > 0.0 {
            out[i / 64] |= 1 << (i % 64);
        }
    }
    if abs > 0.0 { sq / abs } else { 0.0 }
}

/// The mean of the unit vectors of `windows`: what the sign bits are taken against, so that a
/// component every vector shares does not spend a bit saying so.
pub fn mean_of<'a>(windows: impl Iterator<Item = &'a [f32]>, dim: usize) -> Vec<f32> {
    let mut sum = vec![0f64; dim];
    let mut n = 0usize;
    for w in windows {
        for (s, x) in sum.iter_mut().zip(unit(w)) {
            *s += x as f64;
        }
        n += 1;
    }
    sum.into_iter()
        .map(|s| if n == 0 { 0.0 } else { (s / n as f64) as f32 })
        .collect()
}

/// Writes an index through temporary files, renamed into place by [`Writer::finish`].
pub struct Writer {
    path: PathBuf,
    tmp: (PathBuf, PathBuf),
    idx: BufWriter<File>,
    data: BufWriter<File>,
    dim: usize,
    kind: Kind,
    mean: Vec<f32>,
    rows: u64,
    buf: Vec<u64>,
    /// The block being filled, written when full (and by [`Writer::finish`]).
    block: Vec<u8>,
}

impl Writer {
    pub fn create(path: &Path, dim: usize, kind: Kind, mean: Vec<f32>) -> Result<Writer> {
        let tmp = (sidecar(path, ".tmp"), sidecar(&data_path(path), ".tmp"));
        let mut idx = BufWriter::with_capacity(1 << 20, File::create(&tmp.0)?);
        idx.write_all(&[0u8; HEADER])?;
        for m in &mean {
            idx.write_all(&m.to_le_bytes())?;
        }
        if dim % 2 == 1 {
            idx.write_all(&[0u8; 4])?;
        }
        let data = BufWriter::with_capacity(1 << 20, File::create(&tmp.1)?);
        Ok(Writer {
            path: path.to_path_buf(),
            tmp,
            idx,
            data,
            dim,
            kind,
            mean,
            rows: 0,
            buf: vec![0; words(dim)],
            block: vec![0; block_bytes(dim)],
        })
    }

    /// Adds one vector (a window) under `key`.
    pub fn push(&mut self, key: u64, v: &[f32]) -> Result<()> {
        debug_assert_eq!(v.len(), self.dim);
        let u = unit(v);
        let scale = code(&u, &self.mean, &mut self.buf);
        let i = self.rows as usize % BLOCK;
        self.block[8 * i..8 * i + 8].copy_from_slice(&key.to_le_bytes());
        self.block[SCALES_AT + 4 * i..SCALES_AT + 4 * i + 4].copy_from_slice(&scale.to_le_bytes());
        for (j, b) in self.buf.iter().flat_map(|w| w.to_le_bytes()).enumerate() {
            self.block[CODES_AT + j * BLOCK + i] = b;
        }
        if i == BLOCK - 1 {
            self.idx.write_all(&self.block)?;
            self.block.fill(0);
        }
        match self.kind {
            Kind::F32 => {
                for x in &u {
                    self.data.write_all(&x.to_le_bytes())?;
                }
            }
            Kind::F16 => {
                for x in &u {
                    self.data
                        .write_all(&half::f16::from_f32(*x).to_le_bytes())?;
                }
            }
            Kind::I8 => {
                let max = u.iter().fold(0f32, |m, x| m.max(x.abs()));
                let scale = if max > 0.0 { max / 127.0 } else { 1.0 };
                self.data.write_all(&scale.to_le_bytes())?;
                let q: Vec<u8> = u
                    .iter()
                    .map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8 as u8)
                    .collect();
                self.data.write_all(&q)?;
            }
        }
        self.rows += 1;
        Ok(())
    }

    /// Adds a record's windows (`v` holds them one after another).
    pub fn push_all(&mut self, key: u64, v: &[f32]) -> Result<()> {
        for w in v.chunks_exact(self.dim) {
            self.push(key, w)?;
        }
        Ok(())
    }

    /// Writes the header, and renames both files into place; returns the rows written.
    pub fn finish(mut self) -> Result<u64> {
        if !self.rows.is_multiple_of(BLOCK as u64) {
            self.idx.write_all(&self.block)?;
        }
        self.data.flush()?;
        self.data.get_ref().sync_all()?;
        let mut h = [0u8; HEADER];
        h[..8].copy_from_slice(MAGIC);
        h[8..12].copy_from_slice(&(self.dim as u32).to_le_bytes());
        h[12] = self.kind.tag();
        h[16..24].copy_from_slice(&self.rows.to_le_bytes());
        self.idx.flush()?;
        let f = self.idx.get_mut();
        f.seek(SeekFrom::Start(0))?;
        f.write_all(&h)?;
        f.sync_all()?;
        std::fs::rename(&self.tmp.1, data_path(&self.path))?;
        std::fs::rename(&self.tmp.0, &self.path)?;
        Ok(self.rows)
    }
}

/// Keys with their cosine, best first.
pub type Hits = Vec<(u64, f32)>;

/// A saved index, mapped for reading.
pub struct Part {
    idx: Mmap,
    /// Read a row at a time: a few hundred rows at random cost fewer page faults read than
    /// mapped.
    data: File,
    pub dim: usize,
    pub kind: Kind,
    rows: usize,
    rows_at: usize,
    /// Bytes of a row's code, and of a block.
    code: usize,
    block: usize,
}

/// How many rows a search compares by their vectors, at least: a store this small (or a
/// filter this narrow) is compared whole, so its order is exact. With MiniLM on 18,858 rows
/// (qmsum-val), 1,024 rows found 99.8% of the exact top 10 and, at the 1,000 rows a top 100
/// takes, 96% of it; on the bench's 256-d hashed vectors at 100k, 99.8% and 98.9%
/// (`MEMKIT_BENCH_RECALL_ONLY=1 cargo bench --bench search`). Before the rotation, 2,048 rows
/// found 99.5% and 97% on MiniLM and 78% of the hashed top 100.
pub const RESCORE_MIN: usize = 1024;
/// And per hit asked: rows whose bits score well but vectors not are compared too.
pub const RESCORE_PER_HIT: usize = 10;
/// And one row in this many of a large index: the more rows, the more whose bits score near
/// the true best. On the bench's million rows (hashed 256-d vectors), 1,024 rows compared
/// found 89.6% of the exact top 100 (92.7% counting ties within 0.001 of the 100th) and 96.5%
/// of the top 10; 2,000 rows 96.3% (98.2%) and 99.5%, at no cost the search's p50 shows (an
/// A/B of the two binaries: 31.6 → 30.0 ms all projects, in the noise).
pub const ROWS_PER_RESCORE: usize = 500;

impl Part {
    pub fn open(path: &Path) -> Result<Part> {
        let bad = |why: &str| index_err("vector index", format!("{}: {why}", path.display()));
        let f = File::open(path)?;
        // SAFETY: index files are written whole under another name and renamed into place,
        // never changed in place; a reader keeps the file it mapped.
        let idx = unsafe { Mmap::map(&f)? };
        if idx.len() < HEADER || &idx[..8] != MAGIC {
            return Err(bad(if idx.starts_with(b"MKVEC") {
                "written by an older memkit (the next mem-index rebuilds it)"
            } else {
                "not a memkit vector index"
            }));
        }
        let dim = u32::from_le_bytes(idx[8..12].try_into().unwrap()) as usize;
        let kind = Kind::from_tag(idx[12]).ok_or_else(|| bad("unknown storage"))?;
        let rows = u64::from_le_bytes(idx[16..24].try_into().unwrap()) as usize;
        let rows_at = HEADER + 4 * dim + if dim % 2 == 1 { 4 } else { 0 };
        let (code, block) = (code_bytes(dim), block_bytes(dim));
        if dim == 0 || idx.len() != rows_at + rows.div_ceil(BLOCK) * block {
            return Err(bad("size does not match its header"));
        }
        let data = File::open(data_path(path))?;
        if data.metadata()?.len() != (rows * kind.row_bytes(dim)) as u64 {
            return Err(bad("data file does not match"));
        }
        Ok(Part {
            idx,
            data,
            dim,
            kind,
            rows,
            rows_at,
            code,
            block,
        })
    }

    /// Rows (vectors, a long record's windows counted each).
    pub fn rows(&self) -> usize {
        self.rows
    }

    pub fn mean(&self) -> Vec<f32> {
        self.idx[HEADER..HEADER + 4 * self.dim]
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }

    pub fn key(&self, row: usize) -> u64 {
        let at = self.rows_at + row / BLOCK * self.block;
        key_of(&self.idx[at..], row % BLOCK)
    }

    /// The key of every row, in row order (a key once per window).
    pub fn keys(&self) -> impl Iterator<Item = u64> + '_ {
        (0..self.rows).map(|r| self.key(r))
    }

    /// A row's unit vector.
    pub fn vector(&self, row: usize) -> Result<Vec<f32>> {
        let mut v = vec![0f32; self.dim];
        self.decode(row, &mut v)?;
        Ok(v)
    }

    /// `q` · the row's vector; `buf` holds the decoded row.
    fn dot(&self, row: usize, q: &[f32], buf: &mut [f32]) -> Result<f32> {
        self.decode(row, buf)?;
        Ok(dot(buf, q))
    }

    /// A row's unit vector into `out`, read from the data file.
    fn decode(&self, row: usize, out: &mut [f32]) -> Result<()> {
        use std::os::unix::fs::FileExt;
        let n = self.kind.row_bytes(self.dim);
        let mut b = vec![0u8; n];
        self.data.read_exact_at(&mut b, (row * n) as u64)?;
        match self.kind {
            Kind::F32 => {
                for (o, c) in out.iter_mut().zip(b.chunks_exact(4)) {
                    *o = f32::from_le_bytes(c.try_into().unwrap());
                }
            }
            Kind::F16 => {
                // SAFETY: any two bytes are an f16; align_to takes only what is aligned.
                let (pre, halves, _) = unsafe { b.align_to::<half::f16>() };
                if pre.is_empty() && halves.len() == self.dim && cfg!(target_endian = "little") {
                    // Converted with F16C where the CPU has it.
                    halves.convert_to_f32_slice(out);
                } else {
                    for (o, c) in out.iter_mut().zip(b.chunks_exact(2)) {
                        *o = half::f16::from_le_bytes([c[0], c[1]]).to_f32();
                    }
                }
            }
            Kind::I8 => {
                let s = f32::from_le_bytes(b[..4].try_into().unwrap());
                for (o, &x) in out.iter_mut().zip(&b[4..]) {
                    *o = x as i8 as f32 * s;
                }
            }
        }
        Ok(())
    }

    /// The cosine of `q` with each of `keys` this part holds (a record by its best window),
    /// but none `skip` names.
    pub fn similarities(
        &self,
        q: &[f32],
        keys: &std::collections::HashSet<u64>,
        skip: Filter,
    ) -> Result<HashMap<u64, f32>> {
        if q.len() != self.dim || keys.is_empty() {
            return Ok(HashMap::new());
        }
        let wanted = wanted(keys, skip);
        self.cosines(
            &unit(q),
            (0..self.rows)
                .map(|r| (r, self.key(r)))
                .filter(|&(_, k)| wanted(k)),
        )
    }

    /// The cosine of the unit vector `u` with each `(row, its key)`, a key by its best row.
    fn cosines(
        &self,
        u: &[f32],
        rows: impl IntoIterator<Item = (usize, u64)>,
    ) -> Result<HashMap<u64, f32>> {
        let mut best = HashMap::new();
        let mut buf = vec![0f32; self.dim];
        for (r, key) in rows {
            keep_best(&mut best, key, self.dot(r, u, &mut buf)?);
        }
        Ok(best)
    }

    /// The `k` keys most similar to `q` (cosine, best first, ties by key) among rows whose key
    /// `keep` accepts. The rows whose bits score best are compared by their vectors: at least
    /// [`RESCORE_MIN`] rows, so a small index or a narrow filter is compared exactly.
    pub fn search(&self, q: &[f32], k: usize, keep: Filter) -> Result<Vec<(u64, f32)>> {
        Ok(self
            .search_and(q, k, keep, None, &Default::default(), &|_| false)?
            .0)
    }

    /// [`Part::search`], and in the same pass over the rows the similarity of each of `also`
    /// this part holds (but none `skip` names), as [`Part::similarities`] gives it: the
    /// lexical arm's candidates cost no second pass. `narrow`: `keep` accepts at most so many
    /// rows, few of the part's (a project's among many), so it is asked of a block's keys before
    /// the block is scored, and as many rows are compared as a part of that size would need.
    #[allow(clippy::too_many_arguments)]
    pub fn search_and(
        &self,
        q: &[f32],
        k: usize,
        keep: Filter,
        narrow: Option<usize>,
        also: &std::collections::HashSet<u64>,
        skip: Filter,
    ) -> Result<(Hits, HashMap<u64, f32>)> {
        if q.len() != self.dim || k == 0 {
            return Ok((vec![], HashMap::new()));
        }
        let wanted = (!also.is_empty()).then(|| wanted(also, skip));
        let u = unit(q);
        let mut rotated = vec![0f32; padded(self.dim)];
        rotate(&u, &mut rotated);
        let depth = (k * RESCORE_PER_HIT)
            .max(RESCORE_MIN)
            .max(narrow.unwrap_or(self.rows).min(self.rows) / ROWS_PER_RESCORE);
        let (mut picked, extra) = Scan {
            blocks: &self.idx[self.rows_at..],
            rows: self.rows,
            block: self.block,
            tables: &Tables::new(&rotated, self.code),
            depth,
            keep,
            narrow: narrow.is_some(),
            also: wanted.as_ref().map(|w| w as Filter),
            release: true,
        }
        .run();
        // In file order: the data file is read forward.
        picked.sort_unstable();
        let best = self.cosines(&u, picked)?;
        let sims = self.cosines(&u, extra)?;
        let mut out: Vec<(u64, f32)> = best.into_iter().collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        out.truncate(k);
        Ok((out, sims))
    }
}

/// Keeps a key's best similarity (a record's best window, or its best in either part).
pub fn keep_best(best: &mut HashMap<u64, f32>, key: u64, s: f32) {
    let e = best.entry(key).or_insert(f32::MIN);
    *e = e.max(s);
}

/// Whether a row's key is one of `keys` and not one `skip` names (the sketch first).
fn wanted<'a>(
    keys: &'a std::collections::HashSet<u64>,
    skip: Filter<'a>,
) -> impl Fn(u64) -> bool + Sync + 'a {
    let sketch = Sketch::of(keys.iter());
    move |k| sketch.may_hold(k) && keys.contains(&k) && !skip(k)
}

/// A 65,536-bit sketch of a few keys: a row whose key misses it is passed over without a hash
/// lookup.
struct Sketch(Vec<u64>);

impl Sketch {
    fn bit(k: u64) -> usize {
        (k.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 48) as usize
    }
    fn of<'a>(keys: impl Iterator<Item = &'a u64>) -> Sketch {
        let mut s = vec![0u64; 1024];
        for k in keys {
            let b = Self::bit(*k);
            s[b / 64] |= 1 << (b % 64);
        }
        Sketch(s)
    }
    fn may_hold(&self, k: u64) -> bool {
        let b = Self::bit(k);
        self.0[b / 64] >> (b % 64) & 1 == 1
    }
}

/// A query's lookup tables. Per four bits of a code (a nibble), the query's sum over those 4
/// dimensions of ±q (+ where the bit is set) for each of the 16 values, shifted to be positive
/// and scaled to a byte: a row's estimate is then the sum of one byte per nibble, less the
/// shift ([`Tables::offset`]), times the row's scale. The query is compared with the rows' bits
/// as it is, not as bits of its own: a short query's vector is sparse, and its own sign bits
/// would be mostly the mean's. Bytes, so that one AVX2 shuffle looks up 32 rows at once; the
/// largest entry is kept such that a row's sum fits 16 bits.
struct Tables {
    /// Per nibble (a byte's low four bits, then its high four), its 16 entries twice: one per
    /// 128-bit lane of a shuffle.
    nibbles: Vec<[u8; 32]>,
    /// Per code byte, its two nibbles' entries summed for each of the 256 values it can take:
    /// the same sums, one lookup per byte, where there is no shuffle.
    bytes: Vec<[u16; 256]>,
    /// The shift every row's sum carries.
    offset: f32,
    #[cfg(target_arch = "x86_64")]
    avx2: bool,
}

impl Tables {
    /// For the rotated query `q` and codes of `bytes` bytes.
    fn new(q: &[f32], bytes: usize) -> Tables {
        let nibbles = 2 * bytes;
        let shifted: Vec<([f32; 16], f32)> = (0..nibbles)
            .map(|n| {
                let x = |i: usize| q.get(4 * n + i).copied().unwrap_or(0.0);
                let shift: f32 = (0..4).map(|i| x(i).abs()).sum();
                let mut t = [0f32; 16];
                for (v, e) in t.iter_mut().enumerate() {
                    *e = shift
                        + (0..4)
                            .map(|i| if v >> i & 1 == 1 { x(i) } else { -x(i) })
                            .sum::<f32>();
                }
                (t, shift)
            })
            .collect();
        let top = (u16::MAX as usize / nibbles.max(1)).min(255) as f32;
        let max = shifted
            .iter()
            .flat_map(|(t, _)| t.iter())
            .fold(0f32, |m, &x| m.max(x));
        let scale = if max > 0.0 { top / max } else { 0.0 };
        let nibbles: Vec<[u8; 32]> = shifted
            .iter()
            .map(|(t, _)| {
                let mut e = [0u8; 32];
                for (i, x) in t.iter().enumerate() {
                    e[i] = (x * scale).round().clamp(0.0, top) as u8;
                    e[i + 16] = e[i];
                }
                e
            })
            .collect();
        let bytes = nibbles
            .chunks_exact(2)
            .map(|p| std::array::from_fn(|b| p[0][b & 15] as u16 + p[1][b >> 4] as u16))
            .collect();
        Tables {
            nibbles,
            bytes,
            offset: shifted.iter().map(|(_, s)| s * scale).sum(),
            #[cfg(target_arch = "x86_64")]
            avx2: std::arch::is_x86_feature_detected!("avx2"),
        }
    }

    /// The estimate of each row of `block` into `out`: an integer sum made float, less the
    /// offset, times the row's scale, the same on every path.
    fn score(&self, block: &[u8], out: &mut [f32; BLOCK]) {
        #[cfg(target_arch = "x86_64")]
        if self.avx2 {
            // SAFETY: the CPU has AVX2, and `block` is a whole block of these tables' codes.
            return unsafe { self.score_avx2(block, out) };
        }
        self.score_bytes(block, out)
    }

    fn score_bytes(&self, block: &[u8], out: &mut [f32; BLOCK]) {
        let mut sums = [0u32; BLOCK];
        let codes = block[CODES_AT..].chunks_exact(BLOCK);
        for (t, c) in self.bytes.iter().zip(codes) {
            for (s, &b) in sums.iter_mut().zip(c) {
                *s += t[b as usize] as u32;
            }
        }
        for (i, (o, s)) in out.iter_mut().zip(sums).enumerate() {
            *o = (s as f32 - self.offset) * scale_of(block, i);
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn score_avx2(&self, block: &[u8], out: &mut [f32; BLOCK]) {
        use std::arch::x86_64::*;
        assert!(block.len() == CODES_AT + BLOCK * self.bytes.len());
        let low = _mm256_set1_epi8(0x0f);
        // 16-bit lanes: `even` gathers the even rows' sums plus 256 × the odd rows' (modulo
        // 2^16), `odd` the odd rows' sums (each byte shifted down); a sum never passes 2^16.
        let (mut even, mut odd) = (_mm256_setzero_si256(), _mm256_setzero_si256());
        // SAFETY: every load is inside `block` (asserted above) or the tables.
        unsafe {
            let codes = block.as_ptr().add(CODES_AT);
            for (j, t) in self.nibbles.chunks_exact(2).enumerate() {
                let v = _mm256_loadu_si256(codes.add(j * BLOCK) as *const __m256i);
                let lo = _mm256_and_si256(v, low);
                let hi = _mm256_and_si256(_mm256_srli_epi16::<4>(v), low);
                let tl = _mm256_loadu_si256(t[0].as_ptr() as *const __m256i);
                let th = _mm256_loadu_si256(t[1].as_ptr() as *const __m256i);
                for r in [_mm256_shuffle_epi8(tl, lo), _mm256_shuffle_epi8(th, hi)] {
                    even = _mm256_add_epi16(even, r);
                    odd = _mm256_add_epi16(odd, _mm256_srli_epi16::<8>(r));
                }
            }
            let even = _mm256_sub_epi16(even, _mm256_slli_epi16::<8>(odd));
            // Back in row order: rows 0–7 | 16–23, then 8–15 | 24–31, then 0–15, 16–31.
            let (a, b) = (
                _mm256_unpacklo_epi16(even, odd),
                _mm256_unpackhi_epi16(even, odd),
            );
            let halves = [
                _mm256_permute2x128_si256::<0x20>(a, b),
                _mm256_permute2x128_si256::<0x31>(a, b),
            ];
            let offset = _mm256_set1_ps(self.offset);
            let scales = block.as_ptr().add(SCALES_AT) as *const f32;
            for (h, sums) in halves.into_iter().enumerate() {
                for (q, s) in [
                    _mm256_castsi256_si128(sums),
                    _mm256_extracti128_si256::<1>(sums),
                ]
                .into_iter()
                .enumerate()
                {
                    let at = 16 * h + 8 * q;
                    let f = _mm256_cvtepi32_ps(_mm256_cvtepu16_epi32(s));
                    let e =
                        _mm256_mul_ps(_mm256_sub_ps(f, offset), _mm256_loadu_ps(scales.add(at)));
                    _mm256_storeu_ps(out.as_mut_ptr().add(at), e);
                }
            }
        }
    }
}

/// Row `i`'s scale in `block`.
fn scale_of(block: &[u8], i: usize) -> f32 {
    f32::from_le_bytes(
        block[SCALES_AT + 4 * i..SCALES_AT + 4 * i + 4]
            .try_into()
            .unwrap(),
    )
}

/// Row `i`'s key in `block`.
fn key_of(block: &[u8], i: usize) -> u64 {
    u64::from_le_bytes(block[8 * i..8 * i + 8].try_into().unwrap())
}

/// A float as an integer that orders as the float does.
fn ordered(x: f32) -> i32 {
    let bits = x.to_bits() as i32;
    bits ^ ((bits >> 31) & i32::MAX)
}

/// Bytes of the mapped index a scan reads before it lets them go ([`release`]).
const RELEASE_BYTES: usize = 1 << 20;

/// Lets the pages of `done`, a stretch of the mapped index a scan has read, go from this
/// process: they stay in the page cache for the next search, but a scan no longer holds the
/// whole index at once. A hook's peak RSS was the index's size (156 MB for a million 1024-dim
/// rows, over the prompt hook's 100 MB). Only whole pages inside `done` go.
fn release(done: &[u8]) {
    // SAFETY: sysconf has no preconditions.
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
    let start = done.as_ptr() as usize;
    let (lo, hi) = (
        start.next_multiple_of(page),
        (start + done.len()) / page * page,
    );
    if hi > lo {
        // SAFETY: the range lies inside a read-only shared mapping of a file that is never
        // changed in place (see Part::open); MADV_DONTNEED only drops this process's page
        // table entries, and a later read maps the same bytes again from the page cache.
        unsafe {
            libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_DONTNEED);
        }
    }
}

/// A row filter a scan asks from every thread it runs on.
pub type Filter<'a> = &'a (dyn Fn(u64) -> bool + Sync);

/// Rows a scan leaves to one thread: below this a second thread costs more than it saves.
const ROWS_PER_THREAD: usize = 100_000;

/// A pass over an index's rows for the `depth` rows the query's [`Tables`] score highest, ties
/// to the earlier row, among those `keep` accepts; and every row whose key `also` accepts.
#[derive(Clone, Copy)]
struct Scan<'a> {
    blocks: &'a [u8],
    rows: usize,
    /// Bytes of a block.
    block: usize,
    tables: &'a Tables,
    depth: usize,
    keep: Filter<'a>,
    /// Whether a block is passed over unscored when `keep` accepts none of its rows.
    narrow: bool,
    also: Option<Filter<'a>>,
    /// `blocks` is a file mapping whose pages the scan may let go as it reads them ([`release`]);
    /// never memory of the process's own, which letting go would zero.
    release: bool,
}

/// The worst row kept on top: the lowest score, then the later row.
/// With the row's key, read while its block is at hand: read later, the key of each of the
/// thousands of rows picked at random from a large index faulted in its page and those around
/// it, which held most of the index in the process again (the prompt hook's 150 MB at a
/// million 1024-dim rows).
type Worst = std::cmp::Reverse<(i32, std::cmp::Reverse<usize>, u64)>;

/// Rows with their keys.
type Picked = Vec<(usize, u64)>;

impl Scan<'_> {
    /// (the picked rows, the rows `also` accepts). A large index is scanned on every core, a
    /// run of blocks each.
    fn run(&self) -> (Picked, Picked) {
        let threads = std::thread::available_parallelism()
            .map_or(1, |t| t.get())
            .min(self.rows / ROWS_PER_THREAD)
            .max(1);
        self.on(threads)
    }

    /// [`Scan::run`] on `threads` threads.
    fn on(&self, threads: usize) -> (Picked, Picked) {
        let per = self.rows.div_ceil(BLOCK).div_ceil(threads.max(1)).max(1);
        let runs: Vec<_> = std::thread::scope(|s| {
            let mut chunks = self.blocks.chunks(per * self.block).enumerate();
            // The first run on this thread, the others each on its own.
            let first = chunks.next();
            let handles: Vec<_> = chunks
                .map(|(i, run)| s.spawn(move || self.part(run, i * per * BLOCK)))
                .collect();
            let mut out: Vec<_> = first
                .map(|(_, run)| self.part(run, 0))
                .into_iter()
                .collect();
            out.extend(handles.into_iter().map(|h| h.join().unwrap()));
            out
        });
        let mut heap = BinaryHeap::with_capacity(self.depth + 1);
        let mut extra = Vec::new();
        for (h, e) in runs {
            for entry in h {
                heap.push(entry);
                if heap.len() > self.depth {
                    heap.pop();
                }
            }
            extra.extend(e);
        }
        (
            heap.into_iter().map(|e| ((e.0).1.0, (e.0).2)).collect(),
            extra,
        )
    }

    /// One run of blocks, the first of them holding row `first`.
    fn part(&self, blocks: &[u8], first: usize) -> (BinaryHeap<Worst>, Picked) {
        use std::cmp::Reverse;
        let mut extra = Vec::new();
        let mut heap: BinaryHeap<Worst> = BinaryHeap::with_capacity(self.depth + 1);
        // The worst kept score once the heap is full: a row below it cannot enter, and most
        // rows are below it, so the filter is asked only of the few that could.
        let mut floor = f32::NEG_INFINITY;
        let mut scores = [0f32; BLOCK];
        let per_release = (RELEASE_BYTES / self.block).max(1);
        for (b, block) in blocks.chunks_exact(self.block).enumerate() {
            if self.release && b > 0 && b % per_release == 0 {
                release(&blocks[(b - per_release) * self.block..b * self.block]);
            }
            let at = first + b * BLOCK;
            let n = self.rows.saturating_sub(at).min(BLOCK);
            if let Some(also) = self.also {
                extra.extend(
                    (0..n)
                        .map(|i| (at + i, key_of(block, i)))
                        .filter(|&(_, k)| also(k)),
                );
            }
            if self.narrow && !(0..n).any(|i| (self.keep)(key_of(block, i))) {
                continue;
            }
            self.tables.score(block, &mut scores);
            for (i, &s) in scores[..n].iter().enumerate() {
                if s < floor {
                    continue;
                }
                let entry = (ordered(s), Reverse(at + i));
                if heap.len() == self.depth
                    && heap.peek().is_some_and(|w| entry <= ((w.0).0, (w.0).1))
                {
                    continue;
                }
                let key = key_of(block, i);
                if !(self.keep)(key) {
                    continue;
                }
                heap.push(Reverse((entry.0, entry.1, key)));
                if heap.len() > self.depth {
                    heap.pop();
                }
                if heap.len() == self.depth {
                    floor = unordered(heap.peek().unwrap().0.0);
                }
            }
        }
        (heap, extra)
    }
}

/// The float [`ordered`] made `o` from (the same flip undoes it).
fn unordered(o: i32) -> f32 {
    f32::from_bits((o ^ ((o >> 31) & i32::MAX)) as u32)
}

/// A dot product in eight lanes, which the compiler keeps in vector registers (a plain sum of
/// products is added in order, one float at a time).
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    acc.iter().sum::<f32>() + tail
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A pseudo-random vector per id (splitmix64), each component in [-shift, 2 - shift): no
    /// two are collinear.
    pub(crate) fn random_vector(i: u64, dim: usize, shift: f32) -> Vec<f32> {
        let mut x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        (0..dim)
            .map(|_| {
                x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let mut z = x;
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                ((z ^ (z >> 31)) % 2000) as f32 / 1000.0 - shift
            })
            .collect()
    }

    /// With an offset every vector shares, as real embeddings have.
    fn vec_of(i: u64, dim: usize) -> Vec<f32> {
        random_vector(i, dim, 0.7)
    }

    fn exact(all: &[(u64, Vec<f32>)], q: &[f32], k: usize) -> Vec<u64> {
        let u = unit(q);
        let mut s: Vec<(u64, f32)> = all
            .iter()
            .map(|(key, v)| (*key, unit(v).iter().zip(&u).map(|(a, b)| a * b).sum()))
            .collect();
        s.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        s.into_iter().take(k).map(|x| x.0).collect()
    }

    #[test]
    fn the_rotation_keeps_every_dot_product_and_spreads_a_sparse_vector() {
        for dim in [48, 256, 384] {
            let n = padded(dim);
            let (mut ra, mut rb) = (vec![0f32; n], vec![0f32; n]);
            for i in 0..20u64 {
                let (a, b) = (vec_of(i, dim), vec_of(i + 100, dim));
                rotate(&a, &mut ra);
                rotate(&b, &mut rb);
                let (before, after) = (dot(&a, &b), dot(&ra, &rb));
                assert!(
                    (before - after).abs() < 1e-3 * before.abs().max(1.0),
                    "{dim}: {before} {after}"
                );
            }
            // One component alone: after the rotation, no component holds a quarter of it and
            // nearly every one holds some (so nearly every bit of the code says something).
            let mut one = vec![0f32; dim];
            one[dim / 3] = 1.0;
            rotate(&one, &mut ra);
            assert!(ra.iter().all(|x| x.abs() < 0.5), "{dim}: {ra:?}");
            let some = ra
                .iter()
                .filter(|x| x.abs() > 0.1 / (n as f32).sqrt())
                .count();
            assert!(some * 10 >= n * 9, "{dim}: {some} of {n}");
        }
    }

    #[test]
    fn a_scan_picks_the_best_rows_that_pass_on_any_number_of_threads() {
        let tmp = tempfile::tempdir().unwrap();
        // 5,000 rows: the last block is part padding.
        for dim in [32, 1024] {
            let path = tmp.path().join(format!("v{dim}.vec"));
            let all: Vec<Vec<f32>> = (0..5_000u64).map(|i| vec_of(i % 1_700, dim)).collect();
            let mut w = Writer::create(
                &path,
                dim,
                Kind::F16,
                mean_of(all.iter().map(Vec::as_slice), dim),
            )
            .unwrap();
            for (i, v) in all.iter().enumerate() {
                w.push(i as u64 + 1, v).unwrap();
            }
            w.finish().unwrap();
            let p = Part::open(&path).unwrap();
            let mut rotated = vec![0f32; padded(dim)];
            rotate(&unit(&vec_of(42, dim)), &mut rotated);
            let t = Tables::new(&rotated, p.code);
            let blocks = &p.idx[p.rows_at..];
            // Every row scored one byte at a time; the shuffles must give the same floats.
            let mut scored: Vec<(f32, usize, u64)> = Vec::new();
            for (b, block) in blocks.chunks_exact(p.block).enumerate() {
                let (mut one, mut other) = ([0f32; BLOCK], [0f32; BLOCK]);
                t.score_bytes(block, &mut one);
                t.score(block, &mut other);
                assert_eq!(
                    one.map(f32::to_bits),
                    other.map(f32::to_bits),
                    "{dim}: block {b}"
                );
                for (i, s) in one.iter().enumerate() {
                    if b * BLOCK + i < p.rows() {
                        scored.push((*s, b * BLOCK + i, key_of(block, i)));
                    }
                }
            }
            assert_eq!(scored.len(), 5_000);
            assert!(scored.iter().all(|x| x.2 == x.1 as u64 + 1));
            // Duplicated vectors tie: ties go to the earlier row on any split.
            let also = |k: u64| k.is_multiple_of(997);
            // Every third row, and runs of 100 rows in 400 (whole blocks none of whose rows
            // is kept, which a narrow scan passes over unscored).
            let keeps = [
                &(|_| true) as Filter,
                &|k: u64| k.is_multiple_of(3),
                &|k: u64| (k / 100).is_multiple_of(4),
            ];
            for (keep, narrow) in keeps.into_iter().flat_map(|k| [(k, false), (k, true)]) {
                let mut want: Vec<&(f32, usize, u64)> =
                    scored.iter().filter(|x| keep(x.2)).collect();
                want.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
                let mut want: Vec<(usize, u64)> = want[..200].iter().map(|x| (x.1, x.2)).collect();
                want.sort_unstable();
                let scan = Scan {
                    blocks,
                    rows: p.rows(),
                    block: p.block,
                    tables: &t,
                    depth: 200,
                    keep,
                    narrow,
                    also: Some(&also),
                    release: false,
                };
                let mut one = scan.on(1);
                one.0.sort_unstable();
                assert_eq!(one.0, want, "{dim}, narrow: {narrow}");
                // Each row with its own key.
                let extra: Vec<(usize, u64)> = (996..5_000)
                    .step_by(997)
                    .map(|r| (r, r as u64 + 1))
                    .collect();
                assert_eq!(one.1, extra);
                for threads in [2, 3, 7] {
                    let mut many = scan.on(threads);
                    many.0.sort_unstable();
                    assert_eq!(many, one, "{dim}: {threads} threads");
                }
            }
        }
    }

    /// A scan of an index several times [`RELEASE_BYTES`] long lets its pages go as it reads;
    /// it picks what a scan that keeps them picks, on one thread or two, and a search over the
    /// same mapping afterwards reads the same bytes again.
    #[test]
    fn a_scan_that_lets_its_pages_go_picks_what_one_that_keeps_them_picks() {
        let tmp = tempfile::tempdir().unwrap();
        let (dim, n) = (64, 200_000u64);
        let path = tmp.path().join("v.vec");
        let all: Vec<Vec<f32>> = (1..=n).map(|k| vec_of(k, dim)).collect();
        let mean = mean_of(all.iter().map(Vec::as_slice), dim);
        let mut w = Writer::create(&path, dim, Kind::F32, mean).unwrap();
        for (k, v) in (1..).zip(&all) {
            w.push(k, v).unwrap();
        }
        w.finish().unwrap();
        let p = Part::open(&path).unwrap();
        assert!(p.rows.div_ceil(BLOCK) * p.block > 3 * RELEASE_BYTES);
        let also = |k: u64| k.is_multiple_of(9_973);
        for i in 0..4 {
            let q = unit(&vec_of(1_000_000 + i, dim));
            let mut rotated = vec![0f32; padded(dim)];
            rotate(&q, &mut rotated);
            let t = Tables::new(&rotated, p.code);
            let scan = |release: bool, threads: usize| {
                let mut out = Scan {
                    blocks: &p.idx[p.rows_at..],
                    rows: p.rows,
                    block: p.block,
                    tables: &t,
                    depth: 1024,
                    keep: &|k| k % 3 != 0,
                    narrow: false,
                    also: Some(&also),
                    release,
                }
                .on(threads);
                out.0.sort_unstable();
                out
            };
            let kept = scan(false, 1);
            assert_eq!(kept.0.len(), 1024);
            assert!(kept.0.iter().all(|&(r, k)| k == r as u64 + 1 && k % 3 != 0));
            assert_eq!(kept.1.len(), (n / 9_973) as usize);
            for threads in [1, 2] {
                assert_eq!(scan(true, threads), kept, "{threads} threads");
            }
            // Read again after the pages went: the same bytes.
            assert_eq!(scan(false, 1), kept);
            let hits = p.search(&q, 10, &|_| true).unwrap();
            assert_eq!(hits, p.search(&q, 10, &|_| true).unwrap());
            for (k, s) in hits {
                let c: f32 = unit(&all[k as usize - 1])
                    .iter()
                    .zip(&q)
                    .map(|(a, b)| a * b)
                    .sum();
                assert!((c - s).abs() < 1e-5, "key {k}: {c} against {s}");
            }
        }
    }

    #[test]
    fn a_search_finds_what_comparing_every_vector_finds_in_every_storage() {
        let tmp = tempfile::tempdir().unwrap();
        let dim = 48;
        // Near neighbours: each base vector and ten noisy copies of it; more rows than a
        // search compares by their vectors, so the bits choose.
        let mut all: Vec<(u64, Vec<f32>)> = Vec::new();
        for b in 0..1000u64 {
            let base = vec_of(b, dim);
            for j in 0..10u64 {
                let noise = vec_of(100_000 + b * 10 + j, dim);
                let v = base.iter().zip(&noise).map(|(x, n)| x + 0.3 * n).collect();
                all.push((b * 10 + j + 1, v));
            }
        }
        // A short query's vector is sparse: a few of a row's dimensions.
        let sparse = |v: &[f32]| -> Vec<f32> {
            let mut idx: Vec<usize> = (0..v.len()).collect();
            idx.sort_by(|a, b| v[*b].abs().total_cmp(&v[*a].abs()));
            let mut out = vec![0.0; v.len()];
            for i in &idx[..6] {
                out[*i] = v[*i];
            }
            out
        };
        for kind in [Kind::F32, Kind::F16, Kind::I8] {
            let path = tmp.path().join(format!("v-{kind:?}.vec"));
            let mean = mean_of(all.iter().map(|x| x.1.as_slice()), dim);
            let mut w = Writer::create(&path, dim, kind, mean).unwrap();
            for (k, v) in &all {
                w.push(*k, v).unwrap();
            }
            assert_eq!(w.finish().unwrap(), all.len() as u64);
            let p = Part::open(&path).unwrap();
            assert_eq!(p.rows(), all.len());
            for shape in ["dense", "sparse"] {
                let (mut found, mut total) = (0, 0);
                for b in (0..1000u64).step_by(37) {
                    let q = match shape {
                        "dense" => vec_of(b, dim),
                        _ => sparse(&all[b as usize * 10].1),
                    };
                    let want = exact(&all, &q, 10);
                    let got: Vec<u64> = p
                        .search(&q, 10, &|_| true)
                        .unwrap()
                        .iter()
                        .map(|x| x.0)
                        .collect();
                    assert_eq!(got.len(), 10);
                    total += want.len();
                    found += want.iter().filter(|k| got.contains(k)).count();
                    // A filter keeps only what it allows, a full page of it.
                    let odd = p.search(&q, 10, &|k| k % 2 == 1).unwrap();
                    assert!(odd.len() == 10 && odd.iter().all(|x| x.0 % 2 == 1));
                    // Other keys' similarities from the same pass: as a pass of their own
                    // gives them, none that `skip` names, and the same hits.
                    let also: std::collections::HashSet<u64> =
                        [3, 77, 5_001, 9_999, 123_456].into();
                    let (hits, sims) = p
                        .search_and(&q, 10, &|_| true, None, &also, &|k| k == 77)
                        .unwrap();
                    assert_eq!(hits, p.search(&q, 10, &|_| true).unwrap());
                    assert_eq!(sims, p.similarities(&q, &also, &|k| k == 77).unwrap());
                    assert_eq!(sims.len(), 3, "{sims:?}");
                }
                assert!(
                    found as f64 >= 0.95 * total as f64,
                    "{kind:?}, {shape} queries: {found}/{total} of the exact top 10"
                );
            }
            // Its own vector is its nearest, at cosine 1.
            let (k, v) = &all[1234];
            let top = p.search(v, 1, &|_| true).unwrap();
            assert_eq!(top[0].0, *k);
            assert!((top[0].1 - 1.0).abs() < 0.02, "{kind:?} {top:?}");
        }
    }

    #[test]
    fn a_file_that_does_not_match_its_header_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("v.vec");
        let mut w = Writer::create(&path, 8, Kind::F16, vec![0.0; 8]).unwrap();
        w.push(1, &[1.0; 8]).unwrap();
        w.finish().unwrap();
        let mut b = std::fs::read(&path).unwrap();
        b.truncate(b.len() - 1);
        std::fs::write(&path, b).unwrap();
        let e = Part::open(&path).err().expect("refused").to_string();
        assert!(e.contains("v.vec"), "{e}");
    }
}
