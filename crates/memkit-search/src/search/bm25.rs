//! BM25 over one searchable field, with k1 and b configurable (tantivy's own term scorer fixes
//! them at 1.2 and 0.75). A document's score is the sum over the query's terms of idf × tf ×
//! (k1 + 1) / (tf + k1 × (1 − b + b × |d| / avgdl)); the terms are OR-ed, so a record needs only
//! one of them. idf is Robertson–Spärck Jones'
//! ln((N − df + 0.5) / (df + 0.5)), floored just above 0 as SQLite FTS5 does: a word in half the
//! records or more ("what", "did") then scores next to nothing, which measured better than the
//! ln(1 + …) variant on both development sets. Statistics (N, df, avgdl) are the whole index's.
//!
//! [`top_k`] finds the best k without scoring every match (MaxScore), to the same results.

/// The idf of a word in half the records or more.
const IDF_FLOOR: f32 = 1e-6;

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use tantivy::fieldnorm::FieldNormReader;
use tantivy::postings::{Postings, SegmentPostings};
use tantivy::query::{EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::schema::IndexRecordOption;

use tantivy::{DocId, DocSet, Score, Searcher, SegmentReader, TERMINATED, Term};

/// The two BM25 parameters (`search_bm25_k1`, `search_bm25_b`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Params {
    pub k1: f32,
    pub b: f32,
}

impl Default for Params {
    fn default() -> Self {
        Params { k1: 1.2, b: 0.75 }
    }
}

/// The query: distinct terms of one field.
#[derive(Debug, Clone)]
pub struct Bm25Query {
    pub terms: Vec<Term>,
    pub params: Params,
}

impl Bm25Query {
    /// The query's terms with their idf over the whole index, and the field's mean length.
    fn bm25_weight(&self, scoring: EnableScoring<'_>) -> tantivy::Result<Option<Bm25Weight>> {
        let Some(first) = self.terms.first() else {
            return Ok(None);
        };
        let field = first.field();
        let mut terms = Vec::with_capacity(self.terms.len());
        let (avgdl, stats) = match scoring {
            EnableScoring::Enabled {
                statistics_provider,
                ..
            } => {
                let n = statistics_provider.total_num_docs()?;
                let tokens = statistics_provider.total_num_tokens(field)?;
                (
                    tokens as f32 / n.max(1) as f32,
                    Some((statistics_provider, n)),
                )
            }
            EnableScoring::Disabled { .. } => (1.0, None),
        };
        for t in &self.terms {
            let idf = match &stats {
                Some((s, n)) => {
                    let df = s.doc_freq(t)? as f32;
                    ((*n as f32 - df + 0.5) / (df + 0.5)).ln().max(IDF_FLOOR)
                }
                None => 1.0,
            };
            terms.push((t.clone(), idf));
        }
        // A word in half the records or more adds next to nothing to any score but costs a
        // walk over half the index: left out, unless the query has nothing else.
        if terms.iter().any(|t| t.1 > IDF_FLOOR) {
            terms.retain(|t| t.1 > IDF_FLOOR);
        }
        Ok(Some(Bm25Weight {
            terms,
            params: self.params,
            avgdl: avgdl.max(f32::MIN_POSITIVE),
        }))
    }
}

impl Query for Bm25Query {
    fn weight(&self, scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(match self.bm25_weight(scoring)? {
            Some(w) => Box::new(w),
            None => Box::new(tantivy::query::EmptyWeight),
        })
    }

    fn query_terms<'a>(&'a self, visitor: &mut dyn FnMut(&'a Term, bool)) {
        for t in &self.terms {
            visitor(t, false);
        }
    }
}

struct Bm25Weight {
    /// Each term with its idf.
    terms: Vec<(Term, f32)>,
    params: Params,
    avgdl: f32,
}

impl Bm25Weight {
    fn union(&self, reader: &SegmentReader) -> tantivy::Result<Union> {
        let mut cursors = Vec::with_capacity(self.terms.len());
        let mut fieldnorms = None;
        for (t, w) in &self.terms {
            let inverted = reader.inverted_index(t.field())?;
            if let Some(p) = inverted.read_postings(t, IndexRecordOption::WithFreqs)? {
                cursors.push((p, *w));
                if fieldnorms.is_none() {
                    fieldnorms = Some(reader.get_fieldnorms_reader(t.field())?);
                }
            }
        }
        let mut u = Union {
            cursors,
            fieldnorms,
            params: self.params,
            norms: self.norms(),
            doc: 0,
        };
        u.doc = u.min_doc();
        Ok(u)
    }
}

