//! The streamable HTTP transport (protocol revisions 2025-03-26 to 2025-11-25), with the
//! HTTP+SSE transport of 2024-11-05 as its fallback.
//!
//! The session hands each message over as an [`Outbound`]: the request's id and method come
//! with its bytes, which are never parsed again here.
//!
//! Every message is a POST to the server URL. A request's answer comes back as one JSON body
//! or as an SSE stream; each request runs on a task of its own, so a slow answer never holds
//! up the session, and a failure reaches the session as [`Inbound::Failed`]. Notifications and
//! responses expect 202. After `notifications/initialized` a GET stream listens for what the
//! server sends on its own (405, 404 and 400 mean it offers none).
//!
//! Policies:
//! - Resumption: each stream remembers its last event id and the server's `retry`; a stream
//!   that ends before its response is resumed with GET and `Last-Event-ID`, after `retry` or,
//!   without one, after 1 s, 2 s, 4 s... (at most 30 s), never sooner than 100 ms, at most 5
//!   times in a row without an event; the request then fails as interrupted (it reached the
//!   server). Events whose id that stream already gave (a replay) are dropped; ids are told
//!   apart per stream, so a server that reuses them across streams loses nothing.
//! - The GET stream is opened again after the larger of `retry` and a back-off of 0.5 s that
//!   doubles (to 30 s) with each stream in a row that failed or brought no message.
//! - Session expiry: 404 (or a 400 whose body speaks of the session) on a request that carried
//!   a session id re-initializes once and replays that request once; other requests whose
//!   streams die with the session fail with an error. This lives here, not in the protocol
//!   session: streamable HTTP ties the `Mcp-Session-Id` to the transport, and only the
//!   transport sees the 404 and can replay the exact bytes of `initialize` and of the request.
//! - 429 and 503 (the request was not served), and for a GET also 502 and 504: up to 3
//!   retries, after `Retry-After` (seconds or a date, at most 30 s) or 0.5 s, 1 s, 2 s. A POST
//!   answered 502 or 504 may have been acted on behind the gateway, so it is not sent again.
//!   Any other error status fails with the status and the start of the body.
//! - Redirects (at most 5) are followed; one to another origin drops the configured headers
//!   and the authorizer's token (the session id stays: the server behind the redirect issued
//!   it).
//! - Fallback: if the first POST (`initialize`) fails with 400, 404 or 405 and its body is not
//!   a JSON-RPC error, the server is taken for an HTTP+SSE one: GET the URL, wait for the
//!   `endpoint` event, and POST every message there; answers arrive on that SSE stream.

use super::{Assembler, BoxFuture, Inbound, Kind, Limits, Outbound, Transport, WholeReplies};
use crate::error::{Error, ErrorKind, Result};
use crate::methods;
use crate::proxy::Proxy;
use crate::secret::Secret;
use crate::wire::decode::Decoded;
use crate::wire::jsonrpc::{Id, Message};
use crate::wire::sse::{SseDecoder, SsePiece};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};
use hyper::{Method, Request, Response, StatusCode, Uri};
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio::task::AbortHandle;

mod client;
mod events;
mod headers;
mod legacy;
mod proxy;
#[cfg(fuzzing)]
pub(crate) use legacy::endpoint_on_origin;
mod retry;
mod session;

pub use client::{HttpsClient, RAW_BODY_MAX, RawAnswer, https_client, raw_exchange};
use events::{Cursor, EventData, EventReader};
pub(crate) use headers::plain_authority;
use headers::{configured_headers, content_type, header_pairs, origin, resolve, without_userinfo};
use retry::{
    backoff, body_excerpt, cut_after_written, is_jsonrpc_error, jsonrpc_error, retry_after,
    session_gone, stale_connection,
};

/// How long closing waits for the DELETE that ends the session.
pub const CLOSE_TIMEOUT: Duration = Duration::from_secs(5);
const EXCERPT: usize = 512;
const MAX_RETRIES: u32 = 3;
const MAX_WAIT: Duration = Duration::from_secs(30);
const MAX_REDIRECTS: usize = 5;
const RESUME_ATTEMPTS: u32 = 5;
/// The shortest wait before a stream is opened again, whatever the server's `retry` says.
const MIN_RETRY: Duration = Duration::from_millis(100);
/// The most event ids one stream remembers to drop replays.
const SEEN_EVENTS: usize = 4096;

