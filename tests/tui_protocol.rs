//! What servers offer and ask, through `agenvoy-mcp tui` in a real terminal (tmux, 80x24):
//! resources and templates listed and read (`R`), prompts filled in with the server's
//! completions (`P`), tools called from the panel, and the servers' elicitation forms, URL
//! requests and sampling requests answered over the screen. Against the fixture server in
//! both eras, server-everything, and the Python SDK 2.x server in both eras.
//!
//! Needs tmux; the real servers come from `.ci/install`. Each is skipped without it unless
//! `AGENVOY_REQUIRE_INTEROP=1` (as `.ci/run` sets).
#![cfg(feature = "cli")]

mod common;

use common::tmux::{Tmux, assert_ended_cleanly, start_panel};
use common::*;
use serde_json::json;
use std::path::Path;
use std::time::Duration;

/// Waits until the screen shows `needle` `times` times or more (one per server row).
fn wait_for_count(tmux: &Tmux, needle: &str, times: usize) {
    let what = format!("{times} × {needle:?} on the screen");
    wait_until(&what, Duration::from_secs(30), || {
        let screen = tmux.screen();
        if screen.matches(needle).count() >= times {
            Ok(())
        } else {
            Err(screen)
        }
    });
}

/// Waits until the screen fits `check` (saying `what`); the screen then.
fn shows(tmux: &Tmux, what: &str, check: impl Fn(&str) -> bool) -> String {
    wait_until(what, Duration::from_secs(30), || {
        let screen = tmux.screen();
        if check(&screen) {
            Ok(screen)
        } else {
            Err(screen)
        }
    })
}

/// Opens the server `name` from the list (its row selected) and checks its era.
fn open_server(tmux: &Tmux, name: &str, era: &str) {
    tmux.select(&format!(" {name} "));
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("R resources");
    let protocol = screen.lines().find(|l| l.contains("protocol     "));
    assert!(
        protocol.is_some_and(|l| l.contains(&format!("({era})"))),
        "{screen}"
    );
}

/// Calls the tool `tool` of the open server's tools screen with `arguments` (JSON).
fn call(tmux: &Tmux, tool: &str, arguments: &str) {
    tmux.select(tool);
    tmux.keys(&["Enter"]);
    tmux.wait_for("Its arguments, a JSON object (empty: {}):");
    tmux.keys(&["C-u"]);
    tmux.type_text(arguments);
    tmux.keys(&["Enter"]);
}

/// Esc, then waits for the screen it goes back to (showing `then`).
fn back(tmux: &Tmux, then: &str) {
    tmux.keys(&["Escape"]);
    tmux.wait_for(then);
}

/// Waits until the field with the focus (`› label`) holds `value`.
fn focused(tmux: &Tmux, label: &str, value: &str) {
    let what = format!("the field {label} holding {value:?}");
    let mark = format!("› {label}");
    wait_until(&what, Duration::from_secs(30), || {
        let screen = tmux.screen();
        let line = screen.lines().find(|l| l.contains(&mark));
        match line {
            Some(line)
                if line.ends_with(&format!("{value} │"))
                    || line.contains(&format!(" {value} ")) =>
            {
                Ok(())
            }
            _ => Err(screen),
        }
    });
}

const ELICIT: &str = r#"{"method": "elicitation/create", "params": {"message": "Pick \u001b[2J a color", "requestedSchema": {"type": "object", "properties": {"color": {"type": "string", "enum": ["red", "green"]}, "n": {"type": "integer", "title": "How many"}}, "required": ["color"]}}}"#;

const LOOK_ALIKE: &str = r#"{"method": "elicitation/create", "params": {"mode": "url", "message": "Log in", "url": "https://\u0430pple.com/login"}}"#;

const BACKSLASH: &str = r#"{"method": "elicitation/create", "params": {"mode": "url", "message": "Log in", "url": "https://evil.example\\@good.example/login"}}"#;

