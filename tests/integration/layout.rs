//! The rules of docs/ARCHITECTURE.md that the compiler does not keep, read off the sources: SQL
//! only in `memkit-core`'s store, no import circle among the files of any crate, and tool files
//! that stay thin. Test code (`#[cfg(test)]` items, test-only modules, `tests/`, benches and
//! memkit-testkit) is exempt.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use regex::Regex;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A source file with its comments and literals blanked (same byte offsets, newlines kept) and
/// the literals themselves (byte offset, text), test code removed from both.
struct Source {
    path: PathBuf,
    code: Vec<u8>,
    literals: Vec<(usize, String)>,
    /// Modules this file declares as `#[cfg(test)] mod name;`.
    test_modules: Vec<String>,
}

impl Source {
    fn line(&self, at: usize) -> usize {
        self.code[..at].iter().filter(|b| **b == b'\n').count() + 1
    }
}

fn read(path: &Path) -> Source {
    let text = std::fs::read(path).unwrap();
    let (mut code, literals) = blank(&text);
    let mut test_modules = Vec::new();
    let removed = strip_tests(&mut code, &mut test_modules);
    let literals = literals
        .into_iter()
        .filter(|(at, _)| !removed.iter().any(|r| r.contains(at)))
        .collect();
    Source {
        path: path.to_path_buf(),
        code,
        literals,
        test_modules,
    }
}

