//! Resources, resource templates, prompts, completions and logging against the fixture
//! server, over stdio and HTTP, in both eras; and a hostile server's lists and contents
//! meeting the same bounds as tools.
#![cfg(feature = "cli")]

mod common;

use agenvoy_mcp::HttpConfig;
use agenvoy_mcp::unstable::MAX_TOOL_PAGES;
use agenvoy_mcp::{
    Client, ClientOptions, CompletionRef, Era, ErrorKind, ListLimits, LogLevel, ServerNotification,
    ServerNotifications,
};
use common::HttpFixture;
use serde_json::json;
use std::time::Duration;

const CAP: usize = 1_048_576;

/// The four ways to reach the fixture: stdio and HTTP, each in both eras.
#[derive(Debug, Clone, Copy)]
enum Setup {
    Stdio,
    StdioModern,
    Http,
    HttpModern,
}

const SETUPS: [Setup; 4] = [
    Setup::Stdio,
    Setup::StdioModern,
    Setup::Http,
    Setup::HttpModern,
];

/// Connects the fixture with lists paged one entry a page; the HTTP server is kept alive
/// beside the client.
async fn connect(setup: Setup, options: ClientOptions) -> (Client, Option<HttpFixture>) {
    let paged = ["--page-size", "1"];
    match setup {
        Setup::Stdio => (common::connect(&paged, options).await, None),
        Setup::StdioModern => {
            let flags = ["--mode", "modern", "--page-size", "1"];
            (common::connect(&flags, options).await, None)
        }
        Setup::Http | Setup::HttpModern => {
            let mode = if matches!(setup, Setup::Http) {
                "json"
            } else {
                "modern"
            };
            let fixture = HttpFixture::start(mode, &paged);
            let client = Client::connect_http("fixture", &HttpConfig::new(&fixture.url), options)
                .await
                .expect("connect over HTTP");
            (client, Some(fixture))
        }
    }
}

