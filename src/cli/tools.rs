//! `agenvoy-mcp tools [--config FILE] [--json [--format F]] [--search QUERY [--limit N]]`: connect every
//! configured server, print each server's status, then every registered tool; with
//! `--search`, only the tools that best match the query, best first (the ranking of tool
//! search, see `host::ToolIndex`), each with its score.
//!
//! Text output:
//!
//! ```text
//! config: /home/me/.config/agenvoy/mcp.json
//! servers (2):
//!   broken   failed     stdio  -           0 tools
//!     error: mcp server "broken": could not start the server: ./broken-server: No such
//!            file or directory (os error 2); check its command and args
//!   fixture  connected  stdio  2025-11-25  9 tools  instructions
//! tools (9):
//!   mcp__fixture__add   Adds two numbers.
//!   mcp__fixture__echo  Returns the text it is given (and writes it to stderr if asked).
//! ```
//!
//! Under each HTTP server, the proxy its exchanges go through (`    proxy: direct`, or the
//! proxy's URL without credentials). Under each on-demand server (`"start": "on_demand"`),
//! `    start: on demand (...)`: its state is `idle` while it is not running, its tools
//! those of its kept catalog (a server never seen is started once to fill it).
//!
//! Columns are as wide as their widest cell. On a terminal, an error too long for its line
//! wraps under its start; into a pipe it stays one line.
//!
//! With `--search`, each tool found with its score (0 to 1, how much of the query it has;
//! `weak` under `host::WEAK_SCORE`), and a last line when no tool matches or every match is
//! weak:
//!
//! ```text
//! search "merge a pull request" (3 of 139 tools):
//!   mcp__github__merge_pull_request              1.00  Merge a pull request in a GitHub repository.
//!   mcp__github__create_pull_request             0.64  Create a new pull request in a GitHub repository.
//!   mcp__github__request_pull_request_reviewers  0.44  Request reviewers for a pull request.
//! search "compress a picture" (3 of 139 tools):
//!   mcp__everything__gzip-file-as-resource  0.31 weak  Compresses a single file using gzip compression. ...
//!   mcp__everything__get-tiny-image         0.27 weak  Returns a tiny MCP logo image.
//!   mcp__everything__get-annotated-message  0.24 weak  Demonstrates how annotations can be used to ...
//! every match is weak: no tool has much of what the query says; try other words
//! ```
//!
//! With `--json`, one object, its members named as the management API names them
//! (docs/API.md): `{"config": {"path", "found"}, "servers": [{"name", "transport", "era",
//! "protocolVersion", "state", "lastError", "toolCount", "hasInstructions", "proxy", "start",
//! "idleTimeout"}], "tools":
//! [{"name", "server", "tool", "description", "inputSchema"}], "collisions": [...]}`. `path`
//! is the config file's path alone; `found` says whether it exists (when it does not, the
//! embedded default config is used). With `--json --search`, `{"tools": [...]}` as `GET
//! /v1/mcp/tools/search` answers: each tool as above with its `"score"` and `"weak"`. With
//! `--json --format F`, `{"format": F, "tools": [...]}`:
//! the tools as the request's tool list of that model API, as `GET /v1/mcp/tools?format=F`
//! answers (`host::model_api`).
//!
//! Exit code 0 when every server that is not disabled connected and listed its tools (or is
//! idle, on demand, with its catalog); 3
//! ([`SERVERS_FAILED`]) when any failed (or needs a login): the report is printed all the
//! same, each error once, in it; 1 if the config could not be read, with the reason on
//! stderr; 141 if stdout closed early (see [`super::output`]). What the servers sent
//! (versions, descriptions, errors) is shown with its control characters escaped. The log
//! lines that repeat the report (a server's failure, an invalid entry, a collision) are left
//! out unless `AGENVOY_LOG` asks for them.

use super::{HostArgs, output};
use agenvoy_mcp::host::model_api::{ModelApi, tool_list};
use agenvoy_mcp::host::{Manager, ManagerOptions, RegisteredTool, ServerState, Start, ToolMatch};
use agenvoy_mcp::safe_text::escape_controls;
use serde_json::{Value, json};
use std::path::Path;
use std::process::ExitCode;

/// What `tools` was asked to do.
pub struct ToolsArgs {
    /// The config and timeout.
    pub host: HostArgs,
    /// Print JSON instead of text.
    pub json: bool,
    /// Print only the tools that best match this query.
    pub search: Option<String>,
    /// How many tools a search prints.
    pub limit: usize,
    /// With `json`: the tools shaped for this model API.
    pub format: Option<ModelApi>,
}

/// Runs `tools`.
pub async fn run(args: ToolsArgs) -> ExitCode {
    let options = ManagerOptions::default();
    let path = args.host.config_path();
    super::run_with_servers(&args.host, options, "tools", async |manager, source| {
        let written = if let Some(query) = &args.search {
            report_search(manager, query, args.limit, args.json)
        } else if let Some(api) = args.format {
            let tools = tool_list(api, &manager.tool_definitions());
            output::json(&json!({"format": api.name(), "tools": tools}))
        } else if args.json {
            report_json(manager, &path)
        } else {
            report(manager, source)
        };
        let failed = manager.status().iter().any(|s| {
            !matches!(
                s.state,
                ServerState::Connected | ServerState::Disabled | ServerState::Idle
            )
        });
        let code = if failed {
            ExitCode::from(SERVERS_FAILED)
        } else {
            ExitCode::SUCCESS
        };
        output::exit_code("tools", written.map(|()| code))
    })
    .await
}

