//! What a server asks of the client, typed: elicitation (form and URL), sampling, and roots
//! changed at run time. Against the fixture's `client_request` tool (which sends any request
//! to the client and returns the answer) and server-everything's `trigger-elicitation-request`,
//! `trigger-sampling-request` and `get-roots-list`.
#![cfg(feature = "cli")]

mod common;

use agenvoy_mcp::{Client, ClientOptions, Handlers, Root};
use agenvoy_mcp::{
    ElicitationAnswer, ElicitationKind, ElicitationRequest, FieldKind, SamplingAnswer,
    SamplingRequest,
};
use common::*;
use serde_json::{Map, Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Handlers whose elicitation answers `answer` and keeps what it was asked.
fn eliciting(answer: ElicitationAnswer) -> (Handlers, Arc<Mutex<Vec<ElicitationKind>>>) {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let seen = asked.clone();
    let handlers = Handlers::default().with_elicitation(move |request: ElicitationRequest| {
        seen.lock().unwrap().push(request.kind);
        let answer = answer.clone();
        async move { Ok(answer) }
    });
    (handlers, asked)
}

/// `handlers` with sampling that answers `sampled: <the last message's text>`.
fn sampling(handlers: Handlers) -> Handlers {
    handlers.with_sampling(|request: SamplingRequest| async move {
        let last = request
            .messages
            .last()
            .map(|m| m.text())
            .unwrap_or_default();
        Ok(SamplingAnswer::text(
            &format!("sampled: {last}"),
            "agenvoy-test",
        ))
    })
}

fn options(handlers: Handlers) -> ClientOptions {
    ClientOptions::default().with_handlers(handlers)
}

/// The fixture's answer to its own request `method` with `params`, as JSON.
async fn ask(client: &Client, method: &str, params: Value) -> Value {
    let out = client
        .call_tool(
            "client_request",
            json!({"method": method, "params": params}),
        )
        .await
        .unwrap();
    serde_json::from_str(&out.text).unwrap()
}

fn form_params() -> Value {
    json!({"message": "Who are you?", "requestedSchema": {"type": "object", "properties": {
        "name": {"type": "string", "title": "Name"},
        "age": {"type": "integer"},
        "color": {"type": "string", "enum": ["red", "green"]}
    }, "required": ["name"]}})
}

fn content(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

#[tokio::test]
async fn a_form_answer_that_fits_is_sent_and_one_that_does_not_is_an_error() {
    let (handlers, asked) = eliciting(ElicitationAnswer::Accept(content(
        json!({"name": "Ada", "age": 36, "color": "red"}),
    )));
    let client = connect(&[], options(handlers)).await;
    let answer = ask(&client, "elicitation/create", form_params()).await;
    assert_eq!(
        answer["result"],
        json!({"action": "accept", "content": {"name": "Ada", "age": 36, "color": "red"}})
    );
    let ElicitationKind::Form(form) = asked.lock().unwrap()[0].clone() else {
        panic!("a form")
    };
    assert_eq!(form.message, "Who are you?");
    let color = form.fields.iter().find(|f| f.name == "color").unwrap();
    assert_eq!(
        color.kind,
        FieldKind::Choice(vec!["red".into(), "green".into()])
    );
    client.close().await;

    let (handlers, _) = eliciting(ElicitationAnswer::Accept(content(json!({"color": "blue"}))));
    let client = connect(&[], options(handlers)).await;
    let answer = ask(&client, "elicitation/create", form_params()).await;
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("\"name\" is required"), "{answer}");
    // A request that is no form or URL is the server's error; the handler never sees it.
    let answer = ask(&client, "elicitation/create", json!({"message": "m"})).await;
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    client.close().await;
}

#[tokio::test]
async fn a_url_elicitation_hands_over_its_origin_and_opens_nothing() {
    let (handlers, asked) = eliciting(ElicitationAnswer::Decline);
    let client = connect(&[], options(handlers)).await;
    let params = json!({"mode": "url", "message": "Pay here", "elicitationId": "e-1",
                        "url": "https://pay.example.com:8443/checkout?id=7"});
    let answer = ask(&client, "elicitation/create", params).await;
    assert_eq!(answer["result"], json!({"action": "decline"}));
    let ElicitationKind::Url(url) = asked.lock().unwrap()[0].clone() else {
        panic!("a URL")
    };
    assert_eq!(url.origin, "https://pay.example.com:8443");
    assert_eq!(url.elicitation_id.as_deref(), Some("e-1"));
    let bad = json!({"mode": "url", "message": "m", "url": "javascript:alert(1)"});
    assert_eq!(
        ask(&client, "elicitation/create", bad).await["error"]["code"],
        -32602
    );
    client.close().await;
}

#[tokio::test]
async fn sampling_is_typed_and_tools_need_the_capability() {
    let handlers = sampling(Handlers::default());
    let client = connect(&[], options(handlers)).await;
    let params = json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
                        "maxTokens": 5});
    let answer = ask(&client, "sampling/createMessage", params.clone()).await;
    assert_eq!(answer["result"]["content"]["text"], "sampled: hi");
    assert_eq!(answer["result"]["model"], "agenvoy-test");
    let mut with_tools = params;
    with_tools["tools"] = json!([{"name": "look", "inputSchema": {"type": "object"}}]);
    let refused = ask(&client, "sampling/createMessage", with_tools).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    client.close().await;
}

