// The benchmark's client program on the MCP TypeScript SDK 2.x (`@modelcontextprotocol/client`),
// written as its README and client guide show, default options (no version negotiation: the
// 2025 `initialize` handshake). The modes are in ../ts/drive.mjs, shared with the SDK 1.x client.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

import { drive, fail, target, transportName } from "../ts/drive.mjs";

async function connect() {
  const client = new Client({ name: "peers-ts2", version: "0" });
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

// SDK 2.x: `callTool(params, options)`.
await drive(connect, (client, params, timeout) => client.callTool(params, { timeout }));