impl Bm25Weight {
    /// k1 × (1 − b + b × |d| / avgdl) for each of tantivy's 256 length codes.
    fn norms(&self) -> [f32; 256] {
        let Params { k1, b } = self.params;
        std::array::from_fn(|id| {
            let len = FieldNormReader::id_to_fieldnorm(id as u8) as f32;
            k1 * (1.0 - b + b * len / self.avgdl)
        })
    }
}

/// One term's share of a document's score: `w` is the term's idf (times any boost), `norm` the
/// document's entry in [`Bm25Weight::norms`].
#[inline]
fn term_score(w: f32, tf: u32, k1: f32, norm: f32) -> f32 {
    let tf = tf as f32;
    w * tf * (k1 + 1.0) / (tf + norm)
}

impl Weight for Bm25Weight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let mut u = self.union(reader)?;
        for c in &mut u.cursors {
            c.1 *= boost;
        }
        Ok(Box::new(u))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        let mut u = self.union(reader)?;
        if u.seek(doc) != doc {
            return Err(tantivy::TantivyError::InvalidArgument(format!(
                "document {doc} does not match"
            )));
        }
        Ok(Explanation::new("bm25", u.score()))
    }
}

/// The documents holding any of the terms, in order, each scored over the terms it holds.
struct Union {
    cursors: Vec<(SegmentPostings, f32)>,
    fieldnorms: Option<FieldNormReader>,
    params: Params,
    /// k1 × (1 − b + b × |d| / avgdl) for each of tantivy's 256 length codes.
    norms: [f32; 256],
    doc: DocId,
}

impl Union {
    fn min_doc(&self) -> DocId {
        self.cursors
            .iter()
            .map(|c| c.0.doc())
            .min()
            .unwrap_or(TERMINATED)
    }
}

impl DocSet for Union {
    fn advance(&mut self) -> DocId {
        let cur = self.doc;
        for c in &mut self.cursors {
            if c.0.doc() == cur {
                c.0.advance();
            }
        }
        self.doc = self.min_doc();
        self.doc
    }

    fn seek(&mut self, target: DocId) -> DocId {
        for c in &mut self.cursors {
            if c.0.doc() < target {
                c.0.seek(target);
            }
        }
        self.doc = self.min_doc();
        self.doc
    }

    fn doc(&self) -> DocId {
        self.doc
    }

    fn size_hint(&self) -> u32 {
        self.cursors
            .iter()
            .map(|c| c.0.size_hint())
            .max()
            .unwrap_or(0)
    }
}

impl Scorer for Union {
    fn score(&mut self) -> Score {
        let norm = match &self.fieldnorms {
            Some(f) => self.norms[f.fieldnorm_id(self.doc) as usize],
            None => self.params.k1,
        };
        let k1 = self.params.k1;
        self.cursors
            .iter()
            .filter(|c| c.0.doc() == self.doc)
            .map(|(p, w)| term_score(*w, p.term_freq(), k1, norm))
            .sum()
    }
}

/// A result as results are ordered: the higher score first, equal scores to the smaller key.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Ranked {
    score: Score,
    key: u64,
}

impl Eq for Ranked {}

impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Ranked {
    /// Greater is better.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.score
            .total_cmp(&other.score)
            .then_with(|| other.key.cmp(&self.key))
    }
}

/// One query term in one segment, for [`top_k`].
struct Cursor {
    postings: SegmentPostings,
    idf: f32,
    /// The query (field) the term is from: its length norms.
    query: usize,
    /// No document scores more on this term: tf × (k1 + 1) / (tf + norm) < k1 + 1.
    max: f32,
}

