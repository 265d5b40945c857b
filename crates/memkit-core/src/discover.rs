//! Projects discovered from the work: a session started where no project is (the home
//! directory, a folder holding several repositories) belongs to the project its touched files
//! agree on. Run by the batch pipeline (mem-compress), never by a hook: it reads the disk.
//!
//! Each touched file votes for the root it lies in, from the strongest evidence at hand: a
//! Claude Code agent worktree path (`<repo>/.claude/worktrees/<name>`), a project already
//! known to the store, a marker on disk (`.git`, `Cargo.toml`, `package.json`, ...), a marker
//! among the touched paths themselves, else the path's structure below the home directory.
//! Transcripts imported from another machine have no files on disk, so everything but the disk
//! check works from the strings alone. A root wins when [`MAJORITY`] of the files vote for it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use rusqlite::Connection;

use crate::Result;
use crate::project::{self, canonical};
use crate::store::{self, projects};

/// The share of a session's distinct touched files that must agree on one root.
pub const MAJORITY: f64 = 0.6;

/// Files whose presence in a directory makes it a project root.
const MARKERS: &[&str] = &[
    ".git",
    "Cargo.toml",
    "package.json",
    "pyproject.toml",
    "setup.py",
    "go.mod",
    "pom.xml",
    "build.gradle",
    "build.gradle.kts",
    "Gemfile",
    "composer.json",
    "mix.exs",
    "deno.json",
    "CMakeLists.txt",
    "Makefile",
    "CLAUDE.md",
    ".claude",
];

/// Folder names that hold projects rather than being one (`~/workspace/<repo>`).
const CONTAINERS: &[&str] = &[
    "workspace",
    "workspaces",
    "projects",
    "repos",
    "repositories",
    "src",
    "code",
    "dev",
    "git",
    "github",
    "gitlab",
    "work",
    "documents",
    "desktop",
    "downloads",
    "sandbox",
];

/// What discovery may consult besides the paths.
#[derive(Debug, Clone, Default)]
pub struct Context {
    /// This machine's home directory (canonical).
    pub home: Option<String>,
    /// Project roots the store knows.
    pub known: Vec<String>,
    /// Whether to look at the disk (off in tests of the string rules).
    pub disk: bool,
}

impl Context {
    /// The real one: $HOME, the store's projects, the disk.
    pub fn load(conn: &Connection) -> Result<Context> {
        Ok(Context {
            home: std::env::var("HOME")
                .ok()
                .filter(|h| !h.is_empty())
                .map(|h| trim(&canonical(&h)).to_string()),
            known: projects::roots(conn)?
                .iter()
                .map(|r| trim(&canonical(r)).to_string())
                .collect(),
            disk: true,
        })
    }
}

/// A discovered project: its root and how many of the distinct touched files agreed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub root: String,
    pub agree: usize,
    pub total: usize,
}

/// How much a cwd may be looked past.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cwd {
    /// A project root itself: its session stays.
    Root,
    /// Home, above home, or a folder of projects: any evidence counts, path structure too.
    Open,
    /// Anything else: only firm evidence (worktree, known project, marker on disk) counts.
    Unknown,
}

/// The project the `files` a session touched in `cwd` belong to, when that is not `cwd`'s own
/// and [`MAJORITY`] of the distinct files agree; `None` keeps the session where it is.
pub fn infer(cwd: &str, files: &[String], cx: &Context) -> Option<Found> {
    // A relative cwd (sanitised transcripts have them) says nowhere where its files are:
    // capture joined relative paths to it, doubling it (`-x/wt/-x/wt/...`).
    if !project::is_absolute(cwd) {
        return None;
    }
    let cwd = trim(&canonical(cwd)).to_string();
    let files: BTreeSet<String> = files
        .iter()
        .filter(|f| project::is_absolute(f))
        .map(|f| trim(&canonical(f)).to_string())
        .collect();
    if files.is_empty() {
        return None;
    }
    let kind = classify(&cwd, &files, cx);
    if kind == Cwd::Root {
        return None;
    }
    let marked = marked_dirs(&files);
    let mut votes: BTreeMap<String, usize> = BTreeMap::new();
    for f in &files {
        if let Some(root) = vote(f, &cwd, kind, &marked, cx) {
            *votes.entry(root).or_default() += 1;
        }
    }
    let (root, agree) = votes.into_iter().max_by_key(|(r, n)| (*n, r.len()))?;
    let total = files.len();
    (agree as f64 >= MAJORITY * total as f64
        && root != cwd
        && !is_homeish(&root, cx)
        && !within(&cwd, &root))
    .then_some(Found { root, agree, total })
}

