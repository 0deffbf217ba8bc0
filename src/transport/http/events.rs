//! SSE events and resumption: one stream's cursor (last event id, `retry`) and the reader
//! that turns its pieces into events, bounded.

use super::*;

/// The last event id and `retry` of one SSE stream, across its reconnections, and the ids
/// it has given (bounded), to drop what a resumption replays. A server replays only the
/// stream that was cut, so ids are told apart per stream: one that numbers each stream from
/// 0 (breaking the rule that ids are unique in a session) loses no message.
#[derive(Default)]
pub(super) struct Cursor {
    pub(super) last_event_id: Option<String>,
    pub(super) retry: Option<Duration>,
    seen: HashSet<String>,
    seen_order: VecDeque<String>,
}

impl Cursor {
    /// Records an event id; false if this stream gave it before (a replay).
    fn first_sight(&mut self, id: String) -> bool {
        if !self.seen.insert(id.clone()) {
            return false;
        }
        self.seen_order.push_back(id);
        if self.seen_order.len() > SEEN_EVENTS
            && let Some(old) = self.seen_order.pop_front()
        {
            self.seen.remove(&old);
        }
        true
    }
}

/// What one SSE event carried.
pub(super) enum EventData {
    /// A `message` event: the JSON-RPC message, decoded as it arrived.
    Message(Decoded),
    /// Any other event type: the start of its data as text (the `endpoint` of HTTP+SSE).
    Text(String),
}

/// Bytes of a non-message event's data kept as text.
pub(super) const EVENT_TEXT: usize = 4096;

/// Reads dispatched events from one SSE body; each event's data flows into a decoder as it
/// arrives, so no event is held whole.
pub(super) struct EventReader {
    body: Incoming,
    sse: SseDecoder,
    events: Events,
    ended: bool,
    /// The id of the previous event on this connection: an event without an `id` field of
    /// its own repeats it, and must not count as a replay.
    previous_id: Option<String>,
}

/// What the SSE decoder's pieces make: the message being decoded and the events dispatched.
/// A field of its own beside the decoder, so that the decoder's callback hands each piece of
/// data straight on while it still borrows the body's frame (no copy of the data).
struct Events {
    message: Assembler,
    server: String,
    /// The start of the current event's data, for events that are not messages.
    head: Vec<u8>,
    has_data: bool,
    ready: VecDeque<(String, Option<String>, EventData)>,
    retry: Option<u64>,
}

impl EventReader {
    pub(super) fn new(body: Incoming, inner: &Inner) -> Self {
        EventReader {
            body,
            sse: SseDecoder::new(),
            events: Events {
                message: Assembler::new(&inner.limits),
                server: inner.server.clone(),
                head: Vec::new(),
                has_data: false,
                ready: VecDeque::new(),
                retry: None,
            },
            ended: false,
            previous_id: None,
        }
    }

    /// The next event with data whose id was not seen before; `None` once the stream ends
    /// (cleanly or not). Updates the cursor as events pass.
    pub(super) async fn next(
        &mut self,
        inner: &Inner,
        cursor: &mut Cursor,
    ) -> Option<(String, EventData)> {
        loop {
            if let Some(ms) = self.events.retry.take() {
                cursor.retry = Some(Duration::from_millis(ms));
            }
            while let Some((event, id, data)) = self.events.ready.pop_front() {
                let fresh_id = id.is_some() && id != self.previous_id;
                if let Some(id) = id {
                    self.previous_id = Some(id.clone());
                    cursor.last_event_id = Some(id.clone());
                    if fresh_id && !cursor.first_sight(id) {
                        continue;
                    }
                }
                if !matches!(&data, EventData::Text(t) if t.is_empty()) {
                    return Some((event, data));
                }
            }
            if self.ended {
                return None;
            }
            let events = &mut self.events;
            match self.body.frame().await {
                Some(Ok(frame)) => {
                    if let Ok(chunk) = frame.into_data() {
                        self.sse.push(&chunk, &mut |p| events.absorb(p));
                    }
                }
                Some(Err(e)) => {
                    tracing::debug!(server = %inner.server, "an SSE stream broke: {e}");
                    self.ended = true;
                }
                None => {
                    self.sse.finish(&mut |p| events.absorb(p));
                    self.ended = true;
                }
            }
        }
    }
}

impl Events {
    fn absorb(&mut self, piece: SsePiece<'_>) {
        match piece {
            SsePiece::Data(d) => {
                self.has_data = true;
                self.message.feed(d);
                let take = d.len().min(EVENT_TEXT.saturating_sub(self.head.len()));
                self.head.extend_from_slice(&d[..take]);
            }
            SsePiece::Dispatch { event, id } => {
                let head = std::mem::take(&mut self.head);
                if !std::mem::take(&mut self.has_data) {
                    self.message.discard();
                    self.ready.push_back((
                        event.to_string(),
                        id.map(str::to_string),
                        EventData::Text(String::new()),
                    ));
                } else if event == "message" {
                    if let Some(decoded) = self.message.finish(&self.server) {
                        self.ready.push_back((
                            event.to_string(),
                            id.map(str::to_string),
                            EventData::Message(decoded),
                        ));
                    }
                } else {
                    self.message.discard();
                    let text = String::from_utf8_lossy(&head).into_owned();
                    self.ready.push_back((
                        event.to_string(),
                        id.map(str::to_string),
                        EventData::Text(text),
                    ));
                }
            }
            SsePiece::Retry(ms) => self.retry = Some(ms),
        }
    }
}
