//! The client over stdio against the bundled fixture server.
#![cfg(feature = "cli")]

mod common;

use agenvoy_mcp::wire::jsonrpc::ErrorObject;
use agenvoy_mcp::{Client, ClientOptions, ErrorKind};
use agenvoy_mcp::{Handlers, RequestOptions};
use agenvoy_mcp::{Progress, Root, SamplingAnswer, SamplingRequest};
use common::*;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const CAP: usize = 1_048_576;

async fn call(client: &Client, tool: &str, args: Value) -> agenvoy_mcp::ToolOutput {
    client
        .call_tool(tool, args)
        .await
        .expect("the call succeeds")
}

#[tokio::test]
async fn handshake_keeps_what_the_server_said() {
    let client = connect(&[], ClientOptions::default()).await;
    let d = client.details();
    assert_eq!(d.era.name(), "handshake");
    assert_eq!(d.protocol_version, "2025-11-25");
    assert_eq!(d.server_info["name"], "agenvoy-fixture");
    assert!(d.has_capability("tools"));
    assert!(
        d.instructions
            .as_deref()
            .unwrap()
            .starts_with("The agenvoy fixture server")
    );
    client.close().await;
}

#[tokio::test]
async fn older_versions_are_accepted_and_unknown_ones_refused() {
    for v in ["2025-06-18", "2025-03-26", "2024-11-05"] {
        let client = connect(&[&format!("--mode=version={v}")], ClientOptions::default()).await;
        assert_eq!(client.details().protocol_version, v);
        assert_eq!(
            call(&client, "echo", json!({"text": "old"})).await.text,
            "old"
        );
        client.close().await;
    }
    let err = Client::connect_stdio(
        "fixture",
        &fixture(&["--mode=version=2099-01-01"]),
        ClientOptions::default(),
    )
    .await
    .err()
    .expect("an unknown version is refused");
    let message = err.to_string();
    assert!(
        message.contains("2099-01-01") && message.contains("2025-11-25"),
        "{message}"
    );
    assert_eq!(err.method(), Some("initialize"));
}

#[tokio::test]
async fn tools_list_follows_every_page() {
    let client = connect(&["--page-size", "2"], ClientOptions::default()).await;
    let names = tool_names(&client).await;
    assert_eq!(
        names,
        [
            "echo",
            "add",
            "big",
            "slow",
            "fail",
            "cancellations",
            "client_request",
            "add_tool",
            "env"
        ]
    );
    let echo = &client.list_tools().await.unwrap()[0];
    assert_eq!(echo.input_schema_value()["required"], json!(["text"]));
    client.close().await;
}

#[tokio::test]
async fn tools_list_stops_at_a_repeated_or_empty_cursor_and_at_the_page_limit() {
    let names =
        |tools: Vec<agenvoy_mcp::Tool>| tools.into_iter().map(|t| t.name).collect::<Vec<_>>();
    let client = connect(
        &["--page-size", "2", "--mode", "cursor-repeat"],
        ClientOptions::default(),
    )
    .await;
    assert_eq!(
        names(client.list_tools().await.unwrap()),
        ["echo", "add", "big", "slow"]
    );
    client.close().await;
    let client = connect(
        &["--page-size", "2", "--mode", "cursor-empty"],
        ClientOptions::default(),
    )
    .await;
    assert_eq!(names(client.list_tools().await.unwrap()), ["echo", "add"]);
    client.close().await;
    let client = connect(&["--mode", "endless-pages"], ClientOptions::default()).await;
    let tools = names(client.list_tools().await.unwrap());
    assert_eq!(tools.len(), agenvoy_mcp::unstable::MAX_TOOL_PAGES);
    assert_eq!(tools.last().unwrap(), "tool_999");
    client.close().await;
}

