//! `agenvoy-mcp check` against the fixture (over stdio and HTTP, both eras, and its `lax`
//! mode that breaks the error rules) and against the real servers `.ci/install` brings: what
//! it reports, in each format, and its exit status.
#![cfg(feature = "cli")]

mod common;

use common::{HttpFixture, binary, fixture_binary, installed};
use serde_json::Value;
use std::collections::BTreeSet;
use std::process::Command;

/// Runs `check` with `flags` then `target`; its exit code, stdout and stderr.
fn check(flags: &[&str], target: &[&str]) -> (i32, String, String) {
    let out = Command::new(binary())
        .arg("check")
        .args(flags)
        .args(target)
        .output()
        .unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (
        out.status.code().unwrap_or(-1),
        text(&out.stdout),
        text(&out.stderr),
    )
}

/// The JSON report of `check` on `target`: its exit code and the IDs of each verdict.
fn verdicts(target: &[&str]) -> (i32, BTreeSet<String>, BTreeSet<String>, Value) {
    let (code, stdout, stderr) = check(&["--format", "json"], target);
    let report: Value =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout} {stderr}"));
    let ids = |verdict: &str| {
        report["checks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["verdict"] == verdict)
            .map(|c| c["id"].as_str().unwrap().to_string())
            .collect::<BTreeSet<_>>()
    };
    (code, ids("failed"), ids("passed"), report)
}

fn fixture(flags: &[&str]) -> Vec<String> {
    let mut target = vec!["--".to_string(), fixture_binary()];
    target.extend(flags.iter().map(|f| f.to_string()));
    target
}

fn strs(target: &[String]) -> Vec<&str> {
    target.iter().map(String::as_str).collect()
}

#[test]
fn the_fixture_passes_in_both_eras_over_stdio_and_http() {
    for flags in [&[][..], &["--mode", "modern"][..]] {
        let target = fixture(flags);
        let (code, failed, passed, report) = verdicts(&strs(&target));
        assert_eq!((code, failed.len()), (0, 0), "{flags:?}: {report}");
        for id in [
            "initialize",
            "unknown-method",
            "tools-list",
            "tools-call-unknown",
            "resources-read",
            "prompts-get-missing-argument",
        ] {
            assert!(passed.contains(id), "{flags:?} {id}: {report}");
        }
        // Each check says where the spec holds it, and the official suite's scenario.
        let tools = report["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == "tools-list")
            .unwrap();
        assert_eq!(tools["scenario"], "tools-list");
        assert!(
            tools["spec"]
                .as_str()
                .unwrap()
                .starts_with("https://modelcontextprotocol.io/specification/")
        );
    }
    // 2026-07-28 has no ping: not applicable there, passed in the handshake era.
    let (_, _, passed, _) = verdicts(&strs(&fixture(&[])));
    assert!(passed.contains("ping"));
    let (_, _, passed, report) = verdicts(&strs(&fixture(&["--mode", "modern"])));
    assert!(!passed.contains("ping"), "{report}");

    let server = HttpFixture::start("modern", &[]);
    let (code, failed, passed, report) = verdicts(&[server.url.as_str()]);
    assert_eq!((code, failed.len()), (0, 0), "{report}");
    assert!(passed.contains("tools-list") && passed.contains("unknown-method"));
}

#[test]
fn each_broken_rule_is_reported_by_its_check_and_nothing_else_fails() {
    let target = fixture(&["--mode", "lax"]);
    let (code, failed, _, report) = verdicts(&strs(&target));
    assert_eq!(code, 1, "{report}");
    let expected: BTreeSet<String> = ["unknown-method", "tools-call-unknown"]
        .map(String::from)
        .into();
    assert_eq!(failed, expected, "{report}");
    let unknown = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "unknown-method")
        .unwrap();
    assert!(
        unknown["why"].as_str().unwrap().contains("-32601"),
        "{unknown}"
    );
    assert!(
        unknown["exchange"].as_str().unwrap().contains("got {}"),
        "{unknown}"
    );

    // The text report says what failed, where the spec says so, and what was exchanged.
    let (code, text, _) = check(&[], &strs(&target));
    assert_eq!(code, 1);
    assert!(text.contains("FAILED  tools-call-unknown: a call of a tool the server does not have was answered with a result"), "{text}");
    assert!(text.contains("server/tools#error-handling"), "{text}");
    assert!(
        text.contains("no tool agenvoy-check-no-such-tool, but fine"),
        "{text}"
    );
    assert!(text.lines().last().unwrap().contains("2 failed"), "{text}");
}

#[test]
fn the_junit_report_is_read_by_an_xml_parser() {
    let target = fixture(&["--mode", "lax"]);
    let (code, xml, _) = check(&["--format", "junit"], &strs(&target));
    assert_eq!(code, 1);
    let read = r#"
import sys, xml.etree.ElementTree as ET
root = ET.fromstring(sys.stdin.read())
suite = root.find("testsuite")
cases = suite.findall("testcase")
failed = [c.get("name") for c in cases if c.find("failure") is not None]
skipped = [c.get("name") for c in cases if c.find("skipped") is not None]
assert root.tag == "testsuites" and int(root.get("failures")) == len(failed)
assert int(suite.get("tests")) == len(cases) and int(suite.get("skipped")) == len(skipped)
print(len(cases), ",".join(sorted(failed)))
"#;
    let Ok(mut python) = Command::new("python3")
        .args(["-c", read])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
    else {
        common::not_installed("python3 (reads the JUnit XML)");
        return;
    };
    use std::io::Write;
    python
        .stdin
        .take()
        .unwrap()
        .write_all(xml.as_bytes())
        .unwrap();
    let out = python.wait_with_output().unwrap();
    assert!(out.status.success(), "{xml}");
    let said = String::from_utf8(out.stdout).unwrap();
    assert_eq!(said.trim(), "13 tools-call-unknown,unknown-method", "{xml}");
}

#[test]
fn only_runs_the_checks_named_and_an_unknown_one_is_refused() {
    let target = fixture(&[]);
    let mut flags = vec!["--format", "json", "--only", "ping", "--only", "tools-list"];
    flags.extend(strs(&target));
    let (code, stdout, _) = check(&flags, &[]);
    assert_eq!(code, 0);
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["checks"].as_array().unwrap().len(), 2);
    let (code, _, stderr) = check(&["--only", "nope"], &strs(&target));
    assert_eq!(code, 2);
    assert!(
        stderr.contains("no check named [\"nope\"]") && stderr.contains("tools-call-unknown"),
        "{stderr}"
    );
}

/// The real servers: every failure is one docs/CHECK.md explains (the TypeScript SDK answers
/// an unknown tool with an isError result, where the spec asks for a JSON-RPC error).
#[test]
fn real_servers_fail_only_where_docs_check_md_says_they_deviate() {
    let documented: BTreeSet<String> = ["tools-call-unknown".to_string()].into();
    for (program, args) in [
        ("node_modules/.bin/mcp-server-everything", &["stdio"][..]),
        ("node_modules/.bin/mcp-server-memory", &[][..]),
        ("venv/bin/mcp-server-time", &[][..]),
    ] {
        let Some(path) = installed(program) else {
            continue;
        };
        let mut target = vec!["--".to_string(), path.display().to_string()];
        target.extend(args.iter().map(|a| a.to_string()));
        let (_, failed, passed, report) = verdicts(&strs(&target));
        assert!(failed.is_subset(&documented), "{program}: {report}");
        assert!(
            passed.contains("tools-list") && passed.contains("unknown-method"),
            "{program}: {report}"
        );
    }
}
