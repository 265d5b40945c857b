//! The body hash as first defined: ruff's `Comparable*` view of a definition, built and hashed by
//! its derived `Hash`. The tests hold `hash` (which writes the same stream from the AST without
//! building that view) to it.

use std::hash::{Hash, Hasher};

use ruff_python_ast::comparable::{
    ComparableArguments, ComparableDecorator, ComparableExpr, ComparableParameters, ComparableStmt,
    ComparableTypeParams,
};
use ruff_python_ast::{self as ast, ExceptHandler, Stmt};

use crate::hash::Stable;

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

#[cfg(test)]
mod tests {
    use ruff_python_ast::Stmt;
    use ruff_python_ast::visitor::{self, Visitor};

    use crate::hash;

    /// Every definition of `src`, nested ones included, hashed both ways: the pairs that differ.
    fn differences(src: &str) -> Vec<String> {
        struct Defs<'a>(Vec<&'a Stmt>);
        impl<'a> Visitor<'a> for Defs<'a> {
            fn visit_stmt(&mut self, s: &'a Stmt) {
                if matches!(s, Stmt::FunctionDef(_) | Stmt::ClassDef(_)) {
                    self.0.push(s);
                }
                visitor::walk_stmt(self, s);
            }
        }
        let parsed = ruff_python_parser::parse_module(src).expect("parses");
        let mut defs = Defs(Vec::new());
        defs.visit_body(parsed.suite());
        let mut out = Vec::new();
        for s in defs.0 {
            let (name, new, old) = match s {
                Stmt::FunctionDef(f) => (&f.name, hash::function(f), super::function(f)),
                Stmt::ClassDef(c) => (&c.name, hash::class(c), super::class(c)),
                _ => unreachable!(),
            };
            if new != old {
                out.push(format!("{name}: {new} != {old}"));
            }
        }
        out
    }

    /// Every kind of statement, expression, pattern, literal and parameter ruff has for Python.
    const EVERY_NODE: &str = r#"
import a.b as c, d
from .. import e as f, g
from ...h.i import *
from j import (k)

@dec(1, k=2)
@other.attr
def f1[T: int = str, *Ts = tuple, **P = [int]](a, b: int = 1, /, c=2, *args: "x", d, e: float = 3.5, **kw) -> dict[str, int]:
    """Doc."""
    global G1, G2
    x = y = 1 + 2 - 3 * 4 @ m / 5 % 6 ** 7 << 8 >> 9 | 10 ^ 11 & 12 // 13
    x += 1; x -= 1; x *= 2; x @= m; x /= 2; x %= 3; x **= 2; x <<= 1; x >>= 1; x |= 1; x ^= 1; x &= 1; x //= 2
    z: list[int] = []
    w: int
    (p): int = 3
    del x, z[0], w.attr
    assert x, "msg"
    assert y
    if a and b or not c: pass
    elif ~a: pass
    elif -a + +b: pass
    else: return
    for i, j in enumerate(range(10)): continue
    else: break
    async def inner():
        async for q in aiter(): await q
        async with ctx() as (u, v), other: yield
        yield from gen()
        return (yield 1)
    while (n := 10) > 0: n -= 1
    else: pass
    with open("f") as fh, x: pass
    try:
        raise ValueError("x") from None
    except (TypeError, KeyError) as err: pass
    except ValueError: pass
    except: raise
    else: pass
    finally: pass
    try: pass
    except* OSError as eg: pass
    lam = lambda: 0
    lam2 = lambda a, /, b=1, *c, d, **e: a
    cmp = a < b <= c > d >= e == f != g is h is not i in j not in k
    ife = a if b else c
    dct = {1: 2, **other, "k": [1, 2], (3, 4): {5, 6}}
    comp = [x for x in y if x if not x]; sc = {x async for x in y}; dc = {k: v for k, v in d.items()}; gen = (x for x in y)
    s = "a" "b"; by = b"x" b"y"; by1 = b"\x00"; s2 = ""; s3 = "é\r\n"
    fs = f"a{b!r:>{width}}c" "d" f"{e=}" f"{x!s}{y!a}" f"{'nested' + f'{z}'}"
    fs2 = f"" f"{x:{y}.{z}}" ""
    fs3 = f"{x = !r:^20}" f"lit" f"{y}" "tail" f""
    fs4 = "head" f"{x}"
    ts = t"a{b}c{d!r:>10}" t"e"
    ts2 = t"{x}{y=}"
    ts3 = t""
    num = 1 + 1.5 + 2j + 0xFF + 10**100 + 1_000 + 0o7 + 0b1 + 123456789012345678901234567890 + 1e400
    consts = (True, False, None, ...)
    sl = a[1:2:3], a[:], a[::2], a[x, 1:]
    star = [*a, *b]; first, *rest = items
    call = f(*args, **kwargs, k=1)
    obj.method().chain[0].attr
    type Alias[T, *Us, **Q] = list[T]
    type Simple = int
    match command:
        case 1 | 2: pass
        case None: pass
        case True: pass
        case False: pass
        case [a, b, *rest]: pass
        case [*_]: pass
        case {"k": v, **kw}: pass
        case {1: _}: pass
        case Point(x=0, y=yy) if yy > 0: pass
        case Cls(1, 2): pass
        case [1, 2] as pair: pass
        case (_): pass
        case str() | bytes(): pass
        case -1: pass
        case 1+2j: pass
        case a.b.c: pass
        case _:
            def in_match(a=1): pass
            class InMatch(B): x = 1
    def nested():
        nonlocal x
    class NestedC(Base): pass
    if x:
        def in_if(): pass
    with y:
        class InWith: pass
    return x

class C1(Base, metaclass=M, **kw):
    "doc"
    attr: int = 0
    def m(self): return self.attr
    @property
    async def am(self, *, k): ...
class C2: pass
class C3[T](Generic[T]): pass
class C4(): pass
async def af(): pass
def nodoc(): "not first" if False else None
def only_doc():
    """Just a docstring."""
"#;

    #[test]
    fn the_stream_written_from_the_ast_is_ruffs_comparable_view_hashed() {
        assert_eq!(differences(EVERY_NODE), Vec::<String>::new());
    }

    /// With $MEMKIT_TEST_PYCORPUS (scripts/test sets it): every definition of the corpus.
    #[test]
    fn real_code_hashes_as_ruffs_comparable_view() {
        let Ok(root) = std::env::var("MEMKIT_TEST_PYCORPUS") else {
            return;
        };
        fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
            for e in std::fs::read_dir(dir).unwrap().flatten() {
                let p = e.path();
                if e.file_type().unwrap().is_dir() {
                    walk(&p, out);
                } else if p.extension().is_some_and(|x| x == "py") {
                    out.push(p);
                }
            }
        }
        let mut files = Vec::new();
        walk(&std::path::Path::new(&root).join("src"), &mut files);
        let mut bad = Vec::new();
        let mut checked = 0;
        for p in &files {
            let Ok(src) = std::fs::read_to_string(p) else {
                continue;
            };
            if ruff_python_parser::parse_module(&src).is_err() {
                continue;
            }
            checked += 1;
            bad.extend(
                differences(&src)
                    .into_iter()
                    .map(|d| format!("{}: {d}", p.display())),
            );
        }
        assert!(checked > 1000, "only {checked} files under {root}/src");
        assert_eq!(bad, Vec::<String>::new());
    }
}
