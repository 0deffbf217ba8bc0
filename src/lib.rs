//! agenvoy-mcp: a hand-written MCP (Model Context Protocol) client.
//!
//! Layers, each depending only on the ones before it:
//! - [`wire`]: JSON-RPC messages, framing, rendering and the output cap; no I/O.
//! - [`transport`]: moving messages to and from a server (a child process over stdio).
//! - [`protocol`]: MCP types, the session (ids, timeouts, cancellation, progress, server
//!   requests) and how a session starts (the era).
//! - [`client`]: [`Client`], one connected server.
#![warn(missing_docs)]

pub mod wire;