/// Supplies the credentials of every request and answers the server's 401 and 403
/// challenges; the OAuth layer implements it, an embedder may bring its own.
pub trait Authorizer: Send + Sync {
    /// The credentials for the next request, `method` to `url` (a DPoP proof is made for
    /// exactly that request). An error (say, no token and no way to get one) fails the
    /// request with it.
    fn authorization<'a>(
        &'a self,
        method: &'a str,
        url: &'a str,
    ) -> BoxFuture<'a, Result<Credentials>>;
    /// The server refused a request (401 or 403). Returns whether the request should be sent
    /// again (the credentials changed), or an error.
    fn challenge(&self, refusal: Refusal) -> BoxFuture<'_, Result<bool>>;
}

/// What an [`Authorizer`] adds to one request: [`Credentials::default`] (nothing), and the
/// `with_*` setters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Credentials {
    /// The `Authorization` value: `Bearer <token>`, or `DPoP <token>` for a DPoP-bound one.
    pub authorization: Option<Secret>,
    /// The `DPoP` proof (RFC 9449) made for this request: a secret too (it carries the
    /// token's hash and lives a few minutes).
    pub dpop: Option<Secret>,
}

impl Credentials {
    /// With the `Authorization` value `value` (`Bearer <token>`, or `DPoP <token>`).
    pub fn with_authorization(mut self, value: Secret) -> Self {
        self.authorization = Some(value);
        self
    }

    /// With the `DPoP` proof `proof`.
    pub fn with_dpop(mut self, proof: Secret) -> Self {
        self.dpop = Some(proof);
        self
    }
}

/// A 401 or 403 answer, as an [`Authorizer`] sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Refusal {
    /// The status, 401 or 403.
    pub status: u16,
    /// The `WWW-Authenticate` header, if any.
    pub www_authenticate: Option<String>,
    /// The `DPoP-Nonce` header (RFC 9449 section 9), if any.
    pub dpop_nonce: Option<String>,
    /// The credentials the refused request carried.
    pub sent: Credentials,
}

impl Refusal {
    /// A refusal with `status` and `WWW-Authenticate` value, no nonce.
    pub fn new(status: u16, www_authenticate: Option<String>) -> Self {
        Refusal {
            status,
            www_authenticate,
            dpop_nonce: None,
            sent: Credentials::default(),
        }
    }
}

/// How many times one request may be re-sent after an auth challenge.
const AUTH_RETRIES: u32 = 4;

/// How to reach an HTTP server: [`HttpConfig::new`] with the endpoint, then the setters for
/// the rest.
///
/// ```
/// use agenvoy_mcp::HttpConfig;
/// use std::time::Duration;
///
/// let config = HttpConfig::new("https://mcp.example.com/mcp")
///     .header("X-Team", "search")
///     .with_connect_timeout(Duration::from_secs(5));
/// assert_eq!(config.headers, [("X-Team".to_string(), "search".to_string())]);
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct HttpConfig {
    /// The MCP endpoint, `http://` or `https://`.
    pub url: String,
    /// Headers sent with every request; an `Authorization` value of one word gets `Bearer `.
    pub headers: Vec<(String, String)>,
    /// Longest wait for a TCP (and TLS) connection; a request's own deadline
    /// ([`ClientOptions::timeout`](crate::ClientOptions::timeout)) bounds it too.
    pub connect_timeout: Duration,
    /// Longest wait for the response headers of what is not a request: a notification or a
    /// response we send, the GET stream, the session's end. A request is bounded by its own
    /// deadline instead ([`ClientOptions::timeout`](crate::ClientOptions::timeout) or the
    /// call's), from its first byte to its last: a slow tool is not cut off here.
    pub header_timeout: Duration,
    /// Tokens, DPoP proofs and challenges (OAuth); `None` sends only the configured headers.
    pub authorizer: Option<Arc<dyn Authorizer>>,
    /// The HTTP proxy every exchange goes through (default: the environment's).
    pub proxy: Proxy,
}

impl std::fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Header values are secrets more often than not: names only; so are query values.
        let names: Vec<&str> = self.headers.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("HttpConfig")
            .field("url", &crate::safe_text::redact_url(&self.url))
            .field("headers", &names)
            .field("connect_timeout", &self.connect_timeout)
            .field("header_timeout", &self.header_timeout)
            .field("authorizer", &self.authorizer.is_some())
            .field("proxy", &self.proxy)
            .finish()
    }
}

impl HttpConfig {
    /// A config for `url` with no headers and the default timeouts (10 s, 30 s).
    pub fn new(url: impl Into<String>) -> Self {
        HttpConfig {
            url: url.into(),
            headers: Vec::new(),
            connect_timeout: Duration::from_secs(10),
            header_timeout: Duration::from_secs(30),
            authorizer: None,
            proxy: Proxy::Environment,
        }
    }