/// Blanks comments and string literals (raw and byte ones too); returns the literals.
fn blank(src: &[u8]) -> (Vec<u8>, Vec<(usize, String)>) {
    let mut out = src.to_vec();
    let mut lits = Vec::new();
    let mut i = 0;
    let clear = |out: &mut Vec<u8>, a: usize, b: usize| {
        for c in &mut out[a..b] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let word = |j: usize| j > 0 && (src[j - 1].is_ascii_alphanumeric() || src[j - 1] == b'_');
    while i < src.len() {
        let c = src[i];
        if src[i..].starts_with(b"//") {
            let end = src[i..]
                .iter()
                .position(|b| *b == b'\n')
                .map_or(src.len(), |p| i + p);
            clear(&mut out, i, end);
            i = end;
        } else if src[i..].starts_with(b"/*") {
            let (mut depth, mut j) = (0, i);
            while j < src.len() {
                if src[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if src[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            clear(&mut out, i, j);
            i = j;
        } else if (c == b'r' || (c == b'b' && src.get(i + 1) == Some(&b'r'))) && !word(i) && {
            let k = i + if c == b'b' { 2 } else { 1 };
            let hashes = src[k..].iter().take_while(|b| **b == b'#').count();
            src.get(k + hashes) == Some(&b'"')
        } {
            let k = i + if c == b'b' { 2 } else { 1 };
            let hashes = src[k..].iter().take_while(|b| **b == b'#').count();
            let start = k + hashes + 1;
            let mut close = b"\"".to_vec();
            close.extend(std::iter::repeat_n(b'#', hashes));
            let end = (start..src.len())
                .find(|j| src[*j..].starts_with(&close))
                .unwrap_or(src.len());
            lits.push((i, String::from_utf8_lossy(&src[start..end]).into_owned()));
            clear(&mut out, start, end);
            i = (end + close.len()).min(src.len());
        } else if c == b'"' {
            let mut j = i + 1;
            while j < src.len() && src[j] != b'"' {
                j += if src[j] == b'\\' { 2 } else { 1 };
            }
            let end = j.min(src.len());
            lits.push((i, String::from_utf8_lossy(&src[i + 1..end]).into_owned()));
            clear(&mut out, i + 1, end);
            i = end + 1;
        } else if c == b'\'' {
            // A char literal ('x', '\n', '"'), else a lifetime.
            if src.get(i + 1) == Some(&b'\\') {
                let end = (i + 2..src.len())
                    .find(|j| src[*j] == b'\'')
                    .unwrap_or(src.len());
                clear(&mut out, i + 1, end);
                i = end + 1;
            } else {
                let ch = std::str::from_utf8(&src[i + 1..(i + 5).min(src.len())])
                    .ok()
                    .or_else(|| std::str::from_utf8(&src[i + 1..(i + 2).min(src.len())]).ok())
                    .and_then(|s| s.chars().next());
                let n = ch.map_or(1, char::len_utf8);
                if src.get(i + 1 + n) == Some(&b'\'') {
                    clear(&mut out, i + 1, i + 1 + n);
                    i += n + 2;
                } else {
                    i += 1;
                }
            }
        } else {
            i += 1;
        }
    }
    (out, lits)
}

/// Removes every item under `#[cfg(test)]` from blanked code; returns the removed ranges and
/// notes the test-only module files it declares.
fn strip_tests(code: &mut [u8], test_modules: &mut Vec<String>) -> Vec<std::ops::Range<usize>> {
    let mut removed = Vec::new();
    let text = String::from_utf8_lossy(code).into_owned();
    let decl =
        Regex::new(r"^\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;").unwrap();
    for (at, _) in text.match_indices("#[cfg(test)]") {
        let after = at + "#[cfg(test)]".len();
        if let Some(m) = decl.captures(&text[after..]) {
            test_modules.push(m[1].to_string());
        }
        // The item: up to its first `;` or through the braces it opens.
        let mut depth = 0usize;
        let mut end = text.len();
        for (j, b) in code.iter().enumerate().skip(after) {
            match b {
                b'{' => depth += 1,
                b'}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        end = j + 1;
                        break;
                    }
                }
                b';' if depth == 0 => {
                    end = j + 1;
                    break;
                }
                _ => {}
            }
        }
        removed.push(at..end);
    }
    for r in &removed {
        for c in &mut code[r.clone()] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    }
    removed
}

/// The non-test `.rs` files under `dir`, with test-only module files left out.
fn sources(dir: &Path) -> Vec<Source> {
    let mut files: Vec<Source> = crate::secrets::files_under(dir)
        .iter()
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .map(|p| read(p))
        .collect();
    // `#[cfg(test)] mod x;` in a/b.rs (or a/mod.rs, lib.rs) names a/b/x.rs (a/x.rs).
    let mut test_only: BTreeSet<PathBuf> = BTreeSet::new();
    for f in &files {
        let stem = f.path.file_stem().unwrap().to_str().unwrap();
        let base = if matches!(stem, "mod" | "lib" | "main") {
            f.path.parent().unwrap().to_path_buf()
        } else {
            f.path.with_extension("")
        };
        for m in &f.test_modules {
            test_only.insert(base.join(format!("{m}.rs")));
            test_only.insert(base.join(m).join("mod.rs"));
        }
    }
    files.retain(|f| {
        !test_only
            .iter()
            .any(|t| f.path == *t || f.path.starts_with(t.with_extension("")))
    });
    files.sort_by(|a, b| a.path.cmp(&b.path));
    files
}

/// The source roots of the workspace's library crates (the top crate's `src/lib`), by name.
fn crate_roots() -> Vec<(String, PathBuf)> {
    let mut out = vec![("memkit".to_string(), root().join("src/lib"))];
    for e in std::fs::read_dir(root().join("crates")).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        // Test support: a test's helpers, not the product.
        if name != "memkit-testkit" && e.path().join("src/lib.rs").is_file() {
            out.push((name, e.path().join("src")));
        }
    }
    out.sort();
    out
}

#[test]
fn sql_is_written_only_in_the_store() {
    let sql = Regex::new(
        r"\bSELECT\b[\s\S]*\bFROM\b|\bSELECT (count|1|\*)|\bINSERT (OR \w+ )?INTO\b|\bUPDATE \w+ SET\b|\bDELETE FROM\b|\bCREATE (UNIQUE |VIRTUAL )?(TABLE|INDEX|TRIGGER|VIEW)\b|\bPRAGMA \w|\bFROM \w+( \w+)? WHERE\b|\bDROP (TABLE|INDEX|TRIGGER|VIEW)\b|\bALTER TABLE\b|\bREPLACE INTO\b|\bWITH (RECURSIVE )?\w+( \([^)]*\))? AS \(",
    )
    .unwrap();
    let store = root().join("crates/memkit-core/src/store");
    let mut dirs: Vec<PathBuf> = crate_roots().into_iter().map(|(_, d)| d).collect();
    dirs.push(root().join("src/bin"));
    let mut found = Vec::new();
    let mut scanned = 0;
    for d in dirs {
        for f in sources(&d) {
            scanned += 1;
            if f.path.starts_with(&store) {
                continue;
            }
            for (at, lit) in &f.literals {
                if let Some(m) = sql.find(lit) {
                    found.push(format!(
                        "{}:{}: {:?}",
                        f.path.strip_prefix(root()).unwrap().display(),
                        f.line(*at),
                        m.as_str().chars().take(60).collect::<String>()
                    ));
                }
            }
        }
    }
    assert!(scanned > 100, "only {scanned} source files found");
    assert!(
        found.is_empty(),
        "SQL outside crates/memkit-core/src/store/ (write it as a named function there):\n{}",
        found.join("\n")
    );
}

/// The module a file is: its path under the crate's source root, `a/mod.rs` and `a.rs` both `a`.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// A path as written in blanked code, from its first segment (`a::b::c` once, never `b::c`
/// again); a `use` tree gives one per member, each with the name it brings into scope (its `as`
/// alias, else its last segment) and the block that name is seen in.
struct Written {
    at: usize,
    segs: Vec<String>,
    binds: Option<(String, std::ops::Range<usize>)>,
}

/// Every path in blanked code (see [`Written`]).
fn paths(code: &str) -> Vec<Written> {
    let start = Regex::new(r"\b[A-Za-z_]\w*\s*::").unwrap();
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out = Vec::new();
    let mut done = 0;
    for m in start.find_iter(code) {
        let before = code[..m.start()].trim_end();
        // A later segment of a path already read, `$crate` in a macro, or `::std::…`.
        if m.start() < done || before.ends_with("::") || before.ends_with('$') {
            continue;
        }
        let is_use = before
            .strip_suffix("use")
            .is_some_and(|s| !s.ends_with(is_word));
        let mut acc = Vec::new();
        done = m.start() + expand(&code[m.start()..], &mut Vec::new(), &mut acc);
        let scope = is_use.then(|| block_around(code.as_bytes(), m.start()));
        for (segs, alias) in acc {
            let binds = scope.clone().and_then(|scope| {
                let mut named = segs.iter().rev().filter(|s| *s != "self");
                let name = alias.or_else(|| named.next().cloned())?;
                (name != "*" && name != "_").then_some((name, scope))
            });
            out.push(Written {
                at: m.start(),
                segs,
                binds,
            });
        }
    }
    out
}

/// The innermost `{…}` around `at` in blanked code: the whole file at its top level.
fn block_around(code: &[u8], at: usize) -> std::ops::Range<usize> {
    let mut depth = 0usize;
    let mut open = None;
    for i in (0..at).rev() {
        match code[i] {
            b'}' => depth += 1,
            b'{' if depth == 0 => {
                open = Some(i);
                break;
            }
            b'{' => depth -= 1,
            _ => {}
        }
    }
    let Some(open) = open else {
        return 0..code.len();
    };
    let mut depth = 0usize;
    for (i, c) in code.iter().enumerate().skip(open) {
        match c {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return open..i + 1;
                }
            }
            _ => {}
        }
    }
    open..code.len()
}

