//! How the user gets from the authorization URL back to this client.
//!
//! A [`UserAgent`] first settles the redirect URI (so the client can be registered with it),
//! then takes the user to the authorization URL and returns the URL the authorization server
//! redirected back to. Two are here:
//! - [`LoopbackAgent`]: a listener on `127.0.0.1` (port 17988, path `/callback`, as
//!   `http://localhost:17988/callback`), the browser opened where possible and the URL always
//!   shown, and the redirect URL pasted back as the alternative when the browser cannot reach
//!   the listener. It answers the browser with a short plain-text page.
//! - [`HeadlessAgent`]: GETs the authorization URL without following the redirect and takes
//!   the `Location`; for authorization servers that redirect at once (tests, the conformance
//!   suite).

use super::fetch;
use super::pkce::parse_query;
use crate::transport::BoxFuture;
use crate::transport::http::Client;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

/// The redirect URI of the loopback listener.
pub const DEFAULT_REDIRECT_URI: &str = "http://localhost:17988/callback";
/// The loopback listener's port.
pub const CALLBACK_PORT: u16 = 17988;
/// How long a login waits for the user.
pub const LOGIN_TIMEOUT: Duration = Duration::from_secs(300);

/// Takes the user through the authorization request.
pub trait UserAgent: Send + Sync {
    /// Settles the redirect URI: `preferred`, or, when `exact` is false and `preferred`
    /// cannot be served, another loopback one. Called before the client is registered.
    fn redirect_uri<'a>(
        &'a self,
        preferred: &'a str,
        exact: bool,
    ) -> BoxFuture<'a, Result<String, String>>;
    /// Takes the user to `url`; returns the full URL the authorization server redirected to.
    fn authorize<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<String, String>>;
}

/// What an authorization response carries (RFC 6749 4.1.2, RFC 9207).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct CallbackParams {
    /// The authorization code.
    pub code: Option<String>,
    /// The `state` sent with the request.
    pub state: Option<String>,
    /// RFC 9207: the issuer that answered.
    pub iss: Option<String>,
    /// An OAuth error code, e.g. `access_denied`.
    pub error: Option<String>,
    /// Its description.
    pub error_description: Option<String>,
}

impl std::fmt::Debug for CallbackParams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallbackParams")
            .field("code", &self.code.is_some())
            .field("state", &self.state.is_some())
            .field("iss", &self.iss)
            .field("error", &self.error)
            .finish_non_exhaustive()
    }
}

impl CallbackParams {
    /// Reads a redirect URL (or just its query, with or without `?`).
    pub fn parse(url: &str) -> CallbackParams {
        let url = url.trim();
        let query = match url.split_once('?') {
            Some((_, q)) => q,
            None => url,
        };
        let query = query.split('#').next().unwrap_or("");
        let mut p = CallbackParams::default();
        for (k, v) in parse_query(query) {
            match k.as_str() {
                "code" => p.code = Some(v),
                "state" => p.state = Some(v),
                "iss" => p.iss = Some(v),
                "error" => p.error = Some(v),
                "error_description" => p.error_description = Some(v),
                _ => {}
            }
        }
        p
    }
}

/// GETs the authorization URL and returns its redirect `Location` without following it.
pub struct HeadlessAgent {
    client: Client,
}

impl HeadlessAgent {
    /// An agent using `client` (see [`crate::transport::http::https_client`]).
    pub fn new(client: Client) -> Self {
        HeadlessAgent { client }
    }
}

impl UserAgent for HeadlessAgent {
    fn redirect_uri<'a>(
        &'a self,
        preferred: &'a str,
        _exact: bool,
    ) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(async move { Ok(preferred.to_string()) })
    }
    fn authorize<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(async move {
            let answer = fetch::get(&self.client, url).await?;
            match (answer.status, answer.location.clone()) {
                (300..=399, Some(location)) => Ok(location),
                _ => Err(format!(
                    "the authorization endpoint did not redirect at once ({}); log in with a browser",
                    answer.describe()
                )),
            }
        })
    }
}

/// Shows the user the authorization URL (the default prints it to stderr).
pub type ShowUrl = Arc<dyn Fn(&str) + Send + Sync>;

/// The interactive login: a loopback listener, the browser, and paste-back.
pub struct LoopbackAgent {
    /// Open the system browser (`xdg-open`, `open`, `start`).
    pub open_browser: bool,
    /// Shows the authorization URL; always called.
    pub show_url: ShowUrl,
    /// Redirect URLs pasted by the user (a line of stdin, the API, the panel).
    pub paste: Mutex<Option<mpsc::Receiver<String>>>,
    /// How long to wait for the user.
    pub timeout: Duration,
    listener: Mutex<Option<(TcpListener, String)>>,
}

