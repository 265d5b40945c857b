//! mem-ast's database mode (a stage of mem-pipeline, after compression): the Python files that
//! Write, Edit and MultiEdit calls touched since the last run are parsed as they are on disk (or
//! from the content a Write carried when the file is gone), stored as the session's snapshot of
//! the file with each definition's change against the file's previous session, and the
//! observations made from those calls get `functions_changed` from that diff instead of the
//! LLM's guess.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use memkit_ast::{self as ast, Change, Function, Kind, Snapshot, project};
use memkit_core::Result;
use memkit_core::store::{self, functions as fmap};

/// Files above these are skipped with a reason: generated code, vendored bundles.
pub const MAX_BYTES: u64 = 1 << 20;
pub const MAX_FUNCTIONS: usize = 500;

/// What happened to one file of one session (`"type":"ast_file"`).
#[derive(Debug, Serialize)]
#[serde(remote = "Self")]
pub struct FileReport {
    pub session_id: String,
    pub path: String,
    /// ok, parse_error or skipped.
    pub status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub functions: usize,
    pub edges: usize,
    pub new: usize,
    pub modified: usize,
    pub deleted: usize,
}
memkit_core::record!(FileReport = "ast_file");

/// One (session, file) with the queue rows that touched it.
struct Touched {
    session_id: String,
    project: Option<String>,
    path: String,
    queue_ids: Vec<i64>,
    /// The content of the last Write, for a file deleted since.
    written: Option<String>,
}

/// The work of one run, on an open store. Edits still waiting for compression stop the run
/// there (their observations do not exist yet); the next run takes them.
pub fn update(conn: &mut rusqlite::Connection) -> Result<Vec<FileReport>> {
    let cursor = fmap::cursor(conn)?;
    let edits = fmap::edits_since(conn, cursor)?;
    let ready: Vec<&fmap::Edit> = edits
        .iter()
        .take_while(|e| e.status == "done" || e.status == "error")
        .collect();
    let Some(last) = ready.last().map(|e| e.queue_id) else {
        return Ok(Vec::new());
    };
    let mut touched: Vec<Touched> = Vec::new();
    for e in &ready {
        let Ok(payload) = serde_json::from_str::<Value>(&e.payload) else {
            continue;
        };
        let input = &payload["tool_input"];
        let Some(file) = input["file_path"].as_str() else {
            continue;
        };
        if !file.ends_with(".py") && !file.ends_with(".pyi") {
            continue;
        }
        let project = e
            .project
            .clone()
            .or(fmap::session_dir(conn, &e.session_id)?);
        let file = match &project {
            Some(root) if !file.starts_with('/') => {
                format!("{}/{file}", root.trim_end_matches('/'))
            }
            _ => file.to_string(),
        };
        let i = match touched
            .iter()
            .position(|t| t.session_id == e.session_id && t.path == file)
        {
            Some(i) => i,
            None => {
                touched.push(Touched {
                    session_id: e.session_id.clone(),
                    project,
                    path: file,
                    queue_ids: Vec::new(),
                    written: None,
                });
                touched.len() - 1
            }
        };
        touched[i].queue_ids.push(e.queue_id);
        if let Some(c) = input["content"].as_str() {
            touched[i].written = Some(c.to_string());
        }
    }
    let now = store::now();
    let mut reports = Vec::new();
    let mut changed_by_obs: BTreeMap<i64, Vec<String>> = BTreeMap::new();
    for t in &touched {
        let (report, names) = one_file(conn, t, &now)?;
        if let Some(names) = names {
            for (obs, files) in fmap::observations_of(conn, &t.queue_ids)? {
                // An observation gets the changes of the files it says it modified (all of the
                // file's when it names none).
                if files.is_empty() || files.iter().any(|f| same_file(f, &t.path)) {
                    let list = changed_by_obs.entry(obs).or_default();
                    list.extend(
                        names
                            .iter()
                            .filter(|n| !list.contains(n))
                            .cloned()
                            .collect::<Vec<_>>(),
                    );
                }
            }
        }
        reports.push(report);
    }
    for (obs, names) in changed_by_obs {
        fmap::set_functions_changed(conn, obs, &names)?;
    }
    fmap::set_cursor(conn, last)?;
    Ok(reports)
}

