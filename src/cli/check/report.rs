//! A report of the findings: text for a person, JSON (its shape: docs/CHECK.md), JUnit XML
//! and SARIF 2.1.0.

use super::list::{CHECKS, Check, Level};
use super::{Finding, SPEC_REVISION, SPEC_ROOT, Verdict};
use agenvoy_mcp::safe_text::escape_controls;
use serde_json::{Value, json};

fn link(check: &Check) -> String {
    if check.section.starts_with("20") {
        format!("{SPEC_ROOT}/{}", check.section)
    } else {
        format!("{SPEC_ROOT}/{SPEC_REVISION}/{}", check.section)
    }
}

fn level_name(check: &Check) -> &'static str {
    match check.level {
        Level::Must => "must",
        Level::Should => "should",
    }
}

/// The verdict's name in JSON: `passed`, `failed`, `warning` or `not_applicable`.
fn verdict_name(finding: &Finding) -> &'static str {
    match finding.verdict {
        Verdict::Passed => "passed",
        Verdict::NotApplicable(_) => "not_applicable",
        Verdict::Failed { .. } if finding.is_warning() => "warning",
        Verdict::Failed { .. } => "failed",
    }
}

/// A failure's or warning's details: what is wrong, the spec's words and link, what was
/// exchanged.
fn details(finding: &Finding, why: &str, exchange: Option<&str>) -> String {
    let check = finding.check;
    let mut text = format!("{why}\nthe spec: {} ({})", check.title, link(check));
    if let Some(exchange) = exchange {
        text.push_str(&format!("\nexchanged: {exchange}"));
    }
    text
}

pub(super) fn text(findings: &[Finding]) -> std::io::Result<()> {
    for finding in findings {
        let check = finding.check;
        match &finding.verdict {
            Verdict::Passed => out!("passed  {}", check.id)?,
            Verdict::NotApplicable(why) => out!("n/a     {}: {}", check.id, escape_controls(why))?,
            Verdict::Failed { why, exchange } => {
                let label = if finding.is_warning() {
                    "WARNING"
                } else {
                    "FAILED "
                };
                out!("{label} {}: {}", check.id, escape_controls(why))?;
                out!("        the spec: {} ({})", check.title, link(check))?;
                if let Some(exchange) = exchange {
                    out!("        exchanged: {}", escape_controls(exchange))?;
                }
            }
        }
    }
    let count = |p: fn(&Finding) -> bool| findings.iter().filter(|f| p(f)).count();
    out!(
        "{} passed, {} failed, {} warnings, {} not applicable",
        count(|f| matches!(f.verdict, Verdict::Passed)),
        count(Finding::is_failure),
        count(Finding::is_warning),
        count(|f| matches!(f.verdict, Verdict::NotApplicable(_)))
    )
}

pub(super) fn json(server: &str, findings: &[Finding]) -> Value {
    let checks: Vec<Value> = findings
        .iter()
        .map(|f| {
            let (why, exchange) = match &f.verdict {
                Verdict::Passed => (None, None),
                Verdict::Failed { why, exchange } => (Some(why.clone()), exchange.clone()),
                Verdict::NotApplicable(why) => (Some(why.clone()), None),
            };
            json!({
                "id": f.check.id,
                "title": f.check.title,
                "level": level_name(f.check),
                "spec": link(f.check),
                "scenario": f.check.scenario,
                "verdict": verdict_name(f),
                "why": why,
                "exchange": exchange,
                "ms": f.took.as_secs_f64() * 1e3,
            })
        })
        .collect();
    let failed = findings.iter().filter(|f| f.is_failure()).count();
    let warnings = findings.iter().filter(|f| f.is_warning()).count();
    json!({"server": server, "failed": failed, "warnings": warnings, "checks": checks})
}