/// A server's lists are bounded as a whole, however they are paged: a page of 40,000 tiny
/// tools under the message cap passes the count, pages of 3.8 MB pass the bytes at the third;
/// either fails the listing with an error that says so, and nothing of the list is kept. A
/// list within the bounds is read whole, and each tool keeps its members as given.
#[tokio::test]
async fn a_list_past_its_bounds_fails_whatever_its_pages() {
    let client = connect(
        &["--mode", "list-flood=1000x40000"],
        ClientOptions::default(),
    )
    .await;
    let err = client.list_tools().await.unwrap_err();
    assert!(
        err.to_string().contains(
            "tools/list: protocol error: the server lists more than this client keeps of one server (10000 tools, 8388608 bytes of list pages; it sent 40000 tools in"
        ),
        "{err}"
    );
    client.close().await;
    let client = connect(&["--mode", "list-flood=1000x100"], ClientOptions::default()).await;
    let err = client.list_tools().await.unwrap_err();
    assert!(err.to_string().contains("it sent 300 tools in"), "{err}");
    assert!(
        err.to_string().contains("raise ClientOptions::list_limits"),
        "{err}"
    );
    client.close().await;

    let client = connect(&["--mode", "list-flood=2x100"], ClientOptions::default()).await;
    let tools = client.list_tools().await.unwrap();
    assert_eq!(tools.len(), 200);
    assert_eq!(tools[199].name, "t1_99");
    assert_eq!(tools[199].input_schema.get(), r#"{"type":"object"}"#);
    client.close().await;
    let options = ClientOptions::default()
        .with_list_limits(agenvoy_mcp::ListLimits::default().with_max_items(199));
    let client = connect(&["--mode", "list-flood=2x100"], options).await;
    let err = client.list_tools().await.unwrap_err();
    assert!(err.to_string().contains("(199 tools,"), "{err}");
    client.close().await;
}

#[tokio::test]
async fn calls_render_text_and_flag_tool_errors() {
    let client = connect(&[], ClientOptions::default()).await;
    assert_eq!(
        call(&client, "echo", json!({"text": "héllo"})).await.text,
        "héllo"
    );
    // Content blocks win over structuredContent.
    assert_eq!(
        call(&client, "add", json!({"a": 2, "b": 3})).await.text,
        "5"
    );
    let failed = call(&client, "fail", json!({})).await;
    assert!(failed.is_error);
    assert_eq!(failed.text, "the fail tool failed, as asked");
    let err = client.call_tool("nope", json!({})).await.unwrap_err();
    assert!(
        matches!(&err.kind(), ErrorKind::Rpc(e) if e.code == -32602),
        "{err}"
    );
    assert!(err.to_string().contains("tools/call"), "{err}");
    client.close().await;
}

#[tokio::test]
async fn a_result_past_the_cap_is_only_rendered_and_a_request_for_its_value_says_so() {
    let client = connect(&[], ClientOptions::default()).await;
    let session = client.session();
    let big = |bytes: u64| Some(json!({"name": "big", "arguments": {"bytes": bytes}}));

    // Under the cap the result is kept whole, so it can be had as a value.
    let small = session
        .request("tools/call", big(1000), RequestOptions::default())
        .await
        .expect("a result under the cap is kept");
    assert_eq!(
        small["content"][0]["text"].as_str().map(str::len),
        Some(1000)
    );

    // Past the cap (and under max_message) only the rendering is kept: a tool call gets it,
    // a request for the value is told why it cannot have it.
    let err = session
        .request("tools/call", big(2_000_000), RequestOptions::default())
        .await
        .expect_err("a result past the cap is not kept whole");
    let text = err.to_string();
    assert!(
        text.contains("more than this client keeps of one message"),
        "{text}"
    );
    assert!(text.contains("output_cap"), "{text}");
    assert!(text.contains("tools/call"), "{text}");
    let out = call(&client, "big", json!({"bytes": 2_000_000})).await;
    assert_eq!(out.total_bytes, 2_000_000);
    client.close().await;
}

#[tokio::test]
async fn big_results_are_capped_with_the_exact_marker() {
    let client = connect(&[], ClientOptions::default()).await;
    let out = call(&client, "big", json!({"bytes": 3_000_000})).await;
    let marker = "\n\n[mcp output truncated: 3000000 bytes total, 1048576 kept]";
    assert!(out.text.ends_with(marker));
    assert_eq!(out.text.len(), CAP + marker.len());
    assert_eq!(out.total_bytes, 3_000_000);

    let out = call(
        &client,
        "big",
        json!({"bytes": 2_500_000, "multibyte": true, "escapes": true}),
    )
    .await;
    let (kept, marker) = out
        .text
        .split_at(out.text.rfind("\n\n[mcp output truncated: ").unwrap());
    assert!(
        kept.len() <= CAP && kept.len() > CAP - 4,
        "kept {}",
        kept.len()
    );
    assert_eq!(
        marker,
        format!(
            "\n\n[mcp output truncated: 2500000 bytes total, {} kept]",
            kept.len()
        )
    );
    assert!(kept.contains('😀') && kept.contains('"') && kept.contains('\u{1}'));

    let exact = call(&client, "big", json!({"bytes": CAP})).await;
    assert_eq!(exact.text.len(), CAP, "text at the cap is not cut");
    client.close().await;
}

#[tokio::test]
async fn many_requests_in_flight_are_correlated() {
    let client = Arc::new(connect(&[], ClientOptions::default()).await);
    let slow = {
        let client = client.clone();
        tokio::spawn(async move { call(&client, "slow", json!({"seconds": 0.5})).await })
    };
    // Collected: spawning is lazy in `map`, and the calls must all be in flight at once.
    let calls: Vec<_> = (0..50)
        .map(|i| {
            let client = client.clone();
            tokio::spawn(async move {
                (
                    i,
                    call(&client, "echo", json!({"text": format!("n{i}")}))
                        .await
                        .text,
                )
            })
        })
        .collect();
    for handle in calls {
        let (i, text) = handle.await.unwrap();
        assert_eq!(text, format!("n{i}"));
    }
    assert_eq!(slow.await.unwrap().text, "slept 0.5 s");
    client.close().await;
}

/// Requests larger than the pipe (64 KiB) are written partly by their caller and finished by
/// the writer task; small ones sent meanwhile must queue behind them, never into them.
#[tokio::test]
async fn requests_larger_than_the_pipe_stay_whole_beside_small_ones() {
    let client = Arc::new(connect(&[], ClientOptions::default()).await);
    // Collected: spawning is lazy in `map`, and the calls must all be in flight at once.
    let calls: Vec<_> = (0..24)
        .map(|i| {
            let client = client.clone();
            tokio::spawn(async move {
                let text = if i % 3 == 0 {
                    format!("{i}:{}", "x".repeat(300_000 + i * 1000))
                } else {
                    format!("n{i}")
                };
                let answer = call(&client, "echo", json!({ "text": text })).await.text;
                (text, answer)
            })
        })
        .collect();
    for handle in calls {
        let (text, answer) = handle.await.unwrap();
        assert_eq!(answer.len(), text.len());
        assert!(answer == text, "an answer differs from its request's text");
    }
    client.close().await;
}

/// Callers that keep calling get their answers in batches (the `batch` server writes what it
/// answers to the lines it read together in one write), and their next requests go out
/// gathered in one write (the cork); large ones among them, more than the pipe holds, must not
/// break the order or mix two requests.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_gathered_while_answers_arrive_together_stay_whole_and_in_order() {
    let client = Arc::new(connect(&["--mode", "batch"], ClientOptions::default()).await);
    let callers: Vec<_> = (0..16)
        .map(|c| {
            let client = client.clone();
            tokio::spawn(async move {
                for n in 0..40 {
                    let text = if (c + n) % 5 == 0 {
                        format!("{c}/{n}:{}", "y".repeat(300_000))
                    } else {
                        format!("{c}/{n}")
                    };
                    let answer = call(&client, "echo", json!({ "text": text })).await.text;
                    assert!(answer == text, "caller {c}, call {n}: the answer differs");
                }
            })
        })
        .collect();
    for caller in callers {
        caller.await.unwrap();
    }
    client.close().await;
}

