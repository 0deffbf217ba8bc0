#!/usr/bin/env python3
"""One MCP server for every client of the peer benchmark, written by hand on the standard
library (no SDK, so no client's SDK is favoured by its own server).

    server.py stdio                 newline-delimited JSON-RPC on stdin/stdout
    server.py http PORT             streamable HTTP on 127.0.0.1:PORT:
                                    /json answers each POST with one application/json body,
                                    /sse  answers each POST with a text/event-stream

It speaks the initialize-era protocol (2025-11-25 down to 2024-11-05; `server/discover` gets
"method not found", as from any server of that era). Tools:
    echo {"text": S}     returns S as one text block
    big  {"bytes": N}    returns N bytes of ASCII text as one text block, written out in 1 MiB
                         pieces (never held whole), so 256 MiB costs the server little memory
    server.py stdio TRACE / PEERS_TRACE=TRACE: appends each request's method to the file TRACE
                                    (to count a client's round trips)
"""
import asyncio
import json
import os
import sys

VERSIONS = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]
TOOLS = [
    {"name": "echo", "description": "Returns its text.",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}},
                     "required": ["text"]}},
    {"name": "big", "description": "Returns N bytes of text.",
     "inputSchema": {"type": "object", "properties": {"bytes": {"type": "integer"}},
                     "required": ["bytes"]}},
]
CHUNK = 1 << 20
UNIT = b"abcdefghijklmnopqrstuvwxyz0123456789 "
PIECE = (UNIT * (CHUNK // len(UNIT) + 1))[:CHUNK]
TRACE = os.environ.get("PEERS_TRACE")
MAX_BIG = 1 << 30


def trace(method):
    if TRACE:
        with open(TRACE, "a") as f:
            f.write(method + "\n")


def answer(msg):
    """The answer to one parsed message: (bytes, None), (None, big byte count), or None for a
    notification or a response."""
    method = msg.get("method")
    if not isinstance(method, str):
        return None
    if "id" not in msg:
        return None
    trace(method)
    rid = json.dumps(msg["id"])
    params = msg.get("params") or {}
    if method == "initialize":
        asked = params.get("protocolVersion")
        version = asked if asked in VERSIONS else VERSIONS[0]
        result = {"protocolVersion": version, "capabilities": {"tools": {}},
                  "serverInfo": {"name": "peers-server", "version": "1.0"}}
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "ping":
        result = {}
    elif method == "tools/call":
        name = params.get("name")
        args = params.get("arguments") or {}
        if name == "echo":
            text = json.dumps(str(args.get("text", "")))
            return (b'{"jsonrpc":"2.0","id":' + rid.encode() +
                    b',"result":{"content":[{"type":"text","text":' + text.encode() +
                    b'}]}}', None)
        if name == "big":
            n = args.get("bytes")
            if isinstance(n, int) and 0 <= n <= MAX_BIG:
                return (rid.encode(), n)
            result = {"content": [{"type": "text", "text": "bytes: 0 to 1 GiB"}], "isError": True}
        else:
            return (error(rid, -32602, f"unknown tool {name}"), None)
    else:
        return (error(rid, -32601, f"method not found: {method}"), None)
    return (json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result},
                       separators=(",", ":")).encode(), None)


def error(rid, code, message):
    return (b'{"jsonrpc":"2.0","id":' + rid.encode() + b',"error":' +
            json.dumps({"code": code, "message": message}).encode() + b"}")


def big_parts(rid, n):
    """The answer to `big` in pieces: prefix, then n bytes of text, then suffix."""
    yield b'{"jsonrpc":"2.0","id":' + rid + b',"result":{"content":[{"type":"text","text":"'
    while n > 0:
        take = min(n, CHUNK)
        yield PIECE[:take] if take < CHUNK else PIECE
        n -= take
    yield b'"}]}}'


def big_len(rid, n):
    return sum(len(p) for p in big_parts(rid, 0)) + n


def parse(line):
    try:
        msg = json.loads(line)
    except ValueError:
        return (b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}',
                None)
    if isinstance(msg, dict):
        return answer(msg)
    return None


