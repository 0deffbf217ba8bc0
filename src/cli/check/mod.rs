//! `agenvoy-mcp check [--format text|json|junit] [--only ID]... [--timeout SECS]
//! [--inherit-env] (URL | -- CMD ARGS...)`: a strict client that tells a server's author what
//! the server gets wrong. It connects the server, runs every check that applies to what the
//! server declares (docs/CHECK.md lists them with the spec's section each holds the server
//! to), and reports each as passed, failed (what was exchanged, what the spec asks) or not
//! applicable. Exit status 0 only if nothing failed; 1 if a check failed; 2 for bad usage.
//!
//! No check changes a server's data: tools are called only when their annotations say they
//! are read-only and they need no argument.

use super::output;
use agenvoy_mcp::safe_text::{escape_controls, redact_urls};
use agenvoy_mcp::{
    Client, ClientOptions, Era, ErrorKind, HttpConfig, RequestOptions, StdioConfig, Tool,
};
use serde_json::{Value, json};
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// The revision whose sections the checks cite.
const SPEC: &str = "https://modelcontextprotocol.io/specification/2025-11-25";

/// The most characters of an exchanged message a finding shows.
const MAX_SHOWN: usize = 600;

/// How a report is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// For a person.
    Text,
    /// One JSON document (its shape: docs/CHECK.md).
    Json,
    /// JUnit XML, one test case a check.
    Junit,
}

/// What `check` was asked to do.
pub struct CheckArgs {
    pub format: Format,
    /// Only the checks with these IDs (all when empty).
    pub only: Vec<String>,
    pub timeout: Duration,
    pub inherit_env: bool,
    pub url: Option<String>,
    pub command: Vec<String>,
}

/// One check: its ID, what it holds the server to, where the spec says so, and the official
/// conformance suite's matching server scenario, if there is one.
struct Check {
    id: &'static str,
    title: &'static str,
    section: &'static str,
    scenario: Option<&'static str>,
}

const CHECKS: &[Check] = &[
    Check {
        id: "initialize",
        title: "the handshake (or server/discover) gives a supported revision and the server's name and version",
        section: "basic/lifecycle",
        scenario: Some("server-initialize"),
    },
    Check {
        id: "ping",
        title: "ping is answered with an empty result",
        section: "basic/utilities/ping",
        scenario: Some("ping"),
    },
    Check {
        id: "unknown-method",
        title: "a method the server does not have is refused with -32601 (method not found)",
        section: "basic",
        scenario: None,
    },
    Check {
        id: "undeclared-capability",
        title: "the list of a capability not declared is refused with -32601",
        section: "basic/lifecycle#capability-negotiation",
        scenario: None,
    },
    Check {
        id: "tools-list",
        title: "tools/list answers every page to its end; each tool has a name, unique, and an inputSchema object of type object",
        section: "server/tools#listing-tools",
        scenario: Some("tools-list"),
    },
    Check {
        id: "tools-output-schema",
        title: "a tool's outputSchema, when given, is an object of type object",
        section: "server/tools#output-schema",
        scenario: None,
    },
    Check {
        id: "tools-call-unknown",
        title: "calling a tool the server does not list is a JSON-RPC error, not a result",
        section: "server/tools#error-handling",
        scenario: None,
    },
    Check {
        id: "tools-call-read-only",
        title: "read-only tools that need no argument answer with valid content, and structuredContent where they give an outputSchema",
        section: "server/tools#tool-result",
        scenario: Some("tools-call-simple-text"),
    },
    Check {
        id: "resources-list",
        title: "resources/list answers; each resource has a uri and a name",
        section: "server/resources#listing-resources",
        scenario: Some("resources-list"),
    },
    Check {
        id: "resources-read",
        title: "reading the first resource gives its contents, each with a uri and text or blob",
        section: "server/resources#reading-resources",
        scenario: Some("resources-read-text"),
    },
    Check {
        id: "prompts-list",
        title: "prompts/list answers; each prompt has a name",
        section: "server/prompts#listing-prompts",
        scenario: Some("prompts-list"),
    },
    Check {
        id: "prompts-get-missing-argument",
        title: "getting a prompt without one of its required arguments is refused with -32602",
        section: "server/prompts#error-handling",
        scenario: None,
    },
    Check {
        id: "logging-set-level",
        title: "logging/setLevel is answered with an empty result",
        section: "server/utilities/logging",
        scenario: Some("logging-set-level"),
    },
];

