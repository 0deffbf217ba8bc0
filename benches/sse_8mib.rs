//! One 8 MiB SSE event, fed in 64 KiB chunks: our decoder beside eventsource-stream in the same
//! run.
use agenvoy_mcp::__private::wire::sse::{SseDecoder, SsePiece};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use futures::StreamExt;
use std::hint::black_box;
use std::time::Duration;

fn stream() -> Vec<u8> {
    let mut s = b"event: message\nid: 1\ndata: ".to_vec();
    while s.len() < 8 << 20 {
        s.extend_from_slice(br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"lorem ipsum dolor sit amet"}]}} "#);
    }
    s.extend_from_slice(b"\n\n");
    s
}

fn bench(c: &mut Criterion) {
    let s = stream();
    let mut g = c.benchmark_group("sse_8mib");
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

criterion_group!(benches, bench);
criterion_main!(benches);
