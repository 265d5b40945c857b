//! One file's source into a [`Snapshot`]: a single walk of ruff's AST collects the definitions,
//! the import map and the raw calls; hashes and call resolution follow.

use ruff_python_ast::token::{TokenKind, Tokens};
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr, PySourceType, Stmt};
use ruff_source_file::LineIndex;
use ruff_text_size::{Ranged, TextRange, TextSize};

use crate::calls::{self, Def, RawCall, dotted};
use crate::{Function, Kind, Snapshot, hash};

/// Deeper ASTs are refused with a parse error: CPython gives up far earlier ("too many nested
/// parentheses" at 200, a RecursionError on long operator chains), and ruff's normal-form
/// helpers recurse on the thread's stack.
pub const MAX_DEPTH: usize = 1000;

/// Parse `bytes` (the content of `path`) into a snapshot. Never panics on bad input: a file
/// that is not UTF-8, holds a NUL byte, does not parse or nests too deeply gets `parse_error`.
pub fn snapshot(path: &str, bytes: &[u8]) -> Snapshot {
    let mut snap = Snapshot {
        path: path.to_string(),
        bytes: bytes.len() as u64,
        ..Snapshot::default()
    };
    let text = match decode(bytes) {
        Ok(t) => t,
        Err(e) => {
            snap.parse_error = Some(e);
            return snap;
        }
    };
    let text = text.as_ref();
    if let Some(at) = memchr_nul(text.as_bytes()) {
        // CPython refuses these too ("source code string cannot contain null bytes").
        snap.parse_error = Some(format!("NUL byte at offset {at}: not Python source"));
        return snap;
    }
    // As `str::lines` counts: a last line without its newline counts too.
    snap.lines = (memchr::memchr_iter(b'\n', text.as_bytes()).count()
        + usize::from(!text.is_empty() && !text.ends_with('\n'))) as u32;
    let parsed = ruff_python_parser::parse_unchecked_source(text, PySourceType::Python);
    let index = LineIndex::from_source_text(text);
    let line = |at: TextSize| index.line_index(at).get() as u32;
    let brackets = too_many_brackets(parsed.tokens());
    let mut ex = Extractor {
        src: text,
        tokens: parsed.tokens(),
        defs: Vec::new(),
        scope: Vec::new(),
        raw: Vec::new(),
        callees: String::new(),
        imports: Vec::new(),
        depth: 0,
        max_depth: 0,
        hashing: parsed.errors().is_empty() && brackets.is_none(),
        lines: &line,
    };
    ex.visit_body(parsed.suite());
    let max_depth = ex.max_depth;
    if let Some(e) = parsed.errors().first() {
        snap.parse_error = Some(format!("line {}: {}", line(e.location.start()), e.error));
    } else if let Some(at) = brackets {
        snap.parse_error = Some(format!(
            "line {}: too many nested parentheses (more than {MAX_BRACKETS})",
            line(at)
        ));
    } else if max_depth > MAX_DEPTH {
        snap.parse_error = Some(format!(
            "nesting {max_depth} levels deep (more than {MAX_DEPTH})"
        ));
    } else {
        let Extractor {
            defs: found,
            raw,
            callees,
            imports,
            ..
        } = ex;
        snap.imports = imports;
        let mut defs = Vec::with_capacity(found.len());
        snap.functions = found
            .into_iter()
            .map(|d| {
                defs.push(d.def);
                d.function
            })
            .collect();
        snap.calls = calls::resolve(&defs, &snap.functions, &snap.imports, &raw, &callees, line);
    }
    drop_deep(parsed, max_depth);
    snap
}

/// CPython's tokenizer refuses more than 200 open brackets; ruff has no such limit. Refusing
/// them too keeps "files Python cannot parse" and "files mem-ast reports an error for" one set.
const MAX_BRACKETS: usize = 200;

