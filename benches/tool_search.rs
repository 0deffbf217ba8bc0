//! Tool search: its recall, the bytes it saves and its speed, each beside a baseline in the
//! same run.
//!
//! - Recall at 5 and MRR over the evaluation of `tests/tool_search/` (the tools of 20 real
//!   servers in one index, its tuning and held-out queries), for `ToolIndex` and for a
//!   baseline: the count of query words found in a tool's name and description, lower-cased,
//!   no splitting of names, no weights.
//! - The bytes of definitions offered to the model, for the tool lists of
//!   `fixtures/tool_lists/` (GitHub's MCP server as it publishes its tools, server-everything
//!   and server-memory as `.ci/install` installs them) and the queries of
//!   `fixtures/tool_search_queries.json`: every definition, or the search tool and the five
//!   tools one search returns.
//! - Search time at 1,000 and 10,000 tools (the fixtures' tools repeated under other server
//!   names) over those queries, p50 and p99 of single searches, and criterion's figures
//!   beside the baseline's linear scan: the workload of the first bench (issue 29), so a
//!   build of an older commit gives figures to set beside these.
use agenvoy_mcp::Tool;
use agenvoy_mcp::host::{ToolIndex, search_tool_definition};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::Value;
use std::hint::black_box;
use std::time::Instant;

