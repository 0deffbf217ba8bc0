//! What servers ask of the user or the embedder's model (elicitation, sampling), told which
//! server asks: the handlers of [`ManagerOptions`](crate::host::ManagerOptions), and a board
//! of waiting requests that publishes each as an [`Event::Request`] and takes its answer by id
//! (what the daemon's `/v1/mcp/events` and `/v1/mcp/requests/{id}`, and the panel, use).

use super::events::{Event, EventBus};
use crate::BoxFuture;
use crate::protocol::server_requests::{
    ElicitationAnswer, ElicitationKind, ElicitationRequest, SamplingAnswer, SamplingRequest,
};
use crate::wire::jsonrpc::{self, ErrorObject};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::oneshot;

/// Answers a server's `elicitation/create`, told the server's name; an `Err` goes to the
/// server as its JSON-RPC error. What [`ManagerOptions`](crate::host::ManagerOptions) keeps:
/// set it with
/// [`ManagerOptions::with_elicitation`](crate::host::ManagerOptions::with_elicitation).
pub type ElicitationHandler = Arc<
    dyn Fn(String, ElicitationRequest) -> BoxFuture<'static, Result<ElicitationAnswer, ErrorObject>>
        + Send
        + Sync,
>;

/// Answers a server's `sampling/createMessage`, told the server's name; an `Err` goes to the
/// server as its JSON-RPC error. What [`ManagerOptions`](crate::host::ManagerOptions) keeps:
/// set it with [`ManagerOptions::with_sampling`](crate::host::ManagerOptions::with_sampling).
pub type SamplingHandler = Arc<
    dyn Fn(String, SamplingRequest) -> BoxFuture<'static, Result<SamplingAnswer, ErrorObject>>
        + Send
        + Sync,
>;

/// The JSON-RPC error code of a request the user (or no one) declined.
pub const DECLINED: i64 = -1;

/// How long a request waits for an answer by default.
pub const DEFAULT_EXPIRY: Duration = Duration::from_secs(300);

/// Most requests waiting at once, all servers together; past it a server's request is
/// refused, unless that server has nothing waiting (so a few hostile servers cannot take
/// every slot).
pub const MAX_WAITING: usize = 64;

/// Most requests of one server waiting at once; more are refused.
pub const MAX_WAITING_PER_SERVER: usize = 16;

/// Most bytes kept of one server's waiting requests (as [`Asked::footprint`] measures them);
/// a request that would pass it is refused.
pub const MAX_SERVER_WAITING_BYTES: usize = 16 << 20;

/// Most bytes kept of all waiting requests together; past it a server's request is refused,
/// unless that server has nothing waiting.
pub const MAX_WAITING_BYTES: usize = 48 << 20;

/// A request on the board.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Asked {
    /// An elicitation: a form to fill in, or a URL to visit.
    Elicitation(ElicitationRequest),
    /// A message for the embedder's model to write.
    Sampling(SamplingRequest),
}

impl Asked {
    /// `elicitation` or `sampling`.
    pub fn kind(&self) -> &'static str {
        match self {
            Asked::Elicitation(_) => "elicitation",
            Asked::Sampling(_) => "sampling",
        }
    }

    /// About how many bytes the request holds in memory: its params as sent and what was
    /// read from them, each JSON value counted at what a parsed one costs (not its text, which
    /// can be far smaller: `0,` is two bytes).
    pub fn footprint(&self) -> usize {
        match self {
            Asked::Elicitation(request) => footprint(&request.raw),
            Asked::Sampling(request) => request
                .messages
                .iter()
                .flat_map(|m| &m.content)
                .fold(footprint(&request.raw), |n, block| {
                    n.saturating_add(footprint(block))
                }),
        }
    }
}

/// What a parsed JSON value costs: the value itself, and the text of its strings and keys.
fn footprint(value: &Value) -> usize {
    const VALUE: usize = std::mem::size_of::<Value>();
    // A map entry holds its key (a `String`) beside the value, in a tree node.
    const ENTRY: usize = std::mem::size_of::<String>() + VALUE;
    match value {
        Value::String(text) => VALUE + text.len(),
        Value::Array(items) => items
            .iter()
            .fold(VALUE, |n, v| n.saturating_add(footprint(v))),
        Value::Object(map) => map.iter().fold(VALUE, |n, (key, v)| {
            n.saturating_add(ENTRY + key.len())
                .saturating_add(footprint(v))
        }),
        _ => VALUE,
    }
}

/// A request waiting for an answer.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct WaitingRequest {
    /// Its id on the board.
    pub id: String,
    /// The server that asks.
    pub server: String,
    /// What it asks.
    pub asked: Asked,
}

