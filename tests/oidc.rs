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
use agenvoy_mcp::auth::{LoopbackAgent, MemoryStore, OAuth, OAuthConfig, TokenStore};
use agenvoy_mcp::{Client, ClientOptions};
use common::oidc::{Oidc, browser};
use serde_json::json;
use std::sync::Arc;

fn oauth(server: &Oidc, store: Arc<MemoryStore>) -> Arc<OAuth> {
    let mut config = OAuthConfig::new("rs", &server.url);
    // Port 0: the listener takes a free port, so tests never fight over 17988.
    config.redirect_uri = "http://localhost:0/callback".into();
    let mut agent = LoopbackAgent::new();
    agent.open_browser = false;
    // The browser ends within its own bound; a login that went wrong fails soon after.
    agent.timeout = std::time::Duration::from_secs(90);
    agent.show_url = Arc::new(browser);
    Arc::new(OAuth::new(config, store).with_user_agent(Arc::new(agent)))
}

async fn whoami(server: &Oidc, oauth: &Arc<OAuth>) -> agenvoy_mcp::Result<String> {
    let mut config = HttpConfig::new(&server.url);
    config.authorizer = Some(oauth.clone());
    let client = Client::connect_http("rs", &config, ClientOptions::default()).await?;
    let out = client.call_tool("whoami", json!({})).await;
    client.close().await;
    Ok(out?.text)
}

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
        "hello from the oidc-protected server"
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
        "hello from the oidc-protected server"
    );
    let stats = server.stats();
    let checked = stats["dpop_proofs_checked"].as_u64().unwrap();
    assert!(
        checked >= stats["accepted"].as_u64().unwrap() && checked > 0,
        "{stats}"
    );
}