/// What a check found.
enum Verdict {
    Passed,
    /// What is wrong, and what was exchanged (cut to a readable size).
    Failed {
        why: String,
        exchange: Option<String>,
    },
    /// Why the check does not apply to this server.
    NotApplicable(String),
}

struct Finding {
    check: &'static Check,
    verdict: Verdict,
    took: Duration,
}

/// A failure; secrets in URLs (a query's values, a password) are hidden from what it says.
fn failed(why: impl Into<String>, exchange: Option<String>) -> Verdict {
    Verdict::Failed {
        why: redact_urls(&why.into()).into_owned(),
        exchange: exchange.map(|e| redact_urls(&e).into_owned()),
    }
}

/// `value` as compact JSON, cut to [`MAX_SHOWN`] characters.
fn shown(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(MAX_SHOWN) {
        Some((cut, _)) => format!("{}... ({} bytes)", &text[..cut], text.len()),
        None => text,
    }
}

/// The JSON-RPC error code of an error, if it was one.
fn rpc_code(error: &agenvoy_mcp::Error) -> Option<i64> {
    match error.kind() {
        ErrorKind::Rpc(object) => Some(object.code),
        _ => None,
    }
}

/// Runs `check`.
pub async fn run(args: CheckArgs) -> ExitCode {
    let unknown: Vec<&String> = args
        .only
        .iter()
        .filter(|id| !CHECKS.iter().any(|c| c.id == id.as_str()))
        .collect();
    if !unknown.is_empty() {
        let ids: Vec<&str> = CHECKS.iter().map(|c| c.id).collect();
        eprintln!(
            "check: no check named {unknown:?}; the checks are: {}",
            ids.join(", ")
        );
        return ExitCode::from(2);
    }
    let options = ClientOptions::default().with_timeout(args.timeout);
    let started = Instant::now();
    let (name, connected) = match (&args.url, args.command.split_first()) {
        (Some(url), None) => {
            let config = HttpConfig::new(url).with_header_timeout(args.timeout);
            (
                "server".to_string(),
                Client::connect_http("server", &config, options).await,
            )
        }
        (None, Some((program, rest))) => {
            let config = StdioConfig::new(program)
                .args(rest)
                .with_inherit_env(args.inherit_env);
            (
                "server".to_string(),
                Client::connect_stdio("server", &config, options).await,
            )
        }
        _ => {
            eprintln!("check: give the server's URL, or its command after --");
            return ExitCode::from(2);
        }
    };
    let wanted = |id: &str| args.only.is_empty() || args.only.iter().any(|o| o == id);
    let findings = match connected {
        Ok(client) => {
            let findings = run_checks(&client, started.elapsed(), &wanted).await;
            client.close().await;
            findings
        }
        Err(e) => CHECKS
            .iter()
            .filter(|c| wanted(c.id))
            .map(|check| Finding {
                check,
                verdict: if check.id == "initialize" {
                    failed(format!("could not connect: {e}"), None)
                } else {
                    Verdict::NotApplicable("the server did not connect".into())
                },
                took: Duration::ZERO,
            })
            .collect(),
    };
    let written = match args.format {
        Format::Text => print_text(&findings),
        Format::Json => output::json(&report_json(&name, &findings)),
        Format::Junit => print_junit(&findings),
    };
    let any_failed = findings
        .iter()
        .any(|f| matches!(f.verdict, Verdict::Failed { .. }));
    let code = if any_failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    };
    output::exit_code("check", written.map(|()| code))
}

async fn run_checks(
    client: &Client,
    connect_took: Duration,
    wanted: &dyn Fn(&str) -> bool,
) -> Vec<Finding> {
    let mut findings = Vec::new();
    for check in CHECKS.iter().filter(|c| wanted(c.id)) {
        let started = Instant::now();
        let verdict = match check.id {
            "initialize" => initialize(client),
            "ping" => ping(client).await,
            "unknown-method" => unknown_method(client).await,
            "undeclared-capability" => undeclared_capability(client).await,
            "tools-list" => tools_list(client).await,
            "tools-output-schema" => tools_output_schema(client).await,
            "tools-call-unknown" => tools_call_unknown(client).await,
            "tools-call-read-only" => tools_call_read_only(client).await,
            "resources-list" => resources_list(client).await,
            "resources-read" => resources_read(client).await,
            "prompts-list" => prompts_list(client).await,
            "prompts-get-missing-argument" => prompts_missing_argument(client).await,
            "logging-set-level" => logging_set_level(client).await,
            other => unreachable!("a check without a body: {other}"),
        };
        let took = if check.id == "initialize" {
            connect_took
        } else {
            started.elapsed()
        };
        findings.push(Finding {
            check,
            verdict,
            took,
        });
    }
    findings
}

