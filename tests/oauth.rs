//! OAuth end to end against a real, strict authorization server and MCP resource server,
//! written with the Python `mcp` SDK's auth building blocks (`fixtures/oauth/server.py`,
//! run from the venv `.ci/install` makes): dynamic registration, PKCE enforced, the
//! authorization redirect followed headlessly into the loopback listener, a tool call, the
//! access token expired by the server, and the next call going through a refresh (with
//! rotation). Then the host's view: `needs login` without tokens, connected with them.
//!
//! Skipped when the venv is missing (under `.ci/peers`, or `$AGENVOY_INTEROP_DIR`), unless
//! `AGENVOY_REQUIRE_INTEROP=1` (as `.ci/run` sets).
#![cfg(feature = "cli")]

mod common;

use agenvoy_mcp::HttpConfig;
use agenvoy_mcp::auth::{LoopbackAgent, MemoryStore, OAuth, OAuthConfig, TokenStore};
use agenvoy_mcp::host::Config;
use agenvoy_mcp::host::{Manager, ManagerOptions, PermissionMode, ServerState};
use agenvoy_mcp::{Client, ClientOptions};
use common::py_oauth::{PyServer, headless_browser};
use serde_json::json;
use std::sync::Arc;

fn loopback() -> LoopbackAgent {
    let mut agent = LoopbackAgent::new();
    agent.open_browser = false;
    agent.show_url = Arc::new(headless_browser);
    agent
}

fn agent() -> Arc<LoopbackAgent> {
    Arc::new(loopback())
}

fn oauth_config(url: &str) -> OAuthConfig {
    let mut config = OAuthConfig::new("py", url);
    // Port 0: the listener takes a free port, so tests never fight over 17988.
    config.redirect_uri = "http://localhost:0/callback".into();
    config
}

#[tokio::test]
async fn login_call_expire_refresh_against_the_python_sdk() {
    let Some(server) = PyServer::start() else {
        return;
    };
    let store = Arc::new(MemoryStore::new());
    let oauth =
        Arc::new(OAuth::new(oauth_config(&server.url), store.clone()).with_user_agent(agent()));
    oauth.login().await.expect("the login succeeds");
    let stats = server.request("GET", "/test/stats");
    assert_eq!(stats["registrations"], 1);
    assert_eq!(stats["authorization_code_grants"], 1);
    assert_eq!(
        stats["last_scopes"],
        json!(["mcp:tools"]),
        "scope from the challenge"
    );
    let issuer = format!("http://{}", server.authority());
    assert_eq!(
        store.keys(),
        vec![format!("client:{issuer}"), "tokens:py".to_string()]
    );
    let first = oauth.stored_tokens().unwrap().expect("tokens stored");
    assert!(first.refresh_token.is_some());
    assert_eq!(first.resource, server.url);

    let mut config = HttpConfig::new(&server.url);
    config.authorizer = Some(oauth.clone());
    let client = Client::connect_http("py", &config, ClientOptions::default())
        .await
        .expect("connect with the token");
    async fn call(c: &Client) -> agenvoy_mcp::Result<agenvoy_mcp::ToolOutput> {
        c.call_tool("whoami", json!({})).await
    }
    assert_eq!(
        call(&client).await.unwrap().text,
        "hello from the protected server"
    );

    let expired = server.request("POST", "/test/expire");
    assert_eq!(expired["expired"], 1);
    let out = call(&client)
        .await
        .expect("the call goes through a refresh");
    assert_eq!(out.text, "hello from the protected server");
    let stats = server.request("GET", "/test/stats");
    assert_eq!(stats["refresh_grants"], 1, "{stats}");
    assert_eq!(stats["authorizations"], 1, "no second login: {stats}");
    let second = oauth.stored_tokens().unwrap().unwrap();
    assert_ne!(second.access_token, first.access_token);
    assert_ne!(second.refresh_token, first.refresh_token, "rotated");
    client.close().await;

    // A store holding the old, rotated refresh token: the refresh is refused, and without a
    // user agent the error says what to do.
    let stale = Arc::new(MemoryStore::new());
    let mut old = first.clone();
    old.expires_at = Some(1);
    for key in store.keys() {
        let value = if key == "tokens:py" {
            serde_json::to_string(&old).unwrap()
        } else {
            store.load(&key).unwrap().unwrap()
        };
        stale.save(&key, &value).unwrap();
    }
    let headless = Arc::new(OAuth::new(oauth_config(&server.url), stale.clone()));
    let mut config = HttpConfig::new(&server.url);
    config.authorizer = Some(headless.clone());
    let Err(err) = Client::connect_http("py", &config, ClientOptions::default()).await else {
        panic!("the stale refresh token is refused");
    };
    assert_eq!(
        err.to_string(),
        "mcp server \"py\", server/discover: oauth login required, run /mcp → py → login"
    );
    assert!(stale.load("tokens:py").unwrap().is_none(), "dropped");
    let stats = server.request("GET", "/test/stats");
    assert_eq!(stats["refused_refresh"], 1, "{stats}");
    let text = format!("{err:?} {headless:?}");
    assert!(
        !text.contains(first.access_token.expose()) && !text.contains(second.access_token.expose())
    );
}

#[tokio::test]
async fn the_host_needs_a_login_then_connects() {
    let Some(server) = PyServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcp.json");
    std::fs::write(
        &path,
        json!({"servers": {"py": {"url": server.url, "auth": "oauth", "oauth_client_name": "agenvoy test"}}}).to_string(),
    )
    .unwrap();
    let store: Arc<dyn TokenStore> = Arc::new(MemoryStore::new());
    let options = ManagerOptions::default()
        .with_token_store(store.clone())
        .with_allowlist_path(dir.path().join("allow_tool"));
    let config = Config::load(&path).unwrap();
    let manager = Manager::new(config.clone(), options).await;
    let status = &manager.status()[0];
    assert_eq!(status.state, ServerState::NeedsLogin);
    assert_eq!(
        status.last_error.as_deref(),
        Some("mcp server \"py\": oauth login required, run /mcp → py → login")
    );

    let agent = loopback();
    // The dynamically registered client takes 17988 when free, another port otherwise.
    agenvoy_mcp::host::login(&config, "py", store.clone(), &agent)
        .await
        .expect("login");
    manager.reconnect_server("py").await.expect("reconnect");
    manager.register_all();
    assert_eq!(manager.status()[0].state, ServerState::Connected);
    let out = manager
        .call("mcp__py__whoami", json!({}), PermissionMode::Auto)
        .await
        .unwrap();
    assert_eq!(out.text, "hello from the protected server");
    manager.close().await;
}

#[test]
fn no_keychain_warning_from_a_process_that_keeps_no_secret() {
    // The embedded default config: one stdio server, no OAuth. The token store is never
    // needed, so nothing may be said about where tokens would go (on a machine without a
    // keychain this warning used to come with every command).
    let dir = tempfile::tempdir().unwrap();
    let output = std::process::Command::new(common::binary())
        .arg("tools")
        .env("AGENVOY_CONFIG_DIR", dir.path())
        .env("HOME", dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(String::from_utf8_lossy(&output.stdout).contains("fixture  connected"));
    assert!(!stderr.contains("keychain"), "{stderr}");
    assert!(!dir.path().join("oauth-tokens.json").exists());
}
