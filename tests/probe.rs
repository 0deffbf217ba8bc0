//! The `probe` command against the fixture server: what a user sees, and how each failure ends.
#![cfg(feature = "cli")]

mod common;

use common::{binary, fixture_command};
use serde_json::Value;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn probe(flags: &[&str], server: &[&str]) -> Output {
    let mut cmd = Command::new(binary());
    cmd.arg("probe").args(flags).arg("--").args(server);
    cmd.output().unwrap()
}

fn run(flags: &[&str], extra: &[&str]) -> (Output, String, String) {
    let server = fixture_command(extra);
    let server: Vec<&str> = server.iter().map(String::as_str).collect();
    capture(probe(flags, &server))
}

fn capture(out: Output) -> (Output, String, String) {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out, stdout, stderr)
}

#[test]
fn text_report_shows_the_server() {
    let (out, stdout, _) = run(&[], &[]);
    assert!(out.status.success());
    for line in [
        "server:       agenvoy-fixture ",
        "era:          handshake",
        "protocol:     2025-11-25",
        "tools (9):",
    ] {
        assert!(stdout.contains(line), "{line:?} missing from:\n{stdout}");
    }
    assert!(stdout.contains("instructions:\n  The agenvoy fixture server"));
}

#[test]
fn long_tool_names_keep_the_descriptions_aligned() {
    // In hostile mode two tools have a long name (escaped, 70 columns) and every
    // description starts with the same escaped text.
    let (out, stdout, _) = run(&[], &["--mode", "hostile"]);
    assert!(out.status.success());
    let rows: Vec<&str> = stdout
        .lines()
        .skip_while(|l| !l.starts_with("tools ("))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .collect();
    assert_eq!(rows.len(), 11, "{stdout}");
    let starts: std::collections::BTreeSet<usize> = rows
        .iter()
        .map(|row| row.rfind("\\u{1b}[2J").unwrap())
        .collect();
    assert_eq!(starts.len(), 1, "one column for descriptions:\n{stdout}");
}

#[test]
fn json_report_has_the_documented_shape() {
    let (out, stdout, _) = run(
        &["--json", "--call", "echo", "--args", r#"{"text":"hi"}"#],
        &[],
    );
    assert!(out.status.success());
    let report: Value = serde_json::from_str(&stdout).unwrap();
    for key in [
        "server",
        "transport",
        "era",
        "protocolVersion",
        "serverInfo",
        "capabilities",
        "instructions",
        "tools",
        "call",
    ] {
        assert!(report.get(key).is_some(), "{key} missing");
    }
    assert_eq!(report["transport"], "stdio");
    assert_eq!(report["tools"].as_array().unwrap().len(), 9);
    let echo = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "echo")
        .unwrap();
    assert_eq!(echo["inputSchema"]["required"], serde_json::json!(["text"]));
    assert_eq!(
        report["call"],
        serde_json::json!({"tool": "echo", "text": "hi", "isError": false, "totalBytes": 2})
    );
}

#[test]
fn a_big_call_prints_the_cap_and_the_marker() {
    let (out, stdout, _) = run(&["--call", "big", "--args", r#"{"bytes":5000000}"#], &[]);
    assert!(out.status.success());
    assert!(stdout.ends_with("\n\n[mcp output truncated: 5000000 bytes total, 1048576 kept]\n"));
}

#[test]
fn a_tool_error_prints_the_output_and_exits_non_zero() {
    let (out, stdout, _) = run(&["--call", "fail"], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout.contains("call fail (tool error):\nthe fail tool failed, as asked"));
}

fn assert_fails_at(step: &str, (out, stdout, stderr): (Output, String, String)) -> String {
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stdout.is_empty(), "nothing on stdout: {stdout}");
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("probe failed"))
        .collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(
        lines[0].starts_with(&format!("probe failed at {step}: ")),
        "{stderr}"
    );
    lines[0].to_string()
}

#[test]
fn each_failure_names_its_step() {
    let started = Instant::now();
    let line = assert_fails_at(
        "initialize",
        run(&["--timeout", "1"], &["--mode", "no-init-response"]),
    );
    assert!(line.contains("no response after 1.0 s"), "{line}");
    assert!(started.elapsed() < Duration::from_secs(5));

    let line = assert_fails_at(
        "tools/call",
        run(&["--call", "echo"], &["--mode", "crash-mid-call"]),
    );
    assert!(
        line.contains("the connection ended during the request")
            && line.contains("may or may not have carried it out"),
        "{line}"
    );

    let line = assert_fails_at(
        "tools/call",
        run(&["--timeout", "1", "--call", "echo"], &["--mode", "hang"]),
    );
    assert!(line.contains("no response after 1.0 s"), "{line}");

    let line = assert_fails_at("initialize", run(&[], &["--mode", "version=1.0"]));
    assert!(
        line.contains("1.0") && line.contains("2025-11-25"),
        "{line}"
    );

    assert_fails_at("start", capture(probe(&[], &["/nonexistent/server"])));
    assert_fails_at(
        "arguments",
        run(&["--call", "echo", "--args", "{not json"], &[]),
    );
}

