//! `mem-eval context`: does the SessionStart block predict the work? Real transcripts are
//! replayed project by project in time order; before each session, the store holds what the
//! hooks would have captured up to its start (earlier sessions' events before that moment), is
//! compressed as the Stop hook would have, and the block is built as of that moment
//! (`--now`). Scored against the files the session then edits, next to three baselines
//! allowed as many files as the block names: the files the last sessions edited (RECENT), the
//! files edited most often (FREQUENT), and the two interleaved (MERGED). A fifth row, SEEN, is
//! no method but the data's ceiling: it names exactly the edited files some earlier session
//! touched (edited, read or searched), the most any ranking of the history could find; the
//! rest are files a session created or reached for the first time.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;

use serde::Serialize;

use memkit_capture::transcript::{self, Parsed};
use memkit_capture::{Origin, Policy};
use memkit_context::Source;
use memkit_context::files::{mentions, names_file};
use memkit_context::request::{Request, build};
use memkit_core::config::Config;
use memkit_core::hook::HookPayload;
use memkit_core::{Error, Result, project, store};

/// Tools whose calls edit a file (`tool_input.file_path`, or `notebook_path`).
pub use memkit_core::store::queue::EDIT_TOOLS;

/// The methods compared, memkit first, then the ceiling (`seen`).
pub const METHODS: &[&str] = &["memkit", "recent", "frequent", "merged", "seen"];

pub struct Options {
    /// Token budget of the block.
    pub budget: usize,
    /// Where scratch memories live.
    pub work: PathBuf,
    pub keep: bool,
}

/// One method's figures on one project, or on all (`project` = "all").
#[derive(Debug, Clone, Serialize)]
#[serde(remote = "Self")]
pub struct Report {
    pub set: String,
    pub project: String,
    pub method: String,
    /// Sessions scored: those after the first that edit at least one file.
    pub sessions: usize,
    /// Share of sessions where at least one named file was then edited.
    pub hit_rate: f64,
    /// Mean share of a session's edited files that were named.
    pub recall: f64,
    /// Mean number of files named (`seen`: of edited files an earlier session touched).
    pub files_named: f64,
    /// Recall over the edits inside the project root only (plans, Claude's own memory files
    /// and other files elsewhere left out), over the sessions that edit one.
    pub recall_in_project: f64,
}
memkit_core::record!(Report = "eval");

/// One replayed session (`"type":"context_session"`, with `--sessions`).
#[derive(Debug, Clone, Serialize)]
#[serde(remote = "Self")]
pub struct SessionScore {
    pub project: String,
    pub session_id: String,
    pub started_at: String,
    /// Files the session edited (project-relative where inside the project).
    pub edited: Vec<String>,
    /// Per method: the files it named (`seen`: the edited files an earlier session touched).
    pub named: BTreeMap<String, Vec<String>>,
    /// Per method: how many of `edited` it named.
    pub found: BTreeMap<String, usize>,
    /// The block itself.
    pub block: String,
}
memkit_core::record!(SessionScore = "context_session", unversioned);

pub struct Outcome {
    pub reports: Vec<Report>,
    pub sessions: Vec<SessionScore>,
    /// Scratch memories kept.
    pub homes: Vec<PathBuf>,
}

/// Progress of the long steps: (step, done, total).
pub type Progress<'a> = &'a mut dyn FnMut(&str, usize, usize);

/// One session: its transcript files (main and subagents) parsed.
pub(crate) struct Session {
    pub(crate) id: String,
    pub(crate) start: String,
    pub(crate) files: Vec<Parsed>,
    /// (time, absolute path) of each edit, in time order.
    pub(crate) edits: Vec<(String, String)>,
    /// (time, absolute path) of each file any call named.
    touched: Vec<(String, String)>,
}

/// The sessions of every project found in `dirs` (transcript files or folders of them), each
/// project's in start order.
pub(crate) fn projects(dirs: &[PathBuf]) -> Result<BTreeMap<String, Vec<Session>>> {
    let mut files = Vec::new();
    for d in dirs {
        if d.is_dir() {
            files.extend(
                transcript::find_files(d)
                    .map_err(|e| Error::input(d.display().to_string(), None, e))?,
            );
        } else {
            files.push(d.clone());
        }
    }
    let mut parsed = Vec::new();
    for f in &files {
        let bytes = std::fs::read(f).map_err(|e| Error::input(f.display().to_string(), None, e))?;
        parsed.push(transcript::parse(f, &bytes));
    }
    Ok(sessions_by_project(parsed))
}

