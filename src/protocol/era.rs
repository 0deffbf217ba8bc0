//! How a session starts: the one seam between protocol eras.
//!
//! The initialize-based era (2024-11-05 to 2025-11-25) starts with a handshake: `initialize`,
//! then `notifications/initialized`. The stateless 2026-07-28 era (no handshake; version and
//! capabilities in every request's `_meta`) is added here, behind [`establish`], without
//! changing the session or the client.

use super::session::{RequestOptions, Session};
use super::types::{Era, HANDSHAKE_VERSIONS, LATEST_HANDSHAKE_VERSION, ServerDetails};
use crate::error::{ErrorKind, Result};
use serde_json::{Value, json};
use std::time::Duration;

/// Who the client says it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientInfo {
    /// The client's name.
    pub name: String,
    /// The client's version.
    pub version: String,
}

impl Default for ClientInfo {
    fn default() -> Self {
        ClientInfo {
            name: "agenvoy-mcp".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        }
    }
}

/// Starts the session and returns what the server said about itself.
pub async fn establish(
    session: &Session,
    client: &ClientInfo,
    timeout: Duration,
) -> Result<ServerDetails> {
    handshake(session, client, timeout).await
}

async fn handshake(
    session: &Session,
    client: &ClientInfo,
    timeout: Duration,
) -> Result<ServerDetails> {
    let params = json!({
        "protocolVersion": LATEST_HANDSHAKE_VERSION,
        "capabilities": session.handlers().capabilities(),
        "clientInfo": {"name": client.name, "version": client.version},
    });
    let options = RequestOptions {
        timeout: Some(timeout),
        ..Default::default()
    };
    let result = session.request("initialize", Some(params), options).await?;
    let protocol_error = |why: String| {
        crate::Error::new(session.server(), ErrorKind::Protocol(why)).during("initialize")
    };
    let version = result
        .get("protocolVersion")
        .and_then(Value::as_str)
        .ok_or_else(|| protocol_error("the initialize result has no protocolVersion".into()))?;
    if !HANDSHAKE_VERSIONS.contains(&version) {
        return Err(protocol_error(format!(
            "the server answered protocol version {version}, which this client does not speak \
             (it offered {LATEST_HANDSHAKE_VERSION} and accepts {}); upgrade the server or the client",
            HANDSHAKE_VERSIONS.join(", ")
        )));
    }
    let details = ServerDetails {
        era: Era::Handshake,
        protocol_version: version.to_string(),
        server_info: result.get("serverInfo").cloned().unwrap_or(Value::Null),
        capabilities: result
            .get("capabilities")
            .cloned()
            .unwrap_or_else(|| json!({})),
        instructions: result
            .get("instructions")
            .and_then(Value::as_str)
            .map(str::to_string),
    };
    session.notify("notifications/initialized", None).await?;
    Ok(details)
}
