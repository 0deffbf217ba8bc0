//! Interop with real third-party MCP servers, installed by `.ci/install` into `.ci/peers`
//! (or `$AGENVOY_INTEROP_DIR`). Without them these tests say so and pass, unless
//! `AGENVOY_REQUIRE_INTEROP=1` (as `.ci/run` sets), where a missing server fails the test.
#![cfg(feature = "cli")]

mod common;

use agenvoy_mcp::Root;
use agenvoy_mcp::StdioConfig;
use agenvoy_mcp::{Client, ClientOptions};
use agenvoy_mcp::{Handlers, RequestOptions};
use common::*;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

async fn connect_real(name: &str, config: &StdioConfig, options: ClientOptions) -> Client {
    agenvoy_mcp::unstable::become_subreaper();
    Client::connect_stdio(name, config, options)
        .await
        .expect("connect the real server")
}

async fn text(client: &Client, tool: &str, args: Value) -> String {
    let out = client
        .call_tool(tool, args)
        .await
        .expect("the call succeeds");
    assert!(!out.is_error, "{tool} reported an error: {}", out.text);
    out.text
}

#[tokio::test]
async fn server_everything_over_stdio() {
    let Some(config) = everything() else { return };
    let client = connect_real("everything", &config, ClientOptions::default()).await;
    let pid = server_pid(&client);
    assert_eq!(
        client.details().server_info["name"],
        "mcp-servers/everything"
    );
    assert_eq!(client.details().protocol_version, "2025-11-25");
    assert!(client.details().instructions.is_some());
    let names = tool_names(&client).await;
    assert!(
        names.iter().any(|n| n == "echo") && names.iter().any(|n| n == "get-sum"),
        "{names:?}"
    );
    assert_eq!(
        text(&client, "echo", json!({"message": "hi"})).await,
        "Echo: hi"
    );
    assert!(
        text(&client, "get-sum", json!({"a": 2, "b": 3}))
            .await
            .contains('5')
    );
    let image = text(&client, "get-tiny-image", json!({})).await;
    assert!(
        image.contains("[image image/png, ") && image.contains(" bytes]"),
        "{image}"
    );
    let links = text(&client, "get-resource-links", json!({"count": 2})).await;
    assert!(
        links.contains("[resource_link demo://resource/dynamic/"),
        "{links}"
    );

    let steps = Arc::new(Mutex::new(Vec::new()));
    let sink = steps.clone();
    let options =
        RequestOptions::default().with_progress(move |p| sink.lock().unwrap().push(p.progress));
    let args = json!({"duration": 1, "steps": 3});
    let out = client
        .call_tool_with("trigger-long-running-operation", args, options)
        .await
        .unwrap();
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(
        steps.lock().unwrap().len(),
        3,
        "one progress notification a step"
    );

    client.close().await;
    assert_group_gone_within(pid, Duration::from_secs(1));
}

#[tokio::test]
async fn server_everything_lists_our_roots_after_a_list_change() {
    let Some(config) = everything() else { return };
    let roots = vec![Root::new("file:///tmp/agenvoy-root").with_name("agenvoy")];
    let options = ClientOptions::default().with_handlers(Handlers::default().with_roots(roots));
    let client = connect_real("everything", &config, options).await;
    let mut notifications = client.notifications();
    // The server registers get-roots-list once it has our roots, and says its list changed.
    let has_roots_tool =
        |tools: &[agenvoy_mcp::Tool]| tools.iter().any(|t| t.name == "get-roots-list");
    if !has_roots_tool(&client.list_tools().await.unwrap()) {
        let changed = tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                let n = notifications.recv().await.unwrap();
                if n.method == "notifications/tools/list_changed" {
                    return;
                }
            }
        });
        changed.await.expect("a tools/list_changed notification");
        assert!(has_roots_tool(&client.list_tools().await.unwrap()));
    }
    let listed = text(&client, "get-roots-list", json!({})).await;
    assert!(listed.contains("file:///tmp/agenvoy-root"), "{listed}");
    client.close().await;
}

