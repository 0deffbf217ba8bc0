//! OAuth end to end against a real, strict authorization server and MCP resource server,
//! written with the Python `mcp` SDK's auth building blocks (`fixtures/oauth/server.py`,
//! run from the venv `.ci/install` makes): dynamic registration, PKCE enforced, the
//! authorization redirect followed headlessly into the loopback listener, a tool call, the
//! access token expired by the server, and the next call going through a refresh (with
//! rotation). Then the host's view: `needs login` without tokens, connected with them.
//!
//! Skipped when the venv is missing (under `.ci/peers`, or `$AGENVOY_INTEROP_DIR`), unless
//! `AGENVOY_REQUIRE_INTEROP=1` (as `.ci/run` sets).
#![cfg(feature = "cli")]

mod common;

use agenvoy_mcp::HttpConfig;
use agenvoy_mcp::auth::{
    FileStore, LoopbackAgent, MemoryStore, OAuth, OAuthConfig, StoredTokens, TokenStore,
};
use agenvoy_mcp::host::Config;
use agenvoy_mcp::host::{Manager, ManagerOptions, PermissionMode, ServerState};
use agenvoy_mcp::{Client, ClientOptions};
use common::daemon::{Api, Daemon, Reply};
use common::py_oauth::{PyServer, headless_browser};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

fn loopback() -> LoopbackAgent {
    let mut agent = LoopbackAgent::new();
    agent.open_browser = false;
    agent.show_url = Arc::new(headless_browser);
    agent
}

fn agent() -> Arc<LoopbackAgent> {
    Arc::new(loopback())
}

fn oauth_config(url: &str) -> OAuthConfig {
    let mut config = OAuthConfig::new("py", url);
    // Port 0: the listener takes a free port, so tests never fight over 17988.
    config.redirect_uri = "http://localhost:0/callback".into();
    config
}

#[tokio::test]
async fn login_call_expire_refresh_against_the_python_sdk() {
    let Some(server) = PyServer::start() else {
        return;
    };
    let store = Arc::new(MemoryStore::new());
    let oauth =
        Arc::new(OAuth::new(oauth_config(&server.url), store.clone()).with_user_agent(agent()));
    oauth.login().await.expect("the login succeeds");
    let stats = server.request("GET", "/test/stats");
    assert_eq!(stats["registrations"], 1);
    assert_eq!(stats["authorization_code_grants"], 1);
    assert_eq!(
        stats["last_scopes"],
        json!(["mcp:tools"]),
        "scope from the challenge"
    );
    let issuer = format!("http://{}", server.authority());
    assert_eq!(
        store.keys(),
        vec![format!("client:{issuer}"), "tokens:py".to_string()]
    );
    let first = oauth.stored_tokens().unwrap().expect("tokens stored");
    assert!(first.refresh_token.is_some());
    assert_eq!(first.resource, server.url);

    let mut config = HttpConfig::new(&server.url);
    config.authorizer = Some(oauth.clone());
    let client = Client::connect_http("py", &config, ClientOptions::default())
        .await
        .expect("connect with the token");
    async fn call(c: &Client) -> agenvoy_mcp::Result<agenvoy_mcp::ToolOutput> {
        c.call_tool("whoami", json!({})).await
    }
    assert_eq!(
        call(&client).await.unwrap().text,
        "hello from the protected server"
    );

    let expired = server.request("POST", "/test/expire");
    assert_eq!(expired["expired"], 1);
    let out = call(&client)
        .await
        .expect("the call goes through a refresh");
    assert_eq!(out.text, "hello from the protected server");
    let stats = server.request("GET", "/test/stats");
    assert_eq!(stats["refresh_grants"], 1, "{stats}");
    assert_eq!(stats["authorizations"], 1, "no second login: {stats}");
    let second = oauth.stored_tokens().unwrap().unwrap();
    assert_ne!(second.access_token, first.access_token);
    assert_ne!(second.refresh_token, first.refresh_token, "rotated");
    client.close().await;

    // A store holding the old, rotated refresh token: the refresh is refused, and without a
    // user agent the error says what to do.
    let stale = Arc::new(MemoryStore::new());
    let mut old = first.clone();
    old.expires_at = Some(1);
    for key in store.keys() {
        let value = if key == "tokens:py" {
            serde_json::to_string(&old).unwrap()
        } else {
            store.load(&key).unwrap().unwrap()
        };
        stale.save(&key, &value).unwrap();
    }
    let headless = Arc::new(OAuth::new(oauth_config(&server.url), stale.clone()));
    let mut config = HttpConfig::new(&server.url);
    config.authorizer = Some(headless.clone());
    let Err(err) = Client::connect_http("py", &config, ClientOptions::default()).await else {
        panic!("the stale refresh token is refused");
    };
    assert_eq!(
        err.to_string(),
        "mcp server \"py\", server/discover: oauth login required"
    );
    assert!(stale.load("tokens:py").unwrap().is_none(), "dropped");
    let stats = server.request("GET", "/test/stats");
    assert_eq!(stats["refused_refresh"], 1, "{stats}");
    let text = format!("{err:?} {headless:?}");
    assert!(
        !text.contains(first.access_token.expose()) && !text.contains(second.access_token.expose())
    );
}

