//! A history of Claude Code transcripts of any size, for the day-one import: the fixture
//! sessions replicated with fresh ids, spread over projects and years.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use memkit_capture::transcript::find_files;
use rayon::prelude::*;
use regex::{Captures, Regex};

use crate::{Rng, fnv};

static UUID: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|toolu_[A-Za-z0-9]{8,}",
    )
    .unwrap()
});
/// A subagent's id, in its file's name and in its lines: short hex, not a UUID.
static AGENT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"(agent-|"agentId":")([0-9a-f]{6,20})\b"#).unwrap());
static TIMESTAMP: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#""timestamp":"([0-9T:.+-]+Z?)""#).unwrap());
static CWD: LazyLock<Regex> = LazyLock::new(|| Regex::new(r#""cwd":"[^"]*""#).unwrap());
/// The strings people and tools wrote (messages, results, prompts): a replica's own wording.
static PROSE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#""(text|content|description|prompt|thinking)":"((?:[^"\\]|\\.)*)""#).unwrap()
});
/// A JSON escape (kept whole) or a word that [`reworded`] may change.
static WORD: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\\.|[a-z]{5,}").unwrap());

/// A replica's wording of one string of JSON: about a third of its words of five letters or
/// more, the same ones wherever the replica uses them, end in two letters of its own. Without
/// it every replica would repeat the fixtures' texts to the letter, and an embedding cache
/// would make a history of thousands of sessions cost the model a few dozen texts.
fn reworded(text: &str, key: u64) -> String {
    WORD.replace_all(text, |c: &Captures| {
        let w = &c[0];
        let h = fnv(w.as_bytes()) ^ key;
        let h = h.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        if w.starts_with('\\') || !(h >> 32).is_multiple_of(3) {
            return w.to_string();
        }
        let a = (b'a' + (h % 26) as u8) as char;
        let b = (b'a' + ((h >> 8) % 26) as u8) as char;
        format!("{w}{a}{b}")
    })
    .into_owned()
}

/// What [`history`] wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct History {
    pub files: usize,
    pub bytes: u64,
    pub replicas: usize,
}

