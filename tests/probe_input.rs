//! `probe --elicit`, `--sample`, `--root`, and `--call` of a tool that runs as a task (its
//! progress on stderr): against the fixture, and against server-everything's
//! `trigger-elicitation-request`, `trigger-sampling-request`, `get-roots-list`,
//! `toggle-subscriber-updates` and `simulate-research-query`.
#![cfg(feature = "cli")]

mod common;

use common::{binary, fixture_command, installed};
use serde_json::{Value, json};
use std::process::Command;

/// Runs `probe FLAGS -- SERVER`: exit success, stdout, stderr.
fn probe(flags: &[&str], server: &[String]) -> (bool, String, String) {
    let out = Command::new(binary())
        .arg("probe")
        .args(flags)
        .arg("--")
        .args(server)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn fixture(mode: &str) -> Vec<String> {
    fixture_command(&["--mode", mode])
}

/// The answer the fixture got to its request `method`, through `probe --json --call
/// client_request` with `flags`.
fn fixture_asks(flags: &[&str], method: &str, params: Value) -> (Value, String) {
    let args = json!({"method": method, "params": params}).to_string();
    let mut all = vec!["--json", "--call", "client_request", "--args", &args];
    all.extend(flags);
    let (_, stdout, stderr) = probe(&all, &fixture("normal"));
    let report: Value = serde_json::from_str(&stdout).unwrap_or_else(|_| panic!("{stderr}"));
    let text = report["call"]["text"].as_str().unwrap_or_default();
    (serde_json::from_str(text).unwrap(), stderr)
}

#[test]
fn elicit_answers_a_form_checked_and_shows_it() {
    let form = json!({"message": "Who\u{1b}[2J?", "requestedSchema": {"type": "object",
        "properties": {"name": {"type": "string"}}, "required": ["name"]}});
    let (answer, stderr) = fixture_asks(
        &["--elicit", r#"accept={"name":"Ada"}"#],
        "elicitation/create",
        form.clone(),
    );
    assert_eq!(
        answer["result"],
        json!({"action": "accept", "content": {"name": "Ada"}})
    );
    assert!(
        stderr.contains("elicitation (form): Who\\u{1b}[2J? [fields: name*]"),
        "{stderr}"
    );
    let (answer, stderr) = fixture_asks(
        &["--elicit", r#"accept={"name":1}"#],
        "elicitation/create",
        form.clone(),
    );
    assert_eq!(answer["error"]["code"], -32603, "{answer}");
    assert!(stderr.contains("not answered"), "{stderr}");
    let (answer, _) = fixture_asks(&["--elicit", "decline"], "elicitation/create", form);
    assert_eq!(answer["result"], json!({"action": "decline"}));
    let url = json!({"mode": "url", "message": "Log in", "elicitationId": "e",
                     "url": "https://auth.example.com/login"});
    let (answer, stderr) = fixture_asks(&["--elicit", "accept"], "elicitation/create", url);
    assert_eq!(answer["result"], json!({"action": "accept"}));
    assert!(stderr.contains("(url, not opened)") && stderr.contains("at https://auth.example.com"));
    let (_, _, stderr) = probe(&["--elicit", "maybe"], &fixture("normal"));
    assert!(stderr.contains("give accept=JSON"), "{stderr}");
}

#[test]
fn sample_and_root_answer_the_server() {
    let params = json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
                        "maxTokens": 5});
    let (answer, stderr) = fixture_asks(
        &["--sample", "hello back"],
        "sampling/createMessage",
        params,
    );
    assert_eq!(answer["result"]["content"]["text"], "hello back");
    assert!(stderr.contains("sampling: hi"), "{stderr}");
    let dir = tempfile::tempdir().unwrap();
    let spaced = dir.path().join("a b%");
    std::fs::create_dir(&spaced).unwrap();
    let spaced = spaced.to_str().unwrap();
    let (answer, _) = fixture_asks(&["--root", spaced, "--root", "/"], "roots/list", json!({}));
    let roots = answer["result"]["roots"].as_array().unwrap().clone();
    assert_eq!(roots.len(), 2, "{answer}");
    let uri = roots[0]["uri"].as_str().unwrap();
    assert!(
        uri.starts_with("file:///") && uri.ends_with("/a%20b%25"),
        "{uri}"
    );
    assert_eq!(roots[0]["name"], "a b%");
    assert_eq!(roots[1]["uri"], "file:///");
}

#[test]
fn call_runs_a_task_with_progress_on_stderr() {
    let args = r#"{"seconds": 0.2, "steps": 2, "poll_ms": 50}"#;
    let (ok, stdout, stderr) = probe(&["--call", "research", "--args", args], &fixture("tasks"));
    assert!(ok, "{stderr}");
    assert!(stdout.contains("researched in 2 steps"), "{stdout}");
    for line in [
        "progress 1/2 step 1 of 2",
        "progress 2/2 step 2 of 2",
        "progress completed\n",
    ] {
        assert!(stderr.contains(line), "{line}: {stderr}");
    }
}

/// A task's status (its message, no number) and a progress notification with only a message
/// are shown as the server sent them, never as `progress 0`.
#[test]
fn progress_without_a_number_shows_what_the_server_sent() {
    let args = r#"{"seconds": 0.2, "steps": 2, "poll_ms": 20}"#;
    let (ok, stdout, stderr) = probe(&["--call", "research", "--args", args], &fixture("modern"));
    assert!(ok && stdout.contains("researched in 2 steps"), "{stderr}");
    for line in [
        "progress working\n",
        "progress working: step 1 of 2\n",
        "progress completed: step 2 of 2\n",
    ] {
        assert!(stderr.contains(line), "{line}: {stderr}");
    }
    let args = r#"{"seconds": 0.2, "steps": 2, "message_only": true}"#;
    let (ok, _, stderr) = probe(&["--call", "slow", "--args", args], &fixture("normal"));
    assert!(ok, "{stderr}");
    for line in ["progress step 1 of 2\n", "progress step 2 of 2\n"] {
        assert!(stderr.contains(line), "{line}: {stderr}");
    }
    assert!(!stderr.contains("progress 0"), "{stderr}");
}

#[test]
fn server_everything_through_probe() {
    let Some(program) = installed("node_modules/.bin/mcp-server-everything") else {
        return;
    };
    let server = vec![program.display().to_string(), "stdio".into()];
    let (ok, stdout, stderr) = probe(
        &[
            "--elicit",
            r#"accept={"name":"Ada","check":true}"#,
            "--call",
            "trigger-elicitation-request",
        ],
        &server,
    );
    assert!(ok && stdout.contains("Name: Ada"), "{stdout}{stderr}");
    assert!(stderr.contains("elicitation (form)"), "{stderr}");
    let (ok, stdout, stderr) = probe(
        &[
            "--sample",
            "sampled text",
            "--call",
            "trigger-sampling-request",
            "--args",
            r#"{"prompt": "hi"}"#,
        ],
        &server,
    );
    assert!(ok && stdout.contains("sampled text"), "{stdout}{stderr}");
    let (ok, stdout, stderr) = probe(&["--root", "/tmp", "--call", "get-roots-list"], &server);
    assert!(ok && stdout.contains("file:///tmp"), "{stdout}{stderr}");
    let (ok, stdout, stderr) = probe(&["--call", "toggle-subscriber-updates"], &server);
    assert!(
        ok && stdout.contains("simulated resource updated"),
        "{stdout}{stderr}"
    );
    let (ok, stdout, stderr) = probe(
        &[
            "--call",
            "simulate-research-query",
            "--args",
            r#"{"topic": "rust"}"#,
        ],
        &server,
    );
    assert!(
        ok && stdout.contains("Research Report: rust"),
        "{stdout}{stderr}"
    );
    assert!(stderr.contains("progress completed: "), "{stderr}");
    // Asked to clarify, the task takes the answer through tasks/result.
    let (ok, stdout, stderr) = probe(
        &[
            "--elicit",
            r#"accept={"interpretation":"historical"}"#,
            "--call",
            "simulate-research-query",
            "--args",
            r#"{"topic": "rust", "ambiguous": true}"#,
        ],
        &server,
    );
    assert!(ok && stderr.contains("input_required: "), "{stderr}");
    assert!(
        stdout.contains("Research Report: rust (historical"),
        "{stdout}"
    );
}
