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

/// Both eras of the fixture: `init` speaks 2025-11-25, `modern` 2026-07-28.
fn two_fixtures() -> Value {
    json!({"servers": {
        "init": fixture_entry(&[]),
        "modern": fixture_entry(&["--mode", "modern"]),
    }})
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
    let daemon = Daemon::start(Some(two_fixtures()));
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
    let daemon = Daemon::start(Some(two_fixtures()));
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
    let daemon = Daemon::start(Some(two_fixtures()));
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
    let daemon = Daemon::start_with(Some(two_fixtures()), &["--ask-timeout", "1"]);
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
    let daemon = Daemon::start(Some(two_fixtures()));
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
    std::fs::write(&launcher, format!("exec '{}' fixture-server", binary())).unwrap();
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
