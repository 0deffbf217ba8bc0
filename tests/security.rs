//! What keeps a user safe from the servers they run, end to end: which server an allowlist
//! entry approves.
#![cfg(feature = "cli")]

mod common;

use agenvoy_mcp::ClientOptions;
use agenvoy_mcp::host::{CallError, Config, Manager, ManagerOptions, PermissionMode};
use common::*;
use serde_json::{Value, json};
use std::time::Duration;

/// A config entry that runs the fixture server with `flags`.
fn fixture_entry(flags: &[&str]) -> Value {
    let mut args = vec!["fixture-server".to_string()];
    args.extend(flags.iter().map(|f| f.to_string()));
    json!({"command": binary(), "args": args})
}

// Item: allowlist entries.

#[tokio::test]
async fn an_allowlist_entry_approves_its_own_server_only() {
    agenvoy_mcp::transport::stdio::become_subreaper();
    let dir = tempfile::tempdir().unwrap();
    let allowlist = dir.path().join("allow_tool");
    std::fs::write(&allowlist, "mcp__gh__*\n").unwrap();
    let servers = json!({"gh": fixture_entry(&[]), "gh_": fixture_entry(&[]),
                         "gh__x": fixture_entry(&[])});
    let config = Config::parse(&json!({ "servers": servers }).to_string()).unwrap();
    let options = ManagerOptions {
        client: ClientOptions {
            timeout: Duration::from_secs(10),
            ..Default::default()
        },
        allowlist_path: allowlist.clone(),
        ..Default::default()
    };
    let manager = Manager::new(config, options).await;
    manager.register_all();
    let call = |name: &'static str| {
        let manager = &manager;
        async move {
            manager
                .call(name, json!({"text": "hi"}), PermissionMode::Confirm)
                .await
        }
    };
    assert_eq!(call("mcp__gh__echo").await.unwrap().text, "hi");
    for name in ["mcp__gh___echo", "mcp__gh__x__echo"] {
        match call(name).await {
            Err(CallError::Denied(d)) => assert!(d.reason.contains("allow_tool"), "{d}"),
            other => panic!("{name} ran on mcp__gh__*: {other:?}"),
        }
    }
    // Each server's own entry approves it.
    std::fs::write(&allowlist, "mcp__gh___*\nmcp__gh__x__*\n").unwrap();
    assert!(call("mcp__gh___echo").await.is_ok());
    assert!(call("mcp__gh__x__echo").await.is_ok());
    assert!(matches!(
        call("mcp__gh__echo").await,
        Err(CallError::Denied(_))
    ));
    manager.close().await;
}
