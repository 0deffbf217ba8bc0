//! The client over streamable HTTP (and the HTTP+SSE fallback) against the HTTP fixture server.
#![cfg(feature = "cli")]

mod common;

use agenvoy_mcp::HttpConfig;
use agenvoy_mcp::RequestOptions;
use agenvoy_mcp::{Client, ClientOptions, ErrorKind};
use common::HttpFixture;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

async fn connect(fixture: &HttpFixture) -> Client {
    Client::connect_http(
        "fixture",
        &HttpConfig::new(&fixture.url),
        ClientOptions::default(),
    )
    .await
    .expect("connect over HTTP")
}

async fn text(client: &Client, tool: &str, args: Value) -> String {
    client
        .call_tool(tool, args)
        .await
        .expect("the call succeeds")
        .text
}

/// Calls `slow` with a progress callback and returns the progress values seen.
async fn slow_with_progress(client: &Client, steps: u64) -> Vec<Option<f64>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let options =
        RequestOptions::default().with_progress(move |p| sink.lock().unwrap().push(p.progress));
    let args = json!({"seconds": 0.3, "steps": steps});
    let out = client.call_tool_with("slow", args, options).await.unwrap();
    assert_eq!(out.text, "slept 0.3 s");
    seen.lock().unwrap().clone()
}

#[tokio::test]
async fn json_answers_with_a_session() {
    let fixture = HttpFixture::start("json", &["--page-size", "3"]);
    let client = connect(&fixture).await;
    assert_eq!(client.transport_kind(), "http");
    assert_eq!(client.details().protocol_version, "2025-11-25");
    assert_eq!(client.list_tools().await.unwrap().len(), 9, "three pages");
    assert_eq!(text(&client, "echo", json!({"text": "über"})).await, "über");
    let failed = client.call_tool("fail", json!({})).await.unwrap();
    assert!(failed.is_error);
    let big = text(
        &client,
        "big",
        json!({"bytes": 3_000_000, "multibyte": true}),
    )
    .await;
    let (kept, marker) = big.split_at(
        big.rfind("\n\n[mcp output truncated: ")
            .expect("the marker"),
    );
    assert!(
        kept.len() <= 1_048_576 && kept.len() > 1_048_572,
        "kept {}",
        kept.len()
    );
    assert_eq!(
        marker,
        format!(
            "\n\n[mcp output truncated: 3000000 bytes total, {} kept]",
            kept.len()
        )
    );
    client.close().await;
    let stats = fixture.stats();
    assert_eq!(stats["initializations"], 1);
    assert_eq!(stats["deletes"], 1, "close ends the session with DELETE");
}

#[tokio::test]
async fn sse_answers_carry_progress_and_server_requests() {
    let fixture = HttpFixture::start("sse", &[]);
    let client = connect(&fixture).await;
    assert_eq!(
        slow_with_progress(&client, 3).await,
        [Some(1.0), Some(2.0), Some(3.0)]
    );
    let answer = text(&client, "client_request", json!({"method": "roots/list"})).await;
    assert_eq!(
        answer, r#"{"result":{"roots":[]}}"#,
        "asked on the POST stream, answered by POST"
    );
    client.close().await;
}

