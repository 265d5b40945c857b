//! The JSONL records memkit tools read and write: the one documented contract (docs/ARCHITECTURE.md, "Records on the wire").
//!
//! Every record is one flat JSON object on one line with a `"type"` naming it and `"v"` its
//! version (bumped only by a breaking change). Readers ignore fields they do not know and pass
//! through record types they do not handle; fields may be added in any minor release. Times are
//! RFC 3339 UTC text with milliseconds (`2026-02-21T14:30:00.000Z`); ids are integers shown as
//! `#123` to people.
//!
//! | type | written by | what it is |
//! |---|---|---|
//! | `capture` | mem-capture | one queued hook event (a prompt, a tool call, a stop, a note) |
//! | `session` | mem-capture --transcript(s) | one session as imported: what it held |
//! | `summary` | every tool that works in bulk | the totals of one run, last line of its output |
//! | `observation` | mem-compress | a typed, compressed memory |
//! | `hit` | mem-search | one search result, with the mode that found it |
//! | `index` | mem-index | what one run did to one index, or what `--check` found |
//! | `context` | mem-context | the block a session starts with (or a prompt brings in), with what went into it |
//!
//! Golden tests (tests/integration/records.rs) pin the serialized form of each.
//!
//! `type` and `v` are written here and nowhere else: a record type derives its fields'
//! serializer with `#[serde(remote = "Self")]` (which makes it an inherent function, not the
//! `Serialize` impl) and names its `type` with [`record!`](crate::record!), whose `Serialize`
//! writes `type`, `v`, then those fields. A record gathered as JSON at run time goes through
//! [`object`] or [`after`]. Readers ignore both keys.

use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

#[doc(hidden)]
pub use serde as __serde;

/// Current version of every record type.
pub const VERSION: u32 = 1;

/// A record type: its `type` on the wire, and its fields' serializer. Implemented by
/// [`record!`](crate::record!), with the `Serialize` that writes `type` and `v` first.
pub trait Record {
    const TYPE: &'static str;
    /// Written with `v`; `context_session` records never had one.
    const VERSIONED: bool = true;
    /// Its own fields, as its derive writes them.
    fn fields<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error>;
}

/// `r` as a record: `type`, `v`, then its fields.
#[doc(hidden)]
pub fn serialize<R: Record, S: Serializer>(r: &R, s: S) -> Result<S::Ok, S::Error> {
    struct Fields<'a, R>(&'a R);
    impl<R: Record> Serialize for Fields<'_, R> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            self.0.fields(s)
        }
    }
    #[derive(Serialize)]
    #[serde(bound = "")]
    struct Tagged<'a, R: Record> {
        #[serde(rename = "type")]
        kind: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        v: Option<u32>,
        #[serde(flatten)]
        fields: Fields<'a, R>,
    }
    Tagged {
        kind: R::TYPE,
        v: R::VERSIONED.then_some(VERSION),
        fields: Fields(r),
    }
    .serialize(s)
}

/// Makes a type whose fields' serializer is derived with `#[serde(remote = "Self")]` (a type
/// with a lifetime names itself: `remote = "FunctionRecord"`) a [`Record`](crate::record::Record)
/// of `type` `$kind`: `record!(Hit = "hit")`. `, Deserialize` for one that also derives
/// `Deserialize` (the same attribute makes that an inherent function too); `, unversioned`
/// for one written without `v`.
#[macro_export]
macro_rules! record {
    ($t:ident $(<$lt:lifetime>)? = $kind:literal) => {
        $crate::record!(@impl $t $(<$lt>)?, $kind, true);
    };
    ($t:ident = $kind:literal, unversioned) => {
        $crate::record!(@impl $t, $kind, false);
    };
    ($t:ident = $kind:literal, Deserialize) => {
        $crate::record!(@impl $t, $kind, true);
        impl<'de> $crate::record::__serde::Deserialize<'de> for $t {
            fn deserialize<D: $crate::record::__serde::Deserializer<'de>>(
                d: D,
            ) -> ::std::result::Result<Self, D::Error> {
                $t::deserialize(d)
            }
        }
    };
    (@impl $t:ident $(<$lt:lifetime>)?, $kind:literal, $versioned:literal) => {
        impl $(<$lt>)? $crate::record::Record for $t $(<$lt>)? {
            const TYPE: &'static str = $kind;
            const VERSIONED: bool = $versioned;
            fn fields<S: $crate::record::__serde::Serializer>(
                &self,
                s: S,
            ) -> ::std::result::Result<S::Ok, S::Error> {
                $t::serialize(self, s)
            }
        }
        impl $(<$lt>)? $crate::record::__serde::Serialize for $t $(<$lt>)? {
            fn serialize<S: $crate::record::__serde::Serializer>(
                &self,
                s: S,
            ) -> ::std::result::Result<S::Ok, S::Error> {
                $crate::record::serialize(self, s)
            }
        }
    };
}