    /// With the header `name: value` sent with every request.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// With a TCP (and TLS) connection waited for at most `timeout`.
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// With the response headers of what is not a request waited for at most `timeout`.
    pub fn with_header_timeout(mut self, timeout: Duration) -> Self {
        self.header_timeout = timeout;
        self
    }

    /// With `authorizer` supplying every request's credentials (OAuth).
    pub fn with_authorizer(mut self, authorizer: Arc<dyn Authorizer>) -> Self {
        self.authorizer = Some(authorizer);
        self
    }

    /// With every exchange going through `proxy`.
    pub fn with_proxy(mut self, proxy: Proxy) -> Self {
        self.proxy = proxy;
        self
    }
}

/// Why an HTTP exchange failed, before it becomes an [`Error`].
enum Failure {
    /// The server answered with an error status; `body` is the start of its body.
    Status { status: StatusCode, body: String },
    /// No answer: connection, TLS or timeout; the HTTP client's error, when it gave one.
    Unreachable(String, Option<crate::error::Cause>),
    /// A POST written whole, whose connection closed before any answer: the server may have
    /// acted on it.
    Cut(String, crate::error::Cause),
    /// The authorizer could not supply credentials.
    Auth(Error),
}

#[derive(Default)]
struct State {
    session_id: Option<String>,
    protocol_version: Option<String>,
    /// Our `initialize` request's id and bytes, to start a new session after expiry.
    initialize: Option<(Id, Bytes)>,
    /// Where to POST in the HTTP+SSE fallback; `None` for streamable HTTP.
    legacy_endpoint: Option<Uri>,
}

struct Inner {
    server: String,
    client: HttpsClient,
    url: Uri,
    headers: HeaderMap,
    header_timeout: Duration,
    authorizer: Option<Arc<dyn Authorizer>>,
    limits: Limits,
    inbound: mpsc::Sender<Inbound>,
    state: Mutex<State>,
    tasks: Mutex<Vec<AbortHandle>>,
    /// The exchange of each request in flight, and whether cancelling it means closing it.
    requests: Mutex<HashMap<i64, (AbortHandle, bool)>>,
    closed: AtomicBool,
    reinit: tokio::sync::Mutex<()>,
    /// A keyed hash of the `Authorization` value the authorizer gave last (0: none yet), and
    /// its key: which authorization context the exchanges are under
    /// ([`Transport::auth_context`]).
    auth_context: AtomicU64,
    auth_key: std::collections::hash_map::RandomState,
}

/// A connection to one streamable HTTP (or HTTP+SSE) server.
pub struct HttpTransport {
    inner: Arc<Inner>,
}

impl HttpTransport {
    /// Prepares the connection; nothing is sent until the first message.
    pub fn new(
        server: &str,
        config: &HttpConfig,
        limits: Limits,
    ) -> Result<(HttpTransport, mpsc::Receiver<Inbound>)> {
        let usage = |why: String| Error::new(server, ErrorKind::Usage(why));
        let url: Uri = config
            .url
            .parse()
            .map_err(|e| usage(format!("invalid url {:?}: {e}", config.url)))?;
        if !matches!(url.scheme_str(), Some("http" | "https")) || url.host().is_none() {
            return Err(usage(format!(
                "the url {:?} must be http:// or https:// with a host",
                config.url
            )));
        }
        let url = without_userinfo(server, url);
        let headers = configured_headers(&config.headers).map_err(usage)?;
        let client = https_client(server, config.connect_timeout, &config.proxy);
        // A proxy setting that cannot be used fails here, not at the first request.
        if let Err(why) = client.check_route(&url) {
            return Err(usage(why));
        }
        let (tx, rx) = mpsc::channel(64);
        let inner = Inner {
            server: server.to_string(),
            client,
            url,
            headers,
            header_timeout: config.header_timeout,
            authorizer: config.authorizer.clone(),
            limits,
            inbound: tx,
            state: Mutex::new(State::default()),
            tasks: Mutex::new(Vec::new()),
            requests: Mutex::new(HashMap::new()),
            closed: AtomicBool::new(false),
            reinit: tokio::sync::Mutex::new(()),
            auth_context: AtomicU64::new(0),
            auth_key: Default::default(),
        };
        Ok((
            HttpTransport {
                inner: Arc::new(inner),
            },
            rx,
        ))
    }

    /// Whether the server turned out to speak the 2024-11-05 HTTP+SSE transport.
    pub fn is_legacy(&self) -> bool {
        self.inner
            .state
            .lock()
            .expect("state lock")
            .legacy_endpoint
            .is_some()
    }
}

