//! `mem-eval compression`: stored observations scored against the captures they came from
//! (observation_sources → pending_queue), with deterministic checks only: is the record whole,
//! are the files it names among the files its captures touched, how much shorter is it than
//! its captures, and does its title pass the rubric of [`crate::title`].

use std::collections::HashSet;

use rusqlite::Connection;
use serde::Serialize;

use memkit_core::Result;
use memkit_core::record::Observation;
use memkit_core::store::stats::{self, Selection, Source};
use memkit_core::tokens;

use crate::qag::Judge;

/// The observation types the store knows (docs/ARCHITECTURE.md, "Storage").
pub const TYPES: &[&str] = &[
    "decision",
    "bugfix",
    "feature",
    "refactor",
    "discovery",
    "change",
];

/// One observation's scores (`"type":"eval_compression"`).
#[derive(Debug, Clone, Serialize)]
#[serde(remote = "Self")]
pub struct Score {
    pub id: i64,
    pub session_id: Option<String>,
    pub project: Option<String>,
    pub obs_type: String,
    pub title: String,
    /// Captures it was made from.
    pub captures: usize,
    /// Every required field present and the type known.
    pub valid: bool,
    /// Share of the files it names (modified and read) that its captures touched; 1 when it
    /// names none.
    pub grounded: f64,
    /// Estimated tokens of the captures' payloads as stored; when their raw responses were
    /// dropped (MEM_RAW_RESPONSE_DAYS), the count the compressor made before (`raw_dropped`).
    pub raw_tokens: u64,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub raw_dropped: bool,
    /// Estimated tokens of the observation's text (title, summary, detail, facts).
    pub compressed_tokens: u64,
    /// raw_tokens / compressed_tokens.
    pub ratio: f64,
    /// Share of the title rubric's checks passed.
    pub title_score: f64,
    /// What failed: `missing summary`, `unknown type x`, `ungrounded files_modified a.rs`,
    /// `title: raw prompt`…
    pub faults: Vec<String>,
    /// With --qag: share of the judge's questions about the captures the observation answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qag_coverage: Option<f64>,
    /// With --qag: share of the observation's claims the captures support.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qag_alignment: Option<f64>,
    /// With --qag: why the judge gave no verdict.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qag_error: Option<String>,
}
memkit_core::record!(Score = "eval_compression");

/// The means over the scored observations (`"type":"eval"`, `"set":"compression"`).
#[derive(Debug, Clone, Serialize)]
#[serde(remote = "Self")]
pub struct Report {
    pub set: &'static str,
    pub observations: usize,
    /// Share of observations that are valid.
    pub valid: f64,
    pub grounded: f64,
    /// Sum of raw tokens over sum of compressed tokens.
    pub ratio: f64,
    /// Mean of the per-observation ratios.
    pub ratio_mean: f64,
    pub title_score: f64,
    /// Share of titles that pass every check.
    pub title_pass: f64,
    /// Share of observations without any fault.
    pub clean: f64,
    /// With --qag: observations the judge gave a verdict on, and the means of its verdicts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qag_judged: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qag_coverage: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qag_alignment: Option<f64>,
}
memkit_core::record!(Report = "eval");

/// Scores the observations `sel` picks, each also by `judge` when given.
pub fn run(
    conn: &Connection,
    sel: &Selection,
    mut judge: Option<&mut Judge>,
) -> Result<(Vec<Score>, Report)> {
    let mut scores = Vec::new();
    for o in stats::compressed(conn, sel)? {
        let Some(id) = o.id else { continue };
        let sources = stats::sources(conn, id)?;
        let mut s = score(id, &o, &sources);
        if let Some(j) = judge.as_deref_mut() {
            match j.judge(&o, &sources)? {
                Ok(v) => {
                    s.qag_coverage = Some(v.coverage);
                    s.qag_alignment = Some(v.alignment);
                }
                Err(why) => s.qag_error = Some(why),
            }
        }
        scores.push(s);
    }
    let mut report = report(&scores);
    if judge.is_some() {
        let judged: Vec<&Score> = scores.iter().filter(|s| s.qag_coverage.is_some()).collect();
        let n = judged.len().max(1) as f64;
        let mean = |f: &dyn Fn(&Score) -> Option<f64>| {
            (!judged.is_empty())
                .then(|| r3(judged.iter().fold(0.0, |a, s| a + f(s).unwrap_or(0.0)) / n))
        };
        report.qag_judged = Some(judged.len());
        report.qag_coverage = mean(&|s| s.qag_coverage);
        report.qag_alignment = mean(&|s| s.qag_alignment);
    }
    Ok((scores, report))
}

