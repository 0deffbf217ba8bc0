//! `agenvoy-mcp fixture-server --http ADDR`: the fixture server over streamable HTTP.
//!
//! The MCP endpoint is `/mcp`; the same tools as over stdio. Modes (`--mode`):
//! - `json` (the default): JSON answers; a session id from initialize, required afterwards
//!   (400 without one, 404 for an unknown one); a GET stream per session for messages the
//!   server starts; DELETE ends the session.
//! - `sse`: every answer is an SSE stream: a priming event (id, `retry: 100`, empty data),
//!   then progress and server requests, then the response.
//! - `stateless`: JSON answers, no session, no GET stream (405).
//! - `modern`: the stateless 2026-07-28 revision (`server/discover`, no `initialize`): SSE
//!   answers (so a request's log messages travel with it), no session, no GET stream.
//! - `cut-stream`: as `sse`, but each stream is cut after its first message event; a GET
//!   with `Last-Event-ID` replays the stream from that event (inclusive, so one duplicate).
//! - `dead-resume`: as `cut-stream`, but a GET with `Last-Event-ID` gets an SSE stream that
//!   ends at once, with no event: a cut stream can never be resumed.
//! - `expire-session`: as `json`, but a session is forgotten once it calls a tool.
//! - `expire-mid-stream`: as `cut-stream`, and the session is forgotten as a tool call's stream
//!   is cut, so resuming that stream fails (404) while the next request starts a new session.
//! - `rate-limit`: each tools/call is answered 429 (`Retry-After: 1`), then 503, then served.
//! - `fail-call=STATUS`: as `json`, but the first tools/call POST is answered with HTTP
//!   STATUS (with `Retry-After: 0`), or with `fail-call=drop`, read whole and its connection
//!   closed with no answer; every later one is served.
//! - `slow-headers`: tools/call answers start after 3 s.
//! - `junk-sse`: as `sse`, with comments, an unknown event type, a non-JSON message and an
//!   id-only event before the real ones, all with CRLF line ends.
//! - `legacy`: the 2024-11-05 HTTP+SSE transport: POST `/mcp` is 405; GET `/mcp` is an SSE
//!   stream whose `endpoint` event names `/messages?session=<id>`, where messages are POSTed
//!   (202) and answered on the stream.
//!
//! - `redirect`: every request to `/mcp` is answered `307` to `--redirect-to URL`.
//! - `retry-zero`: as `json`, but every GET stream says `retry: 0` and ends at once.
//! - `list-changed-flood`: as `json`, but the GET stream sends
//!   `notifications/tools/list_changed` without end, as fast as the client reads.
//!
//! `GET /stats` returns counters as JSON: `initializations`, `deletes`, `posts`, `toolCalls`
//! (POSTs of tools/call), `gets`, `streamsOpened` (GET streams ready for the server's
//! messages), the
//! `lastEventIds` seen on GETs, and `credentialed`: requests that came with an
//! `Authorization` or `X-Api-Key` header.

use super::fixture_server::{Output, Server};
use agenvoy_mcp::api::ChannelBody;
use agenvoy_mcp::wire::jsonrpc::{Id, Message};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use serde_json::json;
use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Notify, mpsc};

/// How the HTTP fixture behaves; see the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpMode {
    /// JSON answers with sessions.
    Json,
    /// SSE answers with sessions.
    Sse,
    /// JSON answers, no sessions.
    Stateless,
    /// The 2026-07-28 revision: SSE answers, no sessions.
    Modern,
    /// SSE answers cut after the first event, resumable.
    CutStream,
    /// SSE answers cut after the first event; resuming gives an empty stream.
    DeadResume,
    /// Sessions end after a tool call.
    ExpireSession,
    /// Sessions end while a tool call's stream is cut.
    ExpireMidStream,
    /// 429 then 503 before each tool call is served.
    RateLimit,
    /// Tool call answers start late.
    SlowHeaders,
    /// SSE answers with junk events.
    JunkSse,
    /// The 2024-11-05 HTTP+SSE transport.
    Legacy,
    /// Every request redirected elsewhere.
    Redirect,
    /// GET streams that end at once with `retry: 0`.
    RetryZero,
    /// GET streams of `tools/list_changed` without end.
    ListChangedFlood,
    /// The first tools/call POST fails with this HTTP status (0: no answer at all).
    FailCall(u16),
}

