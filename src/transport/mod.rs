//! Transports move JSON-RPC messages between the client and one server.
//!
//! A transport is two halves: [`Transport`], which sends one message and closes the
//! connection, and an [`Inbound`] channel, on which it delivers every message the server sends
//! and, last, why the connection ended. The session above knows nothing of pipes or sockets.
//!
//! Every message is decoded while its bytes arrive ([`MessageDecoder`]): a result (a tool's, a
//! resource read's) is rendered and capped on the way, and no message is ever held whole past
//! [`Limits::max_message`], whatever its size.

#[cfg(feature = "http")]
pub mod http;
#[cfg(feature = "stdio")]
pub mod stdio;

use crate::error::Result;
use crate::wire::decode::Decoded;
#[cfg(any(feature = "stdio", feature = "http"))]
use crate::wire::decode::MessageDecoder;
use crate::wire::jsonrpc::{Id, Message};
use crate::wire::render::DEFAULT_CAP;
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A boxed, sendable future: what the crate's object-safe traits and stored callbacks return
/// (the HTTP transport's `Authorizer`, the host's confirm, elicitation and sampling handlers),
/// so that they can be kept as `dyn` values. Make one with `Box::pin(async move { ... })`.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a transport delivers to the session.
#[derive(Debug)]
pub enum Inbound {
    /// One JSON-RPC message, decoded as it arrived.
    Message(Decoded),
    /// Several messages read together, in the order they came: one hand-over for all.
    Batch(Vec<Decoded>),
    /// A request the transport could not complete (an HTTP error, a lost stream): the
    /// session fails it with this error.
    Failed(Id, crate::error::Error),
    /// The connection ended; nothing follows. The text says why.
    Closed(String),
}

/// Bytes kept of the messages in one [`Inbound`] item past which it is large: it is handed
/// over only once the channel is empty ([`hand_over`]).
#[cfg(any(feature = "stdio", feature = "http"))]
const LARGE_ITEM: usize = 1 << 20;

#[cfg(any(feature = "stdio", feature = "http"))]
impl Inbound {
    /// Bytes kept whole of its messages ([`Decoded::raw`]).
    fn kept_bytes(&self) -> usize {
        let kept = |d: &Decoded| d.raw.as_ref().map_or(0, Vec::len);
        match self {
            Inbound::Message(d) => kept(d),
            Inbound::Batch(messages) => messages.iter().map(kept).sum(),
            _ => 0,
        }
    }
}

/// Sends `item` to the session on the transport's channel; fails once the session is gone.
/// A large item (over 1 MiB of messages kept whole) waits until the channel is empty: its 64
/// places would otherwise hold 64 messages of up to 4 MiB each, read ahead of a session that
/// parses them one by one (a server's burst of large requests, say), so at most one large
/// item waits there.
#[cfg(any(feature = "stdio", feature = "http"))]
pub(crate) async fn hand_over(
    tx: &tokio::sync::mpsc::Sender<Inbound>,
    item: Inbound,
) -> std::result::Result<(), ()> {
    if item.kept_bytes() > LARGE_ITEM {
        let mut all = tx.reserve_many(tx.max_capacity()).await.map_err(drop)?;
        all.next().expect("one place at least").send(item);
        return Ok(());
    }
    tx.send(item).await.map_err(drop)
}

/// What takes the session's responses from a transport's reader without the [`Inbound`]
/// channel: the reader hands the responses it decodes straight to the session (which fills
/// their replies there and then, one task hop less), as long as nothing it sent on the channel
/// is still unhandled there, so that no message overtakes another.
#[derive(Default)]
pub struct Shortcut {
    /// Items sent on the channel that the session has not finished handling.
    queued: AtomicUsize,
    /// Set by the session.
    take: OnceLock<TakeResponses>,
}

/// Takes the responses at the front of a list of messages (the session's side of a
/// [`Shortcut`]).
pub(crate) type TakeResponses = Box<dyn Fn(&mut Vec<Decoded>) + Send + Sync>;

// Only the stdio transport's reader takes the shortcut for now.
#[cfg_attr(not(feature = "stdio"), allow(dead_code))]
impl Shortcut {
    /// Sets what takes the responses (the session does, once).
    pub(crate) fn install(&self, take: TakeResponses) {
        let _ = self.take.set(take);
    }

