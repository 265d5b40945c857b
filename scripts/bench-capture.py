#!/usr/bin/env python3
"""Wall time and peak RSS of one `mem-capture --hook` process, next to bare process start.

Prints wall-time medians and p99 (and the child's CPU time) for: /bin/true, `mem-capture --version` (process start + argv parsing),
a typical 5 KB PostToolUse, a 1 MB tool response; then the import of every fixture transcript.
The cases run interleaved (one of each per round) so load on a shared machine hits them alike.
Peak RSS is the child's own maximum, taken by /usr/bin/time -f %M: a child forked straight from
Python reports Python's RSS as its own (the pre-exec image counts), /bin/true included.

Run: scripts/bench-capture.py [--n 300] [--exe OLD --exe NEW]
(without --exe it builds and measures the release mem-capture; several --exe compare builds
in one run). Figures, not assertions: the machine is shared and noisy.
"""
import argparse, json, os, shutil, statistics, subprocess, sys, tempfile, time

FIGURES = os.environ.get("MEMKIT_BENCH_FIGURES")


def figure(name, value, unit, budget=None, baseline=None):
    """One line of scripts/bench's table (benches/common/mod.rs: figure), when it asked."""
    if FIGURES:
        with open(FIGURES, "a") as f:
            f.write(json.dumps({"bench": "capture", "size": None, "name": name, "value": value, "unit": unit,
                                "budget": budget, "baseline": baseline}) + "\n")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIME = "/usr/bin/time"


def run_once(argv, data, env):
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    p.stdin.write(data)
    p.stdin.close()
    _, status, ru = os.wait4(p.pid, 0)
    dt = (time.perf_counter() - t0) * 1000
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{argv} exited {os.waitstatus_to_exitcode(status)}")
    return dt, (ru.ru_utime + ru.ru_stime) * 1000


def peak_rss_mib(argv, data, env):
    """The child's max RSS as GNU time reports it (its own image, not the forking parent's)."""
    with tempfile.NamedTemporaryFile("r") as f:
        subprocess.run([TIME, "-o", f.name, "-f", "%M", *argv], input=data, env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        return int(f.read().split()[-1]) / 1024


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
    ap.add_argument("--n", type=int, default=300, help="runs per case (1 MB: n/5, at least 20)")
    ap.add_argument("--exe", action="append", help="mem-capture binary to measure (repeatable)")
    ap.add_argument("--rss-runs", type=int, default=10)
    a = ap.parse_args()
    exes = a.exe
    if not exes:
        subprocess.run(["cargo", "build", "--release", "-q", "--bin", "mem-capture"], cwd=ROOT, check=True)
        exes = [os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "release", "mem-capture")]
    homes = []
    cases = [("/bin/true", ["/bin/true"], lambda i: b"", None, a.n)]
    for exe in exes:
        home = tempfile.mkdtemp(prefix="memkit-bench-")
        homes.append(home)
        env = {"PATH": os.environ["PATH"], "MEM_HOME": home, "HOME": home}
        tag = exe if len(exes) > 1 else "mem-capture"
        cases += [
            (f"{tag} --version", [exe, "--version"], lambda i: b"", env, a.n),
            (f"{tag} 5KB PostToolUse", [exe, "--hook"], lambda i: payload(i, 5000), env, a.n),
            (f"{tag} 1MB tool_response", [exe, "--hook"], lambda i: payload(1000000 + i, 1 << 20), env, max(20, a.n // 5)),
        ]
    base_env = {"PATH": os.environ["PATH"]}
    times = {c[0]: [] for c in cases}
    cpu = {c[0]: [] for c in cases}
    for i in range(a.n):
        for name, argv, make, env, n in cases:
            if i < n:
                dt, c = run_once(argv, make(i), env or base_env)
                times[name].append(dt)
                cpu[name].append(c)
    have_time = os.access(TIME, os.X_OK)
    base = statistics.median(times["/bin/true"])
    for name, argv, make, env, n in cases:
        t = sorted(times[name])
        row = {
            "case": name,
            "n": len(t),
            "p50_ms": round(statistics.median(t), 3),
            "p99_ms": round(t[min(len(t) - 1, int(len(t) * 0.99))], 3),
            "ratio_to_true_p50": round(statistics.median(t) / base, 2),
            # CPU time (user + system) of the child: what the process itself costs, less
            # sensitive than wall time to other load on the machine.
            "cpu_p50_ms": round(statistics.median(cpu[name]), 3),
            # Distinct payloads (new tool_use_ids) so every RSS run does the full insert.
            "peak_rss_mib": round(max(peak_rss_mib(argv, make(2000000 + j), env or base_env) for j in range(a.rss_runs)), 1)
            if have_time else None,
        }
        print(json.dumps(row), flush=True)
        if len(exes) == 1 and name.endswith("5KB PostToolUse"):
            version = sorted(times["mem-capture --version"])
            v50 = statistics.median(version)
            v99 = version[min(len(version) - 1, int(len(version) * 0.99))]
            figure("mem-capture --hook, 5 KB PostToolUse p50", row["p50_ms"], "ms", {"max": 5},
                   {"name": "mem-capture --version", "value": v50})
            figure("mem-capture --hook, 5 KB PostToolUse p99", row["p99_ms"], "ms", {"max": 12},
                   {"name": "mem-capture --version p99", "value": v99})
            if row["peak_rss_mib"] is not None:
                figure("mem-capture --hook peak RSS", row["peak_rss_mib"], "MB", {"max": 500})
    for exe, home in zip(exes, homes):
        env = {"PATH": os.environ["PATH"], "HOME": home}
        imp = []
        for _ in range(5):
            h = tempfile.mkdtemp(prefix="memkit-import-")
            t0 = time.perf_counter()
            subprocess.run([exe, "--transcripts", os.path.join(ROOT, "tests/fixtures/transcripts"), "-q"], env={**env, "MEM_HOME": h}, stdout=subprocess.DEVNULL, check=True)
            imp.append((time.perf_counter() - t0) * 1000)
            shutil.rmtree(h)
        print(json.dumps({"case": f"{exe if len(exes) > 1 else 'mem-capture'} import all fixture transcripts", "runs": 5, "p50_ms": round(statistics.median(imp), 1)}))
        if len(exes) == 1:
            figure("mem-capture --transcripts, the fixture transcripts", round(statistics.median(imp), 1), "ms")
        shutil.rmtree(home)


if __name__ == "__main__":
    main()
