//! mem-report --html: the page of the fixture store, opened from file:// in Debian's chromium
//! (headless, driven over the DevTools protocol on a pipe: no port, no websocket), and the
//! call-graph drawing of the one fixture session mem-ast could map.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use memkit_testkit::browser::Browser;
use serde_json::{Value, json};

use crate::report::compressed_fixtures;
use crate::{Env, show};

/// The whole fixture store: a window from long before the fixtures to after them.
const NOW: &str = "2027-01-01T00:00:00Z";
const DAYS: &str = "3650";
const SINCE: &str = "2017-01-03T00:00:00.000Z";

/// The page's records: its sessions, observations and learnings, each by its visible id.
const SESSIONS: &str = "#timeline article";
const OBSERVATIONS: &str = "#timeline li[id]";
const LEARNINGS: &str = ".learning";

/// The fixture store with mem-ast's map and mem-learn's learnings, as the pipeline leaves it.
fn full_store() -> Env {
    let env = compressed_fixtures();
    env.ok("mem-ast", &["-q"], b"");
    env.ok("mem-learn", &["-q"], b"");
    env
}

fn page(env: &Env, extra: &[&str]) -> PathBuf {
    let out = env.dir.path().join("page.html");
    let mut args = vec!["--html", "-o", out.to_str().unwrap(), "--now", NOW];
    args.extend(extra);
    env.ok("mem-report", &args, b"");
    out
}

fn refs(env: &Env, sql: &str) -> BTreeSet<String> {
    env.db()
        .prepare(sql)
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn html_page_holds_the_scope_and_writes_where_told() {
    let env = full_store();
    let file = page(&env, &["--all-projects", "--days", DAYS]);
    let html = std::fs::read_to_string(&file).unwrap();
    // Self-contained: nothing is loaded from anywhere, and the page forbids itself requests.
    assert!(html.starts_with("<!doctype html>"), "{}", &html[..200]);
    assert!(html.contains("default-src 'none'"));
    for outside in ["src=\"http", "href=\"http", "@import", "url(http", "<link "] {
        assert!(!html.contains(outside), "the page loads {outside}");
    }
    let sessions = refs(
        &env,
        &format!(
            "SELECT 's' || rowid FROM sessions WHERE coalesce(last_activity_at, ended_at, started_at, '') >= '{SINCE}'"
        ),
    );
    let obs = refs(&env, "SELECT 'o' || id FROM observations");
    assert!(
        sessions.len() > 10 && obs.len() > 30,
        "{sessions:?} {obs:?}"
    );
    let on_page = ids(&html);
    for r in sessions.iter().chain(&obs) {
        assert!(on_page.contains(r), "{r} is not on the page");
    }
    // stdout by default: the same page.
    let out = env.ok(
        "mem-report",
        &["--html", "--now", NOW, "--all-projects", "--days", DAYS],
        b"",
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), html);
    // One session: that session alone.
    let one = sessions.iter().next().unwrap();
    let s = env.ok("mem-report", &["--html", "--session", one], b"");
    let s = String::from_utf8_lossy(&s.stdout);
    assert_eq!(s.matches("<article ").count(), 1);
    assert!(ids(&s).contains(one));
    // A file: the observations that touched it.
    let f = env.ok(
        "mem-report",
        &["--html", "--file", "session_live.ex", "--all-projects"],
        b"",
    );
    let want = env.count(
        "SELECT count(*) FROM observations WHERE files_modified LIKE '%/session_live.ex\"%'
             OR files_read LIKE '%/session_live.ex\"%'",
    );
    let f = String::from_utf8_lossy(&f.stdout);
    assert_eq!(
        ids(&f).iter().filter(|r| r.starts_with('o')).count() as i64,
        want
    );
    // Nothing in scope: exit 1 and no file; a file that cannot be written is named.
    let none = env.run(
        "mem-report",
        &[
            "--html",
            "--all-projects",
            "--days",
            "1",
            "--now",
            "2020-01-01",
        ],
        b"",
    );
    assert_eq!(none.status.code(), Some(1), "{}", show(&none));
    let bad = env.run(
        "mem-report",
        &[
            "--html",
            "--all-projects",
            "--days",
            DAYS,
            "-o",
            "/nonexistent/dir/p.html",
        ],
        b"",
    );
    assert_eq!(bad.status.code(), Some(2), "{}", show(&bad));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("/nonexistent/dir/p.html"));
}