/// The answer to a waiting request, as a user or an API caller gives it.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// Accepted: for an elicitation, the form's values (an empty map for a URL); for
    /// sampling, the message the model wrote (`role`, `content`, `model`, `stopReason`, as
    /// the protocol's sampling result).
    Accept(Value),
    /// Refused.
    Decline,
    /// Dismissed.
    Cancel,
}

/// Why an answer was not taken.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReplyError {
    /// No request waits under this id: unknown, answered already, or expired.
    Unknown(String),
    /// The answer does not fit the request (names the field).
    Invalid(String),
}

impl fmt::Display for ReplyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplyError::Unknown(id) => write!(
                f,
                "no request waits under id {id:?}: it is unknown, was answered already, or expired"
            ),
            ReplyError::Invalid(why) => write!(f, "the answer does not fit the request: {why}"),
        }
    }
}

impl std::error::Error for ReplyError {}

enum Answer {
    Elicitation(ElicitationAnswer),
    Sampling(SamplingAnswer),
    Refused(ErrorObject),
}

struct Entry {
    waiting: WaitingRequest,
    /// Its [`Asked::footprint`].
    size: usize,
    /// What a listener is shown of it ([`event_params`], bounded).
    shown: Value,
    answer: oneshot::Sender<Answer>,
}

struct Board {
    events: EventBus,
    expiry: Duration,
    next: AtomicU64,
    waiting: Mutex<HashMap<String, Entry>>,
}

/// Server requests waiting for an answer, each published on the event bus as an
/// [`Event::Request`] and answered by id with [`PendingRequests::reply`]. A request is
/// refused at once when no one listens on the bus (saying so); refused, with a JSON-RPC
/// error that says which bound, when its server has [`MAX_WAITING_PER_SERVER`] waiting or
/// would pass [`MAX_SERVER_WAITING_BYTES`], or when [`MAX_WAITING`] or
/// [`MAX_WAITING_BYTES`] are reached and its server has some waiting already (a server with
/// nothing waiting always gets a slot); and cancelled after its expiry (an elicitation gets
/// `cancel`, sampling an error), with an [`Event::RequestEnded`]. Cloning shares the board.
#[derive(Clone)]
pub struct PendingRequests {
    board: Arc<Board>,
}

impl fmt::Debug for PendingRequests {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PendingRequests")
            .field("expiry", &self.board.expiry)
            .field("waiting", &self.waiting().len())
            .finish()
    }
}

