//! The daemon's routes for the whole protocol, over real HTTP against the real `serve`:
//! resources, prompts, completion, subscriptions, the event stream, the servers' questions
//! (elicitation, sampling) answered by id, and calls cancelled by id. Against the bundled
//! fixture in both eras, server-everything (initialize era) and a Python SDK 2.x server
//! (2026-07-28).
#![cfg(feature = "cli")]

mod common;

use common::daemon::*;
use common::*;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// A config of both eras of the fixture ([`two_fixtures`]).
fn two_fixtures_config() -> Value {
    json!({"servers": two_fixtures()})
}

/// Reads events until one satisfies `wanted` (or panics after `limit`), returning it.
fn event_where(events: &mut Events, limit: Duration, wanted: impl Fn(&Value) -> bool) -> Value {
    let started = Instant::now();
    events
        .reader
        .get_ref()
        .set_read_timeout(Some(limit))
        .unwrap();
    loop {
        assert!(started.elapsed() < limit, "no such event within {limit:?}");
        let event = events.next().expect("the stream is open");
        if wanted(&event) {
            return event;
        }
    }
}

/// Calls a tool through the API on another thread; the answer comes from the handle.
fn call_in_background(api: &Api, body: Value) -> std::thread::JoinHandle<Reply> {
    let api = api.clone();
    std::thread::spawn(move || api.post("/v1/mcp/call", body))
}

/// A form the fixture asks for through its `client_request` tool.
fn ask_form(server: &str) -> Value {
    json!({"name": format!("mcp__{server}__client_request"), "mode": "auto", "arguments": {
        "method": "elicitation/create",
        "params": {"message": "Who are you?", "requestedSchema": {"type": "object",
            "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
            "required": ["name"]}}
    }})
}

