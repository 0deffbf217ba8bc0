//! The caching hints of the 2026-07-28 revision (`ttlMs`, `cacheScope`) on a tool list,
//! against the fixture over HTTP (`FIXTURE_LIST_CACHE` sets the hints, `FIXTURE_METHOD_LOG`
//! counts the `tools/list` it answered): a list is reused while fresh, a `"private"` one only
//! under the access token it was read with, a `"public"` one across tokens, and a negative
//! TTL is no TTL.
#![cfg(feature = "cli")]

mod common;

use agenvoy_mcp::{
    Authorizer, BoxFuture, Client, ClientOptions, Credentials, HttpConfig, ListKeeping, Refusal,
    Secret,
};
use common::{Listening, fixture_binary};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// An embedder's authorizer whose token the test changes, as a refresh or a new login would.
struct Token(Arc<Mutex<String>>);

impl Authorizer for Token {
    fn authorization<'a>(
        &'a self,
        _method: &'a str,
        _url: &'a str,
    ) -> BoxFuture<'a, agenvoy_mcp::Result<Credentials>> {
        let token = self.0.lock().unwrap().clone();
        Box::pin(async move {
            Ok(Credentials::default().with_authorization(Secret::new(format!("Bearer {token}"))))
        })
    }

    fn challenge(&self, _refusal: Refusal) -> BoxFuture<'_, agenvoy_mcp::Result<bool>> {
        Box::pin(async { Ok(false) })
    }
}

/// A client of the fixture whose tools/list carries `hints`, with the token it sends and
/// how many tools/list the fixture answered so far.
async fn fixture_with(
    hints: &str,
    dir: &std::path::Path,
) -> (
    Listening,
    Client,
    Arc<Mutex<String>>,
    impl Fn() -> usize + use<>,
) {
    let log = dir.join("methods");
    let mut command = std::process::Command::new(fixture_binary());
    command
        .args(["--http", "127.0.0.1:0", "--mode", "modern"])
        .env("FIXTURE_METHOD_LOG", &log)
        .env("FIXTURE_LIST_CACHE", hints);
    let server = Listening::start(command);
    let token = Arc::new(Mutex::new("alice".to_string()));
    let mut config = HttpConfig::new(&server.url);
    config.authorizer = Some(Arc::new(Token(token.clone())));
    let client = Client::connect_http("fixture", &config, ClientOptions::default())
        .await
        .unwrap();
    let lists = move || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .filter(|m| *m == "tools/list")
            .count()
    };
    (server, client, token, lists)
}

#[tokio::test]
async fn a_private_list_is_reused_only_under_its_token_a_public_one_across_tokens() {
    for (scope, read_again) in [("private", true), ("public", false)] {
        let dir = tempfile::tempdir().unwrap();
        let (_server, client, token, lists) =
            fixture_with(&format!("60000 {scope}"), dir.path()).await;
        let first = client.list_tools().await.unwrap();
        let read = lists();
        assert_eq!(client.list_tools().await.unwrap(), first);
        assert_eq!(lists(), read, "{scope}: fresh for 60 s under one token");

        // Another access token (a refresh, another login): another authorization context.
        *token.lock().unwrap() = "bob".into();
        client.ping().await.unwrap();
        assert_eq!(client.list_tools().await.unwrap(), first);
        let expected = if read_again { read + 1 } else { read };
        assert_eq!(lists(), expected, "{scope}: read again under another token");
        client.close().await;
    }
}

#[tokio::test]
async fn a_stale_list_is_read_again_and_a_negative_ttl_is_none() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, client, _token, lists) = fixture_with("300 public", dir.path()).await;
    client.list_tools().await.unwrap();
    let read = lists();
    client.list_tools().await.unwrap();
    assert_eq!(lists(), read, "fresh");
    tokio::time::sleep(Duration::from_millis(400)).await;
    client.list_tools().await.unwrap();
    assert_eq!(lists(), read + 1, "stale after its 300 ms");
    client.close().await;

    let dir = tempfile::tempdir().unwrap();
    let (_server, client, _token, lists) = fixture_with("-5000 public", dir.path()).await;
    client.list_tools().await.unwrap();
    client.list_tools().await.unwrap();
    assert_eq!(lists(), 2, "a negative ttlMs is 0: read each time");
    client.close().await;
}

/// What an on-demand server's kept catalog may keep of a list (issue 41): a private list
/// read under an access token is not kept beyond the session; a public one is, for its ttl.
#[tokio::test]
async fn a_list_private_to_a_login_is_not_kept_beyond_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, client, _token, _lists) = fixture_with("60000 private", dir.path()).await;
    assert_eq!(
        client.tool_list_keeping(),
        ListKeeping::Unbounded,
        "nothing read yet"
    );
    client.list_tools().await.unwrap();
    assert_eq!(client.tool_list_keeping(), ListKeeping::PrivateToLogin);
    client.close().await;
    let (_server, client, _token, _lists) = fixture_with("60000 public", dir.path()).await;
    client.list_tools().await.unwrap();
    assert_eq!(
        client.tool_list_keeping(),
        ListKeeping::For(Duration::from_secs(60))
    );
    client.close().await;
}
