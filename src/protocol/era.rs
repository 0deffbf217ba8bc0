//! How a session starts: the one seam between protocol eras.
//!
//! The initialize-based era (2024-11-05 to 2025-11-25) starts with a handshake: `initialize`,
//! then `notifications/initialized`. The stateless 2026-07-28 era has no handshake: every
//! request carries the version, the client's info and its capabilities in `_meta`, and
//! `server/discover` says what the server is.
//!
//! Detection, with no flag from the user ([`EraPreference::Auto`]): `server/discover` first.
//! A discover result naming a version this client speaks means the stateless era;
//! `UnsupportedProtocolVersion` (-32022) naming one means try again with it, once;
//! `HeaderMismatch` (-32020) and `MissingRequiredClientCapability` (-32021) are a modern
//! server refusing, and fail. Any other answer (method not found, a legacy server's 400, a
//! result that is no discover result) means an initialize-era server: the handshake follows
//! on the same connection (and on HTTP, from there, the HTTP+SSE fallback).
//!
//! Silence is the hard case, and the answer must not depend on how fast a server starts. Over
//! HTTP every request gets an answer, so the probe simply has the request's whole timeout.
//! Over stdio a legacy server may ignore an unknown request, so after [`PROBE_TIMEOUT`] of
//! silence `initialize` is sent too, while the probe stays open; the first conclusive answer
//! decides. A server still starting reads the probe first, so a modern one answers it (and
//! refuses `initialize`, whatever its error code) and a legacy one answers `initialize`.

use super::session::{RequestOptions, Session};
use super::types::{
    Era, HANDSHAKE_VERSIONS, LATEST_HANDSHAKE_VERSION, LATEST_STATELESS_VERSION,
    STATELESS_VERSIONS, ServerDetails,
};
use crate::error::{ErrorKind, Result};
use crate::methods;
use serde_json::{Value, json};
use std::time::Duration;

/// Who the client says it is: [`ClientInfo::new`], or by default `agenvoy-mcp` and this
/// crate's version.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClientInfo {
    /// The client's name.
    pub name: String,
    /// The client's version.
    pub version: String,
}

impl ClientInfo {
    /// A client named `name` at `version`.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        ClientInfo {
            name: name.into(),
            version: version.into(),
        }
    }
}

impl Default for ClientInfo {
    fn default() -> Self {
        ClientInfo {
            name: "agenvoy-mcp".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        }
    }
}

/// Which era to start a session in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum EraPreference {
    /// Find out: probe with `server/discover`, fall back to `initialize`.
    #[default]
    Auto,
    /// The initialize handshake only.
    Handshake,
    /// The stateless era only; a server that does not speak it is an error.
    Stateless,
    /// `initialize` first, for a server known to be of the initialize era (the revision lets
    /// a client remember a server's era): one round trip less than [`EraPreference::Auto`].
    /// A server that refuses `initialize` is probed as with `Auto`: it may have been upgraded.
    HandshakeFirst,
}

/// How long a stdio server may stay silent after the `server/discover` probe before
/// `initialize` is sent too (the probe stays open: see the module docs).
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

use super::{
    HEADER_MISMATCH, META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_PROTOCOL_VERSION,
    MISSING_CAPABILITY, UNSUPPORTED_VERSION,
};

/// Starts the session and returns what the server said about itself.
pub async fn establish(
    session: &Session,
    client: &ClientInfo,
    timeout: Duration,
    preference: EraPreference,
) -> Result<ServerDetails> {
    match preference {
        EraPreference::Handshake => handshake(session, client, timeout).await,
        EraPreference::Stateless => match discover(session, client, timeout, true).await? {
            Some(details) => Ok(details),
            None => Err(crate::error::Error::new(
                session.server(),
                ErrorKind::Protocol(format!(
                    "the server does not speak {LATEST_STATELESS_VERSION}"
                )),
            )
            .during(methods::SERVER_DISCOVER)),
        },
        EraPreference::Auto => detect(session, client, timeout).await,
        EraPreference::HandshakeFirst => {
            let started = tokio::time::Instant::now();
            match handshake(session, client, timeout).await {
                // Silence, a closed connection or a login say nothing about the era.
                Err(e) if !(e.is_timeout() || e.is_auth() || e.is_closed()) => {
                    tracing::debug!(
                        server = session.server(),
                        "initialize was refused ({e}); finding the server's era again"
                    );
                    detect(session, client, timeout.saturating_sub(started.elapsed())).await
                }
                shook => shook,
            }
        }
    }
}

