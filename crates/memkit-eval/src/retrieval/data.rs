//! A retrieval set in the BEIR layout plus `scope`: `corpus.jsonl` (`{id, scope, text, title?,
//! date?, tags?}`), `queries.jsonl` (`{qid, scope, text, category?}`) and `qrels.tsv`
//! (`qid doc_id rel`, with or without a header). Scores are only as good as the data, so a bad
//! line is an error naming the file and the line, never skipped.

use std::collections::HashMap;
use std::path::Path;

use serde::Deserialize;

use memkit_core::{Error, Result};

#[derive(Debug, Clone, Deserialize)]
pub struct Doc {
    #[serde(deserialize_with = "id_text")]
    pub id: String,
    #[serde(default = "default_scope")]
    pub scope: String,
    pub text: String,
    #[serde(default)]
    pub title: Option<String>,
    /// `date_time` is what LoCoMo's conversion calls it.
    #[serde(default, alias = "date_time")]
    pub date: Option<String>,
    #[serde(default)]
    pub tags: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Query {
    #[serde(deserialize_with = "id_text")]
    pub qid: String,
    #[serde(default = "default_scope")]
    pub scope: String,
    pub text: String,
    #[serde(default)]
    pub category: Option<String>,
}

/// qid → doc id → relevance.
pub type Qrels = HashMap<String, HashMap<String, i64>>;

/// A set's three files.
pub struct Set {
    pub name: String,
    pub corpus: Vec<Doc>,
    pub queries: Vec<Query>,
    pub qrels: Qrels,
}

fn default_scope() -> String {
    "all".into()
}

/// Ids are often numbers in BEIR files: kept as their text.
fn id_text<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<String, D::Error> {
    match serde_json::Value::deserialize(d)? {
        serde_json::Value::String(s) => Ok(s),
        serde_json::Value::Number(n) => Ok(n.to_string()),
        other => Err(serde::de::Error::custom(format!(
            "an id must be a string or a number, not {other}"
        ))),
    }
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|e| Error::input(path.display().to_string(), None, e))
}

/// Every record of a JSONL file (blank lines skipped).
pub fn jsonl<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Vec<T>> {
    let name = path.display().to_string();
    let mut out = Vec::new();
    for (i, line) in read(path)?.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        out.push(serde_json::from_str(line).map_err(|e| Error::input(&name, Some(i + 1), e))?);
    }
    Ok(out)
}

/// `qid doc_id rel` lines, tab- or space-separated; a first line naming the columns is a header.
pub fn qrels(path: &Path) -> Result<Qrels> {
    let name = path.display().to_string();
    let mut out = Qrels::new();
    for (i, line) in read(path)?.lines().enumerate() {
        let cols: Vec<&str> = line.split_whitespace().collect();
        if cols.is_empty() || (i == 0 && cols.first() == Some(&"qid")) {
            continue;
        }
        // TREC qrels have an iteration column: qid 0 doc rel.
        let (q, d, r) = match cols[..] {
            [q, d, r] => (q, d, r),
            [q, _, d, r] => (q, d, r),
            _ => {
                return Err(Error::input(
                    &name,
                    Some(i + 1),
                    "expected qid, doc_id and rel",
                ));
            }
        };
        let rel: i64 = r
            .parse()
            .map_err(|_| Error::input(&name, Some(i + 1), format!("rel {r:?} is not a number")))?;
        out.entry(q.to_string())
            .or_default()
            .insert(d.to_string(), rel);
    }
    Ok(out)
}

impl Set {
    pub fn load(name: &str, corpus: &Path, queries: &Path, qrels_path: &Path) -> Result<Set> {
        Ok(Set {
            name: name.to_string(),
            corpus: jsonl(corpus)?,
            queries: jsonl(queries)?,
            qrels: qrels(qrels_path)?,
        })
    }
}
