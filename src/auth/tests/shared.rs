//! Tokens shared by processes: the refresh margin, the compare-and-delete, one refresh
//! between two clients on one token file, a refused refresh token that another process
//! already replaced.

use super::*;

#[test]
fn the_margin_is_a_minute_or_half_a_short_lifetime() {
    assert_eq!(refresh_margin(None), 60, "unknown lifetime");
    assert_eq!(refresh_margin(Some(3600)), 60);
    assert_eq!(refresh_margin(Some(120)), 60);
    assert_eq!(refresh_margin(Some(30)), 15);
    assert_eq!(refresh_margin(Some(10)), 5);
    assert_eq!(refresh_margin(Some(1)), 0);
    let mut t = tokens("http://127.0.0.1:9/token", 1_000 + 10);
    t.lifetime = Some(10);
    assert!(
        !needs_refresh(&t, 1_000),
        "a 10 s token just issued is sent"
    );
    assert!(needs_refresh(&t, 1_005), "refreshed at half its life");
    t.refresh_token = None;
    assert!(!needs_refresh(&t, 1_009), "nothing to refresh with");
}

#[test]
fn only_the_tokens_still_stored_are_deleted() {
    let store = MemoryStore::new();
    let refused = tokens("http://127.0.0.1:9/token", 1);
    let mut newer = refused.clone();
    newer.access_token = "AT-newer".into();
    newer.refresh_token = Some("RT-newer".into());
    let save = |t: &StoredTokens| {
        store
            .save("tokens:s", &serde_json::to_string(t).unwrap())
            .unwrap()
    };
    save(&newer);
    assert!(!store::delete_tokens_if(&store, "tokens:s", &refused).unwrap());
    assert_eq!(stored_tokens(&store), Some(newer), "another process's kept");
    save(&refused);
    assert!(store::delete_tokens_if(&store, "tokens:s", &refused).unwrap());
    assert_eq!(stored_tokens(&store), None);
    assert!(!store::delete_tokens_if(&store, "tokens:s", &refused).unwrap());
}

/// Two clients on one token file (as two processes: each opens the lock file itself), both
/// holding a token about to expire, ask at once: one refresh request, and both send its
/// token.
#[tokio::test]
async fn two_clients_on_one_token_file_refresh_once() {
    let server = token_endpoint().await;
    let endpoint = format!("{}/token", server.base);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("oauth-tokens.json");
    let first = Arc::new(store::FileStore::new(&file));
    first
        .save(
            "tokens:s",
            &serde_json::to_string(&tokens(&endpoint, now_secs() + 10)).unwrap(),
        )
        .unwrap();
    let client = |store: Arc<store::FileStore>| {
        OAuth::new(OAuthConfig::new("s", "http://127.0.0.1:9/mcp"), store)
    };
    let (a, b) = (
        client(first),
        client(Arc::new(store::FileStore::new(&file))),
    );
    let (sent_a, sent_b) = tokio::join!(header_of(&a), header_of(&b));
    assert_eq!(sent_a.unwrap().as_deref(), Some("Bearer AT1"));
    assert_eq!(sent_b.unwrap().as_deref(), Some("Bearer AT1"));
    assert_eq!(server.seen().len(), 1, "one refresh");
    assert!(dir.path().join("oauth-refresh-s.lock").is_file());
}

/// The refresh token is refused because another process rotated it just before (without
/// the lock): its newer tokens are taken and stay stored, no logout.
#[tokio::test]
async fn a_refresh_token_refused_after_another_process_rotated_it_is_no_logout() {
    let store = Arc::new(MemoryStore::new());
    let other_process = store.clone();
    let endpoint = Arc::new(Mutex::new(String::new()));
    let newer_endpoint = endpoint.clone();
    let server = TestServer::start(move |_, _| {
        let endpoint = newer_endpoint.lock().unwrap().clone();
        let mut newer = tokens(&endpoint, now_secs() + 3600);
        newer.access_token = "AT-newer".into();
        newer.refresh_token = Some("RT-newer".into());
        let text = serde_json::to_string(&newer).unwrap();
        other_process.save("tokens:s", &text).unwrap();
        Reply::json(400, json!({"error": "invalid_grant"}))
    })
    .await;
    *endpoint.lock().unwrap() = format!("{}/token", server.base);
    let held = tokens(&endpoint.lock().unwrap(), now_secs() + 3600);
    store
        .save("tokens:s", &serde_json::to_string(&held).unwrap())
        .unwrap();
    let oauth = OAuth::new(
        OAuthConfig::new("s", "http://127.0.0.1:9/mcp"),
        store.clone(),
    );
    header_of(&oauth).await.unwrap();
    assert!(
        oauth.challenge(Refusal::new(401, None)).await.unwrap(),
        "retried with the newer token"
    );
    assert_eq!(
        header_of(&oauth).await.unwrap().as_deref(),
        Some("Bearer AT-newer")
    );
    let stored = stored_tokens(&store).expect("still logged in");
    assert_eq!(stored.access_token, "AT-newer");
    assert_eq!(server.seen().len(), 1);
}