fn classify(cwd: &str, files: &BTreeSet<String>, cx: &Context) -> Cwd {
    if is_homeish(cwd, cx) || is_container(project::name_of(cwd).as_str()) {
        return Cwd::Open;
    }
    // A marker at the cwd itself, on disk or among the touched paths: a project root.
    if cx.disk && Path::new(cwd).is_dir() {
        let p = project::identify(cwd);
        if (p.source != "path" && !is_homeish(&p.root, cx)) || has_marker(Path::new(cwd)) {
            return Cwd::Root;
        }
    }
    if files.iter().any(|f| marks(f).is_some_and(|d| d == cwd)) {
        return Cwd::Root;
    }
    Cwd::Unknown
}

/// The root file `f` votes for.
fn vote(f: &str, cwd: &str, kind: Cwd, marked: &BTreeSet<String>, cx: &Context) -> Option<String> {
    if let Some(repo) = project::agent_worktree_parent(f) {
        return Some(repo.to_string());
    }
    let open = kind == Cwd::Open;
    // A candidate is never a home or a folder of projects, and lies strictly below an Unknown
    // cwd; for an Open one, anywhere but at or above it.
    let floor = |d: &str| -> bool {
        !is_homeish(d, cx)
            && !is_container(&project::name_of(d))
            && if open {
                !within(cwd, d)
            } else {
                d != cwd && within(d, cwd)
            }
    };
    if let Some(k) = cx
        .known
        .iter()
        .filter(|k| within(f, k) && floor(k))
        .max_by_key(|k| k.len())
    {
        return Some(k.clone());
    }
    if cx.disk
        && let Some(r) = on_disk(f, &floor)
    {
        return Some(r);
    }
    if !open {
        return None;
    }
    // The outermost directory a touched marker names (a monorepo's members have their own).
    if let Some(d) = marked
        .iter()
        .filter(|d| within(f, d) && floor(d))
        .min_by_key(|d| d.len())
    {
        return Some(d.clone());
    }
    structural(f, cwd, cx)
}

/// The root on disk above `f`: the nearest git repository (a linked worktree mapped to its
/// main one), else the outermost directory holding a marker, among ancestors `floor` admits.
fn on_disk(f: &str, floor: &dyn Fn(&str) -> bool) -> Option<String> {
    let path = Path::new(f);
    if !path.is_absolute() || !path.parent().is_some_and(Path::exists) {
        return None;
    }
    let mut outer = None;
    for anc in path.ancestors().skip(1) {
        let a = anc.display().to_string();
        if !floor(&a) {
            continue;
        }
        if anc.join(".git").exists() {
            return Some(project::identify(&a).root);
        }
        if has_marker(anc) {
            outer = Some(a);
        }
    }
    outer
}

fn has_marker(dir: &Path) -> bool {
    MARKERS.iter().any(|m| dir.join(m).exists())
}

/// Directories that touched paths show to hold a marker (`<d>/Cargo.toml`, `<d>/.git/HEAD`).
fn marked_dirs(files: &BTreeSet<String>) -> BTreeSet<String> {
    files
        .iter()
        .filter_map(|f| marks(f))
        // `~/.claude/CLAUDE.md` is configuration, not a project.
        .filter(|d| !project::name_of(d).starts_with('.'))
        .map(str::to_string)
        .collect()
}

