#!/usr/bin/env python3
"""A server's questions against the daemon's memory: what is kept of questions waiting for an
answer is bounded, whatever a server puts in them.

Starts `agenvoy-mcp serve` with one fixture server and a listener on `/v1/mcp/events` (without
one, questions are declined at once), then has the server ask, through its `client_request`
tool, URL elicitations padded in `_meta` (the padding is made by the server, so the API
request stays small):
- `zeros`: 16 questions of 3.9 MB, an array of zeros (two bytes a value on the wire, about
  100 bytes a value once parsed: 190 MiB each before the bound on values);
- `text`: 16 questions of 3.9 MB of text: the ones that fit the 16 MiB held of one server's
  questions wait, the others are refused.
Each time the 16 are asked at once; once each waits or was refused, the peak is read and the
waiting ones are declined.

For each it prints how many questions waited and were refused, and the daemon's peak resident
memory above where it was before (`VmHWM` after a reset through `/proc/PID/clear_refs`),
beside the target: 16 questions of 3.9 MB raise the peak by at most 64 MiB. It exits 1 if a
target is missed.

    benches/question_bounds.py [BINARY [FIXTURE]]

BINARY (the daemon) defaults to target/release/agenvoy-mcp, else target/debug/agenvoy-mcp;
FIXTURE (the server that asks) to the agenvoy-mcp-fixture beside BINARY: an older daemon is
measured beside this one with this one's fixture. Linux only (it reads /proc). Standard library only.
"""

import concurrent.futures
import http.client
import json
import pathlib
import subprocess
import sys
import tempfile
import threading
import time

# The daemon's API and /proc readings, as the list bench uses them.
from list_bounds import Api, default_binary, fixture_beside, status

MIB = 1 << 20
PEAK_TARGET = 64 * MIB
PAD = 3_900_000


class Listening(Api):
    def listen(self, questions):
        """Follows the event stream on a thread, putting each question's id in `questions`."""
        connection = http.client.HTTPConnection(self.authority, timeout=600)
        connection.request("GET", "/v1/mcp/events",
                           headers={"Authorization": f"Bearer {self.token}"})
        response = connection.getresponse()

        def read():
            for line in response:
                if line.startswith(b"data: "):
                    event = json.loads(line[6:])
                    if event.get("type") == "request":
                        questions.append(event["id"])

        threading.Thread(target=read, daemon=True).start()


def ask(api, pad):
    body = {"name": "mcp__q__client_request", "mode": "auto", "arguments": {
        "method": "elicitation/create", pad[0]: pad[1],
        "params": {"mode": "url", "message": "Pay", "url": "https://pay.example/"}}}
    code, answer = api.send("POST", "/v1/mcp/call", body)
    return code, json.loads(answer).get("text", "")


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else default_binary()
    fixture_binary = sys.argv[2] if len(sys.argv) > 2 else fixture_beside(binary)
    folder = tempfile.TemporaryDirectory()
    config = pathlib.Path(folder.name) / "mcp.json"
    fixture = {"command": fixture_binary}
    config.write_text(json.dumps({"servers": {"q": fixture}}))
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
    api = Listening(line.removeprefix("listening on http://"),
              (pathlib.Path(folder.name) / "api-token").read_text().strip())
    questions = []
    api.listen(questions)
    failed = []
    try:
        time.sleep(0.5)
        print(f"{'questions':<10} {'waited':>7} {'refused':>8} {'peak +':>10}  target: peak + <= 64 MiB")
        for name, pad in (("zeros", ("pad_zeros", PAD // 2)), ("text", ("pad_text", PAD))):
            questions.clear()
            pathlib.Path(f"/proc/{daemon.pid}/clear_refs").write_text("5")
            before = status(daemon.pid, "VmHWM")
            with concurrent.futures.ThreadPoolExecutor(16) as pool:
                calls = [pool.submit(ask, api, pad) for _ in range(16)]
                # Until each question was refused or waits; then the waiting are declined.
                deadline = time.time() + 300
                while sum(c.done() for c in calls) + len(questions) < 16 and time.time() < deadline:
                    time.sleep(0.05)
                peak = status(daemon.pid, "VmHWM") - before
                for question in list(questions):
                    api.send("POST", f"/v1/mcp/requests/{question}", {"action": "decline"})
                answers = [c.result() for c in calls]
            refused = sum("-32600" in text for _, text in answers)
            waited = sum("decline" in text for _, text in answers)
            print(f"{name:<10} {waited:>7} {refused:>8} {peak / MIB:>6.1f} MiB")
            if refused + waited != 16:
                failed.append(f"{name}: {16 - refused - waited} questions neither waited nor were refused")
            if peak > PEAK_TARGET:
                failed.append(f"{name}: the peak rose by {peak / MIB:.1f} MiB")
    finally:
        daemon.terminate()
        daemon.wait(timeout=30)
    for problem in failed:
        print("FAILED:", problem)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
