//! Trace context (SEP-414): a caller's `traceparent`, `tracestate` and `baggage` reach the
//! server in each request's `params._meta`, exactly as given, over stdio and HTTP, in both
//! eras; requests made without one carry none. The fixture writes the `_meta` of every
//! request it gets to `FIXTURE_META_LOG`; the daemon's routes pass on what a caller sends in
//! the HTTP headers of the same names, and never what is not W3C.
#![cfg(feature = "cli")]

mod common;

use agenvoy_mcp::{Client, ClientOptions, CompletionRef, HttpConfig, RequestOptions, TraceContext};
use common::daemon::{Daemon, exchange};
use common::*;
use serde_json::{Value, json};
use std::path::Path;

const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const STATE: &str = "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE";
const BAGGAGE: &str = "userId=alice,isProduction=false";

fn trace() -> RequestOptions {
    let trace = TraceContext::new(PARENT, Some(STATE), Some(BAGGAGE)).unwrap();
    RequestOptions::default().with_trace(trace)
}

/// The requests the fixture got, as `{"method", "meta"}`, in order.
fn requests(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The `_meta` of the last request of `method` the fixture got.
fn meta_of(log: &Path, method: &str) -> Value {
    let got = requests(log);
    let last = got.iter().rev().find(|r| r["method"] == method);
    last.unwrap_or_else(|| panic!("no {method} in {got:?}"))["meta"].clone()
}

fn assert_traced(meta: &Value, what: &str) {
    assert_eq!(meta["traceparent"], PARENT, "{what}: {meta}");
    assert_eq!(meta["tracestate"], STATE, "{what}: {meta}");
    assert_eq!(meta["baggage"], BAGGAGE, "{what}: {meta}");
}

fn assert_untraced(meta: &Value, what: &str) {
    for key in ["traceparent", "tracestate", "baggage"] {
        assert!(meta.get(key).is_none(), "{what} carries {key}: {meta}");
    }
}

/// A tool call, a read, a prompt and a completion with the trace; a list without it.
async fn exercise(client: &Client, log: &Path, what: &str) {
    client.list_tools().await.unwrap();
    let out = client
        .call_tool_with("echo", json!({"text": "hi"}), trace())
        .await
        .unwrap();
    assert_eq!(out.text, "hi");
    client
        .read_resource_with("fixture://readme", trace())
        .await
        .unwrap();
    client
        .get_prompt_with("greet", json!({"name": "Ada"}), trace())
        .await
        .unwrap();
    let style = CompletionRef::Prompt("greet".into());
    let done = client
        .complete_with(&style, "style", "f", &[], trace())
        .await
        .unwrap();
    assert_eq!(done.values, ["formal", "friendly"]);
    for method in [
        "tools/call",
        "resources/read",
        "prompts/get",
        "completion/complete",
    ] {
        assert_traced(&meta_of(log, method), &format!("{what} {method}"));
    }
    assert_untraced(&meta_of(log, "tools/list"), &format!("{what} tools/list"));
}

#[tokio::test]
async fn trace_context_reaches_a_stdio_server_in_both_eras() {
    for mode in ["normal", "modern"] {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("meta.log");
        agenvoy_mcp::unstable::become_subreaper();
        let config = fixture(&["--mode", mode]).env("FIXTURE_META_LOG", log.to_str().unwrap());
        let client = Client::connect_stdio("fixture", &config, ClientOptions::default())
            .await
            .unwrap();
        exercise(&client, &log, &format!("stdio {mode}")).await;
        if mode == "modern" {
            // Beside the revision's own members, which the trace context leaves alone.
            let meta = meta_of(&log, "tools/call");
            assert!(meta["io.modelcontextprotocol/protocolVersion"].is_string());
        }
        client.close().await;
    }
}

#[tokio::test]
async fn trace_context_reaches_an_http_server_in_both_eras() {
    for mode in ["json", "modern"] {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("meta.log");
        let mut command = std::process::Command::new(fixture_binary());
        command
            .args(["--http", "127.0.0.1:0", "--mode", mode])
            .env("FIXTURE_META_LOG", &log);
        let server = Listening::start(command);
        let config = HttpConfig::new(&server.url);
        let client = Client::connect_http("fixture", &config, ClientOptions::default())
            .await
            .unwrap();
        exercise(&client, &log, &format!("http {mode}")).await;
        client.close().await;
    }
}

#[tokio::test]
async fn a_task_carries_the_trace_context_in_its_polls() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("meta.log");
    agenvoy_mcp::unstable::become_subreaper();
    let config = fixture(&["--mode", "modern"]).env("FIXTURE_META_LOG", log.to_str().unwrap());
    let client = Client::connect_stdio("fixture", &config, ClientOptions::default())
        .await
        .unwrap();
    let args = json!({"seconds": 0.3, "steps": 1});
    let out = client
        .call_tool_with("research", args, trace())
        .await
        .unwrap();
    assert_eq!(out.text, "researched in 1 steps");
    assert_traced(&meta_of(&log, "tools/call"), "the task's call");
    assert_traced(&meta_of(&log, "tasks/get"), "the task's poll");
    client.close().await;
}

/// The daemon with one fixture server (`mode`) writing its requests' `_meta` to `log`.
fn daemon(mode: &str, log: &Path, extra: &[&str]) -> Daemon {
    let entry = json!({"command": fixture_binary(), "args": ["--mode", mode],
                       "env": {"FIXTURE_META_LOG": log}});
    Daemon::start_with(Some(json!({"servers": {"fx": entry}})), extra)
}

