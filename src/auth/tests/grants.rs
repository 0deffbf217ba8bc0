//! The machine grants and client authentication: workload identity, `private_key_jwt`.

use super::*;

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
        let mut config = OAuthConfig::new("s", format!("{}/mcp", server.base));
        config.grant = Grant::WorkloadIdentity {
            assertion: SecretSource::File(file.clone()),
        };
        config.client = Some(PreRegistered::new("workload-client"));
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
        let auth = err.auth_error().expect("an auth error");
        assert!(
            matches!(
                auth.kind(),
                AuthErrorKind::TokenEndpoint {
                    status: 400..=499,
                    ..
                }
            ),
            "{auth:?}"
        );
        assert_eq!(auth.oauth_error(), Some(code));
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
    let mut config = OAuthConfig::new("s", format!("{}/mcp", server.base));
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
    let mut config = OAuthConfig::new("s", format!("{}/mcp", server.base));
    config.grant = Grant::ClientCredentials;
    config.client =
        Some(PreRegistered::new("machine").with_private_key(SecretSource::File(file.clone())));
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