#[tokio::test]
async fn server_memory_keeps_entities() {
    let Some(program) = installed("node_modules/.bin/mcp-server-memory") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let memory = dir.path().join("memory.jsonl");
    let config = StdioConfig::new(program.display().to_string())
        .env("MEMORY_FILE_PATH", memory.display().to_string());
    let client = connect_real("memory", &config, ClientOptions::default()).await;
    let names = tool_names(&client).await;
    assert!(
        names.contains(&"create_entities".to_string()) && names.contains(&"read_graph".to_string())
    );
    let entity = json!({"entities": [{"name": "agenvoy", "entityType": "project", "observations": ["speaks MCP"]}]});
    text(&client, "create_entities", entity).await;
    let graph = text(&client, "read_graph", json!({})).await;
    assert!(
        graph.contains("\"agenvoy\"") && graph.contains("speaks MCP"),
        "{graph}"
    );
    client.close().await;
    assert!(
        std::fs::read_to_string(&memory)
            .unwrap()
            .contains("agenvoy"),
        "the env var reached the server"
    );
}

#[tokio::test]
async fn mcp_server_time_from_pypi() {
    let Some(program) = installed("venv/bin/mcp-server-time") else {
        return;
    };
    let config = StdioConfig::new(program.display().to_string());
    let client = connect_real("time", &config, ClientOptions::default()).await;
    assert_eq!(
        client.details().era.name(),
        "stateless",
        "found out with no flag"
    );
    assert_eq!(client.details().protocol_version, "2026-07-28");
    assert_eq!(client.details().server_info["name"], "mcp-time");
    let pid = server_pid(&client);
    let names = tool_names(&client).await;
    assert_eq!(names, ["get_current_time", "convert_time"]);
    let now: Value =
        serde_json::from_str(&text(&client, "get_current_time", json!({"timezone": "UTC"})).await)
            .unwrap();
    assert_eq!(now["timezone"], "UTC");
    let args = json!({"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"});
    let converted = text(&client, "convert_time", args).await;
    assert!(converted.contains("21:00"), "{converted}");
    client.close().await;
    assert_group_gone_within(pid, Duration::from_secs(1));
}

/// `probe` lists the tools of each real server and calls one tool of each.
#[test]
fn probe_lists_and_calls_each_real_server() {
    let Some(everything) = installed("node_modules/.bin/mcp-server-everything") else {
        return;
    };
    let Some(memory) = installed("node_modules/.bin/mcp-server-memory") else {
        return;
    };
    let Some(time) = installed("venv/bin/mcp-server-time") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&PathBuf, &[&str], &str, &str, &str); 3] = [
        (
            &everything,
            &["stdio"],
            "echo",
            r#"{"message":"probe"}"#,
            "Echo: probe",
        ),
        (&memory, &[], "read_graph", "{}", "\"entities\""),
        (
            &time,
            &[],
            "get_current_time",
            r#"{"timezone":"UTC"}"#,
            "\"timezone\": \"UTC\"",
        ),
    ];
    for (program, extra, tool, args, expect) in cases {
        let output = std::process::Command::new(binary())
            .args(["probe", "--json", "--call", tool, "--args", args, "--"])
            .arg(program)
            .args(extra)
            .env("MEMORY_FILE_PATH", dir.path().join("m.jsonl"))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success(),
            "probe {}: {stderr}",
            program.display()
        );
        let report: Value = serde_json::from_slice(&output.stdout).unwrap();
        // mcp-server-time runs on the Python SDK 2.x, which speaks 2026-07-28.
        let era = if tool == "get_current_time" {
            "stateless"
        } else {
            "handshake"
        };
        assert_eq!(report["era"], era, "{}", program.display());
        assert!(
            report["tools"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t["name"] == tool)
        );
        let out = report["call"]["text"].as_str().unwrap();
        assert!(out.contains(expect), "{tool}: {out}");
    }
}

/// server-everything serving HTTP on a free loopback port, killed when dropped.
struct EverythingHttp {
    child: std::process::Child,
    port: u16,
}

impl EverythingHttp {
    fn start(program: &std::path::Path, mode: &str, port: Option<u16>) -> EverythingHttp {
        let port = port.unwrap_or_else(|| {
            std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port()
        });
        let child = std::process::Command::new(program)
            .arg(mode)
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // Ready once it accepts connections (it listens on every interface; we use loopback).
        let deadline = Instant::now() + Duration::from_secs(15);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "server-everything {mode} did not listen on {port}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        EverythingHttp { child, port }
    }
}

