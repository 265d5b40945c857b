//! A Mermaid `flowchart` of a change: the changed definitions (every one with `all`), grouped
//! by file, and the targets of their calls. New, modified and deleted definitions are green,
//! yellow and red; unresolved calls are dashed.

use std::fmt::Write;

use crate::graph::{self, Graph};
use crate::{Change, FunctionDiff, Snapshot};

/// `diffs` of the files in `snapshots` (the newer versions, whose calls are drawn).
pub fn flowchart(diffs: &[FunctionDiff], snapshots: &[&Snapshot], all: bool) -> String {
    render(&graph::build(diffs, snapshots, all, true))
}

/// A graph as a flowchart: node `n{i}` is `g.nodes[i]`.
pub fn render(g: &Graph) -> String {
    let mut out = String::from("flowchart LR\n");
    for (fi, (path, nodes)) in g.files().iter().enumerate() {
        let _ = writeln!(out, "  subgraph f{fi}[\"{}\"]", label(path));
        for &i in nodes {
            let n = &g.nodes[i];
            let text = format!("{}{}", n.qualname, short(&n.signature));
            let _ = writeln!(out, "    n{i}[\"{}\"]", label(&text));
        }
        out.push_str("  end\n");
    }
    for (i, n) in g.nodes.iter().enumerate() {
        if n.change.is_none() {
            let _ = writeln!(out, "  n{i}[\"{}\"]", label(&n.qualname));
        }
    }
    for e in &g.edges {
        let arrow = if e.resolved { "-->" } else { "-.->" };
        let _ = writeln!(out, "  n{} {arrow} n{}", e.from, e.to);
    }
    out.push_str("  classDef new fill:#d4f8d4,stroke:#2e7d32\n");
    out.push_str("  classDef modified fill:#fff4c2,stroke:#b38f00\n");
    out.push_str("  classDef deleted fill:#ffd6d6,stroke:#c62828,stroke-dasharray:4\n");
    for (i, n) in g.nodes.iter().enumerate() {
        if let Some(c) = n.change.filter(|c| *c != Change::Unchanged) {
            let _ = writeln!(out, "  class n{i} {}", c.as_str());
        }
    }
    out
}

/// Long signatures are cut: a diagram's boxes must stay readable.
pub fn short(sig: &str) -> String {
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
