//! The server routes: list, add, remove, status, reconnect, tools, call; and the allowlist.

use super::{
    ApiError, Body, State, json_response, ok, only_members, optional_string, required_string,
};
use crate::error::ErrorKind;
use crate::host::config::{ServerConfig, start_member};
use crate::host::expand::is_pure_reference;
use crate::host::gate::PermissionMode;
use crate::host::model_api::{ModelApi, tool_list};
use crate::host::{
    Allowlist, CallError, CallOutcome, Conversation, DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT,
    RegisteredTool, Start, ToolCall, ToolFilter,
};
use crate::protocol::session::RequestOptions;
use crate::protocol::trace::TraceContext;
use hyper::{Response, StatusCode};
use serde_json::{Value, json};
use std::sync::Arc;

type Answer = Result<Response<Body>, ApiError>;

/// What stands in for a secret in `GET /v1/mcp`.
const REDACTED: &str = "[redacted]";

/// The members of a server entry that hold secrets: each value is shown only when it is a
/// pure `$VAR` / `${VAR}` reference.
const SECRET_MAPS: [&str; 2] = ["env", "headers"];
const SECRET_VALUES: [&str; 1] = ["oauth_client_secret"];

fn redact_value(value: &mut Value) {
    if !matches!(value, Value::String(s) if is_pure_reference(s)) {
        *value = json!(REDACTED);
    }
}

/// One entry as written, with every literal header, env value and client secret replaced,
/// and its URL's password and query values hidden (`redact_url`).
fn redact(entry: &Value) -> Value {
    let Value::Object(members) = entry else {
        // Not an entry at all (the file is broken there): show nothing of it.
        return json!(REDACTED);
    };
    let mut members = members.clone();
    for key in SECRET_MAPS {
        match members.get_mut(key) {
            Some(Value::Object(map)) => map.values_mut().for_each(redact_value),
            Some(other) => redact_value(other),
            None => {}
        }
    }
    for key in SECRET_VALUES {
        if let Some(value) = members.get_mut(key) {
            redact_value(value);
        }
    }
    if let Some(Value::String(url)) = members.get_mut("url") {
        *url = crate::safe_text::redact_url(url).into_owned();
    }
    // A proxy URL is shown without its credentials (a pure `$VAR` as it is).
    if let Some(Value::String(proxy)) = members.get_mut("proxy")
        && !is_pure_reference(proxy)
    {
        *proxy = crate::proxy::without_userinfo(proxy);
    }
    Value::Object(members)
}

/// `GET /v1/mcp`.
pub(super) fn list(state: &State) -> Answer {
    let config = state.control.config()?;
    let servers: serde_json::Map<String, Value> = config
        .server_names()
        .into_iter()
        .filter_map(|name| {
            let entry = redact(config.server_value(&name)?);
            Some((name, entry))
        })
        .collect();
    ok(json!({
        "path": state.control.config_path().display().to_string(),
        "servers": servers,
    }))
}

/// What `POST /v1/mcp` takes besides `name`.
const ENTRY_MEMBERS: [&str; 10] = [
    "name",
    "command",
    "args",
    "env",
    "url",
    "headers",
    "auth",
    "timeout",
    "startup_timeout",
    "proxy",
];

/// `POST /v1/mcp`'s body: the server's name and its entry.
pub(super) fn add_request(body: Value) -> Result<(String, ServerConfig), ApiError> {
    let name = required_string(&body, "name")?;
    only_members(&body, &ENTRY_MEMBERS)?;
    let mut entry = body;
    if let Some(members) = entry.as_object_mut() {
        members.remove("name");
    }
    let server = ServerConfig::from_value(&name, &entry)
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    Ok((name, server))
}

/// `POST /v1/mcp`: checked, saved, then connected and registered.
pub(super) async fn add(state: &State, body: Value) -> Answer {
    let (name, server) = add_request(body)?;
    let control = &state.control;
    let status = control.add_server(&name, server).await?;
    let collisions: Vec<String> = control
        .registry()
        .collisions()
        .into_iter()
        .filter(|c| c.dropped.0 == name)
        .map(|c| c.to_string())
        .collect();
    Ok(json_response(
        StatusCode::CREATED,
        &json!({"server": status, "collisions": collisions}),
    ))
}

