//! Reciprocal rank fusion of the two arms' candidates ([`fuse`]) and the score that ranks what
//! they found ([`rank`], with its [`Weights`]); and how much each arm is trusted in one query's
//! fusion: by how far its top stands out ([`arm_shares`]), and, for the vector arm, by whether
//! the query is any closer than nonsense.
//!
//! A vector arm can be worse than useless: for a query the model cannot place (or with a model
//! that means nothing, such as a random one) it hands fusion a list that is noise, and
//! reciprocal rank fusion gives noise the same vote as the lexical list. What made-up words
//! reach in this database is measured (the similarity floor, see `Searcher::similarity_floor`):
//! a query whose best cosine is no higher is, to the model, nonsense. So the arm's weight rises
//! from 0, where the best cosine is within [`MARGIN_FROM`] of the floor, to 1 where it clears it
//! by [`MARGIN_FULL`]. Measured with MiniLM on locomo-dev, 95% of the queries clear the floor by
//! 0.084 or more (median 0.22); with the tests' random-weight model none clears it by more than
//! 0.025.

use std::collections::HashMap;

use serde::Serialize;

use super::time;
use crate::index::Doc;
use memkit_core::Result;
use memkit_core::config::{self, Config};
use memkit_core::record::Explain;

/// The share of records a model must find from their own titles on a database
/// (`embed::store::sense_key`) for its arm to vote in full whatever the margin: the margin rule
/// is for a model that means nothing, and on records full of short generic turns (meetings)
/// nonsense comes so close that it silenced a good model for a third of the queries.
pub const SENSE_TRUSTED: f64 = 0.5;

/// Below this margin over the floor the vector arm has no weight; from [`MARGIN_FULL`] on, its
/// full weight.
pub const MARGIN_FROM: f64 = 0.03;
pub const MARGIN_FULL: f64 = 0.08;

/// How far down each arm's list its spread is read: its best against its tenth.
pub const SPREAD_AT: usize = 10;

/// How much more a cosine's fall from the best weighs than the same share of a BM25 score's.
/// A model's cosines crowd into a narrow band (MiniLM's tenth best is some 20% under its best
/// where BM25's is some 45% under), so a share of one is not a share of the other. Calibrated
/// with MiniLM on the three dev sets: from 2.5 to 3.5 every set gains over equal shares, and
/// 3 is the middle.
pub const COSINE_SPREAD: f64 = 3.0;

/// The two arms' shares of one query's fusion, `(lexical, vector)`, summing to 2 (1 each when
/// either arm found nothing or neither spreads). An arm whose best candidates stand out from
/// the rest of its list has found something; one whose top ten scores are all alike has not
/// (a common word matched everywhere, a question the model places near everything). Measured
/// on every dev set, the arm whose top falls further is the better one for that query more
/// often, so each arm's share follows its fall: the lexical score's relative fall from its
/// best to its tenth, against the cosine's times [`COSINE_SPREAD`]. `lexical` and `cosines`
/// are the arms' scores, best first.
pub fn arm_shares(lexical: &[f64], cosines: &[f64]) -> (f64, f64) {
    let fall = |s: &[f64]| match (s.first(), s.get(s.len().min(SPREAD_AT).saturating_sub(1))) {
        (Some(&best), Some(&last)) if best > 0.0 => (1.0 - last / best).max(0.0),
        _ => 0.0,
    };
    if lexical.is_empty() || cosines.is_empty() {
        return (1.0, 1.0);
    }
    let (l, v) = (fall(lexical), COSINE_SPREAD * fall(cosines));
    if l + v <= 0.0 {
        return (1.0, 1.0);
    }
    let lexical = 2.0 * l / (l + v);
    (lexical, 2.0 - lexical)
}

/// The weight of the vector arm in one query's fusion, 0..=1: `best` is the query's best
/// cosine, `floor` the similarity floor (none known: full weight).
pub fn vector_weight(best: Option<f64>, floor: Option<f64>) -> f64 {
    match (best, floor) {
        (Some(best), Some(floor)) => {
            ((best - floor - MARGIN_FROM) / (MARGIN_FULL - MARGIN_FROM)).clamp(0.0, 1.0)
        }
        (None, _) => 0.0,
        (_, None) => 1.0,
    }
}

