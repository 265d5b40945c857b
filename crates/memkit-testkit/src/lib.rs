//! Deterministic test data for search: observations made from the real text of queued
//! captures (one per tool call, grouped into the user's turns), seeded corpora of any size
//! built from them, and hashed bag-of-words vectors written where mem-embed would write real
//! ones. Used by the integration tests, the retrieval evaluation and the benches; independent
//! of mem-compress.

pub mod browser;
pub mod transcripts;

use std::collections::HashMap;

use rusqlite::Connection;
use serde_json::Value;

use memkit_core::Result;
use memkit_core::record::Observation;
use memkit_core::store::{self, embeddings, observations, queue};

/// Model name of the hashed vectors.
pub const HASH_MODEL: &str = "memkit-hash";

/// An observation before it is stored.
#[derive(Debug, Clone, Default)]
pub struct Obs {
    pub session_id: String,
    pub project: Option<String>,
    pub kind: String,
    pub tool_name: String,
    pub title: String,
    pub summary: String,
    pub detail: String,
    pub facts: Vec<String>,
    pub concepts: Vec<String>,
    pub tags: Vec<String>,
    pub files_read: Vec<String>,
    pub files_modified: Vec<String>,
    pub created_at: String,
}

/// One user turn: the prompt and the observations of its tool calls.
#[derive(Debug, Clone, Default)]
pub struct Turn {
    pub session_id: String,
    pub prompt: String,
    pub obs: Vec<Obs>,
}

/// Small deterministic generator (SplitMix64).
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }
}

fn collapse(s: &str, max: usize) -> String {
    let mut out = String::new();
    for w in s.split_whitespace() {
        if out.len() + w.len() + 1 > max {
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(w);
    }
    out
}

fn text_of(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Array(a) => a.iter().map(text_of).collect::<Vec<_>>().join("\n"),
        Value::Object(o) => {
            let mut parts = Vec::new();
            for k in [
                "stdout",
                "stderr",
                "content",
                "file",
                "filenames",
                "text",
                "result",
                "output",
                "message",
                "newString",
                "new_string",
            ] {
                if let Some(x) = o.get(k) {
                    parts.push(text_of(x));
                }
            }
            if parts.iter().all(|p| p.trim().is_empty()) {
                o.values().map(text_of).collect::<Vec<_>>().join("\n")
            } else {
                parts.join("\n")
            }
        }
        v => v.to_string(),
    }
}

fn basename(p: &str) -> &str {
    p.rsplit('/').next().unwrap_or(p)
}

fn clean_prompt(p: &str) -> String {
    let re = regex::Regex::new(r"(?s)<([a-z_-]+)>.*?</([a-z_-]+)>").expect("regex");
    let p = re.replace_all(p, " ");
    collapse(&p, 400)
}

const STOP: &[&str] = &[
    "about", "after", "there", "their", "which", "would", "could", "should", "these", "those",
    "where", "while", "other", "being", "every", "under", "using", "return", "const", "false",
    "string", "import", "function", "value", "total", "staff",
];

fn concepts(text: &str) -> Vec<String> {
    let mut counts: HashMap<String, usize> = HashMap::new();
    for w in text.split(|c: char| !c.is_alphanumeric()) {
        if w.len() >= 5 && w.len() <= 20 && w.chars().all(|c| c.is_ascii_alphabetic()) {
            let w = w.to_lowercase();
            if !STOP.contains(&w.as_str()) {
                *counts.entry(w).or_default() += 1;
            }
        }
    }
    let mut v: Vec<(String, usize)> = counts.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    v.into_iter().take(3).map(|x| x.0).collect()
}

fn lang_tag(path: &str) -> Option<&'static str> {
    let ext = path.rsplit('.').next()?;
    Some(match ext {
        "py" => "python",
        "rs" => "rust",
        "js" | "mjs" => "javascript",
        "ts" | "tsx" => "typescript",
        "md" => "docs",
        "json" | "toml" | "yaml" | "yml" => "config",
        "html" | "css" => "web",
        "sh" => "shell",
        "ex" | "exs" => "elixir",
        _ => return None,
    })
}

