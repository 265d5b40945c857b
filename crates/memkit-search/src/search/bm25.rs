//! BM25 over one searchable field, with k1 and b configurable (tantivy's own term scorer fixes
//! them at 1.2 and 0.75). A document's score is the sum over the query's terms of idf × tf ×
//! (k1 + 1) / (tf + k1 × (1 − b + b × |d| / avgdl)); the terms are OR-ed, so a record needs only
//! one of them. idf is Robertson–Spärck Jones'
//! ln((N − df + 0.5) / (df + 0.5)), floored just above 0 as SQLite FTS5 does: a word in half the
//! records or more ("what", "did") then scores next to nothing, which measured better than the
//! ln(1 + …) variant on both development sets. Statistics (N, df, avgdl) are the whole index's.

/// The idf of a word in half the records or more.
const IDF_FLOOR: f32 = 1e-6;

use tantivy::fieldnorm::FieldNormReader;
use tantivy::postings::{Postings, SegmentPostings};
use tantivy::query::{EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::schema::IndexRecordOption;
use tantivy::{DocId, DocSet, Score, SegmentReader, TERMINATED, Term};

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

impl Query for Bm25Query {
    fn weight(&self, scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        let Some(first) = self.terms.first() else {
            return Ok(Box::new(tantivy::query::EmptyWeight));
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
        Ok(Box::new(Bm25Weight {
            terms,
            params: self.params,
            avgdl: avgdl.max(f32::MIN_POSITIVE),
        }))
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
        let Params { k1, b } = self.params;
        let norms = std::array::from_fn(|id| {
            let len = FieldNormReader::id_to_fieldnorm(id as u8) as f32;
            k1 * (1.0 - b + b * len / self.avgdl)
        });
        let mut u = Union {
            cursors,
            fieldnorms,
            params: self.params,
            norms,
            doc: 0,
        };
        u.doc = u.min_doc();
        Ok(u)
    }
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
            .map(|(p, w)| {
                let tf = p.term_freq() as f32;
                w * tf * (k1 + 1.0) / (tf + norm)
            })
            .sum()
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
}