impl Transport for HttpTransport {
    fn send(&self, message: Outbound) -> BoxFuture<'_, Result<()>> {
        Box::pin(async move {
            let inner = &self.inner;
            if inner.closed.load(Ordering::Relaxed) {
                return Err(inner.error(ErrorKind::Closed("the transport was closed".into())));
            }
            let Outbound {
                kind,
                bytes,
                headers,
            } = message;
            let body = Bytes::from(bytes);
            match kind {
                Kind::Request {
                    id,
                    method,
                    stateless,
                } => {
                    if method == methods::INITIALIZE {
                        inner.state.lock().expect("state lock").initialize =
                            Some((id.clone(), body.clone()));
                    }
                    let cancels_by_closing = stateless;
                    let extra = if stateless {
                        header_pairs(&headers)
                    } else {
                        Vec::new()
                    };
                    let key = id.clone();
                    let task = inner.clone();
                    let handle =
                        inner.spawn(async move { task.run_request(id, method, body, extra).await });
                    if let Id::Number(n) = key {
                        let mut requests = inner.requests.lock().expect("requests lock");
                        requests.retain(|_, (h, _)| !h.is_finished());
                        requests.insert(n, (handle, cancels_by_closing));
                    }
                    Ok(())
                }
                Kind::Notification { method } => {
                    inner
                        .post_one_way(body)
                        .await
                        .map_err(|e| e.during(&method))?;
                    if method == methods::INITIALIZED {
                        inner.start_listening();
                    }
                    Ok(())
                }
                Kind::Response => inner.post_one_way(body).await,
            }
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let inner = &self.inner;
            if inner.closed.swap(true, Ordering::Relaxed) {
                return;
            }
            inner.abort_tasks();
            let streamable_session = {
                let state = inner.state.lock().expect("state lock");
                state.legacy_endpoint.is_none() && state.session_id.is_some()
            };
            if streamable_session {
                let delete = inner.exchange(Method::DELETE, &inner.url, None, None, &[], None);
                if let Ok(Err(Failure::Status { status, .. })) =
                    tokio::time::timeout(CLOSE_TIMEOUT, delete).await
                {
                    tracing::debug!(server = %inner.server, "DELETE of the session answered {status}");
                }
            }
            // Waits for room (the session reads without pause), so the end is never lost.
            let closed = inner
                .inbound
                .send(Inbound::Closed("the client closed the connection".into()));
            let _ = tokio::time::timeout(CLOSE_TIMEOUT, closed).await;
        })
    }

    fn cancel(&self, id: i64, notice: Outbound) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let request = self
                .inner
                .requests
                .lock()
                .expect("requests lock")
                .remove(&id);
            // Stateless era: cancelling is closing the request's own stream. Before it, the
            // server is told, then the stream is closed too: no answer is awaited any more,
            // and the exchange has no deadline of its own.
            if !matches!(request, Some((_, true))) {
                let _ = self.send(notice).await;
            }
            if let Some((handle, _)) = request {
                handle.abort();
            }
        })
    }

    fn kind(&self) -> &'static str {
        if self.is_legacy() { "http+sse" } else { "http" }
    }

    fn whole_replies(&self) -> Option<Arc<WholeReplies>> {
        Some(self.inner.limits.whole.clone())
    }

    fn auth_context(&self) -> u64 {
        self.inner.auth_context.load(Ordering::Relaxed)
    }
}

impl Drop for HttpTransport {
    fn drop(&mut self) {
        self.inner.closed.store(true, Ordering::Relaxed);
        self.inner.abort_tasks();
    }
}

impl Inner {
    fn error(&self, kind: ErrorKind) -> Error {
        Error::new(&self.server, kind)
    }

    fn failure(&self, failure: Failure) -> Error {
        match failure {
            Failure::Status { status, body } => {
                if let Some(rpc) = jsonrpc_error(&body) {
                    return self.error(ErrorKind::Rpc(Box::new(rpc)));
                }
                let detail = if body.is_empty() {
                    status.canonical_reason().unwrap_or("").to_string()
                } else {
                    body
                };
                self.error(ErrorKind::Http {
                    status: Some(status.as_u16()),
                    detail,
                })
            }
            Failure::Unreachable(detail, cause) => self
                .error(ErrorKind::Http {
                    status: None,
                    detail,
                })
                .with_cause(cause),
            Failure::Cut(detail, cause) => self
                .error(ErrorKind::Interrupted(detail))
                .with_cause(Some(cause)),
            Failure::Auth(e) => e,
        }
    }

