//! Embeds the host runtime the way an agent host does: connect every configured server,
//! hand the model the tool definitions and the instructions, and run one call through the
//! confirm gate.
//!
//! ```sh
//! cargo build && cargo run --example host -- target/debug/agenvoy-mcp
//! ```
//!
//! The argument is the `agenvoy-mcp` binary, whose `fixture-server` (a small demo server) is
//! the one server of the embedded default config; the allowlist goes to a temporary folder.

use agenvoy_mcp::host::{Config, Manager, ManagerOptions, PermissionMode};
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let program = std::env::args()
        .nth(1)
        .ok_or("usage: host PATH_TO_agenvoy-mcp")?;
    let config = Config::embedded_default(program.as_ref());
    let folder = std::env::temp_dir().join(format!("agenvoy-example-{}", std::process::id()));
    let options = ManagerOptions::default().with_allowlist_path(folder.join("allow_tool"));
    let manager = Manager::new(config, options).await;
    for status in manager.status() {
        println!(
            "{}: {} ({} tools)",
            status.name,
            status.state.name(),
            status.tool_count
        );
    }
    for tool in manager.tool_definitions() {
        println!("- {}", tool.name);
    }
    println!("{}", manager.instructions());
    // `auto` runs the call at once; `confirm` would ask the allowlist, then the callback.
    let output = manager
        .call(
            "mcp__fixture__echo",
            json!({"text": "hello from the host"}),
            PermissionMode::Auto,
        )
        .await?;
    println!("{}", output.text);
    manager.close().await;
    Ok(())
}
