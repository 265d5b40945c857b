//! The context block a new session starts with (SessionStart) and the memories a prompt brings
//! in (UserPromptSubmit).
//!
//! The block is built from layers in priority order — recent sessions, functions changed,
//! learnings, observations — each with a token cap, filled greedily within one total budget.
//! A layer that fails or has no data is skipped with a reason and the others stay. Observations
//! are one index line each (`#id type title · when`) so the block stays small; the last line
//! says how to get more (progressive disclosure).

pub mod prompt;
pub mod request;

use rusqlite::Connection;

use memkit_core::config::Config;
use memkit_core::store::{functions as function_map, learnings, observations, sessions};
use memkit_core::tokens::estimate;
use memkit_core::{Error, Result};
use memkit_search::index::{self, Doc};
use memkit_search::search::{Weights, file_overlap};

/// Default total budget in tokens (`MEM_CONTEXT_TOKENS`).
pub const DEFAULT_BUDGET: usize = 2000;
/// Tokens held back from the layers (the footer and estimation error).
pub const RESERVE: usize = 200;

/// The layers in priority order with their default caps (for the default 2,000-token budget;
/// other budgets scale them).
pub const LAYERS: &[(&str, usize)] = &[
    ("sessions", 400),
    ("functions", 500),
    ("learnings", 300),
    ("observations", 600),
];

/// How many past sessions the session layer lists.
const SESSIONS_SHOWN: usize = 10;
/// A session summary is cut to this many characters.
const SESSION_CHARS: usize = 200;
/// Sessions whose changed functions the function layer lists.
const FUNCTION_SESSIONS: usize = 5;
const FUNCTIONS_SHOWN: usize = 30;
/// Observations of this project considered for the observation layer (newest first).
const OBS_CANDIDATES: usize = 300;

pub use memkit_core::record::{LayerReport, Source};

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
    for (layer, cap) in caps(opts.budget) {
        let cap = cap.min(opts.budget.saturating_sub(used + reserve(opts.budget)));
        let lines = match layer {
            "sessions" => sessions(conn, opts),
            "functions" => functions(conn, opts),
            "learnings" => learnings(conn),
            _ => observations(conn, cfg, opts),
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
        "More: `mem-search{scope} \"<words>\"` finds past work; `mem-report --obs <id>` shows an observation in full.\n"
    )
}

fn layer_title(layer: &str, source: Source) -> &'static str {
    match (layer, source) {
        ("sessions", _) => "Recent sessions",
        ("functions", _) => "Functions changed lately",
        ("learnings", _) => "Project learnings",
        (_, Source::Compact | Source::Clear) => "This session so far, then what matters now",
        _ => "Observations that may matter now",
    }
}

/// `Ok(Err(reason))`: the layer has nothing to offer for a known reason.
type LayerLines = Result<std::result::Result<Vec<Line>, String>>;

fn sessions(conn: &Connection, opts: &Options) -> LayerLines {
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
    for sessions::Recent { title, summary, at } in rows {
        let text = summary
            .filter(|s| !s.trim().is_empty())
            .or(title)
            .unwrap_or_default();
        let when = at
            .map(|t| relative(index::time_ms(&t), opts.now_ms))
            .unwrap_or_else(|| "?".into());
        out.push(Line {
            text: format!("- {when}: {}", clip(&flatten(&text), SESSION_CHARS)),
            id: None,
        });
    }
    Ok(Ok(out))
}

