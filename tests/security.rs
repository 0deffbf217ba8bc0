//! What keeps a user safe from the servers they run, end to end through the binary: the
//! environment a stdio server gets, what a hostile server's text can do to the terminal,
//! secrets in output, and which server an allowlist entry approves.
#![cfg(feature = "cli")]

mod common;

use agenvoy_mcp::ClientOptions;
use agenvoy_mcp::host::{CallError, Config, Manager, ManagerOptions, PermissionMode};
use agenvoy_mcp::unstable::is_default_env;
use common::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

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

const LEVELS: [&str; 5] = ["trace", "debug", "info", "warn", "error"];

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
    let fixture = fixture_binary();
    let probe = |flags: &[&str]| {
        let mut args = vec!["probe", "--json", "--call", "env"];
        args.extend(flags);
        args.extend(["--", &fixture]);
        let out = run(dir.path(), &args, &host);
        assert!(out.status.success(), "{out:?}");
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        report["call"]["text"].as_str().unwrap().to_string()
    };
    check_small(&probe(&[]));
    let canary = [r#"{"name":"AGENVOY_TEST_CANARY"}"#];
    assert_eq!(probe(&["--args", canary[0]]), "");
    assert_eq!(
        probe(&["--inherit-env", "--args", canary[0]]),
        "canary-7f3a"
    );
}

// Item: server text on the terminal.

/// The first character in `bytes` that drives a terminal (a control character other than
/// newline and tab, or a bidirectional override), if any, with some context.
fn raw_control(bytes: &[u8]) -> Option<String> {
    let chars: Vec<char> = String::from_utf8_lossy(bytes).chars().collect();
    let at = chars.iter().position(|&c| {
        (c.is_control() && c != '\n' && c != '\t') || ('\u{202a}'..='\u{202e}').contains(&c)
    })?;
    let context: String = chars[at.saturating_sub(60)..(at + 8).min(chars.len())]
        .iter()
        .collect();
    Some(format!("{context:?}"))
}

