//! mem-ast: the Python function map. Filter mode parses files and prints what they define and
//! call; database mode (no FILE) keeps the map of the files Claude wrote or edited.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::{CommandFactory, Parser};

use crate::ast::{self, FunctionDiff, Snapshot, mermaid};
use crate::cli::{Common, Format, Io, Outcome};
use crate::config::{self, Config};
use crate::{Result, store};
use memkit_codemap::files;
use memkit_codemap::records::{self, DiffRecord, EdgeRecord, FunctionRecord, Printed};

pub const TOOL: crate::cli::Tool = crate::cli::Tool {
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

pub fn run(args: Args, io: &mut Io) -> Result<Outcome> {
    if let Some(pair) = &args.diff {
        return diff(&args, &pair[0], &pair[1], io);
    }
    if args.files.is_empty() && args.paths_from.is_none() {
        return database(io);
    }
    filter(&args, io)
}

/// Database mode: the function map of what sessions wrote or edited since the last run.
fn database(io: &mut Io) -> Result<Outcome> {
    let start = Instant::now();
    let cfg = Config::load(&config::data_home())?;
    let path = cfg.home.db();
    if store::open_if_present(&path)?.is_none() {
        return Ok(io.no_memories(&path));
    }
    let mut conn = store::open(&path)?;
    let reports = memkit_codemap::database::update(&mut conn)?;
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    for r in &reports {
        *counts.entry(r.status.to_string()).or_default() += 1;
        *counts.entry("functions".into()).or_default() += r.functions as u64;
        *counts.entry("edges".into()).or_default() += r.edges as u64;
        if let Some(reason) = &r.reason {
            io.warn(format!("{}: {reason}", r.path));
        }
        io.record(r)?;
    }
    counts.insert("files".into(), reports.len() as u64);
    io.summary(counts, start)?;
    Ok(nothing_found_if(reports.is_empty()))
}

fn filter(args: &Args, io: &mut Io) -> Result<Outcome> {
    let start = Instant::now();
    let roots = files::roots(args.files.clone(), args.paths_from.as_deref())?;
    let records = matches!(io.format(), Format::Jsonl | Format::Json);
    // Without edges nothing printed depends on the other files but the module name: each
    // file's function records are written on the worker that parsed it and its definitions
    // dropped there (a tree's worth of them cost more memory, and faulting it in more time,
    // than the lines).
    if records && !args.calls && !args.mermaid {
        let (printed, walked) = files::walk(&roots, &args.path, Printed::new);
        let files = printed.iter().map(|f| (&f.snap, f.functions, f.calls));
        let counts = files::tally(&walked, files, |n| io.notice(&n));
        let modules = files::Modules::default();
        for f in &printed {
            io.record_lines(&f.lines)?;
            io.record(&f.file_record(&modules.name(&f.snap.path)))?;
        }
        io.summary(counts.map(), start)?;
        std::mem::forget(printed);
        return Ok(nothing_found_if(counts.is_empty()));
    }
    let parsed = files::parse(&roots, &args.path);
    let snaps = &parsed.snaps;
    let files = snaps.iter().map(|s| (s, s.functions.len(), s.calls.len()));
    let counts = files::tally(&parsed.walked, files, |n| io.notice(&n));
    if args.mermaid {
        let diffs: Vec<FunctionDiff> = snaps.iter().flat_map(|s| ast::diff(Some(s), s)).collect();
        let refs: Vec<&Snapshot> = snaps.iter().collect();
        io.out
            .write_all(mermaid::flowchart(&diffs, &refs, true).as_bytes())?;
    } else if records {
        records::jsonl_batches(snaps, &parsed.modules, args.calls, |lines| {
            io.record_lines(lines)
        })?;
    } else {
        let rows: Vec<FunctionRecord> = snaps
            .iter()
            .flat_map(|s| s.functions.iter().map(|f| FunctionRecord::new(&s.path, f)))
            .collect();
        io.listing(
            &rows,
            &["path", "line_start", "kind", "qualname", "signature"],
        )?;
        if args.calls {
            let edges: Vec<EdgeRecord> = snaps
                .iter()
                .flat_map(|s| s.calls.iter().map(|c| EdgeRecord::new(&s.path, c)))
                .collect();
            io.listing(&edges, &["path", "line", "caller", "resolution", "target"])?;
        }
    }
    if !args.mermaid {
        io.summary(counts.map(), start)?;
    }
    let outcome = nothing_found_if(snaps.is_empty());
    // The process ends here: freeing every snapshot one by one would cost it more than exiting.
    std::mem::forget(parsed);
    Ok(outcome)
}

fn nothing_found_if(empty: bool) -> Outcome {
    if empty {
        Outcome::NothingFound
    } else {
        Outcome::Ok
    }
}

fn diff(args: &Args, old: &Path, new: &Path, io: &mut Io) -> Result<Outcome> {
    let old_s = files::load(old, &args.path)?;
    let mut new_s = files::load(new, &args.path)?;
    // The diff is of one file: the new path names it.
    let diffs = ast::diff(Some(&old_s), &new_s);
    new_s.path = diffs.first().map_or(new_s.path.clone(), |d| d.path.clone());
    if args.mermaid {
        io.out
            .write_all(mermaid::flowchart(&diffs, &[&new_s], args.all).as_bytes())?;
        return Ok(Outcome::Ok);
    }
    let recs: Vec<DiffRecord> = diffs.iter().map(|diff| DiffRecord { diff }).collect();
    io.listing(
        &recs,
        &["change", "qualname", "kind", "signature", "line_start"],
    )?;
    Ok(nothing_found_if(
        diffs.iter().all(|d| d.change == ast::Change::Unchanged),
    ))
}