#[test]
fn server_stderr_reaches_the_log_with_the_server_name_and_long_lines_cut() {
    let long = "e".repeat(5000);
    let args = serde_json::json!({"text": long, "stderr": true}).to_string();
    let server = fixture_command(&[]);
    let mut cmd = Command::new(binary());
    cmd.args(["probe", "--call", "echo", "--args", &args, "--"])
        .args(&server)
        .env("AGENVOY_LOG", "info");
    let (out, _, stderr) = capture(cmd.output().unwrap());
    assert!(out.status.success(), "{stderr}");
    let line = stderr
        .lines()
        .find(|l| l.contains("stderr: e"))
        .expect("the server's stderr line is logged");
    assert!(line.contains("server=agenvoy-mcp"), "{line}");
    assert!(
        line.contains(&format!("stderr: {}…", "e".repeat(4096))),
        "cut at 4096 bytes"
    );
    assert!(!line.contains(&"e".repeat(4097)));
}

#[test]
fn resources_templates_and_prompts_follow_the_tools() {
    for era in [&[][..], &["--mode", "modern"][..]] {
        let (out, stdout, stderr) = run(&[], era);
        assert!(out.status.success(), "{stderr}");
        let expected = "resources (2):\n  fixture://readme  readme  What the fixture server is.\n  fixture://logo    logo\nresource templates (1):\n  fixture://big/{bytes}  big  That many bytes of text.\nprompts (2):\n  greet      (name*, style)  Greets someone.\n  summarize  ()              Summarizes the readme.\n";
        let stdout = stdout.split("skills (").next().unwrap();
        assert!(stdout.ends_with(expected), "{era:?}:\n{stdout}");
    }
    let (_, stdout, _) = run(&["--json"], &[]);
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        report["resources"][0],
        serde_json::json!({"uri": "fixture://readme", "name": "readme",
            "description": "What the fixture server is.", "mimeType": "text/plain",
            "x-fixture": {"kept": true}}),
        "the server's objects, unknown members kept"
    );
    assert_eq!(
        report["resourceTemplates"][0]["uriTemplate"],
        "fixture://big/{bytes}"
    );
    assert_eq!(
        report["prompts"][0]["arguments"][0],
        serde_json::json!({"name": "name", "description": "Who", "required": true})
    );
}

#[test]
fn read_prompt_and_complete_print_what_a_model_sees() {
    let (out, stdout, _) = run(&["--read", "fixture://logo"], &[]);
    assert!(out.status.success());
    assert!(
        stdout.ends_with("read fixture://logo:\n[blob image/png, 8 bytes]\n"),
        "{stdout}"
    );

    let (out, stdout, _) = run(&["--json", "--read", "fixture://big/2000000"], &[]);
    assert!(out.status.success());
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["read"]["totalBytes"], 2_000_000);
    let text = report["read"]["text"].as_str().unwrap();
    assert!(text.ends_with("\n\n[mcp output truncated: 2000000 bytes total, 1048576 kept]"));

    let args = r#"{"name":"Ada","style":"formal"}"#;
    let (out, stdout, _) = run(
        &["--prompt", "greet", "--args", args],
        &["--mode", "modern"],
    );
    assert!(out.status.success());
    assert!(
        stdout.ends_with("prompt greet:\n  A greeting\n[user]\nGreet Ada in a formal way.\n[assistant]\n[image image/png, 3 bytes]\n"),
        "{stdout}"
    );
    let line = assert_fails_at("prompts/get", run(&["--prompt", "greet"], &[]));
    assert!(line.contains("greet needs the argument name"), "{line}");

    let flags = [
        "--complete",
        "prompt/greet",
        "name=A",
        "--args",
        r#"{"style":"formal"}"#,
    ];
    let (out, stdout, _) = run(&flags, &[]);
    assert!(out.status.success());
    assert!(
        stdout.ends_with("complete name=A (2 values, 2 in all):\n  Dr. Ada\n  Dr. Alan\n"),
        "{stdout}"
    );
    let (out, stdout, _) = run(
        &[
            "--json",
            "--complete",
            "resource/fixture://big/{bytes}",
            "bytes=2",
        ],
        &["--mode", "modern"],
    );
    assert!(out.status.success());
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        report["completion"],
        serde_json::json!({"ref": {"type": "ref/resource", "uri": "fixture://big/{bytes}"},
            "argument": "bytes", "values": ["2097152"], "total": 1, "hasMore": false})
    );
    assert_fails_at("arguments", run(&["--complete", "tool/x", "a"], &[]));
}