impl std::str::FromStr for HttpMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "json" | "normal" => HttpMode::Json,
            "sse" => HttpMode::Sse,
            "stateless" => HttpMode::Stateless,
            "modern" => HttpMode::Modern,
            "cut-stream" => HttpMode::CutStream,
            "dead-resume" => HttpMode::DeadResume,
            "expire-session" => HttpMode::ExpireSession,
            "expire-mid-stream" => HttpMode::ExpireMidStream,
            "rate-limit" => HttpMode::RateLimit,
            "slow-headers" => HttpMode::SlowHeaders,
            "junk-sse" => HttpMode::JunkSse,
            "legacy" => HttpMode::Legacy,
            "redirect" => HttpMode::Redirect,
            "retry-zero" => HttpMode::RetryZero,
            "list-changed-flood" => HttpMode::ListChangedFlood,
            "fail-call=drop" => HttpMode::FailCall(0),
            _ => match s.strip_prefix("fail-call=").map(str::parse::<StatusCode>) {
                Some(Ok(status)) => HttpMode::FailCall(status.as_u16()),
                _ => return Err(format!("unknown HTTP mode {s:?}")),
            },
        })
    }
}

type Body = BoxBody<Bytes, Infallible>;

/// Marks a response never to be sent: its connection is closed instead (`fail-call=drop`).
#[derive(Debug, Clone, Copy)]
struct Dropped;

impl std::fmt::Display for Dropped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("closed with no answer (fail-call=drop)")
    }
}

impl std::error::Error for Dropped {}
type Chunks = mpsc::Sender<Bytes>;

fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).boxed()
}

fn streamed(capacity: usize) -> (Chunks, Body) {
    let (tx, rx) = mpsc::channel(capacity);
    (tx, ChannelBody::new(rx).boxed())
}

/// Sends one chunk from a blocking thread; false once the reader is gone.
fn push(tx: &Chunks, bytes: Vec<u8>) -> bool {
    tx.blocking_send(Bytes::from(bytes)).is_ok()
}

const JUNK: &str = ": a comment\r\n\r\nevent: other\r\ndata: not for us\r\n\r\ndata: not json\r\n\r\nid: junk-id\r\n\r\n";

/// Events of one SSE stream, kept for replay in `cut-stream` mode.
#[derive(Default)]
struct StreamLog {
    events: Mutex<(Vec<Bytes>, bool)>,
    changed: Notify,
}

/// Writes messages as SSE events of one stream.
struct SseOut {
    request: Option<Id>,
    stream: u64,
    next: AtomicU64,
    tx: Mutex<Option<Chunks>>,
    /// In `cut-stream` mode: every event also goes here, and the live stream stops after one.
    log: Option<Arc<StreamLog>>,
}

impl SseOut {
    fn event_head(&self) -> Vec<u8> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        format!("id: {}-{n}\ndata: ", self.stream).into_bytes()
    }
}

impl Output for SseOut {
    fn message(&self, pieces: &mut dyn Iterator<Item = Vec<u8>>, answers: Option<&Id>) {
        let done = answers.is_some() && answers == self.request.as_ref();
        if let Some(log) = &self.log {
            let mut event = self.event_head();
            pieces.for_each(|p| event.extend_from_slice(&p));
            event.extend_from_slice(b"\n\n");
            let mut events = log.events.lock().unwrap();
            events.0.push(Bytes::from(event.clone()));
            events.1 |= done;
            drop(events);
            log.changed.notify_waiters();
            // The live stream carries the priming event and this first message, then is cut.
            if let Some(tx) = self.tx.lock().unwrap().take() {
                push(&tx, event);
            }
            return;
        }
        let mut guard = self.tx.lock().unwrap();
        let Some(tx) = guard.as_ref() else { return };
        let mut ok = push(tx, self.event_head());
        for piece in pieces {
            ok = ok && push(tx, piece);
        }
        ok = ok && push(tx, b"\n\n".to_vec());
        if done || !ok {
            guard.take();
        }
    }
}