/// The same from callers joined on the test's own thread (`block_on` on the multi-threaded
/// runtime, as `#[tokio::main]` runs them), outside the runtime's tasks: those that join the
/// cork before the writer's turn are written with it (the last one owed writes it), the others
/// on their own. They stop after different numbers of calls, so some answers' callers never
/// send again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_gathered_from_callers_outside_the_tasks_stay_whole_and_in_order() {
    let client = connect(&["--mode", "batch"], ClientOptions::default()).await;
    let callers = (0..16).map(|c| {
        let client = &client;
        async move {
            for n in 0..10 + c * 3 {
                let text = if (c + n) % 7 == 0 {
                    format!("{c}/{n}:{}", "z".repeat(300_000))
                } else {
                    format!("{c}/{n}")
                };
                let answer = call(client, "echo", json!({ "text": text })).await.text;
                assert!(answer == text, "caller {c}, call {n}: the answer differs");
            }
        }
    });
    futures::future::join_all(callers).await;
    client.close().await;
}

async fn cancellations(client: &Client) -> Vec<Value> {
    serde_json::from_str(&call(client, "cancellations", json!({})).await.text).unwrap()
}

/// The cancellations the server received, once it received one (at most 10 s): the
/// notification is sent in the background, so it is waited for, not slept for.
async fn first_cancellations(client: &Client) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let seen = cancellations(client).await;
        if !seen.is_empty() || Instant::now() > deadline {
            return seen;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_timeout_fails_the_call_and_cancels_it() {
    let client = connect(&[], ClientOptions::default()).await;
    let options = RequestOptions::default().with_timeout(Duration::from_millis(300));
    let started = Instant::now();
    let err = client
        .call_tool_with("slow", json!({"seconds": 5}), options)
        .await
        .unwrap_err();
    assert!(err.is_timeout(), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(err.to_string().contains("no response after 0.3 s"), "{err}");
    let cancelled = first_cancellations(&client).await;
    assert_eq!(cancelled.len(), 1, "{cancelled:?}");
    assert_eq!(cancelled[0]["reason"], "timed out");
    assert!(cancelled[0]["requestId"].is_i64());
    client.close().await;
}

#[tokio::test]
async fn dropping_a_call_cancels_it() {
    let client = connect(&[], ClientOptions::default()).await;
    let pending = client.call_tool("slow", json!({"seconds": 5}));
    assert!(
        tokio::time::timeout(Duration::from_millis(200), pending)
            .await
            .is_err()
    );
    let cancelled = first_cancellations(&client).await;
    assert_eq!(cancelled.len(), 1, "{cancelled:?}");
    assert_eq!(cancelled[0]["reason"], "the caller stopped waiting");
    client.close().await;
}

#[tokio::test]
async fn progress_reaches_the_callback_and_can_keep_a_call_alive() {
    let client = connect(&[], ClientOptions::default()).await;
    let seen = Arc::new(Mutex::new(Vec::<Progress>::new()));
    let sink = seen.clone();
    let options = RequestOptions::default()
        .with_timeout(Duration::from_secs(2))
        .with_progress(move |p| sink.lock().unwrap().push(p))
        .with_progress_resets_timeout(true);
    // 2.5 s in total, but a step every 0.5 s keeps restarting the 2 s timeout (a wide margin
    // for a busy machine: a step would have to come 1.5 s late).
    let out = client
        .call_tool_with("slow", json!({"seconds": 2.5, "steps": 5}), options.clone())
        .await
        .unwrap();
    assert_eq!(out.text, "slept 2.5 s");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 5);
    let last = &seen[4];
    assert_eq!(
        (last.progress, last.total, last.message.as_deref()),
        (Some(5.0), Some(5.0), Some("step 5 of 5"))
    );
    assert_eq!(last.status, None);

    let no_reset = options.with_progress_resets_timeout(false);
    let err = client
        .call_tool_with("slow", json!({"seconds": 2.5, "steps": 5}), no_reset)
        .await
        .unwrap_err();
    assert!(err.is_timeout(), "{err}");
    client.close().await;
}

/// The fixture's answer to its request `method`, whose params fit both a sampling request and
/// a form.
async fn ask(client: &Client, method: &str) -> Value {
    let params = json!({"messages": [{"role": "user", "content": {"type": "text", "text": "x"}}],
                        "message": "m", "requestedSchema": {"type": "object"}});
    let out = call(
        client,
        "client_request",
        json!({"method": method, "params": params}),
    )
    .await;
    serde_json::from_str(&out.text).unwrap()
}

#[tokio::test]
async fn server_requests_get_the_embedders_answers() {
    let client = connect(&[], ClientOptions::default()).await;
    assert_eq!(ask(&client, "ping").await, json!({"result": {}}));
    assert_eq!(
        ask(&client, "roots/list").await,
        json!({"result": {"roots": []}})
    );
    for method in ["sampling/createMessage", "elicitation/create", "no/such"] {
        assert_eq!(
            ask(&client, method).await["error"]["code"],
            -32601,
            "{method}"
        );
    }
    client.close().await;

    let handlers = Handlers::default()
        .with_roots(vec![Root::new("file:///work").with_name("work")])
        .with_sampling(|request: SamplingRequest| async move {
            Ok(SamplingAnswer::text(&request.messages[0].text(), "echo"))
        })
        .with_elicitation(|_| async { Err(ErrorObject::new(-1, "declined by test")) });
    let client = connect(&[], ClientOptions::default().with_handlers(handlers)).await;
    assert_eq!(
        ask(&client, "roots/list").await,
        json!({"result": {"roots": [{"uri": "file:///work", "name": "work"}]}})
    );
    assert_eq!(
        ask(&client, "sampling/createMessage").await["result"]["content"]["text"],
        "x"
    );
    assert_eq!(
        ask(&client, "elicitation/create").await["error"]["message"],
        "declined by test"
    );
    client.close().await;
}

#[tokio::test]
async fn junk_on_stdout_is_skipped() {
    let client = connect(&["--mode", "junk-stdout"], ClientOptions::default()).await;
    assert_eq!(client.list_tools().await.unwrap().len(), 9);
    assert_eq!(
        call(&client, "echo", json!({"text": "still here"}))
            .await
            .text,
        "still here"
    );
    client.close().await;
}

#[tokio::test]
async fn a_crash_mid_call_fails_the_call_at_once() {
    let client = connect(&["--mode", "crash-mid-call"], ClientOptions::default()).await;
    let pid = server_pid(&client);
    let started = Instant::now();
    let err = client
        .call_tool("echo", json!({"text": "x"}))
        .await
        .unwrap_err();
    assert!(err.is_closed(), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(client.is_closed());
    let again = client
        .call_tool("echo", json!({"text": "x"}))
        .await
        .unwrap_err();
    assert!(again.is_closed(), "{again}");
    client.close().await;
    assert_group_gone_within(pid, Duration::from_secs(1));
}

/// A server that exits at start says why: the error names its exit status (or signal) and its
/// last stderr lines, bounded, escaped, with its `env` values hidden; and being a handshake, it
/// is not a request that "may have been carried out".
// Unix: `sh`, process groups, SIGTERM; tests/windows.rs has the Windows counterparts.
#[cfg(unix)]
#[tokio::test]
async fn a_server_that_exits_at_start_names_its_status_and_last_stderr_lines() {
    let script = "for i in $(seq 1 40); do echo \"line $i\" >&2; done; \
                  printf 'token %s \\033[2J\\n' \"$TOKEN\" >&2; exit 3";
    let config = agenvoy_mcp::StdioConfig::new("sh")
        .args(["-c", script])
        .env("TOKEN", "s3cret-value");
    let err = Client::connect_stdio("dies", &config, ClientOptions::default())
        .await
        .err()
        .expect("the server exits");
    assert!(matches!(err.kind(), ErrorKind::Closed(_)), "{err:?}");
    assert!(!err.may_have_run(), "{err}");
    assert_eq!(
        err.to_string(),
        "mcp server \"dies\", server/discover: connection closed: the server exited (exit status: 3); its last stderr lines: line 37 | line 38 | line 39 | line 40 | token *** \\u{1b}[2J; check the server's command or URL (and what it wrote to stderr), then try again"
    );

    let config = agenvoy_mcp::StdioConfig::new("sh").args(["-c", "kill -9 $$"]);
    let err = Client::connect_stdio("killed", &config, ClientOptions::default())
        .await
        .err()
        .expect("the server is killed");
    assert!(
        err.to_string()
            .contains("the server exited (signal: 9 (SIGKILL))"),
        "{err}"
    );
}

#[tokio::test]
async fn a_hanging_server_times_out_and_is_stopped() {
    let options = ClientOptions::default().with_timeout(Duration::from_millis(500));
    let client = connect(&["--mode", "hang"], options).await;
    let pid = server_pid(&client);
    let err = client
        .call_tool("echo", json!({"text": "x"}))
        .await
        .unwrap_err();
    assert!(err.is_timeout(), "{err}");
    client.close().await;
    assert_group_gone_within(pid, Duration::from_secs(5));
}

#[tokio::test]
async fn no_initialize_response_times_out_and_leaves_nothing() {
    agenvoy_mcp::unstable::become_subreaper();
    let options = ClientOptions::default().with_timeout(Duration::from_millis(500));
    let started = Instant::now();
    let err = Client::connect_stdio(
        "fixture",
        &fixture(&["--mode", "no-init-response"]),
        options,
    )
    .await
    .err()
    .expect("no answer to initialize");
    assert!(err.is_timeout(), "{err}");
    assert_eq!(err.method(), Some("initialize"));
    assert!(started.elapsed() < Duration::from_secs(8));
    #[cfg(unix)]
    assert_eq!(
        processes_with_arg("no-init-response"),
        Vec::<u32>::new(),
        "the server was stopped"
    );
}

// Unix: `sh`, process groups, SIGTERM; tests/windows.rs has the Windows counterparts.
#[cfg(unix)]
#[tokio::test]
async fn close_stops_grandchildren_too() {
    let client = connect(&["--mode", "spawn-grandchild"], ClientOptions::default()).await;
    let pid = server_pid(&client);
    assert_eq!(
        group_members(pid).len(),
        2,
        "the server and its sleeping grandchild"
    );
    let started = Instant::now();
    client.close().await;
    // Closed means gone (the orphaned grandchild's zombie is reaped by its new parent).
    assert_group_gone_within(pid, Duration::from_secs(2));
    // Stdin closed, 2 s, SIGTERM: the close sequence's bound, with a margin.
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "took {:?}",
        started.elapsed()
    );
}

// Unix: `sh`, process groups, SIGTERM; tests/windows.rs has the Windows counterparts.
#[cfg(unix)]
#[tokio::test]
async fn close_kills_a_server_that_ignores_sigterm() {
    let client = connect(&["--mode", "ignore-sigterm"], ClientOptions::default()).await;
    let pid = server_pid(&client);
    let started = Instant::now();
    client.close().await;
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(4) && took < Duration::from_secs(10),
        "took {took:?}"
    );
    assert_group_gone_within(pid, Duration::from_secs(2));
}

