//! `mem-eval prompt` on a bundled set: its figures are what the UserPromptSubmit command
//! mem-install registers prints, question by question, in the memory the run kept.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::process::Command;

use serde_json::{Value, json};

use crate::{Env, fixtures, jsonl, show};

/// The UserPromptSubmit command that answers with memories, as mem-install writes it.
fn registered_prompt_hook(env: &Env) -> String {
    let settings = env.dir.path().join("settings.json");
    let out = crate::install::install_into(env, &settings);
    assert!(out.status.success(), "{}", show(&out));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    let commands: Vec<String> = v["hooks"]["UserPromptSubmit"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["hooks"].as_array().unwrap().iter())
        .filter_map(|h| h["command"].as_str().map(str::to_string))
        .filter(|c| c.contains("mem-context"))
        .collect();
    assert_eq!(commands.len(), 1, "{commands:?}");
    commands[0].clone()
}

/// What the hook command says to `prompt` asked from `scope`: the block, or "" for silence.
fn ask(env: &Env, home: &str, command: &str, session: &str, scope: &str, prompt: &str) -> String {
    let payload = json!({"session_id": session, "cwd": scope, "permission_mode": "default",
        "hook_event_name": "UserPromptSubmit", "prompt": prompt,
        "transcript_path": format!("{home}/{session}.jsonl")});
    let mut c = Command::new("sh");
    c.args(["-c", command]).env_clear();
    for (k, v) in &env.vars {
        c.env(k, v);
    }
    c.env("MEM_HOME", home).env("MEM_NOW", NOW);
    let out = crate::piped(&mut c, payload.to_string().as_bytes());
    assert!(out.status.success(), "{}", show(&out));
    if out.stdout.is_empty() {
        return String::new();
    }
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap()
        .to_string()
}

const NOW: &str = "2030-01-02T03:04:05Z";

fn lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

