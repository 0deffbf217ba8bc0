//! The daemon (`agenvoy-mcp serve`) on a free port, and plain HTTP/1.1 to its API: what
//! tests/api.rs and tests/api_protocol.rs share.

use super::{Listening, binary};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// One HTTP answer.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub head: String,
    pub text: String,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.text)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {} {}", self.head, self.text))
    }

    /// The error message of an error answer, after checking its shape.
    pub fn error(&self) -> String {
        let body = self.json();
        assert!(body["error"]["type"].is_string(), "{body}");
        body["error"]["message"].as_str().unwrap().to_string()
    }

    pub fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
        })
    }
}

/// Sends `head` (request line and header lines, without the blank line) and `body` on a new
/// connection, with `Content-Length` and `Connection: close`; reads the whole answer.
pub fn exchange(authority: &str, head: &str, body: &[u8]) -> Reply {
    let mut stream = TcpStream::connect(authority).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let request = format!(
        "{head}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(request.as_bytes()).unwrap();
    let _ = stream.write_all(body);
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let (head, text) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP answer: {answer:?}"));
    Reply {
        status,
        head: head.to_string(),
        text: text.to_string(),
    }
}

/// Where an API listens, and its token.
#[derive(Clone)]
pub struct Api {
    pub authority: String,
    pub token: String,
}

impl Api {
    pub fn port(&self) -> u16 {
        self.authority.rsplit(':').next().unwrap().parse().unwrap()
    }

    /// A request with the token, the right Host and (with a body) JSON.
    pub fn send(&self, method: &str, path: &str, body: Option<Value>) -> Reply {
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}",
            self.authority, self.token
        );
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        if !body.is_empty() {
            head.push_str("\r\nContent-Type: application/json");
        }
        exchange(&self.authority, &head, body.as_bytes())
    }

    pub fn get(&self, path: &str) -> Value {
        let reply = self.send("GET", path, None);
        assert_eq!(reply.status, 200, "GET {path}: {reply:?}");
        reply.json()
    }

    pub fn post(&self, path: &str, body: Value) -> Reply {
        self.send("POST", path, Some(body))
    }

    /// Posts each body of `cases` to `path`, expecting its status and an error message that
    /// says what it names.
    pub fn assert_refused(&self, path: &str, cases: &[(Value, u16, &str)]) {
        for (body, status, says) in cases {
            let reply = self.post(path, body.clone());
            assert_eq!(reply.status, *status, "{path} {body}: {reply:?}");
            let message = reply.error();
            assert!(message.contains(says), "{path} {body}: {message}");
        }
    }

    pub fn status_of(&self, name: &str) -> Value {
        let status = self.get("/v1/mcp/status");
        status["servers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .cloned()
            .unwrap_or(Value::Null)
    }

    pub fn tool_names(&self) -> Vec<String> {
        self.get("/v1/mcp/tools")["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect()
    }

    /// Opens the login stream of server `name` (HTTP/1.1, so a closed stream is noticed).
    pub fn login_stream(&self, name: &str) -> Events {
        self.stream(&format!("/v1/mcp/oauth?name={name}"))
    }

    /// Opens an event stream at `target` (a path and query), past its head.
    pub fn stream(&self, target: &str) -> Events {
        let mut stream = TcpStream::connect(&self.authority).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        write!(
            stream,
            "GET {target} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\nAccept: text/event-stream\r\n\r\n",
            self.authority, self.token
        )
        .unwrap();
        let mut reader = BufReader::new(stream);
        let mut head = String::new();
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            if line == "\r\n" || line.is_empty() {
                break;
            }
            head.push_str(&line);
        }
        Events { reader, head }
    }
}

/// An event stream (a login's, or `/v1/mcp/events`): its head and its `data:` events.
pub struct Events {
    pub reader: BufReader<TcpStream>,
    pub head: String,
}

impl Events {
    /// The next `data:` event (chunk-size lines and comments are skipped).
    pub fn next(&mut self) -> Option<Value> {
        loop {
            let mut line = String::new();
            if self.reader.read_line(&mut line).ok()? == 0 {
                return None;
            }
            if let Some(data) = line.strip_prefix("data: ") {
                return Some(serde_json::from_str(data.trim()).unwrap());
            }
        }
    }
}

/// `agenvoy-mcp serve` on a free port, its folder a temporary one; killed when dropped.
pub struct Daemon {
    pub server: Listening,
    pub dir: tempfile::TempDir,
    pub api: Api,
}

pub fn serve_command(dir: &Path, extra: &[&str]) -> Command {
    let mut command = Command::new(binary());
    command
        .args(["serve", "--timeout", "20", "--config"])
        .arg(dir.join("mcp.json"))
        .arg("--token-file")
        .arg(dir.join("oauth-tokens.json"))
        .args(extra)
        .env("AGENVOY_CONFIG_DIR", dir);
    if !extra.contains(&"--listen") {
        command.args(["--listen", "127.0.0.1:0"]);
    }
    command
}

impl Daemon {
    /// With `config` as mcp.json (none: no file).
    pub fn start(config: Option<Value>) -> Daemon {
        Daemon::start_with(config, &[])
    }

    pub fn start_with(config: Option<Value>, extra: &[&str]) -> Daemon {
        let dir = tempfile::tempdir().unwrap();
        if let Some(config) = config {
            std::fs::write(dir.path().join("mcp.json"), config.to_string()).unwrap();
        }
        Daemon::start_in(dir, extra)
    }

    /// In `dir`, as its files are (`mcp.json`, the era memory, ...).
    pub fn start_in(dir: tempfile::TempDir, extra: &[&str]) -> Daemon {
        let server = Listening::start(serve_command(dir.path(), extra));
        let authority = server
            .url
            .strip_prefix("http://")
            .expect("listening on http://ADDR")
            .to_string();
        let token = std::fs::read_to_string(dir.path().join("api-token")).unwrap();
        Daemon {
            server,
            dir,
            api: Api { authority, token },
        }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.path(name)).unwrap_or_default()
    }

    pub fn config(&self) -> Value {
        serde_json::from_str(&self.read("mcp.json")).unwrap()
    }
}
