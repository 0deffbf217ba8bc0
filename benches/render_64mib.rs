//! A 64 MiB tool result of each class of text (see `common`, and `escapes` below): the
//! streaming decoder (fed in 64 KiB chunks, the default 1 MiB cap) beside its baselines on the
//! same bytes in the same run: `serde_json::from_slice::<Value>` (what parsing the whole message
//! costs any SDK) and a plain memchr2 scan for `"` and `\` (the least a JSON string scanner can
//! do).
use agenvoy_mcp::wire::DEFAULT_CAP;
use agenvoy_mcp::wire::MessageDecoder;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::Duration;

mod common;

/// A tools/call response of about `size` bytes whose text is nearly all control characters,
/// each a six-byte `\u00XX` escape (as JSON encoders write a binary dump or raw terminal
/// output): numbered lines of 40 such escapes, ending in `\n`. `\b` `\t` `\n` `\f` `\r` have
/// short escapes, so they are left out of the dump.
fn escapes(size: usize) -> Vec<u8> {
    let mut msg =
        br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":""#.to_vec();
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut n = 0u64;
    while msg.len() < size {
        msg.extend_from_slice(format!("{n:08}").as_bytes());
        for _ in 0..40 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let c = match (state >> 32) % 32 {
                0x08..=0x0A | 0x0C | 0x0D => 0x1b,
                c => c,
            };
            msg.extend_from_slice(format!("\\u{c:04x}").as_bytes());
        }
        msg.extend_from_slice(br"\n");
        n += 1;
    }
    msg.extend_from_slice(br#""}]}}"#);
    msg
}

fn group(c: &mut Criterion, name: &str, msg: &[u8]) {
    let mut g = c.benchmark_group(format!("render_64mib/{name}"));
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
            black_box(serde_json::from_slice::<serde_json::Value>(msg).unwrap());
        })
    });
    g.bench_function("memchr2_scan", |b| {
        b.iter(|| black_box(memchr::memchr2_iter(b'"', b'\\', msg).count()))
    });
    g.finish();
}

fn bench(c: &mut Criterion) {
    for class in common::CLASSES {
        group(c, class.name(), &common::message(class, 64 << 20));
    }
    group(c, "escapes", &escapes(64 << 20));
}

criterion_group!(benches, bench);
criterion_main!(benches);
