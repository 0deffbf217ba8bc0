// The benchmark's client program on the MCP TypeScript SDK, written as its README shows.
// The modes are in drive.mjs (shared with ../ts2/client.mjs, the SDK 2.x client).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

import { drive, fail, target, transportName } from "./drive.mjs";

async function connect() {
  const client = new Client({ name: "peers-ts", version: "0" });
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
}

// SDK 1.x: `callTool(params, resultSchema, options)`.
await drive(connect, (client, params, timeout) => client.callTool(params, undefined, { timeout }));