/// A record gathered as a JSON object at run time: `type` and `v`, then `fields`' keys.
pub fn object(kind: &str, fields: Value) -> Value {
    let mut o = serde_json::Map::new();
    o.insert("type".into(), kind.into());
    o.insert("v".into(), VERSION.into());
    if let Value::Object(f) = fields {
        o.extend(f);
    }
    Value::Object(o)
}

/// A row's JSON as a record with `type` and `v` after its keys: the order mem-learn has
/// always written a stored learning in.
pub fn after(kind: &str, mut row: Value) -> Value {
    if let Some(o) = row.as_object_mut() {
        o.insert("type".into(), kind.into());
        o.insert("v".into(), VERSION.into());
    }
    row
}

/// A queued hook event (`"type":"capture"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct Capture {
    /// Queue row id.
    pub id: i64,
    pub session_id: String,
    /// Project root path; absent when the event named no directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// Hook event name (`UserPromptSubmit`, `PostToolUse`, `Stop`, `Note`, …).
    pub event: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
    /// Files the call touched, absolute where the cwd was known.
    #[serde(default)]
    pub files: Vec<String>,
    /// `high`, `normal` or `low`.
    pub priority: String,
    /// `raw`, `processing`, `done` or `error`.
    pub status: String,
    /// The redacted hook payload.
    #[serde(default)]
    pub payload: Value,
    pub created_at: String,
}
record!(Capture = "capture", Deserialize);

/// One session as an import saw it (`"type":"session"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct Session {
    pub session_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    /// Transcript files read for it (the session's own and its subagents').
    pub files: usize,
    pub prompts: usize,
    /// Tool calls found (paired or not).
    pub tool_calls: usize,
    /// Rows added to the queue by this run.
    pub queued: usize,
    /// Rows already stored by an earlier run.
    pub duplicates: usize,
    /// Tool calls not queued by policy (skip list, tiny calls).
    pub skipped: usize,
}
record!(Session = "session", Deserialize);

/// Totals of one run (`"type":"summary"`), written last.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(remote = "Self")]
pub struct Summary {
    /// The tool that wrote it (`mem-capture`, …).
    pub tool: String,
    /// Named counters; which ones depends on the tool and is listed in its man page.
    pub counts: std::collections::BTreeMap<String, u64>,
    pub elapsed_ms: u64,
}
record!(Summary = "summary", Deserialize);

/// Observation types, most valuable first.
pub const OBSERVATION_TYPES: &[&str] = &[
    "decision",
    "bugfix",
    "feature",
    "refactor",
    "discovery",
    "change",
];

/// A compressed memory (`"type":"observation"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(remote = "Self")]
pub struct Observation {
    /// Row id; absent in filter mode before the record is stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// One of [`OBSERVATION_TYPES`].
    pub kind: String,
    pub title: String,
    pub summary: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    #[serde(default)]
    pub facts: Vec<String>,
    #[serde(default)]
    pub concepts: Vec<String>,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    pub files_read: Vec<String>,
    #[serde(default)]
    pub files_modified: Vec<String>,
    #[serde(default)]
    pub functions_changed: Vec<String>,
    #[serde(default)]
    pub tokens_raw: u64,
    #[serde(default)]
    pub tokens_compressed: u64,
    /// A memory saved by hand (`mem-capture --note`), not compressed from tool calls.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_manual: bool,
    /// Ids of the captures (queue rows or capture records) it was made from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    /// The id an imported note had where it came from (`mem-capture --notes`), verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_id: Option<String>,
    /// The machine or person a memory taken from the sync remote came from (their
    /// `sync.name`, shown as `[from: NAME]`); absent for this machine's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
}
record!(Observation = "observation", Deserialize);