#[tokio::test]
async fn server_requests_on_the_get_stream_are_answered() {
    let fixture = HttpFixture::start("json", &[]);
    let client = connect(&fixture).await;
    // The GET stream opens after notifications/initialized: wait until the server has it.
    let deadline = Instant::now() + Duration::from_secs(30);
    while fixture.stats()["streamsOpened"] == 0 {
        assert!(Instant::now() < deadline, "no GET stream within 30 s");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let answer = text(&client, "client_request", json!({"method": "ping"})).await;
    assert_eq!(answer, r#"{"result":{}}"#);
    client.close().await;
}

#[tokio::test]
async fn stateless_servers_need_no_session() {
    let fixture = HttpFixture::start("stateless", &[]);
    let client = connect(&fixture).await;
    assert_eq!(text(&client, "add", json!({"a": 1, "b": 2})).await, "3");
    client.close().await;
    assert_eq!(
        fixture.stats()["deletes"],
        0,
        "no session, nothing to delete"
    );
}

#[tokio::test]
async fn a_cut_stream_is_resumed_and_the_replayed_duplicate_dropped() {
    let fixture = HttpFixture::start("cut-stream", &[]);
    let client = connect(&fixture).await;
    assert_eq!(
        slow_with_progress(&client, 3).await,
        [Some(1.0), Some(2.0), Some(3.0)],
        "each progress once"
    );
    let resumed = fixture.stats()["lastEventIds"].as_array().unwrap().len();
    assert!(resumed >= 1, "resumed with Last-Event-ID");
    assert_eq!(
        text(&client, "echo", json!({"text": "after"})).await,
        "after"
    );
    client.close().await;
}

/// A server that numbers each stream's event ids from 0 (so every stream gives `0`, `1`, ...)
/// breaks the rule that ids are unique in a session; the client tells ids apart per stream,
/// so each call is still answered at once (they used to be dropped as replays, each call
/// waiting out its timeout).
#[tokio::test]
async fn ids_a_server_reuses_across_streams_lose_no_answer() {
    let fixture = HttpFixture::start("per-stream-ids", &[]);
    let options = ClientOptions::default().with_timeout(Duration::from_secs(5));
    let client = Client::connect_http("fixture", &HttpConfig::new(&fixture.url), options)
        .await
        .expect("connect over HTTP");
    let started = Instant::now();
    for n in 0..5 {
        let said = text(&client, "echo", json!({"text": format!("call {n}")})).await;
        assert_eq!(said, format!("call {n}"));
    }
    assert_eq!(
        slow_with_progress(&client, 3).await,
        [Some(1.0), Some(2.0), Some(3.0)]
    );
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    client.close().await;
}

/// A response stream that is cut, and whose every resumption ends with no event, is resumed
/// exactly 5 times (each after the server's `retry`), then the call fails saying so; the
/// session still works.
#[tokio::test]
async fn a_cut_stream_is_resumed_at_most_5_times() {
    let fixture = HttpFixture::start("dead-resume", &[]);
    let client = connect(&fixture).await;
    let options = RequestOptions::default()
        .with_progress(|_| {})
        .with_timeout(Duration::from_secs(30));
    let args = json!({"seconds": 0.3, "steps": 3});
    let call = client.call_tool_with("slow", args, options);
    let err = tokio::time::timeout(Duration::from_secs(60), call)
        .await
        .expect("the call ends")
        .expect_err("a stream that cannot be resumed fails its call");
    assert!(matches!(err.kind(), ErrorKind::Interrupted(_)), "{err}");
    assert!(
        err.to_string()
            .contains("could not be resumed after 5 attempts"),
        "{err}"
    );
    let resumed = fixture.stats()["lastEventIds"].as_array().unwrap().len();
    assert_eq!(resumed, 5, "{}", fixture.stats());
    client.close().await;
}

#[tokio::test]
async fn an_expired_session_is_renewed_and_the_request_replayed() {
    let fixture = HttpFixture::start("expire-session", &[]);
    let client = connect(&fixture).await;
    assert_eq!(text(&client, "echo", json!({"text": "one"})).await, "one");
    assert_eq!(text(&client, "echo", json!({"text": "two"})).await, "two");
    assert_eq!(fixture.stats()["initializations"], 2);
    client.close().await;
}

#[tokio::test]
async fn a_request_in_flight_when_the_session_expires_fails_clearly_and_the_next_starts_anew() {
    let fixture = HttpFixture::start("expire-mid-stream", &[]);
    let client = connect(&fixture).await;
    let started = Instant::now();
    // With progress, the first event is not the answer: the stream is cut before it.
    let options = RequestOptions::default().with_progress(|_| {});
    let args = json!({"seconds": 0.3, "steps": 3});
    let err = match client.call_tool_with("slow", args, options).await {
        Ok(out) => panic!("{out:?}: the fixture saw {}", fixture.stats()),
        Err(err) => err,
    };
    assert!(err.is_closed(), "{err}");
    let message = err.to_string();
    assert!(
        message.contains("tools/call") && message.contains("resuming it failed"),
        "{message}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "no hang: {:?}",
        started.elapsed()
    );
    assert_eq!(text(&client, "echo", json!({"text": "anew"})).await, "anew");
    assert_eq!(fixture.stats()["initializations"], 2);
    client.close().await;
}

#[tokio::test]
async fn rate_limits_are_retried_after_the_servers_delay() {
    let fixture = HttpFixture::start("rate-limit", &[]);
    let client = connect(&fixture).await;
    let started = Instant::now();
    assert_eq!(
        text(&client, "echo", json!({"text": "patient"})).await,
        "patient"
    );
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(1400),
        "Retry-After: 1, then 0.5 s: took {took:?}"
    );
    client.close().await;
}

/// A tool call's POST is sent again only after 429 or 503 (the server did not take it):
/// after any other answer, or a connection closed once the request was written, the call
/// fails and the server saw it once (a tool may have side effects).
#[tokio::test]
async fn a_tool_call_is_posted_again_only_after_429_or_503() {
    for (mode, retried) in [
        ("fail-call=429", true),
        ("fail-call=503", true),
        ("fail-call=500", false),
        ("fail-call=502", false),
        ("fail-call=504", false),
        ("fail-call=400", false),
        ("fail-call=drop", false),
    ] {
        let fixture = HttpFixture::start(mode, &[]);
        let client = connect(&fixture).await;
        let call = client.call_tool("echo", json!({"text": "once"}));
        let outcome = tokio::time::timeout(Duration::from_secs(30), call)
            .await
            .expect("the call ends");
        let posts = fixture.stats()["toolCalls"].as_u64().unwrap();
        if retried {
            assert_eq!(outcome.expect(mode).text, "once", "{mode}");
            assert_eq!(posts, 2, "{mode}: sent again once");
        } else {
            let err = outcome.expect_err(mode);
            assert_eq!(posts, 1, "{mode}: sent once ({err})");
            if mode == "fail-call=drop" {
                assert!(err.may_have_run(), "{mode}: {err}");
            }
        }
        // The session goes on.
        assert_eq!(text(&client, "echo", json!({"text": "next"})).await, "next");
        client.close().await;
    }
}

/// A request's own deadline governs it from its first byte to its last: the transport's
/// `header_timeout` (1 s here, 30 s by default) does not cut off a tool whose answer starts
/// after 3 s, and a call whose own timeout is shorter ends at that timeout.
#[tokio::test]
async fn a_request_waits_for_its_headers_as_long_as_its_own_timeout() {
    let fixture = HttpFixture::start("slow-headers", &[]);
    let config = HttpConfig::new(&fixture.url).with_header_timeout(Duration::from_secs(1));
    let client = Client::connect_http("fixture", &config, ClientOptions::default())
        .await
        .unwrap();
    assert_eq!(text(&client, "echo", json!({"text": "slow"})).await, "slow");

    let started = Instant::now();
    let short = RequestOptions::default().with_timeout(Duration::from_millis(1500));
    let err = client
        .call_tool_with("echo", json!({"text": "x"}), short)
        .await
        .unwrap_err();
    assert!(err.is_timeout(), "{err}");
    assert!(err.to_string().contains("no response after 1.5 s"), "{err}");
    // The bound is the promise: the call ends at its timeout, not at the server's answer.
    assert!(
        started.elapsed() < Duration::from_millis(2900),
        "{:?}",
        started.elapsed()
    );
    client.close().await;
}

#[tokio::test]
async fn junk_events_are_skipped() {
    let fixture = HttpFixture::start("junk-sse", &[]);
    let client = connect(&fixture).await;
    assert_eq!(
        text(&client, "echo", json!({"text": "clean"})).await,
        "clean"
    );
    client.close().await;
}

#[tokio::test]
async fn legacy_http_sse_servers_are_found_by_fallback() {
    let fixture = HttpFixture::start("legacy", &[]);
    let client = connect(&fixture).await;
    assert_eq!(client.transport_kind(), "http+sse");
    assert_eq!(
        text(&client, "echo", json!({"text": "old school"})).await,
        "old school"
    );
    assert_eq!(slow_with_progress(&client, 2).await, [Some(1.0), Some(2.0)]);
    client.close().await;
}

#[tokio::test]
async fn http_errors_name_the_status_and_the_server() {
    let fixture = HttpFixture::start("json", &[]);
    let wrong = fixture.url.replace("/mcp", "/nope");
    let err = Client::connect_http(
        "fixture",
        &HttpConfig::new(&wrong),
        ClientOptions::default(),
    )
    .await
    .err()
    .unwrap();
    assert!(
        matches!(
            err.kind(),
            ErrorKind::Http {
                status: Some(404),
                ..
            }
        ),
        "{err}"
    );
    let message = err.to_string();
    assert!(
        message.starts_with("mcp server \"fixture\", initialize: HTTP 404"),
        "{message}"
    );

    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed = format!("http://{}/mcp", listener.local_addr().unwrap());
    drop(listener);
    let err = Client::connect_http("gone", &HttpConfig::new(&closed), ClientOptions::default())
        .await
        .err()
        .unwrap();
    assert!(
        matches!(err.kind(), ErrorKind::Http { status: None, .. }),
        "{err}"
    );
    // The HTTP client's error is kept as the source, down to the refused connection.
    let mut source = std::error::Error::source(&err);
    let mut refused = false;
    while let Some(s) = source {
        refused |= s
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::ConnectionRefused);
        source = s.source();
    }
    assert!(refused, "{err:?}");
    assert_eq!(err.http_status(), None);
}

