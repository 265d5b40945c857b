//! The optional second stage: a cross-encoder reads the query beside each of the best fused
//! candidates and their order is its order. Off unless asked for (`mem-search --rerank`,
//! MEM_SEARCH_RERANK=1): no package registry ships a cross-encoder to measure, so none has been
//! shown to win (mem-search(1) says how to point it at one).

use std::cell::RefCell;
use std::collections::HashMap;

use memkit_core::Result;
use memkit_core::config::{self, Config};
use memkit_core::record::Explain;

use crate::embed::cross::{PairScorer, RerankModel};
use crate::index::Doc;

/// A reranker and how deep it reads.
pub struct Stage {
    pub scorer: Box<dyn PairScorer>,
    /// The first `depth` candidates of the fused ranking are reordered; the rest keep theirs.
    pub depth: usize,
    /// Why the last rerank failed (that search kept the fused order).
    pub error: RefCell<Option<String>>,
}

impl Stage {
    pub fn new(scorer: Box<dyn PairScorer>, depth: usize) -> Stage {
        Stage {
            scorer,
            depth,
            error: RefCell::new(None),
        }
    }

    /// The configured reranker (MEM_SEARCH_RERANK_MODEL, MEM_SEARCH_RERANK_DEPTH), its model
    /// checked but not loaded.
    pub fn from_config(cfg: &Config) -> Result<Stage> {
        let (spec, depth) = settings(cfg, None, None)?;
        Ok(Stage::new(Box::new(RerankModel::new(&spec)?), depth))
    }
}

/// The reranker's model and depth: those given, else the configured ones, else the defaults.
pub fn settings(
    cfg: &Config,
    model: Option<String>,
    depth: Option<usize>,
) -> Result<(String, usize)> {
    let model = model.unwrap_or_else(|| config::SEARCH_RERANK_MODEL.get(cfg));
    let depth = match depth {
        Some(d) => d,
        None => config::SEARCH_RERANK_DEPTH.get(cfg)?,
    };
    Ok((model, depth))
}

/// What the cross-encoder reads of a record: the text its vectors are made from.
fn passage(d: &Doc) -> String {
    crate::embed::observation_text(&d.title, &d.summary, Some(&d.detail), &d.facts, &[])
}

/// Reorders the first `stage.depth` of `scored` (best first) by the cross-encoder's scores of
/// `query` against each record. The scores stay where they were, so a ranking still reads best
/// first and `min_score` keeps its meaning; equal logits keep the fused order. A model failure is
/// kept in `stage.error` and leaves the fused order: reranking never fails a search.
pub fn apply(
    stage: &Stage,
    query: &str,
    scored: &mut [(f64, u64, Explain)],
    docs: &HashMap<u64, Doc>,
) {
    let n = stage.depth.min(scored.len());
    if n < 2 {
        return;
    }
    let texts: Vec<String> = scored[..n].iter().map(|s| passage(&docs[&s.1])).collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let logits = match stage.scorer.score(query, &refs) {
        Ok(l) if l.len() == n => l,
        Ok(l) => {
            *stage.error.borrow_mut() = Some(format!(
                "reranker {} gave {} scores for {n} passages",
                stage.scorer.name(),
                l.len()
            ));
            return;
        }
        Err(e) => {
            *stage.error.borrow_mut() = Some(e.to_string());
            return;
        }
    };
    reorder(&mut scored[..n], &logits);
}

/// Sorts `top` by `logits` (descending, stable), each position keeping its score.
fn reorder(top: &mut [(f64, u64, Explain)], logits: &[f32]) {
    let scores: Vec<f64> = top.iter().map(|s| s.0).collect();
    let mut order: Vec<usize> = (0..top.len()).collect();
    order.sort_by(|&a, &b| logits[b].total_cmp(&logits[a]).then(a.cmp(&b)));
    let moved: Vec<(f64, u64, Explain)> = order.iter().map(|&i| top[i].clone()).collect();
    for ((slot, mut item), score) in top.iter_mut().zip(moved).zip(scores) {
        item.0 = score;
        *slot = item;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(score: f64, key: u64) -> (f64, u64, Explain) {
        (score, key, Explain::default())
    }

    #[test]
    fn reorder_follows_the_logits_and_keeps_the_scores_in_place() {
        let mut top = vec![item(0.9, 1), item(0.8, 2), item(0.7, 3), item(0.6, 4)];
        reorder(&mut top, &[0.1, 2.0, 0.1, 3.0]);
        let keys: Vec<u64> = top.iter().map(|s| s.1).collect();
        // 4 and 2 rise; 1 and 3 tie and keep their fused order.
        assert_eq!(keys, [4, 2, 1, 3]);
        let scores: Vec<f64> = top.iter().map(|s| s.0).collect();
        assert_eq!(scores, [0.9, 0.8, 0.7, 0.6]);
    }
}
