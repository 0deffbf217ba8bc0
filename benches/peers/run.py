#!/usr/bin/env python3
"""The peer benchmark: agenvoy-mcp beside rmcp (the official Rust SDK), the MCP TypeScript SDK
1.x and 2.x and the MCP Python SDK 2.x, the same client program written five times (ours/,
rmcp/, ts/client.mjs, ts2/client.mjs, py2/client.py), all talking to one hand-written Python
server (server.py), plus a no-library floor (floor/).

    benches/peers/run.py              # default: ~10 min
    benches/peers/run.py --quick      # one round, small sizes: ~2 min
    benches/peers/run.py --build-time # also clean release builds of the two Rust clients
    benches/peers/run.py --callgrind  # also instructions per echo call, under valgrind

It builds the Rust clients (cargo build --release, in this directory's own workspace, into
$CARGO_TARGET_DIR if set), installs the TS SDKs (npm ci into ./node_modules and
./ts2/node_modules) and the Python SDK (pip, pinned, into ./py2/venv), then runs the clients
interleaved (ours, rmcp, ts, ts2, py2, floor, ours, rmcp, ...) for several rounds and prints one
table, each peer's figure beside ours with its ratio to ours. Medians over rounds. The Rust
programs run tokio's multi-threaded runtime; the section "caller kinds" measures the stdio echo
and 64 in flight again for each kind of caller: from `block_on` on the multi-threaded runtime
(PEER_CALLER=block_on), from spawned tasks (PEER_CALLER=task), and on a current-thread
runtime (PEER_RUNTIME=current). "pinned" runs client and server with
`taskset -c 0`
(one CPU: no cross-CPU wake-ups, the cost of the code itself); "unpinned" leaves them to the
scheduler. RSS is each client's own peak (VmHWM read by the Rust clients at exit, Node's
resourceUsage().maxRSS), never the server's. Every run has a timeout; a run that outlives it has
its process group and every descendant killed and is recorded as "hang >Ns".
The table (markdown) and every raw result go to results/ (git-ignored).
"""
import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER = os.path.join(HERE, "server.py")
BIN = os.path.join(os.environ.get("CARGO_TARGET_DIR") or os.path.join(HERE, "target"), "release")
VENV = os.path.join(HERE, "py2", "venv")
CLIENTS = {
    "ours": [os.path.join(BIN, "peer-ours")],
    "rmcp": [os.path.join(BIN, "peer-rmcp")],
    "ts": ["node", os.path.join(HERE, "ts", "client.mjs")],
    "ts2": ["node", os.path.join(HERE, "ts2", "client.mjs")],
    "py2": [os.path.join(VENV, "bin", "python"), os.path.join(HERE, "py2", "client.py")],
    "floor": [os.path.join(BIN, "peer-floor")],
}
PEERS = ["ours", "rmcp", "ts", "ts2", "py2"]
# The table's columns.
TITLES = {"ours": "ours", "base": "ours (baseline)", "rmcp": "rmcp", "ts": "TS SDK 1.x",
          "ts2": "TS SDK 2.x", "py2": "Python SDK 2.x", "floor": "no-library floor"}
# Where the calls are made from, for the Rust programs (the others have one way): the
# environment of each kind.
CALLERS = [
    ("block_on, multi-threaded runtime", {"PEER_CALLER": "block_on"}),
    ("spawned tasks, multi-threaded runtime", {"PEER_CALLER": "task"}),
    ("block_on, current-thread runtime", {"PEER_RUNTIME": "current", "PEER_CALLER": "block_on"}),
]
MIB = 1 << 20
SECTIONS = ["startup", "echo", "callers", "inflight", "big"]


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def sh(cmd, **kw):
    log("$ " + " ".join(cmd))
    return subprocess.run(cmd, cwd=HERE, check=True, **kw)


