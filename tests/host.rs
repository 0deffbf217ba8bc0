//! The host runtime (config, Manager, registry, gate, live refresh, reconnect) and the `tools`
//! and `call` commands, against the bundled fixture server and real servers.
#![cfg(feature = "cli")]

mod common;

use agenvoy_mcp::ClientOptions;
use agenvoy_mcp::Handlers;
use agenvoy_mcp::Root;
use agenvoy_mcp::host::{
    AddError, CallError, Config, Manager, ManagerOptions, PermissionMode, ServerConfig,
    ServerState, ServerStatus,
};
use agenvoy_mcp::host::{ConfirmCallback, ConfirmRequest, Decision};
use common::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn config(servers: Value) -> Config {
    Config::parse(&json!({ "servers": servers }).to_string()).expect("a valid config")
}

/// Options with the allowlist in `dir` and a short timeout.
fn options(dir: &Path) -> ManagerOptions {
    ManagerOptions::default()
        .with_client(ClientOptions::default().with_timeout(Duration::from_secs(10)))
        .with_allowlist_path(dir.join("allow_tool"))
}

async fn start(servers: Value, options: ManagerOptions) -> Manager {
    agenvoy_mcp::unstable::become_subreaper();
    Manager::new(config(servers), options).await
}

fn status_of(manager: &Manager, name: &str) -> ServerStatus {
    manager
        .status()
        .into_iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no server {name}"))
}

fn pid_of(manager: &Manager, name: &str) -> u32 {
    server_pid(&manager.client(name).expect("connected"))
}

/// The servers' tools registered (not the host's own resource tools).
fn registered_names(manager: &Manager) -> Vec<String> {
    manager
        .registry()
        .definitions()
        .into_iter()
        .map(|d| d.name)
        .collect()
}

/// Waits until `check` holds, or panics after `limit`.
async fn eventually(limit: Duration, what: &str, check: impl Fn() -> bool) {
    let deadline = Instant::now() + limit;
    while !check() {
        assert!(Instant::now() < deadline, "not within {limit:?}: {what}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

async fn auto_call(manager: &Manager, name: &str, args: Value) -> String {
    let out = manager
        .call(name, args, PermissionMode::Auto)
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(!out.is_error, "{name}: {}", out.text);
    out.text
}

#[tokio::test]
async fn startup_takes_as_long_as_the_slowest_server_not_the_sum() {
    let dir = tempfile::tempdir().unwrap();
    let slow = fixture_entry(&["--mode", "slow-start=2"]);
    let started = Instant::now();
    let manager = start(
        json!({"s1": slow, "s2": slow, "s3": slow, "s4": slow}),
        options(dir.path()),
    )
    .await;
    let took = started.elapsed();
    // One after another they would take 8 s; at once, 2 s and the time to start them (a wide
    // margin for a busy machine, well short of the sum).
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(6),
        "four servers that each take 2 s to start took {took:?}"
    );
    for s in manager.status() {
        assert_eq!(s.state, ServerState::Connected, "{s:?}");
        assert_eq!(s.tool_count, 9);
    }
    // Their 36 tools, and the host's two that list and read their resources.
    assert_eq!(manager.tool_definitions().len(), 38);
    assert_eq!(registered_names(&manager).len(), 36);
    manager.close().await;
}

fn isolation_servers() -> Value {
    json!({
        "ok": fixture_entry(&[]),
        "crash": fixture_entry(&["--mode", "crash-at-start"]),
        "hang": fixture_entry(&["--mode", "no-init-response"]),
        "invalid": {"command": binary(), "url": "https://example.com/mcp"},
    })
}

#[tokio::test]
async fn a_crashing_a_hanging_and_an_invalid_server_never_block_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = options(dir.path());
    opts.client.timeout = Duration::from_secs(2);
    let started = Instant::now();
    let manager = start(isolation_servers(), opts).await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );

    let ok = status_of(&manager, "ok");
    assert_eq!(
        (
            ok.state,
            ok.tool_count,
            ok.has_instructions,
            ok.last_error.as_deref()
        ),
        (ServerState::Connected, 9, true, None)
    );
    assert_eq!(ok.protocol_version.as_deref(), Some("2025-11-25"));
    let crash = status_of(&manager, "crash");
    assert_eq!(crash.state, ServerState::Failed);
    // A server that dies at start says why: its exit status and its last stderr lines; and
    // no "check before sending it again" (a handshake carries nothing out).
    let e = crash.last_error.unwrap();
    assert_eq!(
        e,
        "mcp server \"crash\", server/discover: connection closed: the server exited (exit status: 3); its last stderr lines: agenvoy-mcp-fixture: crashing at start, as asked; check the server's command or URL (and what it wrote to stderr), then try again"
    );
    let hang = status_of(&manager, "hang");
    assert_eq!(hang.state, ServerState::Failed);
    let e = hang.last_error.unwrap();
    assert!(
        e.contains("\"hang\"") && e.contains("no response after 2.0 s"),
        "{e}"
    );
    let invalid = status_of(&manager, "invalid");
    assert_eq!(
        (invalid.state, invalid.transport.as_str()),
        (ServerState::Failed, "?")
    );
    let e = invalid.last_error.unwrap();
    assert!(
        e.contains("server \"invalid\"") && e.contains("both \"command\" and \"url\""),
        "{e}"
    );

    assert!(
        registered_names(&manager)
            .iter()
            .all(|n| n.starts_with("mcp__ok__"))
    );
    assert_eq!(
        auto_call(&manager, "mcp__ok__echo", json!({"text": "fine"})).await,
        "fine"
    );
    // An invalid entry cannot be reconnected; the error says why.
    let e = manager.reconnect_server("invalid").await.unwrap_err();
    assert!(e.to_string().contains("fix the config file"), "{e}");
    manager.close().await;
}

/// A server that lists more than the bound on a server's lists, each page under the message
/// cap, is failed with an error that says so and what to do; nothing of its list is
/// registered, and the other servers are untouched.
#[tokio::test]
async fn a_server_whose_lists_pass_the_bound_is_failed_and_keeps_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let manager = start(
        json!({"ok": fixture_entry(&[]),
               "flood": fixture_entry(&["--mode", "list-flood=1000x40000"])}),
        options(dir.path()),
    )
    .await;
    manager.register_all();
    let flood = status_of(&manager, "flood");
    assert_eq!((flood.state, flood.tool_count), (ServerState::Failed, 0));
    let error = flood.last_error.unwrap();
    assert!(
        error.contains(
            "tools/list: protocol error: the server lists more than this client keeps of one server"
        ) && error.contains("raise ClientOptions::list_limits"),
        "{error}"
    );
    assert_eq!(registered_names(&manager).len(), 9);
    assert!(manager.client("flood").is_none());
    manager.close().await;
}

