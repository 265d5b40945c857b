//! Snapshots of hand-written Python: definitions, imports, hashes, calls, diffs, diagrams.

use memkit_ast::{Change, Kind, Resolution, Snapshot, diff, mermaid, project, snapshot};

const AUTH: &str = r#"
"""Auth."""
import logging
import os.path
import numpy as np
from .models import User, Token as Tok
from ..db import session
from . import helpers
from pkg.sub import *

log = logging.getLogger(__name__)

def helper(x: int, /, y: list[int] = [1, 2], *args: str, key: bool = False, **kw) -> dict[str, int | None]:
    "Helps.\n\nMore."
    return {}

class Base:
    def save(self):
        pass

@dataclass(frozen=True)
class AuthService(Base, metaclass=Meta):
    """Authenticates users.

    Long text.
    """

    @staticmethod
    def make() -> "AuthService":
        return AuthService()

    @property
    def name(self):
        return "x"

    async def authenticate(self, user: User, *, retries=3) -> bool:
        def check(token):
            return helper(token)
        log.info("auth %s", user)
        self.save()
        self.name.upper()
        self.unknown()
        check(1)
        os.path.join("a", "b")
        np.array([1]).reshape(2)
        Tok.parse("t")
        session.commit()
        helpers.clean(user)
        print(len([]))
        [].append(1)
        external_thing()
        return True

    @classmethod
    def build(cls, n):
        return cls.make()

def main():
    AuthService.make()
    AuthService().build(1)

if __name__ == "__main__":
    main()
"#;

fn find<'a>(s: &'a Snapshot, q: &str) -> &'a memkit_ast::Function {
    s.functions
        .iter()
        .find(|f| f.qualname == q)
        .unwrap_or_else(|| panic!("no {q} in {:#?}", s.functions))
}

#[test]
fn definitions_with_signatures_decorators_docstrings_and_lines() {
    let s = snapshot("pkg/auth.py", AUTH.as_bytes());
    assert_eq!(s.parse_error, None);
    let names: Vec<_> = s.functions.iter().map(|f| f.qualname.as_str()).collect();
    assert_eq!(
        names,
        [
            "helper",
            "Base",
            "Base.save",
            "AuthService",
            "AuthService.make",
            "AuthService.name",
            "AuthService.authenticate",
            "AuthService.authenticate.check",
            "AuthService.build",
            "main"
        ]
    );
    let h = find(&s, "helper");
    assert_eq!(h.kind, Kind::Function);
    assert_eq!(
        h.signature,
        "(x: int, /, y: list[int] = [1, 2], *args: str, key: bool = False, **kw) -> dict[str, int | None]"
    );
    assert_eq!(h.docstring.as_deref(), Some("Helps."));
    let a = find(&s, "AuthService");
    assert_eq!(a.kind, Kind::Class);
    assert_eq!(a.signature, "(Base, metaclass=Meta)");
    assert_eq!(a.decorators, ["dataclass(frozen=True)"]);
    assert_eq!(a.docstring.as_deref(), Some("Authenticates users."));
    // The `class` line, not the decorator's, as Python's ast says.
    assert_eq!(a.line_start, 22);
    assert_eq!(a.line_end, 56);
    let m = find(&s, "AuthService.authenticate");
    assert_eq!(m.kind, Kind::AsyncMethod);
    assert_eq!(m.parent_class.as_deref(), Some("AuthService"));
    assert_eq!(m.signature, "(user: User, *, retries=3) -> bool");
    let c = find(&s, "AuthService.authenticate.check");
    assert_eq!(c.kind, Kind::Function);
    assert_eq!(c.parent_class, None);
    assert_eq!(
        find(&s, "AuthService.make").signature,
        "() -> \"AuthService\""
    );
    assert_eq!(find(&s, "AuthService.make").decorators, ["staticmethod"]);
    assert_eq!(find(&s, "AuthService.build").signature, "(n)");
    assert!(s.functions.iter().all(|f| f.body_hash.len() == 16));
}

