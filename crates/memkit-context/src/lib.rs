//! The context block a new session starts with (SessionStart) and the memories a prompt brings
//! in (UserPromptSubmit).
//!
//! The block is built from layers in priority order — files in play, recent sessions,
//! functions changed, learnings, observations — each with a token cap, filled greedily within
//! one total budget. Every file is named the same way in every layer (`files::names`).
//! A layer that fails or has no data is skipped with a reason and the others stay. Observations
//! are one index line each (`o17 type title · when`) so the block stays small; the last line
//! says how to get more (progressive disclosure).

pub mod files;
pub mod history;
pub mod prompt;
pub mod request;

use rusqlite::Connection;

use memkit_compress::heuristic::is_code;
use memkit_core::clip;
use memkit_core::config::{self, Config};
use memkit_core::store::queue::{self, FileCall};
use memkit_core::store::{functions as function_map, learnings, observations, sessions};
use memkit_core::tokens::estimate;
use memkit_core::{Error, Result};
use memkit_search::index::{self, Doc};
use memkit_search::search::{Weights, file_overlap};

use files::Namer;

/// Default total budget in tokens (`MEM_CONTEXT_TOKENS`).
pub const DEFAULT_BUDGET: usize = config::CONTEXT_TOKENS.default;
/// Tokens held back from the layers (the footer and estimation error).
pub const RESERVE: usize = 200;

/// The layers in priority order with their default caps (for the default 2,000-token budget;
/// other budgets scale them).
pub const LAYERS: &[(&str, usize)] = &[
    ("files", 500),
    ("sessions", 300),
    ("functions", 350),
    ("learnings", 300),
    ("observations", 350),
];

/// An observation line's title is cut to this many characters.
const TITLE_CHARS: usize = 100;
/// Learnings under this confidence are left to `mem-learn list` (rules the user stated are not).
const LEARNING_MIN: f64 = 0.5;
/// The folded commands line is cut at this many characters.
const USUAL_CHARS: usize = 240;
/// Files the files-in-play layer may list, and the sessions it looks back over.
const FILES_SHOWN: usize = 8;
/// Files after those named by name only, on one line.
const FILES_NAMED: usize = 40;
/// Calls of each kind (edits, reads) per shown file whose observations' titles may describe it.
const CALLS_DESCRIBED: usize = 16;
/// Names per line of those (a line is kept or left out whole).
const NAMES_PER_LINE: usize = 8;
const FILE_SESSIONS: usize = 30;
/// Sessions whose edits count toward how often a file is edited: the calls of the last
/// `FILE_SESSIONS`, then one grouped query for the older ones.
const HISTORY_SESSIONS: usize = 100;
/// The last plan is looked for in this many of the latest sessions, and this many of the
/// files it names are put in play.
const PLAN_SESSIONS: usize = 3;
const PLAN_FILES: usize = 12;
/// File calls read for the files and functions layers.
const FILE_CALLS: usize = 3000;

/// How many past sessions the session layer lists.
const SESSIONS_SHOWN: usize = 10;
/// A session summary is cut to this many characters.
const SESSION_CHARS: usize = 200;
/// Sessions whose changed functions the function layer lists.
const FUNCTION_SESSIONS: usize = 5;
const FUNCTIONS_SHOWN: usize = 30;
/// Observations of this project considered for the observation layer (newest first).
const OBS_CANDIDATES: usize = 300;

pub use memkit_core::hook::hook_json;
pub use memkit_core::recall;
pub use memkit_core::record::{LayerReport, Source};
pub use memkit_core::text::{flatten, relative, says_nothing};

/// What to build the block for.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Project root (as capture stores it); `None` = no project known.
    pub project: Option<String>,
    /// The session that is starting (left out of the session index; its own observations go
    /// first after `compact`/`clear`).
    pub session_id: Option<String>,
    pub source: Source,
    /// Total tokens the block may cost.
    pub budget: usize,
    /// Files changed in the working tree (ranking signal).
    pub files: Vec<String>,
    /// "Now" in epoch milliseconds (relative times, recency).
    pub now_ms: i64,
    /// Other projects' records found clearly relevant to the work at hand (labelled).
    pub others: Vec<Other>,
}

