//! Files in play: the project's files the next session is most likely to touch, from what the
//! last sessions did to them (edits count more than reads, recent sessions more than old ones),
//! with the files changed in the working tree first; and the names the block gives files.

use std::collections::HashMap;

use memkit_core::store::queue::{Edited, FileCall};
use rustc_hash::FxHashMap;

/// How the ranking weighs the evidence (`context_files_*` settings).
#[derive(Debug, Clone, Copy)]
pub struct Weights {
    /// A session's weight is `decay^k` for the k-th most recent session (0 = the last).
    pub decay: f64,
    /// What a read is worth next to an edit in the same session.
    pub read: f64,
}

impl Default for Weights {
    fn default() -> Self {
        Weights {
            decay: memkit_core::config::CONTEXT_FILES_DECAY.default,
            read: memkit_core::config::CONTEXT_FILES_READ.default,
        }
    }
}

/// One ranked file.
#[derive(Debug, Clone)]
pub struct InPlay {
    /// Absolute path.
    pub path: String,
    pub score: f64,
    /// Changed in the working tree now.
    pub changed: bool,
    /// Named by the last plan ([`planned`]).
    pub planned: bool,
    pub edits: usize,
    /// Sessions that edited it.
    pub sessions: usize,
    /// When it was last touched (epoch ms).
    pub last_ms: i64,
    /// Its calls (queue ids, newest first) and whether each was an edit.
    pub calls: Vec<(i64, bool)>,
    /// What the observation made from its last edit (else its last read) says, and whether
    /// that was an edit ([`describe`]).
    pub last_what: Option<(bool, String)>,
}

impl InPlay {
    /// A file with no evidence counted yet, last touched at `last_ms` (0: never).
    fn new(path: &str, last_ms: i64) -> InPlay {
        InPlay {
            path: path.to_string(),
            score: 0.0,
            changed: false,
            planned: false,
            edits: 0,
            sessions: 0,
            last_ms,
            calls: Vec::new(),
            last_what: None,
        }
    }
}

/// A stored time as epoch milliseconds (0 when it cannot be read).
fn epoch_ms(at: &str) -> i64 {
    memkit_core::store::parse_instant(at).map_or(0, |t| t.0.timestamp_millis())
}