#[test]
fn resources_prompts_and_completion_in_both_eras() {
    let daemon = Daemon::start(Some(two_fixtures_config()));
    let api = &daemon.api;
    for server in ["init", "modern"] {
        let status = api.status_of(server);
        assert_eq!(
            (
                &status["resourceCount"],
                &status["templateCount"],
                &status["promptCount"]
            ),
            (&json!(2), &json!(1), &json!(2)),
            "{status}"
        );
        let listed = api.get(&format!("/v1/mcp/resources?name={server}"));
        let uris: Vec<&str> = listed["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["uri"].as_str().unwrap())
            .collect();
        assert_eq!(uris, ["fixture://readme", "fixture://logo"], "{listed}");
        assert_eq!(
            listed["templates"][0]["uriTemplate"],
            "fixture://big/{bytes}"
        );

        let read = api.get(&format!(
            "/v1/mcp/resource?name={server}&uri=fixture://readme"
        ));
        assert!(read["text"].as_str().unwrap().contains("fixture"), "{read}");
        // Over the cap: what the model would see, cut with the marker.
        let big = api.get(&format!(
            "/v1/mcp/resource?name={server}&uri=fixture://big/3000000"
        ));
        let text = big["text"].as_str().unwrap();
        assert_eq!(big["totalBytes"], 3_000_000);
        assert!(
            text.ends_with("[mcp output truncated: 3000000 bytes total, 1048576 kept]"),
            "{}",
            &text[text.len() - 80..]
        );

        let prompts = api.get(&format!("/v1/mcp/prompts?name={server}"));
        assert_eq!(prompts["prompts"][0]["name"], "greet", "{prompts}");
        let filled = api.post(
            "/v1/mcp/prompt",
            json!({"name": server, "prompt": "greet", "arguments": {"name": "Ada"}}),
        );
        assert_eq!(filled.status, 200, "{filled:?}");
        let filled = filled.json();
        assert!(
            filled["messages"][0]["text"]
                .as_str()
                .unwrap()
                .contains("Ada"),
            "{filled}"
        );
        let completed = api.post(
            "/v1/mcp/complete",
            json!({"name": server, "prompt": "greet", "argument": "name", "value": "A"}),
        );
        assert_eq!(completed.json()["values"], json!(["Ada", "Alan"]));

        // The model's host tools read the same.
        let call = api.post(
            "/v1/mcp/call",
            json!({"name": "mcp__read_resource", "mode": "auto",
                   "arguments": {"server": server, "uri": "fixture://readme"}}),
        );
        assert_eq!(call.json()["text"], read["text"]);
    }
    api.assert_refused(
        "/v1/mcp/prompt",
        &[
            (json!({"name": "init"}), 400, "\"prompt\""),
            (
                json!({"name": "init", "prompt": "greet", "arguments": {"name": 1}}),
                400,
                "object of strings",
            ),
            (
                json!({"name": "nope", "prompt": "greet"}),
                404,
                "no server by this name",
            ),
        ],
    );
    api.assert_refused(
        "/v1/mcp/complete",
        &[(json!({"name": "init", "argument": "x"}), 400, "\"prompt\"")],
    );
    let missing = api.send("GET", "/v1/mcp/resource?name=init", None);
    assert_eq!(missing.status, 400, "{missing:?}");
    assert!(missing.error().contains("?uri="));
    let unknown = api.send("GET", "/v1/mcp/resources?name=nope", None);
    assert_eq!(unknown.status, 404, "{unknown:?}");
}

#[test]
fn subscriptions_and_state_changes_reach_the_event_stream() {
    let daemon = Daemon::start(Some(two_fixtures_config()));
    let api = &daemon.api;
    let mut events = api.stream("/v1/mcp/events");
    assert!(events.head.contains("text/event-stream"), "{}", events.head);
    for server in ["init", "modern"] {
        let subscribed = api.post(
            "/v1/mcp/subscribe",
            json!({"name": server, "uri": "fixture://readme"}),
        );
        assert_eq!(subscribed.status, 200, "{subscribed:?}");
        let updated = event_where(&mut events, Duration::from_secs(20), |e| {
            e["type"] == "resource_updated" && e["server"] == server
        });
        assert_eq!(updated["uri"], "fixture://readme");
        let listed = api.get(&format!("/v1/mcp/resources?name={server}"));
        assert_eq!(listed["subscriptions"], json!(["fixture://readme"]));
        let unsubscribed = api.post(
            "/v1/mcp/unsubscribe",
            json!({"name": server, "uri": "fixture://readme"}),
        );
        assert_eq!(unsubscribed.status, 200, "{unsubscribed:?}");
    }
    assert_eq!(
        api.post("/v1/mcp/remove", json!({"name": "init"})).status,
        200
    );
    let removed = event_where(&mut events, Duration::from_secs(20), |e| {
        e["type"] == "state"
    });
    assert_eq!(
        removed,
        json!({"type": "state", "server": "init", "state": null})
    );
}

#[test]
fn elicitation_is_answered_through_the_event_stream_in_both_eras() {
    let daemon = Daemon::start(Some(two_fixtures_config()));
    let api = &daemon.api;
    let mut events = api.stream("/v1/mcp/events");
    for server in ["init", "modern"] {
        let call = call_in_background(api, ask_form(server));
        let asked = event_where(&mut events, Duration::from_secs(20), |e| {
            e["type"] == "request"
        });
        assert_eq!(
            (
                &asked["server"],
                &asked["kind"],
                &asked["params"]["message"]
            ),
            (
                &json!(server),
                &json!("elicitation"),
                &json!("Who are you?")
            ),
            "{asked}"
        );
        let id = asked["id"].as_str().unwrap().to_string();
        let waiting = api.get("/v1/mcp/requests");
        assert_eq!(waiting["requests"][0]["id"], id, "{waiting}");
        let path = format!("/v1/mcp/requests/{id}");
        // An answer that does not fit is refused, naming the field; the request still waits.
        api.assert_refused(
            &path,
            &[
                (
                    json!({"action": "accept", "content": {"age": 3}}),
                    400,
                    "\"name\" is required",
                ),
                (
                    json!({"action": "accept", "content": {"name": "Ada", "age": "x"}}),
                    400,
                    "age",
                ),
                (json!({"action": "maybe"}), 400, "\"action\""),
            ],
        );
        let answered = api.post(
            &path,
            json!({"action": "accept", "content": {"name": "Ada", "age": 36}}),
        );
        assert_eq!(answered.status, 200, "{answered:?}");
        let reply = call.join().unwrap();
        assert_eq!(reply.status, 200, "{reply:?}");
        let text = reply.json()["text"].as_str().unwrap().to_string();
        assert!(
            text.contains("\"accept\"") && text.contains("Ada"),
            "{text}"
        );
        // Answered once: the id is gone.
        let again = api.post(&path, json!({"action": "decline"}));
        assert_eq!(again.status, 404, "{again:?}");

        let call = call_in_background(api, ask_form(server));
        let asked = event_where(&mut events, Duration::from_secs(20), |e| {
            e["type"] == "request"
        });
        let id = asked["id"].as_str().unwrap();
        let declined = api.post(
            &format!("/v1/mcp/requests/{id}"),
            json!({"action": "decline"}),
        );
        assert_eq!(declined.status, 200, "{declined:?}");
        let text = call.join().unwrap().json()["text"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(text.contains("\"decline\""), "{text}");

        // A URL to visit comes with its origin; the daemon opens nothing.
        let visit = json!({"name": format!("mcp__{server}__client_request"), "mode": "auto",
            "arguments": {"method": "elicitation/create", "params": {"mode": "url",
                "message": "Log in", "elicitationId": "e1",
                "url": "https://login.example.com:8443/start?session=1"}}});
        let call = call_in_background(api, visit);
        let asked = event_where(&mut events, Duration::from_secs(20), |e| {
            e["type"] == "request"
        });
        assert_eq!(
            asked["params"]["origin"], "https://login.example.com:8443",
            "{asked}"
        );
        let id = asked["id"].as_str().unwrap();
        api.assert_refused(
            &format!("/v1/mcp/requests/{id}"),
            &[(
                json!({"action": "accept", "content": {"x": 1}}),
                400,
                "no values",
            )],
        );
        let gone = api.post(
            &format!("/v1/mcp/requests/{id}"),
            json!({"action": "accept"}),
        );
        assert_eq!(gone.status, 200, "{gone:?}");
        let text = call.join().unwrap().json()["text"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(text.contains("\"accept\""), "{text}");
    }
    let unknown = api.post("/v1/mcp/requests/999999", json!({"action": "cancel"}));
    assert_eq!(unknown.status, 404, "{unknown:?}");
}

#[test]
fn with_no_listener_a_question_is_declined_at_once_and_unanswered_ones_expire() {
    let daemon = Daemon::start_with(Some(two_fixtures_config()), &["--ask-timeout", "1"]);
    let api = &daemon.api;
    let started = Instant::now();
    let reply = api.post("/v1/mcp/call", ask_form("init"));
    let text = reply.json()["text"].as_str().unwrap().to_string();
    assert!(
        text.contains("no one is connected") && started.elapsed() < Duration::from_secs(10),
        "{text}"
    );

    let mut events = api.stream("/v1/mcp/events");
    let call = call_in_background(api, ask_form("init"));
    let asked = event_where(&mut events, Duration::from_secs(20), |e| {
        e["type"] == "request"
    });
    let ended = event_where(&mut events, Duration::from_secs(20), |e| {
        e["type"] == "request_ended"
    });
    assert_eq!(ended["id"], asked["id"]);
    assert!(
        ended["reason"].as_str().unwrap().contains("cancelled"),
        "{ended}"
    );
    let text = call.join().unwrap().json()["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(text.contains("\"cancel\""), "{text}");
    let late = api.post(
        &format!("/v1/mcp/requests/{}", asked["id"].as_str().unwrap()),
        json!({"action": "decline"}),
    );
    assert_eq!(late.status, 404, "{late:?}");
}

#[test]
fn sampling_is_answered_by_a_listener() {
    let daemon = Daemon::start(Some(two_fixtures_config()));
    let api = &daemon.api;
    let mut events = api.stream("/v1/mcp/events");
    let ask = json!({"name": "mcp__init__client_request", "mode": "auto", "arguments": {
        "method": "sampling/createMessage",
        "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "Say hi"}}],
                   "maxTokens": 20}
    }});
    let call = call_in_background(api, ask);
    let asked = event_where(&mut events, Duration::from_secs(20), |e| {
        e["type"] == "request"
    });
    assert_eq!(asked["kind"], "sampling");
    assert_eq!(asked["params"]["messages"][0]["content"]["text"], "Say hi");
    let path = format!("/v1/mcp/requests/{}", asked["id"].as_str().unwrap());
    api.assert_refused(
        &path,
        &[(
            json!({"action": "accept", "content": {"content": {"type": "text", "text": "hi"}}}),
            400,
            "\"model\"",
        )],
    );
    let message = json!({"role": "assistant", "content": {"type": "text", "text": "Hi!"},
                         "model": "test-model", "stopReason": "endTurn"});
    assert_eq!(
        api.post(&path, json!({"action": "accept", "content": message}))
            .status,
        200
    );
    let text = call.join().unwrap().json()["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        text.contains("test-model") && text.contains("Hi!"),
        "{text}"
    );
}

/// A `progress` event has only what the server sent: a task's status and message with no
/// number, a message alone, never a made-up `progress: 0`.
#[test]
fn progress_events_carry_a_tasks_status_and_no_made_up_number() {
    let daemon = Daemon::start(Some(two_fixtures_config()));
    let api = &daemon.api;
    let mut events = api.stream("/v1/mcp/events");
    let call = call_in_background(
        api,
        json!({"name": "mcp__modern__research", "mode": "auto", "id": "t1",
               "arguments": {"seconds": 0.4, "steps": 2, "poll_ms": 20}}),
    );
    let status = event_where(&mut events, Duration::from_secs(20), |e| {
        e["type"] == "progress" && e["message"].as_str().is_some_and(|m| m.contains("step 1"))
    });
    assert_eq!(
        status,
        json!({"type": "progress", "server": "modern", "id": "t1",
               "tool": "mcp__modern__research", "status": "working", "message": "step 1 of 2"})
    );
    assert_eq!(call.join().unwrap().status, 200);
    let call = call_in_background(
        api,
        json!({"name": "mcp__init__slow", "mode": "auto", "id": "s1",
               "arguments": {"seconds": 0.2, "steps": 1, "message_only": true}}),
    );
    let told = event_where(&mut events, Duration::from_secs(20), |e| {
        e["type"] == "progress" && e["id"] == "s1"
    });
    assert_eq!(
        told,
        json!({"type": "progress", "server": "init", "id": "s1",
               "tool": "mcp__init__slow", "message": "step 1 of 1"})
    );
    assert_eq!(call.join().unwrap().status, 200);
}

#[test]
fn a_call_with_an_id_is_cancelled_and_the_server_told() {
    let daemon = Daemon::start(Some(json!({"servers": {"f": fixture_entry(&[])}})));
    let api = &daemon.api;
    let mut events = api.stream("/v1/mcp/events");
    let call = call_in_background(
        api,
        json!({"name": "mcp__f__slow", "mode": "auto", "id": "c1",
               "arguments": {"seconds": 30, "steps": 30}}),
    );
    // Running once its progress shows (asked for, since a listener is there).
    let progress = event_where(&mut events, Duration::from_secs(20), |e| {
        e["type"] == "progress"
    });
    assert_eq!(
        (&progress["id"], &progress["tool"]),
        (&json!("c1"), &json!("mcp__f__slow"))
    );
    let same = api.post(
        "/v1/mcp/call",
        json!({"name": "mcp__f__echo", "mode": "auto", "id": "c1", "arguments": {"text": "x"}}),
    );
    assert_eq!(same.status, 409, "{same:?}");
    assert!(same.error().contains("is running"), "{same:?}");
    let cancelled = api.post("/v1/mcp/call/cancel", json!({"id": "c1"}));
    assert_eq!(cancelled.status, 200, "{cancelled:?}");
    let reply = call.join().unwrap();
    assert_eq!(reply.status, 409, "{reply:?}");
    assert!(reply.error().contains("cancelled"), "{reply:?}");
    let told = wait_until("the cancel at the server", Duration::from_secs(10), || {
        let r = api.post(
            "/v1/mcp/call",
            json!({"name": "mcp__f__cancellations", "mode": "auto"}),
        );
        let text = r.json()["text"].as_str().unwrap().to_string();
        if text != "[]" { Ok(text) } else { Err(text) }
    });
    assert!(told.contains("requestId"), "{told}");
    let gone = api.post("/v1/mcp/call/cancel", json!({"id": "c1"}));
    assert_eq!(gone.status, 404, "{gone:?}");
}

/// A listener that never reads holds only a bounded queue: the daemon's memory does not grow
/// with the events it misses, and its stream is dropped.
#[test]
fn a_listener_that_never_reads_costs_little() {
    let daemon = Daemon::start(Some(json!({"servers": {"f": fixture_entry(&[])}})));
    let api = &daemon.api;
    let mut stuck = api.stream("/v1/mcp/events");
    let rss = || {
        let status = std::fs::read_to_string(format!("/proc/{}/status", daemon.server.pid()))
            .unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches(" kB").parse::<u64>().ok())
            .unwrap_or(0)
    };
    // Each subscribe brings one `resource_updated` event of about 8 KB: 3,000 of them, 24 MB,
    // would show in the daemon's memory if its queue grew with them.
    let uri = format!("fixture://{}", "x".repeat(8000));
    let subscribe = || {
        let r = api.post("/v1/mcp/subscribe", json!({"name": "f", "uri": uri}));
        assert_eq!(r.status, 200, "{r:?}");
    };
    for _ in 0..300 {
        subscribe();
    }
    let before = rss();
    for _ in 0..2700 {
        subscribe();
    }
    let after = rss();
    assert!(
        after < before + 8 * 1024,
        "the daemon grew from {before} kB to {after} kB with a listener that never reads"
    );
    // What reaches the listener now is what its queue held, then the end of its stream.
    stuck
        .reader
        .get_ref()
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut received = Vec::new();
    while let Some(event) = stuck.next() {
        received.push(event);
    }
    assert!(
        received.len() < 1000,
        "{} events reached it",
        received.len()
    );
    let last = received.last().cloned().unwrap_or(Value::Null);
    assert!(
        last["type"] == "dropped" || last["type"] == "resource_updated",
        "{last}"
    );
}