impl LoopbackAgent {
    /// An agent that opens the browser and prints the URL to stderr.
    pub fn new() -> Self {
        LoopbackAgent {
            open_browser: true,
            show_url: Arc::new(|url| {
                eprintln!(
                    "Open this URL to log in (if the browser cannot come back here, paste the URL it ends on):\n\n  {url}\n"
                );
            }),
            paste: Mutex::new(None),
            timeout: LOGIN_TIMEOUT,
            listener: Mutex::new(None),
        }
    }

    /// Also accepts pasted redirect URLs from `paste`.
    pub fn with_paste(self, paste: mpsc::Receiver<String>) -> Self {
        *self.paste.lock().expect("paste lock") = Some(paste);
        self
    }
}

impl Default for LoopbackAgent {
    fn default() -> Self {
        LoopbackAgent::new()
    }
}

/// Host, port and path of a loopback redirect URI (`http://localhost:P/path` or
/// `http://127.0.0.1:P/path`).
fn loopback_parts(uri: &str) -> Option<(String, u16, String)> {
    let rest = uri.strip_prefix("http://")?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], rest[i..].to_string()),
        None => (rest, "/".to_string()),
    };
    let (host, port) = authority.rsplit_once(':')?;
    if !matches!(host, "localhost" | "127.0.0.1") {
        return None;
    }
    Some((host.to_string(), port.parse().ok()?, path))
}

impl UserAgent for LoopbackAgent {
    fn redirect_uri<'a>(
        &'a self,
        preferred: &'a str,
        exact: bool,
    ) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(async move {
            let (host, port, path) = loopback_parts(preferred).ok_or_else(|| {
                format!("the redirect URI {preferred:?} is not http://localhost:PORT/... or http://127.0.0.1:PORT/...; the loopback listener cannot serve it")
            })?;
            let listener = match TcpListener::bind(("127.0.0.1", port)).await {
                Ok(l) => l,
                Err(e) if !exact => {
                    tracing::info!(
                        "127.0.0.1:{port} is taken ({e}); the callback listens on another port"
                    );
                    TcpListener::bind(("127.0.0.1", 0))
                        .await
                        .map_err(|e| format!("cannot listen on 127.0.0.1: {e}"))?
                }
                Err(e) => {
                    return Err(format!(
                        "cannot listen on 127.0.0.1:{port} for the redirect URI {preferred}: {e}; free the port, or paste the redirect URL"
                    ));
                }
            };
            let actual = listener.local_addr().map_err(|e| e.to_string())?.port();
            let uri = format!("http://{host}:{actual}{path}");
            tracing::info!(
                "OAuth callback listening on 127.0.0.1:{actual} (loopback only) for {uri}"
            );
            *self.listener.lock().expect("listener lock") = Some((listener, path));
            Ok(uri)
        })
    }

    fn authorize<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(async move {
            let listening = self.listener.lock().expect("listener lock").take();
            let mut paste = self.paste.lock().expect("paste lock").take();
            (self.show_url)(url);
            if self.open_browser {
                open_browser(url);
            }
            let from_listener = async {
                match listening {
                    Some((listener, path)) => serve_callback(listener, &path).await,
                    None => std::future::pending().await,
                }
            };
            let from_paste = async {
                match paste.as_mut() {
                    Some(rx) => loop {
                        match rx.recv().await {
                            Some(line) if line.contains("code=") || line.contains("error=") => {
                                break Ok(line.trim().to_string());
                            }
                            Some(_) => eprintln!(
                                "That is not the redirect URL (it has no code= or error=); paste the whole URL the browser ended on."
                            ),
                            None => std::future::pending::<()>().await,
                        }
                    },
                    None => std::future::pending().await,
                }
            };
            let outcome = tokio::time::timeout(self.timeout, async {
                tokio::select! {
                    r = from_listener => r,
                    r = from_paste => r,
                }
            })
            .await;
            if let Some(rx) = paste {
                *self.paste.lock().expect("paste lock") = Some(rx);
            }
            outcome.map_err(|_| {
                format!(
                    "no answer from the browser within {} s; run the login again",
                    self.timeout.as_secs()
                )
            })?
        })
    }
}

/// Starts the system browser on `url`, if there is one; failures are only logged.
pub fn open_browser(url: &str) {
    let mut command = if cfg!(target_os = "macos") {
        std::process::Command::new("open")
    } else if cfg!(windows) {
        let mut c = std::process::Command::new("cmd");
        c.args(["/C", "start", ""]);
        c
    } else {
        std::process::Command::new("xdg-open")
    };
    command
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    match command.spawn() {
        Ok(mut child) => {
            std::thread::spawn(move || child.wait());
        }
        Err(e) => tracing::debug!("no browser opened: {e}"),
    }
}