/// Reads one path from the start of `s` (a `{…}` group expands into one path per member), with
/// the name `as` gives it.
fn expand(
    s: &str,
    prefix: &mut Vec<String>,
    out: &mut Vec<(Vec<String>, Option<String>)>,
) -> usize {
    let b = s.as_bytes();
    let mut i = 0;
    let base = prefix.len();
    loop {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if i < b.len() && b[i] == b'{' {
            i += 1;
            loop {
                i += expand(&s[i..], prefix, out);
                while i < b.len() && b[i].is_ascii_whitespace() {
                    i += 1;
                }
                match b.get(i) {
                    Some(b',') => i += 1,
                    Some(b'}') => {
                        i += 1;
                        break;
                    }
                    _ => break,
                }
                while i < b.len() && b[i].is_ascii_whitespace() {
                    i += 1;
                }
                if b.get(i) == Some(&b'}') {
                    i += 1;
                    break;
                }
            }
            prefix.truncate(base);
            return i;
        }
        if b.get(i) == Some(&b'*') {
            prefix.push("*".to_string());
            i += 1;
            break;
        }
        let w = s[i..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(s.len() - i, |n| n);
        if w == 0 {
            break;
        }
        prefix.push(s[i..i + w].to_string());
        i += w;
        if s[i..].starts_with("::") {
            i += 2;
        } else {
            break;
        }
    }
    let mut alias = None;
    let rest = s[i..].trim_start();
    if let Some(after) = rest.strip_prefix("as")
        && after.starts_with(char::is_whitespace)
    {
        let name = after.trim_start();
        let n = name
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(name.len());
        if n > 0 {
            alias = Some(name[..n].to_string());
            i = s.len() - name.len() + n;
        }
    }
    if prefix.len() > base {
        out.push((prefix.clone(), alias));
    }
    prefix.truncate(base);
    i
}

/// What path `segs`, written at `at` in module `m`, names in its crate, from the crate's top:
/// through `crate`, `super` and `self`, a module of `m`'s own (`mem::TOOL` in `cmd` names
/// `cmd::mem`), or a name one of the file's `use`s brought into scope there. None for another
/// crate's path (or anything else not the crate's).
fn resolve(
    m: &[String],
    modules: &BTreeSet<Vec<String>>,
    uses: &[&Written],
    segs: &[String],
    at: usize,
    depth: usize,
) -> Option<Vec<String>> {
    let first = segs.first()?;
    let (mut target, rest) = match first.as_str() {
        "crate" => (Vec::new(), &segs[1..]),
        "self" => (m.to_vec(), &segs[1..]),
        "super" => {
            let ups = segs.iter().take_while(|s| *s == "super").count();
            (m[..m.len().saturating_sub(ups)].to_vec(), &segs[ups..])
        }
        name => {
            // The innermost `use` that binds `name` where the path is (not the path's own).
            let bound = uses
                .iter()
                .filter_map(|u| u.binds.as_ref().map(|(n, scope)| (u, n, scope)))
                .filter(|(u, n, scope)| *n == name && scope.contains(&at) && u.at != at)
                .max_by_key(|(_, _, scope)| scope.start);
            let child = [m, &[name.to_string()]].concat();
            match bound {
                Some(_) if depth > 8 => return None,
                Some((u, ..)) => (
                    resolve(m, modules, uses, &u.segs, u.at, depth + 1)?,
                    &segs[1..],
                ),
                None if modules.contains(&child) => (child, &segs[1..]),
                None => return None,
            }
        }
    };
    target.extend(rest.iter().filter(|s| *s != "self").cloned());
    Some(target)
}

#[test]
fn no_crate_has_an_import_circle() {
    let mut circles = Vec::new();
    for (name, src) in crate_roots() {
        let files = sources(&src);
        let modules: BTreeMap<Vec<String>, &Source> = files
            .iter()
            .map(|f| (module_of(&src, &f.path), f))
            .collect();
        let names: BTreeSet<Vec<String>> = modules.keys().cloned().collect();
        // module -> module it names -> where, first
        let mut edges: BTreeMap<Vec<String>, BTreeMap<Vec<String>, String>> = BTreeMap::new();
        for (m, f) in &modules {
            let code = String::from_utf8_lossy(&f.code);
            let written = paths(&code);
            let uses: Vec<&Written> = written.iter().filter(|w| w.binds.is_some()).collect();
            for w in &written {
                let Some(mut target) = resolve(m, &names, &uses, &w.segs, w.at, 0) else {
                    continue;
                };
                // The longest prefix that is a file of the crate.
                while !modules.contains_key(&target) {
                    target.pop();
                }
                // The crate root declares modules and re-exports: naming an item through it is
                // not an import of the root's own code.
                if target != *m && !target.is_empty() {
                    edges
                        .entry(m.clone())
                        .or_default()
                        .entry(target)
                        .or_insert_with(|| {
                            format!(
                                "{}:{}",
                                f.path.strip_prefix(root()).unwrap().display(),
                                f.line(w.at)
                            )
                        });
                }
            }
        }
        let mut said = BTreeSet::new();
        for (group, cycle) in cycles(&edges) {
            let group: Vec<String> = group.iter().map(|m| m.join("::")).collect();
            let mut hops = Vec::new();
            for (i, a) in cycle.iter().enumerate() {
                let b = &cycle[(i + 1) % cycle.len()];
                hops.push(format!(
                    "{} {} -> {} ({})",
                    if i == 0 { "  -" } else { "   " },
                    a.join("::"),
                    b.join("::"),
                    edges[a][b]
                ));
            }
            if said.insert(group.clone()) {
                circles.push(format!("{name}, among {}:", group.join(", ")));
            }
            circles.push(hops.join("\n"));
        }
    }
    assert!(
        circles.is_empty(),
        "import circles (move what both sides use into a module below them):\n{}",
        circles.join("\n")
    );
}

/// Circles through every module that is on one, each with its strongly connected group (the
/// modules that reach it and that it reaches).
#[allow(clippy::type_complexity)]
fn cycles(
    edges: &BTreeMap<Vec<String>, BTreeMap<Vec<String>, String>>,
) -> Vec<(BTreeSet<Vec<String>>, Vec<Vec<String>>)> {
    type M = Vec<String>;
    let reach = |from: &M| -> BTreeMap<M, M> {
        // Breadth-first from `from`: each module reached, with the one it was reached from.
        let mut prev: BTreeMap<M, M> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([from.clone()]);
        while let Some(a) = queue.pop_front() {
            for b in edges.get(&a).into_iter().flat_map(|e| e.keys()) {
                if !prev.contains_key(b) {
                    prev.insert(b.clone(), a.clone());
                    queue.push_back(b.clone());
                }
            }
        }
        prev
    };
    let mut done: BTreeSet<M> = BTreeSet::new();
    let mut out = Vec::new();
    for m in edges.keys() {
        if done.contains(m) {
            continue;
        }
        let prev = reach(m);
        if !prev.contains_key(m) {
            continue;
        }
        // Walk back from m to m: the shortest circle through it.
        let mut path = vec![m.clone()];
        let mut at = prev[m].clone();
        while at != *m {
            path.push(at.clone());
            at = prev[&at].clone();
        }
        path.reverse();
        path.rotate_right(1);
        for p in &path {
            done.insert(p.clone());
        }
        let group = prev
            .keys()
            .filter(|n| reach(n).contains_key(m))
            .cloned()
            .collect();
        out.push((group, path));
    }
    out
}

/// About 250 lines: a tool's clap arguments, its man page text, and the printing of one result.
const MAX_LINES: usize = 260;

#[test]
fn tool_files_stay_thin() {
    let mut fat = Vec::new();
    // mem-capture's tool lives in its own crate (a hook binary links no search side), in a folder
    // held to the same size.
    for dir in ["src/lib/cmd", "crates/memkit-capture/src/tool"] {
        let dir = root().join(dir);
        assert!(dir.is_dir(), "{} is not a folder", dir.display());
        for f in sources(&dir) {
            let lines = std::fs::read_to_string(&f.path).unwrap().lines().count();
            if lines > MAX_LINES {
                fat.push(format!(
                    "{}: {lines} lines",
                    f.path.strip_prefix(root()).unwrap().display()
                ));
            }
        }
    }
    assert!(
        fat.is_empty(),
        "tool files over {MAX_LINES} lines (parse, one domain call, print: the rest belongs in a domain crate):\n{}",
        fat.join("\n")
    );
}
