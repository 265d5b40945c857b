//! The compression stage over the store (mem-compress without FILE): claims due captures,
//! turns them into observations and summaries, and says what it did.

use std::collections::BTreeMap;

use rusqlite::Connection;

use memkit_core::Result;
use memkit_core::config::{self, Config};
use memkit_core::notice::Notices;
use memkit_core::record::Observation;
use memkit_core::store::{self, queue};

use crate::llm::{Backend, Kind};
use crate::{Compressor, Item, Options, dedup, summary};

/// What one run over the queue is asked to do.
pub struct Run {
    /// Sessions claimed per round (each round is one transaction).
    pub sessions_per_round: usize,
    /// Summarise the sessions that are due.
    pub summaries: bool,
    /// How long a turn without its Stop waits before it is compressed anyway.
    pub open_turn: chrono::Duration,
    /// Told (captures done, captures waiting when the run began) after each round.
    pub progress: Option<Box<dyn Fn(u64, u64)>>,
    /// Start no turn after this moment (a pipeline run's budget; at least one runs): what is
    /// left, the oldest sessions, goes back to the queue for the next run.
    pub until: Option<std::time::Instant>,
}

/// What a run made: the new observations (merged ones are counted, not listed) and the counts
/// of its summary record.
pub struct Done {
    pub observations: Vec<Observation>,
    pub counts: BTreeMap<String, u64>,
    /// What the user must be told (the backend switched off for the run).
    pub notices: Notices,
}

/// Adds `n` to count `k` of a run's summary record.
pub fn add(counts: &mut BTreeMap<String, u64>, k: &str, n: u64) {
    *counts.entry(k.into()).or_default() += n;
}

/// The compressor's LLM accounting, added to a run's counts.
fn stats_into(counts: &mut BTreeMap<String, u64>, c: &Compressor) {
    add(counts, "chunks", c.stats.chunks);
    add(counts, "llm_calls", c.stats.calls);
    add(counts, "llm_failed_calls", c.stats.failed_calls);
    add(counts, "tokens_in", c.stats.tokens_in);
    add(counts, "tokens_out", c.stats.tokens_out);
    add(counts, "fallbacks", c.stats.fallbacks);
    add(counts, "over_budget", c.stats.over_budget);
    add(counts, "switched_off", c.stats.switched_off);
}

/// Compresses the due captures of the queue, then summarises the sessions that are due.
pub fn compress_queue(cfg: &Config, b: Backend, opts: Options, run: &Run) -> Result<Done> {
    // Read before any work, so a bad value stops the run before it changes anything.
    let raw_days = config::RAW_RESPONSE_DAYS.get(cfg)?;
    let conn = store::open(&cfg.home.db())?;
    let pid = std::process::id() as i64;
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    for k in [
        "captures",
        "groups",
        "observations",
        "merged",
        "notes",
        "skipped",
        "errors",
        "summaries",
        "released",
    ] {
        counts.insert(k.into(), 0);
    }
    let reclaimed = queue::reclaim_stale(&conn, chrono::Duration::minutes(30))?;
    counts.insert("reclaimed".into(), reclaimed as u64);
    // Before claiming, so the observations made now are stored under the discovered project.
    let rescoped = memkit_core::discover::run(&conn)?;
    counts.insert("rescoped".into(), rescoped.len() as u64);
    let open_turn = run.open_turn;
    let mut comp = Compressor::new(b, opts, Some(&conn));
    let mut recs: Vec<Observation> = Vec::new();
    let waiting = match &run.progress {
        Some(_) => queue::waiting(&conn, None)?.max(0) as u64,
        None => 0,
    };
    let over = || run.until.is_some_and(|t| std::time::Instant::now() >= t);
    let mut worked = false;
    'rounds: loop {
        if let Some(tell) = &run.progress {
            tell(counts["captures"], waiting);
        }
        if worked && over() {
            break;
        }
        let now = store::now();
        let rows = store::write_tx(&conn, |c| {
            queue::claim(c, pid, run.sessions_per_round, &now, open_turn)
        })?;
        if rows.is_empty() {
            break;
        }
        add(&mut counts, "captures", rows.len() as u64);
        let grouped = crate::group(rows.into_iter().map(Item::from_capture).collect());
        store::write_tx(&conn, |c| {
            for (id, why) in &grouped.skips {
                queue::finish(c, &[*id], "done", None, Some(why))?;
            }
            Ok(())
        })?;
        add(&mut counts, "skipped", grouped.skips.len() as u64);
        for n in &grouped.notes {
            let mut o = crate::note_observation(n);
            crate::finish_observation(&mut o, &n.session_id, n.project.as_deref(), &[n.id]);
            let now = store::now();
            let (id, _) = store::write_tx(&conn, |c| {
                let r = dedup::store(c, &o, &now)?;
                queue::finish(c, &[n.id], "done", None, None)?;
                Ok(r)
            })?;
            o.id = Some(id);
            o.created_at = o.created_at.or(Some(now));
            recs.push(o);
            add(&mut counts, "notes", 1);
        }
        // The latest sessions' turns first (each session's in order), so a budget spent on a
        // round of an imported history still reaches today's session in it.
        let mut groups = grouped.groups;
        let newest: BTreeMap<String, String> = groups.iter().fold(BTreeMap::new(), |mut m, g| {
            let last = g
                .items
                .last()
                .map(|i| i.created_at.clone())
                .unwrap_or_default();
            let e = m.entry(g.session_id.clone()).or_default();
            if last > *e {
                *e = last;
            }
            m
        });
        groups.sort_by(|a, b| newest[&b.session_id].cmp(&newest[&a.session_id]));
        let mut groups = groups.into_iter();
        while let Some(mut g) = groups.next() {
            if worked && over() {
                // Claimed but not reached: back to the queue, with the turns' boundaries.
                let rest: Vec<i64> = std::iter::once(g)
                    .chain(groups)
                    .flat_map(|g| {
                        let mut ids = g.ids();
                        ids.extend(g.boundaries.iter().map(|b| b.0));
                        ids
                    })
                    .collect();
                store::write_tx(&conn, |c| queue::release(c, &rest))?;
                add(&mut counts, "released", rest.len() as u64);
                break 'rounds;
            }
            worked = true;
            add(&mut counts, "groups", 1);
            add(&mut counts, "skipped", g.boundaries.len() as u64);
            if g.prompt.is_none() {
                g.prompt = queue::prompt_before(&conn, &g.session_id, &g.items[0].created_at)?;
            }
            let chunks = comp.compress(&g)?;
            let now = store::now();
            let worked_at = g.items.iter().map(|i| i.created_at.clone()).max();
            let stored = store::write_tx(&conn, |c| {
                let mut out = Vec::new();
                for ch in &chunks {
                    for o in &ch.observations {
                        let mut o = o.clone();
                        crate::finish_observation(
                            &mut o,
                            &g.session_id,
                            g.project.as_deref(),
                            &ch.ids,
                        );
                        o.created_at = worked_at.clone().or_else(|| Some(now.clone()));
                        let (id, merged) = dedup::store(c, &o, &now)?;
                        o.id = Some(id);
                        out.push((o, merged));
                    }
                    let status = if ch.error.is_some() { "error" } else { "done" };
                    queue::finish(c, &ch.ids, status, ch.error.as_deref(), None)?;
                }
                for (id, why) in &g.boundaries {
                    queue::finish(c, &[*id], "done", None, Some(why))?;
                }
                Ok(out)
            })?;
            for ch in &chunks {
                if ch.error.is_some() {
                    add(&mut counts, "errors", ch.ids.len() as u64);
                }
            }
            for (o, merged) in stored {
                if merged {
                    add(&mut counts, "merged", 1);
                } else {
                    add(&mut counts, "observations", 1);
                    recs.push(o);
                }
            }
        }
        worked = true;
    }
    if run.summaries {
        // The latest sessions first; at least one, whatever the budget left: today's session
        // is summarised in the run that compressed it.
        for (n, sid) in summary::due(&conn)?.into_iter().enumerate() {
            // Due again next run.
            if n > 0 && over() {
                break;
            }
            let now = store::now();
            if store::write_tx(&conn, |c| summary::summarize(c, &sid, &now))? {
                add(&mut counts, "summaries", 1);
            }
        }
    }
    // Error recall reads these; before drop_raw, which empties the responses they come from.
    let failures = store::write_tx(&conn, store::failures::index)?;
    counts.insert("failures".into(), failures as u64);
    stats_into(&mut counts, &comp);
    let notices = std::mem::take(&mut comp.notices);
    drop(comp);
    let dropped = drop_raw(cfg, &conn, raw_days)?;
    counts.insert("raw_dropped".into(), dropped as u64);
    // The run's counts outlive its summary record (the pipeline discards it): mem-eval health
    // reads the dedup rate from them.
    if counts["captures"] > 0 {
        store::events::log(
            &conn,
            None,
            "compress_run",
            None,
            "info",
            Some(&serde_json::to_value(&counts)?),
        )?;
    }
    Ok(Done {
        observations: recs,
        counts,
        notices,
    })
}