    /// Hands the responses at the front of `messages` to the session, if nothing sent on the
    /// channel waits there; what is left goes on the channel.
    pub(crate) fn take(&self, messages: &mut Vec<Decoded>) {
        if self.queued.load(Ordering::Acquire) == 0
            && let Some(take) = self.take.get()
        {
            take(messages);
        }
    }

    /// Counts an item about to be sent on the channel.
    pub(crate) fn queued(&self) {
        self.queued.fetch_add(1, Ordering::AcqRel);
    }

    /// Counts an item of the channel handled by the session.
    pub(crate) fn handled(&self) {
        self.queued.fetch_sub(1, Ordering::AcqRel);
    }
}

impl std::fmt::Debug for Shortcut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shortcut")
            .field("queued", &self.queued)
            .field("installed", &self.take.get().is_some())
            .finish()
    }
}

/// One message for the server: what it is, its bytes, and the extra headers of a request, so
/// that no transport reads its own outgoing bytes again to learn what they are.
#[derive(Debug, Clone)]
pub struct Outbound {
    /// What the message is.
    pub kind: Kind,
    /// Its bytes, compact JSON without framing.
    pub bytes: Vec<u8>,
    /// A stateless request's headers, finished by the protocol layer (`MCP-Protocol-Version`,
    /// `Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`), for transports that have headers.
    pub headers: Vec<(String, String)>,
}

/// What an outgoing message is, as a transport routes it.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// A request.
    Request {
        /// The request's id.
        id: Id,
        /// Its method.
        method: String,
        /// Whether it is a request of the stateless era (its headers are in
        /// [`Outbound::headers`]).
        stateless: bool,
    },
    /// A notification.
    Notification {
        /// Its method.
        method: String,
    },
    /// A response to a request of the server.
    Response,
}

impl Outbound {
    /// `message`, serialized, without extra headers.
    pub fn new(message: &Message) -> Self {
        let kind = match message {
            Message::Request(r) => {
                return Outbound::request(r.id.clone(), &r.method, r.params.as_ref(), None);
            }
            Message::Notification(n) => Kind::Notification {
                method: n.method.clone(),
            },
            Message::Response(_) => Kind::Response,
        };
        Outbound {
            kind,
            bytes: message.to_bytes(),
            headers: Vec::new(),
        }
    }

    /// A request, serialized from its borrowed parts (a call's arguments are not copied),
    /// with the headers the protocol layer built for it: `Some` (even empty) makes it a
    /// stateless request, whose headers an HTTP transport sends and whose exchange it may
    /// close to cancel it.
    pub fn request(
        id: Id,
        method: &str,
        params: Option<&Value>,
        headers: Option<Vec<(String, String)>>,
    ) -> Self {
        Outbound {
            bytes: crate::wire::jsonrpc::request_bytes(&id, method, params),
            kind: Kind::Request {
                id,
                method: method.to_string(),
                stateless: headers.is_some(),
            },
            headers: headers.unwrap_or_default(),
        }
    }
}

/// The sending half of a connection to one server.
pub trait Transport: Send + Sync + 'static {
    /// Sends one JSON-RPC message.
    fn send(&self, message: Outbound) -> BoxFuture<'_, Result<()>>;
    /// Cancels the request `id` in flight; `notice` is its `notifications/cancelled`. By
    /// default the notice is sent; a transport that can end the request's own exchange
    /// (modern HTTP: close its stream) does that instead.
    fn cancel(&self, id: i64, notice: Outbound) -> BoxFuture<'_, ()> {
        let _ = id;
        Box::pin(async move {
            let _ = self.send(notice).await;
        })
    }
    /// Ends the connection and releases everything it holds; safe to call twice.
    fn close(&self) -> BoxFuture<'_, ()>;
    /// A short name of the transport for status lines: `stdio`, `http`.
    fn kind(&self) -> &'static str;
    /// The server's process id (also its process group), for transports that run one.
    fn pid(&self) -> Option<u32> {
        None
    }
    /// The [`Shortcut`] of a transport whose reader hands responses to the session without
    /// the channel; `None` (the default): everything comes on the channel.
    fn shortcut(&self) -> Option<std::sync::Arc<Shortcut>> {
        None
    }
    /// Where the session registers the requests whose answers this transport keeps whole
    /// past the render cap ([`WholeReplies`]); `None` (the default): it cannot.
    fn whole_replies(&self) -> Option<std::sync::Arc<WholeReplies>> {
        None
    }
    /// Which authorization context the last exchange was under: a keyed hash of the
    /// credentials an HTTP `Authorizer` gave it, so a new
    /// access token is a new context; 0 when there are none (stdio, fixed headers). A
    /// result the server marked `cacheScope: "private"` is reused only within one context.
    fn auth_context(&self) -> u64 {
        0
    }
}

