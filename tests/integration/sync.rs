//! `mem sync` between data homes that stand for machines, through a bare git repository in a
//! temporary directory as the remote: the real `mem` binaries, real SQLite files and the
//! system git. A project is the same on every machine when its clones share an origin, here
//! spelled differently (ssh and https) at different paths.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::{Env, copy_dir, jsonl, show};

const ORIGIN_SSH: &str = "git@github.com:acme/app.git";
const ORIGIN_HTTPS: &str = "https://github.com/Acme/app";

/// Runs git in `dir`, requiring success; its stdout.
fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A temporary directory with the remote (a bare repository) in it.
struct World {
    dir: tempfile::TempDir,
}

impl World {
    fn new() -> World {
        let dir = tempfile::tempdir().unwrap();
        git(dir.path(), &["init", "-q", "--bare", "remote.git"]);
        World { dir }
    }

    fn remote(&self) -> PathBuf {
        self.dir.path().join("remote.git")
    }

    /// A git repository at `rel` whose origin is `url` (never fetched: nothing leaves the disk).
    fn checkout(&self, rel: &str, url: &str) -> PathBuf {
        let p = self.dir.path().join(rel);
        std::fs::create_dir_all(&p).unwrap();
        git(&p, &["init", "-q"]);
        git(&p, &["remote", "add", "origin", url]);
        p
    }

    /// A machine named `name` sharing a checkout at `rel` whose origin is `url`.
    fn at(&self, name: &str, rel: &str, url: &str) -> (Env, PathBuf) {
        let p = self.checkout(rel, url);
        (self.machine(name, p.to_str().unwrap()), p)
    }

    /// A clone of the bare repository `bare` (made when missing) at `rel`: its origin is the
    /// bare repository's path.
    fn clone_of(&self, bare: &str, rel: &str) -> PathBuf {
        let b = self.dir.path().join(bare);
        if !b.exists() {
            git(self.dir.path(), &["init", "-q", "--bare", bare]);
        }
        let p = self.dir.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        git(self.dir.path(), &["clone", "-q", b.to_str().unwrap(), rel]);
        p
    }

    /// A machine: its own data home, named `name`, sharing the projects `shared` names.
    fn machine(&self, name: &str, shared: &str) -> Env {
        Env::new()
            .set("MEM_SYNC_REMOTE", self.remote().to_str().unwrap())
            .set("MEM_SYNC_NAME", name)
            .set("MEM_SYNC_PROJECTS", shared)
            .set("MEM_SEARCH_GIT_FILES", "0")
    }

    /// Every line of every commit on the remote (`git log -p --all`).
    fn history(&self) -> String {
        git(&self.remote(), &["log", "-p", "--all"])
    }

    /// Every memory line the remote's branches hold now, parsed.
    fn lines(&self) -> Vec<Value> {
        let pushed = Command::new("git")
            .arg("-C")
            .arg(self.remote())
            .args(["rev-parse", "-q", "--verify", "main"])
            .output()
            .is_ok_and(|o| o.status.success());
        if !pushed {
            return vec![];
        }
        let files = git(&self.remote(), &["ls-tree", "-r", "--name-only", "main"]);
        files
            .lines()
            .filter(|f| f.ends_with(".jsonl"))
            .flat_map(|f| {
                git(&self.remote(), &["show", &format!("main:{f}")])
                    .lines()
                    .map(|l| serde_json::from_str(l).unwrap())
                    .collect::<Vec<Value>>()
            })
            .collect()
    }
}

/// Notes of `project`, compressed into observations.
fn notes(env: &Env, project: &Path, texts: &[&str]) {
    for t in texts {
        env.ok(
            "mem-capture",
            &["-q", "--note", t, "--project", project.to_str().unwrap()],
            b"",
        );
    }
    env.ok("mem-compress", &["-q"], b"");
}

/// `mem sync`'s one record, requiring success.
fn sync(env: &Env) -> Value {
    let out = env.ok("mem", &["sync"], b"");
    let recs = jsonl(&out);
    assert_eq!(recs.len(), 1, "{}", show(&out));
    assert_eq!(recs[0]["type"], "sync");
    recs[0].clone()
}

