//! The body hash: SHA-256 over a range-free normal form of a definition's AST.
//!
//! The normal form is ruff's `comparable` view of each node (no ranges, no trivia: comments,
//! whitespace, parentheses, quote styles and number spellings are gone) as its derived `Hash`
//! writes it, into a hasher whose integer writes are fixed-width little-endian, so the digest is
//! the same on every machine and run. The definition's own docstring is left out (the record
//! keeps its first line) and a nested `def`/`class` counts only by its name, so editing a method
//! changes the method's hash and not its class's.
//!
//! The stream is written straight from ruff's AST ([`Normal`]) rather than by building the
//! `Comparable*` tree and hashing it: the same bytes without an allocation per node. The tests
//! of `hash_reference` hold it to ruff's `Comparable*` over every kind of node (and, with
//! $MEMKIT_TEST_PYCORPUS, over real code). A derived `Hash` writes a struct's fields in declaration order; an enum of more
//! than one variant first writes its variant's index as an `isize`; a slice its length, then
//! its elements; a `str` its bytes and 0xff.

use std::hash::{Hash, Hasher};

use ruff_python_ast::{self as ast, ExceptHandler, Expr, Pattern, Stmt};
use sha2::{Digest, Sha256};

/// `std::hash::Hasher` over SHA-256 with every integer written at a fixed width and byte order
/// (the defaults write native-endian `usize`, which would differ across machines). Small writes
/// are gathered in a buffer: SHA-256 is a stream, so the digest is that of the bytes in order.
pub(crate) struct Stable {
    sha: Sha256,
    buf: [u8; 512],
    len: usize,
}

impl Hasher for Stable {
    fn finish(&self) -> u64 {
        unreachable!("the digest is read with Stable::hex")
    }
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        if self.len + bytes.len() > self.buf.len() {
            self.flush();
            if bytes.len() > self.buf.len() {
                self.sha.update(bytes);
                return;
            }
        }
        self.buf[self.len..self.len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
    }
    fn write_u8(&mut self, i: u8) {
        self.write(&[i]);
    }
    fn write_u16(&mut self, i: u16) {
        self.write(&i.to_le_bytes());
    }
    fn write_u32(&mut self, i: u32) {
        self.write(&i.to_le_bytes());
    }
    fn write_u64(&mut self, i: u64) {
        self.write(&i.to_le_bytes());
    }
    fn write_u128(&mut self, i: u128) {
        self.write(&i.to_le_bytes());
    }
    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64);
    }
    fn write_i8(&mut self, i: i8) {
        self.write_u8(i as u8);
    }
    fn write_i16(&mut self, i: i16) {
        self.write_u16(i as u16);
    }
    fn write_i32(&mut self, i: i32) {
        self.write_u32(i as u32);
    }
    fn write_i64(&mut self, i: i64) {
        self.write_u64(i as u64);
    }
    fn write_i128(&mut self, i: i128) {
        self.write_u128(i as u128);
    }
    fn write_isize(&mut self, i: isize) {
        self.write_u64(i as i64 as u64);
    }
}

impl Stable {
    pub(crate) fn new() -> Stable {
        Stable {
            sha: Sha256::new(),
            buf: [0; 512],
            len: 0,
        }
    }
    fn flush(&mut self) {
        self.sha.update(&self.buf[..self.len]);
        self.len = 0;
    }
    pub(crate) fn tag(&mut self, t: &str) {
        self.write(t.as_bytes());
        self.write_u8(0xff);
    }
    pub(crate) fn hex(mut self) -> String {
        self.flush();
        hex::encode(&self.sha.finalize()[..8])
    }
}

pub(crate) fn function(f: &ast::StmtFunctionDef) -> String {
    let mut h = Normal(Stable::new());
    h.0.tag(if f.is_async { "async def" } else { "def" });
    decorators(&mut h, &f.decorator_list);
    h.option(f.type_params.as_deref(), Normal::type_params);
    h.parameters(&f.parameters);
    h.option(f.returns.as_deref(), Normal::expr);
    body(&mut h, skip_docstring(&f.body));
    h.0.hex()
}

