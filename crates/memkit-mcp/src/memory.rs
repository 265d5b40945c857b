//! What the MCP tools do, as plain calls on the store: search, get, timeline, save, context and
//! file history, each answering a JSON value or an error whose words a model can act on. The
//! rules every memkit tool keeps hold here too: MEM_DISABLE answers nothing, an excluded project
//! (MEM_EXCLUDE) is neither shown nor stored, and another project's memories come only when the
//! call asks for every project or MEM_CONTEXT_OTHER_PROJECTS=1, each then labelled.

use std::path::{Path, PathBuf};

use rusqlite::Connection;
use serde_json::{Value, json};

use memkit_capture::{Note, Policy};
use memkit_context::request::{self as context_request, Request};
use memkit_context::{Source, history, recall};
use memkit_core::config::{self, Config};
use memkit_core::ids::{self, Id};
use memkit_core::project::{self, Project};
use memkit_core::record::{Hit, Observation};
use memkit_core::store::{self, learnings, observations, report as rep};
use memkit_core::{Error, Result};
use memkit_search::search::{self, Engine, Query, Searcher};

/// Why a call was answered with nothing: shown to the model as a tool error, not a protocol
/// error (the call was well formed).
#[derive(Debug)]
pub enum Failure {
    /// Arguments that cannot be right: a bad date, a malformed ref, an unknown type.
    BadArguments(String),
    /// A well-formed call with no answer: an unknown ref, no memories yet, disabled, excluded.
    Refused(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::BadArguments(m) | Failure::Refused(m) => f.write_str(m),
        }
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        match e.root() {
            Error::Usage(_) | Error::Input { .. } => Failure::BadArguments(e.to_string()),
            _ => Failure::Refused(e.to_string()),
        }
    }
}

pub type Answer = std::result::Result<Value, Failure>;

fn refuse<T>(msg: impl Into<String>) -> std::result::Result<T, Failure> {
    Err(Failure::Refused(msg.into()))
}

fn bad<T>(msg: impl Into<String>) -> std::result::Result<T, Failure> {
    Err(Failure::BadArguments(msg.into()))
}

/// The store as one server process sees it: its data home, settings and project (the one of
/// the directory the client started it in).
pub struct Memory {
    home: PathBuf,
    cfg: Config,
    policy: Policy,
    /// The server's directory and its project.
    dir: Option<String>,
    current: Option<Project>,
    /// MEM_CONTEXT_OTHER_PROJECTS=1: other projects' memories may be shown, labelled.
    others: bool,
}

/// The arguments of `search`, named like mem-search's flags.
#[derive(Debug, Default, Clone)]
pub struct SearchArgs {
    pub query: String,
    pub project: Option<String>,
    pub all_projects: bool,
    pub kinds: Vec<String>,
    pub since: Option<String>,
    pub until: Option<String>,
    pub files: Option<Vec<String>>,
    pub limit: Option<usize>,
}

/// The most refs one `get` takes, and observations one `timeline` side lists.
pub const MAX_REFS: usize = 50;
pub const MAX_TIMELINE: usize = 50;

impl Memory {
    /// Settings as every tool reads them; bad settings are an error here, before serving.
    pub fn open(home: &Path, dir: Option<String>) -> Result<Memory> {
        let cfg = Config::load(home)?;
        memkit_capture::redact::configure(&cfg)?;
        let policy = Policy::from_config(&cfg)?;
        let current = dir.as_deref().map(project::identify);
        Ok(Memory {
            home: home.to_path_buf(),
            others: config::CONTEXT_OTHER_PROJECTS.get(&cfg),
            cfg,
            policy,
            dir,
            current,
        })
    }

    /// The store, read as it is; MEM_DISABLE and a missing database are refusals.
    fn conn(&self) -> std::result::Result<Connection, Failure> {
        if config::disabled() {
            return refuse(
                "memkit is disabled here (MEM_DISABLE is set): it shows and stores nothing",
            );
        }
        let path = self.cfg.home.db();
        match store::open_if_present(&path)? {
            Some(c) => Ok(c),
            None => refuse(format!(
                "no memories yet ({} does not exist): memkit stores what Claude Code sessions do once its hooks are installed (mem-install)",
                path.display()
            )),
        }
    }