/// A token store that fails says how, typed: the connect error keeps the store's error as its
/// source, so an embedder tells a locked keychain (unlock it) from a store that cannot be used
/// or its own store's failure, without reading text; none of them reads as "log in".
#[tokio::test]
async fn a_failing_token_store_is_told_apart_by_its_kind() {
    use agenvoy_mcp::auth::{AuthError, AuthErrorKind, StoreError, StoreErrorKind, TokenStore};
    struct Failing(fn() -> StoreError);
    impl TokenStore for Failing {
        fn load(&self, _: &str) -> Result<Option<String>, StoreError> {
            Err((self.0)())
        }
        fn save(&self, _: &str, _: &str) -> Result<(), StoreError> {
            Err((self.0)())
        }
        fn delete(&self, _: &str) -> Result<(), StoreError> {
            Err((self.0)())
        }
        fn describe(&self) -> String {
            "failing".into()
        }
    }
    let server = ServerConfig::from_value(
        "remote",
        &json!({"url": "http://127.0.0.1:9/mcp", "auth": "oauth"}),
    )
    .unwrap();
    let connect = |store: Failing| {
        let server = server.clone();
        async move {
            agenvoy_mcp::host::connect_server_with_store(
                "remote",
                &server,
                &ClientOptions::default(),
                Arc::new(store),
            )
            .await
            .err()
            .expect("the store fails")
        }
    };
    let locked = connect(Failing(|| {
        StoreError::new(StoreErrorKind::Locked, "the test keyring is locked")
    }))
    .await;
    assert_eq!(
        locked.store_error().map(StoreError::kind),
        Some(StoreErrorKind::Locked)
    );
    assert!(!locked.needs_login(), "{locked}");
    // The auth error is the source, and the store's error is its own.
    let auth = std::error::Error::source(&locked)
        .and_then(|s| s.downcast_ref::<AuthError>())
        .expect("the auth error as the source");
    assert_eq!(auth.kind(), &AuthErrorKind::Store(StoreErrorKind::Locked));
    assert_eq!(locked.auth_error().map(AuthError::kind), Some(auth.kind()));
    assert!(
        std::error::Error::source(auth)
            .and_then(|s| s.downcast_ref::<StoreError>())
            .is_some()
    );
    assert!(
        locked.to_string().contains("the test keyring is locked"),
        "{locked}"
    );
    // An embedder's own failure is kept whole, under the store's error.
    let own = connect(Failing(|| {
        StoreError::other(std::io::Error::other("the vault is sealed"))
    }))
    .await;
    let store_error = own.store_error().expect("a store error");
    assert_eq!(store_error.kind(), StoreErrorKind::Other);
    let io = std::error::Error::source(store_error)
        .and_then(|s| s.downcast_ref::<std::io::Error>())
        .expect("the embedder's error");
    assert_eq!(io.to_string(), "the vault is sealed");
}

#[tokio::test]
async fn http_entries_connect_and_failures_keep_secrets_out() {
    // SAFETY: a variable only this test reads, set before any server starts.
    unsafe { std::env::set_var("AGENVOY_HOST_TEST_TOKEN", "tok-s3cret") };
    let fixture = common::HttpFixture::start("json", &[]);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed = format!("http://{}/mcp", listener.local_addr().unwrap());
    drop(listener);
    let dir = tempfile::tempdir().unwrap();
    let header = json!({"Authorization": "${AGENVOY_HOST_TEST_TOKEN}"});
    let manager = start(
        json!({"remote": {"url": fixture.url, "headers": header},
               "down": {"url": closed, "headers": header},
               "login": {"url": fixture.url, "auth": "oauth"}}),
        options(dir.path()),
    )
    .await;
    let remote = status_of(&manager, "remote");
    assert_eq!(
        (remote.state, remote.transport.as_str()),
        (ServerState::Connected, "http")
    );
    assert_eq!(
        auto_call(&manager, "mcp__remote__echo", json!({"text": "over http"})).await,
        "over http"
    );
    let down = status_of(&manager, "down");
    assert_eq!(down.state, ServerState::Failed);
    let login = status_of(&manager, "login");
    assert_eq!(login.state, ServerState::NeedsLogin);
    assert!(login.last_error.unwrap().ends_with("oauth login required"));
    for name in ["down", "login"] {
        let e = status_of(&manager, name).last_error.unwrap();
        assert!(e.contains(&format!("\"{name}\"")), "{e}");
        assert!(!e.contains("tok-s3cret"), "no expanded header in {e}");
    }
    manager.close().await;
}

#[tokio::test]
async fn env_and_args_are_expanded_at_connect_time() {
    // SAFETY: a variable only this test reads, set before any server starts.
    unsafe { std::env::set_var("AGENVOY_HOST_TEST_SECRET", "s3cret") };
    let dir = tempfile::tempdir().unwrap();
    let mut entry = fixture_entry(&[]);
    entry["env"] = json!({"FIXTURE_VALUE": "${AGENVOY_HOST_TEST_SECRET}-$UNSET_AGENVOY_VAR-$$"});
    let manager = start(json!({"fx": entry}), options(dir.path())).await;
    assert_eq!(
        auto_call(&manager, "mcp__fx__env", json!({"name": "FIXTURE_VALUE"})).await,
        "s3cret--"
    );
    manager.close().await;
}

#[tokio::test]
async fn live_refresh_re_registers_only_the_server_that_changed() {
    let dir = tempfile::tempdir().unwrap();
    let manager = start(
        json!({"fx": fixture_entry(&[]), "fx__b": fixture_entry(&[])}),
        options(dir.path()),
    )
    .await;
    manager.watch();
    let before_b: Vec<String> = registered_names(&manager)
        .into_iter()
        .filter(|n| n.starts_with("mcp__fx__b__"))
        .collect();
    assert_eq!(before_b.len(), 9);
    assert_eq!(
        auto_call(&manager, "mcp__fx__add_tool", json!({"name": "fresh"})).await,
        "added fresh; tools/list answered 1 times so far"
    );
    eventually(Duration::from_secs(5), "mcp__fx__fresh registered", || {
        registered_names(&manager).contains(&"mcp__fx__fresh".to_string())
    })
    .await;
    assert_eq!(
        auto_call(&manager, "mcp__fx__fresh", json!({})).await,
        "called fresh"
    );
    assert_eq!(status_of(&manager, "fx").tool_count, 10);
    let after_b: Vec<String> = registered_names(&manager)
        .into_iter()
        .filter(|n| n.starts_with("mcp__fx__b__"))
        .collect();
    assert_eq!(before_b, after_b);
    assert_eq!(status_of(&manager, "fx__b").tool_count, 9);
    manager.close().await;
}