/// Another project's record to list, labelled with where it comes from.
#[derive(Debug, Clone)]
pub struct Other {
    /// Observation id.
    pub id: i64,
    pub kind: String,
    pub title: String,
    pub created_ms: i64,
    pub project_name: String,
    /// Who it came from, when it was taken from the sync remote.
    pub origin: Option<String>,
}

/// A built block.
#[derive(Debug, Clone)]
pub struct Built {
    /// Markdown; empty when there is nothing to say.
    pub text: String,
    pub layers: Vec<LayerReport>,
    /// Observation ids listed, in order.
    pub observation_ids: Vec<i64>,
}

/// One candidate line of a layer.
struct Line {
    text: String,
    id: Option<i64>,
}

/// Tokens of `budget` held back: RESERVE, or a tenth of a small budget.
fn reserve(budget: usize) -> usize {
    RESERVE.min(budget / 10)
}

/// Per-layer caps for a total budget: the defaults scaled to what the reserve leaves.
pub fn caps(budget: usize) -> Vec<(&'static str, usize)> {
    let usable = budget - reserve(budget);
    let default_total: usize = LAYERS.iter().map(|l| l.1).sum();
    LAYERS
        .iter()
        .map(|(n, c)| (*n, c * usable / default_total))
        .collect()
}

/// Builds the SessionStart block from the database. Layer failures are reported, never raised;
/// only an unusable budget is an error.
pub fn build(conn: &Connection, cfg: &Config, opts: &Options) -> Result<Built> {
    if opts.budget < 50 {
        return Err(Error::Usage(format!(
            "context budget {} is too small (at least 50 tokens)",
            opts.budget
        )));
    }
    let name = opts
        .project
        .as_deref()
        .map(memkit_core::project::name_of)
        .unwrap_or_else(|| "this directory".into());
    let header = format!("# memkit: what happened before in {name}\n");
    let footer = footer(opts.project.is_some());
    let mut used = estimate(&header) + estimate(&footer);
    let mut body = String::new();
    let mut reports = Vec::new();
    let mut observation_ids = Vec::new();
    // Settings are read before any layer: a bad one is the user's error, not a failed layer.
    let set = Settings::read(cfg)?;
    let work = work(conn, opts);
    for (layer, cap) in caps(opts.budget) {
        let cap = cap.min(opts.budget.saturating_sub(used + reserve(opts.budget)));
        let lines = match (&work, layer) {
            (_, "sessions") => sessions(conn, opts, work.as_ref().ok().map(|w| &w.namer)),
            (_, "learnings") => learnings(conn, opts, cap),
            (Err(e), _) => Err(Error::Other(e.to_string())),
            (Ok(w), "files") => files_layer(conn, w, &set, opts),
            (Ok(w), "functions") => functions(conn, opts, w),
            (Ok(w), _) => observations(conn, &set, opts, w),
        };
        let mut rep = LayerReport {
            name: layer.to_string(),
            cap,
            tokens: 0,
            items: 0,
            included: false,
            reason: None,
        };
        match lines {
            Err(e) => rep.reason = Some(format!("failed: {e}")),
            Ok(Err(why)) => rep.reason = Some(why),
            Ok(Ok(lines)) if lines.is_empty() => rep.reason = Some("no data".into()),
            Ok(Ok(lines)) => {
                let title = format!("\n## {}\n", layer_title(layer, opts.source));
                let mut text = title.clone();
                let mut tokens = estimate(&title);
                let mut cut = 0;
                for l in &lines {
                    let line = format!("{}\n", l.text);
                    let t = estimate(&line);
                    if tokens + t > cap {
                        cut += 1;
                        continue;
                    }
                    tokens += t;
                    text.push_str(&line);
                    rep.items += 1;
                    if let Some(id) = l.id {
                        observation_ids.push(id);
                    }
                }
                if rep.items == 0 {
                    rep.reason = Some(format!("cap of {cap} tokens too small"));
                } else {
                    if cut > 0 {
                        rep.reason = Some(format!("{cut} more left out (cap)"));
                    }
                    rep.included = true;
                    rep.tokens = tokens;
                    used += tokens;
                    body.push_str(&text);
                }
            }
        }
        reports.push(rep);
    }
    let text = if body.is_empty() {
        String::new()
    } else {
        format!("{header}{body}\n{footer}")
    };
    Ok(Built {
        text,
        layers: reports,
        observation_ids,
    })
}