#[test]
fn log_level_prints_the_server_log_to_stderr() {
    let (out, _, stderr) = run(&["--log-level", "debug"], &[]);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("log warning [fixture]: log level set to debug\n"),
        "{stderr}"
    );
    assert!(stderr.contains("log debug [fixture]: {\"detail\":\"debug messages are on\"}\n"));
    // Once: probe prints it, so the log leaves it out.
    assert_eq!(
        stderr.matches("log level set to debug").count(),
        1,
        "{stderr}"
    );
    let (_, _, stderr) = run(&["--log-level", "warning"], &[]);
    assert!(!stderr.contains("log debug"), "{stderr}");
    // In 2026-07-28 the level rides on each request.
    let (out, _, stderr) = run(&["--log-level", "info"], &["--mode", "modern"]);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("log info [fixture]: handling prompts/list\n"),
        "{stderr}"
    );
    let line = assert_fails_at("arguments", run(&["--log-level", "loud"], &[]));
    assert!(line.contains("one of debug, info"), "{line}");
}

#[test]
fn server_text_of_resources_and_prompts_is_escaped() {
    let (out, stdout, stderr) = run(
        &[
            "--log-level",
            "debug",
            "--prompt",
            "greet",
            "--args",
            r#"{"name":"Ada"}"#,
        ],
        &["--mode", "hostile"],
    );
    assert!(out.status.success(), "{stderr}");
    let (_, read, _) = run(&["--read", "fixture://readme"], &["--mode", "hostile"]);
    let stdout = format!("{stdout}{read}");
    for text in [&stdout, &stderr] {
        assert!(
            !text.contains('\u{1b}') && !text.contains('\u{9b}'),
            "raw controls:\n{text}"
        );
    }
    for shown in [
        "fixture://readme  readme\\u{1b}[2J",
        "big\\u{1b}[2J",
        "Greets someone.\\u{1b}[2J",
        "The agenvoy fixture server's readme.\\u{1b}[2J",
        "Greet Ada in a casual way.\\u{1b}[2J",
    ] {
        assert!(stdout.contains(shown), "{shown:?} missing from:\n{stdout}");
    }
    assert!(
        stderr.contains("log warning [fixture]: log level set to debug\\u{1b}[2J"),
        "{stderr}"
    );
}

#[test]
fn server_log_messages_reach_tracing_at_their_level() {
    let server = fixture_command(&[]);
    let mut cmd = Command::new(binary());
    cmd.args(["probe", "--log-level", "debug", "--"])
        .args(&server)
        .env("AGENVOY_LOG", "agenvoy_mcp::server=debug");
    let (out, _, stderr) = capture(cmd.output().unwrap());
    assert!(out.status.success(), "{stderr}");
    let level_of = |needle: &str| {
        let line = stderr
            .lines()
            .find(|l| l.contains("agenvoy_mcp::server") && l.contains(needle))
            .unwrap_or_else(|| panic!("{needle:?} logged:\n{stderr}"));
        line.split_whitespace().nth(1).unwrap_or("").to_string()
    };
    assert_eq!(level_of("log level set to debug"), "WARN");
    assert_eq!(level_of("debug messages are on"), "DEBUG");
}

