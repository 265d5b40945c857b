//! The baseline every search figure stands beside: textbook BM25 (k1 1.2, b 0.75, idf
//! ln(1 + (N − df + 0.5)/(df + 0.5))) over lower-cased runs of letters and digits, no stemming
//! and no stop words, the title prepended, statistics per scope, every document scoring above 0
//! ranked, ties by id. The same model as the devsets' `bm25.py`, so its figures can be checked
//! against the published ones. mem-search also ranks a project's learnings with it (too few to
//! keep an index of their own).

use std::collections::HashMap;

const K1: f64 = 1.2;
const B: f64 = 0.75;

pub fn tokens(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .collect()
}

/// One scope's index.
pub struct Index {
    ids: Vec<String>,
    lengths: Vec<usize>,
    postings: HashMap<String, Vec<(usize, u32)>>,
    avgdl: f64,
}

impl Index {
    /// An index of (id, text) documents.
    pub fn new(docs: impl IntoIterator<Item = (String, String)>) -> Index {
        let mut ix = Index {
            ids: Vec::new(),
            lengths: Vec::new(),
            postings: HashMap::new(),
            avgdl: 0.0,
        };
        for (id, text) in docs {
            let toks = tokens(&text);
            let n = ix.ids.len();
            ix.ids.push(id);
            ix.lengths.push(toks.len());
            let mut tf: HashMap<String, u32> = HashMap::new();
            for t in toks {
                *tf.entry(t).or_default() += 1;
            }
            for (t, f) in tf {
                ix.postings.entry(t).or_default().push((n, f));
            }
        }
        if !ix.ids.is_empty() {
            ix.avgdl = ix.lengths.iter().sum::<usize>() as f64 / ix.ids.len() as f64;
        }
        ix
    }

    /// Ids of the documents scoring above 0, best first (ties by id), with their scores.
    pub fn search(&self, query: &str) -> Vec<(String, f64)> {
        let n = self.ids.len() as f64;
        let mut scores: HashMap<usize, f64> = HashMap::new();
        // A word repeated in the query counts each time.
        for t in tokens(query) {
            let Some(plist) = self.postings.get(&t) else {
                continue;
            };
            let df = plist.len() as f64;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            for &(d, tf) in plist {
                let norm = if self.avgdl > 0.0 {
                    K1 * (1.0 - B + B * self.lengths[d] as f64 / self.avgdl)
                } else {
                    K1
                };
                let tf = tf as f64;
                *scores.entry(d).or_default() += idf * tf * (K1 + 1.0) / (tf + norm);
            }
        }
        let mut ranked: Vec<(String, f64)> = scores
            .into_iter()
            .filter(|(_, s)| *s > 0.0)
            .map(|(d, s)| (self.ids[d].clone(), s))
            .collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        ranked
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(id: &str, text: &str) -> (String, String) {
        (id.into(), text.into())
    }

    #[test]
    fn scores_like_the_textbook_formula() {
        let docs = [doc("a", "cat cat dog"), doc("b", "dog"), doc("c", "bird")];
        let ix = Index::new(docs.clone());
        let got = ix.search("cat");
        assert_eq!(got.len(), 1);
        // N 3, df 1, |a| 3, avgdl 5/3
        let idf = (1.0f64 + 2.5 / 1.5).ln();
        let norm = K1 * (1.0 - B + B * 3.0 / (5.0 / 3.0));
        let want = idf * 2.0 * (K1 + 1.0) / (2.0 + norm);
        assert!((got[0].1 - want).abs() < 1e-12);
        // Equal scores are ordered by id; a query word counts each time it is written.
        let ranked: Vec<String> = Index::new([doc("z", "x"), doc("y", "x")])
            .search("x x")
            .into_iter()
            .map(|r| r.0)
            .collect();
        assert_eq!(ranked, vec!["y", "z"]);
        assert!(Index::new(docs).search("Dog_cat")[0].1 > 0.0);
    }
}
