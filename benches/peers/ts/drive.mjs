// The benchmark's modes on a TypeScript SDK client, shared by ts/client.mjs (SDK 1.x) and
// ts2/client.mjs (SDK 2.x), which each only give their SDK's classes and how to call a tool. Same command line and output
// as the Rust programs (../common.rs):
//   node client.mjs stdio|http-json|http-sse TARGET startup|echo N|inflight SECS|big BYTES

const INFLIGHT = 64;
const WARMUP = 200;

export const [transportName, target, mode, arg] = process.argv.slice(2);

export function fail(message) {
  process.stderr.write(message + "\n");
  process.exit(2);
}

/** The `connect()` of a client named `name` on an SDK's `Client` and transport classes: the
 * same for both SDK lines, as their READMEs show it. */
export function connector({ Client, StdioClientTransport, StreamableHTTPClientTransport }, name) {
  return async () => {
    const client = new Client({ name, version: "0" });
    let transport;
    if (transportName === "stdio") {
      const [command, ...args] = target.split(" ");
      transport = new StdioClientTransport({ command, args });
    } else if (transportName === "http-json" || transportName === "http-sse") {
      transport = new StreamableHTTPClientTransport(new URL(target));
    } else {
      fail("transport: stdio | http-json | http-sse");
    }
    await client.connect(transport);
    return client;
  };
}

async function echo(client) {
  const result = await client.callTool({ name: "echo", arguments: { text: "hello" } });
  const text = result.content?.[0]?.text;
  if (text !== "hello") fail(`echo answered ${JSON.stringify(text)}`);
}

/** Runs the mode on the client `connect()` gives and prints its one line; `callLong(client,
 * params, ms)` calls a tool with a request timeout of `ms` (the SDKs take it in different
 * places). */
export async function drive(connect, callLong) {
  const micros = (ns) => Number(ns) / 1000;
  // The one line of output, with the process's own peak RSS (maxRSS is in KiB) and CPU time.
  const report = (fields) => {
    const cpu = process.cpuUsage();
    const cpu_ms = Math.round((cpu.user + cpu.system) / 1000);
    console.log(JSON.stringify({ ...fields, rss_kb: process.resourceUsage().maxRSS, cpu_ms }));
  };
  const start = process.hrtime.bigint();
  let client;
  try {
    client = await connect();
  } catch (e) {
    fail(`connect: ${e.message}`);
  }
  const connected = process.hrtime.bigint() - start;

  if (mode === "startup") {
    const { tools } = await client.listTools();
    const listed = process.hrtime.bigint() - start;
    await client.close();
    const total = process.hrtime.bigint() - start;
    report({
      connect_us: Math.round(micros(connected)), list_us: Math.round(micros(listed)),
      total_us: Math.round(micros(total)), tools: tools.length,
    });
  } else if (mode === "echo") {
    const n = Number(arg);
    for (let i = 0; i < WARMUP; i++) await echo(client);
    const times = [];
    for (let i = 0; i < n; i++) {
      const t = process.hrtime.bigint();
      await echo(client);
      times.push(micros(process.hrtime.bigint() - t));
    }
    await client.close();
    times.sort((a, b) => a - b);
    const at = (q) => times[Math.min(Math.floor(times.length * q), times.length - 1)];
    report({ p50_us: +at(0.5).toFixed(1), p99_us: +at(0.99).toFixed(1), calls: n });
  } else if (mode === "inflight") {
    const deadline = process.hrtime.bigint() + BigInt(Math.round(Number(arg) * 1e9));
    const t = process.hrtime.bigint();
    let calls = 0;
    const worker = async () => {
      while (process.hrtime.bigint() < deadline) {
        await echo(client);
        calls++;
      }
    };
    await Promise.all(Array.from({ length: INFLIGHT }, worker));
    const secs = Number(process.hrtime.bigint() - t) / 1e9;
    await client.close();
    report({ calls_per_s: Math.round(calls / secs), calls });
  } else if (mode === "big") {
    const bytes = Number(arg);
    const t = process.hrtime.bigint();
    let line;
    try {
      // The SDK's default request timeout is 60 s; the runner's own timeout decides.
      const result = await callLong(client, { name: "big", arguments: { bytes } }, 3_600_000);
      const got = result.content?.[0]?.text?.length ?? 0;
      const secs = Number(process.hrtime.bigint() - t) / 1e9;
      line = got === bytes ? { ok: true, secs: +secs.toFixed(3) }
        : { ok: false, secs: +secs.toFixed(3), error: `got ${got} bytes of ${bytes}` };
    } catch (e) {
      const secs = Number(process.hrtime.bigint() - t) / 1e9;
      line = { ok: false, secs: +secs.toFixed(3), error: String(e.message).slice(0, 200) };
    }
    await client.close().catch(() => {});
    report(line);
  } else {
    fail("mode: startup | echo N | inflight SECS | big BYTES");
  }
  process.exit(0);
}
