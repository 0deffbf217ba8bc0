//! A 64 MiB tool result of one big text block: the streaming decoder (fed in 64 KiB chunks)
//! beside its baselines in the same run: `render_reference` (serde_json on the whole message)
//! and a plain memchr2 scan of the same bytes for `"` and `\`.
use agenvoy_mcp::__private::wire::decode::MessageDecoder;
use agenvoy_mcp::__private::wire::render::{DEFAULT_CAP, render_reference};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::Duration;

/// `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"…"}]}}` with about
/// 64 MiB of text: lines of log-like ASCII with one `é` each, joined by `\n` escapes.
fn message() -> Vec<u8> {
    let mut msg =
        br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":""#.to_vec();
    let mut n = 0u64;
    while msg.len() < 64 << 20 {
        let line = format!(
            "{n:08} 2025-01-01T00:00:00Z INFO request handled: path=/api/v1/items status=200 café bytes=1234 elapsed=12ms user=alice trace=0123456789abcdef\\n"
        );
        msg.extend_from_slice(line.as_bytes());
        n += 1;
    }
    msg.extend_from_slice(br#""}]}}"#);
    msg
}

fn bench(c: &mut Criterion) {
    let msg = message();
    let mut g = c.benchmark_group("render_64mib");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(8));
    g.warm_up_time(Duration::from_secs(1));
    g.throughput(Throughput::Bytes(msg.len() as u64));
    g.bench_function("streaming_decoder", |b| {
        b.iter(|| {
            let mut d = MessageDecoder::new(DEFAULT_CAP, 0);
            for chunk in msg.chunks(64 << 10) {
                d.feed(chunk).unwrap();
            }
            black_box(d.finish().unwrap().render.unwrap().unwrap().total)
        })
    });
    g.bench_function("render_reference", |b| {
        b.iter(|| black_box(render_reference(&msg, DEFAULT_CAP).unwrap().total))
    });
    g.bench_function("memchr2_scan", |b| {
        b.iter(|| black_box(memchr::memchr2_iter(b'"', b'\\', &msg).count()))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
