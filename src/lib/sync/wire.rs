//! What the sync remote holds: one line per version of a record, in files each machine alone
//! appends to (`<project key>/<name>/<yyyy-mm>.jsonl`), and one file per machine naming it
//! (`.memkit/machines/<name>.json`). A line is a record on the wire (`"type":"memory"`): a
//! `put` (the record as it now is; a later put of the same global id supersedes it) or a
//! `forget` (a tombstone). Nothing is ever rewritten.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::record::VERSION;

/// Where the machines' files are.
pub const MACHINES: &str = ".memkit/machines";

/// Who writes: a database (its id, which every global id starts with) and its label.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Me {
    pub origin: String,
    pub name: String,
}

/// One line of a machine's file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct Line {
    /// `put` or `forget`.
    pub op: String,
    /// The record's global id: its database's id and its row there.
    pub gid: String,
    /// The id of the database that wrote it.
    pub origin: String,
    /// That machine's `sync.name`.
    pub name: String,
    /// The project's key (its normalised origin URL or root commit).
    pub project: String,
    /// `observation`, `session` or `learning`.
    pub kind: String,
    /// Its row in the database that wrote it (an id, or a session's id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local: Option<String>,
    /// When the line was written.
    pub at: String,
    /// The record (a put only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
}
memkit_core::record!(Line = "memory", Deserialize);

/// An observation (or a note) as it travels: files under the project's root relative to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObservationBody {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(rename = "type")]
    pub kind: String,
    pub title: String,
    #[serde(default)]
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
    pub is_manual: bool,
    pub created_at: String,
}

/// A session's summary as it travels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionBody {
    pub session_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    pub summary: String,
    #[serde(default)]
    pub key_files: Vec<String>,
    #[serde(default)]
    pub key_decisions: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<String>,
}

/// A learning as it travels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LearningBody {
    pub content: String,
    pub category: String,
    pub confidence: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
    #[serde(default)]
    pub is_manual: bool,
    #[serde(default = "yes")]
    pub is_active: bool,
    pub created_at: String,
}

fn yes() -> bool {
    true
}

/// What a line of a remote file turned out to be.
#[derive(Debug)]
pub enum Read {
    Line(Box<Line>),
    /// Written by a newer memkit (its `v`): left alone, counted.
    Newer(u64),
    /// Not a memory line this memkit can read, and why.
    Malformed(String),
}

/// Reads one line of a remote file.
pub fn read(text: &str) -> Read {
    let v: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => return Read::Malformed(format!("not JSON ({e})")),
    };
    if v.get("type").and_then(Value::as_str) != Some("memory") {
        return Read::Malformed("not a memory record".into());
    }
    match v.get("v").and_then(Value::as_u64) {
        Some(n) if n > u64::from(VERSION) => return Read::Newer(n),
        Some(_) => {}
        None => return Read::Malformed("no version".into()),
    }
    let line = match Line::deserialize(v) {
        Ok(l) => l,
        Err(e) => return Read::Malformed(e.to_string()),
    };
    let known = crate::store::sync::KINDS.contains(&line.kind.as_str());
    match line.op.as_str() {
        _ if !known => Read::Malformed(format!("unknown kind {:?}", line.kind)),
        _ if line.origin.is_empty() || !line.gid.starts_with(&format!("{}:", line.origin)) => {
            // A global id names the database that made the record: a line speaking for
            // another's record is no line of its writer's.
            Read::Malformed("a global id not of its origin".into())
        }
        "put" if line.body.is_none() => Read::Malformed("a put without a body".into()),
        "put" | "forget" => Read::Line(Box::new(line)),
        op => Read::Malformed(format!("unknown op {op:?}")),
    }
}

/// The hash a record of `kind` is compared by: what a newer version must change to be sent.
/// A learning's confidence moves with every session that sees it again; it travels with the
/// learning but is no change of its own.
pub fn hash(kind: &str, body: &Value) -> String {
    let text = match (kind, body) {
        ("learning", Value::Object(o)) => {
            let mut o = o.clone();
            o.remove("confidence");
            Value::Object(o).to_string()
        }
        _ => body.to_string(),
    };
    crate::embed::sha256_hex(&text)[..32].to_string()
}

