//! [`Client`]: one connected MCP server, the embedder's main handle.

use crate::error::{Error, ErrorKind, Result};
use crate::protocol::era::{self, ClientInfo, EraPreference};
use crate::protocol::session::{DEFAULT_TIMEOUT, Handlers, RequestOptions, Session};
use crate::protocol::types::Era;
use crate::protocol::types::{ServerDetails, Tool, ToolOutput};
use crate::transport::{DEFAULT_MAX_MESSAGE, Inbound, Limits, Transport};
use crate::wire::jsonrpc::Notification;
use crate::wire::render::{DEFAULT_CAP, RenderError};
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;
use std::time::Instant;
use tokio::sync::{broadcast, mpsc};

/// How long one `subscriptions/listen` stays open before it is opened anew.
pub const LISTEN_TIMEOUT: Duration = Duration::from_secs(24 * 3600);

/// Most `tools/list` pages read before giving up on a server that never stops paging.
pub const MAX_TOOL_PAGES: usize = 1000;

/// The bound on all that is kept of one server's lists: however it pages them, a server whose
/// lists pass it is refused (nothing of them kept), so that one server cannot exhaust the
/// host's memory. The defaults are far above any real server's (a large one lists about a
/// hundred tools in under a megabyte).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListLimits {
    /// Most entries (tools) kept of one server.
    pub max_items: usize,
    /// Most bytes of the list pages (their messages as sent) kept of one server.
    pub max_bytes: u64,
}

impl Default for ListLimits {
    fn default() -> Self {
        ListLimits {
            max_items: 10_000,
            max_bytes: 8 << 20,
        }
    }
}

/// How a client connects and behaves.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Who the client says it is.
    pub client_info: ClientInfo,
    /// What the embedder offers servers (roots, sampling, elicitation).
    pub handlers: Handlers,
    /// Default timeout of every request (a call's own [`RequestOptions::timeout`] wins), from
    /// its first byte to its last, over stdio and HTTP alike.
    pub timeout: Duration,
    /// Timeout of each request of the handshake (`server/discover`, `initialize`); `None`:
    /// [`timeout`](Self::timeout).
    pub startup_timeout: Option<Duration>,
    /// Cap on the rendered output of one tool call, in bytes.
    pub output_cap: usize,
    /// Largest message kept whole; larger ones are only rendered (tool results) or refused.
    /// A tool result whose text passes `output_cap` is only rendered too.
    pub max_message: usize,
    /// Which protocol era to speak: found out by default.
    pub era: EraPreference,
    /// The bound on all that is kept of the server's lists.
    pub list_limits: ListLimits,
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
            startup_timeout: None,
            output_cap: DEFAULT_CAP,
            max_message: DEFAULT_MAX_MESSAGE,
            era: EraPreference::Auto,
            list_limits: ListLimits::default(),
        }
    }
}

/// One `x-mcp-header` annotation: the header name and the path of the argument it mirrors.
pub type HeaderParam = (String, Vec<String>);

/// A tool list kept while the server says it stays fresh.
struct ToolCache {
    tools: Vec<Tool>,
    fresh_until: Instant,
    /// The session's count of list-changed notifications when the list was read.
    changes: u64,
}

/// One connected MCP server.
pub struct Client {
    session: Session,
    details: ServerDetails,
    tools: Mutex<Option<ToolCache>>,
    /// Per tool, its `x-mcp-header` names and the argument path each mirrors.
    header_params: Mutex<HashMap<String, Vec<HeaderParam>>>,
    list_limits: ListLimits,
}

/// One page of `tools/list`, read straight from the message's bytes.
#[derive(serde::Deserialize)]
struct ToolsPage {
    tools: Vec<Tool>,
    #[serde(rename = "nextCursor", default)]
    next_cursor: Option<Value>,
    #[serde(rename = "ttlMs", default)]
    ttl_ms: Option<Value>,
}