const SAMPLE: &str = r#"{"method": "sampling/createMessage", "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "Say hi"}}], "maxTokens": 5}}"#;

/// The fixture's resources, template, prompts and completions on one server, then an
/// elicitation form and a sampling request its `client_request` tool sends.
fn fixture_server_in_the_panel(tmux: &Tmux, name: &str, era: &str) {
    open_server(tmux, name, era);
    let screen = tmux.screen();
    assert!(
        screen.contains("2 resources, 1 templates, 2 prompts"),
        "{screen}"
    );

    // R: the readme, the logo as a model sees a blob, the template with a completion.
    tmux.keys(&["R"]);
    tmux.wait_for("2 resources, 1 templates.");
    tmux.keys(&["Enter"]);
    tmux.wait_for("The agenvoy fixture server's readme.");
    back(tmux, "fixture://logo");
    tmux.select("fixture://logo");
    tmux.keys(&["Enter"]);
    tmux.wait_for("[blob image/png, 8 bytes]");
    back(tmux, "fixture://big/{bytes}");
    tmux.select("fixture://big/{bytes}");
    tmux.keys(&["Enter"]);
    tmux.wait_for("The variables of fixture://big/{bytes}:");
    tmux.type_text("10");
    shows(tmux, "the values that start with 10", |s| {
        s.contains("    1024") && s.contains("    1048576") && !s.contains("2097152")
    });
    tmux.keys(&["Down", "Enter"]);
    focused(tmux, "bytes*", "1024");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for(&"a".repeat(70));
    assert!(screen.contains("fixture://big/1024"), "{screen}");
    back(tmux, "fixture://readme");
    back(tmux, "R resources");

    // P: greet, its name completed with the style as context.
    tmux.keys(&["P"]);
    tmux.wait_for("name*, style");
    tmux.keys(&["Enter"]);
    tmux.wait_for("› name*");
    tmux.type_text("A");
    shows(tmux, "the names that start with A", |s| {
        s.contains("    Ada") && s.contains("    Alan") && !s.contains("Grace")
    });
    tmux.keys(&["Tab"]);
    tmux.wait_for("› style");
    tmux.type_text("fo");
    tmux.wait_for("formal");
    tmux.keys(&["Down", "Enter"]);
    focused(tmux, "style", "formal");
    tmux.keys(&["BTab"]);
    tmux.wait_for("Dr. Ada");
    tmux.keys(&["Down", "Enter"]);
    focused(tmux, "name*", "Dr. Ada");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("Greet Dr. Ada in a formal way.");
    assert!(screen.contains("[image image/png, 3 bytes]"), "{screen}");
    back(tmux, "name*, style");
    back(tmux, "R resources");

    // A form the server asks for while the panel calls its tool: the server's text escaped,
    // the required choice and the integer checked before it is sent.
    tmux.keys(&["t"]);
    tmux.wait_for("mcp__");
    call(tmux, "client_request", ELICIT);
    let screen = tmux.wait_for(&format!("{name} asks"));
    assert!(screen.contains("Pick \\u{1b}[2J a color"), "{screen}");
    tmux.keys(&["Enter"]);
    tmux.wait_for("color: required");
    tmux.keys(&["Right", "Tab"]);
    tmux.wait_for("› How many");
    tmux.type_text("x");
    tmux.keys(&["Enter"]);
    tmux.wait_for("How many: give a whole number");
    tmux.keys(&["BSpace"]);
    tmux.type_text("7");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("\"color\":\"red\"");
    assert!(screen.contains("\"n\":7"), "{screen}");
    assert!(
        screen.contains(&format!("answered {name}'s request")),
        "{screen}"
    );
    back(tmux, "Enter call");

    // Sampling: shown, then declined.
    call(tmux, "client_request", SAMPLE);
    let screen = tmux.wait_for("It asks for a message from your model");
    assert!(screen.contains("Say hi") && screen.contains("at most 5 tokens"));
    tmux.keys(&["Enter"]);
    tmux.wait_for("declined");
    back(tmux, "Enter call");

    // A URL: shown with the origin a browser loads, a look-alike host in its `xn--` form;
    // one a browser reads as another site than it seems (a backslash) is refused to the
    // server and shown to no one.
    call(tmux, "client_request", LOOK_ALIKE);
    tmux.wait_for("It asks you to open https://xn--pple-43d.com");
    tmux.keys(&["Escape"]);
    tmux.wait_for("decline");
    back(tmux, "Enter call");
    call(tmux, "client_request", BACKSLASH);
    let screen = tmux.wait_for("backslash");
    assert!(!screen.contains("It asks you to open"), "{screen}");
    back(tmux, "Enter call");
    back(tmux, "R resources");
    back(tmux, "a add");
}

