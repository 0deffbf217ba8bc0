//! [`Client`]: one connected MCP server, the embedder's main handle.

use crate::error::{Error, ErrorKind, Result};
use crate::protocol::era::{self, ClientInfo, EraPreference};
use crate::protocol::session::{DEFAULT_TIMEOUT, Handlers, RequestOptions, Session};
use crate::protocol::types::{ServerDetails, Tool, ToolOutput};
use crate::transport::{DEFAULT_MAX_MESSAGE, Inbound, Limits, Transport};
use crate::wire::jsonrpc::Notification;
use crate::wire::render::{DEFAULT_CAP, RenderError};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{broadcast, mpsc};

/// Most `tools/list` pages read before giving up on a server that never stops paging.
pub const MAX_TOOL_PAGES: usize = 1000;

/// How a client connects and behaves.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Who the client says it is.
    pub client_info: ClientInfo,
    /// What the embedder offers servers (roots, sampling, elicitation).
    pub handlers: Handlers,
    /// Default timeout of every request, the handshake included.
    pub timeout: Duration,
    /// Cap on the rendered output of one tool call, in bytes.
    pub output_cap: usize,
    /// Largest message kept whole; larger ones are only rendered (tool results) or refused.
    pub max_message: usize,
    /// Which protocol era to speak: found out by default.
    pub era: EraPreference,
}

impl ClientOptions {
    /// What the transport keeps of each incoming message.
    pub fn limits(&self) -> Limits {
        Limits {
            output_cap: self.output_cap,
            max_message: self.max_message,
        }
    }
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            client_info: ClientInfo::default(),
            handlers: Handlers::default(),
            timeout: DEFAULT_TIMEOUT,
            output_cap: DEFAULT_CAP,
            max_message: DEFAULT_MAX_MESSAGE,
            era: EraPreference::Auto,
        }
    }
}

/// One connected MCP server.
pub struct Client {
    session: Session,
    details: ServerDetails,
}

impl Client {
    /// Starts a stdio server and connects to it.
    #[cfg(feature = "stdio")]
    pub async fn connect_stdio(
        name: &str,
        config: &crate::transport::stdio::StdioConfig,
        options: ClientOptions,
    ) -> Result<Client> {
        let (transport, inbound) =
            crate::transport::stdio::StdioTransport::spawn(name, config, options.limits())?;
        Client::connect(name, Arc::new(transport), inbound, options).await
    }

    /// Connects to a streamable HTTP server (or a 2024-11-05 HTTP+SSE one, found by fallback).
    #[cfg(feature = "http")]
    pub async fn connect_http(
        name: &str,
        config: &crate::transport::http::HttpConfig,
        options: ClientOptions,
    ) -> Result<Client> {
        let (transport, inbound) =
            crate::transport::http::HttpTransport::new(name, config, options.limits())?;
        Client::connect(name, Arc::new(transport), inbound, options).await
    }

    /// Connects over any transport: starts the session, and closes the transport if that fails.
    pub async fn connect(
        name: &str,
        transport: Arc<dyn Transport>,
        inbound: mpsc::Receiver<Inbound>,
        options: ClientOptions,
    ) -> Result<Client> {
        let session = Session::new(
            name,
            transport.clone(),
            inbound,
            options.handlers,
            options.timeout,
        );
        match era::establish(&session, &options.client_info, options.timeout, options.era).await {
            Ok(details) => Ok(Client { session, details }),
            Err(e) => {
                transport.close().await;
                Err(e)
            }
        }
    }

    /// The server's name.
    pub fn name(&self) -> &str {
        self.session.server()
    }

    /// What the server said about itself when the session started.
    pub fn details(&self) -> &ServerDetails {
        &self.details
    }

    /// The session, for requests this type has no method for.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Notifications from the server (e.g. `notifications/tools/list_changed`).
    pub fn notifications(&self) -> broadcast::Receiver<Notification> {
        self.session.notifications()
    }

    /// Whether the connection has ended.
    pub fn is_closed(&self) -> bool {
        self.session.closed_reason().is_some()
    }

    fn error(&self, method: &str, kind: ErrorKind) -> Error {
        Error::new(self.name(), kind).during(method)
    }

    /// Lists every tool, following `nextCursor` to the end. A repeated or empty cursor stops
    /// the listing with a warning, as does reaching [`MAX_TOOL_PAGES`] pages.
    pub async fn list_tools(&self) -> Result<Vec<Tool>> {
        let mut tools = Vec::new();
        let mut seen = HashSet::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_TOOL_PAGES {
            let params = cursor.as_ref().map(|c| json!({"cursor": c}));
            let result = self
                .session
                .request("tools/list", params, RequestOptions::default())
                .await?;
            let page = result.get("tools").cloned().ok_or_else(|| {
                self.error(
                    "tools/list",
                    ErrorKind::Protocol("the result has no tools array".into()),
                )
            })?;
            let page: Vec<Tool> = serde_json::from_value(page).map_err(|e| {
                self.error(
                    "tools/list",
                    ErrorKind::Protocol(format!("invalid tools: {e}")),
                )
            })?;
            tools.extend(page);
            match result.get("nextCursor") {
                None | Some(Value::Null) => return Ok(tools),
                Some(Value::String(next)) if !next.is_empty() && seen.insert(next.clone()) => {
                    cursor = Some(next.clone())
                }
                Some(other) => {
                    tracing::warn!(server = %self.name(), "tools/list: stopping at cursor {other}, which is empty or was seen before");
                    return Ok(tools);
                }
            }
        }
        tracing::warn!(server = %self.name(), "tools/list: stopping after {MAX_TOOL_PAGES} pages");
        Ok(tools)
    }

    /// Calls a tool and returns what the model sees: the rendered result, capped.
    /// A result with `isError: true` is an `Ok` output with `is_error` set.
    pub async fn call_tool(
        &self,
        tool: &str,
        arguments: Value,
        options: RequestOptions,
    ) -> Result<ToolOutput> {
        let params = json!({"name": tool, "arguments": arguments});
        let reply = self
            .session
            .request_reply("tools/call", Some(params), options)
            .await?;
        let rendered = reply.rendered.unwrap_or_else(|| {
            Err(RenderError::Invalid(
                "the answer has neither result nor error".into(),
            ))
        });
        match rendered {
            Ok(r) => Ok(ToolOutput {
                text: r.text,
                is_error: r.is_error,
                total_bytes: r.total,
            }),
            Err(RenderError::Rpc(e)) => Err(self.error("tools/call", ErrorKind::Rpc(e))),
            Err(e @ RenderError::Invalid(_)) => {
                Err(self.error("tools/call", ErrorKind::Protocol(e.to_string())))
            }
        }
    }

    /// Sends `ping` and waits for the answer.
    pub async fn ping(&self) -> Result<()> {
        self.session
            .request("ping", None, RequestOptions::default())
            .await
            .map(drop)
    }

    /// Closes the connection (for stdio: ends the server process and its group).
    pub async fn close(&self) {
        self.session.transport().close().await;
    }
}