/// Compresses captures read from a file (filter mode): nothing is stored, except the LLM
/// calls' accounting.
pub fn compress_items(cfg: &Config, b: Backend, opts: Options, items: Vec<Item>) -> Result<Done> {
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    add(&mut counts, "captures", items.len() as u64);
    // LLM calls are accounted in the store even in filter mode.
    let conn = if b.kind != Kind::Heuristic {
        Some(store::open(&cfg.home.db())?)
    } else {
        None
    };
    let mut comp = Compressor::new(b, opts, conn.as_ref());
    let grouped = crate::group(items);
    add(&mut counts, "skipped", grouped.skips.len() as u64);
    add(&mut counts, "groups", grouped.groups.len() as u64);
    add(
        &mut counts,
        "skipped",
        grouped
            .groups
            .iter()
            .map(|g| g.boundaries.len() as u64)
            .sum(),
    );
    let mut recs = Vec::new();
    for n in &grouped.notes {
        let mut o = crate::note_observation(n);
        crate::finish_observation(&mut o, &n.session_id, n.project.as_deref(), &[n.id]);
        recs.push(o);
    }
    for g in &grouped.groups {
        for ch in comp.compress(g)? {
            if ch.error.is_some() {
                add(&mut counts, "errors", ch.ids.len() as u64);
            }
            for mut o in ch.observations {
                crate::finish_observation(&mut o, &g.session_id, g.project.as_deref(), &ch.ids);
                recs.push(o);
            }
        }
    }
    add(&mut counts, "observations", recs.len() as u64);
    stats_into(&mut counts, &comp);
    Ok(Done {
        observations: recs,
        counts,
        notices: comp.notices,
    })
}

/// Drops old raw tool responses (see `queue::drop_raw_responses`). The query reads every
/// queued payload, so it runs once a day (every run when the days are 0).
fn drop_raw(cfg: &Config, conn: &Connection, days: u32) -> Result<usize> {
    let marker = cfg.home.raw_drop_marker();
    if !store::daily_due(&marker, days == 0) {
        return Ok(0);
    }
    let now = chrono::Utc::now();
    let before = (now - chrono::Duration::days(i64::from(days)))
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let n = store::write_tx(conn, |c| {
        queue::drop_raw_responses(c, &before, &store::now())
    })?;
    store::mark_done(&marker);
    Ok(n)
}
