//! The management API of `agenvoy-mcp serve` (feature `api`): HTTP/1.1, JSON in and out, for
//! the owner of the machine only.
//!
//! | route | does |
//! |---|---|
//! | `GET /v1/mcp` | the configured servers as written, secrets redacted |
//! | `POST /v1/mcp` | adds a server: saved, connected, registered (201) |
//! | `POST /v1/mcp/remove` | removes a server: closed, unregistered, out of the file |
//! | `GET /v1/mcp/status` | each server's state, transport, era, version, tools, last error |
//! | `POST /v1/mcp/reconnect` | reconnects all servers, or `{"name"}` |
//! | `GET /v1/mcp/tools` | every registered tool, with `autoApprove` and `visible`; hidden ones apart |
//! | `GET /v1/mcp/tools/search?q=&limit=` | the registered tools that best match, best first |
//! | `GET /v1/mcp/tools/offered?conversation=ID` | what to offer the model in a conversation |
//! | `POST /v1/mcp/enable` | enables or disables a server (`{"name", "enabled"}`) |
//! | `POST /v1/mcp/tools/visibility` | shows or hides a tool or a server's tools, or sets its lists |
//! | `GET`, `POST /v1/allowlist` | the allowlist; replace one server prefix's entries |
//! | `GET /v1/mcp/oauth?name=X` | an OAuth login as a `text/event-stream` |
//! | `DELETE /v1/mcp/oauth?name=X` | forgets the server's tokens |
//! | `POST /v1/mcp/oauth/client` | a pre-registered OAuth client (its secret to the token store) |
//! | `POST /v1/mcp/oauth/callback` | pastes back the URL the browser ended on |
//! | `POST /v1/mcp/call` | calls a tool through the confirm gate (in a `conversation`: the search tool too); `id` to cancel it |
//! | `POST /v1/mcp/call/cancel` | cancels a call by its `id` (the server is told) |
//! | `GET /v1/mcp/resources?name=` | a server's resources and templates |
//! | `GET /v1/mcp/resource?name=&uri=` | one resource, as the model would see it |
//! | `GET /v1/mcp/skills?name=` | a server's skills (entries; no file read) |
//! | `GET /v1/mcp/skill?name=&uri=` | a skill's `SKILL.md` or one of its files, verified |
//! | `GET /v1/mcp/ui?name=&uri=` | one `ui://` resource (MCP Apps) read whole, for a caller that renders it |
//! | `GET /v1/mcp/prompts?name=` | a server's prompts |
//! | `POST /v1/mcp/prompt` | a prompt filled in (`{name, prompt, arguments}`) |
//! | `POST /v1/mcp/complete` | values for a prompt's or a template's argument |
//! | `POST /v1/mcp/subscribe`, `/unsubscribe` | follows a resource (`{name, uri}`) |
//! | `GET /v1/mcp/events?log=` | a `text/event-stream` of what happens, questions included |
//! | `GET /v1/mcp/requests` | the servers' questions waiting for an answer |
//! | `POST /v1/mcp/requests/{id}` | answers one (`{action, content?}`) |
//!
//! `docs/API.md` shows each with its bodies and a curl example. Errors are
//! `{"error": {"message", "type"}}` with a 4xx or 5xx status.
//!
//! Adding a stdio server runs a command, so the API is code execution as the user. Every
//! request must carry `Authorization: Bearer <token>` (the token in [`TOKEN_FILE`] beside the
//! config file, compared in constant time; else 401); its `Host` must be `localhost` or a
//! loopback address with the API's port (else 403: DNS rebinding); an `Origin`, if any, must
//! be loopback (else 403: cross-site requests); a body must be `application/json` (else 415)
//! and at most [`Limits::max_body`] (else 413). [`serve`] refuses a non-loopback listener
//! unless [`ApiOptions::allow_remote`] is set, and the token is needed then too.
//!
//! `POST /v1/mcp/call`, `GET /v1/mcp/resource` and `POST /v1/mcp/prompt` pass a caller's
//! `traceparent`, `tracestate` and `baggage` headers on to the server, in the request's
//! `_meta` (SEP-414), once checked against the W3C formats (what is not W3C is dropped with a
//! warning, never forwarded); [`ApiOptions::start_traces`] starts a trace for a request that
//! brought none.
//!
//! Bounds ([`Limits`]): connections served at once (more wait in the listen queue), the time
//! to send a request's headers (also how long an idle connection is kept), a deadline per
//! request (its work goes on when it passes, so a server being added is never left half
//! added), and a login stream's own deadline.
//!
//! The routes are a thin layer over [`Control`], which the `/mcp` panel drives too: changes
//! to the config file and to the allowlist are read-modify-write under one lock each (in
//! this process and across processes), the file read again every time, and saved
//! atomically (mode 0600): concurrent requests never lose a change, and members this crate
//! does not know survive. A [`ControlError`] is 400, 409, 404 or 500 by its kind.

