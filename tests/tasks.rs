//! Tools called as tasks (2025-11-25): created, polled, fetched and rendered as any call,
//! with progress all along; cancelled when the call times out or is dropped; listed. Against
//! the fixture's `research` and `survey`, and server-everything's `simulate-research-query`.
//! Then the same scenarios in the 2026-07-28 revision's tasks extension, against the
//! fixture's `modern` mode over stdio and HTTP: the server decides, input requests are
//! answered with `tasks/update`, the ended task carries the result.
#![cfg(feature = "cli")]

mod common;

use agenvoy_mcp::TaskMode;
use agenvoy_mcp::TaskStatus;
use agenvoy_mcp::{Client, ClientOptions, ErrorKind, RequestOptions};
use agenvoy_mcp::{HttpConfig, StdioConfig};
use common::*;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The fixture's `cancellations` list, once it names `task_id` (waiting up to 5 s).
async fn task_cancelled(client: &Client, task_id: &str) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        let out = client.call_tool("cancellations", json!({})).await.unwrap();
        let list: Vec<Value> = serde_json::from_str(&out.text).unwrap();
        if list.iter().any(|c| c["taskId"] == task_id) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

#[tokio::test]
async fn a_required_task_runs_with_progress_and_renders_as_any_call() {
    let client = connect(&["--mode", "tasks"], ClientOptions::default()).await;
    let steps = Arc::new(Mutex::new(Vec::new()));
    let sink = steps.clone();
    let options = RequestOptions::default().with_progress(move |p| sink.lock().unwrap().push(p));
    let args = json!({"seconds": 0.3, "steps": 3, "poll_ms": 50});
    let out = client
        .call_tool_with("research", args, options)
        .await
        .unwrap();
    assert_eq!(out.text, "researched in 3 steps");
    assert!(!out.is_error);
    let steps = steps.lock().unwrap().clone();
    let numbered: Vec<f64> = steps.iter().filter_map(|p| p.progress).collect();
    assert_eq!(numbered, vec![1.0, 2.0, 3.0], "{steps:?}");
    // Its statuses come as progress too, with no number: first working, last completed.
    let statuses: Vec<(Option<f64>, Option<&str>)> = steps
        .iter()
        .filter(|p| p.status.is_some())
        .map(|p| (p.progress, p.status.as_deref()))
        .collect();
    assert_eq!(
        statuses.first(),
        Some(&(None, Some("working"))),
        "{steps:?}"
    );
    assert_eq!(
        statuses.last(),
        Some(&(None, Some("completed"))),
        "{steps:?}"
    );
    let tasks = client.list_tasks().await.unwrap();
    assert_eq!(tasks.len(), 1);
    assert_eq!(tasks[0].status, TaskStatus::Completed);
    let task = client.get_task(&tasks[0].task_id).await.unwrap();
    assert_eq!(task.poll_interval(), Some(Duration::from_millis(50)));
    // An ended task cannot be cancelled: the server's error.
    let refused = client.cancel_task(&task.task_id).await.unwrap_err();
    assert!(matches!(refused.kind(), ErrorKind::Rpc(_)), "{refused}");
    // A failed task's result is the tool error it was.
    let args = json!({"seconds": 0.05, "steps": 1, "fail": true});
    let out = client.call_tool("research", args).await.unwrap();
    assert!(out.is_error && out.text == "researched in 1 steps");
    client.close().await;
}

#[tokio::test]
async fn an_optional_task_runs_as_one_only_when_asked() {
    let client = connect(&["--mode", "tasks"], ClientOptions::default()).await;
    let args = json!({"seconds": 0.05, "steps": 1});
    let plain = client.call_tool("survey", args.clone()).await.unwrap();
    assert_eq!(plain.text, "researched in 1 steps");
    assert!(client.list_tasks().await.unwrap().is_empty());
    let options = RequestOptions::default().with_task(TaskMode::WhenSupported);
    let tasked = client
        .call_tool_with("survey", args.clone(), options)
        .await
        .unwrap();
    assert_eq!(tasked, plain);
    assert_eq!(client.list_tasks().await.unwrap().len(), 1);
    // Never: the required tool is refused by the server, as it asks.
    let options = RequestOptions::default().with_task(TaskMode::Never);
    let refused = client
        .call_tool_with("research", args, options)
        .await
        .unwrap_err();
    assert!(
        refused.to_string().contains("task augmentation"),
        "{refused}"
    );
    client.close().await;
}

#[tokio::test]
async fn a_task_past_its_deadline_is_cancelled() {
    let client = connect(&["--mode", "tasks"], ClientOptions::default()).await;
    let options = RequestOptions::default().with_timeout(Duration::from_millis(600));
    let started = Instant::now();
    let args = json!({"seconds": 30, "steps": 300, "poll_ms": 100});
    let e = client
        .call_tool_with("research", args, options)
        .await
        .unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Timeout(_)), "{e}");
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(task_cancelled(&client, "task-1").await, "tasks/cancel sent");
    let task = client.get_task("task-1").await.unwrap();
    assert_eq!(task.status, TaskStatus::Cancelled);
    client.close().await;
}

