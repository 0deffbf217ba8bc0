//! The client: a registration used only with its endpoints, a configured secret kept
//! with the issuer it was first used with.

use super::*;

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
        let mut config = OAuthConfig::new("s", format!("{}/mcp", mcp.base));
        config.grant = Grant::ClientCredentials;
        config.client = Some(PreRegistered::new("cfg-id").with_client_secret("CFG-SECRET".into()));
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