/// Makes one observation from a queued tool call (a PostToolUse or PostToolUseFailure row).
pub fn observation_of(
    session_id: &str,
    project: Option<String>,
    event: &str,
    tool: &str,
    payload: &Value,
    files: Vec<String>,
    created_at: &str,
) -> Obs {
    let input = payload.get("tool_input").cloned().unwrap_or(Value::Null);
    let resp = payload.get("tool_response").cloned().unwrap_or(Value::Null);
    let s = |k: &str| {
        input
            .get(k)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let failed = event == "PostToolUseFailure";
    let file = s("file_path");
    let (title, kind, input_text) = match tool {
        "Edit" | "MultiEdit" => (
            format!("Edited {}", basename(&file)),
            if s("new_string").len() > s("old_string").len() * 2 {
                "feature"
            } else {
                "refactor"
            },
            format!("{}\n{}", s("old_string"), s("new_string")),
        ),
        "Write" => (
            format!("Wrote {}", basename(&file)),
            "feature",
            s("content"),
        ),
        "Read" => (
            format!("Read {}", basename(&file)),
            "discovery",
            String::new(),
        ),
        "Bash" => {
            let d = s("description");
            let c = s("command");
            let t = if d.is_empty() {
                format!("Ran {}", collapse(&c, 60))
            } else {
                d.clone()
            };
            let k = if c.contains("test") || c.contains("pytest") {
                "bugfix"
            } else {
                "change"
            };
            (t, k, c)
        }
        "Grep" => (
            format!("Searched for {}", collapse(&s("pattern"), 60)),
            "discovery",
            s("pattern"),
        ),
        "Glob" => (
            format!("Listed files matching {}", s("pattern")),
            "discovery",
            s("pattern"),
        ),
        "Task" | "Agent" => (
            format!("Delegated: {}", s("description")),
            "decision",
            s("prompt"),
        ),
        "WebFetch" | "WebSearch" => (
            format!("Looked up {}", collapse(&(s("url") + &s("query")), 60)),
            "discovery",
            s("prompt"),
        ),
        _ => (format!("{tool} call"), "change", text_of(&input)),
    };
    let resp_text = text_of(&resp);
    let body = format!("{input_text}\n{resp_text}");
    let summary = collapse(&body, 280);
    let facts: Vec<String> = resp_text
        .lines()
        .map(str::trim)
        .filter(|l| l.len() >= 20 && l.len() <= 160)
        .take(3)
        .map(str::to_string)
        .collect();
    let mut tags = vec![tool.to_lowercase()];
    for f in &files {
        if let Some(t) = lang_tag(f)
            && !tags.iter().any(|x| x == t)
        {
            tags.push(t.to_string());
        }
    }
    if failed {
        tags.push("failure".into());
    }
    let modifies = matches!(tool, "Edit" | "MultiEdit" | "Write" | "NotebookEdit");
    Obs {
        session_id: session_id.to_string(),
        project,
        kind: if failed { "bugfix".into() } else { kind.into() },
        tool_name: tool.to_string(),
        title: if failed {
            format!("Failed: {title}")
        } else {
            title
        },
        summary,
        detail: collapse(&body, 1500),
        facts,
        concepts: concepts(&body),
        tags,
        files_read: if modifies { vec![] } else { files.clone() },
        files_modified: if modifies { files } else { vec![] },
        created_at: created_at.to_string(),
    }
}

/// Every user turn of the queued captures, with one observation per tool call.
pub fn turns_from_queue(conn: &Connection) -> Result<Vec<Turn>> {
    let mut turns: Vec<Turn> = Vec::new();
    for c in queue::turns(conn)? {
        if c.event == "UserPromptSubmit" {
            let p = c
                .payload
                .get("prompt")
                .and_then(Value::as_str)
                .unwrap_or("");
            turns.push(Turn {
                session_id: c.session_id,
                prompt: clean_prompt(p),
                obs: vec![],
            });
            continue;
        }
        if turns.last().is_none_or(|t| t.session_id != c.session_id) {
            turns.push(Turn {
                session_id: c.session_id.clone(),
                prompt: String::new(),
                obs: vec![],
            });
        }
        let tool = c.tool_name.unwrap_or_default();
        let o = observation_of(
            &c.session_id,
            c.project,
            &c.event,
            &tool,
            &c.payload,
            c.files,
            &c.created_at,
        );
        turns.last_mut().unwrap().obs.push(o);
    }
    Ok(turns)
}

impl Obs {
    /// The record the store keeps (the tool name is not part of it).
    pub fn to_observation(&self) -> Observation {
        Observation {
            session_id: Some(self.session_id.clone()),
            project: self.project.clone(),
            kind: self.kind.clone(),
            title: self.title.clone(),
            summary: self.summary.clone(),
            detail: Some(self.detail.clone()),
            facts: self.facts.clone(),
            concepts: self.concepts.clone(),
            tags: self.tags.clone(),
            files_read: self.files_read.clone(),
            files_modified: self.files_modified.clone(),
            created_at: Some(self.created_at.clone()),
            ..Observation::default()
        }
    }
}

/// Stores observations as mem-compress would (a transaction per [`BULK_ROWS`]); returns their
/// ids in order.
pub fn insert(conn: &mut Connection, obs: &[Obs]) -> Result<Vec<i64>> {
    let now = store::now();
    // A commit per chunk, with a page cache that holds one: a million rows in one transaction
    // spilled pages into the WAL over and over (gigabytes, and most of an hour).
    conn.execute_batch(BULK_CACHE)?;
    let mut ids = Vec::with_capacity(obs.len());
    for chunk in obs.chunks(BULK_ROWS) {
        ids.extend(store::write_tx(conn, |tx| {
            chunk
                .iter()
                .map(|o| observations::insert(tx, &o.to_observation(), false, &now))
                .collect::<Result<Vec<_>>>()
        })?);
    }
    Ok(ids)
}

/// Rows per transaction of the bulk writers here, and the page cache they set (256 MB).
const BULK_ROWS: usize = 20_000;
const BULK_CACHE: &str = "PRAGMA cache_size=-262144";

fn stem(w: &str) -> &str {
    for suf in ["ing", "ed", "es", "s"] {
        if w.len() > suf.len() + 3
            && let Some(s) = w.strip_suffix(suf)
        {
            return s;
        }
    }
    w
}

pub(crate) fn fnv(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= *b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// A hashed bag of stemmed words and character trigrams, L2-normalised: a cheap, deterministic
/// stand-in for a real embedding (fuzzy on spelling, blind to synonyms).
pub fn hash_embed(text: &str, dim: usize) -> Vec<f32> {
    let mut v = vec![0f32; dim];
    let mut add = |feat: &[u8], w: f32| {
        let h = fnv(feat);
        let i = (h % dim as u64) as usize;
        v[i] += if h >> 63 == 1 { -w } else { w };
    };
    for word in text.split(|c: char| !c.is_alphanumeric()) {
        if word.is_empty() || word.len() > 40 {
            continue;
        }
        let lw = word.to_lowercase();
        let s = stem(&lw);
        add(s.as_bytes(), 1.0);
        let padded: Vec<char> = format!("#{s}#").chars().collect();
        for tri in padded.windows(3) {
            let t: String = tri.iter().collect();
            add(format!("3:{t}").as_bytes(), 0.35);
        }
    }
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 0.0 {
        for x in &mut v {
            *x /= n;
        }
    }
    v
}

/// Writes hashed vectors for every observation lacking one (what mem-embed would write).
pub fn embed_observations(conn: &mut Connection, dim: usize) -> Result<usize> {
    let rows = observations::without_vector(conn, HASH_MODEL, dim)?;
    conn.execute_batch(BULK_CACHE)?;
    for chunk in rows.chunks(BULK_ROWS) {
        let vecs: Vec<(i64, Vec<f32>, String)> = {
            use rayon::prelude::*;
            chunk
                .par_iter()
                .map(|(id, t)| (*id, hash_embed(t, dim), memkit_search::search::text_hash(t)))
                .collect()
        };
        store::write_tx(conn, |tx| {
            embeddings::put_observations(tx, HASH_MODEL, dim, &vecs)
        })?;
    }
    Ok(rows.len())
}

/// Counts the words of every observation and gives each its hashed vector (what mem-embed's
/// word stage would write), then measures their floor: what a hook's prompt gets its vector from.
pub fn embed_words(conn: &mut Connection, dim: usize) -> Result<usize> {
    use memkit_search::embed::words;
    let texts: Vec<String> = observations::without_vector(conn, "none", dim)?
        .into_iter()
        .map(|(_, t)| t)
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    words::count(conn, HASH_MODEL, dim, &refs)?;
    let todo = words::undistilled(conn, HASH_MODEL, dim, usize::MAX >> 1)?;
    for chunk in todo.chunks(BULK_ROWS) {
        let vecs: Vec<Vec<f32>> = chunk.iter().map(|w| hash_embed(w, dim)).collect();
        store::write_tx(conn, |tx| words::put(tx, HASH_MODEL, dim, chunk, &vecs))?;
    }
    words::calibrate(conn, HASH_MODEL, dim)?;
    Ok(todo.len())
}

/// Caches the hashed vector of a text in `embedding_cache`, keyed as search looks it up:
/// queries go through `embed::query_text`, tags are cached as they are.
pub fn cache_text(conn: &Connection, text: &str, dim: usize) -> Result<()> {
    embeddings::cache_put(
        conn,
        HASH_MODEL,
        dim,
        &memkit_search::search::text_hash(text),
        &hash_embed(text, dim),
    )
}

/// Caches the vector of a search query.
pub fn cache_query(conn: &Connection, query: &str, dim: usize) -> Result<()> {
    // The hashed model has no manifest, hence no query prefix.
    let text = memkit_search::embed::query_text(
        None,
        Some(memkit_search::embed::SEARCH_QUERY_KIND),
        query,
    );
    cache_text(conn, &text, dim)
}

/// `n` realistic observations made by recombining the real text of `base`, reproducible from
/// `seed`: titles, summaries and details are real fragments, spread over `projects` projects
/// and the year before 2026-03-01.
pub fn corpus(base: &[Obs], n: usize, seed: u64, projects: usize) -> Vec<Obs> {
    let mut rng = Rng(seed);
    let words: Vec<&str> = base
        .iter()
        .flat_map(|o| o.summary.split_whitespace())
        .filter(|w| w.len() > 3 && w.len() < 16 && w.chars().all(char::is_alphanumeric))
        .collect();
    let end = chrono::DateTime::parse_from_rfc3339("2026-03-01T00:00:00Z")
        .unwrap()
        .timestamp_millis();
    let kinds = memkit_core::record::OBSERVATION_TYPES;
    (0..n)
        .map(|i| {
            let b = &base[rng.below(base.len())];
            let other = &base[rng.below(base.len())];
            let mut o = b.clone();
            let extra: Vec<&str> = (0..2).map(|_| words[rng.below(words.len())]).collect();
            o.title = format!("{} ({})", b.title, extra.join(" "));
            let cut = other.summary.len().min(120);
            let cut = (0..=cut)
                .rev()
                .find(|c| other.summary.is_char_boundary(*c))
                .unwrap_or(0);
            o.summary = format!("{} {}", b.summary, &other.summary[..cut]);
            o.detail = format!("{}\n{}", b.detail, other.detail);
            o.kind = kinds[rng.below(kinds.len())].to_string();
            o.session_id = format!("bench-{}", i / 40);
            o.project = Some(format!("/bench/project-{}", (i / 40) % projects.max(1)));
            let t = end - (rng.next_u64() % (365 * 86_400_000)) as i64;
            o.created_at = chrono::DateTime::from_timestamp_millis(t)
                .unwrap()
                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
            o
        })
        .collect()
}