/// How much of an incoming message is kept.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Cap on the rendered output of one tool result or resource read, in bytes.
    pub output_cap: usize,
    /// Largest message kept whole (to be parsed); a larger one is only rendered (a tool
    /// result, a resource read) or reported, never held. A result whose text passes
    /// `output_cap` is not kept whole either: it is read from its rendering. The answers
    /// registered in `whole` are the exception.
    pub max_message: usize,
    /// The requests whose answers are kept whole past both, each up to a bound of its own:
    /// shared by the transport's readers and the session.
    pub whole: std::sync::Arc<WholeReplies>,
}

/// The largest message kept whole by default: 4 MiB.
pub const DEFAULT_MAX_MESSAGE: usize = 4 << 20;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            output_cap: DEFAULT_CAP,
            max_message: DEFAULT_MAX_MESSAGE,
            whole: Default::default(),
        }
    }
}

/// Most requests whose answers are awaited whole at once on one connection
/// ([`WholeReplies`]): what they may hold together is this many times their bound.
pub const MAX_WHOLE_REPLIES: usize = 4;

/// The requests in flight whose answers are kept whole up to a bound of their own, past the
/// render cap and [`Limits::max_message`]: a UI resource's HTML, which is for a host to
/// render, not for a model to read. The session registers a request before sending it
/// (its `register`) and the registration ends when its guard is dropped (the
/// request answered, failed, timed out or dropped), so none outlives its request.
///
/// While any is registered, a message that starts arriving is kept up to the largest bound;
/// when it ends, only the answer to a registered request keeps bytes past the usual limits.
#[derive(Debug, Default)]
pub struct WholeReplies {
    /// Each registered request's id and bound, at most [`MAX_WHOLE_REPLIES`].
    awaited: std::sync::Mutex<Vec<(i64, usize)>>,
    /// How many are registered: read at each message's start, so the lock is taken only
    /// while one is.
    count: std::sync::atomic::AtomicUsize,
}

impl WholeReplies {
    /// Registers request `id`, whose answer is kept whole up to `max_bytes`; `None` when
    /// [`MAX_WHOLE_REPLIES`] are awaited already.
    pub(crate) fn register(
        self: &std::sync::Arc<Self>,
        id: i64,
        max_bytes: usize,
    ) -> Option<WholeReply> {
        let mut awaited = self.awaited.lock().expect("whole replies lock");
        if awaited.len() >= MAX_WHOLE_REPLIES {
            return None;
        }
        awaited.push((id, max_bytes));
        self.count
            .store(awaited.len(), std::sync::atomic::Ordering::Release);
        Some(WholeReply {
            replies: self.clone(),
            id,
        })
    }

    /// The largest bound registered, if any request is.
    fn largest(&self) -> Option<usize> {
        if self.count.load(std::sync::atomic::Ordering::Acquire) == 0 {
            return None;
        }
        let awaited = self.awaited.lock().expect("whole replies lock");
        awaited.iter().map(|(_, bound)| *bound).max()
    }

    /// The bound of the request `id` answers, if it is registered.
    fn bound_of(&self, id: Option<&Id>) -> Option<usize> {
        let Some(Id::Number(id)) = id else {
            return None;
        };
        let awaited = self.awaited.lock().expect("whole replies lock");
        awaited
            .iter()
            .find(|(i, _)| i == id)
            .map(|(_, bound)| *bound)
    }
}

/// A request registered in [`WholeReplies`]: dropping it ends the registration.
#[derive(Debug)]
pub(crate) struct WholeReply {
    replies: std::sync::Arc<WholeReplies>,
    id: i64,
}

impl Drop for WholeReply {
    fn drop(&mut self) {
        let mut awaited = self.replies.awaited.lock().expect("whole replies lock");
        awaited.retain(|(id, _)| *id != self.id);
        self.replies
            .count
            .store(awaited.len(), std::sync::atomic::Ordering::Release);
    }
}

