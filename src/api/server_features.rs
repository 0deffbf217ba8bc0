//! The routes for what servers offer besides tools, and for what they ask: resources,
//! prompts, completion, subscriptions, the event stream, answers to waiting requests, and
//! cancelling a call.
//!
//! `GET /v1/mcp/events` is a `text/event-stream` of [`Event`]s, one `data:` line each, with
//! a comment every [`KEEPALIVE`]. A listener that falls [`crate::host::EVENT_QUEUE`] events
//! behind gets a last event `{"type": "dropped", "reason"}` (if it reads it within
//! [`SEND_LIMIT`]) and its stream ends; so does one that leaves a chunk unread for
//! [`SEND_LIMIT`]. A listener never slows a server, and what waits for it is bounded. At
//! most [`MAX_LISTENERS`] streams at once.

use super::{ApiError, Body, ChannelBody, State, ok, only_members, required_string};
use crate::host::{Event, Reply, ReplyError};
use crate::protocol::items::CompletionRef;
use crate::protocol::items::LogLevel;
use crate::protocol::session::RequestOptions;
use crate::protocol::trace::TraceContext;
use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderValue};
use hyper::{Response, StatusCode};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{broadcast, mpsc};

type Answer = Result<Response<Body>, ApiError>;

/// How often the event stream sends a comment, so a listener that went away is noticed.
pub const KEEPALIVE: Duration = Duration::from_secs(15);

/// How long one chunk of the event stream may wait for a listener that does not read.
pub const SEND_LIMIT: Duration = Duration::from_secs(10);

/// Most event streams open at once.
pub const MAX_LISTENERS: usize = 32;

fn query_param(query: &str, key: &str) -> Option<String> {
    crate::auth::pkce::parse_query(query)
        .into_iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v)
        .filter(|v| !v.is_empty())
}

fn required_param(query: &str, key: &str) -> Result<String, ApiError> {
    query_param(query, key)
        .ok_or_else(|| ApiError::bad_request(format!("give ?{key}= in the query")))
}

/// A library error of a server's request: 404 for a server that is not there, 409
/// `login_required` for one that needs a login, 504 for a timeout, else 502, with the
/// error's text (which names the server and the method).
fn server_error(e: crate::Error) -> ApiError {
    use crate::error::ErrorKind;
    if e.needs_login() {
        return ApiError::login_required(&e.server, &e);
    }
    let (status, kind) = match e.kind() {
        ErrorKind::Usage(_) | ErrorKind::UnknownServer | ErrorKind::Disabled => {
            (StatusCode::NOT_FOUND, "not_found")
        }
        ErrorKind::Limit(_) => (StatusCode::TOO_MANY_REQUESTS, "limit"),
        ErrorKind::Timeout(_) => (StatusCode::GATEWAY_TIMEOUT, "server_error"),
        _ => (StatusCode::BAD_GATEWAY, "server_error"),
    };
    ApiError::new(status, kind, e.to_string())
}

/// The options of a request carrying the caller's trace context, if any.
fn traced(trace: Option<TraceContext>) -> RequestOptions {
    let options = RequestOptions::default();
    match trace {
        Some(trace) => options.with_trace(trace),
        None => options,
    }
}

fn no_server(name: &str) -> ApiError {
    ApiError::not_found(format!(
        "no server {name:?}; GET /v1/mcp/status lists the servers"
    ))
}

/// `GET /v1/mcp/resources?name=`: the server's resources and templates as last listed, and
/// the resources it is followed for.
pub(super) fn resources(state: &State, query: &str) -> Answer {
    let name = required_param(query, "name")?;
    let control = &state.control;
    let catalog = control.catalog(&name).ok_or_else(|| no_server(&name))?;
    ok(json!({
        "name": name,
        "resources": catalog.resources,
        "templates": catalog.templates,
        "subscriptions": control.subscriptions(&name),
    }))
}

/// `GET /v1/mcp/resource?name=&uri=`: one resource as the model would see it (rendered,
/// capped as a tool result is).
pub(super) async fn resource(state: &State, query: &str, trace: Option<TraceContext>) -> Answer {
    let name = required_param(query, "name")?;
    let uri = required_param(query, "uri")?;
    let read = state
        .control
        .read_resource_with(&name, &uri, traced(trace))
        .await
        .map_err(server_error)?;
    ok(json!({"text": read.text, "totalBytes": read.total_bytes}))
}