/// Ranks the files inside `root` that `calls` (the last sessions', newest first) touched or
/// `history` (of the sessions before those) says were edited.
/// `changed` (the working tree's changes, absolute) come first whether or not a session touched
/// them, then the files the last plan names (`planned`, in its order): a plan approved and
/// then cleared away starts a session that carries it out, and new files are where history
/// cannot point. The rest alternate between two orders: by the recency-weighted score of the last
/// sessions' edits and reads, and by how many sessions edited the file. Either order alone
/// loses to the other on some projects (a file reworked in every third session drops out of
/// a recency order; a burst of new files is missing from a frequency order), and taking turns
/// keeps the best of each, as the merged baseline of `mem-eval context` does.
pub fn rank(
    calls: &[FileCall],
    history: &[Edited],
    root: &str,
    changed: &[String],
    planned: &[String],
    w: Weights,
) -> Vec<InPlay> {
    // Sessions by their latest call, newest first: the order the calls arrive in.
    let mut session_rank: FxHashMap<&str, i32> = FxHashMap::default();
    for c in calls {
        let n = session_rank.len() as i32;
        session_rank.entry(&*c.session_id).or_insert(n);
    }
    // Keyed by the callers' own strings: a few thousand calls name a few dozen files.
    let mut files: FxHashMap<&str, InPlay> = FxHashMap::default();
    // (file, session) pairs already counted, with whether as an edit.
    let mut seen: FxHashMap<(&str, &str), bool> = FxHashMap::default();
    for c in calls {
        let weight = w.decay.powi(session_rank[&*c.session_id]);
        let edit = c.edits();
        let at = epoch_ms(&c.at);
        for f in c.files.iter().filter(|f| inside(f, root)) {
            let e = files.entry(f).or_insert_with(|| InPlay::new(f, at));
            if edit {
                e.edits += 1;
            }
            e.calls.push((c.id, edit));
            // A session counts once per file: as an edit if it edited it at all.
            match seen.get(&(f.as_str(), &*c.session_id)) {
                Some(true) => {}
                Some(false) if edit => {
                    e.score += weight * (1.0 - w.read);
                    e.sessions += 1;
                    seen.insert((f, &c.session_id), true);
                }
                Some(false) => {}
                None => {
                    e.score += weight * if edit { 1.0 } else { w.read };
                    if edit {
                        e.sessions += 1;
                    }
                    seen.insert((f, &c.session_id), edit);
                }
            }
        }
    }
    // The older sessions add to how often; the last sessions' calls tell what and when.
    for h in history.iter().filter(|h| inside(&h.file, root)) {
        let e = files
            .entry(&h.file)
            .or_insert_with(|| InPlay::new(&h.file, epoch_ms(&h.last_at)));
        e.edits += h.edits;
        e.sessions += h.sessions;
        // What its last edit was about, when the last sessions did not touch it.
        if e.calls.is_empty() {
            e.calls.push((h.last_id, true));
        }
    }
    for f in changed.iter().filter(|f| inside(f, root)) {
        files.entry(f).or_insert_with(|| InPlay::new(f, 0)).changed = true;
    }
    for f in planned.iter().filter(|f| inside(f, root)) {
        files.entry(f).or_insert_with(|| InPlay::new(f, 0)).planned = true;
    }
    let (mut out, rest): (Vec<InPlay>, Vec<InPlay>) = files.into_values().partition(|f| f.changed);
    let (mut plan, rest): (Vec<InPlay>, Vec<InPlay>) = rest.into_iter().partition(|f| f.planned);
    plan.sort_by_key(|f| planned.iter().position(|p| *p == f.path));
    let by_recency = |a: &InPlay, b: &InPlay| {
        b.score
            .total_cmp(&a.score)
            .then(b.last_ms.cmp(&a.last_ms))
            .then(a.path.cmp(&b.path))
    };
    out.sort_by(by_recency);
    out.extend(plan);
    let mut recent: Vec<&InPlay> = rest.iter().filter(|f| f.score > 0.0).collect();
    recent.sort_by(|a, b| by_recency(a, b));
    let count = |f: &InPlay| (f.sessions, f.edits);
    let mut frequent: Vec<&InPlay> = rest.iter().filter(|f| f.sessions > 0).collect();
    frequent.sort_by(|a, b| count(b).cmp(&count(a)).then_with(|| by_recency(a, b)));
    let mut pos: HashMap<String, usize> = HashMap::new();
    for i in 0..recent.len().max(frequent.len()) {
        for f in [recent.get(i), frequent.get(i)].into_iter().flatten() {
            let n = pos.len();
            pos.entry(f.path.clone()).or_insert(n);
        }
    }
    let mut rest = rest;
    rest.sort_by_key(|f| pos.get(f.path.as_str()).copied().unwrap_or(usize::MAX));
    out.extend(rest);
    out
}

/// Sets each file's `last_what` from `titles` (queue id → title of the observation made from
/// the call): its newest edit that made one, else its newest read that did; among those, the
/// newest whose title names the file. An observation covers several calls, and "Fix x in a.js
/// and 4 more files" says nothing of the b.rs on whose line it would stand.
pub fn describe(files: &mut [InPlay], titles: &HashMap<i64, String>) {
    for f in files {
        let base = base_name(&f.path);
        let pick = |edit: bool| {
            let mut said = f
                .calls
                .iter()
                .filter(|(_, e)| *e == edit)
                .filter_map(|(id, _)| titles.get(id));
            let first = said.clone().next()?;
            let own = said.find(|t| t.contains(base)).unwrap_or(first);
            Some((edit, own.clone()))
        };
        f.last_what = pick(true).or_else(|| pick(false));
    }
}

/// The distinct file paths a text names: words with a directory separator or a file
/// extension, as written (a path shortened to a unique suffix names the file it ends).
pub fn mentions(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in text.split(|c: char| c.is_whitespace() || "()[]{},;`\"'<>|*".contains(c)) {
        // A word cut short ("src/comp…") names nothing.
        if w.ends_with('…') {
            continue;
        }
        let w = w.trim_end_matches(['.', ':']).trim_start_matches("./");
        let w = w.split(':').next().unwrap_or("");
        if w.len() < 3 || w.contains("://") || w.starts_with('#') {
            continue;
        }
        let dirs = w.contains(['/', '\\']) && w.len() > 3;
        if (dirs || has_extension(w)) && !out.iter().any(|o| o == w) {
            out.push(w.to_string());
        }
    }
    // "renderer.py" beside "src/renderer.py" is the same file named twice.
    let all = out.clone();
    out.retain(|m| !all.iter().any(|o| o != m && names_file(m, o)));
    out
}