impl PendingRequests {
    /// A board publishing on `events`, whose requests wait at most `expiry`.
    pub fn new(events: EventBus, expiry: Duration) -> PendingRequests {
        PendingRequests {
            board: Arc::new(Board {
                events,
                expiry,
                next: AtomicU64::new(1),
                waiting: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// The handler that puts a server's elicitation on this board, for
    /// [`ManagerOptions::with_elicitation`](crate::host::ManagerOptions::with_elicitation).
    pub fn elicitation_handler(
        &self,
    ) -> impl Fn(
        String,
        ElicitationRequest,
    ) -> BoxFuture<'static, Result<ElicitationAnswer, ErrorObject>>
    + Send
    + Sync
    + 'static {
        let board = self.clone();
        move |server, request| {
            let board = board.clone();
            Box::pin(async move {
                match board.wait(server, Asked::Elicitation(request)).await {
                    Answer::Elicitation(answer) => Ok(answer),
                    Answer::Refused(e) => Err(e),
                    Answer::Sampling(_) => {
                        unreachable!("an elicitation gets an elicitation's answer")
                    }
                }
            })
        }
    }

    /// The handler that puts a server's sampling request on this board, for
    /// [`ManagerOptions::with_sampling`](crate::host::ManagerOptions::with_sampling).
    pub fn sampling_handler(
        &self,
    ) -> impl Fn(String, SamplingRequest) -> BoxFuture<'static, Result<SamplingAnswer, ErrorObject>>
    + Send
    + Sync
    + 'static {
        let board = self.clone();
        move |server, request| {
            let board = board.clone();
            Box::pin(async move {
                match board.wait(server, Asked::Sampling(request)).await {
                    Answer::Sampling(answer) => Ok(answer),
                    Answer::Refused(e) => Err(e),
                    Answer::Elicitation(_) => unreachable!("sampling gets a sampling answer"),
                }
            })
        }
    }

    /// The requests waiting now as their [`Event::Request`]s, oldest first: each request's
    /// params bounded as an event's are ([`MAX_EVENT_BYTES`](super::events::MAX_EVENT_BYTES)),
    /// so the list stays small whatever servers ask; [`PendingRequests::get`] has one whole.
    pub fn waiting_events(&self) -> Vec<Event> {
        let waiting = self.board.waiting.lock().expect("board lock");
        let mut all: Vec<(u64, Event)> = waiting
            .values()
            .map(|e| {
                let event = Event::Request {
                    server: e.waiting.server.clone(),
                    id: e.waiting.id.clone(),
                    kind: e.waiting.asked.kind(),
                    params: e.shown.clone(),
                };
                (e.waiting.id.parse::<u64>().unwrap_or(u64::MAX), event)
            })
            .collect();
        drop(waiting);
        all.sort_by_key(|(id, _)| *id);
        all.into_iter().map(|(_, event)| event).collect()
    }

    /// The requests waiting now, oldest first.
    pub fn waiting(&self) -> Vec<WaitingRequest> {
        let waiting = self.board.waiting.lock().expect("board lock");
        let mut all: Vec<WaitingRequest> = waiting.values().map(|e| e.waiting.clone()).collect();
        all.sort_by_key(|w| w.id.parse::<u64>().unwrap_or(u64::MAX));
        all
    }

    /// One waiting request.
    pub fn get(&self, id: &str) -> Option<WaitingRequest> {
        let waiting = self.board.waiting.lock().expect("board lock");
        waiting.get(id).map(|e| e.waiting.clone())
    }

    /// Answers a waiting request. An answer that does not fit (a form's values against its
    /// schema, a sampled message without `content` or `model`) is refused and the request
    /// keeps waiting.
    pub fn reply(&self, id: &str, reply: Reply) -> Result<(), ReplyError> {
        let mut waiting = self.board.waiting.lock().expect("board lock");
        let entry = waiting
            .get(id)
            .ok_or_else(|| ReplyError::Unknown(id.to_string()))?;
        let answer = answer_of(&entry.waiting.asked, reply)?;
        let entry = waiting.remove(id).expect("found above");
        drop(waiting);
        // The server's call may have ended meanwhile: then no one takes the answer.
        let _ = entry.answer.send(answer);
        Ok(())
    }

    async fn wait(&self, server: String, asked: Asked) -> Answer {
        let board = &self.board;
        let kind = asked.kind();
        if board.events.listeners() == 0 {
            tracing::warn!(server = %server, "declined its {kind} request: no one is connected to answer it");
            return Answer::Refused(ErrorObject::new(
                DECLINED,
                format!(
                    "declined: no one is connected to the client to answer this {kind} request"
                ),
            ));
        }
        let (sender, receiver) = oneshot::channel();
        let id = board.next.fetch_add(1, Ordering::Relaxed).to_string();
        let size = asked.footprint();
        let shown = event_params(&asked);
        let is_elicitation = matches!(asked, Asked::Elicitation(_));
        {
            let mut waiting = board.waiting.lock().expect("board lock");
            if let Some(refusal) = admission(&waiting, &server, size, kind) {
                drop(waiting);
                tracing::warn!(server = %server, "refused its {kind} request: {}", refusal.message);
                return Answer::Refused(refusal);
            }
            let request = WaitingRequest {
                id: id.clone(),
                server: server.clone(),
                asked,
            };
            waiting.insert(
                id.clone(),
                Entry {
                    waiting: request,
                    size,
                    shown: shown.clone(),
                    answer: sender,
                },
            );
        }
        // Taken off the board however the wait ends (answered, expired, or the server's call
        // dropped it), so an id is never answered twice.
        let mut guard = Waiting {
            board: board.clone(),
            id: id.clone(),
            server: server.clone(),
            reason: "the server stopped waiting for it",
        };
        board.events.publish(Event::Request {
            server,
            id,
            kind,
            params: shown,
        });
        match tokio::time::timeout(board.expiry, receiver).await {
            Ok(Ok(answer)) => {
                guard.reason = "";
                answer
            }
            Ok(Err(_)) => Answer::Refused(ErrorObject::new(DECLINED, "the request was dropped")),
            Err(_) => {
                guard.reason = "no answer came in time: cancelled";
                let secs = board.expiry.as_secs();
                if is_elicitation {
                    Answer::Elicitation(ElicitationAnswer::Cancel)
                } else {
                    Answer::Refused(ErrorObject::new(
                        DECLINED,
                        format!("cancelled: no answer came within {secs} s"),
                    ))
                }
            }
        }
    }
}

/// Takes a request off the board when its wait ends, and says why unless it was answered.
struct Waiting {
    board: Arc<Board>,
    id: String,
    server: String,
    reason: &'static str,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        self.board
            .waiting
            .lock()
            .expect("board lock")
            .remove(&self.id);
        if !self.reason.is_empty() {
            self.board.events.publish(Event::RequestEnded {
                server: std::mem::take(&mut self.server),
                id: std::mem::take(&mut self.id),
                reason: self.reason.to_string(),
            });
        }
    }
}

/// Why a request of `server` that holds `size` bytes cannot wait on the board now, if it
/// cannot: the error its server gets.
fn admission(
    waiting: &HashMap<String, Entry>,
    server: &str,
    size: usize,
    kind: &str,
) -> Option<ErrorObject> {
    let (mut mine, mut my_bytes, mut all_bytes) = (0, 0usize, 0usize);
    for entry in waiting.values() {
        all_bytes = all_bytes.saturating_add(entry.size);
        if entry.waiting.server == server {
            mine += 1;
            my_bytes = my_bytes.saturating_add(entry.size);
        }
    }
    let mib = |bytes: usize| bytes >> 20;
    let (code, why) = if mine >= MAX_WAITING_PER_SERVER {
        let why = format!(
            "{mine} of this server's requests already wait for an answer, the most one server may have waiting"
        );
        (DECLINED, why)
    } else if my_bytes.saturating_add(size) > MAX_SERVER_WAITING_BYTES {
        let why = format!(
            "the request holds about {size} bytes, and with this server's {mine} waiting ones that passes the {} MiB kept of one server's requests",
            mib(MAX_SERVER_WAITING_BYTES)
        );
        (jsonrpc::INVALID_REQUEST, why)
    } else if mine > 0 && waiting.len() >= MAX_WAITING {
        (
            DECLINED,
            format!("{MAX_WAITING} requests of all servers already wait for an answer"),
        )
    } else if mine > 0 && all_bytes.saturating_add(size) > MAX_WAITING_BYTES {
        let why = format!(
            "the requests waiting for an answer hold the {} MiB this client keeps of them all",
            mib(MAX_WAITING_BYTES)
        );
        (jsonrpc::INVALID_REQUEST, why)
    } else {
        return None;
    };
    Some(ErrorObject::new(
        code,
        format!("{kind} request refused: {why}"),
    ))
}

/// What a listener is shown of a request: its params as sent, and for a URL its origin;
/// bounded as an event is ([`super::events::bounded`]), and copied only when within it.
pub(crate) fn event_params(asked: &Asked) -> Value {
    let (raw, origin) = params_of(asked);
    if let Some(omitted) = super::events::omitted(raw) {
        return omitted;
    }
    with_origin(raw.clone(), origin)
}

/// A request's params whole, as sent, and for a URL its origin (what `GET
/// /v1/mcp/requests/{id}` shows).
#[cfg(feature = "api")]
pub(crate) fn whole_params(asked: &Asked) -> Value {
    let (raw, origin) = params_of(asked);
    with_origin(raw.clone(), origin)
}

/// A request's params as sent, and for a URL its origin.
fn params_of(asked: &Asked) -> (&Value, Option<&String>) {
    match asked {
        Asked::Elicitation(request) => match &request.kind {
            ElicitationKind::Url(url) => (&request.raw, Some(&url.origin)),
            ElicitationKind::Form(_) => (&request.raw, None),
        },
        Asked::Sampling(request) => (&request.raw, None),
    }
}

fn with_origin(mut params: Value, origin: Option<&String>) -> Value {
    if let (Some(origin), Value::Object(map)) = (origin, &mut params) {
        map.insert("origin".into(), Value::String(origin.clone()));
    }
    params
}

fn answer_of(asked: &Asked, reply: Reply) -> Result<Answer, ReplyError> {
    match (asked, reply) {
        (Asked::Elicitation(request), Reply::Accept(content)) => {
            let content = match content {
                Value::Null => Map::new(),
                Value::Object(map) => map,
                _ => return Err(ReplyError::Invalid("content must be an object".into())),
            };
            let answer = ElicitationAnswer::Accept(content);
            request
                .check(&answer)
                .map_err(|e| ReplyError::Invalid(e.0))?;
            Ok(Answer::Elicitation(answer))
        }
        (Asked::Elicitation(_), Reply::Decline) => {
            Ok(Answer::Elicitation(ElicitationAnswer::Decline))
        }
        (Asked::Elicitation(_), Reply::Cancel) => {
            Ok(Answer::Elicitation(ElicitationAnswer::Cancel))
        }
        (Asked::Sampling(_), Reply::Accept(message)) => Ok(Answer::Sampling(sampled(message)?)),
        (Asked::Sampling(_), Reply::Decline) => Ok(Answer::Refused(ErrorObject::new(
            DECLINED,
            "the user declined the sampling request",
        ))),
        (Asked::Sampling(_), Reply::Cancel) => Ok(Answer::Refused(ErrorObject::new(
            DECLINED,
            "the user cancelled the sampling request",
        ))),
    }
}

/// A sampled message given as the protocol's result (`role`, `content`, `model`,
/// `stopReason`).
fn sampled(message: Value) -> Result<SamplingAnswer, ReplyError> {
    let invalid = |why: &str| ReplyError::Invalid(why.to_string());
    let content = match message.get("content") {
        Some(Value::Array(blocks)) if !blocks.is_empty() => blocks.clone(),
        Some(block @ Value::Object(_)) => vec![block.clone()],
        _ => {
            return Err(invalid(
                "\"content\" must be a content block or a list of them",
            ));
        }
    };
    if content
        .iter()
        .any(|b| b.get("type").and_then(Value::as_str).is_none())
    {
        return Err(invalid("each block of \"content\" needs a \"type\""));
    }
    match message.get("role").and_then(Value::as_str) {
        None | Some("assistant") => {}
        Some(_) => return Err(invalid("\"role\" must be \"assistant\"")),
    }
    let model = message
        .get("model")
        .and_then(Value::as_str)
        .filter(|m| !m.is_empty())
        .ok_or_else(|| invalid("\"model\" (the model that wrote it) is required"))?;
    Ok(SamplingAnswer {
        content,
        model: model.to_string(),
        stop_reason: message
            .get("stopReason")
            .and_then(Value::as_str)
            .map(String::from),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A URL question of about `pad` bytes.
    fn question(pad: usize) -> Asked {
        let params = json!({"mode": "url", "message": "m", "url": "https://pay.example/",
                            "_meta": {"pad": "x".repeat(pad)}});
        Asked::Elicitation(ElicitationRequest::from_params(params).unwrap())
    }

    /// Asks `count` questions of `server` and waits until the board has `then` waiting.
    async fn ask(board: &PendingRequests, server: &str, count: usize, pad: usize, then: usize) {
        for _ in 0..count {
            let (board, server) = (board.clone(), server.to_string());
            tokio::spawn(async move { board.wait(server, question(pad)).await });
        }
        while board.waiting().len() < then {
            tokio::task::yield_now().await;
        }
    }

    /// The refusal one more question of `server` gets at once.
    async fn refused(board: &PendingRequests, server: &str, pad: usize) -> String {
        match board.wait(server.into(), question(pad)).await {
            Answer::Refused(e) => e.message,
            _ => panic!("{server}'s question was not refused"),
        }
    }

    #[tokio::test]
    async fn no_server_takes_every_slot_and_a_server_with_none_gets_one() {
        let events = EventBus::new();
        let _listener = events.subscribe();
        let board = PendingRequests::new(events, Duration::from_secs(60));
        ask(&board, "a", 16, 10, 16).await;
        let why = refused(&board, "a", 10).await;
        assert!(
            why.contains("16 of this server's requests already wait"),
            "{why}"
        );
        for (i, server) in ["b", "c", "d"].into_iter().enumerate() {
            ask(&board, server, 16, 10, 32 + 16 * i).await;
        }
        // The board is full, but `e` has nothing waiting: its first question waits.
        ask(&board, "e", 1, 10, 65).await;
        let why = refused(&board, "e", 10).await;
        assert!(why.contains("64 requests of all servers"), "{why}");
        assert_eq!(board.waiting_events().len(), 65);
    }

    #[tokio::test]
    async fn what_questions_hold_is_bounded_by_server_and_in_all() {
        let events = EventBus::new();
        let _listener = events.subscribe();
        let board = PendingRequests::new(events, Duration::from_secs(60));
        let pad = 3_000_000;
        ask(&board, "a", 5, pad, 5).await;
        let why = refused(&board, "a", pad).await;
        assert!(
            why.contains("16 MiB kept of one server's requests"),
            "{why}"
        );
        ask(&board, "b", 5, pad, 10).await;
        ask(&board, "c", 5, pad, 15).await;
        ask(&board, "d", 1, pad, 16).await;
        let why = refused(&board, "d", pad).await;
        assert!(
            why.contains("48 MiB this client keeps of them all"),
            "{why}"
        );
        // A small question of a server with nothing waiting still waits.
        ask(&board, "e", 1, 10, 17).await;
        // What is listed and published is bounded: each question's params are a note.
        for event in board.waiting_events() {
            let Event::Request { params, .. } = event else {
                panic!("a request")
            };
            assert!(params.to_string().len() < 4096, "{params}");
        }
    }
}