/// The directory `f` marks as a project root, if it is a marker (or lies in `.git`).
fn marks(f: &str) -> Option<&str> {
    let parts: Vec<(usize, &str)> = components(f);
    for (i, (at, c)) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        if (*c == ".git" || (last && (MARKERS.contains(c) || c.eq_ignore_ascii_case("README.md"))))
            && *at > 0
        {
            return Some(trim(&f[..*at]));
        }
    }
    None
}

/// The path-structure guess: below the home directory (or the cwd when it is not under one),
/// past folders of projects, the first directory is the project (`~/workspace/<repo>/…`).
fn structural(f: &str, cwd: &str, cx: &Context) -> Option<String> {
    let base = home_of(f, cx)
        .filter(|h| within(h, cwd) || !within(f, cwd))
        .or_else(|| within(f, cwd).then(|| cwd.to_string()))?;
    let parts = components(f);
    // Components start one past the base's separator (right at it for `/`).
    let from = base.len() + usize::from(!base.ends_with(['/', '\\']));
    let mut past = parts.iter().skip_while(|(at, _)| *at < from);
    let (at, name) = past.find(|(_, c)| !is_container(c))?;
    // A dot-folder (~/.claude, ~/.config) is configuration, not a project.
    if name.starts_with('.') {
        return None;
    }
    let end = at + name.len();
    // The file's own name is no project, unless it reads like a folder (a Grep or Glob path).
    if end == f.len() && name.contains('.') {
        return None;
    }
    Some(f[..end].to_string())
}

/// The home directory `f` lies in: this machine's, or one by its shape (`/home/<u>`,
/// `/Users/<u>`, `C:\Users\<u>`: transcripts come from other machines).
fn home_of(f: &str, cx: &Context) -> Option<String> {
    if let Some(h) = cx.home.as_deref()
        && within(f, h)
    {
        return Some(h.to_string());
    }
    let parts = components(f);
    let first = parts.first()?.1;
    let second = parts.get(1);
    let drive = first.len() == 2 && first.ends_with(':');
    match (first, second) {
        ("root", _) if !drive => Some(f[..parts[0].0 + 4].to_string()),
        ("home" | "Users", Some((at, u))) if !drive => Some(f[..at + u.len()].to_string()),
        (_, Some((_, "Users"))) if drive => {
            let (at, u) = parts.get(2)?;
            Some(f[..at + u.len()].to_string())
        }
        _ => None,
    }
}

/// Home, or a directory above a home (`/`, `/Users`, `C:\`): never a project.
fn is_homeish(d: &str, cx: &Context) -> bool {
    let d = trim(d);
    if d.is_empty() || d == "/" || (d.len() == 2 && d.ends_with(':')) {
        return true;
    }
    if let Some(h) = cx.home.as_deref()
        && within(h, d)
    {
        return true;
    }
    // A home by its shape, or a directory above one.
    home_of(d, cx).is_some_and(|h| h.len() >= d.len())
        || matches!(
            components(d).as_slice(),
            [(_, "home" | "Users")] | [(_, _), (_, "Users")]
        )
}

fn is_container(name: &str) -> bool {
    CONTAINERS.iter().any(|c| c.eq_ignore_ascii_case(name))
}

/// Components of a Unix or Windows path with their byte offsets (`C:` is one).
fn components(p: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, ch) in p.char_indices() {
        if ch == '/' || ch == '\\' {
            if i > start {
                out.push((start, &p[start..i]));
            }
            start = i + 1;
        }
    }
    if start < p.len() {
        out.push((start, &p[start..]));
    }
    out
}

/// Whether `p` is `dir` or lies inside it.
fn within(p: &str, dir: &str) -> bool {
    let dir = trim(dir);
    if dir.is_empty() || dir == "/" {
        return p.starts_with('/');
    }
    p.strip_prefix(dir)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(['/', '\\']))
}