fn too_many_brackets(tokens: &Tokens) -> Option<TextSize> {
    let mut depth = 0usize;
    for t in tokens.iter() {
        match t.kind() {
            TokenKind::Lpar | TokenKind::Lsqb | TokenKind::Lbrace => {
                depth += 1;
                if depth > MAX_BRACKETS {
                    return Some(t.start());
                }
            }
            TokenKind::Rpar | TokenKind::Rsqb | TokenKind::Rbrace => {
                depth = depth.saturating_sub(1)
            }
            _ => {}
        }
    }
    None
}

/// The source as text, by PEP 263: UTF-8 unless a coding cookie in the first two lines says
/// Latin-1 (or ASCII). Other declared encodings are refused with their name: rare enough that
/// mem-ast carries no codec tables.
fn decode(bytes: &[u8]) -> Result<std::borrow::Cow<'_, str>, String> {
    let (bom, body) = match bytes.strip_prefix(b"\xef\xbb\xbf") {
        Some(rest) => (true, rest),
        None => (false, bytes),
    };
    let utf8 = |b| {
        std::str::from_utf8(b)
            .map(std::borrow::Cow::Borrowed)
            .map_err(|e: std::str::Utf8Error| {
                format!("not UTF-8 (invalid byte at offset {})", e.valid_up_to())
            })
    };
    let Some(name) = coding_cookie(body) else {
        return utf8(body);
    };
    let norm = name.to_ascii_lowercase().replace('_', "-");
    // CPython accepts a BOM only with a cookie it normalises to "utf-8".
    if bom && !(norm == "utf-8" || norm.starts_with("utf-8-")) {
        return Err(format!("encoding problem: {name} with BOM"));
    }
    match norm.as_str() {
        "utf-8" | "utf8" => utf8(body),
        n if n.starts_with("utf-8-") || n.starts_with("utf8-") => utf8(body),
        "latin-1" | "latin1" | "l1" | "iso-8859-1" | "iso8859-1" | "iso-latin-1" | "cp819"
        | "ascii" | "us-ascii" => Ok(std::borrow::Cow::Owned(
            body.iter().map(|&b| b as char).collect(),
        )),
        _ => Err(format!("source encoding {name} is not supported")),
    }
}

/// The `coding[:=]name` of a comment on line 1, or on line 2 when line 1 is a comment or blank.
fn coding_cookie(bytes: &[u8]) -> Option<String> {
    let mut lines = bytes.split(|&b| b == b'\n').take(2);
    let first = lines.next()?;
    let cookie = |line: &[u8]| -> Option<String> {
        let line = std::str::from_utf8(line).ok()?;
        let t = line.trim_start_matches([' ', '\t', '\x0c']);
        if !t.starts_with('#') {
            return None;
        }
        let at = t.find("coding")?;
        let rest = t[at + 6..].strip_prefix([':', '='])?;
        let name: String = rest
            .trim_start_matches([' ', '\t'])
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            .collect();
        (!name.is_empty()).then_some(name)
    };
    if let Some(c) = cookie(first) {
        return Some(c);
    }
    let t = String::from_utf8_lossy(first);
    let t = t.trim();
    if t.is_empty() || t.starts_with('#') {
        return lines.next().and_then(cookie);
    }
    None
}

fn memchr_nul(bytes: &[u8]) -> Option<usize> {
    memchr::memchr(0, bytes)
}

/// A definition's hash recurses once per level of its tree (at most [`MAX_DEPTH`]), from inside
/// the walk: on a stack grown for it when the walk's is short.
fn hash_deep(f: impl FnOnce() -> String) -> String {
    stacker::maybe_grow(512 * 1024, 2 << 20, f)
}

/// Dropping an AST recurses once per level; a pathological file (a 50 MB chain of `+`) would
/// overflow the stack, so deep trees are dropped on a stack sized for them.
fn drop_deep<T: Send>(value: T, depth: usize) {
    if depth < 2_000 {
        drop(value);
    } else {
        stacker::grow(
            depth.saturating_mul(1024).saturating_add(1 << 20),
            move || drop(value),
        );
    }
}

