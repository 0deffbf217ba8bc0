//! agenvoy-mcp: a hand-written MCP (Model Context Protocol) client.
//!
//! Layers, each depending only on the ones before it:
//! - [`wire`]: JSON-RPC messages, framing, rendering and the output cap; no I/O.
//! - [`transport`]: moving messages to and from a server (a child process over stdio).
//! - [`protocol`]: MCP types, the session (ids, timeouts, cancellation, progress, server
//!   requests) and how a session starts (the era).
//! - [`client`]: [`Client`], one connected server.
//! - [`auth`] (feature `oauth`): OAuth 2.1: discovery, registration, PKCE, loopback login,
//!   token store, refresh, step-up.
//! - [`host`]: Agenvoy's runtime: config file, [`host::Manager`], tool registry, confirm gate.
//! - [`api`] (feature `api`): the management API of `agenvoy-mcp serve`, HTTP on loopback,
//!   locked to its owner.
//! - [`text`]: server text escaped for a terminal, URLs with their secrets hidden.
//! - [`tui`] (feature `tui`): the `/mcp` terminal panel, on ratatui and crossterm.
//!
//! ```no_run
//! # async fn demo() -> agenvoy_mcp::Result<()> {
//! use agenvoy_mcp::{Client, ClientOptions, transport::stdio::StdioConfig};
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
pub mod client;
pub mod error;
mod files;
pub mod host;
pub mod protocol;
pub mod text;
pub mod transport;
#[cfg(feature = "tui")]
pub mod tui;
pub mod wire;

pub use client::{Client, ClientOptions};
pub use error::{Error, ErrorKind, Result};
