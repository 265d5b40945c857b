//! One file's source into a [`Snapshot`]: a single walk of ruff's AST collects the definitions,
//! the import map and the raw calls; hashes and call resolution follow.

use ruff_python_ast::token::{TokenKind, Tokens};
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr, PySourceType, Stmt};
use ruff_source_file::LineIndex;
use ruff_text_size::{Ranged, TextRange, TextSize};

use crate::calls::{self, Callee, Def, RawCall};
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
    snap.lines = text.lines().count() as u32;
    let parsed = ruff_python_parser::parse_unchecked_source(text, PySourceType::Python);
    let index = LineIndex::from_source_text(text);
    let line = |at: TextSize| index.line_index(at).get() as u32;
    let mut ex = Extractor {
        src: text,
        tokens: parsed.tokens(),
        defs: Vec::new(),
        scope: Vec::new(),
        raw: Vec::new(),
        imports: Vec::new(),
        depth: 0,
        max_depth: 0,
        lines: &line,
    };
    ex.visit_body(parsed.suite());
    let max_depth = ex.max_depth;
    if let Some(e) = parsed.errors().first() {
        snap.parse_error = Some(format!("line {}: {}", line(e.location.start()), e.error));
    } else if let Some(at) = too_many_brackets(parsed.tokens()) {
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
            defs, raw, imports, ..
        } = ex;
        snap.imports = imports;
        snap.functions = defs
            .iter()
            .map(|d| {
                let mut f = d.function.clone();
                f.body_hash = match d.node {
                    Node::Function(n) => hash::function(n),
                    Node::Class(n) => hash::class(n),
                };
                f
            })
            .collect();
        let defs: Vec<Def> = defs.into_iter().map(|d| d.def).collect();
        snap.calls = calls::resolve(&defs, &snap.functions, &snap.imports, raw);
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
    bytes.iter().position(|&b| b == 0)
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

enum Node<'a> {
    Function(&'a ast::StmtFunctionDef),
    Class(&'a ast::StmtClassDef),
}

struct Found<'a> {
    function: Function,
    def: Def,
    node: Node<'a>,
}

struct Extractor<'a, 'l> {
    src: &'a str,
    tokens: &'a Tokens,
    defs: Vec<Found<'a>>,
    /// Indices into `defs` of the definitions being walked, innermost last.
    scope: Vec<usize>,
    raw: Vec<RawCall>,
    imports: Vec<(String, String)>,
    depth: usize,
    max_depth: usize,
    lines: &'l dyn Fn(TextSize) -> u32,
}

impl<'a> Extractor<'a, '_> {
    /// Every level of recursion passes here: it measures the depth and lets the stack grow on
    /// the heap (stacker) instead of overflowing on deep input.
    fn nested(&mut self, f: impl FnOnce(&mut Self)) {
        self.depth += 1;
        self.max_depth = self.max_depth.max(self.depth);
        stacker::maybe_grow(64 * 1024, 1 << 20, || f(self));
        self.depth -= 1;
    }

    fn text(&self, range: TextRange) -> String {
        let s = &self.src[range];
        if s.contains(['\n', '\r', '\t']) || s.contains("  ") {
            squeeze(s)
        } else {
            s.to_string()
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

    fn parent(&self) -> Option<&Found<'a>> {
        self.scope.last().map(|&i| &self.defs[i])
    }

    fn qualname(&self, name: &str) -> String {
        match self.parent() {
            Some(p) => format!("{}.{name}", p.function.qualname),
            None => name.to_string(),
        }
    }

    fn add(&mut self, function: Function, bases: Vec<String>, node: Node<'a>) -> usize {
        let def = Def {
            qualname: function.qualname.clone(),
            parent: self.scope.last().copied(),
            is_class: function.kind == Kind::Class,
            bases,
        };
        self.defs.push(Found {
            function,
            def,
            node,
        });
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
            signature.push_str(&self.text(tp.range()));
        }
        signature.push_str(&self.parameters(&f.parameters, in_class));
        if let Some(r) = &f.returns {
            signature.push_str(" -> ");
            signature.push_str(&self.text(r.range()));
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
        let i = self.add(function, Vec::new(), Node::Function(f));
        self.scope.push(i);
        self.visit_body(&f.body);
        self.scope.pop();
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
            signature.push_str(&self.text(tp.range()));
        }
        if let Some(a) = &c.arguments {
            signature.push_str(&self.text(a.range()));
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
        let i = self.add(function, bases, Node::Class(c));
        self.scope.push(i);
        self.visit_body(&c.body);
        self.scope.pop();
    }

    /// `(a: int, /, b=1, *args, c, **kw) -> …` as written, without a method's `self`/`cls`.
    fn parameters(&self, p: &ast::Parameters, in_class: bool) -> String {
        let mut out: Vec<String> = Vec::new();
        let one = |pd: &ast::ParameterWithDefault| {
            let mut s = self.parameter(&pd.parameter);
            if let Some(d) = &pd.default {
                s.push_str(if pd.parameter.annotation.is_some() {
                    " = "
                } else {
                    "="
                });
                s.push_str(&self.text(d.range()));
            }
            s
        };
        let positional: Vec<(&ast::ParameterWithDefault, bool)> = p
            .posonlyargs
            .iter()
            .map(|a| (a, true))
            .chain(p.args.iter().map(|a| (a, false)))
            .collect();
        let skip = in_class
            && positional
                .first()
                .is_some_and(|(a, _)| matches!(a.parameter.name.as_str(), "self" | "cls"));
        for (i, (a, _)) in positional.iter().enumerate() {
            if !(skip && i == 0) {
                out.push(one(a));
            }
            if i + 1 == p.posonlyargs.len() {
                out.push("/".into());
            }
        }
        match &p.vararg {
            Some(v) => out.push(format!("*{}", self.parameter(v))),
            None if !p.kwonlyargs.is_empty() => out.push("*".into()),
            None => {}
        }
        out.extend(p.kwonlyargs.iter().map(one));
        if let Some(k) = &p.kwarg {
            out.push(format!("**{}", self.parameter(k)));
        }
        format!("({})", out.join(", "))
    }

    fn parameter(&self, p: &ast::Parameter) -> String {
        match &p.annotation {
            Some(a) => format!("{}: {}", p.name.as_str(), self.text(a.range())),
            None => p.name.to_string(),
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
        self.nested(|me| {
            if let Expr::Call(call) = expr {
                let callee = match call.func.as_ref() {
                    Expr::Attribute(a) => match dotted(&call.func) {
                        Some(d) => Some(Callee::Dotted(d)),
                        None => Some(Callee::OnExpr(a.attr.to_string())),
                    },
                    f => dotted(f).map(Callee::Dotted),
                };
                if let Some(callee) = callee {
                    me.raw.push(RawCall {
                        scope: me.scope.last().copied(),
                        callee,
                        line: (me.lines)(call.start()),
                    });
                }
            }
            visitor::walk_expr(me, expr);
        });
    }
}

/// `a.b.c` for a chain of attributes on a name; None for anything else.
fn dotted(e: &Expr) -> Option<String> {
    match e {
        Expr::Name(n) => Some(n.id.to_string()),
        Expr::Attribute(a) => dotted(&a.value).map(|mut s| {
            s.push('.');
            s.push_str(a.attr.as_str());
            s
        }),
        _ => None,
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
