//! A project's key on the sync remote: what its clones share wherever they are checked out.
//! The normalised `origin` URL (`github.com/acme/app` for `git@github.com:acme/app.git` and
//! `https://user@github.com/Acme/app`), else the repository's root commit (`commit/<sha>`);
//! a directory that is no git repository has no key and is never shared (its path means
//! nothing on another machine).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The key of the project rooted at `root`, if it has one.
pub fn of(root: &Path) -> Option<String> {
    let dotgit = root.join(".git");
    if !dotgit.exists() {
        return None;
    }
    let url = if dotgit.is_dir() {
        origin_in(&std::fs::read_to_string(dotgit.join("config")).unwrap_or_default())
    } else {
        // A worktree or a separate git dir: git knows where its config is.
        git(root, &["config", "--get", "remote.origin.url"])
    };
    if let Some(k) = url.as_deref().and_then(normalise) {
        return Some(k);
    }
    let roots = git(root, &["rev-list", "--max-parents=0", "HEAD"])?;
    // A history with several roots (merged repositories): the least, so every clone agrees.
    let first = roots
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .min()?;
    Some(format!("commit/{first}"))
}

/// `remote "origin"`'s url in a git config file's text.
fn origin_in(config: &str) -> Option<String> {
    let mut inside = false;
    for line in config.lines() {
        let l = line.trim();
        if l.starts_with('[') {
            let section: String = l.chars().filter(|c| !c.is_whitespace()).collect();
            inside = section.eq_ignore_ascii_case("[remote\"origin\"]");
            continue;
        }
        if inside
            && let Some((k, v)) = l.split_once('=')
            && k.trim().eq_ignore_ascii_case("url")
        {
            return Some(v.trim().trim_matches('"').to_string());
        }
    }
    None
}

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let s = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !s.trim().is_empty()).then(|| s.trim().to_string())
}

/// A remote URL as the same for every clone: no scheme, user, password or port, the host in
/// lower case, no `.git` or trailing slash; a local path keeps its path (`file/srv/git/app`).
pub fn normalise(url: &str) -> Option<String> {
    let url = url.trim();
    if url.is_empty() {
        return None;
    }
    let (host, path) = if let Some((scheme, rest)) = url.split_once("://") {
        if scheme.eq_ignore_ascii_case("file") {
            ("file".to_string(), rest.to_string())
        } else {
            let (auth, path) = rest.split_once('/').unwrap_or((rest, ""));
            let host = auth.rsplit('@').next().unwrap_or(auth);
            let host = host.split(':').next().unwrap_or(host);
            (host.to_string(), path.to_string())
        }
    } else if url.starts_with('/') || url.starts_with('.') || url.starts_with('~') {
        ("file".to_string(), url.to_string())
    } else if let Some((auth, path)) = url.split_once(':') {
        // scp-like: user@host:path
        let host = auth.rsplit('@').next().unwrap_or(auth);
        (host.to_string(), path.to_string())
    } else {
        ("file".to_string(), url.to_string())
    };
    let path = path.trim_matches('/');
    let path = path
        .strip_suffix(".git")
        .unwrap_or(path)
        .trim_end_matches('/');
    let key = format!(
        "{}/{}",
        host.to_ascii_lowercase(),
        path.to_ascii_lowercase()
    );
    let parts: Vec<String> = key
        .split('/')
        .filter(|p| !p.is_empty())
        .map(segment)
        .collect();
    (parts.len() >= 2).then(|| parts.join("/"))
}

/// One path segment as a file name on every system: letters, digits, `.`, `_` and `-`; none
/// starting with a dot (`.memkit` is the remote's own).
pub fn segment(s: &str) -> String {
    let mut out: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .take(100)
        .collect();
    if out.starts_with('.') || out.is_empty() {
        out.insert(0, '_');
    }
    out
}

/// A machine's label as it appears on the remote and in `[from: NAME]`.
pub fn name(s: &str) -> String {
    segment(s.trim())
}

/// The host name, which labels a machine unless `sync.name` says otherwise.
pub fn host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length, which gethostname never writes beyond.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    let h = String::from_utf8_lossy(&buf[..end]).into_owned();
    let h = h.split('.').next().unwrap_or("").to_string();
    if rc == 0 && !h.is_empty() {
        h
    } else {
        "machine".into()
    }
}

