//! mem-mcp spoken to over stdio as an MCP client does: initialize, tools/list, a call of each
//! tool on a store built from the bundled fixtures, errors for arguments that cannot be right,
//! project isolation, MEM_EXCLUDE and MEM_DISABLE, and exit 0 when the client closes stdin.
//! Then the official Python SDK's client (PyPI `mcp`, pinned in scripts/pyenv) against it.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::{Env, show};

/// A store from the fixture transcripts, compressed and indexed (BM25; no model is loaded).
pub fn fixture_store() -> Env {
    let env = Env::new().set("MEM_SEARCH_MODEL_LOAD", "0");
    env.import_fixtures();
    env.ok("mem-compress", &["-q"], b"");
    env.ok("mem-index", &["-q"], b"");
    env
}

/// The project with the most observations, and its newest observation that modified a file:
/// (project root, observation id, title, a file it modified).
fn busiest(env: &Env) -> (String, i64, String, String) {
    let root: String = env.value(
        "SELECT project FROM observations GROUP BY project ORDER BY count(*) DESC, project LIMIT 1",
    );
    let (id, title, files): (i64, String, String) = env
        .db()
        .query_row(
            "SELECT id, title, files_modified FROM observations
             WHERE project = ?1 AND files_modified != '[]' ORDER BY id DESC LIMIT 1",
            [&root],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    let files: Vec<String> = serde_json::from_str(&files).unwrap();
    (root, id, title, files[0].clone())
}

pub struct Client {
    child: Child,
    stdin: Option<ChildStdin>,
    out: BufReader<ChildStdout>,
    next: i64,
}

impl Client {
    /// mem-mcp started in `env` for `project` (Claude Code's CLAUDE_PROJECT_DIR), initialized.
    pub fn start(env: &Env, project: &str) -> (Client, Value) {
        let mut c = env.cmd("mem-mcp");
        c.env("CLAUDE_PROJECT_DIR", project)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c.spawn().expect("spawn mem-mcp");
        let mut client = Client {
            stdin: child.stdin.take(),
            out: BufReader::new(child.stdout.take().unwrap()),
            child,
            next: 0,
        };
        let init = client.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "memkit-test", "version": "1"}}),
        );
        client.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        (client, init)
    }

    fn send(&mut self, v: Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{v}").unwrap();
        stdin.flush().unwrap();
    }

    /// The response to one request (its `result` or `error` object, whole).
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            let n = self.out.read_line(&mut line).unwrap();
            assert!(n > 0, "mem-mcp closed stdout before answering {method}");
            let v: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("not a JSON-RPC line {line:?}: {e}"));
            if v["id"] == id {
                return v;
            }
        }
    }

    /// A tool's result: (isError, the text of its content).
    pub fn call(&mut self, tool: &str, args: Value) -> (bool, String) {
        let r = self.request("tools/call", json!({"name": tool, "arguments": args}));
        assert!(r["error"].is_null(), "{tool} {args}: {r}");
        let text = r["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{tool}: no text content: {r}"))
            .to_string();
        (r["result"]["isError"] == true, text)
    }

    /// A tool's result that must succeed, parsed.
    pub fn ok(&mut self, tool: &str, args: Value) -> Value {
        let (err, text) = self.call(tool, args.clone());
        assert!(!err, "{tool} {args} failed: {text}");
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{tool}: {e}: {text}"))
    }

    /// A call that must be a JSON-RPC error: its code and message.
    pub fn rpc_error(&mut self, tool: &str, args: Value) -> (i64, String) {
        let r = self.request("tools/call", json!({"name": tool, "arguments": args}));
        assert!(
            r["error"].is_object(),
            "{tool} {args} was not an error: {r}"
        );
        (
            r["error"]["code"].as_i64().unwrap(),
            r["error"]["message"].as_str().unwrap_or("").to_string(),
        )
    }

    /// Closes stdin (the client going away) and waits for the exit.
    pub fn close(mut self) -> std::process::Output {
        drop(self.stdin.take());
        let start = Instant::now();
        while self.child.try_wait().unwrap().is_none() {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "mem-mcp still runs after stdin closed"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        self.child.wait_with_output().unwrap()
    }
}

/// mem-mcp's tools, sorted.
const TOOLS: [&str; 6] = [
    "context",
    "file_history",
    "get",
    "save",
    "search",
    "timeline",
];