/// A raw request: its result, or the error as the server gave it.
async fn request(client: &Client, method: &str, params: Value) -> agenvoy_mcp::Result<Value> {
    client
        .session()
        .request(method, Some(params), RequestOptions::default())
        .await
}

fn declares(client: &Client, capability: &str) -> bool {
    client.details().has_capability(capability)
}

fn not_declared(capability: &str) -> Verdict {
    Verdict::NotApplicable(format!("the server does not declare {capability}"))
}

fn initialize(client: &Client) -> Verdict {
    let details = client.details();
    let info = &details.server_info;
    let missing: Vec<&str> = ["name", "version"]
        .into_iter()
        .filter(|key| !info.get(*key).is_some_and(Value::is_string))
        .collect();
    if !missing.is_empty() {
        return failed(
            format!(
                "serverInfo lacks {}: an Implementation has a name and a version",
                missing.join(" and ")
            ),
            Some(shown(info)),
        );
    }
    Verdict::Passed
}

/// Why a check of a method the 2026-07-28 revision removed does not apply to a server of it.
fn removed_in_stateless(client: &Client, method: &str) -> Option<Verdict> {
    (client.details().era == Era::Stateless).then(|| {
        Verdict::NotApplicable(format!(
            "the 2026-07-28 revision the server speaks has no {method}"
        ))
    })
}

async fn ping(client: &Client) -> Verdict {
    if let Some(removed) = removed_in_stateless(client, "ping") {
        return removed;
    }
    match request(client, "ping", json!({})).await {
        Ok(Value::Object(result)) if result.keys().all(|k| k == "_meta") => Verdict::Passed,
        Ok(other) => failed("ping's result must be an empty object", Some(shown(&other))),
        Err(e) => failed(format!("ping was not answered: {e}"), None),
    }
}

/// A refusal with `code` expected of `method`.
async fn refused_with(client: &Client, method: &str, params: Value, code: i64) -> Verdict {
    match request(client, method, params.clone()).await {
        Err(e) if rpc_code(&e) == Some(code) => Verdict::Passed,
        Err(e) => match rpc_code(&e) {
            Some(other) => failed(
                format!("{method} was refused with {other}, not {code}"),
                Some(e.to_string()),
            ),
            None => failed(format!("{method} was not answered: {e}"), None),
        },
        Ok(result) => failed(
            format!("{method} was answered with a result; it must be refused with {code}"),
            Some(format!("sent {} got {}", shown(&params), shown(&result))),
        ),
    }
}

async fn unknown_method(client: &Client) -> Verdict {
    refused_with(client, "agenvoy/no-such-method", json!({}), -32601).await
}

async fn undeclared_capability(client: &Client) -> Verdict {
    let undeclared: Vec<(&str, &str)> = [
        ("tools", "tools/list"),
        ("resources", "resources/list"),
        ("prompts", "prompts/list"),
    ]
    .into_iter()
    .filter(|(capability, _)| !declares(client, capability))
    .collect();
    if undeclared.is_empty() {
        return Verdict::NotApplicable("the server declares tools, resources and prompts".into());
    }
    for (_, method) in undeclared {
        if let verdict @ Verdict::Failed { .. } =
            refused_with(client, method, json!({}), -32601).await
        {
            return verdict;
        }
    }
    Verdict::Passed
}

async fn tools_list(client: &Client) -> Verdict {
    if !declares(client, "tools") {
        return not_declared("tools");
    }
    let tools = match client.list_tools().await {
        Ok(tools) => tools,
        Err(e) => return failed(format!("tools/list failed: {e}"), None),
    };
    let mut seen = std::collections::HashSet::new();
    for tool in &tools {
        if tool.name.is_empty() {
            return failed("a tool has an empty name", Some(shown(&tool_value(tool))));
        }
        if !seen.insert(tool.name.as_str()) {
            return failed(
                format!("two tools are named {:?}", tool.name),
                Some(shown(&tool_value(tool))),
            );
        }
        let schema = tool.input_schema_value();
        // 2026-07-28 takes any JSON Schema 2020-12 object; 2025-11-25 one of type object.
        let typed = client.details().era == Era::Stateless
            || schema.get("type").and_then(Value::as_str) == Some("object");
        if !schema.is_object() || !typed {
            return failed(
                format!(
                    "{:?}'s inputSchema must be a JSON Schema object whose type is \"object\"",
                    tool.name
                ),
                Some(shown(&schema)),
            );
        }
        if let Some(why) = schema_problem(&schema) {
            return failed(
                format!("{:?}'s inputSchema: {why}", tool.name),
                Some(shown(&schema)),
            );
        }
    }
    Verdict::Passed
}