/// A program that is no MCP server is named as such: one that echoes our request back
/// (`cat`), one that writes other lines and exits, one that writes lines without end
/// (`yes`). Each error says what to do, none to reconnect (a probe has nothing to reconnect).
#[cfg(unix)]
#[test]
fn a_program_that_is_no_mcp_server_is_told_apart() {
    let line = assert_fails_at("initialize", capture(probe(&[], &["cat"])));
    assert_eq!(
        line,
        "probe failed at initialize: mcp server \"cat\", initialize: protocol error: the server \
         sent our own initialize request back instead of answering it: it does not speak MCP \
         (it echoes what it reads, as `cat` does); check the server's command or URL"
    );

    let (out, stdout, stderr) = capture(probe(&[], &["sh", "-c", "echo hello; echo bye >&2"]));
    let line = assert_fails_at("server/discover", (out, stdout, stderr.clone()));
    assert!(
        stderr.contains("skipping a message that is not JSON-RPC")
            && stderr.contains("hello; an MCP server sends nothing else"),
        "{stderr}"
    );
    assert!(
        line.ends_with(
            "the server exited (exit status: 0); its last stderr lines: bye; check the server's \
             command or URL (and what it wrote to stderr), then try again"
        ),
        "{line}"
    );

    // Lines without end: a few warnings, and the timeout ends the probe.
    let mut child = Command::new(binary())
        .args(["probe", "--timeout", "1", "--", "yes"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    if common::wait_exit(&mut child, Duration::from_secs(30)).is_none() {
        let _ = child.kill();
        panic!("probe -- yes still runs after 30 s");
    }
    let (out, stdout, stderr) = capture(child.wait_with_output().unwrap());
    let line = assert_fails_at("initialize", (out, stdout, stderr.clone()));
    assert!(line.contains("no response after 1.0 s"), "{line}");
    assert_eq!(stderr.matches("not JSON-RPC").count(), 6, "{stderr}");
    assert!(
        stderr.contains("skipping any further message that is not JSON-RPC without a warning"),
        "{stderr}"
    );
}

/// The members docs/PROBE.md lists are the ones `probe --json` prints: the page's table
/// against what four runs against the fixture print (one with `--call` and `--complete`,
/// one with `--read`, one with `--prompt`, one with `--ui --read` of a page), probe's own
/// objects member by member.
#[test]
fn the_json_report_has_the_members_docs_probe_md_lists() {
    let page =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/PROBE.md")).unwrap();
    let section = page
        .split("\n## `--json`\n")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("a --json section");
    let documented: std::collections::BTreeSet<String> = section
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split_once("` |"))
        .map(|(member, _)| member.to_string())
        .collect();
    assert!(documented.contains("server"), "{section}");

    let mut printed = std::collections::BTreeSet::new();
    for (flags, server) in [
        (
            &[
                "--call",
                "echo",
                "--args",
                r#"{"text":"hi"}"#,
                "--complete",
                "prompt/greet",
                "name=A",
            ][..],
            &[][..],
        ),
        (&["--read", "fixture://readme"], &[]),
        (&["--prompt", "greet", "--args", r#"{"name":"Ada"}"#], &[]),
        (&["--skill", "greeting"], &["--mode", "modern"]),
        (&["--ui", "--read", "ui://fixture/clock.html"], &[]),
    ] {
        let (out, stdout, stderr) = run(&[&["--json"], flags].concat(), server);
        assert!(out.status.success(), "{flags:?}: {stderr}");
        let report: Value = serde_json::from_str(&stdout).unwrap();
        for (member, value) in report.as_object().unwrap() {
            printed.insert(member.clone());
            if !["call", "read", "page", "prompt", "skill", "completion"].contains(&member.as_str())
            {
                continue;
            }
            for (inner, value) in value.as_object().unwrap() {
                printed.insert(format!("{member}.{inner}"));
                let items = value.as_array().into_iter().flatten();
                for item in items.filter_map(Value::as_object) {
                    for key in item.keys() {
                        printed.insert(format!("{member}.{inner}[].{key}"));
                    }
                }
            }
        }
    }
    assert_eq!(documented, printed);
}

#[test]
fn skills_are_listed_and_one_is_printed_only_once_verified() {
    let (out, stdout, stderr) = run(&["--skill", "greeting"], &["--mode", "modern"]);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.contains("skills (2):")
            && stdout.contains(
                "greeting  skill://greeting/SKILL.md  2 files  Greet a person in the house style"
            ),
        "{stdout}"
    );
    assert!(
        stdout
            .contains("skill greeting (skill://greeting/SKILL.md, verified):\n---\nname: greeting"),
        "{stdout}"
    );
    let (out, stdout, _) = run(&["--json"], &["--mode", "modern"]);
    assert!(out.status.success());
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["skills"][1]["uri"], "skill://counting/SKILL.md");
    assert!(report.get("skill").is_none());

    let lie = assert_fails_at(
        "resources/read",
        run(
            &["--skill", "skill://greeting/references/STYLE.md"],
            &["--mode", "lying-skills"],
        ),
    );
    assert!(lie.contains("does not match the digest"), "{lie}");
    assert!(!lie.contains("system prompt"), "{lie}");
    let unknown = assert_fails_at(
        "skills/list",
        run(&["--skill", "juggling"], &["--mode", "modern"]),
    );
    assert!(
        unknown.contains("lists no skill or skill file \"juggling\""),
        "{unknown}"
    );
}

/// The README installs the command before it first runs `agenvoy-mcp` bare, in an example
/// or in the text (a new user on a fresh clone has no such command until then).
#[test]
fn the_readme_installs_the_command_before_it_runs_it() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let mut in_shell = false;
    let mut installed = false;
    for line in readme.lines() {
        if let Some(fence) = line.strip_prefix("```") {
            in_shell = !in_shell && fence == "sh";
            continue;
        }
        installed |= in_shell && line.starts_with("cargo install --path . --bin agenvoy-mcp");
        let bare = (in_shell && line.starts_with("agenvoy-mcp ")) || line.contains("`agenvoy-mcp ");
        if bare {
            assert!(
                installed,
                "{line:?} runs agenvoy-mcp before the install step"
            );
            return;
        }
    }
    panic!("the README never runs agenvoy-mcp bare");
}
