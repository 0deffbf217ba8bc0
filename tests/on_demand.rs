//! On-demand servers (`"start": "on_demand"`) against the fixture over stdio: a server never
//! seen is started once to fill its catalog, then stopped; the next launch registers its
//! tools from the catalog without starting it; the first call starts it (once, however many
//! calls come together); it stops when idle, unless a request, a task or a subscription is
//! open; a changed entry or an expired `ttlMs` fills the catalog again; a server that fails
//! to start fails the call with its stderr and keeps its catalog; tools gone since the
//! catalog are unregistered when it starts.
#![cfg(all(feature = "cli", unix))]

mod common;

use agenvoy_mcp::host::{
    Catalog, CatalogStore, Config, Event, FileCatalogStore, KeptCatalog, Manager, ManagerOptions,
    PermissionMode, ServerState,
};
use agenvoy_mcp::{ClientOptions, RequestOptions, TaskMode, Tool};
use common::{assert_group_gone_within, fixture_binary, server_pid, wait_until};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A config of `servers`, each on demand, stopped after `idle` seconds without a request.
fn config(servers: Value, idle: f64) -> Config {
    let text = json!({"start": "on_demand", "idle_timeout": idle, "servers": servers});
    Config::parse(&text.to_string()).expect("a valid config")
}

/// The fixture with `flags`, its requests' methods logged in `log`.
fn entry(flags: &[&str], log: &Path) -> Value {
    json!({"command": fixture_binary(), "args": flags, "env": {"FIXTURE_METHOD_LOG": log}})
}

fn options(dir: &Path) -> ManagerOptions {
    agenvoy_mcp::unstable::become_subreaper();
    ManagerOptions::default()
        .with_client(ClientOptions::default().with_timeout(Duration::from_secs(10)))
        .with_allowlist_path(dir.join("allow_tool"))
        .with_catalog_store(Arc::new(FileCatalogStore::new(dir.join("catalogs"))))
}

/// How many times the server in `log` was started (each start lists its tools once).
fn starts(log: &Path) -> usize {
    let methods = std::fs::read_to_string(log).unwrap_or_default();
    methods.lines().filter(|m| *m == "tools/list").count()
}

fn state(manager: &Manager, name: &str) -> ServerState {
    let status = manager.status().into_iter().find(|s| s.name == name);
    status.expect("the server").state
}

fn registered(manager: &Manager) -> Vec<String> {
    let definitions = manager.tool_definitions().into_iter();
    definitions
        .map(|d| d.name)
        .filter(|n| n.starts_with("mcp__fx"))
        .collect()
}

async fn echo(manager: &Manager, server: &str, text: &str) -> String {
    let name = format!("mcp__{server}__echo");
    let out = manager.call(&name, json!({"text": text}), PermissionMode::Auto);
    out.await.expect("the call").text
}