/// Writes the answer to one request as a JSON body; anything else goes to `side`.
struct JsonOut {
    request: Id,
    tx: Mutex<Option<Chunks>>,
    side: Option<Arc<dyn Output>>,
}

impl Output for JsonOut {
    fn message(&self, pieces: &mut dyn Iterator<Item = Vec<u8>>, answers: Option<&Id>) {
        if answers == Some(&self.request) {
            if let Some(tx) = self.tx.lock().unwrap().take() {
                for piece in pieces {
                    if !push(&tx, piece) {
                        return;
                    }
                }
            }
        } else if let Some(side) = &self.side {
            side.message(pieces, answers);
        }
    }
}

/// A session's GET stream, looked up when a message is sent: a client opens it after
/// initialize, in the background, so a server request made at once waits for it (up to
/// `SIDE_STREAM_WAIT`) instead of being lost.
struct SideStream {
    fixture: Arc<Fixture>,
    session: String,
}

/// How long a message for a session's GET stream waits for the client to open it.
const SIDE_STREAM_WAIT: Duration = Duration::from_secs(10);

impl Output for SideStream {
    // Runs on a blocking thread (`Fixture::receive`), so it may sleep.
    fn message(&self, pieces: &mut dyn Iterator<Item = Vec<u8>>, answers: Option<&Id>) {
        let give_up = std::time::Instant::now() + SIDE_STREAM_WAIT;
        loop {
            let stream = match self.fixture.sessions.lock().unwrap().get(&self.session) {
                Some(Some(stream)) => Some(stream.clone()),
                Some(None) => None,
                None => return, // the session is gone
            };
            if let Some(stream) = stream {
                return stream.message(pieces, answers);
            }
            if std::time::Instant::now() >= give_up {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Drops what it is given: where messages go when there is no stream for them.
struct Nowhere;

impl Output for Nowhere {
    fn message(&self, _: &mut dyn Iterator<Item = Vec<u8>>, _: Option<&Id>) {}
}

#[derive(Default)]
struct Stats {
    initializations: u64,
    deletes: u64,
    posts: u64,
    tool_calls: u64,
    gets: u64,
    streams_opened: u64,
    last_event_ids: Vec<String>,
    credentialed: u64,
}

struct Fixture {
    server: Arc<Server>,
    mode: HttpMode,
    /// Live sessions, each with its GET (or, in legacy mode, its only) stream once opened.
    sessions: Mutex<HashMap<String, Option<Arc<SseOut>>>>,
    logs: Mutex<HashMap<u64, Arc<StreamLog>>>,
    /// Attempts of each rate-limited tools/call, by request id.
    attempts: Mutex<HashMap<String, u32>>,
    stats: Mutex<Stats>,
    next: AtomicU64,
    /// Where `redirect` mode sends every request.
    redirect_to: Option<String>,
}

/// Runs the HTTP fixture server until the process is killed.
pub fn run(
    addr: SocketAddr,
    mode: HttpMode,
    page_size: Option<usize>,
    redirect_to: Option<String>,
) -> ExitCode {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(async move {
        let listener = match tokio::net::TcpListener::bind(addr).await {
            Ok(l) => l,
            Err(e) => {
                eprintln!("fixture-server: cannot listen on {addr}: {e}");
                return ExitCode::from(1);
            }
        };
        let local = listener
            .local_addr()
            .expect("a bound listener has an address");
        // Tests read this line to learn the port when ADDR ends in :0.
        println!("listening on http://{local}/mcp");
        let fixture = Arc::new(Fixture {
            server: Server::new(
                match mode {
                    HttpMode::Modern => super::fixture_server::Mode::Modern,
                    _ => super::fixture_server::Mode::Normal,
                },
                page_size,
            ),
            mode,
            sessions: Mutex::new(HashMap::new()),
            logs: Mutex::new(HashMap::new()),
            attempts: Mutex::new(HashMap::new()),
            stats: Mutex::new(Stats::default()),
            next: AtomicU64::new(1),
            redirect_to,
        });
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            // Without it, Nagle's algorithm holds a response's body behind its headers until
            // the client's delayed ACK (40 ms a request).
            let _ = stream.set_nodelay(true);
            let fixture = fixture.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req| {
                    let fixture = fixture.clone();
                    async move {
                        let response = fixture.handle(req).await;
                        // `fail-call=drop`: the connection closes with no answer.
                        match response.extensions().get::<Dropped>() {
                            Some(_) => Err(Dropped),
                            None => Ok(response),
                        }
                    }
                });
                let io = hyper_util::rt::TokioIo::new(stream);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(io, service)
                    .await;
            });
        }
    })
}