#[test]
fn the_fixture_in_both_eras() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let servers = json!({"servers": {
        "fx": fixture_entry(&["--page-size", "7301"]),
        "fm": fixture_entry(&["--page-size", "7302", "--mode", "modern"]),
    }});
    let Some(tmux) = start_panel(dir, &servers) else {
        return;
    };
    wait_for_count(&tmux, "connected", 2);
    fixture_server_in_the_panel(&tmux, "fm", "stateless");
    fixture_server_in_the_panel(&tmux, "fx", "handshake");
    tmux.keys(&["q"]);
    assert_ended_cleanly(dir, &tmux);
}

#[test]
fn server_everything() {
    let Some(everything) = installed("node_modules/.bin/mcp-server-everything") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let servers = json!({"servers": {"everything": {"command": everything, "args": ["stdio"]}}});
    let Some(tmux) = start_panel(dir, &servers) else {
        return;
    };
    tmux.wait_for("connected");
    open_server(&tmux, "everything", "handshake");

    // A resource, and a template's resource.
    tmux.keys(&["R"]);
    tmux.wait_for("architecture.md");
    tmux.keys(&["Enter"]);
    tmux.wait_for("# Everything Server");
    back(&tmux, "architecture.md");
    tmux.select("demo://resource/dynamic/text/");
    tmux.keys(&["Enter"]);
    tmux.wait_for("› resourceId*");
    tmux.type_text("1");
    tmux.keys(&["Enter"]);
    tmux.wait_for("Resource 1: This is a plaintext resource");
    back(&tmux, "architecture.md");
    back(&tmux, "R resources");

    // A prompt whose second argument's values depend on the first.
    tmux.keys(&["P"]);
    tmux.wait_for("completable-prompt");
    tmux.select("completable-prompt");
    tmux.keys(&["Enter"]);
    tmux.wait_for("› department*");
    tmux.type_text("E");
    tmux.wait_for("Engineering");
    tmux.keys(&["Down", "Enter", "Tab"]);
    tmux.wait_for("Alice");
    tmux.keys(&["Down", "Enter"]);
    focused(&tmux, "name*", "Alice");
    tmux.keys(&["Enter"]);
    tmux.wait_for("Please promote Alice to the head of the Engineering team.");
    back(&tmux, "completable-prompt");
    back(&tmux, "R resources");

    // Its elicitation form: the fields come in name order, from birthdate; a bad email is
    // refused and the focus goes to it.
    tmux.keys(&["t"]);
    tmux.wait_for("mcp__everything__echo");
    call(&tmux, "trigger-elicitation-request", "{}");
    let screen = tmux.wait_for("everything asks");
    for shown in [
        "Please provide inputs for the following fields:",
        "It was a dark and stormy night.",
        "‹ Superman ›",
        "[x] Guitar [ ] Piano",
    ] {
        assert!(screen.contains(shown), "{shown}: {screen}");
    }
    tmux.keys(&["Tab", "Tab"]);
    tmux.wait_for("› String with email format");
    tmux.type_text("nope");
    tmux.keys(&["Tab", "Tab", "Tab", "Tab", "Tab"]);
    tmux.wait_for("› String*");
    tmux.type_text("Ada Lovelace");
    tmux.keys(&["Enter"]);
    tmux.wait_for("String with email format: must be an email address");
    tmux.wait_for("› String with email format");
    tmux.keys(&["C-u"]);
    tmux.type_text("ada@example.com");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("User provided the requested information!");
    assert!(screen.contains("- Name: Ada Lovelace"), "{screen}");
    assert!(screen.contains("- Email: ada@example.com"), "{screen}");

    // Esc declines.
    back(&tmux, "Enter call");
    call(&tmux, "trigger-elicitation-request", "{}");
    tmux.wait_for("everything asks");
    tmux.keys(&["Escape"]);
    tmux.wait_for("User declined to provide the requested information.");

    // A URL: shown with its origin, accepted with `y` (no browser in this test).
    back(&tmux, "Enter call");
    call(
        &tmux,
        "trigger-url-elicitation",
        r#"{"url": "https://pay.example.com/checkout?session=1", "message": "Pay here"}"#,
    );
    let screen = tmux.wait_for("It asks you to open https://pay.example.com");
    assert!(screen.contains("https://pay.example.com/checkout?session=1"));
    tmux.keys(&["y"]);
    let screen = tmux.wait_for("User completed the URL elicitation flow.");
    assert!(
        screen.contains("open it yourself: https://pay.example.com/checkout?session=1"),
        "{screen}"
    );

    // Sampling: reviewed and declined.
    back(&tmux, "Enter call");
    call(
        &tmux,
        "trigger-sampling-request",
        r#"{"prompt": "a haiku", "maxTokens": 20}"#,
    );
    let screen = tmux.wait_for("It asks for a message from your model");
    assert!(screen.contains("context: a haiku"), "{screen}");
    assert!(screen.contains("system: You are a helpful test server."));
    tmux.keys(&["Enter"]);
    tmux.wait_for("the user declined the sampling request");
    back(&tmux, "Enter call");
    back(&tmux, "R resources");
    back(&tmux, "a add");
    tmux.keys(&["q"]);
    assert_ended_cleanly(dir, &tmux);
}