pub(crate) fn class(c: &ast::StmtClassDef) -> String {
    let mut h = Normal(Stable::new());
    h.0.tag("class");
    decorators(&mut h, &c.decorator_list);
    h.option(c.type_params.as_deref(), Normal::type_params);
    h.option(c.arguments.as_deref(), Normal::arguments);
    body(&mut h, skip_docstring(&c.body));
    h.0.hex()
}

fn decorators(h: &mut Normal, list: &[ast::Decorator]) {
    h.0.write_usize(list.len());
    for d in list {
        h.expr(&d.expression);
    }
}

fn skip_docstring(body: &[Stmt]) -> &[Stmt] {
    match body.first() {
        Some(Stmt::Expr(e)) if e.value.is_string_literal_expr() => &body[1..],
        _ => body,
    }
}

/// Statements in order; compound statements are opened so that a definition nested in an `if`
/// or `try` still counts by name only.
fn body(h: &mut Normal, stmts: &[Stmt]) {
    h.0.write_usize(stmts.len());
    for s in stmts {
        match s {
            Stmt::FunctionDef(f) => {
                h.0.tag("nested def");
                h.0.tag(f.name.as_str());
            }
            Stmt::ClassDef(c) => {
                h.0.tag("nested class");
                h.0.tag(c.name.as_str());
            }
            Stmt::If(i) => {
                h.0.tag("if");
                h.expr(&i.test);
                body(h, &i.body);
                for c in &i.elif_else_clauses {
                    h.0.tag("elif");
                    h.option(c.test.as_ref(), Normal::expr);
                    body(h, &c.body);
                }
            }
            Stmt::For(f) => {
                h.0.tag(if f.is_async { "async for" } else { "for" });
                h.expr(&f.target);
                h.expr(&f.iter);
                body(h, &f.body);
                body(h, &f.orelse);
            }
            Stmt::While(w) => {
                h.0.tag("while");
                h.expr(&w.test);
                body(h, &w.body);
                body(h, &w.orelse);
            }
            Stmt::With(w) => {
                h.0.tag(if w.is_async { "async with" } else { "with" });
                h.0.write_usize(w.items.len());
                for i in &w.items {
                    h.expr(&i.context_expr);
                    h.option(i.optional_vars.as_deref(), Normal::expr);
                }
                body(h, &w.body);
            }
            Stmt::Try(t) => {
                h.0.tag(if t.is_star { "try*" } else { "try" });
                body(h, &t.body);
                h.0.write_usize(t.handlers.len());
                for ExceptHandler::ExceptHandler(x) in &t.handlers {
                    h.option(x.type_.as_deref(), Normal::expr);
                    h.option(x.name.as_ref(), |h, n| h.str(n.as_str()));
                    body(h, &x.body);
                }
                body(h, &t.orelse);
                body(h, &t.finalbody);
            }
            other => {
                h.0.tag("stmt");
                h.stmt(other);
            }
        }
    }
}

/// Writes what `ruff_python_ast::comparable`'s `Comparable*` view of a node hashes to, node by
/// node. Variant numbers are the positions of the variants in those enums.
struct Normal(Stable);

impl Normal {
    fn variant(&mut self, i: isize) {
        self.0.write_isize(i);
    }
    fn len(&mut self, n: usize) {
        self.0.write_usize(n);
    }
    fn str(&mut self, s: &str) {
        self.0.write(s.as_bytes());
        self.0.write_u8(0xff);
    }
    fn bool(&mut self, b: bool) {
        self.0.write_u8(b as u8);
    }
    fn option<T>(&mut self, v: Option<T>, f: impl FnOnce(&mut Self, T)) {
        match v {
            None => self.variant(0),
            Some(v) => {
                self.variant(1);
                f(self, v);
            }
        }
    }
    fn exprs(&mut self, list: &[Expr]) {
        self.len(list.len());
        for e in list {
            self.expr(e);
        }
    }
    fn stmts(&mut self, list: &[Stmt]) {
        self.len(list.len());
        for s in list {
            self.stmt(s);
        }
    }
    fn names(&mut self, list: &[ast::Identifier]) {
        self.len(list.len());
        for n in list {
            self.str(n.as_str());
        }
    }