/// What makes `schema`'s `properties` and `required` unusable, if anything.
fn schema_problem(schema: &Value) -> Option<String> {
    let properties = schema.get("properties");
    if properties.is_some_and(|p| !p.is_object()) {
        return Some("\"properties\" must be an object".into());
    }
    match schema.get("required") {
        None => None,
        Some(Value::Array(names)) if names.iter().all(Value::is_string) => None,
        Some(_) => Some("\"required\" must be an array of property names".into()),
    }
}

fn tool_value(tool: &Tool) -> Value {
    serde_json::to_value(tool).unwrap_or(Value::Null)
}

async fn tools_output_schema(client: &Client) -> Verdict {
    if !declares(client, "tools") {
        return not_declared("tools");
    }
    let Ok(tools) = client.list_tools().await else {
        return Verdict::NotApplicable("tools/list failed (see tools-list)".into());
    };
    let mut any = false;
    for tool in &tools {
        let Some(schema) = tool_value(tool).get("outputSchema").cloned() else {
            continue;
        };
        any = true;
        if schema.get("type").and_then(Value::as_str) != Some("object") {
            return failed(
                format!(
                    "{:?}'s outputSchema must be an object whose type is \"object\"",
                    tool.name
                ),
                Some(shown(&schema)),
            );
        }
        if let Some(why) = schema_problem(&schema) {
            return failed(
                format!("{:?}'s outputSchema: {why}", tool.name),
                Some(shown(&schema)),
            );
        }
    }
    if any {
        Verdict::Passed
    } else {
        Verdict::NotApplicable("no tool gives an outputSchema".into())
    }
}

async fn tools_call_unknown(client: &Client) -> Verdict {
    if !declares(client, "tools") {
        return not_declared("tools");
    }
    let params = json!({"name": "agenvoy-check-no-such-tool", "arguments": {}});
    match request(client, "tools/call", params.clone()).await {
        Err(e) if rpc_code(&e).is_some() => Verdict::Passed,
        Err(e) => failed(format!("tools/call was not answered: {e}"), None),
        Ok(result) => failed(
            "a call of a tool the server does not have was answered with a result; it must be a JSON-RPC error (-32602)",
            Some(format!("sent {} got {}", shown(&params), shown(&result))),
        ),
    }
}

async fn tools_call_read_only(client: &Client) -> Verdict {
    if !declares(client, "tools") {
        return not_declared("tools");
    }
    let Ok(tools) = client.list_tools().await else {
        return Verdict::NotApplicable("tools/list failed (see tools-list)".into());
    };
    let callable: Vec<Value> = tools
        .iter()
        .map(tool_value)
        .filter(|t| t["annotations"]["readOnlyHint"] == json!(true))
        .filter(|t| {
            let required = &t["inputSchema"]["required"];
            required.as_array().is_none_or(Vec::is_empty)
        })
        .collect();
    if callable.is_empty() {
        return Verdict::NotApplicable(
            "no tool is marked read-only (annotations.readOnlyHint) and needs no argument".into(),
        );
    }
    for tool in callable {
        let name = tool["name"].as_str().unwrap_or_default();
        let params = json!({"name": name, "arguments": {}});
        let result = match request(client, "tools/call", params).await {
            Ok(result) => result,
            Err(e) => return failed(format!("calling {name:?} failed: {e}"), None),
        };
        if let Some(why) = result_problem(&tool, &result) {
            return failed(format!("{name:?}: {why}"), Some(shown(&result)));
        }
    }
    Verdict::Passed
}

