//! mem-context: the context block for SessionStart, and relevant memories for each prompt.

use std::path::Path;
use std::time::Instant;

use clap::{CommandFactory, Parser};
use serde_json::Value;

use crate::cli::{self, Common, Format, Io, Outcome};
use crate::config::{self, Config};
use crate::context::prompt::{self, Thresholds};
use crate::context::{self, Options, Source};
use crate::hook::HookPayload;
use crate::record::{Context, ContextItem};
use crate::search::{Filters, Searcher};
use crate::tokens::estimate;
use crate::{Result, project, store};

pub const TOOL: super::Tool = super::Tool {
    name: "mem-context",
    command: || Args::command(),
    details: DETAILS,
    examples: &[
        (
            "mem-context",
            "Show the block the next session in this project would start with.",
        ),
        (
            "mem-context --format json | jq '.layers[] | {name, tokens, reason}'",
            "See which layers made it in, and why the others did not.",
        ),
        (
            "mem-context --prompt 'why does the token refresh race?'",
            "What a prompt would bring in (nothing when nothing is clearly relevant).",
        ),
        (
            "mem-context --hook < session-start.json",
            "What the SessionStart hook runs.",
        ),
    ],
};

const DETAILS: &str = r#"
SessionStart (the default): a markdown block of at most MEM_CONTEXT_TOKENS estimated tokens (2,000;
200 of them held in reserve) built from layers in priority order, each with a cap scaled to the
budget: recent sessions of this project (10, relative time and summary cut to 200 characters; 400
tokens), functions changed in its last 5 sessions grouped by file (at most 30; 500), active
learnings with confidence at least 0.5 (top 10; 300), and observations (600): manual notes first,
then by the relevance score's query-free parts (recency, type, overlap with the files changed in the
git working tree, same project), one index line each (#id type title · when). Observations of other
projects appear only with MEM_CONTEXT_OTHER_PROJECTS=1, and then only when clearly relevant to the
branch name and the changed files, labelled [from: <project>]. After a compact or clear, the current
session's own observations come first. A layer that fails or has no data is skipped and the others
stay; --format json shows which and why. The block ends with how to get more (mem-search, mem-report
--obs ID).

--prompt: the memories of this project clearly relevant to the prompt text, at most 500 tokens, or
nothing at all (with MEM_CONTEXT_OTHER_PROJECTS=1 other projects' too, labelled [from: <project>]).
Clearly relevant means the memory contains at least two informative words of the prompt (words that
at most 15% of the memories contain; one word when it is the prompt's only informative word and
rare) and at least half of the IDF weight of the prompt words that any memory contains
(MEM_CONTEXT_PROMPT_COVERAGE, MEM_CONTEXT_PROMPT_TERMS). BM25, plus the vector index when the
prompt's vector is already cached: no model is loaded in a hook.

--hook reads the hook payload on stdin (SessionStart or UserPromptSubmit; session_id, cwd, source,
prompt) and prints the hook's JSON
({"hookSpecificOutput":{"hookEventName":…,"additionalContext":…}}) or nothing. It never fails Claude
Code: no database, a broken index or any other problem prints nothing (or fewer layers), exits 0,
and is logged to $MEM_HOME/logs/mem-context.log. A project with no memories yet gets one welcome
line. MEM_DISABLE=1 and MEM_EXCLUDE make it print nothing.
"#;

/// Print the context a Claude Code session starts with, or the memories relevant to a prompt.
#[derive(Debug, Parser)]
#[command(name = "mem-context", version, long_about = None)]
pub struct Args {
    /// Read a SessionStart or UserPromptSubmit payload on stdin and print the hook's JSON; never fails.
    #[arg(long)]
    pub hook: bool,
    /// Prompt mode: memories relevant to this text (with --hook, to the payload's prompt).
    #[arg(long, value_name = "TEXT", num_args = 0..=1, default_missing_value = "")]
    pub prompt: Option<String>,
    /// Project directory or name (default: the current directory's project).
    #[arg(long)]
    pub project: Option<String>,
    /// The session that is starting (left out of the session list).
    #[arg(long)]
    pub session: Option<String>,
    /// Why the session starts: startup, resume, compact or clear.
    #[arg(long, value_enum, default_value_t = Source::Startup)]
    pub source: Source,
    /// Token budget of the block (default $MEM_CONTEXT_TOKENS, else 2000).
    #[arg(long, value_name = "N")]
    pub budget: Option<usize>,
    #[command(flatten)]
    pub common: Common,
}

/// The most a prompt's memories may cost.
pub const PROMPT_BUDGET: usize = 500;

pub fn run(args: Args, io: &mut Io) -> Result<Outcome> {
    if args.hook {
        return Ok(run_hook(io, &args));
    }
    let home = config::data_home();
    let cfg = Config::load(&home)?;
    let budget = budget(&cfg, args.budget)?;
    // Read only when a search runs, where a failure becomes a note: checked up front.
    thresholds(&cfg)?;
    let dir = std::env::current_dir()?;
    let Some(conn) = store::open_if_present(&cfg.db_path())? else {
        return Ok(io.no_memories(&cfg.db_path()));
    };
    let project = match &args.project {
        Some(p) => store::projects::resolve(&conn, p)?.into_iter().next(),
        None => Some(project::identify(&dir.display().to_string()).root),
    };
    let req = Req {
        project,
        session: args.session.clone(),
        source: args.source,
        prompt: args.prompt.clone(),
        budget,
        dir: Some(dir),
    };
    let rec = build(&home, &cfg, conn, &req)?;
    // Markdown unless a record is asked for: the block is the product, even in a pipe.
    match args.common.format {
        Some(Format::Json | Format::Jsonl) => io.document(&rec)?,
        _ => {
            use std::io::Write;
            io.out.write_all(rec.text.as_bytes())?;
        }
    }
    Ok(if rec.text.is_empty() {
        Outcome::NothingFound
    } else {
        Outcome::Ok
    })
}

struct Req {
    project: Option<String>,
    session: Option<String>,
    source: Source,
    /// Some = prompt mode.
    prompt: Option<String>,
    budget: usize,
    /// Where to ask git for the changed files.
    dir: Option<std::path::PathBuf>,
}

fn budget(cfg: &Config, flag: Option<usize>) -> Result<usize> {
    match flag {
        Some(b) => config::check_flag("--budget", "context_tokens", b),
        None => Ok(cfg
            .get_num("context_tokens")?
            .unwrap_or(context::DEFAULT_BUDGET)),
    }
}

fn thresholds(cfg: &Config) -> Result<Thresholds> {
    let d = Thresholds::default();
    Ok(Thresholds {
        coverage: cfg
            .get_num("context_prompt_coverage")?
            .unwrap_or(d.coverage),
        terms: cfg.get_num("context_prompt_terms")?.unwrap_or(d.terms),
    })
}

/// The database is read as it is (`store::open_if_present`): a hook never creates or
/// migrates it.
fn build(home: &Path, cfg: &Config, conn: rusqlite::Connection, req: &Req) -> Result<Context> {
    let start = Instant::now();
    let now_ms = chrono::Utc::now().timestamp_millis();
    let mut rec = Context {
        v: crate::record::VERSION,
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
            let searcher = Searcher::open(home, conn, cfg)?;
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
    req: &Req,
    now_ms: i64,
    rec: &mut Context,
) -> Result<()> {
    let git = cfg.get("search_git_files").as_deref() != Some("0");
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
    let built = context::build(&conn, cfg, &opts)?;
    rec.layers = built.layers;
    if let Some(note) = others_note
        && let Some(l) = rec.layers.iter_mut().find(|l| l.name == "observations")
    {
        l.reason = Some(match l.reason.take() {
            Some(r) => format!("{r}; {note}"),
            None => note,
        });
    }
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
            }
        })
        .collect();
    rec.text = built.text;
    if rec.text.is_empty() && !context::has_any_memory(&conn, req.project.as_deref())? {
        rec.text = WELCOME.to_string();
    }
    Ok(())
}