fn trim(p: &str) -> &str {
    let t = p.trim_end_matches(['/', '\\']);
    if t.is_empty() && p.starts_with('/') {
        "/"
    } else {
        t
    }
}

/// A project's description: the first paragraph of prose in its README (else its CLAUDE.md),
/// on one line, clipped to about 200 characters. Headings, badges and HTML are skipped, and
/// so is the boilerplate opening Claude Code writes into CLAUDE.md.
pub fn description(root: &Path) -> Option<String> {
    for name in [
        "README.md",
        "README",
        "README.rst",
        "README.txt",
        "readme.md",
        "CLAUDE.md",
    ] {
        let Ok(text) = std::fs::read_to_string(root.join(name)) else {
            continue;
        };
        if let Some(d) = first_paragraph(&text) {
            return Some(d);
        }
    }
    None
}

/// The first paragraph of prose in a Markdown (or plain) text, on one line, clipped.
pub fn first_paragraph(text: &str) -> Option<String> {
    const MAX: usize = 200;
    let mut para: Vec<&str> = Vec::new();
    let mut in_fence = false;
    for line in text.lines() {
        let l = line.trim();
        if l.starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        let skip = in_fence
            || l.starts_with('#')
            || l.starts_with('<')
            || l.starts_with("[![")
            || l.starts_with("![")
            || l.starts_with("---")
            || l.starts_with("===")
            || l.starts_with('|');
        if l.is_empty() || skip {
            if !para.is_empty() {
                let p = para.join(" ");
                if !p.starts_with("This file provides guidance to Claude Code") {
                    return Some(clip(&p, MAX));
                }
                para.clear();
            }
            continue;
        }
        para.push(l);
    }
    let p = para.join(" ");
    (!p.is_empty() && !p.starts_with("This file provides guidance to Claude Code"))
        .then(|| clip(&p, MAX))
}

fn clip(s: &str, max: usize) -> String {
    let s = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if s.chars().count() <= max {
        return s;
    }
    let cut: String = s.chars().take(max - 1).collect();
    format!("{}…", cut.trim_end())
}

/// One session moved to the project its work discovered.
#[derive(Debug, Clone)]
pub struct Rescoped {
    pub session_id: String,
    pub from: Option<String>,
    pub to: Found,
}