struct Found {
    function: Function,
    def: Def,
}

struct Extractor<'a, 'l> {
    src: &'a str,
    tokens: &'a Tokens,
    defs: Vec<Found>,
    /// Indices into `defs` of the definitions being walked, innermost last.
    scope: Vec<usize>,
    raw: Vec<RawCall>,
    /// The callees of `raw`, one after the other.
    callees: String,
    imports: Vec<(String, String)>,
    depth: usize,
    max_depth: usize,
    /// The file parsed without error: each definition is hashed when its walk ends, while its
    /// nodes are still in the cache.
    hashing: bool,
    lines: &'l dyn Fn(TextSize) -> u32,
}

impl<'a> Extractor<'a, '_> {
    /// Every level of recursion passes here: it measures the depth and, every few levels, lets
    /// the stack grow on the heap (stacker) instead of overflowing on deep input.
    fn nested(&mut self, f: impl FnOnce(&mut Self)) {
        self.depth += 1;
        self.max_depth = self.max_depth.max(self.depth);
        if self.depth.is_multiple_of(8) {
            stacker::maybe_grow(128 * 1024, 1 << 20, || f(self));
        } else {
            f(self);
        }
        self.depth -= 1;
    }

    /// A definition just walked can be hashed: the file parses and no tree so far is deeper
    /// than the hash's recursion may go (a deeper one is refused).
    fn hashable(&self) -> bool {
        self.hashing && self.max_depth <= MAX_DEPTH
    }

    fn text(&self, range: TextRange) -> String {
        let mut out = String::new();
        self.push_text(&mut out, range);
        out
    }

    /// The source of `range` on one line (see [`squeeze`]).
    fn push_text(&self, out: &mut String, range: TextRange) {
        let s = &self.src[range];
        if s.contains(['\n', '\r', '\t']) || s.contains("  ") {
            out.push_str(&squeeze(s));
        } else {
            out.push_str(s);
        }
    }

    /// Line of the `def`/`async`/`class` keyword: ruff's range starts at the first decorator.
    fn keyword_line(&self, range: TextRange, decorators: &[ast::Decorator]) -> u32 {
        let start = match decorators.last() {
            None => range.start(),
            Some(d) => self
                .tokens
                .after(d.end())
                .iter()
                .find(|t| {
                    matches!(
                        t.kind(),
                        TokenKind::Def | TokenKind::Async | TokenKind::Class
                    )
                })
                .map_or(range.start(), |t| t.start()),
        };
        (self.lines)(start)
    }

    fn parent(&self) -> Option<&Found> {
        self.scope.last().map(|&i| &self.defs[i])
    }

    fn qualname(&self, name: &str) -> String {
        match self.parent() {
            Some(p) => {
                let q = &p.function.qualname;
                let mut s = String::with_capacity(q.len() + 1 + name.len());
                s.push_str(q);
                s.push('.');
                s.push_str(name);
                s
            }
            None => name.to_string(),
        }
    }

    fn add(&mut self, function: Function, bases: Vec<String>) -> usize {
        let def = Def {
            parent: self.scope.last().copied(),
            is_class: function.kind == Kind::Class,
            bases,
        };
        self.defs.push(Found { function, def });
        self.defs.len() - 1
    }

    fn function_def(&mut self, f: &'a ast::StmtFunctionDef) {
        // Decorators, defaults and annotations run in the enclosing scope.
        for d in &f.decorator_list {
            self.visit_decorator(d);
        }
        if let Some(tp) = &f.type_params {
            self.visit_type_params(tp);
        }
        self.visit_parameters(&f.parameters);
        if let Some(r) = &f.returns {
            self.visit_annotation(r);
        }
        let in_class = self.parent().is_some_and(|p| p.def.is_class);
        let kind = match (f.is_async, in_class) {
            (false, false) => Kind::Function,
            (false, true) => Kind::Method,
            (true, false) => Kind::AsyncFunction,
            (true, true) => Kind::AsyncMethod,
        };
        let mut signature = String::new();
        if let Some(tp) = &f.type_params {
            self.push_text(&mut signature, tp.range());
        }
        self.parameters(&mut signature, &f.parameters, in_class);
        if let Some(r) = &f.returns {
            signature.push_str(" -> ");
            self.push_text(&mut signature, r.range());
        }
        let function = Function {
            qualname: self.qualname(f.name.as_str()),
            name: f.name.to_string(),
            kind,
            parent_class: in_class.then(|| self.parent().unwrap().function.qualname.clone()),
            signature,
            decorators: f
                .decorator_list
                .iter()
                .map(|d| self.text(d.expression.range()))
                .collect(),
            docstring: docstring(&f.body),
            line_start: self.keyword_line(f.range, &f.decorator_list),
            line_end: (self.lines)(f.range.end()),
            body_hash: String::new(),
        };
        let i = self.add(function, Vec::new());
        self.scope.push(i);
        self.visit_body(&f.body);
        self.scope.pop();
        if self.hashable() {
            self.defs[i].function.body_hash = hash_deep(|| hash::function(f));
        }
    }

    fn class_def(&mut self, c: &'a ast::StmtClassDef) {
        for d in &c.decorator_list {
            self.visit_decorator(d);
        }
        if let Some(tp) = &c.type_params {
            self.visit_type_params(tp);
        }
        if let Some(a) = &c.arguments {
            self.visit_arguments(a);
        }
        let in_class = self.parent().is_some_and(|p| p.def.is_class);
        let mut signature = String::new();
        if let Some(tp) = &c.type_params {
            self.push_text(&mut signature, tp.range());
        }
        if let Some(a) = &c.arguments {
            self.push_text(&mut signature, a.range());
        }
        let bases = c
            .arguments
            .as_deref()
            .map(|a| a.args.iter().filter_map(dotted).collect())
            .unwrap_or_default();
        let function = Function {
            qualname: self.qualname(c.name.as_str()),
            name: c.name.to_string(),
            kind: Kind::Class,
            parent_class: in_class.then(|| self.parent().unwrap().function.qualname.clone()),
            signature,
            decorators: c
                .decorator_list
                .iter()
                .map(|d| self.text(d.expression.range()))
                .collect(),
            docstring: docstring(&c.body),
            line_start: self.keyword_line(c.range, &c.decorator_list),
            line_end: (self.lines)(c.range.end()),
            body_hash: String::new(),
        };
        let i = self.add(function, bases);
        self.scope.push(i);
        self.visit_body(&c.body);
        self.scope.pop();
        if self.hashable() {
            self.defs[i].function.body_hash = hash_deep(|| hash::class(c));
        }
    }

    /// `(a: int, /, b=1, *args, c, **kw)` as written, without a method's `self`/`cls`.
    fn parameters(&self, out: &mut String, p: &ast::Parameters, in_class: bool) {
        out.push('(');
        let start = out.len();
        let sep = |out: &mut String| {
            if out.len() > start {
                out.push_str(", ");
            }
        };
        let one = |out: &mut String, pd: &ast::ParameterWithDefault| {
            sep(out);
            self.parameter(out, &pd.parameter);
            if let Some(d) = &pd.default {
                out.push_str(if pd.parameter.annotation.is_some() {
                    " = "
                } else {
                    "="
                });
                self.push_text(out, d.range());
            }
        };
        let skip = in_class
            && p.posonlyargs
                .iter()
                .chain(&p.args)
                .next()
                .is_some_and(|a| matches!(a.parameter.name.as_str(), "self" | "cls"));
        for (i, a) in p.posonlyargs.iter().chain(&p.args).enumerate() {
            if !(skip && i == 0) {
                one(out, a);
            }
            if i + 1 == p.posonlyargs.len() {
                sep(out);
                out.push('/');
            }
        }
        match &p.vararg {
            Some(v) => {
                sep(out);
                out.push('*');
                self.parameter(out, v);
            }
            None if !p.kwonlyargs.is_empty() => {
                sep(out);
                out.push('*');
            }
            None => {}
        }
        for a in &p.kwonlyargs {
            one(out, a);
        }
        if let Some(k) = &p.kwarg {
            sep(out);
            out.push_str("**");
            self.parameter(out, k);
        }
        out.push(')');
    }

    fn parameter(&self, out: &mut String, p: &ast::Parameter) {
        out.push_str(p.name.as_str());
        if let Some(a) = &p.annotation {
            out.push_str(": ");
            self.push_text(out, a.range());
        }
    }

    fn import(&mut self, s: &ast::StmtImport) {
        for a in &s.names {
            match &a.asname {
                Some(as_) => self.imports.push((as_.to_string(), a.name.to_string())),
                None => {
                    let top = a.name.as_str().split('.').next().unwrap_or_default();
                    self.imports.push((top.to_string(), top.to_string()));
                }
            }
        }
    }

    fn import_from(&mut self, s: &ast::StmtImportFrom) {
        let module = s.module.as_ref().map_or("", |m| m.as_str());
        let base = match (s.level, module) {
            (0, m) => m.to_string(),
            (l, "") => format!("__rel{l}__"),
            (l, m) => format!("__rel{l}__.{m}"),
        };
        for a in &s.names {
            let name = a.name.as_str();
            if name == "*" {
                self.imports.push(("*".into(), base.clone()));
            } else {
                let local = a.asname.as_ref().map_or(name, |n| n.as_str());
                self.imports
                    .push((local.to_string(), format!("{base}.{name}")));
            }
        }
    }
}