    /// `ComparableArguments`.
    fn arguments(&mut self, a: &ast::Arguments) {
        self.exprs(&a.args);
        self.len(a.keywords.len());
        for k in &a.keywords {
            self.option(k.arg.as_ref(), |h, n| h.str(n.as_str()));
            self.expr(&k.value);
        }
    }

    /// `ComparableParameters`.
    fn parameters(&mut self, p: &ast::Parameters) {
        self.with_defaults(&p.posonlyargs);
        self.with_defaults(&p.args);
        self.option(p.vararg.as_deref(), Normal::parameter);
        self.with_defaults(&p.kwonlyargs);
        self.option(p.kwarg.as_deref(), Normal::parameter);
    }
    fn with_defaults(&mut self, list: &[ast::ParameterWithDefault]) {
        self.len(list.len());
        for p in list {
            self.parameter(&p.parameter);
            self.option(p.default.as_deref(), Normal::expr);
        }
    }
    fn parameter(&mut self, p: &ast::Parameter) {
        self.str(p.name.as_str());
        self.option(p.annotation.as_deref(), Normal::expr);
    }

    /// `ComparableTypeParams`.
    fn type_params(&mut self, tp: &ast::TypeParams) {
        self.len(tp.type_params.len());
        for t in &tp.type_params {
            match t {
                ast::TypeParam::TypeVar(v) => {
                    self.variant(0);
                    self.str(v.name.as_str());
                    self.option(v.bound.as_deref(), Normal::expr);
                    self.option(v.default.as_deref(), Normal::expr);
                }
                ast::TypeParam::ParamSpec(v) => {
                    self.variant(1);
                    self.str(v.name.as_str());
                    self.option(v.default.as_deref(), Normal::expr);
                }
                ast::TypeParam::TypeVarTuple(v) => {
                    self.variant(2);
                    self.str(v.name.as_str());
                    self.option(v.default.as_deref(), Normal::expr);
                }
            }
        }
    }

    /// `ComparableComprehension`s.
    fn generators(&mut self, list: &[ast::Comprehension]) {
        self.len(list.len());
        for c in list {
            self.expr(&c.target);
            self.expr(&c.iter);
            self.exprs(&c.ifs);
            self.bool(c.is_async);
        }
    }

    /// `InterpolatedElement`.
    fn interpolation(&mut self, e: &ast::InterpolatedElement) {
        self.expr(&e.expression);
        self.option(e.debug_text.as_ref(), |h, d| {
            let text = d.as_str();
            if text.contains('\r') {
                h.str(&text.replace("\r\n", "\n").replace('\r', "\n"));
            } else {
                h.str(text);
            }
        });
        e.conversion.hash(&mut self.0);
        self.option(e.format_spec.as_deref(), |h, spec| {
            h.len(spec.elements.len());
            for el in spec.elements.iter() {
                h.string_element(el);
            }
        });
    }
    /// `ComparableInterpolatedStringElement` of one element, unmerged (a format spec's).
    fn string_element(&mut self, el: &ast::InterpolatedStringElement) {
        match el {
            ast::InterpolatedStringElement::Literal(l) => {
                self.variant(0);
                self.str(&l.value);
            }
            ast::InterpolatedStringElement::Interpolation(i) => {
                self.variant(1);
                self.interpolation(i);
            }
        }
    }