/// Discovery over the store: every session with captures still waiting for compression is
/// checked again (its files may now point elsewhere), moved with everything keyed by it when
/// its work says so, and its project given a description from disk when it has none.
pub fn run(conn: &Connection) -> Result<Vec<Rescoped>> {
    let pending = store::sessions::with_raw_captures(conn)?;
    if pending.is_empty() {
        return Ok(vec![]);
    }
    let cx = Context::load(conn)?;
    let mut out = Vec::new();
    let mut roots = BTreeSet::new();
    for (sid, cwd, project) in pending {
        let Some(cwd) = cwd else {
            roots.extend(project);
            continue;
        };
        let files = store::sessions::touched_files(conn, &sid)?;
        match infer(&cwd, &files, &cx) {
            Some(found) if project.as_deref() != Some(found.root.as_str()) => {
                store::write_tx(conn, |c| {
                    projects::rescope(c, &sid, project.as_deref(), &found.root)
                })?;
                roots.insert(found.root.clone());
                out.push(Rescoped {
                    session_id: sid,
                    from: project,
                    to: found,
                });
            }
            _ => {
                // Discovered before: captures since (a resumed session, a later turn) were
                // stored under the cwd's project and follow the session.
                if let Some(p) = &project {
                    let own = project::identify(&cwd).root;
                    if *p != own {
                        projects::follow_session(conn, &sid, &own, p)?;
                    }
                }
                roots.extend(project)
            }
        }
    }
    for root in roots {
        let path = Path::new(&root);
        if path.is_absolute()
            && path.is_dir()
            && projects::description_missing(conn, &root)?
            && let Some(d) = description(path)
        {
            projects::set_description(conn, &root, &d)?;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cx() -> Context {
        Context {
            home: Some("/home/me".into()),
            known: vec![],
            disk: false,
        }
    }

    fn files(fs: &[&str]) -> Vec<String> {
        fs.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_home_session_goes_to_the_repository_its_files_are_in() {
        let f = files(&[
            "/Users/dain/workspace/claude-code-log/claude_code_log/renderer.py",
            "/Users/dain/workspace/claude-code-log/test/test_a.py",
            "/Users/dain/workspace/claude-code-log/pyproject.toml",
        ]);
        let found = infer("/Users/dain", &f, &cx()).unwrap();
        assert_eq!(found.root, "/Users/dain/workspace/claude-code-log");
        assert_eq!((found.agree, found.total), (3, 3));
        // From the folder of projects too, and with no marker among the paths.
        let f = files(&[
            "/Users/dain/workspace/app/src/a.js",
            "/Users/dain/workspace/app/b.js",
        ]);
        let found = infer("/Users/dain/workspace", &f, &cx()).unwrap();
        assert_eq!(found.root, "/Users/dain/workspace/app");
        // This machine's home by $HOME, whatever its shape.
        let c = Context {
            home: Some("/var/lib/me".into()),
            ..cx()
        };
        let f = files(&[
            "/var/lib/me/proj/src/main.rs",
            "/var/lib/me/proj/Cargo.toml",
        ]);
        assert_eq!(
            infer("/var/lib/me", &f, &c).unwrap().root,
            "/var/lib/me/proj"
        );
    }

    #[test]
    fn below_the_majority_nothing_moves() {
        // 3 of 5 = 60%: enough.
        let mut f = files(&[
            "/home/me/a/x.py",
            "/home/me/a/y.py",
            "/home/me/a/z.py",
            "/home/me/b/x.py",
            "/home/me/c/x.py",
        ]);
        assert_eq!(infer("/home/me", &f, &cx()).unwrap().root, "/home/me/a");
        // 3 of 6 = 50%: not.
        f.push("/home/me/d/x.py".into());
        assert_eq!(infer("/home/me", &f, &cx()), None);
        // Files that vote for nothing (the home's own files, dot-folders) count against.
        let f = files(&[
            "/home/me/a/x.py",
            "/home/me/notes.md",
            "/home/me/.claude/plans/p.md",
        ]);
        assert_eq!(infer("/home/me", &f, &cx()), None);
        assert_eq!(infer("/home/me", &[], &cx()), None);
    }

    #[test]
    fn a_session_in_a_project_stays() {
        // A repository (by a marker among its touched paths) editing a plan under home.
        let f = files(&[
            "/home/me/.claude/plans/x.md",
            "/home/me/.claude/plans/y.md",
            "/home/me/repo/Cargo.toml",
        ]);
        assert_eq!(infer("/home/me/repo", &f, &cx()), None);
        // An unknown cwd is not looked past on path structure alone (it may be a monorepo).
        let f = files(&[
            "/srv/mono/packages/web/a.js",
            "/srv/mono/packages/web/package.json",
        ]);
        assert_eq!(infer("/srv/mono", &f, &cx()), None);
        // But a project the store knows below it counts.
        let c = Context {
            known: vec!["/srv/mono/packages/web".into()],
            ..cx()
        };
        assert_eq!(
            infer("/srv/mono", &f, &c).unwrap().root,
            "/srv/mono/packages/web"
        );
        // Nor is a project moved up to a directory above its cwd.
        let c = Context {
            known: vec!["/srv".into()],
            ..cx()
        };
        assert_eq!(infer("/srv/mono", &files(&["/srv/mono/a.js"]), &c), None);
    }

    #[test]
    fn touched_markers_name_the_outermost_root() {
        let f = files(&[
            "/home/me/code/mono/Cargo.toml",
            "/home/me/code/mono/crates/a/Cargo.toml",
            "/home/me/code/mono/crates/a/src/lib.rs",
        ]);
        assert_eq!(
            infer("/home/me", &f, &cx()).unwrap().root,
            "/home/me/code/mono"
        );
        // A project two levels below home, found by its README.
        let f = files(&[
            "/home/me/clients/acme/README.md",
            "/home/me/clients/acme/app.py",
        ]);
        assert_eq!(
            infer("/home/me", &f, &cx()).unwrap().root,
            "/home/me/clients/acme"
        );
    }

    #[test]
    fn agent_worktrees_vote_for_their_repository() {
        let f = files(&[
            "/home/me/repo/.claude/worktrees/agent-1/src/a.rs",
            "/home/me/repo/.claude/worktrees/agent-2/src/b.rs",
        ]);
        assert_eq!(infer("/home/me", &f, &cx()).unwrap().root, "/home/me/repo");
        // A relative cwd (the sanitised fixture's) moves nowhere, even with its paths doubled.
        let f = files(&["-exp/wt/-exp/wt/.claude/worktrees/agent-1/work/a.md"]);
        assert_eq!(infer("-exp/wt", &f, &cx()), None);
        // Relative paths vote for nothing (and count for nothing).
        let f = files(&["/home/me/repo/a.rs", "notes/x.md"]);
        assert_eq!(infer("/home/me", &f, &cx()).unwrap().total, 1);
    }

    #[test]
    fn windows_paths_agree_whatever_the_drive_letters_case() {
        let f = files(&[
            r"c:\Users\dain\workspace\proj\a.py",
            r"C:\Users\dain\workspace\proj\b.py",
            r"c:/Users/dain/workspace/proj/lib/c.py",
        ]);
        let found = infer(r"c:\Users\dain", &f, &cx()).unwrap();
        assert_eq!(found.root, r"C:\Users\dain\workspace\proj");
        assert_eq!(found.agree, 3);
        assert_eq!(
            infer(r"C:\Users\dain\", &f, &cx()).unwrap().root,
            found.root
        );
        assert_eq!(infer(r"C:\", &f, &cx()).unwrap().root, found.root);
    }

    #[test]
    fn markers_on_disk_find_the_root_and_keep_a_repository_session() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().display().to_string();
        let repo = t.path().join("stuff/tool");
        std::fs::create_dir_all(repo.join("src/deep")).unwrap();
        std::fs::write(repo.join("go.mod"), "module tool\n").unwrap();
        let c = Context {
            home: Some(home.clone()),
            known: vec![],
            disk: true,
        };
        let f = files(&[
            &repo.join("src/deep/a.go").display().to_string(),
            &repo.join("src/b.go").display().to_string(),
        ]);
        let found = infer(&home, &f, &c).unwrap();
        assert_eq!(found.root, repo.display().to_string());
        // Started in the repository itself: a root on disk, nothing moves.
        assert_eq!(infer(&repo.display().to_string(), &f, &c), None);
    }

    #[test]
    fn descriptions_skip_headings_badges_and_claude_boilerplate() {
        let readme = "# tool\n\n[![ci](x)](y)\n\nA small tool that\nrecords sound.\n\nMore.\n";
        assert_eq!(
            first_paragraph(readme).unwrap(),
            "A small tool that records sound."
        );
        let claude = "# CLAUDE.md\n\nThis file provides guidance to Claude Code (claude.ai/code) when working with code in this repository.\n\n## Overview\n\nConverts transcripts to HTML.\n";
        assert_eq!(
            first_paragraph(claude).unwrap(),
            "Converts transcripts to HTML."
        );
        let long = "word ".repeat(100);
        let d = first_paragraph(&long).unwrap();
        assert!(d.chars().count() <= 200 && d.ends_with('…'), "{d}");
        assert_eq!(first_paragraph("# only a title\n"), None);
    }
}
