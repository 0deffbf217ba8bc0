//! The OAuth client's tests: discovery, registration, logins, refresh, step-up, machine
//! grants and DPoP, against the in-process authorization server of `test_server.rs`.

use super::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use test_server::{Reply, Seen, TestServer};

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
        .map(|c| c.authorization)
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
        scope: Some("a b".into()),
        issuer: "http://127.0.0.1:9".into(),
        token_endpoint: endpoint.into(),
        resource: "http://127.0.0.1:9/mcp".into(),
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
    let mut config = OAuthConfig::new("s", &format!("{base}/mcp"));
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

#[tokio::test]
async fn without_a_token_the_error_says_how_to_log_in() {
    let (oauth, _) = oauth_with(None);
    let err = header_of(&oauth).await.unwrap_err();
    assert!(err.needs_login());
    assert_eq!(
        err.to_string(),
        "mcp server \"s\": oauth login required, run /mcp → s → login"
    );
    let err = oauth.challenge(Refusal::new(401, None)).await.unwrap_err();
    assert!(err.needs_login());
    let err = oauth
        .challenge(Refusal::new(
            403,
            Some(r#"Bearer error="insufficient_scope", scope="x""#.into()),
        ))
        .await
        .unwrap_err();
    assert!(err.to_string().ends_with("run /mcp → s → login"), "{err}");
    assert!(
        !oauth
            .challenge(Refusal::new(403, Some("Bearer".into())))
            .await
            .unwrap()
    );
}

#[tokio::test]
async fn a_token_about_to_expire_is_refreshed_before_it_is_sent() {
    let server = token_endpoint().await;
    let endpoint = format!("{}/token", server.base);
    let (oauth, store) = oauth_with(Some(tokens(&endpoint, now_secs() + 10)));
    assert_eq!(
        header_of(&oauth).await.unwrap().as_deref(),
        Some("Bearer AT1")
    );
    let body = server.seen()[0].body.clone();
    assert!(
        body.starts_with(
            "grant_type=refresh_token&refresh_token=RT0&resource=http%3A%2F%2F127.0.0.1%3A9%2Fmcp"
        ),
        "{body}"
    );
    let stored = stored_tokens(&store).unwrap();
    assert_eq!(stored.refresh_token.as_deref(), Some("RT1"), "rotated");
    assert_eq!(stored.scope.as_deref(), Some("a b"), "kept");
    // Fresh now: sent as it is.
    assert_eq!(
        header_of(&oauth).await.unwrap().as_deref(),
        Some("Bearer AT1")
    );
    assert_eq!(server.seen().len(), 1);
}

#[tokio::test]
async fn a_401_refreshes_once_then_asks_for_a_login() {
    let server = token_endpoint().await;
    let endpoint = format!("{}/token", server.base);
    let (oauth, store) = oauth_with(Some(tokens(&endpoint, now_secs() + 3600)));
    assert_eq!(
        header_of(&oauth).await.unwrap().as_deref(),
        Some("Bearer AT0")
    );
    assert!(
        oauth.challenge(Refusal::new(401, None)).await.unwrap(),
        "refreshed"
    );
    assert_eq!(server.seen().len(), 1);
    // The new token is refused too: two retries in case another request raced it,
    // then no second refresh, and the tokens are gone.
    assert!(oauth.challenge(Refusal::new(401, None)).await.unwrap());
    assert!(oauth.challenge(Refusal::new(401, None)).await.unwrap());
    let err = oauth.challenge(Refusal::new(401, None)).await.unwrap_err();
    assert!(err.needs_login(), "{err}");
    assert_eq!(server.seen().len(), 1, "one refresh only");
    assert!(store.load("tokens:s").unwrap().is_none());
}

#[tokio::test]
async fn a_refresh_without_an_answer_keeps_the_tokens_until_the_server_is_back() {
    // A port nobody listens on: the authorization server is down.
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let endpoint = format!("http://{addr}/token");
    let (oauth, store) = oauth_with(Some(tokens(&endpoint, now_secs() + 10)));
    // About to expire, not expired: sent as it is while the refresh gets no answer.
    assert_eq!(
        header_of(&oauth).await.unwrap().as_deref(),
        Some("Bearer AT0")
    );
    let err = oauth.challenge(Refusal::new(401, None)).await.unwrap_err();
    assert!(
        matches!(err.kind, ErrorKind::Http { status: None, .. }),
        "a retryable error: {err:?}"
    );
    assert!(
        err.to_string().contains("the tokens are kept, try again"),
        "{err}"
    );
    assert_eq!(stored_tokens(&store).unwrap().access_token, "AT0", "kept");

    // Back, but failing (503), then working.
    let working = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let switch = working.clone();
    let server = TestServer::start_at(addr, move |_, _| {
        if switch.load(Ordering::Relaxed) {
            fresh_tokens(1)
        } else {
            Reply::text(503, "down for maintenance")
        }
    })
    .await;
    let err = oauth.challenge(Refusal::new(401, None)).await.unwrap_err();
    assert!(
        matches!(err.kind, ErrorKind::Http { status: None, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("HTTP 503 (text/plain)"), "{err}");
    assert_eq!(stored_tokens(&store).unwrap().access_token, "AT0", "kept");
    working.store(true, Ordering::Relaxed);
    assert!(
        oauth.challenge(Refusal::new(401, None)).await.unwrap(),
        "refreshed"
    );
    assert_eq!(
        header_of(&oauth).await.unwrap().as_deref(),
        Some("Bearer AT1")
    );
    assert_eq!(stored_tokens(&store).unwrap().access_token, "AT1");
    assert_eq!(server.seen_at("/token").len(), 2);
}

#[tokio::test]
async fn only_an_oauth_refusal_of_the_refresh_drops_the_tokens() {
    for (status, error) in [(400, "invalid_grant"), (401, "invalid_client")] {
        let server =
            TestServer::start(move |_, _| Reply::json(status, json!({"error": error}))).await;
        let endpoint = format!("{}/token", server.base);
        let (oauth, store) = oauth_with(Some(tokens(&endpoint, now_secs() + 3600)));
        header_of(&oauth).await.unwrap();
        let err = oauth.challenge(Refusal::new(401, None)).await.unwrap_err();
        assert!(err.needs_login(), "{err}");
        assert!(store.load("tokens:s").unwrap().is_none(), "dropped");
    }
    // Not an OAuth answer (a proxy's page): the tokens stay.
    let server = TestServer::start(|_, _| Reply::text(404, "<html>gone</html>")).await;
    let endpoint = format!("{}/token", server.base);
    let (oauth, store) = oauth_with(Some(tokens(&endpoint, now_secs() + 3600)));
    header_of(&oauth).await.unwrap();
    let err = oauth.challenge(Refusal::new(401, None)).await.unwrap_err();
    assert!(matches!(err.kind, ErrorKind::Auth(_)), "{err:?}");
    assert!(err.to_string().contains("HTTP 404 (text/plain)"), "{err}");
    assert!(store.load("tokens:s").unwrap().is_some(), "kept");
}

#[tokio::test]
async fn a_server_claiming_another_issuer_gets_no_client_and_leaves_none() {
    let hostile = r#"{"issuer": "https://trusted.example",
        "authorization_endpoint": "BASE/authorize", "token_endpoint": "BASE/token",
        "registration_endpoint": "BASE/register", "code_challenge_methods_supported": ["S256"]}"#;
    let server = TestServer::start(move |r, base| own_as(r, base, Some(hostile))).await;
    // Nothing stored yet: its registration must not land under the trusted issuer.
    let store = Arc::new(MemoryStore::new());
    let err = headless_login(&server.base, store.clone())
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains(
            "names issuer \"https://trusted.example\", which is not on the server's own origin"
        ),
        "{err}"
    );
    assert!(store.keys().is_empty(), "{:?}", store.keys());
    // The trusted server's registration stored: its secret goes nowhere.
    save_client(
        &store,
        "https://trusted.example",
        "https://trusted.example/token",
        "TRUSTED-SECRET",
    );
    let before = store.load("client:https://trusted.example").unwrap();
    assert!(headless_login(&server.base, store.clone()).await.is_err());
    assert!(server.seen().iter().all(|r| !carries(r, "TRUSTED-SECRET")));
    assert!(server.seen_at("/token").is_empty());
    assert!(server.seen_at("/register").is_empty());
    assert_eq!(
        store.load("client:https://trusted.example").unwrap(),
        before
    );
}

#[tokio::test]
async fn a_registration_is_used_only_with_the_endpoints_it_was_made_with() {
    let server = TestServer::start(|r, base| own_as(r, base, Some(OWN_METADATA))).await;
    let base = server.base.clone();
    let store = Arc::new(MemoryStore::new());
    // Registered with this issuer, but for a token endpoint it no longer names.
    save_client(&store, &base, &format!("{base}/old-token"), "OLD-SECRET");
    headless_login(&base, store.clone()).await.expect("login");
    assert_eq!(server.seen_at("/register").len(), 1, "registered again");
    let token = &server.seen_at("/token")[0];
    assert!(carries(token, "NEW-SECRET") && !carries(token, "OLD-SECRET"));
    let client: StoredClient =
        serde_json::from_str(&store.load(&store::client_key(&base)).unwrap().unwrap()).unwrap();
    assert_eq!(client.client_id, "new-id");
    assert_eq!(client.token_endpoint, format!("{base}/token"));
    assert_eq!(
        client.registration_endpoint,
        Some(format!("{base}/register"))
    );
    // A second login uses it as it is.
    headless_login(&base, store.clone()).await.expect("login");
    assert_eq!(server.seen_at("/register").len(), 1);
    assert!(carries(&server.seen_at("/token")[1], "NEW-SECRET"));

    // A refresh at an endpoint the stored client was not registered for: no secret.
    let (oauth, store) = oauth_with(Some(tokens(&format!("{base}/token"), now_secs() + 10)));
    save_client(
        &store,
        "http://127.0.0.1:9",
        "https://elsewhere.example/token",
        "OTHER-SECRET",
    );
    header_of(&oauth).await.unwrap();
    let refresh = server.seen_at("/token").pop().unwrap();
    assert_eq!(refresh.method, "POST");
    assert_eq!(
        refresh.param("grant_type").as_deref(),
        Some("refresh_token")
    );
    assert!(!carries(&refresh, "OTHER-SECRET") && refresh.header("authorization").is_none());
}

#[tokio::test]
async fn endpoints_must_be_https_or_loopback_and_never_reach_the_browser() {
    let cases = [
        (
            "authorization_endpoint",
            "file:///etc/passwd#",
            "is not an https URL",
        ),
        ("authorization_endpoint", "javascript:alert(1)", "is not"),
        (
            "authorization_endpoint",
            "http://192.0.2.1/authorize",
            "is plain http on a host that is not this machine",
        ),
        (
            "token_endpoint",
            "http://as.example.com/token",
            "is plain http",
        ),
        (
            "registration_endpoint",
            "ftp://as.example.com/register",
            "is not an https URL",
        ),
    ];
    for (member, value, expected) in cases {
        let mut metadata: Value = serde_json::from_str(OWN_METADATA).unwrap();
        metadata[member] = json!(value);
        let metadata = metadata.to_string();
        let server = TestServer::start(move |r, base| own_as(r, base, Some(&metadata))).await;
        let shown = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        let record = shown.clone();
        let mut agent = LoopbackAgent::new();
        agent.open_browser = false;
        agent.timeout = Duration::from_secs(2);
        agent.show_url = Arc::new(move |url| record.lock().unwrap().push(url.to_string()));
        let mut config = OAuthConfig::new("s", &format!("{}/mcp", server.base));
        config.redirect_uri = "http://localhost:0/callback".into();
        let oauth = OAuth::new(config, Arc::new(MemoryStore::new()));
        let err = oauth
            .login_with(Some(&agent))
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(&format!("the {member} of")) && err.contains(expected),
            "{member} {value}: {err}"
        );
        assert!(shown.lock().unwrap().is_empty(), "{value} was shown");
        assert!(server.seen_at("/register").is_empty() && server.seen_at("/token").is_empty());
    }
    // An issuer named by protected resource metadata, and the server itself.
    let prm = TestServer::start(|r, base| match r.path() {
        "/.well-known/oauth-protected-resource/mcp" => Reply::json(
            200,
            json!({
            "resource": format!("{base}/mcp"),
            "authorization_servers": ["http://as.example.com"]}),
        ),
        _ => own_as(r, base, None),
    })
    .await;
    let err = headless_login(&prm.base, Arc::new(MemoryStore::new()))
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("the authorization server \"http://as.example.com\" is plain http"),
        "{err}"
    );
    let oauth = OAuth::new(
        OAuthConfig::new("s", "http://mcp.example.com/mcp"),
        Arc::new(MemoryStore::new()),
    );
    let err = oauth.login_with(None).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("the server URL \"http://mcp.example.com/mcp\" is plain http"),
        "{err}"
    );
}

