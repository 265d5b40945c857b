//! What a search keeps: one set of filters, applied by the store's queries here (FTS5, the
//! observations, sessions and learnings a filtered vector search may return) and by
//! memkit-search over its indexes.

use rusqlite::Connection;

use super::learnings::{self, Learning};
use super::ms_text;
use crate::Result;

/// Filters applied to every candidate.
#[derive(Debug, Clone, Default)]
pub struct Filters {
    /// Project roots; `None` = every project (an empty list matches nothing).
    pub projects: Option<Vec<String>>,
    /// Observation types (or `session`, `learning`).
    pub kinds: Vec<String>,
    /// Tags after fuzzy expansion (lowercase), any of which a record must have; empty = no tag
    /// filter.
    pub tags: Vec<String>,
    /// Inclusive bounds, epoch milliseconds.
    pub after_ms: Option<i64>,
    pub before_ms: Option<i64>,
    pub session: Option<String>,
}

impl Filters {
    /// Whether any filter is set (else every record passes).
    pub fn restricts(&self) -> bool {
        self.projects.is_some()
            || !self.kinds.is_empty()
            || !self.tags.is_empty()
            || self.after_ms.is_some()
            || self.before_ms.is_some()
            || self.session.is_some()
    }

    /// The lower bound as stored time text.
    pub fn after(&self) -> Option<String> {
        self.after_ms.map(ms_text)
    }

    /// The upper bound as stored time text.
    pub fn before(&self) -> Option<String> {
        self.before_ms.map(ms_text)
    }

    /// The active learnings that pass (none when the filters ask for other types, tags or a
    /// session: learnings have neither).
    pub fn learnings(&self, conn: &Connection) -> Result<Vec<Learning>> {
        let wanted = self.kinds.is_empty() || self.kinds.iter().any(|k| k == "learning");
        if !wanted || !self.tags.is_empty() || self.session.is_some() {
            return Ok(Vec::new());
        }
        learnings::searchable(
            conn,
            self.projects.as_deref(),
            self.after().as_deref(),
            self.before().as_deref(),
        )
    }
}