/// The one line that tells Claude how to drill down.
fn footer(has_project: bool) -> String {
    let scope = if has_project { "" } else { " --all-projects" };
    format!(
        "More: `mem-search{scope} \"<words>\"` finds past work; `mem-report <id>` shows one in full.\n"
    )
}

fn layer_title(layer: &str, source: Source) -> &'static str {
    match (layer, source) {
        ("files", _) => "Files in play",
        ("sessions", _) => "Recent sessions",
        ("functions", _) => "Functions changed lately",
        ("learnings", _) => "Project learnings",
        (_, Source::Compact | Source::Clear) => "This session so far, then what matters now",
        _ => "Observations that may matter now",
    }
}

/// `Ok(Err(reason))`: the layer has nothing to offer for a known reason.
type LayerLines = Result<std::result::Result<Vec<Line>, String>>;

fn sessions(conn: &Connection, opts: &Options, namer: Option<&Namer>) -> LayerLines {
    let Some(project) = &opts.project else {
        return Ok(Err("no project".into()));
    };
    let rows = sessions::latest_of_project(
        conn,
        project,
        opts.session_id.as_deref().unwrap_or(""),
        SESSIONS_SHOWN,
    )?;
    let mut out = Vec::new();
    for sessions::Recent {
        title,
        summary,
        at,
        origin,
    } in rows
    {
        let text = summary
            .filter(|s| !s.trim().is_empty())
            .or(title)
            .unwrap_or_default();
        let when = at
            .map(|t| relative(index::time_ms(&t), opts.now_ms))
            .unwrap_or_else(|| "?".into());
        // A file a summary names by its bare name gets its block name where that is one file.
        let text = match namer {
            Some(n) => n.in_text(&text, &[]),
            None => text,
        };
        let from = origin.map(|o| format!("[from: {o}] ")).unwrap_or_default();
        out.push(Line {
            text: format!("- {when}: {from}{}", clip(&flatten(&text), SESSION_CHARS)),
            id: None,
        });
    }
    Ok(Ok(out))
}

/// Functions changed lately: from mem-ast's function map (qualified name and signature,
/// grouped by file, newest first), else from the edits of the last sessions, each function
/// under the file whose edit defines it. Code files of the project only: a plan, a note or a
/// config file has no functions worth listing.
fn functions(conn: &Connection, opts: &Options, work: &Work) -> LayerLines {
    let Some(project) = &opts.project else {
        return Ok(Err("no project".into()));
    };
    let mapped: Vec<function_map::Changed> =
        function_map::recent_changes(conn, project, FUNCTIONS_SHOWN * 4)?
            .into_iter()
            .filter(|c| is_code(&c.file_path) && files::inside(&c.file_path, project))
            .collect();
    if !mapped.is_empty() {
        return Ok(Ok(mapped_lines(mapped, &work.namer)));
    }
    let recent = sessions::latest_ids(conn, project, FUNCTION_SESSIONS)?;
    let edits = queue::file_calls(conn, &recent, true, FUNCTIONS_SHOWN * 20)?;
    let mut by_file: Vec<(String, Vec<String>)> = Vec::new();
    let mut total = 0;
    for e in &edits {
        let (Some(file), Some(input)) = (e.files.first(), &e.input) else {
            continue;
        };
        if !is_code(file) || !files::inside(file, project) {
            continue;
        }
        let name = work.namer.name(file);
        let slot = match by_file.iter().position(|(f, _)| *f == name) {
            Some(i) => i,
            None => {
                by_file.push((name, Vec::new()));
                by_file.len() - 1
            }
        };
        for f in memkit_compress::heuristic::functions_in_edit(input) {
            if total < FUNCTIONS_SHOWN && !by_file[slot].1.contains(&f) {
                by_file[slot].1.push(f);
                total += 1;
            }
        }
    }
    Ok(Ok(by_file
        .into_iter()
        .filter(|(_, fs)| !fs.is_empty())
        .map(|(file, fs)| Line {
            text: format!("- {file}: {}", fs.join(", ")),
            id: None,
        })
        .collect()))
}

