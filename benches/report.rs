//! mem-report --html figures: the time to write the page and its size, for the fixture store
//! (the fixture transcripts through mem-capture, mem-compress, mem-ast and mem-learn) and for
//! synthetic stores of 10,000 and 100,000 observations (memkit_testkit::corpus from the
//! fixtures' real text, seed 42, 12 projects, a summarised session per session id, functions
//! on a third of the observations, one learning per 20). Run: `cargo build --profile bench --bins &&
//! cargo bench --bench report` (MEMKIT_BENCH_SIZES=10000,100000 changes the sizes).
//!
//! Then, with MEMKIT_TEST_CHROMIUM set (scripts/fetch-chromium prints one), opens each
//! synthetic page from file:// in headless chromium (memkit_testkit::browser) and prints the
//! median of 3 loads' DOMContentLoaded, load event and first paint, and the first search's
//! wait for the full records to be inflated and for the frame that shows what it found (the
//! wait is polled every 20 ms).
//!
//! MEMKIT_BENCH_OPEN=a.html,b.html times opening those pages alone.
//!
//! Prints, per store: the median wall time of 3 runs of the process for the whole store in one
//! page (every project, every day) and for one project of the synthetic stores (a twelfth of
//! it: the page a user opens), and the page's size.

mod common;

use std::path::{Path, PathBuf};
use std::time::Instant;

use memkit_testkit as synth;
use memkit_testkit::browser::Browser;

/// Far enough ahead, and back, that every stored day is in the window.
const ALL: [&str; 4] = ["--now", "2100-01-01", "--days", "36500"];

/// Opens `page` from file:// in headless chromium 3 times; the medians of DOMContentLoaded's
/// end, the load event's end and the first contentful paint, in ms from navigation start.
fn open_page(chromium: &str, scratch: &Path, what: &str, page: &Path) {
    let mut b = Browser::launch(chromium, scratch);
    b.viewport(1280, 800, false);
    let url = format!("file://{}", page.display());
    let (mut dcl, mut load, mut paint) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..3 {
        b.open(&url);
        let (d, l, p) = b.load_times();
        dcl.push(d);
        load.push(l);
        paint.extend(p);
    }
    // The first search inflates every full record: its cost, once.
    let t = Instant::now();
    b.eval("{ const q = document.getElementById('q'); q.value = 'x'; q.dispatchEvent(new Event('input')) }");
    let inflate = if b.wait_for("document.documentElement.dataset.records === 'inflated'") {
        let inflated = t.elapsed().as_secs_f64() * 1000.0;
        // Then the frame that shows the records found.
        b.send(
            "Runtime.evaluate",
            serde_json::json!({"expression": "new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)))", "awaitPromise": true}),
        );
        format!(
            "{inflated:.0} ms, shown in {:.0} ms",
            t.elapsed().as_secs_f64() * 1000.0
        )
    } else {
        "never".to_string()
    };
    let paint = if paint.is_empty() {
        "none".to_string()
    } else {
        format!("{:.0} ms", common::median(&mut paint))
    };
    println!(
        "open {what:<39} DOMContentLoaded {:.0} ms, load {:.0} ms, first paint {paint}; first search inflates in {inflate}",
        common::median(&mut dcl),
        common::median(&mut load),
    );
    b.close();
}