#[tokio::test]
async fn a_burst_of_list_changes_is_one_refresh() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = options(dir.path());
    // Wide enough that five calls in a row on a busy machine stay one burst: the debounce
    // waits for a quiet `debounce` after the last change.
    opts.debounce = Duration::from_secs(2);
    let manager = start(json!({"fx": fixture_entry(&[])}), opts).await;
    manager.watch();
    for i in 0..5 {
        auto_call(
            &manager,
            "mcp__fx__add_tool",
            json!({"name": format!("t{i}")}),
        )
        .await;
    }
    eventually(Duration::from_secs(5), "t0..t4 registered", || {
        registered_names(&manager).contains(&"mcp__fx__t4".to_string())
    })
    .await;
    // Not a wait for an event but a window in which none may come: a refresh per change
    // (no debounce) would still be listing here.
    tokio::time::sleep(Duration::from_secs(1)).await;
    // One listing at connect, one for the whole burst.
    let text = auto_call(&manager, "mcp__fx__add_tool", json!({"name": "last"})).await;
    assert_eq!(text, "added last; tools/list answered 2 times so far");
    manager.close().await;
}

#[tokio::test]
async fn servers_that_never_notify_are_polled() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = options(dir.path());
    opts.poll_interval = Duration::from_millis(300);
    let manager = start(
        json!({"quiet": fixture_entry(&["--mode", "no-list-changed"])}),
        opts,
    )
    .await;
    manager.watch();
    auto_call(&manager, "mcp__quiet__add_tool", json!({"name": "polled"})).await;
    eventually(
        Duration::from_secs(5),
        "mcp__quiet__polled registered",
        || registered_names(&manager).contains(&"mcp__quiet__polled".to_string()),
    )
    .await;
    manager.close().await;
}

#[tokio::test]
async fn live_refresh_with_server_everything() {
    let Some(program) = installed("node_modules/.bin/mcp-server-everything") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut opts = options(dir.path());
    // Offering roots makes server-everything add get-roots-list after the handshake and
    // announce it with notifications/tools/list_changed.
    opts.client.handlers =
        Handlers::default().with_roots(vec![Root::new("file:///tmp").with_name("tmp")]);
    let manager = start(
        json!({"everything": {"command": program.display().to_string(), "args": ["stdio"]}}),
        opts,
    )
    .await;
    manager.watch();
    let s = status_of(&manager, "everything");
    assert_eq!(s.state, ServerState::Connected, "{s:?}");
    assert!(s.has_instructions);
    eventually(Duration::from_secs(10), "get-roots-list registered", || {
        registered_names(&manager).contains(&"mcp__everything__get-roots-list".to_string())
    })
    .await;
    assert!(manager.instructions().contains("### everything"));
    let listed = auto_call(&manager, "mcp__everything__get-roots-list", json!({})).await;
    assert!(listed.contains("file:///tmp"), "{listed}");
    assert_eq!(
        auto_call(&manager, "mcp__everything__echo", json!({"message": "hi"})).await,
        "Echo: hi"
    );
    manager.close().await;
}

fn kill(pid: u32) {
    let status = Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

#[tokio::test]
async fn a_dead_session_is_reconnected_once_and_the_call_retried() {
    let dir = tempfile::tempdir().unwrap();
    let manager = start(json!({"fx": fixture_entry(&[])}), options(dir.path())).await;
    let first = pid_of(&manager, "fx");
    kill(first);
    eventually(Duration::from_secs(5), "fx disconnected", || {
        status_of(&manager, "fx").state == ServerState::Disconnected
    })
    .await;
    assert!(
        status_of(&manager, "fx")
            .last_error
            .unwrap()
            .contains("closed")
    );
    assert_eq!(
        auto_call(&manager, "mcp__fx__echo", json!({"text": "back"})).await,
        "back"
    );
    let second = pid_of(&manager, "fx");
    assert_ne!(first, second);
    assert_eq!(status_of(&manager, "fx").state, ServerState::Connected);
    assert_group_gone_within(first, Duration::from_secs(5));
    manager.close().await;
    assert_group_gone_within(second, Duration::from_secs(5));
}

/// A tool that did its work and then crashed its server must not run twice: the Manager
/// never sends again a call that reached the server, and says it may or may not have run.
#[tokio::test]
async fn a_call_that_reached_the_server_is_never_sent_again() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls");
    let mut entry = fixture_entry(&["--mode", "crash-mid-call"]);
    entry["env"] = json!({"FIXTURE_CALL_LOG": log});
    let manager = start(json!({ "crashy": entry }), options(dir.path())).await;
    let err = manager
        .call(
            "mcp__crashy__echo",
            json!({"text": "x"}),
            PermissionMode::Auto,
        )
        .await
        .unwrap_err();
    match &err {
        CallError::Server(e) => assert!(e.may_have_run(), "{e}"),
        other => panic!("{other}"),
    }
    let text = err.to_string();
    assert!(text.contains("\"crashy\", tools/call"), "{text}");
    assert!(
        text.contains("may or may not have carried it out"),
        "{text}"
    );
    let calls = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        calls.lines().count(),
        1,
        "the call reached the server once: {calls:?}"
    );
    manager.close().await;
}

/// A call to a server whose session already ended reconnects first and runs once.
#[cfg(unix)]
#[tokio::test]
async fn a_call_to_a_dead_session_reconnects_and_runs_once() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls");
    let mut entry = fixture_entry(&[]);
    entry["env"] = json!({"FIXTURE_CALL_LOG": log});
    let manager = start(json!({ "fx": entry }), options(dir.path())).await;
    let first = pid_of(&manager, "fx");
    // SAFETY: kill takes plain integers.
    unsafe { libc::kill(first as i32, libc::SIGKILL) };
    let client = manager.client("fx").unwrap();
    eventually(Duration::from_secs(5), "the session sees the exit", || {
        client.is_closed()
    })
    .await;
    assert_eq!(
        auto_call(&manager, "mcp__fx__echo", json!({"text": "again"})).await,
        "again"
    );
    assert_ne!(pid_of(&manager, "fx"), first, "reconnected");
    let calls = std::fs::read_to_string(&log).unwrap();
    assert_eq!(calls.lines().count(), 1, "{calls:?}");
    manager.close().await;
}