fn counts(r: &Value) -> [u64; 5] {
    ["exported", "forgotten", "imported", "removed", "commits"].map(|k| r[k].as_u64().unwrap())
}

/// mem-search in `project` (its project only), as JSONL hits.
fn search(env: &Env, project: &Path, q: &str) -> Vec<Value> {
    let out = env
        .cmd("mem-search")
        .args([q, "--format", "jsonl"])
        .env("CLAUDE_PROJECT_DIR", project)
        .output()
        .unwrap();
    jsonl(&out)
}

/// The SessionStart block mem-context gives a session starting in `project`.
fn session_start(env: &Env, project: &Path) -> String {
    let payload = json!({"session_id": "new", "hook_event_name": "SessionStart",
        "source": "startup", "cwd": project});
    let out = crate::piped(
        env.cmd("mem-context")
            .arg("--hook")
            .env("CLAUDE_PROJECT_DIR", project),
        payload.to_string().as_bytes(),
    );
    assert!(out.status.success(), "{}", show(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

/// A session of `root` as a transcript, imported and compressed: a prompt, a read whose result
/// holds `raw` (a tool response, which never leaves), an edit.
fn session(env: &Env, root: &Path, raw: &str) {
    let tr = env.dir.path().join("transcripts");
    let file = root.join("billing.py");
    let file = file.to_str().unwrap();
    crate::recall::session(
        &tr,
        root.to_str().unwrap(),
        "00000000-0000-4000-8000-00000000aa01",
        "2026-03-02",
        "Make invoices round half to even",
        &[
            ("Read", json!({"file_path": file}), raw, false),
            (
                "Edit",
                json!({"file_path": file, "old_string": "round(x)", "new_string": "banker_round(x)"}),
                "ok",
                false,
            ),
        ],
    );
    env.ok(
        "mem-capture",
        &["-q", "--transcripts", tr.to_str().unwrap()],
        b"",
    );
    env.ok("mem-compress", &["-q"], b"");
}

#[test]
fn a_project_cloned_at_two_paths_shares_its_memories_labelled_and_nothing_else() {
    let w = World::new();
    let app_a = w.checkout("laptop/code/app", ORIGIN_SSH);
    let other = w.checkout("laptop/code/other", "git@github.com:acme/other.git");
    let app_b = w.checkout("desktop/src/acme-app", ORIGIN_HTTPS);
    let a = w.machine("laptop", app_a.to_str().unwrap());
    let b = w.machine("desktop", app_b.to_str().unwrap());
    notes(&a, &app_a, &["The walrus deploy needs the VPN up first"]);
    notes(&a, &other, &["zebrafish pipeline secrets live in vault"]);
    session(&a, &app_a, "RAWRESPONSE quokka lines of billing.py");
    a.ok(
        "mem-learn",
        &[
            "add",
            "Invoices round half to even",
            "--project",
            app_a.to_str().unwrap(),
        ],
        b"",
    );
    let summaries = a.count(&format!(
        "SELECT count(*) FROM sessions WHERE coalesce(summary,'') != '' AND project = '{}'",
        app_a.display()
    ));
    assert!(summaries >= 1, "a session summary to share");
    let obs = a.count(&format!(
        "SELECT count(*) FROM observations WHERE project = '{}'",
        app_a.display()
    ));

    // What would leave, record by record, before anything does.
    let dry = jsonl(&a.ok("mem", &["sync", "--dry-run"], b""));
    let kinds: Vec<&str> = dry.iter().map(|i| i["kind"].as_str().unwrap()).collect();
    assert_eq!(
        dry.len() as i64,
        obs + summaries + 1,
        "observations, summaries, one learning: {dry:?}"
    );
    assert!(
        kinds.contains(&"session") && kinds.contains(&"learning"),
        "{kinds:?}"
    );
    assert!(dry.iter().all(|i| i["project"] == "github.com/acme/app"));

    // B's search indexes exist already: a sync brings them up to what it imports.
    b.ok("mem-index", &["-q"], b"");
    let ra = sync(&a);
    assert_eq!(counts(&ra), [obs as u64 + summaries as u64 + 1, 0, 0, 0, 1]);
    let rb = sync(&b);
    assert_eq!(counts(&rb)[2], obs as u64 + summaries as u64 + 1, "{rb}");
    assert_eq!(
        rb["exported"], 0,
        "no echo: imported records never leave again"
    );
    // Vectors never travel: B embeds what it imports with its own model.
    assert_eq!(b.count("SELECT count(*) FROM embeddings"), 0);

    // B finds A's memories of the project in its own clone, labelled with where they came from.
    let hits = search(&b, &app_b, "walrus VPN");
    assert_eq!(hits[0]["title"], "The walrus deploy needs the VPN up first");
    assert_eq!(hits[0]["origin"], "laptop");
    assert_eq!(hits[0]["project"], app_b.to_str().unwrap());
    let block = session_start(&b, &app_b);
    assert!(
        block.contains("[from: laptop] The walrus deploy needs the VPN up first"),
        "{block}"
    );
    assert!(
        block.contains("[from: laptop] Invoices round half to even"),
        "{block}"
    );
    // The file an observation edited is under B's own root.
    let files: String =
        b.value("SELECT files_modified FROM observations WHERE files_modified != '[]' LIMIT 1");
    assert!(
        files.contains(&app_b.join("billing.py").display().to_string()),
        "{files}"
    );
    // The prompt hook brings them in too, labelled.
    let out = b
        .cmd("mem-context")
        .args([
            "--prompt",
            "does the walrus deploy need the VPN",
            "--format",
            "jsonl",
        ])
        .env("CLAUDE_PROJECT_DIR", &app_b)
        .current_dir(&app_b)
        .output()
        .unwrap();
    let rec = &jsonl(&out)[0];
    assert!(
        rec["text"].as_str().unwrap().contains("[from: laptop]"),
        "{}",
        show(&out)
    );

    // So do mem-mcp's search and mem-report's page.
    let (mut mcp, _) = crate::mcp::Client::start(&b, app_b.to_str().unwrap());
    let found = mcp.ok("search", json!({"query": "walrus deploy VPN"}));
    assert_eq!(found["hits"][0]["from"], "laptop", "{found}");
    mcp.close();
    let page = b.dir.path().join("report.html");
    b.ok(
        "mem-report",
        &[
            "--html",
            "--all-projects",
            "--days",
            "3650",
            "-o",
            page.to_str().unwrap(),
        ],
        b"",
    );
    let page = std::fs::read_to_string(page).unwrap();
    assert!(
        page.contains("[from: laptop] The walrus deploy"),
        "the page labels them"
    );

    // Nothing of the other project, of raw captures or tool responses reached the remote.
    let history = w.history();
    assert!(history.contains("walrus deploy"));
    for never in ["zebrafish", "RAWRESPONSE", "quokka", "laptop/code"] {
        assert!(!history.contains(never), "{never} reached the remote");
    }

    // Nothing new: a second sync of both exports, imports and commits nothing, even after the
    // learning was seen again (its confidence moves, it says nothing new).
    a.db()
        .execute(
            "UPDATE learnings SET confidence = 0.77, times_seen = 4, updated_at = 'later'",
            [],
        )
        .unwrap();
    assert_eq!(counts(&sync(&a)), [0; 5]);
    assert_eq!(counts(&sync(&b)), [0; 5]);
    let lines = w.lines();
    assert_eq!(lines.len() as i64, obs + summaries + 1);
    assert!(lines.iter().all(|l| l["name"] == "laptop"));

    // Each machine names itself; --status shows both and nothing pending.
    let st = jsonl(&b.ok("mem", &["sync", "--status", "--format", "jsonl"], b""));
    let names: Vec<&str> = st[0]["machines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["desktop", "laptop"]);
    assert_eq!(
        (st[0]["pending"].as_u64(), st[0]["held_back"].as_u64()),
        (Some(0), Some(0))
    );
    assert!(st[0]["last_sync"].is_string());
    // Git had no identity here: the commits are memkit's, named after the machine.
    let authors = git(&w.remote(), &["log", "--all", "--format=%an"]);
    assert!(
        authors
            .lines()
            .all(|a| a == "memkit laptop" || a == "memkit desktop"),
        "{authors}"
    );
}

#[test]
fn a_clone_never_worked_in_receives_its_memories_when_synced_from_it() {
    let w = World::new();
    let app_a = w.clone_of("project.git", "a/app");
    let app_b = w.clone_of("project.git", "b/app");
    let a = w.machine("laptop", app_a.to_str().unwrap());
    // B shares nothing and its store knows no project.
    let b = w.machine("desktop", "");
    notes(&a, &app_a, &["Tag releases from the release branch only"]);
    sync(&a);
    let out = b
        .cmd("mem")
        .arg("sync")
        .current_dir(&app_b)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", show(&out));
    assert_eq!(jsonl(&out)[0]["imported"], 1, "{}", show(&out));
    let out = b
        .cmd("mem-search")
        .args(["release branch", "--format", "jsonl"])
        .current_dir(&app_b)
        .output()
        .unwrap();
    let hits = jsonl(&out);
    assert_eq!(hits[0]["origin"], "laptop", "{}", show(&out));
    assert!(session_start(&b, &app_b).contains("[from: laptop] Tag releases"));
}

#[test]
fn a_secret_an_older_redactor_left_is_held_back_and_named() {
    let w = World::new();
    let app = w.checkout("a/app", ORIGIN_SSH);
    let a = w.machine("laptop", app.to_str().unwrap());
    notes(
        &a,
        &app,
        &["Deploy keys rotate monthly", "CI caches node modules"],
    );
    let token = format!("ghp_{}", "Zq8rT2mW9xK4vL7nB3cY6pD1fH5jG0sA2eR8");
    // As an older redactor left it: the token in a stored observation's text.
    a.db()
        .execute(
            "UPDATE observations SET summary = summary || ' token ' || ?1 WHERE title LIKE 'Deploy%'",
            [&token],
        )
        .unwrap();
    let dry = jsonl(&a.ok("mem", &["sync", "--dry-run"], b""));
    let held: Vec<&Value> = dry.iter().filter(|i| i["held_back"].is_string()).collect();
    assert_eq!(held.len(), 1, "{dry:?}");
    assert_eq!(held[0]["held_back"], "github_token");
    let out = a.ok("mem", &["sync"], b"");
    let r = &jsonl(&out)[0];
    assert_eq!(
        (r["exported"].as_u64(), r["held_back"].as_u64()),
        (Some(1), Some(1))
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("held back") && err.contains("github_token"),
        "{err}"
    );
    assert!(
        !w.history().contains(&token[4..]),
        "the token reached the remote"
    );
    assert!(w.history().contains("CI caches node modules"));
    // Once the store is redacted again, it goes, redacted.
    a.ok("mem-redact", &["-q"], b"");
    let r = sync(&a);
    assert_eq!(
        (r["exported"].as_u64(), r["held_back"].as_u64()),
        (Some(1), Some(0))
    );
    assert!(w.history().contains("[REDACTED:github_token]"));
    assert!(!w.history().contains(&token[4..]));
}

#[test]
fn forgetting_propagates_as_a_tombstone_and_an_imported_forget_stays_here() {
    // Real clones of one repository at two paths: their origin is its path.
    let w = World::new();
    let app_a = w.clone_of("project.git", "a/app");
    let app_b = w.clone_of("project.git", "b/work/app-copy");
    let a = w.machine("laptop", app_a.to_str().unwrap());
    let b = w.machine("desktop", app_b.to_str().unwrap());
    notes(
        &a,
        &app_a,
        &[
            "The staging password lives in the team vault",
            "Use pnpm, not npm",
        ],
    );
    notes(&b, &app_b, &["Desktop builds need 16 GB of swap"]);
    sync(&a);
    sync(&b);
    sync(&a);
    assert_eq!(search(&b, &app_b, "staging vault").len(), 1);
    assert_eq!(search(&a, &app_a, "swap").len(), 1);

    // A forgets its own record: the next sync sends a tombstone, B takes it out.
    let id: i64 = a.value("SELECT id FROM observations WHERE title LIKE 'The staging%'");
    let out = a.ok("mem", &["forget", "--obs", &id.to_string()], b"");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("the next sync forgets them"),
        "{}",
        show(&out)
    );
    assert_eq!(counts(&sync(&a)), [0, 1, 0, 0, 1]);
    assert_eq!(counts(&sync(&b)), [0, 0, 0, 1, 0]);
    assert!(search(&b, &app_b, "staging vault").is_empty());
    assert_eq!(
        b.count("SELECT count(*) FROM observations WHERE title LIKE 'The staging%'"),
        0
    );
    // Nothing new on either side after that.
    assert_eq!(counts(&sync(&a)), [0; 5]);
    assert_eq!(counts(&sync(&b)), [0; 5]);

    // A forgets B's record here: hidden here only, and said so; B keeps it, and a newer
    // version from B does not bring it back.
    let theirs: i64 = a.value("SELECT id FROM observations WHERE origin = 'desktop'");
    let out = a.ok("mem", &["forget", "--obs", &theirs.to_string()], b"");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("came from desktop") && err.contains("forgotten here only"),
        "{err}"
    );
    assert_eq!(
        counts(&sync(&a)),
        [0; 5],
        "an imported record is never forgotten for others"
    );
    b.db()
        .execute(
            "UPDATE observations SET summary = 'Desktop builds need 32 GB of swap', updated_at = 'z'
             WHERE origin IS NULL",
            [],
        )
        .unwrap();
    assert_eq!(counts(&sync(&b))[0], 1, "the newer version goes out");
    assert_eq!(counts(&sync(&a))[2], 0, "and stays hidden here");
    assert!(search(&a, &app_a, "swap").is_empty());
    assert_eq!(search(&b, &app_b, "swap").len(), 1);
}

#[test]
fn malformed_and_newer_lines_are_skipped_counted_and_named() {
    let w = World::new();
    let (b, _) = w.at("desktop", "b/app", ORIGIN_HTTPS);
    // Another machine's file, written by hand: one good line, one broken, one from a newer
    // memkit, one of a kind this memkit does not know, one good after them.
    let hand = w.dir.path().join("hand");
    git(
        w.dir.path(),
        &["clone", "-q", w.remote().to_str().unwrap(), "hand"],
    );
    let line = |gid: &str, title: &str, v: u32| {
        json!({"type": "memory", "v": v, "op": "put", "gid": gid, "origin": "feedbeef",
            "name": "mallory", "project": "github.com/acme/app", "kind": "observation",
            "at": "2026-03-01T00:00:00.000Z",
            "body": {"type": "decision", "title": title, "summary": title,
                     "created_at": "2026-03-01T00:00:00.000Z"}})
        .to_string()
    };
    let text = [
        line("feedbeef:o1", "Keep the ledger append-only", 1),
        "{\"type\":\"memory\",\"v\":1,\"op\":\"put\",".to_string(),
        line("feedbeef:o2", "Something from the future", 99),
        line("feedbeef:o3", "Odd kind", 1).replace("\"observation\"", "\"capture\""),
        line("feedbeef:o4", "Ledger rows are signed", 1),
    ]
    .join("\n")
        + "\n";
    let dir = hand.join("github.com/acme/app/mallory");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("2026-03.jsonl"), text).unwrap();
    git(&hand, &["add", "-A"]);
    git(&hand, &["commit", "-q", "-m", "by hand"]);
    git(&hand, &["push", "-q", "origin", "HEAD:main"]);

    let out = b.ok("mem", &["sync"], b"");
    let r = &jsonl(&out)[0];
    assert_eq!(
        (r["imported"].as_u64(), r["skipped"].as_u64()),
        (Some(2), Some(3)),
        "{}",
        show(&out)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    for l in [2, 3, 4] {
        assert!(
            err.contains(&format!(
                "github.com/acme/app/mallory/2026-03.jsonl:{l}: skipped"
            )),
            "line {l}: {err}"
        );
    }
    assert!(err.contains("newer memkit"), "{err}");
    assert_eq!(b.count("SELECT count(*) FROM observations"), 2);
    assert_eq!(
        b.count("SELECT count(*) FROM observations WHERE title LIKE '%future%'"),
        0
    );
    // Told once: the next sync reads nothing again.
    let r = sync(&b);
    assert_eq!(
        (r["imported"].as_u64(), r["skipped"].as_u64()),
        (Some(0), Some(0))
    );
}

#[test]
fn a_remote_that_is_no_git_repository_is_named() {
    let w = World::new();
    let plain = w.dir.path().join("just-a-folder");
    std::fs::create_dir_all(&plain).unwrap();
    let env = w
        .machine("laptop", "")
        .set("MEM_SYNC_REMOTE", plain.to_str().unwrap());
    let out = env.run("mem", &["sync"], b"");
    assert_eq!(out.status.code(), Some(3), "{}", show(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(plain.to_str().unwrap()) && err.contains("not a git repository"),
        "{err}"
    );
    // No remote at all: a usage error saying how to set one.
    let out = Env::new().run("mem", &["sync"], b"");
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("MEM_SYNC_REMOTE"));
}

/// `n` observations of `project` written straight into the store (a bench's store).
fn many(env: &Env, project: &Path, n: usize, word: &str) {
    env.ok(
        "mem-capture",
        &[
            "-q",
            "--note",
            "first",
            "--project",
            project.to_str().unwrap(),
        ],
        b"",
    );
    env.ok("mem-compress", &["-q"], b"");
    let db = env.db();
    db.execute_batch("BEGIN").unwrap();
    for i in 0..n {
        db.execute(
            "INSERT INTO observations (project, session_id, type, title, summary, created_at, updated_at)
             VALUES (?1, 'bulk', 'change', ?2, ?3, '2026-03-01T00:00:00.000Z', '2026-03-01T00:00:00.000Z')",
            rusqlite::params![
                project.to_str().unwrap(),
                format!("{word} change number {i}"),
                format!("What {word} change {i} did to the ledger module")
            ],
        )
        .unwrap();
    }
    db.execute_batch("COMMIT").unwrap();
}

#[test]
fn machines_syncing_at_once_lose_and_duplicate_nothing() {
    let w = World::new();
    let names = ["alpha", "beta", "gamma"];
    let homes: Vec<(Env, PathBuf)> = names
        .iter()
        .map(|n| {
            let p = w.checkout(&format!("{n}/app"), ORIGIN_SSH);
            let env = w.machine(n, p.to_str().unwrap());
            many(&env, &p, 200, n);
            (env, p)
        })
        .collect();
    // All at the same moment: every push but one races another.
    let children: Vec<_> = homes
        .iter()
        .map(|(env, _)| {
            env.cmd("mem")
                .arg("sync")
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", show(&out));
    }
    // Then each once more, to take what the others pushed after it.
    for (env, _) in &homes {
        sync(env);
    }
    let lines = w.lines();
    assert_eq!(lines.len(), 3 * 201, "each record once on the remote");
    let gids: std::collections::BTreeSet<&str> =
        lines.iter().map(|l| l["gid"].as_str().unwrap()).collect();
    assert_eq!(gids.len(), lines.len());
    for (env, _) in &homes {
        assert_eq!(env.count("SELECT count(*) FROM observations"), 3 * 201);
        assert_eq!(counts(&sync(env)), [0; 5]);
    }
}

#[test]
fn a_sync_killed_anywhere_loses_and_duplicates_nothing() {
    let w = World::new();
    let (a, app_a) = w.at("laptop", "a/app", ORIGIN_SSH);
    let (b, app_b) = w.at("desktop", "b/app", ORIGIN_HTTPS);
    many(&a, &app_a, 3000, "ledger");
    many(&b, &app_b, 1000, "invoice");
    // Killed at different moments of its run (before, during and after its commit and push).
    for (i, ms) in [5u64, 40, 90, 150, 250, 400].into_iter().enumerate() {
        let env = if i % 2 == 0 { &a } else { &b };
        let mut child = env
            .cmd("mem")
            .arg("sync")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(ms));
        let _ = child.kill();
        let _ = child.wait();
    }
    // The one window no timing hits for sure: the commit made, the bookkeeping not. Undone by
    // hand: the next sync reads its own lines back instead of writing them again.
    sync(&a);
    a.db()
        .execute_batch(
            "DELETE FROM sync_exported; DELETE FROM sync_files; DELETE FROM meta WHERE key = 'sync.seen';",
        )
        .unwrap();
    for env in [&a, &b, &a, &b] {
        sync(env);
    }
    let lines = w.lines();
    assert_eq!(lines.len(), 3001 + 1001, "each record once on the remote");
    for env in [&a, &b] {
        assert_eq!(env.count("SELECT count(*) FROM observations"), 4002);
        assert_eq!(counts(&sync(env)), [0; 5]);
    }
}

/// A directory holding a `git` that runs `script` (`{git}` in it names the real one), put first
/// on PATH: the PATH to give a machine.
fn git_on_path(w: &World, script: &str) -> String {
    let bin = w.dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let real = String::from_utf8(
        Command::new("sh")
            .args(["-c", "command -v git"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let wrapper = bin.join("git");
    std::fs::write(
        &wrapper,
        format!("#!/bin/sh\n{}\n", script.replace("{git}", real.trim())),
    )
    .unwrap();
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    format!("{}:{}", bin.display(), std::env::var("PATH").unwrap())
}

/// A sync killed just before or just after any one of its git commands (its first, on a remote
/// nobody pushed to yet, and one on a remote that holds another machine's lines): the next
/// sync puts its lines on the remote once, beside the other machine's. Timed kills (the test
/// above) hit these moments only by chance.
#[test]
fn a_sync_killed_at_any_of_its_git_steps_loses_nothing() {
    for others in [false, true] {
        let w = World::new();
        let (a, app_a) = w.at("laptop", "a/app", ORIGIN_SSH);
        let mut want = vec!["Ledgers close on Fridays"];
        if others {
            let (b, app_b) = w.at("desktop", "b/app", ORIGIN_HTTPS);
            notes(&b, &app_b, &["Invoices go out on Mondays"]);
            sync(&b);
            want.push("Invoices go out on Mondays");
        }
        notes(&a, &app_a, &[want[0]]);
        // Each try starts from this state: the store and the remote as they are now.
        let saved = w.dir.path().join("saved");
        std::fs::create_dir_all(&saved).unwrap();
        let kept = [
            (a.home(), saved.join("home")),
            (w.remote(), saved.join("remote")),
        ];
        for (from, to) in &kept {
            copy_dir(from, to);
        }
        // Counts the git commands a sync starts and kills the sync at the at-th.
        let count = w.dir.path().join("count");
        for when in ["before", "after"] {
            for at in 1.. {
                for (to, from) in &kept {
                    std::fs::remove_dir_all(to).unwrap();
                    copy_dir(from, to);
                }
                let _ = std::fs::remove_file(&count);
                let kill = "kill -9 $PPID; exit 1";
                let script = format!(
                    "n=$(( $(cat {c} 2>/dev/null || echo 0) + 1 )); echo $n > {c}\n[ $n = {at} ] && [ {when} = before ] && {{ {kill}; }}\n{{git}} \"$@\"; rc=$?\n[ $n = {at} ] && {{ {kill}; }}\nexit $rc",
                    c = count.display(),
                );
                let out = a
                    .cmd("mem")
                    .arg("sync")
                    .env("PATH", git_on_path(&w, &script))
                    .output()
                    .unwrap();
                if out.status.code().is_some() {
                    // Fewer git commands than `at`: the sync ran to its end.
                    assert!(out.status.success(), "{}", show(&out));
                    break;
                }
                sync(&a);
                let held: Vec<String> = w.lines().iter().map(|l| l.to_string()).collect();
                for note in &want {
                    let n = held.iter().filter(|l| l.contains(note)).count();
                    assert_eq!(
                        n, 1,
                        "killed {when} git command {at} (others: {others}): {note}: {held:?}"
                    );
                }
                assert_eq!(counts(&sync(&a)), [0; 5], "killed {when} git command {at}");
            }
        }
    }
}

/// Whatever else the working clone holds when a sync commits (another machine's file gone, as
/// a git left running by a killed sync could leave it), the sync commits its own files only:
/// the other machine's lines stay on the remote.
#[test]
fn a_sync_commits_its_own_files_only_whatever_else_the_clone_holds() {
    let w = World::new();
    let (a, app_a) = w.at("laptop", "a/app", ORIGIN_SSH);
    let (b, app_b) = w.at("desktop", "b/app", ORIGIN_HTTPS);
    notes(&b, &app_b, &["Invoices go out on Mondays"]);
    sync(&b);
    sync(&a);
    // A git that takes the other machine's files out of the clone's tree each time it stages.
    let path = git_on_path(
        &w,
        "for a in \"$@\"; do [ \"$a\" = add ] && find \"$2\" -path '*/desktop/*' -name '*.jsonl' -delete; done\nexec {git} \"$@\"",
    );
    let a = a.set("PATH", &path);
    notes(&a, &app_a, &["Ledgers close on Fridays"]);
    sync(&a);
    let history = w.history();
    assert!(history.contains("Ledgers close on Fridays"), "{history}");
    let held: Vec<String> = w.lines().iter().map(|l| l.to_string()).collect();
    for note in ["Invoices go out on Mondays", "Ledgers close on Fridays"] {
        assert!(held.iter().any(|l| l.contains(note)), "{note}: {held:?}");
    }
}

#[test]
fn the_pipeline_syncs_as_its_last_stage_and_tells_an_unreachable_remote_once() {
    let w = World::new();
    let app = w.checkout("a/app", ORIGIN_SSH);
    let gone = w.dir.path().join("nowhere.git");
    let a = w
        .machine("laptop", app.to_str().unwrap())
        .set("MEM_MODELS", crate::embed::models().to_str().unwrap())
        .set("MEM_EMBED_MODEL", "minilm-l6")
        .set("MEM_SYNC_REMOTE", gone.to_str().unwrap())
        .set("MEM_SYNC_INTERVAL", "0");
    notes(&a, &app, &["Release on Tuesdays"]);
    for _ in 0..3 {
        a.ok("mem", &["pipeline", "-q"], b"");
    }
    let log = std::fs::read_to_string(a.home().join("logs/pipeline.log")).unwrap();
    assert_eq!(log.matches("sync: ").count(), 1, "{log}");
    assert!(log.contains(gone.to_str().unwrap()), "{log}");
    // The remote answers: the next run shares, and says the remote is back.
    let a = a.set("MEM_SYNC_REMOTE", w.remote().to_str().unwrap());
    a.ok("mem", &["pipeline", "-q"], b"");
    assert!(w.history().contains("Release on Tuesdays"));
    let log = std::fs::read_to_string(a.home().join("logs/pipeline.log")).unwrap();
    assert!(log.contains("answers again"), "{log}");
    // At most every sync.interval: a run soon after does not sync.
    let a = a.set("MEM_SYNC_INTERVAL", "10");
    notes(&a, &app, &["Freeze merges on Fridays"]);
    a.ok("mem", &["pipeline", "-q"], b"");
    assert!(!w.history().contains("Freeze merges"));
}
