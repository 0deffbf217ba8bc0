#!/usr/bin/env python3
"""A server's lists against the daemon's memory: the bound on all that is kept of a server.

Starts `agenvoy-mcp serve` with one ordinary fixture server, then adds, lists through
`GET /v1/mcp/tools` and removes, one at a time:
- `flood-count`: 1,000 pages of about 3.5 MB, each of 40,000 tiny tools (every page under the
  4 MiB message cap: the attack the bound is for);
- `flood-bytes`: 1,000 pages of about 3.8 MB, each of 100 tools with long descriptions;
- `large`: 2 pages of about 3.8 MB, 2,000 tools in all, within the bound: kept.

For each it prints the daemon's resident memory before, its peak while the server was added and
listed (`VmHWM` after resetting it through `/proc/PID/clear_refs`), and after the removal, beside
the targets: a flood raises the peak by at most 64 MiB, and after its removal the RSS is within
8 MiB of before. For `large` it prints the RSS kept per byte of list pages, beside the target
of at most 3. It exits 1 if a target is missed or a flood server was not refused.

    benches/list_bounds.py [BINARY]

BINARY defaults to target/release/agenvoy-mcp, else target/debug/agenvoy-mcp. Linux only
(it reads /proc). Standard library only.
"""

import http.client
import json
import pathlib
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
MIB = 1 << 20
PEAK_TARGET = 64 * MIB
AFTER_TARGET = 8 * MIB
KEPT_TARGET = 3.0


def default_binary():
    for profile in ("release", "debug"):
        path = ROOT / "target" / profile / "agenvoy-mcp"
        if path.exists():
            return str(path)
    sys.exit("build agenvoy-mcp first (cargo build), or pass its path")


def fixture_beside(binary):
    """The test fixture server `cargo build` makes beside BINARY, agenvoy-mcp-fixture."""
    return str(pathlib.Path(binary).with_name("agenvoy-mcp-fixture"))


def status(pid, key):
    """A `/proc/PID/status` figure, in bytes."""
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(key)


def settled_rss(pid):
    """The RSS once it stops falling (freed memory goes back to the OS a little later)."""
    last = status(pid, "VmRSS")
    for _ in range(20):
        time.sleep(0.1)
        now = status(pid, "VmRSS")
        if now >= last:
            return now
        last = now
    return last


class Api:
    def __init__(self, authority, token):
        self.authority, self.token = authority, token

    def send(self, method, path, body=None):
        connection = http.client.HTTPConnection(self.authority, timeout=120)
        headers = {"Authorization": f"Bearer {self.token}"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        connection.request(method, path, body=data, headers=headers)
        response = connection.getresponse()
        answer = response.read()
        connection.close()
        return response.status, answer


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else default_binary()
    folder = tempfile.TemporaryDirectory()
    config = pathlib.Path(folder.name) / "mcp.json"
    fixture = {"command": fixture_beside(binary)}
    config.write_text(json.dumps({"servers": {"fixture": fixture}}))
    daemon = subprocess.Popen(
        [binary, "serve", "--listen", "127.0.0.1:0", "--config", str(config),
         "--token-file", str(pathlib.Path(folder.name) / "tokens.json")],
        env={"PATH": "/usr/bin:/bin", "AGENVOY_CONFIG_DIR": folder.name},
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    line = daemon.stdout.readline().strip()
    if not line.startswith("listening on http://"):
        daemon.kill()
        sys.exit(f"serve did not say where it listens: {line!r}")
    api = Api(line.removeprefix("listening on http://"),
              (pathlib.Path(folder.name) / "api-token").read_text().strip())
    failed = []
    try:
        # Warm up: the allocator's arenas and the ordinary server's tools.
        for _ in range(3):
            api.send("GET", "/v1/mcp/tools")
        print(f"{'server':<12} {'state':<10} {'RSS before':>11} {'peak +':>9} {'after -before':>14}  targets: peak + <= 64 MiB, after within 8 MiB")
        for name, mode in (("flood-count", "list-flood=1000x40000"),
                           ("flood-bytes", "list-flood=1000x100"),
                           ("large", "list-flood=2x1000")):
            before = settled_rss(daemon.pid)
            pathlib.Path(f"/proc/{daemon.pid}/clear_refs").write_text("5")
            code, answer = api.send("POST", "/v1/mcp", {"name": name, "command": fixture_beside(binary),
                                                        "args": ["--mode", mode]})
            state = json.loads(answer)["server"]["state"] if code == 201 else f"HTTP {code}"
            api.send("GET", "/v1/mcp/tools")
            peak = status(daemon.pid, "VmHWM") - before
            kept = settled_rss(daemon.pid) - before
            api.send("POST", "/v1/mcp/remove", {"name": name})
            after = settled_rss(daemon.pid) - before
            print(f"{name:<12} {state:<10} {before / MIB:>8.1f} MiB {peak / MIB:>5.1f} MiB {after / MIB:>10.1f} MiB")
            if name.startswith("flood"):
                if state != "failed":
                    failed.append(f"{name} was not refused: {state}")
                if peak > PEAK_TARGET:
                    failed.append(f"{name}: the peak rose by {peak / MIB:.1f} MiB")
            else:
                wire = 2 * 3_800_000
                ratio = kept / wire
                print(f"{'':<12} kept {kept / MIB:.1f} MiB for {wire / MIB:.1f} MiB of list pages: {ratio:.2f} a byte (target <= {KEPT_TARGET})")
                if state != "connected":
                    failed.append(f"{name} did not connect: {state}")
                if ratio > KEPT_TARGET:
                    failed.append(f"{name}: {ratio:.2f} bytes kept a byte listed")
            if abs(after) > AFTER_TARGET:
                failed.append(f"{name}: RSS after its removal is {after / MIB:+.1f} MiB from before")
    finally:
        daemon.terminate()
        daemon.wait(timeout=30)
    for problem in failed:
        print("FAILED:", problem)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