#[tokio::test]
async fn a_dropped_task_call_cancels_its_task() {
    let client = connect(&["--mode", "tasks"], ClientOptions::default()).await;
    let args = json!({"seconds": 30, "steps": 300, "poll_ms": 100});
    let call = client.call_tool("research", args);
    assert!(
        tokio::time::timeout(Duration::from_millis(500), call)
            .await
            .is_err()
    );
    assert!(task_cancelled(&client, "task-1").await, "tasks/cancel sent");
    client.close().await;
}

#[tokio::test]
async fn a_status_notification_ends_the_wait_and_polls_are_bounded() {
    let client = connect(&["--mode", "tasks"], ClientOptions::default()).await;
    // The server suggests a poll a minute (kept to 10 s) but tells of the end at once.
    let args = json!({"seconds": 0.2, "steps": 1, "poll_ms": 60000, "notify": true});
    let started = Instant::now();
    let out = client.call_tool("research", args).await.unwrap();
    assert_eq!(out.text, "researched in 1 steps");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    // A suggested interval of 0 is kept to the minimum: the call still ends.
    let args = json!({"seconds": 0.2, "steps": 2, "poll_ms": 0});
    let out = client.call_tool("research", args).await.unwrap();
    assert_eq!(out.text, "researched in 2 steps");
    client.close().await;
}

#[tokio::test]
async fn server_everything_runs_its_research_as_a_task() {
    let Some(program) = installed("node_modules/.bin/mcp-server-everything") else {
        return;
    };
    agenvoy_mcp::unstable::become_subreaper();
    let config = StdioConfig::new(program.display().to_string()).arg("stdio");
    let client = Client::connect_stdio("everything", &config, ClientOptions::default())
        .await
        .unwrap();
    let out = client
        .call_tool("simulate-research-query", json!({"topic": "rust"}))
        .await
        .unwrap();
    assert!(!out.is_error, "{}", out.text);
    assert!(out.text.contains("rust"), "{}", out.text);
    let tasks = client.list_tasks().await.unwrap();
    assert!(
        tasks.iter().any(|t| t.status == TaskStatus::Completed),
        "{tasks:?}"
    );
    client.close().await;
}

/// A client of the fixture's `modern` mode (2026-07-28, with the tasks extension), over
/// stdio or HTTP; the HTTP fixture lives as long as what is returned.
async fn modern(http: bool, options: ClientOptions) -> (Client, Option<HttpFixture>) {
    if !http {
        return (connect(&["--mode", "modern"], options).await, None);
    }
    let fixture = HttpFixture::start("modern", &[]);
    let config = HttpConfig::new(&fixture.url);
    let client = Client::connect_http("fixture", &config, options)
        .await
        .expect("connect over HTTP");
    (client, Some(fixture))
}

async fn extension_task_runs_with_progress(http: bool) {
    let (client, _fixture) = modern(http, ClientOptions::default()).await;
    assert_eq!(
        client.details().capabilities["extensions"]["io.modelcontextprotocol/tasks"],
        json!({})
    );
    let steps = Arc::new(Mutex::new(Vec::new()));
    let sink = steps.clone();
    let options = RequestOptions::default().with_progress(move |p| sink.lock().unwrap().push(p));
    let args = json!({"seconds": 0.6, "steps": 3, "poll_ms": 50});
    let out = client
        .call_tool_with("research", args, options)
        .await
        .unwrap();
    assert_eq!(out.text, "researched in 3 steps");
    assert!(!out.is_error);
    // Its progress is its status and status message: first working, then the steps, last
    // completed; no number, as the server sent none.
    let seen = steps.lock().unwrap().clone();
    let statuses: Vec<(String, String)> = seen
        .iter()
        .map(|p| {
            assert_eq!((p.progress, p.total), (None, None), "{p:?}");
            let status = p.status.clone().unwrap_or_default();
            (status, p.message.clone().unwrap_or_default())
        })
        .collect();
    assert_eq!(statuses.first(), Some(&("working".into(), String::new())));
    assert!(
        statuses.contains(&("working".into(), "step 1 of 3".into())),
        "{statuses:?}"
    );
    assert_eq!(
        statuses.last().map(|s| s.0.as_str()),
        Some("completed"),
        "{statuses:?}"
    );
    let task = client.get_task("task-1").await.unwrap();
    assert_eq!(task.status, TaskStatus::Completed);
    assert_eq!(task.poll_interval(), Some(Duration::from_millis(50)));
    assert_eq!(task.ttl(), Some(Duration::from_secs(60)));
    // No tasks/list in the extension: said, nothing sent.
    let e = client.list_tasks().await.unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Usage(_)), "{e}");
    // A tool error is a completed task's result.
    let args = json!({"seconds": 0.05, "steps": 1, "fail": true});
    let out = client.call_tool("research", args).await.unwrap();
    assert!(out.is_error && out.text == "researched in 1 steps");
    client.close().await;
}