#[tokio::test]
async fn dropping_the_client_stops_the_server() {
    let client = connect(&["--mode", "spawn-grandchild"], ClientOptions::default()).await;
    let pid = server_pid(&client);
    drop(client);
    assert_group_gone_within(pid, Duration::from_secs(5));
}

#[tokio::test]
async fn a_missing_command_is_a_start_error() {
    let config = agenvoy_mcp::StdioConfig::new("/nonexistent/mcp-server");
    let err = Client::connect_stdio("ghost", &config, ClientOptions::default())
        .await
        .err()
        .unwrap();
    assert!(matches!(err.kind(), ErrorKind::Spawn(_)));
    assert!(
        err.to_string()
            .starts_with("mcp server \"ghost\": could not start the server"),
        "{err}"
    );
    // The I/O error is kept, not only its text.
    let source = std::error::Error::source(&err).expect("the spawn error keeps its cause");
    let io = source
        .downcast_ref::<std::io::Error>()
        .expect("an I/O error");
    assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
    assert!(
        err.kind_text().starts_with("could not start the server"),
        "{}",
        err.kind_text()
    );
}

/// A server that stops reading stdin cannot hold a call past its timeout, even when the call's
/// own arguments (120 KB, more than a pipe holds) are still being written; closing does not
/// wait for that write, and the stuck server is stopped by the close sequence.
#[tokio::test]
async fn a_server_that_stops_reading_cannot_hold_a_call_or_close() {
    let client = connect(&["--mode", "stop-reading"], ClientOptions::default()).await;
    let pid = server_pid(&client);
    tool_names(&client).await;
    let options = RequestOptions::default().with_timeout(Duration::from_secs(2));
    let big = json!({"text": "x".repeat(120_000)});
    let started = Instant::now();
    let call = client.call_tool_with("echo", big, options);
    let err = tokio::time::timeout(Duration::from_secs(10), call)
        .await
        .expect("the call ends within its bound")
        .unwrap_err();
    assert!(err.is_timeout(), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    let started = Instant::now();
    tokio::time::timeout(Duration::from_secs(10), client.close())
        .await
        .expect("close ends");
    // Stdin closed, 2 s of grace, then SIGTERM.
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_group_gone_within(pid, Duration::from_secs(1));
}

/// Runs `command` and returns its output with its peak resident memory in KiB (`wait4`).
#[cfg(unix)]
#[allow(
    clippy::zombie_processes,
    reason = "wait4 reaps it, to read its rusage"
)]
fn run_measured(mut command: std::process::Command) -> (std::process::Output, i64) {
    use std::io::Read;
    let mut child = command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let reader = std::thread::spawn(move || {
        let mut text = Vec::new();
        err.read_to_end(&mut text).unwrap();
        text
    });
    let mut stdout = Vec::new();
    out.read_to_end(&mut stdout).unwrap();
    let stderr = reader.join().unwrap();
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value, and wait4 writes only into the two
    // out-parameters it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let reaped = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(reaped, child.id() as i32);
    let output = std::process::Output {
        status: std::os::unix::process::ExitStatusExt::from_raw(status),
        stdout,
        stderr,
    };
    (output, usage.ru_maxrss)
}

