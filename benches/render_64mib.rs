//! A 64 MiB tool result of each class of text (see `common`): the streaming decoder (fed in
//! 64 KiB chunks, the default 1 MiB cap) beside its baselines on the same bytes in the same
//! run: `serde_json::from_slice::<Value>` (what parsing the whole message costs any SDK) and a
//! plain memchr2 scan for `"` and `\` (the least a JSON string scanner can do).
use agenvoy_mcp::unstable::wire::DEFAULT_CAP;
use agenvoy_mcp::unstable::wire::MessageDecoder;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::Duration;

mod common;

fn bench(c: &mut Criterion) {
    for class in common::CLASSES {
        let msg = common::message(class, 64 << 20);
        let mut g = c.benchmark_group(format!("render_64mib/{}", class.name()));
        g.sample_size(10);
        g.measurement_time(Duration::from_secs(4));
        g.warm_up_time(Duration::from_millis(500));
        g.throughput(Throughput::Bytes(msg.len() as u64));
        g.bench_function("decoder", |b| {
            b.iter(|| {
                let mut d = MessageDecoder::new(DEFAULT_CAP, 0);
                for chunk in msg.chunks(64 << 10) {
                    d.feed(chunk).unwrap();
                }
                black_box(d.finish().unwrap().render.unwrap().unwrap().total)
            })
        });
        g.bench_function("serde_json_value", |b| {
            b.iter(|| {
                black_box(serde_json::from_slice::<serde_json::Value>(&msg).unwrap());
            })
        });
        g.bench_function("memchr2_scan", |b| {
            b.iter(|| black_box(memchr::memchr2_iter(b'"', b'\\', &msg).count()))
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