/// `POST /v1/mcp/remove`: out of the file, then closed and unregistered; its OAuth tokens
/// and client secret are forgotten.
pub(super) async fn remove(state: &State, body: Value) -> Answer {
    let name = remove_request(&body)?;
    state.control.remove_server(&name).await?;
    ok(json!({"removed": name}))
}

/// `POST /v1/mcp/remove`'s body: the server's name.
pub(super) fn remove_request(body: &Value) -> Result<String, ApiError> {
    let name = required_string(body, "name")?;
    only_members(body, &["name"])?;
    Ok(name)
}

/// `GET /v1/mcp/status`.
pub(super) fn status(state: &State) -> Answer {
    ok(json!({"servers": state.control.status()}))
}

/// `POST /v1/mcp/reconnect`'s body: one server's name, or none for every server.
pub(super) fn reconnect_request(body: &Value) -> Result<Option<String>, ApiError> {
    only_members(body, &["name"])?;
    match body.get("name") {
        None | Some(Value::Null) => Ok(None),
        Some(_) => Ok(Some(required_string(body, "name")?)),
    }
}

/// `POST /v1/mcp/reconnect`: every server, or `{"name"}`.
pub(super) async fn reconnect(state: &State, body: Value) -> Answer {
    let one = reconnect_request(&body)?;
    let control = &state.control;
    let outcomes = match one {
        Some(name) => {
            if !control.status().iter().any(|s| s.name == name) {
                return Err(ApiError::not_found(format!(
                    "no server named {name:?}; GET /v1/mcp/status lists them"
                )));
            }
            let outcome = control.reconnect_server(&name).await;
            vec![(name, outcome)]
        }
        None => control.reconnect().await,
    };
    let results: Vec<Value> = outcomes
        .into_iter()
        .map(|(name, outcome)| match outcome {
            Ok(()) => json!({"name": name, "ok": true}),
            Err(e) => json!({"name": name, "ok": false, "error": e.to_string()}),
        })
        .collect();
    ok(json!({"results": results}))
}

/// One registered tool as `GET /v1/mcp/tools` and the search list it: its schema written as
/// the server's text, never parsed (a parsed schema takes many times its size).
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Listed<'a> {
    name: &'a str,
    server: &'a str,
    tool: &'a str,
    description: &'a str,
    input_schema: &'a serde_json::value::RawValue,
    auto_approve: bool,
    visible: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    ui: Option<&'a crate::ToolUi>,
}

impl<'a> Listed<'a> {
    fn of(t: &'a RegisteredTool, allowlist: &Allowlist) -> Listed<'a> {
        Listed {
            name: &t.definition.name,
            server: &t.server,
            tool: &t.tool,
            description: &t.definition.description,
            input_schema: &t.definition.input_schema,
            auto_approve: allowlist.allows(&t.definition.name, Some(&t.server)),
            visible: true,
            ui: t.ui.as_ref(),
        }
    }
}

/// `GET /v1/mcp/tools`.
/// The `format` a query asks for, if any; 400 naming the known ones for another.
fn format_param(query: &str) -> Result<Option<ModelApi>, ApiError> {
    query_param(query, "format")
        .map(|f| {
            f.parse::<ModelApi>()
                .map_err(|e| ApiError::bad_request(e.to_string()))
        })
        .transpose()
}

/// `{"format": F, "tools": [...]}`: `definitions` as the request's tool list for that model API.
fn in_format(api: ModelApi, definitions: &[crate::host::ToolDefinition]) -> Value {
    json!({"format": api.name(), "tools": tool_list(api, definitions)})
}

/// `GET /v1/mcp/tools?format=F`: every registered tool's definition shaped for a model
/// API; without `format`, the tools as listed below.
pub(super) fn tools_in(state: &State, query: &str) -> Answer {
    match format_param(query)? {
        Some(api) => ok(in_format(api, &state.control.tool_definitions())),
        None => tools(state),
    }
}

pub(super) fn tools(state: &State) -> Answer {
    /// A tool its server's filter hides: not registered, so no definition.
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Hidden {
        name: String,
        server: String,
        tool: String,
        description: String,
        auto_approve: bool,
        visible: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        ui: Option<crate::ToolUi>,
    }
    let allowlist = state.control.allowlist()?;
    let control = &state.control;
    let registry = control.registry();
    let tools: Vec<Listed> = registry
        .tools()
        .map(|t| Listed::of(t, &allowlist))
        .collect();
    let hidden: Vec<Hidden> = control
        .status()
        .into_iter()
        .filter(|s| s.hidden_tools > 0)
        .flat_map(|s| {
            let allowlist = &allowlist;
            let tools = control.server_tools(&s.name).unwrap_or_default();
            tools
                .into_iter()
                .filter(|t| !t.visible)
                .map(move |t| Hidden {
                    auto_approve: allowlist.allows(&t.name, Some(&s.name)),
                    name: t.name,
                    server: s.name.clone(),
                    tool: t.tool,
                    description: t.description,
                    visible: false,
                    ui: t.ui,
                })
        })
        .collect();
    #[derive(serde::Serialize)]
    struct Answer<'a> {
        tools: Vec<Listed<'a>>,
        hidden: Vec<Hidden>,
    }
    Ok(super::json_response(
        StatusCode::OK,
        &Answer { tools, hidden },
    ))
}