fn mapped_lines(rows: Vec<function_map::Changed>, namer: &Namer) -> Vec<Line> {
    let mut by_file: Vec<(String, Vec<String>)> = Vec::new();
    let mut seen: Vec<(String, String)> = Vec::new();
    for r in rows {
        if seen.len() >= FUNCTIONS_SHOWN
            || seen.contains(&(r.file_path.clone(), r.qualname.clone()))
        {
            continue;
        }
        seen.push((r.file_path.clone(), r.qualname.clone()));
        let file = namer.name(&r.file_path);
        let mut sig: String = r.signature.chars().take(80).collect();
        if sig.len() < r.signature.len() {
            sig.push('…');
        }
        let entry = match r.change.as_str() {
            "deleted" => format!("{} (deleted)", r.qualname),
            "new" => format!("{}{sig} (new)", r.qualname),
            _ => format!("{}{sig}", r.qualname),
        };
        match by_file.iter_mut().find(|(f, _)| *f == file) {
            Some((_, v)) => v.push(entry),
            None => by_file.push((file, vec![entry])),
        }
    }
    by_file
        .into_iter()
        .map(|(file, fs)| Line {
            text: format!("- {file}: {}", fs.join(", ")),
            id: None,
        })
        .collect()
}

/// The settings the layers rank by.
struct Settings {
    files: files::Weights,
    search: Weights,
    types: std::collections::HashMap<String, f64>,
}

impl Settings {
    fn read(cfg: &Config) -> Result<Settings> {
        let types = config::CONTEXT_TYPE_WEIGHTS.get(cfg)?;
        Ok(Settings {
            files: files::Weights {
                decay: config::CONTEXT_FILES_DECAY.get(cfg)?,
                read: config::CONTEXT_FILES_READ.get(cfg)?,
            },
            search: Weights::from_config(cfg)?,
            types,
        })
    }
}

/// What the file-aware layers share: the last sessions' reads and edits (newest first), and
/// the names files get in the block.
struct Work {
    calls: Vec<FileCall>,
    /// How often each file was edited in the sessions before those of `calls`.
    history: Vec<queue::Edited>,
    /// The files the last plan names (absolute).
    planned: Vec<String>,
    namer: Namer,
}

fn work(conn: &Connection, opts: &Options) -> Result<Work> {
    let root = opts.project.clone().unwrap_or_default();
    let (calls, history, plan) = match &opts.project {
        Some(p) => {
            let ids = sessions::latest_ids(conn, p, HISTORY_SESSIONS)?;
            let recent = &ids[..ids.len().min(FILE_SESSIONS)];
            (
                queue::file_calls(conn, recent, false, FILE_CALLS)?,
                queue::edit_history(conn, &ids[recent.len()..])?,
                queue::latest_plan(conn, &ids[..ids.len().min(PLAN_SESSIONS)])?,
            )
        }
        None => (vec![], vec![], None),
    };
    let known = || {
        calls
            .iter()
            .flat_map(|c| c.files.iter())
            .chain(history.iter().map(|h| &h.file))
            .chain(&opts.files)
    };
    let mut namer = Namer::new(known(), &root);
    let planned = plan.map_or_else(Vec::new, |text| {
        files::planned(&text, &root, &namer, PLAN_FILES)
    });
    // Files the plan would create get names that stay unique beside them.
    if !planned.is_empty() {
        namer = Namer::new(known().chain(&planned), &root);
    }
    Ok(Work {
        calls,
        history,
        planned,
        namer,
    })
}