def descendants(pid):
    """Every process below pid (read from /proc)."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def kill_tree(pid):
    """Kills an unreaped client's process group, and each of its descendants and their groups
    (a stdio server may have a group of its own). Only ever called before the client is reaped,
    so neither its pid nor its group can name another process yet."""
    targets = descendants(pid)
    groups = {pid}
    for p in targets:
        try:
            groups.add(os.getpgid(p))
        except ProcessLookupError:
            pass
    for p in targets:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for group in groups:
        try:
            os.killpg(group, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def run(argv, timeout, pinned=False, env=None):
    """Runs one client program (with `env` added to the environment); returns its JSON line (a
    dict) with the wall time, or an outcome saying why there is none."""
    if pinned:
        argv = ["taskset", "-c", "0"] + argv
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                start_new_session=True, env={**os.environ, **(env or {})})
        hung = threading.Event()

        def on_timeout():
            hung.set()
            kill_tree(proc.pid)

        timer = threading.Timer(timeout, on_timeout)
        timer.start()
        try:
            # Waits without reaping: until reaped, the client's pid and group stay its own.
            os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
            wall = time.perf_counter() - start
        finally:
            timer.cancel()
        # What the client left in its group (a stdio server it did not end).
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        _, status, _ = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        text, errors = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    if hung.is_set():
        return {"ok": False, "outcome": f"hang >{timeout:g}s", "wall": wall}
    lines = [l for l in text.splitlines() if l.startswith("{")]
    if proc.returncode != 0 or not lines:
        last = (errors.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        return {"ok": False, "outcome": "error: " + short(last), "wall": wall}
    result = json.loads(lines[-1])
    result["wall"] = wall
    result.setdefault("ok", True)
    if not result["ok"]:
        result["outcome"] = "error: " + short(result.get("error", "?"))
    return result


def short(message):
    """An error message fit for a table cell: rmcp's name their generic types in full."""
    message = re.sub(r"\[[^\[\]]*(\[[^\]]*\][^\[\]]*)*\]", "[…]", message).replace("|", "/")
    return message if len(message) <= 120 else message[:117] + "…"


class HttpServer:
    """server.py http on a free port, pinned to CPU 0 or not."""

    def __init__(self, pinned):
        argv = [sys.executable, SERVER, "http", "0"]
        if pinned:
            argv = ["taskset", "-c", "0"] + argv
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, start_new_session=True)
        line = self.proc.stdout.readline().decode()
        if not line.startswith("listening on "):
            raise SystemExit(f"server.py http did not start: {line!r}")
        self.base = line.split()[-1]

    def url(self, transport):
        return self.base + ("/json" if transport == "http-json" else "/sse")

    def stop(self):
        kill_tree(self.proc.pid)
        self.proc.wait()


def target(transport, servers, pinned):
    if transport == "stdio":
        return f"{sys.executable} {SERVER} stdio"
    return servers[pinned].url(transport)


def setup(args):
    os.chdir(HERE)
    if not args.no_build:
        sh(["cargo", "build", "--release", "--locked"])
    for folder in (HERE, os.path.join(HERE, "ts2")):
        lock = os.path.join(folder, "package-lock.json")
        marker = os.path.join(folder, "node_modules", ".package-lock.json")
        if not os.path.exists(marker) or os.path.getmtime(marker) < os.path.getmtime(lock):
            sh(["npm", "ci", "--prefix", folder, "--no-audit", "--no-fund"])
    # The Python SDK, pinned with everything it needs, in a venv of its own; installed again
    # when requirements.txt changes.
    requirements = os.path.join(HERE, "py2", "requirements.txt")
    stamp = os.path.join(VENV, ".stamp")
    with open(requirements, "rb") as f:
        wanted = f.read()
    if not os.path.exists(stamp) or open(stamp, "rb").read() != wanted:
        shutil.rmtree(VENV, ignore_errors=True)
        sh([sys.executable, "-m", "venv", VENV])
        sh([os.path.join(VENV, "bin", "pip"), "install", "--quiet", "--disable-pip-version-check",
            "-r", requirements])
        with open(stamp, "wb") as f:
            f.write(wanted)


def versions():
    def out(cmd):
        try:
            return subprocess.run(cmd, cwd=HERE, capture_output=True, text=True).stdout.strip()
        except OSError:
            return "?"
    def npm_version(folder, package):
        with open(os.path.join(folder, "node_modules", package, "package.json")) as f:
            return json.load(f)["version"]
    ts = npm_version(HERE, "@modelcontextprotocol/sdk")
    ts2 = npm_version(os.path.join(HERE, "ts2"), "@modelcontextprotocol/client")
    py2 = out([CLIENTS["py2"][0], "-c", "import importlib.metadata as m; print(m.version('mcp'))"])
    py2_python = out([CLIENTS["py2"][0], "-c", "import platform; print(platform.python_version())"])
    with open(os.path.join(HERE, "Cargo.lock")) as f:
        text = f.read()
    rmcp = text.split('name = "rmcp"\nversion = "')[1].split('"')[0]
    return {"rmcp": rmcp, "ts": ts, "ts2": ts2, "py2": py2, "py2_python": py2_python,
            "node": out(["node", "--version"]),
            "rustc": out(["rustc", "--version"]), "python": sys.version.split()[0],
            "ours": out(["git", "-C", HERE, "describe", "--always", "--dirty"])}