/// `GET /v1/mcp/skills?name=`: the server's skills as last listed (entries only: no file is
/// read).
pub(super) fn skills(state: &State, query: &str) -> Answer {
    let name = required_param(query, "name")?;
    let control = &state.control;
    let catalog = control.catalog(&name).ok_or_else(|| no_server(&name))?;
    ok(json!({"name": name, "skills": catalog.skills}))
}

/// `GET /v1/mcp/skill?name=&uri=`: a skill's `SKILL.md` (`uri` its URI or the skill's name)
/// or one of its files, read whole and verified against the skill's entry; text as `text`,
/// other bytes as base64 `blob`. A file that fails its check is an error, never content.
pub(super) async fn skill(state: &State, query: &str) -> Answer {
    use base64::Engine as _;
    let name = required_param(query, "name")?;
    let uri = required_param(query, "uri")?;
    let (skill, file) = state
        .control
        .load_skill(&name, &uri)
        .await
        .map_err(server_error)?;
    let mut answer = json!({
        "name": name,
        "skill": skill.name(),
        "uri": file.uri,
        "mimeType": file.mime_type,
        "verified": file.verified,
    });
    match file.text() {
        Some(text) => answer["text"] = json!(text),
        None => {
            answer["blob"] = json!(base64::engine::general_purpose::STANDARD.encode(&file.bytes))
        }
    }
    ok(answer)
}

/// `GET /v1/mcp/ui?name=&uri=`: one `ui://` resource read whole, for a caller that renders
/// MCP Apps: `{uri, mimeType, html, ui}` ([`crate::UiResource`]), the page not cut at the
/// model's cap but bounded by [`crate::MAX_UI_RESOURCE`] (past it: 502 with its size).
pub(super) async fn ui_resource(state: &State, query: &str) -> Answer {
    let name = required_param(query, "name")?;
    let uri = required_param(query, "uri")?;
    if !crate::protocol::apps::is_ui_uri(&uri) {
        return Err(ApiError::bad_request(format!(
            "{uri:?} is not a ui:// URI (at most 2048 bytes, no spaces); read other resources with GET /v1/mcp/resource"
        )));
    }
    let page = state
        .control
        .read_ui_resource(&name, &uri)
        .await
        .map_err(server_error)?;
    ok(json!(page))
}

/// `GET /v1/mcp/prompts?name=`: the server's prompts as last listed.
pub(super) fn prompts(state: &State, query: &str) -> Answer {
    let name = required_param(query, "name")?;
    let catalog = state
        .control
        .catalog(&name)
        .ok_or_else(|| no_server(&name))?;
    ok(json!({"name": name, "prompts": catalog.prompts}))
}

/// `POST /v1/mcp/prompt`'s body: `{name, prompt, arguments?}`.
pub(super) fn prompt_request(body: &Value) -> Result<(String, String, Value), ApiError> {
    only_members(body, &["name", "prompt", "arguments"])?;
    let arguments = match body.get("arguments") {
        None | Some(Value::Null) => Value::Null,
        Some(Value::Object(args)) if args.values().all(Value::is_string) => {
            Value::Object(args.clone())
        }
        Some(_) => {
            return Err(ApiError::bad_request(
                "\"arguments\" must be an object of strings",
            ));
        }
    };
    Ok((
        required_string(body, "name")?,
        required_string(body, "prompt")?,
        arguments,
    ))
}

/// `POST /v1/mcp/prompt`: the prompt filled in: its messages as sent, and each as the model
/// would see it (`text`).
pub(super) async fn prompt(state: &State, body: Value, trace: Option<TraceContext>) -> Answer {
    let (name, prompt, arguments) = prompt_request(&body)?;
    let contents = state
        .control
        .get_prompt_with(&name, &prompt, arguments, traced(trace))
        .await
        .map_err(server_error)?;
    let messages: Vec<Value> = contents
        .messages
        .iter()
        .map(|m| json!({"role": m.role, "content": m.content, "text": m.text()}))
        .collect();
    ok(json!({"description": contents.description, "messages": messages}))
}

/// What `POST /v1/mcp/complete` asks.
pub(super) struct CompleteRequest {
    name: String,
    reference: CompletionRef,
    argument: String,
    value: String,
    context: Vec<(String, String)>,
}

