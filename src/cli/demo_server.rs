//! `agenvoy-mcp fixture-server`: the small demo server over stdio that the embedded default
//! config runs (the binary itself), so a first `agenvoy-mcp tools` on a fresh clone shows a
//! connected server with no network and no config.
//!
//! It offers the tools `echo`, `add`, `slow` (sleeps, reporting progress) and `fail`
//! (`isError`); the resources `fixture://readme` and `fixture://logo` (which may be followed,
//! and never change); the prompt `greet`, with completions of its `name` and `style`; and
//! logging. It speaks the initialize era (a
//! `server/discover` is not found, so the client falls back). The fault modes and HTTP that
//! tests need belong to the test fixture, `agenvoy-mcp-fixture`, not to the product.

use agenvoy_mcp::wire::jsonrpc::{self, ErrorObject, Message, Notification, Request, Response};
use agenvoy_mcp::{HANDSHAKE_VERSIONS, LATEST_HANDSHAKE_VERSION};
use serde_json::{Value, json};
use std::io::{BufRead, Write};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Serves stdin and stdout until stdin ends. Anything but the default stdio mode is the test
/// fixture's: refused, naming it.
pub fn run(mode: &str, http: Option<std::net::SocketAddr>) -> ExitCode {
    if mode != "normal" || http.is_some() {
        eprintln!(
            "fixture-server is the demo server: stdio and mode normal only; for --http and the \
             fault modes use the test fixture, agenvoy-mcp-fixture (built by `cargo build` \
             beside agenvoy-mcp)"
        );
        return ExitCode::from(2);
    }
    let out = Arc::new(Mutex::new(std::io::stdout()));
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        if line.trim().is_empty() {
            continue;
        }
        match Message::parse(line.as_bytes()) {
            // A call may sleep (`slow`): each runs on its own thread, so others are answered.
            Ok(Message::Request(request)) if request.method == "tools/call" => {
                let out = out.clone();
                std::thread::spawn(move || answer(&out, request));
            }
            Ok(Message::Request(request)) => answer(&out, request),
            Ok(_) => {}
            Err(e) => eprintln!("fixture-server: ignoring a bad line: {e}"),
        }
    }
    ExitCode::SUCCESS
}

type Out = Mutex<std::io::Stdout>;

/// Writes one message and its newline.
fn send(out: &Out, message: Message) {
    let mut bytes = message.to_bytes();
    bytes.push(b'\n');
    let mut out = out.lock().unwrap();
    let _ = out.write_all(&bytes).and_then(|()| out.flush());
}

fn notify(out: &Out, method: &str, params: Value) {
    let method = method.into();
    let params = Some(params);
    send(out, Message::Notification(Notification { method, params }));
}

fn answer(out: &Out, request: Request) {
    let params = request.params.unwrap_or(Value::Null);
    let outcome = outcome(out, &request.method, &params);
    let id = Some(request.id);
    send(out, Message::Response(Response { id, outcome }));
}

fn text(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}]})
}

fn invalid(why: String) -> ErrorObject {
    ErrorObject::new(jsonrpc::INVALID_PARAMS, why)
}