/// Directories a `sync.projects` pattern names on this machine: the directory itself when it
/// is no glob, else the git repositories below its literal head that it matches (a few
/// levels deep), so that a project cloned but never yet worked in here receives what others
/// shared of it.
pub fn expand(pattern: &str, matches: &dyn Fn(&Path) -> bool) -> Vec<PathBuf> {
    const DEPTH: usize = 4;
    let is_glob = |s: &str| s.contains(['*', '?', '[', '{']);
    let path = Path::new(pattern);
    if !is_glob(pattern) {
        return if path.is_dir() {
            vec![path.to_path_buf()]
        } else {
            vec![]
        };
    }
    let mut head = PathBuf::new();
    let mut rest = 0;
    for c in path.components() {
        let s = c.as_os_str().to_string_lossy();
        if rest > 0 || is_glob(&s) {
            rest += 1;
        } else {
            head.push(c);
        }
    }
    let depth = if pattern.contains("**") {
        DEPTH
    } else {
        rest.min(DEPTH)
    };
    let mut out = Vec::new();
    let mut todo = vec![(head, 0)];
    while let Some((dir, d)) = todo.pop() {
        // A repository is a project or not; what is inside it is its own.
        if d > 0 && dir.join(".git").exists() {
            if matches(&dir) {
                out.push(dir);
            }
            continue;
        }
        if d >= depth {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let hidden = e.file_name().to_string_lossy().starts_with('.');
            if !hidden && e.file_type().is_ok_and(|t| t.is_dir()) {
                todo.push((p, d + 1));
            }
        }
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_of_one_repository_share_a_key() {
        for url in [
            "git@github.com:Acme/app.git",
            "https://github.com/acme/app",
            "https://user:tok@github.com/acme/app.git/",
            "ssh://git@GitHub.com:22/acme/app.git",
            "git://github.com/acme/app",
        ] {
            assert_eq!(
                normalise(url).as_deref(),
                Some("github.com/acme/app"),
                "{url}"
            );
        }
        assert_eq!(
            normalise("/srv/git/app.git").as_deref(),
            Some("file/srv/git/app")
        );
        assert_eq!(
            normalise("file:///srv/git/app.git").as_deref(),
            Some("file/srv/git/app")
        );
        assert_eq!(normalise("").as_deref(), None);
        assert_eq!(
            normalise("https://h.example/a b/../c").as_deref(),
            Some("h.example/a-b/_../c")
        );
    }

    #[test]
    fn origin_is_read_from_the_config_file() {
        let cfg = "[core]\n\tbare = false\n[remote \"upstream\"]\n\turl = https://x/y\n[remote \"origin\"]\n\turl = git@h:a/b.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n";
        assert_eq!(origin_in(cfg).as_deref(), Some("git@h:a/b.git"));
        assert_eq!(origin_in("[core]\n"), None);
    }

    #[test]
    fn a_glob_names_the_repositories_it_matches() {
        let t = tempfile::tempdir().unwrap();
        for d in [
            "code/app/.git",
            "code/lib/.git",
            "code/notes",
            "code/app/sub/.git",
        ] {
            std::fs::create_dir_all(t.path().join(d)).unwrap();
        }
        let pattern = format!("{}/code/*", t.path().display());
        let (globs, _) = crate::capture::ProjectGlobs::new(std::slice::from_ref(&pattern), "t");
        let found = expand(&pattern, &|d: &Path| globs.matches_path(d));
        assert_eq!(
            found,
            [t.path().join("code/app"), t.path().join("code/lib")]
        );
        let plain = t.path().join("code/notes");
        assert_eq!(expand(plain.to_str().unwrap(), &|_: &Path| false), [plain]);
        assert!(expand("/no/such/dir", &|_: &Path| true).is_empty());
    }

    #[test]
    fn names_are_file_names() {
        assert_eq!(name("Alice's laptop"), "Alice-s-laptop");
        assert_eq!(name(".hidden"), "_.hidden");
        assert!(!host_name().is_empty());
    }
}
