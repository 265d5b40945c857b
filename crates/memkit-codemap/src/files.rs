//! mem-ast's filter mode on disk: the Python files under the paths given (a walk that keeps to
//! .gitignore and skips virtual environments and caches), each read and parsed, and their
//! imports linked across the files of the run.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use memkit_ast::{Snapshot, project};
use memkit_core::notice::Notice;
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
#[derive(Default)]
pub struct Modules(RefCell<HashMap<String, bool>>);

impl Modules {
    pub fn name(&self, path: &str) -> String {
        project::module_name(path, |d| {
            if let Some(&p) = self.0.borrow().get(d) {
                return p;
            }
            let p = Path::new(d).join("__init__.py").is_file();
            self.0.borrow_mut().insert(d.to_string(), p);
            p
        })
    }
}

/// A run's summary counts, added up file by file.
#[derive(Default)]
pub struct Counts {
    files: u64,
    functions: u64,
    edges: u64,
    errors: u64,
    bytes: u64,
    skipped: u64,
}

impl Counts {
    /// One file, with its number of definitions and calls (its snapshot may have dropped them).
    fn add(&mut self, s: &Snapshot, functions: usize, calls: usize) {
        self.files += 1;
        self.functions += functions as u64;
        self.edges += calls as u64;
        self.errors += s.parse_error.is_some() as u64;
        self.bytes += s.bytes;
    }

    /// The walk's files that were not Python and its errors.
    fn add_walk(&mut self, w: &Walked) {
        self.skipped += w.skipped;
        self.errors += w.errors.len() as u64;
    }

    pub fn is_empty(&self) -> bool {
        self.files == 0
    }

    pub fn map(&self) -> BTreeMap<String, u64> {
        BTreeMap::from([
            ("files".into(), self.files),
            ("functions".into(), self.functions),
            ("edges".into(), self.edges),
            ("errors".into(), self.errors),
            ("skipped_non_python".into(), self.skipped),
            ("bytes".into(), self.bytes),
        ])
    }
}

/// The run's counts, from each file's snapshot with its numbers of definitions and calls, and
/// its warnings to `tell`: the walk's errors, then each file that did not parse.
pub fn tally<'a>(
    walked: &Walked,
    files: impl Iterator<Item = (&'a Snapshot, usize, usize)>,
    mut tell: impl FnMut(Notice),
) -> Counts {
    let mut counts = Counts::default();
    counts.add_walk(walked);
    for (root, e) in &walked.errors {
        tell(Notice::warn(format!("{root}: {e}")));
    }
    for (s, functions, calls) in files {
        counts.add(s, functions, calls);
        if let Some(e) = &s.parse_error {
            tell(Notice::warn(format!("{}: {e}", s.path)));
        }
    }
    counts
}

/// What a walk found besides the Python files.
#[derive(Default)]
pub struct Walked {
    /// Files that were not Python.
    pub skipped: u64,
    /// The walk's errors as (root, error).
    pub errors: Vec<(String, String)>,
}

/// The files of a run, parsed and linked.
pub struct Parsed {
    /// In the order of the roots, a directory's files sorted by path.
    pub snaps: Vec<Snapshot>,
    /// Each snapshot's module name.
    pub modules: Vec<String>,
    pub walked: Walked,
}

/// Parses the Python files of `roots` (`-`: stdin, named `stdin_name`; a directory: the Python
/// files under it) on every core and links their imports.
pub fn parse(roots: &[PathBuf], stdin_name: &str) -> Parsed {
    let (mut snaps, walked) = walk(roots, stdin_name, |s| s);
    let names = Modules::default();
    let modules: Vec<String> = snaps.iter().map(|s| names.name(&s.path)).collect();
    project::link(&mut snaps, &modules);
    Parsed {
        snaps,
        modules,
        walked,
    }
}

/// Parses the Python files of `roots` as [`parse`] does, without linking: each file is parsed
/// on a worker as soon as the walk finds it (so the walk costs the run little) and `keep` runs
/// there on its snapshot: what was kept, in the order of the roots, a directory's files sorted
/// by path.
pub fn walk<T: Send>(
    roots: &[PathBuf],
    stdin_name: &str,
    keep: impl Fn(Snapshot) -> T + Sync,
) -> (Vec<T>, Walked) {
    let mut walked = Walked::default();
    let found = Mutex::new(Vec::new());
    // On a worker of the pool: a third thread walking beside two parsing was slower on 2 cores.
    rayon::scope(|scope| {
        let parse = |root: usize, path: PathBuf| {
            let (found, keep) = (&found, &keep);
            scope.spawn(move |_| {
                let kept = keep(snapshot_of(&path, stdin_name));
                found.lock().unwrap().push((root, path, kept));
            })
        };
        for (i, root) in roots.iter().enumerate() {
            if root == Path::new("-") || !root.is_dir() {
                if root == Path::new("-") || is_python(root) {
                    parse(i, root.clone());
                } else {
                    walked.skipped += 1;
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
                            walked.skipped += 1;
                        }
                    }
                    Ok(_) => {}
                    Err(e) => walked
                        .errors
                        .push((root.display().to_string(), e.to_string())),
                }
            }
        }
    });
    let mut found = found.into_inner().unwrap();
    found.sort_unstable_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    (found.into_iter().map(|(_, _, kept)| kept).collect(), walked)
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
