//! Which projects take part: those `sync.projects` opts in (what may leave this machine), and
//! every project known here by its key (where what others shared of it lands). A project is
//! known from the store, as a directory `sync.projects` names, or as the one mem sync runs in,
//! so that a clone never worked in here yet still receives its memories.

use std::collections::BTreeMap;
use std::path::Path;

use rusqlite::Connection;

use crate::capture::ProjectGlobs;
use crate::config::{self, Config};
use crate::store::projects;
use crate::{Error, Result, project};

use super::key;

/// The projects of one sync.
#[derive(Debug, Clone, Default)]
pub struct Projects {
    /// (root, key) of the projects whose memories may leave, by root.
    pub shared: Vec<(String, String)>,
    /// Opted-in roots with no key (no git): never shared, and said so.
    pub keyless: Vec<String>,
    /// Key → the root here its memories go to.
    pub local: BTreeMap<String, String>,
}

impl Projects {
    /// The projects of `cfg` and the store. A glob of `sync.projects` that does not parse is a
    /// usage error.
    pub fn find(conn: &Connection, cfg: &Config) -> Result<Projects> {
        let patterns = config::SYNC_PROJECTS.get(cfg);
        let (globs, bad) = ProjectGlobs::new(&patterns, "MEM_SYNC_PROJECTS");
        if let Some(b) = bad.into_iter().next() {
            return Err(Error::Usage(b));
        }
        let mut roots: Vec<String> = projects::roots(conn)?;
        roots.sort();
        // Directories the patterns name here, and the project mem sync runs in, after the
        // stored roots (a stored project keeps its place when two clones share a key).
        let mut named = Vec::new();
        if let Some(dir) = project::current_dir() {
            let root = project::identify(&dir).root;
            if !roots.contains(&root) {
                named.push(root);
            }
        }
        for p in &patterns {
            let p = crate::capture::expand_home(p);
            for dir in key::expand(&p, &|d: &Path| globs.matches_path(d)) {
                let root = project::identify(&dir.display().to_string()).root;
                if !roots.contains(&root) && !named.contains(&root) {
                    named.push(root);
                }
            }
        }
        let mut out = Projects::default();
        for root in roots.iter().chain(&named) {
            let opted = globs.matches(&as_project(root), None);
            let Some(k) = key::of(Path::new(root)) else {
                if opted && Path::new(root).is_dir() {
                    out.keyless.push(root.clone());
                }
                continue;
            };
            out.local.entry(k.clone()).or_insert_with(|| root.clone());
            if opted {
                out.shared.push((root.clone(), k));
            }
        }
        Ok(out)
    }

    /// The roots whose memories may leave.
    pub fn shared_roots(&self) -> Vec<String> {
        self.shared.iter().map(|(r, _)| r.clone()).collect()
    }
}

/// A stored root as the globs see it.
fn as_project(root: &str) -> project::Project {
    project::Project {
        root: root.to_string(),
        name: project::name_of(root),
        branch: None,
        source: "path",
    }
}
