// The benchmark's client program on the MCP TypeScript SDK, written as its README shows.
// The modes are in drive.mjs (shared with ../ts2/client.mjs, the SDK 2.x client).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

import { connector, drive } from "./drive.mjs";

const connect = connector({ Client, StdioClientTransport, StreamableHTTPClientTransport }, "peers-ts");
// SDK 1.x: `callTool(params, resultSchema, options)`.
await drive(connect, (client, params, timeout) => client.callTool(params, undefined, { timeout }));