/// Functions changed lately: from mem-ast's function map (qualified name and signature,
/// grouped by file, newest first), else from what the observations of the last sessions
/// recorded.
fn functions(conn: &Connection, opts: &Options) -> LayerLines {
    let Some(project) = &opts.project else {
        return Ok(Err("no project".into()));
    };
    let mapped = function_map::recent_changes(conn, project, FUNCTIONS_SHOWN * 4)?;
    if !mapped.is_empty() {
        return Ok(Ok(mapped_lines(mapped, project)));
    }
    // The sessions first, then their observations by the session index: filtering a large
    // project's observations by session would read every one of them.
    let recent = sessions::latest_ids(conn, project, FUNCTION_SESSIONS)?;
    if recent.is_empty() {
        return Ok(Ok(vec![]));
    }
    let rows = observations::functions_of_sessions(conn, &recent)?;
    let mut by_file: Vec<(String, Vec<String>)> = Vec::new();
    let mut total = 0;
    for (files, funcs) in rows {
        // Functions are recorded per observation, not per file: name the file only when the
        // observation changed exactly one.
        let file = match files.as_slice() {
            [one] => short_path(one, project),
            [] => "(file unknown)".to_string(),
            _ => "(several files)".to_string(),
        };
        let slot = match by_file.iter().position(|(f, _)| *f == file) {
            Some(i) => i,
            None => {
                by_file.push((file, Vec::new()));
                by_file.len() - 1
            }
        };
        for f in funcs {
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

fn mapped_lines(rows: Vec<function_map::Changed>, project: &str) -> Vec<Line> {
    let mut by_file: Vec<(String, Vec<String>)> = Vec::new();
    let mut seen: Vec<(String, String)> = Vec::new();
    for r in rows {
        if seen.len() >= FUNCTIONS_SHOWN
            || seen.contains(&(r.file_path.clone(), r.qualname.clone()))
        {
            continue;
        }
        seen.push((r.file_path.clone(), r.qualname.clone()));
        let file = short_path(&r.file_path, project);
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

fn learnings(conn: &Connection) -> LayerLines {
    let Some(rows) = learnings::top(conn, 10)? else {
        return Ok(Err("no learnings yet (mem-learn has not run)".into()));
    };
    let mut out = Vec::new();
    for learnings::Learning {
        category: cat,
        content,
    } in rows
    {
        let cat = cat.map(|c| format!("[{c}] ")).unwrap_or_default();
        out.push(Line {
            text: format!("- {cat}{}", clip(&flatten(&content), 200)),
            id: None,
        });
    }
    Ok(Ok(out))
}

/// This project's observations ranked without a query: manual notes first, then the relevance
/// score's query-free components (recency, type, overlap with the working files); after
/// `compact`/`clear` the current session's own come first.
fn observations(conn: &Connection, cfg: &Config, opts: &Options) -> LayerLines {
    let Some(project) = &opts.project else {
        return Ok(Err("no project".into()));
    };
    let w = Weights::from_config(cfg)?;
    let with_flag = |o: memkit_core::record::Observation| {
        let manual = o.is_manual;
        (Doc::of_observation(o), manual)
    };
    let mut docs: Vec<(Doc, bool)> =
        observations::latest_of_project(conn, project, false, OBS_CANDIDATES)?
            .into_iter()
            .map(with_flag)
            .collect();
    // Manual notes are few and deliberate: keep the older ones in view too.
    for r in observations::latest_of_project(conn, project, true, 20)?
        .into_iter()
        .map(with_flag)
    {
        if !docs.iter().any(|(d, _)| d.id == r.0.id) {
            docs.push(r);
        }
    }
    let own = matches!(opts.source, Source::Compact | Source::Clear);
    let mut scored: Vec<(u8, f64, Doc)> = docs
        .into_iter()
        .map(|(d, manual)| {
            let age_days = ((opts.now_ms - d.created_ms).max(0) as f64) / 86_400_000.0;
            let recency = if w.half_life_days > 0.0 {
                0.5f64.powf(age_days / w.half_life_days)
            } else {
                0.0
            };
            let score = w.recency * recency
                + w.kind * w.type_weights.get(&d.kind).copied().unwrap_or(0.3)
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
            (tier, score, d)
        })
        .collect();
    scored.sort_by(|a, b| {
        a.0.cmp(&b.0)
            .then(b.1.total_cmp(&a.1))
            .then(b.2.created_ms.cmp(&a.2.created_ms))
    });
    let mut lines: Vec<Line> = scored
        .into_iter()
        .map(|(_, _, d)| Line {
            text: index_line(
                &format!("#{} {}", d.id, d.kind),
                &d.title,
                d.created_ms,
                None,
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
            &format!("#{} {}", o.id, o.kind),
            &o.title,
            o.created_ms,
            Some(&o.project_name),
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

/// `- #id type title · when` (`label` = `#id type`), with `[from: project]` for another
/// project's record.
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
        clip(&flatten(title), 110),
        relative(created_ms, now_ms)
    )
}

/// Whitespace folded to single spaces.
pub fn flatten(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
    t.push('…');
    t
}

/// A path relative to the project root when inside it.
fn short_path(p: &str, root: &str) -> String {
    p.strip_prefix(root)
        .and_then(|r| r.strip_prefix('/'))
        .unwrap_or(p)
        .to_string()
}

/// "just now", "5 min ago", "3 h ago", "2 d ago", "6 w ago", else the date.
pub fn relative(ms: i64, now_ms: i64) -> String {
    if ms <= 0 {
        return "?".into();
    }
    let s = (now_ms - ms).max(0) / 1000;
    match s {
        0..60 => "just now".into(),
        60..3600 => format!("{} min ago", s / 60),
        3600..86_400 => format!("{} h ago", s / 3600),
        86_400..1_209_600 => format!("{} d ago", s / 86_400),
        1_209_600..5_184_000 => format!("{} w ago", s / 604_800),
        _ => chrono::DateTime::from_timestamp_millis(ms)
            .map(|t| t.format("%Y-%m-%d").to_string())
            .unwrap_or_else(|| "?".into()),
    }
}

/// The hook output for an event carrying `text` as additionalContext.
pub fn hook_json(event: &str, text: &str) -> serde_json::Value {
    serde_json::json!({
        "hookSpecificOutput": {"hookEventName": event, "additionalContext": text}
    })
}

/// Counts of a project's stored memories (for the first-run welcome).
pub fn has_any_memory(conn: &Connection, project: Option<&str>) -> Result<bool> {
    let n = match project {
        Some(p) => observations::count(conn, Some(p))? + sessions::summarized_count(conn, p)?,
        None => observations::count(conn, None)?,
    };
    Ok(n > 0)
}