#[tokio::test]
async fn the_host_needs_a_login_then_connects() {
    let Some(server) = PyServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcp.json");
    std::fs::write(
        &path,
        json!({"servers": {"py": {"url": server.url, "auth": "oauth", "oauth_client_name": "agenvoy test"}}}).to_string(),
    )
    .unwrap();
    let store: Arc<dyn TokenStore> = Arc::new(MemoryStore::new());
    let options = ManagerOptions::default()
        .with_token_store(store.clone())
        .with_allowlist_path(dir.path().join("allow_tool"));
    let config = Config::load(&path).unwrap();
    let manager = Manager::new(config.clone(), options).await;
    let status = &manager.status()[0];
    assert_eq!(status.state, ServerState::NeedsLogin);
    assert_eq!(
        status.last_error.as_deref(),
        Some("mcp server \"py\": oauth login required")
    );

    let agent = loopback();
    // The dynamically registered client takes 17988 when free, another port otherwise.
    agenvoy_mcp::host::login(&config, "py", store.clone(), &agent)
        .await
        .expect("login");
    manager.reconnect_server("py").await.expect("reconnect");
    manager.register_all();
    assert_eq!(manager.status()[0].state, ServerState::Connected);
    let out = manager
        .call("mcp__py__whoami", json!({}), PermissionMode::Auto)
        .await
        .unwrap();
    assert_eq!(out.text, "hello from the protected server");
    manager.close().await;
}

