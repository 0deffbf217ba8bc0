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

/// Every tool of the corpus: the three real lists (`fixtures/tool_lists`) and
/// `fixtures/model_api/corpus.json` (schemas the Python SDK makes from pydantic models, ones
/// the TypeScript SDK makes from zod, hand-made hard cases), each with its samples.
fn corpus() -> Vec<(String, Value, Vec<Value>)> {
    let root = env!("CARGO_MANIFEST_DIR");
    let read = |path: &str| -> Value {
        serde_json::from_str(&std::fs::read_to_string(format!("{root}/{path}")).unwrap()).unwrap()
    };
    let samples = read("fixtures/model_api/samples.json");
    let mut all = Vec::new();
    for stem in ["everything", "github", "memory"] {
        for tool in read(&format!("fixtures/tool_lists/{stem}.json"))["tools"]
            .as_array()
            .unwrap()
        {
            let name = tool["name"].as_str().unwrap();
            let samples = samples[format!("{stem}/{name}")]
                .as_array()
                .cloned()
                .unwrap_or_default();
            all.push((format!("{stem}/{name}"), tool.clone(), samples));
        }
    }
    for tool in read("fixtures/model_api/corpus.json")["tools"]
        .as_array()
        .unwrap()
    {
        let samples = tool["samples"].as_array().cloned().unwrap_or_default();
        all.push((
            tool["name"].as_str().unwrap().to_string(),
            tool.clone(),
            samples,
        ));
    }
    all
}

/// The parameters in an adapted item.
fn parameters_of(item: &Value) -> &Value {
    ["parameters", "input_schema"]
        .iter()
        .find_map(|k| item.get(*k))
        .or_else(|| item["function"].get("parameters"))
        .unwrap()
}

/// What a model sends for `args` under strict `parameters`: every property it requires and
/// `args` leaves out, as `null` (how a strict schema says "not given").
fn as_strict_model_sends(parameters: &Value, args: &Value) -> Value {
    match (
        args,
        parameters.get("properties").and_then(Value::as_object),
    ) {
        (Value::Object(given), Some(properties)) => {
            let mut sent = given.clone();
            for (name, schema) in properties {
                match sent.get_mut(name) {
                    Some(v) => *v = as_strict_model_sends(schema, v),
                    None => {
                        sent.insert(name.clone(), Value::Null);
                    }
                }
            }
            Value::Object(sent)
        }
        (Value::Array(items), _) => match parameters.get("items") {
            Some(item) => Value::Array(
                items
                    .iter()
                    .map(|v| as_strict_model_sends(item, v))
                    .collect(),
            ),
            None => args.clone(),
        },
        _ => args.clone(),
    }
}

/// Each corpus tool adapted to each target, with its samples as each target's model would
/// send them and as they are mapped back: what `tests/model_api/check.py` checks, against
/// `google-genai`'s own model for Gemini, each target's documented rules, and `jsonschema`.
#[test]
fn every_corpus_schema_is_accepted_by_each_model_api_and_means_the_same() {
    use agenvoy_mcp::host::ToolDefinition;
    use agenvoy_mcp::host::model_api::{ModelApi, adapt_tool, map_back};
    let mut adapted = Vec::new();
    let corpus = corpus();
    assert!(corpus.len() >= 180, "{} tools in the corpus", corpus.len());
    for (name, tool, samples) in &corpus {
        let original = tool.get("inputSchema").cloned().unwrap_or(Value::Null);
        let definition = ToolDefinition::new(
            // The registered name (`mcp__<server>__<tool>`, mapped) is what APIs see.
            agenvoy_mcp::host::llm_tool_name("s", tool["name"].as_str().unwrap_or("")),
            tool["description"].as_str().unwrap_or(""),
            serde_json::value::RawValue::from_string(original.to_string())
                .unwrap()
                .into(),
        );
        let mut targets = serde_json::Map::new();
        let mut sent = vec![serde_json::Map::new(); samples.len()];
        let mut back = vec![serde_json::Map::new(); samples.len()];
        for api in ModelApi::ALL {
            let shaped = adapt_tool(api, &definition);
            for (i, sample) in samples.iter().enumerate() {
                let args = &sample["args"];
                // A valid call as a strict model makes it (every optional member, null when
                // not given); an invalid one as it is, its fault kept.
                let model = match shaped.strict && sample["valid"] == true {
                    true => as_strict_model_sends(parameters_of(&shaped.item), args),
                    false => args.clone(),
                };
                let mapped = map_back(&original, model.clone())
                    .ok()
                    .unwrap_or(Value::Null);
                sent[i].insert(api.name().into(), model);
                back[i].insert(api.name().into(), mapped);
            }
            targets.insert(api.name().into(), json!({"item": shaped.item}));
        }
        let samples: Vec<Value> = samples
            .iter()
            .zip(sent.into_iter().zip(back))
            .map(|(s, (sent, back))| json!({"args": s["args"], "valid": s["valid"], "sent": sent, "back": back}))
            .collect();
        adapted.push(
            json!({"name": name, "original": original, "targets": targets, "samples": samples}),
        );
    }
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let file = dir.join("model_api_adapted.json");
    std::fs::write(&file, serde_json::to_vec_pretty(&adapted).unwrap()).unwrap();
    let Some(python) = installed("venv/bin/python") else {
        return;
    };
    let check = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/model_api/check.py");
    let out = std::process::Command::new(python)
        .arg(check)
        .arg(&file)
        .output()
        .unwrap();
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{report}");
    assert!(
        out.status.success(),
        "the checker refused some (adapted file: {}):\n{report}",
        file.display()
    );
}