/// Replays every project found in `dirs` (transcript files or folders of them).
pub fn run(set: &str, dirs: &[PathBuf], opts: &Options, progress: Progress) -> Result<Outcome> {
    let projects = projects(dirs)?;
    let total: usize = projects.values().map(Vec::len).sum();
    let mut out = Outcome {
        reports: vec![],
        sessions: vec![],
        homes: vec![],
    };
    let mut done = 0;
    for (root, sessions) in projects {
        progress("replay", done, total);
        done += sessions.len();
        let (scores, home) = replay(&root, sessions, opts)?;
        if opts.keep {
            out.homes.push(home);
        } else {
            std::fs::remove_dir_all(&home)?;
        }
        // A project with no session to score (one session, or none that edits) has no figures.
        if !scores.is_empty() {
            out.reports
                .extend(reports(set, &project::name_of(&root), &scores));
        }
        out.sessions.extend(scores);
    }
    let all = out.sessions.clone();
    out.reports.extend(reports(set, "all", &all));
    Ok(out)
}

/// Sessions grouped by project root, each project's in start order.
fn sessions_by_project(parsed: Vec<Parsed>) -> BTreeMap<String, Vec<Session>> {
    let mut by_id: HashMap<String, Vec<Parsed>> = HashMap::new();
    for p in parsed {
        if let Some(id) = p.session_id.clone()
            && !p.events.is_empty()
        {
            by_id.entry(id).or_default().push(p);
        }
    }
    let mut out: BTreeMap<String, Vec<Session>> = BTreeMap::new();
    for (id, files) in by_id {
        let Some(main) = files
            .iter()
            .find(|p| p.agent_id.is_none())
            .or(files.first())
        else {
            continue;
        };
        let Some(cwd) = main.cwd.clone() else {
            continue;
        };
        let start = main.events[0].1.at.clone();
        let root = project::identify(&cwd).root;
        let mut edits: Vec<(String, String)> = files
            .iter()
            .flat_map(|p| p.events.iter())
            .filter_map(|(payload, origin)| {
                edited_file(payload, &cwd).map(|f| (origin.at.clone(), f))
            })
            .collect();
        edits.sort();
        let touched = files
            .iter()
            .flat_map(|p| p.events.iter())
            .filter(|(payload, _)| payload.event.as_deref() == Some("PostToolUse"))
            .flat_map(|(payload, origin)| {
                memkit_capture::files::touched(payload.get("tool_input"), Some(&cwd))
                    .into_iter()
                    .map(|f| (origin.at.clone(), f))
            })
            .collect();
        out.entry(root).or_default().push(Session {
            id,
            start,
            files,
            edits,
            touched,
        });
    }
    for v in out.values_mut() {
        v.sort_by(|a, b| (&a.start, &a.id).cmp(&(&b.start, &b.id)));
    }
    out
}

/// The file a successful edit call changed, absolute.
fn edited_file(p: &HookPayload, cwd: &str) -> Option<String> {
    if p.event.as_deref() != Some("PostToolUse") || !EDIT_TOOLS.contains(&p.tool_name.as_deref()?) {
        return None;
    }
    let input = p.get("tool_input")?;
    let path = input
        .get("file_path")
        .or_else(|| input.get("notebook_path"))?
        .as_str()?;
    Some(memkit_capture::files::resolve(path, Some(cwd)))
}