/// One search result (`"type":"hit"`), best first. `--mode probe` keeps the fields marked
/// (probe); `--mode full` adds the rest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct Hit {
    /// The `id` of the query line in `--batch` mode (as given: string or number). (probe)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query_id: Option<Value>,
    /// 1-based position in this query's results. (probe)
    pub rank: usize,
    /// Id of the record: an observation id, or a session's rowid. (probe)
    pub id: i64,
    /// What the record is: `observation` or `session`. (probe)
    pub source: String,
    /// Its visible id: `o17` for an observation, `s17` for a session; what mem-report takes.
    /// (probe)
    #[serde(rename = "ref", default)]
    pub handle: String,
    /// Final score (weighted sum of the components `--explain` shows). (probe)
    pub score: f64,
    /// Retrieval used: `hybrid` (BM25 or FTS5 + vectors), `bm25`, `fts` or `vector`. (probe)
    pub mode: String,
    /// Project root of the record. (probe)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// Its display name. (probe)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_name: Option<String>,
    /// True when the record belongs to another project than the current one. (probe)
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub other_project: bool,
    /// Observation type (decision, bugfix, …) or `session`. (probe)
    pub kind: String,
    /// (probe)
    pub title: String,
    /// The id an imported note came with (`mem-capture --notes`), verbatim. (probe)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_id: Option<String>,
    /// Who a memory taken from the sync remote came from (their `sync.name`). (probe)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    /// First line of the summary, at most 120 characters (probe mode only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub facts: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concepts: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
    /// Files read or modified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<Vec<String>>,
    /// (probe)
    pub created_at: String,
    /// Each score component (`--explain`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explain: Option<Explain>,
}
record!(Hit = "hit", Deserialize);

/// What one mem-index run did to one index, or what `--check` found in it (`"type":"index"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(remote = "Self")]
pub struct IndexReport {
    /// `bm25` or `vectors-<model>-<dim>`.
    pub index: String,
    /// Records in the index after the run (or that the database says it should hold).
    pub docs: u64,
    #[serde(default)]
    pub added: u64,
    #[serde(default)]
    pub updated: u64,
    #[serde(default)]
    pub removed: u64,
    /// True when the index was built from scratch.
    #[serde(default)]
    pub rebuilt: bool,
    /// Why it was rebuilt (`asked`, `missing`, `no index state`, an error…).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `--check` only: records the database has and the index lacks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing: Option<u64>,
    /// `--check` only: records the index has and the database lacks (or holds twice).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<u64>,
    /// `--check` only: up to 20 of the differing records, as `observation:#12`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sample: Vec<String>,
    /// `--check` only: why the index could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}
record!(IndexReport = "index", Deserialize);

/// The context block mem-context built (`"type":"context"`): what Claude is shown, and what
/// went into it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct Context {
    /// `SessionStart` or `UserPromptSubmit`.
    pub event: String,
    /// Project root the block is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_name: Option<String>,
    /// SessionStart source: `startup`, `resume`, `compact` or `clear`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Source>,
    /// The markdown given to Claude; empty when there was nothing worth saying.
    pub text: String,
    /// Estimated tokens of `text` (never above `budget`).
    pub tokens: usize,
    pub budget: usize,
    /// Each layer in priority order: included or skipped, and why (SessionStart only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub layers: Vec<LayerReport>,
    /// The records listed, in order.
    #[serde(default)]
    pub items: Vec<ContextItem>,
    /// Time to build, in milliseconds.
    pub build_ms: u64,
}
record!(Context = "context", Deserialize);

/// One record a context block lists.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextItem {
    /// `observation` or `session`.
    pub source: String,
    pub id: i64,
    /// The other project's name, for a record from another project.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_name: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub other_project: bool,
    /// Who a memory taken from the sync remote came from (their `sync.name`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
}

