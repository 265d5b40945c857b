//! What memory holds about one file: the observations that changed it or read it, and the
//! functions mem-ast saw change in it. What the MCP `file_history` tool answers for any path.

use rusqlite::Connection;

use memkit_core::Result;
use memkit_core::record::Observation;
use memkit_core::store::functions::{self, Changed};
use memkit_core::store::report::{self, Scope};

/// A file's history, oldest first in each list.
#[derive(Debug, Default)]
pub struct FileHistory {
    pub changed: Vec<Observation>,
    pub read: Vec<Observation>,
    pub functions: Vec<Changed>,
}

impl FileHistory {
    pub fn is_empty(&self) -> bool {
        self.changed.is_empty() && self.read.is_empty() && self.functions.is_empty()
    }
}

/// The history of `path` (as stored, or its ending: `app/auth.py`) in these project roots
/// (every project when None).
pub fn of_file(conn: &Connection, path: &str, projects: Option<&[String]>) -> Result<FileHistory> {
    let scope = Scope {
        projects,
        ..Scope::default()
    };
    let (changed, read) = report::touching(conn, path, &scope)?
        .into_iter()
        .partition(|o| {
            o.files_modified
                .iter()
                .any(|f| report::same_file(f, path.trim().trim_start_matches("./")))
        });
    // function_map rows carry absolute paths: a root's files are the ones under it.
    let inside = |f: &str| {
        projects.is_none_or(|roots| {
            roots.iter().any(|r| {
                f.strip_prefix(r.as_str())
                    .is_some_and(|t| t.starts_with('/'))
            })
        })
    };
    let functions = functions::history(conn, path.trim().trim_start_matches("./"))?
        .into_iter()
        .filter(|c| inside(&c.file_path))
        .collect();
    Ok(FileHistory {
        changed,
        read,
        functions,
    })
}