    fn excluded(&self, root: &str) -> bool {
        let dir = self
            .current
            .as_ref()
            .filter(|p| p.root == root)
            .and(self.dir.as_deref());
        let p = Project {
            root: root.to_string(),
            name: project::name_of(root),
            branch: None,
            source: "path",
        };
        self.policy.excluded(&p, dir)
    }

    fn check_excluded(&self, root: &str) -> std::result::Result<(), Failure> {
        if self.excluded(root) {
            return refuse(format!(
                "project {root} is excluded (MEM_EXCLUDE): memkit neither stores nor shows its memories"
            ));
        }
        Ok(())
    }

    fn current_root(&self) -> Option<&str> {
        self.current.as_ref().map(|p| p.root.as_str())
    }

    /// The project roots a call covers: those it names, else the server's, else (with every
    /// project asked for or allowed) None = all. An excluded one is refused.
    fn scope(
        &self,
        conn: &Connection,
        named: Option<&str>,
        all_projects: bool,
    ) -> std::result::Result<Option<Vec<String>>, Failure> {
        if let Some(p) = named.filter(|p| !p.trim().is_empty()) {
            let roots = store::projects::resolve(conn, p)?;
            for r in &roots {
                self.check_excluded(r)?;
            }
            return Ok(Some(roots));
        }
        if all_projects || self.others {
            return Ok(None);
        }
        match self.current_root() {
            Some(root) => {
                self.check_excluded(root)?;
                Ok(Some(vec![root.to_string()]))
            }
            None => refuse(
                "no project here (the server was started outside any directory memkit knows): name one with project, or pass all_projects: true",
            ),
        }
    }

    /// Whether a record of `root` may be shown to a call that asked for `all_projects`.
    fn visible(&self, root: Option<&str>, all_projects: bool) -> bool {
        match root {
            Some(r) if self.excluded(r) => false,
            Some(r) if Some(r) != self.current_root() => all_projects || self.others,
            _ => true,
        }
    }

    /// The label of a record from another project than the server's, when it is one.
    fn label(&self, v: &mut Value, root: Option<&str>) {
        if let Some(r) = root
            && Some(r) != self.current_root()
        {
            v["other_project"] = json!(true);
            v["project_name"] = json!(project::name_of(r));
        }
    }

    /// `search`: mem-search's ranking and filters; refs, titles, scores and one line each.
    pub fn search(&self, a: SearchArgs) -> Answer {
        if a.query.trim().is_empty() {
            return bad("query is empty: give some words to look for");
        }
        for (name, v, end) in [("since", &a.since, false), ("until", &a.until, true)] {
            if let Some(v) = v {
                search::parse_bound(v, end)
                    .map_err(|e| Failure::BadArguments(format!("{name}: {e}")))?;
            }
        }
        let limit = a.limit.unwrap_or(10);
        if limit == 0 || limit > search::MAX_LIMIT {
            return bad(format!("limit {limit}: give 1 to {}", search::MAX_LIMIT));
        }
        let conn = self.conn()?;
        let roots = self.scope(&conn, a.project.as_deref(), a.all_projects)?;
        let mut searcher = Searcher::open(&self.home, conn, &self.cfg)?;
        if config::SEARCH_MODEL_LOAD.get(&self.cfg) {
            searcher.use_installed_model()?;
        }
        let dir = self.dir.clone();
        let req = searcher.request(
            Query {
                text: a.query,
                project: None,
                projects: roots.clone().unwrap_or_default(),
                all_projects: roots.is_none(),
                kinds: a.kinds,
                after: a.since,
                before: a.until,
                files: a.files,
                limit,
                probe: true,
                engine: Engine::Auto,
                ..Query::default()
            },
            self.current_root().map(str::to_string),
            || {
                dir.map(|d| project::changed_files(Path::new(&d)))
                    .unwrap_or_default()
            },
        )?;
        let hits: Vec<Hit> = searcher
            .search(&req)?
            .into_iter()
            .filter(|h| !h.project.as_deref().is_some_and(|r| self.excluded(r)))
            .collect();
        let list: Vec<Value> = hits
            .iter()
            .map(|h| {
                let mut v = json!({"ref": h.handle, "score": (h.score * 1000.0).round() / 1000.0,
                    "type": h.kind, "title": h.title, "line": h.line, "created_at": h.created_at});
                self.label(&mut v, h.project.as_deref());
                if let Some(o) = &h.origin {
                    v["from"] = json!(o);
                }
                v
            })
            .collect();
        let mut out = json!({"hits": list});
        if hits.is_empty() {
            out["note"] = json!(match &roots {
                Some(rs)
                    if rs
                        .iter()
                        .all(|r| !rep::known(&searcher.conn, r).unwrap_or(false)) =>
                    "nothing found: no memories in this project yet; try all_projects: true"
                        .to_string(),
                _ => format!("nothing found: no memory matches {:?}", req.text),
            });
        } else {
            out["more"] = json!("get takes these refs for the full records");
        }
        Ok(out)
    }

