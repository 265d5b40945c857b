//! mem sync figures against a local bare repository (no network time: git's file transport):
//! the first export of a store of 10,000 synthetic observations (memkit_testkit::corpus from the
//! fixtures' real text, seed 42; a summarised session per session id and one learning per 20,
//! every record of one shared git project), a sync with nothing new (the median of 10), and the
//! first import of it all by a second data home. Run: `cargo build --profile bench --bins &&
//! cargo bench --bench sync` (MEMKIT_BENCH_SIZES=10000,100000 changes the sizes).

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Instant;

const RUNS: usize = 10;

fn git(dir: &Path, args: &[&str]) {
    let st = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
}

/// One `mem sync` of `home` as machine `name`: its wall time in ms and its record.
fn sync(home: &Path, remote: &Path, project: &Path, name: &str) -> (f64, serde_json::Value) {
    let t = Instant::now();
    let out = common::cmd(home, "mem")
        .arg("sync")
        .env("MEM_SYNC_REMOTE", remote)
        .env("MEM_SYNC_PROJECTS", project)
        .env("MEM_SYNC_NAME", name)
        .output()
        .unwrap();
    let ms = t.elapsed().as_secs_f64() * 1000.0;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (ms, serde_json::from_slice(&out.stdout).unwrap())
}

fn main() {
    let tmp = tempfile::tempdir().unwrap();
    let (root, base) = common::root_and_base(tmp.path());
    for n in common::sizes(&[10_000]) {
        let (home, conn) = common::synth_store(&root, &base, n);
        conn.execute_batch(common::SESSIONS_AND_LEARNINGS_SQL)
            .unwrap();
        // One git project, on disk, that every record belongs to.
        let project = root.join(format!("app-{n}"));
        let _ = std::fs::remove_dir_all(&project);
        std::fs::create_dir_all(&project).unwrap();
        git(&project, &["init", "-q"]);
        git(
            &project,
            &["remote", "add", "origin", "git@github.com:acme/app.git"],
        );
        let p = project.to_str().unwrap();
        for t in ["observations", "sessions", "learnings"] {
            conn.execute(&format!("UPDATE {t} SET project = ?1"), [p])
                .unwrap();
        }
        conn.execute(
            "INSERT OR IGNORE INTO projects (full_path, name, created_at, updated_at) VALUES (?1, 'app', '', '')",
            [p],
        )
        .unwrap();
        conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
            .unwrap();
        drop(conn);
        let remote = root.join(format!("remote-{n}.git"));
        let _ = std::fs::remove_dir_all(&remote);
        git(&root, &["init", "-q", "--bare", remote.to_str().unwrap()]);
        let size = Some(n as u64);

        let (first, r) = sync(&home, &remote, &project, "laptop");
        let exported = r["exported"].as_u64().unwrap();
        println!(
            "{n} observations: first export {first:.0} ms ({exported} records, {} commit)",
            r["commits"]
        );
        common::figure(
            "sync",
            size,
            "first export (local bare remote)",
            first / 1000.0,
            "s",
            common::Budget::Max(10.0),
            None,
        );

        let t = Instant::now();
        for _ in 0..RUNS {
            let out = common::cmd(&home, "mem").arg("--version").output().unwrap();
            assert!(out.status.success());
        }
        let version = t.elapsed().as_secs_f64() * 1000.0 / RUNS as f64;
        let mut idle: Vec<f64> = (0..RUNS)
            .map(|_| {
                let (ms, r) = sync(&home, &remote, &project, "laptop");
                assert_eq!(r["exported"], 0);
                ms
            })
            .collect();
        let idle = common::median(&mut idle);
        println!("  sync with nothing new: p50 {idle:.1} ms (mem --version {version:.1} ms)");
        common::figure(
            "sync",
            size,
            "sync with nothing new p50 (local bare remote)",
            idle,
            "ms",
            common::Budget::Max(300.0),
            Some(("mem --version", version)),
        );

        // A second machine takes it all.
        let other = root.join(format!("desktop-{n}"));
        let _ = std::fs::remove_dir_all(&other);
        std::fs::create_dir_all(&other).unwrap();
        let clone = root.join(format!("desktop-app-{n}"));
        let _ = std::fs::remove_dir_all(&clone);
        std::fs::create_dir_all(&clone).unwrap();
        git(&clone, &["init", "-q"]);
        git(
            &clone,
            &["remote", "add", "origin", "https://github.com/acme/app"],
        );
        let (took, r) = sync(&other, &remote, &clone, "desktop");
        println!(
            "  first import by a second home: {took:.0} ms ({} records)",
            r["imported"]
        );
        assert_eq!(r["imported"].as_u64(), Some(exported));
        common::figure(
            "sync",
            size,
            "first import (local bare remote)",
            took / 1000.0,
            "s",
            common::Budget::None,
            None,
        );
    }
}
