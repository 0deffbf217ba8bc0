//! MCP types the client reads and hands to its embedder.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The protocol revision this client offers in `initialize`.
pub const LATEST_HANDSHAKE_VERSION: &str = "2025-11-25";

/// The stateless revision this client speaks.
pub const LATEST_STATELESS_VERSION: &str = "2026-07-28";

/// Every stateless-era revision this client speaks, newest first.
pub const STATELESS_VERSIONS: [&str; 1] = ["2026-07-28"];

/// Every initialize-era revision this client accepts from a server, newest first.
pub const HANDSHAKE_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// One tool as the server described it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    /// The tool's name on its server.
    pub name: String,
    /// What the tool does, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the arguments, kept exactly as the server gave it.
    #[serde(rename = "inputSchema", default = "empty_object_schema")]
    pub input_schema: Value,
    /// Every other member of the tool object (title, annotations, outputSchema, ...), as given.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, Value>,
}

fn empty_object_schema() -> Value {
    serde_json::json!({"type": "object", "properties": {}})
}

/// A root the embedder exposes to servers (`roots/list`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Root {
    /// A `file://` URI.
    pub uri: String,
    /// A display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// One progress notification for a request in flight.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// Progress so far; grows with each notification.
    pub progress: f64,
    /// The total, if the server knows it.
    pub total: Option<f64>,
    /// A human-readable message, if any.
    pub message: Option<String>,
}

/// The outcome of `tools/call` as the model sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    /// The rendered text, capped with the truncation marker.
    pub text: String,
    /// The server flagged the result as a tool error (`isError: true`).
    pub is_error: bool,
    /// Bytes of the whole rendered text before any cut.
    pub total_bytes: u64,
}

/// Which protocol era a session runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Era {
    /// Revisions 2024-11-05 to 2025-11-25: a session starts with `initialize`.
    Handshake,
    /// Revision 2026-07-28: no handshake; every request carries the version and the client's
    /// capabilities in its `_meta`.
    Stateless,
}

impl Era {
    /// The name shown by `probe` and in status.
    pub fn name(self) -> &'static str {
        match self {
            Era::Handshake => "handshake",
            Era::Stateless => "stateless",
        }
    }
}

/// What the client learned about a server when its session started.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerDetails {
    /// The era the session runs in.
    pub era: Era,
    /// The negotiated protocol revision.
    pub protocol_version: String,
    /// The server's `serverInfo` (name, version, ...), as given.
    pub server_info: Value,
    /// The server's capabilities, as given.
    pub capabilities: Value,
    /// Instructions for the model, if the server gave any.
    pub instructions: Option<String>,
}

impl ServerDetails {
    /// Whether the server declared a capability (e.g. `tools`).
    pub fn has_capability(&self, name: &str) -> bool {
        self.capabilities.get(name).is_some_and(|v| !v.is_null())
    }
}