/// Serves the listener until a request for `path` arrives; answers it with a short page and
/// returns its full URL. Other paths get 404.
async fn serve_callback(listener: TcpListener, path: &str) -> Result<String, String> {
    loop {
        let (mut socket, _) = listener
            .accept()
            .await
            .map_err(|e| format!("the callback listener failed: {e}"))?;
        let mut buf = Vec::new();
        let mut chunk = [0u8; 2048];
        let read = tokio::time::timeout(Duration::from_secs(10), async {
            while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 16 * 1024 {
                match socket.read(&mut chunk).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            }
        })
        .await;
        if read.is_err() {
            continue;
        }
        let head = String::from_utf8_lossy(&buf);
        let target = head
            .lines()
            .next()
            .and_then(|l| {
                let mut parts = l.split_whitespace();
                match (parts.next(), parts.next()) {
                    (Some("GET"), Some(t)) => Some(t.to_string()),
                    _ => None,
                }
            })
            .unwrap_or_default();
        let target_path = target.split('?').next().unwrap_or("");
        if target_path != path {
            let _ = respond(&mut socket, "404 Not Found", "Not found.\n").await;
            continue;
        }
        let params = CallbackParams::parse(&target);
        let page = match (&params.code, &params.error) {
            (_, Some(error)) => format!(
                "Login failed: {error}{}.\nYou can close this tab; the terminal says what to do next.\n",
                params
                    .error_description
                    .as_deref()
                    .map(|d| format!(" ({d})"))
                    .unwrap_or_default()
            ),
            (Some(_), None) => {
                "Login finished. You can close this tab and return to agenvoy.\n".to_string()
            }
            (None, None) => {
                let _ = respond(
                    &mut socket,
                    "400 Bad Request",
                    "This is the OAuth callback; it needs a code or an error.\n",
                )
                .await;
                continue;
            }
        };
        let status = if params.error.is_some() {
            "400 Bad Request"
        } else {
            "200 OK"
        };
        let _ = respond(&mut socket, status, &page).await;
        return Ok(format!("http://localhost{target}"));
    }
}

async fn respond(
    socket: &mut tokio::net::TcpStream,
    status: &str,
    body: &str,
) -> std::io::Result<()> {
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    socket.write_all(response.as_bytes()).await?;
    socket.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirect_urls_are_read() {
        let p = CallbackParams::parse(
            "http://localhost:17988/callback?code=abc%2Fd&state=s1&iss=https%3A%2F%2Fa.test",
        );
        assert_eq!(p.code.as_deref(), Some("abc/d"));
        assert_eq!(p.state.as_deref(), Some("s1"));
        assert_eq!(p.iss.as_deref(), Some("https://a.test"));
        let p = CallbackParams::parse("?error=access_denied&error_description=no+way");
        assert_eq!(p.error.as_deref(), Some("access_denied"));
        assert_eq!(p.error_description.as_deref(), Some("no way"));
        assert!(!format!("{p:?}").contains("abc"));
    }

    #[test]
    fn loopback_uris() {
        assert_eq!(
            loopback_parts(DEFAULT_REDIRECT_URI),
            Some(("localhost".into(), 17988, "/callback".into()))
        );
        assert_eq!(loopback_parts("https://localhost:1/x"), None);
        assert_eq!(loopback_parts("http://example.com:1/x"), None);
    }

    #[tokio::test]
    async fn the_listener_answers_the_callback_and_ignores_other_paths() {
        let agent = LoopbackAgent {
            open_browser: false,
            show_url: Arc::new(|_| {}),
            ..LoopbackAgent::new()
        };
        let uri = agent
            .redirect_uri("http://localhost:0/callback", true)
            .await
            .unwrap();
        let port: u16 = loopback_parts(&uri).unwrap().1;
        assert_ne!(port, 0);
        let hit = async move {
            let get = |path: &'static str| async move {
                let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
                    .await
                    .unwrap();
                s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
                    .await
                    .unwrap();
                let mut out = String::new();
                s.read_to_string(&mut out).await.unwrap();
                out
            };
            let favicon = get("/favicon.ico").await;
            assert!(favicon.starts_with("HTTP/1.1 404"), "{favicon}");
            get("/callback?code=c1&state=s1").await
        };
        let (url, page) = tokio::join!(agent.authorize("http://as.test/authorize"), hit);
        assert_eq!(url.unwrap(), "http://localhost/callback?code=c1&state=s1");
        assert!(page.starts_with("HTTP/1.1 200"), "{page}");
        assert!(page.contains("Login finished"), "{page}");
    }

    #[tokio::test]
    async fn a_pasted_url_finishes_the_login() {
        let (tx, rx) = mpsc::channel(4);
        let agent = LoopbackAgent {
            open_browser: false,
            show_url: Arc::new(|_| {}),
            ..LoopbackAgent::new()
        }
        .with_paste(rx);
        agent
            .redirect_uri("http://localhost:0/callback", false)
            .await
            .unwrap();
        tx.send("not it".into()).await.unwrap();
        tx.send(" http://localhost:17988/callback?code=p&state=s \n".into())
            .await
            .unwrap();
        let url = agent.authorize("http://as.test/authorize").await.unwrap();
        assert_eq!(CallbackParams::parse(&url).code.as_deref(), Some("p"));
    }
}
