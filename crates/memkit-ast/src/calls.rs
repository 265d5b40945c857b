//! Resolving the calls found in a file: to its own definitions, to the methods of the enclosing
//! class (and its bases in the file), through the import map, or not at all; noise is dropped.

use crate::{Call, Function, Resolution, noise};

/// A definition as resolution needs it (parallel to the snapshot's functions).
pub(crate) struct Def {
    pub qualname: String,
    /// Index of the enclosing definition.
    pub parent: Option<usize>,
    pub is_class: bool,
    /// Base classes written as names or dotted names.
    pub bases: Vec<String>,
}

pub(crate) enum Callee {
    /// `f`, `a.b.c`, `self.m`.
    Dotted(String),
    /// `<expr>.m`: the receiver is not a name (a call, a subscript, a literal).
    OnExpr(String),
}

pub(crate) struct RawCall {
    /// Index of the innermost enclosing definition; None at module level.
    pub scope: Option<usize>,
    pub callee: Callee,
    pub line: u32,
}

pub(crate) fn resolve(
    defs: &[Def],
    functions: &[Function],
    imports: &[(String, String)],
    raw: Vec<RawCall>,
) -> Vec<Call> {
    // The last definition of a name wins, as in Python.
    let mut by_name = std::collections::HashMap::new();
    for (i, d) in defs.iter().enumerate() {
        by_name.insert(d.qualname.as_str(), i);
    }
    let r = Resolver {
        defs,
        by_name,
        imports,
    };
    raw.into_iter()
        .filter_map(|c| {
            let caller = c
                .scope
                .map_or_else(|| "<module>".to_string(), |i| functions[i].qualname.clone());
            let (callee, resolution, target) = r.one(c.scope, &c.callee)?;
            Some(Call {
                caller,
                callee,
                resolution,
                target,
                target_file: None,
                confidence: confidence(resolution),
                line: c.line,
            })
        })
        .collect()
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
    by_name: std::collections::HashMap<&'a str, usize>,
    imports: &'a [(String, String)],
}

impl Resolver<'_> {
    fn import(&self, local: &str) -> Option<&str> {
        self.imports
            .iter()
            .rev()
            .find(|(l, _)| l == local)
            .map(|(_, q)| q.as_str())
    }

    fn has(&self, q: &str) -> bool {
        self.by_name.contains_key(q)
    }

    /// None: noise, dropped.
    fn one(&self, scope: Option<usize>, callee: &Callee) -> Option<(String, Resolution, String)> {
        let dotted = match callee {
            Callee::OnExpr(attr) => {
                if noise::is_container_method(attr) {
                    return None;
                }
                let c = format!("?.{attr}");
                return Some((c.clone(), Resolution::Unresolved, c));
            }
            Callee::Dotted(d) => d,
        };
        let parts: Vec<&str> = dotted.split('.').collect();
        let found = |r, t: String| Some((dotted.clone(), r, t));
        if let [name] = parts[..] {
            if let Some(q) = self.lexical(scope, name) {
                return found(Resolution::Direct, q);
            }
            if let Some(q) = self.import(name) {
                return found(Resolution::Import, q.to_string());
            }
            if noise::is_builtin(name) {
                return None;
            }
            return found(Resolution::Unresolved, dotted.clone());
        }
        if let ["self" | "cls", method] = parts[..] {
            if let Some(class) = self.enclosing_class(scope) {
                let mut seen = Vec::new();
                if let Some(q) = self.method_of(class, method, &mut seen) {
                    return found(Resolution::SelfMethod, q);
                }
            }
            return found(Resolution::Unresolved, dotted.clone());
        }
        if self.has(dotted) && parts[0] != "self" && parts[0] != "cls" {
            return found(Resolution::Direct, dotted.clone());
        }
        if noise::is_logging(&parts) {
            return None;
        }
        if !matches!(parts[0], "self" | "cls")
            && self.lexical(scope, parts[0]).is_none()
            && let Some(q) = self.import(parts[0])
        {
            return found(Resolution::Import, format!("{q}.{}", parts[1..].join(".")));
        }
        if noise::is_container_method(parts[parts.len() - 1]) {
            return None;
        }
        found(Resolution::Unresolved, dotted.clone())
    }

    /// A bare name seen from `scope`: the enclosing functions' own definitions, the class body
    /// when the call is in it, then the module's.
    fn lexical(&self, scope: Option<usize>, name: &str) -> Option<String> {
        let mut at = scope;
        let mut innermost = true;
        while let Some(i) = at {
            let d = &self.defs[i];
            // A class body's names are not visible from the functions inside it.
            if !d.is_class || innermost {
                let q = format!("{}.{name}", d.qualname);
                if self.has(&q) {
                    return Some(q);
                }
            }
            innermost = false;
            at = d.parent;
        }
        self.has(name).then(|| name.to_string())
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
    fn method_of(&self, class: usize, method: &str, seen: &mut Vec<usize>) -> Option<String> {
        if seen.contains(&class) {
            return None;
        }
        seen.push(class);
        let c = &self.defs[class];
        let q = format!("{}.{method}", c.qualname);
        if self.has(&q) {
            return Some(q);
        }
        for base in &c.bases {
            let b = self
                .lexical(c.parent, base)
                .and_then(|q| self.by_name.get(q.as_str()).copied())
                .filter(|&b| self.defs[b].is_class);
            if let Some(b) = b
                && let Some(q) = self.method_of(b, method, seen)
            {
                return Some(q);
            }
        }
        None
    }
}