#[test]
fn html_call_graphs_of_real_diffs_have_the_changed_functions_and_their_calls() {
    // The fixture sessions mem-ast could map (their Write calls carry the file).
    let env = full_store();
    let fixtures = drawn_graphs(&env);
    // A real diff with calls among its changes: two releases of requests' sessions.py written
    // by two sessions of one project.
    let corpus = std::env::var("MEMKIT_TEST_PYCORPUS")
        .expect("MEMKIT_TEST_PYCORPUS is not set: run scripts/test (scripts/fetch-pycorpus)");
    let src = Path::new(&corpus).join("src");
    let env = Env::new();
    let proj = env.dir.path().join("proj");
    std::fs::create_dir_all(proj.join(".git")).unwrap();
    let file = proj.join("sessions.py");
    for (id, release) in [("r1", "requests-2.31.0"), ("r2", "requests-2.32.5")] {
        let path = src.join(format!("{release}-py3-none-any/requests/sessions.py"));
        let source = std::fs::read_to_string(&path).unwrap();
        crate::ast::write_session(&env, &proj, id, &file, &source);
    }
    let requests = drawn_graphs(&env);
    assert!(
        requests > 0,
        "requests' diff has no call among its changes ({fixtures} fixture graphs had one)"
    );
}

/// Checks the drawing of every mapped session of `env`'s page against the tables; how many
/// drawings had an edge.
fn drawn_graphs(env: &Env) -> usize {
    let html = std::fs::read_to_string(page(env, &["--all-projects", "--days", DAYS])).unwrap();
    let db = env.db();
    let mapped: Vec<String> = db
        .prepare("SELECT DISTINCT session_id FROM ast_files WHERE status = 'ok'")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(!mapped.is_empty(), "no fixture session was mapped");
    let mut drawn = 0;
    for sid in &mapped {
        let handle: i64 = db
            .query_row(
                "SELECT rowid FROM sessions WHERE session_id = ?1",
                [sid],
                |r| r.get(0),
            )
            .unwrap();
        let changed = refs(
            env,
            &format!(
                "SELECT qualname FROM function_map WHERE session_id = '{sid}' AND change != 'unchanged'"
            ),
        );
        // A resolved call whose both ends are changed definitions of the session, worked out
        // from the tables here rather than by memkit's graph code.
        let calls = refs(
            env,
            &format!(
                "SELECT DISTINCT c.caller || ' -> ' || c.target FROM call_graph c
                 JOIN function_map a ON a.session_id = c.session_id AND a.file_path = c.file_path
                      AND a.qualname = c.caller AND a.change != 'unchanged'
                 JOIN function_map b ON b.session_id = c.session_id AND b.qualname = c.target
                      AND b.change != 'unchanged'
                      AND b.file_path = CASE WHEN c.target_file IS NOT NULL THEN c.target_file
                          WHEN c.resolution IN ('direct', 'self_method') THEN c.file_path END
                 WHERE c.session_id = '{sid}' AND c.resolution != 'unresolved'"
            ),
        );
        let start = html.find(&format!("<article id=s{handle} ")).unwrap();
        let end = start + html[start..].find("</article>").unwrap();
        let article = &html[start..end];
        if changed.is_empty() {
            assert!(!article.contains("<svg class=\"cg\""), "{article}");
            continue;
        }
        let Some(at) = article.find("<svg class=\"cg\"") else {
            // Past 60 definitions a session gets its list and a note, not a drawing.
            assert!(
                changed.len() > 60 && article.contains("too many to draw"),
                "no call graph drawn for {} definitions",
                changed.len()
            );
            continue;
        };
        let svg = &article[at..];
        let nodes: BTreeSet<String> = attrs(svg, "data-fn");
        assert_eq!(nodes, changed, "{svg}");
        assert_eq!(svg.matches("class=\"cg-node").count(), changed.len());
        let froms = attr_list(svg, "data-from");
        let tos = attr_list(svg, "data-to");
        let edges: BTreeSet<String> = froms
            .iter()
            .zip(&tos)
            .map(|(a, b)| format!("{a} -> {b}"))
            .collect();
        assert_eq!(edges, calls, "{svg}");
        assert_eq!(svg.matches("class=\"cg-edge").count(), calls.len());
        drawn += (!calls.is_empty()) as usize;
    }
    drawn
}