mod guard;
mod login;
mod server_features;
mod servers;
mod trace;

#[cfg(fuzzing)]
pub(crate) use guard::admit;
pub use guard::{ApiToken, ApiTokenError, ApiTokenErrorKind, TOKEN_FILE, token_path};

use crate::auth::TokenStore;
use crate::host::{Control, ControlError, Manager, PendingRequests};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited, combinators::BoxBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{CACHE_CONTROL, CONTENT_LENGTH, CONTENT_TYPE, HeaderValue};
use hyper::http::request::Parts;
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{Map, Value, json};
use std::convert::Infallible;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

/// The API's bounds.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Connections open at once. At the bound (or when the process is out of file
    /// descriptors), a new connection closes the oldest one that has not yet sent a request
    /// with the token (so idle or unauthenticated sockets, which any local process can open,
    /// never lock the owner out); when every one has, it is refused.
    pub max_connections: usize,
    /// Tool calls in flight at once for one server (the host's rule,
    /// [`Control::set_max_calls_per_server`]): past it a call is refused at once with 429, so
    /// a server that never answers holds only its own calls, never the API.
    pub max_calls_per_server: usize,
    /// How long a client has to send a request's headers (and how long an idle connection
    /// is kept).
    pub header_read_timeout: Duration,
    /// How long a request is waited for, its body included (a login stream excepted; a tool
    /// call is bounded by its server's own timeout instead). Its work goes on after the
    /// deadline: a server being added is still added.
    pub request_timeout: Duration,
    /// How long a login stream stays open.
    pub login_timeout: Duration,
    /// The largest request body, in bytes.
    pub max_body: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: 512,
            max_calls_per_server: crate::host::DEFAULT_MAX_CALLS_PER_SERVER,
            header_read_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(150),
            login_timeout: crate::auth::callback::LOGIN_TIMEOUT,
            max_body: 1024 * 1024,
        }
    }
}

/// What [`serve`] needs besides the listener and the manager.
#[derive(Clone)]
pub struct ApiOptions {
    /// The config file the API reads and writes (when it does not exist, the API shows the
    /// config the manager started with, and the first change writes it).
    pub config_path: PathBuf,
    /// The bearer token every request must carry.
    pub token: ApiToken,
    /// Where OAuth tokens and client secrets are kept (the manager's store).
    pub token_store: Arc<dyn TokenStore>,
    /// Serve on an address that is not loopback (the token is still required).
    pub allow_remote: bool,
    /// The bounds.
    pub limits: Limits,
    /// The board of the servers' waiting questions (elicitation, sampling) that the
    /// manager's handlers feed ([`PendingRequests`]): `POST /v1/mcp/requests/{id}` answers
    /// them; `None`: there are none to answer.
    pub requests: Option<PendingRequests>,
    /// Whether a call, a resource read or a prompt whose caller sent no valid
    /// `traceparent` header starts a trace of its own (a random `traceparent` in the
    /// request's `_meta`); otherwise only a caller's own trace context is passed on.
    pub start_traces: bool,
}

impl std::fmt::Debug for ApiOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiOptions")
            .field("config_path", &self.config_path)
            .field("token_store", &self.token_store.describe())
            .field("allow_remote", &self.allow_remote)
            .field("limits", &self.limits)
            .field("start_traces", &self.start_traces)
            .finish_non_exhaustive()
    }
}