/// The most conversations the daemon keeps tool search state for; past it the one used
/// longest ago is forgotten.
const MAX_CONVERSATIONS: usize = 1024;

/// The longest conversation name.
const MAX_CONVERSATION_NAME: usize = 128;

/// Tool search state of the conversations callers named, most recently used last.
#[derive(Default)]
pub(crate) struct Conversations(std::sync::Mutex<Vec<(String, Arc<Conversation>)>>);

impl Conversations {
    fn get(&self, name: &str) -> Result<Arc<Conversation>, ApiError> {
        if name.is_empty() || name.len() > MAX_CONVERSATION_NAME {
            return Err(ApiError::bad_request(format!(
                "a conversation name is 1 to {MAX_CONVERSATION_NAME} bytes"
            )));
        }
        let mut all = self.0.lock().expect("conversations lock");
        let found = match all.iter().position(|(n, _)| n == name) {
            Some(i) => all.remove(i).1,
            None => Arc::new(Conversation::new()),
        };
        if all.len() == MAX_CONVERSATIONS {
            all.remove(0);
        }
        all.push((name.to_string(), found.clone()));
        Ok(found)
    }
}

fn query_param(query: &str, key: &str) -> Option<String> {
    crate::auth::pkce::parse_query(query)
        .into_iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v)
}

/// A tool the search found: as `GET /v1/mcp/tools` lists it, with its score (see
/// `host::ToolMatch`) and whether the match is weak.
#[derive(serde::Serialize)]
struct Found<'a> {
    #[serde(flatten)]
    listed: Listed<'a>,
    score: f32,
    weak: bool,
}

/// `GET /v1/mcp/tools/search?q=&limit=`: the registered tools that best match, best first,
/// each as `GET /v1/mcp/tools` lists it, with its `score` and `weak`.
pub(super) fn search(state: &State, query: &str) -> Answer {
    let q = query_param(query, "q").unwrap_or_default();
    let limit = match query_param(query, "limit") {
        None => DEFAULT_SEARCH_LIMIT,
        Some(l) => l
            .parse::<usize>()
            .ok()
            .filter(|l| (1..=MAX_SEARCH_LIMIT).contains(l))
            .ok_or_else(|| {
                ApiError::bad_request(format!(
                    "limit must be a number from 1 to {MAX_SEARCH_LIMIT}"
                ))
            })?,
    };
    let allowlist = state.control.allowlist()?;
    let index = state.control.tool_index();
    let tools: Vec<Found> = index
        .matches(&q, limit)
        .iter()
        .map(|m| Found {
            listed: Listed::of(m.tool, &allowlist),
            score: m.score,
            weak: m.is_weak(),
        })
        .collect();
    ok(json!({"tools": tools}))
}

/// `GET /v1/mcp/tools/offered?conversation=ID&format=F`: the definitions to offer the model
/// in that conversation (every visible tool's, or the search tool and the tools found in
/// it), shaped for a model API when `format` is given.
pub(super) fn offered(state: &State, query: &str) -> Answer {
    let name = query_param(query, "conversation").unwrap_or_default();
    let format = format_param(query)?;
    let conversation = state.conversations.get(&name)?;
    let control = &state.control;
    let offered = control.offered_tools(&conversation);
    let mut answer = match format {
        Some(api) => in_format(api, &offered),
        None => json!({"tools": offered}),
    };
    answer["search"] = json!(control.tool_search_active());
    ok(answer)
}