/// The `k` best documents for `queries` (one per field; a document needs one term of one of
/// them, its score is the sum over them) among those `filter` matches, best first, equal scores
/// to the smaller value of the `key` fast field (`u64::MAX` for a document without one): what
/// a `BooleanQuery` of the queries as `Should` clauses inside a `Must`, with `filter` a `Must`
/// clause scoring 0, gives through `TopDocs` ordered by (score, smaller key), with the same
/// scores to the bit, but without scoring every document that matches.
///
/// MaxScore (Turtle & Flood, 1995): once `k` documents are held, the k-th is a threshold. With
/// the terms sorted by their bound, a prefix whose bounds add up to less than the threshold
/// cannot bring in a document on its own: only documents holding one of the other terms are
/// visited, and the prefix's postings are seeked for those still within reach. A document's
/// key is read only when its score reaches the threshold.
pub fn top_k(
    searcher: &Searcher,
    queries: &[Bm25Query],
    filter: Option<&dyn Query>,
    key: &str,
    k: usize,
) -> tantivy::Result<Vec<(Score, u64)>> {
    let mut weights = Vec::with_capacity(queries.len());
    for q in queries {
        weights.extend(q.bm25_weight(EnableScoring::enabled_from_searcher(searcher))?);
    }
    let filter = match filter {
        Some(f) => Some(f.weight(EnableScoring::disabled_from_searcher(searcher))?),
        None => None,
    };
    let mut heap = BinaryHeap::with_capacity(k + 1);
    if k > 0 && !weights.is_empty() {
        for seg in searcher.segment_readers() {
            segment_top_k(seg, &weights, filter.as_deref(), key, k, &mut heap)?;
        }
    }
    let mut out: Vec<Ranked> = heap.into_iter().map(|r| r.0).collect();
    out.sort_unstable_by(|a, b| b.cmp(a));
    Ok(out.into_iter().map(|r| (r.score, r.key)).collect())
}

/// Calls `f` with the `key` fast field of every live document `filter` matches, in every
/// segment (documents without one are passed over).
pub fn matching_keys(
    searcher: &Searcher,
    filter: &dyn Query,
    key: &str,
    mut f: impl FnMut(u64),
) -> tantivy::Result<()> {
    let w = filter.weight(EnableScoring::disabled_from_searcher(searcher))?;
    for seg in searcher.segment_readers() {
        let Some(keys) = key_column(seg, key) else {
            continue;
        };
        let alive = seg.alive_bitset();
        w.for_each_no_score(seg, &mut |docs| {
            for &d in docs {
                if alive.is_none_or(|a| a.is_alive(d)) {
                    let k = keys.get_val(d);
                    if k != u64::MAX {
                        f(k);
                    }
                }
            }
        })?;
    }
    Ok(())
}

/// A segment's `key` fast field (`u64::MAX` for a document without one); `None` when the
/// segment has no such field.
fn key_column(
    seg: &SegmentReader,
    key: &str,
) -> Option<std::sync::Arc<dyn tantivy::columnar::ColumnValues<u64>>> {
    let col = seg.fast_fields().u64(key).ok()?;
    Some(col.first_or_default_col(u64::MAX))
}