/// A server that floods the client with `ping` requests and never reads its stdin: the
/// client answers a bounded number, drops the rest with one warning, and its own memory
/// stays small (it grew to gigabytes in seconds when each request had a task of its own).
#[cfg(unix)]
#[test]
fn a_server_flooding_requests_cannot_grow_the_client() {
    let mut probe = std::process::Command::new(binary());
    probe
        .args(["probe", "--timeout", "3", "--", &fixture_binary()])
        .args(["--mode", "flood"]);
    let (output, peak_kib) = run_measured(probe);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("no response after 3.0 s"), "{stderr}");
    assert_eq!(
        stderr.matches("requests to the client unanswered").count(),
        1,
        "{stderr}"
    );
    assert!(peak_kib < 64 * 1024, "peak RSS {peak_kib} KiB");
}

/// Progress may keep a call alive only up to its hard maximum: a tool that reports progress
/// forever still ends in a timeout that names the whole wait.
#[tokio::test]
async fn progress_cannot_extend_a_call_past_its_maximum() {
    let client = connect(&[], ClientOptions::default()).await;
    let options = RequestOptions::default()
        .with_timeout(Duration::from_secs(2))
        .with_progress(|_| {})
        .with_progress_resets_timeout(true)
        .with_max_duration(Duration::from_secs(3));
    // A step every 0.25 s for 10 s: each would restart the 2 s timeout.
    let started = Instant::now();
    let err = client
        .call_tool_with("slow", json!({"seconds": 10, "steps": 40}), options)
        .await
        .unwrap_err();
    let waited = started.elapsed();
    assert!(
        matches!(err.kind(), ErrorKind::Timeout(d) if *d == Duration::from_secs(3)),
        "{err}"
    );
    assert!(err.to_string().contains("no response after 3.0 s"), "{err}");
    // The maximum is the promise: well before the tool's 10 s.
    assert!(waited < Duration::from_secs(8), "{waited:?}");
    client.close().await;
}

