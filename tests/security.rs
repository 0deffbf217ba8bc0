//! What keeps a user safe from the servers they run, end to end through the binary: the
//! environment a stdio server gets, and which server an allowlist entry approves.
#![cfg(feature = "cli")]

mod common;

use agenvoy_mcp::ClientOptions;
use agenvoy_mcp::host::{CallError, Config, Manager, ManagerOptions, PermissionMode};
use agenvoy_mcp::transport::stdio::is_default_env;
use common::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// A config entry that runs the fixture server with `flags`.
fn fixture_entry(flags: &[&str]) -> Value {
    let mut args = vec!["fixture-server".to_string()];
    args.extend(flags.iter().map(|f| f.to_string()));
    json!({"command": binary(), "args": args})
}

fn write_config(dir: &Path, servers: Value) -> PathBuf {
    let path = dir.join("mcp.json");
    std::fs::write(&path, json!({ "servers": servers }).to_string()).unwrap();
    path
}

/// Runs the binary with `AGENVOY_CONFIG_DIR` set to `dir`, `env` added, stdin not a terminal.
fn run(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(binary())
        .args(args)
        .env("AGENVOY_CONFIG_DIR", dir)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .expect("run the binary")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

// Item: the environment of stdio servers.

#[test]
fn stdio_servers_get_a_small_environment_unless_their_entry_inherits() {
    let dir = tempfile::tempdir().unwrap();
    let mut small = fixture_entry(&[]);
    small["env"] = json!({"FROM_ENTRY": "${AGENVOY_TEST_CANARY}"});
    let mut whole = fixture_entry(&[]);
    whole["inherit_env"] = json!(true);
    let config = write_config(dir.path(), json!({"small": small, "whole": whole}));
    let config = config.to_str().unwrap();
    let host = [
        ("AGENVOY_TEST_CANARY", "canary-7f3a"),
        ("AWS_SECRET_ACCESS_KEY", "canary-aws"),
    ];
    let call = |tool: &str, args: &str| {
        let out = run(
            dir.path(),
            &["call", "--config", config, "--yes", tool, args],
            &host,
        );
        assert!(out.status.success(), "{tool}: {out:?}");
        stdout(&out)
    };
    let check_small = |names: &str| {
        let names: Vec<&str> = names.lines().collect();
        for name in &names {
            assert!(
                is_default_env(name) || *name == "FROM_ENTRY",
                "{name} reached the server: {names:?}"
            );
        }
        assert!(names.contains(&"PATH"), "{names:?}");
        if std::env::var_os("HOME").is_some() {
            assert!(names.contains(&"HOME"), "{names:?}");
        }
        names.len()
    };

    let names = call("mcp__small__env", "{}");
    check_small(&names);
    assert!(names.lines().any(|n| n == "FROM_ENTRY"), "{names}");
    // `$VAR` in the entry's env still reads this process's environment: that is how a user
    // hands a server its secret on purpose.
    assert_eq!(
        call("mcp__small__env", r#"{"name":"FROM_ENTRY"}"#),
        "canary-7f3a\n"
    );
    assert_eq!(
        call("mcp__small__env", r#"{"name":"AWS_SECRET_ACCESS_KEY"}"#),
        "\n"
    );
    assert_eq!(
        call("mcp__whole__env", r#"{"name":"AWS_SECRET_ACCESS_KEY"}"#),
        "canary-aws\n"
    );

    // probe: the same default; --inherit-env passes everything.
    let fixture = binary();
    let probe = |flags: &[&str]| {
        let mut args = vec!["probe", "--json", "--call", "env"];
        args.extend(flags);
        args.extend(["--", &fixture, "fixture-server"]);
        let out = run(dir.path(), &args, &host);
        assert!(out.status.success(), "{out:?}");
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        report["call"]["output"].as_str().unwrap().to_string()
    };
    check_small(&probe(&[]));
    let canary = [r#"{"name":"AGENVOY_TEST_CANARY"}"#];
    assert_eq!(probe(&["--args", canary[0]]), "");
    assert_eq!(
        probe(&["--inherit-env", "--args", canary[0]]),
        "canary-7f3a"
    );
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
