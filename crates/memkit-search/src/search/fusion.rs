//! How much each arm is trusted in one query's fusion: by how far its top stands out
//! ([`arm_shares`]), and, for the vector arm, by whether the query is any closer than nonsense.
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

#[cfg(test)]
mod tests {
    use super::*;

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
