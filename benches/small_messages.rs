//! Small messages, what every call answers with: the per-message cost of the streaming decoder
//! (one decoder kept across messages, as a connection keeps it) beside
//! `serde_json::from_slice::<Value>` of the same bytes in the same run. Two messages: an echo
//! tool's result (nine short strings) and a `tools/list`-like result of fifty tools whose
//! names and descriptions are 60 bytes (strings too long for the decoder's short path).
use agenvoy_mcp::wire::DEFAULT_CAP;
use agenvoy_mcp::wire::MessageDecoder;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;

fn messages() -> [(&'static str, Vec<u8>); 2] {
    let echo =
        br#"{"jsonrpc":"2.0","id":982,"result":{"content":[{"type":"text","text":"hello"}]}}"#;
    let tool = format!(
        r#"{{"name":"{}","description":"{}"}}"#,
        "n".repeat(60),
        "d".repeat(60)
    );
    let tools = vec![tool; 50].join(",");
    let list = format!(r#"{{"jsonrpc":"2.0","id":982,"result":{{"tools":[{tools}]}}}}"#);
    [
        ("echo_result", echo.to_vec()),
        ("tools_list", list.into_bytes()),
    ]
}

fn bench(c: &mut Criterion) {
    for (name, msg) in messages() {
        let mut g = c.benchmark_group(format!("small_messages/{name}"));
        g.throughput(Throughput::Bytes(msg.len() as u64));
        let mut decoder = MessageDecoder::new(DEFAULT_CAP, 4 << 20);
        g.bench_function("decoder", |b| {
            b.iter(|| {
                decoder.feed(&msg).unwrap();
                black_box(decoder.take().finish().unwrap())
            })
        });
        g.bench_function("serde_json_value", |b| {
            b.iter(|| black_box(serde_json::from_slice::<serde_json::Value>(&msg).unwrap()))
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
