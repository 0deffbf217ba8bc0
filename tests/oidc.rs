//! OAuth against a certified authorization server: oidc-provider 9 (npm) with its shipped
//! defaults (DPoP offered, refresh tokens only with `offline_access` granted on consent),
//! issuing JWT access tokens for the resource (RFC 8707), and an MCP resource server on the
//! Python SDK checking each token against the provider's JWKS (signature, `iss`, `aud`),
//! Bearer-only or DPoP-requiring. Headless Chromium completes the provider's login and
//! consent pages (`tests/common/oidc.rs`).
//!
//! Skipped when a peer is missing, unless `AGENVOY_REQUIRE_INTEROP=1`.
#![cfg(feature = "cli")]

mod common;

use agenvoy_mcp::HttpConfig;
use agenvoy_mcp::auth::{FileStore, LoopbackAgent, MemoryStore, OAuth, OAuthConfig, TokenStore};
use agenvoy_mcp::{Client, ClientOptions};
use common::oidc::{Oidc, browser};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// The OAuth of server `rs` on `store` with a user agent: headless Chromium logs in.
fn oauth(server: &Oidc, store: Arc<dyn TokenStore>) -> Arc<OAuth> {
    let mut config = OAuthConfig::new("rs", &server.url);
    // Port 0: the listener takes a free port, so tests never fight over 17988.
    config.redirect_uri = "http://localhost:0/callback".into();
    let mut agent = LoopbackAgent::new();
    agent.open_browser = false;
    // The browser ends within its own bound; a login that went wrong fails soon after.
    agent.timeout = Duration::from_secs(90);
    agent.show_url = Arc::new(browser);
    Arc::new(OAuth::new(config, store).with_user_agent(Arc::new(agent)))
}

/// The OAuth of server `rs` on `store` with no user agent, as the daemon, the panel and
/// `call` have: it uses stored tokens and refreshes them, and never logs in.
fn headless(server: &Oidc, store: Arc<dyn TokenStore>) -> Arc<OAuth> {
    Arc::new(OAuth::new(OAuthConfig::new("rs", &server.url), store))
}

async fn whoami(server: &Oidc, oauth: &Arc<OAuth>) -> agenvoy_mcp::Result<String> {
    call(server, oauth, "whoami").await
}

/// Connects to the resource server with `oauth`, calls `tool` and closes.
async fn call(server: &Oidc, oauth: &Arc<OAuth>, tool: &str) -> agenvoy_mcp::Result<String> {
    let mut config = HttpConfig::new(&server.url);
    config.authorizer = Some(oauth.clone());
    let client = Client::connect_http("rs", &config, ClientOptions::default()).await?;
    let out = client.call_tool(tool, json!({})).await;
    client.close().await;
    Ok(out?.text)
}

const HELLO: &str = "hello from the oidc-protected server";

#[tokio::test]
async fn provider_defaults_give_a_refresh_token_and_a_bearer_token_the_server_takes() {
    let Some(server) = Oidc::start("bearer", &[]) else {
        return;
    };
    let store = Arc::new(MemoryStore::new());
    let oauth = oauth(&server, store.clone());
    oauth.login().await.expect("the login succeeds");
    let tokens = oauth.stored_tokens().unwrap().expect("tokens stored");
    assert!(
        tokens.refresh_token.is_some(),
        "offline_access asked with prompt=consent brings a refresh token"
    );
    assert_eq!(tokens.issuer, server.issuer);
    assert!(
        store.load("dpop:rs").unwrap().is_none(),
        "the resource takes Bearer only: no DPoP binding"
    );
    assert_eq!(
        whoami(&server, &oauth).await.expect("the call succeeds"),
        HELLO
    );
    let stats = server.stats();
    assert!(stats["accepted"].as_u64().unwrap() > 0, "{stats}");
    assert_eq!(stats["refused"], json!({}), "{stats}");
}

#[tokio::test]
async fn a_resource_requiring_dpop_gets_bound_tokens_and_checked_proofs() {
    let Some(server) = Oidc::start("dpop", &[]) else {
        return;
    };
    let store = Arc::new(MemoryStore::new());
    let oauth = oauth(&server, store.clone());
    oauth.login().await.expect("the login succeeds");
    assert!(store.load("dpop:rs").unwrap().is_some(), "DPoP-bound");
    assert_eq!(
        whoami(&server, &oauth).await.expect("the call succeeds"),
        HELLO
    );
    let stats = server.stats();
    let checked = stats["dpop_proofs_checked"].as_u64().unwrap();
    assert!(
        checked >= stats["accepted"].as_u64().unwrap() && checked > 0,
        "{stats}"
    );
}

