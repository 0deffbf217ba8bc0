//! `agenvoy-mcp probe`: connect one server with no config (a URL, or a command after `--`),
//! print what it is, optionally call one tool.
//!
//! With `--json` the output is one JSON object:
//!
//! ```json
//! {
//!   "server": "<name used in logs>",
//!   "transport": "stdio" | "http",
//!   "era": "handshake",
//!   "protocolVersion": "2025-11-25",
//!   "serverInfo": {"name": "...", "version": "..."},
//!   "capabilities": {"tools": {}},
//!   "instructions": "..." | null,
//!   "tools": [{"name": "...", "description": "...", "inputSchema": {}}],
//!   "call": {"tool": "echo", "text": "hi", "isError": false, "totalBytes": 2}
//! }
//! ```
//!
//! Members are named as the management API names them (docs/API.md): `call` holds what
//! `POST /v1/mcp/call` answers (the text the model sees, `isError`, `totalBytes`) and the
//! tool's name; `tools` are the server's tool objects as it sent them (`inputSchema`). `call`
//! is present only with `--call`. On failure nothing is printed to stdout; one line on
//! stderr names the step that failed (`start`, `initialize`, `tools/list`, `tools/call`), and
//! the exit code is 1. A tool that reports `isError` prints its output and exits with 1 too.
//! If stdout closes early (`probe ... | head -1`), the server is closed and the exit code is
//! 141 (see [`super::output`]).
//! What the server sent is shown with its control characters escaped (newlines and tabs of
//! the instructions and the tool's output kept).

use agenvoy_mcp::__private::text::{escape_controls, escape_controls_keep_lines};
use agenvoy_mcp::__private::transport::Transport;
use agenvoy_mcp::__private::transport::http::{HttpConfig, HttpTransport};
use agenvoy_mcp::__private::transport::stdio::{StdioConfig, StdioTransport};
use agenvoy_mcp::{Client, ClientOptions, Error, Tool, ToolOutput};
use serde_json::{Value, json};
use std::process::ExitCode;
use std::sync::Arc;

/// What `probe` was asked to do.
pub struct ProbeArgs {
    /// Print JSON instead of text.
    pub json: bool,
    /// The tool to call, if any.
    pub call: Option<String>,
    /// The call's arguments, as JSON text.
    pub args: Option<String>,
    /// The server URL (HTTP), if given instead of a command.
    pub url: Option<String>,
    /// The server command and its arguments.
    pub command: Vec<String>,
    /// Pass the whole environment to the command (else the small default set).
    pub inherit_env: bool,
    /// Timeout of each request.
    pub timeout: std::time::Duration,
}

fn step_failed(step: &str, error: impl std::fmt::Display) -> ExitCode {
    eprintln!(
        "probe failed at {step}: {}",
        escape_controls(&error.to_string())
    );
    ExitCode::from(1)
}

fn step_of(error: &Error) -> String {
    match &error.kind {
        agenvoy_mcp::ErrorKind::Spawn(_) => "start".into(),
        _ => error.method.clone().unwrap_or_else(|| "initialize".into()),
    }
}

/// Runs the probe.
pub async fn run(args: ProbeArgs) -> ExitCode {
    let arguments: Value = match args.args.as_deref().map(serde_json::from_str).transpose() {
        Ok(v) => v.unwrap_or_else(|| json!({})),
        Err(e) => return step_failed("arguments", format!("--args is not valid JSON: {e}")),
    };
    let options = ClientOptions {
        timeout: args.timeout,
        ..Default::default()
    };
    // Taken before the server starts: its process group does not get the terminal's Ctrl-C.
    let mut signals = match super::Signals::listen() {
        Ok(s) => s,
        Err(e) => return step_failed("start", format!("cannot handle signals: {e}")),
    };
    let limits = options.limits();
    let (name, opened) = match (&args.url, args.command.split_first()) {
        (Some(url), None) => {
            let name = url_name(url);
            let config = HttpConfig {
                header_timeout: args.timeout,
                ..HttpConfig::new(url)
            };
            let opened = HttpTransport::new(&name, &config, limits)
                .map(|(t, inbound)| (Arc::new(t) as Arc<dyn Transport>, inbound));
            (name, opened)
        }
        (None, Some((program, rest))) => {
            let name = std::path::Path::new(program)
                .file_name()
                .map_or_else(|| program.clone(), |n| n.to_string_lossy().into_owned());
            let config = StdioConfig {
                command: program.clone(),
                args: rest.to_vec(),
                inherit_env: args.inherit_env,
                ..Default::default()
            };
            let opened = StdioTransport::spawn(&name, &config, limits)
                .map(|(t, inbound)| (Arc::new(t) as Arc<dyn Transport>, inbound));
            (name, opened)
        }
        _ => {
            return step_failed(
                "arguments",
                "give either a server URL, or the server command after --",
            );
        }
    };
    let (transport, inbound) = match opened {
        Ok(opened) => opened,
        Err(e) => return step_failed(&step_of(&e), e),
    };
    let probed = async {
        let client = match Client::connect(&name, transport.clone(), inbound, options).await {
            Ok(c) => c,
            Err(e) => return step_failed(&step_of(&e), e),
        };
        let code = probe(&client, &args, arguments).await;
        client.close().await;
        code
    };
    tokio::select! {
        code = probed => code,
        code = signals.next() => {
            transport.close().await;
            code
        }
    }
}