/// The `x-mcp-header` annotations of an input schema: the header name and the path of the
/// property it mirrors. An annotation is valid on a property reached from the root through
/// `properties` alone, of type integer, string or boolean, named by a non-empty HTTP token
/// unique among the schema's (case-insensitively); any other annotation makes the tool invalid.
pub fn header_params_of(schema: &Value) -> std::result::Result<Vec<HeaderParam>, String> {
    fn count(v: &Value) -> usize {
        match v {
            Value::Object(map) => map
                .iter()
                .map(|(k, v)| usize::from(k == "x-mcp-header") + count(v))
                .sum(),
            Value::Array(items) => items.iter().map(count).sum(),
            _ => 0,
        }
    }
    type Found = (Option<String>, Vec<String>, Value);
    fn walk(schema: &Value, path: &mut Vec<String>, found: &mut Vec<Found>) {
        for (name, property) in schema
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            path.push(name.clone());
            if let Some(header) = property.get("x-mcp-header") {
                let kind = property.get("type").cloned().unwrap_or(Value::Null);
                found.push((header.as_str().map(str::to_string), path.clone(), kind));
            }
            walk(property, path, found);
            path.pop();
        }
    }
    let mut found = Vec::new();
    walk(schema, &mut Vec::new(), &mut found);
    if found.len() != count(schema) {
        return Err("an annotation sits where only properties lead to it is allowed".into());
    }
    let token = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
    };
    let mut seen = HashSet::new();
    let mut params = Vec::new();
    for (name, path, kind) in found {
        let Some(name) = name.filter(|n| token(n)) else {
            return Err(format!(
                "the annotation on {} is not a header name",
                path.join(".")
            ));
        };
        if !seen.insert(name.to_ascii_lowercase()) {
            return Err(format!("{name:?} is used twice"));
        }
        if !matches!(kind.as_str(), Some("integer" | "string" | "boolean")) {
            return Err(format!(
                "{name:?} is on {}, whose type is not integer, string or boolean",
                path.join(".")
            ));
        }
        params.push((name, path));
    }
    Ok(params)
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
        let startup = options.startup_timeout.unwrap_or(options.timeout);
        match era::establish(&session, &options.client_info, startup, options.era).await {
            Ok(details) => Ok(Client {
                session,
                details,
                tools: Mutex::new(None),
                header_params: Mutex::new(HashMap::new()),
                list_limits: options.list_limits,
            }),
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
    /// the listing with a warning, as does reaching [`MAX_TOOL_PAGES`] pages. A list past
    /// [`ClientOptions::list_limits`], whatever its pages, is an error, and nothing of it is
    /// kept.
    ///
    /// A list the server marked cacheable (`ttlMs`) is served from memory until it goes stale
    /// or the server says the list changed. Over HTTP in the stateless era, a tool whose
    /// `x-mcp-header` annotations are invalid is left out with a warning.
    pub async fn list_tools(&self) -> Result<Vec<Tool>> {
        let changes = self.session.tool_list_changes();
        if let Some(cache) = self.tools.lock().expect("tools lock").as_ref()
            && cache.changes == changes
            && Instant::now() < cache.fresh_until
        {
            return Ok(cache.tools.clone());
        }
        let mut tools = Vec::new();
        let mut ttl: Option<u64> = None;
        let mut seen = HashSet::new();
        let mut cursor: Option<String> = None;
        let limits = self.list_limits;
        let mut bytes = 0u64;
        for page_number in 0..=MAX_TOOL_PAGES {
            if page_number == MAX_TOOL_PAGES {
                tracing::warn!(server = %self.name(), "tools/list: stopping after {MAX_TOOL_PAGES} pages");
                break;
            }
            let params = cursor.as_ref().map(|c| json!({"cursor": c}));
            let (page, len) = self
                .session
                .request_as::<ToolsPage>("tools/list", params, RequestOptions::default())
                .await?;
            bytes += len;
            if tools.len() + page.tools.len() > limits.max_items || bytes > limits.max_bytes {
                // Nothing of the list is kept: a partial list would look whole to the model.
                let why = format!(
                    "the server lists more than this client keeps of one server ({} tools, {} bytes of list pages; it sent {} tools in {bytes} bytes so far): ask its maintainers, or raise ClientOptions::list_limits for a server you trust",
                    limits.max_items,
                    limits.max_bytes,
                    tools.len() + page.tools.len(),
                );
                return Err(self.error("tools/list", ErrorKind::Protocol(why)));
            }
            tools.extend(page.tools);
            let page_ttl = page.ttl_ms.as_ref().and_then(Value::as_u64).unwrap_or(0);
            ttl = Some(ttl.map_or(page_ttl, |t| t.min(page_ttl)));
            match page.next_cursor {
                None | Some(Value::Null) => break,
                Some(Value::String(next)) if !next.is_empty() && seen.insert(next.clone()) => {
                    cursor = Some(next)
                }
                Some(other) => {
                    tracing::warn!(server = %self.name(), "tools/list: stopping at cursor {other}, which is empty or was seen before");
                    break;
                }
            }
        }
        let checks_headers =
            self.details.era == Era::Stateless && self.session.transport().kind() == "http";
        let mut header_params = HashMap::new();
        tools.retain(|tool| {
            if !checks_headers {
                return true;
            }
            match header_params_of(&tool.input_schema_value()) {
                Ok(params) => {
                    header_params.insert(tool.name.clone(), params);
                    true
                }
                Err(why) => {
                    tracing::warn!(server = %self.name(), tool = %tool.name, "leaving out the tool: its x-mcp-header annotation is invalid: {why}");
                    false
                }
            }
        });
        *self.header_params.lock().expect("header params lock") = header_params;
        let fresh_until = Instant::now() + Duration::from_millis(ttl.unwrap_or(0));
        *self.tools.lock().expect("tools lock") = Some(ToolCache {
            tools: tools.clone(),
            fresh_until,
            changes,
        });
        Ok(tools)
    }

    /// The `Mcp-Param-*` headers of a call, from the tool's `x-mcp-header` annotations.
    #[cfg(not(feature = "http"))]
    fn param_headers(&self, _: &str, _: &Value) -> Vec<(String, String)> {
        Vec::new()
    }

    /// The `Mcp-Param-*` headers of a call, from the tool's `x-mcp-header` annotations.
    #[cfg(feature = "http")]
    fn param_headers(&self, tool: &str, arguments: &Value) -> Vec<(String, String)> {
        let params = self.header_params.lock().expect("header params lock");
        let Some(params) = params.get(tool) else {
            return Vec::new();
        };
        params
            .iter()
            .filter_map(|(name, path)| {
                let pointer: String = path
                    .iter()
                    .map(|p| format!("/{}", p.replace('~', "~0").replace('/', "~1")))
                    .collect();
                let value = match arguments.pointer(&pointer)? {
                    Value::String(s) => crate::transport::http_header_value(s),
                    Value::Bool(b) => b.to_string(),
                    Value::Number(n) if n.is_i64() || n.is_u64() => n.to_string(),
                    _ => return None,
                };
                Some((format!("Mcp-Param-{name}"), value))
            })
            .collect()
    }

    /// Calls a tool with the client's default timeout and returns what the model sees: the
    /// rendered result, capped. A result with `isError: true` is an `Ok` output with
    /// `is_error` set. A stateless server's `HeaderMismatch` refreshes the tool list and sends
    /// the call once more. [`call_tool_with`](Self::call_tool_with) takes per-call options.
    pub async fn call_tool(&self, tool: &str, arguments: Value) -> Result<ToolOutput> {
        self.call_tool_with(tool, arguments, RequestOptions::default())
            .await
    }

    /// [`call_tool`](Self::call_tool) with per-call options: a timeout, progress, headers.
    pub async fn call_tool_with(
        &self,
        tool: &str,
        arguments: Value,
        options: RequestOptions,
    ) -> Result<ToolOutput> {
        let headers = self.param_headers(tool, &arguments);
        // Built by hand: `json!` would copy the arguments through serialization.
        let mut params = serde_json::Map::new();
        params.insert("name".into(), Value::String(tool.into()));
        params.insert("arguments".into(), arguments);
        let params = Value::Object(params);
        let mut headed = RequestOptions {
            headers,
            ..options.clone()
        };
        let mut reply = self
            .session
            .request_reply("tools/call", Some(&params), headed)
            .await;
        if let Err(Error {
            kind: ErrorKind::Rpc(e),
            ..
        }) = &reply
            && e.code == crate::protocol::HEADER_MISMATCH
        {
            *self.tools.lock().expect("tools lock") = None;
            self.list_tools().await?;
            headed = RequestOptions {
                headers: self.param_headers(tool, &params["arguments"]),
                ..options
            };
            reply = self
                .session
                .request_reply("tools/call", Some(&params), headed)
                .await;
        }
        let reply = reply?;
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
            Err(RenderError::Rpc(e)) => Err(self.error("tools/call", ErrorKind::Rpc(Box::new(e)))),
            Err(e @ RenderError::Invalid(_)) => {
                Err(self.error("tools/call", ErrorKind::Protocol(e.to_string())))
            }
        }
    }

    /// Stateless era: holds a `subscriptions/listen` request open so the server can say when
    /// its tool, prompt and resource lists change; those notifications arrive as any other
    /// ([`Client::notifications`]). Returns when the server or the connection ends it.
    pub async fn listen_for_changes(&self) -> Result<Value> {
        let params = json!({"notifications": {
            "toolsListChanged": true, "promptsListChanged": true, "resourcesListChanged": true
        }});
        let options = RequestOptions {
            timeout: Some(LISTEN_TIMEOUT),
            ..Default::default()
        };
        self.session
            .request("subscriptions/listen", Some(params), options)
            .await
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

#[cfg(test)]
mod tests {
    use super::header_params_of;
    use serde_json::json;

    #[test]
    fn header_annotations_are_checked() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "nested": {"type": "object", "properties": {"n": {"type": "integer", "x-mcp-header": "N"}}},
            "plain": {"type": "number"}
        }});
        assert_eq!(
            header_params_of(&schema).unwrap(),
            vec![
                ("N".to_string(), vec!["nested".to_string(), "n".to_string()]),
                ("Region".into(), vec!["region".into()])
            ]
        );
        let bad = |property: serde_json::Value| {
            header_params_of(&json!({"properties": {"p": property}})).unwrap_err()
        };
        bad(json!({"type": "string", "x-mcp-header": ""}));
        bad(json!({"type": "string", "x-mcp-header": "My Region"}));
        bad(json!({"type": "string", "x-mcp-header": "Région"}));
        bad(json!({"type": "string", "x-mcp-header": "Region\t1"}));
        bad(json!({"type": "number", "x-mcp-header": "N"}));
        bad(json!({"type": "object", "x-mcp-header": "O"}));
        bad(json!({"type": ["string", "null"], "x-mcp-header": "S"}));
        bad(json!({"type": "string", "x-mcp-header": 5}));
        let dup = json!({"properties": {"a": {"type": "string", "x-mcp-header": "MyField"},
                                        "b": {"type": "string", "x-mcp-header": "myfield"}}});
        assert!(header_params_of(&dup).is_err());
        let hidden = json!({"properties": {"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "A"}}}});
        assert!(header_params_of(&hidden).is_err());
    }
}