/// Waits until `name` is idle again (its process ended), at most 10 s.
fn wait_idle(manager: &Manager, name: &str) {
    wait_until(
        "the server stopping",
        Duration::from_secs(10),
        || match state(manager, name) {
            ServerState::Idle => Ok(()),
            other => Err(other.to_string()),
        },
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_catalog_is_filled_once_then_tools_come_from_it_and_the_first_call_starts_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("methods");
    let servers = json!({"fx": entry(&[], &log)});

    // Never seen: started to fill its catalog, then stopped.
    let manager = Manager::new(config(servers.clone(), 600.0), options(dir.path())).await;
    assert_eq!(starts(&log), 1);
    assert_eq!(state(&manager, "fx"), ServerState::Idle);
    assert!(
        manager.client("fx").is_none(),
        "stopped once its catalog was filled"
    );
    let tools = registered(&manager);
    assert!(tools.contains(&"mcp__fx__echo".to_string()), "{tools:?}");
    let status = manager.status().remove(0);
    assert!(status.start.is_on_demand() && status.tool_count > 5);
    // Written on a blocking thread: it may land just after the manager is up.
    let catalogs = dir.path().join("catalogs");
    let kept = || std::fs::read_dir(&catalogs).map_or(0, |d| d.count());
    assert!(
        common::wait_until_or_not(Duration::from_secs(10), || kept() == 1),
        "one catalog file, not {}",
        kept()
    );
    manager.close().await;

    // The next launch starts nothing: the tools, resources and prompts come from the catalog.
    let manager = Manager::new(config(servers, 600.0), options(dir.path())).await;
    assert_eq!(starts(&log), 1, "not started at launch");
    assert_eq!(state(&manager, "fx"), ServerState::Idle);
    assert_eq!(registered(&manager), tools);
    let catalog = manager.catalog("fx").unwrap();
    assert!(!catalog.resources.is_empty() && !catalog.prompts.is_empty());

    // Concurrent first calls start it once.
    let calls = (0..8).map(|i| {
        let manager = manager.clone();
        async move { echo(&manager, "fx", &format!("hello {i}")).await }
    });
    let answers = futures::future::join_all(calls).await;
    assert_eq!(answers[3], "hello 3");
    assert_eq!(starts(&log), 2, "eight calls, one start");
    assert_eq!(state(&manager, "fx"), ServerState::Connected);
    manager.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_server_stops_unless_a_request_a_task_or_a_subscription_is_open() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("methods");
    let tasks_log = dir.path().join("tasks-methods");
    let servers = json!({"fx": entry(&[], &log), "tk": entry(&["--mode", "tasks"], &tasks_log)});
    let manager = Manager::new(config(servers, 0.3), options(dir.path())).await;
    manager.watch();

    // Started by a call, stopped after 0.3 s without one: its process ends.
    assert_eq!(echo(&manager, "fx", "a").await, "a");
    let pid = server_pid(&manager.client("fx").unwrap());
    let mut events = manager.events();
    wait_idle(&manager, "fx");
    assert_group_gone_within(pid, Duration::from_secs(10));
    let told = std::iter::from_fn(|| events.try_recv().ok()).any(|e| {
        matches!(e, Event::State { server, state: Some(ServerState::Idle), .. } if server == "fx")
    });
    assert!(told, "the event stream says it went idle");
    let tools = registered(&manager);
    assert!(
        tools.contains(&"mcp__fx__echo".to_string()),
        "idle, still offered: {tools:?}"
    );

    // A subscription keeps it running past its idle timeout; once it ends, it stops.
    manager.subscribe("fx", "fixture://readme").await.unwrap();
    tokio::time::sleep(Duration::from_millis(900)).await;
    assert_eq!(state(&manager, "fx"), ServerState::Connected, "followed");
    manager.unsubscribe("fx", "fixture://readme").await.unwrap();
    wait_idle(&manager, "fx");

    // A task (a call the manager polls until it ends) keeps its server running.
    let task = RequestOptions::default().with_task(TaskMode::WhenSupported);
    let args = json!({"seconds": 1.2, "steps": 2});
    let call = manager.call_with("mcp__tk__research", args, PermissionMode::Auto, task);
    let watch = async {
        tokio::time::sleep(Duration::from_millis(900)).await;
        state(&manager, "tk")
    };
    let (out, during) = tokio::join!(call, watch);
    assert_eq!(out.unwrap().text, "researched in 2 steps");
    assert_eq!(
        during,
        ServerState::Connected,
        "running while its task runs"
    );
    wait_idle(&manager, "tk");

    // A slow call in flight keeps it too.
    let args = json!({"seconds": 1.0, "steps": 2});
    let call = manager.call("mcp__fx__slow", args, PermissionMode::Auto);
    let watch = async {
        tokio::time::sleep(Duration::from_millis(800)).await;
        state(&manager, "fx")
    };
    let (out, during) = tokio::join!(call, watch);
    assert!(!out.unwrap().is_error);
    assert_eq!(
        during,
        ServerState::Connected,
        "running while a call is in flight"
    );
    wait_idle(&manager, "fx");
    manager.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_entry_or_an_expired_ttl_fills_the_catalog_again() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("methods");
    let first = json!({"fx": entry(&[], &log)});
    Manager::new(config(first.clone(), 600.0), options(dir.path()))
        .await
        .close()
        .await;
    assert_eq!(starts(&log), 1);

    // Another argument is another server.
    let changed = json!({"fx": entry(&["--mode", "normal"], &log)});
    let manager = Manager::new(config(changed.clone(), 600.0), options(dir.path())).await;
    assert_eq!(starts(&log), 2, "a changed entry is listed again");
    manager.close().await;
    Manager::new(config(changed, 600.0), options(dir.path()))
        .await
        .close()
        .await;
    assert_eq!(starts(&log), 2, "and then kept");

    // A tool list with a ttlMs is kept that long only.
    let mut fresh_for = entry(&["--mode", "modern"], &log);
    fresh_for["env"]["FIXTURE_LIST_CACHE"] = json!("400 public");
    let servers = json!({"fx": fresh_for});
    Manager::new(config(servers.clone(), 600.0), options(dir.path()))
        .await
        .close()
        .await;
    assert_eq!(starts(&log), 3);
    Manager::new(config(servers.clone(), 600.0), options(dir.path()))
        .await
        .close()
        .await;
    assert_eq!(starts(&log), 3, "within its ttl");
    tokio::time::sleep(Duration::from_millis(600)).await;
    Manager::new(config(servers, 600.0), options(dir.path()))
        .await
        .close()
        .await;
    assert_eq!(starts(&log), 4, "past its ttl, listed again");
}

/// An embedder's store, in memory, that hands out one catalog for every key.
struct Planted(Mutex<Option<KeptCatalog>>);

impl CatalogStore for Planted {
    fn load(&self, _name: &str, _key: &str) -> Option<KeptCatalog> {
        self.0.lock().unwrap().clone()
    }
    fn save(&self, _name: &str, _key: &str, catalog: &KeptCatalog) {
        *self.0.lock().unwrap() = Some(catalog.clone());
    }
    fn forget(&self, _name: &str) {
        *self.0.lock().unwrap() = None;
    }
}

fn planted(tools: &[&str]) -> Arc<Planted> {
    let tools: Vec<Tool> = tools
        .iter()
        .map(|name| {
            let tool = json!({"name": name, "inputSchema": {"type": "object"}});
            serde_json::from_value(tool).unwrap()
        })
        .collect();
    let kept = KeptCatalog::new(tools, Catalog::default(), Some("Kept words.".into()));
    Arc::new(Planted(Mutex::new(Some(kept))))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_gone_since_the_catalog_are_unregistered_when_the_server_starts() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("methods");
    let store = planted(&["echo", "retired"]);
    let options = options(dir.path()).with_catalog_store(store.clone());
    let servers = json!({"fx": entry(&[], &log)});
    let manager = Manager::new(config(servers, 600.0), options).await;
    assert_eq!(starts(&log), 0);
    assert_eq!(registered(&manager), ["mcp__fx__echo", "mcp__fx__retired"]);
    assert!(manager.instructions().contains("Kept words."));

    assert_eq!(echo(&manager, "fx", "hi").await, "hi");
    let tools = registered(&manager);
    assert!(
        !tools.contains(&"mcp__fx__retired".to_string()),
        "{tools:?}"
    );
    assert!(tools.contains(&"mcp__fx__add".to_string()), "{tools:?}");
    let gone = manager
        .call("mcp__fx__retired", json!({}), PermissionMode::Auto)
        .await
        .unwrap_err();
    assert!(gone.to_string().contains("mcp__fx__retired"), "{gone}");
    // The fresh lists are kept for the next launch (written in the background).
    wait_until("the fresh catalog kept", Duration::from_secs(10), || {
        let kept = store.0.lock().unwrap().clone().unwrap();
        let names: Vec<String> = kept.tools.iter().map(|t| t.name.clone()).collect();
        let fresh = names.contains(&"add".to_string()) && !names.contains(&"retired".to_string());
        fresh.then_some(()).ok_or(format!("{names:?}"))
    });
    manager.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_fails_to_start_on_demand_fails_the_call_with_its_stderr_and_keeps_its_catalog()
 {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("methods");
    let store = planted(&["echo"]);
    let options = options(dir.path()).with_catalog_store(store.clone());
    let servers = json!({"fx": entry(&["--mode", "crash-at-start"], &log)});
    let manager = Manager::new(config(servers, 600.0), options).await;
    assert_eq!(state(&manager, "fx"), ServerState::Idle);

    let failed = manager
        .call("mcp__fx__echo", json!({"text": "x"}), PermissionMode::Auto)
        .await
        .unwrap_err()
        .to_string();
    assert!(failed.contains("fx"), "{failed}");
    assert!(failed.contains("crash"), "its stderr: {failed}");
    let status = manager.status().remove(0);
    assert_eq!(status.state, ServerState::Failed);
    assert_eq!(registered(&manager), ["mcp__fx__echo"], "still offered");
    assert!(store.0.lock().unwrap().is_some(), "the catalog stays");

    // The next call tries again (and fails again, saying so).
    let again = manager
        .call("mcp__fx__echo", json!({"text": "x"}), PermissionMode::Auto)
        .await
        .unwrap_err();
    assert!(again.to_string().contains("crash"), "{again}");
    manager.close().await;
}

#[test]
fn tools_shows_an_on_demand_server_idle_with_its_kept_tools() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("methods");
    let path = dir.path().join("mcp.json");
    let text = json!({"servers": {"fx": {
        "command": fixture_binary(), "env": {"FIXTURE_METHOD_LOG": &log},
        "start": "on_demand", "idle_timeout": 90,
    }}});
    std::fs::write(&path, text.to_string()).unwrap();
    let tools = || {
        let out = std::process::Command::new(common::binary())
            .args(["tools", "--config"])
            .arg(&path)
            .env("AGENVOY_CONFIG_DIR", dir.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let first = tools();
    let second = tools();
    assert_eq!(starts(&log), 1, "the second run started nothing");
    for shown in [
        "fx  idle",
        "start: on demand (tools from its kept catalog; stops after 90 s idle)",
        "mcp__fx__echo",
    ] {
        assert!(
            first.contains(shown) && second.contains(shown),
            "{shown}:\n{second}"
        );
    }
    assert!(dir.path().join("catalogs/fx.json").exists());
}

#[test]
fn probe_says_how_a_servers_catalog_would_be_kept_on_demand() {
    let probe = |cache: Option<&str>| {
        let mut command = std::process::Command::new(common::binary());
        let fixture = fixture_binary();
        command.args([
            "probe",
            "--json",
            "--inherit-env",
            "--",
            &fixture,
            "--mode",
            "modern",
        ]);
        if let Some(cache) = cache {
            command.env("FIXTURE_LIST_CACHE", cache);
        }
        let out = command.output().unwrap();
        assert!(out.status.success(), "{out:?}");
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        report["catalog"].clone()
    };
    assert_eq!(probe(None), json!({"kept": true, "ttlMs": null}));
    assert_eq!(
        probe(Some("5000 public")),
        json!({"kept": true, "ttlMs": 5000})
    );
    // Over stdio no access token is sent: a private list is private to no login.
    assert_eq!(
        probe(Some("5000 private")),
        json!({"kept": true, "ttlMs": 5000})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manager_that_starts_in_the_background_registers_kept_tools_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("methods");
    let servers = json!({"fx": entry(&[], &log)});
    Manager::new(config(servers.clone(), 600.0), options(dir.path()))
        .await
        .close()
        .await;
    let manager = Manager::start(config(servers, 600.0), options(dir.path()));
    assert!(registered(&manager).contains(&"mcp__fx__echo".to_string()));
    assert_eq!(state(&manager, "fx"), ServerState::Idle);
    manager.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_server_on_demand_opens_its_session_at_first_use() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("methods");
    let mut command = std::process::Command::new(fixture_binary());
    command
        .args(["--http", "127.0.0.1:0", "--mode", "modern"])
        .env("FIXTURE_METHOD_LOG", &log);
    let server = common::Listening::start(command);
    let servers = json!({"fx": {"url": server.url}});
    Manager::new(config(servers.clone(), 600.0), options(dir.path()))
        .await
        .close()
        .await;
    assert_eq!(starts(&log), 1, "listed once to fill its catalog");
    let manager = Manager::new(config(servers, 600.0), options(dir.path())).await;
    assert_eq!(state(&manager, "fx"), ServerState::Idle);
    let methods = std::fs::read_to_string(&log).unwrap().lines().count();
    assert!(registered(&manager).contains(&"mcp__fx__echo".to_string()));
    assert_eq!(
        std::fs::read_to_string(&log).unwrap().lines().count(),
        methods,
        "nothing sent at launch"
    );
    assert_eq!(echo(&manager, "fx", "over http").await, "over http");
    assert_eq!(state(&manager, "fx"), ServerState::Connected);
    assert_eq!(starts(&log), 2);
    manager.close().await;
}