/// Waits up to 5 s for a notification that `pick` accepts.
async fn wait_for<T>(
    notifications: &mut ServerNotifications,
    mut pick: impl FnMut(ServerNotification) -> Option<T>,
) -> T {
    let wait = async {
        loop {
            if let Some(found) = pick(notifications.recv().await.expect("notifications flow")) {
                return found;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(5), wait)
        .await
        .expect("the notification within 5 s")
}

#[tokio::test]
async fn every_feature_works_over_stdio_and_http_in_both_eras() {
    for setup in SETUPS {
        let (client, _fixture) = connect(setup, ClientOptions::default()).await;
        let stateless = matches!(setup, Setup::StdioModern | Setup::HttpModern);
        let era = if stateless {
            Era::Stateless
        } else {
            Era::Handshake
        };
        assert_eq!(client.details().era, era, "{setup:?}");

        // Lists, paged one entry a page, with unknown members kept.
        let resources = client.list_resources().await.expect("resources/list");
        let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
        assert_eq!(uris, ["fixture://readme", "fixture://logo"], "{setup:?}");
        assert_eq!(resources[0].mime_type.as_deref(), Some("text/plain"));
        assert_eq!(
            resources[0].member("x-fixture").map(|v| v.get()),
            Some(r#"{"kept":true}"#)
        );
        let templates = client.list_resource_templates().await.expect("templates");
        assert_eq!(
            templates[0].uri_template, "fixture://big/{bytes}",
            "{setup:?}"
        );
        let prompts = client.list_prompts().await.expect("prompts/list");
        let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["greet", "summarize"], "{setup:?}");
        assert!(prompts[0].arguments[0].required && !prompts[0].arguments[1].required);

        // Reads, rendered as a tool result is.
        let readme = client
            .read_resource("fixture://readme")
            .await
            .expect("read");
        assert_eq!(
            readme.text, "The agenvoy fixture server's readme.",
            "{setup:?}"
        );
        let logo = client.read_resource("fixture://logo").await.expect("read");
        assert_eq!(logo.text, "[blob image/png, 8 bytes]", "{setup:?}");
        let missing = client.read_resource("fixture://nothing").await.unwrap_err();
        assert!(
            matches!(&missing.kind(), ErrorKind::Rpc(e) if e.code == -32602),
            "{missing}"
        );
        assert_eq!(missing.method(), Some("resources/read"));

        // A prompt with its arguments, each message's content block.
        let greet = client
            .get_prompt("greet", json!({"name": "Ada", "style": "formal"}))
            .await
            .expect("prompts/get");
        let messages: Vec<(String, Option<String>)> = greet
            .messages
            .iter()
            .map(|m| (m.role.clone(), m.text()))
            .collect();
        assert_eq!(
            messages,
            [
                ("user".into(), Some("Greet Ada in a formal way.".into())),
                (
                    "assistant".into(),
                    Some("[image image/png, 3 bytes]".into())
                )
            ],
            "{setup:?}"
        );
        let summary = client
            .get_prompt("summarize", serde_json::Value::Null)
            .await;
        assert_eq!(
            summary.expect("prompts/get").messages[0].text().as_deref(),
            Some("The agenvoy fixture server's readme.")
        );

        // Completions, with and without context.
        let greet_ref = CompletionRef::Prompt("greet".into());
        let plain = client
            .complete(&greet_ref, "name", "A", &[])
            .await
            .expect("complete");
        assert_eq!(plain.values, ["Ada", "Alan"], "{setup:?}");
        assert_eq!((plain.total, plain.has_more), (Some(2), false));
        let context = [("style".to_string(), "formal".to_string())];
        let formal = client
            .complete(&greet_ref, "name", "G", &context)
            .await
            .unwrap();
        assert_eq!(formal.values, ["Dr. Grace"], "{setup:?}");
        let template = CompletionRef::ResourceTemplate("fixture://big/{bytes}".into());
        let sizes = client
            .complete(&template, "bytes", "10", &[])
            .await
            .unwrap();
        assert_eq!(sizes.values, ["1024", "1048576"], "{setup:?}");

        // Logging: typed notifications at the level asked for.
        let mut notifications = client.server_notifications();
        client
            .set_log_level(LogLevel::Debug)
            .await
            .expect("set the level");
        if stateless {
            // No logging/setLevel in 2026-07-28: the level rides on each request's _meta.
            client.list_prompts().await.unwrap();
            let log = wait_for(&mut notifications, |n| match n {
                ServerNotification::Log(log) => Some(log),
                _ => None,
            })
            .await;
            assert_eq!(log.level, Some(LogLevel::Info));
            assert_eq!(log.data, json!("handling prompts/list"), "{setup:?}");
            let refused = client.subscribe("fixture://readme").await.unwrap_err();
            assert_eq!(refused.method(), Some("resources/subscribe"));
            assert!(
                refused.to_string().contains("listen_for_changes"),
                "{refused}"
            );
            // Its subscriptions/listen names the resource; the update comes on it, and
            // dropping the listen cancels it.
            let listening = client.listen_for_changes(&["fixture://readme"]);
            let updated = async {
                wait_for(&mut notifications, |n| match n {
                    ServerNotification::ResourceUpdated { uri } => Some(uri),
                    _ => None,
                })
                .await
            };
            let uri = tokio::select! {
                biased; // an update that came before the listen ended counts
                uri = updated => uri,
                ended = listening => panic!("{setup:?}: the listen ended first: {ended:?}"),
            };
            assert_eq!(uri, "fixture://readme", "{setup:?}");
            assert!(
                client.list_prompts().await.is_ok(),
                "{setup:?}: the session goes on"
            );
        } else {
            let mut logs = Vec::new();
            while logs.len() < 2 {
                let log = wait_for(&mut notifications, |n| match n {
                    ServerNotification::Log(log) => Some(log),
                    _ => None,
                })
                .await;
                logs.push((log.level, log.logger, log.data));
            }
            assert_eq!(
                logs,
                [
                    (
                        Some(LogLevel::Warning),
                        Some("fixture".into()),
                        json!("log level set to debug")
                    ),
                    (
                        Some(LogLevel::Debug),
                        Some("fixture".into()),
                        json!({"detail": "debug messages are on"})
                    ),
                ],
                "{setup:?}"
            );
            client
                .subscribe("fixture://readme")
                .await
                .expect("subscribe");
            let uri = wait_for(&mut notifications, |n| match n {
                ServerNotification::ResourceUpdated { uri } => Some(uri),
                _ => None,
            })
            .await;
            assert_eq!(uri, "fixture://readme", "{setup:?}");
            client
                .unsubscribe("fixture://readme")
                .await
                .expect("unsubscribe");
        }
        client.close().await;
    }
}

#[tokio::test]
async fn a_huge_resource_is_capped_as_a_tool_result_is() {
    for setup in [
        Setup::Stdio,
        Setup::StdioModern,
        Setup::Http,
        Setup::HttpModern,
    ] {
        let (client, _fixture) = connect(setup, ClientOptions::default()).await;
        // Under the largest message kept whole, past it (6 MB), and far past it (64 MiB): each
        // rendered while it arrives and capped with the marker, never held whole nor refused.
        for bytes in [2_000_000u64, 6_000_000, 64 << 20] {
            let read = client
                .read_resource(&format!("fixture://big/{bytes}"))
                .await
                .unwrap_or_else(|e| panic!("{setup:?}: a {bytes}-byte resource: {e}"));
            assert_eq!(read.total_bytes, bytes, "{setup:?}");
            let marker = format!("\n\n[mcp output truncated: {bytes} bytes total, {CAP} kept]");
            assert_eq!(read.text.len(), CAP + marker.len(), "{setup:?}");
            assert!(read.text.ends_with(&marker), "{setup:?}");
            assert!(read.text[..CAP].bytes().all(|b| b == b'a'), "{setup:?}");
        }
        // The session goes on.
        assert!(client.read_resource("fixture://readme").await.is_ok());
        client.close().await;
    }
}

#[tokio::test]
async fn endless_resource_pages_stop_at_the_page_bound() {
    let client = common::connect(&["--mode", "endless-pages"], ClientOptions::default()).await;
    let resources = client
        .list_resources()
        .await
        .expect("a list, cut at the bound");
    assert_eq!(resources.len(), MAX_TOOL_PAGES);
    client.close().await;
}

#[tokio::test]
async fn one_list_budget_covers_tools_resources_and_prompts() {
    // The fixture lists 9 tools, 2 resources, 1 template and 2 prompts: 14 entries.
    let limits = ListLimits::default()
        .with_max_items(13)
        .with_max_bytes(1 << 20);
    let options = || ClientOptions::default().with_list_limits(limits);
    let client = common::connect(&[], options()).await;
    assert_eq!(client.list_tools().await.unwrap().len(), 9);
    assert_eq!(client.list_resources().await.unwrap().len(), 2);
    assert_eq!(client.list_resource_templates().await.unwrap().len(), 1);
    let err = client.list_prompts().await.unwrap_err();
    assert_eq!(err.method(), Some("prompts/list"));
    assert!(
        err.to_string().contains("beside 12 entries"),
        "the other lists count: {err}"
    );
    // A list read again replaces its own share: the resources still fit.
    assert_eq!(client.list_resources().await.unwrap().len(), 2);
    client.close().await;

    // Each list alone fits: it is the sum that does not.
    let client = common::connect(&[], options()).await;
    assert_eq!(client.list_prompts().await.unwrap().len(), 2);
    assert_eq!(client.list_resources().await.unwrap().len(), 2);
    assert_eq!(client.list_resource_templates().await.unwrap().len(), 1);
    let err = client.list_tools().await.unwrap_err();
    assert!(err.to_string().contains("beside 5 entries"), "{err}");
    client.close().await;

    // Bytes count together too: room for the tools' pages and 10 bytes more.
    let bytes_limited = |max_bytes| {
        let limits = ListLimits::default()
            .with_max_items(1000)
            .with_max_bytes(max_bytes);
        ClientOptions::default().with_list_limits(limits)
    };
    let client = common::connect(&[], bytes_limited(1)).await;
    let err = client.list_tools().await.unwrap_err().to_string();
    let tools_bytes: u64 = err
        .split("it sent 9 tools in ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("the bytes sent in: {err}"));
    client.close().await;
    let client = common::connect(&[], bytes_limited(tools_bytes + 10)).await;
    let tools = client.list_tools().await.expect("the tools alone fit");
    assert_eq!(tools.len(), 9);
    let err = client.list_resources().await.unwrap_err();
    assert!(err.to_string().contains("resources/list"), "{err}");
    client.close().await;
}

#[tokio::test]
async fn new_requests_keep_deadlines_cancellation_and_progress() {
    // In `hang` mode the fixture never answers a read or a prompt.
    let options = ClientOptions::default().with_timeout(Duration::from_millis(300));
    let client = common::connect(&["--mode", "hang"], options).await;
    let started = std::time::Instant::now();
    let err = client.read_resource("fixture://readme").await.unwrap_err();
    assert!(err.is_timeout(), "{err}");
    assert_eq!(err.method(), Some("resources/read"));
    let err = client.get_prompt("summarize", json!({})).await.unwrap_err();
    assert!(err.is_timeout(), "{err}");
    assert!(started.elapsed() < Duration::from_secs(3));
    client.close().await;

    // A read that times out, or whose caller stops waiting, is cancelled at the server.
    let client = common::connect(&[], ClientOptions::default()).await;
    // And one that asks for progress gets it.
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = seen.clone();
    let options =
        agenvoy_mcp::RequestOptions::default().with_progress(move |p: agenvoy_mcp::Progress| {
            sink.lock().unwrap().push((p.progress, p.message))
        });
    let read = client.read_resource_with("fixture://readme", options).await;
    assert_eq!(read.unwrap().text, "The agenvoy fixture server's readme.");
    assert_eq!(
        *seen.lock().unwrap(),
        [(Some(1.0), Some("read".to_string()))]
    );
    let options = agenvoy_mcp::RequestOptions::default().with_timeout(Duration::from_millis(200));
    let err = client
        .read_resource_with("fixture://hang", options)
        .await
        .unwrap_err();
    assert!(err.is_timeout(), "{err}");
    let dropped = client.read_resource("fixture://hang");
    assert!(
        tokio::time::timeout(Duration::from_millis(200), dropped)
            .await
            .is_err()
    );
    let mut seen = String::new();
    for _ in 0..100 {
        seen = client
            .call_tool("cancellations", json!({}))
            .await
            .unwrap()
            .text;
        if seen.contains("timed out") && seen.contains("the caller stopped waiting") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        seen.contains("timed out") && seen.contains("the caller stopped waiting"),
        "both cancellations reached the server: {seen}"
    );
    client.close().await;
}