#[tokio::test]
async fn a_redirect_to_another_origin_drops_the_credentials() {
    let target = HttpFixture::start("json", &[]);
    let redirector = HttpFixture::start("redirect", &["--redirect-to", &target.url]);
    let mut config = HttpConfig::new(&redirector.url);
    config.headers = vec![
        ("Authorization".into(), "s3cret".into()),
        ("X-Api-Key".into(), "k3y".into()),
    ];
    let client = Client::connect_http("fixture", &config, ClientOptions::default())
        .await
        .unwrap();
    assert_eq!(
        text(&client, "echo", json!({"text": "moved"})).await,
        "moved"
    );
    client.close().await;
    assert!(
        redirector.stats()["credentialed"].as_u64().unwrap() > 0,
        "the configured origin gets them"
    );
    assert_eq!(
        target.stats()["credentialed"],
        0,
        "another origin never does"
    );
    assert!(
        target.stats()["posts"].as_u64().unwrap() >= 2,
        "the requests did arrive there"
    );
}

/// A server whose GET stream says `retry: 0` and ends at once is not hammered: the client
/// waits at least 0.5 s, doubling after each stream that brought nothing (it reconnected
/// 114 times in 5 s before).
#[tokio::test]
async fn a_get_stream_with_retry_zero_backs_off() {
    let fixture = HttpFixture::start("retry-zero", &[]);
    let client = connect(&fixture).await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    let gets = fixture.stats()["gets"].as_u64().unwrap();
    // 0, 0.5, 1.5, 3.5 s: four, and a little room for a slow start.
    assert!((1..=5).contains(&gets), "{gets} GET streams in 5 s");
    client.close().await;
}