/// Why the session started (SessionStart `source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    #[default]
    Startup,
    Resume,
    Compact,
    Clear,
}

impl Source {
    pub fn parse(s: &str) -> Source {
        match s {
            "resume" => Source::Resume,
            "compact" => Source::Compact,
            "clear" => Source::Clear,
            _ => Source::Startup,
        }
    }
}

/// What happened to one layer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LayerReport {
    pub name: String,
    /// Tokens this layer was allowed.
    pub cap: usize,
    /// Estimated tokens it used (0 when skipped).
    pub tokens: usize,
    /// Items listed.
    pub items: usize,
    pub included: bool,
    /// Why it was skipped or cut short (no data, an error, the cap).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

/// Each score component of a hit (`--explain`).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, PartialEq, Default)]
pub struct Explain {
    /// Retriever used for the lexical list: `bm25` or `fts`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lexical: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lexical_rank: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lexical_score: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vector_rank: Option<usize>,
    /// Reciprocal rank fusion sum.
    pub rrf: f64,
    /// rrf scaled to 0..1 (1 = first in every list).
    pub relevance: f64,
    /// Lexical (BM25 or FTS5) score placed 0..1 between the worst (0) and the best (1) of this
    /// query's lexical candidates, times the lexical weight.
    pub lexical_match: f64,
    /// Cosine similarity of the query vector and the record's vector (0 without vectors),
    /// times the vector weight.
    pub similarity: f64,
    /// The raw cosine of the query vector and the record's, when both have one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cosine: Option<f64>,
    /// Each arm's weight in this query's fusion (0..2, the two summing to 2), when not 1: the
    /// arm whose best candidates stand out from the rest of its list weighs more; the vector
    /// arm's is also cut for a query no closer than nonsense (`mem-search` DETAILS).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lexical_weight: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vector_weight: Option<f64>,
    /// 0.5^(age / half-life).
    pub recency: f64,
    pub type_weight: f64,
    /// Fraction of the working files this record touched.
    pub files: f64,
    /// 1 when the record is from the current project.
    pub same_project: f64,
    /// 1 when the record answers the time the question asks or names (made then, or saying
    /// when for a question asking when).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub time: f64,
    /// Weighted sum = score.
    pub score: f64,
    /// The share of the store searched that has a vector (the vector index's records over the
    /// BM25 index's), when not all: a backlog still being embedded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vectors: Option<f64>,
    /// The record has no vector yet, so it kept its place in the lexical ranking (the vector
    /// arm reorders only the records it can compare).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_vector: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Serialize)]
    #[serde(remote = "Borrowed")]
    struct Borrowed<'a> {
        name: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        note: Option<u8>,
        #[serde(flatten)]
        more: &'a Value,
    }
    crate::record!(Borrowed<'a> = "borrowed");

    #[derive(Serialize)]
    #[serde(remote = "Self")]
    struct Bare {
        n: u8,
    }
    crate::record!(Bare = "bare", unversioned);

    #[test]
    fn type_and_v_come_first_in_text_and_in_values() {
        let more = json!({"z": 1, "a": 2});
        let b = Borrowed {
            name: "x",
            note: None,
            more: &more,
        };
        let line = r#"{"type":"borrowed","v":1,"name":"x","z":1,"a":2}"#;
        assert_eq!(serde_json::to_string(&b).unwrap(), line);
        assert_eq!(serde_json::to_value(&b).unwrap().to_string(), line);
        assert_eq!(
            serde_json::to_string(&Bare { n: 3 }).unwrap(),
            r#"{"type":"bare","n":3}"#
        );
    }

    #[test]
    fn records_gathered_as_json_put_type_and_v_where_they_always_were() {
        let fields = json!({"outcome": "added", "id": 4});
        assert_eq!(
            object("edge", fields.clone()).to_string(),
            r#"{"type":"edge","v":1,"outcome":"added","id":4}"#
        );
        assert_eq!(
            after("learning", fields).to_string(),
            r#"{"outcome":"added","id":4,"type":"learning","v":1}"#
        );
    }
}
