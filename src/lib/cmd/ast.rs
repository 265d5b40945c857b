//! mem-ast: the Python function map. Filter mode parses files and prints what they define and
//! call; database mode (no FILE) keeps the map of the files Claude wrote or edited.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::{CommandFactory, Parser};
use rayon::prelude::*;
use serde::Serialize;

use crate::ast::{self, Call, Function, FunctionDiff, Snapshot, mermaid, project};
use crate::cli::{Common, Format, Io, Outcome};
use crate::{Error, Result};

pub const TOOL: super::Tool = super::Tool {
    name: "mem-ast",
    command: || Args::command(),
    details: DETAILS,
    examples: &[
        (
            "mem-ast",
            "Update the function map of the Python files sessions wrote or edited.",
        ),
        (
            "mem-ast src/ | jq -r 'select(.type==\"function\") | .qualname'",
            "Every definition under src/.",
        ),
        (
            "mem-ast --calls app/auth.py",
            "Definitions and the calls they make, resolved.",
        ),
        (
            "git show HEAD~1:app/auth.py | mem-ast --diff - app/auth.py",
            "What the last commit changed in a file, by function.",
        ),
        (
            "mem-ast --diff old.py new.py --mermaid > change.mmd",
            "The change as a Mermaid diagram.",
        ),
        (
            "git ls-files '*.py' | mem-ast --paths-from -",
            "Parse the files a list names.",
        ),
    ],
};

const DETAILS: &str = r#"
Filter mode (FILE, directories, `-` or --paths-from): parses Python (3.12+ syntax: match, PEP 695
type parameters, `type` aliases, nested f-strings) with ruff's parser, in parallel, no Python
needed. Directories are walked with the rules of .gitignore, .ignore and hidden files; virtualenvs
(a directory holding pyvenv.cfg, or named .venv, venv, site-packages), __pycache__, .tox and
node_modules are skipped. Other files than .py/.pyi are skipped and counted (skipped_non_python).
Output: one function record per definition (qualname such as AuthService.authenticate, nested
ones included; kind function, method, async_function, async_method or class; parent_class;
signature with types and defaults, without self/cls; decorators as written; the docstring's first
line; line_start and line_end as Python's ast counts them; body_hash), then one file record per
file (functions, calls, imports: local name -> qualified name, relative imports as __rel1__.models;
parse_error when it does not parse), with --calls one edge record per call (caller, callee,
resolution direct|self_method|import|unresolved, target, target_file, confidence, line), and a
summary record (files, functions, edges, errors, skipped_non_python, bytes). Builtins, logging
calls and the methods of lists, dicts, sets and strings are left out as noise. Imports are followed
across the files of one run: relative imports and __init__.py re-exports lead to the defining
file (target_file).

The body hash is SHA-256 of the definition's normal form (ruff's range-free AST; docstring left
out; a nested def counts by name), the first 16 hex digits: formatting, comments and docstrings
do not change it, logic does. --diff OLD NEW prints a function_diff record per definition: new,
modified (body hash or signature changed), deleted or unchanged; a name defined twice counts by its
last definition, as in Python. --mermaid prints a Mermaid flowchart instead: the changed
definitions (all with --all) and what they call; new green, modified yellow, deleted red,
unresolved calls dashed.

A file that cannot be read or parsed (not UTF-8 and no Latin-1 coding cookie, a NUL byte, a
syntax error, nesting deeper than Python allows, a symlink loop) gets a warning and a file record
with parse_error; the others go on. Exit status 1 when no Python file was found.
"#;

/// The Python function map: definitions, calls, diffs and diagrams.
#[derive(Debug, Parser)]
#[command(name = "mem-ast", version, long_about = None)]
pub struct Args {
    /// Python files or directories (`-`: source on stdin, named by --path). None: database mode.
    pub files: Vec<PathBuf>,
    /// Read the paths to parse from this file, one per line (`-`: stdin).
    #[arg(long, value_name = "FILE")]
    pub paths_from: Option<PathBuf>,
    /// The name of the source read from stdin (`-`).
    #[arg(long, value_name = "NAME", default_value = "<stdin>")]
    pub path: String,
    /// Add one edge record per call.
    #[arg(long)]
    pub calls: bool,
    /// Compare two versions of a file (`-` for one of them: stdin).
    #[arg(long, num_args = 2, value_names = ["OLD", "NEW"])]
    pub diff: Option<Vec<PathBuf>>,
    /// Print a Mermaid flowchart instead of records.
    #[arg(long)]
    pub mermaid: bool,
    /// With --mermaid: draw unchanged definitions too.
    #[arg(long)]
    pub all: bool,
    #[command(flatten)]
    pub common: Common,
}

