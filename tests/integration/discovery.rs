//! Projects discovered from the work: sessions started where no project is (a home
//! directory, a folder of repositories) move to the project their files agree on when
//! mem-compress runs, keeping their cwd; Windows drive letters and Claude Code's agent
//! worktrees resolve to one project whatever the spelling.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::{Env, event, fixtures, jsonl};

const ROOT: &str = "/Users/dain/workspace/claude-code-log";

/// One session through the real hook: start in `cwd`, one prompt, an Edit of each file, Stop.
fn session(env: &Env, sid: &str, cwd: &str, files: &[&str]) {
    let base = json!({"session_id": sid, "cwd": cwd, "transcript_path": "/tmp/t.jsonl"});
    let mut events = vec![
        json!({"hook_event_name": "SessionStart", "source": "startup"}),
        json!({"hook_event_name": "UserPromptSubmit", "prompt": "fix the parser in this project"}),
    ];
    for (i, f) in files.iter().enumerate() {
        events.push(json!({"hook_event_name": "PostToolUse", "tool_name": "Edit",
            "tool_use_id": format!("toolu_{sid}_{i}"),
            "tool_input": {"file_path": f, "old_string": "parse(x)", "new_string": "parse(x, strict=True)"},
            "tool_response": {"filePath": f, "success": true}}));
    }
    events.push(json!({"hook_event_name": "Stop"}));
    for e in events {
        env.ok("mem-capture", &["--hook"], &event(&base, e));
    }
}

fn projects_of(env: &Env, sql: &str) -> BTreeSet<String> {
    let db = env.db();
    let mut st = db.prepare(sql).unwrap();
    st.query_map([], |r| r.get::<_, Option<String>>(0))
        .unwrap()
        .map(|r| r.unwrap().unwrap_or_default())
        .collect()
}

#[test]
fn sessions_started_from_home_land_in_the_repository_they_worked_in() {
    let env = Env::new().set("MEM_SEARCH_GIT_FILES", "0");
    let dir = fixtures().join("derived/home-cwd");
    env.ok(
        "mem-capture",
        &["-q", "--transcripts", dir.to_str().unwrap()],
        b"",
    );
    let ours = "session_id LIKE 'd15c0e4e-%'";
    // Capture (a hook's cost) takes the cwd as it is: home and the folder of repositories.
    assert_eq!(
        projects_of(&env, &format!("SELECT project FROM sessions WHERE {ours}")),
        BTreeSet::from(["/Users/dain".into(), "/Users/dain/workspace".into()])
    );
    let out = env.ok("mem-compress", &["--format", "jsonl"], b"");
    let summary = jsonl(&out).pop().unwrap();
    assert_eq!(summary["counts"]["rescoped"], 2, "{summary}");
    env.ok("mem-index", &["-q"], b"");

    // Both sessions, their captures and observations are the repository's; the cwd stays.
    assert_eq!(
        projects_of(
            &env,
            &format!(
                "SELECT project FROM sessions WHERE {ours} UNION SELECT project_dir FROM sessions WHERE {ours}"
            )
        ),
        BTreeSet::from([ROOT.to_string()])
    );
    assert_eq!(
        projects_of(&env, &format!("SELECT cwd FROM sessions WHERE {ours}")),
        BTreeSet::from(["/Users/dain".into(), "/Users/dain/workspace".into()])
    );
    assert_eq!(
        projects_of(
            &env,
            "SELECT project FROM pending_queue UNION SELECT project FROM observations"
        ),
        BTreeSet::from([ROOT.to_string()])
    );
    let observations = env.count(&format!(
        "SELECT count(*) FROM observations WHERE project = '{ROOT}' AND {ours}"
    ));
    assert!(observations > 0);
    // The project is stored as discovered; home and the workspace folder are no projects.
    assert_eq!(
        env.value::<String>(&format!(
            "SELECT source FROM projects WHERE full_path = '{ROOT}'"
        )),
        "discovered"
    );
    assert_eq!(
        env.count("SELECT count(*) FROM projects WHERE full_path IN ('/Users/dain', '/Users/dain/workspace')"),
        0
    );
    assert_eq!(
        env.count("SELECT count(*) FROM event_log WHERE event = 'project_discovered'"),
        2
    );

    // mem-context for the project sees both sessions, files named relative to its root.
    let out = env.ok(
        "mem-context",
        &["--format", "json", &format!("--project={ROOT}")],
        b"",
    );
    let ctx: Value = jsonl(&out).pop().unwrap();
    let text = ctx["text"].as_str().unwrap();
    assert!(text.contains("- claude_code_log/tui.py"), "{text}");
    assert!(text.contains("- claude_code_log/renderer.py"), "{text}");
    assert!(
        !text.contains(&format!("{ROOT}/")),
        "paths relative to the root: {text}"
    );
    // Its recent sessions: the one started at home (07-16), the one in workspace (06-18).
    assert!(
        text.contains("- 2025-07-16: Goal:") && text.contains("- 2025-06-18: Goal:"),
        "{text}"
    );
    assert_eq!(
        ctx["items"].as_array().unwrap().len() as i64,
        observations,
        "{ctx}"
    );
    // mem-search scoped by the project's name finds the work of both.
    let out = env.ok(
        "mem-search",
        &[
            "--format",
            "jsonl",
            "--project",
            "claude-code-log",
            "--limit",
            "50",
            "tui renderer index",
        ],
        b"",
    );
    let sessions: BTreeSet<String> = jsonl(&out)
        .iter()
        .filter_map(|h| h["session_id"].as_str().map(str::to_string))
        .collect();
    assert!(
        sessions.iter().any(|s| s.starts_with("d15c0e4e-0001"))
            && sessions.iter().any(|s| s.starts_with("d15c0e4e-0002")),
        "{sessions:?}"
    );
}