    /// `ComparableFString`: adjacent literals (of literal parts and inside f-strings) merge into
    /// one element, written piece by piece (the hash of a `str` is its bytes, then 0xff).
    fn fstring(&mut self, value: &ast::FStringValue) {
        // The element count comes first: a run of literals is one element.
        let (mut count, mut in_literal) = (0, false);
        for part in value {
            match part {
                ast::FStringPart::Literal(_) => {
                    count += usize::from(!in_literal);
                    in_literal = true;
                }
                ast::FStringPart::FString(f) => {
                    for el in f.elements.iter() {
                        if el.is_literal() {
                            count += usize::from(!in_literal);
                            in_literal = true;
                        } else {
                            count += 1;
                            in_literal = false;
                        }
                    }
                }
            }
        }
        self.len(count);
        let mut in_literal = false;
        for part in value {
            match part {
                ast::FStringPart::Literal(l) => self.literal_piece(&l.value, &mut in_literal),
                ast::FStringPart::FString(f) => {
                    for el in f.elements.iter() {
                        match el {
                            ast::InterpolatedStringElement::Literal(l) => {
                                self.literal_piece(&l.value, &mut in_literal)
                            }
                            ast::InterpolatedStringElement::Interpolation(i) => {
                                if in_literal {
                                    self.0.write_u8(0xff);
                                    in_literal = false;
                                }
                                self.variant(1);
                                self.interpolation(i);
                            }
                        }
                    }
                }
            }
        }
        if in_literal {
            self.0.write_u8(0xff);
        }
    }
    fn literal_piece(&mut self, s: &str, in_literal: &mut bool) {
        if !*in_literal {
            self.variant(0);
            *in_literal = true;
        }
        self.0.write(s.as_bytes());
    }

    /// `ComparableTString`: the literals between interpolations (one more than those, each a
    /// merged run, empty ones included), then the interpolations.
    fn tstring(&mut self, value: &ast::TStringValue) {
        let interpolations = value.elements().filter(|e| !e.is_literal()).count();
        self.len(interpolations + 1);
        self.variant(0);
        for el in value.elements() {
            match el {
                ast::InterpolatedStringElement::Literal(l) => self.0.write(l.value.as_bytes()),
                ast::InterpolatedStringElement::Interpolation(_) => {
                    self.0.write_u8(0xff);
                    self.variant(0);
                }
            }
        }
        self.0.write_u8(0xff);
        self.len(interpolations);
        for el in value.elements() {
            if let ast::InterpolatedStringElement::Interpolation(i) = el {
                self.interpolation(i);
            }
        }
    }