/// A progress callback runs outside the session's locks: one that starts and drops another
/// request of the same session (which takes those locks) does not deadlock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_progress_callback_may_use_the_session() {
    let client = Arc::new(connect(&[], ClientOptions::default()).await);
    let session = client.session().clone();
    let dropped = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = dropped.clone();
    let options = RequestOptions::default().with_progress(move |_| {
        // Polling a request once registers it; dropping it cancels it: both lock.
        let mut request = Box::pin(session.request("ping", None, RequestOptions::default()));
        let waker = futures::task::noop_waker();
        let mut cx = std::task::Context::from_waker(&waker);
        let _ = request.as_mut().poll(&mut cx);
        drop(request);
        count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    });
    let out = tokio::time::timeout(
        Duration::from_secs(10),
        client.call_tool_with("slow", json!({"seconds": 0.3, "steps": 3}), options),
    )
    .await
    .expect("no deadlock")
    .unwrap();
    assert_eq!(out.text, "slept 0.3 s");
    assert_eq!(dropped.load(std::sync::atomic::Ordering::SeqCst), 3);
    client.close().await;
}

/// At most 16 of a server's requests are answered at once: with 16 sampling requests held in
/// the embedder's handler, a 17th to 20th are dropped (their calls time out, and the handler
/// never sees them, not even once the 16 are released); the 16 are then answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_most_16_server_requests_are_answered_at_once() {
    use tokio::sync::watch;
    let (release, released) = watch::channel(false);
    let running = Arc::new(Mutex::new((0usize, 0usize, 0usize))); // (now, peak, total)
    let (changed, mut seen) = watch::channel(0usize);
    let counts = running.clone();
    let handlers = Handlers::default().with_sampling(move |_| {
        let counts = counts.clone();
        let changed = changed.clone();
        let mut released = released.clone();
        async move {
            {
                let mut c = counts.lock().unwrap();
                c.0 += 1;
                c.1 = c.1.max(c.0);
                c.2 += 1;
                changed.send_replace(c.0);
            }
            let _ = released.wait_for(|r| *r).await;
            counts.lock().unwrap().0 -= 1;
            Ok(SamplingAnswer::text("ok", "test"))
        }
    });
    let client = Arc::new(connect(&[], ClientOptions::default().with_handlers(handlers)).await);
    let ask = |timeout: Duration| {
        let client = client.clone();
        tokio::spawn(async move {
            let options = RequestOptions::default().with_timeout(timeout);
            let params =
                json!({"messages": [{"role": "user", "content": {"type": "text", "text": "x"}}]});
            let args = json!({"method": "sampling/createMessage", "params": params});
            client.call_tool_with("client_request", args, options).await
        })
    };
    let held: Vec<_> = (0..16).map(|_| ask(Duration::from_secs(120))).collect();
    tokio::time::timeout(Duration::from_secs(60), seen.wait_for(|n| *n == 16))
        .await
        .expect("16 requests reach the handler")
        .unwrap();
    // Four more while the 16 are held: dropped, so their calls time out.
    let extra: Vec<_> = (0..4).map(|_| ask(Duration::from_secs(2))).collect();
    for call in extra {
        let outcome = tokio::time::timeout(Duration::from_secs(60), call)
            .await
            .expect("the call ends")
            .unwrap();
        let err = outcome.expect_err("a 17th request is not answered");
        assert!(matches!(err.kind(), ErrorKind::Timeout(_)), "{err}");
    }
    release.send_replace(true);
    for call in held {
        let outcome = tokio::time::timeout(Duration::from_secs(60), call)
            .await
            .expect("the call ends")
            .unwrap();
        assert!(outcome.expect("answered").text.contains("ok"));
    }
    let (now, peak, total) = *running.lock().unwrap();
    assert_eq!((now, peak, total), (0, 16, 16), "(running, peak, handled)");
    client.close().await;
}

