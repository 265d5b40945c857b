//! `mem-report --html`: the report's model as one self-contained page. Inline CSS, script and
//! SVG, and a Content-Security-Policy that forbids every request, so the page works from
//! `file://` and can fetch nothing. What it holds is what the store holds, already redacted.
//!
//! Every record is an element whose id is its visible id: sessions (`<article>`s of
//! `#timeline`), observations (the `<li>`s of their `<ol>`s, a line each: their full records
//! travel compressed, see `report::records`) and learnings (`.learning`). The search box hides
//! the records that do not contain every word typed.
//!
//! An observation's line is what ten thousand of them make the page weigh and the browser
//! parse, so it is written short: `<li id=o12 data-k=bugfix data-t=14:05>title<code>files</code>`,
//! unquoted, its end tag implied; the CSS shows its time, ref and type from the attributes,
//! and page.js makes it focusable.

use std::collections::{HashMap, HashSet};
use std::fmt::Write;

use crate::Result;
use crate::ids;
use crate::record::Observation;
use crate::store::report::{self as rep, Scope, SessionRow};
use crate::store::{functions, learnings};

use super::model::{self, Timeline, esc, minute, plural, relative};

const CSS: &str = include_str!("page.css");
const JS: &str = include_str!("page.js");
/// A session with more changed definitions than this gets its list, not a drawing.
const MAX_DRAWN: usize = 60;

