//! Where each server is ([`ServerState`]) and what the manager shows of it
//! ([`ServerStatus`]). A file of its own, below the manager and the event stream, which both
//! speak of a server's state.

use crate::host::start::Start;
use crate::protocol::types::Era;
use serde::Serialize;
use std::fmt;
use std::time::Duration;

/// The log target of what a server's status shows too (its failure, an invalid entry, a
/// name collision): a front end that prints the status can leave these lines out.
pub(crate) const STATUS_LOG: &str = "agenvoy_mcp::status";

/// Where a server is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub enum ServerState {
    /// Starting, or reconnecting.
    #[serde(rename = "connecting")]
    Connecting,
    /// Connected, its tools listed.
    #[serde(rename = "connected")]
    Connected,
    /// Could not start, list its tools, or be configured: see the last error.
    #[serde(rename = "failed")]
    Failed,
    /// Needs an OAuth login first.
    #[serde(rename = "needs login")]
    NeedsLogin,
    /// Was connected; the connection ended (or the manager was closed).
    #[serde(rename = "disconnected")]
    Disconnected,
    /// Its entry says `"enabled": false`: kept in the file, not started, no tools registered.
    #[serde(rename = "disabled")]
    Disabled,
    /// On demand (`"start": "on_demand"`) and not running: its tools are registered from
    /// its kept catalog, and the first request that needs it starts it.
    #[serde(rename = "idle")]
    Idle,
}

impl ServerState {
    /// The name shown to users: `connecting`, `connected`, `failed`, `needs login`,
    /// `disconnected`, `disabled`, `idle`.
    pub fn name(self) -> &'static str {
        match self {
            ServerState::Connecting => "connecting",
            ServerState::Connected => "connected",
            ServerState::Failed => "failed",
            ServerState::NeedsLogin => "needs login",
            ServerState::Disconnected => "disconnected",
            ServerState::Disabled => "disabled",
            ServerState::Idle => "idle",
        }
    }
}

impl fmt::Display for ServerState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One server's status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ServerStatus {
    /// The server's name.
    pub name: String,
    /// `stdio` or `http` (what the config says; `?` for an invalid entry).
    pub transport: String,
    /// The protocol era of the session, once connected.
    pub era: Option<Era>,
    /// The negotiated protocol revision, once connected.
    pub protocol_version: Option<String>,
    /// Where it is.
    pub state: ServerState,
    /// The last error, if any (never holds expanded secrets).
    pub last_error: Option<String>,
    /// How many tools it has (hidden ones included).
    pub tool_count: usize,
    /// How many of its tools the model does not see: its filter hides them
    /// (`"enabled_tools"`, `"disabled_tools"`), or they are only for an MCP Apps page
    /// (`_meta.ui.visibility: ["app"]`). Not registered, not callable.
    pub hidden_tools: usize,
    /// How many resources it lists.
    pub resource_count: usize,
    /// How many resource templates it lists.
    pub template_count: usize,
    /// How many prompts it lists.
    pub prompt_count: usize,
    /// How many skills it lists (the skills extension, when both sides declare it).
    pub skill_count: usize,
    /// Whether it declared instructions.
    pub has_instructions: bool,
    /// How long each request may wait for its answer (its entry's `timeout`, else the
    /// default); in JSON, seconds.
    #[serde(serialize_with = "as_seconds")]
    pub timeout: Duration,
    /// How long connecting may take (its entry's `startup_timeout`, else `timeout`); in JSON,
    /// seconds.
    #[serde(serialize_with = "as_seconds")]
    pub startup_timeout: Duration,
    /// What an HTTP server's exchanges go through: `direct`, or the proxy's URL without
    /// credentials (`unusable: ...` when its proxy setting cannot be used); `None` for a
    /// stdio server.
    pub proxy: Option<String>,
    /// When it runs: from launch, or on demand with its idle timeout (in JSON, `start` and,
    /// on demand, `idleTimeout` in seconds).
    #[serde(flatten)]
    pub start: Start,
}

fn as_seconds<S: serde::Serializer>(
    value: &Duration,
    to: S,
) -> std::result::Result<S::Ok, S::Error> {
    to.serialize_f64(value.as_secs_f64())
}
