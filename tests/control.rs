//! `host::Control`, the operations the API and the panel share: typed errors, the
//! allowlist toggles of the panel, and the lock across processes (a daemon and a panel
//! changing the same files at once).
#![cfg(feature = "cli")]

mod common;

use agenvoy_mcp::auth::MemoryStore;
use agenvoy_mcp::host::{
    Config, Control, ControlError, Manager, ManagerOptions, ServerConfig, ToolCall,
};
use common::*;
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A manager over `config` (also written as mcp.json) with its files in `dir`.
async fn control_in(dir: &Path, config: Value) -> Control {
    agenvoy_mcp::unstable::become_subreaper();
    let path = dir.join("mcp.json");
    std::fs::write(&path, config.to_string()).unwrap();
    let options = ManagerOptions::default()
        .with_allowlist_path(dir.join("allow_tool"))
        .with_token_store(Arc::new(MemoryStore::new()));
    let manager = Manager::load(&path, options).await.unwrap();
    manager.register_all();
    Control::new(manager, path)
}

fn entry(name: &str, value: Value) -> ServerConfig {
    ServerConfig::from_value(name, &value).unwrap()
}

/// A command typed relative to the current folder is saved as an absolute path, so `tools`
/// run from another folder still finds it; a bare name is left for `PATH`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relative_command_is_saved_absolute_and_a_bare_name_as_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let control = control_in(dir.path(), json!({"servers": {}})).await;
    let here = std::env::current_dir().unwrap();
    for (name, typed, saved) in [
        ("dotted", "./bin/server.sh", here.join("bin/server.sh")),
        ("nested", "bin/server", here.join("bin/server")),
        ("bare", "npx", "npx".into()),
        ("absolute", "/usr/bin/env", "/usr/bin/env".into()),
    ] {
        let adding = entry(name, json!({"command": typed}));
        control.begin_add_server(name, adding).await.unwrap();
        let written: Value = serde_json::from_str(&read_in(dir.path(), "mcp.json")).unwrap();
        assert_eq!(
            written["servers"][name]["command"],
            json!(saved.display().to_string()),
            "{typed}"
        );
    }
    control.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_say_their_kind_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let control = control_in(dir.path(), json!({"servers": {"fx": fixture_entry(&[])}})).await;
    let before = read_in(dir.path(), "mcp.json");
    let remote = entry("x", json!({"url": "http://127.0.0.1:9/mcp"}));
    let taken = control.add_server("fx", remote.clone()).await.unwrap_err();
    assert!(
        matches!(&taken, ControlError::Conflict(m) if m.contains("already")),
        "{taken:?}"
    );
    let bad = control.add_server("a b", remote).await.unwrap_err();
    assert!(matches!(bad, ControlError::Invalid(_)), "{bad:?}");
    let missing = control.remove_server("nope").await.unwrap_err();
    assert!(matches!(missing, ControlError::NotFound(_)), "{missing:?}");
    let prefix = control.set_allowed("bash", &[]).await.unwrap_err();
    assert!(matches!(prefix, ControlError::Invalid(_)), "{prefix:?}");
    let entries = control
        .set_allowed("mcp__fx__", &["bash".into()])
        .await
        .unwrap_err();
    assert!(matches!(entries, ControlError::Invalid(_)), "{entries:?}");
    let unknown = control.toggle_tool("mcp__fx__nothing").await.unwrap_err();
    assert!(matches!(unknown, ControlError::NotFound(_)), "{unknown:?}");
    let plain = control.logout("fx").await.unwrap_err();
    assert!(
        matches!(&plain, ControlError::Invalid(m) if m.contains("not an OAuth server")),
        "{plain:?}"
    );
    assert_eq!(read_in(dir.path(), "mcp.json"), before);
    assert_eq!(read_in(dir.path(), "allow_tool"), "");
    control.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_panel_toggles_rewrite_only_that_servers_entries() {
    let dir = tempfile::tempdir().unwrap();
    let control = control_in(dir.path(), json!({"servers": {"fx": fixture_entry(&[])}})).await;
    std::fs::write(
        dir.path().join("allow_tool"),
        "# mine\nbash\nmcp__other__*\n",
    )
    .unwrap();
    let list = control.toggle_tool("mcp__fx__echo").await.unwrap();
    assert!(list.allows("mcp__fx__echo", Some("fx")) && !list.allows("mcp__fx__add", Some("fx")));
    assert_eq!(
        read_in(dir.path(), "allow_tool"),
        "# mine\nbash\nmcp__other__*\nmcp__fx__echo\n"
    );
    // The whole server: its entries replaced by the wildcard, then none.
    control.toggle_server("fx").await.unwrap();
    assert_eq!(
        read_in(dir.path(), "allow_tool"),
        "# mine\nbash\nmcp__other__*\nmcp__fx__*\n"
    );
    // One tool off under the wildcard: every other tool of the server stays approved.
    let list = control.toggle_tool("mcp__fx__echo").await.unwrap();
    assert!(!list.allows("mcp__fx__echo", Some("fx")));
    let tools: Vec<String> = control
        .registry()
        .server_tools("fx")
        .into_iter()
        .map(|t| t.definition.name.clone())
        .collect();
    assert_eq!(tools.len(), 9);
    for tool in tools.iter().filter(|t| *t != "mcp__fx__echo") {
        assert!(list.allows(tool, Some("fx")), "{tool}");
    }
    assert!(!read_in(dir.path(), "allow_tool").contains("mcp__fx__*"));
    control.toggle_server("fx").await.unwrap();
    control.toggle_server("fx").await.unwrap();
    assert_eq!(
        read_in(dir.path(), "allow_tool"),
        "# mine\nbash\nmcp__other__*\n"
    );
    // An entry of several servers approves none of them, and is left as it is.
    std::fs::write(dir.path().join("allow_tool"), "mcp__*\n").unwrap();
    let list = control.toggle_tool("mcp__fx__add").await.unwrap();
    assert!(list.allows("mcp__fx__add", Some("fx")));
    assert_eq!(read_in(dir.path(), "allow_tool"), "mcp__*\nmcp__fx__add\n");
    control.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_waits_for_another_process_holding_the_lock() {
    let dir = tempfile::tempdir().unwrap();
    let control = control_in(dir.path(), json!({"servers": {}})).await;
    for (lock, change) in [("mcp.lock", "config"), ("allow_tool.lock", "allowlist")] {
        // Another process (flock(1)) holds the lock for a second.
        let mut holder = Command::new("flock")
            .arg(dir.path().join(lock))
            .args(["-c", "echo held; sleep 1"])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("flock(1) from util-linux");
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(holder.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        assert_eq!(line, "held\n");
        let started = Instant::now();
        match change {
            "config" => {
                let remote = entry("r", json!({"url": "http://127.0.0.1:9/mcp"}));
                control.begin_add_server("r", remote).await.unwrap();
            }
            _ => {
                control
                    .set_allowed("mcp__r__", &["mcp__r__*".into()])
                    .await
                    .unwrap();
            }
        }
        let waited = started.elapsed();
        assert!(
            waited >= Duration::from_millis(700),
            "{change}: saved after {waited:?}, while another process held the lock"
        );
        holder.wait().unwrap();
    }
    assert!(read_in(dir.path(), "mcp.json").contains("\"r\""));
    assert_eq!(read_in(dir.path(), "allow_tool"), "mcp__r__*\n");
    control.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_and_a_panel_at_once_lose_no_change() {
    let dir = tempfile::tempdir().unwrap();
    let control = control_in(dir.path(), json!({"theme": "dark", "servers": {}})).await;
    let mut daemon = Command::new(binary());
    daemon
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(dir.path().join("mcp.json"))
        .arg("--token-file")
        .arg(dir.path().join("oauth-tokens.json"))
        .env("AGENVOY_CONFIG_DIR", dir.path());
    let daemon = Listening::start(daemon);
    let authority = daemon.url.trim_start_matches("http://").to_string();
    let token = read_in(dir.path(), "api-token");
    let post = move |path: &str, body: Value| {
        use std::io::{Read, Write};
        let body = body.to_string();
        let mut stream = std::net::TcpStream::connect(&authority).unwrap();
        write!(
            stream,
            "POST {path} HTTP/1.1\r\nHost: {authority}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        answer
    };
    let remote = json!({"url": "http://127.0.0.1:9/mcp"});
    let mut threads = Vec::new();
    for i in 0..6 {
        let add = post.clone();
        let body = json!({"name": format!("d{i}"), "url": "http://127.0.0.1:9/mcp"});
        threads.push(std::thread::spawn(move || add("/v1/mcp", body)));
        let post = post.clone();
        let prefix = format!("mcp__d{i}__");
        let body = json!({"tool": {"prefix": prefix, "entries": [format!("{prefix}*")]}});
        threads.push(std::thread::spawn(move || post("/v1/allowlist", body)));
    }
    let mut here = tokio::task::JoinSet::new();
    for i in 0..6 {
        let control = control.clone();
        let remote = entry(&format!("p{i}"), remote.clone());
        here.spawn(async move {
            control
                .begin_add_server(&format!("p{i}"), remote)
                .await
                .unwrap();
            control.toggle_server(&format!("p{i}")).await.unwrap();
        });
    }
    while let Some(done) = here.join_next().await {
        done.unwrap();
    }
    for t in threads {
        let answer = t.join().unwrap();
        assert!(
            answer.starts_with("HTTP/1.1 200") || answer.starts_with("HTTP/1.1 201"),
            "{answer}"
        );
    }
    let config = Config::load(&dir.path().join("mcp.json")).unwrap();
    let names = config.server_names();
    assert_eq!(names.len(), 12, "{names:?}");
    assert!(read_in(dir.path(), "mcp.json").contains("\"theme\": \"dark\""));
    let allowlist = read_in(dir.path(), "allow_tool");
    for i in 0..6 {
        for side in ["d", "p"] {
            assert!(
                allowlist.contains(&format!("mcp__{side}{i}__*\n")),
                "{allowlist}"
            );
        }
    }
    control.close().await;
}

/// The names of the registered tools of `server`, sorted.
fn registered(control: &Control, server: &str) -> Vec<String> {
    control
        .registry()
        .server_tools(server)
        .into_iter()
        .map(|t| t.tool.clone())
        .collect()
}

/// Filters: the file's lists hide tools from the registry (and from calls); per-tool and
/// per-server changes rewrite only that server's lists; bad input writes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_filters_hide_tools_and_rewrite_only_that_entry() {
    use agenvoy_mcp::host::{CallError, PermissionMode, ToolFilter};
    let dir = tempfile::tempdir().unwrap();
    let mut fx = fixture_entry(&[]);
    fx["enabled_tools"] = json!(["e*", "add*", "fail"]);
    fx["disabled_tools"] = json!(["env"]);
    fx["x-mine"] = json!({"kept": true});
    let control = control_in(
        dir.path(),
        json!({"servers": {"fx": fx, "other": fixture_entry(&[])}, "x-top": 1}),
    )
    .await;
    assert_eq!(
        registered(&control, "fx"),
        ["add", "add_tool", "echo", "fail"]
    );
    assert_eq!(registered(&control, "other").len(), 9);
    let status = control.status();
    assert_eq!((status[0].tool_count, status[0].hidden_tools), (9, 5));
    // A hidden tool cannot be called, whatever the mode.
    let hidden = control
        .call(ToolCall::new("mcp__fx__env", json!({})).with_mode(PermissionMode::Auto))
        .await
        .unwrap_err();
    assert!(matches!(hidden, CallError::UnknownTool(_)), "{hidden:?}");

    // One tool hidden, then shown: its exact name, the rest untouched.
    let filter = control
        .set_tool_visible("fx", Some("echo"), false)
        .await
        .unwrap();
    assert_eq!(
        filter.enabled_tools.as_deref(),
        Some(&["e*".to_string(), "add*".into(), "fail".into()][..])
    );
    assert_eq!(filter.disabled_tools, ["env", "echo"]);
    assert_eq!(registered(&control, "fx"), ["add", "add_tool", "fail"]);
    control
        .set_tool_visible("fx", Some("mcp__fx__echo"), true)
        .await
        .unwrap();
    assert_eq!(
        registered(&control, "fx"),
        ["add", "add_tool", "echo", "fail"]
    );
    // The whole server hidden and shown.
    control
        .set_tool_visible("other", None, false)
        .await
        .unwrap();
    assert!(registered(&control, "other").is_empty());
    let written: Value = serde_json::from_str(&read_in(dir.path(), "mcp.json")).unwrap();
    assert_eq!(written["servers"]["other"]["enabled_tools"], json!([]));
    control.set_tool_visible("other", None, true).await.unwrap();
    assert_eq!(registered(&control, "other").len(), 9);

    // Bad input: a clear error of its kind, nothing written.
    let before = read_in(dir.path(), "mcp.json");
    let cases = [
        ("nope", vec![], vec!["x"], "no server named"),
        ("fx", vec![], vec!["mcp__other__echo"], "reaches beyond"),
        ("fx", vec!["echo"], vec!["e*"], "hides every tool it names"),
        ("fx", vec![], vec!["a*b"], "trailing"),
    ];
    for (server, enabled, disabled, want) in cases {
        let filter = ToolFilter::default()
            .with_enabled_tools(enabled)
            .with_disabled_tools(disabled);
        let e = control.set_tool_filter(server, filter).await.unwrap_err();
        assert!(e.to_string().contains(want), "{e}");
        assert!(
            matches!(e, ControlError::Invalid(_) | ControlError::NotFound(_)),
            "{e:?}"
        );
    }
    let unknown = control.set_tool_visible("nope", Some("x"), false).await;
    assert!(
        matches!(unknown, Err(ControlError::NotFound(_))),
        "{unknown:?}"
    );
    assert_eq!(read_in(dir.path(), "mcp.json"), before);

    // Unknown members, at the top and in the entry, survive every write.
    let written: Value = serde_json::from_str(&read_in(dir.path(), "mcp.json")).unwrap();
    assert_eq!(written["x-top"], json!(1));
    assert_eq!(written["servers"]["fx"]["x-mine"], json!({"kept": true}));
    assert!(written["servers"]["other"].get("enabled_tools").is_none());
    control.close().await;
}

/// `"enabled": false` keeps a server in the file, unstarted and unregistered; enabling it
/// connects and registers it, disabling closes it again; only `"enabled"` changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disabled_server_stays_in_the_file_unstarted() {
    use agenvoy_mcp::host::ServerState;
    let dir = tempfile::tempdir().unwrap();
    let mut fx = fixture_entry(&[]);
    fx["enabled"] = json!(false);
    let control = control_in(dir.path(), json!({"servers": {"fx": fx}})).await;
    let state = |c: &Control| c.status()[0].state;
    assert_eq!(state(&control), ServerState::Disabled);
    assert!(control.client("fx").is_none());
    assert!(registered(&control, "fx").is_empty());
    let refused = control.reconnect_server("fx").await.unwrap_err();
    assert!(refused.to_string().contains("disabled"), "{refused}");

    control.set_enabled("fx", true).await.unwrap();
    assert_eq!(state(&control), ServerState::Connected);
    assert_eq!(registered(&control, "fx").len(), 9);
    let written: Value = serde_json::from_str(&read_in(dir.path(), "mcp.json")).unwrap();
    assert!(written["servers"]["fx"].get("enabled").is_none());

    control.set_enabled("fx", false).await.unwrap();
    assert_eq!(state(&control), ServerState::Disabled);
    assert!(registered(&control, "fx").is_empty());
    let written: Value = serde_json::from_str(&read_in(dir.path(), "mcp.json")).unwrap();
    assert_eq!(written["servers"]["fx"]["enabled"], json!(false));
    assert_eq!(
        written["servers"]["fx"]["command"],
        fixture_entry(&[])["command"]
    );
    let missing = control.set_enabled("nope", true).await.unwrap_err();
    assert!(matches!(missing, ControlError::NotFound(_)), "{missing:?}");
    control.close().await;
}

/// Past the budget the model is offered the search tool and what it found; every visible
/// tool stays callable by name, found or not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_search_offers_the_search_tool_and_what_was_found() {
    use agenvoy_mcp::host::{
        Conversation, LIST_RESOURCES_TOOL, PermissionMode, READ_RESOURCE_TOOL, SEARCH_TOOL,
    };
    let dir = tempfile::tempdir().unwrap();
    let config =
        json!({"servers": {"fx": fixture_entry(&[])}, "tool_search": {"above_tokens": 10}});
    let control = control_in(dir.path(), config).await;
    assert!(control.tool_search_active());
    let conversation = Arc::new(Conversation::new());
    let names = |c: &Conversation| -> Vec<String> {
        control
            .offered_tools(c)
            .into_iter()
            .map(|d| d.name)
            .collect()
    };
    // The host's own tools: the search, and (the fixture has resources) the two for resources.
    let host_tools = [SEARCH_TOOL, LIST_RESOURCES_TOOL, READ_RESOURCE_TOOL];
    assert_eq!(names(&conversation), host_tools);
    let query = json!({"query": "echo text back", "limit": 2});
    let in_conversation = |name: &str, arguments: Value| {
        ToolCall::new(name, arguments)
            .with_mode(PermissionMode::Auto)
            .with_conversation(conversation.clone())
    };
    let out = control
        .call(in_conversation(SEARCH_TOOL, query))
        .await
        .unwrap()
        .output;
    let found: Value = serde_json::from_str(&out.text).unwrap();
    assert_eq!(found["tools"][0]["name"], json!("mcp__fx__echo"), "{found}");
    assert!(found["tools"][0]["score"].as_f64().is_some(), "{found}");
    assert_eq!(found["tools"][0]["weak"], json!(false), "{found}");
    assert_eq!(names(&conversation)[3..4], ["mcp__fx__echo"]);
    let add = control
        .call(in_conversation("mcp__fx__add", json!({"a": 1, "b": 2})))
        .await
        .unwrap()
        .output;
    assert!(add.text.contains('3'), "{}", add.text);
    let hits = control.search_tools("add two numbers", 5);
    assert_eq!(hits[0].definition.name, "mcp__fx__add");
    control.close().await;
}

/// The rules of a tool call live in the host: the API (`POST /v1/mcp/call`), the panel and
/// the `call` command all make their calls through `Control::call`, so this one test holds
/// the rules for the three: a bound on calls in flight to one server, a caller's id taken
/// once and cancelled by it, progress published with that id, and a model API's call
/// answered with that API's result item.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_front_ends_call_follows_the_hosts_rules() {
    use agenvoy_mcp::host::model_api::ModelApi;
    use agenvoy_mcp::host::{CallError, Event, PermissionMode};
    let dir = tempfile::tempdir().unwrap();
    let config = json!({"servers": {"fx": fixture_entry(&[])}});
    let control = control_in(dir.path(), config).await;
    control.set_max_calls_per_server(2);
    let mut events = control.events();
    let slow = |id: &str| {
        let call = ToolCall::new("mcp__fx__slow", json!({"seconds": 30, "steps": 30}));
        let control = control.clone();
        let call = call.with_mode(PermissionMode::Auto).with_id(id);
        tokio::spawn(async move { control.call(call).await })
    };
    let first = slow("a");
    // Its progress comes as events, with the caller's id.
    let progress = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            if let Ok(Event::Progress { id, tool, .. }) = events.recv().await {
                return (id, tool);
            }
        }
    })
    .await
    .expect("a progress event");
    assert_eq!(progress, (Some("a".into()), "mcp__fx__slow".into()));
    // An id is one call's at a time.
    let taken = slow("a").await.unwrap().unwrap_err();
    assert!(
        matches!(&taken, CallError::IdInUse(id) if id == "a"),
        "{taken:?}"
    );
    // Two in flight to fx, the most: a third is refused at once, naming the server.
    let second = slow("b");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let echo = ToolCall::new("mcp__fx__echo", json!({"text": "hi"}));
    let busy = control
        .call(echo.clone().with_mode(PermissionMode::Auto))
        .await
        .unwrap_err();
    assert!(
        matches!(&busy, CallError::Busy { server, most: 2 } if server == "fx"),
        "{busy:?}"
    );
    assert!(
        busy.to_string().contains("\"fx\" has 2 calls in flight"),
        "{busy}"
    );
    // Cancelled by its id: the call ends at once, and its place is given back.
    assert!(control.cancel_call("a"));
    assert!(control.cancel_call("b"));
    assert!(!control.cancel_call("nobody"));
    for call in [first, second] {
        let cancelled = call.await.unwrap().unwrap_err();
        assert!(
            matches!(cancelled, CallError::Cancelled(_)),
            "{cancelled:?}"
        );
    }
    let echoed = control
        .call(echo.with_mode(PermissionMode::Auto))
        .await
        .unwrap();
    assert_eq!(echoed.output.text, "hi");
    assert!(echoed.item.is_none());
    // A model's call comes back as its API's result item; arguments that cannot fit the
    // schema are the model's to mend, never sent.
    let add = ToolCall::from_model(
        ModelApi::OpenAi,
        "call_1",
        "mcp__fx__add",
        json!({"a": 1, "b": 2}),
    );
    let added = control
        .call(add.with_mode(PermissionMode::Auto))
        .await
        .unwrap();
    assert_eq!(
        added.item,
        Some(json!({"role": "tool", "tool_call_id": "call_1", "content": added.output.text}))
    );
    assert!(added.output.text.contains('3'), "{}", added.output.text);
    let unfit = ToolCall::from_model(ModelApi::OpenAi, "call_2", "mcp__fx__add", json!([1, 2]));
    let unfit = control
        .call(unfit.with_mode(PermissionMode::Auto))
        .await
        .unwrap();
    assert!(unfit.output.is_error, "{:?}", unfit.output);
    assert_eq!(unfit.item.unwrap()["tool_call_id"], "call_2");
    control.close().await;
}
