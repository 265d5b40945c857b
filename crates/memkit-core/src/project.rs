//! Project identity: which project a directory belongs to, found without spawning git; and
//! the files changed in its working tree (which does ask git).

use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Project {
    /// Full path of the project root: the key everything is stored under.
    pub root: String,
    /// Display name: the root's last path component.
    pub name: String,
    /// Current branch (None when detached, unknown, or not a git repository).
    pub branch: Option<String>,
    /// How the root was found: `git`, `worktree` or `path`.
    pub source: &'static str,
}

/// The directory a hook event or a command belongs to: CLAUDE_PROJECT_DIR when set (Claude
/// Code sets it for hooks and what they run: the project root, even when the session has `cd`ed
/// elsewhere), else `cwd` (a payload's).
pub fn dir(cwd: Option<&str>) -> Option<String> {
    crate::config::CLAUDE_PROJECT_DIR
        .get()
        .or_else(|| cwd.map(str::to_string))
}

/// [`dir`] for a command run by hand: CLAUDE_PROJECT_DIR, else the process's current directory.
pub fn current_dir() -> Option<String> {
    dir(std::env::current_dir()
        .ok()
        .map(|d| d.display().to_string())
        .as_deref())
}

/// An absolute Unix or Windows path (`/x`, `C:\x`, `c:/x`, `\\server\share`).
pub fn is_absolute(p: &str) -> bool {
    let b = p.as_bytes();
    p.starts_with('/')
        || p.starts_with("\\\\")
        || (b.len() >= 3
            && b[0].is_ascii_alphabetic()
            && b[1] == b':'
            && (b[2] == b'\\' || b[2] == b'/'))
}

/// A Windows path with its drive letter in capitals and backslashes only: Claude Code writes
/// `c:\Users` from the editor and `C:\Users` from the terminal for the same directory, and a
/// relative `notes/a.md` joined to it gives `C:\v\notes/a.md`; one file is one string.
pub fn canonical(path: &str) -> std::borrow::Cow<'_, str> {
    let b = path.as_bytes();
    let drive = b.len() >= 3 && b[0].is_ascii_alphabetic() && b[1] == b':';
    if drive && matches!(b[2], b'\\' | b'/') && (b[0].is_ascii_lowercase() || path.contains('/')) {
        let mut s = path.replace('/', "\\");
        s[..1].make_ascii_uppercase();
        s.into()
    } else {
        path.into()
    }
}

/// `rel` under `root`, with the separator `root` uses.
pub fn join(root: &str, rel: &str) -> String {
    let sep = if root.contains('\\') && !root.contains('/') {
        '\\'
    } else {
        '/'
    };
    format!("{}{sep}{rel}", root.trim_end_matches(['/', '\\']))
}

/// A tool input's path as capture stores it: relative paths joined to `cwd` with the
/// separator `cwd` uses, absolute ones kept; both [`canonical`].
pub fn resolve(p: &str, cwd: Option<&str>) -> String {
    let p = p.trim();
    if p.is_empty() || is_absolute(p) {
        return canonical(p).into_owned();
    }
    match cwd.map(canonical) {
        Some(cwd) if !cwd.is_empty() => {
            canonical(&join(&cwd, p.trim_start_matches("./"))).into_owned()
        }
        _ => p.to_string(),
    }
}

/// `path` relative to the project `root` when inside it, else as it is.
pub fn relative<'a>(path: &'a str, root: &str) -> &'a str {
    path.strip_prefix(root)
        .and_then(|r| r.strip_prefix(['/', '\\']))
        .unwrap_or(path)
}

/// Resolves the project of `dir`: the enclosing git repository's root, with a linked worktree
/// mapped to its main repository so all worktrees share one project; else `dir` itself.
pub fn identify(dir: &str) -> Project {
    let dir = canonical(dir);
    let dir = dir.trim_end_matches(['/', '\\']);
    let dir = if dir.is_empty() { "/" } else { dir };
    let path = Path::new(dir);
    if path.is_absolute() {
        for anc in path.ancestors() {
            let dotgit = anc.join(".git");
            let Ok(meta) = std::fs::metadata(&dotgit) else {
                continue;
            };
            if meta.is_dir() {
                return Project {
                    root: anc.display().to_string(),
                    name: name_of(&anc.display().to_string()),
                    branch: read_branch(&dotgit),
                    source: "git",
                };
            }
            if let Some(p) = from_gitfile(anc, &dotgit) {
                return p;
            }
        }
    }
    // Claude Code's agent worktrees are git worktrees inside the repository; on another
    // machine (an imported transcript) or once removed, only the path says whose they are.
    if let Some(parent) = agent_worktree_parent(dir) {
        return Project {
            root: parent.to_string(),
            name: name_of(parent),
            branch: None,
            source: "worktree",
        };
    }
    Project {
        root: dir.to_string(),
        name: name_of(dir),
        branch: None,
        source: "path",
    }
}

/// The repository of a path inside Claude Code's agent worktrees,
/// `<repo>/.claude/worktrees/<name>[/...]` → `<repo>`: a string test, no file is read.
pub fn agent_worktree_parent(path: &str) -> Option<&str> {
    for marker in ["/.claude/worktrees/", "\\.claude\\worktrees\\"] {
        if let Some(i) = path.find(marker) {
            let name = path[i + marker.len()..].split(['/', '\\']).next()?;
            if i > 0 && !name.is_empty() {
                return Some(&path[..i]);
            }
        }
    }
    None
}