/// Bytes of a message quoted when it cannot be decoded.
#[cfg(any(feature = "stdio", feature = "http"))]
const EXCERPT: usize = 200;

/// Messages that are not JSON warned about one by one; past them, one line says the rest are
/// skipped silently (a program that writes lines by the million, `yes`, must not flood the
/// log, nor spend its time writing it).
#[cfg(any(feature = "stdio", feature = "http"))]
const JUNK_WARNINGS: u32 = 5;

/// Decodes one message after another from pieces, warning about (and skipping) any that is
/// not JSON.
#[cfg(any(feature = "stdio", feature = "http"))]
pub(crate) struct Assembler {
    decoder: MessageDecoder,
    excerpt: Vec<u8>,
    fed: bool,
    /// Messages skipped as not JSON so far.
    skipped: u32,
    max_message: usize,
    whole: std::sync::Arc<WholeReplies>,
    /// Whether the current message has had a piece yet.
    started: bool,
    /// Whether the current message is kept past the usual limits, up to the largest bound of
    /// [`WholeReplies`] (some answer was awaited whole when it started).
    keeping_whole: bool,
}

#[cfg(any(feature = "stdio", feature = "http"))]
impl Assembler {
    pub(crate) fn new(limits: &Limits) -> Self {
        Assembler {
            decoder: MessageDecoder::new(limits.output_cap, limits.max_message),
            excerpt: Vec::new(),
            fed: false,
            skipped: 0,
            max_message: limits.max_message,
            whole: limits.whole.clone(),
            started: false,
            keeping_whole: false,
        }
    }

    /// More bytes of the current message.
    pub(crate) fn feed(&mut self, bytes: &[u8]) {
        if !self.started {
            // The answer to a request registered later cannot be this message: it started
            // before the request was sent.
            self.started = true;
            let largest = self.whole.largest();
            self.keeping_whole = largest.is_some();
            let raw_limit = largest.map_or(self.max_message, |n| n.max(self.max_message));
            self.decoder.set_raw_limit(raw_limit);
        }
        if self.excerpt.len() < EXCERPT {
            let take = bytes.len().min(EXCERPT - self.excerpt.len());
            self.excerpt.extend_from_slice(&bytes[..take]);
        }
        self.fed |= bytes.iter().any(|b| !b.is_ascii_whitespace());
        // An error is remembered by the decoder and reported by `finish`.
        let _ = self.decoder.feed(bytes);
        // A tool result or a read is read from its rendering; once that passes the cap, keeping its
        // bytes (up to `max_message` of them) would only cost copies and page faults.
        if self.decoder.rendered_past_cap() && !self.keeping_whole {
            self.decoder.forget_raw();
        }
    }

    /// Drops the current message unread (an SSE event that is not a message).
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn discard(&mut self) {
        self.decoder.take();
        self.excerpt.clear();
        self.fed = false;
        self.started = false;
    }

    /// Ends the current message: `None` if it was empty or not JSON (warned about).
    pub(crate) fn finish(&mut self, server: &str) -> Option<Decoded> {
        let decoder = self.decoder.take();
        self.started = false;
        let past_cap = decoder.rendered_past_cap();
        let decoded = match std::mem::take(&mut self.fed).then(|| decoder.finish()) {
            None => None,
            Some(Ok(mut decoded)) => {
                if self.keeping_whole {
                    // Kept past the usual limits: only an answer awaited whole stays so.
                    let answer = decoded.method.is_none();
                    let bound = answer.then(|| self.whole.bound_of(decoded.id.as_ref()));
                    let bound = bound.flatten();
                    let kept = match bound {
                        Some(bound) => decoded.len <= bound as u64,
                        None => decoded.len <= self.max_message as u64 && !past_cap,
                    };
                    if !kept {
                        decoded.raw = None;
                    }
                }
                Some(decoded)
            }
            Some(Err(e)) => {
                self.skipped = self.skipped.saturating_add(1);
                if self.skipped <= JUNK_WARNINGS {
                    let text = String::from_utf8_lossy(&self.excerpt);
                    tracing::warn!(
                        server = %server,
                        "skipping a message that is not JSON-RPC ({e}): {}; an MCP server sends nothing else (is it one, and does it log to stdout?)",
                        crate::safe_text::escape_controls(text.trim())
                    );
                }
                if self.skipped == JUNK_WARNINGS {
                    tracing::warn!(server = %server, "skipping any further message that is not JSON-RPC without a warning");
                }
                None
            }
        };
        // Cleared, not dropped: the next message reuses its room.
        self.excerpt.clear();
        decoded
    }
}

