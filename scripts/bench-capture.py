#!/usr/bin/env python3
"""Wall time and peak RSS of one `mem-capture --hook` process, next to bare process start.

Prints medians and p99 for: /bin/true, a typical 5 KB PostToolUse, a 1 MB tool response;
then the import of every fixture transcript. Run: scripts/bench-capture.py [--n 300]
(builds the release binaries first). Figures, not assertions: the machine is shared and noisy.
"""
import argparse, json, os, shutil, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_once(argv, data, env):
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    p.stdin.write(data)
    p.stdin.close()
    _, status, ru = os.wait4(p.pid, 0)
    dt = (time.perf_counter() - t0) * 1000
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        sys.exit(f"{argv} exited {p.returncode}")
    return dt, ru.ru_maxrss / 1024  # ms, MiB


def series(name, argv, make, env, n):
    times, rss = [], []
    for i in range(n):
        dt, r = run_once(argv, make(i), env)
        times.append(dt)
        rss.append(r)
    times.sort()
    return {
        "case": name,
        "n": n,
        "p50_ms": round(statistics.median(times), 3),
        "p99_ms": round(times[min(n - 1, int(n * 0.99))], 3),
        "peak_rss_mib": round(max(rss), 1),
    }


def payload(i, size):
    out = ("cargo test output line with some text\n" * (size // 38 + 1))[:size]
    return json.dumps({
        "session_id": f"bench-{i % 7}", "hook_event_name": "PostToolUse", "cwd": ROOT,
        "transcript_path": "/tmp/t.jsonl", "tool_name": "Bash", "tool_use_id": f"toolu_{i}",
        "tool_input": {"command": "cargo test --all", "description": "Run tests"},
        "tool_response": {"stdout": out, "stderr": "", "interrupted": False, "isImage": False},
    }).encode()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=300)
    a = ap.parse_args()
    subprocess.run(["cargo", "build", "--release", "-q", "--bin", "mem-capture"], cwd=ROOT, check=True)
    exe = os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "release", "mem-capture")
    home = tempfile.mkdtemp(prefix="memkit-bench-")
    env = {"PATH": os.environ["PATH"], "MEM_HOME": home, "HOME": home}
    rows = [series("/bin/true", ["/bin/true"], lambda i: b"", env, a.n)]
    rows.append(series("5KB PostToolUse", [exe, "--hook"], lambda i: payload(i, 5000), env, a.n))
    rows.append(series("1MB tool_response", [exe, "--hook"], lambda i: payload(100000 + i, 1 << 20), env, max(20, a.n // 5)))
    base = rows[0]["p50_ms"]
    for r in rows:
        r["ratio_to_true_p50"] = round(r["p50_ms"] / base, 1)
        print(json.dumps(r))
    imp = []
    for _ in range(5):
        h = tempfile.mkdtemp(prefix="memkit-import-")
        t0 = time.perf_counter()
        subprocess.run([exe, "--transcripts", os.path.join(ROOT, "tests/fixtures/transcripts"), "-q"], env={**env, "MEM_HOME": h}, stdout=subprocess.DEVNULL, check=True)
        imp.append((time.perf_counter() - t0) * 1000)
        shutil.rmtree(h)
    print(json.dumps({"case": "import all fixture transcripts", "runs": 5, "p50_ms": round(statistics.median(imp), 1)}))
    shutil.rmtree(home)


if __name__ == "__main__":
    main()
