//! Rewriting what an older redactor stored (issue 32): the version of the redactor the rows
//! were last redacted with, the text columns that can hold a secret, and the batched reads
//! and writes of them. Which text changes is the redactor's business (memkit-capture).

use rusqlite::{Connection, OptionalExtension, params_from_iter};

use crate::Result;

/// The `meta` key holding the redactor version every stored text has been redacted with.
const VERSION_KEY: &str = "redactor_version";

/// The redactor version the stored rows were last rewritten with (0: never, the rows are as
/// their writers redacted them).
pub fn version(conn: &Connection) -> Result<u32> {
    Ok(super::meta_get(conn, VERSION_KEY)?
        .and_then(|v| v.parse().ok())
        .unwrap_or(0))
}

pub fn set_version(conn: &Connection, v: u32) -> Result<()> {
    super::meta_put(conn, VERSION_KEY, &v.to_string())
}

/// How a column's text is redacted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// Plain text.
    Text,
    /// JSON (a payload, a list column): its strings are redacted, and values under keys that
    /// name a secret go whole.
    Json,
}

/// A table whose text columns can hold a secret.
#[derive(Debug)]
pub struct Table {
    pub name: &'static str,
    pub columns: &'static [(&'static str, Form)],
    /// The `embeddings.owner_kind` of its rows (their vector was made from the old text).
    pub owner: Option<&'static str>,
    /// Whether a rewrite moves `updated_at`: the BM25 index re-indexes observations by it.
    pub touch: bool,
}

use Form::{Json, Text};

/// Every stored text a secret can reach: the queue (payloads, raw responses included),
/// observations (notes included), session summaries, learnings, event_log details, stored
/// failures, function docstrings and project descriptions.
pub const TABLES: &[Table] = &[
    Table {
        name: "pending_queue",
        columns: &[
            ("payload", Json),
            ("files", Json),
            ("last_error", Text),
            ("skip_reason", Text),
        ],
        owner: None,
        touch: false,
    },
    Table {
        name: "observations",
        columns: &[
            ("title", Text),
            ("summary", Text),
            ("detail", Text),
            ("facts", Json),
            ("concepts", Json),
            ("tags", Json),
            ("files_read", Json),
            ("files_modified", Json),
            ("functions_changed", Json),
        ],
        owner: Some("observation"),
        touch: true,
    },
    Table {
        name: "sessions",
        columns: &[
            ("title", Text),
            ("summary", Text),
            ("last_assistant_message", Text),
            ("key_files", Json),
            ("key_decisions", Json),
        ],
        owner: Some("session"),
        touch: false,
    },
    Table {
        name: "learnings",
        columns: &[("content", Text), ("evidence", Text)],
        owner: Some("learning"),
        touch: false,
    },
    Table {
        name: "event_log",
        columns: &[("detail", Json)],
        owner: None,
        touch: false,
    },
    // Error recall prints a stored failure's line to the next session.
    Table {
        name: "failures",
        columns: &[("line", Text), ("signature", Text)],
        owner: None,
        touch: false,
    },
    // Docstrings and signatures are copied from the edited source, where keys get pasted.
    Table {
        name: "function_map",
        columns: &[("signature", Text), ("docstring", Text)],
        owner: None,
        touch: false,
    },
    Table {
        name: "projects",
        columns: &[("description", Text)],
        owner: None,
        touch: false,
    },
];

/// One row's text columns, in the order of its table's `columns`.
#[derive(Debug, Clone)]
pub struct Row {
    pub rowid: i64,
    pub texts: Vec<Option<String>>,
}

/// Up to `limit` rows of `t` after `rowid`, in rowid order.
pub fn rows_after(conn: &Connection, t: &Table, rowid: i64, limit: usize) -> Result<Vec<Row>> {
    let cols: Vec<&str> = t.columns.iter().map(|(c, _)| *c).collect();
    let sql = format!(
        "SELECT rowid, {} FROM {} WHERE rowid > ?1 ORDER BY rowid LIMIT ?2",
        cols.join(", "),
        t.name
    );
    let mut st = conn.prepare_cached(&sql)?;
    let rows = st
        .query_map(rusqlite::params![rowid, limit as i64], |r| {
            Ok(Row {
                rowid: r.get(0)?,
                texts: (1..=cols.len())
                    .map(|i| r.get::<_, Option<String>>(i))
                    .collect::<rusqlite::Result<_>>()?,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    Ok(rows)
}

/// Writes a row's new texts (NULL stays NULL) and drops the vectors made from the old ones,
/// so the embed stage makes them again. The FTS5 mirror of observations follows by trigger.
pub fn rewrite(conn: &Connection, t: &Table, row: &Row) -> Result<()> {
    let mut sets: Vec<String> = t
        .columns
        .iter()
        .enumerate()
        .map(|(i, (c, _))| format!("{c} = ?{}", i + 2))
        .collect();
    if t.touch {
        sets.push(format!("updated_at = ?{}", t.columns.len() + 2));
    }
    let sql = format!("UPDATE {} SET {} WHERE rowid = ?1", t.name, sets.join(", "));
    use rusqlite::types::Value;
    let text = |t: &Option<String>| t.clone().map_or(Value::Null, Value::Text);
    let mut values: Vec<Value> = vec![Value::Integer(row.rowid)];
    values.extend(row.texts.iter().map(text));
    if t.touch {
        values.push(Value::Text(super::now()));
    }
    let mut st = conn.prepare_cached(&sql)?;
    st.execute(params_from_iter(values.iter()))?;
    if let Some(kind) = t.owner {
        conn.prepare_cached("DELETE FROM embeddings WHERE owner_kind = ?1 AND owner_id = ?2")?
            .execute(rusqlite::params![kind, row.rowid])?;
    }
    Ok(())
}

/// Whether the table exists (a database opened without migrating may predate it).
pub fn has_table(conn: &Connection, name: &str) -> Result<bool> {
    Ok(conn
        .query_row(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1",
            [name],
            |_| Ok(()),
        )
        .optional()?
        .is_some())
}

/// Merges the FTS5 index's segments: a rewritten row's old terms stay in its old segments
/// until they are merged.
pub fn optimize_fts(conn: &Connection) -> Result<()> {
    conn.execute(
        "INSERT INTO observations_fts(observations_fts) VALUES ('optimize')",
        [],
    )?;
    Ok(())
}