impl Drop for EverythingHttp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn probe_server_everything_over_streamable_http_and_legacy_sse() {
    let Some(program) = installed("node_modules/.bin/mcp-server-everything") else {
        return;
    };
    let http = EverythingHttp::start(&program, "streamableHttp", None);
    let url = format!("http://127.0.0.1:{}/mcp", http.port);
    let report = probe_json(&[
        "--call",
        "echo",
        "--args",
        r#"{"message":"streamable"}"#,
        &url,
    ]);
    assert_eq!(report["transport"], "http");
    assert_eq!(report["call"]["text"], "Echo: streamable");
    assert!(report["tools"].as_array().unwrap().len() > 5);

    let sse = EverythingHttp::start(&program, "sse", None);
    let url = format!("http://127.0.0.1:{}/sse", sse.port);
    let report = probe_json(&["--call", "get-sum", "--args", r#"{"a":20,"b":22}"#, &url]);
    assert_eq!(report["transport"], "http+sse");
    assert!(report["call"]["text"].as_str().unwrap().contains("42"));
}

#[tokio::test]
async fn server_everything_over_http_survives_a_restart_of_the_server() {
    let Some(program) = installed("node_modules/.bin/mcp-server-everything") else {
        return;
    };
    let server = EverythingHttp::start(&program, "streamableHttp", None);
    let port = server.port;
    let url = format!("http://127.0.0.1:{port}/mcp");
    let config = agenvoy_mcp::HttpConfig::new(&url);
    let client = Client::connect_http("everything", &config, ClientOptions::default())
        .await
        .unwrap();
    assert_eq!(
        text(&client, "echo", json!({"message": "before"})).await,
        "Echo: before"
    );
    // A new server process knows nothing of our session: it answers 400, and the client
    // starts a new session and replays the call.
    // Restarted off the runtime's thread, which keeps running meanwhile (as an agent's
    // would): the client sees the old connections close.
    let _restarted = tokio::task::spawn_blocking(move || {
        drop(server);
        EverythingHttp::start(&program, "streamableHttp", Some(port))
    })
    .await
    .unwrap();
    assert_eq!(
        text(&client, "echo", json!({"message": "after"})).await,
        "Echo: after"
    );
    client.close().await;
}

/// Without the real servers, a newcomer's `cargo test` says which tests were skipped and how
/// to run them, instead of reporting them passed in silence.
#[test]
fn a_test_without_its_server_says_it_was_skipped() {
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "mcp_server_time_from_pypi"])
        .env("AGENVOY_INTEROP_DIR", "/nonexistent")
        .env_remove("AGENVOY_REQUIRE_INTEROP")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains("SKIPPED mcp_server_time_from_pypi: /nonexistent/venv/bin/mcp-server-time is not installed (run .ci/install"),
        "{stderr}"
    );
}

/// And where every peer is required (`AGENVOY_REQUIRE_INTEROP=1`, as `.ci/run` sets), the
/// same missing server fails the test instead: a skip cannot hide in CI. `AGENVOY_HIDE_PEERS=1`
/// hides an installed one the same way.
#[test]
fn a_required_server_that_is_missing_fails_its_test() {
    let run = |env: (&str, &str)| {
        let output = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "mcp_server_time_from_pypi"])
            .env("AGENVOY_REQUIRE_INTEROP", "1")
            .env(env.0, env.1)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        (output.status.success(), format!("{stdout}\n{stderr}"))
    };
    let (passed, output) = run(("AGENVOY_INTEROP_DIR", "/nonexistent"));
    assert!(!passed, "{output}");
    assert!(
        output.contains("/nonexistent/venv/bin/mcp-server-time is not installed: run .ci/install"),
        "{output}"
    );
    assert!(!output.contains("SKIPPED"), "{output}");
    let (passed, output) = run(("AGENVOY_HIDE_PEERS", "1"));
    assert!(!passed, "{output}");
    assert!(
        output.contains("is not installed: run .ci/install"),
        "{output}"
    );
}