/// Whether mention `m` names the absolute path `f`: the path itself or a suffix of it that
/// starts at a directory boundary.
pub fn names_file(m: &str, f: &str) -> bool {
    f == m
        || f.strip_suffix(m)
            .is_some_and(|head| head.ends_with(['/', '\\']))
}

/// The project files a plan names, absolute and in the order it names them (at most `max`):
/// paths inside `root`, paths relative to it, and bare names of the one known file they can be.
pub fn planned(plan: &str, root: &str, namer: &Namer, max: usize) -> Vec<String> {
    // "render/2", "tool_use/tool_result": a path-like word is a file when its name has an
    // extension or a known file has that path.
    let file = |p: &String| inside(p, root) && (has_extension(base_name(p)) || namer.knows(p));
    let mut out: Vec<String> = Vec::new();
    for m in mentions(plan) {
        let path = if memkit_core::project::is_absolute(&m) {
            Some(m)
        } else if m.starts_with('~') {
            None
        } else if m.contains(['/', '\\']) {
            Some(memkit_core::project::join(root, &m))
        } else {
            namer.known_file(&m)
        };
        if let Some(p) = path.filter(|p| file(p) && !out.contains(p)) {
            out.push(p);
        }
        if out.len() == max {
            break;
        }
    }
    out
}

/// Whether `path` is a file of the project at `root` (not the root, not its .git).
pub fn inside(path: &str, root: &str) -> bool {
    path.strip_prefix(root)
        .and_then(|r| r.strip_prefix(['/', '\\']))
        .is_some_and(|r| !r.is_empty() && !r.starts_with(".git/"))
}

/// Paths longer than this are shortened to the shortest suffix no other known file shares.
const LONG_PATH: usize = 48;

/// The names the block gives files: a path relative to the project root, and for a long path
/// the shortest ending (from a directory boundary) that no other known file has, so every name
/// identifies one file. Files outside the root keep their absolute path.
pub struct Namer {
    root: String,
    /// Known files, relative to the root where inside it.
    known: Vec<String>,
    /// Each known bare name with the one file it names (None: several share it): every
    /// observation title is scanned for bare names, one lookup a word.
    by_base: HashMap<String, Option<usize>>,
}

impl Namer {
    pub fn new<'a>(known: impl IntoIterator<Item = &'a String>, root: &str) -> Namer {
        let mut known: Vec<String> = known.into_iter().map(|f| relative(f, root)).collect();
        known.sort();
        known.dedup();
        let mut by_base: HashMap<String, Option<usize>> = HashMap::new();
        for (i, f) in known.iter().enumerate() {
            by_base
                .entry(base_name(f).to_string())
                .and_modify(|one| *one = None)
                .or_insert(Some(i));
        }
        Namer {
            root: root.to_string(),
            known,
            by_base,
        }
    }

    pub fn name(&self, path: &str) -> String {
        let r = relative(path, &self.root);
        // A long path outside the project is cut to its folder and name at least, after "…"
        // ("…/plans/x.md"): a bare name would pass for one of the project's.
        let outside = memkit_core::project::is_absolute(&r);
        if r.len() <= LONG_PATH {
            return r;
        }
        // Endings from the shortest: the first one no other known file ends with.
        let starts: Vec<usize> = r.match_indices(['/', '\\']).map(|(i, _)| i + 1).collect();
        for &s in starts.iter().rev().skip(usize::from(outside)) {
            let cand = &r[s..];
            let shared = self.known.iter().any(|o| {
                *o != r
                    && (o == cand
                        || o.strip_suffix(cand)
                            .is_some_and(|head| head.ends_with(['/', '\\'])))
            });
            if !shared {
                return if outside {
                    format!("…{}", &r[s - 1..])
                } else {
                    cand.to_string()
                };
            }
        }
        r
    }
}

impl Namer {
    /// `text` with each bare file name in it ("Fix lib.rs and 2 more files") given its block
    /// name ("Fix crates/core/src/lib.rs and 2 more files") where the file is known: the first
    /// of `hint` (the files the text is about) of that name, else the one known file of that
    /// name. A bare name several known files share, and none of `hint`, stays as it is.
    pub fn in_text(&self, text: &str, hint: &[&String]) -> String {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while !rest.is_empty() {
            let cut = rest
                .find(|c: char| c.is_whitespace() || "(),;`'\"".contains(c))
                .unwrap_or(rest.len());
            let (word, tail) = rest.split_at(cut);
            // A sentence's full stop is no part of the name.
            let (word, stop) = match word.strip_suffix(['.', ':']) {
                Some(w) => (w, &word[w.len()..]),
                None => (word, ""),
            };
            match self.bare(word, hint) {
                Some(name) => out.push_str(&name),
                None => out.push_str(word),
            }
            out.push_str(stop);
            let sep = tail.chars().next().map_or(0, char::len_utf8);
            out.push_str(&tail[..sep]);
            rest = &tail[sep..];
        }
        out
    }

