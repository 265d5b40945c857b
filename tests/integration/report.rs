//! mem-report's views on the fixture transcripts, and the visible ids (`o17`, `s4`, `l3`) every
//! tool prints and takes.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::{Env, jsonl, show};

/// The fixture transcripts imported and compressed: the store the report tests read.
pub fn compressed_fixtures() -> Env {
    let env = Env::new();
    env.import_fixtures();
    env.ok("mem-compress", &["-q"], b"");
    env
}

fn text(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn projects_and_sessions_lists_count_what_is_stored() {
    let env = compressed_fixtures();
    let recs = jsonl(&env.ok("mem-report", &["--projects", "--format", "jsonl"], b""));
    let sessions: BTreeMap<String, i64> =
        env.pairs("SELECT project, count(*) FROM sessions WHERE project IS NOT NULL GROUP BY 1");
    let obs: BTreeMap<String, i64> = env
        .pairs("SELECT project, count(*) FROM observations WHERE project IS NOT NULL GROUP BY 1");
    assert_eq!(recs.len(), sessions.len().max(obs.len()), "{recs:?}");
    for r in &recs {
        let p = r["project"].as_str().unwrap();
        assert_eq!(r["type"], "project");
        assert_eq!(r["sessions"], sessions.get(p).copied().unwrap_or(0), "{p}");
        assert_eq!(r["observations"], obs.get(p).copied().unwrap_or(0), "{p}");
    }
    // Most recent activity first.
    let last: Vec<&str> = recs
        .iter()
        .map(|r| r["last_activity_at"].as_str().unwrap_or(""))
        .collect();
    assert!(last.windows(2).all(|w| w[0] >= w[1]), "{last:?}");

    // From a directory that is no known project, every project's sessions are listed.
    let list = jsonl(&env.ok("mem-report", &["--sessions", "--format", "jsonl"], b""));
    assert_eq!(
        list.len() as i64,
        env.count("SELECT count(*) FROM sessions")
    );
    let rowids: BTreeMap<String, i64> = env.pairs("SELECT session_id, rowid FROM sessions");
    for s in &list {
        let id = s["session_id"].as_str().unwrap();
        assert_eq!(s["ref"], format!("s{}", rowids[id]));
        let n = env.count(&format!(
            "SELECT count(*) FROM observations WHERE session_id = '{id}'"
        ));
        assert_eq!(s["observations"], n, "{s}");
    }
    // One project's, by name.
    let one = jsonl(&env.ok(
        "mem-report",
        &[
            "--sessions",
            "--project",
            "claude-code-log",
            "--format",
            "jsonl",
        ],
        b"",
    ));
    assert_eq!(
        one.len() as i64,
        env.count(
            "SELECT count(*) FROM sessions WHERE project = '/Users/dain/workspace/claude-code-log'"
        )
    );
    assert!(one.iter().all(|s| s["project_name"] == "claude-code-log"));
}

#[test]
fn the_days_report_holds_the_window_and_nothing_older() {
    let env = compressed_fixtures();
    // As of the end of the spotter sessions' day: one day back holds exactly the sessions
    // active since then.
    let now = "2026-02-11T23:30:00Z";
    let since = "2026-02-10T23:30:00.000Z";
    let out = env.ok(
        "mem-report",
        &["--days", "1", "--now", now, "--format", "jsonl"],
        b"",
    );
    let recs = jsonl(&out);
    let sessions: Vec<&Value> = recs.iter().filter(|r| r["type"] == "session").collect();
    let want = env.count(&format!(
        "SELECT count(*) FROM sessions WHERE coalesce(last_activity_at, ended_at, started_at)
             BETWEEN '{since}' AND '2026-02-11T23:30:00.000Z'"
    ));
    assert!(want > 0);
    assert_eq!(sessions.len() as i64, want, "{recs:?}");
    // Each observation follows its session and was made in the window.
    let mut current = None;
    for r in &recs {
        if r["type"] == "session" {
            current = r["session_id"].as_str();
        } else {
            let t = r["created_at"].as_str().unwrap();
            assert!(t >= since && t <= "2026-02-11T23:30:00.000Z", "{r}");
            if let Some(s) = r["session_id"].as_str() {
                assert_eq!(Some(s), current, "{r}");
            }
        }
    }

    // The markdown a person reads: a heading per day, sessions with their observations.
    let md = text(&env.ok(
        "mem-report",
        &["--days", "1", "--now", now, "--format", "md"],
        b"",
    ));
    assert!(md.starts_with("# every project: the last 1 day\n"), "{md}");
    assert!(md.contains("## 2026-02-11"), "{md}");
    let first_obs = recs
        .iter()
        .find(|r| r["type"] != "session")
        .and_then(|r| r["id"].as_i64())
        .unwrap();
    assert!(md.contains(&format!("- o{first_obs} ")), "{md}");
    assert!(!md.contains("## 2026-02-09"), "{md}");

    // Nothing in an empty window: exit status 1.
    let none = env.run(
        "mem-report",
        &["--days", "1", "--now", "2020-01-01", "--format", "jsonl"],
        b"",
    );
    assert_eq!(none.status.code(), Some(1), "{}", show(&none));
}

#[test]
fn a_file_a_session_and_ids_of_every_kind() {
    let env = compressed_fixtures();
    // --file: every observation that read or modified the file, found by its ending.
    let out = env.ok(
        "mem-report",
        &["--file", "session_live.ex", "--format", "jsonl"],
        b"",
    );
    let recs = jsonl(&out);
    let want = env.count(
        "SELECT count(*) FROM observations WHERE files_modified LIKE '%/session_live.ex\"%'
             OR files_read LIKE '%/session_live.ex\"%'",
    );
    assert!(want > 0);
    assert_eq!(recs.len() as i64, want, "{recs:?}");
    let md = text(&env.ok(
        "mem-report",
        &["--file", "session_live.ex", "--format", "md"],
        b"",
    ));
    assert!(
        md.contains("## Changed by") && md.contains("## Read by"),
        "{md}"
    );
    let none = env.run("mem-report", &["--file", "no_such_file.rs"], b"");
    assert_eq!(none.status.code(), Some(1), "{}", show(&none));

    // A session by its visible id and by its session id: the same report.
    let (sid, rowid): (String, i64) = env
        .db()
        .query_row(
            "SELECT session_id, rowid FROM sessions s WHERE EXISTS
               (SELECT 1 FROM observations o WHERE o.session_id = s.session_id) LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let by_ref = text(&env.ok("mem-report", &[&format!("s{rowid}"), "--format", "md"], b""));
    let by_flag = text(&env.ok("mem-report", &["--session", &sid, "--format", "md"], b""));
    assert_eq!(by_ref, by_flag);
    assert!(by_ref.starts_with(&format!("## s{rowid} ")), "{by_ref}");
    let obs_id: i64 = env.value(&format!(
        "SELECT min(id) FROM observations WHERE session_id = '{sid}'"
    ));
    assert!(by_ref.contains(&format!("- o{obs_id} ")), "{by_ref}");
    // mem-search takes the same session id forms.
    env.ok("mem-index", &["-q"], b"");
    let search = |session: &str| {
        let out = env.ok(
            "mem-search",
            &[
                "--all-projects",
                "--engine",
                "bm25",
                "--session",
                session,
                "the",
                "-n",
                "50",
            ],
            b"",
        );
        jsonl(&out)
    };
    let by_uuid = search(&sid);
    assert!(!by_uuid.is_empty());
    assert!(
        by_uuid.iter().all(|h| h["session_id"] == sid.as_str()),
        "{by_uuid:?}"
    );
    assert_eq!(search(&format!("s{rowid}")), by_uuid);

    // An observation: o17, 17, #17 and --obs are one thing; old numeric input keeps working.
    let forms = [
        vec![format!("o{obs_id}")],
        vec![obs_id.to_string()],
        vec![format!("#{obs_id}")],
        vec!["--obs".into(), obs_id.to_string()],
    ];
    let outs: Vec<String> = forms
        .iter()
        .map(|a| {
            let mut args: Vec<&str> = a.iter().map(String::as_str).collect();
            args.extend(["--format", "md"]);
            text(&env.ok("mem-report", &args, b""))
        })
        .collect();
    assert!(outs.windows(2).all(|w| w[0] == w[1]), "{outs:?}");
    assert!(
        outs[0].starts_with(&format!("## o{obs_id} ")),
        "{}",
        outs[0]
    );

    // A session id where an observation is wanted says where it goes.
    let wrong = env.run("mem-report", &["--obs", &format!("s{rowid}")], b"");
    assert_eq!(wrong.status.code(), Some(2), "{}", show(&wrong));
    assert!(String::from_utf8_lossy(&wrong.stderr).contains(&format!("--session s{rowid}")));
    // Ids that exist nowhere: reported, exit 1.
    let missing = env.run("mem-report", &["s99999", "l99999"], b"");
    assert_eq!(missing.status.code(), Some(1), "{}", show(&missing));
    let err = String::from_utf8_lossy(&missing.stderr);
    assert!(
        err.contains("no session s99999") && err.contains("no learning l99999"),
        "{err}"
    );

    // A learning by its id.
    env.ok(
        "mem-learn",
        &[
            "add",
            "--project",
            "/Users/dain/workspace/claude-code-log",
            "Run the tests with uv run pytest",
        ],
        b"",
    );
    let l: i64 = env.value("SELECT max(id) FROM learnings");
    let md = text(&env.ok("mem-report", &[&format!("l{l}"), "--format", "md"], b""));
    assert!(
        md.starts_with(&format!("## l{l} ")) && md.contains("uv run pytest"),
        "{md}"
    );
}

#[test]
fn context_and_search_print_ids_that_report_takes() {
    let env = compressed_fixtures();
    let block = text(&env.ok(
        "mem-context",
        &[
            "--project",
            "/Users/dain/workspace/claude-code-log",
            "--format",
            "text",
        ],
        b"",
    ));
    let id = block
        .lines()
        .find_map(|l| {
            let rest = l.strip_prefix("- o")?;
            let n: String = rest.chars().take_while(char::is_ascii_digit).collect();
            n.parse::<i64>().ok()
        })
        .unwrap_or_else(|| panic!("no o-id line in {block}"));
    assert!(!block.contains("- #"), "{block}");
    env.ok("mem-report", &[&format!("o{id}")], b"");

    env.ok("mem-index", &["-q"], b"");
    let hits = jsonl(&env.ok(
        "mem-search",
        &[
            "--all-projects",
            "--engine",
            "bm25",
            "transcript",
            "--format",
            "jsonl",
        ],
        b"",
    ));
    assert!(!hits.is_empty());
    for h in &hits {
        let want = match h["source"].as_str().unwrap() {
            "session" => format!("s{}", h["id"]),
            _ => format!("o{}", h["id"]),
        };
        assert_eq!(h["ref"], want, "{h}");
        env.ok("mem-report", &[h["ref"].as_str().unwrap()], b"");
    }
}
