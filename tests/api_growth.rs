//! The API as a program outside the crate uses it (issue 43): every options struct built
//! from its public constructor and setters only (they are `#[non_exhaustive]`: a struct
//! literal does not compile here), what each build shows a user, and a server's questions
//! answered by plain async closures, against the fixture.
#![cfg(feature = "cli")]

mod common;

use agenvoy_mcp::auth::{Grant, MemoryStore, OAuthConfig, PreRegistered, SecretSource};
use agenvoy_mcp::host::{
    Control, Decision, EraMemory, EventBus, HttpServer, LoginOptions, Manager, ManagerOptions,
    OAuthClient, PermissionMode, ServerConfig, StdioServer, Timeouts, ToolCall, ToolDefinition,
    ToolFilter, ToolSearch,
};
use agenvoy_mcp::{
    Authorizer, BoxFuture, Client, ClientInfo, ClientOptions, Credentials, ElicitationAnswer,
    ElicitationKind, ElicitationRequest, EraPreference, Handlers, HttpConfig, ListLimits, Refusal,
    RequestOptions, Root, SamplingAnswer, SamplingRequest, Secret, StdioConfig, TaskMode,
};
use common::*;
use serde_json::{Value, json};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The fixture's answer to its own request `method` with `params` (its `client_request`
/// tool), as JSON: `{"result": ...}` or `{"error": ...}`.
async fn ask(client: &Client, method: &str, params: Value) -> Value {
    let arguments = json!({"method": method, "params": params});
    let out = client.call_tool("client_request", arguments).await.unwrap();
    serde_json::from_str(&out.text).unwrap()
}

fn who_are_you() -> Value {
    json!({"message": "Who are you?", "requestedSchema": {"type": "object", "properties": {
        "name": {"type": "string"}, "age": {"type": "integer"}
    }, "required": ["name"]}})
}

#[tokio::test]
async fn a_client_answers_a_servers_form_with_an_async_closure_in_both_eras() {
    for mode in ["normal", "modern"] {
        let asked = Arc::new(Mutex::new(Vec::new()));
        let seen = asked.clone();
        let handlers = Handlers::default().with_elicitation(move |request: ElicitationRequest| {
            let seen = seen.clone();
            async move {
                if let ElicitationKind::Form(form) = request.kind {
                    seen.lock().unwrap().push(form.message);
                }
                ElicitationAnswer::accept(json!({"name": "Ada", "age": 36}))
            }
        });
        let options = ClientOptions::default().with_handlers(handlers);
        let client = connect(&["--mode", mode], options).await;
        let answer = ask(&client, "elicitation/create", who_are_you()).await;
        assert_eq!(
            answer,
            json!({"result": {"action": "accept", "content": {"name": "Ada", "age": 36}}}),
            "{mode}"
        );
        assert_eq!(*asked.lock().unwrap(), ["Who are you?"], "{mode}");
        client.close().await;
    }
}

#[tokio::test]
async fn accepting_with_what_is_not_an_object_tells_the_server_why_and_nothing_is_sent() {
    let handlers = Handlers::default()
        .with_elicitation(|_| async { ElicitationAnswer::accept(json!(["Ada"])) });
    let client = connect(&[], ClientOptions::default().with_handlers(handlers)).await;
    let answer = ask(&client, "elicitation/create", who_are_you()).await;
    assert_eq!(answer["error"]["code"], -32603, "{answer}");
    assert_eq!(
        answer["error"]["message"],
        "the client's answer was not sent: an accepted elicitation's content must be a JSON object of the form's values by name, not an array"
    );
    assert!(answer.get("result").is_none(), "{answer}");
    client.close().await;
}