/// `POST /v1/mcp/call`'s body, read as the host's call; `conversation` is the name of the
/// conversation it is made in, looked up by the caller.
pub(super) fn call_request(body: &Value) -> Result<(ToolCall, Option<String>), ApiError> {
    only_members(
        body,
        &[
            "name",
            "arguments",
            "mode",
            "conversation",
            "id",
            "format",
            "call_id",
        ],
    )?;
    // Each of these, when given, is a non-empty string.
    let given = |key: &str| match body.get(key) {
        Some(_) => required_string(body, key).map(Some),
        None => Ok(None),
    };
    let conversation = given("conversation")?;
    let id = given("id")?;
    for (key, value) in [("id", &id), ("call_id", &given("call_id")?)] {
        if value.as_ref().is_some_and(|v| v.len() > MAX_CALL_ID) {
            return Err(ApiError::bad_request(format!(
                "{key:?} must be at most {MAX_CALL_ID} bytes"
            )));
        }
    }
    let name = required_string(body, "name")?;
    let arguments = match body.get("arguments") {
        None | Some(Value::Null) => json!({}),
        Some(v @ Value::Object(_)) => v.clone(),
        Some(_) => return Err(ApiError::bad_request("\"arguments\" must be a JSON object")),
    };
    let mode = match optional_string(body, "mode")? {
        None => PermissionMode::Confirm,
        Some(m) => m
            .parse()
            .map_err(|e: crate::error::ParseError| ApiError::bad_request(e.to_string()))?,
    };
    let call = match optional_string(body, "format")? {
        None if body.get("call_id").is_some() => {
            return Err(ApiError::bad_request(
                "\"call_id\" goes with \"format\", the model API it comes from",
            ));
        }
        None => ToolCall::new(name, arguments),
        Some(f) => {
            let api = f
                .parse::<ModelApi>()
                .map_err(|e| ApiError::bad_request(e.to_string()))?;
            ToolCall::from_model(api, required_string(body, "call_id")?, name, arguments)
        }
    };
    let call = call.with_mode(mode);
    Ok((
        match id {
            Some(id) => call.with_id(id),
            None => call,
        },
        conversation,
    ))
}

/// The longest `id` a caller may give a call.
const MAX_CALL_ID: usize = 200;

/// `POST /v1/mcp/call`: the host's call ([`Control::call`](crate::host::Control::call)): a
/// call the gate refuses is 403 with the reason; a server with
/// [`super::Limits::max_calls_per_server`] calls in flight gets no more: 429. A
/// task-required tool runs as a task. With an `id`, `POST /v1/mcp/call/cancel` stops it
/// (409 `cancelled`; the server is told); while anyone listens on `GET /v1/mcp/events`, its
/// progress goes there.
pub(super) async fn call(state: &State, body: Value, trace: Option<TraceContext>) -> Answer {
    let (mut call, conversation) = call_request(&body)?;
    if let Some(name) = conversation {
        call = call.with_conversation(state.conversations.get(&name)?);
    }
    if let Some(trace) = trace {
        call = call.with_request(RequestOptions::default().with_trace(trace));
    }
    let CallOutcome { output, item } = state.control.call(call).await.map_err(call_error)?;
    let mut answer = json!({
        "text": output.text,
        "isError": output.is_error,
        "totalBytes": output.total_bytes,
    });
    if let Some(item) = item {
        answer["item"] = item;
    }
    ok(answer)
}

/// A call's error as the API answers it.
fn call_error(e: CallError) -> ApiError {
    if let Some(server) = e.needs_login() {
        return ApiError::login_required(server, &e);
    }
    match e {
        CallError::UnknownTool(_) => ApiError::not_found(e.to_string()),
        CallError::Unavailable { .. } => ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            e.to_string(),
        ),
        CallError::Denied(denied) => {
            ApiError::new(StatusCode::FORBIDDEN, "denied", denied.to_string())
        }
        CallError::Server(e) => {
            let status = match e.kind {
                ErrorKind::Timeout(_) => StatusCode::GATEWAY_TIMEOUT,
                _ => StatusCode::BAD_GATEWAY,
            };
            ApiError::new(status, "server_error", e.to_string())
        }
        CallError::Busy { .. } => ApiError::busy(e.to_string(), 1),
        CallError::IdInUse(_) => ApiError::conflict(e.to_string()),
        CallError::Cancelled(id) => ApiError::new(
            StatusCode::CONFLICT,
            "cancelled",
            format!(
                "the call {id:?} was cancelled (POST /v1/mcp/call/cancel); the server was told"
            ),
        ),
    }
}

