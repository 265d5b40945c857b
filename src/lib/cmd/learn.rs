//! mem-learn: a project's learnings, with a confidence that grows with evidence. With no
//! subcommand (the pipeline's stage) it learns from every session summarised since the last run
//! and heals the call graph from those sessions' observations.

use std::collections::BTreeMap;

use clap::{CommandFactory, Parser, Subcommand};
use serde_json::{Value, json};

use crate::cli::{Common, Io, Outcome};
use crate::config::{self, Config};
use crate::store::{self, events, functions as fmap, learnings, observations, projects};
use crate::{Error, Result, project};
use memkit_compress::llm::Backend;
use memkit_learn::{Action, Candidate, heal};

pub const TOOL: super::Tool = super::Tool {
    name: "mem-learn",
    command: || Args::command(),
    details: DETAILS,
    examples: &[
        (
            "mem-learn list",
            "The current project's active learnings, most confident first.",
        ),
        (
            "mem-learn add 'Run the tests with uv run pytest -m \"not browser\"' --category convention",
            "A learning typed by hand: trusted fully, never decays.",
        ),
        (
            "mem-learn list --all --project spotter --format jsonl | jq -r 'select(.is_active | not) | .content'",
            "What was contradicted in a project.",
        ),
        (
            "mem-learn extract --session 3f2a… --backend anthropic",
            "Learn from one session again now, with an LLM.",
        ),
    ],
};

