//! The protocol layer: MCP types, the session, and how a session starts.
//!
//! - [`types`]: tools, roots, progress, server details, eras and versions.
//! - [`items`]: resources, templates, prompts, completions, log levels, typed notifications.
//! - [`input`]: what a server asks of the embedder, typed: elicitation, sampling.
//! - [`skills`]: the skills extension's entries, files and their verification.
//! - [`apps`]: the MCP Apps extension: a tool's UI, and a UI resource's page and sandbox.
//! - [`trace`]: the W3C trace context a request carries in its `_meta` (SEP-414).
//! - [`session`]: ids, correlation, timeouts, cancellation, progress, server requests.
//! - [`era`]: how a session starts, behind one seam: the stateless era's `server/discover`
//!   and per-request `_meta`, or the `initialize` handshake.
//!
//! The MCP constants (error codes, `_meta` keys, notification names) are here, once; the
//! protocol versions are in [`types`].

use crate::methods;

pub mod apps;
pub mod era;
pub(crate) mod frontmatter;
pub mod items;
pub mod server_requests;
pub mod session;
pub mod skills;
pub mod stateless;
pub mod trace;
pub mod types;

/// A stateless-era server's error: the request's headers disagree with its body.
pub(crate) const HEADER_MISMATCH: i64 = -32020;
/// A stateless-era server's error: the request needs a capability the client did not declare.
pub(crate) const MISSING_CAPABILITY: i64 = -32021;
/// A stateless-era server's error: it does not speak the request's protocol version; its
/// data names the versions it does.
pub(crate) const UNSUPPORTED_VERSION: i64 = -32022;

/// The `_meta` key of a stateless-era request's protocol version.
pub(crate) const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// The `_meta` key of a stateless-era request's client name and version.
pub(crate) const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// The `_meta` key of a stateless-era request's log level (the era has no `logging/setLevel`).
pub(crate) const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// The `_meta` key of a stateless-era request's client capabilities.
pub(crate) const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";

/// The identifier of the 2026-07-28 revision's tasks extension: a server declares it in
/// `server/discover`'s `capabilities.extensions`, a client in each request's capabilities.
pub(crate) const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// The `notifications/cancelled` message for request `id`.
pub(crate) fn cancelled(id: i64, reason: &str) -> crate::wire::jsonrpc::Message {
    crate::wire::jsonrpc::Message::Notification(crate::wire::jsonrpc::Notification {
        method: methods::CANCELLED.into(),
        params: Some(serde_json::json!({"requestId": id, "reason": reason})),
    })
}