/// `POST /v1/mcp/enable`'s body: the server's name and whether it is to be enabled.
pub(super) fn enable_request(body: &Value) -> Result<(String, bool), ApiError> {
    only_members(body, &["name", "enabled"])?;
    let name = required_string(body, "name")?;
    match body.get("enabled") {
        Some(Value::Bool(b)) => Ok((name, *b)),
        _ => Err(ApiError::bad_request(
            "the body needs \"enabled\": true or false",
        )),
    }
}

/// `POST /v1/mcp/enable`: saved to the server's entry, then the server started or stopped;
/// answers its status.
pub(super) async fn enable(state: &State, body: Value) -> Answer {
    let (name, enabled) = enable_request(&body)?;
    state.control.set_enabled(&name, enabled).await?;
    let status = state.control.status().into_iter().find(|s| s.name == name);
    ok(json!({"name": name, "enabled": enabled, "status": status}))
}

/// `POST /v1/mcp/start`'s body: `{"name", "start": "launch" | "on_demand", "idle_timeout"?}`
/// (`idle_timeout` in seconds, only with `on_demand`; absent: 600).
pub(super) fn start_request(body: &Value) -> Result<(String, Start), ApiError> {
    only_members(body, &["name", "start", "idle_timeout"])?;
    let name = required_string(body, "name")?;
    let top = serde_json::Map::new();
    let start = start_member(&name, body, &top).map_err(|e| ApiError::bad_request(e.message))?;
    match (body.get("start"), start, body.get("idle_timeout")) {
        (None, ..) => Err(ApiError::bad_request(
            "the body needs \"start\": \"launch\" or \"on_demand\"",
        )),
        (_, Start::Launch, Some(_)) => Err(ApiError::bad_request(
            "\"idle_timeout\" goes with \"start\": \"on_demand\" only",
        )),
        _ => Ok((name, start)),
    }
}

/// `POST /v1/mcp/start`: saved to the server's entry, then the server follows (made to
/// run from launch, an idle one is started); answers its status.
pub(super) async fn start(state: &State, body: Value) -> Answer {
    let (name, start) = start_request(&body)?;
    state.control.set_start(&name, start).await?;
    let status = state.control.status().into_iter().find(|s| s.name == name);
    ok(json!({"name": name, "start": start.name(), "status": status}))
}

/// What `POST /v1/mcp/tools/visibility` asks.
pub(super) enum VisibilityRequest {
    /// One tool (`Some`), or every tool of the server, shown or hidden.
    Tool(Option<String>, bool),
    /// The server's lists, replaced.
    Lists(ToolFilter),
}

/// `POST /v1/mcp/tools/visibility`'s body: `{"server", "tool"?, "visible"}` or
/// `{"server", "enabled_tools"?, "disabled_tools"?}`.
pub(super) fn visibility_request(body: &Value) -> Result<(String, VisibilityRequest), ApiError> {
    only_members(
        body,
        &[
            "server",
            "tool",
            "visible",
            "enabled_tools",
            "disabled_tools",
        ],
    )?;
    let server = required_string(body, "server")?;
    let lists = body.get("enabled_tools").is_some() || body.get("disabled_tools").is_some();
    match (body.get("visible"), lists) {
        (Some(_), true) => Err(ApiError::bad_request(
            "give either \"visible\" (with \"tool\" or not) or the lists, not both",
        )),
        (Some(Value::Bool(visible)), false) => Ok((
            server,
            VisibilityRequest::Tool(optional_string(body, "tool")?, *visible),
        )),
        (Some(_), false) => Err(ApiError::bad_request("\"visible\" must be true or false")),
        (None, true) if body.get("tool").is_some() => Err(ApiError::bad_request(
            "\"tool\" goes with \"visible\", not with the lists",
        )),
        (None, true) => {
            let filter = ToolFilter::from_entry(&server, body)
                .map_err(|e| ApiError::bad_request(e.to_string()))?;
            Ok((server, VisibilityRequest::Lists(filter)))
        }
        (None, false) => Err(ApiError::bad_request(
            "the body needs \"visible\" (and \"tool\" for one tool), or \"enabled_tools\" / \"disabled_tools\"",
        )),
    }
}