/// The exit code of `tools` when a server it should list did not connect (the report, with
/// every error, is printed all the same).
pub const SERVERS_FAILED: u8 = 3;

/// Prints the tools that best match `query`, best first: their names, scores (marked `weak`
/// under `host::WEAK_SCORE`) and descriptions, and a line saying so when no tool matches
/// or every match is weak; or with `json` `{"tools": [...]}` as `GET /v1/mcp/tools/search`
/// answers, each tool with its `score` and `weak`.
fn report_search(manager: &Manager, query: &str, limit: usize, json: bool) -> std::io::Result<()> {
    manager.register_all();
    let index = manager.tool_index();
    let found = index.matches(query, limit);
    if json {
        let tools: Vec<Value> = found
            .iter()
            .map(|m| {
                let mut tool = tool_json(m.tool);
                tool["score"] = json!(m.score);
                tool["weak"] = json!(m.is_weak());
                tool
            })
            .collect();
        return output::json(&json!({"tools": tools}));
    }
    let rows: Vec<Vec<String>> = found
        .iter()
        .map(|m| {
            let first_line = m.tool.definition.description.lines().next().unwrap_or("");
            let weak = if m.is_weak() { " weak" } else { "" };
            vec![
                m.tool.definition.name.clone(),
                format!("{:.2}{weak}", m.score),
                escape_controls(first_line).into_owned(),
            ]
        })
        .collect();
    out!(
        "search {:?} ({} of {} tools):",
        escape_controls(query),
        found.len(),
        index.len()
    )?;
    for line in output::columns(&rows) {
        out!("  {line}")?;
    }
    if found.is_empty() {
        out!("no tool has any word of the query; try other words")?;
    } else if found.iter().all(ToolMatch::is_weak) {
        out!("every match is weak: no tool has much of what the query says; try other words")?;
    }
    Ok(())
}

/// One registered tool as `--json` prints it.
fn tool_json(t: &RegisteredTool) -> Value {
    json!({
        "name": t.definition.name,
        "server": t.server,
        "tool": t.tool,
        "description": t.definition.description,
        "inputSchema": t.definition.input_schema,
    })
}

/// Prints the servers and their tools as one JSON document.
fn report_json(manager: &Manager, path: &Path) -> std::io::Result<()> {
    let collisions = manager.register_all();
    let tools: Vec<Value> = manager.registry().tools().map(tool_json).collect();
    output::json(&json!({
        "config": {"path": path.to_string_lossy(), "found": manager.config().found()},
        "servers": manager.status(),
        "tools": tools,
        "collisions": collisions.iter().map(ToString::to_string).collect::<Vec<_>>(),
    }))
}

/// Prints the servers and their tools as text; stops at the first failed write.
fn report(manager: &Manager, source: &str) -> std::io::Result<()> {
    let collisions = manager.register_all();
    let status = manager.status();
    let registry = manager.registry();
    out!("config: {source}")?;
    out!("servers ({}):", status.len())?;
    let rows: Vec<Vec<String>> = status
        .iter()
        .map(|s| {
            vec![
                s.name.clone(),
                s.state.name().to_string(),
                s.transport.clone(),
                escape_controls(s.protocol_version.as_deref().unwrap_or("-")).into_owned(),
                format!("{} tools", s.tool_count),
                if s.has_instructions {
                    "instructions"
                } else {
                    ""
                }
                .to_string(),
            ]
        })
        .collect();
    for (s, line) in status.iter().zip(output::columns(&rows)) {
        out!("  {line}")?;
        if let Some(proxy) = &s.proxy {
            out!("    proxy: {}", escape_controls(proxy))?;
        }
        if let Start::OnDemand { idle_timeout } = s.start {
            let after = idle_timeout.as_secs_f64();
            out!("    start: on demand (tools from its kept catalog; stops after {after} s idle)")?;
        }
        if let Some(e) = &s.last_error {
            let mut e = escape_controls(e).into_owned();
            if s.state == ServerState::NeedsLogin {
                e = format!("{e}; {}", output::login_advice(&s.name));
            }
            out!("{}", output::labelled("    error: ", &e))?;
        }
    }
    out!("tools ({}):", registry.len())?;
    let rows: Vec<Vec<String>> = registry
        .tools()
        .map(|t| {
            let first_line = t.definition.description.lines().next().unwrap_or("");
            vec![
                t.definition.name.clone(),
                escape_controls(first_line).into_owned(),
            ]
        })
        .collect();
    for line in output::columns(&rows) {
        out!("  {line}")?;
    }
    if !collisions.is_empty() {
        out!("collisions ({}):", collisions.len())?;
        for c in &collisions {
            out!("  {}", escape_controls(&c.to_string()))?;
        }
    }
    Ok(())
}
