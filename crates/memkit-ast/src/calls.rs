//! Resolving the calls found in a file: to its own definitions, to the methods of the enclosing
//! class (and its bases in the file), through the import map, or not at all; noise is dropped.

use std::borrow::Cow;
use std::ops::Range;

use ruff_python_ast::Expr;
use ruff_text_size::TextSize;
use rustc_hash::FxHashMap;

use crate::{Call, Function, Resolution, noise};

/// A definition as resolution needs it (parallel to the snapshot's functions).
pub(crate) struct Def {
    /// Index of the enclosing definition.
    pub parent: Option<usize>,
    pub is_class: bool,
    /// Base classes written as names or dotted names.
    pub bases: Vec<String>,
}

/// A call whose callee is a name or an attribute (`f`, `a.b.c`, `self.m`, `<expr>.m`).
pub(crate) struct RawCall {
    /// Index of the innermost enclosing definition; None at module level.
    pub scope: Option<usize>,
    /// Where the callee is in the file's string of callees: dotted, or only the attribute when
    /// `on_expr` (`<expr>.m`: the receiver is not a name but a call, a subscript, a literal).
    pub callee: Range<usize>,
    pub on_expr: bool,
    pub at: TextSize,
}

/// `a.b.c` for a chain of attributes on a name; None for anything else.
pub(crate) fn dotted(e: &Expr) -> Option<String> {
    let mut s = String::new();
    push_dotted(&mut s, e).then_some(s)
}

/// Appends `a.b.c` to `out`; false (and `out` in any state) when `e` is not such a chain.
pub(crate) fn push_dotted(out: &mut String, e: &Expr) -> bool {
    match e {
        Expr::Name(n) => {
            out.push_str(n.id.as_str());
            true
        }
        Expr::Attribute(a) => {
            if !push_dotted(out, &a.value) {
                return false;
            }
            out.push('.');
            out.push_str(a.attr.as_str());
            true
        }
        _ => false,
    }
}

/// What a call resolved to, before any string is made for it.
enum Target<'a> {
    /// The definition at this index of the file.
    Def(usize),
    /// The callee as written.
    Callee,
    /// An imported name, and what follows it in the callee.
    Import(&'a str, &'a str),
}

pub(crate) fn resolve(
    defs: &[Def],
    functions: &[Function],
    imports: &[(String, String)],
    raw: &[RawCall],
    callees: &str,
    line: impl Fn(TextSize) -> u32,
) -> Vec<Call> {
    // The last definition of a name wins, as does the last binding of an import, as in Python.
    let mut by_name = FxHashMap::default();
    by_name.reserve(functions.len());
    for (i, f) in functions.iter().enumerate() {
        by_name.insert(f.qualname.as_str(), i);
    }
    let mut import_map = FxHashMap::default();
    import_map.reserve(imports.len());
    for (local, q) in imports {
        import_map.insert(local.as_str(), q.as_str());
    }
    let mut r = Resolver {
        defs,
        functions,
        by_name,
        imports: import_map,
        key: String::new(),
    };
    let mut out = Vec::with_capacity(raw.len());
    for c in raw {
        let written = &callees[c.callee.clone()];
        let (callee, resolved) = if c.on_expr {
            if noise::is_container_method(written) {
                continue;
            }
            let callee = Cow::Owned(format!("?.{written}"));
            (callee, Some((Resolution::Unresolved, Target::Callee)))
        } else {
            (Cow::Borrowed(written), r.one(c.scope, written))
        };
        let Some((resolution, target)) = resolved else {
            continue;
        };
        let target = match target {
            Target::Def(i) => functions[i].qualname.clone(),
            Target::Callee => callee.to_string(),
            Target::Import(q, "") => q.to_string(),
            Target::Import(q, rest) => {
                let mut t = String::with_capacity(q.len() + 1 + rest.len());
                t.push_str(q);
                t.push('.');
                t.push_str(rest);
                t
            }
        };
        out.push(Call {
            caller: c
                .scope
                .map_or_else(|| "<module>".to_string(), |i| functions[i].qualname.clone()),
            callee: callee.into_owned(),
            resolution,
            target,
            target_file: None,
            confidence: confidence(resolution),
            line: line(c.at),
        });
    }
    out
}

