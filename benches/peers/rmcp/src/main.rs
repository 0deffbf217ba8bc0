//! The benchmark's client program on rmcp, the official Rust SDK (see `../../common.rs` for
//! its command line). Written as its README and tests show: `().serve(transport)`.

#[path = "../../common.rs"]
mod common;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{Peer, RoleClient, RunningService};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use std::sync::Mutex;

struct Rmcp {
    peer: Peer<RoleClient>,
    service: Mutex<Option<RunningService<RoleClient, ()>>>,
}

impl Rmcp {
    async fn call(&self, name: &'static str, args: serde_json::Value) -> Result<String, String> {
        let serde_json::Value::Object(args) = args else {
            unreachable!()
        };
        let params = CallToolRequestParams::new(name).with_arguments(args);
        let result = self
            .peer
            .call_tool(params)
            .await
            .map_err(|e| e.to_string())?;
        let text = result.content.first().and_then(|c| c.as_text());
        text.map(|t| t.text.clone())
            .ok_or_else(|| "no text block".into())
    }
}

impl common::Peer for Rmcp {
    async fn tools(&self) -> Result<usize, String> {
        let tools = self.peer.list_all_tools().await;
        tools.map(|t| t.len()).map_err(|e| e.to_string())
    }

    async fn echo(&self, text: &str) -> Result<String, String> {
        self.call("echo", serde_json::json!({ "text": text })).await
    }

    async fn big(&self, bytes: u64) -> Result<u64, String> {
        let text = self
            .call("big", serde_json::json!({ "bytes": bytes }))
            .await?;
        Ok(text.len() as u64)
    }

    async fn close(&self) {
        let service = self.service.lock().unwrap().take();
        if let Some(mut service) = service {
            let _ = service.close().await;
        }
    }
}

async fn connect(args: &common::Args) -> Result<Rmcp, String> {
    let service = if args.transport == "stdio" {
        let mut words = args.target.split(' ');
        let mut command = tokio::process::Command::new(words.next().unwrap_or_default());
        command.args(words);
        let transport = TokioChildProcess::new(command).map_err(|e| e.to_string())?;
        ().serve(transport).await
    } else {
        let transport = StreamableHttpClientTransport::from_uri(args.target.as_str());
        ().serve(transport).await
    };
    let service = service.map_err(|e| e.to_string())?;
    Ok(Rmcp {
        peer: service.peer().clone(),
        service: Mutex::new(Some(service)),
    })
}

fn main() {
    let args = common::args();
    common::runtime().block_on(common::drive(&args, connect(&args)));
}