/// A configured client secret goes only to the authorization server it was first used
/// with: a server whose metadata then names another one (as a compromised server can)
/// gets a clear error, and that one never sees the secret. A logout forgets the issuer.
#[tokio::test]
async fn a_configured_secret_stays_with_the_issuer_it_was_first_used_with() {
    let (first, second) = (
        TestServer::start(|r, base| own_as(r, base, Some(OWN_METADATA))).await,
        TestServer::start(|r, base| own_as(r, base, Some(OWN_METADATA))).await,
    );
    let named = Arc::new(Mutex::new(first.base.clone()));
    let shown = named.clone();
    let mcp = TestServer::start(move |r, base| match r.path() {
        "/.well-known/oauth-protected-resource/mcp" => Reply::json(
            200,
            json!({"resource": format!("{base}/mcp"),
                "authorization_servers": [shown.lock().unwrap().clone()]}),
        ),
        _ => own_as(r, base, None),
    })
    .await;
    let store = Arc::new(MemoryStore::new());
    let oauth = || {
        let mut config = OAuthConfig::new("s", &format!("{}/mcp", mcp.base));
        config.grant = Grant::ClientCredentials;
        config.client = Some(PreRegistered {
            client_id: "cfg-id".into(),
            client_secret: Some("CFG-SECRET".into()),
            redirect_uri: None,
            private_key: None,
        });
        OAuth::new(config, store.clone())
    };
    let got_secret = |server: &TestServer| {
        let tokens = server.seen_at("/token");
        tokens.iter().any(|r| carries(r, "CFG-SECRET"))
    };
    let name = |server: &TestServer| *named.lock().unwrap() = server.base.clone();
    oauth().login_with(None).await.unwrap();
    assert!(got_secret(&first));
    name(&second);
    let err = oauth().login_with(None).await.unwrap_err().to_string();
    assert!(
        err.contains(&format!("names the authorization server {:?}", second.base))
            && err.contains(&format!("was used with {:?}", first.base))
            && err.contains("agenvoy-mcp logout s"),
        "{err}"
    );
    assert!(second.seen_at("/token").is_empty());
    // The same issuer again is fine; after a logout the new one is trusted on first use.
    name(&first);
    oauth().login_with(None).await.unwrap();
    name(&second);
    oauth().logout().await.unwrap();
    oauth().login_with(None).await.unwrap();
    assert!(got_secret(&second));
}

