//! What secret redaction costs a hook: `capture::sanitize` (redact, then cut) on a PostToolUse
//! payload whose tool response is 5 KB and 1 MB of real text (the fixture transcripts' and hook
//! payloads' strings). Run: `cargo bench --bench redact`.
//!
//! Prints, per size, the median time of one call in a warm process (many calls, the regexes
//! compiled) and in a cold one (a fresh process per call, as every hook is: lazy regex
//! compilation included). `MEMKIT_REDACT_SHOW=1` instead prints every redaction made in the
//! whole fixture corpus, one per line (kind, then the text around it), to review false positives.

mod common;

use std::time::Instant;

use memkit::capture;
use serde_json::{Value, json};

/// Every string of the fixture transcripts and hook payloads, one per line.
fn corpus() -> String {
    fn walk(v: &Value, out: &mut String) {
        match v {
            Value::String(s) => {
                out.push_str(s);
                out.push('\n');
            }
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            Value::Object(o) => o.values().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    let mut files = Vec::new();
    let mut stack = vec![common::fixtures()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            // (The redaction corpus is mem-eval redaction's, not a hook's text.)
            if p.is_dir() && !p.ends_with("redaction") {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "json" || x == "jsonl") {
                files.push(p);
            }
        }
    }
    files.sort();
    let mut out = String::new();
    for f in files {
        let text = String::from_utf8_lossy(&std::fs::read(&f).unwrap()).into_owned();
        for line in text.lines() {
            if let Ok(v) = serde_json::from_str::<Value>(line) {
                walk(&v, &mut out);
            }
        }
        if let Ok(v) = serde_json::from_str::<Value>(&text) {
            walk(&v, &mut out);
        }
    }
    out
}

fn payload(text: &str, bytes: usize) -> Value {
    let mut end = bytes.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    json!({
        "session_id": "6706089d-9d7e-4f48-bd2d-8f2a2546eb78",
        "hook_event_name": "PostToolUse",
        "cwd": "/home/user/project",
        "tool_name": "Bash",
        "tool_use_id": "toolu_01ABCDEFGHJKLMNPQRSTUVWX",
        "tool_input": {"command": "cat notes.txt", "description": "Show the notes"},
        "tool_response": {"stdout": &text[..end], "stderr": "", "interrupted": false},
    })
}

fn median(v: &mut [f64]) -> f64 {
    common::median(v)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    // A cold call: this process does one sanitize and prints its microseconds.
    if let Some(i) = args.iter().position(|a| a == "--cold-one") {
        let text = std::fs::read_to_string(&args[i + 1]).unwrap();
        let mut v = payload(&text, usize::MAX);
        let t = Instant::now();
        capture::sanitize(&mut v);
        let us = t.elapsed().as_secs_f64() * 1e6;
        std::hint::black_box(&v);
        println!("{us}");
        return;
    }
    if args.iter().any(|a| a == "--test" || a == "--list") {
        return;
    }
    let text = corpus();
    if std::env::var("MEMKIT_REDACT_SHOW").is_ok_and(|v| v == "1") {
        for line in text.lines() {
            let r = capture::redact::redact_str(line);
            if r != line {
                for (i, _) in r.match_indices("[REDACTED:") {
                    let a = r.floor_char_boundary(i.saturating_sub(60));
                    let b = r.ceil_char_boundary((i + 90).min(r.len()));
                    println!("{}", r[a..b].replace('\n', "⏎"));
                }
            }
        }
        return;
    }
    eprintln!("corpus: {} bytes of fixture text", text.len());
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    for (name, bytes, warm_runs, cold_runs) in
        [("5 KB", 5 * 1024, 2000, 200), ("1 MB", 1024 * 1024, 40, 40)]
    {
        let mut warm = Vec::new();
        for _ in 0..warm_runs {
            let mut v = payload(&text, bytes);
            let t = Instant::now();
            capture::sanitize(&mut v);
            warm.push(t.elapsed().as_secs_f64() * 1e6);
            std::hint::black_box(&v);
        }
        let file = dir.path().join(format!("{bytes}.txt"));
        let mut end = bytes.min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        std::fs::write(&file, &text[..end]).unwrap();
        let mut cold = Vec::new();
        for _ in 0..cold_runs {
            let out = std::process::Command::new(&exe)
                .arg("--cold-one")
                .arg(&file)
                .output()
                .unwrap();
            cold.push(
                String::from_utf8_lossy(&out.stdout)
                    .trim()
                    .parse::<f64>()
                    .unwrap(),
            );
        }
        println!(
            "sanitize {name}: warm median {:.1} µs, cold (fresh process) median {:.1} µs",
            median(&mut warm),
            median(&mut cold)
        );
    }
}
