//! mem-ast: filter mode over real files (walk rules, hostile input), diffs and Mermaid, and
//! database mode over the fixture sessions' Python edits.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{Env, fixtures, jsonl, show};

fn of_type<'a>(recs: &'a [Value], t: &str) -> Vec<&'a Value> {
    recs.iter().filter(|r| r["type"] == t).collect()
}

#[test]
fn ast_filter_walks_a_project_and_survives_hostile_files() {
    let env = Env::new();
    let p = env.dir.path().join("proj");
    let w = |rel: &str, body: &[u8]| {
        let f = p.join(rel);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, body).unwrap();
    };
    w(".git/HEAD", b"ref: refs/heads/main\n");
    w(".gitignore", b"build/\n");
    w("pkg/__init__.py", b"from .models import User\n");
    w("pkg/models.py", b"class User:\n    def save(self):\n        return self.check()\n    def check(self):\n        return True\n");
    w(
        "app.py",
        b"from pkg import User\n\ndef main():\n    User().save()\n    User()\n",
    );
    w("build/gen.py", b"def ignored(): pass\n");
    w(".venv/lib/site.py", b"def ignored(): pass\n");
    w("env2/pyvenv.cfg", b"home = /usr/bin\n");
    w("env2/lib/x.py", b"def ignored(): pass\n");
    w("pkg/__pycache__/m.py", b"def ignored(): pass\n");
    w("README.md", b"# readme\n");
    w("binary.py", b"\x7fELF\x02\x01\x01\x00\x00\x00\x00");
    w("latin.py", b"def f():\n    return '\xe9'\n");
    w(
        "deep.py",
        format!("x = {}1\n", "1 + ".repeat(200_000)).as_bytes(),
    );
    std::os::unix::fs::symlink("loop", p.join("loop")).unwrap();
    let out = env.run("mem-ast", &["--calls", "proj"], b"");
    assert!(out.status.success(), "{}", show(&out));
    let recs = jsonl(&out);
    let names: Vec<&str> = of_type(&recs, "function")
        .iter()
        .map(|r| r["qualname"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["main", "User", "User.save", "User.check"]);
    let files: BTreeMap<&str, Option<&str>> = of_type(&recs, "file")
        .iter()
        .map(|r| (r["path"].as_str().unwrap(), r["parse_error"].as_str()))
        .collect();
    assert_eq!(files.len(), 6, "{files:?}");
    for bad in ["proj/binary.py", "proj/latin.py", "proj/deep.py"] {
        assert!(files[bad].is_some(), "{bad}: {files:?}");
    }
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("proj/deep.py: nesting"), "{err}");
    assert!(err.contains("symbolic links"), "{err}");
    // Resolved across files: through the package's __init__.py re-export.
    let edges = of_type(&recs, "edge");
    let user = edges
        .iter()
        .find(|e| e["caller"] == "main" && e["callee"] == "User")
        .unwrap();
    assert_eq!(user["target"], "pkg.models.User");
    assert_eq!(user["target_file"], "proj/pkg/models.py");
    assert!(
        edges
            .iter()
            .any(|e| e["resolution"] == "self_method" && e["target"] == "User.check")
    );
    let summary = of_type(&recs, "summary")[0];
    // README.md; hidden files and the skipped directories are not even looked at.
    assert_eq!(summary["counts"]["skipped_non_python"], 1, "{summary}");
    assert_eq!(summary["counts"]["errors"], 4, "{summary}");

    // Without --calls each file's records are written by the worker that parsed it: the same
    // records but the edges, the same counts (edges counted), the same warnings.
    let plain = env.run("mem-ast", &["proj"], b"");
    assert!(plain.status.success(), "{}", show(&plain));
    let without_time = |recs: Vec<Value>| -> Vec<Value> {
        recs.into_iter()
            .filter(|r| r["type"] != "edge")
            .map(|mut r| {
                r.as_object_mut().unwrap().remove("elapsed_ms");
                r
            })
            .collect()
    };
    assert_eq!(without_time(jsonl(&plain)), without_time(recs));
    assert_eq!(String::from_utf8_lossy(&plain.stderr), err);
}

