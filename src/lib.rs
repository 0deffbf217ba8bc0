//! agenvoy-mcp: a hand-written MCP (Model Context Protocol) client.
//!
//! What an embedder uses:
//! - at the root: [`Client`] (one connected server, over stdio with [`StdioConfig`] or
//!   streamable HTTP with [`HttpConfig`]), its options and results, and [`Error`];
//! - [`host`]: Agenvoy's runtime: the config file, [`host::Manager`] (every configured
//!   server, its tools registered for the model), the confirm gate, [`host::Control`];
//! - [`auth`] (feature `oauth`): OAuth 2.1 for HTTP servers, and the token stores;
//! - [`api`] (feature `api`): the management API of `agenvoy-mcp serve`;
//! - [`tui`] (feature `tui`): the `/mcp` terminal panel.
//!
//! Inside, each layer depends only on the ones before it: `wire` (JSON-RPC messages,
//! framing, rendering and the output cap; no I/O), `transport` (stdio child processes and
//! streamable HTTP with its HTTP+SSE fallback), `protocol` (the session, the two eras, the
//! MCP constants), `client`; `auth` beside them (it needs the HTTP transport, not the
//! session); then `host` (which uses both), `api`, `tui`. `docs/ARCHITECTURE.md` maps
//! each behaviour to its file. Those inner layers are reachable through `__private` for the
//! binary, the tests, benches and fuzz targets only: not part of the API, they may change in
//! any release.
//!
//! ```no_run
//! # async fn demo() -> agenvoy_mcp::Result<()> {
//! use agenvoy_mcp::{Client, ClientOptions, StdioConfig};
//! let config = StdioConfig { command: "mcp-server-time".into(), ..Default::default() };
//! let client = Client::connect_stdio("time", &config, ClientOptions::default()).await?;
//! for tool in client.list_tools().await? {
//!     println!("{}", tool.name);
//! }
//! client.close().await;
//! # Ok(()) }
//! ```
#![warn(missing_docs)]

#[cfg(feature = "api")]
pub mod api;
#[cfg(feature = "oauth")]
pub mod auth;
mod files;
pub mod host;
#[cfg(feature = "tui")]
pub mod tui;

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;
pub(crate) use __private::{client, error, protocol, text, transport, wire};

pub use client::{Client, ClientOptions, ListLimits, ServerNotifications};
pub use error::{Error, ErrorKind, Result};
pub use protocol::items::{
    Completion, CompletionRef, LogLevel, LogMessage, Prompt, PromptArgument, PromptContents,
    PromptMessage, Resource, ResourceOutput, ResourceTemplate, ServerNotification,
};
pub use protocol::session::{
    DEFAULT_TIMEOUT, Handlers, ProgressCallback, RequestHandler, RequestOptions,
};
pub use protocol::types::{Era, Progress, Root, ServerDetails, Tool, ToolOutput};
#[cfg(feature = "http")]
pub use transport::http::{Authorizer, Credentials, HttpConfig, Refusal};
#[cfg(feature = "stdio")]
pub use transport::stdio::StdioConfig;
pub use wire::jsonrpc::ErrorObject;

// The README's Rust blocks, compiled by `cargo test --doc`, so they cannot drift.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
