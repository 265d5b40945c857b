//! Re-redaction of what is stored (issue 32): rows an older redactor wrote keep the secrets it
//! did not know. This rewrites every stored text the current redactor changes, table by
//! table in rowid batches, each batch its own transaction, so a run killed halfway keeps what
//! it committed and the next run goes on (a row already rewritten is left alone: redacting
//! is idempotent). Counting only, with `dry_run`, writes nothing.

use std::borrow::Cow;

use rusqlite::Connection;
use serde_json::Value;

use memkit_core::Result;
use memkit_core::store::{self, redaction};
use redaction::{Form, Table};

use crate::redact;

/// Rows per transaction: short enough that hooks waiting on the write lock are not held up.
pub const BATCH: usize = 500;

/// How a run goes.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    pub dry_run: bool,
    /// Rows read per transaction.
    pub batch: usize,
    /// Stop after this many batches (a bounded run; the next one starts over and skips what
    /// is clean already).
    pub max_batches: Option<usize>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            dry_run: false,
            batch: BATCH,
            max_batches: None,
        }
    }
}

/// What a run changed (or, dry, would change).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rewritten {
    /// (table, rows read, rows changed), in the order of `redaction::TABLES`.
    pub tables: Vec<(&'static str, u64, u64)>,
    /// Every table was read to its end (false: stopped at `max_batches`).
    pub complete: bool,
}

impl Rewritten {
    pub fn changed(&self) -> u64 {
        self.tables.iter().map(|t| t.2).sum()
    }

    /// `observations 3, sessions 1` (the tables with changed rows), or `nothing changed`.
    pub fn summary(&self) -> String {
        let parts: Vec<String> = self
            .tables
            .iter()
            .filter(|t| t.2 > 0)
            .map(|(t, _, n)| format!("{t} {n}"))
            .collect();
        if parts.is_empty() {
            "nothing changed".into()
        } else {
            format!("rows changed: {}", parts.join(", "))
        }
    }

    /// Rows changed in `table`.
    pub fn of(&self, table: &str) -> u64 {
        self.tables.iter().find(|t| t.0 == table).map_or(0, |t| t.2)
    }
}

/// One column's text redacted by the current redactor; `None` when it stays as it is.
pub fn redact_column(text: &str, form: Form) -> Option<String> {
    if form == Form::Json
        && text.trim_start().starts_with(['{', '['])
        && let Ok(v) = serde_json::from_str::<Value>(text)
    {
        let mut r = v.clone();
        redact::redact_value(&mut r);
        return (r != v).then(|| r.to_string());
    }
    // A rule may rewrite a marker into itself (mysql's `-p[REDACTED:password]`): owned is not
    // changed.
    match redact::redact_str(text) {
        Cow::Owned(s) if s != text => Some(s),
        _ => None,
    }
}

/// The row with its texts redacted, when any changed.
fn redact_row(t: &Table, row: &redaction::Row) -> Option<redaction::Row> {
    let mut out = row.clone();
    let mut changed = false;
    for (text, (_, form)) in out.texts.iter_mut().zip(t.columns) {
        if let Some(new) = text.as_deref().and_then(|s| redact_column(s, *form)) {
            *text = Some(new);
            changed = true;
        }
    }
    changed.then_some(out)
}

/// Rewrites every stored text the current redactor changes. The caller records the new
/// redactor version once the run is `complete` and the indexes followed.
pub fn rewrite(conn: &Connection, opts: &Options) -> Result<Rewritten> {
    let mut out = Rewritten {
        complete: true,
        ..Rewritten::default()
    };
    let mut batches = 0;
    for t in redaction::TABLES {
        if !redaction::has_table(conn, t.name)? {
            continue;
        }
        let (mut read, mut changed, mut after) = (0u64, 0u64, 0i64);
        loop {
            if opts.max_batches.is_some_and(|m| batches >= m) {
                out.complete = false;
                break;
            }
            batches += 1;
            // Read and written under the write lock: a row cannot change between the two.
            let tx = store::begin_write(conn)?;
            let rows = redaction::rows_after(&tx, t, after, opts.batch.max(1))?;
            for row in &rows {
                if let Some(new) = redact_row(t, row) {
                    changed += 1;
                    if !opts.dry_run {
                        redaction::rewrite(&tx, t, &new)?;
                    }
                }
            }
            tx.commit()?;
            read += rows.len() as u64;
            match rows.last() {
                Some(r) if rows.len() >= opts.batch.max(1) => after = r.rowid,
                _ => break,
            }
        }
        out.tables.push((t.name, read, changed));
        if !out.complete {
            break;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_column_changes_only_where_a_secret_is() {
        let token = "ghp_0123456789abcdefghijABCDEFGHIJ012345";
        assert_eq!(redact_column("nothing secret here", Form::Text), None);
        assert_eq!(redact_column(r#"["a.rs","b.rs"]"#, Form::Json), None);
        let out = redact_column(&format!("use {token} now"), Form::Text).unwrap();
        assert!(!out.contains(token) && out.contains("[REDACTED:github_token]"));
        let json =
            format!(r#"{{"tool_response":{{"stdout":"{token}"}},"tool_use_id":"toolu_01"}}"#);
        let out = redact_column(&json, Form::Json).unwrap();
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["tool_use_id"], "toolu_01");
        assert_eq!(v["tool_response"]["stdout"], "[REDACTED:github_token]");
        // Redacted text is redacted already: a second pass changes nothing.
        assert_eq!(redact_column(&out, Form::Json), None);
        let once = redact_column("mysql -u root -pMyS3cretPw -h db", Form::Text).unwrap();
        assert_eq!(redact_column(&once, Form::Text), None, "{once}");
        // Text in a JSON column that is not JSON is redacted as text.
        assert!(redact_column(&format!("oops {token}"), Form::Json).is_some());
        // What an older redactor over-redacted stays as it is, never redacted further.
        for old in [
            "Password: [REDACTED:password] type=\"password\" name=\"password\">",
            "- Password: [REDACTED:password] Password]",
            "fetch('https://api.formspree.[REDACTED:high_entropy]')",
        ] {
            assert_eq!(redact_column(old, Form::Text), None, "{old}");
        }
    }
}