/// The global id of a row: its database's id, its kind and id, and (ids being reused once a
/// row is deleted) when it was made.
pub fn gid(origin: &str, kind: &str, local: &str, born: &str) -> String {
    match kind {
        "session" => format!("{origin}:s:{local}"),
        _ => {
            let letter = if kind == "observation" { 'o' } else { 'l' };
            let h = &crate::embed::sha256_hex(born)[..8];
            format!("{origin}:{letter}{local}-{h}")
        }
    }
}

/// A machine's file naming it, relative to the clone.
pub fn machine_file(name: &str) -> String {
    format!("{MACHINES}/{name}.json")
}

/// A machine's own file for `key` this month.
pub fn file_of(key: &str, name: &str, at: &str) -> String {
    let month = at.get(..7).unwrap_or("0000-00");
    format!("{key}/{name}/{month}.jsonl")
}

/// A remote file's (project key, machine name), when its path is one of the machines' files.
pub fn parse_path(path: &str) -> Option<(&str, &str)> {
    let file = path.rsplit('/').next()?;
    let month = file.strip_suffix(".jsonl")?;
    let ok = month.len() == 7
        && month.as_bytes()[4] == b'-'
        && month
            .bytes()
            .enumerate()
            .all(|(i, b)| i == 4 || b.is_ascii_digit());
    if !ok || path.starts_with('.') {
        return None;
    }
    let dir = &path[..path.len() - file.len() - 1];
    let (key, name) = dir.rsplit_once('/')?;
    (!key.is_empty() && !name.is_empty()).then_some((key, name))
}

/// A machine's file (`.memkit/machines/<name>.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct Machine {
    pub name: String,
    pub origin: String,
    /// When it first synced.
    pub since: String,
}
memkit_core::record!(Machine = "machine", Deserialize);

impl Machine {
    pub fn parse(text: &str) -> Option<Machine> {
        serde_json::from_str::<Value>(text)
            .ok()
            .and_then(|v| Machine::deserialize(v).ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_round_trips_and_bad_ones_are_told_apart() {
        let l = Line {
            op: "put".into(),
            gid: "ab:o1-00".into(),
            origin: "ab".into(),
            name: "laptop".into(),
            project: "github.com/a/b".into(),
            kind: "observation".into(),
            local: Some("1".into()),
            at: "2026-03-01T00:00:00.000Z".into(),
            body: Some(serde_json::json!({"title": "t"})),
        };
        let text = serde_json::to_string(&l).unwrap();
        assert!(
            text.starts_with(r#"{"type":"memory","v":1,"op":"put""#),
            "{text}"
        );
        match read(&text) {
            Read::Line(back) => assert_eq!(*back, l),
            other => panic!("{other:?}"),
        }
        let newer = text.replace(r#""v":1"#, r#""v":7"#);
        assert!(matches!(read(&newer), Read::Newer(7)));
        for bad in [
            "{",
            "[]",
            r#"{"type":"hit","v":1}"#,
            &text.replace(r#""op":"put""#, r#""op":"merge""#),
            &text.replace("observation", "capture"),
            r#"{"type":"memory","v":1,"op":"put","gid":"o:s:1","origin":"o","name":"n","project":"p","kind":"session","at":"t"}"#,
            &text.replace(r#""gid":"ab:"#, r#""gid":"cd:"#),
        ] {
            assert!(matches!(read(bad), Read::Malformed(_)), "{bad}");
        }
    }

    #[test]
    fn a_learning_seen_again_is_no_new_version() {
        let l = serde_json::json!({"content": "c", "category": "convention", "confidence": 0.5});
        let seen =
            serde_json::json!({"content": "c", "category": "convention", "confidence": 0.59});
        assert_eq!(hash("learning", &l), hash("learning", &seen));
        assert_ne!(hash("observation", &l), hash("observation", &seen));
    }

    #[test]
    fn paths_name_key_and_machine() {
        assert_eq!(
            parse_path("github.com/a/b/laptop/2026-03.jsonl"),
            Some(("github.com/a/b", "laptop"))
        );
        assert_eq!(parse_path(".memkit/machines/laptop.json"), None);
        assert_eq!(parse_path("laptop/2026-03.jsonl"), None);
        assert_eq!(parse_path("k/n/2026-3.jsonl"), None);
        assert_eq!(
            file_of("k/x", "n", "2026-03-01T00:00:00Z"),
            "k/x/n/2026-03.jsonl"
        );
        assert_ne!(
            gid("d", "observation", "17", "2026-01-01"),
            gid("d", "observation", "17", "2026-01-02")
        );
    }
}