/// `text` with XML's five special characters escaped, and the characters XML 1.0 cannot hold
/// (control characters but tab and newline) shown as `\u{..}`.
fn xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' => out.push(c),
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// JUnit XML: a failure as `<failure>`, a warning as a passed case whose `<system-out>` says
/// it (JUnit has no warnings), a check that does not apply as `<skipped>`.
pub(super) fn junit(findings: &[Finding]) -> std::io::Result<()> {
    let failures = findings.iter().filter(|f| f.is_failure()).count();
    let skipped = findings
        .iter()
        .filter(|f| matches!(f.verdict, Verdict::NotApplicable(_)))
        .count();
    let total: f64 = findings.iter().map(|f| f.took.as_secs_f64()).sum();
    out!(r#"<?xml version="1.0" encoding="UTF-8"?>"#)?;
    out!(
        r#"<testsuites name="agenvoy-mcp check" tests="{}" failures="{failures}" skipped="{skipped}" time="{total:.3}">"#,
        findings.len()
    )?;
    out!(
        r#"  <testsuite name="mcp server" tests="{}" failures="{failures}" skipped="{skipped}" time="{total:.3}">"#,
        findings.len()
    )?;
    for f in findings {
        let open = format!(
            r#"    <testcase classname="mcp.check" name="{}" time="{:.3}""#,
            xml(f.check.id),
            f.took.as_secs_f64()
        );
        match &f.verdict {
            Verdict::Passed => out!("{open}/>")?,
            Verdict::NotApplicable(why) => {
                out!("{open}>")?;
                out!(r#"      <skipped message="{}"/>"#, xml(why))?;
                out!("    </testcase>")?;
            }
            Verdict::Failed { why, exchange } => {
                out!("{open}>")?;
                let detail = details(f, why, exchange.as_deref());
                if f.is_warning() {
                    out!(
                        "      <system-out>warning (SHOULD): {}</system-out>",
                        xml(&detail)
                    )?;
                } else {
                    out!(
                        r#"      <failure message="{}" type="{}">{}</failure>"#,
                        xml(why),
                        xml(f.check.id),
                        xml(&detail)
                    )?;
                }
                out!("    </testcase>")?;
            }
        }
    }
    out!("  </testsuite>")?;
    out!("</testsuites>")
}

/// The SARIF artifact a finding is located at: the server's URL, or its program as a URI
/// reference (`file://` for an absolute path, which a relative reference may not begin with).
fn artifact_uri(server: &str) -> String {
    if server.starts_with("http://") || server.starts_with("https://") {
        return server.to_string();
    }
    let mut encoded = String::new();
    for byte in server.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                encoded.push(byte as char)
            }
            _ => encoded.push_str(&format!("%{byte:02X}")),
        }
    }
    match encoded.starts_with('/') {
        true => format!("file://{encoded}"),
        false => encoded,
    }
}

/// SARIF 2.1.0: every check a rule of the tool's driver; a result a check run, of kind
/// `fail` (level `error` for a MUST, `warning` for a SHOULD), `pass` or `notApplicable`,
/// located at the server (its URL or command) as the artifact.
pub(super) fn sarif(server: &str, findings: &[Finding]) -> Value {
    let rules: Vec<Value> = CHECKS
        .iter()
        .map(|c| {
            json!({
                "id": c.id,
                "shortDescription": {"text": c.title},
                "helpUri": link(c),
                "defaultConfiguration": {"level": if c.level == Level::Must { "error" } else { "warning" }},
                "properties": {"scenario": c.scenario, "level": level_name(c)},
            })
        })
        .collect();
    let results: Vec<Value> = findings
        .iter()
        .map(|f| {
            let index = CHECKS
                .iter()
                .position(|c| c.id == f.check.id)
                .unwrap_or_default();
            let (kind, level, message) = match &f.verdict {
                Verdict::Passed => ("pass", "none", format!("passed: {}", f.check.title)),
                Verdict::NotApplicable(why) => {
                    ("notApplicable", "none", format!("not applicable: {why}"))
                }
                Verdict::Failed { why, exchange } => (
                    "fail",
                    if f.is_warning() { "warning" } else { "error" },
                    details(f, why, exchange.as_deref()),
                ),
            };
            json!({
                "ruleId": f.check.id,
                "ruleIndex": index,
                "kind": kind,
                "level": level,
                "message": {"text": message},
                "locations": [{"physicalLocation": {"artifactLocation": {"uri": artifact_uri(server)}}}],
            })
        })
        .collect();
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "agenvoy-mcp check",
                "version": env!("CARGO_PKG_VERSION"),
                "informationUri": "https://modelcontextprotocol.io/specification",
                "rules": rules,
            }},
            "results": results,
        }],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_is_located_by_a_uri_reference() {
        assert_eq!(artifact_uri("https://h/mcp"), "https://h/mcp");
        assert_eq!(artifact_uri("/opt/my server"), "file:///opt/my%20server");
        assert_eq!(artifact_uri("npx"), "npx");
        assert_eq!(artifact_uri("./run:it"), "./run%3Ait");
    }
}