/// One observation against its captures.
pub fn score(id: i64, o: &Observation, sources: &[Source]) -> Score {
    let mut faults = Vec::new();
    for (field, empty) in [
        ("title", o.title.trim().is_empty()),
        ("summary", o.summary.trim().is_empty()),
        (
            "session_id",
            o.session_id.as_deref().is_none_or(str::is_empty),
        ),
    ] {
        if empty {
            faults.push(format!("missing {field}"));
        }
    }
    if !TYPES.contains(&o.kind.as_str()) {
        faults.push(format!("unknown type {}", o.kind));
    }
    let valid = faults.is_empty();
    let touched: HashSet<&str> = sources
        .iter()
        .flat_map(|s| s.files.iter().map(String::as_str))
        .collect();
    let mut named = 0;
    let mut found = 0;
    for (field, files) in [
        ("files_modified", &o.files_modified),
        ("files_read", &o.files_read),
    ] {
        for f in files {
            named += 1;
            if touched.contains(f.as_str()) {
                found += 1;
            } else {
                faults.push(format!("ungrounded {field} {f}"));
            }
        }
    }
    // A capture whose response is gone no longer says how long it was; the compressor counted
    // it while it was whole.
    let raw_dropped = sources
        .iter()
        .any(|s| s.payload.contains("\"tool_response_dropped_at\""));
    let raw: u64 = if raw_dropped {
        o.tokens_raw
    } else {
        sources
            .iter()
            .map(|s| tokens::estimate(&s.payload) as u64)
            .sum()
    };
    let compressed = tokens::estimate(&text_of(o)) as u64;
    let title_faults = crate::title::faults(&o.title);
    faults.extend(title_faults.iter().map(|f| format!("title: {f}")));
    Score {
        id,
        session_id: o.session_id.clone(),
        project: o.project.clone(),
        obs_type: o.kind.clone(),
        title: o.title.clone(),
        captures: sources.len(),
        valid,
        grounded: if named == 0 {
            1.0
        } else {
            r3(found as f64 / named as f64)
        },
        raw_tokens: raw,
        raw_dropped,
        compressed_tokens: compressed,
        ratio: r3(raw as f64 / compressed.max(1) as f64),
        title_score: r3(crate::title::score(&o.title)),
        faults,
        qag_coverage: None,
        qag_alignment: None,
        qag_error: None,
    }
}

/// The text an observation is read as (what its compressed tokens count).
fn text_of(o: &Observation) -> String {
    let mut parts = vec![o.title.as_str(), o.summary.as_str()];
    parts.extend(o.detail.as_deref());
    parts.extend(o.facts.iter().map(String::as_str));
    parts.join("\n")
}

fn r3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// The means of `scores`.
pub fn report(scores: &[Score]) -> Report {
    let n = scores.len().max(1) as f64;
    // fold from 0.0: an empty f64 sum is -0.0.
    let mean = |f: &dyn Fn(&Score) -> f64| r3(scores.iter().fold(0.0, |a, s| a + f(s)) / n);
    let raw: u64 = scores.iter().map(|s| s.raw_tokens).sum();
    let compressed: u64 = scores.iter().map(|s| s.compressed_tokens).sum();
    Report {
        set: "compression",
        observations: scores.len(),
        valid: mean(&|s| f64::from(u8::from(s.valid))),
        grounded: mean(&|s| s.grounded),
        ratio: r3(raw as f64 / compressed.max(1) as f64),
        ratio_mean: mean(&|s| s.ratio),
        title_score: mean(&|s| s.title_score),
        title_pass: mean(&|s| f64::from(u8::from(s.title_score == 1.0))),
        clean: mean(&|s| f64::from(u8::from(s.faults.is_empty()))),
        qag_judged: None,
        qag_coverage: None,
        qag_alignment: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(files: &[&str], payload: &str) -> Source {
        Source {
            id: 1,
            event: "PostToolUse".into(),
            tool_name: Some("Edit".into()),
            files: files.iter().map(|f| f.to_string()).collect(),
            payload: payload.into(),
        }
    }

    #[test]
    fn files_not_touched_by_the_captures_are_ungrounded_and_a_weak_title_costs() {
        let o = Observation {
            session_id: Some("s".into()),
            kind: "bugfix".into(),
            title: "Fix: Are you sure the HTML is the issue (index.html)".into(),
            summary: "Checked the page.".into(),
            files_modified: vec!["/p/index.html".into()],
            files_read: vec!["/p/other.js".into()],
            ..Observation::default()
        };
        let s = score(7, &o, &[source(&["/p/index.html"], &"word ".repeat(400))]);
        assert!(s.valid);
        assert_eq!(s.grounded, 0.5);
        assert_eq!(
            s.faults,
            ["ungrounded files_read /p/other.js", "title: raw prompt"]
        );
        assert!((380..=440).contains(&s.raw_tokens), "{}", s.raw_tokens);
        assert!(s.ratio > 10.0, "{}", s.ratio);
        let good = Observation {
            title: "Fix the audio worklet loading in index.html".into(),
            files_read: vec![],
            kind: "nonsense".into(),
            ..o
        };
        let g = score(8, &good, &[source(&["/p/index.html"], "x")]);
        assert!(g.title_score > s.title_score);
        assert!(
            !g.valid && g.faults == ["unknown type nonsense"],
            "{:?}",
            g.faults
        );
        let r = report(&[s, g]);
        assert_eq!((r.observations, r.valid, r.grounded), (2, 0.5, 0.75));
        assert_eq!(r.clean, 0.0);
    }
}