/// Finds the era with no flag (see the module docs): the probe, and over stdio after
/// [`PROBE_TIMEOUT`] of silence `initialize` beside it.
async fn detect(
    session: &Session,
    client: &ClientInfo,
    timeout: Duration,
) -> Result<ServerDetails> {
    let started = tokio::time::Instant::now();
    let probe = discover(session, client, timeout, false);
    tokio::pin!(probe);
    let silence = if session.transport().kind() == "stdio" {
        PROBE_TIMEOUT.min(timeout)
    } else {
        timeout
    };
    if let Ok(found) = tokio::time::timeout(silence, &mut probe).await {
        return match found? {
            Some(details) => Ok(details),
            None => handshake(session, client, timeout).await,
        };
    }
    let left = timeout.saturating_sub(started.elapsed());
    let shake = handshake(session, client, left);
    tokio::pin!(shake);
    let mut probe_said_legacy = false;
    let mut refused = None;
    loop {
        tokio::select! {
            found = &mut probe, if !probe_said_legacy => match found? {
                Some(details) => return Ok(details),
                None => match refused.take() {
                    Some(e) => return Err(e),
                    None => probe_said_legacy = true,
                },
            },
            shook = &mut shake, if refused.is_none() => match shook {
                Ok(details) => return Ok(details),
                // A modern server refuses initialize; its answer to the probe decides.
                Err(e) if !probe_said_legacy => refused = Some(e),
                Err(e) => return Err(e),
            },
        }
    }
}

/// The `_meta` members of every stateless-era request.
fn envelope(
    version: &str,
    client: &ClientInfo,
    capabilities: Value,
) -> serde_json::Map<String, Value> {
    let mut meta = serde_json::Map::new();
    meta.insert(META_PROTOCOL_VERSION.into(), json!(version));
    meta.insert(
        META_CLIENT_INFO.into(),
        json!({"name": client.name, "version": client.version}),
    );
    meta.insert(META_CLIENT_CAPABILITIES.into(), capabilities);
    meta
}

/// Whether a discover result declares the tasks extension (`capabilities.extensions`).
pub(crate) fn declares_tasks(result: &Value) -> bool {
    result
        .get("capabilities")
        .and_then(|c| c.get("extensions"))
        .and_then(|e| e.get(super::TASKS_EXTENSION))
        .is_some_and(Value::is_object)
}

/// Adds the tasks extension to an envelope's client capabilities: the client then takes a
/// task (`resultType: "task"`) for an answer to each request that may have one.
fn opt_in_to_tasks(meta: &mut serde_json::Map<String, Value>) {
    let capabilities = meta
        .entry(META_CLIENT_CAPABILITIES)
        .or_insert_with(|| json!({}));
    if let Some(capabilities) = capabilities.as_object_mut() {
        let extensions = capabilities
            .entry("extensions")
            .or_insert_with(|| json!({}));
        if let Some(extensions) = extensions.as_object_mut() {
            extensions.insert(super::TASKS_EXTENSION.into(), json!({}));
        }
    }
}

/// The stateless versions this client speaks among `versions`, newest first.
fn shared_version(versions: &[&str]) -> Option<&'static str> {
    STATELESS_VERSIONS
        .into_iter()
        .find(|v| versions.contains(v))
}