fn segment_top_k(
    seg: &SegmentReader,
    weights: &[Bm25Weight],
    filter: Option<&dyn Weight>,
    key: &str,
    k: usize,
    heap: &mut BinaryHeap<Reverse<Ranked>>,
) -> tantivy::Result<()> {
    let mut cursors = Vec::new();
    // Per query: its length norms and the segment's length codes of its field.
    let mut fields = Vec::with_capacity(weights.len());
    for (qi, w) in weights.iter().enumerate() {
        let mut fieldnorms = None;
        for (t, idf) in &w.terms {
            let inverted = seg.inverted_index(t.field())?;
            if let Some(p) = inverted.read_postings(t, IndexRecordOption::WithFreqs)? {
                if fieldnorms.is_none() {
                    fieldnorms = Some(seg.get_fieldnorms_reader(t.field())?);
                }
                cursors.push(Cursor {
                    postings: p,
                    idf: *idf,
                    query: qi,
                    max: idf * (w.params.k1 + 1.0),
                });
            }
        }
        fields.push((fieldnorms, w.norms(), w.params.k1));
    }
    if cursors.is_empty() {
        return Ok(());
    }
    // Cursors stay in the exhaustive scorer's order, in which a document's score is summed
    // (the same bits); by_max visits them by bound.
    let mut by_max: Vec<usize> = (0..cursors.len()).collect();
    by_max.sort_by(|&a, &b| cursors[a].max.total_cmp(&cursors[b].max));
    // prefix[i]: the bounds of by_max[..=i] added up.
    let prefix: Vec<f32> = by_max
        .iter()
        .scan(0.0f32, |acc, &i| {
            *acc += cursors[i].max;
            Some(*acc)
        })
        .collect();
    let mut filter = match filter {
        Some(w) => Some(w.scorer(seg, 1.0)?),
        None => None,
    };
    let keys = key_column(seg, key);
    let alive = seg.alive_bitset();
    let score_of = |c: &Cursor, doc: DocId| -> f32 {
        let (norms, table, k1) = &fields[c.query];
        let norm = table[norms.as_ref().map_or(0, |n| n.fieldnorm_id(doc)) as usize];
        term_score(c.idf, c.postings.term_freq(), *k1, norm)
    };
    let threshold = |heap: &BinaryHeap<Reverse<Ranked>>| {
        if heap.len() < k {
            f32::NEG_INFINITY
        } else {
            heap.peek().map_or(f32::NEG_INFINITY, |r| r.0.score)
        }
    };
    // Rounding never prunes a document that reaches the threshold: bounds are compared with
    // a little less.
    let cut_of = |thr: f32| thr - thr.abs() * 1e-4;
    let mut thr = threshold(heap);
    let mut cut = cut_of(thr);
    // by_max[..lazy] cannot bring a document within reach on their own.
    let mut lazy = prefix.iter().take_while(|p| **p < cut).count();
    while lazy < by_max.len() {
        let doc = by_max[lazy..]
            .iter()
            .map(|&i| cursors[i].postings.doc())
            .min()
            .unwrap_or(TERMINATED);
        if doc == TERMINATED {
            break;
        }
        if let Some(f) = filter.as_mut() {
            let at = if f.doc() < doc { f.seek(doc) } else { f.doc() };
            if at != doc {
                if at == TERMINATED {
                    break;
                }
                seek_all(&mut cursors, &by_max[lazy..], at);
                continue;
            }
        }
        if alive.is_none_or(|a| a.is_alive(doc)) {
            let mut partial: f32 = by_max[lazy..]
                .iter()
                .filter(|&&i| cursors[i].postings.doc() == doc)
                .map(|&i| score_of(&cursors[i], doc))
                .sum();
            // The other terms, the dearest first: the bound falls fastest.
            let mut pruned = false;
            for j in (0..lazy).rev() {
                if partial + prefix[j] < cut {
                    pruned = true;
                    break;
                }
                let c = &mut cursors[by_max[j]];
                if c.postings.doc() < doc {
                    c.postings.seek(doc);
                }
                if c.postings.doc() == doc {
                    partial += score_of(c, doc);
                }
            }
            if !pruned {
                // Every term is at or past doc: the score summed in the exhaustive order.
                let mut score = 0.0f32;
                for q in 0..fields.len() {
                    let s: f32 = cursors
                        .iter()
                        .filter(|c| c.query == q && c.postings.doc() == doc)
                        .map(|c| score_of(c, doc))
                        .sum();
                    score += s;
                }
                if heap.len() < k || score >= thr {
                    let key = keys.as_ref().map_or(u64::MAX, |c| c.get_val(doc));
                    let r = Ranked { score, key };
                    if heap.len() < k {
                        heap.push(Reverse(r));
                    } else if heap.peek().is_some_and(|w| r > w.0) {
                        heap.pop();
                        heap.push(Reverse(r));
                    }
                    let t = threshold(heap);
                    if t > thr {
                        thr = t;
                        cut = cut_of(thr);
                        lazy = prefix.iter().take_while(|p| **p < cut).count();
                    }
                }
            }
        }
        seek_all(&mut cursors, &by_max[lazy..], doc + 1);
    }
    Ok(())
}