#[test]
fn import_map_keeps_relative_levels() {
    let s = snapshot("pkg/auth.py", AUTH.as_bytes());
    let imports: Vec<(&str, &str)> = s
        .imports
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    assert_eq!(
        imports,
        [
            ("logging", "logging"),
            ("os", "os"),
            ("np", "numpy"),
            ("User", "__rel1__.models.User"),
            ("Tok", "__rel1__.models.Token"),
            ("session", "__rel2__.db.session"),
            ("helpers", "__rel1__.helpers"),
            ("*", "pkg.sub"),
        ]
    );
}

#[test]
fn calls_resolve_by_kind_and_noise_is_dropped() {
    let s = snapshot("pkg/auth.py", AUTH.as_bytes());
    let calls: Vec<(&str, &str, &str, &str)> = s
        .calls
        .iter()
        .map(|c| {
            (
                c.caller.as_str(),
                c.callee.as_str(),
                c.resolution.as_str(),
                c.target.as_str(),
            )
        })
        .collect();
    let auth = "AuthService.authenticate";
    let want = [
        // A decorator runs in the enclosing scope.
        ("<module>", "dataclass", "unresolved", "dataclass"),
        ("AuthService.make", "AuthService", "direct", "AuthService"),
        (
            "AuthService.authenticate.check",
            "helper",
            "direct",
            "helper",
        ),
        (auth, "self.save", "self_method", "Base.save"),
        (auth, "self.unknown", "unresolved", "self.unknown"),
        (auth, "check", "direct", "AuthService.authenticate.check"),
        (auth, "os.path.join", "import", "os.path.join"),
        // The outer call is found first: `np.array(..).reshape(2)` is the reshape call.
        (auth, "?.reshape", "unresolved", "?.reshape"),
        (auth, "np.array", "import", "numpy.array"),
        (auth, "Tok.parse", "import", "__rel1__.models.Token.parse"),
        (
            auth,
            "session.commit",
            "import",
            "__rel2__.db.session.commit",
        ),
        (auth, "helpers.clean", "import", "__rel1__.helpers.clean"),
        (auth, "external_thing", "unresolved", "external_thing"),
        (
            "AuthService.build",
            "cls.make",
            "self_method",
            "AuthService.make",
        ),
        ("main", "AuthService.make", "direct", "AuthService.make"),
        ("main", "?.build", "unresolved", "?.build"),
        ("main", "AuthService", "direct", "AuthService"),
        ("<module>", "main", "direct", "main"),
    ];
    // logging.getLogger, log.info, self.name.upper, print, len, [].append: noise.
    assert_eq!(calls, want, "{calls:#?}");
    let unresolved = s
        .calls
        .iter()
        .find(|c| c.callee == "external_thing")
        .unwrap();
    assert!(unresolved.confidence < 0.5);
}

#[test]
fn a_definition_of_the_file_wins_over_a_builtin_of_the_same_name() {
    let s = snapshot(
        "a.py",
        b"def open(p):\n    pass\n\ndef f():\n    open('x')\n    len('x')\n",
    );
    assert_eq!(s.calls.len(), 1);
    assert_eq!(s.calls[0].resolution, Resolution::Direct);
    assert_eq!(s.calls[0].target, "open");
}

const ORIGINAL: &str = r#"
import os

def load(path, mode="r"):
    # read it all
    with open(path, mode) as f:
        data = f.read()
    if data and len(data) > 10:
        return data.strip()
    return {"a": 1, 'b': [1, 2, 3]}

class Store:
    """Keeps things."""

    def put(self, key, value):
        self.items[key] = value  # overwrite

    def get(self, key, default=None):
        return self.items.get(key, default)
"#;

/// ORIGINAL as black/ruff-format would leave it, with comments and docstrings edited.
const REFORMATTED: &str = r#"
import os


def load(
    path,
    mode="r",
):
    """Now documented."""
    with open(path, mode) as f:  # a new comment
        data = f.read()

    if (data and len(data) > 10):
        return (data.strip())
    return {
        "a": 1,
        "b": [
            1,
            2,
            3,
        ],
    }


class Store:
    """Keeps many things."""
    def put(self, key, value):
        self.items[key] = value
    def get(self, key, default = None):
        # look up
        return self.items.get(key, default)
"#;

