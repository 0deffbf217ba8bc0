//! Invariant: our SSE decoder, fed in any chunking, yields the same events (type, data, id) as
//! eventsource-stream on the same bytes.
//! Input: byte 0 picks the chunk size (1..=16), the rest is the stream. Inputs that are not
//! UTF-8 are skipped (eventsource-stream refuses them), a leading BOM is skipped (it panics on
//! one), and a stream ending in CR gets an LF (it waits forever for the LF that may follow).
#![no_main]
use agenvoy_mcp::__private::wire::sse::{SseDecoder, SseEvent, SsePiece};
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
    let mut ours = Vec::new();
    let mut data = Vec::new();
    let mut sink = |p: SsePiece<'_>| match p {
        SsePiece::Data(d) => {
            assert!(!d.is_empty());
            data.extend_from_slice(d);
        }
        SsePiece::Dispatch { event, id } => ours.push(SseEvent {
            event: event.to_string(),
            data: String::from_utf8(std::mem::take(&mut data)).unwrap(),
            id: id.map(str::to_string),
        }),
        SsePiece::Retry(_) => {}
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
    let theirs: Vec<SseEvent> = futures::executor::block_on(reference.collect::<Vec<_>>())
        .into_iter()
        .map(|e| {
            let e = e.unwrap();
            SseEvent {
                event: e.event,
                data: e.data,
                id: Some(e.id).filter(|s| !s.is_empty()),
            }
        })
        .collect();
    assert_eq!(ours, theirs);
});
