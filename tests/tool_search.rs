//! Tool search over the tools of many real servers at once: recall at 5 and MRR on the
//! queries of `tests/tool_search/` (a tuning set and a held-out set), the README's example,
//! queries that fit nothing, and the scores `tools --search --json` prints.

use agenvoy_mcp::Tool;
use agenvoy_mcp::host::ToolIndex;
use serde_json::Value;

fn read(path: &str) -> Value {
    let path = format!("{}/{path}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Every tool of the evaluation: the lists in `tests/tool_search/tools/` and the three of
/// `fixtures/tool_lists/`, each under its server's name.
fn all_tools() -> Vec<(String, Tool)> {
    let mut lists: Vec<String> = ["github", "everything", "memory"]
        .iter()
        .map(|s| format!("fixtures/tool_lists/{s}.json"))
        .collect();
    let dir = format!("{}/tests/tool_search/tools", env!("CARGO_MANIFEST_DIR"));
    let mut more: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| {
            format!(
                "tests/tool_search/tools/{}",
                e.unwrap().file_name().to_string_lossy()
            )
        })
        .collect();
    more.sort();
    lists.extend(more);
    let mut tools = Vec::new();
    for path in lists {
        let doc = read(&path);
        let server = doc["server"].as_str().unwrap().to_string();
        for t in doc["tools"].as_array().unwrap() {
            tools.push((server.clone(), serde_json::from_value(t.clone()).unwrap()));
        }
    }
    tools
}

fn index(tools: &[(String, Tool)]) -> ToolIndex {
    ToolIndex::new(tools.iter().map(|(s, t)| (s.as_str(), t)))
}

/// The queries of `tests/tool_search/<set>.json`: each with the registered names of the tools
/// that answer it.
fn queries(set: &str) -> Vec<(String, Vec<String>)> {
    read(&format!("tests/tool_search/{set}.json"))["queries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| {
            let want = q[1].as_array().unwrap().iter().map(|w| {
                let (server, tool) = w.as_str().unwrap().split_once('/').unwrap();
                format!("mcp__{server}__{tool}")
            });
            (q[0].as_str().unwrap().to_string(), want.collect())
        })
        .collect()
}

/// Recall at 5 and mean reciprocal rank (over the top 5) of `set`, and the queries missed
/// or found below the first place.
fn evaluate(index: &ToolIndex, set: &str, show_ranks: bool) -> (f64, f64, Vec<String>) {
    let queries = queries(set);
    let (mut hits, mut reciprocal) = (0usize, 0f64);
    let mut missed = Vec::new();
    for (query, want) in &queries {
        let found: Vec<&str> = index
            .search(query, 5)
            .iter()
            .map(|t| t.definition.name.as_str())
            .collect();
        match found.iter().position(|f| want.iter().any(|w| w == f)) {
            Some(rank) => {
                hits += 1;
                reciprocal += 1.0 / (rank + 1) as f64;
                if rank > 0 && show_ranks {
                    println!("  at {}: {query:?} wants {want:?}, got {found:?}", rank + 1);
                }
            }
            None => missed.push(format!("{query:?} wants {want:?}, got {found:?}")),
        }
    }
    let n = queries.len() as f64;
    (hits as f64 / n, reciprocal / n, missed)
}

/// The ranking finds the tool a paraphrase asks for among 420 tools of 20 servers: recall at
/// 5 of at least 0.9 on queries it was never tuned on. (Only the figures are printed: the
/// held-out queries a change misses are not looked at to tune it.)
#[test]
fn held_out_queries_find_their_tool_in_the_top_5() {
    let tools = all_tools();
    let index = index(&tools);
    let (recall, mrr, missed) = evaluate(&index, "heldout", false);
    println!(
        "held-out: {} tools, recall@5 {recall:.3}, MRR {mrr:.3}, {} missed",
        tools.len(),
        missed.len()
    );
    assert!(recall >= 0.9, "held-out recall@5 {recall:.3} < 0.9");
}

/// The tuning queries: the figures and every miss, to tune the ranking on.
#[test]
fn tuning_queries_find_their_tool_in_the_top_5() {
    let tools = all_tools();
    let index = index(&tools);
    let (recall, mrr, missed) = evaluate(
        &index,
        "tuning",
        std::env::var_os("TOOL_SEARCH_RANKS").is_some(),
    );
    println!("tuning: recall@5 {recall:.3}, MRR {mrr:.3}");
    for m in &missed {
        println!("  missed: {m}");
    }
    assert!(recall >= 0.9, "tuning recall@5 {recall:.3} < 0.9");
}

/// `TOOL_SEARCH_QUERY="..." cargo test --test tool_search explain -- --ignored --nocapture`
/// prints the top 10 of a query with their scores.
#[test]
#[ignore]
fn explain() {
    let tools = all_tools();
    let index = index(&tools);
    let query = std::env::var("TOOL_SEARCH_QUERY").unwrap_or_default();
    for q in query.split(';') {
        println!("{q:?}");
        for m in index.matches(q, 10) {
            println!("  {:.3} {}", m.score, m.tool.definition.name);
        }
    }
}