/// server-everything's questions and its task-based tool, through the API.
#[test]
fn server_everything_asks_and_runs_tasks_through_the_api() {
    let Some(program) = installed("node_modules/.bin/mcp-server-everything") else {
        return;
    };
    let entry = json!({"command": program, "args": ["stdio"]});
    let daemon = Daemon::start(Some(json!({"servers": {"everything": entry}})));
    let api = &daemon.api;
    let listed = api.get("/v1/mcp/resources?name=everything");
    let first = listed["resources"][0]["uri"].as_str().unwrap().to_string();
    let read = api.get(&format!(
        "/v1/mcp/resource?name=everything&uri={}",
        first.replace(':', "%3A").replace('/', "%2F")
    ));
    assert!(!read["text"].as_str().unwrap().is_empty(), "{read}");
    let prompts = api.get("/v1/mcp/prompts?name=everything");
    assert!(
        !prompts["prompts"].as_array().unwrap().is_empty(),
        "{prompts}"
    );

    let mut events = api.stream("/v1/mcp/events");
    let call = call_in_background(
        api,
        json!({"name": "mcp__everything__trigger-elicitation-request", "mode": "auto"}),
    );
    let asked = event_where(&mut events, Duration::from_secs(30), |e| {
        e["type"] == "request"
    });
    assert_eq!(
        (&asked["server"], &asked["kind"]),
        (&json!("everything"), &json!("elicitation"))
    );
    let path = format!("/v1/mcp/requests/{}", asked["id"].as_str().unwrap());
    let answer = json!({"action": "accept", "content": {"name": "Ada Lovelace", "check": true,
                        "email": "ada@example.com"}});
    let answered = api.post(&path, answer);
    assert_eq!(answered.status, 200, "{answered:?}");
    let text = call.join().unwrap().json()["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(text.contains("Ada Lovelace"), "{text}");

    let call = call_in_background(
        api,
        json!({"name": "mcp__everything__trigger-sampling-request", "mode": "auto",
               "arguments": {"prompt": "Say hi", "maxTokens": 10}}),
    );
    let asked = event_where(&mut events, Duration::from_secs(30), |e| {
        e["type"] == "request"
    });
    assert_eq!(asked["kind"], "sampling");
    let path = format!("/v1/mcp/requests/{}", asked["id"].as_str().unwrap());
    let message = json!({"role": "assistant", "content": {"type": "text", "text": "hi from the listener"}, "model": "listener-model"});
    assert_eq!(
        api.post(&path, json!({"action": "accept", "content": message}))
            .status,
        200
    );
    let text = call.join().unwrap().json()["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(text.contains("hi from the listener"), "{text}");

    // A task-required tool runs as a task; its progress comes on the stream; a cancel ends it.
    let research = json!({"name": "mcp__everything__simulate-research-query", "mode": "auto",
                          "id": "r1", "arguments": {"topic": "tasks"}});
    let done = api.post("/v1/mcp/call", research.clone());
    assert_eq!(done.status, 200, "{done:?}");
    assert!(
        done.json()["text"]
            .as_str()
            .unwrap()
            .contains("Research Report"),
        "{done:?}"
    );
    // Another id: the first call's progress events are still on the stream.
    let mut research = research;
    research["id"] = json!("r2");
    let call = call_in_background(api, research);
    let progress = event_where(&mut events, Duration::from_secs(30), |e| {
        e["type"] == "progress" && e["id"] == "r2"
    });
    assert_eq!(progress["tool"], "mcp__everything__simulate-research-query");
    assert_eq!(
        api.post("/v1/mcp/call/cancel", json!({"id": "r2"})).status,
        200
    );
    assert_eq!(call.join().unwrap().status, 409);

    // An ambiguous query asks its question through `tasks/result` while its task waits in
    // `input_required`: the question comes on the stream as any other, and the answer reaches
    // the task, which goes on to its report.
    let call = call_in_background(
        api,
        json!({"name": "mcp__everything__simulate-research-query", "mode": "auto",
               "arguments": {"topic": "python", "ambiguous": true}}),
    );
    let asked = event_where(&mut events, Duration::from_secs(30), |e| {
        e["type"] == "request"
    });
    assert_eq!(asked["kind"], "elicitation", "{asked}");
    let path = format!("/v1/mcp/requests/{}", asked["id"].as_str().unwrap());
    let not_a_choice = json!({"action": "accept", "content": {"interpretation": "whale"}});
    let refused = api.post(&path, not_a_choice);
    assert_eq!(refused.status, 400, "{refused:?}");
    assert!(refused.error().contains("interpretation"), "{refused:?}");
    let answer = json!({"action": "accept", "content": {"interpretation": "snake"}});
    let answered = api.post(&path, answer);
    assert_eq!(answered.status, 200, "{answered:?}");
    let done = call.join().unwrap();
    assert_eq!(done.status, 200, "{done:?}");
    let text = done.json()["text"].as_str().unwrap().to_string();
    assert!(text.contains("Research Report: python (snake)"), "{text}");
}

/// A Python SDK 2.x server through the API, in both eras: resources, a template, a prompt
/// with arguments and its completion.
#[test]
fn python_sdk_resources_and_prompts_through_the_api_in_both_eras() {
    let Some(python) = installed("venv/bin/python") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/python/modern_server.py");
    // `old` first runs the fixture (initialize era only), which the folder's era memory keeps
    // for the entry; run as the Python server, the same entry then starts with `initialize`,
    // and the dual-era server answers in that era.
    let launcher = dir.path().join("old.sh");
    std::fs::write(&launcher, format!("exec '{}'", fixture_binary())).unwrap();
    let servers = json!({"servers": {
        "py": {"command": python, "args": [script, "stdio"]},
        "old": {"command": "sh", "args": [launcher]},
    }});
    std::fs::write(dir.path().join("mcp.json"), servers.to_string()).unwrap();
    let listed = std::process::Command::new(binary())
        .args(["tools", "--config"])
        .arg(dir.path().join("mcp.json"))
        .env("AGENVOY_CONFIG_DIR", dir.path())
        .output()
        .unwrap();
    assert!(listed.status.success(), "{listed:?}");
    let python_command = format!("exec '{}' '{}' stdio", python.display(), script.display());
    std::fs::write(&launcher, python_command).unwrap();
    let daemon = Daemon::start_in(dir, &[]);
    let api = &daemon.api;
    for (server, version) in [("py", "2026-07-28"), ("old", "2025-11-25")] {
        let status = api.status_of(server);
        assert_eq!(status["protocolVersion"], version, "{status}");
        let listed = api.get(&format!("/v1/mcp/resources?name={server}"));
        let uris: Vec<&str> = listed["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["uri"].as_str().unwrap())
            .collect();
        assert!(uris.contains(&"note://readme"), "{listed}");
        assert_eq!(
            listed["templates"][0]["uriTemplate"],
            "note://topics/{topic}"
        );
        let read = api.get(&format!(
            "/v1/mcp/resource?name={server}&uri=note%3A%2F%2Ftopics%2Frust"
        ));
        assert!(read["text"].as_str().unwrap().contains("rust"), "{read}");
        let filled = api.post(
            "/v1/mcp/prompt",
            json!({"name": server, "prompt": "review", "arguments": {"code": "x = 1"}}),
        );
        assert_eq!(filled.status, 200, "{filled:?}");
        let text = filled.json()["messages"][0]["text"].clone();
        assert!(text.as_str().unwrap().contains("x = 1"), "{text}");
        let completed = api.post(
            "/v1/mcp/complete",
            json!({"name": server, "prompt": "review", "argument": "language", "value": "ru"}),
        );
        assert_eq!(
            completed.json()["values"],
            json!(["ruby", "rust"]),
            "{completed:?}"
        );
    }
}

/// A URL the fixture asks the user to visit, through its `client_request` tool.
fn ask_url(server: &str, url: &str) -> Value {
    json!({"name": format!("mcp__{server}__client_request"), "mode": "auto", "arguments": {
        "method": "elicitation/create",
        "params": {"mode": "url", "message": "Go there", "elicitationId": "e", "url": url}}})
}

/// The origin the library shows for each of `urls`, or `None` where it refuses one (what the
/// daemon must show the same; tests/input.rs holds the library to a WHATWG parser's answers).
fn library_origins(urls: &[&str]) -> Vec<Option<String>> {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let asker = UrlAsker::start().await;
        let mut origins = Vec::new();
        for url in urls {
            origins.push(asker.origin(url).await.ok());
        }
        asker.close().await;
        origins
    })
}

#[test]
fn a_url_question_shows_the_origin_a_browser_loads_or_is_refused() {
    let daemon = Daemon::start(Some(json!({"servers": {"f": fixture_entry(&[])}})));
    let api = &daemon.api;
    let mut events = api.stream("/v1/mcp/events");
    let corpus: Vec<Value> = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/urls/origins.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let urls: Vec<&str> = corpus.iter().map(|e| e["url"].as_str().unwrap()).collect();
    let (mut shown, mut refused) = (0, 0);
    for ((entry, url), library) in corpus.iter().zip(&urls).zip(library_origins(&urls)) {
        let call = call_in_background(api, ask_url("f", url));
        match library {
            Some(origin) => {
                shown += 1;
                let asked = event_where(&mut events, Duration::from_secs(20), |e| {
                    e["type"] == "request"
                });
                assert_eq!(asked["params"]["origin"], origin, "{url:?}: {asked}");
                assert_eq!(Some(origin.as_str()), entry["origin"].as_str(), "{url:?}");
                let id = asked["id"].as_str().unwrap();
                let listed = api.get("/v1/mcp/requests");
                assert_eq!(
                    listed["requests"][0]["params"]["origin"], origin,
                    "{listed}"
                );
                let declined = api.post(
                    &format!("/v1/mcp/requests/{id}"),
                    json!({"action": "decline"}),
                );
                assert_eq!(declined.status, 200, "{declined:?}");
                assert!(call.join().unwrap().text.contains("decline"), "{url:?}");
            }
            None => {
                refused += 1;
                // The server gets the refusal; no one is shown the URL.
                let text = call.join().unwrap().json()["text"]
                    .as_str()
                    .unwrap()
                    .to_string();
                assert!(text.contains("-32602"), "{url:?}: {text}");
                assert_eq!(api.get("/v1/mcp/requests")["requests"], json!([]));
            }
        }
    }
    assert!(
        shown > 40 && refused > 40,
        "{shown} shown, {refused} refused"
    );
}

/// The daemon's peak resident memory since the last reset, and a reset (Linux).
fn peak_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").parse::<u64>().ok())
        .unwrap()
        * 1024
}