def crate_counts():
    counts = {}
    for name in ("ours", "rmcp"):
        tree = subprocess.run(["cargo", "tree", "--locked", "-p", f"peer-{name}", "-e", "normal",
                               "--prefix", "none"], cwd=HERE, capture_output=True, text=True,
                              check=True).stdout
        crates = {l.replace(" (*)", "").strip() for l in tree.splitlines() if l.strip()}
        counts[name] = len(crates) - 1  # not the client program itself
    for name, folder in (("ts", HERE), ("ts2", os.path.join(HERE, "ts2"))):
        with open(os.path.join(folder, "package-lock.json")) as f:
            counts[name] = len([k for k in json.load(f)["packages"] if k])
    with open(os.path.join(HERE, "py2", "requirements.txt")) as f:
        counts["py2"] = len([l for l in f if l.strip() and not l.startswith("#")])
    return counts


def build_times():
    """Clean release build of each Rust client in a fresh target directory (downloads done
    first, so they are not timed): wall and CPU (user + system) seconds."""
    sh(["cargo", "fetch", "--locked"])
    times = {}
    for name in ("ours", "rmcp"):
        with tempfile.TemporaryDirectory() as target_dir:
            before = os.times()
            start = time.perf_counter()
            build = ["cargo", "build", "--release", "--locked", "-p", f"peer-{name}",
                     "--target-dir", target_dir]
            log("$ " + " ".join(build))
            done = subprocess.run(build, cwd=HERE, capture_output=True, text=True)
            if done.returncode != 0:
                raise SystemExit(f"clean build of peer-{name} failed:\n{done.stderr[-3000:]}")
            after = os.times()
            cpu = (after.children_user - before.children_user +
                   after.children_system - before.children_system)
            times[name] = (time.perf_counter() - start, cpu)
    return times


