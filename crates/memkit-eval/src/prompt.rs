//! `mem-eval prompt`: does the prompt hook bring in what answers a question, and nothing when
//! nothing does? A set goes into a scratch memory as `mem-eval retrieval` puts it there; every
//! question is then sent, as a UserPromptSubmit payload from its scope's directory, to the
//! command mem-install registers for that event, a process per question, and the memories the
//! hook injected are mapped back to the set's ids. Beside the hook, in the same memory and run:
//! mem-search's default search and the textbook BM25, each allowed 1, 2 and 3 items and the
//! hook's own mean. With noise prompts (questions no memory bears on, each asked in a scope of
//! the set), the share the hook leaves silent and what it injects when it speaks.
//!
//! The hook runs before any in-process search, and that search writes nothing: mem-search
//! caches the vectors of the queries it embeds in the store, and a hook that found a
//! question's vector there would not be the hook a user's prompt meets.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::time::Instant;

use serde::Serialize;
use serde_json::json;

use memkit_core::{Context, Result, ids, tokens};
use memkit_search::search::Engine;

use crate::recall::ask;
use crate::retrieval::data::Query;
use crate::retrieval::{self, Memory, Progress, Set, median, metrics};

pub struct Options {
    /// The hook's command line, as mem-install registers it (run with `sh -c`).
    pub hook: String,
    /// The embedding model of the memory (what mem-search's default search uses).
    pub model: String,
    /// Where scratch memories and the shared embedding cache live.
    pub work: PathBuf,
    pub keep: bool,
    /// Files of prompts no memory bears on (`{qid, scope, text}`): each file's name and its
    /// prompts.
    pub noise: Vec<(String, Vec<Query>)>,
    /// The moment every prompt is asked at (the hook's `MEM_NOW`): the block's relative times,
    /// so its tokens, are then the same in every run.
    pub now: String,
    /// The share of the records given vectors ([`retrieval::Options::vectors`]).
    pub vectors: Option<f64>,
    /// Where to write what each question was given ([`Question`]), a line each.
    pub questions: Option<PathBuf>,
}

/// What one question was given, by the hook and the baselines: the `--questions` file's lines,
/// so that a figure can be traced to the questions behind it.
#[derive(Debug, Serialize)]
pub struct Question<'a> {
    pub qid: &'a str,
    pub scope: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub category: Option<&'a str>,
    pub text: &'a str,
    /// The set's evidence records, by id.
    pub evidence: Vec<&'a str>,
    /// The records the hook injected, in order (none: it was silent).
    pub hook: &'a [String],
    /// The first 10 of mem-search's default search and of the textbook BM25.
    pub search: Vec<&'a str>,
    pub textbook: Vec<&'a str>,
}

/// One row of figures: a retriever on the questions of one category (`all`, each category,
/// or `noise`).
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub v: u32,
    pub set: String,
    /// `hook`, `search` (mem-search's default) or `textbook`.
    pub retriever: String,
    /// Items the baseline may give: 1, 2, 3, or the hook's mean (a fraction of a question
    /// gets the next item).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub k: Option<f64>,
    pub category: String,
    pub questions: usize,
    /// Questions with at least one evidence record given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hit_rate: Option<f64>,
    /// Mean share of each question's evidence given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recall: Option<f64>,
    /// Questions given nothing.
    pub silent: f64,
    /// Items given per question.
    pub items: f64,
    /// Tokens the hook injected per question.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens: Option<f64>,
    /// Median time per question (the hook's: a whole process).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p50_ms: Option<f64>,
    /// The noise file the row's prompts come from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub noise: Option<String>,
}

pub struct Outcome {
    pub rows: Vec<Row>,
    /// The scratch memory, when kept.
    pub home: Option<PathBuf>,
}

/// What the hook gave one question.
#[derive(Debug, Clone, Default)]
struct Said {
    /// The set's ids of the observations injected, in order.
    items: Vec<String>,
    tokens: usize,
    ms: f64,
}