/// The weights of the score components (all configurable, see `config::SETTINGS`).
#[derive(Debug, Clone, Serialize)]
pub struct Weights {
    pub relevance: f64,
    pub lexical: f64,
    pub similarity: f64,
    pub recency: f64,
    #[serde(rename = "type")]
    pub kind: f64,
    pub files: f64,
    pub project: f64,
    /// A record that answers the time the question asks or names ([`time`]).
    pub time: f64,
    pub half_life_days: f64,
    pub rrf_k: f64,
    pub tag_similarity: f32,
    pub bm25_k1: f64,
    pub bm25_b: f64,
    #[serde(skip)]
    pub type_weights: HashMap<String, f64>,
}

/// The declared defaults.
impl Default for Weights {
    fn default() -> Self {
        Weights {
            relevance: config::SEARCH_WEIGHT_RELEVANCE.default,
            lexical: config::SEARCH_WEIGHT_LEXICAL.default,
            similarity: config::SEARCH_WEIGHT_SIMILARITY.default,
            recency: config::SEARCH_WEIGHT_RECENCY.default,
            kind: config::SEARCH_WEIGHT_TYPE.default,
            files: config::SEARCH_WEIGHT_FILES.default,
            project: config::SEARCH_WEIGHT_PROJECT.default,
            time: config::SEARCH_WEIGHT_TIME.default,
            half_life_days: config::SEARCH_HALF_LIFE_DAYS.default,
            rrf_k: config::SEARCH_RRF_K.default,
            tag_similarity: config::SEARCH_TAG_SIMILARITY.default as f32,
            bm25_k1: config::SEARCH_BM25_K1.default,
            bm25_b: config::SEARCH_BM25_B.default,
            type_weights: config::SEARCH_TYPE_WEIGHTS.defaults(),
        }
    }
}

impl Weights {
    pub fn from_config(cfg: &Config) -> Result<Weights> {
        Ok(Weights {
            relevance: config::SEARCH_WEIGHT_RELEVANCE.get(cfg)?,
            similarity: config::SEARCH_WEIGHT_SIMILARITY.get(cfg)?,
            lexical: config::SEARCH_WEIGHT_LEXICAL.get(cfg)?,
            recency: config::SEARCH_WEIGHT_RECENCY.get(cfg)?,
            kind: config::SEARCH_WEIGHT_TYPE.get(cfg)?,
            files: config::SEARCH_WEIGHT_FILES.get(cfg)?,
            project: config::SEARCH_WEIGHT_PROJECT.get(cfg)?,
            time: config::SEARCH_WEIGHT_TIME.get(cfg)?,
            half_life_days: config::SEARCH_HALF_LIFE_DAYS.get(cfg)?,
            rrf_k: config::SEARCH_RRF_K.get(cfg)?,
            bm25_k1: config::SEARCH_BM25_K1.get(cfg)?,
            bm25_b: config::SEARCH_BM25_B.get(cfg)?,
            tag_similarity: config::SEARCH_TAG_SIMILARITY.get(cfg)? as f32,
            type_weights: config::SEARCH_TYPE_WEIGHTS.get(cfg)?,
        })
    }
}

/// One candidate after fusion: the RRF sum, its lexical rank and score, its vector rank.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Fused {
    pub rrf: f64,
    pub lexical_rank: Option<usize>,
    pub lexical_score: Option<f64>,
    pub vector_rank: Option<usize>,
}

/// Reciprocal rank fusion of two ranked lists (`rrf_k` is the usual k, 60), each list's votes
/// weighted by its arm's weight in this query ([`arm_shares`],
/// [`vector_weight`]).
pub fn fuse(
    lexical: &[(u64, f64)],
    vector: &[(u64, f64)],
    rrf_k: f64,
    lexical_weight: f64,
    vector_weight: f64,
) -> HashMap<u64, Fused> {
    let mut fused: HashMap<u64, Fused> = HashMap::new();
    for (rank, (key, s)) in lexical.iter().enumerate() {
        let e = fused.entry(*key).or_default();
        e.rrf += lexical_weight / (rrf_k + rank as f64 + 1.0);
        e.lexical_rank = Some(rank + 1);
        e.lexical_score = Some(*s);
    }
    for (rank, (key, _)) in vector.iter().enumerate() {
        let e = fused.entry(*key).or_default();
        e.rrf += vector_weight / (rrf_k + rank as f64 + 1.0);
        e.vector_rank = Some(rank + 1);
    }
    fused
}

