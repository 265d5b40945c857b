//! mem-ast's filter mode on disk: the Python files under the paths given (a walk that keeps to
//! .gitignore and skips virtual environments and caches), each read and parsed, and their
//! imports linked across the files of the run.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use memkit_ast::{Snapshot, project};
use memkit_core::{Error, Result};

/// The bytes of `path`, or of stdin for `-`.
pub fn read(path: &Path) -> std::io::Result<Vec<u8>> {
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

/// The paths given, then `paths_from`'s lines (`-`: stdin).
pub fn roots(mut roots: Vec<PathBuf>, paths_from: Option<&Path>) -> Result<Vec<PathBuf>> {
    if let Some(list) = paths_from {
        let text = read(list).map_err(|e| Error::input(list.display().to_string(), None, e))?;
        roots.extend(
            String::from_utf8_lossy(&text)
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(PathBuf::from),
        );
    }
    Ok(roots)
}

pub fn snapshot_of(path: &Path, stdin_name: &str) -> Snapshot {
    let name = if path == Path::new("-") {
        stdin_name.to_string()
    } else {
        let p = path.display().to_string();
        p.strip_prefix("./").map(str::to_string).unwrap_or(p)
    };
    match read(path) {
        Ok(bytes) => memkit_ast::snapshot(&name, &bytes),
        Err(e) => Snapshot {
            path: name,
            parse_error: Some(format!("cannot read: {e}")),
            ..Snapshot::default()
        },
    }
}

/// Module names from the directories' `__init__.py` files, each directory asked once (the
/// files of a tree share their parents).
pub fn modules(snaps: &[Snapshot]) -> Vec<String> {
    let known = std::cell::RefCell::new(std::collections::HashMap::<String, bool>::new());
    let is_package = |d: &str| {
        if let Some(&p) = known.borrow().get(d) {
            return p;
        }
        let p = Path::new(d).join("__init__.py").is_file();
        known.borrow_mut().insert(d.to_string(), p);
        p
    };
    snaps
        .iter()
        .map(|s| project::module_name(&s.path, is_package))
        .collect()
}

/// The files of a run, parsed and linked.
pub struct Parsed {
    pub snaps: Vec<Snapshot>,
    /// Each snapshot's module name.
    pub modules: Vec<String>,
    /// Files that were not Python.
    pub skipped: u64,
    /// The walk's errors as (root, error).
    pub walk_errors: Vec<(String, String)>,
}

/// Parses the Python files of `roots` (`-`: stdin, named `stdin_name`; a directory: the Python
/// files under it) on every core and links their imports. Each file is parsed as soon as the
/// walk finds it, so the walk costs the run little; the snapshots come in the order of the
/// roots, a directory's files sorted by path.
pub fn parse(roots: &[PathBuf], stdin_name: &str) -> Parsed {
    let found = Mutex::new(Vec::new());
    let mut skipped = 0;
    let mut walk_errors = Vec::new();
    rayon::scope(|scope| {
        let parse = |root: usize, path: PathBuf| {
            let found = &found;
            scope.spawn(move |_| {
                let snap = snapshot_of(&path, stdin_name);
                found.lock().unwrap().push((root, path, snap));
            })
        };
        for (i, root) in roots.iter().enumerate() {
            if root == Path::new("-") || !root.is_dir() {
                if root == Path::new("-") || is_python(root) {
                    parse(i, root.clone());
                } else {
                    skipped += 1;
                }
                continue;
            }
            let walk = ignore::WalkBuilder::new(root)
                .follow_links(true)
                .filter_entry(|e| {
                    !(e.file_type().is_some_and(|t| t.is_dir()) && skipped_dir(e.path()))
                })
                .build();
            for entry in walk {
                match entry {
                    Ok(e) if e.file_type().is_some_and(|t| t.is_file()) => {
                        if is_python(e.path()) {
                            parse(i, e.into_path());
                        } else {
                            skipped += 1;
                        }
                    }
                    Ok(_) => {}
                    Err(e) => walk_errors.push((root.display().to_string(), e.to_string())),
                }
            }
        }
    });
    let mut found = found.into_inner().unwrap();
    found.sort_unstable_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    let mut snaps: Vec<Snapshot> = found.into_iter().map(|(_, _, s)| s).collect();
    let modules = modules(&snaps);
    project::link(&mut snaps, &modules);
    Parsed {
        snaps,
        modules,
        skipped,
        walk_errors,
    }
}

impl Parsed {
    /// The run's summary counts.
    pub fn counts(&self) -> BTreeMap<String, u64> {
        let errors = self.walk_errors.len()
            + self
                .snaps
                .iter()
                .filter(|s| s.parse_error.is_some())
                .count();
        let mut counts = BTreeMap::new();
        counts.insert("files".into(), self.snaps.len() as u64);
        counts.insert(
            "functions".into(),
            self.snaps.iter().map(|s| s.functions.len() as u64).sum(),
        );
        counts.insert(
            "edges".into(),
            self.snaps.iter().map(|s| s.calls.len() as u64).sum(),
        );
        counts.insert("errors".into(), errors as u64);
        counts.insert("skipped_non_python".into(), self.skipped);
        counts.insert("bytes".into(), self.snaps.iter().map(|s| s.bytes).sum());
        counts
    }
}

/// One file (`-`: stdin, as `stdin_name`) parsed for --diff: unreadable or unparsable is an
/// input error naming it.
pub fn load(p: &Path, stdin_name: &str) -> Result<Snapshot> {
    let bytes = read(p).map_err(|e| Error::input(p.display().to_string(), None, e))?;
    let name = if p == Path::new("-") {
        stdin_name.to_string()
    } else {
        p.display().to_string()
    };
    let s = memkit_ast::snapshot(&name, &bytes);
    if let Some(e) = &s.parse_error {
        return Err(Error::input(name, None, e));
    }
    Ok(s)
}