    fn spawn(&self, task: impl Future<Output = ()> + Send + 'static) -> AbortHandle {
        let handle = tokio::spawn(task).abort_handle();
        let mut tasks = self.tasks.lock().expect("tasks lock");
        tasks.retain(|t| !t.is_finished());
        tasks.push(handle.clone());
        handle
    }

    fn abort_tasks(&self) {
        for task in self.tasks.lock().expect("tasks lock").drain(..) {
            task.abort();
        }
    }

    async fn deliver(&self, message: Decoded) {
        let _ = super::hand_over(&self.inbound, Inbound::Message(message)).await;
    }

    fn build(
        &self,
        method: &Method,
        uri: &Uri,
        body: Option<Bytes>,
        last_event_id: Option<&str>,
        credentials: bool,
    ) -> Request<Full<Bytes>> {
        let mut request = Request::new(Full::new(body.clone().unwrap_or_default()));
        *request.method_mut() = method.clone();
        *request.uri_mut() = uri.clone();
        let headers = request.headers_mut();
        if credentials {
            headers.extend(self.headers.clone());
        }
        let accept = if method == Method::GET {
            "text/event-stream"
        } else {
            "application/json, text/event-stream"
        };
        headers.insert(header::ACCEPT, HeaderValue::from_static(accept));
        if body.is_some() {
            headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
        }
        let state = self.state.lock().expect("state lock");
        if state.legacy_endpoint.is_none() {
            if let Some(id) = state.session_id.as_deref()
                && let Ok(v) = HeaderValue::from_str(id)
            {
                headers.insert("mcp-session-id", v);
            }
            if let Some(v) = state
                .protocol_version
                .as_deref()
                .and_then(|v| HeaderValue::from_str(v).ok())
            {
                headers.insert("mcp-protocol-version", v);
            }
        }
        if let Some(v) = last_event_id.and_then(|id| HeaderValue::from_str(id).ok()) {
            headers.insert("last-event-id", v);
        }
        request
    }

