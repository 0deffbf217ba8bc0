//! Output into a pipe whose reader has gone (`agenvoy-mcp tools | head -1`): each command
//! ends quietly with status 141, as a Unix tool ended by SIGPIPE does, and closes the servers
//! it started before it exits.
#![cfg(feature = "cli")]

mod common;

use common::*;
use serde_json::json;
use std::process::{Command, ExitStatus, Stdio};
use std::time::Duration;

/// Runs the binary with `args`, its stdout a pipe whose reading end is already closed, its
/// config folder `dir`; its exit status and stderr.
fn into_closed_pipe(dir: &std::path::Path, args: &[&str]) -> (ExitStatus, String) {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let mut child = Command::new(binary())
        .args(args)
        .env("AGENVOY_CONFIG_DIR", dir)
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let reading = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap());
    let status = wait_exit(&mut child, Duration::from_secs(60)).unwrap_or_else(|| {
        let _ = child.kill();
        panic!("agenvoy-mcp {args:?} did not end");
    });
    (status, reading.join().unwrap())
}

/// Exit 141 and nothing on stderr: no panic, no "Broken pipe", no backtrace.
fn assert_quiet_end(args: &[&str], status: ExitStatus, stderr: &str) {
    assert_eq!(status.code(), Some(141), "{args:?}: {stderr}");
    assert!(
        !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
        "{args:?}: {stderr}"
    );
    assert_eq!(stderr, "", "{args:?}");
}

#[test]
fn tools_and_call_end_quietly_and_close_their_servers() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.json");
    let entry = fixture_entry(&["--page-size", "8101"]);
    std::fs::write(&config, json!({"servers": {"fx": entry}}).to_string()).unwrap();
    let config = config.to_str().unwrap();
    for args in [
        vec!["tools", "--config", config],
        vec!["tools", "--json", "--config", config],
        vec![
            "call",
            "--yes",
            "--config",
            config,
            "mcp__fx__echo",
            r#"{"text":"hi"}"#,
        ],
    ] {
        std::fs::remove_file(dir.path().join("server-eras.json")).ok();
        let (status, stderr) = into_closed_pipe(dir.path(), &args);
        assert_quiet_end(&args, status, &stderr);
        // The server was connected (its era is remembered), and is gone when the command is.
        assert!(read_in(dir.path(), "server-eras.json").contains("\"fx\""));
        assert_eq!(processes_with_arg("8101"), [] as [u32; 0], "{args:?}");
    }
}

#[test]
fn probe_ends_quietly_and_closes_its_server() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = fixture_binary();
    for json in [false, true] {
        let mut args = vec!["probe", "--call", "echo", "--args", r#"{"text":"hi"}"#];
        if json {
            args.push("--json");
        }
        args.extend(["--", &fixture, "--page-size", "8102"]);
        let (status, stderr) = into_closed_pipe(dir.path(), &args);
        assert_quiet_end(&args, status, &stderr);
        assert_eq!(processes_with_arg("8102"), [] as [u32; 0], "{args:?}");
    }
}