fn refs(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|h| h["ref"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn every_tool_over_stdio_on_the_fixture_store() {
    let env = fixture_store();
    let (root, id, title, file) = busiest(&env);
    let oref = format!("o{id}");
    let (mut c, init) = Client::start(&env, &root);
    assert_eq!(init["result"]["serverInfo"]["name"], "memkit", "{init}");
    assert!(
        init["result"]["capabilities"]["tools"].is_object(),
        "{init}"
    );

    let list = c.request("tools/list", json!({}));
    let tools = list["result"]["tools"].as_array().unwrap();
    let mut names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    names.sort();
    assert_eq!(names, TOOLS);
    for t in tools {
        assert!(t["description"].as_str().unwrap().len() > 60, "{t}");
        assert_eq!(t["inputSchema"]["type"], "object", "{t}");
    }
    let search_tool = tools.iter().find(|t| t["name"] == "search").unwrap();
    assert_eq!(search_tool["inputSchema"]["required"], json!(["query"]));
    for p in [
        "query",
        "project",
        "all_projects",
        "type",
        "since",
        "until",
        "files",
        "limit",
    ] {
        assert!(
            search_tool["inputSchema"]["properties"][p].is_object(),
            "search takes {p}: {search_tool}"
        );
    }

    // search: the observation found by its own title, as mem-search finds it.
    let hits = c.ok("search", json!({"query": title, "limit": 5}));
    assert!(refs(&hits["hits"]).contains(&oref), "{hits}");
    let cli = env.ok(
        "mem-search",
        &["--project", &root, "-n", "5", "--format", "jsonl", &title],
        b"",
    );
    let cli_refs: Vec<String> = crate::jsonl(&cli)
        .iter()
        .filter(|h| h["type"] == "hit")
        .map(|h| h["ref"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        refs(&hits["hits"]),
        cli_refs,
        "the same ranking as mem-search"
    );
    let hit = &hits["hits"][0];
    for k in ["ref", "title", "score", "line", "type"] {
        assert!(!hit[k].is_null(), "{k} in {hit}");
    }
    assert!(hit.get("other_project").is_none(), "{hit}");
    // Filters: a type the observation is not, and a window that ends before it.
    let kind: String = env.value(&format!("SELECT type FROM observations WHERE id = {id}"));
    let other = if kind == "decision" {
        "bugfix"
    } else {
        "decision"
    };
    let typed = c.ok(
        "search",
        json!({"query": title, "type": [other], "limit": 50}),
    );
    assert!(!refs(&typed["hits"]).contains(&oref), "{typed}");
    let old = c.ok("search", json!({"query": title, "until": "2001-01-01"}));
    assert_eq!(old["hits"], json!([]), "{old}");
    assert!(
        old["note"].as_str().unwrap().contains("nothing found"),
        "{old}"
    );

    // get: the observation in full, a session with its observations.
    let sref: String = env.value(&format!(
        "SELECT 's' || s.rowid FROM sessions s JOIN observations o ON o.session_id = s.session_id WHERE o.id = {id}"
    ));
    let got = c.ok("get", json!({"refs": [oref, sref]}));
    let recs = got["records"].as_array().unwrap();
    assert_eq!(recs.len(), 2, "{got}");
    assert_eq!(recs[0]["title"], title.as_str());
    assert_eq!(recs[0]["ref"], oref.as_str());
    assert!(
        recs[0]["files_modified"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f == &json!(file))
    );
    assert_eq!(recs[1]["ref"], sref.as_str());
    assert!(refs(&recs[1]["observations"]).contains(&oref), "{got}");
    // A comma-separated string works too.
    let got = c.ok("get", json!({"refs": format!("{oref},{sref}")}));
    assert_eq!(got["records"].as_array().unwrap().len(), 2);

    // timeline around the observation: it, with what came just before and after.
    let tl = c.ok("timeline", json!({"around": oref, "before": 2, "after": 2}));
    let around = refs(&tl["observations"]);
    assert!(around.contains(&oref) && around.len() <= 4, "{tl}");
    assert!(refs(&tl["sessions"]).contains(&sref), "{tl}");

    // file_history: the observation changed the file.
    let fh = c.ok("file_history", json!({"path": file}));
    assert!(refs(&fh["changed_by"]).contains(&oref), "{fh}");
    // It says what file recall says before an edit, also for a path given by its ending.
    let recall = fh["recall"].as_str().unwrap_or_else(|| panic!("{fh}"));
    assert!(recall.starts_with("memkit: earlier work on"), "{recall}");
    let ending = file.strip_prefix(&format!("{root}/")).unwrap_or(&file);
    let by_ending = c.ok("file_history", json!({"path": ending}));
    assert_eq!(by_ending["recall"], fh["recall"], "{by_ending}");
    let nothing = c.ok("file_history", json!({"path": "no/such/file.rs"}));
    assert!(
        nothing["note"].as_str().unwrap().contains("no memory"),
        "{nothing}"
    );

    // context: the SessionStart block, and a prompt's memories.
    let block = c.ok("context", json!({}));
    assert!(
        block["text"].as_str().unwrap().contains("memkit"),
        "{block}"
    );
    let prompt = c.ok("context", json!({"prompt": title}));
    assert_eq!(prompt["event"], "UserPromptSubmit", "{prompt}");

    // Arguments that cannot be right: JSON-RPC invalid params, with words that say why.
    let (code, msg) = c.rpc_error("search", json!({}));
    assert_eq!(code, -32602, "{msg}");
    assert!(msg.contains("query"), "{msg}");
    let (code, msg) = c.rpc_error("search", json!({"query": "x", "since": "last tuesday"}));
    assert_eq!(code, -32602);
    assert!(
        msg.contains("since") && msg.contains("last tuesday"),
        "{msg}"
    );
    let (code, msg) = c.rpc_error("search", json!({"query": "x", "type": ["gossip"]}));
    assert_eq!(code, -32602);
    assert!(msg.contains("gossip"), "{msg}");
    let (code, msg) = c.rpc_error("get", json!({"refs": ["x17"]}));
    assert_eq!(code, -32602);
    assert!(msg.contains("x17"), "{msg}");
    let (code, _) = c.rpc_error("search", json!({"query": "x", "limit": "many"}));
    assert_eq!(code, -32602);
    let (code, _) = c.rpc_error("timeline", json!({"around": "not a date"}));
    assert_eq!(code, -32602);
    let r = c.request(
        "tools/call",
        json!({"name": "no_such_tool", "arguments": {}}),
    );
    assert!(r["error"].is_object(), "{r}");
    // A well-formed call with no answer: a tool error the model reads.
    let (err, text) = c.call("get", json!({"refs": ["o999999"]}));
    assert!(
        err && text.contains("unknown ref") && text.contains("o999999"),
        "{text}"
    );

    // save: stored like mem-capture --note (redacted), searchable once the pipeline ran.
    // A key of the bundled secrets corpus (tests/fixtures/secrets).
    let secret = "AKIAQ7ZXJ3K5LMN2PQRS";
    let saved = c.ok(
        "save",
        json!({"text": format!("The zanzibar staging deploy needs the VPN up; aws_access_key_id {secret}"),
               "tags": ["ops", "deploy"]}),
    );
    assert_eq!(saved["saved"], true, "{saved}");
    let payload: String = env.value(&format!(
        "SELECT payload FROM pending_queue WHERE id = {}",
        saved["queue_id"]
    ));
    assert!(
        payload.contains("zanzibar") && !payload.contains(secret),
        "{payload}"
    );
    assert!(payload.contains("deploy"), "{payload}");
    crate::wait_for(&env, "the note became an observation", |e| {
        e.count(
            "SELECT count(*) FROM observations WHERE is_manual = 1 AND summary LIKE '%zanzibar%'",
        ) == 1
    });
    crate::pipeline::wait_idle(&env);
    let found = c.ok("search", json!({"query": "zanzibar staging deploy"}));
    let note_project: String = env.value(
        "SELECT project FROM observations WHERE is_manual = 1 AND summary LIKE '%zanzibar%'",
    );
    assert_eq!(
        note_project, root,
        "the note belongs to the server's project"
    );
    assert!(!found["hits"].as_array().unwrap().is_empty(), "{found}");

    let out = c.close();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
}

#[test]
fn other_projects_exclusion_and_disable() {
    let env = fixture_store();
    let (root, id, title, file) = busiest(&env);
    let oref = format!("o{id}");
    let other: String = env.value(&format!(
        "SELECT project FROM observations WHERE project != '{root}' GROUP BY project ORDER BY count(*) DESC LIMIT 1"
    ));

    // From another project: nothing of this one unless asked for, then labelled.
    let (mut c, _) = Client::start(&env, &other);
    let hits = c.ok("search", json!({"query": title, "limit": 50}));
    assert!(!refs(&hits["hits"]).contains(&oref), "{hits}");
    let all = c.ok(
        "search",
        json!({"query": title, "all_projects": true, "limit": 50}),
    );
    let hit = all["hits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["ref"] == oref.as_str())
        .unwrap_or_else(|| panic!("{all}"));
    assert_eq!(hit["other_project"], true);
    assert_eq!(
        hit["project_name"],
        memkit::project::name_of(&root).as_str()
    );
    let (err, text) = c.call("get", json!({"refs": [oref]}));
    assert!(err && text.contains("another project"), "{text}");
    let got = c.ok("get", json!({"refs": [oref], "all_projects": true}));
    assert_eq!(got["records"][0]["other_project"], true, "{got}");
    let fh = c.ok("file_history", json!({"path": file}));
    assert!(!refs(&fh["changed_by"]).contains(&oref), "{fh}");
    // A project named in the call is searched.
    let named = c.ok(
        "search",
        json!({"query": title, "project": root, "limit": 50}),
    );
    assert!(refs(&named["hits"]).contains(&oref), "{named}");
    assert_eq!(c.close().status.code(), Some(0));

    // MEM_CONTEXT_OTHER_PROJECTS=1: other projects' memories come, labelled.
    let open = Env {
        vars: env.vars.clone(),
        dir: tempfile::tempdir().unwrap(),
    }
    .set("MEM_CONTEXT_OTHER_PROJECTS", "1");
    let mut o = Client::start(&open, &other).0;
    let got = o.ok("get", json!({"refs": [oref]}));
    assert_eq!(got["records"][0]["other_project"], true, "{got}");
    drop(o.close());

    // MEM_EXCLUDE: the excluded project's memories are neither shown nor stored.
    let excluded = Env {
        vars: env.vars.clone(),
        dir: tempfile::tempdir().unwrap(),
    }
    .set("MEM_EXCLUDE", &root);
    let mut x = Client::start(&excluded, &root).0;
    let (err, text) = x.call("search", json!({"query": title}));
    assert!(err && text.contains("excluded"), "{text}");
    let (err, text) = x.call("save", json!({"text": "never stored"}));
    assert!(err && text.contains("excluded"), "{text}");
    let all = x.ok(
        "search",
        json!({"query": title, "all_projects": true, "limit": 50}),
    );
    assert!(!refs(&all["hits"]).contains(&oref), "{all}");
    drop(x.close());
    assert_eq!(
        env.count("SELECT count(*) FROM pending_queue WHERE payload LIKE '%never stored%'"),
        0
    );

    // MEM_DISABLE: every call refused, nothing stored.
    let disabled = Env {
        vars: env.vars.clone(),
        dir: tempfile::tempdir().unwrap(),
    }
    .set("MEM_DISABLE", "1");
    let mut d = Client::start(&disabled, &root).0;
    for (tool, args) in [
        ("search", json!({"query": title})),
        ("save", json!({"text": "disabled note"})),
        ("context", json!({})),
    ] {
        let (err, text) = d.call(tool, args);
        assert!(err && text.contains("MEM_DISABLE"), "{tool}: {text}");
    }
    drop(d.close());
    assert_eq!(
        env.count("SELECT count(*) FROM pending_queue WHERE payload LIKE '%disabled note%'"),
        0
    );

    // No database yet: a clear refusal, and the server stays up.
    let empty = Env::new();
    let mut e = Client::start(&empty, empty.dir.path().to_str().unwrap()).0;
    let (err, text) = e.call("search", json!({"query": "anything"}));
    assert!(err && text.contains("no memories yet"), "{text}");
    let (err, _) = e.call("timeline", json!({}));
    assert!(err);
    assert_eq!(e.close().status.code(), Some(0));
}

/// The official MCP Python SDK's stdio client (PyPI `mcp`, pinned in scripts/pyenv) against
/// mem-mcp: the reference implementation of the protocol's client side.
#[test]
fn the_python_sdk_client_lists_and_calls_the_tools() {
    let py = std::env::var("MEMKIT_TEST_PYTHON").unwrap_or_else(|_| {
        panic!("MEMKIT_TEST_PYTHON is not set: run scripts/test (scripts/pyenv installs the pinned mcp SDK)")
    });
    let env = fixture_store();
    let (root, id, title, _) = busiest(&env);
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/integration/mcp_client.py");
    let out = std::process::Command::new(&py)
        .arg(&script)
        .arg(crate::bin("mem-mcp"))
        .arg(&title)
        .env_clear()
        .envs(env.vars.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .env("CLAUDE_PROJECT_DIR", &root)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", show(&out));
    let report: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", show(&out)));
    assert_eq!(report["server"], "memkit", "{report}");
    let mut tools: Vec<String> = serde_json::from_value(report["tools"].clone()).unwrap();
    tools.sort();
    assert_eq!(tools, TOOLS);
    assert!(
        report["search"]
            .as_str()
            .unwrap()
            .contains(&format!("\"o{id}\"")),
        "{report}"
    );
    assert_eq!(report["bad_arguments_error"], true, "{report}");
}