/// One project's sessions replayed in a scratch memory: the scores of each session that has
/// an earlier one and edits something, and the memory's home.
fn replay(
    root: &str,
    sessions: Vec<Session>,
    opts: &Options,
) -> Result<(Vec<SessionScore>, PathBuf)> {
    let home = opts.work.join(format!(
        "context-{}-{}-{}",
        std::process::id(),
        chrono::Utc::now().timestamp_millis(),
        project::name_of(root)
    ));
    std::fs::create_dir_all(&home)?;
    let cfg = Config::load(&home)?;
    let mut stored = Stored::new(&sessions);
    let mut scores = Vec::new();
    for i in 0..sessions.len() {
        let at = sessions[i].start.clone();
        stored.load_before(&cfg, &sessions, i, &at)?;
        if i == 0 || sessions[i].edits.is_empty() {
            continue;
        }
        compress(&cfg)?;
        let now_ms = store::parse_instant(&at)
            .map(|t| t.0.timestamp_millis())
            .ok_or_else(|| {
                Error::Other(format!("session {}: bad start time {at}", sessions[i].id))
            })?;
        let conn = store::open(&cfg.home.db())?;
        let rec = build(
            &home,
            &cfg,
            conn,
            &Request {
                project: Some(root.to_string()),
                session: Some(sessions[i].id.clone()),
                source: Source::Startup,
                prompt: None,
                budget: opts.budget,
                dir: None,
                now_ms: Some(now_ms),
                load_model: false,
            },
        )?;
        let before = |list: fn(&Session) -> &Vec<(String, String)>| -> Vec<(String, String)> {
            sessions[..i]
                .iter()
                .flat_map(|s| list(s).iter().filter(|(t, _)| *t < at).cloned())
                .collect()
        };
        let prior = before(|s| &s.edits);
        let touched: HashSet<String> = before(|s| &s.touched).into_iter().map(|t| t.1).collect();
        scores.push(score(root, &sessions[i], &rec.text, &prior, &touched));
    }
    Ok((scores, home))
}

/// How many events of each session's files a replay has stored so far.
pub(crate) struct Stored(Vec<Vec<usize>>);

impl Stored {
    pub(crate) fn new(sessions: &[Session]) -> Stored {
        Stored(sessions.iter().map(|s| vec![0; s.files.len()]).collect())
    }

    /// Stores what the hooks would have captured of the sessions before `i` until `at`.
    pub(crate) fn load_before(
        &mut self,
        cfg: &Config,
        sessions: &[Session],
        i: usize,
        at: &str,
    ) -> Result<()> {
        let policy = Policy::defaults();
        let stored = &mut self.0;
        let conn = store::open(&cfg.home.db())?;
        store::write_tx(&conn, |tx| {
            for (j, s) in sessions[..i].iter().enumerate() {
                for (k, p) in s.files.iter().enumerate() {
                    let pr = p.cwd.as_deref().map(project::identify);
                    if stored[j][k] == 0
                        && let Some((payload, origin)) = transcript::session_start(p)
                    {
                        memkit_capture::store_event(tx, &policy, &payload, &origin, pr.as_ref())?;
                    }
                    let new: Vec<&(HookPayload, Origin)> = p.events[stored[j][k]..]
                        .iter()
                        .take_while(|(_, o)| o.at.as_str() < at)
                        .collect();
                    for (payload, origin) in &new {
                        memkit_capture::store_event(tx, &policy, payload, origin, pr.as_ref())?;
                    }
                    stored[j][k] += new.len();
                }
            }
            Ok(())
        })
    }
}

/// Compresses what is queued as the Stop hook's pipeline would have (offline heuristic).
pub(crate) fn compress(cfg: &Config) -> Result<()> {
    memkit_compress::database::compress_queue(
        cfg,
        memkit_compress::llm::Backend::heuristic(),
        memkit_compress::Options::from_config(cfg)?,
        &memkit_compress::database::Run {
            sessions_per_round: 1_000_000,
            summaries: true,
            open_turn: chrono::Duration::zero(),
            progress: None,
            until: None,
        },
    )?;
    Ok(())
}

/// A session's block and baselines against the files it edited; `touched`: every file earlier
/// sessions touched.
fn score(
    root: &str,
    s: &Session,
    block: &str,
    prior: &[(String, String)],
    touched: &HashSet<String>,
) -> SessionScore {
    let edited: Vec<String> = {
        let mut v: Vec<String> = s.edits.iter().map(|e| e.1.clone()).collect();
        v.sort();
        v.dedup();
        v
    };
    let mentions = named_files(block, root, prior.iter().map(|p| &p.1).chain(&edited));
    let n = mentions.len();
    let (recent, frequent) = baselines(prior);
    let merged = interleave(&recent, &frequent);
    let mut named = BTreeMap::new();
    let mut found = BTreeMap::new();
    let found_by = |names: &[String]| {
        edited
            .iter()
            .filter(|f| names.iter().any(|m| names_file(m, f)))
            .count()
    };
    found.insert("memkit".to_string(), found_by(&mentions));
    named.insert("memkit".to_string(), mentions.clone());
    for (m, list) in [
        ("recent", recent),
        ("frequent", frequent),
        ("merged", merged),
    ] {
        let list: Vec<String> = list.into_iter().take(n).collect();
        found.insert(m.to_string(), found_by(&list));
        named.insert(
            m.to_string(),
            list.iter().map(|f| relative(f, root)).collect(),
        );
    }
    let seen: Vec<String> = edited
        .iter()
        .filter(|f| touched.contains(*f))
        .cloned()
        .collect();
    found.insert("seen".to_string(), seen.len());
    named.insert(
        "seen".to_string(),
        seen.iter().map(|f| relative(f, root)).collect(),
    );
    SessionScore {
        project: project::name_of(root),
        session_id: s.id.clone(),
        started_at: s.start.clone(),
        edited: edited.iter().map(|f| relative(f, root)).collect(),
        named,
        found,
        block: block.to_string(),
    }
}