/// `max_message` (4 MiB by default) holds for messages that are not tool results: a
/// tools/list answer over it fails that request, clearly, and the session goes on; one under
/// it is kept whole.
#[tokio::test]
async fn a_message_over_max_message_that_is_not_a_result_is_refused() {
    let client = connect(&[], ClientOptions::default()).await;
    assert_eq!(ClientOptions::default().max_message, 4 << 20);
    // A tool whose name makes the list 3 MiB: kept.
    let name = "n".repeat(3 << 20);
    call(&client, "add_tool", json!({"name": name})).await;
    let tools = client.list_tools().await.expect("a 3 MiB list is kept");
    assert!(tools.iter().any(|t| t.name.len() == name.len()));
    // Another 2 MiB: the list is now 5 MiB.
    let more = "m".repeat(2 << 20);
    call(&client, "add_tool", json!({"name": more})).await;
    let err = match client.list_tools().await {
        Ok(tools) => panic!("a 5 MiB list of {} tools was kept", tools.len()),
        Err(e) => e,
    };
    let text = err.to_string();
    assert!(text.contains("tools/list"), "{text}");
    assert!(
        text.contains("more than this client keeps of one message"),
        "{text}"
    );
    assert_eq!(
        call(&client, "echo", json!({"text": "on"})).await.text,
        "on"
    );
    client.close().await;
}