    /// `ComparableExpr`.
    fn expr(&mut self, e: &Expr) {
        match e {
            Expr::BoolOp(x) => {
                self.variant(0);
                self.variant(match x.op {
                    ast::BoolOp::And => 0,
                    ast::BoolOp::Or => 1,
                });
                self.exprs(&x.values);
            }
            Expr::Named(x) => {
                self.variant(1);
                self.expr(&x.target);
                self.expr(&x.value);
            }
            Expr::BinOp(x) => {
                self.variant(2);
                self.expr(&x.left);
                self.variant(operator(x.op));
                self.expr(&x.right);
            }
            Expr::UnaryOp(x) => {
                self.variant(3);
                self.variant(match x.op {
                    ast::UnaryOp::Invert => 0,
                    ast::UnaryOp::Not => 1,
                    ast::UnaryOp::UAdd => 2,
                    ast::UnaryOp::USub => 3,
                });
                self.expr(&x.operand);
            }
            Expr::Lambda(x) => {
                self.variant(4);
                self.option(x.parameters.as_deref(), Normal::parameters);
                self.expr(&x.body);
            }
            Expr::If(x) => {
                self.variant(5);
                self.expr(&x.test);
                self.expr(&x.body);
                self.expr(&x.orelse);
            }
            Expr::Dict(x) => {
                self.variant(6);
                self.len(x.items.len());
                for item in &x.items {
                    self.option(item.key.as_ref(), Normal::expr);
                    self.expr(&item.value);
                }
            }
            Expr::Set(x) => {
                self.variant(7);
                self.exprs(&x.elts);
            }
            Expr::ListComp(x) => {
                self.variant(8);
                self.expr(&x.elt);
                self.generators(&x.generators);
            }
            Expr::SetComp(x) => {
                self.variant(9);
                self.expr(&x.elt);
                self.generators(&x.generators);
            }
            Expr::DictComp(x) => {
                self.variant(10);
                self.option(x.key.as_deref(), Normal::expr);
                self.expr(&x.value);
                self.generators(&x.generators);
            }
            Expr::Generator(x) => {
                self.variant(11);
                self.expr(&x.elt);
                self.generators(&x.generators);
            }
            Expr::Await(x) => {
                self.variant(12);
                self.expr(&x.value);
            }
            Expr::Yield(x) => {
                self.variant(13);
                self.option(x.value.as_deref(), Normal::expr);
            }
            Expr::YieldFrom(x) => {
                self.variant(14);
                self.expr(&x.value);
            }
            Expr::Compare(x) => {
                self.variant(15);
                self.expr(&x.left);
                self.len(x.ops.len());
                for op in x.ops.iter() {
                    self.variant(cmp_op(*op));
                }
                self.exprs(&x.comparators);
            }
            Expr::Call(x) => {
                self.variant(16);
                self.expr(&x.func);
                self.arguments(&x.arguments);
            }
            Expr::FString(x) => {
                self.variant(18);
                self.fstring(&x.value);
            }
            Expr::TString(x) => {
                self.variant(20);
                self.tstring(&x.value);
            }
            Expr::StringLiteral(x) => {
                self.variant(21);
                self.str(x.value.to_str());
            }
            Expr::BytesLiteral(x) => {
                self.variant(22);
                self.len(x.value.iter().map(|b| b.value.len()).sum());
                for b in x.value.iter() {
                    self.0.write(&b.value);
                }
            }
            Expr::NumberLiteral(x) => {
                self.variant(23);
                match &x.value {
                    ast::Number::Int(i) => {
                        self.variant(0);
                        i.hash(&mut self.0);
                    }
                    ast::Number::Float(f) => {
                        self.variant(1);
                        self.0.write_u64(f.to_bits());
                    }
                    ast::Number::Complex { real, imag } => {
                        self.variant(2);
                        self.0.write_u64(real.to_bits());
                        self.0.write_u64(imag.to_bits());
                    }
                }
            }
            Expr::BooleanLiteral(x) => {
                self.variant(24);
                self.bool(x.value);
            }
            Expr::NoneLiteral(_) => self.variant(25),
            Expr::EllipsisLiteral(_) => self.variant(26),
            Expr::Attribute(x) => {
                self.variant(27);
                self.expr(&x.value);
                self.str(x.attr.as_str());
            }
            Expr::Subscript(x) => {
                self.variant(28);
                self.expr(&x.value);
                self.expr(&x.slice);
            }
            Expr::Starred(x) => {
                self.variant(29);
                self.expr(&x.value);
            }
            Expr::Name(x) => {
                self.variant(30);
                self.str(x.id.as_str());
            }
            Expr::List(x) => {
                self.variant(31);
                self.exprs(&x.elts);
            }
            Expr::Tuple(x) => {
                self.variant(32);
                self.exprs(&x.elts);
            }
            Expr::Slice(x) => {
                self.variant(33);
                self.option(x.lower.as_deref(), Normal::expr);
                self.option(x.upper.as_deref(), Normal::expr);
                self.option(x.step.as_deref(), Normal::expr);
            }
            Expr::IpyEscapeCommand(x) => {
                self.variant(34);
                x.kind.hash(&mut self.0);
                self.str(&x.value);
            }
        }
    }