    /// Whether `path` (absolute, or relative to the root) is a known file.
    pub fn knows(&self, path: &str) -> bool {
        self.known
            .binary_search(&relative(path, &self.root))
            .is_ok()
    }

    /// The absolute path of the one known file named `bare`, if only one has that name.
    pub fn known_file(&self, bare: &str) -> Option<String> {
        let rel = &self.known[(*self.by_base.get(bare)?)?];
        Some(if memkit_core::project::is_absolute(rel) {
            rel.clone()
        } else {
            memkit_core::project::join(&self.root, rel)
        })
    }

    /// The block name of the one file `word` (a bare file name) can be.
    fn bare(&self, word: &str, hint: &[&String]) -> Option<String> {
        let ext = word.rsplit_once('.').is_some_and(|(s, e)| {
            !s.is_empty()
                && (1..=8).contains(&e.len())
                && e.chars().any(|c| c.is_ascii_alphabetic())
        });
        if !ext || word.contains(['/', '\\']) {
            return None;
        }
        // The first of the hinted files: a title names its first file ("Fix a.rs and 2 more").
        let path = match hint.iter().find(|f| base_name(f) == word) {
            Some(first) => self.name(first),
            None => match self.by_base.get(word) {
                Some(Some(one)) => self.name(&self.known[*one]),
                _ => return None,
            },
        };
        (path != word).then_some(path)
    }
}

/// Whether a file name has an extension ("a.rs", not "v1.2" or ".env").
fn has_extension(name: &str) -> bool {
    name.rsplit_once('.').is_some_and(|(stem, e)| {
        stem.len() >= 2 && (1..=8).contains(&e.len()) && e.chars().any(|c| c.is_ascii_alphabetic())
    })
}

fn base_name(f: &str) -> &str {
    f.rsplit(['/', '\\']).next().unwrap_or(f)
}