fn respond(status: StatusCode, content_type: &str, body: Body) -> Response<Body> {
    let mut r = Response::new(body);
    *r.status_mut() = status;
    if !content_type.is_empty() {
        r.headers_mut().insert(
            "content-type",
            content_type.parse().expect("a valid content type"),
        );
    }
    r
}

fn jsonrpc_error(status: StatusCode, message: &str) -> Response<Body> {
    let body = json!({"jsonrpc": "2.0", "error": {"code": -32000, "message": message}, "id": null});
    respond(status, "application/json", full(body.to_string()))
}

impl Fixture {
    async fn handle(self: Arc<Self>, req: Request<Incoming>) -> Response<Body> {
        let path = req.uri().path().to_string();
        if req.headers().contains_key("authorization") || req.headers().contains_key("x-api-key") {
            self.stats.lock().unwrap().credentialed += 1;
        }
        if let (HttpMode::Redirect, "/mcp", Some(target)) =
            (self.mode, path.as_str(), &self.redirect_to)
        {
            let mut r = respond(StatusCode::TEMPORARY_REDIRECT, "text/plain", full("moved"));
            r.headers_mut()
                .insert("location", target.parse().expect("a valid redirect target"));
            return r;
        }
        match (req.method().clone(), path.as_str()) {
            (Method::GET, "/stats") => {
                let s = self.stats.lock().unwrap();
                let body = json!({"initializations": s.initializations, "deletes": s.deletes,
                                  "posts": s.posts, "toolCalls": s.tool_calls, "gets": s.gets,
                                  "streamsOpened": s.streams_opened, "lastEventIds": s.last_event_ids,
                                  "credentialed": s.credentialed});
                respond(StatusCode::OK, "application/json", full(body.to_string()))
            }
            (Method::POST, "/mcp") if self.mode == HttpMode::Legacy => respond(
                StatusCode::METHOD_NOT_ALLOWED,
                "text/plain",
                full("Method Not Allowed"),
            ),
            (Method::POST, "/mcp") => self.post(req).await,
            (Method::GET, "/mcp") if self.mode == HttpMode::Legacy => self.open_legacy(),
            (Method::GET, "/mcp") => {
                self.stats.lock().unwrap().gets += 1;
                if self.mode == HttpMode::RetryZero {
                    return respond(StatusCode::OK, "text/event-stream", full("retry: 0\n\n"));
                }
                self.get(req)
            }
            (Method::DELETE, "/mcp") => {
                let session = header(&req, "mcp-session-id");
                let known =
                    session.is_some_and(|s| self.sessions.lock().unwrap().remove(&s).is_some());
                self.stats.lock().unwrap().deletes += 1;
                if known {
                    respond(StatusCode::OK, "", full(""))
                } else {
                    respond(StatusCode::NOT_FOUND, "", full(""))
                }
            }
            (Method::POST, "/messages") if self.mode == HttpMode::Legacy => {
                self.post_legacy(req).await
            }
            _ => respond(StatusCode::NOT_FOUND, "text/plain", full("Not Found")),
        }
    }