#[tokio::test]
async fn roots_changed_at_run_time_are_listed() {
    let handlers = Handlers::default().with_roots(vec![Root::new("file:///one")]);
    let client = connect(&[], options(handlers)).await;
    let listed = ask(&client, "roots/list", json!({})).await;
    assert_eq!(listed["result"]["roots"][0]["uri"], "file:///one");
    let two = Root::new("file:///two").with_name("two");
    client.set_roots(vec![two]).await.unwrap();
    let listed = ask(&client, "roots/list", json!({})).await;
    assert_eq!(
        listed["result"]["roots"],
        json!([{"uri": "file:///two", "name": "two"}])
    );
    client.close().await;
}

/// In 2026-07-28 a server has no requests of its own: it asks in a result
/// (`input_required`), and the call comes again with the answers. The same handlers answer,
/// over stdio and HTTP.
#[tokio::test]
async fn the_stateless_revision_asks_in_results_and_the_same_handlers_answer() {
    for http in [false, true] {
        let (handlers, asked) = eliciting(ElicitationAnswer::Accept(content(
            json!({"name": "Ada", "age": 36}),
        )));
        let handlers = sampling(handlers).with_roots(vec![Root::new("file:///work")]);
        let fixture = http.then(|| HttpFixture::start("modern", &[]));
        let client = match &fixture {
            Some(f) => Client::connect_http(
                "fixture",
                &agenvoy_mcp::HttpConfig::new(&f.url),
                options(handlers),
            )
            .await
            .unwrap(),
            None => connect(&["--mode", "modern"], options(handlers)).await,
        };
        assert_eq!(client.details().era.name(), "stateless", "http {http}");
        let params = json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
                            "maxTokens": 5});
        let sampled = ask(&client, "sampling/createMessage", params).await;
        assert_eq!(
            sampled["result"]["content"]["text"], "sampled: hi",
            "http {http}"
        );
        let form = ask(&client, "elicitation/create", form_params()).await;
        assert_eq!(form["result"]["action"], "accept", "http {http}: {form}");
        assert_eq!(form["result"]["content"]["name"], "Ada");
        assert_eq!(asked.lock().unwrap().len(), 1);
        let listed = ask(&client, "roots/list", json!({})).await;
        assert_eq!(listed["result"]["roots"][0]["uri"], "file:///work");
        // A result may not ask for more than 16 inputs at once: no handler runs for them.
        let flood = client
            .call_tool(
                "client_request",
                json!({"method": "roots/list", "copies": 17}),
            )
            .await
            .unwrap_err();
        assert!(flood.to_string().contains("at most 16"), "{flood}");
        assert_eq!(asked.lock().unwrap().len(), 1);
        client.close().await;
    }
}

