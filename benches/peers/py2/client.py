"""The benchmark's client program on the MCP Python SDK 2.x (`mcp`), written as its README
shows (`async with Client(...)`, `await client.call_tool(...)`), default options. Same command
line and output as the other programs (../common.rs):

    python client.py stdio|http-json|http-sse TARGET startup|echo N|inflight SECS|big BYTES
"""
import asyncio
import json
import os
import resource
import sys
import time

from mcp import Client, StdioServerParameters

INFLIGHT = 64
WARMUP = 200


def fail(message):
    print(message, file=sys.stderr, flush=True)
    os._exit(2)


def report(fields):
    """The one line of output, with the process's own peak RSS (KiB) and CPU time (the server
    it started is another process)."""
    t = os.times()
    fields["rss_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    fields["cpu_ms"] = round((t.user + t.system) * 1000)
    print(json.dumps(fields), flush=True)


async def echo(client):
    result = await client.call_tool("echo", {"text": "hello"})
    text = result.content[0].text if result.content else None
    if text != "hello":
        fail(f"echo answered {text!r}")


async def main(transport, target, mode, arg):
    if transport == "stdio":
        command, *args = target.split(" ")
        server = StdioServerParameters(command=command, args=args)
    elif transport in ("http-json", "http-sse"):
        server = target
    else:
        fail("transport: stdio | http-json | http-sse")
    start = time.perf_counter()
    client = Client(server)
    try:
        await client.__aenter__()
    except Exception as e:  # noqa: BLE001 - any failure to connect is reported, not raised
        fail(f"connect: {e!r}")
    connected = time.perf_counter() - start
    # `async with` in the README; opened by hand here so that the close can be timed.
    if mode == "startup":
        tools = (await client.list_tools()).tools
        listed = time.perf_counter() - start
        await client.__aexit__(None, None, None)
        total = time.perf_counter() - start
        report({"connect_us": round(connected * 1e6), "list_us": round(listed * 1e6),
                "total_us": round(total * 1e6), "tools": len(tools)})
    elif mode == "echo":
        n = int(arg)
        for _ in range(WARMUP):
            await echo(client)
        times = []
        for _ in range(n):
            t = time.perf_counter()
            await echo(client)
            times.append((time.perf_counter() - t) * 1e6)
        await client.__aexit__(None, None, None)
        times.sort()
        at = lambda q: times[min(int(len(times) * q), len(times) - 1)]  # noqa: E731
        report({"p50_us": round(at(0.5), 1), "p99_us": round(at(0.99), 1), "calls": n})
    elif mode == "inflight":
        t = time.perf_counter()
        deadline = t + float(arg)
        calls = 0

        async def worker():
            nonlocal calls
            while time.perf_counter() < deadline:
                await echo(client)
                calls += 1

        await asyncio.gather(*(worker() for _ in range(INFLIGHT)))
        secs = time.perf_counter() - t
        await client.__aexit__(None, None, None)
        report({"calls_per_s": round(calls / secs), "calls": calls})
    elif mode == "big":
        size = int(arg)
        t = time.perf_counter()
        try:
            # No read timeout by default: the runner's own timeout decides.
            result = await client.call_tool("big", {"bytes": size})
            got = len(result.content[0].text.encode()) if result.content else 0
            secs = time.perf_counter() - t
            line = {"ok": True, "secs": round(secs, 3)} if got == size else \
                {"ok": False, "secs": round(secs, 3), "error": f"got {got} bytes of {size}"}
        except Exception as e:  # noqa: BLE001 - the outcome is the figure
            secs = time.perf_counter() - t
            line = {"ok": False, "secs": round(secs, 3), "error": repr(e)[:200]}
        try:
            await client.__aexit__(None, None, None)
        except Exception:  # noqa: BLE001 - the figure is taken; a failed close changes nothing
            pass
        report(line)
    else:
        fail("mode: startup | echo N | inflight SECS | big BYTES")


if __name__ == "__main__":
    if len(sys.argv) < 4:
        fail("usage: client.py stdio|http-json|http-sse TARGET startup|echo N|inflight SECS|big BYTES")
    argv = sys.argv[1:] + [None]
    asyncio.run(main(argv[0], argv[1], argv[2], argv[3]))
    # Without waiting for the interpreter's teardown (threads, atexit): the figures are out.
    sys.stdout.flush()
    os._exit(0)
