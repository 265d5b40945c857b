//! A context request end to end: the SessionStart block (layers, other projects when allowed,
//! the welcome line) or the memories a prompt brings in, as a `context` record.

use std::path::Path;
use std::time::Instant;

use memkit_core::Result;
use memkit_core::config::{self, Config};
use memkit_core::project;
use memkit_core::record::{Context, ContextItem};
use memkit_core::tokens::estimate;
use memkit_search::search::{Filters, Searcher};

use crate::prompt::{self, Thresholds};
use crate::{Options, Source};

/// The most a prompt's memories may cost.
pub const PROMPT_BUDGET: usize = 500;

/// What a block is asked for: a SessionStart block, or a prompt's memories.
pub struct Request {
    pub project: Option<String>,
    pub session: Option<String>,
    pub source: Source,
    /// Some = prompt mode.
    pub prompt: Option<String>,
    pub budget: usize,
    /// Where to ask git for the changed files.
    pub dir: Option<std::path::PathBuf>,
    /// Build as of this moment (epoch ms) instead of now: replays, tests (`--now`).
    pub now_ms: Option<i64>,
    /// Let a prompt's search load the embedding model, as mem-search does: a process that
    /// lives on (mem-mcp) then ranks a prompt as mem-search ranks it. A hook never does: a
    /// model load would cost it its time.
    pub load_model: bool,
}

pub fn thresholds(cfg: &Config) -> Result<Thresholds> {
    Ok(Thresholds {
        coverage: config::CONTEXT_PROMPT_COVERAGE.get(cfg)?,
        terms: config::CONTEXT_PROMPT_TERMS.get(cfg)?,
    })
}

/// The database is read as it is (`store::open_if_present`): a hook never creates or
/// migrates it.
pub fn build(
    home: &Path,
    cfg: &Config,
    conn: rusqlite::Connection,
    req: &Request,
) -> Result<Context> {
    let start = Instant::now();
    let now_ms = req
        .now_ms
        .unwrap_or_else(|| chrono::Utc::now().timestamp_millis());
    let mut rec = Context {
        event: if req.prompt.is_some() {
            "UserPromptSubmit"
        } else {
            "SessionStart"
        }
        .into(),
        project: req.project.clone(),
        project_name: req.project.as_deref().map(project::name_of),
        source: req.prompt.is_none().then_some(req.source),
        text: String::new(),
        tokens: 0,
        budget: req.budget,
        layers: vec![],
        items: vec![],
        build_ms: 0,
    };
    match &req.prompt {
        Some(text) => {
            rec.budget = req.budget.min(PROMPT_BUDGET);
            let mut searcher = Searcher::open(home, conn, cfg)?;
            if req.load_model {
                searcher.use_installed_model()?;
            }
            prompt_block(&searcher, cfg, req, text, now_ms, &mut rec)?;
        }
        None => session_block(home, cfg, conn, req, now_ms, &mut rec)?,
    }
    rec.tokens = estimate(&rec.text);
    rec.build_ms = start.elapsed().as_millis() as u64;
    Ok(rec)
}

fn session_block(
    home: &Path,
    cfg: &Config,
    conn: rusqlite::Connection,
    req: &Request,
    now_ms: i64,
    rec: &mut Context,
) -> Result<()> {
    let git = config::SEARCH_GIT_FILES.get(cfg);
    let files = match (&req.dir, git) {
        (Some(d), true) => project::changed_files(d),
        _ => vec![],
    };
    let query = if other_projects_allowed(cfg) {
        cross_query(req, &files)
    } else {
        None
    };
    let (conn, others, others_note) = match query {
        Some(q) => {
            let searcher = Searcher::open(home, conn, cfg)?;
            let found = other_projects(&searcher, cfg, req, &q);
            (searcher.conn, found.0, found.1)
        }
        None => (conn, vec![], None),
    };
    let opts = Options {
        project: req.project.clone(),
        session_id: req.session.clone(),
        source: req.source,
        budget: req.budget,
        files,
        now_ms,
        others,
    };
    let built = crate::build(&conn, cfg, &opts)?;
    rec.layers = built.layers;
    if let Some(note) = others_note
        && let Some(l) = rec.layers.iter_mut().find(|l| l.name == "observations")
    {
        l.reason = Some(match l.reason.take() {
            Some(r) => format!("{r}; {note}"),
            None => note,
        });
    }
    // Who each listed record came from, for those taken from the sync remote.
    let origins: std::collections::HashMap<i64, String> =
        memkit_core::store::observations::briefs_by_ids(&conn, &built.observation_ids)?
            .into_iter()
            .filter_map(|o| Some((o.id?, o.origin?)))
            .collect();
    rec.items = built
        .observation_ids
        .iter()
        .map(|&id| {
            let other = opts.others.iter().find(|o| o.id == id);
            ContextItem {
                source: "observation".into(),
                id,
                project_name: other.map(|o| o.project_name.clone()),
                other_project: other.is_some(),
                origin: origins.get(&id).cloned(),
            }
        })
        .collect();
    rec.text = built.text;
    if rec.text.is_empty() && !crate::has_any_memory(&conn, req.project.as_deref())? {
        rec.text = WELCOME.to_string();
    }
    Ok(())
}

