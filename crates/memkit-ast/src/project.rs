//! Files parsed together: relative imports made absolute, and calls through the import map
//! followed to the file that defines their target, through `__init__.py` re-exports.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::OnceLock;

use rayon::prelude::*;
use rustc_hash::FxHashSet;

use crate::{Resolution, Snapshot};

/// The dotted module of `path` (`/` separated): its file name without `.py`, behind every
/// parent directory for which `is_package` (it holds an `__init__.py`) says yes. A package's
/// `__init__.py` is the package itself.
pub fn module_name(path: &str, is_package: impl Fn(&str) -> bool) -> String {
    let mut parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    let file = parts.pop().unwrap_or_default();
    let stem = file
        .strip_suffix(".pyi")
        .or(file.strip_suffix(".py"))
        .unwrap_or(file);
    let mut module = if stem == "__init__" {
        vec![]
    } else {
        vec![stem]
    };
    while let Some(dir) = parts.last().copied() {
        let dir_path = parts.join("/");
        let dir_path = if path.starts_with('/') {
            format!("/{dir_path}")
        } else {
            dir_path
        };
        if !is_package(&dir_path) {
            break;
        }
        module.insert(0, dir);
        parts.pop();
    }
    module.join(".")
}

fn is_init(path: &str) -> bool {
    path.ends_with("/__init__.py") || path == "__init__.py"
}

/// `__relN__.rest` seen from `module` to an absolute name (unchanged when it is absolute or
/// climbs above the top package).
pub fn absolute(name: &str, module: &str, init: bool) -> String {
    let Some(rest) = name.strip_prefix("__rel") else {
        return name.to_string();
    };
    let Some((level, tail)) = rest.split_once("__") else {
        return name.to_string();
    };
    let Ok(level) = level.parse::<usize>() else {
        return name.to_string();
    };
    let mut parts: Vec<&str> = module.split('.').filter(|p| !p.is_empty()).collect();
    let keep = (parts.len() + init as usize).checked_sub(level);
    let Some(keep) = keep else {
        return name.to_string();
    };
    parts.truncate(keep);
    let tail = tail.strip_prefix('.').unwrap_or(tail);
    if !tail.is_empty() {
        parts.push(tail);
    }
    parts.join(".")
}

/// Links the import calls of `snapshots` (each with its module name) to the files that define
/// their targets. Relative targets become absolute; a target found becomes
/// `module.qualname` with `target_file` set and a higher confidence; re-exports are followed up
/// to 8 hops.
pub fn link(snapshots: &mut [Snapshot], modules: &[String]) {
    let by_module: HashMap<&str, usize> = modules
        .iter()
        .enumerate()
        .map(|(i, m)| (m.as_str(), i))
        .collect();
    let files = Files {
        snapshots,
        modules,
        by_module,
        defined: (0..snapshots.len()).map(|_| OnceLock::new()).collect(),
    };
    // The files are read on every core, then the calls changed.
    let updates: Vec<_> = snapshots
        .par_iter()
        .enumerate()
        .flat_map_iter(|(si, s)| {
            let init = is_init(&s.path);
            let files = &files;
            s.calls.iter().enumerate().filter_map(move |(ci, c)| {
                if c.resolution != Resolution::Import {
                    return None;
                }
                // Most targets are absolute already: no copy of those unless a file is found.
                let abs = match c.target.starts_with("__rel") {
                    true => Cow::Owned(absolute(&c.target, &modules[si], init)),
                    false => Cow::Borrowed(c.target.as_str()),
                };
                match (files.find(&abs, 8), abs) {
                    (Some(found), _) => Some((si, ci, Ok(found))),
                    (None, Cow::Owned(abs)) => Some((si, ci, Err(abs))),
                    (None, Cow::Borrowed(_)) => None,
                }
            })
        })
        .collect();
    drop(files);
    for (si, ci, update) in updates {
        let c = &mut snapshots[si].calls[ci];
        match update {
            Ok((file, target)) => {
                c.target = target;
                c.target_file = Some(file);
                c.confidence = 0.9;
            }
            Err(abs) => c.target = abs,
        }
    }
}

/// The files of a run as `find` looks them up.
struct Files<'a> {
    snapshots: &'a [Snapshot],
    modules: &'a [String],
    by_module: HashMap<&'a str, usize>,
    /// Each file's qualified names, gathered the first time a call leads to the file.
    defined: Vec<OnceLock<FxHashSet<&'a str>>>,
}

impl Files<'_> {
    /// (file, module.qualname) of the definition `name` (absolute) names, if a parsed file has
    /// it.
    fn find(&self, name: &str, hops: u32) -> Option<(String, String)> {
        if hops == 0 {
            return None;
        }
        // The longest prefix that is a parsed module; the rest is a qualified name in it.
        for (dot, _) in name.rmatch_indices('.') {
            let (module, rest) = (&name[..dot], &name[dot + 1..]);
            let Some(&i) = self.by_module.get(module) else {
                continue;
            };
            let s = &self.snapshots[i];
            let defined = self.defined[i]
                .get_or_init(|| s.functions.iter().map(|f| f.qualname.as_str()).collect());
            if defined.contains(rest) {
                return Some((s.path.clone(), name.to_string()));
            }
            // A name the module imports (an `__init__.py` re-export) or a submodule.
            let (first, tail) = match rest.split_once('.') {
                Some((first, tail)) => (first, Some(tail)),
                None => (rest, None),
            };
            if let Some(q) = s.import_of(first) {
                let mut next = absolute(q, &self.modules[i], is_init(&s.path));
                if let Some(tail) = tail {
                    next.push('.');
                    next.push_str(tail);
                }
                return self.find(&next, hops - 1);
            }
            return None;
        }
        None
    }
}