    fn stateful(&self) -> bool {
        !matches!(
            self.mode,
            HttpMode::Stateless | HttpMode::Modern | HttpMode::Legacy
        )
    }

    fn sse(&self) -> bool {
        matches!(
            self.mode,
            HttpMode::Sse
                | HttpMode::Modern
                | HttpMode::CutStream
                | HttpMode::DeadResume
                | HttpMode::ExpireMidStream
                | HttpMode::JunkSse
        )
    }

    /// Hands a message to the server on a blocking thread (its tools sleep and wait).
    fn receive(&self, message: Message, out: Arc<dyn Output>) {
        let server = self.server.clone();
        tokio::task::spawn_blocking(move || server.receive(message, out));
    }

    /// The session's GET stream, where messages go that belong to no request stream.
    fn side_stream(self: &Arc<Self>, session: Option<&str>) -> Arc<dyn Output> {
        match session {
            Some(session) => Arc::new(SideStream {
                fixture: self.clone(),
                session: session.to_string(),
            }),
            None => Arc::new(Nowhere),
        }
    }

    async fn post(self: Arc<Self>, req: Request<Incoming>) -> Response<Body> {
        self.stats.lock().unwrap().posts += 1;
        let session = header(&req, "mcp-session-id");
        let Ok(body) = req.into_body().collect().await.map(|b| b.to_bytes()) else {
            return jsonrpc_error(StatusCode::BAD_REQUEST, "Bad Request: unreadable body");
        };
        let message = match Message::parse(&body) {
            Ok(m) => m,
            Err(e) => return jsonrpc_error(StatusCode::BAD_REQUEST, &format!("Parse error: {e}")),
        };
        let (id, method) = match &message {
            Message::Request(r) => (Some(r.id.clone()), r.method.clone()),
            Message::Notification(n) => (None, n.method.clone()),
            Message::Response(_) => (None, String::new()),
        };
        let mut new_session = None;
        if method == "initialize" {
            self.stats.lock().unwrap().initializations += 1;
            if self.stateful() {
                let sid = format!(
                    "fixture-session-{}",
                    self.next.fetch_add(1, Ordering::Relaxed)
                );
                self.sessions.lock().unwrap().insert(sid.clone(), None);
                new_session = Some(sid);
            }
        } else if self.stateful() {
            match &session {
                None => {
                    return jsonrpc_error(StatusCode::BAD_REQUEST, "Bad Request: no session id");
                }
                Some(s) if !self.sessions.lock().unwrap().contains_key(s) => {
                    return jsonrpc_error(StatusCode::NOT_FOUND, "Session not found");
                }
                Some(_) => {}
            }
        }
        let Some(id) = id else {
            self.receive(message, self.side_stream(session.as_deref()));
            return respond(StatusCode::ACCEPTED, "", full(""));
        };
        if method == "tools/call" {
            let nth = {
                let mut stats = self.stats.lock().unwrap();
                stats.tool_calls += 1;
                stats.tool_calls
            };
            match self.mode {
                HttpMode::FailCall(status) if nth == 1 => {
                    let mut r = respond(StatusCode::OK, "text/plain", full(""));
                    match StatusCode::from_u16(status) {
                        Ok(status) => {
                            *r.status_mut() = status;
                            r.headers_mut()
                                .insert("retry-after", "0".parse().expect("a valid header"));
                        }
                        Err(_) => {
                            r.extensions_mut().insert(Dropped);
                        }
                    }
                    return r;
                }
                HttpMode::RateLimit => {
                    let mut attempts = self.attempts.lock().unwrap();
                    let n = attempts.entry(id.to_string()).or_insert(0);
                    *n += 1;
                    if *n == 1 {
                        let mut r = jsonrpc_error(StatusCode::TOO_MANY_REQUESTS, "slow down");
                        r.headers_mut()
                            .insert("retry-after", "1".parse().expect("a valid header"));
                        return r;
                    }
                    if *n == 2 {
                        return respond(
                            StatusCode::SERVICE_UNAVAILABLE,
                            "text/plain",
                            full("try again"),
                        );
                    }
                }
                HttpMode::SlowHeaders => tokio::time::sleep(Duration::from_secs(3)).await,
                HttpMode::ExpireSession | HttpMode::ExpireMidStream => {
                    if let Some(s) = &session {
                        self.sessions.lock().unwrap().remove(s);
                    }
                }
                _ => {}
            }
        }
        let mut response = if self.sse() {
            let (tx, body) = streamed(16);
            let stream = self.next.fetch_add(1, Ordering::Relaxed);
            let cut = matches!(
                self.mode,
                HttpMode::CutStream | HttpMode::DeadResume | HttpMode::ExpireMidStream
            );
            let log = cut.then(|| {
                let log = Arc::new(StreamLog::default());
                self.logs.lock().unwrap().insert(stream, log.clone());
                log
            });
            let out = Arc::new(SseOut {
                request: Some(id),
                stream,
                next: AtomicU64::new(1),
                tx: Mutex::new(None),
                log,
            });
            let mut first = Vec::new();
            if self.mode == HttpMode::JunkSse {
                first.extend_from_slice(JUNK.as_bytes());
            }
            first.extend_from_slice(format!("id: {stream}-0\nretry: 100\ndata: \n\n").as_bytes());
            let _ = tx.send(Bytes::from(first)).await;
            *out.tx.lock().unwrap() = Some(tx);
            self.receive(message, out);
            respond(StatusCode::OK, "text/event-stream", body)
        } else {
            let (tx, body) = streamed(16);
            let side = self.side_stream(session.as_deref().or(new_session.as_deref()));
            self.receive(
                message,
                Arc::new(JsonOut {
                    request: id,
                    tx: Mutex::new(Some(tx)),
                    side: Some(side),
                }),
            );
            respond(StatusCode::OK, "application/json", body)
        };
        if let Some(sid) = new_session {
            response
                .headers_mut()
                .insert("mcp-session-id", sid.parse().expect("a valid header"));
        }
        response
    }