/// Whether other projects' memories may come in at all (MEM_CONTEXT_OTHER_PROJECTS, off by
/// default): one project's work showing up in another's session is a leak unless asked for.
fn other_projects_allowed(cfg: &Config) -> bool {
    config::CONTEXT_OTHER_PROJECTS.get(cfg)
}

/// What the work at hand is about, as words: the branch name and the changed files' names.
/// `None` when that says nothing (on main with a clean tree).
fn cross_query(req: &Request, files: &[String]) -> Option<String> {
    const GENERIC: &[&str] = &[
        "main", "master", "develop", "dev", "trunk", "head", "feature", "feat", "fix", "bugfix",
        "hotfix", "chore", "release", "wip", "mod", "index", "lib", "init", "readme",
    ];
    let dir = req.dir.as_ref()?;
    let branch = project::identify(&dir.display().to_string()).branch;
    let mut words: Vec<String> = Vec::new();
    let names = files.iter().filter_map(|f| {
        Path::new(f)
            .file_stem()
            .map(|s| s.to_string_lossy().to_string())
    });
    for part in branch.into_iter().chain(names) {
        for w in part.split(|c: char| !c.is_alphanumeric()) {
            let w = w.to_lowercase();
            if w.len() >= 3 && !GENERIC.contains(&w.as_str()) && !words.contains(&w) {
                words.push(w);
            }
        }
    }
    words.truncate(24);
    (words.len() >= 2).then(|| words.join(" "))
}

/// Other projects' observations clearly relevant to `query` (at most 3), and a note when the
/// search could not run.
fn other_projects(
    s: &Searcher,
    cfg: &Config,
    req: &Request,
    query: &str,
) -> (Vec<crate::Other>, Option<String>) {
    let found = thresholds(cfg)
        .and_then(|th| prompt::relevant(s, query, Filters::default(), req.project.clone(), 10, th));
    match found {
        Err(e) => (vec![], Some(format!("other projects not searched: {e}"))),
        Ok(rel) => (
            rel.into_iter()
                .filter(|r| r.hit.other_project && r.hit.source == "observation")
                .take(3)
                .map(|r| crate::Other {
                    id: r.hit.id,
                    kind: r.hit.kind.clone(),
                    title: r.hit.title.clone(),
                    created_ms: memkit_search::index::time_ms(&r.hit.created_at),
                    project_name: r.hit.project_name.clone().unwrap_or_default(),
                    origin: r.hit.origin.clone(),
                })
                .collect(),
            None,
        ),
    }
}

/// The prompt's clearly relevant memories as a short block (or nothing).
fn prompt_block(
    s: &Searcher,
    cfg: &Config,
    req: &Request,
    text: &str,
    now_ms: i64,
    rec: &mut Context,
) -> Result<()> {
    let text: String = text.chars().take(4000).collect();
    if text.trim().is_empty() {
        return Ok(());
    }
    let filters = if other_projects_allowed(cfg) {
        Filters::default()
    } else {
        // No project known, no memories: never guess with another project's.
        Filters {
            projects: Some(req.project.iter().cloned().collect()),
            ..Filters::default()
        }
    };
    let found = prompt::bearing(s, &text, filters, req.project.clone(), thresholds(cfg)?)?;
    if found.is_empty() {
        return Ok(());
    }
    let head = "memkit: memories that may bear on this prompt\n";
    let foot = "`mem-report <id>` shows one in full; `mem-search \"<words>\"` finds more.\n";
    let mut body = String::new();
    let mut used = estimate(head) + estimate(foot);
    for r in &found {
        let h = &r.hit;
        let from = h
            .other_project
            .then(|| h.project_name.clone().unwrap_or_default());
        let label_from = crate::from_label(from.as_deref(), h.origin.as_deref());
        let label = if h.source == "session" {
            format!("{} session", memkit_core::ids::session(h.id))
        } else {
            format!("{} {}", memkit_core::ids::obs(h.id), h.kind)
        };
        let mut line = crate::index_line(
            &label,
            &h.title,
            memkit_search::index::time_ms(&h.created_at),
            label_from.as_deref(),
            now_ms,
        );
        let gist = h
            .summary
            .as_deref()
            .map(crate::flatten)
            .filter(|s| !s.is_empty() && *s != h.title);
        if let Some(g) = gist {
            line.push_str(" — ");
            line.extend(g.chars().take(160));
        }
        line.push('\n');
        let t = estimate(&line);
        if used + t > rec.budget {
            break;
        }
        used += t;
        body.push_str(&line);
        rec.items.push(ContextItem {
            source: h.source.clone(),
            id: h.id,
            project_name: from,
            other_project: h.other_project,
            origin: h.origin.clone(),
        });
    }
    if !body.is_empty() {
        rec.text = format!("{head}{body}{foot}");
    }
    Ok(())
}

pub const WELCOME: &str = "memkit is recording this project; what happens in this session will be remembered here next time (`mem-search \"<words>\"` searches past work).\n";