#[tokio::test]
async fn server_everything_elicits_samples_and_lists_changed_roots() {
    let Some(config) = everything() else { return };
    let (handlers, asked) = eliciting(ElicitationAnswer::Accept(content(json!({
        "name": "Ada Lovelace", "check": true, "integer": 7,
        "untitledMultipleSelectEnum": ["Piano"], "titledSingleSelectEnum": "hero-2"
    }))));
    let handlers = sampling(handlers).with_roots(vec![Root::new("file:///tmp/agenvoy-first")]);
    let client = Client::connect_stdio("everything", &config, options(handlers))
        .await
        .unwrap();
    // Its client-dependent tools come once it has seen our capabilities.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let tools = client.list_tools().await.unwrap();
        if tools.iter().any(|t| t.name == "get-roots-list") {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "get-roots-list never came"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let out = client
        .call_tool("trigger-elicitation-request", json!({}))
        .await
        .unwrap();
    assert!(out.text.contains("Ada Lovelace"), "{}", out.text);
    let ElicitationKind::Form(form) = asked.lock().unwrap()[0].clone() else {
        panic!("a form")
    };
    assert!(form.fields.len() >= 10, "{:?}", form.fields);

    let out = client
        .call_tool("trigger-sampling-request", json!({"prompt": "hello"}))
        .await
        .unwrap();
    assert!(out.text.contains("sampled: "), "{}", out.text);

    let out = client.call_tool("get-roots-list", json!({})).await.unwrap();
    assert!(out.text.contains("agenvoy-first"), "{}", out.text);
    let second = Root::new("file:///tmp/agenvoy-second");
    client.set_roots(vec![second]).await.unwrap();
    // The server asks for the roots again when told they changed.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let out = client.call_tool("get-roots-list", json!({})).await.unwrap();
        if out.text.contains("agenvoy-second") {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{}", out.text);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    client.close().await;
}

/// The URL corpus (`fixtures/urls/origins.json`): tricky URLs with the origin Node's WHATWG
/// parser (what browsers implement) gives each, or `null`.
fn url_corpus() -> Vec<(String, Option<String>)> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/urls/origins.json");
    let corpus: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    corpus
        .iter()
        .map(|e| {
            let url = e["url"].as_str().unwrap().to_string();
            (url, e["origin"].as_str().map(String::from))
        })
        .collect()
}

#[tokio::test]
async fn a_url_is_shown_with_the_origin_a_browser_loads_or_refused() {
    let corpus = url_corpus();
    assert!(corpus.len() > 100, "the corpus has {} URLs", corpus.len());
    let asker = UrlAsker::start().await;
    let mut shown = 0;
    for (url, browser) in &corpus {
        match asker.origin(url).await {
            Ok(origin) => {
                shown += 1;
                assert_eq!(
                    Some(origin.as_str()),
                    browser.as_deref(),
                    "{url:?}: shown as {origin}, a browser loads {browser:?}"
                );
                // What is shown is plain ASCII: nothing invisible, nothing reordered.
                assert!(
                    origin.bytes().all(|b| b.is_ascii_graphic()),
                    "{url:?}: {origin:?}"
                );
            }
            Err(why) => assert!(!why.is_empty(), "{url:?}"),
        }
    }
    // The forms that could be read as another host are refused, whatever a browser makes
    // of them; the plain ones are shown.
    for ambiguous in [
        "https://evil.example\\@good.example/login",
        "https://good.example@evil.example/",
        "https://good.ex\tample/",
        "https://good.example\n/",
        "https://exa\u{ad}mple.com/",
        "https://%65xample.com/",
    ] {
        let refused = asker.origin(ambiguous).await;
        assert!(refused.is_err(), "{ambiguous:?} shown as {refused:?}");
    }
    for (url, origin) in [
        ("https://Good.Example:443/x?y#z", "https://good.example"),
        ("https://\u{430}pple.com/", "https://xn--pple-43d.com"),
        ("http://[::1]:17988/callback", "http://[::1]:17988"),
        ("http://0x7f.1/", "http://127.0.0.1"),
    ] {
        assert_eq!(asker.origin(url).await.as_deref(), Ok(origin), "{url}");
    }
    assert!(shown > 40, "only {shown} of the corpus shown");
    asker.close().await;
}

/// The corpus's answers are Node's: `fixtures/urls/whatwg.mjs` run again gives the same file.
#[test]
fn the_url_corpus_holds_what_node_answers() {
    if !system_program("node", "Node.js, which .ci/install checks for") {
        return;
    }
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/urls");
    let out = std::process::Command::new("node")
        .arg(format!("{dir}/whatwg.mjs"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let kept = std::fs::read_to_string(format!("{dir}/origins.json")).unwrap();
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        kept,
        "Node's answers changed: run `node fixtures/urls/whatwg.mjs > fixtures/urls/origins.json` and read the difference"
    );
}

#[tokio::test]
async fn a_request_of_too_many_values_is_refused_unread() {
    let (handlers, asked) = eliciting(ElicitationAnswer::Decline);
    let client = connect(&[], options(handlers)).await;
    let params = json!({"mode": "url", "message": "Pay here", "url": "https://pay.example/"});
    let out = client
        .call_tool(
            "client_request",
            json!({"method": "elicitation/create", "params": params, "pad_zeros": 1_900_000}),
        )
        .await
        .unwrap();
    let answer: Value = serde_json::from_str(&out.text).unwrap();
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("1900") && message.contains("at most 16384"),
        "{message}"
    );
    assert!(asked.lock().unwrap().is_empty());
    // The same request without the padding is handed over.
    let out = client
        .call_tool(
            "client_request",
            json!({"method": "elicitation/create", "params": params, "pad_zeros": 1000}),
        )
        .await
        .unwrap();
    assert!(out.text.contains("decline"), "{}", out.text);
    client.close().await;
}
