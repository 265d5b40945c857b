//! Dedup: a new observation whose title shares more than 80% of its words (Jaccard) with one
//! of the same project from the last hour is merged into it instead of stored twice.

use std::collections::HashSet;

use rusqlite::Connection;

use memkit_core::Result;
use memkit_core::record::Observation;
use memkit_core::store::observations;

pub const THRESHOLD: f64 = 0.8;
pub const WINDOW_MINUTES: i64 = 60;

fn word_set(s: &str) -> HashSet<String> {
    s.split(|c: char| !c.is_alphanumeric() && c != '.' && c != '_')
        .map(|w| w.trim_matches('.').to_lowercase())
        .filter(|w| !w.is_empty())
        .collect()
}

/// Jaccard similarity of the word sets of two titles.
pub fn jaccard(a: &str, b: &str) -> f64 {
    let (a, b) = (word_set(a), word_set(b));
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let inter = a.intersection(&b).count() as f64;
    let union = a.union(&b).count() as f64;
    inter / union
}

fn union_into(dst: &mut Vec<String>, src: &[String], max: usize) {
    for s in src {
        if dst.len() >= max {
            break;
        }
        if !dst.contains(s) {
            dst.push(s.clone());
        }
    }
}

/// Merges `new` into `old`: lists united, the new summary appended when it says something else,
/// token counts added.
pub fn merge(old: &mut Observation, new: &Observation) {
    if new.summary != old.summary && !old.summary.contains(&new.summary) && old.summary.len() < 2000
    {
        old.summary = format!("{} {}", old.summary, new.summary);
    }
    if old.detail.is_none() {
        old.detail = new.detail.clone();
    }
    union_into(&mut old.facts, &new.facts, 30);
    union_into(&mut old.concepts, &new.concepts, 12);
    union_into(&mut old.tags, &new.tags, 20);
    union_into(&mut old.files_modified, &new.files_modified, 50);
    union_into(&mut old.files_read, &new.files_read, 50);
    old.files_read.retain(|f| !old.files_modified.contains(f));
    union_into(&mut old.functions_changed, &new.functions_changed, 40);
    old.tokens_raw += new.tokens_raw;
    old.tokens_compressed = old.tokens_compressed.max(new.tokens_compressed);
}

/// The id of a recent observation of the same session that `o` duplicates, if any.
pub fn find_duplicate(conn: &Connection, o: &Observation, now: &str) -> Result<Option<i64>> {
    let since = chrono::DateTime::parse_from_rfc3339(now)
        .map(|t| t.with_timezone(&chrono::Utc))
        .unwrap_or_else(|_| chrono::Utc::now())
        - chrono::Duration::minutes(WINDOW_MINUTES);
    let since = since.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    // Within its session only: two sessions that ran "the tests" ran different tests, and a
    // merge would leave the second session with nothing of its own.
    let session = o.session_id.as_deref();
    for (id, title) in observations::recent_titles(conn, o.project.as_deref(), session, &since)? {
        if jaccard(&title, &o.title) > THRESHOLD {
            return Ok(Some(id));
        }
    }
    Ok(None)
}

/// Stores `o` (linked to its sources), or merges it into a duplicate. Returns (id, merged).
pub fn store(conn: &Connection, o: &Observation, now: &str) -> Result<(i64, bool)> {
    // An imported note with its own id is that note again, whatever it says now.
    if let Some(ext) = &o.external_id
        && let Some(id) = observations::by_external_id(conn, o.project.as_deref(), ext)?
    {
        let o = Observation {
            id: Some(id),
            ..o.clone()
        };
        observations::replace_imported(conn, &o, now)?;
        observations::link(conn, id, &o.sources)?;
        return Ok((id, true));
    }
    if !o.is_manual
        && let Some(id) = find_duplicate(conn, o, now)?
        && let Some(mut old) = observations::get(conn, id)?
    {
        merge(&mut old, o);
        observations::update(conn, &old, now)?;
        observations::link(conn, id, &o.sources)?;
        return Ok((id, true));
    }
    let id = observations::insert(conn, o, o.is_manual, now)?;
    observations::link(conn, id, &o.sources)?;
    Ok((id, false))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jaccard_of_titles() {
        assert_eq!(
            jaccard("Fix token refresh race", "fix token refresh race"),
            1.0
        );
        assert!(
            jaccard(
                "Fix token refresh race in auth",
                "Fix token refresh race in auth.rs"
            ) < 0.8
        );
        assert!(
            jaccard(
                "Add caching to the search index",
                "Add caching to search index"
            ) > 0.8 - 1e-9
        );
    }
}