    /// `get`: each ref in full (an observation, a session with its observations, a learning).
    pub fn get(&self, refs: &[String], all_projects: bool) -> Answer {
        if refs.is_empty() {
            return bad("refs is empty: give one or more refs such as o17, s4 or l3");
        }
        if refs.len() > MAX_REFS {
            return bad(format!("{} refs: at most {MAX_REFS} per call", refs.len()));
        }
        let ids: Vec<Id> = refs
            .iter()
            .map(|r| {
                ids::parse(r).ok_or_else(|| {
                    Failure::BadArguments(format!(
                        "not a ref: {r:?} (o17 an observation, s4 a session, l3 a learning)"
                    ))
                })
            })
            .collect::<std::result::Result<_, _>>()?;
        let conn = self.conn()?;
        let mut records = Vec::new();
        let mut missing = Vec::new();
        for id in ids {
            let (mut v, root) = match id {
                Id::Obs(n) => match observations::get(&conn, n)? {
                    Some(o) => (observation(&o), o.project.clone()),
                    None => {
                        missing.push(id.to_string());
                        continue;
                    }
                },
                Id::Session(n) => match store::sessions::id_at(&conn, n)?
                    .map(|sid| rep::session(&conn, &sid))
                    .transpose()?
                    .flatten()
                {
                    Some(s) => {
                        let obs: Vec<Value> = observations::of_session(&conn, &s.session_id)?
                            .iter()
                            .map(line)
                            .collect();
                        let mut v = serde_json::to_value(&s).map_err(Error::from)?;
                        v["observations"] = json!(obs);
                        (v, s.project.clone())
                    }
                    None => {
                        missing.push(id.to_string());
                        continue;
                    }
                },
                Id::Learning(n) => match learnings::get(&conn, n)? {
                    Some(l) => (
                        serde_json::to_value(&l).map_err(Error::from)?,
                        l.project.clone(),
                    ),
                    None => {
                        missing.push(id.to_string());
                        continue;
                    }
                },
            };
            if !self.visible(root.as_deref(), all_projects) {
                let r = root.as_deref().unwrap_or("?");
                if self.excluded(r) {
                    self.check_excluded(r)?;
                }
                return refuse(format!(
                    "{id} belongs to another project ({}): pass all_projects: true to read it",
                    project::name_of(r)
                ));
            }
            self.label(&mut v, root.as_deref());
            records.push(v);
        }
        if !missing.is_empty() {
            return refuse(format!(
                "unknown ref{}: {} (search or timeline give the refs that exist)",
                if missing.len() == 1 { "" } else { "s" },
                missing.join(", ")
            ));
        }
        Ok(json!({ "records": records }))
    }