#[test]
fn large_questions_are_refused_past_their_bounds_and_cost_little() {
    let daemon = Daemon::start(Some(json!({"servers": {"q": fixture_entry(&[])}})));
    let api = &daemon.api;
    let pid = daemon.server.pid();
    let mut events = api.stream("/v1/mcp/events");
    // Warm up: one small question asked and declined.
    let call = call_in_background(api, ask_url("q", "https://pay.example/"));
    let asked = event_where(&mut events, Duration::from_secs(20), |e| {
        e["type"] == "request"
    });
    let path = format!("/v1/mcp/requests/{}", asked["id"].as_str().unwrap());
    assert_eq!(api.post(&path, json!({"action": "decline"})).status, 200);
    call.join().unwrap();
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").unwrap();
    let before = peak_rss(pid);

    // 16 questions of 3.9 MB of zeros in `_meta` (about 190 MiB each once parsed): each
    // refused unparsed, saying why.
    let padded = |pad: &str, n: u64| {
        let mut body = ask_url("q", "https://pay.example/");
        body["arguments"][pad] = json!(n);
        body
    };
    for _ in 0..16 {
        let reply = api.post("/v1/mcp/call", padded("pad_zeros", 1_950_000));
        let text = reply.json()["text"].as_str().unwrap().to_string();
        assert!(text.contains("-32600") && text.contains("16384"), "{text}");
    }
    // 16 of 3.9 MB of text, at once: those that fit the 16 MiB kept of one server wait, the
    // others are refused naming the bound.
    let calls: Vec<_> = (0..16)
        .map(|_| call_in_background(api, padded("pad_text", 3_900_000)))
        .collect();
    let mut waiting = Vec::new();
    while waiting.len() < 4 {
        let asked = event_where(&mut events, Duration::from_secs(30), |e| {
            e["type"] == "request"
        });
        // Past 64 KiB, an event carries a note of the params' size, not the params.
        let omitted = asked["params"]["omitted"].as_str().unwrap_or_default();
        assert!(omitted.contains("bytes, over the 65536"), "{asked}");
        waiting.push(asked["id"].as_str().unwrap().to_string());
    }
    // The 12 others are refused while those 4 wait (declining one first would make room).
    wait_until("12 calls refused", Duration::from_secs(60), || match calls
        .iter()
        .filter(|c| c.is_finished())
        .count()
    {
        12 => Ok(()),
        done => Err(format!("{done} ended")),
    });
    let listed = api.send("GET", "/v1/mcp/requests", None);
    assert!(
        listed.text.len() < 64 * 1024,
        "{} bytes listed",
        listed.text.len()
    );
    assert_eq!(listed.json()["requests"].as_array().unwrap().len(), 4);
    let whole = api.send("GET", &format!("/v1/mcp/requests/{}", waiting[0]), None);
    assert_eq!(whole.status, 200);
    assert_eq!(
        whole.json()["params"]["_meta"]["pad"]
            .as_str()
            .map(str::len),
        Some(3_900_000)
    );
    drop(whole);
    let peak = peak_rss(pid) - before;
    for id in &waiting {
        let declined = api.post(
            &format!("/v1/mcp/requests/{id}"),
            json!({"action": "decline"}),
        );
        assert_eq!(declined.status, 200, "{declined:?}");
    }
    let mut refused = 0;
    for call in calls {
        let reply = call.join().unwrap();
        let text = reply.json()["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{reply:?}"))
            .to_string();
        if text.contains("-32600") && text.contains("16 MiB") {
            refused += 1;
        } else {
            assert!(text.contains("decline"), "{text}");
        }
    }
    assert_eq!(refused, 12);
    assert!(
        peak < 64 << 20,
        "32 questions of 3.9 MB raised the daemon's peak by {} MiB",
        peak >> 20
    );
}

