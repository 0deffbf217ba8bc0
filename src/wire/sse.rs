//! A Server-Sent Events decoder: linear, streaming and bounded.
//!
//! It follows the WHATWG EventSource parsing rules: lines end with CRLF, LF or CR (a CRLF split
//! across chunks is still one line end); one byte order mark at the start of the stream is
//! skipped; a line starting with `:` is a comment; `field: value` has one leading space of the
//! value stripped, and a line without `:` is a field with an empty value; `data` lines are joined
//! with `\n`; `id` sets the last event id unless its value holds a NUL (the id persists to later
//! events); `retry` is taken when its value is ASCII digits only; an empty line dispatches the
//! event, unless it had no `data` line; the default event type is `message`. At the end of the
//! stream an event not yet dispatched is dropped.
//!
//! The `data` of an event is handed out in pieces as it arrives (with the `\n` joiners), so a
//! huge event can flow straight into a [`MessageDecoder`](super::MessageDecoder); only
//! `event` and `id` values are held, and those are truncated to [`VALUE_LIMIT`] bytes (on a
//! character boundary). Memory is bounded by that, whatever the stream holds; time is linear.

/// The most bytes kept of an `event` or `id` value; longer values are truncated.
pub const VALUE_LIMIT: usize = 4096;

/// What the decoder hands to its sink, in stream order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SsePiece<'a> {
    /// More bytes of the current event's data (including the `\n` between two data lines);
    /// never empty.
    Data(&'a [u8]),
    /// The current event is complete: its type and the last event id (`None` while no `id`
    /// was ever set, or after it was set to the empty string).
    Dispatch {
        /// The event type, `message` by default.
        event: &'a str,
        /// The last event id.
        id: Option<&'a str>,
    },
    /// A `retry` field: the reconnection time in milliseconds.
    Retry(u64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Line {
    /// At the start of a line.
    Start,
    /// Reading a field name.
    Name,
    /// After `name:`, where one space may be skipped.
    ValueStart,
    /// Reading a field value.
    Value,
    /// Skipping a comment.
    Comment,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Data,
    Event,
    Id,
    Retry,
    Other,
}

use super::bom::BomSkip;

/// The streaming SSE decoder; see the module docs.
#[derive(Debug)]
pub struct SseDecoder {
    bom: BomSkip,
    after_cr: bool,
    line: Line,
    name: [u8; 8],
    name_len: usize,
    field: Field,
    /// The value being read, for `event`, `id` and `retry`.
    value: Vec<u8>,
    value_nul: bool,
    event: Vec<u8>,
    id: Vec<u8>,
    data_lines: u64,
}

impl Default for SseDecoder {
    fn default() -> Self {
        Self::new()
    }
}

/// The longest prefix of `bytes` that is UTF-8, lossily converted when it is invalid inside.
fn text(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(s) => s.into(),
        Err(e) if e.error_len().is_none() => std::str::from_utf8(&bytes[..e.valid_up_to()])
            .expect("valid up to here")
            .into(),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

impl SseDecoder {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        SseDecoder {
            bom: BomSkip::default(),
            after_cr: false,
            line: Line::Start,
            name: [0; 8],
            name_len: 0,
            field: Field::Other,
            value: Vec::new(),
            value_nul: false,
            event: Vec::new(),
            id: Vec::new(),
            data_lines: 0,
        }
    }

    /// Feeds the next chunk of the stream; `sink` receives the pieces in order.
    pub fn push(&mut self, chunk: &[u8], sink: &mut dyn FnMut(SsePiece<'_>)) {
        let (replay, chunk) = self.bom.skip(chunk);
        self.run(replay, sink);
        self.run(chunk, sink);
    }

    /// Ends the stream: an event not yet dispatched is dropped.
    pub fn finish(&mut self, sink: &mut dyn FnMut(SsePiece<'_>)) {
        let replay = self.bom.finish();
        self.run(replay, sink);
        self.line = Line::Start;
        self.data_lines = 0;
        self.event.clear();
    }

    fn run(&mut self, chunk: &[u8], sink: &mut dyn FnMut(SsePiece<'_>)) {
        let mut i = 0;
        let n = chunk.len();
        while i < n {
            if self.after_cr {
                self.after_cr = false;
                if chunk[i] == b'\n' {
                    i += 1;
                    continue;
                }
            }
            match self.line {
                Line::Start => {
                    let b = chunk[i];
                    match b {
                        b'\n' | b'\r' => {
                            i += 1;
                            self.after_cr = b == b'\r';
                            self.dispatch(sink);
                        }
                        b':' => {
                            i += 1;
                            self.line = Line::Comment;
                        }
                        _ => {
                            self.name_len = 0;
                            self.line = Line::Name;
                        }
                    }
                }
                Line::Name => {
                    let rest = &chunk[i..];
                    let stop = memchr::memchr3(b':', b'\r', b'\n', rest);
                    let span = &rest[..stop.unwrap_or(rest.len())];
                    let at = self.name_len;
                    if at < self.name.len() {
                        let take = (self.name.len() - at).min(span.len());
                        self.name[at..at + take].copy_from_slice(&span[..take]);
                    }
                    self.name_len += span.len();
                    i += span.len();
                    if let Some(p) = stop {
                        self.field_named(sink);
                        if rest[p] == b':' {
                            i += 1;
                            self.line = Line::ValueStart;
                        } else {
                            i = self.end_line(chunk, i, sink);
                        }
                    }
                }
                Line::ValueStart => {
                    if chunk[i] == b' ' {
                        i += 1;
                    }
                    self.line = Line::Value;
                }
                Line::Value => {
                    let rest = &chunk[i..];
                    let stop = memchr::memchr2(b'\r', b'\n', rest);
                    let span = &rest[..stop.unwrap_or(rest.len())];
                    if !span.is_empty() {
                        match self.field {
                            Field::Data => sink(SsePiece::Data(span)),
                            Field::Other => {}
                            Field::Event | Field::Id | Field::Retry => {
                                if self.field == Field::Id && memchr::memchr(0, span).is_some() {
                                    self.value_nul = true;
                                }
                                let take = (VALUE_LIMIT + 1 - self.value.len()).min(span.len());
                                self.value.extend_from_slice(&span[..take]);
                            }
                        }
                    }
                    i += span.len();
                    if stop.is_some() {
                        i = self.end_line(chunk, i, sink);
                    }
                }
                Line::Comment => {
                    let rest = &chunk[i..];
                    match memchr::memchr2(b'\r', b'\n', rest) {
                        Some(p) => {
                            i += p;
                            self.field = Field::Other;
                            i = self.end_line(chunk, i, sink);
                        }
                        None => i = n,
                    }
                }
            }
        }
    }

    /// The field name is complete.
    fn field_named(&mut self, sink: &mut dyn FnMut(SsePiece<'_>)) {
        let name = &self.name[..self.name_len.min(self.name.len())];
        self.field = match (self.name_len <= self.name.len(), name) {
            (true, b"data") => Field::Data,
            (true, b"event") => Field::Event,
            (true, b"id") => Field::Id,
            (true, b"retry") => Field::Retry,
            _ => Field::Other,
        };
        self.value.clear();
        self.value_nul = false;
        if self.field == Field::Data {
            if self.data_lines > 0 {
                sink(SsePiece::Data(b"\n"));
            }
            self.data_lines += 1;
        }
    }

    /// The line ends at `chunk[i]` (a CR or LF); returns the index after it.
    fn end_line(&mut self, chunk: &[u8], i: usize, sink: &mut dyn FnMut(SsePiece<'_>)) -> usize {
        self.after_cr = chunk[i] == b'\r';
        match self.field {
            Field::Event => {
                let v = text(&self.value[..self.value.len().min(VALUE_LIMIT)]).into_owned();
                self.event = v.into_bytes();
            }
            Field::Id if !self.value_nul => {
                let v = text(&self.value[..self.value.len().min(VALUE_LIMIT)]).into_owned();
                self.id = v.into_bytes();
            }
            Field::Retry => {
                let v = &self.value;
                if !v.is_empty()
                    && v.iter().all(u8::is_ascii_digit)
                    && let Some(ms) = std::str::from_utf8(v).ok().and_then(|s| s.parse().ok())
                {
                    sink(SsePiece::Retry(ms));
                }
            }
            _ => {}
        }
        self.field = Field::Other;
        self.line = Line::Start;
        i + 1
    }

    fn dispatch(&mut self, sink: &mut dyn FnMut(SsePiece<'_>)) {
        if self.data_lines > 0 {
            let event = if self.event.is_empty() {
                "message"
            } else {
                std::str::from_utf8(&self.event).unwrap_or("message")
            };
            let id = std::str::from_utf8(&self.id).ok().filter(|s| !s.is_empty());
            sink(SsePiece::Dispatch { event, id });
        }
        self.data_lines = 0;
        self.event.clear();
    }
}

/// One whole event, as the decoder's pieces make it up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The event type (`message` by default).
    pub event: String,
    /// The data, lines joined with `\n` (lossily converted if it is not UTF-8).
    pub data: String,
    /// The last event id, if one is set.
    pub id: Option<String>,
}

/// Decodes a whole stream into events.
#[cfg(test)]
fn decode_all(stream: &[u8]) -> Vec<SseEvent> {
    let mut events = Vec::new();
    let mut data = Vec::new();
    let mut sink = |p: SsePiece<'_>| match p {
        SsePiece::Data(d) => data.extend_from_slice(d),
        SsePiece::Dispatch { event, id } => events.push(SseEvent {
            event: event.to_string(),
            data: String::from_utf8_lossy(&std::mem::take(&mut data)).into_owned(),
            id: id.map(str::to_string),
        }),
        SsePiece::Retry(_) => {}
    };
    let mut d = SseDecoder::new();
    d.push(stream, &mut sink);
    d.finish(&mut sink);
    events
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(event: &str, data: &str, id: Option<&str>) -> SseEvent {
        SseEvent {
            event: event.into(),
            data: data.into(),
            id: id.map(Into::into),
        }
    }

    fn chunked(stream: &[u8], size: usize) -> (Vec<SseEvent>, Vec<u64>) {
        let mut events = Vec::new();
        let mut retries = Vec::new();
        let mut data = Vec::new();
        let mut sink = |p: SsePiece<'_>| match p {
            SsePiece::Data(d) => {
                assert!(!d.is_empty());
                data.extend_from_slice(d)
            }
            SsePiece::Dispatch { event, id } => events.push(SseEvent {
                event: event.to_string(),
                data: String::from_utf8_lossy(&std::mem::take(&mut data)).into_owned(),
                id: id.map(str::to_string),
            }),
            SsePiece::Retry(ms) => retries.push(ms),
        };
        let mut d = SseDecoder::new();
        for c in stream.chunks(size) {
            d.push(c, &mut sink);
        }
        d.finish(&mut sink);
        (events, retries)
    }

    fn reference(stream: &[u8]) -> Vec<SseEvent> {
        use futures::StreamExt;
        let s = eventsource_stream::EventStream::new(futures::stream::iter(vec![Ok::<
            _,
            std::convert::Infallible,
        >(
            stream.to_vec(),
        )]));
        futures::executor::block_on(s.collect::<Vec<_>>())
            .into_iter()
            .map(|e| {
                let e = e.unwrap();
                ev(
                    &e.event,
                    &e.data,
                    Some(e.id.as_str()).filter(|s| !s.is_empty()),
                )
            })
            .collect()
    }

    #[test]
    fn spec_examples_in_any_chunking() {
        let stream = "\u{feff}: comment\r\ndata: first\r\ndata:second\r\n\r\nevent: add\nid: 7\ndata\ndata:  two spaces\n\nretry: 1500\nretry: 1x\nid: a\0b\nevent: nodata\n\nfoo: bar\rdata: cr only\r\rdata: last but never ended\n";
        let want = vec![
            ev("message", "first\nsecond", None),
            ev("add", "\n two spaces", Some("7")),
            ev("message", "cr only", Some("7")),
        ];
        for size in 1..=stream.len() {
            let (events, retries) = chunked(stream.as_bytes(), size);
            assert_eq!(events, want, "chunk size {size}");
            assert_eq!(retries, vec![1500]);
        }
        // eventsource-stream 0.2.3 panics on a leading BOM (it slices `[1..]` of a 3-byte char).
        assert_eq!(reference(&stream.as_bytes()[3..]), want);
        assert_eq!(decode_all(stream.as_bytes()), want);
    }

    #[test]
    fn empty_data_line_dispatches_empty_data_and_id_can_be_cleared() {
        let stream = b"data\n\nid: x\ndata: a\n\nid\ndata: b\n\n";
        let want = vec![
            ev("message", "", None),
            ev("message", "a", Some("x")),
            ev("message", "b", None),
        ];
        assert_eq!(decode_all(stream), want);
        assert_eq!(reference(stream), want);
    }

    #[test]
    fn long_values_are_truncated() {
        let long = "é".repeat(VALUE_LIMIT);
        let stream = format!("event: {long}\nid: {long}\ndata: x\n\n");
        let events = decode_all(stream.as_bytes());
        assert_eq!(events[0].event.len(), VALUE_LIMIT);
        assert_eq!(events[0].id.as_deref().map(str::len), Some(VALUE_LIMIT));
    }

    #[test]
    fn a_partial_bom_is_data() {
        assert_eq!(
            decode_all(b"\xEF\xBBdata: x\n\n"),
            Vec::<SseEvent>::new(),
            "the partial BOM makes the field name unknown"
        );
        assert_eq!(decode_all(b"\xEF\xBB\xBFdata: x\n\n").len(), 1);
    }
}