/// Writes `home`/`name`.html three times; its path.
fn time_page(home: &Path, name: &str, what: &str, scope: &[&str]) -> PathBuf {
    let page = home.join(format!("{name}.html"));
    let mut ms = Vec::new();
    for _ in 0..3 {
        let mut c = common::cmd(home, "mem-report");
        c.args(["--html", "-o"]).arg(&page).args(ALL).args(scope);
        let t = Instant::now();
        let out = c.output().expect("mem-report");
        ms.push(t.elapsed().as_secs_f64() * 1000.0);
        assert!(
            out.status.success(),
            "mem-report --html {scope:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let bytes = std::fs::metadata(&page).unwrap().len();
    let name = format!("mem-report --html, {what}");
    common::figure(
        "report",
        None,
        &format!("{name}: write p50"),
        common::median(&mut ms),
        "ms",
        common::Budget::None,
        None,
    );
    common::figure(
        "report",
        None,
        &format!("{name}: page"),
        bytes as f64 / 1e6,
        "MB",
        common::Budget::None,
        None,
    );
    println!(
        "{what:<44} {:>9.0} ms  {:>8.2} MB",
        common::median(&mut ms),
        bytes as f64 / 1e6
    );
    page
}

fn fs_len(p: &Path) -> u64 {
    std::fs::metadata(p).map_or(0, |m| m.len())
}

fn main() {
    // MEMKIT_BENCH_OPEN=a.html,b.html: only time opening those pages.
    if let (Ok(pages), Ok(chromium)) = (
        std::env::var("MEMKIT_BENCH_OPEN"),
        std::env::var("MEMKIT_TEST_CHROMIUM"),
    ) {
        let scratch = tempfile::tempdir().unwrap();
        for page in pages.split(',') {
            let page = std::fs::canonicalize(page).unwrap();
            open_page(
                &chromium,
                scratch.path(),
                &page.display().to_string(),
                &page,
            );
        }
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    // MEMKIT_BENCH_KEEP=1 keeps the stores and pages, to look at.
    let kept;
    let root = if std::env::var_os("MEMKIT_BENCH_KEEP").is_some() {
        kept = tmp.keep();
        eprintln!("stores and pages kept in {}", kept.display());
        kept.as_path()
    } else {
        tmp.path()
    };
    println!(
        "{:<44} {:>12}  {:>11}",
        "mem-report --html of", "write (p50)", "page"
    );
    // The fixture store as the pipeline leaves it.
    let fx = root.join("fixtures");
    let base: Vec<synth::Obs> = common::fixture_turns(&fx)
        .into_iter()
        .flat_map(|t| t.obs)
        .collect();
    for tool in ["mem-compress", "mem-ast", "mem-learn"] {
        let st = common::cmd(&fx, tool).arg("-q").output().unwrap();
        assert!(
            st.status.success(),
            "{tool}: {}",
            String::from_utf8_lossy(&st.stderr)
        );
    }
    let n = common::observations(&fx);
    time_page(
        &fx,
        "all",
        &format!("fixture store ({n} observations)"),
        &["--all-projects"],
    );
    let mut pages = Vec::new();
    for n in common::sizes(&[10_000, 100_000]) {
        let (home, conn) = common::synth_store(root, &base, n);
        conn.execute_batch(common::SESSIONS_AND_LEARNINGS_SQL)
            .unwrap();
        let project: String = conn
            .query_row(
                "SELECT project FROM observations GROUP BY 1 ORDER BY count(*) DESC LIMIT 1",
                [],
                |r| r.get(0),
            )
            .unwrap();
        let per: i64 = conn
            .query_row(
                "SELECT count(*) FROM observations WHERE project = ?1",
                [&project],
                |r| r.get(0),
            )
            .unwrap();
        drop(conn);
        let all = time_page(
            &home,
            "all",
            &format!("{n} observations, every project"),
            &["--all-projects"],
        );
        let one = time_page(
            &home,
            "project",
            &format!("{n} observations, one project ({per})"),
            &["--project", &project],
        );
        pages.push((format!("{n} observations, every project"), all));
        pages.push((format!("{n} observations, one project"), one));
    }
    // Opening them, when a chromium is at hand (MEMKIT_TEST_CHROMIUM, as scripts/test sets it).
    match std::env::var("MEMKIT_TEST_CHROMIUM") {
        Ok(chromium) => {
            for (what, page) in pages.iter().filter(|(_, p)| fs_len(p) < 64_000_000) {
                open_page(&chromium, root, what, page);
            }
        }
        Err(_) => println!("(no page opened: set MEMKIT_TEST_CHROMIUM to a chromium to time it)"),
    }
}