/// Serves the API on `listener` for `manager` until `shutdown` completes; then stops
/// accepting and ends every connection (login streams included). The manager is left
/// running: closing it is the caller's. A listener that is not on loopback is refused
/// unless [`ApiOptions::allow_remote`] is set.
pub async fn serve(
    listener: TcpListener,
    manager: Manager,
    options: ApiOptions,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let address = listener.local_addr()?;
    if !address.ip().is_loopback() && !options.allow_remote {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!(
                "{address} is not a loopback address: the API runs commands as you, so it listens on loopback unless remote access is allowed explicitly"
            ),
        ));
    }
    let max_connections = options.limits.max_connections.max(1);
    let control = Control::with_token_store(
        manager,
        options.config_path.clone(),
        options.token_store.clone(),
    );
    control.set_max_calls_per_server(options.limits.max_calls_per_server);
    let state = Arc::new(State {
        control,
        port: address.port(),
        options,
        conversations: servers::Conversations::default(),
        listeners: Arc::new(tokio::sync::Semaphore::new(server_features::MAX_LISTENERS)),
    });
    let mut connections = tokio::task::JoinSet::new();
    // The open connections, oldest first, each with whether it has shown the token.
    let mut open: std::collections::VecDeque<(tokio::task::AbortHandle, Arc<AtomicBool>)> =
        Default::default();
    tokio::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            _ = &mut shutdown => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of file descriptors, say: a stranger's connection gives one back;
                    // with none to close, wait a little rather than spin.
                    tracing::warn!("the API could not accept a connection: {e}");
                    open.retain(|(task, _)| !task.is_finished());
                    if !close_a_stranger(&mut open) {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                    continue;
                }
            },
        };
        open.retain(|(task, _)| !task.is_finished());
        if open.len() >= max_connections && !close_a_stranger(&mut open) {
            tracing::warn!(
                "the API has {max_connections} connections of its owner open; refusing another"
            );
            continue;
        }
        let owner = Arc::new(AtomicBool::new(false));
        let task = connections.spawn(serve_connection(stream, state.clone(), owner.clone()));
        open.push_back((task, owner));
    }
    connections.shutdown().await;
    Ok(())
}

/// Closes the oldest connection that never sent the token; false if every one has.
fn close_a_stranger(
    open: &mut std::collections::VecDeque<(tokio::task::AbortHandle, Arc<AtomicBool>)>,
) -> bool {
    let stranger = open
        .iter()
        .position(|(_, owner)| !owner.load(Ordering::Relaxed));
    match stranger.and_then(|at| open.remove(at)) {
        Some((task, _)) => {
            task.abort();
            true
        }
        None => false,
    }
}

/// Serves one connection; `owner` turns true once a request on it carried the token.
async fn serve_connection(
    stream: tokio::net::TcpStream,
    state: Arc<State>,
    owner: Arc<AtomicBool>,
) {
    let _ = stream.set_nodelay(true);
    let header_read_timeout = state.options.limits.header_read_timeout;
    let service = hyper::service::service_fn(move |request| {
        let state = state.clone();
        let owner = owner.clone();
        async move { Ok::<_, Infallible>(handle(state, request, &owner).await) }
    });
    let served = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(header_read_timeout)
        .max_buf_size(64 * 1024)
        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
        .await;
    if let Err(e) = served {
        tracing::debug!("an API connection ended: {e}");
    }
}

/// What every route shares.
pub(crate) struct State {
    /// The operations every surface shares (the files, the manager, OAuth).
    control: Control,
    options: ApiOptions,
    port: u16,
    /// Tool search state of the conversations callers named.
    conversations: servers::Conversations,
    /// One permit per open event stream.
    listeners: Arc<tokio::sync::Semaphore>,
}

/// The body of every response.
pub(crate) type Body = BoxBody<Bytes, Infallible>;

/// An error answer: `{"error": {"message", "type"}}`.
#[derive(Debug)]
pub(crate) struct ApiError {
    status: StatusCode,
    kind: &'static str,
    message: String,
    /// The methods a path takes, for 405.
    allow: Option<&'static str>,
    /// Seconds to wait before trying again, for 429.
    retry_after: Option<u32>,
}