const DETAILS: &str = r#"
A learning is a convention, gotcha, decision, dependency or pattern of a project, with a confidence.
New learnings start at 0.5. One seen again in another session gains a fifth of its distance to 0.95
(0.50, 0.59, 0.66, 0.72, 0.77, …) and its times_seen grows; a session counts once. One contradicted
loses 0.3 (never below 0.1) and is inactive at 0.1, and the learning that contradicted it is stored
as its replacement (replaced_by), so the topic is never forgotten. Learnings typed with add are
manual: confidence 1.0, never merged into, decayed or contradicted. mem-context's SessionStart block
shows, within its learnings cap, the rules the user stated first (manual ones, then those found in
prompts, whatever their confidence), then the usual commands on one line, most used first (output
plumbing, the project's path and git -C folded away; git housekeeping, one-offs and commands a
stated rule speaks against, as "use tspec instead of cargo" does cargo's, left out), then other
learnings with confidence at least 0.5, and how many more list holds. list gives each learning's
kind (rule, inferred, command), a command learning's commands as folded, and the stated rule a
command goes against (contradicted_by).

Extraction (no subcommand, or extract): once per session summary (a session summarised again after
new work is learned from again; kill -9 between the call and the write loses nothing and duplicates
nothing: outcomes and the session's mark are written in one transaction). With an LLM backend
(MEM_LLM or --backend; the same backends, retries and MEM_LLM_DAILY_TOKENS cap as mem-compress):
one call per session given its summary, its observations, what the user typed, and the project's
active learnings with their ids (low-confidence ones marked), answering candidates with a category,
a confidence and the id of a learning they contradict. Without one, or past the cap, or when the
call fails: the heuristic, which takes only what the user typed (never assistant text, a subagent's
task, wrappers, quotes or code): sentences that state a rule ("always …", "never …", "don't …", "use
X instead of Y", "remember that …", "from now on …"); and commands that succeeded in this session
and an earlier one of the project ("Sessions here run `uv run pyright`"), compared with output
plumbing (2>&1, | tail -N, | grep …), a leading cd, timeout N and the project's own path folded
away; not ls, cat, grep and other looking around, not git, not a command whose words name no
build, test, lint or format, install or run. Each candidate's outcome: skipped (extraction
confidence under 0.3, already counted for this session, or contradicting a manual learning), merged
(the same as an active learning of the project: embedding cosine at least 0.90 with the model of
the stored vectors when it is installed, and always when the content words nearly coincide),
contradicted (the old one penalised, the new one inserted) or inserted. One learning record per
candidate on stdout and an event_log row (event learning).

Call-graph healing (same runs): functions named together in one observation's functions_changed
(2 to 6 known functions of the project) confirm the edges between them (+0.15, at most 1.0) or add
one at 0.6 (source observation) when mem-ast saw none. An observation edge not confirmed during 10
sessions of its project loses 0.05 per further session. Parser edges are refreshed by mem-ast.
One edge record per change.
"#;

/// Project learnings: extract, list, add, edit, remove, reset.
#[derive(Debug, Parser)]
#[command(name = "mem-learn", version, long_about = None)]
pub struct Args {
    #[command(subcommand)]
    pub cmd: Option<Cmd>,
    /// Backend for extraction (anthropic, openai, claude-cli, heuristic), overriding MEM_LLM.
    #[arg(long, value_name = "NAME", global = true)]
    pub backend: Option<String>,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Debug, Subcommand)]
pub enum Cmd {
    /// List learnings (default: the current project's active ones).
    List {
        /// A project (directory, root path or name).
        #[arg(long, value_name = "PROJECT", conflicts_with = "all_projects")]
        project: Option<String>,
        /// Every project.
        #[arg(long)]
        all_projects: bool,
        /// Inactive (contradicted) ones too.
        #[arg(long)]
        all: bool,
        #[arg(long, value_name = "C")]
        min_confidence: Option<f64>,
    },
    /// Add a learning by hand (confidence 1.0, never decays).
    Add {
        text: String,
        /// convention, gotcha, decision, dependency or pattern.
        #[arg(long, default_value = "convention")]
        category: String,
        #[arg(long, value_name = "PROJECT")]
        project: Option<String>,
    },
    /// Replace a learning's text (it becomes manual: the user vouches for it).
    Edit {
        id: String,
        text: String,
        #[arg(long)]
        category: Option<String>,
    },
    /// Delete a learning.
    Remove { id: String },
    /// Delete a project's learnings (every project's with --all-projects) and learn again from scratch on the next run.
    Reset {
        #[arg(long, value_name = "PROJECT", conflicts_with = "all_projects")]
        project: Option<String>,
        #[arg(long)]
        all_projects: bool,
        /// Do not ask (required when stdin is not a terminal).
        #[arg(long)]
        yes: bool,
    },
    /// Learn now: from the sessions due (or one session, again).
    Extract {
        /// The session (s4 or its session id).
        #[arg(long, value_name = "ID")]
        session: Option<String>,
    },
}

const COLUMNS: &[&str] = &["ref", "category", "confidence", "times_seen", "content"];
const LIST_COLUMNS: &[&str] = &[
    "ref",
    "kind",
    "category",
    "confidence",
    "times_seen",
    "content",
    "contradicted_by",
];

pub fn run(args: Args, io: &mut Io) -> Result<Outcome> {
    let home = config::data_home();
    let cfg = Config::load(&home)?;
    // What is typed here is stored and shown at every SessionStart: redacted like a note.
    memkit_capture::redact::configure(&cfg)?;
    let db = cfg.db_path();
    match args.cmd {
        None => extract(io, &cfg, args.backend.as_deref(), None),
        Some(Cmd::Extract { session }) => {
            extract(io, &cfg, args.backend.as_deref(), session.as_deref())
        }
        Some(Cmd::List {
            project,
            all_projects,
            all,
            min_confidence,
        }) => {
            let Some(conn) = store::open_if_present(&db)? else {
                return Ok(io.no_memories(&db));
            };
            let roots = match (all_projects, project) {
                (true, _) => None,
                (false, p) => Some(project_of(&conn, p.as_deref())?),
            };
            let mut rows = Vec::new();
            for root in roots.map_or(vec![None], |r| r.into_iter().map(Some).collect()) {
                rows.extend(learnings::list(
                    &conn,
                    &learnings::Filter {
                        project: root.as_deref(),
                        all,
                        min_confidence,
                    },
                )?);
            }
            // Each row's kind, folded commands and the rule it goes against, beside it.
            let notes = memkit_learn::rules::notes(&rows);
            let recs: Vec<Value> = rows
                .iter()
                .zip(&notes)
                .map(|(l, n)| merged(record(l), n))
                .collect();
            io.listing(&recs, LIST_COLUMNS)?;
            Ok(if recs.is_empty() {
                io.warn("no learnings (mem-pipeline extracts them; mem-learn add TEXT adds one)");
                Outcome::NothingFound
            } else {
                Outcome::Ok
            })
        }
        Some(Cmd::Add {
            text,
            category,
            project,
        }) => {
            let text = memkit_capture::redact::redact_str(text.trim()).into_owned();
            if text.is_empty() {
                return Err(Error::Usage("add: the learning's text is empty".into()));
            }
            let category = category_arg(&category)?;
            let conn = store::open(&db)?;
            let root = project_of(&conn, project.as_deref())?.remove(0);
            let id = learnings::insert(
                &conn,
                &learnings::New {
                    project: Some(&root),
                    content: &text,
                    category,
                    confidence: memkit_learn::MANUAL,
                    source_session: None,
                    evidence: None,
                    is_manual: true,
                },
                &store::now(),
            )?;
            events::log(
                &conn,
                None,
                "learning",
                None,
                "info",
                Some(&json!({"outcome": "added", "id": id, "project": root})),
            )?;
            let l = learnings::get(&conn, id)?.expect("just inserted");
            io.listing(&[record(&l)], COLUMNS)?;
            Ok(Outcome::Ok)
        }
        Some(Cmd::Edit { id, text, category }) => {
            let conn = store::open(&db)?;
            let mut l = found(&conn, &id)?;
            if text.trim().is_empty() {
                return Err(Error::Usage("edit: the new text is empty".into()));
            }
            l.content = memkit_capture::redact::redact_str(text.trim()).into_owned();
            if let Some(c) = category {
                l.category = category_arg(&c)?.to_string();
            }
            // What the user wrote is theirs: manual, fully trusted, active again.
            l.confidence = memkit_learn::MANUAL;
            l.is_active = true;
            l.replaced_by = None;
            let tx = conn.unchecked_transaction()?;
            learnings::update(&tx, &l, &store::now())?;
            tx.execute("UPDATE learnings SET is_manual = 1 WHERE id = ?1", [l.id])?;
            tx.commit()?;
            let l = learnings::get(&conn, l.id)?.expect("just updated");
            io.listing(&[record(&l)], COLUMNS)?;
            Ok(Outcome::Ok)
        }
        Some(Cmd::Remove { id }) => {
            let conn = store::open(&db)?;
            let l = found(&conn, &id)?;
            learnings::remove(&conn, l.id)?;
            io.tell(format!("removed learning {}: {}", l.id, l.content));
            Ok(Outcome::Ok)
        }
        Some(Cmd::Reset {
            project,
            all_projects,
            yes,
        }) => {
            let Some(conn) = store::open_if_present(&db)? else {
                return Ok(io.no_memories(&db));
            };
            let roots = if all_projects {
                vec![None]
            } else {
                project_of(&conn, project.as_deref())?
                    .into_iter()
                    .map(Some)
                    .collect()
            };
            let what = match &roots[..] {
                [None] => "every project".to_string(),
                r => r.iter().flatten().cloned().collect::<Vec<_>>().join(", "),
            };
            if !yes && !confirm(&format!("delete the learnings of {what}?"))? {
                return Err(Error::Usage(
                    "reset: not confirmed (give --yes when stdin is not a terminal)".into(),
                ));
            }
            let mut n = 0;
            for r in &roots {
                n += learnings::reset(&conn, r.as_deref())?;
            }
            io.info(format!(
                "deleted {n} learnings of {what}; mem-learn learns again on the next run"
            ));
            Ok(Outcome::Ok)
        }
    }
}

fn category_arg(c: &str) -> Result<&'static str> {
    learnings::CATEGORIES
        .iter()
        .find(|k| **k == c.trim().to_lowercase())
        .copied()
        .ok_or_else(|| {
            Error::Usage(format!(
                "--category {c:?}: use one of {}",
                learnings::CATEGORIES.join(", ")
            ))
        })
}