/// Many callers that find the same server gone share one reconnect: 16 calls at once after
/// its process died all succeed, and the server was started (and initialized) once more, not
/// once per caller.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_callers_share_one_reconnect() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("methods");
    let mut entry = fixture_entry(&[]);
    entry["env"] = json!({"FIXTURE_METHOD_LOG": log});
    let manager = start(json!({ "fx": entry }), options(dir.path())).await;
    let first = pid_of(&manager, "fx");
    // SAFETY: kill takes plain integers.
    unsafe { libc::kill(first as i32, libc::SIGKILL) };
    let client = manager.client("fx").unwrap();
    eventually(Duration::from_secs(10), "the session sees the exit", || {
        client.is_closed()
    })
    .await;
    let calls: Vec<_> = (0..16)
        .map(|i| {
            let manager = manager.clone();
            tokio::spawn(async move {
                let text = format!("caller {i}");
                let out = auto_call(&manager, "mcp__fx__echo", json!({"text": text})).await;
                assert_eq!(out, text);
            })
        })
        .collect();
    for call in calls {
        tokio::time::timeout(Duration::from_secs(60), call)
            .await
            .expect("the call ends")
            .expect("the call succeeds");
    }
    assert_ne!(pid_of(&manager, "fx"), first, "reconnected");
    let methods = std::fs::read_to_string(&log).unwrap();
    let starts = methods.lines().filter(|m| *m == "initialize").count();
    assert_eq!(starts, 2, "started once, then reconnected once: {methods}");
    manager.close().await;
}

#[tokio::test]
async fn a_call_whose_tool_returned_is_error_is_not_retried() {
    let dir = tempfile::tempdir().unwrap();
    let manager = start(json!({"fx": fixture_entry(&[])}), options(dir.path())).await;
    let pid = pid_of(&manager, "fx");
    let out = manager
        .call(
            "mcp__fx__fail",
            json!({"message": "nope"}),
            PermissionMode::Auto,
        )
        .await
        .unwrap();
    assert!(out.is_error);
    assert_eq!(out.text, "nope");
    assert_eq!(pid_of(&manager, "fx"), pid, "no reconnect");
    manager.close().await;
}

#[tokio::test]
async fn reconnect_one_and_all() {
    let dir = tempfile::tempdir().unwrap();
    let manager = start(
        json!({"a": fixture_entry(&[]), "b": fixture_entry(&[])}),
        options(dir.path()),
    )
    .await;
    manager.watch();
    let (a, b) = (pid_of(&manager, "a"), pid_of(&manager, "b"));
    manager.reconnect_server("a").await.unwrap();
    let a2 = pid_of(&manager, "a");
    assert_ne!(a, a2);
    assert_eq!(pid_of(&manager, "b"), b);
    assert_group_gone_within(a, Duration::from_secs(5));
    assert_eq!(registered_names(&manager).len(), 18);
    // The new session is watched too.
    auto_call(&manager, "mcp__a__add_tool", json!({"name": "after"})).await;
    eventually(Duration::from_secs(5), "mcp__a__after registered", || {
        registered_names(&manager).contains(&"mcp__a__after".to_string())
    })
    .await;
    let outcomes = manager.reconnect().await;
    let names: Vec<&str> = outcomes.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    assert!(outcomes.iter().all(|(_, r)| r.is_ok()));
    assert_ne!(pid_of(&manager, "a"), a2);
    assert_ne!(pid_of(&manager, "b"), b);
    // A fresh fixture server has no added tool: the registry follows it.
    assert_eq!(registered_names(&manager).len(), 18);
    let e = manager.reconnect_server("nope").await.unwrap_err();
    assert!(e.to_string().contains("no server by this name"), "{e}");
    let (a3, b3) = (pid_of(&manager, "a"), pid_of(&manager, "b"));
    manager.close().await;
    assert_group_gone_within(a3, Duration::from_secs(5));
    assert_group_gone_within(b3, Duration::from_secs(5));
    assert!(
        manager
            .status()
            .iter()
            .all(|s| s.state == ServerState::Disconnected)
    );
    assert!(manager.tool_definitions().is_empty());
}

#[tokio::test]
async fn servers_are_added_and_removed_at_run_time() {
    let dir = tempfile::tempdir().unwrap();
    let manager = start(json!({"a": fixture_entry(&[])}), options(dir.path())).await;
    manager.watch();
    let entry = |flags: &[&str]| ServerConfig::from_value("x", &fixture_entry(flags)).unwrap();
    let add = |name: &'static str, server: ServerConfig| {
        let manager = manager.clone();
        tokio::spawn(async move { manager.add(name, server).await })
    };
    // A slow server being added holds up nobody: a call to another is answered while it is
    // still starting (what is checked is that order, not a wall-clock time).
    let slow = add("slow", entry(&["--mode", "slow-start=5"]));
    let connecting = || {
        manager
            .status()
            .iter()
            .any(|s| s.name == "slow" && s.state == ServerState::Connecting)
    };
    eventually(Duration::from_secs(10), "slow is connecting", connecting).await;
    assert_eq!(
        auto_call(&manager, "mcp__a__echo", json!({"text": "meanwhile"})).await,
        "meanwhile"
    );
    assert!(
        connecting() && !slow.is_finished(),
        "the call waited for slow"
    );
    let status = tokio::time::timeout(Duration::from_secs(60), slow)
        .await
        .expect("slow connects")
        .unwrap()
        .unwrap();
    assert_eq!(status.state, ServerState::Connected);
    assert_eq!(status.tool_count, 9);
    assert!(registered_names(&manager).contains(&"mcp__slow__echo".to_string()));
    // It is watched like the others.
    auto_call(&manager, "mcp__slow__add_tool", json!({"name": "late"})).await;
    eventually(Duration::from_secs(5), "mcp__slow__late registered", || {
        registered_names(&manager).contains(&"mcp__slow__late".to_string())
    })
    .await;
    // Names are checked.
    assert_eq!(
        manager.add("a", entry(&[])).await.unwrap_err(),
        AddError::Taken("a".into())
    );
    let e = manager.add("bad name", entry(&[])).await.unwrap_err();
    assert!(e.to_string().contains("letters, digits"), "{e}");
    // Removing unregisters the tools and closes the process before it returns.
    let pid = pid_of(&manager, "slow");
    assert!(manager.remove("slow").await);
    assert_group_gone_within(pid, Duration::ZERO);
    assert_eq!(registered_names(&manager).len(), 9);
    assert!(manager.status().iter().all(|s| s.name != "slow"));
    assert!(!manager.remove("slow").await);
    // A server removed while it connects is closed too, once its connect ends.
    let marker = "slow-start=1.25";
    let adding = add("late", entry(&["--mode", marker]));
    eventually(Duration::from_secs(5), "its process started", || {
        !processes_with_arg(marker).is_empty()
    })
    .await;
    let pids = processes_with_arg(marker);
    assert!(manager.remove("late").await);
    for pid in pids {
        assert_group_gone_within(pid, Duration::ZERO);
    }
    assert_eq!(
        adding.await.unwrap().unwrap_err(),
        AddError::Removed("late".into())
    );
    // The name is free again.
    let again = manager.add("late", entry(&[])).await.unwrap();
    assert_eq!(again.state, ServerState::Connected);
    assert_eq!(registered_names(&manager).len(), 18);
    manager.close().await;
}