pub fn run(set: &Set, opts: &Options, progress: Progress) -> Result<Outcome> {
    retrieval::check_scopes(set)?;
    // Made first: a path that cannot be written fails before the run, not after it.
    let questions = opts
        .questions
        .as_ref()
        .map(|p| {
            std::fs::File::create(p)
                .map(|f| (p, f))
                .map_err_context(|| p.display().to_string())
        })
        .transpose()?;
    let build = retrieval::Options {
        modes: vec!["hybrid".into()],
        model: opts.model.clone(),
        ks: vec![],
        work: opts.work.clone(),
        keep: opts.keep,
        depth: 10,
        reranker: None,
        vectors: opts.vectors,
    };
    let mem = Memory::build(set, &build, progress)?;
    let asked: Vec<&Query> = set.queries.iter().filter(|q| answerable(set, q)).collect();
    let hook = ["sh".to_string(), "-c".into(), opts.hook.clone()];
    let mut said = Vec::with_capacity(asked.len());
    for (i, q) in asked.iter().enumerate() {
        said.push(ask_hook(&mem, &hook, q, &opts.now)?);
        progress("hook", i + 1, asked.len());
    }
    let scopes = scopes(set);
    let mut noise: Vec<Vec<Said>> = Vec::new();
    for (_, prompts) in &opts.noise {
        let mut out = Vec::with_capacity(prompts.len());
        for (i, p) in prompts.iter().enumerate() {
            let mut q = p.clone();
            if !scopes.contains(&q.scope.as_str()) {
                q.scope = scopes[i % scopes.len()].to_string();
            }
            out.push(ask_hook(&mem, &hook, &q, &opts.now)?);
            progress("noise", i + 1, prompts.len());
        }
        noise.push(out);
    }
    // mem-search caches each query's vector in the store: a kept memory must hold none, or
    // the hook run on it again would find them.
    memkit_core::store::query_only(&mem.searcher.conn, true)?;
    let mut search = Vec::with_capacity(asked.len());
    for (i, q) in asked.iter().enumerate() {
        search.push(mem.search(q, Engine::Auto, 10, false)?.0);
        progress("search", i + 1, asked.len());
    }
    let books = retrieval::textbook_indexes(set);
    let textbook: Vec<retrieval::Ranking> = asked
        .iter()
        .map(|q| {
            let mut r = books
                .get(q.scope.as_str())
                .map(|ix| ix.search(&q.text))
                .unwrap_or_default();
            r.truncate(10);
            r
        })
        .collect();
    if let Some((path, file)) = questions {
        write_questions(path, file, set, &asked, &said, &search, &textbook)?;
    }
    let mut rows = figures(set, &asked, &said, &search, &textbook);
    for ((name, _), said) in opts.noise.iter().zip(&noise) {
        rows.push(noise_row(&set.name, name, said));
    }
    let home = mem.finish(opts.keep)?;
    Ok(Outcome { rows, home })
}

fn write_questions(
    path: &std::path::Path,
    mut file: std::fs::File,
    set: &Set,
    asked: &[&Query],
    said: &[Said],
    search: &[retrieval::Ranking],
    textbook: &[retrieval::Ranking],
) -> Result<()> {
    let mut out = String::new();
    for (i, q) in asked.iter().enumerate() {
        let mut evidence: Vec<&str> = metrics::relevant(&set.qrels[&q.qid]).collect();
        evidence.sort_unstable();
        let line = Question {
            qid: &q.qid,
            scope: &q.scope,
            category: q.category.as_deref(),
            text: &q.text,
            evidence,
            hook: &said[i].items,
            search: ids(&search[i]),
            textbook: ids(&textbook[i]),
        };
        out.push_str(&serde_json::to_string(&line)?);
        out.push('\n');
    }
    std::io::Write::write_all(&mut file, out.as_bytes())
        .map_err_context(|| path.display().to_string())
}

fn ids(r: &retrieval::Ranking) -> Vec<&str> {
    r.iter().map(|x| x.0.as_str()).collect()
}

/// A question with at least one evidence record (the others are not scored).
fn answerable(set: &Set, q: &Query) -> bool {
    set.qrels
        .get(&q.qid)
        .is_some_and(|r| metrics::relevant(r).next().is_some())
}