/// The project roots a command means: the one named, else the current directory's.
fn project_of(conn: &rusqlite::Connection, p: Option<&str>) -> Result<Vec<String>> {
    match p {
        Some(p) => projects::resolve(conn, p),
        None => project::current_dir()
            .map(|d| vec![project::identify(&d).root])
            .ok_or_else(|| {
                Error::Usage("no project here: give --project (or --all-projects)".into())
            }),
    }
}

/// The learning an id names (`12` or `l12`).
fn found(conn: &rusqlite::Connection, id: &str) -> Result<learnings::Learning> {
    let n: i64 = id
        .trim()
        .trim_start_matches(['l', 'L', '#'])
        .parse()
        .map_err(|_| Error::Usage(format!("{id:?} is not a learning id (a number such as 12)")))?;
    learnings::get(conn, n)?
        .ok_or_else(|| Error::Usage(format!("no learning {n} (mem-learn list --all shows them)")))
}

fn confirm(question: &str) -> Result<bool> {
    use std::io::{BufRead, IsTerminal, Write};
    if !std::io::stdin().is_terminal() {
        return Ok(false);
    }
    eprint!("mem-learn: {question} [y/N] ");
    std::io::stderr().flush()?;
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    Ok(matches!(line.trim(), "y" | "Y" | "yes"))
}