/// `POST /v1/mcp/tools/visibility`: saved to the server's entry (only its lists change),
/// then its tools registered again; answers the server's lists.
pub(super) async fn visibility(state: &State, body: Value) -> Answer {
    let (server, request) = visibility_request(&body)?;
    let filter = match request {
        VisibilityRequest::Tool(tool, visible) => {
            state
                .control
                .set_tool_visible(&server, tool.as_deref(), visible)
                .await?
        }
        VisibilityRequest::Lists(filter) => state.control.set_tool_filter(&server, filter).await?,
    };
    ok(json!({
        "server": server,
        "enabled_tools": filter.enabled_tools,
        "disabled_tools": filter.disabled_tools,
    }))
}

/// `GET /v1/allowlist`.
pub(super) fn allowlist(state: &State) -> Answer {
    ok(json!({"entries": state.control.allowlist()?.entries()}))
}

/// `POST /v1/allowlist`: `{"tool": {"prefix": "mcp__x__", "entries": [...]}}` replaces the
/// entries of that prefix only.
pub(super) async fn set_allowlist(state: &State, body: Value) -> Answer {
    let (prefix, entries) = set_allowlist_request(&body)?;
    let list = state.control.set_allowed(&prefix, &entries).await?;
    ok(json!({"entries": list.entries()}))
}

/// `POST /v1/allowlist`'s body: the prefix and its new entries.
pub(super) fn set_allowlist_request(body: &Value) -> Result<(String, Vec<String>), ApiError> {
    only_members(body, &["tool"])?;
    let shape =
        "the body must be {\"tool\": {\"prefix\": \"mcp__<server>__\", \"entries\": [...]}}";
    let tool = body
        .get("tool")
        .filter(|t| t.is_object())
        .ok_or_else(|| ApiError::bad_request(shape))?;
    only_members(tool, &["prefix", "entries"])?;
    let prefix = required_string(tool, "prefix")?;
    let entries: Vec<String> = match tool.get("entries") {
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| i.as_str().map(str::to_string))
            .collect::<Option<_>>()
            .ok_or_else(|| ApiError::bad_request("\"entries\" must be an array of strings"))?,
        _ => return Err(ApiError::bad_request(shape)),
    };
    Ok((prefix, entries))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_redacted_references_kept() {
        let entry = json!({
            "command": "x", "args": ["--token=abc"],
            "env": {"A": "literal", "B": "$B", "C": "${C}", "D": "pre-${D}", "E": 5},
            "headers": {"Authorization": "Bearer abc", "X-Key": "${KEY}"},
            "oauth_client_secret": "s3cret",
            "note": "kept"
        });
        assert_eq!(
            redact(&entry),
            json!({
                "command": "x", "args": ["--token=abc"],
                "env": {"A": REDACTED, "B": "$B", "C": "${C}", "D": REDACTED, "E": REDACTED},
                "headers": {"Authorization": REDACTED, "X-Key": "${KEY}"},
                "oauth_client_secret": REDACTED,
                "note": "kept"
            })
        );
        assert_eq!(redact(&json!({"env": "A=b"}))["env"], REDACTED);
        // A URL keeps where it points, not its password or query values.
        assert_eq!(
            redact(&json!({"url": "https://u:pw@h.test/mcp?api_key=k1&x=2"}))["url"],
            "https://u:***@h.test/mcp?api_key=***&x=***"
        );
        assert_eq!(redact(&json!({"url": "${URL}"}))["url"], "${URL}");
        // A proxy URL is shown without its credentials; a reference as it is.
        assert_eq!(
            redact(&json!({"proxy": "http://alice:pw@proxy.corp:3128"}))["proxy"],
            "http://proxy.corp:3128"
        );
        assert_eq!(redact(&json!({"proxy": "${PROXY}"}))["proxy"], "${PROXY}");
        assert_eq!(redact(&json!({"proxy": false}))["proxy"], false);
        assert_eq!(redact(&json!("Bearer abc")), REDACTED);
    }
}