/// The ids of a page's elements (the records' visible ids, unquoted as the page writes them),
/// before the compressed records.
fn ids(html: &str) -> BTreeSet<String> {
    let html = &html[..html.find("<script id=records").unwrap()];
    html.match_indices(" id=")
        .map(|(i, _)| {
            let v = &html[i + 4..];
            v[..v.find([' ', '>']).unwrap()]
                .trim_matches('"')
                .to_string()
        })
        .collect()
}

fn attr_list(s: &str, name: &str) -> Vec<String> {
    let key = format!(" {name}=\"");
    s.match_indices(&key)
        .map(|(i, _)| {
            let v = &s[i + key.len()..];
            v[..v.find('"').unwrap()]
                .replace("&amp;", "&")
                .replace("&quot;", "\"")
        })
        .collect()
}

fn attrs(s: &str, name: &str) -> BTreeSet<String> {
    attr_list(s, name).into_iter().collect()
}

#[test]
fn html_page_in_chromium_loads_offline_counts_filters_and_fits_a_phone() {
    let chromium = std::env::var("MEMKIT_TEST_CHROMIUM").expect(
        "MEMKIT_TEST_CHROMIUM is not set: run scripts/test (scripts/fetch-chromium installs Debian's chromium)",
    );
    let env = full_store();
    let file = page(&env, &["--all-projects", "--days", DAYS]);
    let url = format!("file://{}", file.display());
    let mut b = Browser::launch(&chromium, env.dir.path());
    b.viewport(1280, 800, false);
    b.open(&url);

    // Every session and observation of the scope, by its visible id.
    let on_page = |b: &mut Browser, selector: &str| -> BTreeSet<String> {
        let v = b.eval(&format!(
            "[...document.querySelectorAll('{selector}')].map(e => e.id)"
        ));
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap().to_string())
            .collect()
    };
    let sessions = refs(
        &env,
        &format!(
            "SELECT 's' || rowid FROM sessions WHERE coalesce(last_activity_at, ended_at, started_at, '') >= '{SINCE}'"
        ),
    );
    assert_eq!(on_page(&mut b, SESSIONS), sessions);
    assert_eq!(
        on_page(&mut b, OBSERVATIONS),
        refs(&env, "SELECT 'o' || id FROM observations")
    );
    let shots = screenshot_dir();
    b.screenshot(&shots.join("mem-report-html-1280x800.png"));

    // An observation's line expands to its full record, inflated from the page's records.
    let full = b.eval("document.querySelector('.full') === null");
    assert_eq!(
        full,
        json!(true),
        "full records are in the DOM before any expand"
    );
    let (id, summary, detail, facts): (i64, String, String, String) = env
        .db()
        .query_row(
            "SELECT id, summary, detail, facts FROM observations WHERE detail IS NOT NULL
             AND json_array_length(facts) > 0 ORDER BY length(detail) DESC LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .unwrap();
    b.eval(&format!("document.getElementById('o{id}').click()"));
    assert!(
        b.wait_for(&format!("document.querySelector('#o{id} .full') !== null")),
        "o{id} did not expand to its full record"
    );
    let shown = b.eval(&format!(
        "(() => {{ const f = document.querySelector('#o{id} .full'); return [f.querySelector('.summary').textContent, \
         f.querySelector('.detail').textContent, [...f.querySelectorAll('ul')].flatMap(u => [...u.children].map(l => l.textContent))]; }})()"
    ));
    assert_eq!(shown[0], json!(summary.trim()));
    assert_eq!(shown[1], json!(detail.trim()));
    let items: Vec<String> = serde_json::from_str(&facts).unwrap();
    for f in &items {
        assert!(
            shown[2].as_array().unwrap().contains(&json!(f)),
            "{f} not in o{id}'s record"
        );
    }

    // A session's title opens to its summary and the files its observations modified.
    let (handle, summary): (i64, String) = env
        .db()
        .query_row(
            "SELECT rowid, summary FROM sessions WHERE length(summary) > 0 ORDER BY rowid LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    b.eval(&format!(
        "document.querySelector('#s{handle} > h4').click()"
    ));
    assert!(
        b.wait_for(&format!(
            "document.querySelector('#s{handle} > .full') !== null"
        )),
        "s{handle} did not open"
    );
    assert_eq!(
        b.eval(&format!(
            "document.querySelector('#s{handle} > .full > .summary').textContent"
        )),
        json!(summary.trim())
    );

    // A second click folds it away; Enter on the focused line opens it again.
    let hidden = format!("document.querySelector('#o{id} .full').hidden");
    b.eval(&format!("document.getElementById('o{id}').click()"));
    assert_eq!(b.eval(&hidden), json!(true));
    b.eval(&format!("document.getElementById('o{id}').focus()"));
    for kind in ["keyDown", "keyUp"] {
        b.send(
            "Input.dispatchKeyEvent",
            json!({"type": kind, "key": "Enter", "code": "Enter", "windowsVirtualKeyCode": 13}),
        );
    }
    assert_eq!(b.eval(&hidden), json!(false));

    // Typing a word keeps exactly the records that contain it: an observation or a session by
    // its line or its full record (as stored), a session also by one of its observations.
    let typed = |b: &mut Browser, word: &str| -> Vec<Value> {
        b.eval(
            "{ const q = document.getElementById('q'); q.value = ''; q.dispatchEvent(new Event('input')); q.focus() }",
        );
        b.send("Input.insertText", json!({"text": word}));
        assert!(
            b.wait_for("document.documentElement.dataset.records === 'inflated'"),
            "the records were never inflated"
        );
        // A record's own text is what its line or card shows: an observation's ref and type
        // (drawn by the CSS from its attributes) and line, a session's card without its
        // observations, a learning whole.
        b.eval(&format!(
            "[...document.querySelectorAll('{SESSIONS}, {OBSERVATIONS}, {LEARNINGS}')].map(r => {{ \
               const kind = r.matches('{SESSIONS}') ? 'session' : r.matches('{OBSERVATIONS}') ? 'obs' : 'learning'; \
               const text = kind === 'learning' ? r.textContent : [r.id, r.dataset.k ?? '', \
                 ...[...r.childNodes].filter(c => c.tagName !== 'OL' && !c.classList?.contains('full')).map(c => c.textContent)].join('\\n'); \
               return {{ref: r.id, hidden: r.hidden, kind, text: text.toLowerCase(), \
                        child: r.querySelector('{OBSERVATIONS}:not([hidden])') !== null}}; }})"
        ))
        .as_array()
        .unwrap()
        .clone()
    };
    let stored = |word: &str| -> BTreeSet<String> {
        refs(
            &env,
            &format!(
                "SELECT 'o' || id FROM observations WHERE instr(lower(summary || char(10) || coalesce(detail, '') \
                 || facts || concepts || tags || files_modified || files_read || functions_changed \
                 || coalesce(session_id, '') || coalesce(created_at, '')), '{word}') > 0
                 UNION SELECT 's' || s.rowid FROM sessions s WHERE instr(lower(coalesce(s.summary, '') \
                 || char(10) || s.session_id), '{word}') > 0 OR EXISTS (SELECT 1 FROM observations o \
                 WHERE o.session_id = s.session_id AND instr(lower(o.files_modified), '{word}') > 0)"
            ),
        )
    };
    let check = |b: &mut Browser, word: &str| -> usize {
        let recs = typed(b, word);
        let full = stored(word);
        let mut visible = 0;
        for r in &recs {
            let reference = r["ref"].as_str().unwrap();
            let has = r["text"].as_str().unwrap().contains(word) || full.contains(reference);
            let shown = !r["hidden"].as_bool().unwrap();
            let want = has || (r["kind"] == "session" && r["child"].as_bool().unwrap());
            assert_eq!(shown, want, "{reference} for {word:?}");
            visible += (shown && r["kind"] != "session") as usize;
        }
        let said = b.eval("document.getElementById('shown').value");
        assert!(
            said.as_str()
                .unwrap()
                .ends_with(&format!("of {} records", recs.len())),
            "{said}"
        );
        assert!(
            visible > 0 && visible < recs.len() / 2,
            "{word}: {visible} of {}",
            recs.len()
        );
        visible
    };
    check(&mut b, "timeline");
    // A word of full records alone, on no line: found only once the records are inflated.
    let main = b.eval("document.querySelector('main').textContent.toLowerCase()");
    let main = main.as_str().unwrap();
    let details: Vec<String> = refs(
        &env,
        "SELECT lower(detail) FROM observations WHERE detail IS NOT NULL",
    )
    .into_iter()
    .collect();
    let hidden_word = details
        .iter()
        .flat_map(|d| d.split(|c: char| !c.is_ascii_alphabetic()))
        .filter(|w| w.len() >= 7 && !main.contains(w))
        .min()
        .expect("no word of a detail is off the page's lines")
        .to_string();
    check(&mut b, &hidden_word);
    b.eval(
        "{ const q = document.getElementById('q'); q.value = ''; q.dispatchEvent(new Event('input')) }",
    );
    assert_eq!(
        b.eval("document.querySelectorAll('[hidden]').length"),
        json!(0)
    );

    // A dark colour scheme changes the colours; a phone's width scrolls nothing sideways.
    let light = b.eval("getComputedStyle(document.body).backgroundColor");
    b.send(
        "Emulation.setEmulatedMedia",
        json!({"features": [{"name": "prefers-color-scheme", "value": "dark"}]}),
    );
    let dark = b.eval("getComputedStyle(document.body).backgroundColor");
    assert_ne!(light, dark);
    b.send(
        "Emulation.setEmulatedMedia",
        json!({"features": [{"name": "prefers-color-scheme", "value": "light"}]}),
    );
    b.viewport(390, 844, true);
    let width = b
        .eval("document.documentElement.scrollWidth")
        .as_i64()
        .unwrap();
    assert!(width <= 390, "the page is {width}px wide at phone width");
    b.screenshot(&shots.join("mem-report-html-390x844.png"));

    // Nothing went wrong in the console and nothing was asked of a network.
    let events = b.close();
    let errors: Vec<&Value> = events
        .iter()
        .filter(|e| match e["method"].as_str() {
            Some("Runtime.exceptionThrown") => true,
            Some("Runtime.consoleAPICalled") => e["params"]["type"] == "error",
            Some("Log.entryAdded") => e["params"]["entry"]["level"] == "error",
            _ => false,
        })
        .collect();
    assert!(errors.is_empty(), "console errors: {errors:?}");
    let requests: Vec<&str> = events
        .iter()
        .filter(|e| e["method"] == "Network.requestWillBeSent")
        .filter_map(|e| e["params"]["request"]["url"].as_str())
        .filter(|u| *u != url)
        .collect();
    assert!(requests.is_empty(), "requests: {requests:?}");
    assert!(
        events.iter().any(|e| e["method"] == "Page.loadEventFired"),
        "the page never loaded"
    );
    if std::env::var("MEMKIT_UPDATE_SCREENSHOT").is_ok_and(|v| v == "1") {
        let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs");
        std::fs::copy(
            shots.join("mem-report-html-1280x800.png"),
            docs.join("mem-report-html.png"),
        )
        .unwrap();
    }
}

/// Where the screenshots go: MEMKIT_SCREENSHOT_DIR, else target/screenshots.
fn screenshot_dir() -> PathBuf {
    let dir = std::env::var_os("MEMKIT_SCREENSHOT_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/screenshots"));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