def callgrind_per_call():
    """Instructions the client executes per echo call over stdio: a run of 2000 calls less one
    of 1000, over 1000 (start-up, warm-up and close cancel out). Counts, not seconds: the same
    whatever else the machine does. The TS and Python SDKs are left out (a JIT or an interpreter
    under valgrind says little)."""
    per_call = {}
    for c in [c for c in ("ours", "base", "rmcp", "floor") if c in CLIENTS]:
        totals = []
        for n in (1000, 2000):
            with tempfile.NamedTemporaryFile(suffix=".callgrind") as out:
                argv = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out.name}"]
                argv += CLIENTS[c] + ["stdio", target("stdio", {}, False), "echo", str(n)]
                log("$ " + " ".join(argv))
                subprocess.run(argv, cwd=HERE, check=True, timeout=900,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                text = out.read().decode(errors="replace")
            line = next(l for l in text.splitlines() if l.startswith(("totals:", "summary:")))
            totals.append(int(line.split()[1]))
        per_call[c] = round((totals[1] - totals[0]) / 1000)
    return per_call


def interleaved(clients, rounds, make_argv, timeout, pinned=False, env=None):
    """Runs the clients in turn, `rounds` times; returns each client's list of results."""
    results = {c: [] for c in clients}
    for _ in range(rounds):
        for c in clients:
            results[c].append(run(make_argv(c), timeout, pinned, env))
    return results


def median_of(results, key):
    values = [r[key] for r in results if r.get("ok") and key in r]
    if not values:
        failed = [r["outcome"] for r in results if not r.get("ok")]
        return failed[0] if failed else None
    return statistics.median(values)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="one round, small sizes (~2 min)")
    ap.add_argument("--rounds", type=int, help="rounds of each interleaved case (default 3)")
    ap.add_argument("--build-time", action="store_true",
                    help="also time clean release builds of the Rust clients (minutes)")
    ap.add_argument("--callgrind", action="store_true",
                    help="also count instructions per echo call under valgrind (a few minutes)")
    ap.add_argument("--no-build", action="store_true", help="use the clients already built")
    ap.add_argument("--big-timeout", type=float, default=30.0,
                    help="seconds one big result may take before it counts as a hang")
    ap.add_argument("--only", help="comma-separated sections to run (default all): "
                    + ",".join(SECTIONS))
    ap.add_argument("--baseline", metavar="BINARY",
                    help="also run this build of peer-ours (from another commit: copy "
                    "target/release/peer-ours aside before building this one), as the column "
                    "'ours (baseline)', interleaved with the others")
    args = ap.parse_args()
    if args.baseline:
        CLIENTS["base"] = [os.path.abspath(args.baseline)]
        PEERS.insert(1, "base")
    sections = args.only.split(",") if args.only else SECTIONS
    if not set(sections) <= set(SECTIONS):
        raise SystemExit(f"--only: sections are {','.join(SECTIONS)}")
    rounds = args.rounds or (1 if args.quick else 3)
    echo_calls = 1000 if args.quick else 2000
    inflight_secs = 1.0 if args.quick else 3.0
    big_sizes = [1 * MIB, 16 * MIB] if args.quick else [1 * MIB, 16 * MIB, 64 * MIB, 256 * MIB]

    setup(args)
    info = versions()
    info["date"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    info["cpus"] = os.cpu_count()
    log(f"versions: {info}")
    rows = []  # (section, figure, unit, better, {client: value})
    callers = []  # one summary per caller kind and pinning (see caller_rows)
    servers = {}
    try:
        servers = {False: HttpServer(False), True: HttpServer(True)}
        transports = ["stdio", "http-json", "http-sse"]

        if "startup" in sections:
            startup_rows(rows, servers, transports, rounds)
        if "echo" in sections:
            echo_rows(rows, servers, transports, rounds, echo_calls)
        if "callers" in sections:
            caller_rows(rows, callers, servers, rounds, echo_calls, inflight_secs)
        if "inflight" in sections:
            inflight_rows(rows, servers, transports, rounds, inflight_secs)
        if "big" in sections:
            big_rows(rows, servers, transports, big_sizes, args.big_timeout)
    finally:
        for s in servers.values():
            s.stop()
    finish(args, rows, info, callers)


def startup_rows(rows, servers, transports, rounds):
    log("startup: which requests each client sends")
    trace = os.path.join(tempfile.gettempdir(), f"peers-trace-{os.getpid()}")
    methods = {}
    for c in PEERS + ["floor"]:
        if os.path.exists(trace):
            os.remove(trace)
        run(CLIENTS[c] + ["stdio", f"{sys.executable} {SERVER} stdio {trace}", "startup"],
            30)
        with open(trace) if os.path.exists(trace) else open(os.devnull) as f:
            methods[c] = " + ".join(f.read().split()) or "none"
    rows.append(("startup", "requests before the first call (stdio)", "", "fewer", methods))

    log("startup: connect, list tools, close")
    for t in transports:
        res = interleaved(PEERS + ["floor"], 3 * rounds,
                          lambda c: CLIENTS[c] + [t, target(t, servers, False), "startup"],
                          30)
        rows.append(("startup", f"{t}: connect (handshake)", "ms", "lower",
                     {c: ms(median_of(r, "connect_us")) for c, r in res.items()}))
        rows.append(("startup", f"{t}: connect + list tools + close, in the program",
                     "ms", "lower", {c: ms(median_of(r, "total_us")) for c, r in res.items()}))
        rows.append(("startup", f"{t}: whole process (runtime start included)", "ms",
                     "lower", {c: secs_ms(median_of(r, "wall")) for c, r in res.items()}))


def echo_rows(rows, servers, transports, rounds, echo_calls):
    log(f"echo: {echo_calls} sequential calls")
    for t in transports:
        for pinned in (True, False):
            if t == "http-sse" and pinned:
                continue
            res = interleaved(PEERS + ["floor"], rounds,
                              lambda c: CLIENTS[c] + [t, target(t, servers, pinned), "echo",
                                                      str(echo_calls)], 120, pinned)
            where = "pinned" if pinned else "unpinned"
            p50 = {c: median_of(r, "p50_us") for c, r in res.items()}
            rows.append(("echo", f"{t} p50, {where}", "µs", "lower", p50))
            if all(isinstance(v, (int, float)) for v in p50.values()):
                rows.append(("echo", f"{t} p50 over the floor, {where}", "µs", "lower",
                             {c: round(p50[c] - p50["floor"], 1) for c in PEERS}))
            rows.append(("echo", f"{t} p99, {where}", "µs", "lower",
                         {c: median_of(r, "p99_us") for c, r in res.items()}))


def inflight_rows(rows, servers, transports, rounds, inflight_secs):
    log(f"inflight: 64 concurrent calls for {inflight_secs:g} s")
    for t in transports:
        for pinned in (False, True):
            if t == "http-sse" and pinned:
                continue
            # The floor keeps 64 in flight over stdio only: what the server answers at most.
            clients = PEERS + ["floor"] if t == "stdio" else PEERS
            res = interleaved(clients, rounds,
                              lambda c: CLIENTS[c] + [t, target(t, servers, pinned),
                                                      "inflight", str(inflight_secs)],
                              inflight_secs + 60, pinned)
            where = "pinned" if pinned else "unpinned"
            rows.append(("inflight", f"{t} 64 in flight, {where}", "calls/s", "higher",
                         {c: median_of(r, "calls_per_s") for c, r in res.items()}))
            rows.append(("inflight", f"{t} 64 in flight, {where}: client CPU per call",
                         "µs", "lower", cpu_per_call(res)))


def cpu_per_call(res):
    """Each client's median CPU time per call over its runs of 64 in flight (µs)."""
    for r in (r for rs in res.values() for r in rs if r.get("calls")):
        r["cpu_us_per_call"] = round(r["cpu_ms"] * 1000 / r["calls"], 2)
    return {c: median_of(r, "cpu_us_per_call") for c, r in res.items()}


def caller_rows(rows, callers, servers, rounds, echo_calls, inflight_secs):
    """The stdio echo and 64 in flight for each kind of caller of the Rust programs (CALLERS),
    pinned and not, each beside every peer and the floor run interleaved with it. Adds the
    rows, and to `callers` one summary each: the per-call cost over the floor of ours and rmcp,
    and ours at 64 in flight beside the best peer (the other programs do not change with the
    kind, but run again in each, as the baseline of the same minutes)."""
    for kind, env in CALLERS:
        for pinned in (True, False):
            where = "pinned" if pinned else "unpinned"
            log(f"callers: {kind}, {where}: {echo_calls} sequential calls, then 64 in flight")
            res = interleaved(PEERS + ["floor"], rounds,
                              lambda c: CLIENTS[c] + ["stdio", target("stdio", servers, pinned),
                                                      "echo", str(echo_calls)],
                              120, pinned, env)
            p50 = {c: median_of(r, "p50_us") for c, r in res.items()}
            rows.append(("callers", f"stdio p50, {where}, {kind}", "µs", "lower", p50))
            over = {}
            if all(isinstance(v, (int, float)) for v in p50.values()):
                over = {c: round(p50[c] - p50["floor"], 1) for c in PEERS}
                rows.append(("callers", f"stdio p50 over the floor, {where}, {kind}", "µs",
                             "lower", over))
            res = interleaved(PEERS + ["floor"], rounds,
                              lambda c: CLIENTS[c] + ["stdio", target("stdio", servers, pinned),
                                                      "inflight", str(inflight_secs)],
                              inflight_secs + 60, pinned, env)
            rate = {c: median_of(r, "calls_per_s") for c, r in res.items()}
            rows.append(("callers", f"stdio 64 in flight, {where}, {kind}", "calls/s",
                         "higher", rate))
            cpu = cpu_per_call(res)
            rows.append(("callers", f"stdio 64 in flight, {where}, {kind}: client CPU per call",
                         "µs", "lower", cpu))
            numbers = {c: v for c, v in rate.items() if c not in ("ours", "base", "floor") and
                       isinstance(v, (int, float))}
            best = max(numbers, key=numbers.get) if numbers else None
            callers.append({"kind": kind, "where": where, "over_floor": over, "p50": p50,
                            "calls_per_s": rate, "cpu_us_per_call": cpu, "best_peer": best})


def big_rows(rows, servers, transports, big_sizes, big_timeout):
    log(f"big: one result of {', '.join(str(s // MIB) for s in big_sizes)} MiB")
    for t in transports:
        failed_at = {}
        for size in big_sizes:
            res = {c: [] for c in PEERS}
            for c in PEERS:
                if c in failed_at:
                    res[c].append({"ok": False, "outcome": f"(failed at {failed_at[c]})"})
                    continue
                r = run(CLIENTS[c] + [t, target(t, servers, False), "big", str(size)],
                        big_timeout)
                log(f"  {c} {t} {size // MIB} MiB: {r.get('outcome', 'ok')}")
                res[c].append(r)
                if not r["ok"]:
                    failed_at[c] = f"{size // MIB} MiB"
            mib = size // MIB
            rows.append(("big", f"{t} {mib} MiB: time", "ms", "lower",
                         {c: secs_ms(median_of(r, "secs")) for c, r in res.items()}))
            rows.append(("big", f"{t} {mib} MiB: client peak RSS", "MiB", "lower",
                         {c: kb_mib(median_of(r, "rss_kb")) for c, r in res.items()}))


def finish(args, rows, info, callers):
    if args.callgrind:
        rows.append(("echo", "instructions per echo call, stdio (callgrind: 2000 calls less "
                     "1000, client only)", "", "lower", callgrind_per_call()))

    counts = crate_counts()
    rows.append(("build", "crates (cargo tree -e normal) / npm packages / PyPI packages", "",
                 "lower", counts))
    if args.build_time:
        times = build_times()
        rows.append(("build", "clean release build, wall", "s", "lower",
                     {c: round(w, 1) for c, (w, _) in times.items()}))
        rows.append(("build", "clean release build, CPU (user + sys)", "s", "lower",
                     {c: round(cpu, 1) for c, (_, cpu) in times.items()}))

    table = render(rows, info) + render_callers(callers)
    print(table)
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for name in ("latest", stamp):
        with open(os.path.join(HERE, "results", f"{name}.md"), "w") as f:
            f.write(table)
        with open(os.path.join(HERE, "results", f"{name}.json"), "w") as f:
            json.dump({"info": info, "rows": rows, "callers": callers}, f, indent=1,
                      default=str)
    log("wrote results/latest.md and results/latest.json")


def ms(us):
    return round(us / 1000, 1) if isinstance(us, (int, float)) else us


def secs_ms(s):
    return round(s * 1000, 1) if isinstance(s, (int, float)) else s


def kb_mib(kb):
    return round(kb / 1024, 1) if isinstance(kb, (int, float)) else kb


def render(rows, info):
    head = (f"Run {info['date']} on {info['cpus']} CPUs; ours {info['ours']}, rmcp {info['rmcp']}, "
            f"TS SDK {info['ts']} and {info['ts2']} (Node {info['node']}), Python SDK "
            f"{info['py2']} (Python {info['py2_python']}), {info['rustc']}, server: Python "
            f"{info['python']}.\nEach peer's figure is followed by its ratio to ours "
            f"(peer / ours); medians over the rounds.\n\n")
    columns = PEERS + ["floor"]
    lines = ["| figure | unit | better | " + " | ".join(TITLES[c] for c in columns) + " |",
             "|---|---|---|" + "---|" * len(columns)]
    for _, figure, unit, better, values in rows:
        base = values.get("ours")
        cells = []
        for c in columns:
            v = values.get(c)
            if v is None:
                cells.append("")
            elif c != "ours" and isinstance(v, (int, float)) and isinstance(base, (int, float)) \
                    and base:
                cells.append(f"{fmt(v)} ({v / base:.2f}x)")
            else:
                cells.append(fmt(v))
        lines.append(f"| {figure} | {unit} | {better} | " + " | ".join(cells) + " |")
    return head + "\n".join(lines) + "\n"


def render_callers(callers):
    """The summary of the caller kinds: the targets of issue 30 §2 beside what was measured."""
    if not callers:
        return ""
    lines = ["", "Caller kinds (stdio; the Rust programs' calls made as the first column says):",
             "", "| caller | CPUs | ours over the floor (µs) | rmcp over the floor (µs) | "
             "rmcp / ours (target >= 2) | ours at 64 in flight (calls/s) | best peer (calls/s) | "
             "ours / best peer (target >= 2) | the floor at 64 in flight: the server's most "
             "(calls/s) |", "|---|---|---|---|---|---|---|---|---|"]
    for c in callers:
        over, rate, best = c["over_floor"], c["calls_per_s"], c["best_peer"]
        ours, rmcp = over.get("ours"), over.get("rmcp")
        cost = f"{rmcp / ours:.2f}x" if isinstance(ours, (int, float)) and ours > 0 and \
            isinstance(rmcp, (int, float)) else ""
        peer = f"{fmt(rate[best])} ({TITLES[best]})" if best else ""
        speed = f"{rate['ours'] / rate[best]:.2f}x" if best and \
            isinstance(rate.get("ours"), (int, float)) else ""
        lines.append(f"| {c['kind']} | {c['where']} | {fmt(ours)} | {fmt(rmcp)} | {cost} | "
                     f"{fmt(rate.get('ours'))} | {peer} | {speed} | {fmt(rate.get('floor'))} |")
    return "\n".join(lines) + "\n"


def fmt(v):
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.0f}" if v >= 1000 else f"{v:.1f}"
    return str(v)


if __name__ == "__main__":
    main()
