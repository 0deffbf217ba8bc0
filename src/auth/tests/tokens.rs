//! Tokens: what is sent without one, refresh before expiry and on a 401, a refresh
//! without an answer, a refused refresh; token and registration answers described without
//! their secrets.

use super::*;

#[tokio::test]
async fn without_a_token_the_error_says_a_login_is_needed() {
    let (oauth, _) = oauth_with(None);
    let err = header_of(&oauth).await.unwrap_err();
    assert!(err.needs_login());
    assert_eq!(kind_of(&err), Some(&AuthErrorKind::LoginRequired));
    // How to log in is each front end's to say (a command, a route, a key).
    assert_eq!(err.to_string(), "mcp server \"s\": oauth login required");
    let err = oauth.challenge(Refusal::new(401, None)).await.unwrap_err();
    assert!(err.needs_login());
    let err = oauth
        .challenge(Refusal::new(
            403,
            Some(r#"Bearer error="insufficient_scope", scope="x""#.into()),
        ))
        .await
        .unwrap_err();
    assert!(err.needs_login(), "{err}");
    assert!(err.to_string().contains("needs scope \"x\""), "{err}");
    assert_eq!(kind_of(&err), Some(&AuthErrorKind::LoginRequired));
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
    assert_eq!(
        stored.refresh_token.as_ref().map(Secret::expose),
        Some("RT1"),
        "rotated"
    );
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
    assert_eq!(kind_of(&err), Some(&AuthErrorKind::Network));
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
    let status_503 = AuthErrorKind::TokenEndpoint {
        status: 503,
        error: None,
    };
    assert_eq!(kind_of(&err), Some(&status_503));
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
    let status_404 = AuthErrorKind::TokenEndpoint {
        status: 404,
        error: None,
    };
    assert_eq!(kind_of(&err), Some(&status_404));
    // The crate's error keeps the auth error as its source.
    let source = std::error::Error::source(&err).and_then(|s| s.downcast_ref::<AuthError>());
    assert_eq!(source.map(AuthError::kind), Some(&status_404));
    assert!(store.load("tokens:s").unwrap().is_some(), "kept");
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

/// A 403 `insufficient_scope` with no way to log in here fails as a needed login naming the
/// scope, and is remembered in the stored tokens for the next login; scopes from several
/// refusals add up, and what is not an RFC 6749 scope token (or past the bound) is left out.
#[tokio::test]
async fn a_step_up_the_server_asks_for_is_remembered_for_the_next_login() {
    let (oauth, store) = oauth_with(Some(tokens("http://127.0.0.1:9/token", now_secs() + 3600)));
    let refuse = |scope: &str| {
        Refusal::new(
            403,
            Some(format!(
                r#"Bearer error="insufficient_scope", scope="{scope}""#
            )),
        )
    };
    let err = oauth.challenge(refuse("a mcp:admin")).await.unwrap_err();
    assert!(err.needs_login(), "{err}");
    assert_eq!(
        err.to_string(),
        "mcp server \"s\": oauth: the server needs scope \"a mcp:admin\", which the login did not grant (insufficient_scope); the next login asks for it"
    );
    let stored = stored_tokens(&store).unwrap();
    assert_eq!(stored.step_up_scope.as_deref(), Some("a mcp:admin"));
    assert_eq!(stored.access_token.expose(), "AT0", "the tokens are kept");
    let many: Vec<String> = (0..100).map(|i| format!("s{i}")).collect();
    let _ = oauth
        .challenge(refuse(&format!("mcp:write {}", many.join(" "))))
        .await;
    let _ = oauth.challenge(refuse("caf\u{e9}")).await;
    let step_up = stored_tokens(&store).unwrap().step_up_scope.unwrap();
    let kept: Vec<&str> = step_up.split(' ').collect();
    assert_eq!(kept[..3], ["a", "mcp:admin", "mcp:write"]);
    assert_eq!(kept.len(), MAX_STEP_UP_SCOPES, "{step_up}");
    assert!(!step_up.contains("caf"), "{step_up}");
    // The next login asks for the granted scopes and the remembered ones.
    let asked = oauth.step_up_scopes();
    assert_eq!(asked[..4], ["a", "b", "mcp:admin", "mcp:write"]);
    assert_eq!(asked.len(), MAX_STEP_UP_SCOPES);
}

/// A login made after a remembered step-up asks for the scopes granted before and those the
/// server asked for; the new tokens record no step-up.
#[tokio::test]
async fn a_login_after_a_step_up_asks_for_the_granted_and_the_asked_scopes() {
    let server = TestServer::start(|r, base| own_as(r, base, Some(OWN_METADATA))).await;
    let store = Arc::new(MemoryStore::new());
    let mut before = tokens(&format!("{}/token", server.base), now_secs() + 3600);
    before.server_url = format!("{}/mcp", server.base);
    before.step_up_scope = Some("mcp:admin".into());
    store
        .save("tokens:s", &serde_json::to_string(&before).unwrap())
        .unwrap();
    headless_login(&server.base, store.clone()).await.unwrap();
    let authorize = &server.seen_at("/authorize")[0];
    assert_eq!(authorize.param("scope").as_deref(), Some("a b mcp:admin"));
    let after = stored_tokens(&store).unwrap();
    assert_eq!(after.step_up_scope, None);
    assert_eq!(after.scope.as_deref(), Some("a b mcp:admin"));
}
