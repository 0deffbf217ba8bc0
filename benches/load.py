#!/usr/bin/env python3
"""Load through the daemon: many servers, many callers, the daemon's memory and descriptors.

Starts `agenvoy-mcp serve` with SERVERS fixture servers over stdio, then calls their `echo`
tool through `POST /v1/mcp/call` (auto mode) from CALLERS threads for SECONDS; then the same
again with HTTP_SERVERS of the servers over streamable HTTP (fixture servers of their own).
For each run it prints the calls made, the failed ones, p50 and p99 latency, and the daemon's
resident memory and open descriptors in the first and the last third of the run.

A listener stays on `GET /v1/mcp/events` through each run, reading it, as an agent host's
would; the run fails if its stream ends early.

It exits 1 if a call failed, or if memory or descriptors grew between the first and the last
third (more than 25% plus 4 MiB of RSS; more than 8 descriptors): a leak under load. Connections
to the HTTP servers are counted apart: they are the client's connection pool, which grows to the
most calls a server has had at once, so they are held to that bound (CALLERS a server) instead.

Then the fault run: 8 healthy stdio servers beside four faulty ones (one crashing in every
call, one that stops reading, one flooding the client with requests, one never answering), an
HTTP server killed and restarted halfway and one cutting every stream. It fails if a healthy
server's call fails, if any call takes longer than its bound or gets no HTTP answer, if the
restarted server's calls do not succeed again, or if a server's process group outlives the
daemon.

    benches/load.py [--seconds 60] [--servers 16] [--http-servers 4] [--callers 64] [BINARY]

BINARY defaults to target/release/agenvoy-mcp, else target/debug/agenvoy-mcp. Standard
library only. `.ci/run` runs a short version (`--seconds 8`).
"""

import argparse
import http.client
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
# Seconds of each run before the daemon's memory and descriptors are sampled: the warm-up,
# while connection pools fill.
WARM_UP = 2


def default_binary():
    for profile in ("release", "debug"):
        path = ROOT / "target" / profile / "agenvoy-mcp"
        if path.exists():
            return str(path)
    sys.exit("build agenvoy-mcp first (cargo build), or pass its path")


def fixture_beside(binary):
    """The test fixture server `cargo build` makes beside BINARY, agenvoy-mcp-fixture."""
    return str(pathlib.Path(binary).with_name("agenvoy-mcp-fixture"))


def start_listening(command):
    """Starts a process that prints `listening on URL` first; returns (process, URL)."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = process.stdout.readline().strip()
    if not line.startswith("listening on "):
        process.kill()
        sys.exit(f"{command[0]} did not say where it listens: {line!r}")
    return process, line[len("listening on "):]


def sample(pid, ports):
    """The process's resident memory in KiB, its open descriptors, and how many of those are
    connections to the given TCP ports (the HTTP servers: the client's connection pool)."""
    rss = 0
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
    sockets = set()
    entries = os.listdir(f"/proc/{pid}/fd")
    for entry in entries:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{entry}")
        except OSError:
            continue
        if target.startswith("socket:["):
            sockets.add(target[len("socket:["):-1])
    pooled = 0
    for table in ("tcp", "tcp6"):
        try:
            lines = open(f"/proc/{pid}/net/{table}").read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            remote_port = int(fields[2].rsplit(":", 1)[1], 16)
            if fields[9] in sockets and remote_port in ports:
                pooled += 1
    return rss, len(entries), pooled


class Caller(threading.Thread):
    """Calls tools in a loop on one keep-alive connection until `stop` is set."""

    def __init__(self, address, token, names, index, stop):
        super().__init__(daemon=True)
        self.address, self.token, self.names, self.index, self.stop = address, token, names, index, stop
        self.latencies, self.failures = [], []
        # (name, ok, seconds, when it ended) of every call, for the fault run.
        self.outcomes = []

    def run(self):
        host, port = self.address.rsplit(":", 1)
        connection = http.client.HTTPConnection(host, int(port), timeout=120)
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json",
                   "Host": self.address}
        n = self.index
        while not self.stop.is_set():
            name = self.names[n % len(self.names)]
            text = f"caller {self.index} call {n}"
            body = json.dumps({"name": name, "arguments": {"text": text}, "mode": "auto"})
            started = time.perf_counter()
            try:
                connection.request("POST", "/v1/mcp/call", body, headers)
                response = connection.getresponse()
                answer = response.read()
                elapsed = time.perf_counter() - started
                ok = response.status == 200 and text in answer.decode()
                self.outcomes.append((name, ok, elapsed, time.monotonic()))
                if response.status != 200:
                    self.failures.append(f"{name}: HTTP {response.status} {answer[:200]!r}")
                elif not ok:
                    self.failures.append(f"{name}: wrong answer {answer[:200]!r}")
                else:
                    self.latencies.append(elapsed)
            except OSError as e:
                self.outcomes.append((name, False, time.perf_counter() - started, time.monotonic()))
                self.failures.append(f"{name}: no answer: {e}")
                connection.close()
                connection = http.client.HTTPConnection(host, int(port), timeout=120)
            n += 1
        connection.close()