/// What is wrong with a tool's result, if anything.
fn result_problem(tool: &Value, result: &Value) -> Option<String> {
    let Some(content) = result.get("content").and_then(Value::as_array) else {
        return Some("a tool result must have a content array".into());
    };
    for item in content {
        let valid = match item.get("type").and_then(Value::as_str) {
            Some("text") => item.get("text").is_some_and(Value::is_string),
            Some("image" | "audio") => {
                item.get("data").is_some_and(Value::is_string)
                    && item.get("mimeType").is_some_and(Value::is_string)
            }
            Some("resource_link") => item.get("uri").is_some_and(Value::is_string),
            Some("resource") => item.get("resource").is_some_and(Value::is_object),
            _ => false,
        };
        if !valid {
            return Some(format!(
                "a content item is not a valid content block: {}",
                shown(item)
            ));
        }
    }
    let error = result.get("isError") == Some(&json!(true));
    if let Some(schema) = tool.get("outputSchema")
        && !error
    {
        let Some(structured) = result.get("structuredContent") else {
            return Some(
                "the tool gives an outputSchema, so its result must have structuredContent".into(),
            );
        };
        return structured_problem(schema, structured);
    }
    None
}

/// Where `structured` breaks `schema`'s top level (its required properties and their types).
fn structured_problem(schema: &Value, structured: &Value) -> Option<String> {
    if schema["type"] != json!("object") {
        return None;
    }
    let Some(object) = structured.as_object() else {
        return Some("structuredContent must be an object, as its outputSchema says".into());
    };
    for name in schema["required"].as_array().into_iter().flatten() {
        let name = name.as_str().unwrap_or_default();
        if !object.contains_key(name) {
            return Some(format!(
                "structuredContent lacks {name:?}, which its outputSchema requires"
            ));
        }
    }
    for (name, value) in object {
        let Some(wanted) = schema["properties"][name]["type"].as_str() else {
            continue;
        };
        let fits = match wanted {
            "string" => value.is_string(),
            "number" => value.is_number(),
            "integer" => value.is_i64() || value.is_u64(),
            "boolean" => value.is_boolean(),
            "array" => value.is_array(),
            "object" => value.is_object(),
            "null" => value.is_null(),
            _ => true,
        };
        if !fits {
            return Some(format!(
                "structuredContent's {name:?} is {value}, not of the type {wanted} its outputSchema gives"
            ));
        }
    }
    None
}

async fn resources_list(client: &Client) -> Verdict {
    if !declares(client, "resources") {
        return not_declared("resources");
    }
    match request(client, "resources/list", json!({})).await {
        Ok(result) => {
            let Some(resources) = result.get("resources").and_then(Value::as_array) else {
                return failed(
                    "resources/list's result must have a resources array",
                    Some(shown(&result)),
                );
            };
            for resource in resources {
                let has = |key: &str| resource.get(key).is_some_and(Value::is_string);
                if !has("uri") || !has("name") {
                    return failed(
                        "a resource must have a uri and a name",
                        Some(shown(resource)),
                    );
                }
            }
            Verdict::Passed
        }
        Err(e) => failed(format!("resources/list failed: {e}"), None),
    }
}

async fn resources_read(client: &Client) -> Verdict {
    if !declares(client, "resources") {
        return not_declared("resources");
    }
    let listed = request(client, "resources/list", json!({})).await;
    let Some(uri) = listed
        .ok()
        .and_then(|r| r["resources"][0]["uri"].as_str().map(str::to_string))
    else {
        return Verdict::NotApplicable("the server lists no resource".into());
    };
    match request(client, "resources/read", json!({"uri": uri})).await {
        Ok(result) => {
            let Some(contents) = result.get("contents").and_then(Value::as_array) else {
                return failed(
                    "resources/read's result must have a contents array",
                    Some(shown(&result)),
                );
            };
            for item in contents {
                let uri_ok = item.get("uri").is_some_and(Value::is_string);
                let body_ok = item.get("text").is_some_and(Value::is_string)
                    || item.get("blob").is_some_and(Value::is_string);
                if !uri_ok || !body_ok {
                    return failed(
                        "each resource content must have a uri and a text or a blob",
                        Some(shown(item)),
                    );
                }
            }
            Verdict::Passed
        }
        Err(e) => failed(format!("reading {uri:?} failed: {e}"), None),
    }
}

async fn prompts_list(client: &Client) -> Verdict {
    if !declares(client, "prompts") {
        return not_declared("prompts");
    }
    match request(client, "prompts/list", json!({})).await {
        Ok(result) => {
            let Some(prompts) = result.get("prompts").and_then(Value::as_array) else {
                return failed(
                    "prompts/list's result must have a prompts array",
                    Some(shown(&result)),
                );
            };
            match prompts
                .iter()
                .find(|p| !p.get("name").is_some_and(Value::is_string))
            {
                Some(prompt) => failed("a prompt must have a name", Some(shown(prompt))),
                None => Verdict::Passed,
            }
        }
        Err(e) => failed(format!("prompts/list failed: {e}"), None),
    }
}