/// The 2025-11-25 authorization specification, "Authorization Code Protection": without
/// `code_challenge_methods_supported` (or without S256 in it) a client MUST refuse to
/// proceed. No scenario of the conformance suites installed here (0.1.16, 0.2.0-alpha.12)
/// serves metadata without it; a later suite's "PKCE no S256" scenario accepts an absent
/// list, which the specification does not, so the specification wins. Without any
/// metadata (2025-03-26 default endpoints, the suite's
/// `auth/2025-03-26-oauth-endpoint-fallback`) there is nothing to ask and PKCE is
/// required of every 2025-03-26 server: the login goes on, with S256.
#[tokio::test]
async fn a_login_without_pkce_s256_is_refused() {
    for (methods, says) in [(None, "is missing"), (Some(json!(["plain"])), "lacks S256")] {
        let mut metadata: Value = serde_json::from_str(OWN_METADATA).unwrap();
        let object = metadata.as_object_mut().unwrap();
        object.remove("code_challenge_methods_supported");
        if let Some(m) = methods {
            object.insert("code_challenge_methods_supported".into(), m);
        }
        let metadata = metadata.to_string();
        let server = TestServer::start(move |r, base| own_as(r, base, Some(&metadata))).await;
        let err = headless_login(&server.base, Arc::new(MemoryStore::new()))
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("does not offer PKCE with S256") && err.contains(says),
            "{err}"
        );
        assert!(server.seen_at("/authorize").is_empty() && server.seen_at("/register").is_empty());
    }
    let defaults = TestServer::start(|r, base| own_as(r, base, None)).await;
    headless_login(&defaults.base, Arc::new(MemoryStore::new()))
        .await
        .expect("the 2025-03-26 default endpoints");
    let authorize = &defaults.seen_at("/authorize")[0];
    assert_eq!(
        authorize.param("code_challenge_method").as_deref(),
        Some("S256")
    );
}