#[test]
fn a_hostile_servers_text_never_reaches_the_terminal_raw() {
    let dir = tempfile::tempdir().unwrap();
    let body = "HTTP error \x1b[2J\x1b]0;pwned\x07\r\u{9b}31mlogged in";
    let hostile_http = answering_500(body);
    let config = write_config(
        dir.path(),
        json!({"h": fixture_entry(&["--mode", "hostile"]),
               "web": {"url": hostile_http, "auth": "oauth"}}),
    );
    let config = config.to_str().unwrap();
    let fixture = fixture_binary();
    let listed = run(dir.path(), &["tools", "--json", "--config", config], &[]);
    let report: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let trap = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["tool"].as_str().unwrap().starts_with("trap"))
        .expect("the trap tool is registered")["name"]
        .as_str()
        .unwrap()
        .to_string();
    let trap_raw = format!("trap{HOSTILE}");
    let probe_stdio = |flags: &[&'static str]| {
        let mut args: Vec<String> = vec!["probe".into()];
        args.extend(flags.iter().map(|f| f.to_string()));
        args.extend([
            "--".into(),
            fixture.clone(),
            "--mode".into(),
            "hostile".into(),
        ]);
        args
    };
    let owned = |args: &[&str]| args.iter().map(|a| a.to_string()).collect::<Vec<_>>();
    let commands: Vec<Vec<String>> = vec![
        owned(&["tools", "--config", config]),
        owned(&["tools", "--json", "--config", config]),
        owned(&[
            "call",
            "--config",
            config,
            "--yes",
            "mcp__h__echo",
            r#"{"text":"hi"}"#,
        ]),
        owned(&["call", "--config", config, "--yes", "mcp__h__fail"]),
        owned(&[
            "call",
            "--config",
            config,
            "--yes",
            "mcp__h__slow",
            r#"{"seconds":0.1,"steps":2}"#,
        ]),
        owned(&["call", "--config", config, "--yes", &trap]),
        owned(&["login", "--config", config, "--no-browser", "web"]),
        owned(&["probe", &hostile_http]),
        probe_stdio(&[]),
        probe_stdio(&["--json"]),
        probe_stdio(&["--call", "echo", "--args", r#"{"text":"hi"}"#]),
        {
            let mut args = probe_stdio(&["--call"]);
            args.insert(2, trap_raw.clone());
            args
        },
    ];
    let mut seen = String::new();
    for level in ["trace", "info"] {
        for args in &commands {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let out = run(dir.path(), &args, &[("AGENVOY_LOG", level)]);
            for (stream, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
                if let Some(context) = raw_control(bytes) {
                    panic!(
                        "AGENVOY_LOG={level} {args:?}: a raw control character on {stream}: {context}"
                    );
                }
            }
            seen.push_str(&stdout(&out));
            seen.push_str(&String::from_utf8_lossy(&out.stderr));
        }
    }
    // The text is shown, escaped, not dropped: descriptions, instructions, tool output,
    // progress, errors (JSON-RPC and HTTP bodies), collisions, stderr and log lines.
    for shown in [
        "\\u{1b}[2J\\u{1b}[H\\u{1b}]0;pwned\\u{7}\\r\\u{8}\\u{9b}31m\\u{85}\\u{202e}logged in",
        "\\u001b[2J",
        "tool name collision",
        "unknown tool: trap\\u{1b}[2J",
        "HTTP 500: HTTP error \\u{1b}[2J",
        "progress: 1/2 step 1 of 2\\n\\u{1b}[2J",
        "stderr: stderr \\u{1b}[2J",
        "log: \"log \\u001b[2J",
    ] {
        assert!(seen.contains(shown), "{shown:?} was not shown:\n{seen}");
    }
}

/// The fixture's hostile text (`fixture_server::HOSTILE`; the binary's modules are not a
/// library, so it is repeated here).
const HOSTILE: &str = "\x1b[2J\x1b[H\x1b]0;pwned\x07\r\x08\u{9b}31m\u{85}\u{202e}logged in";

// Item: secrets in output.

#[test]
fn secrets_never_appear_in_output_at_any_log_level() {
    let dir = tempfile::tempdir().unwrap();
    let http = HttpFixture::start("json", &[]);
    let closed = closed_url();
    let secret_headers = json!({"X-Api-Key": "canary-header",
                                "Authorization": "Bearer ${AGENVOY_TEST_SECRET}"});
    let mut local = fixture_entry(&[]);
    local["env"] = json!({"TOKEN": "canary-env", "EXPANDED": "${AGENVOY_TEST_SECRET}"});
    let mut crash = fixture_entry(&["--mode", "crash-at-start"]);
    crash["env"] = json!({"TOKEN": "canary-env-crash"});
    let remote = format!("{}?api_key=canary-query", http.url);
    let down = format!("{closed}?api_key=canary-query-down&x=1");
    let userinfo = closed.replace("http://", "http://user:canary-password@");
    let config = write_config(
        dir.path(),
        json!({
            "local": local,
            "crash": crash,
            "remote": {"url": remote, "headers": secret_headers},
            "down": {"url": down, "headers": secret_headers},
            "userinfo": {"url": userinfo},
            "oauth": {"url": format!("{}?api_key=canary-query-oauth", http.url), "auth": "oauth",
                      "oauth_client_id": "id", "oauth_client_secret": "canary-client-secret"},
        }),
    );
    let config = config.to_str().unwrap();
    let commands: Vec<Vec<&str>> = vec![
        vec!["tools", "--config", config],
        vec!["tools", "--json", "--config", config],
        vec![
            "call",
            "--config",
            config,
            "--yes",
            "mcp__local__echo",
            r#"{"text":"hi"}"#,
        ],
        vec![
            "call",
            "--config",
            config,
            "--yes",
            "mcp__remote__echo",
            r#"{"text":"hi"}"#,
        ],
        vec!["call", "--config", config, "--yes", "mcp__down__echo"],
        vec!["call", "--config", config, "--yes", "mcp__crash__echo"],
        vec!["login", "--config", config, "--no-browser", "down"],
        vec!["probe", &remote],
        vec!["probe", "--json", &remote],
        vec!["probe", &down],
        vec!["probe", &userinfo],
    ];
    let mut seen = String::new();
    for level in LEVELS {
        for args in &commands {
            let out = run(
                dir.path(),
                args,
                &[
                    ("AGENVOY_LOG", level),
                    ("AGENVOY_TEST_SECRET", "canary-expanded"),
                ],
            );
            let text = format!("{}{}", stdout(&out), String::from_utf8_lossy(&out.stderr));
            assert!(
                !text.contains("canary"),
                "AGENVOY_LOG={level} {args:?} shows a secret:\n{text}"
            );
            seen.push_str(&text);
        }
    }
    // The servers did run, fail and get reported, so there was output to leak into.
    for shown in [
        "remote    connected",
        "local     connected",
        "down      failed",
        "needs login",
        "?api_key=***&x=***",
        "userinfo  failed",
        "user:password@ is not sent",
        "\"lastError\"",
        "protocol:     2025-11-25",
        "hi\n",
        "DEBUG",
    ] {
        assert!(seen.contains(shown), "{shown:?} missing from:\n{seen}");
    }
}

// Item: allowlist entries.

#[tokio::test]
async fn an_allowlist_entry_approves_its_own_server_only() {
    agenvoy_mcp::unstable::become_subreaper();
    let dir = tempfile::tempdir().unwrap();
    let allowlist = dir.path().join("allow_tool");
    std::fs::write(&allowlist, "mcp__gh__*\n").unwrap();
    let servers = json!({"gh": fixture_entry(&[]), "gh_": fixture_entry(&[]),
                         "gh__x": fixture_entry(&[])});
    let config = Config::parse(&json!({ "servers": servers }).to_string()).unwrap();
    let options = ManagerOptions::default()
        .with_client(ClientOptions::default().with_timeout(Duration::from_secs(10)))
        .with_allowlist_path(allowlist.clone());
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