fn same_file(recorded: &str, path: &str) -> bool {
    recorded == path || path.ends_with(&format!("/{}", recorded.trim_start_matches("./")))
}

/// Parses, diffs and stores one file; the qualified names it changed when it parsed.
fn one_file(
    conn: &mut rusqlite::Connection,
    t: &Touched,
    now: &str,
) -> Result<(FileReport, Option<Vec<String>>)> {
    let mut report = FileReport {
        session_id: t.session_id.clone(),
        path: t.path.clone(),
        status: "ok",
        reason: None,
        functions: 0,
        edges: 0,
        new: 0,
        modified: 0,
        deleted: 0,
    };
    let skip = |report: &mut FileReport, status: &'static str, why: String| {
        report.status = status;
        report.reason = Some(why);
    };
    let inside = t
        .project
        .as_deref()
        .is_some_and(|root| Path::new(&t.path).starts_with(root));
    let bytes = if !inside {
        skip(&mut report, "skipped", "outside the project root".into());
        None
    } else {
        match std::fs::metadata(&t.path) {
            Ok(m) if m.len() > MAX_BYTES => {
                skip(
                    &mut report,
                    "skipped",
                    format!("larger than {MAX_BYTES} bytes"),
                );
                None
            }
            Ok(_) => match std::fs::read(&t.path) {
                Ok(b) => Some(b),
                Err(e) => {
                    skip(&mut report, "skipped", format!("cannot read: {e}"));
                    None
                }
            },
            Err(_) => match &t.written {
                Some(c) if c.len() as u64 <= MAX_BYTES => Some(c.clone().into_bytes()),
                _ => {
                    skip(&mut report, "skipped", "the file is gone".into());
                    None
                }
            },
        }
    };
    let mut snap = bytes.map(|b| ast::snapshot(&t.path, &b));
    if let Some(s) = &snap {
        if let Some(e) = &s.parse_error {
            skip(&mut report, "parse_error", e.clone());
        } else if s.functions.len() > MAX_FUNCTIONS {
            skip(
                &mut report,
                "skipped",
                format!("more than {MAX_FUNCTIONS} definitions"),
            );
        }
    }
    let state = |status| fmap::FileState {
        session_id: &t.session_id,
        file_path: &t.path,
        project: t.project.as_deref(),
        status,
        reason: report.reason.as_deref(),
        now,
    };
    if report.status != "ok" {
        fmap::replace(conn, &state(report.status), &[], &[])?;
        return Ok((report, None));
    }
    let snap = snap.as_mut().unwrap();
    // Relative imports made absolute from the package directories on disk.
    let module = project::module_name(&t.path, |d| Path::new(d).join("__init__.py").is_file());
    project::link(std::slice::from_mut(snap), &[module]);
    let old = fmap::previous(conn, &t.path, &t.session_id)?.map(|rows| Snapshot {
        path: t.path.clone(),
        functions: rows.into_iter().filter_map(from_row).collect(),
        ..Snapshot::default()
    });
    let diffs = ast::diff(old.as_ref(), snap);
    let change_of = |q: &str| {
        diffs
            .iter()
            .find(|d| d.qualname == q)
            .map_or(Change::New, |d| d.change)
    };
    let mut rows: Vec<fmap::FunctionRow> = snap
        .functions
        .iter()
        .map(|f| to_row(f, change_of(&f.qualname)))
        .collect();
    let old_fns = old
        .as_ref()
        .map(|o| o.functions.as_slice())
        .unwrap_or_default();
    for d in diffs.iter().filter(|d| d.change == Change::Deleted) {
        if let Some(f) = old_fns.iter().rev().find(|f| f.qualname == d.qualname) {
            rows.push(to_row(f, Change::Deleted));
        }
    }
    let edges: Vec<fmap::EdgeRow> = snap
        .calls
        .iter()
        .map(|c| fmap::EdgeRow {
            caller: c.caller.clone(),
            callee: c.callee.clone(),
            resolution: c.resolution.as_str().into(),
            target: c.target.clone(),
            target_file: c.target_file.clone(),
            confidence: c.confidence as f64,
            line: c.line,
        })
        .collect();
    fmap::replace(conn, &state("ok"), &rows, &edges)?;
    report.functions = snap.functions.len();
    report.edges = edges.len();
    let count = |c| diffs.iter().filter(|d| d.change == c).count();
    report.new = count(Change::New);
    report.modified = count(Change::Modified);
    report.deleted = count(Change::Deleted);
    let names = diffs
        .iter()
        .filter(|d| d.change != Change::Unchanged)
        .map(|d| d.qualname.clone())
        .collect();
    Ok((report, Some(names)))
}

