//! Tools in each model API's own shape (issue 39), through the daemon's routes and the
//! command line, against the fixture server: definitions (`GET /v1/mcp/tools?format=F`,
//! `/tools/offered`, `tools --json --format F`), and a call made with a model's name,
//! arguments and call id (`POST /v1/mcp/call` with `format`), answered with the target's
//! result item.
#![cfg(feature = "cli")]

mod common;

use common::daemon::*;
use common::*;
use serde_json::{Value, json};

const FORMATS: [&str; 5] = [
    "openai",
    "openai-responses",
    "anthropic",
    "gemini",
    "json-schema",
];

/// The tool named `name` in a `{"format", "tools"}` answer.
fn tool_in<'a>(answer: &'a Value, name: &str) -> &'a Value {
    answer["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name || t["function"]["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {answer}"))
}

#[test]
fn the_daemon_gives_and_takes_tools_in_each_model_apis_shape() {
    let daemon = Daemon::start(Some(json!({"servers": {"f": fixture_entry(&[])}})));
    let api = &daemon.api;
    let plain = api.get("/v1/mcp/tools");
    for format in FORMATS {
        let answer = api.get(&format!("/v1/mcp/tools?format={format}"));
        assert_eq!(answer["format"], format);
        // Every registered tool, and the host tools the model is given beside them.
        for listed in plain["tools"].as_array().unwrap() {
            tool_in(&answer, listed["name"].as_str().unwrap());
        }
        tool_in(&answer, "mcp__list_resources");
        let echo = tool_in(&answer, "mcp__f__echo");
        let (parameters, strict) = match format {
            "openai" => (
                &echo["function"]["parameters"],
                echo["function"].get("strict"),
            ),
            "json-schema" => (
                &echo["function"]["parameters"],
                echo["function"].get("strict"),
            ),
            "openai-responses" => (&echo["parameters"], echo.get("strict")),
            "anthropic" => (&echo["input_schema"], None),
            _ => (&echo["parameters"], None),
        };
        let object = if format == "gemini" {
            "OBJECT"
        } else {
            "object"
        };
        assert_eq!(parameters["type"], object, "{format}: {echo}");
        match format {
            "openai" | "openai-responses" => assert!(strict.is_some_and(Value::is_boolean)),
            _ => assert!(strict.is_none(), "{format}: {echo}"),
        }
        let offered = api.get(&format!(
            "/v1/mcp/tools/offered?conversation=c&format={format}"
        ));
        assert_eq!(offered["format"], format);
        assert_eq!(offered["tools"], answer["tools"], "{offered}");
    }
    let unknown = api.send("GET", "/v1/mcp/tools?format=claude", None);
    assert_eq!(unknown.status, 400, "{unknown:?}");
    assert!(
        unknown
            .error()
            .contains("openai, openai-responses, anthropic, gemini, json-schema")
    );

    // A call as each API sends it: its result item comes back beside the text.
    for (format, id_key) in [
        ("openai", "tool_call_id"),
        ("openai-responses", "call_id"),
        ("anthropic", "tool_use_id"),
    ] {
        let reply = api.post(
            "/v1/mcp/call",
            json!({"format": format, "call_id": "c-7",
            "name": "mcp__f__echo", "mode": "auto", "arguments": {"text": "hi"}}),
        );
        assert_eq!(reply.status, 200, "{reply:?}");
        let body = reply.json();
        assert_eq!(body["text"], "hi");
        assert_eq!(body["item"][id_key], "c-7", "{body}");
    }
    let reply = api.post(
        "/v1/mcp/call",
        json!({"format": "gemini", "call_id": "g1",
        "name": "mcp__f__echo", "mode": "auto", "arguments": {"text": "hi"}}),
    );
    assert_eq!(
        reply.json()["item"],
        json!({"functionResponse": {"id": "g1", "name": "mcp__f__echo", "response": {"output": "hi"}}})
    );
    // Strict mode's nulls for optional parameters come off before the call.
    let reply = api.post(
        "/v1/mcp/call",
        json!({"format": "openai", "call_id": "c-8",
        "name": "mcp__f__echo", "mode": "auto", "arguments": {"text": "hi", "stderr": null}}),
    );
    assert_eq!(reply.json()["text"], "hi", "{reply:?}");
    // Arguments that cannot fit the tool are the model's to mend: never sent.
    let reply = api.post(
        "/v1/mcp/call",
        json!({"format": "anthropic", "call_id": "c-9",
        "name": "mcp__f__add", "mode": "auto", "arguments": {"a": "one", "b": 2}}),
    );
    let body = reply.json();
    assert_eq!(body["isError"], true, "{body}");
    assert_eq!(body["item"]["is_error"], true, "{body}");
    let said = body["item"]["content"][0]["text"].as_str().unwrap();
    assert!(said.contains("\"/a\" must be number"), "{said}");
    // `call_id` goes with `format`; an unknown format is named.
    api.assert_refused(
        "/v1/mcp/call",
        &[
            (
                json!({"name": "mcp__f__echo", "call_id": "x"}),
                400,
                "goes with \"format\"",
            ),
            (
                json!({"name": "mcp__f__echo", "format": "openai"}),
                400,
                "call_id",
            ),
            (
                json!({"name": "mcp__f__echo", "format": "x", "call_id": "1"}),
                400,
                "the formats are",
            ),
        ],
    );
}

#[test]
fn tools_prints_the_request_tool_list_of_a_model_api() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.json");
    std::fs::write(
        &config,
        json!({"servers": {"f": fixture_entry(&[])}}).to_string(),
    )
    .unwrap();
    let out = std::process::Command::new(binary())
        .args(["tools", "--json", "--format", "gemini", "--config"])
        .arg(&config)
        .env("AGENVOY_CONFIG_DIR", dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer["format"], "gemini");
    assert_eq!(
        tool_in(&answer, "mcp__f__add")["parameters"]["properties"]["a"]["type"],
        "NUMBER"
    );
}