async fn prompts_missing_argument(client: &Client) -> Verdict {
    if !declares(client, "prompts") {
        return not_declared("prompts");
    }
    let listed = request(client, "prompts/list", json!({}))
        .await
        .unwrap_or_default();
    let with_required = listed["prompts"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| {
            p["arguments"]
                .as_array()
                .is_some_and(|a| a.iter().any(|arg| arg["required"] == json!(true)))
        });
    let Some(name) = with_required.and_then(|p| p["name"].as_str()) else {
        return Verdict::NotApplicable("no prompt has a required argument".into());
    };
    let params = json!({"name": name, "arguments": {}});
    refused_with(client, "prompts/get", params, -32602).await
}

async fn logging_set_level(client: &Client) -> Verdict {
    if !declares(client, "logging") {
        return not_declared("logging");
    }
    if let Some(removed) = removed_in_stateless(client, "logging/setLevel") {
        return removed;
    }
    match request(client, "logging/setLevel", json!({"level": "info"})).await {
        Ok(Value::Object(result)) if result.keys().all(|k| k == "_meta") => Verdict::Passed,
        Ok(other) => failed(
            "logging/setLevel's result must be empty",
            Some(shown(&other)),
        ),
        Err(e) => failed(format!("logging/setLevel failed: {e}"), None),
    }
}

fn link(check: &Check) -> String {
    format!("{SPEC}/{}", check.section)
}

fn print_text(findings: &[Finding]) -> std::io::Result<()> {
    for finding in findings {
        let check = finding.check;
        match &finding.verdict {
            Verdict::Passed => out!("passed  {}", check.id)?,
            Verdict::NotApplicable(why) => out!("n/a     {}: {}", check.id, escape_controls(why))?,
            Verdict::Failed { why, exchange } => {
                out!("FAILED  {}: {}", check.id, escape_controls(why))?;
                out!("        the spec: {} ({})", check.title, link(check))?;
                if let Some(exchange) = exchange {
                    out!("        exchanged: {}", escape_controls(exchange))?;
                }
            }
        }
    }
    let count = |p: fn(&Verdict) -> bool| findings.iter().filter(|f| p(&f.verdict)).count();
    out!(
        "{} passed, {} failed, {} not applicable",
        count(|v| matches!(v, Verdict::Passed)),
        count(|v| matches!(v, Verdict::Failed { .. })),
        count(|v| matches!(v, Verdict::NotApplicable(_)))
    )
}

fn report_json(server: &str, findings: &[Finding]) -> Value {
    let checks: Vec<Value> = findings
        .iter()
        .map(|f| {
            let (verdict, why, exchange) = match &f.verdict {
                Verdict::Passed => ("passed", None, None),
                Verdict::Failed { why, exchange } => {
                    ("failed", Some(why.clone()), exchange.clone())
                }
                Verdict::NotApplicable(why) => ("not_applicable", Some(why.clone()), None),
            };
            json!({
                "id": f.check.id,
                "title": f.check.title,
                "spec": link(f.check),
                "scenario": f.check.scenario,
                "verdict": verdict,
                "why": why,
                "exchange": exchange,
                "ms": f.took.as_secs_f64() * 1e3,
            })
        })
        .collect();
    let failed = findings
        .iter()
        .filter(|f| matches!(f.verdict, Verdict::Failed { .. }))
        .count();
    json!({"server": server, "failed": failed, "checks": checks})
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

fn print_junit(findings: &[Finding]) -> std::io::Result<()> {
    let failures = findings
        .iter()
        .filter(|f| matches!(f.verdict, Verdict::Failed { .. }))
        .count();
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
                let detail = format!(
                    "{}\nthe spec: {} ({})\n{}",
                    why,
                    f.check.title,
                    link(f.check),
                    exchange
                        .as_deref()
                        .map_or(String::new(), |e| format!("exchanged: {e}"))
                );
                out!(
                    r#"      <failure message="{}" type="{}">{}</failure>"#,
                    xml(why),
                    xml(f.check.id),
                    xml(&detail)
                )?;
                out!("    </testcase>")?;
            }
        }
    }
    out!("  </testsuite>")?;
    out!("</testsuites>")
}