/// The files the next session is most likely to work on (`files::rank`), each with what was
/// last done to it and when.
fn files_layer(conn: &Connection, work: &Work, set: &Settings, opts: &Options) -> LayerLines {
    let Some(project) = &opts.project else {
        return Ok(Err("no project".into()));
    };
    let mut ranked = files::rank(
        &work.calls,
        &work.history,
        project,
        &opts.files,
        &work.planned,
        set.files,
    );
    let shown = ranked.len().min(FILES_SHOWN);
    // A file's newest calls of each kind: an older title is only looked for when none of
    // these names the file, and every id is a lookup at random in a large database.
    let ids: Vec<i64> = ranked[..shown]
        .iter()
        .flat_map(|f| {
            [true, false].into_iter().flat_map(|edit| {
                f.calls
                    .iter()
                    .filter(move |(_, e)| *e == edit)
                    .take(CALLS_DESCRIBED)
                    .map(|(id, _)| *id)
            })
        })
        .collect();
    files::describe(
        &mut ranked[..shown],
        &queue::observation_titles(conn, &ids)?,
    );
    let mut lines: Vec<Line> = ranked
        .iter()
        .take(FILES_SHOWN)
        .map(|f| {
            let name = work.namer.name(&f.path);
            // The file is the line's subject: a title's own "(file)" would say it twice.
            let what = f.last_what.as_ref().map(|(edit, t)| {
                let t = work.namer.in_text(without_file(t), &[&f.path]);
                (*edit, clip(&flatten(&t), 90))
            });
            let what = match what {
                Some((true, t)) => format!(": {t}"),
                Some((false, t)) => format!(": read for {t}"),
                None => String::new(),
            };
            let text = if f.changed && f.last_ms == 0 {
                format!("- {name} (uncommitted change)")
            } else if f.planned && f.last_ms == 0 {
                format!("- {name} (in the last plan, not touched yet)")
            } else {
                let state = match (f.changed, f.planned) {
                    (true, _) => "uncommitted; ",
                    (false, true) => "in the last plan; ",
                    _ => "",
                };
                let did = match (f.edits, f.sessions) {
                    (0, _) => "read".to_string(),
                    (n, s) if s > 1 => format!("edited {n}× in {s} sessions"),
                    (n, _) => format!("edited {n}×"),
                };
                format!(
                    "- {name} ({state}{did}, {}){what}",
                    relative(f.last_ms, opts.now_ms)
                )
            };
            Line { text, id: None }
        })
        .collect();
    // The rest by name only: a file touched lately is where the next session often goes, and a
    // name costs a few tokens where a line costs twenty.
    let rest: Vec<String> = ranked
        .iter()
        .skip(FILES_SHOWN)
        .take(FILES_NAMED)
        .map(|f| work.namer.name(&f.path))
        .collect();
    // In lines of a few names, best first: the layer's cap keeps as many as fit.
    for (i, chunk) in rest.chunks(NAMES_PER_LINE).enumerate() {
        let head = if i == 0 {
            "also touched lately"
        } else {
            "then"
        };
        lines.push(Line {
            text: format!("- {head}: {}", chunk.join(", ")),
            id: None,
        });
    }
    Ok(Ok(lines))
}

/// The project's learnings within `cap` tokens: the rules the user stated first (typed by hand
/// or found in their prompts), whatever their confidence against what was inferred; then the
/// usual commands on one line (plumbing variants folded, none a rule speaks against, no git
/// housekeeping or one-off); then what a model inferred; the last line says how many more
/// `mem-learn list` holds.
fn learnings(conn: &Connection, opts: &Options, cap: usize) -> LayerLines {
    let Some(project) = &opts.project else {
        return Ok(Err("no project".into()));
    };
    let active = learnings::list(
        conn,
        &learnings::Filter {
            project: Some(project),
            ..Default::default()
        },
    )?;
    if active.is_empty() {
        return Ok(Err(
            "no learnings yet (mem-learn extracts them; mem-learn add TEXT)".into(),
        ));
    }
    let plan = memkit_learn::rules::plan(&active, Some(project), LEARNING_MIN);
    let line = |l: &learnings::Learning| {
        let from = l
            .origin
            .as_ref()
            .map(|o| format!("[from: {o}] "))
            .unwrap_or_default();
        format!(
            "- [{}] {from}{}",
            l.category,
            clip(&flatten(&l.content), 200)
        )
    };
    let mut texts: Vec<(String, usize)> = plan.rules.iter().map(|l| (line(l), 1)).collect();
    if let Some(u) = memkit_learn::rules::usual_line(&plan.commands, USUAL_CHARS) {
        let shown = plan
            .commands
            .iter()
            .filter(|c| u.contains(&format!("`{}`", c.command)));
        let folded: std::collections::BTreeSet<i64> =
            shown.flat_map(|c| c.ids.iter().copied()).collect();
        texts.push((format!("- {u}"), folded.len()));
    }
    texts.extend(plan.inferred.iter().map(|l| (line(l), 1)));
    // Lines as the block counts them (the layer's title included), room kept for the last one.
    let more_line = |n: usize| format!("- {n} more: `mem-learn list`");
    let mut tokens = estimate(&format!("\n## {}\n", layer_title("learnings", opts.source)))
        + estimate(&format!("{}\n", more_line(active.len())));
    let (mut out, mut shown) = (Vec::new(), 0);
    for (text, n) in texts {
        let t = estimate(&format!("{text}\n"));
        if tokens + t > cap {
            continue;
        }
        tokens += t;
        shown += n;
        out.push(Line { text, id: None });
    }
    if active.len() > shown {
        out.push(Line {
            text: more_line(active.len() - shown),
            id: None,
        });
    }
    Ok(Ok(out))
}