#[tokio::test]
async fn a_client_samples_with_an_async_closure_and_announces_what_it_set() {
    let handlers = Handlers::default()
        .with_sampling(|request: SamplingRequest| async move {
            let last = request
                .messages
                .last()
                .map(|m| m.text())
                .unwrap_or_default();
            let block = json!({"type": "text", "text": format!("re: {last}")});
            Ok(SamplingAnswer::new(vec![block], "my-model").with_stop_reason("maxTokens"))
        })
        .with_roots(vec![Root::new("file:///work").with_name("work")]);
    assert_eq!(
        handlers.capabilities(),
        json!({"sampling": {}, "roots": {"listChanged": true}})
    );
    let client = connect(&[], ClientOptions::default().with_handlers(handlers)).await;
    let params = json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
                        "maxTokens": 5});
    let answer = ask(&client, "sampling/createMessage", params).await;
    assert_eq!(
        answer["result"],
        json!({"role": "assistant", "content": {"type": "text", "text": "re: hi"},
               "model": "my-model", "stopReason": "maxTokens"})
    );
    let roots = ask(&client, "roots/list", json!({})).await;
    assert_eq!(
        roots["result"]["roots"],
        json!([{"uri": "file:///work", "name": "work"}])
    );
    // Elicitation was not set: not announced, and the server is told so.
    let unoffered = ask(&client, "elicitation/create", who_are_you()).await;
    assert_eq!(unoffered["error"]["code"], -32601, "{unoffered}");
    client.close().await;
}

#[test]
fn client_options_are_built_with_setters_only() {
    let limits = ListLimits::default()
        .with_max_items(50)
        .with_max_bytes(1 << 16);
    let options = ClientOptions::default()
        .with_client_info(ClientInfo::new("my-agent", "1.2.3"))
        .with_timeout(Duration::from_secs(5))
        .with_startup_timeout(Duration::from_secs(7))
        .with_output_cap(4096)
        .with_max_message(1 << 20)
        .with_era(EraPreference::Handshake)
        .with_list_limits(limits)
        .with_handlers(Handlers::default().with_sampling_tools(true));
    assert_eq!(options.client_info, ClientInfo::new("my-agent", "1.2.3"));
    assert_eq!(
        (options.timeout, options.startup_timeout),
        (Duration::from_secs(5), Some(Duration::from_secs(7)))
    );
    assert_eq!((options.output_cap, options.max_message), (4096, 1 << 20));
    assert_eq!(options.era, EraPreference::Handshake);
    assert_eq!((limits.max_items, limits.max_bytes), (50, 1 << 16));
    assert_eq!(options.list_limits, limits);
    assert!(options.handlers.sampling_tools);

    let request = RequestOptions::default()
        .with_timeout(Duration::from_secs(3))
        .with_progress(|_| {})
        .with_progress_resets_timeout(true)
        .with_max_duration(Duration::from_secs(30))
        .header("Mcp-Param-Region", "eu")
        .with_task(TaskMode::Never);
    assert_eq!(request.timeout, Some(Duration::from_secs(3)));
    assert!(request.on_progress.is_some() && request.progress_resets_timeout);
    assert_eq!(request.max_duration, Some(Duration::from_secs(30)));
    assert_eq!(request.headers, [("Mcp-Param-Region".into(), "eu".into())]);
    assert_eq!(request.task, TaskMode::Never);
}

#[tokio::test]
async fn a_stdio_config_built_with_setters_starts_the_server_it_says() {
    let config = StdioConfig::new(fixture_binary())
        .args(["--mode", "normal"])
        .env("AGENVOY_GROWTH", "set by env()")
        .with_inherit_env(false)
        .with_cwd(std::env::temp_dir());
    assert_eq!(config.args, ["--mode", "normal"]);
    agenvoy_mcp::unstable::become_subreaper();
    let client = Client::connect_stdio("built", &config, ClientOptions::default())
        .await
        .unwrap();
    let out = client
        .call_tool("env", json!({"name": "AGENVOY_GROWTH"}))
        .await
        .unwrap();
    assert_eq!(out.text, "set by env()");
    client.close().await;
}

/// An authorizer written outside the crate: its signatures name only public paths.
struct FixedToken(AtomicUsize);

impl Authorizer for FixedToken {
    fn authorization<'a>(
        &'a self,
        _method: &'a str,
        _url: &'a str,
    ) -> BoxFuture<'a, agenvoy_mcp::Result<Credentials>> {
        self.0.fetch_add(1, Ordering::SeqCst);
        let credentials = Credentials::default().with_authorization(Secret::from("Bearer t0k"));
        Box::pin(async move { Ok(credentials) })
    }

    fn challenge(&self, _refusal: Refusal) -> BoxFuture<'_, agenvoy_mcp::Result<bool>> {
        Box::pin(async { Ok(false) })
    }
}

