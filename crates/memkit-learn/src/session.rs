//! A run of mem-learn over the sessions due: each session's candidates (an LLM or the
//! heuristic), what each does to the stored learnings, the call graph healed from the session's
//! observations, all written with the session's mark in one transaction.

use std::collections::BTreeMap;

use rusqlite::Connection;
use serde_json::{Value, json};

use memkit_compress::llm::Backend;
use memkit_core::config::Config;
use memkit_core::notice::{Notice, Said};
use memkit_core::record::Observation;
use memkit_core::store::{self, events, functions as fmap, learnings, observations};
use memkit_core::{Error, Result};

use crate::same::Sameness;
use crate::{Action, Candidate, heal};

/// Learns from every session summarised since it was last learned from (or from `only`, a
/// session's number or id, again), with `backend` or the configured LLM; returns the counts of
/// outcomes. Each learning's or edge's outcome is said once its session is written.
pub fn learn(
    conn: &Connection,
    cfg: &Config,
    backend: Option<&str>,
    only: Option<&str>,
    say: &mut dyn FnMut(Said<Value>) -> Result<()>,
) -> Result<BTreeMap<String, u64>> {
    let (b, notice) = Backend::from_config(cfg, backend)?;
    if let Some(n) = notice {
        say(Said::Notice(n))?;
    }
    let opts = memkit_compress::Options::from_config(cfg)?;
    let mut ex = crate::extract::Extractor::new(b, &opts, conn)?;
    let mut same = Sameness::new(conn, cfg)?;
    let only = only.map(|s| store::sessions::id_of(conn, s)).transpose()?;
    let due = learnings::due(conn, only.as_deref())?;
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
        let obs = observations::of_session(conn, &s.session_id)?;
        let prompts = store::queue::typed_prompts(conn, &s.session_id)?;
        let active = learnings::list(
            conn,
            &learnings::Filter {
                project: Some(project.unwrap_or("")),
                ..Default::default()
            },
        )?;
        let repeated = match project {
            Some(p) => crate::heuristic::repeated_commands(
                &learnings::commands(conn, &s.session_id)?,
                &learnings::earlier_commands(conn, p, &s.session_id)?,
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
            say(Said::Notice(Notice::warn(format!(
                "the heuristic extracted instead of {}: {f}",
                ex.backend.kind.name()
            ))))?;
            fallbacks.push(f.clone());
        }
        let now = store::now();
        // Outcomes, healing and the session's mark in one transaction.
        let tx = conn.unchecked_transaction()?;
        let mut active = active;
        let mut recs = Vec::new();
        for c in &got.candidates {
            let action = crate::decide(c, &active, &s.session_id, &mut |a, b| same.same(a, b));
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
        for r in recs {
            say(Said::Record(r))?;
        }
    }
    if let Some(t) = same.trouble() {
        say(Said::Notice(Notice::Warn(t)))?;
    }
    if ex.calls > 0 {
        counts.insert("llm_calls".into(), ex.calls);
        counts.insert("tokens_in".into(), ex.tokens_in);
        counts.insert("tokens_out".into(), ex.tokens_out);
    }
    Ok(counts)
}

/// Writes what `action` does and returns its record; `active` follows the changes.
#[allow(clippy::too_many_arguments)]
fn apply(
    conn: &Connection,
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
                category: crate::category(&c.category),
                confidence: crate::INSERTED,
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
            crate::apply_merge(l, session);
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
                    crate::apply_merge(l, session);
                    learnings::update(conn, l, now)?;
                    l.clone()
                }
                None => insert(active)?,
            };
            let l = active
                .iter_mut()
                .find(|l| l.id == *old)
                .expect("an active learning");
            crate::apply_contradiction(l, new.id);
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
        None => memkit_core::record::object(
            "learning",
            json!({"project": project, "content": c.content, "category": c.category}),
        ),
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
    conn: &Connection,
    project: &str,
    session: &str,
    obs: &[Observation],
    now: &str,
) -> Result<Vec<Value>> {
    let mut out = Vec::new();
    let edge_rec = |outcome: &str, id: i64, caller: &str, callee: &str, c: f64| {
        let fields = json!({"outcome": outcome, "id": id, "caller": caller, "callee": callee,
                            "confidence": c, "session_id": session});
        memkit_core::record::object("edge", fields)
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

/// A learning as a record on the wire.
pub fn record(l: &learnings::Learning) -> Value {
    memkit_core::record::after("learning", serde_json::to_value(l).unwrap_or_default())
}