#[test]
fn four_servers_full_of_questions_leave_a_slot_for_a_fifth() {
    let servers: serde_json::Map<String, Value> = (1..=5)
        .map(|i| (format!("s{i}"), fixture_entry(&[])))
        .collect();
    let daemon = Daemon::start(Some(json!({ "servers": servers })));
    let api = &daemon.api;
    let mut events = api.stream("/v1/mcp/events");
    let mut calls = Vec::new();
    for server in ["s1", "s2", "s3", "s4"] {
        for _ in 0..16 {
            calls.push(call_in_background(
                api,
                ask_url(server, "https://pay.example/"),
            ));
        }
    }
    for _ in 0..64 {
        event_where(&mut events, Duration::from_secs(30), |e| {
            e["type"] == "request"
        });
    }
    assert_eq!(
        api.get("/v1/mcp/requests")["requests"]
            .as_array()
            .unwrap()
            .len(),
        64
    );
    // The board of 64 is full, but the fifth server has nothing waiting: its question waits.
    calls.push(call_in_background(
        api,
        ask_url("s5", "https://other.example/"),
    ));
    let asked = event_where(&mut events, Duration::from_secs(20), |e| {
        e["type"] == "request"
    });
    assert_eq!(asked["server"], "s5", "{asked}");
    for waiting in api.get("/v1/mcp/requests")["requests"].as_array().unwrap() {
        let path = format!("/v1/mcp/requests/{}", waiting["id"].as_str().unwrap());
        assert_eq!(api.post(&path, json!({"action": "cancel"})).status, 200);
    }
    for call in calls {
        assert!(call.join().unwrap().text.contains("cancel"));
    }
}