/// The Python server on one row: its resources, template, prompt with completions, and its
/// `greet` tool's question (a standalone request in the initialize era, an input request
/// of the tool's result in 2026-07-28).
fn python_server_in_the_panel(tmux: &Tmux, name: &str, era: &str) {
    open_server(tmux, name, era);
    tmux.keys(&["R"]);
    tmux.wait_for("note://readme");
    tmux.keys(&["Enter"]);
    tmux.wait_for("A note from Python.");
    back(tmux, "note://topics/{topic}");
    tmux.select("note://topics/{topic}");
    tmux.keys(&["Enter"]);
    tmux.wait_for("› topic*");
    tmux.type_text("m");
    tmux.wait_for("    mcp");
    tmux.keys(&["Down", "Enter", "Enter"]);
    tmux.wait_for("A note on mcp.");
    back(tmux, "note://readme");
    back(tmux, "R resources");

    tmux.keys(&["P"]);
    tmux.wait_for("code*, language");
    tmux.keys(&["Enter"]);
    tmux.wait_for("› code*");
    tmux.type_text("main.rs");
    tmux.keys(&["Tab"]);
    tmux.type_text("r");
    // With the code's `.rs` as context, rust comes first.
    let screen = tmux.wait_for("    rust");
    let rust = screen.find("    rust").unwrap();
    assert!(
        screen.find("    ruby").is_some_and(|ruby| rust < ruby),
        "{screen}"
    );
    tmux.keys(&["Down", "Enter", "Enter"]);
    tmux.wait_for("Review this rust code: main.rs");
    back(tmux, "code*, language");
    back(tmux, "R resources");

    tmux.keys(&["t"]);
    call(tmux, "greet", "{}");
    let screen = tmux.wait_for(&format!("{name} asks"));
    assert!(screen.contains("What is your name?"), "{screen}");
    tmux.type_text("Ada");
    tmux.keys(&["Enter"]);
    tmux.wait_for("Hello, Ada!");
    back(tmux, "Enter call");
    back(tmux, "R resources");
    back(tmux, "a add");
}

