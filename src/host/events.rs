//! What happens among the servers, as [`Event`]s: one stream that a daemon, a panel or an
//! embedder follows ([`crate::host::Manager::events`]).
//!
//! The stream is a bounded broadcast: publishing never waits, so a slow listener never
//! slows a server. A listener that falls more than [`EVENT_QUEUE`] events behind loses the
//! oldest ones and is told so by its next receive (`Lagged`).

use super::status::ServerState;
use crate::protocol::items::LogLevel;
use serde::Serialize;
use serde_json::Value;
use tokio::sync::broadcast;

/// How many events a listener may fall behind before it loses some. The bus keeps this many
/// whatever the listeners do, so with [`MAX_EVENT_BYTES`] it bounds the bus's memory.
pub const EVENT_QUEUE: usize = 256;

/// The most bytes of server data one event carries (a URI, a log message's data, a
/// question's params): past it the data is replaced by a note of its size, and a waiting
/// question is read whole from [`PendingRequests::get`](crate::host::PendingRequests::get)
/// (the daemon's `GET /v1/mcp/requests/{id}`).
pub const MAX_EVENT_BYTES: usize = 64 * 1024;

/// `value` if its JSON is at most [`MAX_EVENT_BYTES`], else a note of its size.
pub(crate) fn bounded(value: Value) -> Value {
    omitted(&value).unwrap_or(value)
}

/// The note that stands for `value` in an event when its JSON is over [`MAX_EVENT_BYTES`]
/// (measured as it is written, not copied).
pub(crate) fn omitted(value: &Value) -> Option<Value> {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut len = Counter(0);
    serde_json::to_writer(&mut len, value).expect("a JSON value serializes");
    (len.0 > MAX_EVENT_BYTES).then(|| {
        let len = len.0;
        serde_json::json!({"omitted": format!("{len} bytes, over the {MAX_EVENT_BYTES} an event carries")})
    })
}

/// One thing that happened, about one server. In JSON: `{"type": ..., "server": ..., ...}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Event {
    /// The server's state changed (connected, failed, disconnected, removed ...).
    State {
        /// The server.
        server: String,
        /// Its new state; `None`: it was removed.
        state: Option<ServerState>,
        /// Its last error, if any.
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// One of the server's lists was read again after it said it changed.
    ListChanged {
        /// The server.
        server: String,
        /// `tools`, `resources` or `prompts`.
        list: &'static str,
        /// How many entries it has now (templates counted with resources).
        count: usize,
    },
    /// A resource the server was asked to follow changed (`notifications/resources/updated`).
    ResourceUpdated {
        /// The server.
        server: String,
        /// The resource.
        uri: String,
    },
    /// A log message of the server (`notifications/message`).
    Log {
        /// The server.
        server: String,
        /// Its severity.
        level: LogLevel,
        /// The logger's name, if given (server text).
        #[serde(skip_serializing_if = "Option::is_none")]
        logger: Option<String>,
        /// What it logged (server data).
        data: Value,
    },
    /// Progress of a call (from whoever made the call: the daemon reports its API's calls).
    Progress {
        /// The server.
        server: String,
        /// The caller's id of the call, if it gave one.
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// The tool, as registered.
        tool: String,
        /// How far along (the server's number), if it sent one.
        #[serde(skip_serializing_if = "Option::is_none")]
        progress: Option<f64>,
        /// Of how much, if known.
        #[serde(skip_serializing_if = "Option::is_none")]
        total: Option<f64>,
        /// A task's new status (`working`, `completed`, ...), when the call runs as a task.
        #[serde(skip_serializing_if = "Option::is_none")]
        status: Option<String>,
        /// The server's message (a task's status message), if any.
        #[serde(skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// A server asks something that waits for an answer (elicitation, sampling); the
    /// embedder that published it says how to answer.
    Request {
        /// The server.
        server: String,
        /// The id to answer it by.
        id: String,
        /// `elicitation` or `sampling`.
        kind: &'static str,
        /// What is asked: the request's params as the server sent them, and for a URL
        /// elicitation its `origin`.
        params: Value,
    },
    /// A waiting request ended without an answer from this stream's listeners (it expired,
    /// or the server's call ended).
    RequestEnded {
        /// The server.
        server: String,
        /// The request's id.
        id: String,
        /// Why.
        reason: String,
    },
}

impl Event {
    /// The server it is about.
    pub fn server(&self) -> &str {
        match self {
            Event::State { server, .. }
            | Event::ListChanged { server, .. }
            | Event::ResourceUpdated { server, .. }
            | Event::Log { server, .. }
            | Event::Progress { server, .. }
            | Event::Request { server, .. }
            | Event::RequestEnded { server, .. } => server,
        }
    }
}

/// The event stream: the manager publishes into it ([`ManagerOptions::events`]), so does a
/// [`PendingRequests`] board made with the same bus, and listeners subscribe. Cloning shares
/// it.
///
/// [`ManagerOptions::events`]: crate::host::ManagerOptions::events
/// [`PendingRequests`]: crate::host::PendingRequests
#[derive(Debug, Clone)]
pub struct EventBus(broadcast::Sender<Event>);

impl Default for EventBus {
    fn default() -> Self {
        EventBus(broadcast::Sender::new(EVENT_QUEUE))
    }
}

impl EventBus {
    /// A bus with no listener yet.
    pub fn new() -> EventBus {
        EventBus::default()
    }

    /// Sends an event to every listener; never waits (with no listener it is dropped).
    pub fn publish(&self, event: Event) {
        let _ = self.0.send(event);
    }

    /// A new listener, which gets every event published from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.0.subscribe()
    }

    /// How many listen now.
    pub fn listeners(&self) -> usize {
        self.0.receiver_count()
    }
}