#[test]
fn only_followed_resources_are_announced_and_the_cap_is_a_429() {
    let daemon = Daemon::start(Some(json!({"servers": {"f": fixture_entry(&[])}})));
    let api = &daemon.api;
    let mut events = api.stream("/v1/mcp/events");
    let subscribed = api.post(
        "/v1/mcp/subscribe",
        json!({"name": "f", "uri": "fixture://readme"}),
    );
    assert_eq!(subscribed.status, 200, "{subscribed:?}");
    event_where(&mut events, Duration::from_secs(20), |e| {
        e["type"] == "resource_updated"
    });
    // The server tells of a resource no one follows, then of the followed one: only the
    // second is announced (they come in order, so the first would be seen before it).
    for uri in ["fixture://not-followed", "fixture://readme"] {
        let notify = json!({"name": "mcp__f__client_request", "mode": "auto", "arguments": {
            "method": "notifications/resources/updated", "notification": true,
            "params": {"uri": uri}}});
        assert_eq!(api.post("/v1/mcp/call", notify).status, 200);
    }
    let updated = event_where(&mut events, Duration::from_secs(20), |e| {
        e["type"] == "resource_updated"
    });
    assert_eq!(updated["uri"], "fixture://readme", "{updated}");

    for i in 1..256 {
        let uri = format!("fixture://r{i}");
        let r = api.post("/v1/mcp/subscribe", json!({"name": "f", "uri": uri}));
        assert_eq!(r.status, 200, "{r:?}");
    }
    let past = api.post(
        "/v1/mcp/subscribe",
        json!({"name": "f", "uri": "fixture://r256"}),
    );
    assert_eq!(past.status, 429, "{past:?}");
    assert_eq!(past.json()["error"]["type"], "limit");
    assert!(past.error().contains("256 resources"), "{past:?}");
    // One already followed is still taken.
    let again = api.post(
        "/v1/mcp/subscribe",
        json!({"name": "f", "uri": "fixture://r9"}),
    );
    assert_eq!(again.status, 200, "{again:?}");
}