/// Files by last edit (newest first) and by number of edits (ties: newest first).
fn baselines(prior: &[(String, String)]) -> (Vec<String>, Vec<String>) {
    let mut last: HashMap<&str, &str> = HashMap::new();
    let mut count: HashMap<&str, usize> = HashMap::new();
    for (t, f) in prior {
        let e = last.entry(f).or_insert(t);
        if *e < t.as_str() {
            *e = t;
        }
        *count.entry(f).or_default() += 1;
    }
    let mut recent: Vec<&str> = last.keys().copied().collect();
    recent.sort_by(|a, b| last[b].cmp(last[a]).then(a.cmp(b)));
    let mut frequent = recent.clone();
    frequent.sort_by(|a, b| {
        count[b]
            .cmp(&count[a])
            .then(last[b].cmp(last[a]))
            .then(a.cmp(b))
    });
    let own = |v: Vec<&str>| v.into_iter().map(str::to_string).collect();
    (own(recent), own(frequent))
}

fn interleave(a: &[String], b: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for i in 0..a.len().max(b.len()) {
        for l in [a, b] {
            if let Some(f) = l.get(i)
                && !out.contains(f)
            {
                out.push(f.clone());
            }
        }
    }
    out
}

/// The files a block names: every known file (`known`, absolute) whose project-relative path
/// or file name stands in it as a whole (names with spaces included, which a split into words
/// cannot see), then the other path-like words of [`mentions`] that are no part of one.
fn named_files<'a>(
    block: &str,
    root: &str,
    known: impl IntoIterator<Item = &'a String>,
) -> Vec<String> {
    let whole = |name: &str| {
        block
            .match_indices(name)
            .any(|(i, _)| whole_at(block, i, name))
    };
    // A bare file name ("lib.rs") may be any file of that name, but not the tail of a longer
    // path ("src/lib.rs" names one file), nor a file at the root named by its own path.
    let bare = |name: &str| {
        block.match_indices(name).any(|(i, _)| {
            !block[..i].ends_with(['/', '\\'])
                && !block[..i].ends_with("…")
                && whole_at(block, i, name)
        })
    };
    let known: Vec<String> = known.into_iter().map(|f| relative(f, root)).collect();
    let mut out: Vec<String> = Vec::new();
    for rel in &known {
        let base = rel.rsplit(['/', '\\']).next().unwrap_or(rel);
        let by_base =
            base.contains('.') && base != rel && !known.iter().any(|k| k == base) && bare(base);
        if !out.contains(rel) && (whole(rel) || by_base) {
            out.push(rel.clone());
        }
    }
    let matched = out.clone();
    for m in mentions(block) {
        if !matched
            .iter()
            .any(|r| r.contains(m.as_str()) || names_file(&m, r))
            && !out.contains(&m)
        {
            out.push(m);
        }
    }
    out
}

/// Whether `name` at byte `i` of `block` stands as a whole (not part of a longer word).
fn whole_at(block: &str, i: usize, name: &str) -> bool {
    let edge =
        |c: Option<char>| c.is_none_or(|c| c.is_whitespace() || "()[]{},;:`'\"/\\*".contains(c));
    edge(block[..i].chars().next_back())
        && (edge(block[i + name.len()..].chars().next())
            || block[i + name.len()..].starts_with(". "))
}

fn relative(f: &str, root: &str) -> String {
    project::relative(f, root).to_string()
}