fn record(l: &learnings::Learning) -> Value {
    let mut v = serde_json::to_value(l).unwrap_or_default();
    if let Some(o) = v.as_object_mut() {
        o.insert("type".into(), "learning".into());
        o.insert("v".into(), memkit_core::record::VERSION.into());
    }
    v
}

fn merged(mut v: Value, extra: impl serde::Serialize) -> Value {
    if let (Some(o), Ok(Value::Object(x))) = (v.as_object_mut(), serde_json::to_value(extra)) {
        o.extend(x);
    }
    v
}

/// Says whether two learnings are the same: lexically, or by the cosine of their vectors with the
/// model of the stored embeddings when it is installed (loaded on first need, vectors cached).
struct Sameness<'a> {
    conn: &'a rusqlite::Connection,
    model: Option<(String, usize, std::path::PathBuf)>,
    embedder: Option<std::result::Result<memkit_search::embed::Embedder, String>>,
    /// Vectors of this run's texts: every candidate is compared with every active learning.
    seen: std::collections::HashMap<String, Option<Vec<f32>>>,
}

impl<'a> Sameness<'a> {
    fn new(conn: &'a rusqlite::Connection, cfg: &Config) -> Result<Sameness<'a>> {
        let model = store::stats::latest_model(conn)?.and_then(|(name, dim)| {
            let hint = cfg.get("embed_model");
            memkit_search::embed::find_model(&name, hint.as_deref())
                .map(|(dir, _)| (name, dim, dir))
        });
        Ok(Sameness {
            conn,
            model,
            embedder: None,
            seen: Default::default(),
        })
    }

    fn vector(&mut self, text: &str) -> Option<Vec<f32>> {
        if let Some(v) = self.seen.get(text) {
            return v.clone();
        }
        let v = self.embed(text);
        self.seen.insert(text.to_string(), v.clone());
        v
    }

    fn embed(&mut self, text: &str) -> Option<Vec<f32>> {
        use memkit_search::embed::{Embedder, LoadOptions, store as es};
        let (name, dim, dir) = self.model.as_ref()?;
        if let Ok(Some(v)) = es::cache_get(self.conn, name, *dim, text) {
            return Some(v);
        }
        let e = self.embedder.get_or_insert_with(|| {
            Embedder::load_with(dir, Some(*dim), LoadOptions::query()).map_err(|e| e.to_string())
        });
        let v = e.as_mut().ok()?.embed(&[text]).ok()?.remove(0);
        let _ = es::cache_put(self.conn, name, *dim, text, &v);
        Some(v)
    }

    fn same(&mut self, a: &str, b: &str) -> bool {
        if memkit_learn::lexically_same(a, b) {
            return true;
        }
        match (self.vector(a), self.vector(b)) {
            (Some(x), Some(y)) => {
                memkit_search::embed::cosine(&x, &y) as f64 >= memkit_learn::DUPLICATE_COSINE
            }
            _ => false,
        }
    }

    /// Why vectors were not used, when a model was expected.
    fn trouble(&self) -> Option<String> {
        match &self.embedder {
            Some(Err(e)) => Some(format!("learnings compared by their words only: {e}")),
            _ => None,
        }
    }
}

fn extract(
    io: &mut Io,
    cfg: &Config,
    backend: Option<&str>,
    only: Option<&str>,
) -> Result<Outcome> {
    let start = std::time::Instant::now();
    let db = cfg.db_path();
    let Some(conn) = store::open_if_present(&db)? else {
        return Ok(io.no_memories(&db));
    };
    let (b, warning) = Backend::from_config(cfg, backend)?;
    if let Some(w) = warning {
        io.warn(w);
    }
    let opts = memkit_compress::Options::from_config(cfg)?;
    let mut ex = memkit_learn::extract::Extractor::new(b, &opts, &conn)?;
    let mut same = Sameness::new(&conn, cfg)?;
    let only = only.map(|s| store::sessions::id_of(&conn, s)).transpose()?;
    let due = learnings::due(&conn, only.as_deref())?;
    if due.is_empty() && only.is_some() {
        return Err(Error::Usage(format!(
            "--session {}: no such session with a summary (mem-pipeline summarises sessions)",
            only.unwrap_or_default()
        )));
    }
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut fallbacks: Vec<String> = Vec::new();
    for s in &due {
        let project = s.project.as_deref();
        let obs = observations::of_session(&conn, &s.session_id)?;
        let prompts = store::queue::typed_prompts(&conn, &s.session_id)?;
        let active = learnings::list(
            &conn,
            &learnings::Filter {
                project: Some(project.unwrap_or("")),
                ..Default::default()
            },
        )?;
        let repeated = match project {
            Some(p) => memkit_learn::heuristic::repeated_commands(
                &learnings::commands(&conn, &s.session_id)?,
                &learnings::earlier_commands(&conn, p, &s.session_id)?,
                Some(p),
            ),
            None => Vec::new(),
        };
        let got = ex.extract(
            &s.session_id,
            &s.summary,
            &obs,
            &prompts,
            &repeated,
            &active,
        )?;
        if let Some(f) = &got.fallback
            && !fallbacks.contains(f)
        {
            io.warn(format!(
                "the heuristic extracted instead of {}: {f}",
                ex.backend.kind.name()
            ));
            fallbacks.push(f.clone());
        }
        let now = store::now();
        // Outcomes, healing and the session's mark in one transaction.
        let tx = conn.unchecked_transaction()?;
        let mut active = active;
        let mut recs = Vec::new();
        for c in &got.candidates {
            let action =
                memkit_learn::decide(c, &active, &s.session_id, &mut |a, b| same.same(a, b));
            let rec = apply(
                &tx,
                project,
                &s.session_id,
                c,
                &action,
                &mut active,
                &got.by,
                &now,
            )?;
            *counts
                .entry(rec["outcome"].as_str().unwrap_or("").to_string())
                .or_default() += 1;
            recs.push(rec);
        }
        if let Some(p) = project {
            for rec in heal_session(&tx, p, &s.session_id, &obs, &now)? {
                *counts
                    .entry(format!("edges_{}", rec["outcome"].as_str().unwrap_or("")))
                    .or_default() += 1;
                recs.push(rec);
            }
        }
        learnings::mark_learned(&tx, s, &now)?;
        tx.commit()?;
        *counts.entry("sessions".into()).or_default() += 1;
        for r in &recs {
            io.record(r)?;
        }
    }
    if let Some(t) = same.trouble() {
        io.warn(t);
    }
    if ex.calls > 0 {
        counts.insert("llm_calls".into(), ex.calls);
        counts.insert("tokens_in".into(), ex.tokens_in);
        counts.insert("tokens_out".into(), ex.tokens_out);
    }
    io.summary(counts, start)?;
    Ok(Outcome::Ok)
}

/// Writes what `action` does and returns its record; `active` follows the changes.
#[allow(clippy::too_many_arguments)]
fn apply(
    conn: &rusqlite::Connection,
    project: Option<&str>,
    session: &str,
    c: &Candidate,
    action: &Action,
    active: &mut Vec<learnings::Learning>,
    by: &str,
    now: &str,
) -> Result<Value> {
    let insert = |active: &mut Vec<learnings::Learning>| -> Result<learnings::Learning> {
        let id = learnings::insert(
            conn,
            &learnings::New {
                project,
                content: &c.content,
                category: memkit_learn::category(&c.category),
                confidence: memkit_learn::INSERTED,
                source_session: Some(session),
                evidence: c.evidence.as_deref(),
                is_manual: false,
            },
            now,
        )?;
        let l = learnings::get(conn, id)?.expect("just inserted");
        active.push(l.clone());
        Ok(l)
    };
    let (outcome, l, extra) = match action {
        Action::Skip { why } => ("skipped", None, json!({"why": why})),
        Action::Insert => ("inserted", Some(insert(active)?), json!({})),
        Action::Merge { into } => {
            let l = active
                .iter_mut()
                .find(|l| l.id == *into)
                .expect("an active learning");
            memkit_learn::apply_merge(l, session);
            learnings::update(conn, l, now)?;
            ("merged", Some(l.clone()), json!({"candidate": c.content}))
        }
        Action::Contradict { old, into } => {
            // The replacement: the learning that already says it (seen again), else a new one.
            let new = match into {
                Some(id) => {
                    let l = active
                        .iter_mut()
                        .find(|l| l.id == *id)
                        .expect("an active learning");
                    memkit_learn::apply_merge(l, session);
                    learnings::update(conn, l, now)?;
                    l.clone()
                }
                None => insert(active)?,
            };
            let l = active
                .iter_mut()
                .find(|l| l.id == *old)
                .expect("an active learning");
            memkit_learn::apply_contradiction(l, new.id);
            learnings::update(conn, l, now)?;
            let old_rec = json!({"id": l.id, "confidence": l.confidence, "is_active": l.is_active});
            if !l.is_active {
                active.retain(|l| l.id != *old);
            }
            ("contradicted", Some(new), json!({"contradicted": old_rec}))
        }
    };
    let mut rec = match &l {
        Some(l) => record(l),
        None => json!({"type": "learning", "v": memkit_core::record::VERSION,
                       "project": project, "content": c.content, "category": c.category}),
    };
    let o = rec.as_object_mut().expect("an object");
    o.insert("outcome".into(), outcome.into());
    o.insert("session_id".into(), session.into());
    o.insert("by".into(), by.into());
    o.insert("extraction_confidence".into(), c.confidence.into());
    if let Value::Object(x) = extra {
        o.extend(x);
    }
    events::log(conn, Some(session), "learning", None, "info", Some(&rec))?;
    Ok(rec)
}

/// Heals `project`'s call graph from a session's observations, then fades the observation edges
/// no session confirmed lately.
fn heal_session(
    conn: &rusqlite::Connection,
    project: &str,
    session: &str,
    obs: &[memkit_core::record::Observation],
    now: &str,
) -> Result<Vec<Value>> {
    let mut out = Vec::new();
    let edge_rec = |outcome: &str, id: i64, caller: &str, callee: &str, c: f64| {
        json!({"type": "edge", "v": memkit_core::record::VERSION, "outcome": outcome, "id": id,
               "caller": caller, "callee": callee, "confidence": c, "session_id": session})
    };
    for o in obs {
        if o.functions_changed.len() < 2 {
            continue;
        }
        let edges = fmap::graph_edges(conn, project)?;
        let view: Vec<heal::Edge> = edges
            .iter()
            .map(|e| heal::Edge {
                id: e.id,
                caller: e.caller.clone(),
                callee: e.callee.clone(),
                target: e.target.clone(),
            })
            .collect();
        let mut files: BTreeMap<String, Option<String>> = BTreeMap::new();
        for n in &o.functions_changed {
            files.insert(n.clone(), fmap::defining_file(conn, project, n)?);
        }
        let known = |n: &str| files.get(n).is_some_and(|f| f.is_some());
        for h in heal::plan(&o.functions_changed, &known, &view) {
            match h {
                heal::Heal::Confirm { edge } => {
                    let e = edges.iter().find(|e| e.id == edge).expect("a planned edge");
                    let c = heal::confirmed(e.confidence);
                    fmap::confirm_edge(conn, edge, c, now)?;
                    out.push(edge_rec("confirmed", edge, &e.caller, &e.callee, c));
                }
                heal::Heal::Add { caller, callee } => {
                    let file = files[&caller].clone().unwrap_or_default();
                    let id = fmap::add_observed_edge(
                        conn,
                        session,
                        &file,
                        &caller,
                        &callee,
                        heal::ADDED,
                        now,
                    )?;
                    out.push(edge_rec("added", id, &caller, &callee, heal::ADDED));
                }
            }
        }
    }
    for e in fmap::graph_edges(conn, project)? {
        if e.source != "observation" {
            continue;
        }
        let Some(at) = &e.confirmed_at else { continue };
        let n = fmap::sessions_since(conn, project, at)?;
        let c = heal::decayed(e.base_confidence.unwrap_or(e.confidence), n);
        if c < e.confidence {
            fmap::set_edge_confidence(conn, e.id, c)?;
            out.push(edge_rec("decayed", e.id, &e.caller, &e.callee, c));
        }
    }
    Ok(out)
}
