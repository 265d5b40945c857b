//! mem-ast's library: what a Python file defines and calls, and how two versions of it differ.
//!
//! [`snapshot`] parses one file (ruff's parser, no Python at run time) into a [`Snapshot`]: its
//! functions, methods and classes with signatures and a formatting-proof body hash, its import
//! map, and the calls of each definition resolved where the file alone (or, with
//! [`project::link`], the files parsed together) can say. [`diff`] compares two snapshots of a
//! file by qualified name; [`graph`] is a diff's call graph, which [`mermaid`] and [`svg`] draw. A pure library: no SQL, no
//! printing, no file system (the caller reads the bytes).

mod calls;
pub mod diff;
pub mod graph;
mod hash;
#[cfg(test)]
mod hash_reference;
pub mod mermaid;
mod noise;
mod parse;
pub mod project;
pub mod svg;

use serde::{Deserialize, Serialize};

pub use diff::{Change, FunctionDiff, diff};
pub use parse::{MAX_DEPTH, snapshot};

/// What kind of definition a [`Function`] is. Methods are functions defined directly in a
/// class body (static and class methods included).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Function,
    Method,
    AsyncFunction,
    AsyncMethod,
    Class,
}

impl Kind {
    pub fn parse(s: &str) -> Option<Kind> {
        [
            Kind::Function,
            Kind::Method,
            Kind::AsyncFunction,
            Kind::AsyncMethod,
            Kind::Class,
        ]
        .into_iter()
        .find(|k| k.as_str() == s)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Function => "function",
            Kind::Method => "method",
            Kind::AsyncFunction => "async_function",
            Kind::AsyncMethod => "async_method",
            Kind::Class => "class",
        }
    }
}

/// One `def`, `async def` or `class` of a file, nested ones included.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Function {
    /// Dotted path from the module: `AuthService.authenticate`, `outer.inner`.
    pub qualname: String,
    pub name: String,
    pub kind: Kind,
    /// The class this is defined directly in, for methods.
    pub parent_class: Option<String>,
    /// `(a: int, *args, key: str = "x", **kw) -> bool` without `self`/`cls`; for a class, its
    /// bases `(Base, metaclass=M)` (empty when it has none).
    pub signature: String,
    /// Decorator expressions as written, without the `@`.
    pub decorators: Vec<String>,
    /// First non-empty line of the docstring.
    pub docstring: Option<String>,
    /// 1-based lines of the `def`/`class` keyword (as Python's `ast` counts, decorators not
    /// included) and of the last line of the body.
    pub line_start: u32,
    pub line_end: u32,
    /// 16 hex digits: SHA-256 of the definition's range-free normal form (see `hash`).
    pub body_hash: String,
}

/// How a call was resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Resolution {
    /// To a definition of the same file, by name.
    Direct,
    /// `self.x()` / `cls.x()` to a method of the enclosing class or one of its bases in the file.
    SelfMethod,
    /// Through the import map (`target` is the imported qualified name).
    Import,
    Unresolved,
}

impl Resolution {
    pub fn as_str(self) -> &'static str {
        match self {
            Resolution::Direct => "direct",
            Resolution::SelfMethod => "self_method",
            Resolution::Import => "import",
            Resolution::Unresolved => "unresolved",
        }
    }
}

/// One call inside a definition (or at module level, caller `<module>`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Call {
    pub caller: String,
    /// The callee as written, dotted (`self.save`, `models.User`, `?.fetch` when the receiver is
    /// an expression).
    pub callee: String,
    pub resolution: Resolution,
    /// Qualified name of the target: a definition of the file (direct, self_method), the
    /// imported name (import: `pkg.models.User`, `__rel1__.models.User` until
    /// [`project::link`] makes it absolute), or the callee (unresolved).
    pub target: String,
    /// The file defining the target, when [`project::link`] found it among the files parsed.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub target_file: Option<String>,
    /// 1.0 direct, 0.9 self_method, 0.8 import (0.9 once linked to a file), 0.3 unresolved.
    pub confidence: f32,
    pub line: u32,
}

/// Everything mem-ast knows about one version of one file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    pub path: String,
    /// Definitions in source order; a name defined twice appears twice (the diff keeps the last).
    pub functions: Vec<Function>,
    /// Local name → qualified name, in the order bound (`import a.b` binds `a`; `from .m import
    /// x` binds `x` → `__rel1__.m.x`; `from m import *` binds `*` → `m`).
    pub imports: Vec<(String, String)>,
    pub calls: Vec<Call>,
    /// Set when the file does not parse (then `functions` and `calls` are empty).
    pub parse_error: Option<String>,
    pub lines: u32,
    pub bytes: u64,
}

impl Snapshot {
    /// The local name's qualified name, the last binding winning as in Python.
    pub fn import_of(&self, local: &str) -> Option<&str> {
        self.imports
            .iter()
            .rev()
            .find(|(l, _)| l == local)
            .map(|(_, q)| q.as_str())
    }
}