fn outcome(out: &Out, method: &str, params: &Value) -> Result<Value, ErrorObject> {
    let str_at = |pointer: &str| params.pointer(pointer).and_then(Value::as_str);
    match method {
        "initialize" => {
            let offered = str_at("/protocolVersion").unwrap_or("");
            let version = match HANDSHAKE_VERSIONS.contains(&offered) {
                true => offered,
                false => LATEST_HANDSHAKE_VERSION,
            };
            Ok(json!({
                "protocolVersion": version,
                "capabilities": {"tools": {}, "resources": {"subscribe": true}, "prompts": {},
                                 "completions": {}, "logging": {}},
                "serverInfo": {"name": "agenvoy-demo", "version": env!("CARGO_PKG_VERSION")},
                "instructions": "The agenvoy demo server: use echo to repeat text, add to sum two numbers.",
            }))
        }
        "ping" => Ok(json!({})),
        "logging/setLevel" => {
            let level = str_at("/level").unwrap_or("");
            notify(
                out,
                "notifications/message",
                json!({"level": "notice", "data": format!("log level set to {level}")}),
            );
            Ok(json!({}))
        }
        "tools/list" => {
            let schema = |props: Value, required: &[&str]| json!({"type": "object", "properties": props, "required": required});
            let number = json!({"type": "number"});
            Ok(json!({"tools": [
                {"name": "echo", "description": "Returns the text it is given.",
                 "inputSchema": schema(json!({"text": {"type": "string"}}), &["text"])},
                {"name": "add", "description": "Adds two numbers.",
                 "inputSchema": schema(json!({"a": number, "b": number}), &["a", "b"])},
                {"name": "slow", "description": "Sleeps, reporting progress.",
                 "inputSchema": schema(json!({"seconds": number, "steps": {"type": "integer"}}), &["seconds"])},
                {"name": "fail", "description": "Always fails with isError.",
                 "inputSchema": schema(json!({"message": {"type": "string"}}), &[])},
            ]}))
        }
        "tools/call" => call(out, params),
        "resources/list" => Ok(json!({"resources": [
            {"uri": "fixture://readme", "name": "readme", "mimeType": "text/plain"},
            {"uri": "fixture://logo", "name": "logo", "mimeType": "image/png"},
        ]})),
        "resources/read" => match str_at("/uri") {
            Some(uri @ "fixture://readme") => Ok(json!({"contents": [{"uri": uri,
                "mimeType": "text/plain", "text": "The agenvoy demo server's readme."}]})),
            Some(uri @ "fixture://logo") => Ok(json!({"contents": [{"uri": uri,
                "mimeType": "image/png", "blob": "iVBORw0KGgo="}]})),
            uri => Err(invalid(format!("unknown resource {uri:?}"))),
        },
        // Followed, never changed: a subscription is only acknowledged.
        "resources/subscribe" | "resources/unsubscribe" => Ok(json!({})),
        "prompts/list" => Ok(
            json!({"prompts": [{"name": "greet", "description": "Greets someone.",
            "arguments": [{"name": "name", "description": "Who", "required": true},
                          {"name": "style", "description": "How"}]}]}),
        ),
        "prompts/get" => match (str_at("/name"), str_at("/arguments/name")) {
            (Some("greet"), Some(name)) => {
                let style = str_at("/arguments/style").unwrap_or("casual");
                let words = format!("Greet {name} in a {style} way.");
                Ok(json!({"description": "A greeting", "messages": [
                    {"role": "user", "content": {"type": "text", "text": words}}]}))
            }
            (Some("greet"), None) => Err(invalid("greet needs the argument name".into())),
            (other, _) => Err(invalid(format!("unknown prompt {other:?}"))),
        },
        "completion/complete" => {
            let typed = str_at("/argument/value").unwrap_or("");
            // A name is titled when the arguments chosen so far make the greeting formal.
            let formal = str_at("/context/arguments/style") == Some("formal");
            let (choices, title): (&[&str], _) =
                match (str_at("/ref/name"), str_at("/argument/name")) {
                    (Some("greet"), Some("name")) => (&["Ada", "Alan", "Grace"], formal),
                    (Some("greet"), Some("style")) => (&["casual", "formal", "friendly"], false),
                    _ => (&[], false),
                };
            let values: Vec<String> = choices
                .iter()
                .filter(|c| c.starts_with(typed))
                .map(|c| {
                    if title {
                        format!("Dr. {c}")
                    } else {
                        c.to_string()
                    }
                })
                .collect();
            Ok(json!({"completion": {"values": values, "total": values.len(), "hasMore": false}}))
        }
        other => Err(ErrorObject::new(
            jsonrpc::METHOD_NOT_FOUND,
            format!("method not found: {other}"),
        )),
    }
}

fn call(out: &Out, params: &Value) -> Result<Value, ErrorObject> {
    let args = params.get("arguments").cloned().unwrap_or(Value::Null);
    let number = |key: &str| args.get(key).and_then(Value::as_f64);
    match params.get("name").and_then(Value::as_str).unwrap_or("") {
        "echo" => Ok(text(args.get("text").and_then(Value::as_str).unwrap_or(""))),
        "add" => {
            let sum = number("a").unwrap_or(0.0) + number("b").unwrap_or(0.0);
            let mut result = text(&sum.to_string());
            result["structuredContent"] = json!({"sum": sum});
            Ok(result)
        }
        "slow" => {
            let seconds = number("seconds").unwrap_or(1.0).clamp(0.0, 3600.0);
            let steps = args
                .get("steps")
                .and_then(Value::as_u64)
                .unwrap_or(5)
                .clamp(1, 1000);
            let token = params.pointer("/_meta/progressToken");
            for step in 1..=steps {
                std::thread::sleep(Duration::from_secs_f64(seconds / steps as f64));
                if let Some(token) = token {
                    let progress = json!({"progressToken": token, "progress": step,
                        "total": steps, "message": format!("step {step} of {steps}")});
                    notify(out, "notifications/progress", progress);
                }
            }
            Ok(text(&format!("slept {seconds} s")))
        }
        "fail" => {
            let message = args.get("message").and_then(Value::as_str);
            let mut result = text(message.unwrap_or("the fail tool failed, as asked"));
            result["isError"] = json!(true);
            Ok(result)
        }
        other => Err(invalid(format!("unknown tool: {other}"))),
    }
}
