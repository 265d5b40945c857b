#!/usr/bin/env python3
"""mem-mcp latency beside the command-line tools, on a store built from the bundled fixtures.

Prints medians and p90 (ms) over --n rounds, interleaved so load on a shared machine hits each
case alike:
  startup   spawn mem-mcp, send initialize, read its answer  | beside: `mem-search --version`
  search    one tools/call search in a running server        | beside: one `mem-search QUERY`
            process (the same query, project and limit)
Both search paths rank with BM25 (MEM_SEARCH_MODEL_LOAD=0: no model is loaded by either).

Run: scripts/bench-mcp.py [--n 50] [--bin target/debug]   (release: cargo build --release --bins
first and --bin target/release). Figures, not assertions: the machine is shared and noisy.
"""
import argparse, json, os, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def stats(xs):
    xs = sorted(xs)
    return statistics.median(xs), xs[min(len(xs) - 1, int(len(xs) * 0.9))]


def rpc(p, i, method, params):
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n")
    p.stdin.flush()
    while True:
        line = p.stdout.readline()
        if not line:
            sys.exit(f"mem-mcp closed stdout on {method}")
        v = json.loads(line)
        if v.get("id") == i:
            return v


INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}


def start(exe, env):
    return subprocess.Popen([exe], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env=env, text=True, bufsize=1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/debug"))
    a = ap.parse_args()
    tool = lambda name: os.path.join(a.bin, name)
    tmp = tempfile.mkdtemp(prefix="bench-mcp-")
    env = {"PATH": os.environ.get("PATH", ""), "HOME": tmp, "MEM_HOME": os.path.join(tmp, "mem"),
           "MEM_MODELS": os.path.join(tmp, "models"), "MEM_AUTO_INSTALL": "0", "MEM_SEARCH_MODEL_LOAD": "0"}
    run = lambda argv: subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    run([tool("mem-capture"), "-q", "--transcripts", os.path.join(ROOT, "tests/fixtures/transcripts")])
    run([tool("mem-compress"), "-q"])
    run([tool("mem-index"), "-q"])
    import sqlite3
    db = sqlite3.connect(os.path.join(tmp, "mem", "mem.db"))
    root, n_obs = db.execute("SELECT project, count(*) FROM observations GROUP BY project ORDER BY 2 DESC LIMIT 1").fetchone()
    total = db.execute("SELECT count(*) FROM observations").fetchone()[0]
    query = "fix the failing test"
    env["CLAUDE_PROJECT_DIR"] = root
    print(f"store: {total} observations from the fixtures; project {os.path.basename(root)} ({n_obs}); query {query!r}; n={a.n}")

    startup, version, call, cli = [], [], [], []
    server = start(tool("mem-mcp"), env)
    rpc(server, 0, "initialize", INIT)
    server.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
    for i in range(1, a.n + 1):
        t0 = time.perf_counter()
        p = start(tool("mem-mcp"), env)
        r = rpc(p, 1, "initialize", INIT)
        startup.append((time.perf_counter() - t0) * 1000)
        assert r["result"]["serverInfo"]["name"] == "memkit"
        p.stdin.close()
        p.wait()

        t0 = time.perf_counter()
        subprocess.run([tool("mem-search"), "--version"], env=env, check=True, stdout=subprocess.DEVNULL)
        version.append((time.perf_counter() - t0) * 1000)

        t0 = time.perf_counter()
        r = rpc(server, i, "tools/call", {"name": "search", "arguments": {"query": query, "limit": 10}})
        call.append((time.perf_counter() - t0) * 1000)
        assert not r["result"].get("isError"), r

        t0 = time.perf_counter()
        subprocess.run([tool("mem-search"), "--project", root, "-n", "10", "--mode", "probe", "--format", "jsonl", query],
                       env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        cli.append((time.perf_counter() - t0) * 1000)
    server.stdin.close()
    server.wait()
    for name, xs in [("mem-mcp start to initialize answered", startup), ("mem-search --version (process)", version),
                     ("mem-mcp tools/call search", call), ("mem-search QUERY (process)", cli)]:
        med, p90 = stats(xs)
        print(f"{name:40s} median {med:7.2f} ms   p90 {p90:7.2f} ms")


main()