/// A legacy (HTTP+SSE) server whose `endpoint` event names `endpoint` (`{elsewhere}` becomes
/// the address of a second listener): connects a client to it and returns the error (if the
/// connect ended within 10 s), the requests the server saw, and how many connections reached
/// the second listener.
async fn legacy_endpoint(endpoint: &str) -> (Option<String>, Vec<String>, usize) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let elsewhere = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = server.local_addr().unwrap().port();
    let endpoint = endpoint
        .replace("{elsewhere}", &elsewhere.local_addr().unwrap().to_string())
        .replace("{port}", &port.to_string());
    let reached = Arc::new(Mutex::new(0));
    let count = reached.clone();
    tokio::spawn(async move {
        loop {
            let (_stream, _) = elsewhere.accept().await.unwrap();
            *count.lock().unwrap() += 1;
        }
    });
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        loop {
            let (mut stream, _) = server.accept().await.unwrap();
            let log = log.clone();
            let endpoint = endpoint.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).await.unwrap_or(0) == 1
                {
                    head.push(byte[0]);
                }
                let head = String::from_utf8_lossy(&head).into_owned();
                let line = head.lines().next().unwrap_or("").to_string();
                log.lock().unwrap().push(line.clone());
                if line.starts_with("GET /mcp ") {
                    let event = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\nevent: endpoint\ndata: {endpoint}\n\n"
                    );
                    stream.write_all(event.as_bytes()).await.unwrap();
                    // The stream stays open, as a legacy server's does.
                    tokio::time::sleep(Duration::from_secs(30)).await;
                } else if line.starts_with("POST /mcp ") {
                    let refused = "HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n";
                    let _ = stream.write_all(refused.as_bytes()).await;
                }
                // Anything else (the POST to a same-origin endpoint) is seen and left unanswered.
            });
        }
    });
    let url = format!("http://127.0.0.1:{port}/mcp");
    let options = ClientOptions::default().with_timeout(Duration::from_secs(5));
    let config = HttpConfig::new(&url);
    let connect = Client::connect_http("legacy", &config, options);
    let error = match tokio::time::timeout(Duration::from_secs(10), connect).await {
        Ok(Ok(_)) => panic!("connected to a server that never answers"),
        Ok(Err(e)) => Some(e.to_string()),
        Err(_) => None,
    };
    let seen = seen.lock().unwrap().clone();
    let reached = *reached.lock().unwrap();
    (error, seen, reached)
}