/// The set's scopes, in order.
fn scopes(set: &Set) -> Vec<&str> {
    let mut s: Vec<&str> = set.corpus.iter().map(|d| d.scope.as_str()).collect();
    s.sort_unstable();
    s.dedup();
    s
}

/// One question sent to the hook as Claude Code sends a prompt: a new session in the scope's
/// directory.
fn ask_hook(mem: &Memory, hook: &[String], q: &Query, now: &str) -> Result<Said> {
    let session = format!("eval-{}", q.qid);
    let payload = json!({
        "session_id": session,
        "transcript_path": mem.home.join(format!("{session}.jsonl")),
        "cwd": q.scope,
        "permission_mode": "default",
        "hook_event_name": "UserPromptSubmit",
        "prompt": q.text,
    });
    let t = Instant::now();
    let text = ask(&mem.home, hook, &payload, now)?.unwrap_or_default();
    let ms = t.elapsed().as_secs_f64() * 1000.0;
    Ok(Said {
        items: injected(&text)
            .into_iter()
            .filter_map(|id| mem.ids.get(&id).cloned())
            .collect(),
        tokens: if text.is_empty() {
            0
        } else {
            tokens::estimate(&text)
        },
        ms,
    })
}

/// The observations a prompt block lists, in order: its item lines start `- o17 `.
pub fn injected(text: &str) -> Vec<i64> {
    text.lines()
        .filter_map(|l| l.strip_prefix("- ")?.split_whitespace().next())
        .filter_map(|w| match ids::parse(w) {
            Some(ids::Id::Obs(n)) if w.starts_with(['o', 'O']) => Some(n),
            _ => None,
        })
        .collect()
}

/// hit, recall, items and silence of a ranking cut at `k` items; a fractional `k` gives the
/// next item to that fraction of a question (the expectation).
fn at(ranking: &[String], rels: &HashMap<String, i64>, k: f64) -> [f64; 4] {
    let relevant: HashSet<&str> = metrics::relevant(rels).collect();
    let whole = |k: usize| -> [f64; 4] {
        let top = &ranking[..k.min(ranking.len())];
        let found = top.iter().filter(|d| relevant.contains(d.as_str())).count();
        [
            f64::from(u8::from(found > 0)),
            found as f64 / relevant.len().max(1) as f64,
            top.len() as f64,
            f64::from(u8::from(top.is_empty())),
        ]
    };
    let (lo, frac) = (k.floor() as usize, k - k.floor());
    let (a, b) = (whole(lo), whole(lo + 1));
    [0, 1, 2, 3].map(|i| a[i] * (1.0 - frac) + b[i] * frac)
}

/// Sums per group, then means.
#[derive(Default)]
struct Sums {
    n: usize,
    hit: f64,
    recall: f64,
    silent: f64,
    items: f64,
    tokens: f64,
    ms: Vec<f64>,
}

impl Sums {
    fn add(&mut self, [hit, recall, items, silent]: [f64; 4], tokens: f64, ms: Option<f64>) {
        self.n += 1;
        self.hit += hit;
        self.recall += recall;
        self.items += items;
        self.silent += silent;
        self.tokens += tokens;
        self.ms.extend(ms);
    }

    fn mean(&self, x: f64) -> f64 {
        round4(x / self.n.max(1) as f64)
    }
}

fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