#[test]
fn a_form_answer_is_held_to_every_constraint_of_its_schema() {
    let daemon = Daemon::start(Some(json!({"servers": {"f": fixture_entry(&[])}})));
    let api = &daemon.api;
    let mut events = api.stream("/v1/mcp/events");
    let form = json!({"name": "mcp__f__client_request", "mode": "auto", "arguments": {
        "method": "elicitation/create",
        "params": {"message": "Sign up", "requestedSchema": {"type": "object", "properties": {
            "user": {"type": "string", "minLength": 3, "maxLength": 8, "pattern": "^[a-z]+$"},
            "mail": {"type": "string", "format": "email"},
            "born": {"type": "string", "format": "date"},
            "age": {"type": "integer", "minimum": 18, "maximum": 130},
            "tags": {"type": "array", "minItems": 1, "maxItems": 2,
                     "items": {"type": "string", "enum": ["a", "b", "c"]}}},
            "required": ["user"]}}}});
    let call = call_in_background(api, form);
    let asked = event_where(&mut events, Duration::from_secs(20), |e| {
        e["type"] == "request"
    });
    let path = format!("/v1/mcp/requests/{}", asked["id"].as_str().unwrap());
    let accept = |content: Value| json!({"action": "accept", "content": content});
    api.assert_refused(
        &path,
        &[
            (
                accept(json!({"user": "al"})),
                400,
                "\"user\" needs at least 3 characters (minLength 3)",
            ),
            (accept(json!({"user": "alexandria"})), 400, "(maxLength 8)"),
            (
                accept(json!({"user": "Ada"})),
                400,
                "\"user\" must match the pattern (pattern ^[a-z]+$)",
            ),
            (
                accept(json!({"user": "ada", "mail": "ada"})),
                400,
                "\"mail\" must be an email address",
            ),
            (
                accept(json!({"user": "ada", "born": "2023-02-29"})),
                400,
                "(format date)",
            ),
            (
                accept(json!({"user": "ada", "age": 17})),
                400,
                "\"age\" needs at least 18 (minimum 18)",
            ),
            (
                accept(json!({"user": "ada", "age": 131})),
                400,
                "(maximum 130)",
            ),
            (
                accept(json!({"user": "ada", "tags": []})),
                400,
                "(minItems 1)",
            ),
            (
                accept(json!({"user": "ada", "tags": ["a", "b", "c"]})),
                400,
                "(maxItems 2)",
            ),
        ],
    );
    let fits = json!({"user": "ada", "mail": "ada@example.com", "born": "2024-02-29", "age": 36,
                      "tags": ["a"]});
    assert_eq!(api.post(&path, accept(fits)).status, 200);
    let text = call.join().unwrap().json()["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(text.contains("ada@example.com"), "{text}");
}