#[test]
fn the_python_sdk_server_in_both_eras() {
    let Some(python) = installed("venv/bin/python") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/python/modern_server.py");
    // `old` starts as the fixture (of the initialize era only), which the config folder's
    // era memory then remembers for the entry; run as the Python server, the same entry
    // starts with `initialize`, and the dual-era server answers in that era.
    let launcher = dir.join("old.sh");
    std::fs::write(&launcher, format!("exec '{}'", fixture_binary())).unwrap();
    let servers = json!({"servers": {
        "py": {"command": python, "args": [script, "stdio"]},
        "old": {"command": "sh", "args": [launcher]},
    }});
    std::fs::write(dir.join("mcp.json"), servers.to_string()).unwrap();
    let listed = std::process::Command::new(binary())
        .args(["tools", "--config"])
        .arg(dir.join("mcp.json"))
        .env("AGENVOY_CONFIG_DIR", dir)
        .output()
        .unwrap();
    assert!(listed.status.success(), "{listed:?}");
    assert!(read_in(dir, "server-eras.json").contains("\"old\""));
    std::fs::write(
        &launcher,
        format!("exec '{}' '{}' stdio", python.display(), script.display()),
    )
    .unwrap();
    let Some(tmux) = start_panel(dir, &servers) else {
        return;
    };
    wait_for_count(&tmux, "connected", 2);
    python_server_in_the_panel(&tmux, "old", "handshake");
    python_server_in_the_panel(&tmux, "py", "stateless");
    tmux.keys(&["q"]);
    assert_ended_cleanly(dir, &tmux);
}

/// A hostile server's resource names, descriptions, read text, prompt descriptions and
/// messages are drawn with their control characters escaped: the screen is never cleared,
/// the window title never set.
#[test]
fn hostile_text_is_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let hx = fixture_entry(&["--page-size", "7303", "--mode", "hostile"]);
    let Some(tmux) = start_panel(dir, &json!({"servers": {"hx": hx}})) else {
        return;
    };
    tmux.wait_for("connected");
    open_server(&tmux, "hx", "handshake");
    let escaped = "\\u{1b}[2J\\u{1b}[H";
    tmux.keys(&["R"]);
    let screen = tmux.wait_for("fixture://readme");
    assert!(screen.contains(&format!("readme{escaped}")), "{screen}");
    tmux.keys(&["Enter"]);
    // Wrapped where the escaped text starts.
    let screen = tmux.wait_for("The agenvoy fixture server's");
    assert!(screen.contains(&format!("readme.{escaped}")), "{screen}");
    back(&tmux, "fixture://readme");
    back(&tmux, "R resources");
    tmux.keys(&["P"]);
    let screen = tmux.wait_for("Greets someone.");
    assert!(screen.contains(escaped), "{screen}");
    tmux.keys(&["Enter"]);
    tmux.type_text("Ada");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("Greet Ada in a casual");
    assert!(screen.contains(&format!("way.{escaped}")), "{screen}");
    // Nothing cleared the screen: the frame's corners are all there.
    assert!(screen.contains('┌') && screen.contains('┘'), "{screen}");
    let title = tmux.run(&["display-message", "-p", "#{pane_title}"]);
    assert!(!String::from_utf8_lossy(&title.stdout).contains("pwned"));
    back(&tmux, "Greets someone.");
    back(&tmux, "R resources");
    back(&tmux, "a add");
    tmux.keys(&["q"]);
    assert_ended_cleanly(dir, &tmux);
}