fn figures(
    set: &Set,
    asked: &[&Query],
    said: &[Said],
    search: &[retrieval::Ranking],
    textbook: &[retrieval::Ranking],
) -> Vec<Row> {
    let none = HashMap::new();
    let rels = |q: &Query| set.qrels.get(&q.qid).unwrap_or(&none);
    let mean_items =
        said.iter().map(|s| s.items.len()).sum::<usize>() as f64 / said.len().max(1) as f64;
    let ks = [1.0, 2.0, 3.0, round4(mean_items)];
    // (retriever, k) → category → sums.
    let mut groups: BTreeMap<(usize, String), BTreeMap<String, Sums>> = BTreeMap::new();
    let mut add = |order: usize, name: &str, q: &Query, v: [f64; 4], tokens, ms| {
        let g = groups.entry((order, name.to_string())).or_default();
        for c in std::iter::once(metrics::ALL).chain(q.category.as_deref()) {
            g.entry(c.to_string()).or_default().add(v, tokens, ms);
        }
    };
    for (i, q) in asked.iter().enumerate() {
        let s = &said[i];
        let v = at(&s.items, rels(q), s.items.len() as f64);
        add(0, "hook", q, v, s.tokens as f64, Some(s.ms));
        for (j, k) in ks.iter().enumerate() {
            let ids = |r: &retrieval::Ranking| r.iter().map(|x| x.0.clone()).collect::<Vec<_>>();
            add(
                1 + j,
                "search",
                q,
                at(&ids(&search[i]), rels(q), *k),
                0.0,
                None,
            );
            add(
                5 + j,
                "textbook",
                q,
                at(&ids(&textbook[i]), rels(q), *k),
                0.0,
                None,
            );
        }
    }
    let mut rows = Vec::new();
    for ((order, name), cats) in groups {
        for (c, s) in cats {
            let hook = name == "hook";
            rows.push(Row {
                kind: "eval",
                v: memkit_core::record::VERSION,
                set: set.name.clone(),
                retriever: name.clone(),
                k: (!hook).then(|| ks[(order - 1) % 4]),
                category: c,
                questions: s.n,
                hit_rate: Some(s.mean(s.hit)),
                recall: Some(s.mean(s.recall)),
                silent: s.mean(s.silent),
                items: s.mean(s.items),
                tokens: hook.then(|| s.mean(s.tokens)),
                p50_ms: hook.then(|| median(&s.ms)),
                noise: None,
            });
        }
    }
    // All first, then each category; the hook, then the baselines by k.
    rows.sort_by_key(|r| (r.category != metrics::ALL, r.category.clone()));
    rows
}

fn noise_row(set: &str, file: &str, said: &[Said]) -> Row {
    let mut s = Sums::default();
    for x in said {
        let n = x.items.len() as f64;
        s.add(
            [0.0, 0.0, n, f64::from(u8::from(n == 0.0))],
            x.tokens as f64,
            Some(x.ms),
        );
    }
    Row {
        kind: "eval",
        v: memkit_core::record::VERSION,
        set: set.into(),
        retriever: "hook".into(),
        k: None,
        category: "noise".into(),
        questions: s.n,
        hit_rate: None,
        recall: None,
        silent: s.mean(s.silent),
        items: s.mean(s.items),
        tokens: Some(s.mean(s.tokens)),
        p50_ms: Some(median(&s.ms)),
        noise: Some(file.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fractional_cut_gives_the_next_item_to_that_share_of_a_question() {
        let r: Vec<String> = ["x", "a", "b"].iter().map(|s| s.to_string()).collect();
        let rels: HashMap<String, i64> = [("a".to_string(), 1), ("b".to_string(), 1)].into();
        assert_eq!(at(&r, &rels, 1.0), [0.0, 0.0, 1.0, 0.0]);
        assert_eq!(at(&r, &rels, 2.0), [1.0, 0.5, 2.0, 0.0]);
        let [hit, recall, items, _] = at(&r, &rels, 1.25);
        assert!((hit - 0.25).abs() < 1e-12 && (recall - 0.125).abs() < 1e-12);
        assert!((items - 1.25).abs() < 1e-12);
        assert_eq!(at(&r, &rels, 0.5), [0.0, 0.0, 0.5, 0.5]);
        // Past the ranking's end nothing more is given.
        assert_eq!(at(&r, &rels, 5.0), [1.0, 1.0, 3.0, 0.0]);
    }

    #[test]
    fn the_items_of_a_block_are_its_observation_lines() {
        let text = "memkit: memories that may bear on this prompt\n\
            - o12 discovery Caroline went hiking · 2y ago — o3 is not an item\n\
            - s4 session a session · 1d ago\n\
            - o7 change x · now\n\
            `mem-report <id>` shows one in full\n";
        assert_eq!(injected(text), vec![12, 7]);
    }
}