#[tokio::test]
async fn an_http_config_built_with_setters_carries_its_authorizer() {
    let fixture = HttpFixture::start("normal", &[]);
    let authorizer = Arc::new(FixedToken(AtomicUsize::new(0)));
    let config = HttpConfig::new(&fixture.url)
        .header("X-Team", "search")
        .with_connect_timeout(Duration::from_secs(5))
        .with_header_timeout(Duration::from_secs(20))
        .with_authorizer(authorizer.clone());
    assert_eq!(config.headers, [("X-Team".into(), "search".into())]);
    let client = Client::connect_http("built", &config, ClientOptions::default())
        .await
        .unwrap();
    let out = client
        .call_tool("echo", json!({"text": "hi"}))
        .await
        .unwrap();
    assert_eq!(out.text, "hi");
    assert!(authorizer.0.load(Ordering::SeqCst) > 0);
    assert!(fixture.stats()["credentialed"].as_u64().unwrap() > 0);
    client.close().await;
}

#[test]
fn oauth_settings_are_built_with_setters_only() {
    let client = PreRegistered::new("my-client")
        .with_client_secret(Secret::from("s3cret"))
        .with_redirect_uri("http://127.0.0.1:9999/callback")
        .with_private_key(SecretSource::Env("MY_KEY".into()));
    let config = OAuthConfig::new("github", "https://mcp.example.com/mcp")
        .with_client_name("my agent")
        .with_client(client)
        .with_client_metadata_url("https://agent.example.com/client.json")
        .with_redirect_uri("http://127.0.0.1:9998/callback")
        .with_grant(Grant::ClientCredentials)
        .with_connect_timeout(Duration::from_secs(3));
    let client = config.client.as_ref().unwrap();
    assert_eq!(client.client_id, "my-client");
    assert_eq!(client.client_secret.as_ref().unwrap().expose(), "s3cret");
    assert_eq!(
        client.redirect_uri.as_deref(),
        Some("http://127.0.0.1:9999/callback")
    );
    assert_eq!(
        client.private_key.as_ref().unwrap().describe(),
        "the environment variable MY_KEY"
    );
    assert_eq!(
        (config.server.as_str(), config.client_name.as_str()),
        ("github", "my agent")
    );
    assert_eq!(config.redirect_uri, "http://127.0.0.1:9998/callback");
    assert!(matches!(config.grant, Grant::ClientCredentials));
    assert_eq!(config.connect_timeout, Duration::from_secs(3));

    let login = LoginOptions::default()
        .with_open_browser(false)
        .with_timeout(Duration::from_secs(60));
    assert_eq!(
        (login.open_browser, login.timeout),
        (false, Duration::from_secs(60))
    );
    let by_hand = OAuthClient::new("id-1")
        .with_client_secret(Secret::from("x"))
        .with_redirect_uri("http://localhost:1/cb");
    assert_eq!(
        (by_hand.client_id.as_str(), by_hand.redirect_uri.as_deref()),
        ("id-1", Some("http://localhost:1/cb"))
    );
}