fn strings(value: Option<&Value>) -> Vec<&str> {
    value
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

/// Tries the stateless era. `Ok(Some)`: it runs; `Ok(None)`: the server is of the
/// initialize era (unless `strict`, where that is an error too).
async fn discover(
    session: &Session,
    client: &ClientInfo,
    timeout: Duration,
    strict: bool,
) -> Result<Option<ServerDetails>> {
    let method = methods::SERVER_DISCOVER;
    let protocol_error = |why: String| {
        crate::error::Error::new(session.server(), ErrorKind::Protocol(why)).during(method)
    };
    let mut version = LATEST_STATELESS_VERSION;
    let mut retried = false;
    loop {
        // The envelope goes with the probe only: the session takes it once the era is known,
        // so an `initialize` sent beside the probe carries none.
        let mut meta = envelope(version, client, session.handlers().capabilities());
        let options = RequestOptions {
            timeout: Some(timeout),
            ..Default::default()
        };
        let params = json!({"_meta": meta});
        let outcome = session.request(method, Some(params), options).await;
        let legacy = |why: String| {
            if strict {
                return Err(protocol_error(why));
            }
            tracing::debug!(
                server = session.server(),
                "not a {LATEST_STATELESS_VERSION} server ({why}); trying initialize"
            );
            Ok(None)
        };
        match outcome {
            Ok(result) => {
                let supported = strings(result.get("supportedVersions"));
                if supported.contains(&version) {
                    if declares_tasks(&result) {
                        opt_in_to_tasks(&mut meta);
                    }
                    session.set_envelope(Some(meta));
                    return Ok(Some(stateless_details(version, &result)));
                }
                if let (Some(v), false) = (shared_version(&supported), retried) {
                    (version, retried) = (v, true);
                    continue;
                }
                let only_unknown_modern = !supported.is_empty()
                    && supported.iter().all(|v| !HANDSHAKE_VERSIONS.contains(v));
                if only_unknown_modern {
                    return Err(protocol_error(format!(
                        "the server speaks {}, and this client {LATEST_STATELESS_VERSION} and {}; upgrade the client or the server",
                        supported.join(", "),
                        HANDSHAKE_VERSIONS.join(", ")
                    )));
                }
                return legacy("its discover result names no version this client speaks".into());
            }
            Err(e) => match &e.kind {
                ErrorKind::Rpc(rpc) if rpc.code == UNSUPPORTED_VERSION => {
                    let data = rpc.data.clone().unwrap_or(Value::Null);
                    let supported = strings(data.get("supported"));
                    match shared_version(&supported) {
                        Some(v) if !retried => (version, retried) = (v, true),
                        _ => return legacy(format!("it supports {}", supported.join(", "))),
                    }
                }
                ErrorKind::Rpc(rpc) if matches!(rpc.code, HEADER_MISMATCH | MISSING_CAPABILITY) => {
                    return Err(e);
                }
                ErrorKind::Closed(_)
                | ErrorKind::Interrupted(_)
                | ErrorKind::Spawn(_)
                | ErrorKind::LoginRequired
                | ErrorKind::Auth(_) => return Err(e),
                _ => return legacy(e.kind_text()),
            },
        }
    }
}

/// What a discover result says of the server.
fn stateless_details(version: &str, result: &Value) -> ServerDetails {
    let server_info = result
        .pointer("/_meta/io.modelcontextprotocol~1serverInfo")
        .or_else(|| result.get("serverInfo"))
        .cloned()
        .unwrap_or(Value::Null);
    details(Era::Stateless, version, server_info, result)
}

/// What a server said of itself, from the result that started the session.
fn details(era: Era, version: &str, server_info: Value, result: &Value) -> ServerDetails {
    ServerDetails {
        era,
        protocol_version: version.to_string(),
        server_info,
        capabilities: result
            .get("capabilities")
            .cloned()
            .unwrap_or_else(|| json!({})),
        instructions: result
            .get("instructions")
            .and_then(Value::as_str)
            .map(str::to_string),
    }
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
    let result = session
        .request(methods::INITIALIZE, Some(params), options)
        .await?;
    let protocol_error = |why: String| {
        crate::error::Error::new(session.server(), ErrorKind::Protocol(why))
            .during(methods::INITIALIZE)
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
    let server_info = result.get("serverInfo").cloned().unwrap_or(Value::Null);
    let details = details(Era::Handshake, version, server_info, &result);
    session.notify(methods::INITIALIZED, None).await?;
    Ok(details)
}