#[tokio::test]
async fn errors_describe_answers_without_quoting_secrets() {
    let cases = [
        (
            "/token",
            200,
            "application/json",
            r#"{"refresh_token": "RT-SECRET", "token_type": "bearer"}"#,
            "HTTP 200 (application/json), a JSON object without the string member \"access_token\"",
            "RT-SECRET",
        ),
        (
            "/token",
            400,
            "text/plain",
            "AT-SECRET",
            "HTTP 400 (text/plain)",
            "AT-SECRET",
        ),
        (
            "/register",
            201,
            "application/json",
            r#"{"client_secret": "CS-SECRET"}"#,
            "HTTP 201 (application/json), a JSON object without the string member \"client_id\"",
            "CS-SECRET",
        ),
    ];
    for (path, status, content_type, body, says, secret) in cases {
        let server = TestServer::start(move |r, base| {
            if r.path() == path {
                Reply {
                    status,
                    headers: vec![("Content-Type", content_type.into())],
                    body: body.into(),
                }
            } else {
                own_as(r, base, Some(OWN_METADATA))
            }
        })
        .await;
        let err = headless_login(&server.base, Arc::new(MemoryStore::new()))
            .await
            .unwrap_err();
        let text = format!("{err} {err:?}");
        assert!(text.contains(says), "{text}");
        assert!(!text.contains(secret), "{text}");
    }
}

#[tokio::test]
async fn a_refused_authorization_is_reported_escaped() {
    let server = TestServer::start(|r, base| match r.path() {
        "/authorize" => Reply::redirect(&format!(
            "{}?error=access_denied&error_description=%1B%5D0%3Bpwned%07%1B%5B2J&state={}",
            r.param("redirect_uri").unwrap_or_default(),
            pkce::encode(&r.param("state").unwrap_or_default())
        )),
        _ => own_as(r, base, Some(OWN_METADATA)),
    })
    .await;
    let err = headless_login(&server.base, Arc::new(MemoryStore::new()))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("refused: access_denied (\\u{1b}]0;pwned\\u{7}\\u{1b}[2J)"),
        "{err}"
    );
    assert!(!err.chars().any(char::is_control), "{err:?}");
}