/// What the score needs beyond the fused lists.
pub struct Signals {
    pub lex_name: Option<&'static str>,
    /// The weights of the retrievers that returned anything (at least 1): relevance is scaled
    /// by it, so that first in every list is 1.
    pub lists: f64,
    /// Each arm's weight in this query (0..=2: [`arm_shares`], the vector arm's times
    /// [`vector_weight`]); the lexical match and the similarity are scaled by them too.
    pub lexical_weight: f64,
    pub vector_weight: f64,
    /// The worst and the best lexical score among the candidates.
    pub lex_min: f64,
    pub lex_max: f64,
    /// The best similarity among the candidates.
    pub sim_max: f64,
    /// Cosine similarity of each candidate to the query.
    pub sims: HashMap<u64, f64>,
    pub now_ms: i64,
    pub files: Vec<String>,
    pub current_project: Option<String>,
    /// What the question asks about time.
    pub asked: time::Asked,
}

/// Scores every fused candidate (the weighted sum `--explain` shows), best first; ties go to
/// the smaller key so that a ranking is reproducible. Scores are rounded to 4 decimals.
pub fn rank(
    fused: HashMap<u64, Fused>,
    docs: &HashMap<u64, Doc>,
    sig: &Signals,
    w: &Weights,
) -> Vec<(f64, u64, Explain)> {
    let rk = w.rrf_k;
    let mut scored: Vec<(f64, u64, Explain)> = fused
        .into_iter()
        .map(|(key, f)| {
            let d = &docs[&key];
            let age_days = ((sig.now_ms - d.created_ms).max(0) as f64) / 86_400_000.0;
            let mut e = Explain {
                lexical: f.lexical_rank.and(sig.lex_name.map(str::to_string)),
                lexical_rank: f.lexical_rank,
                lexical_score: f.lexical_score,
                vector_rank: f.vector_rank,
                rrf: f.rrf,
                relevance: f.rrf * (rk + 1.0) / sig.lists,
                // Spread over the candidates' range: the weakest lexical candidate of the
                // pool is 0, not still half the best (BM25 scores of a pool start far above 0),
                // so a weak word match no longer outweighs a close vector. Measured against
                // the share of the best on the three dev sets: nDCG@10 locomo-dev +.005,
                // qmsum-val +.003, musique-100 -.002 (hybrid still .03 above its best arm).
                lexical_match: spread(f.lexical_score, sig.lex_min, sig.lex_max)
                    * sig.lexical_weight,
                cosine: sig.sims.get(&key).copied().map(round4),
                // Scaled by the best, as the lexical score is: cosines of a model crowd into
                // a narrow band, and raw they would weigh less than BM25 everywhere.
                similarity: share_of_best(sig.sims.get(&key).copied(), sig.sim_max)
                    * sig.vector_weight,
                lexical_weight: (f.lexical_rank.is_some() && sig.lexical_weight != 1.0)
                    .then_some(round4(sig.lexical_weight)),
                vector_weight: (sig.vector_weight != 1.0).then_some(round4(sig.vector_weight)),
                recency: if w.half_life_days > 0.0 {
                    0.5f64.powf(age_days / w.half_life_days)
                } else {
                    0.0
                },
                type_weight: w.type_weights.get(&d.kind).copied().unwrap_or(0.3),
                files: file_overlap(&sig.files, &d.files),
                same_project: match (&sig.current_project, &d.project) {
                    (Some(c), Some(p)) if c == p => 1.0,
                    _ => 0.0,
                },
                time: if sig.asked.any() {
                    sig.asked
                        .score(d.created_ms, &d.summary)
                        .max(sig.asked.named_in(&d.title))
                } else {
                    0.0
                },
                score: 0.0,
                vectors: None,
                no_vector: false,
            };
            e.score = w.relevance * e.relevance
                + w.lexical * e.lexical_match
                + w.similarity * e.similarity
                + w.recency * e.recency
                + w.kind * e.type_weight
                + w.files * e.files
                + w.project * e.same_project
                + w.time * e.time;
            (round4(e.score), key, e)
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    scored
}

/// The hybrid ranking of a store whose vectors are still being made: each record without a
/// vector (`unembedded`) keeps its place in the lexical ranking (`lexical`, keys best first),
/// and the records with one fill the other places in their hybrid order (`hybrid`, best
/// first), those past the lexical list's end after it. The vector arm so reorders only what it
/// can compare; it never pushes a record down for lacking a vector.
pub fn keep_places(
    lexical: &[u64],
    hybrid: Vec<(f64, u64, Explain)>,
    unembedded: &std::collections::HashSet<u64>,
) -> Vec<(f64, u64, Explain)> {
    let (mut kept, with): (Vec<_>, Vec<_>) =
        hybrid.into_iter().partition(|h| unembedded.contains(&h.1));
    let mut kept: HashMap<u64, (f64, u64, Explain)> = kept.drain(..).map(|h| (h.1, h)).collect();
    let mut with = with.into_iter();
    let mut out = Vec::with_capacity(kept.len() + with.len());
    for k in lexical {
        match kept.remove(k) {
            Some(mut h) => {
                h.2.no_vector = true;
                out.push(h);
            }
            None => out.extend(with.next()),
        }
    }
    out.extend(with);
    out
}

/// A candidate's score placed between the worst and the best candidate's (0..=1; 1 when all
/// are equal, 0 without a score).
fn spread(score: Option<f64>, worst: f64, best: f64) -> f64 {
    match score {
        Some(s) if best > worst => ((s - worst) / (best - worst)).clamp(0.0, 1.0),
        Some(_) => 1.0,
        None => 0.0,
    }
}

/// Rounded to 4 decimals, as scores are shown.
fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

/// A candidate's score as a share of the best candidate's (0..=1; 0 without one).
fn share_of_best(score: Option<f64>, best: f64) -> f64 {
    match score {
        Some(s) if best > 0.0 => (s / best).clamp(0.0, 1.0),
        _ => 0.0,
    }
}

/// Fraction of `working` files that `touched` mentions (suffix match, so relative and
/// absolute paths meet).
pub fn file_overlap(working: &[String], touched: &[String]) -> f64 {
    if working.is_empty() || touched.is_empty() {
        return 0.0;
    }
    let same = |a: &str, b: &str| {
        a == b
            || (a.len() > b.len() && a.ends_with(b) && a[..a.len() - b.len()].ends_with('/'))
            || (b.len() > a.len() && b.ends_with(a) && b[..b.len() - a.len()].ends_with('/'))
    };
    let n = working
        .iter()
        .filter(|w| !w.is_empty() && touched.iter().any(|t| same(t, w)))
        .count();
    n as f64 / working.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(key: u64, kind: &str, days_old: i64, now_ms: i64) -> Doc {
        Doc {
            key,
            source: "observation",
            id: key as i64,
            project: Some("/p".into()),
            kind: kind.into(),
            created_ms: now_ms - days_old * 86_400_000,
            ..Doc::default()
        }
    }

    #[test]
    fn fusion_rewards_agreement_and_keeps_each_lists_rank() {
        let lexical = [(1, 9.0), (2, 5.0), (3, 1.0)];
        let vector = [(3, 0.9), (4, 0.8)];
        let f = fuse(&lexical, &vector, 60.0, 1.0, 1.0);
        assert_eq!(f.len(), 4);
        // In both lists (ranks 3 and 1) beats first in one list only.
        assert!(f[&3].rrf > f[&1].rrf);
        assert_eq!(f[&3].lexical_rank, Some(3));
        assert_eq!(f[&3].vector_rank, Some(1));
        assert_eq!(f[&1].lexical_score, Some(9.0));
        assert_eq!(f[&4].lexical_rank, None);
    }

    #[test]
    fn ranking_weighs_each_signal_and_breaks_ties_by_key() {
        let now = 1_800_000_000_000;
        let docs: HashMap<u64, Doc> = [
            doc(1, "change", 30, now),
            doc(2, "change", 30, now),
            doc(3, "decision", 0, now),
        ]
        .into_iter()
        .map(|d| (d.key, d))
        .collect();
        let sig = Signals {
            lex_name: Some("bm25"),
            lists: 1.0,
            lexical_weight: 1.0,
            vector_weight: 1.0,
            lex_min: 1.0,
            lex_max: 4.0,
            sim_max: 1.0,
            sims: HashMap::new(),
            now_ms: now,
            files: vec![],
            current_project: Some("/p".into()),
            asked: time::Asked::default(),
        };
        let one = |rank: usize, score: f64| Fused {
            rrf: 1.0 / (61.0 + rank as f64),
            lexical_rank: Some(rank + 1),
            lexical_score: Some(score),
            vector_rank: None,
        };
        let mut fused = HashMap::new();
        fused.insert(1, one(0, 4.0));
        fused.insert(2, one(0, 4.0));
        fused.insert(3, one(2, 2.0));
        let w = Weights::default();
        let got = rank(fused.clone(), &docs, &sig, &w);
        let keys: Vec<u64> = got.iter().map(|g| g.1).collect();
        // Equal records tie and the smaller key goes first.
        assert_eq!(got[0].0, got[1].0);
        assert_eq!(&keys[..2], &[1, 2]);
        let e = &got[0].2;
        assert_eq!(e.lexical.as_deref(), Some("bm25"));
        assert_eq!(e.lexical_match, 1.0);
        // Placed between the pool's weakest (1.0) and best (4.0) lexical score.
        let third = got.iter().find(|g| g.1 == 3).unwrap();
        assert!((third.2.lexical_match - 1.0 / 3.0).abs() < 1e-9);
        assert_eq!(e.same_project, 1.0);
        let sum = w.relevance * e.relevance
            + w.lexical * e.lexical_match
            + w.recency * e.recency
            + w.kind * e.type_weight
            + w.project * e.same_project;
        assert!((e.score - sum).abs() < 1e-4);
        // Recency and type alone lift the fresh decision above the older matches.
        let w = Weights {
            relevance: 0.0,
            lexical: 0.0,
            ..Weights::default()
        };
        assert_eq!(rank(fused, &docs, &sig, &w)[0].1, 3);
    }

    #[test]
    fn records_without_a_vector_keep_their_lexical_places() {
        let e = |k: u64| (1.0 / k as f64, k, Explain::default());
        // Lexically 1, 2, 3, 4; 2 and 4 have no vector; hybrid puts 3 first, then 5 (found by
        // the vector arm alone), 1, and the two without a vector last.
        let hybrid = vec![e(3), e(5), e(1), e(2), e(4)];
        let none: std::collections::HashSet<u64> = [2, 4].into();
        let got = keep_places(&[1, 2, 3, 4], hybrid, &none);
        let keys: Vec<u64> = got.iter().map(|g| g.1).collect();
        assert_eq!(keys, [3, 2, 5, 4, 1]);
        let flagged: Vec<u64> = got.iter().filter(|g| g.2.no_vector).map(|g| g.1).collect();
        assert_eq!(flagged, [2, 4]);
        // Every record with a vector: the hybrid order as it was.
        let all = keep_places(&[1, 2], vec![e(2), e(1)], &Default::default());
        assert_eq!(all.iter().map(|g| g.1).collect::<Vec<_>>(), [2, 1]);
    }

    #[test]
    fn a_query_the_model_places_no_better_than_nonsense_gets_no_vector_vote() {
        assert_eq!(vector_weight(Some(0.62), Some(0.40)), 1.0);
        assert_eq!(vector_weight(Some(0.41), Some(0.40)), 0.0);
        assert_eq!(vector_weight(Some(0.30), Some(0.40)), 0.0);
        let half = vector_weight(Some(0.455), Some(0.40));
        assert!((half - 0.5).abs() < 1e-9, "{half}");
        assert_eq!(vector_weight(Some(0.2), None), 1.0);
        assert_eq!(vector_weight(None, Some(0.4)), 0.0);
    }

    #[test]
    fn the_arm_whose_top_stands_out_gets_the_larger_share() {
        // BM25 falls by half from its best to its tenth, the cosines by a sixth (× 3): even.
        let lexical: Vec<f64> = (0..12).map(|i| 10.0 - i as f64 * 5.0 / 9.0).collect();
        let even: Vec<f64> = (0..12).map(|i| 0.6 - i as f64 * 0.1 / 9.0).collect();
        let (l, v) = arm_shares(&lexical, &even);
        assert!((l - 1.0).abs() < 1e-9 && (v - 1.0).abs() < 1e-9, "{l} {v}");
        // The cosines falling by a tenth: the lexical arm leads, 0.5 against 0.3.
        let tenth: Vec<f64> = (0..12).map(|i| 0.6 - i as f64 * 0.06 / 9.0).collect();
        let (l, v) = arm_shares(&lexical, &tenth);
        assert!(
            (l - 1.25).abs() < 1e-9 && (v - 0.75).abs() < 1e-9,
            "{l} {v}"
        );
        // Flat cosines: the lexical arm takes (nearly) everything.
        let (l, v) = arm_shares(&lexical, &[0.5; 30]);
        assert_eq!((l, v), (2.0, 0.0));
        // Flat BM25 scores: the vector arm does.
        let (l, v) = arm_shares(&[3.0; 12], &tenth);
        assert_eq!((l, v), (0.0, 2.0));
        // Either arm empty, or neither spreading: equal shares.
        assert_eq!(arm_shares(&[], &even), (1.0, 1.0));
        assert_eq!(arm_shares(&lexical, &[]), (1.0, 1.0));
        assert_eq!(arm_shares(&[2.0; 3], &[0.4; 3]), (1.0, 1.0));
        // A short list is read to its end.
        let (l, _) = arm_shares(&[4.0, 2.0], &[0.5, 0.45]);
        assert!((l - 2.0 * 0.5 / (0.5 + 0.3)).abs() < 1e-9, "{l}");
    }
}
