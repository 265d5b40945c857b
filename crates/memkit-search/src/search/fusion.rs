//! How much one query's vector arm is trusted in fusion.
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
}