    /// One HTTP exchange up to the response headers: redirects followed, 429 and 502-504 retried.
    /// Each wait for headers is bounded by `headers_within`; `None` is for a request's own
    /// exchanges, which its deadline bounds (the session cancels it, which aborts its task).
    async fn exchange(
        &self,
        method: Method,
        target: &Uri,
        body: Option<Bytes>,
        last_event_id: Option<&str>,
        extra: &[(HeaderName, HeaderValue)],
        headers_within: Option<Duration>,
    ) -> std::result::Result<Response<Incoming>, Failure> {
        let mut uri = target.clone();
        let mut credentials = true;
        let (mut redirects, mut retries, mut challenges) = (0, 0, 0);
        loop {
            let mut request = self.build(&method, &uri, body.clone(), last_event_id, credentials);
            for (name, value) in extra {
                request.headers_mut().insert(name.clone(), value.clone());
            }
            let mut sent = Credentials::default();
            if let Some(authorizer) = self.authorizer.as_ref().filter(|_| credentials) {
                sent = authorizer
                    .authorization(method.as_str(), &uri.to_string())
                    .await
                    .map_err(Failure::Auth)?;
                let context = sent.authorization.as_ref().map_or(0, |value| {
                    use std::hash::BuildHasher as _;
                    self.auth_key.hash_one(value.expose()).max(1)
                });
                self.auth_context.store(context, Ordering::Relaxed);
                for (name, value) in [
                    (header::AUTHORIZATION, &sent.authorization),
                    (HeaderName::from_static("dpop"), &sent.dpop),
                ] {
                    let Some(value) = value else { continue };
                    let mut value = HeaderValue::from_str(value.expose()).map_err(|_| {
                        Failure::Unreachable(
                            "the authorizer gave an invalid header value".into(),
                            None,
                        )
                    })?;
                    value.set_sensitive(true);
                    request.headers_mut().insert(name, value);
                }
            }
            let headers = self.client.request(request);
            let headers = async {
                match headers_within {
                    Some(within) => tokio::time::timeout(within, headers).await,
                    None => Ok(headers.await),
                }
            };
            let response = match headers.await {
                Err(_) => {
                    let secs = headers_within.unwrap_or_default().as_secs_f64();
                    return Err(Failure::Unreachable(
                        format!("no response headers from {uri} within {secs:.1} s"),
                        None,
                    ));
                }
                Ok(Err(e)) => {
                    if stale_connection(&e, &method) && retries < MAX_RETRIES {
                        // A pooled connection the server closed (it restarted, or timed
                        // the connection out): try once more on a fresh one.
                        retries += 1;
                        continue;
                    }
                    let why = crate::error::chain_text(&e);
                    if cut_after_written(&e, &method) {
                        return Err(Failure::Cut(
                            format!("{uri}: {why}"),
                            std::sync::Arc::new(e),
                        ));
                    }
                    return Err(Failure::Unreachable(
                        format!("{uri}: {why}"),
                        Some(std::sync::Arc::new(e)),
                    ));
                }
                Ok(Ok(r)) => r,
            };
            let status = response.status();
            let follow = matches!(status.as_u16(), 307 | 308)
                || (method == Method::GET && matches!(status.as_u16(), 301..=303));
            if follow && redirects < MAX_REDIRECTS {
                let location = response
                    .headers()
                    .get(header::LOCATION)
                    .and_then(|v| v.to_str().ok());
                if let Some(next) = location.and_then(|l| resolve(&uri, l)) {
                    if origin(&next) != origin(&self.url) {
                        credentials = false;
                    }
                    uri = next;
                    redirects += 1;
                    continue;
                }
            }
            // 429 and 503 say the request was not served; a gateway's 502 or 504 may follow a
            // POST the server did act on, so only a GET is sent again after one.
            let retryable = match status.as_u16() {
                429 | 503 => true,
                502 | 504 => method == Method::GET,
                _ => false,
            };
            if retryable && retries < MAX_RETRIES {
                let wait = retry_after(response.headers())
                    .unwrap_or_else(|| backoff(retries))
                    .min(MAX_WAIT);
                tracing::info!(server = %self.server, "HTTP {status}; retrying in {:.1} s", wait.as_secs_f64());
                retries += 1;
                tokio::time::sleep(wait).await;
                continue;
            }
            if status.is_success() {
                return Ok(response);
            }
            if let Some(authorizer) = self.authorizer.as_ref().filter(|_| credentials)
                && matches!(status.as_u16(), 401 | 403)
                && challenges < AUTH_RETRIES
            {
                let read = |name: &str| {
                    response
                        .headers()
                        .get(name)
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_string)
                };
                let refusal = Refusal {
                    status: status.as_u16(),
                    www_authenticate: read("www-authenticate"),
                    dpop_nonce: read("dpop-nonce"),
                    sent,
                };
                match authorizer.challenge(refusal).await {
                    Ok(true) => {
                        challenges += 1;
                        continue;
                    }
                    Ok(false) => {}
                    Err(e) => return Err(Failure::Auth(e)),
                }
            }
            if let Some(why) = self.client.proxy_refusal(&uri, status) {
                return Err(Failure::Status { status, body: why });
            }
            return Err(Failure::Status {
                status,
                body: body_excerpt(response).await,
            });
        }
    }

    fn post_target(&self) -> Uri {
        let state = self.state.lock().expect("state lock");
        state
            .legacy_endpoint
            .clone()
            .unwrap_or_else(|| self.url.clone())
    }

    /// POSTs a notification or a response; the server should answer 202.
    async fn post_one_way(&self, body: Bytes) -> Result<()> {
        let response = self
            .exchange(
                Method::POST,
                &self.post_target(),
                Some(body),
                None,
                &[],
                Some(self.header_timeout),
            )
            .await
            .map_err(|f| self.failure(f))?;
        // Anything in the body (some servers answer 200 with JSON) is not ours to read.
        drop(response);
        Ok(())
    }

    async fn run_request(
        self: Arc<Self>,
        id: Id,
        method: String,
        body: Bytes,
        extra: Vec<(HeaderName, HeaderValue)>,
    ) {
        if let Err(e) = self.request_flow(&id, &method, body, &extra).await {
            let _ = self.inbound.send(Inbound::Failed(id, e)).await;
        }
    }

    async fn request_flow(
        self: &Arc<Self>,
        id: &Id,
        method: &str,
        body: Bytes,
        extra: &[(HeaderName, HeaderValue)],
    ) -> Result<()> {
        let mut replayed = false;
        loop {
            let (sent_session, legacy) = {
                let state = self.state.lock().expect("state lock");
                (state.session_id.clone(), state.legacy_endpoint.is_some())
            };
            match self
                .exchange(
                    Method::POST,
                    &self.post_target(),
                    Some(body.clone()),
                    None,
                    extra,
                    None,
                )
                .await
            {
                Ok(response) => return self.take_response(response, id, method, legacy).await,
                Err(Failure::Status {
                    status,
                    body: excerpt,
                }) if sent_session.is_some()
                    && !replayed
                    && method != methods::INITIALIZE
                    && session_gone(status, &excerpt) =>
                {
                    tracing::info!(server = %self.server, "the server forgot our session (HTTP {status}); starting a new one");
                    replayed = true;
                    self.reinitialize(sent_session).await?;
                }
                Err(Failure::Status {
                    status,
                    body: excerpt,
                }) if method == methods::INITIALIZE
                    && !legacy
                    && matches!(status.as_u16(), 400 | 404 | 405)
                    && !is_jsonrpc_error(&excerpt) =>
                {
                    tracing::info!(server = %self.server, "POST answered HTTP {status}; trying the HTTP+SSE transport of 2024-11-05");
                    self.start_legacy().await?;
                }
                Err(f) => return Err(self.failure(f)),
            }
        }
    }

    async fn take_response(
        self: &Arc<Self>,
        response: Response<Incoming>,
        id: &Id,
        method: &str,
        legacy: bool,
    ) -> Result<()> {
        if method == methods::INITIALIZE
            && let Some(session) = response
                .headers()
                .get("mcp-session-id")
                .and_then(|v| v.to_str().ok())
        {
            self.state.lock().expect("state lock").session_id = Some(session.to_string());
        }
        if legacy {
            // The answer comes on the HTTP+SSE stream.
            return Ok(());
        }
        match content_type(&response).as_str() {
            "text/event-stream" => self.follow_stream(response.into_body(), id, method).await,
            "application/json" => {
                let decoded = self.read_json(response.into_body()).await?;
                if method == methods::INITIALIZE {
                    self.note_version(&decoded);
                }
                self.deliver(decoded).await;
                Ok(())
            }
            other => Err(self.error(ErrorKind::Protocol(format!(
                "the answer to a request has content type {other:?}, not application/json or text/event-stream"
            )))),
        }
    }

    /// Reads a JSON answer as it arrives.
    async fn read_json(&self, mut body: Incoming) -> Result<Decoded> {
        let mut message = Assembler::new(&self.limits);
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| {
                self.error(ErrorKind::Http {
                    status: None,
                    detail: format!("reading the response body: {e}"),
                })
            })?;
            if let Ok(chunk) = frame.into_data() {
                message.feed(&chunk);
            }
        }
        message.finish(&self.server).ok_or_else(|| {
            self.error(ErrorKind::Protocol(
                "the JSON answer is not a JSON-RPC message".into(),
            ))
        })
    }

    fn note_version(&self, decoded: &Decoded) {
        let Some(frame) = decoded.raw.as_deref() else {
            return;
        };
        if let Ok(Message::Response(r)) = Message::parse(frame)
            && let Ok(result) = &r.outcome
            && let Some(v) = result.get("protocolVersion").and_then(|v| v.as_str())
        {
            self.state.lock().expect("state lock").protocol_version = Some(v.to_string());
        }
    }

    /// Reads a request's SSE stream until its response, resuming it as often as allowed.
    async fn follow_stream(self: &Arc<Self>, body: Incoming, id: &Id, method: &str) -> Result<()> {
        let mut cursor = Cursor::default();
        let mut reader = EventReader::new(body, self);
        let mut attempts = 0;
        loop {
            while let Some((_, data)) = reader.next(self, &mut cursor).await {
                attempts = 0;
                let EventData::Message(decoded) = data else {
                    continue;
                };
                let answers_us = decoded.render.is_some() && decoded.id.as_ref() == Some(id);
                if answers_us && method == methods::INITIALIZE {
                    self.note_version(&decoded);
                }
                self.deliver(decoded).await;
                if answers_us {
                    return Ok(());
                }
            }
            let Some(last) = cursor.last_event_id.clone() else {
                return Err(self.error(ErrorKind::Interrupted(
                    "the server ended the response stream before answering, with no event id to resume from".into(),
                )));
            };
            attempts += 1;
            if attempts > RESUME_ATTEMPTS {
                return Err(self.error(ErrorKind::Interrupted(format!(
                    "the response stream could not be resumed after {RESUME_ATTEMPTS} attempts"
                ))));
            }
            let wait = cursor.retry.unwrap_or_else(|| backoff(attempts));
            tokio::time::sleep(wait.max(MIN_RETRY)).await;
            let response = self
                .exchange(Method::GET, &self.url, None, Some(&last), &[], None)
                .await
                .map_err(|f| {
                    let e = self.failure(f);
                    self.error(ErrorKind::Interrupted(format!(
                        "the response stream ended and resuming it failed: {}",
                        e.kind_text()
                    )))
                })?;
            if content_type(&response) != "text/event-stream" {
                return Err(self.error(ErrorKind::Protocol(
                    "resuming the response stream did not give an event stream".into(),
                )));
            }
            reader = EventReader::new(response.into_body(), self);
        }
    }

    /// Opens the GET stream for server-initiated messages, once, in the background.
    fn start_listening(self: &Arc<Self>) {
        if self
            .state
            .lock()
            .expect("state lock")
            .legacy_endpoint
            .is_some()
        {
            return;
        }
        let inner = self.clone();
        self.spawn(async move { inner.listen().await });
    }

    async fn listen(self: Arc<Self>) {
        let mut cursor = Cursor::default();
        // Streams in a row that failed or ended without a message: each doubles the wait, so
        // a server that ends every stream at once (whatever its `retry`) is not hammered.
        let mut failures = 0;
        while !self.closed.load(Ordering::Relaxed) {
            match self
                .exchange(
                    Method::GET,
                    &self.url,
                    None,
                    cursor.last_event_id.as_deref(),
                    &[],
                    Some(self.header_timeout),
                )
                .await
            {
                Ok(response) if content_type(&response) == "text/event-stream" => {
                    let mut reader = EventReader::new(response.into_body(), &self);
                    failures += 1;
                    while let Some((_, data)) = reader.next(&self, &mut cursor).await {
                        if let EventData::Message(decoded) = data {
                            failures = 0;
                            self.deliver(decoded).await;
                        }
                    }
                }
                Ok(_) => {
                    return tracing::debug!(server = %self.server, "the GET stream is not an event stream; not listening");
                }
                Err(Failure::Status { status, .. })
                    if matches!(status.as_u16(), 400 | 404 | 405) =>
                {
                    return tracing::debug!(server = %self.server, "the server offers no GET stream (HTTP {status})");
                }
                Err(f) => {
                    failures += 1;
                    tracing::debug!(server = %self.server, "the GET stream failed: {}", self.failure(f));
                }
            }
            let wait = cursor.retry.unwrap_or_default().max(backoff(failures));
            tokio::time::sleep(wait).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::retry::httpdate_to_unix;
    use super::*;

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        let mut h = HeaderMap::new();
        h.insert(header::RETRY_AFTER, HeaderValue::from_static("3"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(3)));
        assert_eq!(
            httpdate_to_unix("Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(784111777)
        );
        h.insert(
            header::RETRY_AFTER,
            HeaderValue::from_static("Sun, 06 Nov 1994 08:49:37 GMT"),
        );
        assert_eq!(
            retry_after(&h),
            Some(Duration::ZERO),
            "a date in the past means now"
        );
    }

    #[test]
    fn one_word_authorization_becomes_bearer() {
        let h = configured_headers(&[
            ("Authorization".into(), "tok123".into()),
            ("X-Key".into(), "a b".into()),
        ])
        .unwrap();
        assert_eq!(h["authorization"], "Bearer tok123");
        assert_eq!(h["x-key"], "a b");
        let h = configured_headers(&[("Authorization".into(), "Basic abc".into())]).unwrap();
        assert_eq!(h["authorization"], "Basic abc");
        let err = configured_headers(&[("X-Key".into(), "secret\nvalue".into())]).unwrap_err();
        assert!(!err.contains("secret"), "{err}");
    }

    #[test]
    fn endpoints_resolve_against_the_url() {
        let base: Uri = "http://127.0.0.1:8080/mcp/sse".parse().unwrap();
        assert_eq!(
            resolve(&base, "/messages?sessionId=1").unwrap().to_string(),
            "http://127.0.0.1:8080/messages?sessionId=1"
        );
        assert_eq!(
            resolve(&base, "messages").unwrap().to_string(),
            "http://127.0.0.1:8080/mcp/messages"
        );
        assert_eq!(
            resolve(&base, "https://x.test/m").unwrap().to_string(),
            "https://x.test/m"
        );
    }

    #[test]
    fn session_loss_is_404_or_a_400_about_the_session() {
        assert!(session_gone(StatusCode::NOT_FOUND, ""));
        assert!(session_gone(
            StatusCode::BAD_REQUEST,
            r#"{"error":{"message":"Bad Request: No valid session ID provided"}}"#
        ));
        assert!(!session_gone(StatusCode::BAD_REQUEST, "bad json"));
        assert!(is_jsonrpc_error(
            r#"{"jsonrpc":"2.0","error":{"code":-32000,"message":"x"},"id":null}"#
        ));
        assert!(!is_jsonrpc_error("Not Found"));
    }
}
