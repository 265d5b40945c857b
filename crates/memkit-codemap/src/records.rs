//! mem-ast's records on the wire.

use std::collections::BTreeMap;

use rayon::prelude::*;
use serde::Serialize;

use memkit_ast::{Call, Function, FunctionDiff, Snapshot};

/// A definition on the wire (`"type":"function"`).
#[derive(Serialize)]
#[serde(remote = "FunctionRecord")]
pub struct FunctionRecord<'a> {
    pub path: &'a str,
    #[serde(flatten)]
    pub function: &'a Function,
}
memkit_core::record!(FunctionRecord<'a> = "function");

#[derive(Serialize)]
#[serde(remote = "FileRecord")]
pub struct FileRecord<'a> {
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
memkit_core::record!(FileRecord<'a> = "file");

#[derive(Serialize)]
#[serde(remote = "EdgeRecord")]
pub struct EdgeRecord<'a> {
    pub path: &'a str,
    #[serde(flatten)]
    pub call: &'a Call,
}
memkit_core::record!(EdgeRecord<'a> = "edge");

#[derive(Serialize)]
#[serde(remote = "DiffRecord")]
pub struct DiffRecord<'a> {
    #[serde(flatten)]
    pub diff: &'a FunctionDiff,
}
memkit_core::record!(DiffRecord<'a> = "function_diff");

pub fn file_record<'a>(s: &'a Snapshot, module: &'a str) -> FileRecord<'a> {
    FileRecord {
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
        FunctionRecord { path, function }
    }
}

impl<'a> EdgeRecord<'a> {
    pub fn new(path: &'a str, call: &'a Call) -> EdgeRecord<'a> {
        EdgeRecord { path, call }
    }
}

fn line<T: Serialize>(out: &mut Vec<u8>, rec: &T) {
    serde_json::to_writer(&mut *out, rec).expect("records serialize to JSON");
    out.push(b'\n');
}

/// A file's definitions as JSON lines, then with `calls` one edge per call.
fn definition_lines(s: &Snapshot, calls: bool) -> Vec<u8> {
    let mut out =
        Vec::with_capacity(256 * (1 + s.functions.len() + calls as usize * s.calls.len()));
    for f in &s.functions {
        line(&mut out, &FunctionRecord::new(&s.path, f));
    }
    if calls {
        for c in &s.calls {
            line(&mut out, &EdgeRecord::new(&s.path, c));
        }
    }
    out
}

/// A file's records as JSON lines, as mem-ast prints them: its definitions, with `calls` one
/// edge per call, then the file record.
pub fn jsonl(s: &Snapshot, module: &str, calls: bool) -> Vec<u8> {
    let mut out = definition_lines(s, calls);
    line(&mut out, &file_record(s, module));
    out
}

/// A file whose definitions were written as JSON lines on the worker that parsed it, and its
/// snapshot without its definitions and calls: a run that prints no edges needs nothing else
/// from them, and keeping a tree's worth of them would cost more memory than the lines.
pub struct Printed {
    pub snap: Snapshot,
    pub functions: usize,
    pub calls: usize,
    /// The function records, one per line.
    pub lines: Vec<u8>,
}

impl Printed {
    pub fn new(mut snap: Snapshot) -> Printed {
        let lines = definition_lines(&snap, false);
        let (functions, calls) = (snap.functions.len(), snap.calls.len());
        snap.functions = Vec::new();
        snap.calls = Vec::new();
        Printed {
            snap,
            functions,
            calls,
            lines,
        }
    }

    /// The file record, printed after `lines`.
    pub fn file_record<'a>(&'a self, module: &'a str) -> FileRecord<'a> {
        let mut rec = file_record(&self.snap, module);
        (rec.functions, rec.calls) = (self.functions, self.calls);
        rec
    }
}

/// The records of many files as JSON lines, in their order: written on every core a batch of
/// files at a time, each batch handed to `write` whole.
pub fn jsonl_batches<E>(
    snaps: &[Snapshot],
    modules: &[String],
    calls: bool,
    mut write: impl FnMut(&[u8]) -> Result<(), E>,
) -> Result<(), E> {
    const BATCH: usize = 256;
    for (s, m) in snaps.chunks(BATCH).zip(modules.chunks(BATCH)) {
        let lines: Vec<Vec<u8>> = s
            .par_iter()
            .zip(m)
            .map(|(s, m)| jsonl(s, m, calls))
            .collect();
        for l in &lines {
            write(l)?;
        }
    }
    Ok(())
}
