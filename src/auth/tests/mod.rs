//! The OAuth client's tests: discovery, registration, logins, refresh, step-up, machine
//! grants and DPoP, against the in-process authorization server of `test_server.rs`.

use super::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use test_server::{Reply, Seen, TestServer};

mod callback;
mod discovery;
mod dpop;
mod grants;
mod registration;
mod shared;
mod token_store;
mod tokens;

/// The kind of the OAuth failure behind `err`, if it is one.
fn kind_of(err: &Error) -> Option<&AuthErrorKind> {
    err.auth_error().map(AuthError::kind)
}

/// A token endpoint that answers every POST with fresh tokens `AT<n>`, `RT<n>`.
async fn token_endpoint() -> TestServer {
    let n = AtomicUsize::new(0);
    TestServer::start(move |_, _| {
        let n = n.fetch_add(1, Ordering::Relaxed) + 1;
        fresh_tokens(n)
    })
    .await
}

fn fresh_tokens(n: usize) -> Reply {
    Reply::json(
        200,
        json!({"access_token": format!("AT{n}"), "token_type": "bearer",
            "expires_in": 3600, "refresh_token": format!("RT{n}")}),
    )
}

/// The `Authorization` value the transport would send with a POST to the server.
async fn header_of(oauth: &OAuth) -> Result<Option<String>> {
    oauth
        .authorization("POST", "http://127.0.0.1:9/mcp")
        .await
        .map(|c| c.authorization.map(|a| a.expose().to_string()))
}

fn oauth_with(tokens: Option<StoredTokens>) -> (OAuth, Arc<MemoryStore>) {
    let store = Arc::new(MemoryStore::new());
    if let Some(t) = tokens {
        store
            .save("tokens:s", &serde_json::to_string(&t).unwrap())
            .unwrap();
    }
    let oauth = OAuth::new(
        OAuthConfig::new("s", "http://127.0.0.1:9/mcp"),
        store.clone(),
    );
    (oauth, store)
}

fn tokens(endpoint: &str, expires_at: u64) -> StoredTokens {
    StoredTokens {
        server_url: "http://127.0.0.1:9/mcp".into(),
        access_token: "AT0".into(),
        refresh_token: Some("RT0".into()),
        expires_at: Some(expires_at),
        lifetime: None,
        scope: Some("a b".into()),
        issuer: "http://127.0.0.1:9".into(),
        token_endpoint: endpoint.into(),
        resource: "http://127.0.0.1:9/mcp".into(),
        step_up_scope: None,
    }
}

fn stored_tokens(store: &MemoryStore) -> Option<StoredTokens> {
    store
        .load("tokens:s")
        .unwrap()
        .map(|t| serde_json::from_str(&t).unwrap())
}

/// Authorization server metadata naming endpoints on the server itself (`BASE`).
const OWN_METADATA: &str = r#"{"issuer": "BASE", "authorization_endpoint": "BASE/authorize",
    "token_endpoint": "BASE/token", "registration_endpoint": "BASE/register",
    "code_challenge_methods_supported": ["S256"]}"#;

/// An MCP server at `/mcp` that is its own authorization server by the 2025-03-26 rules:
/// `metadata` (`BASE` replaced by its URL; `None`: none) at the RFC 8414 well-known path,
/// an authorization endpoint that redirects at once with code `C` and the request's state,
/// dynamic registration, and a token endpoint. Everything else is 404.
fn own_as(request: &Seen, base: &str, metadata: Option<&str>) -> Reply {
    match (request.path(), metadata) {
        ("/mcp", _) => Reply {
            status: 401,
            headers: vec![("WWW-Authenticate", "Bearer".into())],
            body: String::new(),
        },
        ("/.well-known/oauth-authorization-server", Some(m)) => Reply {
            status: 200,
            headers: vec![("Content-Type", "application/json".into())],
            body: m.replace("BASE", base),
        },
        ("/authorize", _) => Reply::redirect(&format!(
            "{}?code=C&state={}",
            request.param("redirect_uri").unwrap_or_default(),
            pkce::encode(&request.param("state").unwrap_or_default())
        )),
        ("/register", _) => Reply::json(
            201,
            json!({"client_id": "new-id", "client_secret": "NEW-SECRET",
                "token_endpoint_auth_method": "client_secret_basic"}),
        ),
        ("/token", _) => fresh_tokens(1),
        _ => Reply::text(404, "not found"),
    }
}

/// Logs in to the server at `base` headlessly (the authorization server redirects at
/// once), keeping what it registers and gets in `store`.
async fn headless_login(base: &str, store: Arc<MemoryStore>) -> Result<()> {
    let mut config = OAuthConfig::new("s", format!("{base}/mcp"));
    config.redirect_uri = "http://localhost:0/callback".into();
    let oauth = OAuth::new(config, store);
    let agent = oauth.headless_agent();
    oauth.login_with(Some(&agent)).await
}

/// A registration stored under `issuer`, as JSON (so that it reads the same to a client
/// that records fewer members).
fn save_client(store: &MemoryStore, issuer: &str, token_endpoint: &str, secret: &str) {
    let client = json!({"issuer": issuer, "client_id": "old-id", "client_secret": secret,
        "token_endpoint_auth_method": "client_secret_basic",
        "redirect_uris": ["http://localhost:0/callback"],
        "token_endpoint": token_endpoint,
        "registration_endpoint": format!("{issuer}/register")});
    store
        .save(&store::client_key(issuer), &client.to_string())
        .unwrap();
}

/// Whether `request` carries `secret` in HTTP Basic or in its body.
fn carries(request: &Seen, secret: &str) -> bool {
    let basic = request.header("authorization").unwrap_or("");
    let decoded = basic
        .strip_prefix("Basic ")
        .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    decoded.contains(secret) || request.body.contains(secret)
}

use base64::Engine;