impl ApiError {
    pub(crate) fn new(status: StatusCode, kind: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            kind,
            message: message.into(),
            allow: None,
            retry_after: None,
        }
    }

    /// 429: too many requests of this kind in flight; try again after `seconds`.
    pub(crate) fn busy(message: impl Into<String>, seconds: u32) -> Self {
        ApiError {
            retry_after: Some(seconds),
            ..ApiError::new(StatusCode::TOO_MANY_REQUESTS, "busy", message)
        }
    }

    /// 409 `login_required`: `server` needs an OAuth login first (none is stored, it was
    /// lost, or the server asked for more scope); the message says how to log in here.
    pub(crate) fn login_required(server: &str, message: impl std::fmt::Display) -> Self {
        ApiError::new(
            StatusCode::CONFLICT,
            "login_required",
            format!("{message}; log in with GET /v1/mcp/oauth?name={server}"),
        )
    }

    /// The status, the `type` and the message the answer carries.
    #[cfg(fuzzing)]
    pub(crate) fn into_parts(self) -> (u16, &'static str, String) {
        (self.status.as_u16(), self.kind, self.message)
    }

    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::BAD_REQUEST, "invalid_request", message)
    }

    pub(crate) fn unauthorized(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
    }

    pub(crate) fn forbidden(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::FORBIDDEN, "forbidden", message)
    }

    pub(crate) fn not_found(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    pub(crate) fn conflict(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::CONFLICT, "conflict", message)
    }

    pub(crate) fn internal(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "server_error", message)
    }

    fn into_response(self) -> Response<Body> {
        let body = json!({"error": {"message": self.message, "type": self.kind}});
        let mut response = json_response(self.status, &body);
        let headers = response.headers_mut();
        if self.status == StatusCode::UNAUTHORIZED {
            headers.insert("www-authenticate", HeaderValue::from_static("Bearer"));
        }
        if let Some(allow) = self.allow {
            headers.insert("allow", HeaderValue::from_static(allow));
        }
        if let Some(seconds) = self.retry_after {
            headers.insert(hyper::header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

impl From<ControlError> for ApiError {
    fn from(e: ControlError) -> Self {
        let message = e.message();
        match e {
            ControlError::Invalid(_) => ApiError::bad_request(message),
            ControlError::Conflict(_) => ApiError::conflict(message),
            ControlError::NotFound(_) => ApiError::not_found(message),
            ControlError::LoginFailed(_) => {
                ApiError::new(StatusCode::BAD_REQUEST, "login_failed", message)
            }
            _ => ApiError::internal(message),
        }
    }
}

pub(crate) fn json_response(status: StatusCode, value: &impl serde::Serialize) -> Response<Body> {
    let text = serde_json::to_vec(value).expect("an answer serializes");
    let mut response = Response::new(Full::new(Bytes::from(text)).boxed());
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    response
}

/// 200 with `value`.
pub(crate) fn ok(value: Value) -> Result<Response<Body>, ApiError> {
    Ok(json_response(StatusCode::OK, &value))
}

/// A response body fed by a channel (the login stream): each `Bytes` sent is one frame,
/// written as it comes; the body ends once every sender is gone.
pub struct ChannelBody(mpsc::Receiver<Bytes>);

impl ChannelBody {
    /// A body reading `chunks`.
    pub fn new(chunks: mpsc::Receiver<Bytes>) -> Self {
        ChannelBody(chunks)
    }
}

impl hyper::body::Body for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;
    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0
            .poll_recv(cx)
            .map(|chunk| chunk.map(|b| Ok(Frame::data(b))))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    ListServers,
    AddServer,
    RemoveServer,
    Status,
    Reconnect,
    Tools,
    Call,
    GetAllowlist,
    SetAllowlist,
    Login,
    Logout,
    SetClient,
    Callback,
    Enable,
    Start,
    Visibility,
    Search,
    Offered,
    CancelCall,
    Resources,
    Resource,
    Skills,
    Skill,
    Ui,
    Prompts,
    Prompt,
    Complete,
    Subscribe,
    Unsubscribe,
    Events,
    Requests,
    Request,
    Reply,
}

/// Every route: path, method, route; and each path's methods for 405.
const ROUTES: &[(&str, &str, Route)] = &[
    ("/v1/mcp", "GET", Route::ListServers),
    ("/v1/mcp", "POST", Route::AddServer),
    ("/v1/mcp/remove", "POST", Route::RemoveServer),
    ("/v1/mcp/status", "GET", Route::Status),
    ("/v1/mcp/reconnect", "POST", Route::Reconnect),
    ("/v1/mcp/tools", "GET", Route::Tools),
    ("/v1/mcp/call", "POST", Route::Call),
    ("/v1/mcp/call/cancel", "POST", Route::CancelCall),
    ("/v1/mcp/resources", "GET", Route::Resources),
    ("/v1/mcp/resource", "GET", Route::Resource),
    ("/v1/mcp/skills", "GET", Route::Skills),
    ("/v1/mcp/skill", "GET", Route::Skill),
    ("/v1/mcp/ui", "GET", Route::Ui),
    ("/v1/mcp/prompts", "GET", Route::Prompts),
    ("/v1/mcp/prompt", "POST", Route::Prompt),
    ("/v1/mcp/complete", "POST", Route::Complete),
    ("/v1/mcp/subscribe", "POST", Route::Subscribe),
    ("/v1/mcp/unsubscribe", "POST", Route::Unsubscribe),
    ("/v1/mcp/events", "GET", Route::Events),
    ("/v1/mcp/requests", "GET", Route::Requests),
    ("/v1/mcp/requests/{id}", "GET", Route::Request),
    ("/v1/mcp/requests/{id}", "POST", Route::Reply),
    ("/v1/mcp/enable", "POST", Route::Enable),
    ("/v1/mcp/start", "POST", Route::Start),
    ("/v1/mcp/tools/search", "GET", Route::Search),
    ("/v1/mcp/tools/offered", "GET", Route::Offered),
    ("/v1/mcp/tools/visibility", "POST", Route::Visibility),
    ("/v1/allowlist", "GET", Route::GetAllowlist),
    ("/v1/allowlist", "POST", Route::SetAllowlist),
    ("/v1/mcp/oauth", "GET", Route::Login),
    ("/v1/mcp/oauth", "DELETE", Route::Logout),
    ("/v1/mcp/oauth/client", "POST", Route::SetClient),
    ("/v1/mcp/oauth/callback", "POST", Route::Callback),
];

/// The id of a `/v1/mcp/requests/{id}` path.
fn request_id(path: &str) -> Option<&str> {
    path.strip_prefix("/v1/mcp/requests/")
        .filter(|id| !id.is_empty() && !id.contains('/'))
}

fn route(method: &Method, path: &str) -> Result<Route, ApiError> {
    let path = if request_id(path).is_some() {
        "/v1/mcp/requests/{id}"
    } else {
        path
    };
    let mut allowed = ROUTES.iter().filter(|(p, _, _)| *p == path).peekable();
    if allowed.peek().is_none() {
        return Err(ApiError::not_found(format!(
            "no route {path}; the routes are listed in docs/API.md"
        )));
    }
    let mut methods = Vec::new();
    for (_, m, route) in allowed {
        if *m == method.as_str() {
            return Ok(*route);
        }
        methods.push(*m);
    }
    let allow = match methods.as_slice() {
        ["GET", "POST"] => "GET, POST",
        ["GET", "DELETE"] => "GET, DELETE",
        ["GET"] => "GET",
        _ => "POST",
    };
    Err(ApiError {
        allow: Some(allow),
        ..ApiError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
            format!("{path} takes {allow}, not {method}"),
        )
    })
}

async fn handle(
    state: Arc<State>,
    request: Request<Incoming>,
    owner: &AtomicBool,
) -> Response<Body> {
    let (parts, body) = request.into_parts();
    let options = &state.options;
    if let Err(refused) = guard::admit(&parts, &options.token, state.port, options.allow_remote) {
        // Answered, then the connection is closed: a stranger cannot keep one open.
        let mut response = refused.into_response();
        response
            .headers_mut()
            .insert(hyper::header::CONNECTION, HeaderValue::from_static("close"));
        return response;
    }
    owner.store(true, Ordering::Relaxed);
    respond(state, parts, body)
        .await
        .unwrap_or_else(ApiError::into_response)
}

/// Answers a request that passed the guard.
async fn respond(
    state: Arc<State>,
    parts: Parts,
    body: Incoming,
) -> Result<Response<Body>, ApiError> {
    let options = &state.options;
    let route = route(&parts.method, parts.uri.path())?;
    let query = parts.uri.query().unwrap_or("").to_string();
    if route == Route::Login {
        // A stream with a deadline of its own.
        return login::start(state, &query);
    }
    if route == Route::Events {
        // A stream that lasts while its listener reads it.
        return server_features::events(state, &query);
    }
    let id = request_id(parts.uri.path()).unwrap_or("").to_string();
    let trace = match route {
        Route::Call | Route::Resource | Route::Prompt => {
            trace::caller_trace(&parts.headers, options.start_traces, parts.uri.path())
        }
        _ => None,
    };
    let body = if parts.method == Method::POST {
        read_json(&parts, body, &options.limits).await?
    } else {
        Value::Object(Map::new())
    };
    let deadline = match route {
        // A call is bounded by its server's own timeout (its entry's `timeout`, at most a
        // day), which may be longer than this API's: this deadline only backs it up.
        Route::Call => options
            .limits
            .request_timeout
            .max(crate::host::config::MAX_TIMEOUT),
        _ => options.limits.request_timeout,
    };
    // On a task of its own, so a client that goes away or a deadline that passes never
    // stops a change half made. Boxed first: the routes' future is large, and spawning
    // moves it by value more than once.
    let work = tokio::spawn(Box::pin(dispatch(state, route, query, body, id, trace)));
    match tokio::time::timeout(deadline, work).await {
        Ok(Ok(answer)) => answer,
        Ok(Err(e)) => Err(ApiError::internal(format!("the request failed: {e}"))),
        Err(_) => Err(ApiError::new(
            StatusCode::GATEWAY_TIMEOUT,
            "timeout",
            format!(
                "no answer within {} s; the work goes on: see GET /v1/mcp/status",
                deadline.as_secs()
            ),
        )),
    }
}

async fn dispatch(
    state: Arc<State>,
    route: Route,
    query: String,
    body: Value,
    id: String,
    trace: Option<crate::TraceContext>,
) -> Result<Response<Body>, ApiError> {
    match route {
        Route::ListServers => servers::list(&state),
        Route::AddServer => servers::add(&state, body).await,
        Route::RemoveServer => servers::remove(&state, body).await,
        Route::Status => servers::status(&state),
        Route::Reconnect => servers::reconnect(&state, body).await,
        Route::Tools => servers::tools_in(&state, &query),
        Route::Call => servers::call(&state, body, trace).await,
        Route::Enable => servers::enable(&state, body).await,
        Route::Start => servers::start(&state, body).await,
        Route::Search => servers::search(&state, &query),
        Route::Offered => servers::offered(&state, &query),
        Route::Visibility => servers::visibility(&state, body).await,
        Route::GetAllowlist => servers::allowlist(&state),
        Route::SetAllowlist => servers::set_allowlist(&state, body).await,
        Route::Logout => login::logout(&state, &query).await,
        Route::SetClient => login::set_client(&state, body).await,
        Route::Callback => login::callback(&state, body).await,
        Route::CancelCall => server_features::cancel(&state, body),
        Route::Resources => server_features::resources(&state, &query),
        Route::Resource => server_features::resource(&state, &query, trace).await,
        Route::Skills => server_features::skills(&state, &query),
        Route::Skill => server_features::skill(&state, &query).await,
        Route::Ui => server_features::ui_resource(&state, &query).await,
        Route::Prompts => server_features::prompts(&state, &query),
        Route::Prompt => server_features::prompt(&state, body, trace).await,
        Route::Complete => server_features::complete(&state, body).await,
        Route::Subscribe => server_features::subscription(&state, body, true).await,
        Route::Unsubscribe => server_features::subscription(&state, body, false).await,
        Route::Requests => server_features::waiting(&state),
        Route::Request => server_features::one_waiting(&state, &id),
        Route::Reply => server_features::reply(&state, &id, body),
        Route::Login | Route::Events => {
            unreachable!("a stream is started before dispatch")
        }
    }
}

/// Reads a request as [`respond`] and the route's handler would, up to where the handler
/// acts: the route, then the query (`name`) or the JSON body and its members. For the fuzz
/// targets (through `unstable::fuzz`), which hold every refusal to a 4xx with a message.
#[cfg(fuzzing)]
pub(crate) fn read_request(
    method: &Method,
    path: &str,
    query: &str,
    body: &[u8],
) -> Result<(), ApiError> {
    let route = route(method, path)?;
    if matches!(route, Route::Login | Route::Logout) {
        return login::name_param(query).map(drop);
    }
    if *method != Method::POST {
        return Ok(());
    }
    let body = body_value(body)?;
    match route {
        Route::AddServer => servers::add_request(body).map(drop),
        Route::RemoveServer => servers::remove_request(&body).map(drop),
        Route::Reconnect => servers::reconnect_request(&body).map(drop),
        Route::Call => servers::call_request(&body).map(drop),
        Route::Enable => servers::enable_request(&body).map(drop),
        Route::Start => servers::start_request(&body).map(drop),
        Route::Visibility => servers::visibility_request(&body).map(drop),
        Route::SetAllowlist => servers::set_allowlist_request(&body).map(drop),
        Route::SetClient => login::set_client_request(&body).map(drop),
        Route::Callback => login::callback_request(&body).map(drop),
        Route::CancelCall => server_features::cancel_request(&body).map(drop),
        Route::Prompt => server_features::prompt_request(&body).map(drop),
        Route::Complete => server_features::complete_request(&body).map(drop),
        Route::Subscribe | Route::Unsubscribe => {
            server_features::subscription_request(&body).map(drop)
        }
        Route::Reply => server_features::reply_request(&body).map(drop),
        _ => Ok(()),
    }
}

/// Reads a JSON object body (empty is `{}`), at most `max_body` bytes, within the request
/// deadline.
/// A POST's body: a JSON object declared `application/json`; an empty body with no
/// `Content-Type` (`curl -X POST`) is `{}`. What the type forbids is a body a web page could
/// send without asking (a form's `text/plain`), and an empty body carries nothing.
async fn read_json(parts: &Parts, body: Incoming, limits: &Limits) -> Result<Value, ApiError> {
    let untyped = !parts.headers.contains_key(CONTENT_TYPE);
    if !untyped {
        guard::check_json(parts)?;
    }
    let too_large = || {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            format!("the body is over {} bytes", limits.max_body),
        )
    };
    let declared = parts
        .headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limits.max_body as u64) {
        return Err(too_large());
    }
    let collected = tokio::time::timeout(
        limits.request_timeout,
        Limited::new(body, limits.max_body).collect(),
    )
    .await
    .map_err(|_| {
        ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            "timeout",
            "the body did not arrive in time",
        )
    })?;
    let bytes = match collected {
        Ok(c) => c.to_bytes(),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => return Err(too_large()),
        Err(e) => {
            return Err(ApiError::bad_request(format!(
                "the body could not be read: {e}"
            )));
        }
    };
    if untyped && !bytes.is_empty() {
        guard::check_json(parts)?;
    }
    body_value(&bytes)
}