#[test]
fn ast_reads_source_and_paths_from_stdin() {
    let env = Env::new();
    let out = env.ok(
        "mem-ast",
        &["-", "--path", "x.py"],
        b"async def go(a, *, b: int = 2): pass\n",
    );
    let f = &of_type(&jsonl(&out), "function")[0].clone();
    assert_eq!(f["path"], "x.py");
    assert_eq!(f["kind"], "async_function");
    assert_eq!(f["signature"], "(a, *, b: int = 2)");
    std::fs::write(env.dir.path().join("a.py"), "def a(): pass\n").unwrap();
    std::fs::write(env.dir.path().join("b.txt"), "x\n").unwrap();
    let out = env.ok("mem-ast", &["--paths-from", "-"], b"a.py\nb.txt\n");
    let recs = jsonl(&out);
    assert_eq!(of_type(&recs, "function").len(), 1);
    assert_eq!(
        of_type(&recs, "summary")[0]["counts"]["skipped_non_python"],
        1
    );
    // Nothing Python at all: exit 1.
    let out = env.run("mem-ast", &["b.txt"], b"");
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
}

#[test]
fn ast_diff_and_mermaid() {
    let env = Env::new();
    let d = env.dir.path();
    std::fs::write(d.join("old.py"), "def a():\n    return 1\n\ndef gone():\n    pass\n\ndef same(x):\n    # a comment\n    return x\n").unwrap();
    std::fs::write(d.join("new.py"), "def a():\n    return b(2)\n\ndef b(m: dict[str, list[int]] | None = None) -> \"Q<T>\":\n    return helper(m)\n\ndef same(x):\n    return (x)\n").unwrap();
    let out = env.ok("mem-ast", &["--diff", "old.py", "new.py"], b"");
    let changes: Vec<(String, String)> = jsonl(&out)
        .iter()
        .map(|r| {
            assert_eq!(r["type"], "function_diff");
            (
                r["qualname"].as_str().unwrap().into(),
                r["change"].as_str().unwrap().into(),
            )
        })
        .collect();
    let want = [
        ("a", "modified"),
        ("b", "new"),
        ("same", "unchanged"),
        ("gone", "deleted"),
    ];
    assert_eq!(changes, want.map(|(a, b)| (a.to_string(), b.to_string())));
    let out = env.ok("mem-ast", &["--diff", "old.py", "new.py", "--mermaid"], b"");
    let m = String::from_utf8(out.stdout).unwrap();
    assert!(m.starts_with("flowchart LR"), "{m}");
    assert!(m.contains("-.->"), "unresolved helper() is dashed: {m}");
    assert!(!m.contains("\"Q<T>\""), "{m}");
    // Unchanged definitions only with --all.
    assert!(!m.contains("same"), "{m}");
    let all = env.ok(
        "mem-ast",
        &["--diff", "old.py", "new.py", "--mermaid", "--all"],
        b"",
    );
    assert!(String::from_utf8_lossy(&all.stdout).contains("same"));
}