pub(crate) fn confidence(r: Resolution) -> f32 {
    match r {
        Resolution::Direct => 1.0,
        Resolution::SelfMethod => 0.9,
        Resolution::Import => 0.8,
        Resolution::Unresolved => 0.3,
    }
}

struct Resolver<'a> {
    defs: &'a [Def],
    functions: &'a [Function],
    by_name: FxHashMap<&'a str, usize>,
    imports: FxHashMap<&'a str, &'a str>,
    /// Scratch space for the qualified names looked up.
    key: String,
}

impl<'a> Resolver<'a> {
    /// The definition `prefix.name`, if the file has one.
    fn member(&mut self, prefix: usize, name: &str) -> Option<usize> {
        self.key.clear();
        self.key.push_str(&self.functions[prefix].qualname);
        self.key.push('.');
        self.key.push_str(name);
        self.by_name.get(self.key.as_str()).copied()
    }

    /// None: noise, dropped.
    fn one<'c>(&mut self, scope: Option<usize>, dotted: &'c str) -> Option<(Resolution, Target<'c>)>
    where
        'a: 'c,
    {
        let Some((first, rest)) = dotted.split_once('.') else {
            let name = dotted;
            if let Some(i) = self.lexical(scope, name) {
                return Some((Resolution::Direct, Target::Def(i)));
            }
            if let Some(&q) = self.imports.get(name) {
                return Some((Resolution::Import, Target::Import(q, "")));
            }
            if noise::is_builtin(name) {
                return None;
            }
            return Some((Resolution::Unresolved, Target::Callee));
        };
        let on_self = matches!(first, "self" | "cls");
        if on_self && !rest.contains('.') {
            if let Some(class) = self.enclosing_class(scope) {
                let mut seen = Vec::new();
                if let Some(i) = self.method_of(class, rest, &mut seen) {
                    return Some((Resolution::SelfMethod, Target::Def(i)));
                }
            }
            return Some((Resolution::Unresolved, Target::Callee));
        }
        if !on_self && self.by_name.contains_key(dotted) {
            return Some((Resolution::Direct, Target::Callee));
        }
        let (head, method) = dotted.rsplit_once('.').unwrap_or(("", dotted));
        let recv = head.rsplit_once('.').map_or(head, |(_, r)| r);
        if noise::is_logging(recv, method) {
            return None;
        }
        if !on_self
            && self.lexical(scope, first).is_none()
            && let Some(&q) = self.imports.get(first)
        {
            return Some((Resolution::Import, Target::Import(q, rest)));
        }
        if noise::is_container_method(method) {
            return None;
        }
        Some((Resolution::Unresolved, Target::Callee))
    }

    /// A bare name seen from `scope`: the enclosing functions' own definitions, the class body
    /// when the call is in it, then the module's.
    fn lexical(&mut self, scope: Option<usize>, name: &str) -> Option<usize> {
        let mut at = scope;
        let mut innermost = true;
        while let Some(i) = at {
            let d = &self.defs[i];
            // A class body's names are not visible from the functions inside it.
            if (!d.is_class || innermost)
                && let Some(found) = self.member(i, name)
            {
                return Some(found);
            }
            innermost = false;
            at = self.defs[i].parent;
        }
        self.by_name.get(name).copied()
    }

    /// The class whose `self`/`cls` a call in `scope` sees: that of the method it is in (or
    /// of the method a nested function is in).
    fn enclosing_class(&self, scope: Option<usize>) -> Option<usize> {
        let mut at = scope?;
        loop {
            let parent = self.defs[at].parent?;
            if self.defs[parent].is_class && !self.defs[at].is_class {
                return Some(parent);
            }
            at = parent;
        }
    }

    /// `method` on `class` or, depth first as a simple MRO, its bases defined in the file.
    fn method_of(&mut self, class: usize, method: &str, seen: &mut Vec<usize>) -> Option<usize> {
        if seen.contains(&class) {
            return None;
        }
        seen.push(class);
        if let Some(i) = self.member(class, method) {
            return Some(i);
        }
        let defs = self.defs;
        for base in &defs[class].bases {
            let b = self
                .lexical(defs[class].parent, base)
                .filter(|&b| defs[b].is_class);
            if let Some(b) = b
                && let Some(i) = self.method_of(b, method, seen)
            {
                return Some(i);
            }
        }
        None
    }
}