    fn get(self: Arc<Self>, req: Request<Incoming>) -> Response<Body> {
        if !self.stateful() {
            return respond(
                StatusCode::METHOD_NOT_ALLOWED,
                "text/plain",
                full("Method Not Allowed"),
            );
        }
        let Some(session) = header(&req, "mcp-session-id")
            .filter(|s| self.sessions.lock().unwrap().contains_key(s))
        else {
            return jsonrpc_error(StatusCode::NOT_FOUND, "Session not found");
        };
        let (tx, body) = streamed(16);
        if self.mode == HttpMode::ListChangedFlood {
            tokio::spawn(async move {
                let event = Bytes::from_static(
                    b"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n",
                );
                while tx.send(event.clone()).await.is_ok() {}
            });
            return respond(StatusCode::OK, "text/event-stream", body);
        }
        if let Some(last) = header(&req, "last-event-id") {
            self.stats.lock().unwrap().last_event_ids.push(last.clone());
            if self.mode == HttpMode::DeadResume {
                return respond(StatusCode::OK, "text/event-stream", full(Bytes::new()));
            }
            let log = last
                .split_once('-')
                .and_then(|(s, n)| Some((s.parse::<u64>().ok()?, n.parse::<usize>().ok()?)));
            if let Some((stream, from)) = log
                && let Some(log) = self.logs.lock().unwrap().get(&stream).cloned()
            {
                tokio::spawn(replay(log, from.saturating_sub(1), tx));
                return respond(StatusCode::OK, "text/event-stream", body);
            }
        }
        let stream = self.next.fetch_add(1, Ordering::Relaxed);
        self.open_stream(
            session,
            false,
            stream,
            format!("id: {stream}-0\nretry: 100\ndata: \n\n"),
            tx,
            body,
        )
    }