fn to_row(f: &Function, change: Change) -> fmap::FunctionRow {
    fmap::FunctionRow {
        qualname: f.qualname.clone(),
        name: f.name.clone(),
        kind: f.kind.as_str().into(),
        parent_class: f.parent_class.clone(),
        signature: f.signature.clone(),
        decorators: f.decorators.clone(),
        docstring: f.docstring.clone(),
        line_start: f.line_start,
        line_end: f.line_end,
        body_hash: f.body_hash.clone(),
        change: change.as_str().into(),
    }
}

/// A stored definition back as a [`Function`], for diffing.
pub fn from_row(r: fmap::FunctionRow) -> Option<Function> {
    Some(Function {
        kind: Kind::parse(&r.kind)?,
        qualname: r.qualname,
        name: r.name,
        parent_class: r.parent_class,
        signature: r.signature,
        decorators: r.decorators,
        docstring: r.docstring,
        line_start: r.line_start,
        line_end: r.line_end,
        body_hash: r.body_hash,
    })
}

/// The Mermaid diagram of a session's changes (the latest session with a snapshot when
/// `session` is None): its changed definitions (every one with `all`) and their calls. None when
/// there is no snapshot.
pub fn diagram(
    conn: &rusqlite::Connection,
    session: Option<&str>,
    all: bool,
) -> Result<Option<String>> {
    let session = match session {
        Some(s) => s.to_string(),
        None => match fmap::snapshots(conn, None, 1)?.into_iter().next() {
            Some((s, _)) => s,
            None => return Ok(None),
        },
    };
    Ok(graph(conn, &session, all, true)?.map(|g| ast::mermaid::render(&g)))
}

/// A session's call graph from its stored snapshots: its changed definitions (every one with
/// `all`), the calls among them and, with `outside`, the targets of their other calls. None
/// when the session has no snapshot.
pub fn graph(
    conn: &rusqlite::Connection,
    session: &str,
    all: bool,
    outside: bool,
) -> Result<Option<ast::graph::Graph>> {
    let files = fmap::snapshots(conn, Some(session), 10_000)?;
    if files.is_empty() {
        return Ok(None);
    }
    let mut diffs = Vec::new();
    let mut snaps = Vec::new();
    for (_, file) in &files {
        for r in fmap::snapshot(conn, file, session)? {
            let change = match r.change.as_str() {
                "new" => Change::New,
                "modified" => Change::Modified,
                "deleted" => Change::Deleted,
                _ => Change::Unchanged,
            };
            let Some(kind) = Kind::parse(&r.kind) else {
                continue;
            };
            diffs.push(ast::FunctionDiff {
                path: file.clone(),
                qualname: r.qualname,
                change,
                kind,
                signature: r.signature,
                old_signature: None,
                line_start: r.line_start,
                line_end: r.line_end,
                body_hash: r.body_hash,
                old_body_hash: None,
            });
        }
        let calls = fmap::edges(conn, file, session)?
            .into_iter()
            .map(|e| ast::Call {
                caller: e.caller,
                callee: e.callee,
                resolution: match e.resolution.as_str() {
                    "direct" => ast::Resolution::Direct,
                    "self_method" => ast::Resolution::SelfMethod,
                    "import" => ast::Resolution::Import,
                    _ => ast::Resolution::Unresolved,
                },
                target: e.target,
                target_file: e.target_file,
                confidence: e.confidence as f32,
                line: e.line,
            })
            .collect();
        snaps.push(Snapshot {
            path: file.clone(),
            calls,
            ..Snapshot::default()
        });
    }
    let refs: Vec<&Snapshot> = snaps.iter().collect();
    Ok(Some(ast::graph::build(&diffs, &refs, all, outside)))
}