/// Issue 44 §4: with 8 s access tokens, calls made over two lifetimes refresh about once a
/// half-life, not before every request (the margin is the smaller of 60 s and half the
/// lifetime); every call works and no token request is refused.
#[tokio::test]
async fn short_lived_tokens_are_refreshed_at_half_their_life_not_before_each_request() {
    let Some(server) = Oidc::start("bearer", &["--access-ttl", "8"]) else {
        return;
    };
    let store: Arc<dyn TokenStore> = Arc::new(MemoryStore::new());
    let oauth = oauth(&server, store.clone());
    oauth.login().await.expect("the login succeeds");
    let mut config = HttpConfig::new(&server.url);
    config.authorizer = Some(oauth.clone());
    let client = Client::connect_http("rs", &config, ClientOptions::default())
        .await
        .expect("connected");
    let started = std::time::Instant::now();
    let mut calls = 0;
    while started.elapsed() < Duration::from_secs(16) {
        let out = client.call_tool("whoami", json!({})).await.expect("a call");
        assert_eq!(out.text, HELLO);
        calls += 1;
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    client.close().await;
    let stats = server.provider_stats();
    let refreshes = stats["grants"]["refresh_token"].as_u64().unwrap_or(0);
    assert!(calls >= 16, "{calls} calls");
    assert!(
        (1..=6).contains(&refreshes),
        "{refreshes} refreshes for {calls} calls over 16 s of 8 s tokens: {stats}"
    );
    assert_eq!(stats["refused"], json!({}), "{stats}");
}

/// Issue 44 §2 and §5: two processes on one token store (two OAuth instances, each its own
/// file store on the same file, as the daemon and `call` are), the provider rotating refresh
/// tokens and issuing them always: the first refreshes; the second, still holding the old
/// refresh token, takes the first's tokens instead of presenting it. oidc-provider would
/// treat that as a replay and revoke the grant, logging both out; here one refresh is made,
/// none refused, and both go on working.
#[tokio::test]
async fn a_rotated_refresh_token_is_taken_by_the_other_process_not_replayed() {
    let Some(server) = Oidc::start("bearer", &["--access-ttl", "6", "--always-refresh"]) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("oauth-tokens.json");
    let store_of = || -> Arc<dyn TokenStore> { Arc::new(FileStore::new(&file)) };
    let first = oauth(&server, store_of());
    first.login().await.expect("the login succeeds");
    let second = headless(&server, store_of());
    assert_eq!(
        whoami(&server, &second).await.expect("second, fresh"),
        HELLO
    );
    let before = first.stored_tokens().unwrap().unwrap();
    // Past half the token's life: the next request of either refreshes.
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(
        whoami(&server, &first).await.expect("first refreshes"),
        HELLO
    );
    let rotated = first.stored_tokens().unwrap().unwrap();
    assert_ne!(rotated.refresh_token, before.refresh_token, "rotated");
    assert_eq!(
        whoami(&server, &second).await.expect("second takes it"),
        HELLO
    );
    assert_eq!(whoami(&server, &first).await.expect("first again"), HELLO);
    let stats = server.provider_stats();
    assert_eq!(stats["grants"]["refresh_token"], 1, "{stats}");
    assert_eq!(stats["refused"], json!({}), "no replay: {stats}");
    assert_eq!(second.stored_tokens().unwrap().unwrap(), rotated);
}

/// Issue 44 §3: a tool that needs `mcp:admin` answers 403 `insufficient_scope`; with no user
/// agent (the daemon, the panel, `call`) the call fails as a needed login naming the scope,
/// which is remembered, and the next login (another instance, as another front end's) asks
/// for it with the granted scopes: the provider grants it and the tool works.
#[tokio::test]
async fn a_step_up_is_reached_by_the_next_login() {
    let Some(server) = Oidc::start("bearer", &[]) else {
        return;
    };
    let store: Arc<dyn TokenStore> = Arc::new(MemoryStore::new());
    oauth(&server, store.clone())
        .login()
        .await
        .expect("the first login succeeds");
    let daemon = headless(&server, store.clone());
    assert_eq!(whoami(&server, &daemon).await.expect("whoami"), HELLO);
    let err = call(&server, &daemon, "admin").await.unwrap_err();
    assert!(err.needs_login(), "{err}");
    assert!(err.to_string().contains("mcp:admin"), "{err}");
    let remembered = daemon.stored_tokens().unwrap().unwrap();
    assert_eq!(
        remembered.step_up_scope.as_deref(),
        Some("mcp:read mcp:admin")
    );
    oauth(&server, store.clone())
        .login()
        .await
        .expect("the step-up login succeeds");
    let after = headless(&server, store.clone());
    assert_eq!(
        call(&server, &after, "admin").await.expect("admin"),
        "admin granted"
    );
    let granted = after.stored_tokens().unwrap().unwrap();
    assert_eq!(granted.step_up_scope, None);
    let scope = granted.scope.unwrap_or_default();
    assert!(
        scope.contains("mcp:admin") && scope.contains("mcp:read"),
        "{scope}"
    );
}

/// Issue 44 §3 and §4 through the daemon and `call`, on a config folder logged in to the
/// provider: the admin tool's 403 `insufficient_scope` is a 409 `login_required` naming the
/// scope and the API's login route, the server's status shows `needs login`, and `call` on the
/// same folder ends with the scope and the command that logs in.
#[tokio::test]
async fn a_step_up_through_the_daemon_and_call_says_how_to_log_in_there() {
    let Some(server) = Oidc::start("bearer", &[]) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let entry = json!({"servers": {"rs": {"url": server.url, "auth": "oauth"}}});
    std::fs::write(dir.path().join("mcp.json"), entry.to_string()).unwrap();
    let store: Arc<dyn TokenStore> = Arc::new(FileStore::new(dir.path().join("oauth-tokens.json")));
    oauth(&server, store)
        .login()
        .await
        .expect("the login succeeds");
    let daemon = common::daemon::Daemon::start_in(dir, &[]);
    assert_eq!(daemon.api.status_of("rs")["state"], "connected");
    let reply = daemon.api.post(
        "/v1/mcp/call",
        json!({"name": "mcp__rs__admin", "arguments": {}, "mode": "auto"}),
    );
    assert_eq!(reply.status, 409, "{reply:?}");
    assert_eq!(reply.json()["error"]["type"], "login_required");
    let message = reply.error();
    assert!(
        message.contains("the server needs scope \"mcp:read mcp:admin\"")
            && message.ends_with("; log in with GET /v1/mcp/oauth?name=rs"),
        "{message}"
    );
    assert_eq!(daemon.api.status_of("rs")["state"], "needs login");

    let out = std::process::Command::new(common::binary())
        .args(["call", "--yes", "mcp__rs__admin"])
        .env("AGENVOY_CONFIG_DIR", daemon.dir.path())
        .env("HOME", daemon.dir.path())
        .env_remove("DBUS_SESSION_BUS_ADDRESS")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let last = stderr.lines().last().unwrap_or_default();
    assert!(
        last.contains("needs scope \"mcp:read mcp:admin\"")
            && last.ends_with("; run `agenvoy-mcp login rs`"),
        "{stderr}"
    );
}

/// Issue 44 §2 with the real processes: the daemon and `call` on one config folder, the
/// provider rotating refresh tokens with 6 s access tokens. `call` refreshes first; the
/// daemon, holding the old refresh token, takes the new tokens instead of replaying it (which
/// would revoke the grant and log both out). One refresh in all, none refused, the daemon
/// still connected.
#[tokio::test]
async fn the_daemon_and_call_share_one_rotating_login() {
    let Some(server) = Oidc::start("bearer", &["--access-ttl", "6"]) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let entry = json!({"servers": {"rs": {"url": server.url, "auth": "oauth"}}});
    std::fs::write(dir.path().join("mcp.json"), entry.to_string()).unwrap();
    let store: Arc<dyn TokenStore> = Arc::new(FileStore::new(dir.path().join("oauth-tokens.json")));
    oauth(&server, store)
        .login()
        .await
        .expect("the login succeeds");
    let daemon = common::daemon::Daemon::start_in(dir, &[]);
    let daemon_call = || {
        daemon.api.post(
            "/v1/mcp/call",
            json!({"name": "mcp__rs__whoami", "arguments": {}, "mode": "auto"}),
        )
    };
    assert_eq!(daemon_call().json()["text"], HELLO);
    // Past half the token's life: the next request of either process refreshes.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let out = std::process::Command::new(common::binary())
        .args(["call", "--yes", "mcp__rs__whoami"])
        .env("AGENVOY_CONFIG_DIR", daemon.dir.path())
        .env("HOME", daemon.dir.path())
        .env_remove("DBUS_SESSION_BUS_ADDRESS")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains(HELLO),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reply = daemon_call();
    assert_eq!(reply.status, 200, "{reply:?}");
    assert_eq!(reply.json()["text"], HELLO);
    let stats = server.provider_stats();
    assert_eq!(stats["grants"]["refresh_token"], 1, "{stats}");
    assert_eq!(stats["refused"], json!({}), "no replay: {stats}");
    assert_eq!(daemon.api.status_of("rs")["state"], "connected");
}