/// `POST /v1/mcp/complete`'s body: `{name, prompt | uriTemplate, argument, value?, context?}`.
pub(super) fn complete_request(body: &Value) -> Result<CompleteRequest, ApiError> {
    only_members(
        body,
        &[
            "name",
            "prompt",
            "uriTemplate",
            "argument",
            "value",
            "context",
        ],
    )?;
    let name = required_string(body, "name")?;
    let reference = match (body.get("prompt"), body.get("uriTemplate")) {
        (Some(Value::String(p)), None) => CompletionRef::Prompt(p.clone()),
        (None, Some(Value::String(t))) => CompletionRef::ResourceTemplate(t.clone()),
        _ => {
            return Err(ApiError::bad_request(
                "the body needs one of \"prompt\" (a prompt's name) or \"uriTemplate\" (a resource template's)",
            ));
        }
    };
    let argument = required_string(body, "argument")?;
    let value = match body.get("value") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(v)) => v.clone(),
        Some(_) => return Err(ApiError::bad_request("\"value\" must be a string")),
    };
    let context = match body.get("context") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Object(c)) => c
            .iter()
            .map(|(k, v)| match v {
                Value::String(v) => Ok((k.clone(), v.clone())),
                _ => Err(ApiError::bad_request(
                    "\"context\" must be an object of strings",
                )),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(ApiError::bad_request(
                "\"context\" must be an object of strings",
            ));
        }
    };
    Ok(CompleteRequest {
        name,
        reference,
        argument,
        value,
        context,
    })
}

/// `POST /v1/mcp/complete`: the server's values for the argument, best first.
pub(super) async fn complete(state: &State, body: Value) -> Answer {
    let asked = complete_request(&body)?;
    let completion = state
        .control
        .complete(
            &asked.name,
            &asked.reference,
            &asked.argument,
            &asked.value,
            &asked.context,
        )
        .await
        .map_err(server_error)?;
    ok(json!({
        "values": completion.values,
        "total": completion.total,
        "hasMore": completion.has_more,
    }))
}

/// `POST /v1/mcp/subscribe` and `/unsubscribe`'s body: `{name, uri}`.
pub(super) fn subscription_request(body: &Value) -> Result<(String, String), ApiError> {
    only_members(body, &["name", "uri"])?;
    Ok((
        required_string(body, "name")?,
        required_string(body, "uri")?,
    ))
}

/// `POST /v1/mcp/subscribe` (`follow`) and `/v1/mcp/unsubscribe`: the resource's updates
/// come on the event stream as `resource_updated`.
pub(super) async fn subscription(state: &State, body: Value, follow: bool) -> Answer {
    let (name, uri) = subscription_request(&body)?;
    let control = &state.control;
    let done = match follow {
        true => control.subscribe(&name, &uri).await,
        false => control.unsubscribe(&name, &uri).await,
    };
    done.map_err(server_error)?;
    ok(json!({"name": name, "uri": uri, "subscribed": follow}))
}

/// `POST /v1/mcp/requests/{id}`'s body: `{action, content?}`.
pub(super) fn reply_request(body: &Value) -> Result<Reply, ApiError> {
    only_members(body, &["action", "content"])?;
    let content = body.get("content").cloned().unwrap_or(Value::Null);
    match body.get("action").and_then(Value::as_str) {
        Some("accept") => Ok(Reply::Accept(content)),
        Some(action @ ("decline" | "cancel")) if !content.is_null() => Err(ApiError::bad_request(
            format!("{action} takes no \"content\""),
        )),
        Some("decline") => Ok(Reply::Decline),
        Some("cancel") => Ok(Reply::Cancel),
        _ => Err(ApiError::bad_request(
            "the body needs \"action\": \"accept\", \"decline\" or \"cancel\"",
        )),
    }
}

/// `POST /v1/mcp/requests/{id}`: answers a waiting elicitation or sampling request.
pub(super) fn reply(state: &State, id: &str, body: Value) -> Answer {
    let reply = reply_request(&body)?;
    let Some(board) = &state.options.requests else {
        return Err(ApiError::not_found(
            ReplyError::Unknown(id.into()).to_string(),
        ));
    };
    match board.reply(id, reply) {
        Ok(()) => ok(json!({"id": id, "answered": true})),
        Err(e @ ReplyError::Unknown(_)) => Err(ApiError::not_found(e.to_string())),
        Err(e @ ReplyError::Invalid(_)) => Err(ApiError::bad_request(e.to_string())),
    }
}