/// `.git` as a file: `gitdir: <path>`; a linked worktree's gitdir has a `commondir` pointing at
/// the main repository's `.git`.
fn from_gitfile(worktree: &Path, dotgit: &Path) -> Option<Project> {
    let text = std::fs::read_to_string(dotgit).ok()?;
    let gitdir = text.lines().find_map(|l| l.strip_prefix("gitdir:"))?.trim();
    let gitdir = absolutize(worktree, gitdir);
    let branch = read_branch(&gitdir);
    let common = std::fs::read_to_string(gitdir.join("commondir"))
        .ok()
        .map(|c| absolutize(&gitdir, c.trim()));
    let (root, source) = match common {
        Some(common) => {
            let common = normalize(&common);
            let root = if common.file_name().is_some_and(|n| n == ".git") {
                common.parent().map(Path::to_path_buf).unwrap_or(common)
            } else {
                common // a bare repository: the git dir itself names the project
            };
            (root, "worktree")
        }
        // A submodule or a separate git dir: the directory holding `.git` is the project.
        None => (worktree.to_path_buf(), "git"),
    };
    let root = root.display().to_string();
    Some(Project {
        name: name_of(&root),
        root,
        branch,
        source,
    })
}

fn absolutize(base: &Path, p: &str) -> PathBuf {
    let p = Path::new(p);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        base.join(p)
    }
}

/// Removes `.` and `..` lexically, so the root reads the same as a cwd inside it would
/// (canonicalizing would resolve symlinks the cwd keeps).
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    out
}

fn read_branch(gitdir: &Path) -> Option<String> {
    let head = std::fs::read_to_string(gitdir.join("HEAD")).ok()?;
    head.trim()
        .strip_prefix("ref: refs/heads/")
        .map(str::to_string)
}

/// Last component of a Unix or Windows path.
pub fn name_of(path: &str) -> String {
    path.rsplit(['/', '\\'])
        .find(|s| !s.is_empty())
        .unwrap_or(path)
        .to_string()
}

/// Files changed in the git working tree at `dir` (absolute paths; none outside git or when
/// git is missing). One `git status` process, run only by the tools that rank by these files
/// (mem-search, mem-context), never by capture.
pub fn changed_files(dir: &Path) -> Vec<String> {
    let Some(top) = dir.ancestors().find(|a| a.join(".git").exists()) else {
        return vec![];
    };
    let out = std::process::Command::new("git")
        .args(["status", "--porcelain=v1", "-z", "--untracked-files=no"])
        .current_dir(top)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output();
    let Ok(out) = out else { return vec![] };
    // Porcelain paths are relative to the repository root; renames add the old path as an
    // extra NUL-separated entry without a status, which the length check drops.
    String::from_utf8_lossy(&out.stdout)
        .split('\0')
        .filter(|e| e.len() > 3 && e.as_bytes()[2] == b' ')
        .map(|e| top.join(&e[3..]).display().to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worktree_resolves_to_main_repository() {
        let t = tempfile::tempdir().unwrap();
        let main = t.path().join("repo");
        std::fs::create_dir_all(main.join(".git/worktrees/wt")).unwrap();
        std::fs::write(main.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(
            main.join(".git/worktrees/wt/HEAD"),
            "ref: refs/heads/feature\n",
        )
        .unwrap();
        std::fs::write(main.join(".git/worktrees/wt/commondir"), "../..\n").unwrap();
        let wt = t.path().join("wt");
        std::fs::create_dir_all(wt.join("src")).unwrap();
        std::fs::write(
            wt.join(".git"),
            format!("gitdir: {}\n", main.join(".git/worktrees/wt").display()),
        )
        .unwrap();
        let p = identify(&wt.join("src").display().to_string());
        assert_eq!(p.root, main.display().to_string());
        assert_eq!(p.branch.as_deref(), Some("feature"));
        assert_eq!(p.source, "worktree");
        let m = identify(&main.display().to_string());
        assert_eq!(m.root, main.display().to_string());
        assert_eq!(m.branch.as_deref(), Some("main"));
    }

    #[test]
    fn non_git_and_windows_paths_fall_back_to_themselves() {
        let p = identify(r"C:\Users\dev\proj");
        assert_eq!(p.root, r"C:\Users\dev\proj");
        assert_eq!(identify(r"c:\Users\dev\proj\").root, p.root);
        assert_eq!(canonical("/home/c:/x"), "/home/c:/x");
        assert_eq!(canonical(r"c:\v\notes/a.md"), r"C:\v\notes\a.md");
        assert_eq!(p.name, "proj");
        assert_eq!(p.source, "path");
    }

    #[test]
    fn agent_worktrees_map_to_their_repository_without_git_on_disk() {
        let p = identify("/nowhere/repo/.claude/worktrees/agent-ab1e6e14/src");
        assert_eq!((p.root.as_str(), p.source), ("/nowhere/repo", "worktree"));
        assert_eq!(p.name, "repo");
        // The fixture's relative (sanitised) cwd, and Windows in either case of drive letter.
        assert_eq!(
            identify("-experiments/worktrees/.claude/worktrees/agent-a4ca7529").root,
            "-experiments/worktrees"
        );
        assert_eq!(
            identify(r"c:\w\repo\.claude\worktrees\x").root,
            identify(r"C:\w\repo").root
        );
        // The worktrees folder itself, or a name missing, is no worktree.
        assert_eq!(
            identify("/r/.claude/worktrees/").root,
            "/r/.claude/worktrees"
        );
        assert_eq!(agent_worktree_parent("/r/.claude/worktrees-old/x"), None);
    }
}