async fn probe(client: &Client, args: &ProbeArgs, arguments: Value) -> ExitCode {
    let details = client.details();
    let tools = match client.list_tools().await {
        Ok(t) => t,
        Err(e) if !details.has_capability("tools") => {
            tracing::debug!("tools/list failed on a server without the tools capability: {e}");
            Vec::new()
        }
        Err(e) => return step_failed("tools/list", e),
    };
    let call = match &args.call {
        Some(tool) => match client.call_tool(tool, arguments).await {
            Ok(output) => Some((tool.clone(), output)),
            Err(e) => return step_failed("tools/call", e),
        },
        None => None,
    };
    let code = match &call {
        Some((_, output)) if output.is_error => ExitCode::from(1),
        _ => ExitCode::SUCCESS,
    };
    let written = report(client, args.json, &tools, call.as_ref()).map(|()| code);
    super::output::exit_code("probe", written)
}

/// Prints what the server is (and the call's output), as text or (`json`) one JSON
/// document; stops at the first failed write.
fn report(
    client: &Client,
    json: bool,
    tools: &[Tool],
    call: Option<&(String, ToolOutput)>,
) -> std::io::Result<()> {
    let details = client.details();
    if json {
        let mut report = json!({
            "server": client.name(),
            "transport": client.session().transport().kind(),
            "era": details.era.name(),
            "protocolVersion": details.protocol_version,
            "serverInfo": details.server_info,
            "capabilities": details.capabilities,
            "instructions": details.instructions,
            "tools": tools,
        });
        if let Some((tool, output)) = call {
            report["call"] = json!({"tool": tool, "text": output.text,
                                    "isError": output.is_error, "totalBytes": output.total_bytes});
        }
        super::output::json(&report)?;
    } else {
        let info = &details.server_info;
        let field = |k: &str| {
            let text = info.get(k).and_then(Value::as_str).unwrap_or("?");
            escape_controls(text).into_owned()
        };
        out!("server:       {} {}", field("name"), field("version"))?;
        out!("transport:    {}", client.session().transport().kind())?;
        out!("era:          {}", details.era.name())?;
        out!(
            "protocol:     {}",
            escape_controls(&details.protocol_version)
        )?;
        out!(
            "capabilities: {}",
            escape_controls(&details.capabilities.to_string())
        )?;
        match &details.instructions {
            Some(text) => out!(
                "instructions:\n{}",
                indent(&escape_controls_keep_lines(text))
            )?,
            None => out!("instructions: (none)")?,
        }
        out!("tools ({}):", tools.len())?;
        let rows: Vec<Vec<String>> = tools
            .iter()
            .map(|tool| {
                let description = tool.description.as_deref().unwrap_or("");
                let first_line = description.lines().next().unwrap_or("");
                vec![
                    escape_controls(&tool.name).into_owned(),
                    escape_controls(first_line).into_owned(),
                ]
            })
            .collect();
        for line in super::output::columns(&rows) {
            out!("  {line}")?;
        }
        if let Some((tool, output)) = call {
            let flag = if output.is_error { " (tool error)" } else { "" };
            out!("call {}{flag}:", escape_controls(tool))?;
            out!("{}", escape_controls_keep_lines(&output.text))?;
        }
    }
    Ok(())
}

/// A short name for an HTTP server in logs and errors: its host and port (never the
/// userinfo, which may hold a password).
fn url_name(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    authority
        .rsplit('@')
        .next()
        .unwrap_or(authority)
        .to_string()
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("  {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}