#[test]
fn formatting_comments_and_docstrings_change_no_hash() {
    let a = snapshot("m.py", ORIGINAL.as_bytes());
    let b = snapshot("m.py", REFORMATTED.as_bytes());
    let hashes = |s: &Snapshot| -> Vec<(String, String)> {
        s.functions
            .iter()
            .map(|f| (f.qualname.clone(), f.body_hash.clone()))
            .collect()
    };
    assert_eq!(hashes(&a), hashes(&b));
    assert!(
        diff(Some(&a), &b)
            .iter()
            .all(|d| d.change == Change::Unchanged)
    );
}

#[test]
fn a_logic_change_changes_exactly_the_definitions_touched() {
    let a = snapshot("m.py", ORIGINAL.as_bytes());
    for (edit, from, to) in [
        ("load", "len(data) > 10", "len(data) >= 10"),
        ("load", "mode=\"r\"", "mode=\"rb\""),
        ("load", "'b': [1, 2, 3]", "'b': [1, 3, 2]"),
        (
            "Store.put",
            "self.items[key] = value",
            "self.items[value] = key",
        ),
        ("Store.get", "default=None", "default=0"),
        ("Store", "class Store:", "class Store(dict):"),
    ] {
        let changed = ORIGINAL.replacen(from, to, 1);
        assert_ne!(changed, ORIGINAL);
        let b = snapshot("m.py", changed.as_bytes());
        let modified: Vec<_> = diff(Some(&a), &b)
            .into_iter()
            .filter(|d| d.change != Change::Unchanged)
            .map(|d| (d.qualname, d.change))
            .collect();
        assert_eq!(
            modified,
            [(edit.to_string(), Change::Modified)],
            "{from} -> {to}"
        );
    }
}

#[test]
fn hashes_are_fixed_values() {
    // Pinned: the same source must hash the same in every run, machine and memkit version.
    let s = snapshot("m.py", b"def f(a, b=1):\n    return a + b\n");
    assert_eq!(s.functions[0].body_hash, "f6446ea80018a368");
}

#[test]
fn diff_new_modified_deleted_unchanged_and_last_definition_wins() {
    let old = snapshot(
        "m.py",
        b"def a():\n    return 1\ndef b():\n    return 2\ndef c():\n    return 3\n",
    );
    let new = snapshot(
        "m.py",
        b"def a():\n    return 1\ndef b():\n    return 1\ndef b():\n    return 2\ndef d():\n    pass\n",
    );
    let d: Vec<(String, Change)> = diff(Some(&old), &new)
        .into_iter()
        .map(|d| (d.qualname, d.change))
        .collect();
    assert_eq!(
        d,
        [
            ("a".into(), Change::Unchanged),
            // The second `def b` is the one Python keeps: identical to the old one.
            ("b".into(), Change::Unchanged),
            ("d".into(), Change::New),
            ("c".into(), Change::Deleted),
        ]
    );
    let all_new = diff(None, &old);
    assert!(all_new.iter().all(|d| d.change == Change::New));
}

#[test]
fn a_file_that_does_not_parse_diffs_to_nothing() {
    let old = snapshot("m.py", b"def a():\n    return 1\n");
    let broken = snapshot("m.py", b"def a(:\n    return 1\n");
    assert!(
        broken
            .parse_error
            .as_deref()
            .unwrap()
            .starts_with("line 1:")
    );
    assert!(broken.functions.is_empty());
    assert!(diff(Some(&old), &broken).is_empty());
}

#[test]
fn modern_syntax_parses() {
    let src = r#"
type Pair[T] = tuple[T, T]

def first[T: (int, str), *Ts, **P](xs: list[T]) -> T:
    match xs:
        case [x, *_] if (n := len(xs)) > 0:
            return x
        case {"k": v, **rest}:
            return v
        case Point(x=0) | None:
            pass
    return f"{xs!r:>{10}} {f'{xs[0]:{"x"}}'}"

class Box[T]:
    async def get(self) -> T:
        async with lock:
            return [y async for y in self.items]
"#;
    let s = snapshot("m.py", src.as_bytes());
    assert_eq!(s.parse_error, None);
    assert_eq!(
        s.functions
            .iter()
            .map(|f| f.qualname.as_str())
            .collect::<Vec<_>>(),
        ["first", "Box", "Box.get"]
    );
    assert_eq!(
        s.functions[0].signature,
        "[T: (int, str), *Ts, **P](xs: list[T]) -> T"
    );
    assert_eq!(s.functions[1].signature, "[T]");
}