#[tokio::test]
async fn a_removed_server_gives_up_the_names_it_kept_in_collisions() {
    let dir = tempfile::tempdir().unwrap();
    let manager = start(
        json!({"a": fixture_entry(&[]), "a__b": fixture_entry(&[])}),
        options(dir.path()),
    )
    .await;
    manager.watch();
    // Tool `b__late` of `a` and tool `late` of `a__b` are both mcp__a__b__late; `a` has it first.
    auto_call(&manager, "mcp__a__add_tool", json!({"name": "b__late"})).await;
    eventually(Duration::from_secs(5), "a's b__late registered", || {
        manager.registry().resolve("mcp__a__b__late") == Some(("a", "b__late"))
    })
    .await;
    auto_call(&manager, "mcp__a__b__add_tool", json!({"name": "late"})).await;
    eventually(Duration::from_secs(5), "the collision is reported", || {
        !manager.registry().collisions().is_empty()
    })
    .await;
    assert!(manager.remove("a").await);
    assert_eq!(
        manager.registry().resolve("mcp__a__b__late"),
        Some(("a__b", "late"))
    );
    assert!(manager.registry().collisions().is_empty());
    manager.close().await;
}

fn confirm_answering(answer: Decision) -> ConfirmCallback {
    Arc::new(move |_request: ConfirmRequest| {
        let answer = answer.clone();
        Box::pin(async move { answer })
    })
}

#[tokio::test]
async fn every_call_passes_the_gate() {
    let dir = tempfile::tempdir().unwrap();
    let servers = json!({"fx": fixture_entry(&[])});
    let echo = |t: &str| json!({"text": t});
    let confirm = PermissionMode::Confirm;

    // No callback: confirm mode refuses what is not allowlisted; auto runs it.
    let manager = start(servers.clone(), options(dir.path())).await;
    let err = manager
        .call("mcp__fx__echo", echo("a"), confirm)
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::Denied(_)), "{err}");
    assert!(err.to_string().contains("allow_tool"), "{err}");
    assert_eq!(
        auto_call(&manager, "mcp__fx__echo", echo("auto")).await,
        "auto"
    );
    // The allowlist: one tool, then the whole server.
    std::fs::write(dir.path().join("allow_tool"), "mcp__fx__add\n").unwrap();
    assert!(
        manager
            .call("mcp__fx__echo", echo("a"), confirm)
            .await
            .is_err()
    );
    let sum = manager
        .call("mcp__fx__add", json!({"a": 1, "b": 2}), confirm)
        .await
        .unwrap();
    assert_eq!(sum.text, "3");
    std::fs::write(dir.path().join("allow_tool"), "mcp__fx__*\n").unwrap();
    assert_eq!(
        manager
            .call("mcp__fx__echo", echo("listed"), confirm)
            .await
            .unwrap()
            .text,
        "listed"
    );
    // Unknown tools are refused before the gate.
    let err = manager
        .call("mcp__fx__nope", json!({}), PermissionMode::Auto)
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::UnknownTool(_)));
    assert!(err.to_string().contains("agenvoy-mcp tools"), "{err}");
    manager.close().await;

    // With a callback: it decides what the allowlist does not cover.
    std::fs::remove_file(dir.path().join("allow_tool")).unwrap();
    let mut opts = options(dir.path());
    opts.confirm = Some(confirm_answering(Decision::Refuse(
        "the user said no".into(),
    )));
    let manager = start(servers.clone(), opts).await;
    let err = manager
        .call("mcp__fx__echo", echo("a"), confirm)
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "tool call mcp__fx__echo refused: the user said no"
    );
    manager.close().await;
    let mut opts = options(dir.path());
    opts.confirm = Some(confirm_answering(Decision::Approve));
    let manager = start(servers, opts).await;
    assert_eq!(
        manager
            .call("mcp__fx__echo", echo("yes"), confirm)
            .await
            .unwrap()
            .text,
        "yes"
    );
    manager.close().await;
}

#[tokio::test]
async fn instructions_of_every_connected_server_sorted() {
    let dir = tempfile::tempdir().unwrap();
    let manager = start(
        json!({"zeta": fixture_entry(&[]), "alpha": fixture_entry(&[]),
               "down": fixture_entry(&["--mode", "crash-at-start"])}),
        options(dir.path()),
    )
    .await;
    let block = manager.instructions();
    assert!(
        block.starts_with("## MCP Server Instructions\n\n"),
        "{block}"
    );
    let alpha = block
        .find("### alpha\n\nThe agenvoy fixture server")
        .unwrap();
    let zeta = block
        .find("### zeta\n\nThe agenvoy fixture server")
        .unwrap();
    assert!(alpha < zeta && !block.contains("### down"), "{block}");
    manager.close().await;
}

// The commands.

/// Runs the binary with `AGENVOY_CONFIG_DIR` set to `dir`, stdin not a terminal.
fn run(dir: &Path, args: &[&str]) -> (Output, String, String) {
    let out = Command::new(binary())
        .args(args)
        .env("AGENVOY_CONFIG_DIR", dir)
        .stdin(Stdio::null())
        .output()
        .expect("run the binary");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out, stdout, stderr)
}

fn write_config(dir: &Path, servers: Value) -> PathBuf {
    let path = dir.join("custom.json");
    std::fs::write(&path, json!({ "servers": servers }).to_string()).unwrap();
    path
}