/// A definition on the wire (`"type":"function"`).
#[derive(Serialize)]
struct FunctionRecord<'a> {
    r#type: &'static str,
    v: u32,
    path: &'a str,
    #[serde(flatten)]
    function: &'a Function,
}

#[derive(Serialize)]
struct FileRecord<'a> {
    r#type: &'static str,
    v: u32,
    path: &'a str,
    module: &'a str,
    functions: usize,
    calls: usize,
    imports: BTreeMap<&'a str, &'a str>,
    lines: u32,
    bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    parse_error: Option<&'a str>,
}

#[derive(Serialize)]
struct EdgeRecord<'a> {
    r#type: &'static str,
    v: u32,
    path: &'a str,
    #[serde(flatten)]
    call: &'a Call,
}

#[derive(Serialize)]
struct DiffRecord<'a> {
    r#type: &'static str,
    v: u32,
    #[serde(flatten)]
    diff: &'a FunctionDiff,
}

pub fn run(args: Args, io: &mut Io) -> Result<Outcome> {
    if let Some(pair) = &args.diff {
        return diff(&args, &pair[0], &pair[1], io);
    }
    if args.files.is_empty() && args.paths_from.is_none() {
        return crate::codemap::run_database(io, args.common.verbose > 0);
    }
    filter(&args, io)
}

/// The bytes of `path`, or of stdin for `-`.
fn read(path: &Path) -> std::io::Result<Vec<u8>> {
    if path == Path::new("-") {
        let mut buf = Vec::new();
        std::io::stdin().lock().read_to_end(&mut buf)?;
        Ok(buf)
    } else {
        std::fs::read(path)
    }
}

fn is_python(p: &Path) -> bool {
    matches!(p.extension().and_then(|e| e.to_str()), Some("py" | "pyi"))
}

/// Directories a developer never wants parsed, whatever .gitignore says.
fn skipped_dir(p: &Path) -> bool {
    let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    matches!(
        name,
        "__pycache__"
            | ".venv"
            | "venv"
            | "site-packages"
            | ".tox"
            | ".nox"
            | "node_modules"
            | ".git"
    ) || p.join("pyvenv.cfg").is_file()
}

/// The inputs expanded: every Python file (`-` for stdin), the count of other files skipped,
/// and the walk's errors as (root, error).
struct Inputs {
    files: Vec<PathBuf>,
    skipped: u64,
    errors: Vec<(String, String)>,
}

fn inputs(args: &Args) -> Result<Inputs> {
    let mut roots = args.files.clone();
    if let Some(list) = &args.paths_from {
        let text = read(list).map_err(|e| Error::input(list.display().to_string(), None, e))?;
        roots.extend(
            String::from_utf8_lossy(&text)
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(PathBuf::from),
        );
    }
    let mut files = Vec::new();
    let mut skipped = 0;
    let mut errors = Vec::new();
    for root in roots {
        if root == Path::new("-") || !root.is_dir() {
            if root == Path::new("-") || is_python(&root) {
                files.push(root);
            } else {
                skipped += 1;
            }
            continue;
        }
        let walk = ignore::WalkBuilder::new(&root)
            .follow_links(true)
            .filter_entry(|e| !(e.file_type().is_some_and(|t| t.is_dir()) && skipped_dir(e.path())))
            .build();
        let mut found = Vec::new();
        for entry in walk {
            match entry {
                Ok(e) if e.file_type().is_some_and(|t| t.is_file()) => {
                    if is_python(e.path()) {
                        found.push(e.into_path());
                    } else {
                        skipped += 1;
                    }
                }
                Ok(_) => {}
                Err(e) => errors.push((root.display().to_string(), e.to_string())),
            }
        }
        found.sort();
        files.extend(found);
    }
    Ok(Inputs {
        files,
        skipped,
        errors,
    })
}

fn snapshot_of(path: &Path, stdin_name: &str) -> Snapshot {
    let name = if path == Path::new("-") {
        stdin_name.to_string()
    } else {
        let p = path.display().to_string();
        p.strip_prefix("./").map(str::to_string).unwrap_or(p)
    };
    match read(path) {
        Ok(bytes) => ast::snapshot(&name, &bytes),
        Err(e) => Snapshot {
            path: name,
            parse_error: Some(format!("cannot read: {e}")),
            ..Snapshot::default()
        },
    }
}

/// Module names from the directories' `__init__.py` files.
fn modules(snaps: &[Snapshot]) -> Vec<String> {
    snaps
        .iter()
        .map(|s| project::module_name(&s.path, |d| Path::new(d).join("__init__.py").is_file()))
        .collect()
}

