//! Ranking metrics, as the devsets' reference scorer computes them: nDCG@10 with gain = rel and
//! a log2(rank + 1) discount, recall@k over the relevant set, recall_any@k (at least one
//! relevant in the top k), MRR over the whole ranking; averaged over queries with at least one
//! relevant document, overall and per category.

use std::collections::{BTreeMap, HashMap, HashSet};

/// The documents a query's judgements call relevant (relevance above 0).
pub fn relevant(rels: &HashMap<String, i64>) -> impl Iterator<Item = &str> {
    rels.iter()
        .filter(|(_, r)| **r > 0)
        .map(|(d, _)| d.as_str())
}

/// Each metric of one query, by name.
pub fn score(ranking: &[String], rels: &HashMap<String, i64>, ks: &[usize]) -> Vec<(String, f64)> {
    let relevant: HashSet<&str> = relevant(rels).collect();
    let mut out = vec![("ndcg@10".to_string(), ndcg(ranking, rels, 10))];
    for &k in ks {
        let found = ranking
            .iter()
            .take(k)
            .filter(|d| relevant.contains(d.as_str()))
            .count();
        out.push((format!("recall@{k}"), found as f64 / relevant.len() as f64));
        out.push((format!("recall_any@{k}"), if found > 0 { 1.0 } else { 0.0 }));
    }
    let first = ranking.iter().position(|d| relevant.contains(d.as_str()));
    out.push(("mrr".into(), first.map_or(0.0, |i| 1.0 / (i + 1) as f64)));
    out
}

fn ndcg(ranking: &[String], rels: &HashMap<String, i64>, k: usize) -> f64 {
    let dcg: f64 = ranking
        .iter()
        .take(k)
        .enumerate()
        .map(|(i, d)| *rels.get(d).unwrap_or(&0) as f64 / (i as f64 + 2.0).log2())
        .sum();
    let mut ideal: Vec<i64> = rels.values().copied().filter(|r| *r > 0).collect();
    ideal.sort_unstable_by(|a, b| b.cmp(a));
    let idcg: f64 = ideal
        .iter()
        .take(k)
        .enumerate()
        .map(|(i, r)| *r as f64 / (i as f64 + 2.0).log2())
        .sum();
    if idcg > 0.0 { dcg / idcg } else { 0.0 }
}

/// Means of per-query metrics, overall and per category.
#[derive(Debug, Default, Clone)]
pub struct Means {
    sums: BTreeMap<String, BTreeMap<String, (f64, usize)>>,
}

pub const ALL: &str = "all";

impl Means {
    pub fn add(&mut self, category: Option<&str>, values: &[(String, f64)]) {
        for group in std::iter::once(ALL).chain(category) {
            let g = self.sums.entry(group.to_string()).or_default();
            for (name, v) in values {
                let e = g.entry(name.clone()).or_default();
                e.0 += v;
                e.1 += 1;
            }
        }
    }

    /// Queries scored in `group`.
    pub fn count(&self, group: &str) -> usize {
        self.sums
            .get(group)
            .and_then(|g| g.get("mrr"))
            .map_or(0, |e| e.1)
    }

    /// The metrics of `group`, rounded to 4 decimals, in the order first added.
    pub fn of(&self, group: &str) -> BTreeMap<String, f64> {
        self.sums
            .get(group)
            .map(|g| {
                g.iter()
                    .map(|(k, (s, n))| (k.clone(), ((s / *n as f64) * 10_000.0).round() / 10_000.0))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Every category seen (not `all`).
    pub fn categories(&self) -> Vec<String> {
        self.sums.keys().filter(|k| *k != ALL).cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn metrics_match_hand_computed_values() {
        let rels: HashMap<String, i64> = [("a".to_string(), 1), ("b".to_string(), 1)].into();
        let got: HashMap<String, f64> = score(&ids(&["x", "a", "y", "b"]), &rels, &[1, 2])
            .into_iter()
            .collect();
        // dcg = 1/log2(3) + 1/log2(5); idcg = 1 + 1/log2(3)
        let want = (1.0 / 3f64.log2() + 1.0 / 5f64.log2()) / (1.0 + 1.0 / 3f64.log2());
        assert!((got["ndcg@10"] - want).abs() < 1e-12);
        assert_eq!(got["recall@1"], 0.0);
        assert_eq!(got["recall@2"], 0.5);
        assert_eq!(got["recall_any@2"], 1.0);
        assert_eq!(got["mrr"], 0.5);
        let none = score(&ids(&["x"]), &rels, &[5]);
        assert!(none.iter().all(|(_, v)| *v == 0.0));
    }

    #[test]
    fn means_are_per_query_overall_and_per_category() {
        let mut m = Means::default();
        m.add(Some("a"), &[("mrr".into(), 1.0)]);
        m.add(Some("b"), &[("mrr".into(), 0.0)]);
        m.add(Some("b"), &[("mrr".into(), 0.5)]);
        assert_eq!(m.of(ALL)["mrr"], 0.5);
        assert_eq!(m.of("b")["mrr"], 0.25);
        assert_eq!(m.count("b"), 2);
        assert_eq!(m.categories(), vec!["a", "b"]);
    }
}
