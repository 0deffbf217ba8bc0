// The benchmark's client program on the MCP TypeScript SDK 2.x (`@modelcontextprotocol/client`),
// written as its README and client guide show, default options (no version negotiation: the
// 2025 `initialize` handshake). The modes are in ../ts/drive.mjs, shared with the SDK 1.x client.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

import { connector, drive } from "../ts/drive.mjs";

const connect = connector({ Client, StdioClientTransport, StreamableHTTPClientTransport }, "peers-ts2");
// SDK 2.x: `callTool(params, options)`.
await drive(connect, (client, params, timeout) => client.callTool(params, { timeout }));