def serve_stdio():
    """Reads what is there, answers every whole line, writes all answers with one write."""
    fd_in = sys.stdin.fileno()
    fd_out = sys.stdout.fileno()
    pending = b""

    def write_all(data):
        view = memoryview(data)
        while view:
            view = view[os.write(fd_out, view):]

    while True:
        data = os.read(fd_in, 1 << 16)
        if not data:
            return
        pending += data
        lines = pending.split(b"\n")
        pending = lines.pop()
        batch = []
        for line in lines:
            if not line.strip():
                continue
            reply = parse(line)
            if reply is None:
                continue
            body, big = reply
            if big is None:
                batch.append(body + b"\n")
                continue
            write_all(b"".join(batch))
            batch = []
            for part in big_parts(body, big):
                write_all(part)
            write_all(b"\n")
        if batch:
            write_all(b"".join(batch))


class Http(asyncio.Protocol):
    """HTTP/1.1 with keep-alive, parsed by hand: enough for the three clients."""

    def connection_made(self, transport):
        self.transport = transport
        self.buf = b""
        self.busy = False  # a big answer is being written: requests wait for it
        self.can_write = asyncio.Event()
        self.can_write.set()

    def pause_writing(self):
        self.can_write.clear()

    def resume_writing(self):
        self.can_write.set()

    def data_received(self, data):
        self.buf += data
        if not self.busy:
            self.drain_requests()

    def drain_requests(self):
        while True:
            head_end = self.buf.find(b"\r\n\r\n")
            if head_end < 0:
                return
            head = self.buf[:head_end].decode("latin-1").split("\r\n")
            method, target, _ = (head[0].split(" ") + ["", ""])[:3]
            headers = {}
            for h in head[1:]:
                k, _, v = h.partition(":")
                headers[k.strip().lower()] = v.strip()
            length = int(headers.get("content-length", "0") or 0)
            if len(self.buf) < head_end + 4 + length:
                return
            body = self.buf[head_end + 4:head_end + 4 + length]
            self.buf = self.buf[head_end + 4 + length:]
            big = self.handle(method, target.split("?")[0], body)
            if big is not None:
                self.busy = True
                asyncio.ensure_future(self.write_big(*big))
                return

    def respond(self, status, ctype=None, body=b"", extra=""):
        head = f"HTTP/1.1 {status}\r\nContent-Length: {len(body)}\r\n"
        if ctype:
            head += f"Content-Type: {ctype}\r\n"
        self.transport.write((head + extra + "\r\n").encode() + body)

    def handle(self, method, path, body):
        if path not in ("/json", "/sse"):
            self.respond("404 Not Found")
            return None
        if method == "DELETE":
            self.respond("200 OK")
            return None
        if method != "POST":
            # No server-initiated stream: clients must do without the GET stream.
            self.respond("405 Method Not Allowed", extra="Allow: POST, DELETE\r\n")
            return None
        reply = parse(body)
        if reply is None:
            self.respond("202 Accepted")
            return None
        answer_bytes, big = reply
        sse = path == "/sse"
        if big is not None:
            return (answer_bytes, big, sse)
        if sse:
            event = b"event: message\ndata: " + answer_bytes + b"\n\n"
            self.respond("200 OK", "text/event-stream", event)
        else:
            self.respond("200 OK", "application/json", answer_bytes)
        return None

    async def write_big(self, rid, n, sse):
        if sse:
            prefix, suffix = b"event: message\ndata: ", b"\n\n"
            ctype = "text/event-stream"
        else:
            prefix, suffix = b"", b""
            ctype = "application/json"
        length = len(prefix) + big_len(rid, n) + len(suffix)
        self.transport.write(f"HTTP/1.1 200 OK\r\nContent-Length: {length}\r\n"
                             f"Content-Type: {ctype}\r\n\r\n".encode() + prefix)
        for part in big_parts(rid, n):
            await self.can_write.wait()
            if self.transport.is_closing():
                return
            self.transport.write(part)
        self.transport.write(suffix)
        self.busy = False
        self.drain_requests()


async def serve_http(port):
    loop = asyncio.get_running_loop()
    server = await loop.create_server(Http, "127.0.0.1", port, backlog=256)
    print(f"listening on http://127.0.0.1:{server.sockets[0].getsockname()[1]}", flush=True)
    await server.serve_forever()


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "stdio":
        if len(sys.argv) >= 3:
            TRACE = sys.argv[2]
        serve_stdio()
    elif len(sys.argv) >= 3 and sys.argv[1] == "http":
        try:
            asyncio.run(serve_http(int(sys.argv[2])))
        except KeyboardInterrupt:
            pass
    else:
        sys.exit(__doc__)