#[tokio::test]
async fn an_extension_task_runs_with_progress_over_stdio() {
    extension_task_runs_with_progress(false).await;
}

#[tokio::test]
async fn an_extension_task_runs_with_progress_over_http() {
    extension_task_runs_with_progress(true).await;
}

async fn extension_server_decides(http: bool) {
    let (client, _fixture) = modern(http, ClientOptions::default()).await;
    // A short survey runs at once, a long one as a task: the server's choice.
    let short = client
        .call_tool("survey", json!({"seconds": 0.05, "steps": 1}))
        .await
        .unwrap();
    assert_eq!(short.text, "researched in 1 steps");
    assert!(client.get_task("task-1").await.is_err(), "no task yet");
    let long = client
        .call_tool("survey", json!({"seconds": 1.0, "steps": 2, "poll_ms": 50}))
        .await
        .unwrap();
    assert_eq!(long.text, "researched in 2 steps");
    assert_eq!(
        client.get_task("task-1").await.unwrap().status,
        TaskStatus::Completed
    );
    // Never: the call leaves the extension out, and the tool that needs it is refused.
    let options = RequestOptions::default().with_task(TaskMode::Never);
    let refused = client
        .call_tool_with("research", json!({"seconds": 0.05}), options)
        .await
        .unwrap_err();
    match &refused.kind() {
        ErrorKind::Rpc(e) => assert_eq!(e.code, -32021, "{refused}"),
        _ => panic!("{refused}"),
    }
    client.close().await;
}

#[tokio::test]
async fn an_extension_server_decides_what_runs_as_a_task_over_stdio() {
    extension_server_decides(false).await;
}

#[tokio::test]
async fn an_extension_server_decides_what_runs_as_a_task_over_http() {
    extension_server_decides(true).await;
}

async fn extension_task_asks_for_input(http: bool) {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let seen = asked.clone();
    let handlers = agenvoy_mcp::Handlers::default().with_elicitation(
        move |request: agenvoy_mcp::ElicitationRequest| {
            seen.lock().unwrap().push(request.raw);
            async { agenvoy_mcp::ElicitationAnswer::accept(json!({"go": true})) }
        },
    );
    let options = ClientOptions::default().with_handlers(handlers);
    let (client, _fixture) = modern(http, options).await;
    let args = json!({"seconds": 0.1, "steps": 1, "poll_ms": 50, "ask": true});
    let out = client.call_tool("research", args).await.unwrap();
    assert_eq!(out.text, r#"researched in 1 steps, answered {"go":true}"#);
    // Asked once, however many polls saw the request.
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["message"], "Go on with the research?");
    client.close().await;
}

#[tokio::test]
async fn an_extension_task_asks_for_input_through_tasks_update_over_stdio() {
    extension_task_asks_for_input(false).await;
}

#[tokio::test]
async fn an_extension_task_asks_for_input_through_tasks_update_over_http() {
    extension_task_asks_for_input(true).await;
}

async fn extension_task_past_deadline_is_cancelled(http: bool) {
    let (client, _fixture) = modern(http, ClientOptions::default()).await;
    let options = RequestOptions::default().with_timeout(Duration::from_millis(600));
    let started = Instant::now();
    let args = json!({"seconds": 30, "steps": 300, "poll_ms": 100});
    let e = client
        .call_tool_with("research", args, options)
        .await
        .unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Timeout(_)), "{e}");
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(task_cancelled(&client, "task-1").await, "tasks/cancel sent");
    let task = client.get_task("task-1").await.unwrap();
    assert_eq!(task.status, TaskStatus::Cancelled);
    client.close().await;
}

#[tokio::test]
async fn an_extension_task_past_its_deadline_is_cancelled_over_stdio() {
    extension_task_past_deadline_is_cancelled(false).await;
}

#[tokio::test]
async fn an_extension_task_past_its_deadline_is_cancelled_over_http() {
    extension_task_past_deadline_is_cancelled(true).await;
}

async fn dropped_extension_call_cancels(http: bool) {
    let (client, _fixture) = modern(http, ClientOptions::default()).await;
    let args = json!({"seconds": 30, "steps": 300, "poll_ms": 100});
    let call = client.call_tool("research", args);
    assert!(
        tokio::time::timeout(Duration::from_millis(500), call)
            .await
            .is_err()
    );
    assert!(task_cancelled(&client, "task-1").await, "tasks/cancel sent");
    // And cancel_task: acknowledged, then the task's state.
    let args = json!({"seconds": 30, "steps": 300, "poll_ms": 100});
    let call = client.call_tool("research", args);
    let _ = tokio::time::timeout(Duration::from_millis(300), call).await;
    let task = client.cancel_task("task-2").await.unwrap();
    assert_eq!(task.status, TaskStatus::Cancelled);
    client.close().await;
}

#[tokio::test]
async fn a_dropped_extension_task_call_cancels_its_task_over_stdio() {
    dropped_extension_call_cancels(false).await;
}

#[tokio::test]
async fn a_dropped_extension_task_call_cancels_its_task_over_http() {
    dropped_extension_call_cancels(true).await;
}