#[test]
fn drive_letters_in_either_case_are_one_project() {
    let env = Env::new();
    session(
        &env,
        "win-lower",
        r"c:\Users\dain",
        &[r"c:\Users\dain\workspace\proj\app.py"],
    );
    session(
        &env,
        "win-upper",
        r"C:\Users\dain",
        &[
            r"C:\Users\dain\workspace\proj\lib\util.py",
            r"c:/Users/dain/workspace/proj/app.py",
        ],
    );
    session(
        &env,
        "win-inside",
        r"c:\Users\dain\workspace\proj",
        &[r"lib\util.py"],
    );
    env.ok("mem-compress", &["-q"], b"");
    let root = r"C:\Users\dain\workspace\proj";
    assert_eq!(
        projects_of(
            &env,
            "SELECT project FROM sessions UNION SELECT project FROM observations"
        ),
        BTreeSet::from([root.to_string()])
    );
    assert_eq!(env.count("SELECT count(*) FROM observations"), 3);
    assert_eq!(
        projects_of(&env, "SELECT full_path FROM projects"),
        BTreeSet::from([root.to_string()])
    );
    assert_eq!(
        projects_of(
            &env,
            "SELECT cwd FROM sessions WHERE session_id != 'win-inside'"
        ),
        BTreeSet::from([r"c:\Users\dain".to_string(), r"C:\Users\dain".to_string()])
    );
}

#[test]
fn agent_worktrees_belong_to_their_repository() {
    let env = Env::new();
    // Started inside an agent worktree that does not exist here: the path alone says whose.
    session(
        &env,
        "wt-cwd",
        "/nowhere/repo/.claude/worktrees/agent-1",
        &["src/a.rs"],
    );
    // Started at home, working in two agent worktrees of the repository.
    session(
        &env,
        "wt-home",
        "/home/x",
        &[
            "/nowhere/repo/.claude/worktrees/agent-2/src/b.rs",
            "/nowhere/repo/.claude/worktrees/agent-3/src/c.rs",
        ],
    );
    env.ok("mem-compress", &["-q"], b"");
    assert_eq!(
        projects_of(
            &env,
            "SELECT project FROM sessions UNION SELECT project FROM observations"
        ),
        BTreeSet::from(["/nowhere/repo".to_string()])
    );
    assert_eq!(
        env.value::<String>("SELECT cwd FROM sessions WHERE session_id = 'wt-home'"),
        "/home/x"
    );

    // The fixture's agents ran in `<repo>/.claude/worktrees/agent-*`: one project, the repo's.
    env.ok(
        "mem-capture",
        &[
            "-q",
            "--transcripts",
            fixtures()
                .join("transcripts/claude-code-log/-experiments-worktrees")
                .to_str()
                .unwrap(),
        ],
        b"",
    );
    assert_eq!(
        projects_of(
            &env,
            "SELECT project FROM pending_queue WHERE session_id LIKE 'ef958aa1%'"
        ),
        BTreeSet::from(["-experiments/worktrees".to_string()])
    );
    assert_eq!(
        env.count("SELECT count(*) FROM projects WHERE full_path LIKE '%.claude/worktrees%'"),
        0
    );
    // Its cwd is relative (sanitised upstream): compression moves it nowhere.
    env.ok("mem-compress", &["-q"], b"");
    assert_eq!(
        projects_of(
            &env,
            "SELECT project FROM sessions WHERE session_id LIKE 'ef958aa1%'
             UNION SELECT project FROM observations WHERE session_id LIKE 'ef958aa1%'"
        ),
        BTreeSet::from(["-experiments/worktrees".to_string()])
    );
}

