//! The filters of a search applied over memkit-search's indexes: the keys that pass (for the
//! vector arm), the records the retrievers found that pass, and the filters as a tantivy query.
//! The filters themselves, and the store's side of them, are `memkit_core::store::filters`.

use std::ops::Bound;

use rusqlite::Connection;
use tantivy::Term;
use tantivy::query::{BooleanQuery, Occur, Query as TantivyQuery, RangeQuery, TermQuery};
use tantivy::schema::IndexRecordOption;

use super::bm25;
use crate::index::Doc;
use crate::index::bm25::Bm25;
use crate::index::vectors::Keys;
use memkit_core::Result;
use memkit_core::store::filters::Filters;
use memkit_core::store::{observations, sessions, vector_key};

/// The keys of the records that pass; `None` when nothing is filtered. From the BM25 index
/// when there is one (`bm25`), else from the database. `learned`: what
/// [`Filters::learnings`] gave (a search needs them for its lexical list too, so it reads
/// them once).
pub fn keys(
    f: &Filters,
    conn: &Connection,
    learned: &[memkit_core::store::learnings::Learning],
    bm25: Option<&Bm25>,
) -> Result<Option<Keys>> {
    if !f.restricts() {
        return Ok(None);
    }
    let mut keys = Keys::default();
    if let Some(b) = bm25 {
        // The BM25 index holds the same observations and sessions with the fields the
        // filters ask (kept in step by mem-index, as the lexical arm relies on), and reads
        // a project's 80,000 keys from one posting list where SQLite steps through them row
        // by row: 7 ms of a one-project search at a million records.
        if let Some(filter) = bm25_filter(b, f) {
            let filter = filter.unwrap_or_else(|| Box::new(tantivy::query::AllQuery));
            bm25::matching_keys(&b.reader.searcher(), filter.as_ref(), "key", |k| {
                keys.insert(k)
            })
            .map_err(|e| crate::index::index_err("bm25 filter", e))?;
        }
    } else {
        keys.extend(
            observations::matching_ids(conn, f)?
                .into_iter()
                .map(|id| vector_key("observation", id)),
        );
        if (f.kinds.is_empty() || f.kinds.iter().any(|k| k == "session")) && f.tags.is_empty() {
            let rows = sessions::matching_rowids(
                conn,
                f.projects.as_deref(),
                f.session.as_deref(),
                f.after().as_deref(),
                f.before().as_deref(),
            )?;
            keys.extend(rows.into_iter().map(|r| vector_key("session", r)));
        }
    }
    keys.extend(learned.iter().map(|l| vector_key("learning", l.id)));
    Ok(Some(keys))
}

/// Whether the record `d` passes `f`.
pub fn passes(f: &Filters, d: &Doc) -> bool {
    if let Some(ps) = &f.projects
        && !d.project.as_ref().is_some_and(|p| ps.contains(p))
    {
        return false;
    }
    if !f.kinds.is_empty() && !f.kinds.contains(&d.kind) {
        return false;
    }
    if !f.tags.is_empty() && !d.tags.iter().any(|t| f.tags.contains(&t.to_lowercase())) {
        return false;
    }
    if f.after_ms.is_some_and(|a| d.created_ms < a) {
        return false;
    }
    if f.before_ms.is_some_and(|b| d.created_ms > b) {
        return false;
    }
    if let Some(s) = &f.session
        && d.session_id.as_deref() != Some(s.as_str())
    {
        return false;
    }
    true
}

/// The filters as one tantivy query (`Some(None)`: none), `None` when nothing can pass.
pub(crate) fn bm25_filter(b: &Bm25, f: &Filters) -> Option<Option<Box<dyn TantivyQuery>>> {
    let fields = &b.fields;
    let mut must: Vec<(Occur, Box<dyn TantivyQuery>)> = Vec::new();
    let any_of = |field, vals: &[String]| -> Box<dyn TantivyQuery> {
        Box::new(BooleanQuery::new(
            vals.iter()
                .map(|v| {
                    (
                        Occur::Should,
                        Box::new(TermQuery::new(
                            Term::from_field_text(field, v),
                            IndexRecordOption::Basic,
                        )) as Box<dyn TantivyQuery>,
                    )
                })
                .collect(),
        ))
    };
    if let Some(ps) = &f.projects {
        if ps.is_empty() {
            return None;
        }
        must.push((Occur::Must, any_of(fields.project, ps)));
    }
    if !f.kinds.is_empty() {
        must.push((Occur::Must, any_of(fields.kind, &f.kinds)));
    }
    if !f.tags.is_empty() {
        must.push((Occur::Must, any_of(fields.tag, &f.tags)));
    }
    if let Some(s) = &f.session {
        must.push((Occur::Must, any_of(fields.session, std::slice::from_ref(s))));
    }
    if f.after_ms.is_some() || f.before_ms.is_some() {
        let lo = f
            .after_ms
            .map(|a| Bound::Included(Term::from_field_i64(fields.created, a)))
            .unwrap_or(Bound::Unbounded);
        let hi = f
            .before_ms
            .map(|a| Bound::Included(Term::from_field_i64(fields.created, a)))
            .unwrap_or(Bound::Unbounded);
        must.push((Occur::Must, Box::new(RangeQuery::new(lo, hi))));
    }
    Some((!must.is_empty()).then(|| Box::new(BooleanQuery::new(must)) as Box<dyn TantivyQuery>))
}