impl<'a> Visitor<'a> for Extractor<'a, '_> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        self.nested(|me| match stmt {
            Stmt::FunctionDef(f) => me.function_def(f),
            Stmt::ClassDef(c) => me.class_def(c),
            Stmt::Import(i) => me.import(i),
            Stmt::ImportFrom(i) => me.import_from(i),
            _ => visitor::walk_stmt(me, stmt),
        });
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        if matches!(
            expr,
            Expr::Name(_)
                | Expr::NumberLiteral(_)
                | Expr::StringLiteral(_)
                | Expr::BytesLiteral(_)
                | Expr::BooleanLiteral(_)
                | Expr::NoneLiteral(_)
                | Expr::EllipsisLiteral(_)
        ) {
            // A leaf: no call inside, one level deeper.
            self.max_depth = self.max_depth.max(self.depth + 1);
            return;
        }
        self.nested(|me| {
            if let Expr::Call(call) = expr
                && matches!(*call.func, Expr::Name(_) | Expr::Attribute(_))
            {
                // The callee written down while its nodes are in the cache.
                let start = me.callees.len();
                let on_expr = !calls::push_dotted(&mut me.callees, &call.func);
                if on_expr {
                    let Expr::Attribute(a) = call.func.as_ref() else {
                        unreachable!("a name is dotted")
                    };
                    me.callees.truncate(start);
                    me.callees.push_str(a.attr.as_str());
                }
                me.raw.push(RawCall {
                    scope: me.scope.last().copied(),
                    callee: start..me.callees.len(),
                    on_expr,
                    at: call.start(),
                });
            }
            visitor::walk_expr(me, expr);
        });
    }
}

fn docstring(body: &[Stmt]) -> Option<String> {
    let Some(Stmt::Expr(e)) = body.first() else {
        return None;
    };
    let s = e.value.as_string_literal_expr()?;
    s.value
        .to_str()
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(str::to_string)
}

/// Whitespace runs (newlines and continuations of a multi-line signature) become one space.
fn squeeze(s: &str) -> String {
    let s = s.replace("\\\r\n", " ").replace("\\\n", " ");
    let mut out = String::with_capacity(s.len());
    for w in s.split_whitespace() {
        if !out.is_empty() && !out.ends_with(['(', '[']) && !w.starts_with([')', ']', ',']) {
            out.push(' ');
        }
        out.push_str(w);
    }
    out
}