/// Moves the cursors `which` to their first document at or after `to`.
fn seek_all(cursors: &mut [Cursor], which: &[usize], to: DocId) {
    for &i in which {
        let p = &mut cursors[i].postings;
        if p.doc() < to {
            p.seek(to);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tantivy::collector::TopDocs;
    use tantivy::schema::{Schema, TEXT};
    use tantivy::{Index, TantivyDocument};

    /// Scores of `query` (whitespace-separated terms) over `docs`, by document order.
    fn scores(docs: &[&str], query: &str, params: Params) -> Vec<f32> {
        let mut b = Schema::builder();
        let f = b.add_text_field("t", TEXT);
        let index = Index::create_in_ram(b.build());
        let mut w = index.writer(15_000_000).unwrap();
        for d in docs {
            let mut doc = TantivyDocument::default();
            doc.add_text(f, d);
            w.add_document(doc).unwrap();
        }
        w.commit().unwrap();
        let searcher = index.reader().unwrap().searcher();
        let q = Bm25Query {
            terms: query
                .split_whitespace()
                .map(|t| Term::from_field_text(f, t))
                .collect(),
            params,
        };
        let mut out = vec![0.0; docs.len()];
        for (s, addr) in searcher
            .search(&q, &TopDocs::with_limit(10).order_by_score())
            .unwrap()
        {
            out[addr.doc_id as usize] = s;
        }
        out
    }

    /// The formula of the module doc, by hand.
    fn expected(docs: &[&str], query: &str, p: Params) -> Vec<f32> {
        let toks: Vec<Vec<&str>> = docs.iter().map(|d| d.split(' ').collect()).collect();
        let n = docs.len() as f32;
        let avgdl = toks.iter().map(Vec::len).sum::<usize>() as f32 / n;
        toks.iter()
            .map(|d| {
                query
                    .split_whitespace()
                    .map(|t| {
                        let tf = d.iter().filter(|w| **w == t).count() as f32;
                        let df = toks.iter().filter(|d| d.contains(&t)).count() as f32;
                        let idf = ((n - df + 0.5) / (df + 0.5)).ln().max(IDF_FLOOR);
                        let norm = p.k1 * (1.0 - p.b + p.b * d.len() as f32 / avgdl);
                        if tf == 0.0 {
                            0.0
                        } else {
                            idf * tf * (p.k1 + 1.0) / (tf + norm)
                        }
                    })
                    .sum()
            })
            .collect()
    }

    #[test]
    fn scores_are_bm25_with_the_given_k1_and_b_and_any_term_matches() {
        let docs = [
            "ocelot ocelot retry",
            "retry budget for the queue workers",
            "ocelot",
            "lunch menu",
            "queue",
        ];
        for p in [
            Params::default(),
            Params { k1: 2.0, b: 0.0 },
            Params { k1: 0.5, b: 1.0 },
        ] {
            let got = scores(&docs, "ocelot budget", p);
            let want = expected(&docs, "ocelot budget", p);
            for (g, w) in got.iter().zip(&want) {
                assert!((g - w).abs() < 1e-4, "{p:?}: {got:?} vs {want:?}");
            }
            // A record needs one term only; one with none is not a candidate.
            assert!(got[1] > 0.0 && got[2] > 0.0 && got[3] == 0.0);
        }
        // b = 0: length does not matter, so the same match scores the same everywhere.
        let s = scores(&["x a", "x a b c d e f g"], "x", Params { k1: 1.2, b: 0.0 });
        assert!((s[0] - s[1]).abs() < 1e-6);
    }

    /// Today's exhaustive search, which top_k must equal: the queries OR-ed, the filters as
    /// required clauses scoring 0, every match scored and ordered by (score, smaller key).
    fn exhaustive(
        searcher: &tantivy::Searcher,
        queries: &[Bm25Query],
        filter: Option<Box<dyn Query>>,
        k: usize,
    ) -> Vec<(f32, u64)> {
        use tantivy::query::{BooleanQuery, ConstScoreQuery, Occur};
        let lexical = queries
            .iter()
            .map(|q| (Occur::Should, Box::new(q.clone()) as Box<dyn Query>))
            .collect();
        let mut must: Vec<(Occur, Box<dyn Query>)> =
            vec![(Occur::Must, Box::new(BooleanQuery::new(lexical)))];
        if let Some(f) = filter {
            must.push((Occur::Must, Box::new(ConstScoreQuery::new(f, 0.0))));
        }
        let top = TopDocs::with_limit(k).tweak_score(|seg: &SegmentReader| {
            let keys = key_column(seg, "key");
            move |doc: DocId, score: Score| {
                let key = keys.as_ref().map_or(u64::MAX, |c| c.get_val(doc));
                (score, std::cmp::Reverse(key))
            }
        });
        searcher
            .search(&BooleanQuery::new(must), &top)
            .unwrap()
            .into_iter()
            .map(|((s, k), _)| (s, k.0))
            .collect()
    }

    /// Records of the retrieval fixtures' real text, recombined by the bench's generator into
    /// 12 projects, each also stored twice more word for word (equal scores, decided by key),
    /// indexed by the real indexer in two runs (two segments at least) with some records
    /// re-indexed in the second (deleted documents).
    fn corpus_index(dir: &std::path::Path) -> (crate::index::bm25::Bm25, Vec<memkit_testkit::Obs>) {
        let obs = corpus();
        let layout = crate::index::Layout::new(dir);
        let mut conn = memkit_core::store::open(&dir.join("mem.db")).unwrap();
        let opts = crate::index::Options {
            threads: 1,
            keep_segments: true,
            ..Default::default()
        };
        let (first, second) = obs.split_at(obs.len() * 2 / 3);
        let ids = memkit_testkit::insert(&mut conn, first).unwrap();
        crate::index::update(&conn, &layout, &opts).unwrap();
        memkit_testkit::insert(&mut conn, second).unwrap();
        for id in ids.iter().step_by(13) {
            let mut o = memkit_core::store::observations::get(&conn, *id)
                .unwrap()
                .unwrap();
            o.summary.push_str(" revised");
            memkit_core::store::observations::update(&conn, &o, "2099-01-01T00:00:00.000Z")
                .unwrap();
        }
        crate::index::update(&conn, &layout, &opts).unwrap();
        (crate::index::bm25::Bm25::open(&layout.bm25()).unwrap(), obs)
    }

    /// The records of [`corpus_index`].
    fn corpus() -> Vec<memkit_testkit::Obs> {
        let root =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/retrieval");
        let mut base = Vec::new();
        for set in ["qmsum-mini", "musique-mini"] {
            let text = std::fs::read_to_string(root.join(set).join("corpus.jsonl")).unwrap();
            for line in text.lines().take(1500) {
                let v: serde_json::Value = serde_json::from_str(line).unwrap();
                let t = v["text"].as_str().unwrap_or_default();
                let title: String = t.split_whitespace().take(6).collect::<Vec<_>>().join(" ");
                base.push(memkit_testkit::Obs {
                    session_id: "s".into(),
                    kind: "discovery".into(),
                    tool_name: "Read".into(),
                    title,
                    summary: t.to_string(),
                    tags: vec![set.to_string()],
                    concepts: vec![v["scope"].as_str().unwrap_or("x").to_lowercase()],
                    ..Default::default()
                });
            }
        }
        let mut obs = memkit_testkit::corpus(&base, 4000, 42, 12);
        let twins: Vec<_> = obs.iter().step_by(97).cloned().collect();
        obs.extend(twins.iter().cloned());
        obs.extend(twins);
        obs
    }

    /// A store of `obs` indexed in one run with `opts`.
    fn indexed_once(
        obs: &[memkit_testkit::Obs],
        opts: &crate::index::Options,
    ) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = memkit_core::store::open(&dir.path().join("mem.db")).unwrap();
        memkit_testkit::insert(&mut conn, obs).unwrap();
        crate::index::update(&conn, &crate::index::Layout::new(dir.path()), opts).unwrap();
        dir
    }

    #[test]
    fn an_index_updated_run_after_run_keeps_few_segments_and_finds_the_same() {
        let obs = corpus();
        let f = crate::search::Filters::default();
        let search = |dir: &std::path::Path| {
            let b = crate::index::bm25::Bm25::open(&crate::index::Layout::new(dir).bm25()).unwrap();
            let segments = b.reader.searcher().segment_readers().len();
            let hits = ["meeting budget", "answer question"]
                .map(|q| crate::search::bm25_search(&b, q, &f, 50, Params::default()).unwrap());
            (segments, hits)
        };
        let opts = crate::index::Options {
            threads: 1,
            ..Default::default()
        };
        // Twelve runs of a few hundred records each, as sessions come.
        let runs = tempfile::tempdir().unwrap();
        let mut conn = memkit_core::store::open(&runs.path().join("mem.db")).unwrap();
        let layout = crate::index::Layout::new(runs.path());
        let mut most = 0;
        for batch in obs.chunks(obs.len().div_ceil(12)) {
            memkit_testkit::insert(&mut conn, batch).unwrap();
            crate::index::update(&conn, &layout, &opts).unwrap();
            most = most.max(search(runs.path()).0);
        }
        assert!(most <= 3, "{most} segments");
        let whole = indexed_once(&obs, &opts);
        let (got, want) = (search(runs.path()).1, search(whole.path()).1);
        assert!(want.iter().all(|h| !h.is_empty()));
        assert_eq!(got, want);
    }

    #[test]
    fn an_index_filled_on_several_threads_is_one_segment_that_finds_the_same() {
        let obs = corpus();
        let mut found = Vec::new();
        for threads in [1, 2] {
            let opts = crate::index::Options {
                threads,
                ..Default::default()
            };
            let dir = indexed_once(&obs, &opts);
            let layout = crate::index::Layout::new(dir.path());
            let b = crate::index::bm25::Bm25::open(&layout.bm25()).unwrap();
            let searcher = b.reader.searcher();
            assert_eq!(searcher.segment_readers().len(), 1, "{threads} threads");
            assert_eq!(searcher.num_docs(), obs.len() as u64);
            // No file of a merged-away segment is left behind.
            let files = std::fs::read_dir(layout.bm25()).unwrap().count();
            assert!(files <= 12, "{files} files");
            let f = crate::search::Filters::default();
            found.push(
                crate::search::bm25_search(&b, "meeting budget", &f, 50, Params::default())
                    .unwrap(),
            );
        }
        assert!(!found[0].is_empty());
        assert_eq!(found[0], found[1]);
    }

    #[test]
    fn the_keys_a_filter_passes_are_the_same_from_the_index_as_from_the_database() {
        use crate::search::{Filters, filters};
        use memkit_core::store::sessions;
        let dir = tempfile::tempdir().unwrap();
        let (_, obs) = corpus_index(dir.path());
        // Summarised sessions too: the index holds them beside the observations.
        let conn = memkit_core::store::open(&dir.path().join("mem.db")).unwrap();
        let mut sids: Vec<(&str, Option<String>, &str)> = obs
            .iter()
            .map(|o| {
                (
                    o.session_id.as_str(),
                    o.project.clone(),
                    o.created_at.as_str(),
                )
            })
            .collect();
        sids.sort();
        sids.dedup_by(|a, b| a.0 == b.0);
        for (i, (sid, project, at)) in sids.iter().enumerate().step_by(3) {
            let info = sessions::SessionInfo {
                session_id: sid.to_string(),
                project: project.clone(),
                at: at.to_string(),
                ..Default::default()
            };
            sessions::upsert(&conn, &info, false).unwrap();
            sessions::set_summary(&conn, sid, &format!("session {i} summary"), &[], &[], 0, at)
                .unwrap();
        }
        let layout = crate::index::Layout::new(dir.path());
        let opts = crate::index::Options {
            threads: 1,
            ..Default::default()
        };
        crate::index::update(&conn, &layout, &opts).unwrap();
        let b = crate::index::bm25::Bm25::open(&layout.bm25()).unwrap();
        let mut rng = memkit_testkit::Rng(11);
        let mut sizes = Vec::new();
        for i in 0..60 {
            let o = &obs[rng.below(obs.len())];
            let mut f = Filters::default();
            match i % 6 {
                0 => f.projects = o.project.clone().map(|p| vec![p]),
                1 => f.projects = o.project.clone().map(|p| vec![p, "/elsewhere".into()]),
                2 => f.kinds = vec![o.kind.clone(), "session".into()],
                3 => f.tags = o.tags.clone(),
                4 => f.session = Some(o.session_id.clone()),
                _ => {
                    let t = crate::index::time_ms(&o.created_at);
                    f.projects = o.project.clone().map(|p| vec![p]);
                    f.after_ms = Some(t - 40 * 86_400_000);
                    f.before_ms = Some(t);
                }
            }
            let from_index = filters::keys(&f, &conn, &[], Some(&b)).unwrap().unwrap();
            let from_db = filters::keys(&f, &conn, &[], None).unwrap().unwrap();
            let (mut a, mut d): (Vec<u64>, Vec<u64>) =
                (from_index.iter().collect(), from_db.iter().collect());
            a.sort_unstable();
            d.sort_unstable();
            // What a search keeps of either: the records whose stored fields pass.
            let passing = |keys: &[u64]| -> Vec<u64> {
                let mut k: Vec<u64> = crate::index::load_briefs(&conn, keys)
                    .unwrap()
                    .into_iter()
                    .filter(|d| filters::passes(&f, d))
                    .map(|d| d.key)
                    .collect();
                k.sort_unstable();
                k
            };
            assert_eq!(passing(&a), passing(&d), "{f:?}");
            assert_eq!(
                passing(&a),
                a,
                "{f:?}: the index passed what the filters refuse"
            );
            sizes.push((i % 6, a.len()));
        }
        // Every kind of filter passed something, and sessions among it.
        for kind in 0..6 {
            assert!(sizes.iter().any(|(k, n)| *k == kind && *n > 0), "{sizes:?}");
        }
        let all_projects = Filters {
            kinds: vec!["session".into()],
            ..Filters::default()
        };
        let sessions_passed = filters::keys(&all_projects, &conn, &[], Some(&b))
            .unwrap()
            .unwrap();
        assert_eq!(sessions_passed.len(), sids.len().div_ceil(3));
    }

    #[test]
    fn pruned_top_k_equals_scoring_every_match_with_filters_and_ties() {
        use crate::search::filters::bm25_filter;
        use crate::search::{Filters, query_terms};
        let dir = tempfile::tempdir().unwrap();
        let (b, obs) = corpus_index(dir.path());
        let searcher = b.reader.searcher();
        let segs = searcher.segment_readers();
        assert!(segs.len() > 1 && segs.iter().any(|s| s.num_deleted_docs() > 0));
        let words: Vec<&str> = obs
            .iter()
            .flat_map(|o| o.summary.split_whitespace())
            .filter(|w| w.chars().all(char::is_alphanumeric))
            .collect();
        let mut rng = memkit_testkit::Rng(7);
        let (mut full, mut ties) = (false, false);
        for i in 0..400 {
            let n = 1 + rng.below(5);
            let text: Vec<&str> = (0..n).map(|_| words[rng.below(words.len())]).collect();
            let text = text.join(" ");
            let o = &obs[rng.below(obs.len())];
            let mut f = Filters::default();
            match i % 6 {
                1 => f.projects = o.project.clone().map(|p| vec![p, "/elsewhere".into()]),
                2 => f.kinds = vec![o.kind.clone()],
                3 => f.tags = o.tags.clone(),
                4 => f.session = Some(o.session_id.clone()),
                5 => {
                    let t = crate::index::time_ms(&o.created_at);
                    f.after_ms = Some(t - 40 * 86_400_000);
                    f.before_ms = Some(t);
                }
                _ => {}
            }
            let params = if i % 5 == 4 {
                Params { k1: 2.0, b: 0.3 }
            } else {
                Params::default()
            };
            let queries: Vec<Bm25Query> = [b.fields.text, b.fields.exact]
                .into_iter()
                .map(|field| Bm25Query {
                    terms: query_terms(&b, field, &text).unwrap(),
                    params,
                })
                .filter(|q| !q.terms.is_empty())
                .collect();
            let filter = bm25_filter(&b, &f).unwrap();
            for k in [1, 10, 100] {
                let want = exhaustive(&searcher, &queries, bm25_filter(&b, &f).unwrap(), k);
                let got = top_k(&searcher, &queries, filter.as_deref(), "key", k).unwrap();
                assert_eq!(got, want, "query {text:?}, filters {f:?}, k {k}");
                full |= want.len() == k && k > 10;
                ties |= want.windows(2).any(|w| w[0].0 == w[1].0);
            }
        }
        assert!(full && ties, "full {full}, ties {ties}");
    }
}
