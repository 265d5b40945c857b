//! "Clearly relevant": the test a memory must pass before it is put in front of Claude without
//! being asked for (per prompt, or from another project at SessionStart).
//!
//! BM25 scores are not comparable across queries, so they cannot carry a threshold. Instead the
//! query's analysed terms (English function words and request phrasing left out) are weighed by
//! their IDF in the index, and a memory must (a) contain at least two informative terms of the
//! query (one when the query has a single informative term and it is rare), and (b) hold at
//! least half of the query's IDF mass. A word no memory contains weighs as much as the rarest
//! word: a prompt about something never seen ("kubernetes ingress") is not about a memory that
//! shares its filler words. A common word ("fix", "test") is not informative and brings nothing
//! alone.

use std::collections::HashSet;

use tantivy::Term;

use memkit_core::record::Hit;
use memkit_core::{Error, Result};
use memkit_search::search::{Engine, Filters, Request, Searcher};

/// A term is informative when at most this share of the memories contain it.
const INFORMATIVE_SHARE: f64 = 0.15;
/// A lone informative term must be at least this rare (share of memories) to count alone.
const RARE_SHARE: f64 = 0.02;

/// Words that carry no topic: English function words and the phrasing of requests, as the
/// English stemmer leaves them.
const STOP: &[&str] = &[
    "a", "about", "after", "again", "all", "also", "am", "an", "and", "ani", "are", "as", "at",
    "be", "been", "but", "by", "can", "could", "did", "do", "doe", "don", "for", "from", "get",
    "got", "had", "has", "have", "he", "help", "her", "here", "him", "his", "how", "i", "if", "in",
    "into", "is", "it", "it'", "its", "just", "let", "like", "make", "me", "mani", "might", "more",
    "much", "must", "my", "need", "no", "not", "now", "of", "ok", "okay", "on", "one", "onli",
    "or", "our", "out", "pleas", "realli", "should", "so", "some", "still", "than", "thank",
    "that", "the", "their", "them", "then", "there", "these", "they", "thi", "those", "to", "too",
    "up", "us", "use", "veri", "want", "was", "we", "were", "what", "when", "where", "whi",
    "which", "who", "will", "with", "would", "yes", "you", "your",
];

/// The thresholds (configurable as MEM_CONTEXT_PROMPT_COVERAGE / _TERMS).
#[derive(Debug, Clone, Copy)]
pub struct Thresholds {
    /// Share of the known query terms' IDF mass a memory must contain.
    pub coverage: f64,
    /// Informative query terms a memory must contain.
    pub terms: usize,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            coverage: memkit_core::config::CONTEXT_PROMPT_COVERAGE.default,
            terms: memkit_core::config::CONTEXT_PROMPT_TERMS.default,
        }
    }
}

/// A hit that passed, with why.
#[derive(Debug, Clone)]
pub struct Relevant {
    pub hit: Hit,
    pub coverage: f64,
    /// The informative query terms it contains.
    pub matched: Vec<String>,
}

/// One analysed query term with its weight.
#[derive(Debug, Clone)]
struct QTerm {
    text: String,
    /// Some memory contains it.
    known: bool,
    idf: f64,
    informative: bool,
    rare: bool,
}

/// The memories relevant to `text`, best first, at most `limit`. Needs the BM25 index (its
/// statistics say which words are informative); without it, an error.
pub fn relevant(
    s: &Searcher,
    text: &str,
    filters: Filters,
    current_project: Option<String>,
    limit: usize,
    th: Thresholds,
) -> Result<Vec<Relevant>> {
    let Some(b) = &s.bm25 else {
        return Err(Error::other(format!(
            "no BM25 index ({})",
            s.bm25_error.as_deref().unwrap_or("missing")
        )));
    };
    let terms = query_terms(s, text)?;
    let known: Vec<&QTerm> = terms.iter().filter(|t| t.known).collect();
    let informative = known.iter().filter(|t| t.informative).count();
    if informative == 0 {
        return Ok(vec![]);
    }
    let mass: f64 = terms.iter().map(|t| t.idf).sum();
    let need_terms = if informative == 1 && known.iter().any(|t| t.rare) {
        1
    } else {
        th.terms.max(1)
    };
    let req = Request {
        text: text.to_string(),
        filters,
        limit: limit.max(1) * 3,
        current_project,
        engine: Engine::Auto,
        ..Default::default()
    };
    let hits = s.search(&req)?;
    let mut analyzer = b.analyzer()?;
    let mut out = Vec::new();
    for hit in hits {
        let mut doc_terms: HashSet<String> = HashSet::new();
        for part in hit_texts(&hit) {
            let mut stream = analyzer.token_stream(part);
            while let Some(t) = stream.next() {
                doc_terms.insert(t.text.clone());
            }
        }
        let matched: Vec<&QTerm> = known
            .iter()
            .copied()
            .filter(|t| doc_terms.contains(&t.text))
            .collect();
        let coverage = matched.iter().map(|t| t.idf).sum::<f64>() / mass;
        let strong: Vec<String> = matched
            .iter()
            .filter(|t| t.informative)
            .map(|t| t.text.clone())
            .collect();
        if coverage >= th.coverage && strong.len() >= need_terms {
            out.push(Relevant {
                hit,
                coverage,
                matched: strong,
            });
        }
    }
    out.truncate(limit);
    Ok(out)
}

fn hit_texts(h: &Hit) -> Vec<&str> {
    let mut v: Vec<&str> = vec![&h.title];
    v.extend(h.summary.as_deref());
    v.extend(h.detail.as_deref());
    for l in [&h.facts, &h.concepts, &h.tags, &h.files]
        .into_iter()
        .flatten()
    {
        v.extend(l.iter().map(String::as_str));
    }
    v
}

/// The query's analysed terms (as BM25 sees them) with IDF over the whole index.
fn query_terms(s: &Searcher, text: &str) -> Result<Vec<QTerm>> {
    let b = s.bm25.as_ref().expect("checked by the caller");
    let searcher = b.reader.searcher();
    let n = searcher.num_docs() as f64;
    let mut analyzer = b.analyzer()?;
    let mut stream = analyzer.token_stream(text);
    let mut out: Vec<QTerm> = Vec::new();
    while let Some(t) = stream.next() {
        if out.iter().any(|q| q.text == t.text)
            || t.text.chars().count() < 2
            || STOP.contains(&t.text.as_str())
        {
            continue;
        }
        let df = searcher
            .doc_freq(&Term::from_field_text(b.fields.text, &t.text))
            .map_err(|e| memkit_search::index::index_err("doc freq", e))? as f64;
        out.push(QTerm {
            text: t.text.clone(),
            known: df > 0.0,
            idf: (1.0 + (n - df + 0.5) / (df + 0.5)).ln(),
            informative: df > 0.0 && df <= (n * INFORMATIVE_SHARE).max(1.0),
            rare: df > 0.0 && df <= (n * RARE_SHARE).max(1.0),
        });
        if out.len() == 64 {
            break;
        }
    }
    Ok(out)
}