class Listener(threading.Thread):
    """Reads `GET /v1/mcp/events` until `stop` is set; `ended` tells if the stream ended first."""

    def __init__(self, address, token, stop):
        super().__init__(daemon=True)
        self.address, self.token, self.stop = address, token, stop
        self.events, self.ended = 0, None

    def run(self):
        host, port = self.address.rsplit(":", 1)
        connection = http.client.HTTPConnection(host, int(port), timeout=30)
        try:
            connection.request("GET", "/v1/mcp/events", headers={
                "Authorization": f"Bearer {self.token}", "Host": self.address})
            response = connection.getresponse()
            if response.status != 200:
                self.ended = f"HTTP {response.status}"
                return
            while not self.stop.is_set():
                line = response.fp.readline()
                if not line:
                    if not self.stop.is_set():
                        self.ended = "the stream ended"
                    return
                self.events += line.startswith(b"data: ")
        except OSError as e:
            if not self.stop.is_set():
                self.ended = f"the stream failed: {e}"
        finally:
            connection.close()


def run(binary, seconds, servers, http_servers, callers):
    with tempfile.TemporaryDirectory() as folder:
        folder = pathlib.Path(folder)
        fixture = fixture_beside(binary)
        remote = [start_listening([fixture, "--http", "127.0.0.1:0"])
                  for _ in range(http_servers)]
        entries = {}
        for i in range(servers):
            if i < http_servers:
                entries[f"s{i}"] = {"url": remote[i][1]}
            else:
                entries[f"s{i}"] = {"command": fixture}
        (folder / "mcp.json").write_text(json.dumps({"servers": entries}))
        daemon, url = start_listening([binary, "serve", "--listen", "127.0.0.1:0",
                                       "--config", str(folder / "mcp.json"),
                                       "--token-file", str(folder / "tokens.json")])
        try:
            token = (folder / "api-token").read_text().strip()
            address = url.removeprefix("http://")
            names = [f"mcp__s{i}__echo" for i in range(servers)]
            ports = {int(server_url.rsplit(":", 1)[1].split("/", 1)[0]) for _, server_url in remote}
            stop = threading.Event()
            threads = [Caller(address, token, names, i, stop) for i in range(callers)]
            listener = Listener(address, token, stop)
            listener.start()
            samples = []
            for thread in threads:
                thread.start()
            started = time.monotonic()
            while time.monotonic() < started + seconds:
                # The first seconds are warm-up (connection pools fill): not compared.
                if time.monotonic() > started + WARM_UP:
                    samples.append(sample(daemon.pid, ports))
                time.sleep(0.5)
            stop.set()
            for thread in threads:
                thread.join()
            samples.append(sample(daemon.pid, ports))
            # The listener is told to stop, then its stream is cut with the daemon.
        finally:
            daemon.terminate()
            daemon.wait(timeout=10)
            for process, _ in remote:
                process.kill()
                process.wait()
    latencies = sorted(x for t in threads for x in t.latencies)
    failures = [f for t in threads for f in t.failures]
    third = max(1, len(samples) // 3)
    first, last = samples[:third], samples[-third:]
    rss_first = statistics.mean(s[0] for s in first)
    rss_last = statistics.mean(s[0] for s in last)
    # Connections to the HTTP servers are the pool: it grows to the most calls a server has had
    # at once, which the callers bound. Every other descriptor must stay level.
    fds_first = max(s[1] - s[2] for s in first)
    fds_last = max(s[1] - s[2] for s in last)
    pooled = max(s[2] for s in samples)
    kind = f"{servers - http_servers} stdio + {http_servers} HTTP" if http_servers else f"{servers} stdio"
    print(f"== {kind} servers, {callers} callers, {seconds} s")
    if latencies:
        p50 = latencies[len(latencies) // 2] * 1000
        p99 = latencies[min(len(latencies) - 1, len(latencies) * 99 // 100)] * 1000
        print(f"calls: {len(latencies)} ok ({len(latencies) / seconds:.0f}/s), {len(failures)} failed;"
              f" p50 {p50:.2f} ms, p99 {p99:.2f} ms")
    else:
        print(f"calls: none ok, {len(failures)} failed")
    print(f"daemon RSS: {rss_first / 1024:.1f} MiB in the first third, {rss_last / 1024:.1f} MiB in the"
          f" last ({rss_last / rss_first:.2f}x); descriptors: {fds_first} then {fds_last}"
          + (f", and up to {pooled} pooled connections to the HTTP servers" if http_servers else ""))
    listener.join(timeout=35)
    print(f"events listener: {listener.events} events, "
          + (f"ended early: {listener.ended}" if listener.ended else "attached to the end"))
    problems = [f"failed call: {f}" for f in failures[:5]]
    if listener.ended:
        problems.append(f"the events listener was dropped: {listener.ended}")
    if not latencies:
        problems.append("no call succeeded")
    if rss_last > rss_first * 1.25 + 4096:
        problems.append("the daemon's memory grew under load")
    if fds_last > fds_first + 8:
        problems.append("the daemon's descriptors grew under load")
    if pooled > callers * http_servers:
        problems.append("the daemon holds more connections to its HTTP servers than calls can use")
    for problem in problems:
        print(f"FAIL {problem}")
    return not problems


def processes():
    """(parent pid, process group) of every process, from /proc."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        yield int(fields[1]), int(fields[2])


def children_groups(pid):
    """The process groups of `pid`'s children (each stdio server leads one)."""
    return {group for parent, group in processes() if parent == pid}


def group_alive(group):
    return any(g == group for _, g in processes())


# Stdio fault modes of the fixture server, each a server of the fault run.
FAULTS = {"crash": "crash-mid-call", "stuck": "stop-reading", "flood": "flood", "hang": "hang"}
# The daemon's per-call timeout in the fault run, and how long any call may take at most:
# the timeout, plus a reconnect (start and handshake) before it.
FAULT_TIMEOUT = 5
FAULT_BOUND = 2 * FAULT_TIMEOUT + 5


def faults(binary, seconds, callers):
    """Healthy and faulty servers under load, one HTTP server restarted halfway."""
    with tempfile.TemporaryDirectory() as folder:
        folder = pathlib.Path(folder)
        fixture = fixture_beside(binary)
        entries = {f"h{i}": {"command": fixture} for i in range(8)}
        for name, mode in FAULTS.items():
            entries[name] = {"command": fixture, "args": ["--mode", mode]}
        web, web_url = start_listening([fixture, "--http", "127.0.0.1:0"])
        cut, cut_url = start_listening([fixture, "--http", "127.0.0.1:0",
                                        "--mode", "cut-stream"])
        entries["web"], entries["cut"] = {"url": web_url}, {"url": cut_url}
        (folder / "mcp.json").write_text(json.dumps({"servers": entries}))
        daemon, url = start_listening([binary, "serve", "--listen", "127.0.0.1:0",
                                       "--timeout", str(FAULT_TIMEOUT),
                                       "--config", str(folder / "mcp.json"),
                                       "--token-file", str(folder / "tokens.json")])
        try:
            token = (folder / "api-token").read_text().strip()
            names = [f"mcp__{name}__echo" for name in entries]
            stop = threading.Event()
            threads = [Caller(url.removeprefix("http://"), token, names, i, stop)
                       for i in range(callers)]
            for thread in threads:
                thread.start()
            time.sleep(seconds / 2)
            web.kill()
            web.wait()
            restarted_at = time.monotonic()
            port = web_url.rsplit(":", 1)[1].split("/")[0]
            web, _ = start_listening([fixture, "--http", f"127.0.0.1:{port}"])
            time.sleep(seconds / 2)
            stop.set()
            for thread in threads:
                thread.join()
            groups = children_groups(daemon.pid)
        finally:
            daemon.terminate()
            daemon.wait(timeout=10)
            for process in (web, cut):
                process.kill()
                process.wait()
    outcomes = [o for t in threads for o in t.outcomes]
    problems = []
    healthy_servers = {f"h{i}" for i in range(8)} | {"cut"}
    healthy = [o for o in outcomes if o[0].split("__")[1] in healthy_servers]
    problems += [f"a healthy server's call failed: {o[0]}" for o in healthy if not o[1]][:3]
    slow = [o for o in outcomes if o[2] > FAULT_BOUND]
    problems += [f"{o[0]} took {o[2]:.1f} s, more than {FAULT_BOUND} s" for o in slow][:3]
    unanswered = [f for t in threads for f in t.failures if "no answer" in f]
    problems += [f"a call got no HTTP answer: {f}" for f in unanswered][:3]
    web_calls = sorted((o for o in outcomes if "__web__" in o[0]), key=lambda o: o[3])
    late = [o for o in web_calls if o[3] > restarted_at + FAULT_TIMEOUT]
    if not late or not all(o[1] for o in late[len(late) // 2:]):
        problems.append("calls to the restarted HTTP server did not succeed again")
    left = [g for g in groups if group_alive(g)]
    if left:
        problems.append(f"process groups left after the daemon stopped: {left}")
    print(f"== faults: 8 healthy stdio, {', '.join(FAULTS)} (stdio), an HTTP server restarted"
          f" halfway, one cutting its streams; {callers} callers, {seconds} s")
    by_server = {}
    for name, ok, elapsed, _ in outcomes:
        server = name.split("__")[1]
        done, good, longest = by_server.get(server, (0, 0, 0.0))
        by_server[server] = (done + 1, good + ok, max(longest, elapsed))
    for server, (done, good, longest) in sorted(by_server.items()):
        print(f"  {server:6} {done:6} calls, {good:6} ok, longest {longest:.2f} s")
    print(f"  every call answered within {FAULT_BOUND} s: {not slow and not unanswered};"
          f" process groups left: {len(left)}")
    for problem in problems:
        print(f"FAIL {problem}")
    return not problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--servers", type=int, default=16)
    parser.add_argument("--http-servers", type=int, default=4)
    parser.add_argument("--callers", type=int, default=64)
    parser.add_argument("binary", nargs="?")
    args = parser.parse_args()
    binary = args.binary or default_binary()
    ok = run(binary, args.seconds, args.servers, 0, args.callers)
    ok = run(binary, args.seconds, args.servers, args.http_servers, args.callers) and ok
    ok = faults(binary, max(args.seconds, 2 * FAULT_BOUND), args.callers) and ok
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