/// Nor does one resource read: `probe` reading a 64 MiB resource, over stdio and over HTTP,
/// peaks far below it, as a tool result's does (the same 48 MiB bound, under its size).
#[cfg(unix)]
#[test]
fn a_huge_resource_read_is_never_held_whole_over_stdio_or_http() {
    const BYTES: u64 = 64 << 20;
    let uri = format!("fixture://big/{BYTES}");
    let http = HttpFixture::start("json", &[]);
    let stdio = ["--", &fixture_binary()];
    for (transport, server) in [("stdio", &stdio[..]), ("http", &[http.url.as_str()][..])] {
        let mut probe = std::process::Command::new(binary());
        probe
            .args(["probe", "--timeout", "300", "--read", &uri])
            .args(server);
        let started = Instant::now();
        let (output, peak_kib) = run_measured(probe);
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "{transport}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        eprintln!(
            "{transport}: a {BYTES}-byte read in {:?}, peak RSS {peak_kib} KiB",
            started.elapsed()
        );
        assert!(
            peak_kib < 48 * 1024,
            "{transport}: peak RSS {peak_kib} KiB for a {BYTES}-byte read"
        );
        let marker = format!("[mcp output truncated: {BYTES} bytes total, {CAP} kept]");
        assert!(stdout.contains(&marker), "{transport}: no marker");
    }
}

/// One tool result never needs its whole size: `probe` calling for a 96 MiB result, over stdio
/// and over HTTP, peaks far below it (the cap is 1 MiB; the bound here, 48 MiB, leaves room for
/// the binary and a debug build, and is half the result).
#[cfg(unix)]
#[test]
fn a_huge_result_is_never_held_whole_over_stdio_or_http() {
    const BYTES: u64 = 96 << 20;
    let args = format!(r#"{{"bytes": {BYTES}}}"#);
    let http = HttpFixture::start("json", &[]);
    let stdio = ["--", &fixture_binary()];
    for (transport, server) in [("stdio", &stdio[..]), ("http", &[http.url.as_str()][..])] {
        let mut probe = std::process::Command::new(binary());
        probe
            .args([
                "probe",
                "--timeout",
                "300",
                "--call",
                "big",
                "--args",
                &args,
            ])
            .args(server);
        let started = Instant::now();
        let (output, peak_kib) = run_measured(probe);
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "{transport}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        eprintln!(
            "{transport}: {BYTES} bytes in {:?}, peak RSS {peak_kib} KiB",
            started.elapsed()
        );
        assert!(
            peak_kib < 48 * 1024,
            "{transport}: peak RSS {peak_kib} KiB for a {BYTES}-byte result"
        );
        let marker = format!("[mcp output truncated: {BYTES} bytes total, {CAP} kept]");
        assert!(stdout.contains(&marker), "{transport}: no marker");
    }
}