    /// `timeline`: a project's observations around a moment (a time, a ref's, or now) with
    /// the sessions they belong to, oldest first.
    pub fn timeline(
        &self,
        named: Option<&str>,
        around: Option<&str>,
        before: Option<usize>,
        after: Option<usize>,
    ) -> Answer {
        let (before, after) = (before.unwrap_or(5), after.unwrap_or(5));
        if before > MAX_TIMELINE || after > MAX_TIMELINE {
            return bad(format!("before and after: at most {MAX_TIMELINE} each"));
        }
        let conn = self.conn()?;
        let roots = match self.scope(&conn, named, false)? {
            Some(r) => r,
            None => match self.current_root() {
                Some(r) => vec![r.to_string()],
                None => return bad("timeline covers one project: name it with project"),
            },
        };
        let at = match around.map(str::trim).filter(|s| !s.is_empty()) {
            None => store::now(),
            Some(t) => match ids::parse(t) {
                Some(id) => self.moment_of(&conn, id)?,
                None => match store::parse_instant(t) {
                    Some((when, _)) => when.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
                    None => {
                        return bad(format!(
                            "around: {t:?} is neither a ref (o17, s4) nor a date; {}",
                            store::DATE_HINT
                        ));
                    }
                },
            },
        };
        let obs = rep::around(&conn, Some(&roots), &at, before, after)?;
        let mut sessions: Vec<Value> = Vec::new();
        let mut seen: Vec<&str> = Vec::new();
        for o in &obs {
            if let Some(sid) = o.session_id.as_deref()
                && !seen.contains(&sid)
            {
                seen.push(sid);
                if let Some(s) = rep::session(&conn, sid)? {
                    sessions.push(json!({"ref": s.handle, "title": s.title,
                        "started_at": s.started_at, "last_activity_at": s.last_activity_at,
                        "observations": s.observations}));
                }
            }
        }
        let items: Vec<Value> = obs.iter().map(line).collect();
        let mut out = json!({"project": roots.iter().map(|r| project::name_of(r)).collect::<Vec<_>>().join(", "),
            "around": at, "observations": items, "sessions": sessions});
        if obs.is_empty() {
            out["note"] = json!("no observations in this project yet");
        }
        Ok(out)
    }

    fn moment_of(&self, conn: &Connection, id: Id) -> std::result::Result<String, Failure> {
        let t = match id {
            Id::Obs(n) => observations::get(conn, n)?.and_then(|o| o.created_at),
            Id::Session(n) => store::sessions::id_at(conn, n)?
                .map(|sid| rep::session(conn, &sid))
                .transpose()?
                .flatten()
                .and_then(|s| s.started_at.or(s.last_activity_at)),
            Id::Learning(n) => learnings::get(conn, n)?.map(|l| l.created_at),
        };
        t.map_or_else(|| refuse(format!("unknown ref: {id}")), Ok)
    }

    /// `save`: a note, redacted and queued like `mem-capture --note`; the pipeline that makes
    /// it searchable is started in the background.
    pub fn save(&self, text: &str, tags: &[String], named: Option<&str>) -> Answer {
        if text.trim().is_empty() {
            return bad("text is empty: a note needs some text");
        }
        if config::disabled() {
            return refuse(
                "memkit is disabled here (MEM_DISABLE is set): it shows and stores nothing",
            );
        }
        let conn = store::open(&self.cfg.home.db())?;
        let note = Note {
            text: text.to_string(),
            tags: tags.to_vec(),
            ..Default::default()
        };
        let (id, pr) =
            memkit_capture::note::save(&conn, &self.policy, &note, named).map_err(|e| {
                match e.root() {
                    Error::Usage(m) => Failure::Refused(m.clone()),
                    _ => Failure::from(e),
                }
            })?;
        drop(conn);
        let started = start_pipeline();
        Ok(json!({
            "saved": true,
            "queue_id": id,
            "project": pr.map(|p| p.name),
            "note": if started {
                "stored; searchable in a few seconds, once the pipeline started in the background has run"
            } else {
                "stored; searchable once `mem pipeline` has run (the Stop hook runs it)"
            },
        }))
    }