fn relative(f: &str, root: &str) -> String {
    memkit_core::project::relative(f, root).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: i64, session: &str, tool: &str, file: &str, at: &str) -> FileCall {
        FileCall {
            id,
            session_id: session.into(),
            tool: tool.into(),
            files: vec![file.to_string()].into(),
            at: at.into(),
            input: None,
        }
    }

    #[test]
    fn edits_of_the_last_session_lead_and_reads_count_less() {
        // Newest first, as the store returns them.
        let calls = vec![
            call(7, "s2", "Read", "/p/b.rs", "2025-01-02T10:00:00Z"),
            call(6, "s2", "Read", "/p/a.rs", "2025-01-02T09:30:00Z"),
            call(5, "s2", "Edit", "/p/a.rs", "2025-01-02T09:00:00Z"),
            call(4, "s1", "Edit", "/p/c.rs", "2025-01-01T09:00:00Z"),
            call(3, "s1", "Edit", "/p/c.rs", "2025-01-01T08:00:00Z"),
            call(2, "s1", "Edit", "/tmp/plan.md", "2025-01-01T08:00:00Z"),
        ];
        let mut r = rank(
            &calls,
            &[],
            "/p",
            &["/p/z.rs".into()],
            &[],
            Weights::default(),
        );
        // Titles of the observations made from the calls.
        let titles: HashMap<i64, String> = [
            (7, "Read b"),
            (6, "Read a"),
            (5, "Edit a"),
            (4, "Fix x in a.rs"),
            (3, "Edit c.rs"),
        ]
        .into_iter()
        .map(|(id, t)| (id, t.to_string()))
        .collect();
        describe(&mut r, &titles);
        let order: Vec<&str> = r.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(order, ["/p/z.rs", "/p/a.rs", "/p/c.rs", "/p/b.rs"]);
        assert_eq!(r[2].edits, 2);
        assert_eq!(r[2].sessions, 1);
        // An edit's observation says more than a later read's; the newest edit that made one.
        assert_eq!(r[1].last_what, Some((true, "Edit a".to_string())));
        // c.rs's newest edit made "Fix x in a.rs": the older title that names c.rs says more.
        assert_eq!(r[2].last_what, Some((true, "Edit c.rs".to_string())));
        assert_eq!(r[3].last_what, Some((false, "Read b".to_string())));
        assert_eq!(r[0].last_what, None);
    }

    #[test]
    fn files_edited_in_many_sessions_take_turns_with_the_last_sessions_files() {
        let calls = vec![
            call(9, "s3", "Edit", "/p/a.rs", "2025-03-03T09:00:00Z"),
            call(8, "s2", "Edit", "/p/b.rs", "2025-03-02T09:00:00Z"),
            call(7, "s1", "Edit", "/p/c.rs", "2025-03-01T09:00:00Z"),
            call(6, "s1", "Read", "/p/r.rs", "2025-03-01T08:00:00Z"),
        ];
        // Before those sessions: d.rs edited in five, e.rs in two, c.rs in one.
        let h = |f: &str, s: usize, at: &str| Edited {
            file: f.to_string(),
            sessions: s,
            edits: s * 2,
            last_at: at.to_string(),
            last_id: 100 + s as i64,
        };
        let history = vec![
            h("/p/c.rs", 1, "2025-02-01T09:00:00Z"),
            h("/p/d.rs", 5, "2025-01-01T09:00:00Z"),
            h("/p/e.rs", 2, "2025-01-02T09:00:00Z"),
            h("/elsewhere/x.rs", 9, "2025-01-02T09:00:00Z"),
        ];
        let r = rank(&calls, &history, "/p", &[], &[], Weights::default());
        let order: Vec<&str> = r.iter().map(|f| f.path.as_str()).collect();
        // Recency: a b c r; frequency: d e c a b. Taking turns: a d b e c r.
        assert_eq!(
            order,
            [
                "/p/a.rs", "/p/d.rs", "/p/b.rs", "/p/e.rs", "/p/c.rs", "/p/r.rs"
            ]
        );
        assert_eq!((r[4].edits, r[4].sessions), (3, 2));
        // A file known only from the history says what the history says.
        assert_eq!((r[1].edits, r[1].sessions), (10, 5));
        assert!(r[1].last_ms > 0);
        // Its last edit is where the line's "what" comes from.
        assert_eq!(r[1].calls, [(105, true)]);
    }

    #[test]
    fn bare_names_in_text_get_the_block_name_of_the_one_file_they_can_be() {
        let known: Vec<String> = [
            "/p/a/lib.rs",
            "/p/b/lib.rs",
            "/p/src/parse.rs",
            "/p/README.md",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let n = Namer::new(&known, "/p");
        // One known parse.rs; lib.rs is two files unless the text is about one of them.
        assert_eq!(
            n.in_text("Fix parse.rs and lib.rs.", &[]),
            "Fix src/parse.rs and lib.rs."
        );
        assert_eq!(
            n.in_text("Fix lib.rs (2 edits)", &[&known[1]]),
            "Fix b/lib.rs (2 edits)"
        );
        // Paths, root files and words that are no file names stay.
        assert_eq!(
            n.in_text("see a/lib.rs, README.md, v1.2 and e.g. this", &[]),
            "see a/lib.rs, README.md, v1.2 and e.g. this"
        );
    }

    #[test]
    fn names_are_relative_and_long_ones_shortened_while_unique() {
        let long_a = "/p/src/very/deeply/nested/module/path/for/the/test/main.rs".to_string();
        let long_b = "/p/other/very/deeply/nested/module/path/for/the/test/lib.rs".to_string();
        let known = vec![
            "/p/src/main.rs".to_string(),
            "/p/cli/src/main.rs".to_string(),
            long_a.clone(),
            long_b.clone(),
        ];
        let n = Namer::new(&known, "/p");
        assert_eq!(n.name("/p/src/main.rs"), "src/main.rs");
        assert_eq!(n.name("/p/cli/src/main.rs"), "cli/src/main.rs");
        assert_eq!(n.name(&long_a), "test/main.rs");
        assert_eq!(n.name(&long_b), "lib.rs");
        assert_eq!(n.name("/elsewhere/x.md"), "/elsewhere/x.md");
        assert_eq!(
            n.name(r"C:\Users\someone\.claude\plans\jazzy-seeking-crescent.md"),
            r"…\plans\jazzy-seeking-crescent.md"
        );
    }
}