/// Issue 44 §4: a server that needs a login is told as the command line does it (the
/// command to run), in `tools` and in the last line of a `call` of one of its tools (which
/// used to say only that no such tool is registered).
#[test]
fn tools_and_call_say_which_command_logs_in() {
    let dir = tempfile::tempdir().unwrap();
    let entry = json!({"url": "http://127.0.0.1:9/mcp", "auth": "oauth"});
    let path = write_config(dir.path(), json!({ "needs-login-44": entry }));
    let config = path.to_str().unwrap();
    let (out, stdout, stderr) = run(dir.path(), &["tools", "--config", config]);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stdout.contains(
            "error: mcp server \"needs-login-44\": oauth login required; run `agenvoy-mcp login needs-login-44`"
        ),
        "{stdout}"
    );
    let (out, _, stderr) = run(
        dir.path(),
        &[
            "call",
            "--yes",
            "--config",
            config,
            "mcp__needs-login-44__whoami",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(
        stderr.lines().last().unwrap_or_default(),
        "call failed: mcp__needs-login-44__whoami cannot be called: server \"needs-login-44\" needs a login: mcp server \"needs-login-44\": oauth login required; run `agenvoy-mcp login needs-login-44`",
        "{stderr}"
    );
    // A tool of no server is still only unknown.
    let (_, _, stderr) = run(
        dir.path(),
        &["call", "--yes", "--config", config, "mcp__other__whoami"],
    );
    assert!(
        stderr.contains("no MCP tool named mcp__other__whoami is registered"),
        "{stderr}"
    );
}

#[test]
fn tools_with_no_config_file_uses_the_embedded_default() {
    let dir = tempfile::tempdir().unwrap();
    let (out, stdout, stderr) = run(dir.path(), &["tools"]);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.contains("(not found: using the embedded default)"),
        "{stdout}"
    );
    assert!(stdout.contains("  fixture  connected"), "{stdout}");
    assert!(
        stdout.contains("tools (4):") && stdout.contains("  mcp__fixture__echo "),
        "{stdout}"
    );
    // With --json: the path alone, and whether the file is there in a member of its own.
    let (out, stdout, stderr) = run(dir.path(), &["tools", "--json"]);
    assert!(out.status.success(), "{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let path = dir.path().join("mcp.json");
    assert_eq!(
        report["config"],
        json!({"path": path.to_str().unwrap(), "found": false})
    );
}

#[test]
fn tools_shows_every_server_state() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_config(dir.path(), isolation_servers());
    let config = path.to_str().unwrap();
    let (out, stdout, stderr) = run(dir.path(), &["tools", "--config", config, "--timeout", "2"]);
    // Some servers failed: exit 3, the report printed all the same.
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stdout.starts_with(&format!("config: {config}\nservers (4):\n")),
        "{stdout}"
    );
    for line in [
        "  crash    failed",
        "  hang     failed",
        "  invalid  failed     ?",
        "  ok       connected  stdio  2025-11-25  9 tools  instructions",
        "no response after 2.0 s",
        "the server exited (exit status: 3); its last stderr lines: agenvoy-mcp-fixture: crashing at start, as asked",
        "both \"command\" and \"url\"",
        "tools (9):",
    ] {
        assert!(stdout.contains(line), "{line:?} missing from:\n{stdout}");
    }
    // Each error once: in the report, not again in a log line.
    for error in [
        "no response after 2.0 s",
        "crashing at start",
        "both \"command\"",
    ] {
        assert_eq!(stdout.matches(error).count(), 1, "{error}: {stdout}");
        assert!(!stderr.contains(error), "{error} logged too: {stderr}");
    }

    let (out, stdout, _) = run(
        dir.path(),
        &["tools", "--json", "--config", config, "--timeout", "2"],
    );
    assert_eq!(out.status.code(), Some(3));
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let states: Vec<(&str, &str)> = report["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["name"].as_str().unwrap(), s["state"].as_str().unwrap()))
        .collect();
    assert_eq!(
        states,
        [
            ("crash", "failed"),
            ("hang", "failed"),
            ("invalid", "failed"),
            ("ok", "connected")
        ]
    );
    let echo = &report["tools"].as_array().unwrap()[5];
    assert_eq!(echo["name"], "mcp__ok__echo");
    assert_eq!(
        (echo["server"].as_str(), echo["tool"].as_str()),
        (Some("ok"), Some("echo"))
    );
    // Named as the API names them (docs/API.md), and nothing else.
    let mut members: Vec<&str> = echo
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    members.sort();
    assert_eq!(
        members,
        ["description", "inputSchema", "name", "server", "tool"]
    );
    assert_eq!(echo["inputSchema"]["required"], json!(["text"]));
    assert_eq!(report["config"], json!({"path": config, "found": true}));
}

/// On a terminal (tmux, 80 columns), a failed server's error that does not fit wraps with each
/// further line under the error's start, not at the terminal's left edge.
#[test]
fn tools_on_a_terminal_wraps_an_error_under_its_label() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_config(
        dir.path(),
        json!({"unreachable-server-long-name": {"url": closed_url()}}),
    );
    let command = format!(
        "env AGENVOY_CONFIG_DIR={dir} {binary} tools --config {config} 2>/dev/null; echo done; sleep 60",
        dir = common::tmux::quoted(dir.path()),
        binary = common::tmux::quoted(Path::new(&binary())),
        config = common::tmux::quoted(&path),
    );
    let Some(tmux) = common::tmux::Tmux::start(dir.path(), &command) else {
        return;
    };
    let screen = tmux.wait_for("\ndone");
    let lines: Vec<&str> = screen.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("    error: "))
        .unwrap_or_else(|| panic!("no error line:\n{screen}"));
    let more: Vec<&str> = lines[at + 1..]
        .iter()
        .take_while(|l| l.starts_with("           "))
        .copied()
        .collect();
    assert!(!more.is_empty(), "the error wraps:\n{screen}");
    for line in &more {
        assert!(
            !line[11..].starts_with(' ') && line.len() <= 80,
            "{line:?} under the error's start:\n{screen}"
        );
    }
    let whole: Vec<&str> = std::iter::once(&lines[at][11..])
        .chain(more.iter().map(|l| &l[11..]))
        .collect();
    let whole = whole.join(" ");
    assert!(
        whole.contains("mcp server \"unreachable-server-long-name\"") && whole.contains("connect"),
        "{whole}"
    );
    assert_eq!(lines[at + 1 + more.len()], "tools (0):", "{screen}");
}

#[test]
fn a_broken_config_file_is_an_error_with_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcp.json");
    std::fs::write(
        &path,
        "{\n  \"servers\": {\n    \"a\": {\"command\": \"x\",}\n}}\n",
    )
    .unwrap();
    for command in ["tools", "call"] {
        let mut args = vec![command];
        if command == "call" {
            args.push("mcp__a__x");
        }
        let (out, stdout, stderr) = run(dir.path(), &args);
        assert_eq!(out.status.code(), Some(1));
        assert!(stdout.is_empty());
        assert!(
            stderr.contains(&format!(
                "config {}, line 3, column 26: not valid JSON",
                path.display()
            )),
            "{stderr}"
        );
    }
}

