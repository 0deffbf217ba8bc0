//! A certified authorization server (oidc-provider, `fixtures/oidc/provider.mjs`) and an MCP
//! resource server checking its JWT access tokens (`fixtures/oidc/resource.py`), started on
//! loopback ports, and headless Chromium completing the provider's login and consent pages
//! (`fixtures/oidc/browser.mjs`).

use super::{Listening, installed, system_program};
use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

/// How long the browser may take for a whole login before it is killed.
const BROWSER_LIMIT: Duration = Duration::from_secs(60);

/// The provider and the resource server, killed when dropped.
pub struct Oidc {
    _provider: Listening,
    _resource: Listening,
    /// The issuer, `http://127.0.0.1:PORT`.
    pub issuer: String,
    /// The MCP endpoint of the resource server.
    pub url: String,
}

/// Node 22 (oidc-provider 9 wants it), or `None` after saying SKIPPED.
fn node() -> Option<PathBuf> {
    installed("../conformance/node_modules/.bin/node")
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/oidc")
        .join(name)
}

impl Oidc {
    /// Starts both: the resource server in `mode` (`bearer` or `dpop`), the provider with
    /// `provider_flags` (`--access-ttl SECONDS`, `--always-refresh`). `None`, after saying
    /// SKIPPED, when a peer is missing.
    pub fn start(mode: &str, provider_flags: &[&str]) -> Option<Oidc> {
        let node = node()?;
        installed("node_modules/oidc-provider")?;
        installed("node_modules/playwright-core")?;
        let python = installed("venv/bin/python")?;
        if !system_program("chromium", "Debian's chromium") {
            return None;
        }
        // The provider must know the resource before the resource server starts: a port
        // taken free now and handed to it.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let url = format!("http://127.0.0.1:{port}/mcp");
        let mut command = Command::new(&node);
        command
            .arg(fixture("provider.mjs"))
            .arg(&url)
            .args(provider_flags);
        let provider = Listening::start(command);
        let mut command = Command::new(python);
        command
            .arg(fixture("resource.py"))
            .args([&provider.url, mode, &port.to_string()]);
        let resource = Listening::start(command);
        assert_eq!(resource.url, url);
        Some(Oidc {
            issuer: provider.url.clone(),
            _provider: provider,
            _resource: resource,
            url,
        })
    }

    /// The resource server's `/test/stats`: requests accepted, refused (by error), and DPoP
    /// proofs checked.
    pub fn stats(&self) -> Value {
        let authority = self
            .url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp");
        let (_, body) = super::py_oauth::raw_http(authority, "GET", "/test/stats");
        serde_json::from_str(&body).unwrap()
    }

    /// The provider's `/test/stats`: `grants` by grant type, `refused` token requests by
    /// OAuth error.
    pub fn provider_stats(&self) -> Value {
        let authority = self.issuer.trim_start_matches("http://");
        let (_, body) = super::py_oauth::raw_http(authority, "GET", "/test/stats");
        serde_json::from_str(&body).unwrap()
    }
}

/// Completes a login at the authorization URL `url` in headless Chromium, on a thread of
/// its own (as a person's browser would), killed after [`BROWSER_LIMIT`].
pub fn browser(url: &str) {
    let url = url.to_string();
    std::thread::spawn(move || {
        let node = node().expect("node was there when the servers started");
        let mut child = Command::new(node)
            .arg(fixture("browser.mjs"))
            .arg(&url)
            .spawn()
            .expect("start the browser script");
        if super::wait_exit(&mut child, BROWSER_LIMIT).is_none() {
            let _ = child.kill();
            let _ = child.wait();
        }
    });
}