/// Writes at least `bytes` of transcripts under `out` in `~/.claude/projects` layout (one
/// folder per project, subagent folders kept): every `.jsonl` under `src` copied once per
/// replica, each replica with its own session, message and tool ids and its own wording (derived
/// from `seed`, so the same call writes the same files), its own project (one of `projects`) and its dates
/// moved so that the replicas spread evenly over the `days` that end `days_ago` days before the
/// fixtures' own dates.
pub fn history(
    src: &Path,
    out: &Path,
    bytes: u64,
    seed: u64,
    projects: usize,
    days: i64,
    days_ago: i64,
) -> std::io::Result<History> {
    let mut sources: Vec<(String, PathBuf, String)> = Vec::new();
    for f in find_files(src)? {
        let text = String::from_utf8_lossy(&std::fs::read(&f)?).into_owned();
        // The project folder is the first named like Claude Code's (`-home-me-app`), else the
        // file's own folder; what is below it (a session's subagents) is kept.
        let rel = f.strip_prefix(src).unwrap_or(&f);
        let parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        let cut = parts
            .iter()
            .position(|c| c.starts_with('-'))
            .map_or(parts.len() - 1, |i| i + 1);
        let folder = parts[..cut].join("/");
        sources.push((folder, parts[cut..].iter().collect(), text));
    }
    let per_replica: u64 = sources.iter().map(|s| s.2.len() as u64).sum::<u64>().max(1);
    let replicas = bytes.div_ceil(per_replica).max(1) as usize;
    let span = chrono::Duration::days(days);
    let end = -chrono::Duration::days(days_ago);
    let jobs: Vec<(usize, usize)> = (0..replicas)
        .flat_map(|r| (0..sources.len()).map(move |i| (r, i)))
        .collect();
    let written: std::io::Result<Vec<u64>> = jobs
        .par_iter()
        .map(|&(r, i)| {
            let (folder, rel, text) = &sources[i];
            // A session's subagent files stay in its project's folder.
            let mut rng = Rng(seed ^ fnv(format!("{r}/{folder}").as_bytes()));
            let project = rng.below(projects.max(1));
            // One replica keeps its sessions' ids consistent across its files (a subagent's
            // file names its parent session), so the mapping depends only on (seed, replica).
            let fresh = |id: &str| -> String {
                let mut g = Rng(seed ^ (r as u64).wrapping_mul(0x9E37) ^ fnv(id.as_bytes()));
                if let Some(rest) = id.strip_prefix("toolu_") {
                    return format!("toolu_{:016x}{}", g.next_u64(), &rest[..rest.len().min(8)]);
                }
                let (a, b) = (g.next_u64(), g.next_u64());
                format!(
                    "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
                    a >> 32,
                    (a >> 16) & 0xffff,
                    a & 0xfff,
                    0x8000 | ((b >> 48) & 0x3fff),
                    b & 0xffff_ffff_ffff
                )
            };
            let shift = end - span + span * r as i32 / replicas as i32;
            let cwd = format!("/home/dev/work/project-{project:03}");
            let mut cache: HashMap<String, String> = HashMap::new();
            let mut ids = |c: &Captures| -> String {
                cache
                    .entry(c[0].to_string())
                    .or_insert_with(|| fresh(&c[0]))
                    .clone()
            };
            let mut agents: HashMap<String, String> = HashMap::new();
            let mut agent = |c: &Captures| -> String {
                let id = agents.entry(c[2].to_string()).or_insert_with(|| {
                    let mut g = Rng(seed ^ (r as u64).wrapping_mul(0x51) ^ fnv(c[2].as_bytes()));
                    let hex = format!("{:016x}{:016x}", g.next_u64(), g.next_u64());
                    hex[..c[2].len().min(32)].to_string()
                });
                format!("{}{id}", &c[1])
            };
            let body = UUID.replace_all(text, &mut ids);
            let body = AGENT.replace_all(&body, &mut agent);
            let body = TIMESTAMP.replace_all(&body, |c: &Captures| {
                match chrono::DateTime::parse_from_rfc3339(&c[1]) {
                    Ok(t) => format!(
                        r#""timestamp":"{}""#,
                        (t.with_timezone(&chrono::Utc) + shift).format("%Y-%m-%dT%H:%M:%S%.3fZ")
                    ),
                    Err(_) => c[0].to_string(),
                }
            });
            let body = CWD.replace_all(&body, format!(r#""cwd":"{cwd}""#).as_str());
            let key = seed ^ (r as u64).wrapping_mul(0xA24B_AED4_963E_E407);
            let body = PROSE.replace_all(&body, |c: &Captures| {
                format!(r#""{}":"{}""#, &c[1], reworded(&c[2], key))
            });
            let rel = UUID
                .replace_all(&rel.to_string_lossy(), &mut ids)
                .into_owned();
            let mut rel = AGENT.replace_all(&rel, &mut agent).into_owned();
            // A name without an id (`short.jsonl`) gets the replica's number.
            if rel.rsplit('/').next() == sources[i].1.file_name().and_then(|n| n.to_str()) {
                rel = format!("{}-{r}.jsonl", rel.trim_end_matches(".jsonl"));
            }
            let path = out.join(cwd.replace('/', "-")).join(rel);
            std::fs::create_dir_all(path.parent().unwrap_or(out))?;
            std::fs::write(&path, body.as_bytes())?;
            Ok(body.len() as u64)
        })
        .collect();
    let written = written?;
    Ok(History {
        files: written.len(),
        bytes: written.iter().sum(),
        replicas,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replicas_get_fresh_ids_and_the_same_seed_writes_the_same_history() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/transcripts");
        let tmp = std::env::temp_dir().join(format!("memkit-history-{}", std::process::id()));
        let (a, b) = (tmp.join("a"), tmp.join("b"));
        let ha = history(&src, &a, 25_000_000, 7, 5, 3 * 365, 0).unwrap();
        let hb = history(&src, &b, 25_000_000, 7, 5, 3 * 365, 0).unwrap();
        assert_eq!(ha, hb);
        assert!(ha.replicas >= 3 && ha.bytes >= 25_000_000, "{ha:?}");
        let names = find_files(&a).unwrap();
        assert_eq!(names.len(), ha.files);
        // Each replica is its own set of sessions, and a subagent's file still names its
        // parent's (new) session.
        let session = Regex::new(r#""sessionId":"([^"]+)""#).unwrap();
        let sessions = |files: &mut dyn Iterator<Item = PathBuf>| {
            let mut ids = std::collections::HashSet::new();
            for f in files {
                let text = std::fs::read_to_string(&f).unwrap();
                ids.extend(session.captures_iter(&text).map(|c| c[1].to_string()));
            }
            ids.len()
        };
        let src_files = find_files(&src).unwrap();
        assert_eq!(
            sessions(&mut names.iter().cloned()),
            ha.replicas * sessions(&mut src_files.into_iter())
        );
        for n in &names {
            let other = b.join(n.strip_prefix(&a).unwrap());
            assert_eq!(std::fs::read(n).unwrap(), std::fs::read(other).unwrap());
        }
        // Every line is still JSON, and the replicas word the same messages differently.
        let mut texts: HashMap<String, usize> = HashMap::new();
        for n in &names {
            for line in std::fs::read_to_string(n).unwrap().lines() {
                let v: serde_json::Value = serde_json::from_str(line)
                    .unwrap_or_else(|e| panic!("{}: {e}: {line}", n.display()));
                for block in v["message"]["content"].as_array().into_iter().flatten() {
                    if let Some(t) = block["text"].as_str().filter(|t| t.len() > 40) {
                        *texts.entry(t.to_string()).or_default() += 1;
                    }
                }
            }
        }
        let repeated = texts.values().filter(|&&k| k > 1).count();
        assert!(
            !texts.is_empty() && repeated * 10 < texts.len(),
            "{repeated} of {} texts repeated",
            texts.len()
        );
        let _ = std::fs::remove_dir_all(&tmp);
    }
}