/// Waits up to `limit` for a typed notification that `pick` accepts.
async fn notified<T>(
    notifications: &mut agenvoy_mcp::ServerNotifications,
    limit: Duration,
    mut pick: impl FnMut(agenvoy_mcp::ServerNotification) -> Option<T>,
) -> T {
    let wait = async {
        loop {
            if let Some(found) = pick(notifications.recv().await.expect("notifications flow")) {
                return found;
            }
        }
    };
    tokio::time::timeout(limit, wait)
        .await
        .expect("the notification in time")
}

#[tokio::test]
async fn server_everything_resources_prompts_completion_and_logging() {
    use agenvoy_mcp::{CompletionRef, LogLevel, ServerNotification};
    let Some(config) = everything() else { return };
    let client = connect_real("everything", &config, ClientOptions::default()).await;

    let resources = client.list_resources().await.expect("resources/list");
    assert!(
        resources.iter().any(
            |r| r.uri == "demo://resource/static/document/architecture.md"
                && r.mime_type.as_deref() == Some("text/markdown")
        ),
        "{resources:?}"
    );
    let templates = client.list_resource_templates().await.expect("templates");
    let uris: Vec<&str> = templates.iter().map(|t| t.uri_template.as_str()).collect();
    assert!(
        uris.contains(&"demo://resource/dynamic/text/{resourceId}"),
        "{uris:?}"
    );
    assert!(
        uris.contains(&"demo://resource/dynamic/blob/{resourceId}"),
        "{uris:?}"
    );

    let plain = client
        .read_resource("demo://resource/dynamic/text/1")
        .await
        .expect("a text resource");
    assert!(
        plain
            .text
            .starts_with("Resource 1: This is a plaintext resource"),
        "{plain:?}"
    );
    let blob = client
        .read_resource("demo://resource/dynamic/blob/1")
        .await
        .expect("a blob resource");
    assert!(
        blob.text.starts_with("[blob ") && blob.text.ends_with(" bytes]"),
        "only a line, never the payload: {blob:?}"
    );

    let prompts = client.list_prompts().await.expect("prompts/list");
    let args_prompt = prompts
        .iter()
        .find(|p| p.name == "args-prompt")
        .expect("args-prompt");
    assert_eq!(
        args_prompt.member("title").map(|t| t.get()),
        Some(r#""Arguments Prompt""#)
    );
    assert!(
        args_prompt
            .arguments
            .iter()
            .any(|a| a.name == "city" && a.required)
    );
    let got = client
        .get_prompt("args-prompt", json!({"city": "Paris", "state": "TX"}))
        .await
        .expect("prompts/get");
    assert_eq!(got.messages[0].role, "user");
    assert_eq!(
        got.messages[0].text().as_deref(),
        Some("What's weather in Paris, TX?")
    );

    let team = CompletionRef::Prompt("completable-prompt".into());
    let departments = client.complete(&team, "department", "", &[]).await.unwrap();
    assert!(
        departments.values.iter().any(|v| v == "Engineering"),
        "{departments:?}"
    );
    let context = [("department".to_string(), "Engineering".to_string())];
    let names = client.complete(&team, "name", "", &context).await.unwrap();
    assert_eq!(
        names.values,
        ["Alice", "Bob", "Charlie"],
        "narrowed by the context"
    );

    let mut notifications = client.server_notifications();
    client
        .set_log_level(LogLevel::Debug)
        .await
        .expect("logging/setLevel");
    text(&client, "toggle-simulated-logging", json!({})).await;
    let log = notified(&mut notifications, Duration::from_secs(30), |n| match n {
        ServerNotification::Log(log) => Some(log),
        _ => None,
    })
    .await;
    assert!(log.level.is_some(), "a level this client knows: {log:?}");

    let watched = "demo://resource/static/document/architecture.md";
    client
        .subscribe(watched)
        .await
        .expect("resources/subscribe");
    text(&client, "toggle-subscriber-updates", json!({})).await;
    let uri = notified(&mut notifications, Duration::from_secs(15), |n| match n {
        ServerNotification::ResourceUpdated { uri } => Some(uri),
        _ => None,
    })
    .await;
    assert_eq!(uri, watched);
    client
        .unsubscribe(watched)
        .await
        .expect("resources/unsubscribe");
    client.close().await;
}