#[cfg(all(test, any(feature = "stdio", feature = "http")))]
mod tests {
    use super::*;

    fn assembled(message: &str, output_cap: usize) -> Decoded {
        let limits = Limits {
            output_cap,
            max_message: 1 << 20,
            ..Limits::default()
        };
        let mut assembler = Assembler::new(&limits);
        for piece in message.as_bytes().chunks(1000) {
            assembler.feed(piece);
        }
        assembler.finish("test").expect("a message")
    }

    #[test]
    fn a_tool_result_past_the_cap_is_read_from_its_rendering_alone() {
        let text = "x".repeat(4096);
        let result = format!(
            r#"{{"jsonrpc":"2.0","id":7,"result":{{"content":[{{"type":"text","text":"{text}"}}],"resultType":"complete"}}}}"#
        );
        let past = assembled(&result, 1024);
        assert_eq!(past.raw, None, "its bytes are not kept");
        let head = past.result.expect("the result's head is still read");
        assert_eq!(head.result_type.as_deref(), Some("complete"));
        let rendered = past.render.expect("a result").expect("rendered");
        assert_eq!(rendered.total, 4096);
        assert!(
            rendered
                .text
                .ends_with("[mcp output truncated: 4096 bytes total, 1024 kept]")
        );

        // Under the cap the bytes are kept, and so are those of a message that is not
        // rendered, however long its strings.
        let under = assembled(&result, 8192);
        assert_eq!(under.raw.as_deref(), Some(result.as_bytes()));
        let list = format!(
            r#"{{"jsonrpc":"2.0","id":8,"result":{{"tools":[{{"name":"t","description":"{text}"}}]}}}}"#
        );
        assert_eq!(assembled(&list, 1024).raw.as_deref(), Some(list.as_bytes()));
    }

    #[test]
    fn only_an_answer_awaited_whole_keeps_its_bytes_past_the_cap_and_the_message_limit() {
        let read = |id: u32, text: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"result":{{"contents":[{{"uri":"ui://a","text":"{text}"}}]}}}}"#
            )
        };
        let limits = Limits {
            output_cap: 1024,
            max_message: 4096,
            ..Limits::default()
        };
        let mut assembler = Assembler::new(&limits);
        let mut assemble = |message: &str| {
            for piece in message.as_bytes().chunks(1000) {
                assembler.feed(piece);
            }
            assembler.finish("test").expect("a message")
        };
        let (page, past_bound) = ("x".repeat(8000), "x".repeat(20_000));
        let awaited = limits.whole.register(7, 16_384).expect("room");
        assert!(
            limits.whole.register(8, 16_384).is_some(),
            "and dropped at once"
        );
        let whole = assemble(&read(7, &page));
        assert_eq!(whole.raw.as_deref(), Some(read(7, &page).as_bytes()));
        let rendered = whole.render.expect("a result").expect("rendered");
        assert_eq!((rendered.total, rendered.text.len() < 1100), (8000, true));
        // While it is awaited: another answer, a server's request under the same id, and the
        // awaited answer past its bound are read as usual.
        assert_eq!(assemble(&read(9, &page)).raw, None);
        let request =
            format!(r#"{{"jsonrpc":"2.0","id":7,"method":"ping","params":{{"p":"{page}"}}}}"#);
        assert_eq!(assemble(&request).raw, None);
        assert_eq!(assemble(&read(7, &past_bound)).raw, None);
        let small = read(9, "small");
        assert_eq!(assemble(&small).raw.as_deref(), Some(small.as_bytes()));
        drop(awaited);
        assert_eq!(
            assemble(&read(7, &page)).raw,
            None,
            "once no longer awaited"
        );
        let holds = (0..MAX_WHOLE_REPLIES as i64).map(|id| limits.whole.register(id, 1));
        let holds: Vec<_> = holds.collect();
        assert!(holds.iter().all(Option::is_some));
        assert!(
            limits.whole.register(99, 1).is_none(),
            "a bounded number at once"
        );
    }
}