/// The legacy transport POSTs every message (credentials included) to the URL its
/// `endpoint` event names: one on another origin (host, port or scheme) is refused, and
/// nothing is sent there; one on the server's own origin is used.
#[tokio::test]
async fn a_legacy_endpoint_on_another_origin_is_refused() {
    for endpoint in [
        "http://{elsewhere}/messages?session=1",
        "http://127.0.0.1:{port}@{elsewhere}/messages",
        "https://127.0.0.1:{port}/messages",
        "http://localhost:{port}/messages",
    ] {
        let (error, seen, reached) = legacy_endpoint(endpoint).await;
        let error = error.unwrap_or_else(|| panic!("{endpoint}: no error within 10 s"));
        // Userinfo makes it no plain URL: refused before its origin is compared.
        assert!(
            error.contains("on another origin; refusing it")
                || error.contains("or a user name in it; refusing it"),
            "{endpoint}: {error}"
        );
        assert_eq!(
            reached, 0,
            "{endpoint}: a connection reached the other origin"
        );
        assert!(
            seen.iter()
                .all(|l| l.starts_with("GET /mcp ") || l.starts_with("POST /mcp ")),
            "{endpoint}: {seen:?}"
        );
    }
    // The control: the same origin, by path or in full, is where the messages go.
    for endpoint in [
        "/messages?session=1",
        "http://127.0.0.1:{port}/messages?session=1",
    ] {
        let (error, seen, reached) = legacy_endpoint(endpoint).await;
        assert!(
            seen.iter()
                .any(|l| l.starts_with("POST /messages?session=1 ")),
            "{endpoint}: {seen:?} {error:?}"
        );
        assert_eq!(reached, 0);
    }
}