#[test]
fn no_keychain_warning_from_a_process_that_keeps_no_secret() {
    // The embedded default config: one stdio server, no OAuth. The token store is never
    // needed, so nothing may be said about where tokens would go (on a machine without a
    // keychain this warning used to come with every command).
    let dir = tempfile::tempdir().unwrap();
    let output = std::process::Command::new(common::binary())
        .arg("tools")
        .env("AGENVOY_CONFIG_DIR", dir.path())
        .env("HOME", dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(String::from_utf8_lossy(&output.stdout).contains("fixture  connected"));
    assert!(!stderr.contains("keychain"), "{stderr}");
    assert!(!dir.path().join("oauth-tokens.json").exists());
}

/// A config folder whose `mcp.json` has server `py` at `url`, logged in with its tokens in
/// `oauth-tokens.json` there (where the daemon's `--token-file` and, with no keychain, the
/// commands keep them).
async fn logged_in_folder(url: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcp.json");
    let entry = json!({"servers": {"py": {"url": url, "auth": "oauth"}}});
    std::fs::write(&path, entry.to_string()).unwrap();
    let store = Arc::new(FileStore::new(dir.path().join("oauth-tokens.json")));
    let config = Config::load(&path).unwrap();
    agenvoy_mcp::host::login(&config, "py", store, &loopback())
        .await
        .expect("login");
    dir
}

/// Issue 44 §1: a login that brings no refresh token says how long it lasts (the CLI prints
/// this note, the API's login stream and the panel show it); one with a refresh token says
/// nothing more.
#[tokio::test]
async fn a_login_without_a_refresh_token_says_how_long_it_lasts() {
    let Some(server) = PyServer::start_with(&["--no-refresh-token", "--token-lifetime", "900"])
    else {
        return;
    };
    let dir = logged_in_folder(&server.url).await;
    assert_eq!(stored_in(dir.path()).refresh_token, None);
    let config = Config::load(&dir.path().join("mcp.json")).unwrap();
    let store = Arc::new(FileStore::new(dir.path().join("oauth-tokens.json")));
    let note = agenvoy_mcp::host::login_note(&config, "py", store).expect("a note");
    assert!(
        note == "no refresh token was issued, so this login lasts only until its access token expires in 14 minutes; then log in again"
            || note.contains("expires in 15 minutes"),
        "{note}"
    );

    let Some(server) = PyServer::start() else {
        return;
    };
    let dir = logged_in_folder(&server.url).await;
    let config = Config::load(&dir.path().join("mcp.json")).unwrap();
    let store = Arc::new(FileStore::new(dir.path().join("oauth-tokens.json")));
    assert_eq!(agenvoy_mcp::host::login_note(&config, "py", store), None);
}

/// The tokens of `py` in the folder's token file.
fn stored_in(dir: &Path) -> StoredTokens {
    FileStore::new(dir.join("oauth-tokens.json"))
        .load("tokens:py")
        .unwrap()
        .map(|t| serde_json::from_str(&t).unwrap())
        .expect("tokens:py is stored")
}

/// Sleeps until the stored access token has expired.
fn until_expired(dir: &Path) {
    let expires_at = stored_in(dir).expires_at.expect("an expiry");
    let now = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
    };
    while now() <= expires_at {
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// `agenvoy-mcp call --yes mcp__py__whoami` on the folder, with no keychain (so the file is
/// the store), started now.
fn cli_call(dir: &Path) -> std::process::Child {
    std::process::Command::new(common::binary())
        .args(["call", "--yes", "mcp__py__whoami"])
        .env("AGENVOY_CONFIG_DIR", dir)
        .env("HOME", dir)
        .env_remove("DBUS_SESSION_BUS_ADDRESS")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// A call's outcome: whether it printed the tool's answer, and what it printed.
fn answered(child: std::process::Child) -> (bool, String) {
    let out = child.wait_with_output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let ok = out.status.success() && text.contains("hello from the protected server");
    (ok, text)
}

fn daemon_call(api: &Api) -> Reply {
    api.post(
        "/v1/mcp/call",
        json!({"name": "mcp__py__whoami", "arguments": {}, "mode": "auto"}),
    )
}

/// Issue 38 §3: the daemon and three `call` processes, all after the access token expired,
/// with an authorization server that rotates refresh tokens and refuses reuse: exactly one
/// refresh reaches it, none is refused, every call answers and the daemon stays connected.
#[tokio::test]
async fn the_daemon_and_calls_on_one_folder_refresh_once_between_them() {
    let Some(server) = PyServer::start_with(&["--token-lifetime", "20"]) else {
        return;
    };
    let dir = logged_in_folder(&server.url).await;
    let daemon = Daemon::start_in(dir, &[]);
    assert_eq!(daemon.api.status_of("py")["state"], "connected");
    until_expired(daemon.dir.path());

    let api = daemon.api.clone();
    let from_daemon = std::thread::spawn(move || daemon_call(&api));
    let calls: Vec<_> = (0..3).map(|_| cli_call(daemon.dir.path())).collect();
    for call in calls {
        let (ok, text) = answered(call);
        assert!(ok, "{text}");
    }
    let reply = from_daemon.join().unwrap();
    assert_eq!(reply.status, 200, "{reply:?}");
    assert_eq!(reply.json()["text"], "hello from the protected server");

    let stats = server.request("GET", "/test/stats");
    assert_eq!(stats["refresh_grants"], 1, "one refresh: {stats}");
    assert_eq!(stats["refused_refresh"], 0, "{stats}");
    assert_eq!(stats["authorizations"], 1, "no second login: {stats}");
    let status = daemon.api.status_of("py");
    assert_eq!(status["state"], "connected", "{status}");
    assert_eq!(status["lastError"], Value::Null, "{status}");
    assert!(stored_in(daemon.dir.path()).refresh_token.is_some());
}

/// Issue 44 §2: a `call` refreshes (the server rotates), then the daemon, holding the old
/// refresh token in memory, needs a refresh too: it takes the one in the store instead of
/// presenting the used token, and nobody is logged out.
#[tokio::test]
async fn the_daemon_takes_a_refresh_another_process_made() {
    let Some(server) = PyServer::start() else {
        return;
    };
    let dir = logged_in_folder(&server.url).await;
    let daemon = Daemon::start_in(dir, &[]);
    assert_eq!(daemon.api.status_of("py")["state"], "connected");
    let before = stored_in(daemon.dir.path());

    server.request("POST", "/test/expire");
    let (ok, text) = answered(cli_call(daemon.dir.path()));
    assert!(ok, "{text}");
    let rotated = stored_in(daemon.dir.path());
    assert_ne!(rotated.refresh_token, before.refresh_token, "rotated");

    let reply = daemon_call(&daemon.api);
    assert_eq!(reply.status, 200, "{reply:?}");
    let stats = server.request("GET", "/test/stats");
    assert_eq!(stats["refresh_grants"], 1, "{stats}");
    assert_eq!(
        stats["refused_refresh"], 0,
        "the used token was not sent: {stats}"
    );
    assert_eq!(stored_in(daemon.dir.path()), rotated, "the store kept it");
    assert_eq!(daemon.api.status_of("py")["state"], "connected");
}

/// A login the authorization server revoked: the daemon's call fails asking for a login,
/// the status shows it (not `connected`), and the refused tokens leave the store.
#[tokio::test]
async fn a_lost_login_shows_in_the_status() {
    let Some(server) = PyServer::start() else {
        return;
    };
    let dir = logged_in_folder(&server.url).await;
    let daemon = Daemon::start_in(dir, &[]);
    assert_eq!(daemon.api.status_of("py")["state"], "connected");
    server.request("POST", "/test/revoke");
    // The API's answer says how its own clients log in (issue 44 §4).
    let reply = daemon_call(&daemon.api);
    assert_eq!(reply.status, 409, "{reply:?}");
    assert_eq!(reply.json()["error"]["type"], "login_required", "{reply:?}");
    assert_eq!(
        reply.error(),
        "mcp server \"py\", tools/call: oauth login required; log in with GET /v1/mcp/oauth?name=py"
    );
    let status = daemon.api.status_of("py");
    assert_eq!(status["state"], "needs login", "{status}");
    assert_eq!(
        status["lastError"], "mcp server \"py\", tools/call: oauth login required",
        "{status}"
    );
    // `call` on the same folder finds no tokens: its last line gives that reason and the
    // command to run, not "no MCP tool named ... is registered".
    let (ok, text) = answered(cli_call(daemon.dir.path()));
    assert!(!ok, "{text}");
    assert_eq!(
        text.lines().last().unwrap_or_default(),
        "call failed: mcp__py__whoami cannot be called: server \"py\" needs a login: mcp server \"py\": oauth login required; run `agenvoy-mcp login py`",
        "{text}"
    );
    let stats = server.request("GET", "/test/stats");
    assert_eq!(stats["refused_refresh"], 1, "{stats}");
    let file = std::fs::read_to_string(daemon.dir.path().join("oauth-tokens.json")).unwrap();
    assert!(!file.contains("tokens:py"), "{file}");
}

/// Issue 44 §4 and one refresh in flight per process: a 16 s token is sent as it is by the
/// calls made while it is fresh (no refresh before each), and once it expired, eight
/// concurrent calls make one refresh request between them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_token_is_refreshed_once_for_many_calls() {
    let Some(server) = PyServer::start_with(&["--token-lifetime", "16"]) else {
        return;
    };
    let store = Arc::new(MemoryStore::new());
    let oauth =
        Arc::new(OAuth::new(oauth_config(&server.url), store.clone()).with_user_agent(agent()));
    oauth.login().await.expect("the login succeeds");
    let mut config = HttpConfig::new(&server.url);
    config.authorizer = Some(oauth.clone());
    let client = Arc::new(
        Client::connect_http("py", &config, ClientOptions::default())
            .await
            .expect("connect with the token"),
    );
    for _ in 0..5 {
        let out = client.call_tool("whoami", json!({})).await.unwrap();
        assert_eq!(out.text, "hello from the protected server");
    }
    let stats = server.request("GET", "/test/stats");
    assert_eq!(stats["refresh_grants"], 0, "a fresh token is sent: {stats}");

    let expires_at = oauth.stored_tokens().unwrap().unwrap().expires_at.unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    tokio::time::sleep(Duration::from_secs(expires_at.saturating_sub(now) + 1)).await;
    let calls: Vec<_> = (0..8)
        .map(|_| {
            let client = client.clone();
            tokio::spawn(async move { client.call_tool("whoami", json!({})).await })
        })
        .collect();
    for call in calls {
        let out = call
            .await
            .unwrap()
            .expect("the call goes through the refresh");
        assert_eq!(out.text, "hello from the protected server");
    }
    let stats = server.request("GET", "/test/stats");
    assert_eq!(stats["refresh_grants"], 1, "one refresh: {stats}");
    assert_eq!(stats["refused_refresh"], 0, "{stats}");
    client.close().await;
}
