//! Connects one stdio MCP server and prints its tools.
//!
//! ```sh
//! cargo build && cargo run --example list_tools -- target/debug/agenvoy-mcp fixture-server
//! ```

use agenvoy_mcp::{Client, ClientOptions, StdioConfig};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut argv = std::env::args().skip(1);
    let command = argv.next().ok_or("usage: list_tools COMMAND [ARGS...]")?;
    let config = StdioConfig::new(command).args(argv);
    let client = Client::connect_stdio("example", &config, ClientOptions::default()).await?;
    println!(
        "{} speaks {}",
        client.details().server_info["name"],
        client.details().protocol_version
    );
    for tool in client.list_tools().await? {
        println!(
            "- {}: {}",
            tool.name,
            tool.description.as_deref().unwrap_or("")
        );
    }
    client.close().await;
    Ok(())
}
