//! The Truncator alone over 1 GiB of text in 64 KiB pieces (the default 1 MiB cap), beside a
//! baseline that only sums the piece lengths (the least any counter can do).
use agenvoy_mcp::wire::DEFAULT_CAP;
use agenvoy_mcp::wire::Truncator;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::Duration;

fn bench(c: &mut Criterion) {
    let piece: Vec<u8> = b"lorem ipsum dolor sit amet, consectetur adipiscing elit \xc3\xa9\n"
        .iter()
        .copied()
        .cycle()
        .take(64 << 10)
        .collect();
    let pieces = (1usize << 30) / piece.len();
    let mut g = c.benchmark_group("truncator_1gib");
    g.sample_size(10);
    g.warm_up_time(Duration::from_millis(300));
    g.measurement_time(Duration::from_secs(2));
    g.throughput(Throughput::Bytes(1 << 30));
    g.bench_function("truncator", |b| {
        b.iter(|| {
            let mut t = Truncator::new(DEFAULT_CAP);
            for _ in 0..pieces {
                t.push(black_box(&piece));
            }
            black_box(t.finish().len())
        })
    });
    g.bench_function("sum_of_lengths", |b| {
        b.iter(|| {
            let mut total = 0u64;
            for _ in 0..pieces {
                total += black_box(&piece).len() as u64;
            }
            black_box(total)
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
