//! A small loopback HTTP/1.1 server for the auth tests: each request is answered by a
//! function of it (an authorization server, an MCP server, a hostile one), and every request
//! is recorded. One request per connection.

use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A request as the server saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    /// Path and query.
    pub target: String,
    /// Header names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Seen {
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// A form body's (or the query's) value of `name`.
    pub fn param(&self, name: &str) -> Option<String> {
        let query = self.target.split_once('?').map_or("", |(_, q)| q);
        super::pkce::parse_query(query)
            .into_iter()
            .chain(super::pkce::parse_query(&self.body))
            .find(|(k, _)| k == name)
            .map(|(_, v)| v)
    }
}

/// An answer.
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    pub body: String,
}

impl Reply {
    pub fn json(status: u16, body: serde_json::Value) -> Reply {
        Reply {
            status,
            headers: vec![("Content-Type", "application/json".into())],
            body: body.to_string(),
        }
    }

    pub fn text(status: u16, body: &str) -> Reply {
        Reply {
            status,
            headers: vec![("Content-Type", "text/plain".into())],
            body: body.into(),
        }
    }

    pub fn redirect(location: &str) -> Reply {
        Reply {
            status: 302,
            headers: vec![("Location", location.into())],
            body: String::new(),
        }
    }
}

type Route = dyn Fn(&Seen, &str) -> Reply + Send + Sync;

/// The server; it stops when the test's runtime ends.
pub struct TestServer {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl TestServer {
    /// Serves on a free port; `route` gets each request and the server's base URL.
    pub async fn start(route: impl Fn(&Seen, &str) -> Reply + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        Self::serve(listener, Arc::new(route))
    }

    /// Serves on `addr` (a port that was free a moment ago: the server "comes back").
    pub async fn start_at(
        addr: std::net::SocketAddr,
        route: impl Fn(&Seen, &str) -> Reply + Send + Sync + 'static,
    ) -> Self {
        let listener = TcpListener::bind(addr).await.unwrap();
        Self::serve(listener, Arc::new(route))
    }

    fn serve(listener: TcpListener, route: Arc<Route>) -> Self {
        let base = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (log, url) = (seen.clone(), base.clone());
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let (log, url, route) = (log.clone(), url.clone(), route.clone());
                tokio::spawn(async move {
                    let Some(request) = read_request(&mut socket).await else {
                        return;
                    };
                    let reply = route(&request, &url);
                    log.lock().unwrap().push(request);
                    let mut head = format!("HTTP/1.1 {} X\r\n", reply.status);
                    for (name, value) in &reply.headers {
                        head.push_str(&format!("{name}: {value}\r\n"));
                    }
                    head.push_str(&format!(
                        "Content-Length: {}\r\nConnection: close\r\n\r\n{}",
                        reply.body.len(),
                        reply.body
                    ));
                    let _ = socket.write_all(head.as_bytes()).await;
                    let _ = socket.shutdown().await;
                });
            }
        });
        TestServer { base, seen }
    }

    /// Every request so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// The requests for `path` so far.
    pub fn seen_at(&self, path: &str) -> Vec<Seen> {
        self.seen()
            .into_iter()
            .filter(|s| s.path() == path)
            .collect()
    }
}

async fn read_request(socket: &mut tokio::net::TcpStream) -> Option<Seen> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&buf).to_string();
        let Some((head, body)) = text.split_once("\r\n\r\n") else {
            continue;
        };
        let mut lines = head.lines();
        let mut first = lines.next()?.split_whitespace();
        let (method, target) = (first.next()?.to_string(), first.next()?.to_string());
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        let length = headers
            .iter()
            .find(|(n, _)| n == "content-length")
            .and_then(|(_, v)| v.parse::<usize>().ok())
            .unwrap_or(0);
        if body.len() >= length {
            return Some(Seen {
                method,
                target,
                headers,
                body: body.to_string(),
            });
        }
    }
}