    /// Makes `tx` the session's stream for messages the server starts, after `first`; the
    /// session is made if `create`, and otherwise must still exist.
    fn open_stream(
        &self,
        session: String,
        create: bool,
        stream: u64,
        first: String,
        tx: Chunks,
        body: Body,
    ) -> Response<Body> {
        let _ = tx.try_send(Bytes::from(first));
        let out = Arc::new(SseOut {
            request: None,
            stream,
            next: AtomicU64::new(1),
            tx: Mutex::new(Some(tx)),
            log: None,
        });
        {
            // Checked again under the lock: a session forgotten since the GET came in (by
            // `expire-*` modes) stays forgotten.
            let mut sessions = self.sessions.lock().unwrap();
            match sessions.get_mut(&session) {
                Some(slot) => *slot = Some(out),
                None if create => {
                    sessions.insert(session, Some(out));
                }
                None => return jsonrpc_error(StatusCode::NOT_FOUND, "Session not found"),
            }
        }
        self.stats.lock().unwrap().streams_opened += 1;
        respond(StatusCode::OK, "text/event-stream", body)
    }

    fn open_legacy(self: Arc<Self>) -> Response<Body> {
        let session = format!("legacy-{}", self.next.fetch_add(1, Ordering::Relaxed));
        let (tx, body) = streamed(16);
        let endpoint = format!("event: endpoint\ndata: /messages?session={session}\n\n");
        let stream = self.next.fetch_add(1, Ordering::Relaxed);
        self.open_stream(session, true, stream, endpoint, tx, body)
    }

    async fn post_legacy(self: Arc<Self>, req: Request<Incoming>) -> Response<Body> {
        self.stats.lock().unwrap().posts += 1;
        let query = req.uri().query().unwrap_or("").to_string();
        let session = query
            .split('&')
            .find_map(|kv| kv.strip_prefix("session="))
            .map(str::to_string);
        let stream = session
            .as_deref()
            .and_then(|s| self.sessions.lock().unwrap().get(s).cloned().flatten());
        let Some(stream) = stream else {
            return respond(StatusCode::NOT_FOUND, "text/plain", full("unknown session"));
        };
        let Ok(body) = req.into_body().collect().await.map(|b| b.to_bytes()) else {
            return respond(
                StatusCode::BAD_REQUEST,
                "text/plain",
                full("unreadable body"),
            );
        };
        match Message::parse(&body) {
            Ok(message) => {
                if matches!(&message, Message::Request(r) if r.method == "initialize") {
                    self.stats.lock().unwrap().initializations += 1;
                }
                self.receive(message, stream);
                respond(StatusCode::ACCEPTED, "text/plain", full("Accepted"))
            }
            Err(e) => respond(StatusCode::BAD_REQUEST, "text/plain", full(e.to_string())),
        }
    }
}

/// Replays a logged stream from event index `from` and follows it until its response.
async fn replay(log: Arc<StreamLog>, from: usize, tx: Chunks) {
    let mut next = from;
    loop {
        let changed = log.changed.notified();
        let (pending, done) = {
            let events = log.events.lock().unwrap();
            (events.0[next.min(events.0.len())..].to_vec(), events.1)
        };
        for event in pending {
            next += 1;
            if tx.send(event).await.is_err() {
                return;
            }
        }
        if done {
            return;
        }
        let _ = tokio::time::timeout(Duration::from_secs(1), changed).await;
    }
}

fn header(req: &Request<Incoming>, name: &str) -> Option<String> {
    req.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}
