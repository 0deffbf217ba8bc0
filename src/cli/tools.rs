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
//! With `--json`, one object: `{"config": {"path", "found"}, "servers": [{"name",
//! "transport", "era", "protocolVersion", "state", "lastError", "toolCount", "hasInstructions"}],
//! "tools": [{"name", "description", "input_schema", "server", "tool"}], "collisions": [...]}`.
//!
//! Exit code 0 whenever the config could be read (failed servers are shown, not fatal); 1 if
//! it could not, with the reason on stderr; 141 if stdout closed early (see
//! [`super::output`]). What the servers sent (versions, descriptions,
//! errors) is shown with its control characters escaped.

use super::HostArgs;
use agenvoy_mcp::__private::text::escape_controls;
use agenvoy_mcp::host::{Manager, ManagerOptions};
use serde_json::json;
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
    super::run_with_servers(&args.host, options, "tools", async |manager, source| {
        let written = report(manager, source, args.json).map(|()| ExitCode::SUCCESS);
        super::output::exit_code("tools", written)
    })
    .await
}

/// Prints the servers and their tools, as text or (`json`) one JSON document; stops at the
/// first failed write.
fn report(manager: &Manager, source: &str, json: bool) -> std::io::Result<()> {
    let collisions = manager.register_all();
    let status = manager.status();
    let registry = manager.registry();
    if json {
        let tools: Vec<_> = registry
            .tools()
            .map(|t| {
                json!({
                    "name": t.definition.name,
                    "description": t.definition.description,
                    "input_schema": t.definition.input_schema,
                    "server": t.server,
                    "tool": t.tool,
                })
            })
            .collect();
        let report = json!({
            "config": {"path": source, "found": manager.config().found()},
            "servers": status,
            "tools": tools,
            "collisions": collisions.iter().map(ToString::to_string).collect::<Vec<_>>(),
        });
        super::output::json(&report)?;
    } else {
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
    }
    Ok(())
}
