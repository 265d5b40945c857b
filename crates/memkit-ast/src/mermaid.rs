//! A Mermaid `flowchart` of a change: the changed definitions (every one with `all`), grouped
//! by file, and the targets of their calls. New, modified and deleted definitions are green,
//! yellow and red; unresolved calls are dashed.

use std::collections::HashMap;
use std::fmt::Write;

use crate::{Change, FunctionDiff, Resolution, Snapshot};

/// `diffs` of the files in `snapshots` (the newer versions, whose calls are drawn).
pub fn flowchart(diffs: &[FunctionDiff], snapshots: &[&Snapshot], all: bool) -> String {
    let mut out = String::from("flowchart LR\n");
    let mut ids: HashMap<(String, String), String> = HashMap::new();
    let mut styled: Vec<(String, Change)> = Vec::new();
    let mut by_file: Vec<(&str, Vec<&FunctionDiff>)> = Vec::new();
    for d in diffs
        .iter()
        .filter(|d| all || d.change != Change::Unchanged)
    {
        match by_file.iter_mut().find(|(p, _)| *p == d.path) {
            Some((_, v)) => v.push(d),
            None => by_file.push((&d.path, vec![d])),
        }
    }
    for (fi, (path, defs)) in by_file.iter().enumerate() {
        let _ = writeln!(out, "  subgraph f{fi}[\"{}\"]", label(path));
        for d in defs {
            let id = format!("n{}", ids.len());
            let text = format!("{}{}", d.qualname, short(&d.signature));
            let _ = writeln!(out, "    {id}[\"{}\"]", label(&text));
            ids.insert((d.path.clone(), d.qualname.clone()), id.clone());
            styled.push((id, d.change));
        }
        out.push_str("  end\n");
    }
    let mut edges = Vec::new();
    let mut outside: HashMap<String, String> = HashMap::new();
    for s in snapshots {
        for c in &s.calls {
            let Some(from) = ids.get(&(s.path.clone(), c.caller.clone())) else {
                continue;
            };
            let key = match (&c.target_file, c.resolution) {
                (Some(f), _) => (f.clone(), c.target.clone()),
                (None, Resolution::Direct | Resolution::SelfMethod) => {
                    (s.path.clone(), c.target.clone())
                }
                _ => (String::new(), c.target.clone()),
            };
            let to = match ids.get(&key) {
                Some(id) => id.clone(),
                None => {
                    let n = outside.len() + ids.len();
                    outside
                        .entry(format!("{}\u{0}{}", key.0, key.1))
                        .or_insert_with(|| {
                            let id = format!("n{n}");
                            let _ = writeln!(out, "  {id}[\"{}\"]", label(&c.target));
                            id
                        })
                        .clone()
                }
            };
            let arrow = if c.resolution == Resolution::Unresolved {
                "-.->"
            } else {
                "-->"
            };
            let e = format!("  {from} {arrow} {to}\n");
            if !edges.contains(&e) {
                edges.push(e);
            }
        }
    }
    edges.iter().for_each(|e| out.push_str(e));
    out.push_str("  classDef new fill:#d4f8d4,stroke:#2e7d32\n");
    out.push_str("  classDef modified fill:#fff4c2,stroke:#b38f00\n");
    out.push_str("  classDef deleted fill:#ffd6d6,stroke:#c62828,stroke-dasharray:4\n");
    for (id, change) in styled {
        if change != Change::Unchanged {
            let _ = writeln!(out, "  class {id} {}", change.as_str());
        }
    }
    out
}

/// Long signatures are cut: a diagram's boxes must stay readable.
fn short(sig: &str) -> String {
    if sig.chars().count() <= 60 {
        sig.to_string()
    } else {
        let mut s: String = sig.chars().take(57).collect();
        s.push_str("...");
        s
    }
}

/// Text safe inside `["…"]`: the characters Mermaid's grammar reacts to become entity codes.
pub fn label(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '#' => out.push_str("#35;"),
            '"' => out.push_str("#quot;"),
            '[' | ']' | '{' | '}' | '|' | '<' | '>' | '`' | ';' | '&' => {
                let _ = write!(out, "#{};", c as u32);
            }
            '\n' | '\r' | '\t' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}