fn filter(args: &Args, io: &mut Io) -> Result<Outcome> {
    let start = Instant::now();
    let Inputs {
        files,
        skipped,
        errors: walk_errors,
    } = inputs(args)?;
    let stdin_name = args.path.as_str();
    let mut snaps: Vec<Snapshot> = files
        .par_iter()
        .map(|p| snapshot_of(p, stdin_name))
        .collect();
    let modules = modules(&snaps);
    project::link(&mut snaps, &modules);
    let mut errors = walk_errors.len() as u64;
    for (root, e) in &walk_errors {
        io.warn(format!("{root}: {e}"));
    }
    for s in &snaps {
        if let Some(e) = &s.parse_error {
            errors += 1;
            io.warn(format!("{}: {e}", s.path));
        }
    }
    if args.mermaid {
        let diffs: Vec<FunctionDiff> = snaps.iter().flat_map(|s| ast::diff(Some(s), s)).collect();
        let refs: Vec<&Snapshot> = snaps.iter().collect();
        io.out
            .write_all(mermaid::flowchart(&diffs, &refs, true).as_bytes())?;
    } else if matches!(io.format(), Format::Jsonl | Format::Json) {
        for (s, m) in snaps.iter().zip(&modules) {
            for f in &s.functions {
                io.record(&FunctionRecord {
                    r#type: "function",
                    v: 1,
                    path: &s.path,
                    function: f,
                })?;
            }
            if args.calls {
                for c in &s.calls {
                    io.record(&EdgeRecord {
                        r#type: "edge",
                        v: 1,
                        path: &s.path,
                        call: c,
                    })?;
                }
            }
            io.record(&file_record(s, m))?;
        }
    } else {
        let rows: Vec<FunctionRecord> = snaps
            .iter()
            .flat_map(|s| {
                s.functions.iter().map(|f| FunctionRecord {
                    r#type: "function",
                    v: 1,
                    path: &s.path,
                    function: f,
                })
            })
            .collect();
        io.listing(
            &rows,
            &["path", "line_start", "kind", "qualname", "signature"],
        )?;
        if args.calls {
            let edges: Vec<EdgeRecord> = snaps
                .iter()
                .flat_map(|s| {
                    s.calls.iter().map(|c| EdgeRecord {
                        r#type: "edge",
                        v: 1,
                        path: &s.path,
                        call: c,
                    })
                })
                .collect();
            io.listing(&edges, &["path", "line", "caller", "resolution", "target"])?;
        }
    }
    let mut counts = BTreeMap::new();
    counts.insert("files".into(), snaps.len() as u64);
    counts.insert(
        "functions".into(),
        snaps.iter().map(|s| s.functions.len() as u64).sum(),
    );
    counts.insert(
        "edges".into(),
        snaps.iter().map(|s| s.calls.len() as u64).sum(),
    );
    counts.insert("errors".into(), errors);
    counts.insert("skipped_non_python".into(), skipped);
    counts.insert("bytes".into(), snaps.iter().map(|s| s.bytes).sum());
    if !args.mermaid {
        io.summary(counts, start)?;
    }
    Ok(if snaps.is_empty() {
        Outcome::NothingFound
    } else {
        Outcome::Ok
    })
}

fn file_record<'a>(s: &'a Snapshot, module: &'a str) -> FileRecord<'a> {
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

fn diff(args: &Args, old: &Path, new: &Path, io: &mut Io) -> Result<Outcome> {
    let load = |p: &Path| -> Result<Snapshot> {
        let bytes = read(p).map_err(|e| Error::input(p.display().to_string(), None, e))?;
        let name = if p == Path::new("-") {
            args.path.clone()
        } else {
            p.display().to_string()
        };
        let s = ast::snapshot(&name, &bytes);
        if let Some(e) = &s.parse_error {
            return Err(Error::input(name, None, e));
        }
        Ok(s)
    };
    let old_s = load(old)?;
    let mut new_s = load(new)?;
    // The diff is of one file: the new path names it.
    let diffs = ast::diff(Some(&old_s), &new_s);
    new_s.path = diffs.first().map_or(new_s.path.clone(), |d| d.path.clone());
    if args.mermaid {
        io.out
            .write_all(mermaid::flowchart(&diffs, &[&new_s], args.all).as_bytes())?;
        return Ok(Outcome::Ok);
    }
    let recs: Vec<DiffRecord> = diffs
        .iter()
        .map(|d| DiffRecord {
            r#type: "function_diff",
            v: 1,
            diff: d,
        })
        .collect();
    io.listing(
        &recs,
        &["change", "qualname", "kind", "signature", "line_start"],
    )?;
    Ok(
        if diffs.iter().any(|d| d.change != ast::Change::Unchanged) {
            Outcome::Ok
        } else {
            Outcome::NothingFound
        },
    )
}