#[test]
fn hostile_input_gives_an_error_not_a_crash() {
    let bad_utf8 = snapshot("b.py", b"def f():\n    return '\xff\xfe'\n");
    assert!(bad_utf8.parse_error.unwrap().contains("not UTF-8"));
    let binary = snapshot("b.py", b"\x7fELF\x02\x01\x01\x00\x00\x00");
    assert!(binary.parse_error.is_some());
    // Operator chains and unary chains a million deep: ruff parses them, mem-ast refuses them
    // without overflowing the stack; brackets past CPython's 200 levels are refused as CPython
    // does.
    for src in [
        format!("x = {}1\n", "1 + ".repeat(1_000_000)),
        format!("x = {}1\n", "-".repeat(1_000_000)),
        format!("x = {}1{}\n", "(".repeat(100_000), ")".repeat(100_000)),
        format!("x = {}{}\n", "[".repeat(100_000), "]".repeat(100_000)),
    ] {
        let s = snapshot("deep.py", src.as_bytes());
        assert!(s.parse_error.is_some(), "{:?}", &src[..20]);
    }
    let ok = snapshot("ok.py", format!("x = {}1\n", "1 + ".repeat(500)).as_bytes());
    assert_eq!(ok.parse_error, None);
}

#[test]
fn mermaid_labels_survive_type_hints() {
    let old = snapshot("m.py", b"def a():\n    pass\ndef gone():\n    pass\n");
    let new = snapshot(
        "m.py",
        b"def a():\n    b()\n    c()\ndef b(x: dict[str, list[int]] | None = {}) -> \"Q<T>\":\n    pass\n",
    );
    let d = diff(Some(&old), &new);
    let m = mermaid::flowchart(&d, &[&new], false);
    assert!(m.starts_with("flowchart LR\n"), "{m}");
    assert!(m.contains("class n0 modified"), "{m}");
    assert!(m.contains("class n1 new"), "{m}");
    assert!(m.contains("class n2 deleted"), "{m}");
    assert!(m.contains("n0 --> n1"), "{m}");
    assert!(m.contains("n0 -.-> n3"), "{m}");
    for line in m.lines().filter(|l| l.contains("[\"")) {
        let inner = &line[line.find("[\"").unwrap() + 2..line.rfind("\"]").unwrap()];
        assert!(
            !inner.contains(['"', '[', ']', '{', '}', '|', '<', '>']),
            "{line}"
        );
    }
}

#[test]
fn imports_resolve_across_files_through_init_and_relative_imports() {
    let files: [(&str, &str); 4] = [
        (
            "app/pkg/__init__.py",
            "from .models import User\nfrom .util import *\n",
        ),
        (
            "app/pkg/models.py",
            "class User:\n    def save(self):\n        pass\n",
        ),
        ("app/pkg/util.py", "def slug(s):\n    return s\n"),
        (
            "app/pkg/views.py",
            "from . import models\nfrom .models import User as U\nfrom pkg import User\nimport pkg.util\n\ndef show():\n    models.User()\n    U.save(None)\n    User()\n    pkg.util.slug('x')\n    pkg.missing()\n",
        ),
    ];
    let mut snaps: Vec<Snapshot> = files
        .iter()
        .map(|(p, s)| snapshot(p, s.as_bytes()))
        .collect();
    let modules: Vec<String> = files
        .iter()
        .map(|(p, _)| project::module_name(p, |d| d.ends_with("/pkg")))
        .collect();
    assert_eq!(modules, ["pkg", "pkg.models", "pkg.util", "pkg.views"]);
    project::link(&mut snaps, &modules);
    let got: Vec<(&str, &str, Option<&str>)> = snaps[3]
        .calls
        .iter()
        .map(|c| {
            (
                c.callee.as_str(),
                c.target.as_str(),
                c.target_file.as_deref(),
            )
        })
        .collect();
    let models = Some("app/pkg/models.py");
    assert_eq!(
        got,
        [
            ("models.User", "pkg.models.User", models),
            ("U.save", "pkg.models.User.save", models),
            ("User", "pkg.models.User", models),
            ("pkg.util.slug", "pkg.util.slug", Some("app/pkg/util.py")),
            ("pkg.missing", "pkg.missing", None),
        ]
    );
}