    /// `ComparableStmt`.
    fn stmt(&mut self, s: &Stmt) {
        match s {
            Stmt::FunctionDef(x) => {
                self.variant(0);
                self.bool(x.is_async);
                self.len(x.decorator_list.len());
                for d in &x.decorator_list {
                    self.expr(&d.expression);
                }
                self.str(x.name.as_str());
                self.option(x.type_params.as_deref(), Normal::type_params);
                self.parameters(&x.parameters);
                self.option(x.returns.as_deref(), Normal::expr);
                self.stmts(&x.body);
            }
            Stmt::ClassDef(x) => {
                self.variant(1);
                self.len(x.decorator_list.len());
                for d in &x.decorator_list {
                    self.expr(&d.expression);
                }
                self.str(x.name.as_str());
                self.option(x.type_params.as_deref(), Normal::type_params);
                match x.arguments.as_deref() {
                    Some(a) => self.arguments(a),
                    None => {
                        self.len(0);
                        self.len(0);
                    }
                }
                self.stmts(&x.body);
            }
            Stmt::Return(x) => {
                self.variant(2);
                self.option(x.value.as_deref(), Normal::expr);
            }
            Stmt::Delete(x) => {
                self.variant(3);
                self.exprs(&x.targets);
            }
            Stmt::Assign(x) => {
                self.variant(4);
                self.exprs(&x.targets);
                self.expr(&x.value);
            }
            Stmt::AugAssign(x) => {
                self.variant(5);
                self.expr(&x.target);
                self.variant(operator(x.op));
                self.expr(&x.value);
            }
            Stmt::AnnAssign(x) => {
                self.variant(6);
                self.expr(&x.target);
                self.expr(&x.annotation);
                self.option(x.value.as_deref(), Normal::expr);
                self.bool(x.simple);
            }
            Stmt::For(x) => {
                self.variant(7);
                self.bool(x.is_async);
                self.expr(&x.target);
                self.expr(&x.iter);
                self.stmts(&x.body);
                self.stmts(&x.orelse);
            }
            Stmt::While(x) => {
                self.variant(8);
                self.expr(&x.test);
                self.stmts(&x.body);
                self.stmts(&x.orelse);
            }
            Stmt::If(x) => {
                self.variant(9);
                self.expr(&x.test);
                self.stmts(&x.body);
                self.len(x.elif_else_clauses.len());
                for c in &x.elif_else_clauses {
                    self.option(c.test.as_ref(), Normal::expr);
                    self.stmts(&c.body);
                }
            }
            Stmt::With(x) => {
                self.variant(10);
                self.bool(x.is_async);
                self.len(x.items.len());
                for i in &x.items {
                    self.expr(&i.context_expr);
                    self.option(i.optional_vars.as_deref(), Normal::expr);
                }
                self.stmts(&x.body);
            }
            Stmt::Match(x) => {
                self.variant(11);
                self.expr(&x.subject);
                self.len(x.cases.len());
                for c in &x.cases {
                    self.pattern(&c.pattern);
                    self.option(c.guard.as_deref(), Normal::expr);
                    self.stmts(&c.body);
                }
            }
            Stmt::Raise(x) => {
                self.variant(12);
                self.option(x.exc.as_deref(), Normal::expr);
                self.option(x.cause.as_deref(), Normal::expr);
            }
            Stmt::Try(x) => {
                self.variant(13);
                self.stmts(&x.body);
                self.len(x.handlers.len());
                // A one-variant enum: no variant number.
                for ExceptHandler::ExceptHandler(h) in &x.handlers {
                    self.option(h.type_.as_deref(), Normal::expr);
                    self.option(h.name.as_ref(), |me, n| me.str(n.as_str()));
                    self.stmts(&h.body);
                }
                self.stmts(&x.orelse);
                self.stmts(&x.finalbody);
                self.bool(x.is_star);
            }
            Stmt::TypeAlias(x) => {
                self.variant(14);
                self.expr(&x.name);
                self.option(x.type_params.as_deref(), Normal::type_params);
                self.expr(&x.value);
            }
            Stmt::Assert(x) => {
                self.variant(15);
                self.expr(&x.test);
                self.option(x.msg.as_deref(), Normal::expr);
            }
            Stmt::Import(x) => {
                self.variant(16);
                self.aliases(&x.names);
                self.bool(x.is_lazy);
            }
            Stmt::ImportFrom(x) => {
                self.variant(17);
                self.option(x.module.as_ref(), |me, m| me.str(m.as_str()));
                self.aliases(&x.names);
                self.0.write_u32(x.level);
                self.bool(x.is_lazy);
            }
            Stmt::Global(x) => {
                self.variant(18);
                self.names(&x.names);
            }
            Stmt::Nonlocal(x) => {
                self.variant(19);
                self.names(&x.names);
            }
            Stmt::IpyEscapeCommand(x) => {
                self.variant(20);
                x.kind.hash(&mut self.0);
                self.str(&x.value);
            }
            Stmt::Expr(x) => {
                self.variant(21);
                self.expr(&x.value);
            }
            Stmt::Pass(_) => self.variant(22),
            Stmt::Break(_) => self.variant(23),
            Stmt::Continue(_) => self.variant(24),
        }
    }