fn fixture(path: &str) -> Value {
    let path = format!("{}/fixtures/{path}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).expect("fixture")).expect("JSON")
}

/// Every fixture tool, with its server's name.
fn corpus() -> Vec<(String, Tool)> {
    let mut all = Vec::new();
    for server in ["github", "everything", "memory"] {
        let doc = fixture(&format!("tool_lists/{server}.json"));
        for t in doc["tools"].as_array().expect("tools") {
            all.push((
                server.to_string(),
                serde_json::from_value(t.clone()).expect("a tool"),
            ));
        }
    }
    all
}

fn queries() -> Vec<(String, String)> {
    fixture("tool_search_queries.json")["queries"]
        .as_array()
        .expect("queries")
        .iter()
        .map(|q| (q[0].as_str().unwrap().into(), q[1].as_str().unwrap().into()))
        .collect()
}

fn read(path: &str) -> Value {
    let path = format!("{}/{path}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).expect("a file")).expect("JSON")
}

/// The tools of the evaluation: the fixtures' and those of `tests/tool_search/tools/`.
fn evaluation_tools() -> Vec<(String, Tool)> {
    let mut all = corpus();
    let dir = format!("{}/tests/tool_search/tools", env!("CARGO_MANIFEST_DIR"));
    let mut lists: Vec<_> = std::fs::read_dir(dir).expect("tools").flatten().collect();
    lists.sort_by_key(|e| e.file_name());
    for list in lists {
        let doc: Value = serde_json::from_slice(&std::fs::read(list.path()).unwrap()).unwrap();
        let server = doc["server"].as_str().unwrap();
        for t in doc["tools"].as_array().expect("tools") {
            all.push((server.into(), serde_json::from_value(t.clone()).unwrap()));
        }
    }
    all
}

/// The queries of `tests/tool_search/<set>.json`, each with the registered names that
/// answer it.
fn evaluation_queries(set: &str) -> Vec<(String, Vec<String>)> {
    read(&format!("tests/tool_search/{set}.json"))["queries"]
        .as_array()
        .expect("queries")
        .iter()
        .map(|q| {
            let want = q[1].as_array().unwrap();
            let want = want.iter().map(|w| target_name(w.as_str().unwrap()));
            (q[0].as_str().unwrap().into(), want.collect())
        })
        .collect()
}

/// Recall at 5 and MRR of `search` over `queries`.
fn recall_and_mrr<'a>(
    queries: &[(String, Vec<String>)],
    search: impl Fn(&str) -> Vec<&'a str>,
) -> (f64, f64) {
    let (mut hits, mut reciprocal) = (0.0, 0.0);
    for (q, want) in queries {
        if let Some(rank) = search(q).iter().position(|f| want.iter().any(|w| w == f)) {
            hits += 1.0;
            reciprocal += 1.0 / (rank + 1) as f64;
        }
    }
    let n = queries.len() as f64;
    (hits / n, reciprocal / n)
}

/// The baseline: query words (lower-cased, split on spaces) found as substrings of the
/// lower-cased name and description; ties by name.
struct Baseline(Vec<(String, String)>);

impl Baseline {
    fn new(tools: &[(String, Tool)]) -> Baseline {
        let mut docs: Vec<(String, String)> = tools
            .iter()
            .map(|(s, t)| {
                let text = format!("{} {}", t.name, t.description.as_deref().unwrap_or(""));
                (format!("mcp__{s}__{}", t.name), text.to_lowercase())
            })
            .collect();
        docs.sort();
        Baseline(docs)
    }

    fn search(&self, query: &str, limit: usize) -> Vec<&str> {
        let words: Vec<String> = query.split_whitespace().map(str::to_lowercase).collect();
        let mut scored: Vec<(usize, &str)> = self
            .0
            .iter()
            .map(|(name, text)| {
                (
                    words.iter().filter(|w| text.contains(w.as_str())).count(),
                    name.as_str(),
                )
            })
            .filter(|(n, _)| *n > 0)
            .collect();
        scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
        scored.into_iter().take(limit).map(|(_, n)| n).collect()
    }
}

fn target_name(want: &str) -> String {
    let (server, tool) = want.split_once('/').expect("server/tool");
    format!("mcp__{server}__{tool}")
}

/// `n` tools: the fixtures' tools, repeated under servers `s0`, `s1`, ...
fn scaled(base: &[(String, Tool)], n: usize) -> Vec<(String, Tool)> {
    (0..n)
        .map(|i| {
            let (server, tool) = &base[i % base.len()];
            (format!("{server}{}", i / base.len()), tool.clone())
        })
        .collect()
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn figures() {
    let everything = evaluation_tools();
    let index = ToolIndex::new(everything.iter().map(|(s, t)| (s.as_str(), t)));
    let baseline = Baseline::new(&everything);
    for set in ["tuning", "heldout"] {
        let queries = evaluation_queries(set);
        let ours = recall_and_mrr(&queries, |q| {
            let found = index.search(q, 5);
            found.iter().map(|t| t.definition.name.as_str()).collect()
        });
        let theirs = recall_and_mrr(&queries, |q| baseline.search(q, 5));
        println!(
            "tool_search/{set}: {} tools, {} queries: recall@5 / MRR: ToolIndex {:.3} / {:.3}, baseline {:.3} / {:.3}",
            everything.len(),
            queries.len(),
            ours.0,
            ours.1,
            theirs.0,
            theirs.1
        );
    }
    let tools = corpus();
    let index = ToolIndex::new(tools.iter().map(|(s, t)| (s.as_str(), t)));
    let queries = queries();
    let all_bytes = index.definition_bytes();
    let search_def = serde_json::to_vec(&search_tool_definition()).unwrap().len();
    let mut offered = 0usize;
    for (q, _) in &queries {
        offered += search_def
            + index
                .search(q, 5)
                .iter()
                .map(|t| serde_json::to_vec(&t.definition).unwrap().len())
                .sum::<usize>();
    }
    let offered = offered / queries.len();
    println!(
        "tool_search/bytes offered to the model ({} tools):",
        tools.len()
    );
    println!(
        "  every definition            {all_bytes} bytes (~{} tokens)",
        all_bytes / 4
    );
    println!("  search tool alone           {search_def} bytes");
    println!(
        "  search tool + 5 found (mean) {offered} bytes: {:.1}x fewer",
        all_bytes as f64 / offered as f64
    );
    for size in [1_000, 10_000] {
        let big = scaled(&tools, size);
        let started = Instant::now();
        let index = ToolIndex::new(big.iter().map(|(s, t)| (s.as_str(), t)));
        let built = started.elapsed();
        let baseline = Baseline::new(&big);
        let mut ours = Vec::new();
        let mut theirs = Vec::new();
        for _ in 0..25 {
            for (q, _) in &queries {
                let t = Instant::now();
                black_box(index.search(q, 5));
                ours.push(t.elapsed().as_secs_f64() * 1e6);
                let t = Instant::now();
                black_box(baseline.search(q, 5));
                theirs.push(t.elapsed().as_secs_f64() * 1e6);
            }
        }
        ours.sort_by(f64::total_cmp);
        theirs.sort_by(f64::total_cmp);
        println!(
            "tool_search/{size} tools: index built in {:.1} ms; {} searches: ToolIndex p50 {:.1} µs p99 {:.1} µs; baseline p50 {:.1} µs p99 {:.1} µs",
            built.as_secs_f64() * 1e3,
            ours.len(),
            percentile(&ours, 0.5),
            percentile(&ours, 0.99),
            percentile(&theirs, 0.5),
            percentile(&theirs, 0.99),
        );
    }
}

fn bench(c: &mut Criterion) {
    figures();
    let tools = corpus();
    let queries = queries();
    for size in [1_000, 10_000] {
        let big = scaled(&tools, size);
        let index = ToolIndex::new(big.iter().map(|(s, t)| (s.as_str(), t)));
        let baseline = Baseline::new(&big);
        let mut g = c.benchmark_group(format!("tool_search/{size}"));
        let mut i = 0;
        g.bench_function("tool_index", |b| {
            b.iter(|| {
                i = (i + 1) % queries.len();
                black_box(index.search(&queries[i].0, 5).len())
            })
        });
        g.bench_function("baseline_scan", |b| {
            b.iter(|| {
                i = (i + 1) % queries.len();
                black_box(baseline.search(&queries[i].0, 5).len())
            })
        });
        g.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(std::time::Duration::from_secs(2));
    targets = bench
}
criterion_main!(benches);