/// This project's observations ranked without a query: manual notes first, then the relevance
/// score's query-free components (recency, type, overlap with the working files) with the
/// SessionStart type weights (work done before what was only read); lines that say nothing
/// are left out; after `compact`/`clear` the current session's own come first.
fn observations(conn: &Connection, set: &Settings, opts: &Options, work: &Work) -> LayerLines {
    let Some(project) = &opts.project else {
        return Ok(Err("no project".into()));
    };
    let (w, type_weights) = (&set.search, &set.types);
    let with_flag = |o: memkit_core::record::Observation| {
        let manual = o.is_manual;
        let modified = o.files_modified.clone();
        (Doc::of_observation(o), manual, modified)
    };
    let mut docs: Vec<(Doc, bool, Vec<String>)> =
        observations::latest_of_project(conn, project, false, OBS_CANDIDATES)?
            .into_iter()
            .map(with_flag)
            .collect();
    // Manual notes are few and deliberate: keep the older ones in view too.
    for r in observations::latest_of_project(conn, project, true, 20)?
        .into_iter()
        .map(with_flag)
    {
        if !docs.iter().any(|(d, _, _)| d.id == r.0.id) {
            docs.push(r);
        }
    }
    let own = matches!(opts.source, Source::Compact | Source::Clear);
    let mut scored: Vec<(u8, f64, Doc, Vec<String>)> = docs
        .into_iter()
        .filter(|(d, manual, _)| *manual || !says_nothing(&d.title))
        .map(|(d, manual, modified)| {
            let age_days = ((opts.now_ms - d.created_ms).max(0) as f64) / 86_400_000.0;
            let recency = if w.half_life_days > 0.0 {
                0.5f64.powf(age_days / w.half_life_days)
            } else {
                0.0
            };
            let score = w.recency * recency
                + w.kind * type_weights.get(&d.kind).copied().unwrap_or(0.3)
                + w.files * file_overlap(&opts.files, &d.files)
                + w.project;
            let this_session = own && opts.session_id.is_some() && d.session_id == opts.session_id;
            let tier = if this_session {
                0
            } else if manual {
                1
            } else {
                2
            };
            (tier, score, d, modified)
        })
        .collect();
    scored.sort_by(|a, b| {
        a.0.cmp(&b.0)
            .then(b.1.total_cmp(&a.1))
            .then(b.2.created_ms.cmp(&a.2.created_ms))
    });
    let mut lines: Vec<Line> = scored
        .into_iter()
        .map(|(_, _, d, modified)| Line {
            text: index_line(
                &format!("{} {}", memkit_core::ids::obs(d.id), d.kind),
                &{
                    let (t, f) = named_title(&d.title, &modified, &d.files, &work.namer);
                    title_with_file(&t, f.as_deref(), TITLE_CHARS)
                },
                d.created_ms,
                d.origin.as_deref(),
                opts.now_ms,
            ),
            id: Some(d.id),
        })
        .collect();
    // Another project's records passed the relevance test against the work at hand: they go
    // after this project's three best, not before its own manual notes.
    let at = lines.len().min(3);
    for (i, o) in opts.others.iter().enumerate() {
        let text = index_line(
            &format!("{} {}", memkit_core::ids::obs(o.id), o.kind),
            &o.title,
            o.created_ms,
            from_label(Some(&o.project_name), o.origin.as_deref()).as_deref(),
            opts.now_ms,
        );
        lines.insert(
            at + i,
            Line {
                text,
                id: Some(o.id),
            },
        );
    }
    Ok(Ok(lines))
}