/// A JSON-RPC answer to an MCP request body (initialize, tools/list), or 202 for a
/// notification.
fn mcp_answer(body: &str) -> Reply {
    let request: Value = serde_json::from_str(body).unwrap_or_default();
    let Some(id) = request.get("id").cloned() else {
        return Reply {
            status: 202,
            headers: Vec::new(),
            body: String::new(),
        };
    };
    let result = match request["method"].as_str() {
        Some("initialize") => {
            json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
            "serverInfo": {"name": "dpop-test", "version": "1"}})
        }
        _ => json!({"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}),
    };
    Reply::json(200, json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

/// Why a DPoP request is not acceptable (RFC 9449 section 4.3), or `None`: the proof
/// verifies with its own key, names this method and URL (no query), carries `ath` for
/// `token` and the `nonce` the server wants.
fn proof_problem(r: &Seen, htu: &str, token: Option<&str>, nonce: &str) -> Option<&'static str> {
    let Some((header, claims)) = r.header("dpop").and_then(jwt::verified_proof) else {
        return Some("no verifiable proof");
    };
    if header["typ"] != "dpop+jwt" || header["alg"] != "ES256" || header["jwk"].get("d").is_some() {
        return Some("bad header");
    }
    if claims["htm"] != r.method.as_str() || claims["htu"] != htu || !claims["jti"].is_string() {
        return Some("not this request");
    }
    if claims["ath"] != json!(token.map(|t| pkce::sha256_b64(t.as_bytes()))) && token.is_some() {
        return Some("wrong ath");
    }
    (claims["nonce"] != nonce).then_some("use_dpop_nonce")
}

/// The MCP server and its authorization server in one: DPoP with ES256 offered, the
/// workload identity grant, and a nonce demanded by both (`as-n1`, `rs-n1`).
fn dpop_server(r: &Seen, base: &str) -> Reply {
    let nonce_wanted = |nonce: &str, status: u16, error: Reply| -> Reply {
        let mut reply = error;
        reply.status = status;
        reply.headers.push(("DPoP-Nonce", nonce.into()));
        reply
    };
    match r.path() {
        "/.well-known/oauth-authorization-server" => Reply::json(
            200,
            json!({"issuer": base, "token_endpoint": format!("{base}/token"),
                "grant_types_supported": [JWT_BEARER],
                "dpop_signing_alg_values_supported": ["RS256", "ES256"]}),
        ),
        "/token" => match proof_problem(r, &format!("{base}/token"), None, "as-n1") {
            Some("use_dpop_nonce") => nonce_wanted(
                "as-n1",
                400,
                Reply::json(400, json!({"error": "use_dpop_nonce"})),
            ),
            Some(problem) => Reply::json(
                400,
                json!({"error": "invalid_dpop_proof", "error_description": problem}),
            ),
            None => Reply::json(
                200,
                json!({"access_token": "AT-DPOP", "token_type": "DPoP", "expires_in": 3600}),
            ),
        },
        "/mcp" if r.header("authorization").is_none() => Reply {
            status: 401,
            headers: vec![("WWW-Authenticate", "DPoP algs=\"ES256\"".into())],
            body: String::new(),
        },
        "/mcp" => {
            let problem = if r.header("authorization") != Some("DPoP AT-DPOP") {
                Some("not the DPoP scheme")
            } else {
                proof_problem(r, &format!("{base}/mcp"), Some("AT-DPOP"), "rs-n1")
            };
            match problem {
                Some("use_dpop_nonce") => nonce_wanted(
                    "rs-n1",
                    401,
                    Reply {
                        status: 401,
                        headers: vec![("WWW-Authenticate", "DPoP error=\"use_dpop_nonce\"".into())],
                        body: String::new(),
                    },
                ),
                Some(problem) => Reply::text(400, problem),
                None if r.method == "POST" => mcp_answer(&r.body),
                None => Reply::text(405, "no stream here"),
            }
        }
        _ => Reply::text(404, "not found"),
    }
}

/// RFC 9449 end to end over the real transport: the token request carries a proof and
/// follows the authorization server's nonce; every MCP request carries the DPoP scheme
/// and a fresh proof for its method and URL with `ath`, following the MCP server's nonce;
/// the key is the token's (the same thumbprint) and lives in the store beside it.
#[tokio::test]
async fn dpop_bound_tokens_carry_a_fresh_proof_per_request_and_follow_nonces() {
    let server = TestServer::start(dpop_server).await;
    let url = format!("{}/mcp", server.base);
    let store = Arc::new(MemoryStore::new());
    let mut config = OAuthConfig::new("s", &url);
    config.grant = Grant::WorkloadIdentity {
        assertion: SecretSource::Value("workload.jwt.here".into()),
    };
    let oauth = Arc::new(OAuth::new(config, store.clone()));
    let mut http = crate::transport::http::HttpConfig::new(&url);
    http.authorizer = Some(oauth.clone());
    let options = crate::ClientOptions {
        era: crate::protocol::era::EraPreference::Handshake,
        ..Default::default()
    };
    let client = crate::Client::connect_http("s", &http, options)
        .await
        .unwrap();
    assert_eq!(client.list_tools().await.unwrap().len(), 1);
    client.close().await;

    let thumbprint = |r: &Seen| {
        let (header, _) = jwt::verified_proof(r.header("dpop").unwrap()).unwrap();
        pkce::sha256_b64(serde_json::to_string(&header["jwk"]).unwrap().as_bytes())
    };
    let token = server.seen_at("/token");
    assert_eq!(token.len(), 2, "one retry, with the nonce");
    assert_eq!(token[0].param("grant_type").as_deref(), Some(JWT_BEARER));
    let nonce_of = |r: &Seen| jwt::proof_nonce(r.header("dpop").unwrap());
    assert_eq!(nonce_of(&token[0]), None);
    assert_eq!(nonce_of(&token[1]).as_deref(), Some("as-n1"));
    let key = thumbprint(&token[0]);
    assert_eq!(thumbprint(&token[1]), key);
    let mcp: Vec<Seen> = server
        .seen_at("/mcp")
        .into_iter()
        .filter(|r| r.header("authorization").is_some())
        .collect();
    assert!(
        mcp.len() >= 4,
        "initialize twice, initialized, tools/list: {mcp:?}"
    );
    assert!(
        mcp.iter()
            .all(|r| r.header("authorization") == Some("DPoP AT-DPOP"))
    );
    assert!(mcp.iter().all(|r| thumbprint(r) == key), "the token's key");
    let nonces: Vec<Option<String>> = mcp.iter().map(nonce_of).collect();
    assert_eq!(nonces[0], None);
    assert!(
        nonces[1..].iter().all(|n| n.as_deref() == Some("rs-n1")),
        "{nonces:?}"
    );
    let mut jtis: Vec<String> = mcp
        .iter()
        .chain(&token)
        .map(|r| jwt::verified_proof(r.header("dpop").unwrap()).unwrap().1["jti"].to_string())
        .collect();
    jtis.sort();
    jtis.dedup();
    assert_eq!(
        jtis.len(),
        mcp.len() + token.len(),
        "a fresh proof for every request"
    );
    // Every request the server refused was for a nonce, once.
    let refused = server.seen_at("/mcp").len() - mcp.len();
    assert_eq!(refused, 1, "the first, unauthenticated initialize");

    // The key is kept with the tokens: another process uses it with them.
    let stored: Value = serde_json::from_str(&store.load("dpop:s").unwrap().unwrap()).unwrap();
    assert_eq!(stored["server_url"], url.as_str());
    let again = OAuth::new(OAuthConfig::new("s", &url), store.clone());
    let credentials = again
        .authorization("GET", &format!("{url}?a=1"))
        .await
        .unwrap();
    assert_eq!(credentials.authorization.as_deref(), Some("DPoP AT-DPOP"));
    let (header, claims) = jwt::verified_proof(credentials.dpop.as_deref().unwrap()).unwrap();
    assert_eq!(
        pkce::sha256_b64(serde_json::to_string(&header["jwk"]).unwrap().as_bytes()),
        key
    );
    assert_eq!(claims["htm"], "GET");
    assert_eq!(claims["htu"], url.as_str());
    // Nothing secret in what Debug shows.
    let shown = format!("{credentials:?} {again:?} {:?}", again.config());
    assert!(!shown.contains("AT-DPOP") && !shown.contains(stored["pkcs8"].as_str().unwrap()));
    // Logging out forgets the key too.
    again.logout().await.unwrap();
    assert!(store.keys().is_empty(), "{:?}", store.keys());
}

/// A login whose tokens the store refuses fails saying so (a login is for the next
/// process too), and the tokens still serve this one.
#[tokio::test]
async fn a_login_the_store_refuses_fails_saying_so() {
    let server = TestServer::start(dpop_server).await;
    let dir = tempfile::tempdir().unwrap();
    let not_a_dir = dir.path().join("file");
    std::fs::write(&not_a_dir, "").unwrap();
    let store = Arc::new(store::FileStore::new(not_a_dir.join("tokens.json")));
    let url = format!("{}/mcp", server.base);
    let mut config = OAuthConfig::new("s", &url);
    config.grant = Grant::WorkloadIdentity {
        assertion: SecretSource::Value("workload.jwt.here".into()),
    };
    let oauth = OAuth::new(config, store);
    let err = oauth.login_with(None).await.unwrap_err();
    let shown = err.to_string();
    assert!(err.is_auth(), "{shown}");
    assert!(shown.contains("the tokens could not be kept: "), "{shown}");
    assert!(shown.contains("log in again"), "{shown}");
    let sent = oauth.authorization("POST", &url).await.unwrap();
    assert!(sent.authorization.is_some(), "held in memory");
}

/// One retry per new nonce: a server that names the nonce the proof already carried (or
/// none) gets the request no more, at the MCP server and at the token endpoint alike.
#[tokio::test]
async fn a_nonce_that_is_not_new_is_not_retried() {
    // The token endpoint always wants a nonce, always the same one.
    let server = TestServer::start(|r, base| match r.path() {
        "/token" => Reply {
            status: 400,
            headers: vec![
                ("Content-Type", "application/json".into()),
                ("DPoP-Nonce", "stuck".into()),
            ],
            body: json!({"error": "use_dpop_nonce"}).to_string(),
        },
        _ => dpop_server(r, base),
    })
    .await;
    let mut config = OAuthConfig::new("s", &format!("{}/mcp", server.base));
    config.grant = Grant::WorkloadIdentity {
        assertion: SecretSource::Value("workload.jwt.here".into()),
    };
    let oauth = OAuth::new(config, Arc::new(MemoryStore::new()));
    let err = oauth.login_with(None).await.unwrap_err().to_string();
    assert!(err.contains("use_dpop_nonce"), "{err}");
    assert_eq!(
        server.seen_at("/token").len(),
        2,
        "the first, and one with the nonce"
    );

    // At the MCP server: bound tokens, and the nonce the refused proof carried.
    let server = TestServer::start(dpop_server).await;
    let store = Arc::new(MemoryStore::new());
    let mut config = OAuthConfig::new("s", &format!("{}/mcp", server.base));
    config.grant = Grant::WorkloadIdentity {
        assertion: SecretSource::Value("workload.jwt.here".into()),
    };
    let oauth = OAuth::new(config, store);
    oauth.login_with(None).await.unwrap();
    let url = format!("{}/mcp", server.base);
    let www = Some(r#"DPoP error="use_dpop_nonce""#.to_string());
    let mut refusal = Refusal::new(401, www.clone());
    refusal.sent = oauth.authorization("POST", &url).await.unwrap();
    refusal.dpop_nonce = Some("n1".into());
    assert!(
        oauth.challenge(refusal).await.unwrap(),
        "a new nonce: once more"
    );
    let sent = oauth.authorization("POST", &url).await.unwrap();
    assert_eq!(
        jwt::proof_nonce(sent.dpop.as_deref().unwrap()).as_deref(),
        Some("n1")
    );
    for nonce in [Some("n1"), None] {
        let mut refusal = Refusal::new(401, www.clone());
        refusal.sent = sent.clone();
        refusal.dpop_nonce = nonce.map(str::to_string);
        let err = oauth.challenge(refusal).await.unwrap_err().to_string();
        assert!(err.contains("keeps asking for a DPoP nonce"), "{err}");
    }
}

/// The workload identity grant's refusals (the conformance suite's
/// `auth/wif-jwt-bearer`): each is the login's error, saying what it means, after exactly
/// one JWT bearer request; no authorization code, no registration, no second try. The
/// assertion is read from its file at each grant and never shown.
#[tokio::test]
async fn workload_identity_refusals_are_reported_once_without_another_grant() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("token");
    std::fs::write(&file, "eyJ.WORKLOAD-SECRET.sig\n").unwrap();
    for (code, says) in [
        (
            "invalid_grant",
            "refused the workload's token from the file",
        ),
        (
            "invalid_scope",
            "does not grant scope \"mcp:read\" to this workload",
        ),
        ("unauthorized_client", "may not use the JWT bearer grant"),
    ] {
        let metadata = json!({"issuer": "BASE", "token_endpoint": "BASE/token",
            "authorization_endpoint": "BASE/authorize", "registration_endpoint": "BASE/register",
            "code_challenge_methods_supported": ["S256"], "grant_types_supported": [JWT_BEARER]})
        .to_string();
        let server = TestServer::start(move |r, base| match r.path() {
            "/mcp" => Reply {
                status: 401,
                headers: vec![("WWW-Authenticate", r#"Bearer scope="mcp:read""#.into())],
                body: String::new(),
            },
            "/token" => Reply::json(
                400,
                json!({"error": code, "error_description": "refused by the test"}),
            ),
            _ => own_as(r, base, Some(&metadata)),
        })
        .await;
        let mut config = OAuthConfig::new("s", &format!("{}/mcp", server.base));
        config.grant = Grant::WorkloadIdentity {
            assertion: SecretSource::File(file.clone()),
        };
        config.client = Some(PreRegistered {
            client_id: "workload-client".into(),
            ..Default::default()
        });
        let store = Arc::new(MemoryStore::new());
        let oauth = OAuth::new(config, store.clone());
        let agent = oauth.headless_agent();
        let oauth = oauth.with_user_agent(Arc::new(agent));
        // At the server's 401, as the transport asks.
        let err = oauth
            .challenge(Refusal::new(401, Some(r#"Bearer scope="mcp:read""#.into())))
            .await
            .unwrap_err();
        let text = format!("{err} {err:?}");
        assert!(matches!(err.kind, ErrorKind::Auth(_)), "{err:?}");
        assert!(!err.needs_login(), "a login would not help: {err}");
        assert!(
            text.contains(says) && text.contains(&format!("OAuth error \"{code}\"")),
            "{text}"
        );
        assert!(
            text.contains("refused by the test") && text.contains("not retried"),
            "{text}"
        );
        assert!(!text.contains("WORKLOAD-SECRET"), "{text}");
        let token = server.seen_at("/token");
        assert_eq!(token.len(), 1, "{code}: no retry");
        assert_eq!(token[0].param("grant_type").as_deref(), Some(JWT_BEARER));
        assert_eq!(
            token[0].param("assertion").as_deref(),
            Some("eyJ.WORKLOAD-SECRET.sig")
        );
        assert_eq!(token[0].param("scope").as_deref(), Some("mcp:read"));
        assert_eq!(
            token[0].param("client_id").as_deref(),
            Some("workload-client")
        );
        assert!(server.seen_at("/authorize").is_empty() && server.seen_at("/register").is_empty());
        assert!(store.keys().is_empty());
    }
    // Accepted, with a rotated token read afresh; no client configured: no client_id.
    std::fs::write(&file, "eyJ.ROTATED.sig").unwrap();
    let server = TestServer::start(|r, base| own_as(r, base, Some(OWN_METADATA))).await;
    let mut config = OAuthConfig::new("s", &format!("{}/mcp", server.base));
    config.grant = Grant::WorkloadIdentity {
        assertion: SecretSource::File(file.clone()),
    };
    let oauth = OAuth::new(config, Arc::new(MemoryStore::new()));
    assert!(oauth.is_machine_grant());
    assert_eq!(
        header_of(&oauth).await.unwrap(),
        None,
        "no token yet, none needed"
    );
    assert!(oauth.challenge(Refusal::new(401, None)).await.unwrap());
    assert_eq!(
        header_of(&oauth).await.unwrap().as_deref(),
        Some("Bearer AT1")
    );
    let token = &server.seen_at("/token")[0];
    assert_eq!(token.param("assertion").as_deref(), Some("eyJ.ROTATED.sig"));
    assert_eq!(token.param("client_id"), None);
    // A missing file is said as such.
    std::fs::remove_file(&file).unwrap();
    let err = oauth.login_with(None).await.unwrap_err().to_string();
    assert!(
        err.contains("cannot be read") && err.contains("token"),
        "{err}"
    );
}

/// `private_key_jwt`: a pre-registered client with a key file (PKCS#8 PEM) and no secret
/// signs an assertion for the issuer, verified here with ring; a fresh one per request.
#[tokio::test]
async fn private_key_jwt_assertions_are_signed_for_the_issuer() {
    let key = Es256Key::generate().unwrap();
    let pem = format!(
        "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
        base64::engine::general_purpose::STANDARD.encode(key.pkcs8())
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("key.pem");
    std::fs::write(&file, &pem).unwrap();
    let server = TestServer::start(|r, base| own_as(r, base, Some(OWN_METADATA))).await;
    let mut config = OAuthConfig::new("s", &format!("{}/mcp", server.base));
    config.grant = Grant::ClientCredentials;
    config.client = Some(PreRegistered {
        client_id: "machine".into(),
        private_key: Some(SecretSource::File(file.clone())),
        ..Default::default()
    });
    let oauth = OAuth::new(config, Arc::new(MemoryStore::new()));
    oauth.login_with(None).await.unwrap();
    oauth.login_with(None).await.unwrap();
    let token = server.seen_at("/token");
    let public = jwt::point(&key.public_jwk());
    let mut jtis = Vec::new();
    for request in &token {
        assert_eq!(
            request.param("grant_type").as_deref(),
            Some("client_credentials")
        );
        assert_eq!(
            request.param("client_assertion_type").as_deref(),
            Some("urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
        );
        assert!(
            request.header("authorization").is_none() && request.param("client_secret").is_none()
        );
        let (_, claims, ok) = jwt::verify(&request.param("client_assertion").unwrap(), &public);
        assert!(ok, "signed with the configured key");
        assert_eq!(
            (claims["iss"].as_str(), claims["sub"].as_str()),
            (Some("machine"), Some("machine"))
        );
        assert_eq!(claims["aud"], server.base.as_str());
        jtis.push(claims["jti"].to_string());
    }
    assert_eq!(token.len(), 2);
    assert_ne!(jtis[0], jtis[1]);
    // A key file that is no key: said without quoting it, and nothing sent.
    std::fs::write(
        &file,
        "-----BEGIN PRIVATE KEY-----\nTk9UQUtFWQ==\n-----END PRIVATE KEY-----\n",
    )
    .unwrap();
    let err = oauth.login_with(None).await.unwrap_err().to_string();
    assert!(
        err.contains("the client's private key (the file") && err.contains("is not a P-256 key"),
        "{err}"
    );
    assert!(!err.contains("Tk9UQUtFWQ"), "{err}");
    assert_eq!(server.seen_at("/token").len(), 2);
}
