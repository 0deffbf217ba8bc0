//! SSE in 64 KiB chunks, each figure beside its baselines in the same run:
//! - `sse/events_8mib`: one 8 MiB event of many short messages, our decoder beside
//!   eventsource-stream;
//! - `sse/<class>`: one event carrying a 64 MiB tool result of each class of text (see
//!   `common`), read as the HTTP transport reads it (the SSE decoder handing its data to the
//!   message decoder), beside `serde_json::from_slice::<Value>` of the message and a memchr2
//!   scan of the stream for `"` and `\`.
use agenvoy_mcp::wire::DEFAULT_CAP;
use agenvoy_mcp::wire::MessageDecoder;
use agenvoy_mcp::wire::{SseDecoder, SsePiece};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use futures::StreamExt;
use std::hint::black_box;
use std::time::Duration;

mod common;

fn stream() -> Vec<u8> {
    let mut s = b"event: message\nid: 1\ndata: ".to_vec();
    while s.len() < 8 << 20 {
        s.extend_from_slice(br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"lorem ipsum dolor sit amet"}]}} "#);
    }
    s.extend_from_slice(b"\n\n");
    s
}

fn events(c: &mut Criterion) {
    let s = stream();
    let mut g = c.benchmark_group("sse/events_8mib");
    g.sample_size(10);
    g.warm_up_time(Duration::from_millis(500));
    g.throughput(Throughput::Bytes(s.len() as u64));
    g.measurement_time(Duration::from_secs(3));
    g.bench_function("ours", |b| {
        b.iter(|| {
            let (mut bytes, mut events) = (0usize, 0usize);
            let mut sink = |p: SsePiece<'_>| match p {
                SsePiece::Data(d) => bytes += d.len(),
                SsePiece::Dispatch { .. } => events += 1,
                SsePiece::Retry(_) => {}
            };
            let mut d = SseDecoder::new();
            for chunk in s.chunks(64 << 10) {
                d.push(chunk, &mut sink);
            }
            d.finish(&mut sink);
            black_box((bytes, events))
        })
    });
    g.measurement_time(Duration::from_secs(25));
    g.bench_function("eventsource_stream", |b| {
        b.iter(|| {
            let chunks: Vec<Result<Vec<u8>, std::convert::Infallible>> =
                s.chunks(64 << 10).map(|c| Ok(c.to_vec())).collect();
            let events = eventsource_stream::EventStream::new(futures::stream::iter(chunks));
            let all = futures::executor::block_on(events.collect::<Vec<_>>());
            black_box(all.len())
        })
    });
    g.finish();
}

fn classes(c: &mut Criterion) {
    for class in common::CLASSES {
        let message = common::message(class, 64 << 20);
        let mut s = b"event: message\nid: 1\ndata: ".to_vec();
        s.extend_from_slice(&message);
        s.extend_from_slice(b"\n\n");
        let mut g = c.benchmark_group(format!("sse/{}", class.name()));
        g.sample_size(10);
        g.measurement_time(Duration::from_secs(4));
        g.warm_up_time(Duration::from_millis(500));
        g.throughput(Throughput::Bytes(s.len() as u64));
        g.bench_function("sse_and_decoder", |b| {
            b.iter(|| {
                let mut decoder = Some(MessageDecoder::new(DEFAULT_CAP, 0));
                let mut total = 0;
                let mut sink = |p: SsePiece<'_>| match p {
                    SsePiece::Data(d) => decoder.as_mut().unwrap().feed(d).unwrap(),
                    SsePiece::Dispatch { .. } => {
                        let done = decoder.take().unwrap().finish().unwrap();
                        total = done.render.unwrap().unwrap().total;
                    }
                    SsePiece::Retry(_) => {}
                };
                let mut d = SseDecoder::new();
                for chunk in s.chunks(64 << 10) {
                    d.push(chunk, &mut sink);
                }
                d.finish(&mut sink);
                black_box(total)
            })
        });
        g.bench_function("serde_json_value", |b| {
            b.iter(|| black_box(serde_json::from_slice::<serde_json::Value>(&message).unwrap()))
        });
        g.bench_function("memchr2_scan", |b| {
            b.iter(|| black_box(memchr::memchr2_iter(b'"', b'\\', &s).count()))
        });
        g.finish();
    }
}

criterion_group!(benches, events, classes);
criterion_main!(benches);
