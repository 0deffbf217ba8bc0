//! `agenvoy-mcp tools [--config FILE] [--json]`: connect every configured server, print each
//! server's status, then every registered tool.
//!
//! Text output:
//!
//! ```text
//! config: /home/me/.config/agenvoy/mcp.json
//! servers (2):
//!   fixture   connected  stdio  2025-11-25  9 tools  instructions
//!   broken    failed     stdio  -           0 tools
//!     error: mcp server "broken": could not start the server: ...
//! tools (9):
//!   mcp__fixture__add    Adds two numbers.
//! ```
//!
//! With `--json`, one object, its members named as the management API names them
//! (docs/API.md): `{"config": {"path", "found"}, "servers": [{"name", "transport", "era",
//! "protocolVersion", "state", "lastError", "toolCount", "hasInstructions"}], "tools":
//! [{"name", "server", "tool", "description", "inputSchema"}], "collisions": [...]}`. `path`
//! is the config file's path alone; `found` says whether it exists (when it does not, the
//! embedded default config is used).
//!
//! Exit code 0 whenever the config could be read (failed servers are shown, not fatal); 1 if
//! it could not, with the reason on stderr; 141 if stdout closed early (see
//! [`super::output`]). What the servers sent (versions, descriptions,
//! errors) is shown with its control characters escaped.

use super::HostArgs;
use agenvoy_mcp::__private::text::escape_controls;
use agenvoy_mcp::host::{Manager, ManagerOptions};
use serde_json::json;
use std::path::Path;
use std::process::ExitCode;

/// What `tools` was asked to do.
pub struct ToolsArgs {
    /// The config and timeout.
    pub host: HostArgs,
    /// Print JSON instead of text.
    pub json: bool,
}

/// Runs `tools`.
pub async fn run(args: ToolsArgs) -> ExitCode {
    let options = ManagerOptions::default();
    let path = args.host.config_path();
    super::run_with_servers(&args.host, options, "tools", async |manager, source| {
        let written = if args.json {
            report_json(manager, &path)
        } else {
            report(manager, source)
        };
        let written = written.map(|()| ExitCode::SUCCESS);
        super::output::exit_code("tools", written)
    })
    .await
}

/// Prints the servers and their tools as one JSON document.
fn report_json(manager: &Manager, path: &Path) -> std::io::Result<()> {
    let collisions = manager.register_all();
    let tools: Vec<_> = manager
        .registry()
        .tools()
        .map(|t| {
            json!({
                "name": t.definition.name,
                "server": t.server,
                "tool": t.tool,
                "description": t.definition.description,
                "inputSchema": t.definition.input_schema,
            })
        })
        .collect();
    super::output::json(&json!({
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
    let width = status.iter().map(|s| s.name.len()).max().unwrap_or(0);
    for s in &status {
        let instructions = if s.has_instructions {
            "  instructions"
        } else {
            ""
        };
        out!(
            "  {:<width$}  {:<12}  {:<5}  {:<10}  {} tools{instructions}",
            s.name,
            s.state.name(),
            s.transport,
            escape_controls(s.protocol_version.as_deref().unwrap_or("-")),
            s.tool_count,
        )?;
        if let Some(e) = &s.last_error {
            out!("    error: {}", escape_controls(e))?;
        }
    }
    out!("tools ({}):", registry.len())?;
    let width = registry
        .tools()
        .map(|t| t.definition.name.len())
        .max()
        .unwrap_or(0);
    for t in registry.tools() {
        let first_line = t.definition.description.lines().next().unwrap_or("");
        out!(
            "  {:<width$}  {}",
            t.definition.name,
            escape_controls(first_line)
        )?;
    }
    if !collisions.is_empty() {
        out!("collisions ({}):", collisions.len())?;
        for c in &collisions {
            out!("  {}", escape_controls(&c.to_string()))?;
        }
    }
    Ok(())
}