/// A title and the file it is about: a title ending in a bare file name ("… (main.rs)")
/// loses it and the file gets its block name; a title that names no file gets the file the
/// observation edited.
fn named_title(
    title: &str,
    modified: &[String],
    files: &[String],
    namer: &Namer,
) -> (String, Option<String>) {
    let base = |f: &str| f.rsplit(['/', '\\']).next().unwrap_or(f).to_string();
    let hint: Vec<&String> = modified.iter().chain(files).collect();
    let named = |t: &str| namer.in_text(t, &hint);
    if let Some(open) = title.rfind(" (")
        && title.ends_with(')')
    {
        let inner = &title[open + 2..title.len() - 1];
        if let Some(f) = modified.iter().chain(files).find(|f| base(f) == inner) {
            return (named(&title[..open]), Some(namer.name(f)));
        }
    }
    let title = &named(title);
    match modified.first() {
        Some(f)
            if !files
                .iter()
                .chain(modified)
                .any(|g| title.contains(&base(g))) =>
        {
            (title.to_string(), Some(namer.name(f)))
        }
        _ => (title.to_string(), None),
    }
}

/// A title without the file name it ends with ("Fix the parser (parse.rs)" → "Fix the parser").
fn without_file(title: &str) -> &str {
    match title.rfind(" (") {
        // A file name may hold spaces ("(David Leroy.md)"), not a closing parenthesis, and
        // ends in an extension with a letter in it ("(see 4.2)" is no file).
        Some(i)
            if title.ends_with(')')
                && !title[i + 2..title.len() - 1].contains(['(', ')'])
                && title[i + 2..title.len() - 1]
                    .rsplit_once('.')
                    .is_some_and(|(_, e)| {
                        (1..=8).contains(&e.len())
                            && e.chars().all(|c| c.is_ascii_alphanumeric())
                            && e.chars().any(|c| c.is_ascii_alphabetic())
                    }) =>
        {
            &title[..i]
        }
        _ => title,
    }
}

/// A title cut to `max` characters, its file name (if any) kept whole after it.
fn title_with_file(title: &str, file: Option<&str>, max: usize) -> String {
    match file {
        Some(f) => {
            let room = max.saturating_sub(f.chars().count() + 3).max(20);
            format!("{} ({f})", clip(&flatten(title), room))
        }
        None => clip(&flatten(title), max),
    }
}

/// What `[from: …]` says of a record: another project's name, who it came from over the sync
/// remote, or both.
pub fn from_label(project: Option<&str>, origin: Option<&str>) -> Option<String> {
    match (project, origin) {
        (Some(p), Some(o)) => Some(format!("{p}, {o}")),
        (Some(x), None) | (None, Some(x)) => Some(x.to_string()),
        (None, None) => None,
    }
}

/// `- o17 type title · when` (`label` = `o17 type`), with `[from: …]` for another project's
/// record or one taken from another machine.
pub fn index_line(
    label: &str,
    title: &str,
    created_ms: i64,
    from: Option<&str>,
    now_ms: i64,
) -> String {
    let from = from.map(|p| format!("[from: {p}] ")).unwrap_or_default();
    format!(
        "- {label} {from}{} · {}",
        clip(&flatten(title), TITLE_CHARS + 10),
        relative(created_ms, now_ms)
    )
}

/// Counts of a project's stored memories (for the first-run welcome).
pub fn has_any_memory(conn: &Connection, project: Option<&str>) -> Result<bool> {
    let n = match project {
        Some(p) => observations::count(conn, Some(p))? + sessions::summarized_count(conn, p)?,
        None => observations::count(conn, None)?,
    };
    Ok(n > 0)
}
