//! Discovery: the issuer check, the URL rule (https, or http on loopback), PKCE S256.

use super::*;

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
    assert_eq!(kind_of(&err), Some(&AuthErrorKind::Discovery));
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
        let mut config = OAuthConfig::new("s", format!("{}/mcp", server.base));
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

/// Asking for `offline_access` (the server lists it) asks for consent too, as OpenID
/// Connect Core section 11 requires for a refresh token to be issued; otherwise no `prompt`.
#[tokio::test]
async fn offline_access_is_asked_for_with_prompt_consent() {
    let offline = OWN_METADATA.replace(
        r#""code_challenge_methods_supported""#,
        r#""scopes_supported": ["openid", "offline_access"], "code_challenge_methods_supported""#,
    );
    for (metadata, prompt) in [(offline.as_str(), Some("consent")), (OWN_METADATA, None)] {
        let metadata = metadata.to_string();
        let server = TestServer::start(move |r, base| own_as(r, base, Some(&metadata))).await;
        headless_login(&server.base, Arc::new(MemoryStore::new()))
            .await
            .unwrap();
        let authorize = &server.seen_at("/authorize")[0];
        assert_eq!(authorize.param("prompt").as_deref(), prompt);
        let scope = authorize.param("scope").unwrap_or_default();
        assert_eq!(
            scope.contains("offline_access"),
            prompt.is_some(),
            "{scope}"
        );
    }
}