#[test]
fn config_entries_built_with_setters_are_what_the_file_holds() {
    let timeouts = Timeouts::default()
        .with_request(Duration::from_secs(90))
        .with_startup(Duration::from_secs(15));
    let stdio = StdioServer::new("npx")
        .arg("-y")
        .args(["@modelcontextprotocol/server-everything"])
        .env("LOG", "$LOG_LEVEL")
        .with_inherit_env(true)
        .with_timeouts(timeouts);
    assert_eq!(
        ServerConfig::Stdio(stdio).to_value(),
        json!({"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"],
               "env": {"LOG": "$LOG_LEVEL"}, "inherit_env": true,
               "timeout": 90, "startup_timeout": 15})
    );
    let http = HttpServer::new("https://mcp.example.com/mcp")
        .header("X-Team", "search")
        .with_auth("oauth")
        .with_oauth_client_name("my agent")
        .with_oauth_client_id("id")
        .with_oauth_client_secret("$SECRET")
        .with_oauth_redirect_uri("http://localhost:17988/callback")
        .with_oauth_client_metadata_url("https://agent.example.com/client.json")
        .with_oauth_grant("client_credentials")
        .with_oauth_client_private_key("$KEY")
        .with_oauth_workload_assertion("/var/run/token")
        .with_timeouts(Timeouts::default().with_request(Duration::from_secs(30)));
    assert_eq!(
        ServerConfig::Http(http).to_value(),
        json!({"url": "https://mcp.example.com/mcp", "headers": {"X-Team": "search"},
               "auth": "oauth", "oauth_client_name": "my agent", "oauth_client_id": "id",
               "oauth_client_secret": "$SECRET",
               "oauth_redirect_uri": "http://localhost:17988/callback",
               "oauth_client_metadata_url": "https://agent.example.com/client.json",
               "oauth_grant": "client_credentials", "oauth_client_private_key": "$KEY",
               "oauth_workload_assertion": "/var/run/token", "timeout": 30})
    );
    let filter = ToolFilter::default()
        .with_enabled_tools(["read_*", "search"])
        .with_disabled_tools(["read_secret"]);
    assert_eq!(
        filter.enabled_tools,
        Some(vec!["read_*".to_string(), "search".to_string()])
    );
    assert_eq!(filter.disabled_tools, ["read_secret"]);
}

/// A manager built with setters only: its confirm closure approves a call made with
/// `ToolCall`'s setters, and its elicitation closure answers the server, told its name.
#[tokio::test]
async fn a_manager_built_with_setters_confirms_and_answers_through_its_closures() {
    agenvoy_mcp::unstable::become_subreaper();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcp.json");
    std::fs::write(
        &path,
        json!({"servers": {"fx": fixture_entry(&[])}}).to_string(),
    )
    .unwrap();
    let confirmed = Arc::new(Mutex::new(Vec::new()));
    let seen = confirmed.clone();
    let options = ManagerOptions::default()
        .with_client(ClientOptions::default().with_timeout(Duration::from_secs(20)))
        .with_allowlist_path(dir.path().join("allow_tool"))
        .with_confirm(move |request| {
            seen.lock().unwrap().push(request.name);
            async { Decision::Approve }
        })
        .with_debounce(Duration::from_millis(50))
        .with_poll_interval(Duration::from_secs(60))
        .with_token_store(Arc::new(MemoryStore::new()))
        .with_eras(Arc::new(EraMemory::new(dir.path().join("eras.json"))))
        .with_tool_search(ToolSearch::new(1_000_000))
        .with_events(EventBus::new())
        .with_elicitation(|server, _request| async move {
            ElicitationAnswer::accept(json!({"name": server}))
        })
        .with_sampling(|server, _request| async move {
            Ok(SamplingAnswer::text(&format!("from {server}"), "m"))
        });
    assert_eq!(options.allowlist_path, dir.path().join("allow_tool"));
    assert_eq!(options.tool_search.unwrap().above_tokens, 1_000_000);
    let manager = Manager::load(&path, options).await.unwrap();
    manager.register_all();
    let control = Control::new(manager, path);

    let arguments = json!({"method": "elicitation/create", "params": who_are_you()});
    let call = ToolCall::new("mcp__fx__client_request", arguments)
        .with_mode(PermissionMode::Confirm)
        .with_id("call-1")
        .with_request(RequestOptions::default().with_timeout(Duration::from_secs(20)));
    let done = control.call(call).await.unwrap();
    let answer: Value = serde_json::from_str(&done.output.text).unwrap();
    assert_eq!(
        answer["result"],
        json!({"action": "accept", "content": {"name": "fx"}})
    );
    assert_eq!(*confirmed.lock().unwrap(), ["mcp__fx__client_request"]);
    control.close().await;
}

#[test]
fn an_embedders_own_tool_is_defined_with_a_constructor() {
    let schema = serde_json::value::RawValue::from_string(r#"{"type":"object"}"#.into()).unwrap();
    let own = ToolDefinition::new("my_tool", "Does my thing.", schema.into());
    assert_eq!(
        (own.name.as_str(), &*own.description, own.input_schema.get()),
        ("my_tool", "Does my thing.", r#"{"type":"object"}"#)
    );
}