/// A body's JSON object (empty is `{}`).
fn body_value(bytes: &[u8]) -> Result<Value, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Object(Map::new()));
    }
    match serde_json::from_slice::<Value>(bytes) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(_) => Err(ApiError::bad_request("the body must be a JSON object")),
        Err(e) => Err(ApiError::bad_request(format!(
            "the body is not valid JSON: {e}"
        ))),
    }
}

/// A required, non-empty string member of a body.
pub(crate) fn required_string(body: &Value, key: &str) -> Result<String, ApiError> {
    match body.get(key) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        Some(Value::String(_)) | None | Some(Value::Null) => {
            Err(ApiError::bad_request(format!("the body needs \"{key}\"")))
        }
        Some(_) => Err(ApiError::bad_request(format!("\"{key}\" must be a string"))),
    }
}

/// An optional string member of a body (`null` and `""` are absent).
pub(crate) fn optional_string(body: &Value, key: &str) -> Result<Option<String>, ApiError> {
    match body.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone()).filter(|s| !s.is_empty())),
        Some(_) => Err(ApiError::bad_request(format!("\"{key}\" must be a string"))),
    }
}

/// Refuses members of `body` outside `known`, naming them.
pub(crate) fn only_members(body: &Value, known: &[&str]) -> Result<(), ApiError> {
    let unknown: Vec<&str> = body
        .as_object()
        .into_iter()
        .flat_map(|m| m.keys())
        .map(String::as_str)
        .filter(|k| !known.contains(k))
        .collect();
    if unknown.is_empty() {
        return Ok(());
    }
    Err(ApiError::bad_request(format!(
        "unknown member(s) {unknown:?}; this route takes {known:?}"
    )))
}
