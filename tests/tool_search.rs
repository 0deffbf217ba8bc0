//! Tool search over the tools of many real servers at once: recall at 5 and MRR on the
//! queries of `tests/tool_search/` (a tuning set and a held-out set), the README's example,
//! queries that fit nothing, and the scores `tools --search --json` prints.

mod common;

use agenvoy_mcp::Tool;
use agenvoy_mcp::host::ToolIndex;
use serde_json::{Value, json};
use std::path::Path;
use std::process::{Command, Stdio};

fn read(path: &str) -> Value {
    let path = format!("{}/{path}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The paths of the evaluation's tool lists: the three of `fixtures/tool_lists/` and those
/// in `tests/tool_search/tools/`.
fn tool_lists() -> Vec<String> {
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
    lists
}

/// Every tool of the evaluation, each under its server's name.
fn all_tools() -> Vec<(String, Tool)> {
    let mut tools = Vec::new();
    for path in tool_lists() {
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

/// The README's example finds GitHub's merge tool first, a full match, well ahead of the tools
/// that only share "pull request" or "request" with it.
#[test]
fn the_readme_example_finds_the_merge_tool_first() {
    let tools = all_tools();
    let index = index(&tools);
    let found = index.matches("merge a pull request", 5);
    assert_eq!(
        found[0].tool.definition.name,
        "mcp__github__merge_pull_request"
    );
    assert_eq!(found[0].score, 1.0);
    assert!(!found[0].is_weak());
    assert!(
        found[1].score < 0.7,
        "{} {}",
        found[1].tool.definition.name,
        found[1].score
    );
}

/// Queries no developer tool fits: each finds nothing, or only matches marked weak.
const NONSENSE: [&str; 10] = [
    "bake a chocolate cake",
    "what is the meaning of life",
    "book a flight to Rome",
    "water the plants",
    "play some jazz music",
    "feed the cat",
    "tell me a joke",
    "walk the dog",
    "make a cake",
    "order a pizza",
];

#[test]
fn a_query_that_fits_no_tool_finds_nothing_or_only_weak_matches() {
    let tools = all_tools();
    let index = index(&tools);
    for query in NONSENSE {
        let found = index.matches(query, 5);
        let strong: Vec<String> = found
            .iter()
            .filter(|m| !m.is_weak())
            .map(|m| format!("{} {}", m.tool.definition.name, m.score))
            .collect();
        assert!(strong.is_empty(), "{query:?} found {strong:?}");
    }
    assert!(index.matches("bake a chocolate cake", 5).is_empty());
}

/// Runs `agenvoy-mcp` with `args` in `dir`; its stdout.
fn run(dir: &Path, args: &[&str]) -> String {
    let out = Command::new(common::binary())
        .args(args)
        .env("AGENVOY_CONFIG_DIR", dir)
        .stdin(Stdio::null())
        .output()
        .expect("run the binary");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {stderr}");
    String::from_utf8(out.stdout).unwrap()
}

/// `tools --search` against servers that list real tools (GitHub's, server-everything's and
/// server-memory's; `serve_list.py` stands in for each): the JSON gives every tool found its
/// score and whether it is weak, and the text says when every match is weak or none
/// matches. With the embedded default config (a newcomer's first run) the README's example
/// finds nothing and says so.
#[test]
fn tools_search_prints_scores_and_says_when_matches_are_weak() {
    if !common::system_program("python3", "Debian's python3") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let serve = format!(
        "{}/tests/tool_search/serve_list.py",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut servers = serde_json::Map::new();
    for list in &tool_lists()[..3] {
        let path = format!("{}/{list}", env!("CARGO_MANIFEST_DIR"));
        let server = read(list)["server"].as_str().unwrap().to_string();
        servers.insert(server, json!({"command": "python3", "args": [serve, path]}));
    }
    let config = dir.path().join("mcp.json");
    std::fs::write(&config, json!({"servers": servers}).to_string()).unwrap();
    let config = config.to_str().unwrap();
    let search = |query: &str, json: bool| {
        let mut args = vec!["tools", "--config", config, "--search", query];
        if json {
            args.push("--json");
        }
        run(dir.path(), &args)
    };

    let found: Value = serde_json::from_str(&search("merge a pull request", true)).unwrap();
    let tools = found["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 5);
    assert_eq!(tools[0]["name"], "mcp__github__merge_pull_request");
    assert_eq!(tools[0]["score"], json!(1.0));
    assert_eq!(tools[0]["weak"], json!(false));
    for t in tools {
        let score = t["score"].as_f64().expect("a score");
        assert!((0.0..=1.0).contains(&score), "{t}");
        assert_eq!(t["weak"], json!(score < 0.4), "{t}");
    }

    let text = search("make a cake", false);
    let rows: Vec<&str> = text
        .lines()
        .skip(1)
        .filter(|l| l.starts_with("  "))
        .collect();
    assert!(!rows.is_empty(), "{text}");
    assert!(rows.iter().all(|r| r.contains(" weak ")), "{text}");
    assert!(
        text.ends_with(
            "every match is weak: no tool has much of what the query says; try other words\n"
        ),
        "{text}"
    );
    let text = search("bake a chocolate cake", false);
    assert_eq!(
        text,
        "search \"bake a chocolate cake\" (0 of 139 tools):\nno tool has any word of the query; try other words\n"
    );

    // No config file: the embedded default's demo server has nothing to merge.
    let missing = dir.path().join("none.json");
    let text = run(
        dir.path(),
        &[
            "tools",
            "--config",
            missing.to_str().unwrap(),
            "--search",
            "merge a pull request",
        ],
    );
    assert!(
        text.ends_with("no tool has any word of the query; try other words\n")
            || text.ends_with(
                "every match is weak: no tool has much of what the query says; try other words\n"
            ),
        "{text}"
    );
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
