//! mem-ast's records on the wire.

use std::collections::BTreeMap;

use serde::Serialize;

use memkit_ast::{Call, Function, FunctionDiff, Snapshot};

/// A definition on the wire (`"type":"function"`).
#[derive(Serialize)]
pub struct FunctionRecord<'a> {
    pub r#type: &'static str,
    pub v: u32,
    pub path: &'a str,
    #[serde(flatten)]
    pub function: &'a Function,
}

#[derive(Serialize)]
pub struct FileRecord<'a> {
    pub r#type: &'static str,
    pub v: u32,
    pub path: &'a str,
    pub module: &'a str,
    pub functions: usize,
    pub calls: usize,
    pub imports: BTreeMap<&'a str, &'a str>,
    pub lines: u32,
    pub bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parse_error: Option<&'a str>,
}

#[derive(Serialize)]
pub struct EdgeRecord<'a> {
    pub r#type: &'static str,
    pub v: u32,
    pub path: &'a str,
    #[serde(flatten)]
    pub call: &'a Call,
}

#[derive(Serialize)]
pub struct DiffRecord<'a> {
    pub r#type: &'static str,
    pub v: u32,
    #[serde(flatten)]
    pub diff: &'a FunctionDiff,
}

pub fn file_record<'a>(s: &'a Snapshot, module: &'a str) -> FileRecord<'a> {
    FileRecord {
        r#type: "file",
        v: 1,
        path: &s.path,
        module,
        functions: s.functions.len(),
        calls: s.calls.len(),
        imports: s
            .imports
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect(),
        lines: s.lines,
        bytes: s.bytes,
        parse_error: s.parse_error.as_deref(),
    }
}

impl<'a> FunctionRecord<'a> {
    pub fn new(path: &'a str, function: &'a Function) -> FunctionRecord<'a> {
        FunctionRecord {
            r#type: "function",
            v: 1,
            path,
            function,
        }
    }
}

impl<'a> EdgeRecord<'a> {
    pub fn new(path: &'a str, call: &'a Call) -> EdgeRecord<'a> {
        EdgeRecord {
            r#type: "edge",
            v: 1,
            path,
            call,
        }
    }
}
