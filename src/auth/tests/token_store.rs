//! The token store as a login meets it.

use super::dpop::dpop_server;
use super::*;

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
    let unavailable = AuthErrorKind::Store(StoreErrorKind::Unavailable);
    assert_eq!(kind_of(&err), Some(&unavailable));
    assert_eq!(
        err.store_error().map(StoreError::kind),
        Some(StoreErrorKind::Unavailable)
    );
    assert!(shown.contains("the tokens could not be kept: "), "{shown}");
    assert!(shown.contains("log in again"), "{shown}");
    let sent = oauth.authorization("POST", &url).await.unwrap();
    assert!(sent.authorization.is_some(), "held in memory");
}
