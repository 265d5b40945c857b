//! The files in play as a chart of edits over time: a row per file (the most edited first), a
//! column per day (per week over a long span), each cell shaded by how many observations
//! modified the file then. Plain SVG, written here: a heat map needs no layout.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;

use chrono::NaiveDate;

use super::model::{Timeline, esc, relative};

/// Rows drawn at most (the most edited files): past that the chart stops being readable.
const MAX_FILES: usize = 30;
/// Past this many days, a column is a week.
const MAX_DAYS: i64 = 120;

/// The chart of `t`'s modified files; None when no observation modified a file.
pub fn files(t: &Timeline) -> Option<String> {
    let mut edits: HashMap<String, BTreeMap<NaiveDate, u32>> = HashMap::new();
    for o in t.observations() {
        let Some(day) = o
            .created_at
            .as_deref()
            .and_then(|c| NaiveDate::parse_from_str(c.get(..10)?, "%Y-%m-%d").ok())
        else {
            continue;
        };
        for f in &o.files_modified {
            let name = relative(f, o.project.as_deref());
            *edits.entry(name).or_default().entry(day).or_default() += 1;
        }
    }
    let first = *edits.values().filter_map(|d| d.keys().next()).min()?;
    let last = *edits.values().filter_map(|d| d.keys().next_back()).max()?;
    let mut rows: Vec<(String, u32, BTreeMap<NaiveDate, u32>)> = edits
        .into_iter()
        .map(|(f, d)| (f, d.values().sum(), d))
        .collect();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let more = rows.len().saturating_sub(MAX_FILES);
    rows.truncate(MAX_FILES);
    // Then by when each was first edited: the rows read as the course of the work.
    rows.sort_by(|a, b| {
        a.2.keys()
            .next()
            .cmp(&b.2.keys().next())
            .then_with(|| b.1.cmp(&a.1))
    });
    let span = (last - first).num_days() + 1;
    let per = if span > MAX_DAYS { 7 } else { 1 };
    let cols = (span + per - 1) / per;
    let (label_w, cell_h, head) = (230.0, 16.0, 18.0);
    let cell_w = (560.0 / cols as f64).clamp(3.0, 22.0);
    let width = label_w + cell_w * cols as f64 + 8.0;
    let height = head + cell_h * rows.len() as f64 + 4.0;
    let mut cells: Vec<HashMap<i64, u32>> = Vec::new();
    let mut top = 1;
    for (_, _, days) in &rows {
        let mut c: HashMap<i64, u32> = HashMap::new();
        for (d, n) in days {
            *c.entry((*d - first).num_days() / per).or_default() += n;
        }
        top = top.max(c.values().copied().max().unwrap_or(1));
        cells.push(c);
    }
    let mut s = format!(
        "<svg class=\"files-chart\" viewBox=\"0 0 {width:.0} {height:.0}\" width=\"{width:.0}\" role=\"img\" aria-label=\"edits per file over time\">"
    );
    let unit = if per == 7 { "week" } else { "day" };
    let _ = write!(
        s,
        "<text class=\"axis\" x=\"{label_w}\" y=\"12\">{first}</text><text class=\"axis\" x=\"{:.0}\" y=\"12\" text-anchor=\"end\">{last} · a column per {unit}</text>",
        width - 8.0
    );
    for (i, ((file, total, _), c)) in rows.iter().zip(&cells).enumerate() {
        let y = head + cell_h * i as f64;
        let shown = clip_left(file, 34);
        let _ = write!(
            s,
            "<g><title>{} · {total} edit{}</title><text x={:.0} y={:.1} text-anchor=end>{}</text>",
            esc(file),
            super::model::plural(*total as usize),
            label_w - 6.0,
            y + cell_h * 0.72,
            esc(&shown)
        );
        let mut at: Vec<_> = c.iter().collect();
        at.sort();
        for (col, n) in at {
            let day = first + chrono::Duration::days(col * per);
            let _ = write!(
                s,
                "<rect x={:.1} y={y:.1} width={:.1} height={:.0} fill-opacity={:.2}><title>{day}: {n} edit{}</title></rect>",
                label_w + cell_w * *col as f64,
                (cell_w - 1.0).max(1.0),
                cell_h - 2.0,
                0.25 + 0.75 * f64::from(*n) / f64::from(top),
                super::model::plural(*n as usize)
            );
        }
        s.push_str("</g>");
    }
    s.push_str("</svg>");
    if more > 0 {
        let _ = write!(
            s,
            "<p class=\"note\">and {more} more file{}</p>",
            super::model::plural(more)
        );
    }
    Some(s)
}

/// The end of a long path, which names the file.
fn clip_left(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max {
        s.to_string()
    } else {
        format!("…{}", s.chars().skip(n - max + 1).collect::<String>())
    }
}