#[test]
fn ast_database_mode_maps_the_fixture_sessions_python_edits() {
    let env = Env::new();
    let transcripts = fixtures().join("transcripts");
    env.ok(
        "mem-capture",
        &["--transcripts", transcripts.to_str().unwrap(), "-q"],
        b"",
    );
    env.ok("mem-compress", &["-q"], b"");
    let out = env.ok("mem-ast", &["--format", "jsonl"], b"");
    let recs = jsonl(&out);
    let files = of_type(&recs, "ast_file");
    assert!(!files.is_empty(), "{}", show(&out));
    // The fixtures' files are not on this machine: a Write's content stands in, an edited
    // file without one is skipped with that reason.
    let ok: Vec<&str> = files
        .iter()
        .filter(|r| r["status"] == "ok")
        .map(|r| r["path"].as_str().unwrap())
        .collect();
    assert!(!ok.is_empty(), "{files:?}");
    assert!(
        files
            .iter()
            .all(|r| r["status"] == "ok" || r["reason"] == "the file is gone")
    );
    let db = env.db();
    for path in &ok {
        let n: i64 = db
            .query_row(
                "SELECT count(*) FROM function_map WHERE file_path = ?1",
                [path],
                |r| r.get(0),
            )
            .unwrap();
        assert!(n > 0, "{path}");
    }
    // functions_changed of the observations made from those edits is the diff: here the file
    // is new, so every definition in it.
    let (obs, changed): (i64, String) = db
        .query_row(
            "SELECT o.id, o.functions_changed FROM observations o
             JOIN observation_sources s ON s.observation_id = o.id
             JOIN pending_queue q ON q.id = s.queue_id
             WHERE json_extract(q.payload, '$.tool_input.file_path') = ?1 LIMIT 1",
            [ok[0]],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let mut stored: Vec<String> = db
        .prepare("SELECT qualname FROM function_map WHERE file_path = ?1 ORDER BY id")
        .unwrap()
        .query_map([ok[0]], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut changed: Vec<String> = serde_json::from_str(&changed).unwrap();
    stored.sort();
    changed.sort();
    assert_eq!(changed, stored, "observation #{obs}");
    // Running again adds nothing.
    let count = |t: &str| -> i64 {
        db.query_row(&format!("SELECT count(*) FROM {t}"), [], |r| r.get(0))
            .unwrap()
    };
    let before = (
        count("function_map"),
        count("call_graph"),
        count("ast_files"),
    );
    let again = env.run("mem-ast", &["--format", "jsonl"], b"");
    assert_eq!(again.status.code(), Some(1), "{}", show(&again));
    assert_eq!(
        before,
        (
            count("function_map"),
            count("call_graph"),
            count("ast_files")
        )
    );
}

/// A Claude Code session `id` in project `proj` that writes `source` to `file` (a Write tool
/// call through the hooks), compressed and mapped by mem-ast; mem-ast's output.
pub fn write_session(
    env: &Env,
    proj: &std::path::Path,
    id: &str,
    file: &std::path::Path,
    source: &str,
) -> std::process::Output {
    let (p, f) = (proj.to_str().unwrap(), file.to_str().unwrap());
    std::fs::write(file, source).unwrap();
    for (event, extra) in [
        ("SessionStart", serde_json::json!({})),
        (
            "PostToolUse",
            serde_json::json!({"tool_name": "Write", "tool_use_id": format!("t-{id}"),
                "tool_input": {"file_path": f, "content": source},
                "tool_response": {"type": "update"}}),
        ),
        ("Stop", serde_json::json!({})),
    ] {
        let mut payload = serde_json::json!({
            "session_id": id, "hook_event_name": event, "cwd": p,
            "transcript_path": "/nonexistent.jsonl",
        });
        payload
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        env.ok("mem-capture", &["--hook"], payload.to_string().as_bytes());
    }
    env.ok("mem-compress", &["-q"], b"");
    env.ok("mem-ast", &["-q", "--format", "jsonl"], b"")
}

#[test]
fn ast_database_mode_diffs_against_the_previous_session() {
    let env = Env::new();
    let proj = env.dir.path().join("proj");
    std::fs::create_dir_all(proj.join(".git")).unwrap();
    let file = proj.join("svc.py");
    let p = proj.to_str().unwrap().to_string();
    let session = |id: &str, source: &str| write_session(&env, &proj, id, &file, source);
    session(
        "s1",
        "def keep():\n    return 1\n\ndef edit(x):\n    return x\n\ndef drop():\n    pass\n",
    );
    let out = session(
        "s2",
        "def keep():\n    # reformatted\n    return (1)\n\ndef edit(x):\n    return x + 1\n\ndef add():\n    pass\n",
    );
    let rec = &of_type(&jsonl(&out), "ast_file")[0].clone();
    assert_eq!(
        (&rec["new"], &rec["modified"], &rec["deleted"]),
        (&Value::from(1), &Value::from(1), &Value::from(1)),
        "{rec}"
    );
    let db = env.db();
    let changes: BTreeMap<String, String> = db
        .prepare("SELECT qualname, change FROM function_map WHERE session_id = 's2'")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let want: BTreeMap<String, String> = [
        ("add", "new"),
        ("drop", "deleted"),
        ("edit", "modified"),
        ("keep", "unchanged"),
    ]
    .into_iter()
    .map(|(a, b)| (a.into(), b.into()))
    .collect();
    assert_eq!(changes, want);
    let fc: String = db
        .query_row(
            // By its capture: s2's observation may have been merged into s1's (same title).
            "SELECT o.functions_changed FROM observations o
             JOIN observation_sources s ON s.observation_id = o.id
             JOIN pending_queue q ON q.id = s.queue_id
             WHERE q.session_id = 's2' AND q.tool_name = 'Write'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let mut fc: Vec<String> = serde_json::from_str(&fc).unwrap();
    fc.sort();
    assert_eq!(fc, ["add", "drop", "edit"]);

    // The next session's context names them with their signatures, from the function map.
    let out = env.run(
        "mem-context",
        &[&format!("--project={p}"), "--format", "jsonl"],
        b"",
    );
    let block = jsonl(&out)[0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        block.contains("svc.py: edit(x), add() (new), drop (deleted)"),
        "{block}"
    );
    // mem-report: the file's history and the session's diagram.
    let out = env.ok(
        "mem-report",
        &["--file", "svc.py", "--format", "jsonl"],
        b"",
    );
    // The observations that touched the file come first; then mem-ast's changes.
    let history: Vec<(String, String, String)> = jsonl(&out)
        .iter()
        .filter(|r| r["type"] == "function_change")
        .map(|r| {
            (
                r["session_id"].as_str().unwrap().into(),
                r["qualname"].as_str().unwrap().into(),
                r["change"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(history.len(), 6, "{history:?}");
    assert!(history.contains(&("s2".into(), "drop".into(), "deleted".into())));
    let out = env.ok("mem-report", &["--mermaid"], b"");
    let m = String::from_utf8(out.stdout).unwrap();
    assert!(
        m.starts_with("flowchart LR") && m.contains("class n0 modified"),
        "{m}"
    );
}

#[test]
fn ast_mermaid_of_real_diffs_parses_with_mermaids_own_parser() {
    let corpus = std::env::var("MEMKIT_TEST_PYCORPUS")
        .expect("MEMKIT_TEST_PYCORPUS is not set: run scripts/test (scripts/fetch-pycorpus)");
    let mermaid = std::env::var("MEMKIT_TEST_MERMAID")
        .expect("MEMKIT_TEST_MERMAID is not set: run scripts/test (scripts/fetch-mermaid)");
    let src = std::path::Path::new(&corpus).join("src");
    let env = Env::new();
    let mut diagrams = Vec::new();
    // Two releases of the same packages: every file that changed between them is a real diff.
    for (old, new) in [
        (
            "requests-2.31.0-py3-none-any/requests",
            "requests-2.32.5-py3-none-any/requests",
        ),
        (
            "flask-3.0.0-py3-none-any/flask",
            "flask-3.1.2-py3-none-any/flask",
        ),
        (
            "rich-13.7.1-py3-none-any/rich",
            "rich-14.2.0-py3-none-any/rich",
        ),
    ] {
        let mut names: Vec<_> = std::fs::read_dir(src.join(old))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        for name in names {
            let (a, b) = (src.join(old).join(&name), src.join(new).join(&name));
            if !name.to_string_lossy().ends_with(".py")
                || !b.exists()
                || std::fs::read(&a).unwrap() == std::fs::read(&b).unwrap()
            {
                continue;
            }
            let out = env.run(
                "mem-ast",
                &[
                    "--diff",
                    a.to_str().unwrap(),
                    b.to_str().unwrap(),
                    "--mermaid",
                    "--all",
                ],
                b"",
            );
            assert!(out.status.success(), "{}", show(&out));
            let file = env.dir.path().join(format!("d{}.mmd", diagrams.len()));
            std::fs::write(&file, &out.stdout).unwrap();
            diagrams.push(file);
        }
    }
    assert!(diagrams.len() >= 20, "only {} real diffs", diagrams.len());
    let out = std::process::Command::new("node")
        .arg(format!("{mermaid}/check.mjs"))
        .args(&diagrams)
        .output()
        .expect("node");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        said.lines().filter(|l| l.starts_with("ok ")).count(),
        diagrams.len(),
        "{said}"
    );
}