/// A request to the daemon's API with extra header lines.
fn send(
    daemon: &Daemon,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<Value>,
) -> common::daemon::Reply {
    let api = &daemon.api;
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}",
        api.authority, api.token
    );
    for (name, value) in headers {
        head.push_str(&format!("\r\n{name}: {value}"));
    }
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    if !body.is_empty() {
        head.push_str("\r\nContent-Type: application/json");
    }
    exchange(&api.authority, &head, body.as_bytes())
}

/// A call, a read and a prompt through the daemon's routes with `headers`.
fn through_the_routes(daemon: &Daemon, headers: &[(&str, &str)]) {
    let call = json!({"name": "mcp__fx__echo", "arguments": {"text": "hi"}, "mode": "auto"});
    let reply = send(daemon, "POST", "/v1/mcp/call", headers, Some(call));
    assert_eq!(reply.status, 200, "{reply:?}");
    let read = "/v1/mcp/resource?name=fx&uri=fixture%3A%2F%2Freadme";
    let reply = send(daemon, "GET", read, headers, None);
    assert_eq!(reply.status, 200, "{reply:?}");
    let prompt = json!({"name": "fx", "prompt": "greet", "arguments": {"name": "Ada"}});
    let reply = send(daemon, "POST", "/v1/mcp/prompt", headers, Some(prompt));
    assert_eq!(reply.status, 200, "{reply:?}");
}

const ROUTED: [&str; 3] = ["tools/call", "resources/read", "prompts/get"];

#[test]
fn the_daemon_passes_a_callers_trace_headers_on() {
    for mode in ["normal", "modern"] {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("meta.log");
        let daemon = daemon(mode, &log, &[]);
        let headers = [
            ("traceparent", PARENT),
            ("tracestate", STATE),
            ("baggage", BAGGAGE),
        ];
        through_the_routes(&daemon, &headers);
        for method in ROUTED {
            assert_traced(&meta_of(&log, method), &format!("{mode} {method}"));
        }
        // Without headers, and not configured to start traces: none.
        through_the_routes(&daemon, &[]);
        for method in ROUTED {
            assert_untraced(&meta_of(&log, method), &format!("{mode} {method}"));
        }
    }
}

#[test]
fn the_daemon_never_forwards_what_is_not_w3c() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("meta.log");
    let daemon = daemon("normal", &log, &[]);
    let upper = PARENT.to_uppercase();
    // An invalid traceparent drops all three.
    let bad_parent = [
        ("traceparent", upper.as_str()),
        ("tracestate", STATE),
        ("baggage", BAGGAGE),
    ];
    through_the_routes(&daemon, &bad_parent);
    for method in ROUTED {
        assert_untraced(&meta_of(&log, method), method);
    }
    // An invalid tracestate or baggage drops only itself.
    let bad_rest = [
        ("traceparent", PARENT),
        ("tracestate", "Upper=case"),
        ("baggage", "no value"),
    ];
    through_the_routes(&daemon, &bad_rest);
    for method in ROUTED {
        let meta = meta_of(&log, method);
        assert_eq!(meta["traceparent"], PARENT, "{method}: {meta}");
        assert!(
            meta.get("tracestate").is_none() && meta.get("baggage").is_none(),
            "{meta}"
        );
    }
    // Two traceparent headers are no trace; two tracestate lines are one list.
    let twice = [
        ("traceparent", PARENT),
        ("traceparent", PARENT),
        ("baggage", BAGGAGE),
    ];
    through_the_routes(&daemon, &twice);
    assert_untraced(&meta_of(&log, "tools/call"), "two traceparents");
    let lines = [
        ("traceparent", PARENT),
        ("tracestate", "rojo=00f067aa0ba902b7"),
        ("tracestate", "congo=t61rcWkgMzE"),
    ];
    through_the_routes(&daemon, &lines);
    assert_eq!(
        meta_of(&log, "tools/call")["tracestate"],
        "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"
    );
}

#[test]
fn a_daemon_told_to_start_traces_starts_one_per_request_without() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("meta.log");
    let daemon = daemon("normal", &log, &["--start-traces"]);
    through_the_routes(&daemon, &[("baggage", BAGGAGE)]);
    let mut ids = Vec::new();
    for method in ROUTED {
        let meta = meta_of(&log, method);
        let parent = meta["traceparent"]
            .as_str()
            .unwrap_or_else(|| panic!("{meta}"));
        assert!(TraceContext::new(parent, None, None).is_ok(), "{parent}");
        assert_eq!(meta["baggage"], BAGGAGE, "{meta}");
        ids.push(parent[3..35].to_string());
    }
    ids.dedup();
    assert_eq!(
        ids.len(),
        ROUTED.len(),
        "each request its own trace: {ids:?}"
    );
    // A caller's own trace is passed on as it is.
    through_the_routes(&daemon, &[("traceparent", PARENT)]);
    assert_eq!(meta_of(&log, "tools/call")["traceparent"], PARENT);
    // An invalid one is replaced by a new trace, never forwarded.
    let upper = PARENT.to_uppercase();
    through_the_routes(&daemon, &[("traceparent", upper.as_str())]);
    let parent = meta_of(&log, "tools/call")["traceparent"].clone();
    assert!(
        parent.is_string() && parent != PARENT && parent != upper.as_str(),
        "{parent}"
    );
}