/// `GET /v1/mcp/requests`: the requests waiting now (what a listener that joined late has
/// missed), each as its event: params past [`MAX_EVENT_BYTES`](crate::host::MAX_EVENT_BYTES)
/// replaced by a note of their size, read whole from `GET /v1/mcp/requests/{id}`.
pub(super) fn waiting(state: &State) -> Answer {
    let waiting: Vec<Event> = state
        .options
        .requests
        .iter()
        .flat_map(|board| board.waiting_events())
        .collect();
    ok(json!({"requests": waiting}))
}

/// `GET /v1/mcp/requests/{id}`: one waiting request as its event, with its params whole (at
/// most a message's size).
pub(super) fn one_waiting(state: &State, id: &str) -> Answer {
    let waiting = state
        .options
        .requests
        .as_ref()
        .and_then(|board| board.get(id))
        .ok_or_else(|| ApiError::not_found(ReplyError::Unknown(id.into()).to_string()))?;
    let event = Event::Request {
        params: crate::host::pending_requests::whole_params(&waiting.asked),
        kind: waiting.asked.kind(),
        server: waiting.server,
        id: waiting.id,
    };
    ok(serde_json::to_value(event).expect("an event serializes"))
}

/// `POST /v1/mcp/call/cancel`'s body: `{id}`.
pub(super) fn cancel_request(body: &Value) -> Result<String, ApiError> {
    only_members(body, &["id"])?;
    required_string(body, "id")
}

/// `POST /v1/mcp/call/cancel`: stops a call made with that `id`; the server is told.
pub(super) fn cancel(state: &State, body: Value) -> Answer {
    let id = cancel_request(&body)?;
    if state.control.cancel_call(&id) {
        ok(json!({"id": id, "cancelled": true}))
    } else {
        Err(ApiError::not_found(format!(
            "no call with id {id:?} is running (it ended, or never started)"
        )))
    }
}

/// `GET /v1/mcp/events?log=LEVEL`: the event stream; server log messages from `LEVEL` up
/// (default `warning`).
pub(super) fn events(state: Arc<State>, query: &str) -> Answer {
    let threshold = match query_param(query, "log") {
        None => LogLevel::Warning,
        Some(level) => level
            .parse::<LogLevel>()
            .map_err(|e| ApiError::bad_request(e.to_string()))?,
    };
    let bus = state.control.event_bus().clone();
    let listeners = state.listeners.clone();
    let Ok(permit) = listeners.try_acquire_owned() else {
        return Err(ApiError::busy(
            format!("{MAX_LISTENERS} event streams are open, the most at once"),
            5,
        ));
    };
    let mut events = bus.subscribe();
    let (chunks, body) = mpsc::channel::<Bytes>(16);
    tokio::spawn(async move {
        let _permit = permit;
        let _ = send(&chunks, Bytes::from_static(b": listening\n\n")).await;
        loop {
            let chunk = tokio::select! {
                received = events.recv() => match received {
                    Ok(Event::Log { level, .. }) if level < threshold => continue,
                    Ok(event) => data(&serde_json::to_value(event).expect("an event serializes")),
                    Err(broadcast::error::RecvError::Lagged(missed)) => {
                        let reason = format!("the listener fell {missed} events behind");
                        send(&chunks, data(&json!({"type": "dropped", "reason": reason}))).await;
                        return;
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                },
                _ = tokio::time::sleep(KEEPALIVE) => Bytes::from_static(b": keep-alive\n\n"),
                () = chunks.closed() => return,
            };
            if !send(&chunks, chunk).await {
                let reason = "the listener did not read in time";
                let _ = chunks.try_send(data(&json!({"type": "dropped", "reason": reason})));
                return;
            }
        }
    });
    let mut response = Response::new(ChannelBody::new(body).boxed());
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

/// Sends one chunk within [`SEND_LIMIT`]; false if the listener is gone or too slow.
async fn send(chunks: &mpsc::Sender<Bytes>, chunk: Bytes) -> bool {
    matches!(
        tokio::time::timeout(SEND_LIMIT, chunks.send(chunk)).await,
        Ok(Ok(()))
    )
}

fn data(value: &Value) -> Bytes {
    Bytes::from(format!("data: {value}\n\n"))
}