/// Whether other projects' memories may come in at all (MEM_CONTEXT_OTHER_PROJECTS, off by
/// default): one project's work showing up in another's session is a leak unless asked for.
fn other_projects_allowed(cfg: &Config) -> bool {
    cfg.get_bool("context_other_projects")
}

/// What the work at hand is about, as words: the branch name and the changed files' names.
/// `None` when that says nothing (on main with a clean tree).
fn cross_query(req: &Req, files: &[String]) -> Option<String> {
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
    req: &Req,
    query: &str,
) -> (Vec<context::Other>, Option<String>) {
    let found = thresholds(cfg)
        .and_then(|th| prompt::relevant(s, query, Filters::default(), req.project.clone(), 10, th));
    match found {
        Err(e) => (vec![], Some(format!("other projects not searched: {e}"))),
        Ok(rel) => (
            rel.into_iter()
                .filter(|r| r.hit.other_project && r.hit.source == "observation")
                .take(3)
                .map(|r| context::Other {
                    id: r.hit.id,
                    kind: r.hit.kind.clone(),
                    title: r.hit.title.clone(),
                    created_ms: crate::index::time_ms(&r.hit.created_at),
                    project_name: r.hit.project_name.clone().unwrap_or_default(),
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
    req: &Req,
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
    let found = prompt::relevant(s, &text, filters, req.project.clone(), 5, thresholds(cfg)?)?;
    if found.is_empty() {
        return Ok(());
    }
    let head = "memkit: memories that may bear on this prompt\n";
    let foot = "`mem-report --obs <id>` shows one in full; `mem-search \"<words>\"` finds more.\n";
    let mut body = String::new();
    let mut used = estimate(head) + estimate(foot);
    for r in &found {
        let h = &r.hit;
        let from = h
            .other_project
            .then(|| h.project_name.clone().unwrap_or_default());
        let label = if h.source == "session" {
            format!("session #{}", h.id)
        } else {
            format!("#{} {}", h.id, h.kind)
        };
        let mut line = context::index_line(
            &label,
            &h.title,
            crate::index::time_ms(&h.created_at),
            from.as_deref(),
            now_ms,
        );
        let gist = h
            .summary
            .as_deref()
            .map(context::flatten)
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
        });
    }
    if !body.is_empty() {
        rec.text = format!("{head}{body}{foot}");
    }
    Ok(())
}

const WELCOME: &str = "memkit is recording this project; what happens in this session will be remembered here next time (`mem-search \"<words>\"` searches past work).\n";

/// Hook mode: read the payload, print the hook JSON or nothing, and never fail.
fn run_hook(io: &mut Io, args: &Args) -> Outcome {
    if let Some(v) = cli::guard_hook("mem-context", |home| hook_inner(home, args)) {
        // A closed stdout is Claude Code's business; nothing to report.
        let _ = io.record(&v);
    }
    Outcome::Ok
}

fn hook_inner(home: &Path, args: &Args) -> Result<Option<Value>> {
    let payload = HookPayload::from_value(crate::hook::read_stdin()?).expect("an object");
    let cfg = Config::load(home).unwrap_or_else(|_| Config::env_only(home));
    let dir = project::dir(payload.cwd.as_deref());
    let pr = dir.as_deref().map(project::identify);
    let (policy, bad) = crate::capture::Policy::for_hook(&cfg);
    for msg in bad {
        cli::log_line(home, "mem-context", "warn", &msg);
    }
    if let (Some(p), Some(d)) = (&pr, &dir)
        && policy.excluded(p, Some(d))
    {
        return Ok(None);
    }
    let is_prompt = args.prompt.is_some() || payload.event.as_deref() == Some("UserPromptSubmit");
    let prompt = if is_prompt {
        Some(
            args.prompt
                .clone()
                .filter(|p| !p.is_empty())
                .or(payload.prompt.clone())
                .unwrap_or_default(),
        )
    } else {
        None
    };
    let req = Req {
        project: args.project.clone().or(pr.map(|p| p.root)),
        session: payload.session_id.clone(),
        source: payload
            .source
            .as_deref()
            .map(Source::parse)
            .unwrap_or(args.source),
        prompt,
        budget: budget(&cfg, args.budget)?,
        dir: dir.map(std::path::PathBuf::from),
    };
    // A database another process holds must not keep the session waiting: give up with no
    // context rather than late.
    let wait = store::Wait::Until(std::time::Instant::now() + super::capture::HOOK_WAIT);
    let Some(conn) = store::open_if_present_with(&cfg.db_path(), wait)? else {
        return Ok(None);
    };
    let rec = build(home, &cfg, conn, &req)?;
    if rec.text.is_empty() {
        return Ok(None);
    }
    Ok(Some(crate::context::hook_json(&rec.event, &rec.text)))
}
