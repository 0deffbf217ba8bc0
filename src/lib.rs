//! agenvoy-mcp: a hand-written MCP (Model Context Protocol) client.
//!
//! What an embedder uses:
//! - at the root: [`Client`] (one connected server, over stdio with [`StdioConfig`] or
//!   streamable HTTP with [`HttpConfig`]), its options and results, and [`Error`];
//! - [`host`]: Agenvoy's runtime: the config file, [`host::Manager`] (every configured
//!   server, its tools registered for the model), the confirm gate, [`host::Control`];
//! - [`auth`] (feature `oauth`): OAuth 2.1 for HTTP servers, and the token stores;
//! - [`api`] (feature `api`): the management API of `agenvoy-mcp serve`;
//! - [`tui`] (feature `tui`): the `/mcp` terminal panel;
//! - [`wire`]: the layer under it all, bytes in and values out: JSON-RPC messages, line
//!   framing, SSE, and the streaming decoder and truncator behind every tool result.
//!
//! Inside, the layers build on each other: `wire` (no I/O), `transport` (stdio child processes and streamable HTTP with
//! its HTTP+SSE fallback), `protocol` (the session, the two eras, the MCP constants),
//! `client`; `auth` needs the HTTP transport and sits beside the protocol layer, not above
//! it; `host` uses the client and auth; `api` and `tui` drive the host. Those inner layers
//! are private: what they offer an embedder is exported here. `docs/ARCHITECTURE.md` maps
//! each behaviour to its file. [`unstable`] holds the few internals the `agenvoy-mcp`
//! binary and the fuzz targets reach into: not part of the API.
//!
//! ```no_run
//! # async fn demo() -> agenvoy_mcp::Result<()> {
//! use agenvoy_mcp::{Client, ClientOptions, StdioConfig};
//! let config = StdioConfig::new("mcp-server-time");
//! let client = Client::connect_stdio("time", &config, ClientOptions::default()).await?;
//! for tool in client.list_tools().await? {
//!     println!("{}", tool.name);
//! }
//! client.close().await;
//! # Ok(()) }
//! ```
//!
//! A server's questions (elicitation, sampling) are answered by async closures set on
//! [`Handlers`] ([`Handlers::with_elicitation`], [`Handlers::with_sampling`]), and for every
//! server of a [`host::Manager`] on [`host::ManagerOptions`], told which server asks.
//!
//! # Stability
//!
//! The crate follows semantic versioning as Cargo reads it: before 1.0 a breaking change bumps
//! the minor version (0.1 to 0.2), never a patch. Within compatible versions:
//!
//! - structs and enums marked `#[non_exhaustive]` (every options struct, and what servers
//!   send) get new fields and variants. Build options with `Default` or their constructor
//!   ([`StdioConfig::new`], [`HttpConfig::new`], ...) and the `with_*` setters (`arg`,
//!   `args`, `env` and `header` for lists); match enums with a `_` arm. Fields stay readable
//!   and assignable. A struct literal does not compile outside the crate:
//!
//! ```compile_fail,E0639
//! let options = agenvoy_mcp::ClientOptions {
//!     timeout: std::time::Duration::from_secs(5),
//!     ..Default::default()
//! };
//! ```
//!
//! - [`unstable`] is exempt: it serves the binary and the fuzz targets, and may change or go
//!   in any release;
//! - the minimum supported Rust version, 1.88, is raised only with a minor version.
#![warn(missing_docs, unnameable_types)]
// docs.rs (and CI, with nightly rustdoc) label each item with the features it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "api")]
pub mod api;
#[cfg(feature = "oauth")]
pub mod auth;
mod client;
mod error;
mod filelock;
pub mod host;
mod methods;
mod protocol;
mod proxy;
pub mod safe_text;
mod secret;
mod secret_files;
mod transport;
#[cfg(feature = "tui")]
pub mod tui;
pub mod unstable;
mod web_url;
pub mod wire;

pub use client::{Client, ClientOptions, ListKeeping, ListLimits, ServerNotifications};
pub use error::{Error, ErrorKind, ParseError, Result};
pub use protocol::apps::{
    MAX_UI_RESOURCE, ToolUi, UI_EXTENSION, UI_MIME_TYPE, UiCsp, UiResource, UiResourceMeta,
};
pub use protocol::era::{ClientInfo, EraPreference};
pub use protocol::items::{
    Completion, CompletionRef, LogLevel, LogMessage, Prompt, PromptArgument, PromptContents,
    PromptMessage, Resource, ResourceOutput, ResourceTemplate, ServerNotification, Task,
    TaskStatus,
};
pub use protocol::server_requests::{
    ElicitationAnswer, ElicitationFn, ElicitationKind, ElicitationRequest, FieldKind, FormError,
    FormField, FormRequest, SamplingAnswer, SamplingFn, SamplingMessage, SamplingRequest,
    UrlRequest,
};
pub use protocol::session::{
    DEFAULT_MAX_DURATION, DEFAULT_TIMEOUT, Handlers, ProgressCallback, RequestOptions, Session,
    TaskMode,
};
pub use protocol::skills::{SKILLS_EXTENSION, Skill, SkillFile, SkillFileContent};
pub use protocol::trace::TraceContext;
pub use protocol::types::{
    Era, HANDSHAKE_VERSIONS, LATEST_HANDSHAKE_VERSION, LATEST_STATELESS_VERSION, Progress, RawJson,
    Root, STATELESS_VERSIONS, ServerDetails, TaskSupport, Tool, ToolOutput,
};
pub use proxy::Proxy;
pub use secret::Secret;
pub use transport::BoxFuture;
#[cfg(feature = "http")]
pub use transport::http::{Authorizer, Credentials, HttpConfig, Refusal};
#[cfg(feature = "stdio")]
pub use transport::stdio::{DEFAULT_ENV, StdioConfig};
pub use wire::jsonrpc::{ErrorObject, Notification};

// The README's Rust blocks, compiled by `cargo test --doc`, so they cannot drift.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
