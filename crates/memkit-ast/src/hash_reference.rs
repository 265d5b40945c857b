//! The body hash as first defined: ruff's `Comparable*` view of a definition, built and hashed by
//! its derived `Hash`. The tests hold `hash` (which writes the same stream from the AST without
//! building that view) to it.

use std::hash::{Hash, Hasher};

use ruff_python_ast::comparable::{
    ComparableArguments, ComparableDecorator, ComparableExpr, ComparableParameters, ComparableStmt,
    ComparableTypeParams,
};
use ruff_python_ast::{self as ast, ExceptHandler, Stmt};
use sha2::{Digest, Sha256};

/// `std::hash::Hasher` over SHA-256 with every integer written at a fixed width and byte order
/// (the defaults write native-endian `usize`, which would differ across machines).
struct Stable(Sha256);

impl Hasher for Stable {
    fn finish(&self) -> u64 {
        unreachable!("the digest is read with Stable::hex")
    }
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
    fn write_u8(&mut self, i: u8) {
        self.0.update([i]);
    }
    fn write_u16(&mut self, i: u16) {
        self.0.update(i.to_le_bytes());
    }
    fn write_u32(&mut self, i: u32) {
        self.0.update(i.to_le_bytes());
    }
    fn write_u64(&mut self, i: u64) {
        self.0.update(i.to_le_bytes());
    }
    fn write_u128(&mut self, i: u128) {
        self.0.update(i.to_le_bytes());
    }
    fn write_usize(&mut self, i: usize) {
        self.0.update((i as u64).to_le_bytes());
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
    fn new() -> Stable {
        Stable(Sha256::new())
    }
    fn tag(&mut self, t: &str) {
        self.write(t.as_bytes());
        self.write_u8(0xff);
    }
    fn hex(self) -> String {
        hex::encode(&self.0.finalize()[..8])
    }
}

pub(crate) fn function(f: &ast::StmtFunctionDef) -> String {
    let mut h = Stable::new();
    h.tag(if f.is_async { "async def" } else { "def" });
    decorators(&mut h, &f.decorator_list);
    f.type_params
        .as_deref()
        .map(ComparableTypeParams::from)
        .hash(&mut h);
    ComparableParameters::from(f.parameters.as_ref()).hash(&mut h);
    f.returns.as_deref().map(ComparableExpr::from).hash(&mut h);
    body(&mut h, skip_docstring(&f.body));
    h.hex()
}

pub(crate) fn class(c: &ast::StmtClassDef) -> String {
    let mut h = Stable::new();
    h.tag("class");
    decorators(&mut h, &c.decorator_list);
    c.type_params
        .as_deref()
        .map(ComparableTypeParams::from)
        .hash(&mut h);
    c.arguments
        .as_deref()
        .map(ComparableArguments::from)
        .hash(&mut h);
    body(&mut h, skip_docstring(&c.body));
    h.hex()
}

fn decorators(h: &mut Stable, list: &[ast::Decorator]) {
    h.write_usize(list.len());
    for d in list {
        ComparableDecorator::from(d).hash(h);
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
fn body(h: &mut Stable, stmts: &[Stmt]) {
    h.write_usize(stmts.len());
    for s in stmts {
        match s {
            Stmt::FunctionDef(f) => {
                h.tag("nested def");
                h.tag(f.name.as_str());
            }
            Stmt::ClassDef(c) => {
                h.tag("nested class");
                h.tag(c.name.as_str());
            }
            Stmt::If(i) => {
                h.tag("if");
                ComparableExpr::from(i.test.as_ref()).hash(h);
                body(h, &i.body);
                for c in &i.elif_else_clauses {
                    h.tag("elif");
                    c.test.as_ref().map(ComparableExpr::from).hash(h);
                    body(h, &c.body);
                }
            }
            Stmt::For(f) => {
                h.tag(if f.is_async { "async for" } else { "for" });
                ComparableExpr::from(f.target.as_ref()).hash(h);
                ComparableExpr::from(f.iter.as_ref()).hash(h);
                body(h, &f.body);
                body(h, &f.orelse);
            }
            Stmt::While(w) => {
                h.tag("while");
                ComparableExpr::from(w.test.as_ref()).hash(h);
                body(h, &w.body);
                body(h, &w.orelse);
            }
            Stmt::With(w) => {
                h.tag(if w.is_async { "async with" } else { "with" });
                h.write_usize(w.items.len());
                for i in &w.items {
                    ComparableExpr::from(&i.context_expr).hash(h);
                    i.optional_vars.as_deref().map(ComparableExpr::from).hash(h);
                }
                body(h, &w.body);
            }
            Stmt::Try(t) => {
                h.tag(if t.is_star { "try*" } else { "try" });
                body(h, &t.body);
                h.write_usize(t.handlers.len());
                for ExceptHandler::ExceptHandler(x) in &t.handlers {
                    x.type_.as_deref().map(ComparableExpr::from).hash(h);
                    x.name.as_ref().map(|n| n.as_str()).hash(h);
                    body(h, &x.body);
                }
                body(h, &t.orelse);
                body(h, &t.finalbody);
            }
            other => {
                h.tag("stmt");
                ComparableStmt::from(other).hash(h);
            }
        }
    }
}
