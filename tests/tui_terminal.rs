//! `agenvoy-mcp tui` in a real terminal (tmux, 80x24): a server connected, opened, a tool
//! toggled, a server added through the wizard (going back a step with Backspace and
//! Shift-Tab) and deleted, then `q`: exit status 0, the terminal restored, no server left
//! running; `mcp.json` and `allow_tool` checked after each step.
//!
//! Needs tmux (`.ci/install` installs it); skipped without it unless
//! `AGENVOY_REQUIRE_INTEROP=1` (as `.ci/run` sets).
#![cfg(feature = "cli")]

mod common;

use common::tmux::{assert_ended_cleanly, start_panel};
use common::*;
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// How long a step may take.
const PATIENCE: Duration = Duration::from_secs(30);

fn config(dir: &Path) -> Value {
    serde_json::from_str(&read_in(dir, "mcp.json")).unwrap()
}

/// Waits until `check` holds, or fails saying `what`.
fn eventually(what: &str, check: impl Fn() -> bool) {
    wait_until(what, PATIENCE, || {
        if check() { Ok(()) } else { Err(String::new()) }
    });
}

#[test]
fn the_panel_in_a_real_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let fx = fixture_entry(&["--page-size", "7101"]);
    let Some(tmux) = start_panel(dir, &json!({"theme": "dark", "servers": {"fx": fx}})) else {
        return;
    };

    // The list: fx connected.
    let screen = tmux.wait_for("connected");
    assert!(screen.contains("/mcp · servers"), "{screen}");
    assert!(screen.contains("↑/↓ move  Enter open  a add  d delete  q quit"));
    let row = screen.lines().find(|l| l.contains(" fx ")).unwrap();
    assert!(row.contains("stdio") && row.contains('9'), "{row}");
    let before = read_in(dir, "mcp.json");
    assert_eq!(read_in(dir, "allow_tool"), "");

    // Open it, then its tools; Space approves the first tool, in the file at once.
    tmux.keys(&["Enter"]);
    tmux.wait_for("r reconnect");
    tmux.keys(&["t"]);
    tmux.wait_for("[ ] [v] mcp__fx__add ");
    tmux.keys(&["Space"]);
    tmux.wait_for("[x] [v] mcp__fx__add ");
    eventually("allow_tool has the tool", || {
        read_in(dir, "allow_tool") == "mcp__fx__add\n"
    });
    assert_eq!(read_in(dir, "mcp.json"), before);

    // Back to the list; add a server through the wizard.
    tmux.keys(&["Escape", "Escape"]);
    tmux.wait_for("a add");
    tmux.keys(&["a"]);
    tmux.wait_for("Name (");
    tmux.type_text("two");
    tmux.keys(&["Enter"]);
    tmux.wait_for("› Local stdio");
    tmux.keys(&["Enter"]);
    tmux.wait_for("Command (");
    tmux.type_text(&fixture_binary());
    tmux.keys(&["Enter"]);
    tmux.wait_for("Arguments (");
    // Backspace on the empty field goes back a step, the command kept; Enter comes back.
    tmux.keys(&["BSpace"]);
    let screen = tmux.wait_for("Command (");
    assert!(
        screen.contains(&format!("> {}", fixture_binary())),
        "{screen}"
    );
    tmux.keys(&["Enter"]);
    tmux.wait_for("Arguments (");
    tmux.type_text("--page-size 7102");
    tmux.keys(&["Enter"]);
    tmux.wait_for("Environment");
    tmux.type_text("TOKEN=never-drawn");
    let screen = tmux.wait_for("TOKEN=•");
    assert!(!screen.contains("never-drawn"), "{screen}");
    tmux.keys(&["Enter", "Enter"]);
    tmux.wait_for("Timeouts in seconds");
    tmux.type_text("45");
    tmux.keys(&["Enter"]);
    tmux.wait_for("Enter save and connect");
    // Shift-Tab: back to the environment (its entry kept), and on to the summary again, the
    // timeout as typed.
    tmux.keys(&["BTab"]);
    tmux.wait_for("> 45");
    tmux.keys(&["BTab"]);
    tmux.wait_for("Environment, one KEY=VALUE");
    tmux.keys(&["Enter"]);
    tmux.wait_for("> 45");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("Enter save and connect");
    assert!(screen.contains("TOKEN (values hidden)"), "{screen}");
    assert!(screen.contains("45 s a request"), "{screen}");
    assert_eq!(
        read_in(dir, "mcp.json"),
        before,
        "nothing saved before Enter"
    );
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("two connected: 9 tools");
    assert!(!screen.contains("never-drawn"));
    let saved = config(dir);
    assert_eq!(saved["theme"], "dark");
    assert_eq!(
        saved["servers"]["two"],
        json!({"command": fixture_binary(), "args": ["--page-size", "7102"], "env": {"TOKEN": "never-drawn"}, "timeout": 45})
    );
    assert_eq!(processes_with_arg("7102").len(), 1);

    // Delete it (it is selected): `d`, then `y`.
    tmux.keys(&["d"]);
    tmux.wait_for("Delete two?");
    tmux.keys(&["y"]);
    tmux.wait_for("two removed");
    assert!(config(dir)["servers"].get("two").is_none());
    assert!(config(dir)["servers"].get("fx").is_some());
    assert_eq!(read_in(dir, "allow_tool"), "mcp__fx__add\n");
    eventually("the deleted server's process is gone", || {
        processes_with_arg("7102").is_empty()
    });

    // q: exit status 0, the terminal as it was, no server left.
    tmux.keys(&["q"]);
    assert_ended_cleanly(dir, &tmux);
    eventually("fx is closed", || processes_with_arg("7101").is_empty());
}

#[test]
fn sigterm_ends_the_panel_as_q_does() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let fx = fixture_entry(&["--page-size", "7201"]);
    let Some(tmux) = start_panel(dir, &json!({"servers": {"fx": fx}})) else {
        return;
    };
    tmux.wait_for("connected");
    tmux.keys(&["Enter"]);
    tmux.wait_for("r reconnect");
    let panel = pid_with(&dir.join("mcp.json").display().to_string());
    let killed = Command::new("kill")
        .args(["-TERM", &panel.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    assert_ended_cleanly(dir, &tmux);
    eventually("fx is closed", || processes_with_arg("7201").is_empty());
}

/// The terminal going away (its tmux killed: SIGHUP, then a dead terminal) ends the panel and
/// its servers, instead of leaving it waiting on a terminal that will never answer.
#[test]
fn a_terminal_that_goes_away_ends_the_panel() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let fx = fixture_entry(&["--page-size", "7202"]);
    let Some(tmux) = start_panel(dir, &json!({"servers": {"fx": fx}})) else {
        return;
    };
    tmux.wait_for("connected");
    let panel = pid_with(&dir.join("mcp.json").display().to_string());
    tmux.run(&["kill-server"]);
    eventually("the panel ended", || {
        !processes_with_arg(&dir.join("mcp.json").display().to_string()).contains(&panel)
    });
    eventually("fx is closed", || processes_with_arg("7202").is_empty());
}