#[test]
fn a_session_in_a_repository_stays_there_whatever_else_it_edits() {
    let env = Env::new();
    let repo = env.dir.path().join("repo");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::write(
        repo.join("README.md"),
        "# repo\n\n[![ci](b)](c)\n\nA tiny parser for\nstrict input.\n",
    )
    .unwrap();
    let home = env.dir.path().join("home");
    let plan = home.join(".claude/plans/p.md").display().to_string();
    let other = env
        .dir
        .path()
        .join("elsewhere/x/y.py")
        .display()
        .to_string();
    let repo_s = repo.display().to_string();
    session(
        &env,
        "in-repo",
        &repo_s,
        &[&plan, &other, &format!("{repo_s}/a.py")],
    );
    env.ok("mem-compress", &["-q"], b"");
    assert_eq!(
        projects_of(
            &env,
            "SELECT project FROM sessions UNION SELECT project FROM observations"
        ),
        BTreeSet::from([repo_s.clone()])
    );
    assert_eq!(
        env.count("SELECT count(*) FROM event_log WHERE event = 'project_discovered'"),
        0
    );
    // The root is on disk: its README's first paragraph describes it.
    assert_eq!(
        env.value::<String>(&format!(
            "SELECT description FROM projects WHERE full_path = '{repo_s}'"
        )),
        "A tiny parser for strict input."
    );
}

#[test]
fn the_fixture_sessions_started_in_their_repositories_stay() {
    let env = Env::new();
    env.import_fixtures();
    let before: BTreeSet<(String, String)> =
        env.pairs("SELECT session_id, coalesce(project, '') FROM sessions");
    env.ok("mem-compress", &["-q"], b"");
    let after: BTreeSet<(String, String)> =
        env.pairs("SELECT session_id, coalesce(project, '') FROM sessions");
    assert_eq!(before, after);
    assert_eq!(
        env.count("SELECT count(*) FROM event_log WHERE event = 'project_discovered'"),
        0
    );
}

#[test]
fn a_later_turn_moves_what_was_compressed_and_indexed_before() {
    let env = Env::new().set("MEM_SEARCH_GIT_FILES", "0");
    // Turn 1: a note in the home directory, no project to discover.
    session(&env, "later", "/home/u", &["/home/u/notes.md"]);
    env.ok("mem-compress", &["-q"], b"");
    env.ok("mem-index", &["-q"], b"");
    assert_eq!(
        projects_of(&env, "SELECT project FROM observations"),
        BTreeSet::from(["/home/u".to_string()])
    );
    // Turn 2 (resumed): three files of one repository, 3 of the 4 files touched.
    session(
        &env,
        "later",
        "/home/u",
        &[
            "/home/u/src/proj/a.py",
            "/home/u/src/proj/b.py",
            "/home/u/src/proj/lib/c.py",
        ],
    );
    env.ok("mem-compress", &["-q"], b"");
    env.ok("mem-index", &["-q"], b"");
    assert_eq!(
        projects_of(
            &env,
            "SELECT project FROM sessions UNION SELECT project FROM observations
             UNION SELECT project FROM pending_queue"
        ),
        BTreeSet::from(["/home/u/src/proj".to_string()])
    );
    // The index re-read the turn-1 observation: searching the project finds it.
    let out = env.ok(
        "mem-search",
        &[
            "--format",
            "jsonl",
            "--project",
            "/home/u/src/proj",
            "notes.md",
        ],
        b"",
    );
    let titles: Vec<String> = jsonl(&out)
        .iter()
        .filter_map(|h| h["title"].as_str().map(str::to_string))
        .collect();
    assert!(titles.iter().any(|t| t.contains("notes.md")), "{titles:?}");
    // Turn 3 (resumed again): its captures are stored under home, then follow the session.
    session(&env, "later", "/home/u", &["/home/u/src/proj/d.py"]);
    env.ok("mem-compress", &["-q"], b"");
    assert_eq!(
        projects_of(
            &env,
            "SELECT project FROM observations UNION SELECT project FROM pending_queue"
        ),
        BTreeSet::from(["/home/u/src/proj".to_string()])
    );
    assert_eq!(
        env.count("SELECT count(*) FROM event_log WHERE event = 'project_discovered'"),
        1
    );
}