#[test]
fn prompt_figures_are_what_the_registered_hook_prints() {
    let models = crate::embed::models();
    let env = Env::new().set("MEM_MODELS", models.to_str().unwrap()).set(
        "ORT_DYLIB_PATH",
        models.join("runtime/libonnxruntime.so").to_str().unwrap(),
    );
    let hook = registered_prompt_hook(&env);
    let set = fixtures().join("retrieval/musique-mini");
    let noise = env.dir.path().join("noise.jsonl");
    let unrelated = [
        "commit and push",
        "why is my docker build slow",
        "write a haiku about autumn leaves",
        "the 1994 World Cup final",
    ];
    let mut f = std::fs::File::create(&noise).unwrap();
    for (i, t) in unrelated.iter().enumerate() {
        // A scope the set lacks: asked in the set's own.
        writeln!(
            f,
            "{}",
            json!({"qid": format!("n{i}"), "scope": "elsewhere", "text": t})
        )
        .unwrap();
    }
    let work = env.dir.path().join("work");
    let questions = env.dir.path().join("questions.jsonl");
    let out = env.ok(
        "mem-eval",
        &[
            "prompt",
            set.to_str().unwrap(),
            "--noise",
            noise.to_str().unwrap(),
            "--work",
            work.to_str().unwrap(),
            "--keep",
            "--now",
            NOW,
            "--questions",
            questions.to_str().unwrap(),
        ],
        b"",
    );
    let rows = jsonl(&out);
    let said = String::from_utf8_lossy(&out.stderr);
    let home = said
        .split("MEM_HOME=")
        .nth(1)
        .expect("the kept memory is named")
        .trim()
        .to_string();
    let row = |retriever: &str, k: Option<f64>, category: &str| -> &Value {
        rows.iter()
            .find(|r| {
                r["retriever"] == retriever && r["k"].as_f64() == k && r["category"] == category
            })
            .unwrap_or_else(|| panic!("no row {retriever} {k:?} {category}: {rows:?}"))
    };

    // The questions replayed through the registered command, in the memory the run kept.
    let db = rusqlite::Connection::open(format!("{home}/mem.db")).unwrap();
    let ids: HashMap<i64, String> = db
        .prepare("SELECT id, external_id FROM observations")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut qrels: HashMap<String, Vec<String>> = HashMap::new();
    for l in std::fs::read_to_string(set.join("qrels.tsv"))
        .unwrap()
        .lines()
        .skip(1)
    {
        let c: Vec<&str> = l.split('\t').collect();
        qrels.entry(c[0].into()).or_default().push(c[1].into());
    }
    // category → [questions, hits, recall, silent, items, tokens]
    let mut sums: BTreeMap<String, [f64; 6]> = BTreeMap::new();
    let injected = |text: &str| -> Vec<String> {
        text.lines()
            .filter_map(|l| {
                l.strip_prefix("- o")?
                    .split_whitespace()
                    .next()?
                    .parse()
                    .ok()
            })
            .map(|id: i64| ids[&id].clone())
            .collect()
    };
    let mut replayed: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for q in lines(&set.join("queries.jsonl")) {
        let qid = q["qid"].as_str().unwrap();
        let Some(rel) = qrels.get(qid) else { continue };
        let text = ask(
            &env,
            &home,
            &hook,
            &format!("eval-{qid}"),
            q["scope"].as_str().unwrap(),
            q["text"].as_str().unwrap(),
        );
        let given = injected(&text);
        replayed.insert(qid.into(), given.clone());
        let found = given.iter().filter(|d| rel.contains(d)).count() as f64;
        let tokens = if text.is_empty() {
            0
        } else {
            memkit::tokens::estimate(&text)
        };
        for c in ["all", q["category"].as_str().unwrap()] {
            let s = sums.entry(c.into()).or_default();
            s[0] += 1.0;
            s[1] += f64::from(u8::from(found > 0.0));
            s[2] += found / rel.len() as f64;
            s[3] += f64::from(u8::from(given.is_empty()));
            s[4] += given.len() as f64;
            s[5] += tokens as f64;
        }
    }
    for (c, s) in &sums {
        let r = row("hook", None, c);
        let n = s[0];
        assert_eq!(r["questions"].as_f64(), Some(n), "{c}");
        for (i, name) in ["hit_rate", "recall", "silent", "items", "tokens"]
            .iter()
            .enumerate()
        {
            assert_eq!(
                r[name].as_f64(),
                Some(round4(s[i + 1] / n)),
                "{c} {name}: {r}"
            );
        }
    }
    // --questions: each question's line holds what the hook gave it, and its evidence.
    let traced: BTreeMap<String, Value> = lines(&questions)
        .into_iter()
        .map(|l| (l["qid"].as_str().unwrap().to_string(), l))
        .collect();
    assert_eq!(
        traced.keys().collect::<Vec<_>>(),
        replayed.keys().collect::<Vec<_>>()
    );
    for (qid, given) in &replayed {
        let l = &traced[qid];
        assert_eq!(l["hook"], json!(given), "{qid}: {l}");
        let mut rel = qrels[qid].clone();
        rel.sort();
        assert_eq!(l["evidence"], json!(rel), "{qid}");
        assert_eq!(l["search"].as_array().unwrap().len(), 10, "{l}");
    }
    // The baselines are given 1, 2, 3 items and the hook's mean.
    let mean = row("hook", None, "all")["items"].as_f64().unwrap();
    for k in [1.0, 2.0, 3.0, mean] {
        for b in ["search", "textbook"] {
            let r = row(b, Some(k), "all");
            assert_eq!(r["items"].as_f64(), Some(round4(k)), "{r}");
        }
    }
    assert!(
        row("search", Some(3.0), "all")["hit_rate"]
            .as_f64()
            .unwrap()
            > 0.8,
        "{rows:?}"
    );

    // The noise prompts, asked in the set's scope.
    let (mut silent, mut tokens) = (0.0, 0.0);
    for (i, t) in unrelated.iter().enumerate() {
        let text = ask(&env, &home, &hook, &format!("eval-n{i}"), "all", t);
        silent += f64::from(u8::from(injected(&text).is_empty()));
        tokens += if text.is_empty() {
            0.0
        } else {
            memkit::tokens::estimate(&text) as f64
        };
    }
    let r = row("hook", None, "noise");
    let n = unrelated.len() as f64;
    assert_eq!(r["questions"].as_f64(), Some(n));
    assert_eq!(r["silent"].as_f64(), Some(round4(silent / n)), "{r}");
    assert_eq!(r["tokens"].as_f64(), Some(round4(tokens / n)), "{r}");
    assert_eq!(r["noise"], "noise");
}