    /// `context`: the SessionStart block of the project, or the memories a prompt would bring.
    pub fn context(&self, named: Option<&str>, prompt: Option<&str>) -> Answer {
        let conn = self.conn()?;
        let project = match named.filter(|p| !p.trim().is_empty()) {
            Some(p) => self
                .scope(&conn, Some(p), false)?
                .and_then(|r| r.into_iter().next()),
            None => {
                if let Some(r) = self.current_root() {
                    self.check_excluded(r)?;
                }
                self.current_root().map(str::to_string)
            }
        };
        let budget = config::CONTEXT_TOKENS.get(&self.cfg)?;
        let req = Request {
            project,
            session: None,
            source: Source::Startup,
            prompt: prompt.map(str::to_string),
            budget,
            dir: self.dir.as_ref().map(PathBuf::from),
            now_ms: None,
            // A prompt is ranked as the search tool ranks it.
            load_model: config::SEARCH_MODEL_LOAD.get(&self.cfg),
        };
        context_request::thresholds(&self.cfg)?;
        let rec = context_request::build(&self.home, &self.cfg, conn, &req)?;
        let mut out = json!({"event": rec.event, "project": rec.project_name, "tokens": rec.tokens, "text": rec.text});
        if rec.text.is_empty() {
            out["note"] = json!(if prompt.is_some() {
                "no memory is clearly relevant to this text"
            } else {
                "nothing to say for this project yet"
            });
        }
        Ok(out)
    }

    /// `file_history`: what memory holds about a file: the observations that changed or read
    /// it, and the functions changed in it.
    pub fn file_history(&self, path: &str, named: Option<&str>, all_projects: bool) -> Answer {
        let path = path.trim();
        if path.is_empty() {
            return bad(
                "path is empty: give a file path (absolute, or its ending such as src/auth.rs)",
            );
        }
        let conn = self.conn()?;
        let roots = self.scope(&conn, named, all_projects)?;
        let h = history::of_file(&conn, path, roots.as_deref())?;
        let list = |os: &[Observation]| -> Vec<Value> {
            os.iter()
                .filter(|o| !o.project.as_deref().is_some_and(|r| self.excluded(r)))
                .map(|o| {
                    let mut v = line(o);
                    self.label(&mut v, o.project.as_deref());
                    v
                })
                .collect()
        };
        let functions: Vec<Value> = h
            .functions
            .iter()
            .map(|c| {
                json!({"qualname": c.qualname, "change": c.change, "signature": c.signature,
                "file": c.file_path, "session_id": c.session_id, "created_at": c.created_at})
            })
            .collect();
        let mut out = json!({"file": path, "changed_by": list(&h.changed), "read_by": list(&h.read),
            "functions_changed": functions});
        // What the PreToolUse hook would print before an edit of this file: recall takes the
        // stored path, so a path given by its ending is resolved through the newest change.
        let stored = h.changed.iter().find_map(|o| {
            let f = o
                .files_modified
                .iter()
                .find(|f| rep::same_file(f, path.trim_start_matches("./")))?;
            Some((f.clone(), o.project.clone()))
        });
        if let Some((file, root)) =
            stored.filter(|(_, r)| !r.as_deref().is_some_and(|r| self.excluded(r)))
        {
            let now = chrono::Utc::now().timestamp_millis();
            if let Some(r) = recall::file_recall(&conn, root.as_deref(), &file, now)? {
                out["recall"] = json!(r.text);
            }
        }
        if h.is_empty() {
            out["note"] = json!("no memory of this file in this project");
        }
        Ok(out)
    }
}

/// An observation in full, with its visible id.
fn observation(o: &Observation) -> Value {
    let mut v = serde_json::to_value(o).unwrap_or_default();
    v["ref"] = json!(ids::obs(o.id.unwrap_or_default()));
    v
}

/// An observation as one line of a list: ref, type, title, when.
fn line(o: &Observation) -> Value {
    json!({"ref": ids::obs(o.id.unwrap_or_default()), "type": o.kind, "title": o.title,
        "created_at": o.created_at, "session_id": o.session_id})
}

/// `mem pipeline --detach` beside this binary (or on PATH); false when there is none.
fn start_pipeline() -> bool {
    std::process::Command::new(memkit_core::programs::command("mem"))
        .args(["pipeline", "--detach"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}