#[test]
fn call_refuses_without_a_terminal_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let (out, stdout, stderr) = run(
        dir.path(),
        &["call", "mcp__fixture__echo", r#"{"text":"hi"}"#],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout.is_empty());
    assert!(
        stderr.contains("tool call mcp__fixture__echo refused: it is not on the allowlist")
            && stderr.contains("no terminal")
            && stderr.contains("--yes"),
        "{stderr}"
    );
}

/// The timeouts a user sets are the ones that apply, over HTTP too: against a remote tool whose
/// answer starts after 3 s, an entry's `"timeout": 1` ends the call at 1 s, `call --timeout`
/// wins over the entry, and status shows what applies. (The transport's own 30 s wait for
/// response headers no longer bounds a request: its timeout does, from first byte to last.)
#[test]
fn the_timeouts_a_user_sets_are_the_ones_that_apply() {
    let fixture = HttpFixture::start("slow-headers", &[]);
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        json!({"slow": {"url": fixture.url, "timeout": 1, "startup_timeout": 20}}),
    );
    let config = config.to_str().unwrap();
    let call = |extra: &[&str]| {
        let mut args = vec!["call", "--config", config, "--yes"];
        args.extend_from_slice(extra);
        args.extend(["mcp__slow__echo", r#"{"text":"late"}"#]);
        run(dir.path(), &args)
    };
    let (out, stdout, stderr) = call(&[]);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(
        stderr.contains("mcp server \"slow\", tools/call: no response after 1.0 s"),
        "{stderr}"
    );
    let (out, stdout, stderr) = call(&["--timeout", "20"]);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stdout, "late\n");

    let (out, stdout, stderr) = run(dir.path(), &["tools", "--config", config, "--json"]);
    assert!(out.status.success(), "{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let slow = &report["servers"][0];
    assert_eq!(
        (&slow["timeout"], &slow["startupTimeout"]),
        (&json!(1.0), &json!(20.0))
    );

    // A value that is not a positive number of seconds is refused, naming the server and key.
    let config = write_config(
        dir.path(),
        json!({"slow": {"url": fixture.url, "timeout": 0}}),
    );
    let (out, stdout, stderr) = run(dir.path(), &["tools", "--config", config.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stdout.contains("\"timeout\" is 0; it must be a number of seconds above 0"),
        "{stdout}"
    );
}

#[test]
fn call_runs_with_yes_or_when_allowlisted() {
    let dir = tempfile::tempdir().unwrap();
    let (out, stdout, stderr) = run(
        dir.path(),
        &["call", "--yes", "mcp__fixture__echo", r#"{"text":"hi"}"#],
    );
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stdout, "hi\n");
    std::fs::write(dir.path().join("allow_tool"), "mcp__fixture__*\n").unwrap();
    let (out, stdout, stderr) = run(
        dir.path(),
        &["call", "mcp__fixture__add", r#"{"a":2,"b":3}"#],
    );
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stdout, "5\n");
}

#[test]
fn call_shows_progress_on_stderr_and_tool_errors_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let (out, stdout, stderr) = run(
        dir.path(),
        &[
            "call",
            "--yes",
            "mcp__fixture__slow",
            r#"{"seconds":0.3,"steps":3}"#,
        ],
    );
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stdout, "slept 0.3 s\n");
    for step in 1..=3 {
        assert!(
            stderr.contains(&format!("progress: {step}/3 step {step} of 3\n")),
            "{stderr}"
        );
    }
    let (out, stdout, stderr) = run(dir.path(), &["call", "--yes", "mcp__fixture__fail"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stdout, "the fail tool failed, as asked\n");
    assert!(stderr.contains("the tool reported an error"), "{stderr}");
}

#[test]
fn call_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let (out, _, stderr) = run(
        dir.path(),
        &["call", "--yes", "mcp__fixture__echo", "{not json"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr.contains("not valid JSON"), "{stderr}");
    let (out, _, stderr) = run(dir.path(), &["call", "--yes", "mcp__fixture__echo", "[1]"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr.contains("must be a JSON object"), "{stderr}");
    let (out, _, stderr) = run(dir.path(), &["call", "--yes", "mcp__nowhere__x"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr.contains("no MCP tool named mcp__nowhere__x"),
        "{stderr}"
    );
}

/// A modern-only stdio server (standard-library Python): it answers `server/discover` and
/// `tools/list`, refuses `initialize` with -32022, and logs each request's method.
const MODERN_ONLY: &str = r#"
import json, sys
log = open(sys.argv[1], "a")
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    log.write(msg["method"] + "\n")
    log.flush()
    answer = {"jsonrpc": "2.0", "id": msg["id"]}
    if msg["method"] == "server/discover":
        answer["result"] = {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                            "serverInfo": {"name": "modern-only", "version": "1"}}
    elif msg["method"] == "tools/list":
        answer["result"] = {"tools": [{"name": "hello", "inputSchema": {"type": "object"}}]}
    else:
        answer["error"] = {"code": -32022, "message": "Unsupported protocol version",
                           "data": {"supported": ["2026-07-28"], "requested": "2025-11-25"}}
    print(json.dumps(answer), flush=True)
"#;

/// A server found of the initialize era is remembered (by its entry) in `server-eras.json`,
/// and its next start sends `initialize` at once, without the `server/discover` probe. When
/// the same entry later runs a modern-only server, the refused `initialize` leads to the
/// probe, the server connects in the stateless era, and the memory forgets it.
#[test]
fn a_server_of_the_initialize_era_starts_without_the_probe_the_next_time() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("methods.log");
    let script = dir.path().join("server.sh");
    let server = format!("exec '{}'", fixture_binary());
    std::fs::write(&script, &server).unwrap();
    let path = write_config(
        dir.path(),
        json!({"s": {"command": "sh", "args": [script], "env": {"FIXTURE_METHOD_LOG": log}}}),
    );
    let config = path.to_str().unwrap();
    let methods_of_a_start = || {
        let _ = std::fs::remove_file(&log);
        let (out, stdout, stderr) = run(dir.path(), &["tools", "--config", config]);
        assert!(out.status.success(), "{stdout}{stderr}");
        assert!(stdout.contains("  s  connected"), "{stdout}");
        // The handshake and the tools, in order (resources and prompts are listed beside
        // the tools, in no set order).
        let log = std::fs::read_to_string(&log).unwrap();
        log.lines()
            .filter(|m| ["server/discover", "initialize", "tools/list"].contains(m))
            .map(|m| format!("{m}\n"))
            .collect::<String>()
    };
    assert_eq!(
        methods_of_a_start(),
        "server/discover\ninitialize\ntools/list\n"
    );
    let eras = std::fs::read_to_string(dir.path().join("server-eras.json")).unwrap();
    assert!(eras.contains("\"s\""), "{eras}");
    assert!(!eras.contains("server.sh"), "hashes only: {eras}");
    assert_eq!(methods_of_a_start(), "initialize\ntools/list\n", "no probe");

    // The same entry, now a modern-only server.
    let stub = dir.path().join("modern.py");
    std::fs::write(&stub, MODERN_ONLY).unwrap();
    std::fs::write(
        &script,
        format!("exec python3 '{}' \"$FIXTURE_METHOD_LOG\"", stub.display()),
    )
    .unwrap();
    assert_eq!(
        methods_of_a_start(),
        "initialize\nserver/discover\ntools/list\n",
        "refused, then probed"
    );
    let eras = std::fs::read_to_string(dir.path().join("server-eras.json")).unwrap();
    assert!(!eras.contains("\"s\""), "forgotten: {eras}");
    assert_eq!(methods_of_a_start(), "server/discover\ntools/list\n");
}

/// Closing a manager while a server is still starting stops that server too (its process
/// group ends) without waiting for its start, and it does not start again.
#[tokio::test]
async fn close_stops_a_server_still_starting() {
    let dir = tempfile::tempdir().unwrap();
    let marker = "4904";
    agenvoy_mcp::unstable::become_subreaper();
    let manager = Manager::start(
        config(json!({
            "slow": fixture_entry(&["--page-size", marker, "--mode", "slow-start=30"]),
        })),
        options(dir.path()),
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    let pid = loop {
        if let [pid] = common::processes_with_arg(marker)[..] {
            break pid;
        }
        assert!(Instant::now() < deadline, "the server did not start");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(status_of(&manager, "slow").state, ServerState::Connecting);
    let started = Instant::now();
    manager.close().await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_group_gone_within(pid, Duration::ZERO);
    let status = status_of(&manager, "slow");
    assert_eq!(status.state, ServerState::Disconnected, "{status:?}");
    let again = manager.reconnect_server("slow").await.unwrap_err();
    assert!(
        again.to_string().contains("the manager was closed"),
        "{again}"
    );
    assert!(
        common::processes_with_arg(marker).is_empty(),
        "not started again"
    );
}

/// Stopping `tools` or `probe` while a server starts, or `call` while its tool runs (Ctrl-C,
/// SIGTERM, the terminal's SIGHUP):
/// the servers, in process groups of their own that the terminal's signal does not reach,
/// are closed before the command ends with 128 plus the signal's number.
#[test]
fn a_stopped_command_closes_its_servers() {
    let dir = tempfile::tempdir().unwrap();
    let calls = dir.path().join("calls.log");
    let stop = |args: &[&str], signal: &str, marker: &str, ready: &dyn Fn() -> bool| {
        let mut command = Command::new(binary())
            .args(args)
            .env("AGENVOY_CONFIG_DIR", dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        // The server's process: `probe`'s own command line has the marker too.
        let servers = || {
            let mut pids = common::processes_with_arg(marker);
            pids.retain(|&pid| pid != command.id());
            pids
        };
        while !(ready() && servers().len() == 1) {
            if Instant::now() > deadline {
                let _ = command.kill();
                let out = command.wait_with_output().unwrap();
                panic!(
                    "{args:?}: never ready: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let pid = servers()[0];
        let sent = Command::new("kill")
            .args([&format!("-{signal}"), &command.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        let exit = common::wait_exit(&mut command, Duration::from_secs(5))
            .unwrap_or_else(|| panic!("{args:?}: still running"));
        let mut stderr = String::new();
        std::io::Read::read_to_string(command.stderr.as_mut().unwrap(), &mut stderr).unwrap();
        assert!(
            stderr.contains(&format!("SIG{signal}: closing every server")),
            "{stderr}"
        );
        assert_group_gone_within(pid, Duration::ZERO);
        exit.code()
    };

    let config = write_config(
        dir.path(),
        json!({"slow": fixture_entry(&["--page-size", "4905", "--mode", "slow-start=30"])}),
    );
    let args = ["tools", "--config", config.to_str().unwrap()];
    assert_eq!(stop(&args, "INT", "4905", &|| true), Some(130));

    let mut entry = fixture_entry(&["--page-size", "4906"]);
    entry["env"] = json!({"FIXTURE_CALL_LOG": calls});
    let config = write_config(dir.path(), json!({"h": entry}));
    let args = [
        "call",
        "--yes",
        "--config",
        config.to_str().unwrap(),
        "mcp__h__slow",
        r#"{"seconds": 30}"#,
    ];
    let called = || std::fs::read_to_string(&calls).is_ok_and(|log| log.contains("slow"));
    assert_eq!(stop(&args, "TERM", "4906", &called), Some(143));

    let fixture = fixture_binary();
    let args = ["probe", "--", &fixture, "--page-size", "4907"];
    let args = [&args[..], &["--mode", "slow-start=30"]].concat();
    assert_eq!(stop(&args, "HUP", "4907", &|| true), Some(129));
}

/// `tools --search` prints the best matches first, in text and as `GET /v1/mcp/tools/search`
/// answers in JSON; a query that matches nothing prints none.
#[test]
fn tools_search_prints_the_best_matches_first() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_config(dir.path(), json!({"ok": fixture_entry(&[])}));
    let config = path.to_str().unwrap();
    let search = |query: &str, json: bool| {
        let mut args = vec![
            "tools", "--config", config, "--search", query, "--limit", "2",
        ];
        if json {
            args.push("--json");
        }
        let (out, stdout, stderr) = run(dir.path(), &args);
        assert!(out.status.success(), "{stderr}");
        stdout
    };
    let text = search("numbers add", false);
    assert!(
        text.starts_with("search \"numbers add\" (2 of 9 tools):\n  mcp__ok__add "),
        "{text}"
    );
    let found: Value = serde_json::from_str(&search("sleeps progress", true)).unwrap();
    let names: Vec<&str> = found["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.first(), Some(&"mcp__ok__slow"), "{found}");
    assert_eq!(found["tools"][0]["server"], "ok");
    let none: Value = serde_json::from_str(&search("zzzqqq", true)).unwrap();
    assert_eq!(none["tools"], json!([]));
}
