//! The strict authorization + resource server of `fixtures/oauth/server.py` (the Python
//! `mcp` SDK's auth building blocks, run from the venv `.ci/install` makes), and a headless
//! "browser" that completes its authorization step.

use serde_json::Value;
use std::io::{Read, Write};
use std::path::PathBuf;

/// The Python authorization + resource server, killed when dropped.
pub struct PyServer {
    _server: super::Listening,
    /// The MCP endpoint.
    pub url: String,
}

impl PyServer {
    /// Starts the server; `None` (after saying SKIPPED) when the venv is not installed.
    pub fn start() -> Option<PyServer> {
        PyServer::start_with(&[])
    }

    /// [`PyServer::start`] with `args` (`--token-lifetime SECONDS`).
    pub fn start_with(args: &[&str]) -> Option<PyServer> {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let python = super::installed("venv/bin/python")?;
        let mut command = std::process::Command::new(python);
        command
            .arg(root.join("fixtures/oauth/server.py"))
            .args(args);
        let server = super::Listening::start(command);
        Some(PyServer {
            url: server.url.clone(),
            _server: server,
        })
    }

    /// `127.0.0.1:PORT`.
    pub fn authority(&self) -> String {
        self.url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .to_string()
    }

    /// A request to one of its `/test/...` routes, answered with JSON.
    pub fn request(&self, method: &str, path: &str) -> Value {
        let (_, body) = raw_http(&self.authority(), method, path);
        serde_json::from_str(&body).unwrap()
    }
}

/// One HTTP/1.0 exchange: (head, body).
pub fn raw_http(authority: &str, method: &str, target: &str) -> (String, String) {
    let mut stream = std::net::TcpStream::connect(authority).unwrap();
    write!(
        stream,
        "{method} {target} HTTP/1.0\r\nHost: {authority}\r\nContent-Length: 0\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    (head.to_string(), body.to_string())
}

/// A "browser" that follows the authorization redirect into the loopback listener, on a
/// thread of its own (as a person's browser would).
pub fn headless_browser(url: &str) {
    let url = url.to_string();
    std::thread::spawn(move || authorize(&url));
}

/// Follows the authorization URL `url` to the loopback callback and checks the login page.
pub fn authorize(url: &str) {
    let rest = url.strip_prefix("http://").unwrap();
    let (authority, target) = rest.split_at(rest.find('/').unwrap());
    let (head, _) = raw_http(authority, "GET", target);
    assert!(
        head.starts_with("HTTP/1.1 302") || head.starts_with("HTTP/1.1 307"),
        "{head}"
    );
    let location = head
        .lines()
        .find_map(|l| {
            l.strip_prefix("location: ")
                .or_else(|| l.strip_prefix("Location: "))
        })
        .expect("a Location header")
        .trim()
        .to_string();
    let rest = location.strip_prefix("http://localhost:").unwrap();
    let (port, target) = rest.split_at(rest.find('/').unwrap());
    let (head, body) = raw_http(&format!("127.0.0.1:{port}"), "GET", target);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}\n{body}");
    assert!(body.contains("Login finished"), "{body}");
}
