//! Property tests over random bytes and mutated real payloads and transcript lines: whatever a
//! hook is given, reading, redacting and storing it never panics, and what is stored is valid
//! JSON. A fixed budget per run (`MEMKIT_FUZZ_ITERS`, default 600 per target) with a fresh
//! seed each time (`MEMKIT_FUZZ_SEED` repeats a run); a failure names its seed.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate as capture;
use crate::transcript;
use crate::{Origin, Policy};
use memkit_core::hook::{self, HookPayload};
use memkit_core::store;

/// xorshift64*: enough randomness for mutations, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len())]
    }
}

fn seed() -> u64 {
    std::env::var("MEMKIT_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
                | 1
        })
}

fn iters() -> usize {
    std::env::var("MEMKIT_FUZZ_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(600)
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

fn files_under(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == ext) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Fragments that have broken JSON readers: cut escapes, lone surrogates, deep nesting,
/// numbers out of range, NULs, invalid UTF-8.
const NASTY: &[&[u8]] = &[
    b"\\ud83d",
    b"\\udc00",
    b"\\u00",
    b"\\",
    b"\"",
    b"{",
    b"}",
    b"[",
    b"]]]]",
    b"1e999999",
    b"-0",
    b"18446744073709551616",
    b"\0",
    b"\xff\xfe",
    b"\xf0\x9f",
    b"null",
    b"\"session_id\":",
    b"\"hook_event_name\":\"PostToolBatch\",\"tool_calls\":[1,{},null]",
    b"<private>",
    b"-----BEGIN RSA PRIVATE KEY-----",
];

fn mutate(rng: &mut Rng, base: &[u8]) -> Vec<u8> {
    let mut b = base.to_vec();
    for _ in 0..=rng.below(4) {
        let at = rng.below(b.len() + 1);
        match rng.below(6) {
            0 => b.truncate(at),
            1 => {
                let frag = rng.pick(NASTY);
                b.splice(at..at, frag.iter().copied());
            }
            2 if !b.is_empty() => {
                let i = rng.below(b.len());
                b[i] = rng.next() as u8;
            }
            3 => {
                let end = (at + rng.below(64)).min(b.len());
                b.drain(at..end);
            }
            4 => {
                let depth = 1 + rng.below(300);
                let nest = [b"[".repeat(depth), b"0".to_vec(), b"]".repeat(depth)].concat();
                b.splice(at..at, nest);
            }
            _ => {
                let junk: Vec<u8> = (0..rng.below(32)).map(|_| rng.next() as u8).collect();
                b.splice(at..at, junk);
            }
        }
    }
    b
}

/// Runs a payload through what the hook does with it, into a real database.
fn hook_path(conn: &rusqlite::Connection, policy: &Policy, bytes: &[u8]) {
    let text = memkit_core::utf8_lossy(bytes);
    let Ok(mut value) = hook::parse_json(&text) else {
        return;
    };
    if !value.is_object() {
        return;
    }
    capture::sanitize(&mut value);
    let payload = HookPayload::from_value(value).expect("an object");
    let project = payload.cwd.as_deref().map(memkit_core::project::identify);
    let origin = Origin {
        kind: "hook",
        at: store::now(),
        key: None,
    };
    store::write_tx(conn, |tx| {
        capture::store_event(tx, policy, &payload, &origin, project.as_ref())
    })
    .unwrap_or_else(|e| panic!("store_event failed on {text:?}: {e}"));
}

#[test]
fn random_and_mutated_hook_payloads_and_transcript_lines_never_panic() {
    let seed = seed();
    let n = iters();
    let dir = tempfile::tempdir().unwrap();
    let conn = store::open(&dir.path().join("mem.db")).unwrap();
    let policy = Policy::defaults();
    let fx = fixtures();
    let payloads: Vec<Vec<u8>> = files_under(&fx.join("hook-payloads"), "json")
        .iter()
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    let lines: Vec<Vec<u8>> = files_under(&fx.join("transcripts"), "jsonl")
        .iter()
        .take(6)
        .flat_map(|p| {
            std::fs::read(p)
                .unwrap()
                .split(|&b| b == b'\n')
                .filter(|l| !l.is_empty())
                .take(60)
                .map(<[u8]>::to_vec)
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(!payloads.is_empty() && !lines.is_empty());
    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut rng = Rng(seed);
        for i in 0..n {
            // Random bytes, then mutations of real payloads.
            let noise: Vec<u8> = (0..rng.below(512)).map(|_| rng.next() as u8).collect();
            hook_path(&conn, &policy, &noise);
            let base = rng.pick(&payloads).clone();
            hook_path(&conn, &policy, &mutate(&mut rng, &base));
            // A transcript of mutated real lines.
            let mut file = Vec::new();
            for _ in 0..1 + rng.below(8) {
                let line = rng.pick(&lines).clone();
                file.extend(if rng.below(2) == 0 {
                    mutate(&mut rng, &line)
                } else {
                    line
                });
                file.push(b'\n');
            }
            let parsed = transcript::parse(Path::new(&format!("/tmp/fuzz-{i}.jsonl")), &file);
            assert!(parsed.bad_lines.iter().all(|b| b.line >= 1));
            for (p, _) in &parsed.events {
                let mut v = Value::Object(p.raw.clone());
                capture::sanitize(&mut v);
            }
        }
    }));
    if let Err(e) = run {
        panic!(
            "fuzz failure with MEMKIT_FUZZ_SEED={seed}: {}",
            e.downcast_ref::<String>()
                .map(String::as_str)
                .or(e.downcast_ref::<&str>().copied())
                .unwrap_or("?")
        );
    }
    // Everything stored is valid JSON.
    let bad: i64 = conn
        .query_row(
            "SELECT count(*) FROM pending_queue WHERE NOT json_valid(payload)",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(bad, 0, "MEMKIT_FUZZ_SEED={seed}");
}
