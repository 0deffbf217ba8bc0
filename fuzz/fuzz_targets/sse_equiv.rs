//! Invariant: our SSE decoder, fed in any chunking, yields the same events (type, data, id) as
//! eventsource-stream on the same bytes, and the same `retry` times: eventsource-stream gives
//! an event the last valid `retry` of its own block (the lines since the previous blank line),
//! ours reports each `retry` as it is read, so the last one ours read since the previous event
//! must be the reference's when it has one, and the reference must have none when ours read
//! none.
//! Input: byte 0 picks the chunk size (1..=16), the rest is the stream. Inputs that are not
//! UTF-8 are skipped (eventsource-stream refuses them), a leading BOM is skipped (it panics on
//! one), and a stream ending in CR gets an LF (it waits forever for the LF that may follow).
//! A `retry` value with a sign is skipped too: eventsource-stream reads `retry:+5` as 5 (Rust's
//! integer parsing takes a `+`), the specification (and ours) only digits.
#![no_main]
use agenvoy_mcp::wire::{SseDecoder, SseEvent, SsePiece};
use futures::StreamExt;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    if input.is_empty() {
        return;
    }
    let size = 1 + (input[0] % 16) as usize;
    let Ok(text) = std::str::from_utf8(&input[1..]) else {
        return;
    };
    if text.starts_with('\u{feff}') {
        return;
    }
    let mut stream = text.as_bytes().to_vec();
    if stream.last() == Some(&b'\r') {
        stream.push(b'\n');
    }
    if stream.windows(7).any(|w| w == b"retry:+") || stream.windows(8).any(|w| w == b"retry: +") {
        return;
    }
    let mut ours = Vec::new();
    let mut our_retries = Vec::new();
    let mut retry = None;
    let mut data = Vec::new();
    let mut sink = |p: SsePiece<'_>| match p {
        SsePiece::Data(d) => {
            assert!(!d.is_empty());
            data.extend_from_slice(d);
        }
        SsePiece::Dispatch { event, id } => {
            ours.push(SseEvent {
                event: event.to_string(),
                data: String::from_utf8(std::mem::take(&mut data)).unwrap(),
                id: id.map(str::to_string),
            });
            our_retries.push(retry.take().map(std::time::Duration::from_millis));
        }
        SsePiece::Retry(ms) => retry = Some(ms),
    };
    let mut d = SseDecoder::new();
    for c in stream.chunks(size) {
        d.push(c, &mut sink);
    }
    d.finish(&mut sink);
    let reference =
        eventsource_stream::EventStream::new(futures::stream::iter(vec![Ok::<
            _,
            std::convert::Infallible,
        >(stream.clone())]));
    let (theirs, their_retries): (Vec<SseEvent>, Vec<_>) =
        futures::executor::block_on(reference.collect::<Vec<_>>())
            .into_iter()
            .map(|e| {
                let e = e.unwrap();
                let event = SseEvent {
                    event: e.event,
                    data: e.data,
                    id: Some(e.id).filter(|s| !s.is_empty()),
                };
                (event, e.retry)
            })
            .unzip();
    assert_eq!(ours, theirs);
    for (i, (o, t)) in our_retries.iter().zip(&their_retries).enumerate() {
        if t.is_some() || o.is_none() {
            assert_eq!(o, t, "retry of event {i}");
        }
    }
});