    fn aliases(&mut self, list: &[ast::Alias]) {
        self.len(list.len());
        for a in list {
            self.str(a.name.as_str());
            self.option(a.asname.as_ref(), |me, n| me.str(n.as_str()));
        }
    }

    /// `ComparablePattern`.
    fn pattern(&mut self, p: &Pattern) {
        match p {
            Pattern::MatchValue(x) => {
                self.variant(0);
                self.expr(&x.value);
            }
            Pattern::MatchSingleton(x) => {
                self.variant(1);
                self.variant(match x.value {
                    ast::Singleton::None => 0,
                    ast::Singleton::True => 1,
                    ast::Singleton::False => 2,
                });
            }
            Pattern::MatchSequence(x) => {
                self.variant(2);
                self.patterns(&x.patterns);
            }
            Pattern::MatchMapping(x) => {
                self.variant(3);
                self.exprs(&x.keys);
                self.patterns(&x.patterns);
                self.option(x.rest.as_ref(), |me, n| me.str(n.as_str()));
            }
            Pattern::MatchClass(x) => {
                self.variant(4);
                self.expr(&x.cls);
                self.patterns(&x.arguments.patterns);
                self.len(x.arguments.keywords.len());
                for k in &x.arguments.keywords {
                    self.str(k.attr.as_str());
                    self.pattern(&k.pattern);
                }
            }
            Pattern::MatchStar(x) => {
                self.variant(5);
                self.option(x.name.as_ref(), |me, n| me.str(n.as_str()));
            }
            Pattern::MatchAs(x) => {
                self.variant(6);
                self.option(x.pattern.as_deref(), Normal::pattern);
                self.option(x.name.as_ref(), |me, n| me.str(n.as_str()));
            }
            Pattern::MatchOr(x) => {
                self.variant(7);
                self.patterns(&x.patterns);
            }
        }
    }
    fn patterns(&mut self, list: &[Pattern]) {
        self.len(list.len());
        for p in list {
            self.pattern(p);
        }
    }
}

/// `ComparableOperator`'s variant.
fn operator(op: ast::Operator) -> isize {
    use ast::Operator::*;
    match op {
        Add => 0,
        Sub => 1,
        Mult => 2,
        MatMult => 3,
        Div => 4,
        Mod => 5,
        Pow => 6,
        LShift => 7,
        RShift => 8,
        BitOr => 9,
        BitXor => 10,
        BitAnd => 11,
        FloorDiv => 12,
    }
}

/// `ComparableCmpOp`'s variant.
fn cmp_op(op: ast::CmpOp) -> isize {
    use ast::CmpOp::*;
    match op {
        Eq => 0,
        NotEq => 1,
        Lt => 2,
        LtE => 3,
        Gt => 4,
        GtE => 5,
        Is => 6,
        IsNot => 7,
        In => 8,
        NotIn => 9,
    }
}