/// What a page is of.
pub enum Of<'a> {
    /// The sessions and observations of a scope, titled with its days.
    Days(Scope<'a>, u32),
    Session(&'a str),
    File(&'a str, Scope<'a>),
}

/// The page to the file `to` names, else to stdout; false when nothing is in scope.
pub fn write(
    conn: &rusqlite::Connection,
    of: &Of,
    now: &str,
    to: Option<&std::path::Path>,
    io: &mut crate::cli::Io,
) -> Result<bool> {
    let Some(page) = page(conn, of, now)? else {
        return Ok(false);
    };
    match to {
        Some(path) => std::fs::write(path, page).map_err(|e| {
            crate::Error::Usage(format!("-o {}: cannot write the page: {e}", path.display()))
        })?,
        None => std::io::Write::write_all(&mut io.out, page.as_bytes())?,
    }
    Ok(true)
}

/// The page; None when nothing is in scope.
pub fn page(conn: &rusqlite::Connection, of: &Of, now: &str) -> Result<Option<String>> {
    let (t, roots, heading) = match of {
        Of::Days(scope, days) => (
            model::days(conn, scope)?,
            scope.projects,
            format!(
                "{}: the last {days} day{}",
                model::whom(scope.projects),
                plural(*days as usize)
            ),
        ),
        Of::Session(id) => match model::session(conn, id)? {
            Some(t) => {
                let title = t.sessions.first().map_or("", |(s, _)| model::title(s));
                let heading = format!("{} {}", t.sessions[0].0.handle, title);
                (t, None, heading)
            }
            None => return Ok(None),
        },
        Of::File(file, scope) => (
            model::file(conn, file, scope)?,
            scope.projects,
            file.to_string(),
        ),
    };
    if t.is_empty() {
        return Ok(None);
    }
    let mut roots: Option<Vec<String>> = roots.map(<[String]>::to_vec);
    if let Of::Session(_) = of {
        roots = t.sessions[0].0.project.clone().map(|p| vec![p]);
    }
    let mut h = String::with_capacity(64 * 1024);
    head(&mut h, &heading, &t);
    projects(conn, &mut h, roots.as_deref())?;
    if let Some(chart) = super::chart::files(&t) {
        let _ = write!(
            h,
            "<section id=\"files\"><h2>Files in play</h2><div class=\"scroll\">{chart}</div></section>"
        );
    }
    let mapped = functions::mapped_sessions(conn)?;
    timeline(conn, &mut h, &t, &mapped)?;
    learned(conn, &mut h, roots.as_deref(), &t)?;
    let _ = writeln!(
        h,
        "<footer>Written by mem-report --html at {}. Everything here is what memkit stored, redacted before it was stored.</footer></main>{}<script>{JS}</script></body></html>",
        esc(&minute(now)),
        super::records::script(&t, &mapped)
    );
    Ok(Some(h))
}

fn head(h: &mut String, heading: &str, t: &Timeline) {
    let files: std::collections::BTreeSet<&String> =
        t.observations().flat_map(|o| &o.files_modified).collect();
    let _ = write!(
        h,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
<meta name=\"color-scheme\" content=\"light dark\">\
<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'\">\
<title>{0} · memkit</title><style>{CSS}</style></head><body>\
<header class=\"top\"><h1>{0}</h1><p class=\"stats\">{1}</p>\
<input id=\"q\" type=\"search\" placeholder=\"Filter: type a word\" autocomplete=\"off\" aria-label=\"Filter the records\">\
<output id=\"shown\" for=\"q\"></output>\
<nav><a href=\"#projects\">Projects</a> <a href=\"#files\">Files</a> <a href=\"#timeline\">Timeline</a> <a href=\"#learnings\">Learnings</a></nav></header><main>",
        esc(heading),
        model::counts(t, files.len()),
    );
}

fn projects(conn: &rusqlite::Connection, h: &mut String, roots: Option<&[String]>) -> Result<()> {
    let rows: Vec<rep::ProjectRow> = rep::projects(conn)?
        .into_iter()
        .filter(|p| roots.is_none_or(|r| r.contains(&p.project)))
        .collect();
    if rows.is_empty() {
        return Ok(());
    }
    h.push_str("<section id=\"projects\"><h2>Projects</h2><div class=\"scroll\"><table><thead><tr><th>Project</th><th>Sessions</th><th>Observations</th><th>Last activity</th><th>Description</th></tr></thead><tbody>");
    for p in rows {
        let _ = write!(
            h,
            "<tr><td title=\"{}\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td><td>{}</td></tr>",
            esc(&p.project),
            esc(&p.name),
            p.sessions,
            p.observations,
            esc(&p
                .last_activity_at
                .as_deref()
                .map(minute)
                .unwrap_or_default()),
            esc(p.description.as_deref().unwrap_or(""))
        );
    }
    h.push_str("</tbody></table></div></section>");
    Ok(())
}

fn timeline(
    conn: &rusqlite::Connection,
    h: &mut String,
    t: &Timeline,
    mapped: &HashSet<String>,
) -> Result<()> {
    h.push_str("<section id=\"timeline\"><h2>Timeline</h2>");
    let mut day = None;
    for (i, (s, obs)) in t.sessions.iter().enumerate() {
        let d = model::day(s);
        if day != Some(d) {
            if day.is_some() {
                h.push_str("</section>");
            }
            let _ = write!(h, "<section class=day><h3>{}</h3>", esc(d));
            day = Some(d);
        }
        let graph = if mapped.contains(&s.session_id) {
            memkit_codemap::database::graph(conn, &s.session_id, false, false)?
        } else {
            None
        };
        session(h, s, obs, graph.as_ref(), i);
    }
    if day.is_some() {
        h.push_str("</section>");
    }
    if !t.loose.is_empty() {
        h.push_str("<section class=day><h3>Notes and observations outside these sessions</h3><ol>");
        for o in t.loose.iter().rev() {
            observation(h, o, None);
        }
        h.push_str("</ol></section>");
    }
    h.push_str("</section>");
    Ok(())
}

fn session(
    h: &mut String,
    s: &SessionRow,
    obs: &[Observation],
    graph: Option<&crate::ast::graph::Graph>,
    i: usize,
) {
    let root = s.project.as_deref();
    let _ = write!(
        h,
        "<article id={0} style=--n:{7}><h4><a href=#{0}>{0}</a> {1}</h4><p class=meta>{2} · {3} · {4} observation{5} · {6}</p>",
        esc(&s.handle),
        esc(&model::from(model::title(s), s.origin.as_deref())),
        esc(s.project_name.as_deref().unwrap_or("no project")),
        esc(&model::span(s)),
        s.observations,
        plural(s.observations as usize),
        esc(&s.status),
        obs.len()
    );
    if let Some(g) = graph {
        functions_changed(h, g, root, i);
    }
    h.push_str("<ol>");
    for o in obs {
        observation(h, o, Some(model::day(s)));
    }
    h.push_str("</ol></article>");
}

/// The definitions a session changed by mem-ast's map, with their call graph drawn. (A session
/// mem-ast did not map lists the functions its observations name in its full record.)
fn functions_changed(h: &mut String, g: &crate::ast::graph::Graph, root: Option<&str>, i: usize) {
    if g.nodes.is_empty() {
        return;
    }
    let _ = write!(
        h,
        "<details class=fns><summary>Functions changed ({})</summary><ul>",
        g.nodes.len()
    );
    for n in &g.nodes {
        let change = n.change.map_or("", |c| c.as_str());
        let _ = write!(
            h,
            "<li>{} <b class={change}>{change}</b> <i>{}</i>",
            esc(&n.qualname),
            esc(&relative(&n.path, root))
        );
    }
    h.push_str("</ul>");
    if g.nodes.len() > MAX_DRAWN {
        let _ = write!(
            h,
            "<p class=note>{} definitions: too many to draw.</p>",
            g.nodes.len()
        );
    } else if let Some(svg) = crate::ast::svg::render(g, &format!("g{i}-")) {
        let _ = write!(
            h,
            "<figure class=\"graph scroll\">{svg}<figcaption>Calls among the changed definitions</figcaption></figure>"
        );
    }
    h.push_str("</details>");
}

/// An observation's line; its full record is in the page's records (`super::records`), shown
/// under it by page.js when the line is clicked. Not a `<details>`: ten thousand of them, each
/// with its own shadow tree, doubled the time a large page took to open. Its files by name
/// alone, those its title does not already name (their paths are in the full record); its
/// time the clock alone when made on `day`.
fn observation(h: &mut String, o: &Observation, day: Option<&str>) {
    let at = o.created_at.as_deref().unwrap_or("");
    let at = match day {
        Some(d) if at.starts_with(d) => model::clock(at).to_string(),
        _ => minute(at),
    };
    let _ = write!(
        h,
        "<li id={} data-k={} data-t={}>{}",
        ids::obs(o.id.unwrap_or_default()),
        attr(&o.kind),
        attr(&at),
        esc(&model::from(&o.title, o.origin.as_deref())),
    );
    let mut names: Vec<&str> = Vec::new();
    for f in &o.files_modified {
        let name = f.rsplit(['/', '\\']).next().unwrap_or(f);
        if !name.is_empty() && !o.title.contains(name) && !names.contains(&name) {
            names.push(name);
        }
    }
    if !names.is_empty() {
        let _ = write!(h, "<code>{}</code>", esc(&names.join(" ")));
    }
}

/// An attribute's value, unquoted when it can be.
fn attr(v: &str) -> String {
    if !v.is_empty()
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_:.".contains(&b))
    {
        v.to_string()
    } else {
        format!("\"{}\"", esc(v))
    }
}

/// The learnings of the projects in scope (and those of every project), with their evidence.
fn learned(
    conn: &rusqlite::Connection,
    h: &mut String,
    roots: Option<&[String]>,
    t: &Timeline,
) -> Result<()> {
    let all = learnings::list(conn, &learnings::Filter::default())?;
    let shown: Vec<&learnings::Learning> = all
        .iter()
        .filter(|l| match (roots, &l.project) {
            (Some(r), Some(p)) => r.contains(p),
            _ => true,
        })
        .collect();
    if shown.is_empty() {
        return Ok(());
    }
    let handles: HashMap<&str, &str> = t
        .sessions
        .iter()
        .map(|(s, _)| (s.session_id.as_str(), s.handle.as_str()))
        .collect();
    h.push_str("<section id=\"learnings\"><h2>Learnings</h2><ul class=\"learnings\">");
    for l in shown {
        let (project, seen, how) = model::learning_facts(l);
        let _ = write!(
            h,
            "<li class=learning id={0}><p><a href=#{0}>{0}</a> <span class=type>{1}</span> {2}</p><p class=meta><meter min=0 max=1 value={3:.2}></meter> confidence {3:.2} · {seen} · {how} · {4}</p>",
            esc(&l.handle),
            esc(&l.category),
            esc(&l.content),
            l.confidence,
            esc(&project)
        );
        if let Some(e) = l.evidence.as_deref().filter(|e| !e.trim().is_empty()) {
            let _ = write!(h, "<blockquote>{}</blockquote>", esc(e.trim()));
        }
        if !l.source_sessions.is_empty() {
            let from: Vec<String> = l
                .source_sessions
                .iter()
                .map(|s| match handles.get(s.as_str()) {
                    Some(r) => format!("<a href=\"#{0}\">{0}</a>", esc(r)),
                    None => esc(s),
                })
                .collect();
            let _ = write!(
                h,
                "<p class=\"meta\">From sessions: {}</p>",
                from.join(", ")
            );
        }
        h.push_str("</li>");
    }
    h.push_str("</ul></section>");
    Ok(())
}
