//! DPoP (RFC 9449): proofs per request, the nonces of both servers, retries only on a
//! new nonce.

use super::*;

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
pub(super) fn dpop_server(r: &Seen, base: &str) -> Reply {
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
    assert_eq!(
        credentials.authorization.as_ref().map(Secret::expose),
        Some("DPoP AT-DPOP")
    );
    let (header, claims) =
        jwt::verified_proof(credentials.dpop.as_ref().unwrap().expose()).unwrap();
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
    let mut config = OAuthConfig::new("s", format!("{}/mcp", server.base));
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
    let mut config = OAuthConfig::new("s", format!("{}/mcp", server.base));
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
        jwt::proof_nonce(sent.dpop.as_ref().unwrap().expose()).as_deref(),
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

/// An authorization server offering DPoP in front of a resource that takes Bearer only (its
/// challenge is `Bearer`, its metadata says nothing of DPoP), as oidc-provider's defaults and
/// the Python SDK's stock server are: a proof-less token request gets a Bearer token.
fn bearer_only_resource(r: &Seen, base: &str) -> Reply {
    match r.path() {
        "/token" if r.header("dpop").is_none() => Reply::json(
            200,
            json!({"access_token": "AT-BEARER", "token_type": "Bearer", "expires_in": 3600}),
        ),
        "/token" => Reply::json(
            200,
            json!({"access_token": "AT-DPOP", "token_type": "DPoP", "expires_in": 3600}),
        ),
        "/.well-known/oauth-protected-resource/mcp" => Reply::json(
            200,
            json!({"resource": format!("{base}/mcp"), "authorization_servers": [base]}),
        ),
        "/mcp" if r.header("authorization") == Some("Bearer AT-BEARER") => {
            if r.method == "POST" {
                mcp_answer(&r.body)
            } else {
                Reply::text(405, "no stream here")
            }
        }
        "/mcp" => Reply {
            status: 401,
            headers: vec![(
                "WWW-Authenticate",
                format!(
                    "Bearer resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\""
                ),
            )],
            body: String::new(),
        },
        _ => dpop_server(r, base),
    }
}

/// A resource that says nothing of DPoP gets Bearer tokens, though its authorization server
/// offers DPoP: a DPoP-bound token would be refused by it, and logging in again could not help.
#[tokio::test]
async fn a_bearer_only_resource_gets_bearer_tokens_though_the_server_offers_dpop() {
    let server = TestServer::start(bearer_only_resource).await;
    let url = format!("{}/mcp", server.base);
    let mut config = OAuthConfig::new("s", &url);
    config.grant = Grant::WorkloadIdentity {
        assertion: SecretSource::Value("workload.jwt.here".into()),
    };
    let oauth = Arc::new(OAuth::new(config, Arc::new(MemoryStore::new())));
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
    let token = server.seen_at("/token");
    assert_eq!(token.len(), 1);
    assert!(
        token[0].header("dpop").is_none(),
        "no proof: Bearer asked for"
    );
    assert!(
        server
            .seen_at("/mcp")
            .iter()
            .filter_map(|r| r.header("authorization"))
            .all(|a| a == "Bearer AT-BEARER")
    );
}
