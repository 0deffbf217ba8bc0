//! The redirect back from the authorization server.

use super::*;

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
        .unwrap_err();
    let denied = AuthErrorKind::Callback {
        error: Some("access_denied".into()),
    };
    assert_eq!(kind_of(&err), Some(&denied));
    let err = err.to_string();
    assert!(
        err.contains("refused: access_denied (\\u{1b}]0;pwned\\u{7}\\u{1b}[2J)"),
        "{err}"
    );
    assert!(!err.chars().any(char::is_control), "{err:?}");
}
