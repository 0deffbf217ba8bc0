#!/usr/bin/env python3
"""The daemon's owner beside strangers and a hung server.

Starts `agenvoy-mcp serve` with two fixture servers, `hung` (never answers a tool call) and
`ok`; opens IDLE sockets to the API that send nothing (any local process can), starts HUNG calls
to `hung` through `POST /v1/mcp/call`, then, while all of them are held, times the owner's
`GET /v1/mcp/status` (STATUS times) and calls to `ok`'s echo (CALLS times). It prints p50, p99
and the slowest of each beside the targets (status p99 under 100 ms, every healthy call under
1 s) and how the hung calls were answered (64 held, the rest 429), and exits 1 if a target is
missed.

    benches/api_fairness.py [--idle 300] [--hung 80] [--status 200] [--calls 20] [BINARY]

BINARY defaults to target/release/agenvoy-mcp, else target/debug/agenvoy-mcp. Standard
library only.
"""

import argparse
import http.client
import json
import pathlib
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
STATUS_P99_TARGET = 0.100
# The API's bound on one server's calls in flight (`Limits::max_calls_per_server`).
HELD = 64
CALL_TARGET = 1.0


def default_binary():
    for profile in ("release", "debug"):
        path = ROOT / "target" / profile / "agenvoy-mcp"
        if path.exists():
            return str(path)
    sys.exit("build agenvoy-mcp first (cargo build), or pass its path")


def request(authority, token, method, path, body=None, timeout=60):
    """One request on a connection of its own; (status, headers, body)."""
    host, port = authority.rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=timeout)
    headers = {"Authorization": f"Bearer {token}"}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    connection.request(method, path, body=data, headers=headers)
    response = connection.getresponse()
    answer = response.read()
    connection.close()
    return response.status, dict(response.getheaders()), answer


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--idle", type=int, default=300)
    parser.add_argument("--hung", type=int, default=80)
    parser.add_argument("--status", type=int, default=200)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("binary", nargs="?", default=None)
    args = parser.parse_args()
    binary = args.binary or default_binary()
    fixture = str(pathlib.Path(binary).with_name("agenvoy-mcp-fixture"))  # the test fixture
    folder = tempfile.TemporaryDirectory()
    config = pathlib.Path(folder.name) / "mcp.json"
    config.write_text(json.dumps({"servers": {
        "hung": {"command": fixture, "args": ["--mode", "hang"]},
        "ok": {"command": fixture},
    }}))
    daemon = subprocess.Popen(
        [binary, "serve", "--listen", "127.0.0.1:0", "--timeout", "60", "--config", str(config),
         "--token-file", str(pathlib.Path(folder.name) / "tokens.json")],
        env={"PATH": "/usr/bin:/bin", "AGENVOY_CONFIG_DIR": folder.name},
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    line = daemon.stdout.readline().strip()
    if not line.startswith("listening on http://"):
        daemon.kill()
        sys.exit(f"serve did not say where it listens: {line!r}")
    authority = line.removeprefix("listening on http://")
    token = (pathlib.Path(folder.name) / "api-token").read_text().strip()
    failed = []
    idle = []
    try:
        host, port = authority.rsplit(":", 1)
        idle = [socket.create_connection((host, int(port))) for _ in range(args.idle)]
        outcomes = []
        lock = threading.Lock()

        def hung_call():
            try:
                status, _, _ = request(authority, token, "POST", "/v1/mcp/call",
                                       {"name": "mcp__hung__echo", "arguments": {"text": "x"},
                                        "mode": "auto"}, timeout=120)
            except OSError as e:
                status = f"error {e}"
            with lock:
                outcomes.append(status)

        threads = [threading.Thread(target=hung_call, daemon=True) for _ in range(args.hung)]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with lock:
                if len(outcomes) >= args.hung - HELD:
                    break
            time.sleep(0.05)
        status_times = []
        for _ in range(args.status):
            started = time.monotonic()
            status, _, _ = request(authority, token, "GET", "/v1/mcp/status", timeout=30)
            status_times.append(time.monotonic() - started)
            if status != 200:
                failed.append(f"status answered {status}")
        call_times = []
        for _ in range(args.calls):
            started = time.monotonic()
            status, _, answer = request(authority, token, "POST", "/v1/mcp/call",
                                        {"name": "mcp__ok__echo", "arguments": {"text": "hi"},
                                         "mode": "auto"}, timeout=30)
            call_times.append(time.monotonic() - started)
            if status != 200 or json.loads(answer).get("text") != "hi":
                failed.append(f"a healthy call answered {status}: {answer[:200]!r}")
        with lock:
            refused = sum(1 for o in outcomes if o == 429)
            held = args.hung - len(outcomes)
        ms = lambda s: f"{s * 1000:.1f} ms"
        print(f"with {args.idle} idle sockets and {args.hung} calls to a hung server "
              f"({held} held in flight, {refused} refused with 429):")
        print(f"  GET /v1/mcp/status x{args.status}: p50 {ms(statistics.median(status_times))}, "
              f"p99 {ms(percentile(status_times, 0.99))}, slowest {ms(max(status_times))} "
              f"(target: p99 under {ms(STATUS_P99_TARGET)})")
        print(f"  healthy call x{args.calls}: p50 {ms(statistics.median(call_times))}, "
              f"slowest {ms(max(call_times))} (target: each under {ms(CALL_TARGET)})")
        if percentile(status_times, 0.99) > STATUS_P99_TARGET:
            failed.append("status p99 over its target")
        if max(call_times) > CALL_TARGET:
            failed.append("a healthy call over its target")
    finally:
        for s in idle:
            s.close()
        daemon.terminate()
        daemon.wait(timeout=30)
    for problem in failed:
        print("FAILED:", problem)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