/// Each method's figures over `scores` (one project's, or all).
fn reports(set: &str, project: &str, scores: &[SessionScore]) -> Vec<Report> {
    METHODS
        .iter()
        .map(|m| {
            let n = scores.len().max(1) as f64;
            let hits = scores.iter().filter(|s| s.found[*m] > 0).count() as f64;
            // fold from 0.0: an empty f64 sum is -0.0.
            let recall = scores.iter().fold(0.0, |a, s| {
                a + s.found[*m] as f64 / s.edited.len().max(1) as f64
            });
            let named = scores.iter().fold(0.0, |a, s| a + s.named[*m].len() as f64);
            // Edits outside the project keep their absolute path in `edited`.
            let (mut in_n, mut in_recall) = (0.0, 0.0);
            for s in scores {
                let ins: Vec<&String> = s
                    .edited
                    .iter()
                    .filter(|f| !project::is_absolute(f))
                    .collect();
                if !ins.is_empty() {
                    let found = ins
                        .iter()
                        .filter(|f| s.named[*m].iter().any(|n| n == **f || names_file(n, f)))
                        .count();
                    in_n += 1.0;
                    in_recall += found as f64 / ins.len() as f64;
                }
            }
            let r3 = |x: f64| (x * 1000.0).round() / 1000.0;
            Report {
                set: set.to_string(),
                project: project.to_string(),
                method: m.to_string(),
                sessions: scores.len(),
                hit_rate: r3(hits / n),
                recall: r3(recall / n),
                files_named: (named / n * 10.0).round() / 10.0,
                recall_in_project: r3(in_recall / f64::max(in_n, 1.0)),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions_are_paths_and_file_names_not_prose() {
        let block = "- src/lib.rs: parse, (main.rs) edited 2 h ago\n- #12 change Fix `tests/a_test.py:40`. See https://x.io/a.html e.g. v1.2, ~/.claude/plans/p.md and src/clipp…";
        let m = mentions(block);
        assert!(m.contains(&"src/lib.rs".to_string()));
        assert!(m.contains(&"main.rs".to_string()));
        assert!(m.contains(&"tests/a_test.py".to_string()));
        assert!(m.contains(&"~/.claude/plans/p.md".to_string()));
        // A word cut short by the block's clipping names no file.
        assert!(
            !m.iter()
                .any(|w| w.contains("x.io") || w == "e.g" || w == "v1.2" || w.contains("clipp")),
            "{m:?}"
        );
        assert!(names_file("lib.rs", "/r/src/lib.rs"));
        let known = [
            r"C:\v\!\quiet here\DOCKET.md".to_string(),
            "/x/David Leroy.md".into(),
        ];
        let block = "- !\\quiet here\\DOCKET.md (edited 1×): x\n- see David Leroy.md. and src/a.rs";
        assert_eq!(
            named_files(block, r"C:\v", &known),
            [r"!\quiet here\DOCKET.md", "/x/David Leroy.md", "src/a.rs"]
        );
        assert_eq!(mentions("src/lib.rs then lib.rs"), ["src/lib.rs"]);
        // A path names its file only; a bare name every file of that name, but a root file
        // named by its own path is that file.
        let known: Vec<String> = [
            "/r/a/lib.rs",
            "/r/b/lib.rs",
            "/r/Cargo.toml",
            "/r/c/Cargo.toml",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            named_files("- a/lib.rs and Cargo.toml", "/r", &known),
            ["a/lib.rs", "Cargo.toml"]
        );
        assert_eq!(
            named_files("- fix lib.rs", "/r", &known),
            ["a/lib.rs", "b/lib.rs"]
        );
        assert!(!names_file("b.rs", "/r/src/lib.rs"));
        assert!(names_file(r"notes\a.md", r"C:\v\notes\a.md"));
        assert_eq!(relative(r"C:\v\notes\a.md", r"C:\v"), r"notes\a.md");
    }

    #[test]
    fn baselines_rank_by_last_edit_and_by_count() {
        let prior: Vec<(String, String)> = [("1", "/a"), ("2", "/b"), ("3", "/b"), ("4", "/c")]
            .iter()
            .map(|(t, f)| (t.to_string(), f.to_string()))
            .collect();
        let (recent, frequent) = baselines(&prior);
        assert_eq!(recent, ["/c", "/b", "/a"]);
        assert_eq!(frequent, ["/b", "/c", "/a"]);
        assert_eq!(interleave(&recent, &frequent), ["/c", "/b", "/a"]);
    }
}
