//! The benchmark's client program on agenvoy-mcp (see `../../common.rs` for its command line).

#[path = "../../common.rs"]
mod common;

use agenvoy_mcp::{Client, ClientOptions, HttpConfig, StdioConfig};
use serde_json::json;

struct Ours(Client);

impl common::Peer for Ours {
    async fn tools(&self) -> Result<usize, String> {
        self.0
            .list_tools()
            .await
            .map(|t| t.len())
            .map_err(|e| e.to_string())
    }

    async fn echo(&self, text: &str) -> Result<String, String> {
        let out = self.0.call_tool("echo", json!({ "text": text })).await;
        out.map(|o| o.text).map_err(|e| e.to_string())
    }

    async fn big(&self, bytes: u64) -> Result<u64, String> {
        // The client renders the result and keeps its first `output_cap` bytes (what a model
        // sees); `total_bytes` counts the whole text.
        let out = self.0.call_tool("big", json!({ "bytes": bytes })).await;
        out.map(|o| o.total_bytes).map_err(|e| e.to_string())
    }

    async fn close(&self) {
        self.0.close().await
    }
}

async fn connect(args: &common::Args) -> Result<Ours, String> {
    let options = ClientOptions::default();
    let client = if args.transport == "stdio" {
        let mut words = args.target.split(' ').map(String::from);
        let config = StdioConfig::new(words.next().unwrap_or_default()).args(words);
        Client::connect_stdio("peers", &config, options).await
    } else {
        let config = HttpConfig::new(&args.target);
        Client::connect_http("peers", &config, options).await
    };
    client.map(Ours).map_err(|e| e.to_string())
}

fn main() {
    let args = common::args();
    common::runtime().block_on(common::drive(&args, connect(&args)));
}
